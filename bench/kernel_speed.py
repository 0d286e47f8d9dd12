"""The compiled kernel, the readable model and TLC side by side: whole commands, equal counts.

    python3 bench/kernel_speed.py [--tlc tla2tools.jar --specs DIR] [--rounds 2] [--readable-rounds 1]
        [--instructions] [--only MODEL ...] [--json FILE]

Each workload is one ``kmc check`` command as a user types it (a fresh interpreter: start-up,
imports, the model and the search), run with ``--kernel on`` and with ``--kernel off``, and TLC (one
worker, ``-deadlock``, the same constants and invariants: ``bench/reference_speed.py`` writes its
module and configuration) alternating with the kernel's runs, so that both see the same machine
load. Printed per workload: the counts of every run (they must be equal), wall and CPU seconds (the
process and its threads), the ratios TLC / kernel and readable / kernel, and the load average before
and after. The kernel is compiled (or found in the cache) by a first run that is not timed.
``--instructions``: valgrind's callgrind count of the search alone (the same process with the search
minus the one without it) on a smaller configuration, kernel against readable.

Kip101 breaks every invariant (KIP-101's data loss): kmc runs it with ``--continue`` (the whole
graph, every invariant checked) and TLC with none, so both explore the same graph.
"""  # noqa: E501

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reference_speed import JVM_OPTIONS, TLC_KAFKA_INVARIANTS, _java_version, _mean, _timed, tlc  # noqa: E402

#: the counterexamples of the runs (Kip101) are written here, not into the checkout
TRACES = tempfile.mkdtemp(prefix="kmc-kernel-speed-")
ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))
TLA_BIG = ["Replicas=2", "LogSize=4", "MaxRecords=4", "MaxLeaderEpoch=3"]
TLA_SMALL = ["Replicas=2", "LogSize=2", "MaxRecords=2", "MaxLeaderEpoch=2"]
#: (model, constants, kmc's invariants (None: the model's defaults), TLC's invariants, constants for
#: --instructions)
WORKLOADS = [
    ("two-phase", ["RM=8"], None, None, ["RM=5"]),
    ("tla:Kip320", TLA_BIG, TLC_KAFKA_INVARIANTS, TLC_KAFKA_INVARIANTS, TLA_SMALL),
    ("tla:Kip101", TLA_BIG, TLC_KAFKA_INVARIANTS, [], TLA_SMALL),
    ("tla:Kip279", TLA_BIG, TLC_KAFKA_INVARIANTS, TLC_KAFKA_INVARIANTS, TLA_SMALL),
]

SEARCH_ONLY = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
from spec.registry import build_model
from checker.engines import run
from checker.search import SearchOptions
from invariants.registry import for_family
model = build_model(sys.argv[2], json.loads(sys.argv[3]))
family = for_family(model.family)
names = json.loads(sys.argv[4])
invariants = [i for i in family.values() if i.default] if names is None else [family[n] for n in names]
kernel = sys.argv[5]
def search(model):
    return run(model, SearchOptions(invariants=invariants, stop_at_first=False, check_deadlock=False, kernel=kernel))
if kernel == "on":
    from checker.kernel import load
    load(model.kernel())  # compiled or cached before the count: the same in both runs
# a search of a tiny configuration first, in both runs: the imports and first calls of the path are not counted
search(build_model(sys.argv[2], json.loads(sys.argv[6])))
if len(sys.argv) > 7:
    sys.exit(0)
result = search(model)
print(json.dumps({"distinct": result.distinct_states, "generated": result.states_generated}))
"""  # noqa: E501


def timed_kmc(model: str, constants: list[str], invariants: list[str] | None, kernel: str) -> dict:
    command = [sys.executable, "-m", "kmc", "check", model,
               *sum((["--const", c] for c in constants), []), "-deadlock", "--continue", "--json",
               "--quiet", "--kernel", kernel, "--trace-dir", TRACES]
    for name in invariants or []:
        command += ["--invariant", name]
    os.environ["PYTHONPATH"] = ROOT
    out, wall, cpu = _timed(command, ROOT)
    if out.returncode not in (0, 12):
        raise RuntimeError(f"kmc failed on {model} (exit {out.returncode}): {out.stderr[-600:]}")
    data = json.loads(out.stdout)
    return {"distinct": data["distinct_states"], "generated": data["states_generated"],
            "depth": data["depth"], "path": data.get("path", {}).get("path"), "wall": wall,
            "cpu": cpu}


#: the tiny configuration searched first in both runs of ``instructions``
TINY = {"two-phase": ["RM=2"]}


def instructions(model: str, constants: list[str], invariants: list[str] | None,
                 kernel: str) -> tuple[int, int]:
    """(instructions of the search alone, states generated), callgrind: the run minus the run
    without the search (both first search a tiny configuration, so the imports and first calls are
    in both)."""
    totals, generated = [], 0
    tiny = TINY.get(model, ["Replicas=1", "LogSize=1", "MaxRecords=1", "MaxLeaderEpoch=1"])
    for extra in (["skip"], []):
        args = [sys.executable, "-c", SEARCH_ONLY, ROOT, model, json.dumps(constants),
                json.dumps(invariants), kernel, json.dumps(tiny)]
        out = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                              *args, *extra],
                             capture_output=True, text=True, check=True, cwd=ROOT)
        totals.append(int(re.search(r"Collected : (\d+)", out.stderr).group(1)))
        if not extra:
            generated = json.loads(out.stdout.strip().splitlines()[-1])["generated"]
    return totals[1] - totals[0], generated


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tlc", metavar="JAR", help="tla2tools.jar: also run TLC, alternating "
                                                     "with the kernel")
    parser.add_argument("--specs", metavar="DIR", help="the TLA+ modules TLC reads (with --tlc)")
    parser.add_argument("--rounds", type=int, default=2, help="runs of the kernel (and of TLC), "
                                                              "alternating")
    parser.add_argument("--readable-rounds", type=int, default=1, help="runs of the readable model "
                                                                       "(0: none)")
    parser.add_argument("--instructions", action="store_true", help="callgrind: kernel against "
                                                                    "readable")
    parser.add_argument("--instructions-only", nargs="+", metavar="MODEL=CONSTANTS",
                        help="only count instructions, e.g. two-phase=RM=6 "
                             "tla:Kip320=Replicas=2,LogSize=3,...")
    parser.add_argument("--only", nargs="+", help="just these models")
    parser.add_argument("--json", metavar="FILE", help="also write the figures here")
    args = parser.parse_args()
    if args.tlc and not (os.path.isfile(args.tlc) and args.specs and os.path.isdir(args.specs)):
        print("kernel_speed: --tlc needs the jar and --specs DIR with the TLA+ modules",
              file=sys.stderr)
        return 66
    rows = []
    if args.instructions_only:
        for item in args.instructions_only:
            model, _, constants = item.partition("=")
            invariants = next(w[2] for w in WORKLOADS if w[0] == model)
            small = constants.split(",")
            ki, kg = instructions(model, small, invariants, "on")
            ri, rg = instructions(model, small, invariants, "off")
            assert kg == rg
            print(f"{model:11} {' '.join(small):48} search instructions: kernel {ki / 1e6:9.1f} M "
                  f"({ki / kg:7.1f} a state generated), readable {ri / 1e6:9.1f} M "
                  f"({ri / rg:7.1f}): readable/kernel {ri / ki:6.1f}; load "
                  f"{os.getloadavg()[0]:.1f}", flush=True)
        return 0
    java = _java_version() if args.tlc else None
    for model, constants, invariants, tlc_invariants, small in WORKLOADS:
        if args.only and model not in args.only:
            continue
        load_before = os.getloadavg()[0]
        # compiles (or finds) the kernel's library: not timed
        timed_kmc(model, constants, invariants, "on")
        compiled, readable, tl = [], [], []
        for i in range(max(args.rounds, args.readable_rounds)):
            if i < args.rounds:
                compiled.append(timed_kmc(model, constants, invariants, "on"))
                if args.tlc:
                    tl.append(tlc(args.tlc, args.specs, model, constants, tlc_invariants))
            if i < args.readable_rounds:
                readable.append(timed_kmc(model, constants, invariants, "off"))
        load_after = os.getloadavg()[0]
        runs = compiled + readable + tl
        same = len({(r["distinct"], r["generated"]) for r in runs}) == 1
        assert (all(r["path"] == "kernel" for r in compiled)
                and all(r["path"] != "kernel" for r in readable))
        kw, kc = _mean([r["wall"] for r in compiled]), _mean([r["cpu"] for r in compiled])
        row = {"model": model, "constants": constants, "invariants": invariants,
               "same_counts": same, "distinct": compiled[0]["distinct"],
               "generated": compiled[0]["generated"], "depth": compiled[0]["depth"],
               "load": [load_before, load_after],
               "kernel_wall_s": [round(r["wall"], 3) for r in compiled],
               "kernel_cpu_s": [round(r["cpu"], 3) for r in compiled]}
        print(f"{model:11} {' '.join(constants):48} {row['distinct']:>10,} distinct "
              f"{row['generated']:>11,} generated ({'equal counts' if same else 'COUNTS DIFFER'}); "
              f"load {load_before:.1f} -> {load_after:.1f}", flush=True)
        print(f"{'':11} kernel:   wall {kw:7.2f} s  CPU {kc:7.2f} s", flush=True)
        if readable:
            rw, rc = _mean([r["wall"] for r in readable]), _mean([r["cpu"] for r in readable])
            row.update(readable_wall_s=[round(r["wall"], 3) for r in readable],
                       readable_cpu_s=[round(r["cpu"], 3) for r in readable],
                       readable_over_kernel_cpu=rc / kc)
            print(f"{'':11} readable: wall {rw:7.2f} s  CPU {rc:7.2f} s   readable/kernel CPU "
                  f"{rc / kc:6.1f}", flush=True)
        if tl:
            tw, tc = _mean([t["wall"] for t in tl]), _mean([t["cpu"] for t in tl])
            row["tlc"] = {"version": tl[0]["version"], "java": java, "jvm_options": JVM_OPTIONS,
                          "invariants": tl[0]["invariants"],
                          "wall_s": [round(t["wall"], 3) for t in tl],
                          "cpu_s": [round(t["cpu"], 3) for t in tl], "wall_ratio": tw / kw,
                          "cpu_ratio": tc / kc}
            print(f"{'':11} TLC:      wall {tw:7.2f} s  CPU {tc:7.2f} s   TLC/kernel wall "
                  f"{tw / kw:6.1f}, CPU {tc / kc:6.1f}", flush=True)
        if args.instructions:
            ki, kg = instructions(model, small, invariants, "on")
            ri, rg = instructions(model, small, invariants, "off")
            assert kg == rg
            row.update(instruction_constants=small, kernel_instructions=ki,
                       readable_instructions=ri)
            print(f"{'':11} {' '.join(small):48} search instructions: kernel {ki / 1e6:9.1f} M "
                  f"({ki / kg:7.1f} a state generated), readable {ri / 1e6:9.1f} M "
                  f"({ri / rg:7.1f}): readable/kernel {ri / ki:6.1f}", flush=True)
        rows.append(row)
    if java:
        print(f"TLC: {next((r['tlc']['version'] for r in rows if 'tlc' in r), 'not run')}, one "
              f"worker, {' '.join(JVM_OPTIONS)}, on {java}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
