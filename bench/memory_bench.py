"""Resident memory a distinct state, measured in a fresh process per run, side by side.

    python3 bench/memory_bench.py                       # kafka 2.1.0, 3 brokers, 1 record, 1 epoch, no crash
    python3 bench/memory_bench.py --const RM=8 --model two-phase --protocol ''
    python3 bench/memory_bench.py --baseline ../kmc-main  # the same runs of another checkout first
    python3 bench/memory_bench.py --out memory.json   # elsewhere than bench/results.json
    python3 bench/memory_bench.py --modes parallel --symmetry --reduce dead \
        --const brokers=3 --const records=1 --const crashes=0   # the goal configuration (2,105,961 orbits)

Each run builds the model, notes its resident set, runs the search and reports the growth of the
peak resident set (``ru_maxrss``, so the transient peaks count) divided by the distinct states,
and the search's CPU seconds. Modes: ``memory``, the single-process engine as it starts (the
frontier stores keep Python objects within their budget); ``encoded``, the same with every frontier
block encoded from the first level on (what a run does past its frontier budget); ``spill``, the
parent log and the frontier blocks on disk from the first level on (what a run does past half its
``--max-memory``); ``parallel``, the parallel engine (every process's peak growth added up). With
``--baseline``, every mode is run on that checkout and on this one, alternately, so that both see
the same machine load (``encoded`` is this checkout's only), and the CPU ratio is printed.
"""  # noqa: E501

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

KAFKA_3 = ("kafka", ["brokers=3", "records=1", "epochs=1", "crashes=0"], "2.1.0")


def _rss_kb() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024


def child(spec: dict[str, Any]) -> dict[str, Any]:
    """One run in this (fresh) process, on the checkout at ``spec["root"]``."""
    sys.path.insert(0, spec["root"])
    from checker import bfs, parallel
    from checker.invariant import SAFETY
    from checker.search import SearchOptions
    from invariants.registry import for_family
    from spec.registry import build_model

    model = build_model(spec["model"], spec["consts"], spec["protocol"] or None)
    invariants = list(for_family(model.family).values())
    # orbits: the safety invariants (the liveness ones need the whole graph)
    if spec.get("symmetry"):
        invariants = [inv for inv in invariants if inv.kind == SAFETY]
    options = SearchOptions(invariants=invariants, stop_at_first=False,
                            symmetry=bool(spec.get("symmetry")),
                            max_memory_mb=spec.get("max_memory"),
                            **({"reduce": spec["reduce"]} if spec.get("reduce") else {}),
                            max_depth=spec.get("max_depth"))
    list(model.init_states())
    start_kb = _rss_kb()
    if spec["mode"] == "spill":
        bfs.SPILL_AT = 0.0  # past "half the budget" from the first level on
        bfs.FRONTIER_SHARE = 0.0  # (where there are frontier stores) every block on disk
    if spec["mode"] == "encoded":
        bfs.FRONTIER_OBJECTS = False
    # past their objects the stores encode every block (the model's msgpack encoding)
    if spec.get("no_pools"):
        from checker import frontier
        frontier.POOL_LIMIT = -(1 << 62)
    if spec.get("object_states") is not None:
        bfs.FRONTIER_OBJECT_STATES = spec["object_states"]  # (a baseline without it ignores it)
    started = time.monotonic()
    cpu_started = time.process_time()
    if spec["mode"] == "parallel":
        engine = parallel.ParallelBFS(model, options, spec["workers"])
        result = engine.run()
        # each worker's own peak (VmHWM, read by the worker at the end of the run), less what it had
        # at the fork
        worker_kb = result.extra.get("worker_peak_rss_kb")
        # a baseline that does not report it: the largest worker's peak, once a worker
        if worker_kb is None:
            worker_kb = [resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss] * spec["workers"]
        worker_growth_kb = [kb - start_kb for kb in worker_kb]
        parent_growth_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - start_kb
        peak_growth_kb = parent_growth_kb + sum(worker_growth_kb)
    else:
        result = bfs.check(model, options)
        peak_growth_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - start_kb
    row = {
        "tree": spec["tree"],
        "mode": spec["mode"],
        "cpu_seconds": round(time.process_time() - cpu_started, 2),
        "distinct": result.distinct_states,
        "generated": result.states_generated,
        "depth": result.depth,
        "seconds": round(time.monotonic() - started, 2),
        "peak_growth_mb": round(peak_growth_kb / 1024, 1),
        "bytes_per_state": round(peak_growth_kb * 1024 / max(1, result.distinct_states), 1),
    }
    if spec["mode"] == "parallel":
        row["parent_bytes_per_state"] = round(parent_growth_kb * 1024
                                              / max(1, result.distinct_states), 1)
        row["worker_bytes_per_state"] = [round(kb * 1024 / max(1, result.distinct_states), 1)
                                         for kb in worker_growth_kb]
        # the workers' own CPU (the parent's is ``cpu_seconds``) and the serial share the engine
        # reports
        row["worker_cpu_seconds"] = result.extra.get("worker_cpu_seconds")
        row["serial_share"] = result.extra.get("serial_share")
    return row


def _commit(checkout: str | None) -> str | None:
    """The baseline as its commit (never a path of this machine)."""
    if not checkout:
        return None
    out = subprocess.run(["git", "-C", checkout, "rev-parse", "--short", "HEAD"],
                         capture_output=True, text=True)
    return out.stdout.strip() or os.path.basename(os.path.abspath(checkout))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=KAFKA_3[0])
    parser.add_argument("--const", action="append", default=None)
    parser.add_argument("--protocol", default=KAFKA_3[2])
    parser.add_argument("--modes", default="memory,encoded,spill,parallel")
    parser.add_argument("--baseline", help="a checkout to run the same modes on first (e.g. main)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--symmetry", action="store_true", help="search orbits (--symmetry)")
    parser.add_argument("--reduce", default=None, help="--reduce (e.g. dead; default: the "
                                                       "engine's)")
    parser.add_argument("--max-depth", type=int, default=None, help="--max-depth D (a "
                                                                    "depth-bounded run)")
    parser.add_argument("--max-memory", type=float, default=None, help="--max-memory MB (default: "
                                                                       "the engine's)")
    parser.add_argument("--object-states", type=int, default=None,
                        help="states each frontier store keeps as objects (default: the engine's)")
    parser.add_argument("--no-pools", action="store_true",
                        help="stores encode the states past their objects instead of pooling them")
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "results.json"),
                        help="JSON file the figures are merged into (key memory_per_state)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(json.loads(args.child))))
        return 0
    consts = args.const if args.const is not None else KAFKA_3[1]
    load = os.getloadavg()
    rows = []
    trees = [("baseline", os.path.abspath(args.baseline))] if args.baseline else []
    trees.append(("current", ROOT))
    for mode in args.modes.split(","):
        for tree, root in trees:
            if mode == "encoded" and tree == "baseline":
                continue
            spec = {"model": args.model, "consts": consts, "protocol": args.protocol, "mode": mode,
                    "workers": args.workers, "root": root, "tree": tree,
                    "object_states": args.object_states, "symmetry": args.symmetry,
                    "max_memory": args.max_memory, "reduce": args.reduce,
                    "max_depth": args.max_depth, "no_pools": args.no_pools}
            out = subprocess.run([sys.executable, __file__, "--child", json.dumps(spec)],
                                 capture_output=True, text=True, cwd=root)
            if out.returncode:
                print(out.stderr, file=sys.stderr)
                return 1
            rows.append(json.loads(out.stdout))
            print(json.dumps(rows[-1]))
    for mode in args.modes.split(","):
        pair = {r["tree"]: r for r in rows if r["mode"] == mode}
        if len(pair) == 2:
            ratio = pair["current"]["cpu_seconds"] / max(0.01, pair["baseline"]["cpu_seconds"])
            print(f"{mode}: {pair['baseline']['bytes_per_state']} -> "
                  f"{pair['current']['bytes_per_state']} B a state, CPU current/baseline "
                  f"{ratio:.2f}")
    if len({(r["distinct"], r["generated"], r["depth"]) for r in rows}) != 1:
        print("the runs disagree on the counts", file=sys.stderr)
        return 1
    report = {"model": args.model, "consts": consts, "protocol": args.protocol,
              "baseline": _commit(args.baseline), "load_before": load,
              "load_after": os.getloadavg(), "runs": rows}
    data = {}
    if os.path.exists(args.out):
        with open(args.out) as f:
            data = json.load(f)
    runs = data.get("memory_per_state")
    if not isinstance(runs, dict) or "model" in runs:  # the old layout held one configuration
        runs = {}
    key = " ".join([args.model, args.protocol, *consts, *(["--symmetry"] if args.symmetry else []),
                    *([f"--reduce {args.reduce}"] if args.reduce else []),
                    *([f"--max-depth {args.max_depth}"] if args.max_depth is not None else []),
                    *([f"--max-memory {args.max_memory:g}"] if args.max_memory else []),
                    *([f"--object-states {args.object_states}"] if args.object_states is not None
                      else []),
                    *(["--no-pools"] if args.no_pools else []),
                    # runs of other modes of the same configuration keep their own entries
                    *([f"({args.modes})"] if args.modes != parser.get_default("modes")
                      else [])]).replace("  ", " ")
    runs[key] = report
    data["memory_per_state"] = runs
    with open(args.out, "w") as f:
        f.write(json.dumps(data, indent=2) + "\n")
    print(f"figures merged into {args.out} (memory_per_state)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
