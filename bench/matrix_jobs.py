"""Where ``kmc matrix``'s time goes: each configuration's CPU seconds from one ``--workers 1`` run,
and the makespan of handing them to N workers in the jobs' order against longest first.

    python3 bench/matrix_jobs.py [--workers 2] [--json FILE] [--from FILE] [ROW ...]

Runs the matrix in this process, one search after the other (``run_matrix(workers=1)``), timing
every job (its search and its stories' replays, ``time.process_time``) and the parent's own work
around them (building the models, saving traces, what is left of the wall time). From those measured
seconds it computes the makespan of list scheduling on ``--workers`` workers (a free worker takes
the next job) in three orders: the jobs' own order (the dispatch before longest-first),
``kmc.matrix.run``'s estimate of each job's cost, largest first (what ``kmc matrix`` does), and the
measured seconds, largest first (LPT with perfect knowledge; Graham 1969: within 4/3 of the
optimum), each against half of the total (the ideal); ``--perturb N`` also draws N perturbed copies
of the measured seconds to see how robust each order is. Per-job CPU does not depend on the load as
wall time does, so the makespans are meaningful on a busy machine. ``--from FILE`` recomputes them
from the JSON an earlier run wrote, without searching.
"""

from __future__ import annotations

import argparse
import heapq
import json
import math
import os
import random
import sys
import time
from types import SimpleNamespace

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from checker.pool import run_jobs  # noqa: E402
from kmc.matrix import run as matrix  # noqa: E402

#: the spread of the perturbation (``--perturb``), chosen, not measured: searches that come out 30%
#: longer or shorter on another machine or another load, a stress test of an order fixed in advance
SIGMA = 0.3


def makespan(seconds: list[float], order: list[int], workers: int) -> float:
    """The end of the last job when a free worker takes the next job of ``order`` (ties: the lowest
    worker)."""
    free = [(0.0, w) for w in range(workers)]
    end = 0.0
    for index in order:
        at, worker = heapq.heappop(free)
        heapq.heappush(free, (at + seconds[index], worker))
        end = max(end, at + seconds[index])
    return end


def measure(extra_protocols: list[str]) -> dict:
    jobs: list[dict] = []
    real_job, real_story = matrix._check_job, matrix.story_of
    story_cpu = [0.0]

    def timed_story(*args, **kwargs):
        started = time.process_time()
        try:
            return real_story(*args, **kwargs)
        finally:
            story_cpu[0] += time.process_time() - started

    def timed_job(job):
        story_cpu[0] = 0.0
        cpu, wall = time.process_time(), time.perf_counter()
        cells = real_job(job)
        jobs.append({"row": job.row.label, "constants": dict(job.model.constants),
                     "invariants": [inv.name for inv in job.invariants],
                     "cpu_s": round(time.process_time() - cpu, 3),
                     "wall_s": round(time.perf_counter() - wall, 3),
                     "story_cpu_s": round(story_cpu[0], 3),
                     "states": max(c.distinct_states for c in cells), "cells": len(cells)})
        print(json.dumps(jobs[-1]), file=sys.stderr, flush=True)  # one line a search, as it ends
        return cells

    matrix._check_job, matrix.story_of = timed_job, timed_story
    load = os.getloadavg()
    cpu, wall = time.process_time(), time.perf_counter()
    try:
        cells = matrix.run_matrix("kafka",
                                  matrix.MatrixOptions(protocols=extra_protocols, workers=1))
    finally:
        matrix._check_job, matrix.story_of = real_job, real_story
    total_cpu, total_wall = time.process_time() - cpu, time.perf_counter() - wall
    return {"load_before": load, "load_after": os.getloadavg(), "cells": len(cells), "jobs": jobs,
            "total_cpu_s": round(total_cpu, 3), "total_wall_s": round(total_wall, 3),
            "parent_cpu_s": round(total_cpu - sum(j["cpu_s"] for j in jobs), 3)}


def estimate(job: dict) -> float:
    """``kmc.matrix.run.job_cost`` of a measured job (from its constants, as the command computes
    it)."""
    return matrix.job_cost(SimpleNamespace(model=SimpleNamespace(constants=job["constants"])))


def fixed_costs(count: int, workers: int) -> str:
    """What the pool itself costs: ``count`` empty jobs on ``workers`` forked workers (fork, one
    round trip a job, the workers' exit), wall and the parent's CPU, against the same jobs here."""
    cpu, wall = time.process_time(), time.perf_counter()
    run_jobs(int, list(range(count)), workers)
    forked = (time.perf_counter() - wall, time.process_time() - cpu)
    cpu, wall = time.process_time(), time.perf_counter()
    run_jobs(int, list(range(count)), 1)
    here = (time.perf_counter() - wall, time.process_time() - cpu)
    return (f"{count} empty jobs: on {workers} forked workers {forked[0] * 1000:.1f} ms wall, "
            f"{forked[1] * 1000:.1f} ms of the parent's CPU; here {here[0] * 1000:.2f} ms")


def report(data: dict, workers: int, perturb: int = 0) -> None:
    jobs = data["jobs"]
    seconds = [j["cpu_s"] for j in jobs]
    total, stories = sum(seconds), sum(j["story_cpu_s"] for j in jobs)
    before, after = (" ".join(f"{x:.2f}" for x in data[k]) for k in ("load_before", "load_after"))
    print(f"{len(jobs)} jobs, {data['cells']} cells: jobs {total:.1f} s CPU (stories {stories:.1f} "
          f"s), parent outside the jobs {data['parent_cpu_s']:.1f} s CPU; wall "
          f"{data['total_wall_s']:.1f} s (load {before} -> {after})")
    for j in sorted(jobs, key=lambda j: -j["cpu_s"])[:8]:
        print(f"  {j['cpu_s']:7.1f} s  {j['states']:>9,} states  {j['row']} "
              f"{', '.join(j['invariants'])} (stories {j['story_cpu_s']:.1f} s, estimate "
              f"{estimate(j):g})")
    one = total + data["parent_cpu_s"]
    print(f"one worker: {one:.1f} s; ideal on {workers}: {one / workers:.1f} s ({1 / workers:.3f} "
          "of one)")
    costs = [estimate(j) for j in jobs]
    orders = {"the jobs' order": list(range(len(jobs))),
              "the estimate, largest first (kmc "
              "matrix)": sorted(range(len(jobs)), key=lambda i: (-costs[i], i)),
              "measured seconds, largest first "
              "(LPT)": sorted(range(len(jobs)), key=lambda i: (-seconds[i], i))}
    for name, order in orders.items():
        span = makespan(seconds, order, workers) + data["parent_cpu_s"]
        print(f"  {name}: makespan {span:.1f} s = {span / one:.4f} of one worker's")
    if perturb:
        print(f"each search's seconds times exp(N(0, {SIGMA})), {perturb} draws (seeds 0 to "
              f"{perturb - 1}); "
              "makespan over the total, mean and worst:")
        for name, order in orders.items():
            ratios = []
            for seed in range(perturb):
                draw = random.Random(seed)
                noisy = [x * math.exp(draw.gauss(0, SIGMA)) for x in seconds]
                if name.startswith("measured"):  # LPT knowing the perturbed seconds
                    order = sorted(range(len(jobs)), key=lambda i: (-noisy[i], i))
                ratios.append(makespan(noisy, order, workers) / sum(noisy))
            print(f"  {name}: {sum(ratios) / len(ratios):.4f}, {max(ratios):.4f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--json", metavar="FILE", help="write the per-job figures here")
    parser.add_argument("--from", dest="source", metavar="FILE", help="recompute the makespans "
                                                                      "from this JSON")
    parser.add_argument("--perturb", type=int, default=0, metavar="N",
                        help="also the makespans with every search's seconds perturbed, N draws: "
                             "how robust each order is")
    parser.add_argument("protocols", nargs="*", help="only these rows (default: every row)")
    args = parser.parse_args()
    if args.source:
        with open(args.source) as f:
            data = json.load(f)
    else:
        data = measure(args.protocols)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(data, f, indent=1)
    report(data, args.workers, args.perturb)
    print(fixed_costs(len(data["jobs"]), args.workers))
    return 0


if __name__ == "__main__":
    sys.exit(main())
