"""A reduction of the search (``--reduce dead``): distinct states with and without it, side by side
in one run.

    python3 bench/por_bench.py                 # the configurations below
    python3 bench/por_bench.py --only goal     # those whose name contains "goal"

It measured partial-order reduction (``--reduce por``) too, until that was removed (bench/NOTES.md,
"Partial-order reduction removed"); its figures stay in bench/results.json under
``partial_order_reduction``.

State counts are machine-independent; CPU seconds (this process) are given as a ratio of the two
runs of a configuration, taken one after the other on the same machine, with the load average beside
them. A configuration too large to finish is run bounded in depth (``--max-depth``, the same bound
both ways): its figures compare what the two searches hold within that many levels, not the whole
space. The figures are merged into bench/results.json under ``partial_order_reduction``
(``dead_message_reduction`` with ``--reduce dead``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import spec.kafka  # noqa: E402,F401 - registers the model
from checker import bfs  # noqa: E402
from checker.invariant import SAFETY  # noqa: E402
from checker.search import SearchOptions  # noqa: E402
from invariants.registry import for_family  # noqa: E402
from spec.registry import build_model  # noqa: E402

THREE = ["brokers=3", "records=1", "crashes=0"]
#: where each reduction's rows are kept in bench/results.json
KEYS = {"por": "partial_order_reduction", "dead": "dead_message_reduction"}
NO_INVARIANT = "none"  # an invariant list of this one name: check no invariant (deadlock only)
#: (name, protocol, constants, invariants (empty: every default one), symmetry, depth bound or None)
CONFIGURATIONS = [
    ("3 brokers, epochs=1, every default invariant", "2.1.0", [*THREE, "epochs=1"], [], True, None),
    ("3 brokers, epochs=1, log-matching", "2.1.0", [*THREE, "epochs=1"], ["log-matching"], True,
     None),
    ("3 brokers, epochs=1, no-stale-control-request", "2.1.0", [*THREE, "epochs=1"],
     ["no-stale-control-request"], True, None),
    # no invariant at all (deadlock only): every action invisible, what finer visibility could give
    # at most
    ("3 brokers, epochs=1, no invariant (bound on visibility)", "2.1.0", [*THREE, "epochs=1"],
     [NO_INVARIANT], True, None),
    ("goal configuration (epochs=2), every default invariant, depth <= 14", "2.1.0", THREE, [],
     True, 14),
    ("goal configuration (epochs=2), log-matching, depth <= 14", "2.1.0", THREE, ["log-matching"],
     True, 14),
    ("kraft-3.5 Last Replica Standing bounds, depth <= 10", "kraft-3.5",
     ["brokers=3", "records=1", "crashes=0", "acks=-1", "min_isr=2", "unclean_shutdowns=1"], [],
     True, 10),
    ("2 brokers, default bounds, every default invariant", "2.1.0", [], [], False, None),
]


def run(protocol: str, consts: list[str], names: list[str], symmetry: bool, depth: int | None,
        reduce: str) -> dict:
    model = build_model("kafka", consts, protocol)
    family = for_family("kafka")
    if names == [NO_INVARIANT]:
        invariants = []
    else:
        invariants = [family[n] for n in names] or [i for i in family.values()
                                                    if i.kind == SAFETY and i.default and i.holds]
    options = SearchOptions(invariants=invariants, symmetry=symmetry, max_depth=depth,
                            reduce=reduce, stop_at_first=False, check_deadlock=names
                            == [NO_INVARIANT])
    started = time.process_time()
    result = bfs.LocalBFS(model, options).run()
    return {"verdict": result.verdict.value, "distinct_states": result.distinct_states,
            "states_generated": result.states_generated, "depth": result.depth,
            "violated": sorted(v.invariant for v in result.violations),
            "cpu_seconds": round(time.process_time() - started, 2),
            "reduction": result.extra.get("reduction")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="", help="run the configurations whose name contains "
                                                   "this")
    parser.add_argument("--no-save", action="store_true")
    parser.add_argument("--table", action="store_true", help="print bench/results.json's figures "
                                                             "as markdown rows")
    parser.add_argument("--reduce", choices=("dead",), default="dead",
                        help="the reduction compared with none")
    args = parser.parse_args()
    key = KEYS[args.reduce]
    if args.table:
        for row in json.loads((ROOT / "bench" / "results.json").read_text()).get(key, []):
            with_ = row.get("reduce", "dead")
            invariants = (row["invariants"] if isinstance(row["invariants"], str)
                          else ", ".join(row["invariants"]))
            name = f"{row['protocol']} {' '.join(row['consts']) or 'default bounds'}" + (
                f", depth <= {row['max_depth']}" if row["max_depth"]
                else "") + (", --symmetry" if row["symmetry"] else "")
            per_state = row.get("cpu_us_per_state")
            cost = f"{per_state['none']} → {per_state[with_]}" if per_state else "-"
            print(f"| {name} | {invariants} | {row['none']['distinct_states']:,} → "
                  f"{row[with_]['distinct_states']:,} | {row['state_factor']:.3f} | {cost} | "
                  f"{row['cpu_ratio_por_over_none']:.2f} (load {row['load_average_1min']}) |")
        return 0
    rows = []
    for name, protocol, consts, names, symmetry, depth in CONFIGURATIONS:
        if args.only not in name:
            continue
        if args.reduce == "dead" and protocol.startswith("kraft"):
            continue  # refused on the KRaft rows (spec.kafka.dead)
        load = os.getloadavg()[0]
        full = run(protocol, consts, names, symmetry, depth, "none")
        reduced = run(protocol, consts, names, symmetry, depth, args.reduce)
        row = {"name": name, "protocol": protocol, "consts": consts, "invariants": names
               or "every default",
               "symmetry": symmetry, "max_depth": depth, "load_average_1min": round(load, 2),
               "none": full, "reduce": args.reduce, args.reduce: reduced,
               "state_factor": round(full["distinct_states"] / reduced["distinct_states"], 3),
               "cpu_ratio_por_over_none": round(reduced["cpu_seconds"]
                                                / max(full["cpu_seconds"], 1e-9), 2),
               "cpu_us_per_state": {m: round(1e6 * r["cpu_seconds"] / max(r["distinct_states"], 1),
                                             1)
                                    for m, r in (("none", full), (args.reduce, reduced))},
               "same_verdicts": (full["verdict"], full["violated"])
               == (reduced["verdict"], reduced["violated"])}
        rows.append(row)
        print(json.dumps(row), flush=True)
        # after each configuration: a long run interrupted keeps what it measured
        if not args.no_save:
            save(row, key)
    return 0


def save(row: dict, key: str) -> None:
    path = ROOT / "bench" / "results.json"
    data = json.loads(path.read_text())
    kept = [r for r in data.get(key, []) if r["name"] != row["name"]]
    # the rows in the order of CONFIGURATIONS
    order = {c[0]: i for i, c in enumerate(CONFIGURATIONS)}
    data[key] = sorted([*kept, row], key=lambda r: order.get(r["name"], len(order)))
    path.write_text(json.dumps(data, indent=1) + "\n")


if __name__ == "__main__":
    raise SystemExit(main())
