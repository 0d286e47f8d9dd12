"""The Spark driver's kernel levels (``checker.spark.driver_level.expand_level``) over a whole
search, beside the local engine on the kernel, in CPU seconds of this process: what a level on the
driver costs against one local process, without Spark (its session, its JVM) in the figure.

    python3 bench/driver_levels.py --protocol kip-320 --invariant log-matching \\
        --const brokers=3 --const records=1 --const epochs=1 --const crashes=1 --threads 1,2

Each search starts from the model's initial states, packed, and expands level by level as
``--spark-driver-below`` levels do (``expand_level`` with a set of every visited fingerprint); the
counts must be the local engine's (the script fails otherwise). The best of ``--repeat`` runs.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from checker.bfs import LocalOptions, run_engine  # noqa: E402
from checker.kernel import load  # noqa: E402
from checker.kernel_batch import FingerprintSet, Shipment, batch_kernel  # noqa: E402
from checker.search import SearchOptions  # noqa: E402
from checker.spark.driver_level import expand_level  # noqa: E402
from checker.spark.kernel_step import kernel_checks  # noqa: E402
from checker.spark.packed_step import ExpandStats  # noqa: E402
from invariants.registry import for_family  # noqa: E402
from spec.registry import build_model  # noqa: E402


def driver_search(model: object, invariants: list, threads: int, symmetry: bool,
                  reduce: bool) -> tuple[int, int, int]:
    """(distinct, generated, depth) of the whole search by driver levels."""
    kernel = load(model.kernel())
    batch = batch_kernel(Shipment.of(kernel))
    rows = batch.rows(b"".join(kernel.spec.pack(s) for s in model.init_states()))
    fps = batch.fingerprints(rows)
    fps, first = np.unique(fps, return_index=True)
    rows = rows[np.sort(first)]
    fps = batch.fingerprints(rows)
    checks = kernel_checks(kernel, invariants)
    distinct, generated, depth = rows.shape[0], rows.shape[0], 1  # TLC counts the initial ones
    with FingerprintSet(batch, fps) as visited:
        while rows.shape[0]:
            gidx = np.arange(distinct - rows.shape[0], distinct, dtype=np.int64)
            stats = ExpandStats()
            _keys, _fps, rows = expand_level(batch, gidx, rows, visited, threads, symmetry,
                                             reduce, False, checks, stats)
            generated += stats.generated
            if not rows.shape[0]:
                break
            distinct += rows.shape[0]
            depth += 1
    return distinct, generated, depth


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="kafka")
    parser.add_argument("--protocol")
    parser.add_argument("--const", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--invariant", action="append", default=None, metavar="NAME")
    parser.add_argument("--symmetry", action="store_true")
    parser.add_argument("--reduce", choices=("none", "dead"), default="none")
    parser.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    model = build_model(args.model, args.const, args.protocol)
    invariants = [inv for inv in for_family(model.family).values()
                  if inv.holds is not None and (args.invariant is None
                                                or inv.name in args.invariant)]
    options = SearchOptions(invariants=invariants, symmetry=args.symmetry, reduce=args.reduce,
                            kernel="on")
    load_before = os.getloadavg()[0]
    best: dict[str, tuple[float, float]] = {}
    reference = None
    for _ in range(args.repeat):
        cpu, wall = time.process_time(), time.monotonic()
        result = run_engine(model, options, LocalOptions())
        row = (time.process_time() - cpu, time.monotonic() - wall)
        best["local kernel"] = min(best.get("local kernel", row), row)
        reference = (result.distinct_states, result.states_generated, result.depth)
        for threads in [int(t) for t in args.threads.split(",")]:
            cpu, wall = time.process_time(), time.monotonic()
            got = driver_search(model, invariants, threads, args.symmetry, args.reduce == "dead")
            row = (time.process_time() - cpu, time.monotonic() - wall)
            name = f"driver levels, {threads} thread{'s' if threads > 1 else ''}"
            best[name] = min(best.get(name, row), row)
            if got != reference:
                print(f"MISMATCH: {name} gives {got}, the local engine {reference}",
                      file=sys.stderr)
                return 1
    print(f"distinct {reference[0]:,}, generated {reference[1]:,}, depth {reference[2]} "
          f"(identical); load {load_before:.1f} before, {os.getloadavg()[0]:.1f} after; best of "
          f"{args.repeat}")
    base_cpu, base_wall = best["local kernel"]
    for name, (cpu, wall) in best.items():
        print(f"  {name:<24} CPU {cpu:6.2f} s ({base_cpu / cpu:.2f}x)  wall {wall:6.2f} s "
              f"({base_wall / wall:.2f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
