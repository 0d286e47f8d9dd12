"""The Kafka model's speed against a baseline checkout, side by side in one run.

    git worktree add --detach ../kmc-baseline <commit>
    python3 bench/model_speed.py --baseline ../kmc-baseline [--rounds 3] [--instructions] [--goal]

Each workload is a full local-engine search with no invariant, run in a fresh interpreter,
alternating baseline and current so both see the same machine load. The figure is CPU seconds per
state generated (the search's own process time), because the two models may not generate the same
states; the ratio current / baseline is printed per workload with the load average at the start and
end. The protocol names are the ones both versions know (kip-101 .. truncate-on-fetch are aliases in
the release-line model).

``--instructions`` also counts the CPU instructions a search executes per state generated
(valgrind's callgrind, when it is installed: the same search minus the same process with the search
left out). On a shared machine this figure does not move with the load; it is not time (a cache miss
costs more than an add), so the CPU-time ratio stays the figure that counts.

``--goal`` measures issue 35's two configurations instead, reduced as a user runs them
(``--symmetry --reduce dead``) to a fixed depth: 2.1.0 with three brokers (records=1 crashes=0) to
depth 12 and kraft-4.1 at Last Replica Standing's bounds (brokers=3 acks=-1 min_isr=2
unclean_shutdowns=1) to depth 8.

``--kernel`` runs the current checkout's searches on the model's compiled kernel
(``checker.kernel``, ``--kernel on``: ``spec/kafka/kernel.c`` for the ZooKeeper rows it compiles);
the baseline runs as it is. The kernel is compiled once before the rounds (a cached library), so no
round counts the C compiler.

``--frontier-objects`` runs the current checkout with every frontier state kept as objects, as the
baseline (which had no frontier store) did. The default runs compare end to end: a level past
``checker.bfs.FRONTIER_OBJECT_STATES`` states is pooled to bound memory (issue 13's bytes a state),
which costs the kip-380 workload (levels of up to 7,942 states) CPU that the model itself does not.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys

WORKLOADS = [
    ("kip-101", ["records=2", "epochs=1", "crashes=1"]),
    ("kip-320", ["records=2", "epochs=1", "crashes=1"]),
    ("truncate-on-fetch", ["records=2", "epochs=1", "crashes=1"]),
    ("kip-380", ["records=1", "epochs=1", "crashes=0", "bumps=1", "shutdowns=1", "bounces=1"]),
]
#: ``--goal``: issue 35's two configurations, reduced as a user runs them
#: (``--symmetry --reduce dead``), to a fixed depth: the 2.1.0 three-broker goal configuration and
#: kraft-4.1 at Last Replica Standing's bounds
GOAL_OPTIONS = {"symmetry": True, "reduce": "dead"}
GOAL_WORKLOADS = [
    ("2.1.0", ["brokers=3", "records=1", "crashes=0"], {**GOAL_OPTIONS, "max_depth": 12}),
    ("kraft-4.1", ["brokers=3", "acks=-1", "min_isr=2", "unclean_shutdowns=1"],
     {**GOAL_OPTIONS, "max_depth": 8}),
]

CHILD = r"""
import json, os, sys, time
sys.path.insert(0, sys.argv[1])
if os.environ.get("MODEL_SPEED_OBJECT_STATES"):  # --frontier-objects (the current checkout only)
    import checker.bfs
    checker.bfs.FRONTIER_OBJECT_STATES = int(os.environ["MODEL_SPEED_OBJECT_STATES"])
from spec.registry import build_model
from checker.bfs import check
from checker.search import SearchOptions
model = build_model("kafka", json.loads(sys.argv[3]), sys.argv[2])
options = json.loads(sys.argv[4])
if len(sys.argv) > 5:  # --instructions: the same process without the search
    print(json.dumps({"distinct": 0, "generated": 0, "cpu": 0.0}))
    sys.exit(0)
if os.environ.get("MODEL_SPEED_KERNEL"):  # --kernel (the current checkout only): the compiled kernel's search
    from checker.kernel import run as run_kernel
    from checker.kernel import why_not
    kernel_options = SearchOptions(invariants=[], kernel="on", **options)
    if why_not(model, kernel_options):
        print(json.dumps({"skip": why_not(model, kernel_options)}))
        sys.exit(0)
    start = time.process_time()
    result = run_kernel(model, kernel_options, "on")
    cpu = time.process_time() - start
    assert result.extra["path"]["path"] == "kernel"
else:
    start = time.process_time()
    result = check(model, SearchOptions(invariants=[], **options))
    cpu = time.process_time() - start
print(json.dumps({"distinct": result.distinct_states, "generated": result.states_generated, "cpu": cpu}))
"""  # noqa: E501


def _env(objects: bool, kernel: bool = False) -> dict:
    env = dict(os.environ)
    env.pop("MODEL_SPEED_OBJECT_STATES", None)
    env.pop("MODEL_SPEED_KERNEL", None)
    if objects:
        env["MODEL_SPEED_OBJECT_STATES"] = str(2**62)
    if kernel:
        env["MODEL_SPEED_KERNEL"] = "1"
    return env


def run(root: str, protocol: str, constants: list[str], objects: bool = False, options: dict
        | None = None,
        kernel: bool = False) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, os.path.abspath(root), protocol,
                          json.dumps(constants), json.dumps(options or {})],
                         capture_output=True, text=True, check=True, cwd=os.path.abspath(root),
                         env=_env(objects, kernel))
    return json.loads(out.stdout)


def instructions(root: str, protocol: str, constants: list[str], objects: bool = False,
                 options: dict | None = None, kernel: bool = False) -> float:
    """CPU instructions of the search per state generated (callgrind's total, minus the run without
    the search)."""
    totals, generated = [], 0
    for extra in (["skip"], []):
        out = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                              sys.executable, "-c", CHILD, os.path.abspath(root), protocol,
                              json.dumps(constants), json.dumps(options or {}), *extra],
                             capture_output=True, text=True, check=True, cwd=os.path.abspath(root),
                             env=_env(objects, kernel))
        totals.append(int(re.search(r"Collected : (\d+)", out.stderr).group(1)))
        generated = json.loads(out.stdout.strip().splitlines()[-1])["generated"] or generated
    return (totals[1] - totals[0]) / generated


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", required=True, help="a checkout of the baseline commit")
    parser.add_argument("--current", default=os.path.join(os.path.dirname(__file__), ".."))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", metavar="FILE", help="also write the figures here")
    parser.add_argument("--instructions", action="store_true", help="also count instructions per "
                                                                    "state (valgrind)")
    parser.add_argument("--goal", action="store_true",
                        help="issue 35's configurations instead (2.1.0 three brokers to depth 12, "
                             "kraft-4.1 at Last Replica Standing's bounds to depth 8, both "
                             "--symmetry --reduce dead)")
    parser.add_argument("--kernel", action="store_true",
                        help="the current checkout searches on the model's compiled kernel "
                             "(--kernel on)")
    parser.add_argument("--frontier-objects", action="store_true",
                        help="the current checkout keeps every frontier state as objects, as the "
                             "baseline did (the model's own speed, without the memory-bounded "
                             "frontier's pooling of levels past "
                             "checker.bfs.FRONTIER_OBJECT_STATES)")
    args = parser.parse_args()
    if not os.path.isdir(os.path.join(args.baseline, "spec")):
        print(f"model_speed: {args.baseline} is not a kmc checkout (no spec/ in it)",
              file=sys.stderr)
        return 66
    if args.instructions and not shutil.which("valgrind"):
        print("model_speed: --instructions needs valgrind (callgrind); install it or leave the "
              "option out", file=sys.stderr)
        return 69
    load_start = os.getloadavg()
    rows = []
    workloads = (GOAL_WORKLOADS if args.goal
                 else [(protocol, constants, {}) for protocol, constants in WORKLOADS])
    for protocol, constants, options in workloads:
        if args.kernel:  # compile (or find) the kernel before any round counts
            warm = run(args.current, protocol, constants, options={**options, "max_depth": 1},
                       kernel=True)
            if "skip" in warm:
                print(f"{protocol:18} not measured: the kernel does not run it ({warm['skip']})")
                continue
        base, cur = [], []
        for _ in range(args.rounds):
            base.append(run(args.baseline, protocol, constants, options=options))
            cur.append(run(args.current, protocol, constants, args.frontier_objects, options,
                           args.kernel))
        b = sum(r["cpu"] for r in base) / sum(r["generated"] for r in base)
        c = sum(r["cpu"] for r in cur) / sum(r["generated"] for r in cur)
        rows.append({"protocol": protocol, "constants": constants, "options": options,
                     "baseline_generated": base[0]["generated"],
                     "current_generated": cur[0]["generated"], "baseline_us_per_state": b * 1e6,
                     "current_us_per_state": c * 1e6, "ratio": c / b})
        if args.instructions:
            bi = instructions(args.baseline, protocol, constants, options=options)
            ci = instructions(args.current, protocol, constants, args.frontier_objects, options,
                              args.kernel)
            rows[-1].update(baseline_instructions_per_state=bi, current_instructions_per_state=ci,
                            instruction_ratio=ci / bi)
        label = " ".join(constants + [f"{k}={v}" for k, v in options.items()])
        print(f"{protocol:18} {label:52} baseline {b * 1e6:6.2f} us/state "
              f"({base[0]['generated']:,} generated)  current {c * 1e6:6.2f} us/state "
              f"({cur[0]['generated']:,})  current/baseline {c / b:.2f}")
        if args.instructions:
            row = rows[-1]
            print(f"{'':18} instructions a state: baseline "
                  f"{row['baseline_instructions_per_state']:,.0f}  current "
                  f"{row['current_instructions_per_state']:,.0f}  current/baseline "
                  f"{row['instruction_ratio']:.2f}")
    load_end = os.getloadavg()
    print(f"load average at start {load_start[0]:.2f}, at end {load_end[0]:.2f}; {args.rounds} "
          "rounds, alternating")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows, "load_start": load_start, "load_end": load_end,
                       "rounds": args.rounds, "frontier_objects": args.frontier_objects,
                       "kernel": args.kernel}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
