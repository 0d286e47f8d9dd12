"""What canonicalisation costs a successor, against what computing the successor costs.

    python3 bench/symmetry_bench.py                      # kafka 2.1.0, brokers=3 records=1 crashes=0
    python3 bench/symmetry_bench.py --const brokers=2 --protocol 4.1.0 --states 20000

Takes the first ``--states`` states of the breadth-first search under symmetry (canonical states,
as the engine expands them), then times, in CPU
seconds of this process, the model's successors of those states and ``model.canonical`` of every
successor (best of ``--repeat``), and counts how many successors were already canonical. The
figures are merged into bench/results.json under ``symmetry_canonical``.
"""  # noqa: E501

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from checker import bfs  # noqa: E402
from checker.search import SearchOptions  # noqa: E402
from spec.registry import build_model  # noqa: E402


def sample(model, limit: int) -> list:
    engine = bfs.LocalBFS(model, SearchOptions(max_states=limit, symmetry=True))
    seen: list = []
    original = engine._check_invariants

    def collect(st, states, base):
        seen.extend(states)
        return original(st, states, base)

    engine._check_invariants = collect
    engine.run()
    return seen[:limit]


def timed(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.process_time()
        fn()
        best = min(best, time.process_time() - started)
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="kafka")
    parser.add_argument("--const", action="append", default=None)
    parser.add_argument("--protocol", default="2.1.0")
    parser.add_argument("--states", type=int, default=30000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", default=str(ROOT / "bench" / "results.json"))
    args = parser.parse_args()
    consts = args.const if args.const is not None else ["brokers=3", "records=1", "crashes=0"]
    model = build_model(args.model, consts, args.protocol)
    states = sample(model, args.states)
    succs = [t for s in states for _, t in model.successors(s)]
    canonical = model.canonical
    gc.disable()
    try:
        expand = timed(lambda: [model.successors(s) for s in states], args.repeat)
        canon = timed(lambda: [canonical(t) for t in succs], args.repeat)
    finally:
        gc.enable()
    unchanged = sum(1 for t in succs if canonical(t) is t)
    per_succ_us = canon / len(succs) * 1e6
    row = {
        "model": args.model, "consts": consts, "protocol": args.protocol, "states": len(states),
        "successors": len(succs),
        "successors_cpu_us_per_successor": round(expand / len(succs) * 1e6, 2),
        "canonical_cpu_us_per_successor": round(per_succ_us, 2),
        "already_canonical": round(unchanged / len(succs), 3), "load": round(os.getloadavg()[0], 2),
        "started": time.strftime("%Y-%m-%dT%H:%M:%S"),
    }
    print(json.dumps(row))
    path = Path(args.out)
    data = json.loads(path.read_text()) if path.exists() else {}
    data.setdefault("symmetry_canonical", {})[f"{args.model} {args.protocol} "
                                              f"{' '.join(consts)}"] = row
    path.write_text(json.dumps(data, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
