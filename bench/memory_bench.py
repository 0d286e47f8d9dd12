"""Resident memory a distinct state, measured in a fresh process per run, side by side.

    python3 bench/memory_bench.py                       # kafka kip-320, 3 brokers, 1 record, 1 epoch, no crash
    python3 bench/memory_bench.py --const RM=8 --model two-phase --protocol ''
    python3 bench/memory_bench.py --out memory.json   # elsewhere than bench/results.json

Each run builds the model, notes its resident set, runs the search and reports the growth of the
peak resident set (``ru_maxrss``, so the transient peaks count) divided by the distinct states.
Runs: the single-process engine as it starts (everything in memory), the same with the parent
log on disk from the first level on (what a run does past half its
``--max-memory``), and the parallel engine (every process's peak growth added up).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

KAFKA_475K = ("kafka", ["brokers=3", "records=1", "epochs=1", "crashes=0"], "kip-320")


def _rss_kb() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024


def child(spec: dict[str, Any]) -> dict[str, Any]:
    """One run in this (fresh) process."""
    from checker import bfs, parallel
    from checker.search import SearchOptions
    from invariants.registry import for_family
    from spec.registry import build_model

    model = build_model(spec["model"], spec["consts"], spec["protocol"] or None)
    options = SearchOptions(invariants=list(for_family(model.family).values()), stop_at_first=False)
    list(model.init_states())
    start_kb = _rss_kb()
    if spec["mode"] == "spill":
        bfs.SPILL_AT = 0.0  # past "half the budget" from the first level on
    started = time.monotonic()
    if spec["mode"] == "parallel":
        result = parallel.ParallelBFS(model, options, spec["workers"]).run()
        children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # the largest worker's peak
        peak_growth_kb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - start_kb) + spec["workers"] * (
            children - start_kb)
    else:
        result = bfs.check(model, options)
        peak_growth_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - start_kb
    return {
        "mode": spec["mode"],
        "distinct": result.distinct_states,
        "generated": result.states_generated,
        "depth": result.depth,
        "seconds": round(time.monotonic() - started, 2),
        "peak_growth_mb": round(peak_growth_kb / 1024, 1),
        "bytes_per_state": round(peak_growth_kb * 1024 / max(1, result.distinct_states), 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=KAFKA_475K[0])
    parser.add_argument("--const", action="append", default=None)
    parser.add_argument("--protocol", default=KAFKA_475K[2])
    parser.add_argument("--modes", default="memory,spill,parallel")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "results.json"),
                        help="JSON file the figures are merged into (key memory_per_state)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(json.loads(args.child))))
        return 0
    consts = args.const if args.const is not None else KAFKA_475K[1]
    load = os.getloadavg()
    rows = []
    for mode in args.modes.split(","):
        spec = {"model": args.model, "consts": consts, "protocol": args.protocol, "mode": mode, "workers": args.workers}
        out = subprocess.run([sys.executable, __file__, "--child", json.dumps(spec)], capture_output=True, text=True,
                             cwd=ROOT)
        if out.returncode:
            print(out.stderr, file=sys.stderr)
            return 1
        rows.append(json.loads(out.stdout))
        print(json.dumps(rows[-1]))
    if len({(r["distinct"], r["generated"], r["depth"]) for r in rows}) != 1:
        print("the runs disagree on the counts", file=sys.stderr)
        return 1
    report = {"model": args.model, "consts": consts, "protocol": args.protocol, "load_before": load,
              "load_after": os.getloadavg(), "runs": rows}
    data = {}
    if os.path.exists(args.out):
        with open(args.out) as f:
            data = json.load(f)
    data["memory_per_state"] = report
    with open(args.out, "w") as f:
        f.write(json.dumps(data, indent=2) + "\n")
    print(f"figures merged into {args.out} (memory_per_state)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
