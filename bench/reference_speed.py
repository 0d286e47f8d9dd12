"""The reference models' per-core speed against a baseline checkout (and TLC when it is at hand),
side by side.

    git worktree add --detach ../kmc-baseline 597ac90
    python3 bench/reference_speed.py [--baseline ../kmc-baseline] [--rounds 3] [--instructions]
        [--tlc tla2tools.jar --specs DIR] [--only MODEL ...] [--json FILE]

The reference models are two-phase commit and Kafka's published TLA+ specifications (``tla:Kip101``,
``tla:Kip279``, ``tla:Kip320``). Each workload is a full search with the local engine, run in a
fresh interpreter, alternating baseline and current so that both see the same machine load; the
figure is the search's own CPU seconds (process time), and the ratio current / baseline is printed
per workload with the load average at the start and the end. Both checkouts must find the same
counts (they are printed).

``--instructions`` also counts the CPU instructions of the search (valgrind's callgrind: the same
process with the search minus the one without it) on a smaller configuration of each workload,
chosen so that its largest levels still pass the 2,048 states a level that earlier frontier stores
kept as objects. Under load this figure does not move; it is not time, but a ratio of it is the
figure to go by on a shared machine.

``--tlc JAR --specs DIR`` also runs TLC (one worker, ``-deadlock``, ``JVM_OPTIONS``) on every
workload whose module DIR holds (the ``kafka-specification`` repository's ``.tla`` files;
``TwoPhase.tla`` and ``TCommit.tla`` of the TLA+ Examples for two-phase), in the same rounds,
alternating with kmc, with the same constants and invariants (``LogMatching``, which the TLA+ text
lacks, and two-phase's ``TCConsistent`` are added to a copy of the module), and checks that TLC
finds the same distinct and generated states. It prints both tools' wall and CPU seconds per process
(kmc's interpreter start-up and TLC's JVM start-up, JIT compiler and collector threads included) and
the ratios TLC / kmc. Either ``--baseline`` or ``--tlc`` may be left out, not both; without
``--tlc`` the TLC column is left out (the jar is never part of this repository).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time

#: the Kafka specifications' invariants that TLC can evaluate on the published text: its ``TypeOk``
#: cannot be (``FiniteReplicatedLog``'s ``records \\in [Offsets -> LogRecords \\union {Nil}]`` with
#: ``Nil == -1``: TLC stops with "Attempted to check equality of integer -1 with non-integer" at the
#: first record written), so the workloads check the others, in kmc and in TLC alike
TLC_KAFKA_INVARIANTS = ["WeakIsr", "StrongIsr", "LogMatching"]

#: (model, constants of the timed run, constants of the instruction count, invariants: None = every
#: one); Kip101 checks none, since every invariant breaks on it (KIP-101's data loss), which ends
#: the run early
WORKLOADS = [
    ("tla:Kip320", ["Replicas=2", "LogSize=3", "MaxRecords=3", "MaxLeaderEpoch=3"],
     ["Replicas=2", "LogSize=3", "MaxRecords=2", "MaxLeaderEpoch=3"], TLC_KAFKA_INVARIANTS),
    ("tla:Kip101", ["Replicas=2", "LogSize=3", "MaxRecords=3", "MaxLeaderEpoch=3"],
     ["Replicas=2", "LogSize=3", "MaxRecords=3", "MaxLeaderEpoch=2"], []),
    ("tla:Kip279", ["Replicas=2", "LogSize=3", "MaxRecords=3", "MaxLeaderEpoch=3"],
     ["Replicas=2", "LogSize=3", "MaxRecords=3", "MaxLeaderEpoch=2"], TLC_KAFKA_INVARIANTS),
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
"""  # noqa: E501


def _args(root: str, model: str, constants: list[str], invariants: list[str] | None) -> list[str]:
    return [sys.executable, "-c", CHILD, os.path.abspath(root), model, json.dumps(constants),
            json.dumps(invariants)]


def run(root: str, model: str, constants: list[str], invariants: list[str] | None) -> dict:
    """One search in a fresh interpreter: its counts, the search's CPU seconds (``cpu``) and the
    whole process's wall and CPU seconds (``wall``, ``process_cpu``: start-up, imports and model
    building too)."""
    out, wall, cpu = _timed(_args(root, model, constants, invariants), os.path.abspath(root))
    if out.returncode != 0:
        raise RuntimeError(f"kmc in {root} failed on {model} (exit {out.returncode}): "
                           f"{out.stderr[-600:]}")
    return {**json.loads(out.stdout), "wall": wall, "process_cpu": cpu}


def instructions(root: str, model: str, constants: list[str], invariants: list[str]
                 | None) -> tuple[int, int]:
    """(instructions of the search, states generated): callgrind's total minus the run without the
    search."""
    totals, generated = [], 0
    for extra in (["skip"], []):
        out = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                              *_args(root, model, constants, invariants), *extra],
                             capture_output=True, text=True, check=True, cwd=os.path.abspath(root))
        totals.append(int(re.search(r"Collected : (\d+)", out.stderr).group(1)))
        generated = json.loads(out.stdout.strip().splitlines()[-1])["generated"] or generated
    return totals[1] - totals[0], generated


#: the invariants kmc checks that the TLA+ text does not define, written in TLA+ for TLC (over the
#: modules' own operators): Raft's LogMatching as ``invariants/reference.py`` states it, and
#: two-phase's TCConsistent (``TwoPhase.tla`` instances ``TCommit`` as ``TC``)
TLA_DEFINITIONS = {
    "LogMatching": (
        "LogMatching == \\A r1, r2 \\in Replicas : \\A offset \\in ReplicaLog!Offsets :\n"
        "    (/\\ ReplicaLog!HasOffset(r1, offset) /\\ ReplicaLog!HasOffset(r2, offset)\n"
        "     /\\ ReplicaLog!GetRecordAtOffset(r1, offset).epoch = "
        "ReplicaLog!GetRecordAtOffset(r2, offset).epoch)\n    => \\A below \\in 0 .. offset :\n"
        "           ReplicaLog!GetRecordAtOffset(r1, below) = ReplicaLog!GetRecordAtOffset(r2, "
        "below)\n"),
    "TCConsistent": "TCConsistent == TC!TCConsistent\n",
}
#: the JVM's options for TLC (TLC's own advice for its breadth-first search: the parallel collector)
JVM_OPTIONS = ["-XX:+UseParallelGC"]


def tlc_module(model: str, constants: list[str], invariants: list[str]
               | None) -> tuple[str, str, str, list[str]]:
    """(module TLC reads, the definitions to add to its text, its configuration, invariants) for a
    workload.

    The definitions go into a copy of the module itself (before its closing line), not into a module
    extending it: ``Kip101`` and ``Kip279`` declare their ``Next`` LOCAL."""
    values = dict(c.split("=", 1) for c in constants)
    if model == "two-phase":
        module, names = "TwoPhase", ["TCConsistent"] if invariants is None else invariants
        init, nxt = "TPInit", "TPNext"
        consts = {"RM": "{" + ", ".join(f"r{i}" for i in range(1, int(values["RM"]) + 1)) + "}"}
    else:
        module, names = model.split(":",
                                    1)[1], TLC_KAFKA_INVARIANTS if invariants is None else invariants  # noqa: E501
        init, nxt = "Init", "Next"
        replicas = "{" + ", ".join(f"r{i}" for i in range(1, int(values.pop("Replicas")) + 1)) + "}"
        consts = {"Replicas": replicas, **values}
    definitions = "".join(TLA_DEFINITIONS[name] for name in names if name in TLA_DEFINITIONS)
    cfg = (f"INIT {init}\nNEXT {nxt}\nCONSTANTS\n"
           + "".join(f"    {k} = {v}\n" for k, v in consts.items())
           + ("INVARIANTS " + " ".join(names) + "\n" if names else ""))
    return module, definitions, cfg, names


def _with_definitions(text: str, definitions: str) -> str:
    """The module's text with ``definitions`` before its closing ``====`` line."""
    lines = text.splitlines(keepends=True)
    end = max(i for i, line in enumerate(lines) if re.match(r"\s*={4,}", line))
    return "".join(lines[:end]) + definitions + "".join(lines[end:])


def tlc_available(specs: str, model: str) -> bool:
    """Whether DIR holds the module TLC needs for this workload."""
    module = "TwoPhase" if model == "two-phase" else model.split(":", 1)[1]
    return os.path.isfile(os.path.join(specs, f"{module}.tla"))


def tlc(jar: str, specs: str, model: str, constants: list[str], invariants: list[str]
        | None) -> dict:
    """TLC on the workload (one worker, no deadlock check, the same constants and invariants as
    kmc's run): its wall and CPU seconds (the JVM's every thread: JIT compiler and collector too),
    counts and version."""
    module, definitions, cfg, names = tlc_module(model, constants, invariants)
    with tempfile.TemporaryDirectory(prefix="kmc-tlc-") as work:
        for name in os.listdir(specs):
            if name.endswith(".tla"):
                shutil.copy(os.path.join(specs, name), work)
        with open(os.path.join(work, f"{module}.tla")) as f:
            text = f.read()
        with open(os.path.join(work, f"{module}.tla"), "w") as f:
            f.write(_with_definitions(text, definitions))
        with open(os.path.join(work, f"{module}.cfg"), "w") as f:
            f.write(cfg)
        command = ["java", *JVM_OPTIONS, "-cp", os.path.abspath(jar), "tlc2.TLC", "-workers", "1",
                   "-deadlock", "-config", f"{module}.cfg", f"{module}.tla"]
        out, wall, cpu = _timed(command, work)
    found = re.search(r"([\d,]+) states generated, ([\d,]+) distinct states found", out.stdout)
    if not found or "No error has been found" not in out.stdout:
        raise RuntimeError(f"TLC did not complete {module} (exit {out.returncode}): "
                           f"{out.stdout[-600:]}")
    generated, distinct = (int(x.replace(",", "")) for x in found.groups())
    depth = re.search(r"depth of the complete state graph search is (\d+)", out.stdout)
    version = re.search(r"TLC2 (Version [^\n]*)", out.stdout)
    return {"wall": wall, "cpu": cpu, "distinct": distinct, "generated": generated,
            "depth": int(depth.group(1)) if depth else None, "invariants": names,
            "version": version.group(1).strip() if version else "unknown"}


def _timed(command: list[str], cwd: str) -> tuple[subprocess.CompletedProcess, float, float]:
    """Run to the end: (the process, its wall seconds, its CPU seconds, user and system, every
    thread)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    out = subprocess.run(command, capture_output=True, text=True, cwd=cwd)
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return out, wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def _java_version() -> str:
    out = subprocess.run(["java", "-version"], capture_output=True, text=True)
    lines = (out.stderr or out.stdout).strip().splitlines()
    return lines[0] if lines else "unknown"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", help="a checkout of the baseline commit (e.g. 597ac90)")
    parser.add_argument("--current",
                        default=os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--only", nargs="+", help="just these models (e.g. tla:Kip320 two-phase)")
    parser.add_argument("--instructions", action="store_true", help="also count instructions "
                                                                    "(valgrind's callgrind)")
    parser.add_argument("--tlc", metavar="JAR", help="tla2tools.jar: also run TLC, alternating "
                                                     "with kmc")
    parser.add_argument("--specs", metavar="DIR", help="the directory of the TLA+ modules TLC "
                                                       "reads (with --tlc)")
    parser.add_argument("--json", metavar="FILE", help="also write the figures here")
    args = parser.parse_args()
    if args.baseline is None and args.tlc is None:
        print("reference_speed: nothing to compare with: give --baseline CHECKOUT, --tlc JAR "
              "--specs DIR, or both",
              file=sys.stderr)
        return 64
    if args.baseline is not None and not os.path.isdir(os.path.join(args.baseline, "spec")):
        print(f"reference_speed: {args.baseline} is not a kmc checkout (no spec/ in it)",
              file=sys.stderr)
        return 66
    if args.instructions and not shutil.which("valgrind"):
        print("reference_speed: --instructions needs valgrind (callgrind); install it or leave the "
              "option out",
              file=sys.stderr)
        return 69
    if args.tlc and not (os.path.isfile(args.tlc) and args.specs and os.path.isdir(args.specs)):
        print("reference_speed: --tlc needs the jar and --specs DIR with the TLA+ modules",
              file=sys.stderr)
        return 66
    if args.tlc and not shutil.which("java"):
        print("reference_speed: --tlc needs java on the PATH (TLC runs on a JVM); install one or "
              "leave --tlc out",
              file=sys.stderr)
        return 69
    if not args.tlc:
        print("TLC: not run (no --tlc tla2tools.jar given)")
    load_start = os.getloadavg()
    java = _java_version() if args.tlc else None
    rows = []
    for model, constants, small, invariants in WORKLOADS:
        if args.only and model not in args.only:
            continue
        with_tlc = bool(args.tlc) and tlc_available(args.specs, model)
        if args.tlc and not with_tlc:
            print(f"{model:11} TLC: not run (no module for it in {args.specs})")
        base, cur, tl = [], [], []
        for _ in range(args.rounds):  # alternating, so that each sees the same machine load
            if args.baseline is not None:
                base.append(run(args.baseline, model, constants, invariants))
            cur.append(run(args.current, model, constants, invariants))
            if with_tlc:
                tl.append(tlc(args.tlc, args.specs, model, constants, invariants))
        c = _mean([r["cpu"] for r in cur])
        row = {"model": model, "constants": constants, "invariants": invariants,
               "current": {k: cur[0][k] for k in ("distinct", "generated", "depth")},
               "current_cpu_s": [round(r["cpu"], 3) for r in cur],
               "current_process_cpu_s": [round(r["process_cpu"], 3) for r in cur],
               "current_wall_s": [round(r["wall"], 3) for r in cur]}
        print(f"{model:11} {' '.join(constants):52} {cur[0]['distinct']:>9,} distinct  kmc: search "
              f"CPU {c:6.2f} s, process CPU {_mean([r['process_cpu'] for r in cur]):6.2f} s, wall "
              f"{_mean([r['wall'] for r in cur]):6.2f} s",
              flush=True)
        if base:
            b = _mean([r["cpu"] for r in base])
            row.update(baseline={k: base[0][k] for k in ("distinct", "generated", "depth")},
                       baseline_cpu_s=[round(r["cpu"], 3) for r in base], cpu_ratio=c / b)
            print(f"{'':11} baseline: {base[0]['distinct']:,} distinct, search CPU {b:6.2f} s;  "
                  f"current/baseline {c / b:.2f}", flush=True)
        if args.instructions:
            ci, cg = instructions(args.current, model, small, invariants)
            row.update(instruction_constants=small, current_instructions=ci,
                       instruction_generated=[cg])
            line = f"{'':11} {' '.join(small):52} instructions: current {ci / 1e9:6.2f} G"
            if args.baseline is not None:
                bi, bg = instructions(args.baseline, model, small, invariants)
                row.update(baseline_instructions=bi, instruction_ratio=ci / bi,
                           instruction_generated=[bg, cg])
                line += f"  baseline {bi / 1e9:6.2f} G  current/baseline {ci / bi:.2f}"
            print(line, flush=True)
        if tl:
            same = all((t["distinct"], t["generated"]) == (r["distinct"], r["generated"])
                       for t in tl for r in cur)
            tw, tc = _mean([t["wall"] for t in tl]), _mean([t["cpu"] for t in tl])
            kw, kc = _mean([r["wall"] for r in cur]), _mean([r["process_cpu"] for r in cur])
            row["tlc"] = {"version": tl[0]["version"], "java": java, "jvm_options": JVM_OPTIONS,
                          "invariants": tl[0]["invariants"], "distinct": tl[0]["distinct"],
                          "generated": tl[0]["generated"], "depth": tl[0]["depth"],
                          "same_counts": same, "wall_s": [round(t["wall"], 3) for t in tl],
                          "cpu_s": [round(t["cpu"], 3) for t in tl], "wall_ratio": tw / kw,
                          "cpu_ratio": tc / kc}
            print(f"{'':11} TLC: {tl[0]['distinct']:,} distinct, {tl[0]['generated']:,} generated "
                  f"({'the same as kmc' if same else 'NOT the same as kmc'}); wall {tw:6.2f} s, "
                  f"CPU {tc:6.2f} s: TLC/kmc wall {tw / kw:.2f}, CPU {tc / kc:.2f}", flush=True)
        rows.append(row)
    load_end = os.getloadavg()
    print(f"load average at start {load_start[0]:.2f}, at end {load_end[0]:.2f}; {args.rounds} "
          "rounds, alternating")
    if java:
        print(f"TLC: {next((r['tlc']['version'] for r in rows if 'tlc' in r), 'not run')}, one "
              f"worker, {' '.join(JVM_OPTIONS)}, on {java}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows, "load_start": load_start, "load_end": load_end,
                       "rounds": args.rounds}, f,
                      indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
