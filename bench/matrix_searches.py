"""The default ``kmc matrix`` two ways, side by side in one process: one ``--continue`` search per
configuration (``check_cells``, what the command does) against stop-at-first rounds
(``check_cells_by_rounds``, what it did before). Both must give the same cells; prints wall time,
searches, states explored and the ratio, with the load average before and after.

    python3 bench/matrix_searches.py [--repeat N] [--model kafka]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from kmc.matrix import cells as matrix_cells  # noqa: E402
from kmc.matrix import run as matrix_run  # noqa: E402


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def measure(way: str, model: str) -> tuple[float, int, int, list]:
    real = matrix_cells._search
    calls = []

    def counting(m, invariants, options, stop_at_first, engine, engine_options):
        result = real(m, invariants, options, stop_at_first, engine, engine_options)
        calls.append(result.distinct_states)
        return result

    matrix_cells._search = counting
    saved = matrix_run.check_cells
    if way == "rounds":
        matrix_run.check_cells = matrix_cells.check_cells_by_rounds
    try:
        started = time.perf_counter()
        cells = matrix_run.run_matrix(model)
        seconds = time.perf_counter() - started
    finally:
        matrix_cells._search, matrix_run.check_cells = real, saved
    figures = [(c.protocol, c.invariant, c.verdict, c.length, c.distinct_states, c.states_generated,
                c.depth)
               for c in cells]
    return seconds, len(calls), sum(calls), figures


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--model", default="kafka")
    args = parser.parse_args()
    print(f"load average before: {load()}")
    totals = {"one-search": 0.0, "rounds": 0.0}
    for i in range(args.repeat):
        results = {}
        for way in (("one-search", "rounds") if i % 2 == 0 else ("rounds", "one-search")):
            seconds, searches, explored, figures = measure(way, args.model)
            results[way] = figures
            totals[way] += seconds
            print(f"{way:>10}: {seconds:6.1f} s, {searches} searches, {explored:,} distinct states "
                  "explored")
        assert results["one-search"] == results["rounds"], "the two ways disagree on a cell"
    print("same cells both ways; rounds / one-search = "
          f"{totals['rounds'] / totals['one-search']:.2f}")
    print(f"load average after: {load()}")


if __name__ == "__main__":
    main()
