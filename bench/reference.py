"""Benchmark: the published Kafka TLA+ specifications (tla:*) against TLC's numbers.

    python bench/reference.py [--out FILE] [--three] [--full-three] [--only MODULE ...]

Runs, for each of the five modules:
  * the exhaustive run at TLC's published constants (Replicas=2, LogSize=2, MaxRecords=2,
    MaxLeaderEpoch=2) checking TypeOk and LogMatching, next to TLC 2.18's counts;
  * StrongIsr at the same constants (violated in KafkaTruncateToHighWatermark and Kip101);
  * with --three, StrongIsr with Replicas=3 (violated in all but Kip320; Kip320's is exhaustive);
  * with --full-three, the exhaustive Replicas=3 runs with no invariant (minutes each).
Prints distinct states, states generated, depth, seconds and distinct states per second for
each run, and writes them as JSON to --out.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))

from checker.bfs import check  # noqa: E402
from checker.search import SearchOptions  # noqa: E402
from invariants.registry import for_family  # noqa: E402
from spec.registry import build_model  # noqa: E402

MODULES = ("KafkaTruncateToHighWatermark", "Kip101", "Kip279", "Kip320FirstTry", "Kip320")
TLC = {  # TLC 2.18, Replicas = {r1, r2}, LogSize = MaxRecords = MaxLeaderEpoch = 2
    "KafkaTruncateToHighWatermark": (10_131, 24_459, 20),
    "Kip101": (9_045, 21_447, 18),
    "Kip279": (9_027, 23_425, 18),
    "Kip320FirstTry": (8_429, 19_387, 18),
    "Kip320": (5_973, 11_839, 18),
}
SMALL = {"LogSize": 2, "MaxRecords": 2, "MaxLeaderEpoch": 2}


def run(module: str, replicas: int, invariants: list[str]) -> dict:
    consts = {"Replicas": replicas, **SMALL}
    model = build_model(f"tla:{module}", [f"{k}={v}" for k, v in consts.items()])
    family = for_family(model.family)
    started = time.perf_counter()
    result = check(model, SearchOptions(invariants=[family[name] for name in invariants]))
    seconds = time.perf_counter() - started
    row = {
        "model": f"tla:{module}",
        "constants": consts,
        "invariants": invariants,
        "verdict": str(result.verdict),
        "distinct_states": result.distinct_states,
        "states_generated": result.states_generated,
        "depth": result.depth,
        "seconds": round(seconds, 3),
        "distinct_states_per_second": round(result.distinct_states / seconds) if seconds else None,
        "counterexample_length": result.violations[0].trace.length if result.violations else None,
    }
    if replicas == 2 and not result.violations and module in TLC:
        tlc = TLC[module]
        row["tlc"] = dict(zip(("distinct_states", "states_generated", "depth"), tlc, strict=True))
        row["equal_to_tlc"] = (result.distinct_states, result.states_generated, result.depth) == tlc
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", help="write the results as JSON here")
    parser.add_argument("--three", action="store_true", help="also StrongIsr with Replicas=3")
    parser.add_argument("--full-three", action="store_true", help="also exhaustive Replicas=3 runs "
                                                                  "(slow)")
    parser.add_argument("--only", nargs="+", choices=MODULES, help="just these modules")
    args = parser.parse_args(argv)
    modules = args.only or MODULES
    plan = [(m, 2, ["TypeOk", "LogMatching"]) for m in modules]
    plan += [(m, 2, ["StrongIsr"]) for m in modules]
    if args.three:
        plan += [(m, 3, ["StrongIsr"]) for m in modules]
    if args.full_three:
        plan += [(m, 3, []) for m in modules]
    rows = []
    header = (f"{'model':34} {'R':>1} {'invariants':20} {'verdict':9} {'distinct':>10} "
              f"{'generated':>11} {'depth':>5} {'cex':>4} {'seconds':>8} {'states/s':>9}  TLC")
    print(header)
    all_equal = True
    for module, replicas, invariants in plan:
        row = run(module, replicas, invariants)
        rows.append(row)
        tlc = ""
        if "tlc" in row:
            tlc = "equal" if row["equal_to_tlc"] else f"DIFFERS from {tuple(row['tlc'].values())}"
            all_equal &= row["equal_to_tlc"]
        cex = row["counterexample_length"] if row["counterexample_length"] is not None else "-"
        print(f"{row['model']:34} {replicas:>1} {','.join(invariants) or '-':20} "
              f"{row['verdict']:9} {row['distinct_states']:>10,} {row['states_generated']:>11,} "
              f"{row['depth']:>5} {cex:>4} {row['seconds']:>8.2f} "
              f"{row['distinct_states_per_second']:>9,}  {tlc}", flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"benchmark": "reference", "python": platform.python_version(), "runs": rows},
                      f, indent=2)
    return 0 if all_equal else 1


if __name__ == "__main__":
    sys.exit(main())
