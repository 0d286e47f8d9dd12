"""Predict the wall of README's suite on N processes (``pytest -n 3 --dist loadgroup``) from a
per-test CPU report (``tests/cpu_report.py``), by replaying pytest-xdist's ``loadgroup`` scheduler
over the suite's collection as the workers see it.

    python3 bench/suite_packing.py cpu.tsv.gw0 cpu.tsv.gw1              # the suite
    python3 bench/suite_packing.py -m "not slow" cpu.tsv.gw0 cpu.tsv.gw1  # the fast tier
    python3 bench/suite_packing.py --root OTHER_CHECKOUT ...             # another tree's order

The scheduler (pytest-xdist 3.8, ``xdist/scheduler/loadscope.py``): a work unit is an
``xdist_group`` (all its tests) or a single test; the units are queued in collection order (xdist
then sorts them by their number of tests, most first, unless ``--no-loadscope-reorder``:
tests/conftest.py turns that off and orders the collection itself; ``--reorder`` here for a tree
that leaves it on); each worker gets one unit at the start (a second if it holds two tests or
fewer), and another each time it finishes a test with at most two of its tests left to run; when the
queue is empty a worker finishes what it holds. The collection is the workers' (tests/conftest.py
sorts it on a worker): this script collects the suite (``pytest --collect-only``) as a worker would,
in a child process, and reads the order and the groups. A test's time is its CPU seconds in the
report (a test missing from it counts 0 and is counted); time spent waiting (a cluster's start, a
sleep) is not in its CPU, so the prediction is a lower bound for a quiet machine; ``--time held``
takes each test's wall where it is larger (a wait holds its worker; but a wall measured with the
other workers on the same cores counts their share too: an upper bound of a sort).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections import OrderedDict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_OUT = "KMC_SUITE_PACKING_OUT"  # the child's output file (the collection as JSON)
PREFETCH = 2  # a worker is given a unit when it holds at most this many tests (loadscope.py)


# -- the child: the collection as a worker of pytest -n orders it ----------------------------------
@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    config.workerinput = {"workerid": "packing"}  # tests/conftest.py orders a worker's collection


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    rows = []
    for item in items:
        group = item.get_closest_marker("xdist_group")
        name = (group.args[0] if group.args else group.kwargs.get("name")) if group else None
        rows.append([item.nodeid, name, bool(item.get_closest_marker("slow"))])
    Path(os.environ[_OUT]).write_text(json.dumps(rows))


def collect(root: Path, markexpr: str) -> list[tuple[str, str | None, bool]]:
    """(test id, group, slow) of each test of ``root``'s suite, in a worker's order."""
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "collection.json"
        env = dict(os.environ, PYTHONPATH=f"{Path(__file__).parent}{os.pathsep}{root}",
                   **{_OUT: str(out)})
        command = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:xdist",
                   "-p", "no:cacheprovider", "-p", "suite_packing", "-m", markexpr]
        done = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True)
        if not out.exists():
            sys.exit(f"suite_packing: the collection failed: {done.stdout[-2000:]}")
        return [tuple(row) for row in json.loads(out.read_text())]


# -- the parent: the report, the units, the replay -------------------------------------------------
def read_reports(paths: list[str], time: str = "cpu") -> dict[str, float]:
    """Test id -> CPU seconds (``time="cpu"``), or the larger of its CPU and its wall seconds
    (``"held"``: how long it held its worker, its waits included), from ``tests/cpu_report.py``'s
    files (a group's ``@name`` suffix, which the workers of ``--dist loadgroup`` add, dropped; a
    report without wall columns gives CPU)."""
    cpu = {}
    for path in paths:
        for line in Path(path).read_text().splitlines():
            if line.startswith("#") or not line.strip():
                continue
            fields = line.split("\t")
            seconds, _tier, nodeid = fields[:3]  # then wall and start, if written
            if nodeid.rfind("@") > nodeid.rfind("]"):
                nodeid = nodeid.rsplit("@", 1)[0]
            cpu[nodeid] = float(seconds)
            if time == "held" and len(fields) > 3:
                cpu[nodeid] = max(cpu[nodeid], float(fields[3]))
    return cpu


def work_units(collection, reorder: bool = False) -> list[tuple[str, list[str]]]:
    """xdist's queue: one unit a group or a single test, in collection order; with ``reorder``
    (xdist's default, which tests/conftest.py turns off) then most tests first (stable)."""
    units: OrderedDict[str, list[str]] = OrderedDict()
    for nodeid, group, _slow in collection:
        units.setdefault(group or nodeid, []).append(nodeid)
    if reorder:
        return sorted(units.items(), key=lambda unit: -len(unit[1]))
    return list(units.items())


def replay(units, cpu: dict[str, float], workers: int = 2):
    """Each worker's finish time and the units it ran, by the scheduler's rules (module
    docstring)."""
    queue = list(units)
    held: list[list[str]] = [[] for _ in range(workers)]
    clock = [0.0] * workers
    ran: list[list[str]] = [[] for _ in range(workers)]

    def give(w: int) -> None:
        name, tests = queue.pop(0)
        held[w].extend(tests)
        ran[w].append(name)

    for w in range(workers):  # one unit each, then a second to a worker holding two or fewer
        if queue:
            give(w)
    for w in range(workers):
        if queue and len(held[w]) <= PREFETCH:
            give(w)
    while any(held):
        w = min((w for w in range(workers) if held[w]), key=lambda w: clock[w])
        clock[w] += cpu.get(held[w].pop(0), 0.0)
        if queue and len(held[w]) <= PREFETCH:
            give(w)
    return clock, ran


def unit_costs(units, cpu):
    return sorted(((sum(cpu.get(t, 0.0) for t in tests), name, len(tests))
                   for name, tests in units), reverse=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reports", nargs="+", help="tests/cpu_report.py's files (FILE.gw0 ...)")
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout to collect")
    parser.add_argument("-m", dest="markexpr", default="", help="pytest's marker expression")
    parser.add_argument("--top", type=int, default=12, help="the costliest units to list")
    parser.add_argument("--workers", type=int, default=3, help="pytest's -n (README's: 3)")
    parser.add_argument("--reorder", action="store_true",
                        help="xdist's reordering by a unit's number of tests (a tree whose "
                             "tests/conftest.py leaves it on)")
    parser.add_argument("--time", choices=("cpu", "held"), default="cpu",
                        help="a test's time: its CPU (a lower bound), or the larger of its CPU "
                             "and wall (held: its waits count; its wall is the report's load's)")
    args = parser.parse_args(argv)
    cpu = read_reports(args.reports, args.time)
    collection = collect(args.root.resolve(), args.markexpr)
    units = work_units(collection, args.reorder)
    clock, ran = replay(units, cpu, args.workers)
    missing = [nodeid for nodeid, _g, _s in collection if nodeid not in cpu]
    total = sum(cpu.get(nodeid, 0.0) for nodeid, _g, _s in collection)
    what = "CPU" if args.time == "cpu" else "CPU or wall, the larger"
    print(f"{len(collection)} tests, {len(units)} units, {total:.1f} s of {what}; "
          f"{len(missing)} tests not in the report (counted 0)")
    for w, seconds in enumerate(clock):
        print(f"worker {w}: {seconds:.1f} s, {len(ran[w])} units, last {ran[w][-3:]}")
    print(f"predicted wall: {max(clock):.1f} s (perfect packing {total / len(clock):.1f} s)")
    for seconds, name, count in unit_costs(units, cpu)[:args.top]:
        print(f"  {seconds:8.1f} s  {count:4d} tests  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
