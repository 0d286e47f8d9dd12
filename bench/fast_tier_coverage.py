"""Which costly fast tests could leave the fast tier without it losing a line: coverage by test.

The fast tier (``pytest -m "not slow"``) is a developer's loop: it should run every line of the
project that the suite runs cheaply, once. A costly fast test whose every line other fast tests run
too adds time, not lines; the house rule marks such a test ``slow`` (tests/conftest.py: "a costly
case whose coverage a cheaper fast test keeps"). This script finds the candidates, by measurement:

    python3 bench/fast_tier_coverage.py run DIR        # the fast tier in one process under coverage
    python3 bench/fast_tier_coverage.py report DIR cpu.tsv.gw0 cpu.tsv.gw1 [--min 0.3]

``run`` records which lines of the project's packages each fast test runs (a coverage context a
test, named by its test id: this module is also the pytest plugin that switches the context);
``report`` reads a per-test CPU report (``tests/cpu_report.py``) and goes through the fast tests
from the most costly down, keeping a test out of the tier (greedily, so two tests that alone
share a line do not both leave) when the tests still in it run every line it runs. It prints, for
each test of at least ``--min`` CPU seconds, its CPU, the lines only it runs (0: a candidate) and,
last, the CPU the candidates hold.

What it cannot see, and a reader must: lines a test runs in a subprocess (a kmc command line, a
Spark JVM) and in compiled code (the C kernel), and what a test *checks*: a test whose lines others
run may still be the only one to check a value (a counterexample's length, a kernel's state for
state equality). A candidate is a question, not an answer; each move says why in its marker's
comment.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("spec", "checker", "invariants", "traces", "kmc")


# -- the plugin: one coverage context a test -------------------------------------------------------
def pytest_runtest_setup(item) -> None:
    import coverage

    current = coverage.Coverage.current()
    if current is not None:
        current.switch_context(item.nodeid)


def run(directory: Path) -> int:
    directory.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "coverage", "run",
               f"--data-file={directory / 'coverage.db'}",
               f"--source={','.join(PACKAGES)}", "-m", "pytest", "-q", "-m", "not slow",
               "-p", "no:xdist", "-p", "no:cacheprovider", "-p", "bench.fast_tier_coverage"]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run(command, cwd=ROOT, env=env, check=False).returncode


def lines_by_test(database: Path) -> dict[str, set[tuple[str, int]]]:
    """(file, line) of every line each test ran."""
    from coverage import CoverageData

    data = CoverageData(str(database))
    data.read()
    found: dict[str, set[tuple[str, int]]] = defaultdict(set)
    for name in data.measured_files():
        for line, contexts in data.contexts_by_lineno(name).items():
            for context in contexts:
                if context:
                    found[context].add((name, line))
    return found


def cpu_by_test(reports: list[Path]) -> dict[str, float]:
    cpu: dict[str, float] = {}
    for report in reports:
        for row in report.read_text(encoding="utf-8").splitlines():
            if row and not row.startswith("#"):
                seconds, tier, test = row.split("\t")[:3]
                if tier == "fast":
                    cpu[test.split("@")[0]] = float(seconds)
    return cpu


def candidates(lines: dict[str, set], cpu: dict[str, float]) -> list[tuple[str, float, int]]:
    """(test, CPU seconds, lines only it runs among the tests kept) from the most costly down; a
    test with 0 leaves the kept set."""
    count: dict[tuple[str, int], int] = defaultdict(int)
    for ran in lines.values():
        for line in ran:
            count[line] += 1
    rows = []
    for test in sorted(cpu, key=cpu.get, reverse=True):
        ran = lines.get(test, set())
        only = sum(1 for line in ran if count[line] == 1)
        if not only:
            for line in ran:
                count[line] -= 1
        rows.append((test, cpu[test], only))
    return rows


def report(directory: Path, reports: list[Path], least: float) -> None:
    lines = lines_by_test(directory / "coverage.db")
    rows = candidates(lines, cpu_by_test(reports))
    print(f"{'CPU s':>6}  {'only':>5}  test")
    for test, seconds, only in rows:
        if seconds >= least:
            print(f"{seconds:6.2f}  {only:5d}  {test}")
    free = sum(seconds for _, seconds, only in rows if not only and seconds >= least)
    total = sum(seconds for _, seconds, _ in rows)
    print(f"candidates of at least {least} s: {free:.1f} s of the tier's {total:.1f} s of CPU")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("run").add_argument("directory", type=Path)
    show = sub.add_parser("report")
    show.add_argument("directory", type=Path)
    show.add_argument("reports", type=Path, nargs="+")
    show.add_argument("--min", type=float, default=0.3, dest="least")
    args = parser.parse_args(argv)
    if args.command == "run":
        return run(args.directory)
    report(args.directory, args.reports, args.least)
    return 0


if __name__ == "__main__":
    sys.exit(main())
