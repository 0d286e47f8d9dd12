"""The reference models' per-core speed against a baseline checkout (and TLC when it is at hand), side by side.

    git worktree add --detach ../kmc-baseline 597ac90
    python3 bench/reference_speed.py --baseline ../kmc-baseline [--rounds 3] [--instructions]
        [--tlc tla2tools.jar --specs DIR] [--json FILE]

The reference models are two-phase commit and Kafka's published TLA+ specifications (``tla:Kip101``,
``tla:Kip279``, ``tla:Kip320``). Each workload is a full search with the local engine, run in a fresh
interpreter, alternating baseline and current so that both see the same machine load; the figure is the
search's own CPU seconds (process time), and the ratio current / baseline is printed per workload with the
load average at the start and the end. Both checkouts must find the same counts (they are printed).

``--instructions`` also counts the CPU instructions of the search (valgrind's callgrind: the same process
with the search minus the one without it) on a smaller configuration of each workload, chosen so that its
largest levels still pass the 2,048 states a level that earlier frontier stores kept as objects. Under load
this figure does not move; it is not time, but a ratio of it is the figure to go by on a shared machine.

``--tlc JAR --specs DIR`` also runs TLC (one worker, ``-deadlock``) on the TLA+ workloads, the modules read
from DIR (the ``kafka-specification`` repository's ``.tla`` files), and prints its wall seconds beside
kmc's; without them the TLC column is left out (the jar is never part of this repository).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

#: (model, constants of the timed run, constants of the instruction count, invariants: None = every one)
WORKLOADS = [
    ("tla:Kip320", ["Replicas=2", "LogSize=3", "MaxRecords=3", "MaxLeaderEpoch=3"],
     ["Replicas=2", "LogSize=3", "MaxRecords=2", "MaxLeaderEpoch=3"], None),
    ("tla:Kip101", ["Replicas=2", "LogSize=3", "MaxRecords=3", "MaxLeaderEpoch=3"],
     ["Replicas=2", "LogSize=3", "MaxRecords=3", "MaxLeaderEpoch=2"], ["TypeOk"]),
    ("tla:Kip279", ["Replicas=2", "LogSize=3", "MaxRecords=3", "MaxLeaderEpoch=3"],
     ["Replicas=2", "LogSize=3", "MaxRecords=3", "MaxLeaderEpoch=2"], ["TypeOk"]),
    ("two-phase", ["RM=7"], ["RM=6"], None),
]

CHILD = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
from spec.registry import build_model
from checker.bfs import check
from checker.search import SearchOptions
from invariants.registry import for_family
model = build_model(sys.argv[2], json.loads(sys.argv[3]))
family = for_family(model.family)
names = json.loads(sys.argv[4])
invariants = list(family.values()) if names is None else [family[name] for name in names]
if len(sys.argv) > 5:  # --instructions: the same process without the search
    print(json.dumps({"distinct": 0, "generated": 0, "depth": 0, "cpu": 0.0}))
    sys.exit(0)
start = time.process_time()
result = check(model, SearchOptions(invariants=invariants))
cpu = time.process_time() - start
print(json.dumps({"distinct": result.distinct_states, "generated": result.states_generated, "depth": result.depth,
                  "verdict": str(result.verdict), "cpu": cpu}))
"""


def _args(root: str, model: str, constants: list[str], invariants: list[str] | None) -> list[str]:
    return [sys.executable, "-c", CHILD, os.path.abspath(root), model, json.dumps(constants), json.dumps(invariants)]


def run(root: str, model: str, constants: list[str], invariants: list[str] | None) -> dict:
    out = subprocess.run(_args(root, model, constants, invariants), capture_output=True, text=True, check=True,
                         cwd=os.path.abspath(root))
    return json.loads(out.stdout)


def instructions(root: str, model: str, constants: list[str], invariants: list[str] | None) -> tuple[int, int]:
    """(instructions of the search, states generated): callgrind's total minus the run without the search."""
    totals, generated = [], 0
    for extra in (["skip"], []):
        out = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                              *_args(root, model, constants, invariants), *extra],
                             capture_output=True, text=True, check=True, cwd=os.path.abspath(root))
        totals.append(int(re.search(r"Collected : (\d+)", out.stderr).group(1)))
        generated = json.loads(out.stdout.strip().splitlines()[-1])["generated"] or generated
    return totals[1] - totals[0], generated


def tlc(jar: str, specs: str, model: str, constants: list[str]) -> dict:
    """TLC on the module (one worker, no deadlock check): wall seconds and its counts."""
    module = model.split(":", 1)[1]
    values = dict(c.split("=", 1) for c in constants)
    replicas = ", ".join(f"r{i}" for i in range(1, int(values.pop("Replicas")) + 1))
    with tempfile.TemporaryDirectory(prefix="kmc-tlc-") as work:
        for name in os.listdir(specs):
            if name.endswith(".tla"):
                shutil.copy(os.path.join(specs, name), work)
        with open(os.path.join(work, f"{module}.cfg"), "w") as f:
            f.write("INIT Init\nNEXT Next\nCONSTANTS\n")
            f.write(f"    Replicas = {{{replicas}}}\n")
            f.writelines(f"    {k} = {v}\n" for k, v in values.items())
            f.write("INVARIANTS TypeOk\n")
        started = time.monotonic()
        out = subprocess.run(["java", "-XX:+UseParallelGC", "-cp", os.path.abspath(jar), "tlc2.TLC", "-workers", "1",
                              "-deadlock", "-config", f"{module}.cfg", f"{module}.tla"],
                             capture_output=True, text=True, cwd=work)
        seconds = time.monotonic() - started
    found = re.search(r"([\d,]+) states generated, ([\d,]+) distinct states found", out.stdout)
    if not found:
        raise RuntimeError(f"TLC gave no counts for {module} (exit {out.returncode}): {out.stdout[-400:]}")
    generated, distinct = (int(x.replace(",", "")) for x in found.groups())
    return {"seconds": seconds, "distinct": distinct, "generated": generated}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", required=True, help="a checkout of the baseline commit (e.g. 597ac90)")
    parser.add_argument("--current", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", nargs="+", help="just these models (e.g. tla:Kip320 two-phase)")
    parser.add_argument("--instructions", action="store_true", help="also count instructions (valgrind's callgrind)")
    parser.add_argument("--tlc", metavar="JAR", help="tla2tools.jar: also time TLC on the TLA+ workloads")
    parser.add_argument("--specs", metavar="DIR", help="the directory of the TLA+ modules TLC reads (with --tlc)")
    parser.add_argument("--json", metavar="FILE", help="also write the figures here")
    args = parser.parse_args()
    if not os.path.isdir(os.path.join(args.baseline, "spec")):
        print(f"reference_speed: {args.baseline} is not a kmc checkout (no spec/ in it)", file=sys.stderr)
        return 66
    if args.instructions and not shutil.which("valgrind"):
        print("reference_speed: --instructions needs valgrind (callgrind); install it or leave the option out",
              file=sys.stderr)
        return 69
    if args.tlc and not (os.path.isfile(args.tlc) and args.specs and os.path.isdir(args.specs)):
        print("reference_speed: --tlc needs the jar and --specs DIR with the TLA+ modules", file=sys.stderr)
        return 66
    if not args.tlc:
        print("TLC: not run (no --tlc tla2tools.jar given)")
    load_start = os.getloadavg()
    rows = []
    for model, constants, small, invariants in WORKLOADS:
        if args.only and model not in args.only:
            continue
        base, cur = [], []
        for _ in range(args.rounds):
            base.append(run(args.baseline, model, constants, invariants))
            cur.append(run(args.current, model, constants, invariants))
        b, c = sum(r["cpu"] for r in base) / len(base), sum(r["cpu"] for r in cur) / len(cur)
        row = {"model": model, "constants": constants, "invariants": invariants,
               "baseline": {k: base[0][k] for k in ("distinct", "generated", "depth")},
               "current": {k: cur[0][k] for k in ("distinct", "generated", "depth")},
               "baseline_cpu_s": [round(r["cpu"], 3) for r in base], "current_cpu_s": [round(r["cpu"], 3) for r in cur],
               "cpu_ratio": c / b}
        print(f"{model:11} {' '.join(constants):52} {cur[0]['distinct']:>9,} distinct ({base[0]['distinct']:,} at the "
              f"baseline)  CPU s: baseline {b:6.2f}  current {c:6.2f}  current/baseline {c / b:.2f}", flush=True)
        if args.instructions:
            bi, bg = instructions(args.baseline, model, small, invariants)
            ci, cg = instructions(args.current, model, small, invariants)
            row.update(instruction_constants=small, baseline_instructions=bi, current_instructions=ci,
                       instruction_ratio=ci / bi, instruction_generated=[bg, cg])
            print(f"{'':11} {' '.join(small):52} instructions: baseline {bi / 1e9:6.2f} G  current {ci / 1e9:6.2f} G  "
                  f"current/baseline {ci / bi:.2f}", flush=True)
        if args.tlc and model.startswith("tla:"):
            t = tlc(args.tlc, args.specs, model, constants)
            row["tlc"] = t
            print(f"{'':11} TLC: {t['distinct']:,} distinct in {t['seconds']:.1f} s wall; kmc's CPU {c:.1f} s "
                  f"({t['seconds'] / c:.2f}x faster than TLC)", flush=True)
        rows.append(row)
    load_end = os.getloadavg()
    print(f"load average at start {load_start[0]:.2f}, at end {load_end[0]:.2f}; {args.rounds} rounds, alternating")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows, "load_start": load_start, "load_end": load_end, "rounds": args.rounds}, f,
                      indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
