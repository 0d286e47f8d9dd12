"""The order the suite's work units go out in under ``pytest -n N`` (tests/conftest.py), and
``bench/suite_packing.py``'s replay of pytest-xdist's scheduler, which predicts the suite's wall
from a per-test CPU report."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import sort_units

BENCH = Path(__file__).resolve().parents[1] / "bench" / "suite_packing.py"


class Node:
    """A collection node's markers (a test module's ``pytestmark``)."""

    def __init__(self, marks=()) -> None:
        self.own_markers = [mark.mark for mark in marks]


class Item(Node):
    """The part of a collected test that tests/conftest.py reads: its own markers and its module's
    (``module_group``: the module's ``pytestmark = pytest.mark.xdist_group(...)``)."""

    def __init__(self, name: str, group: str | None = None, slow: bool = False,
                 module: str = "test_x", fixtures: tuple[str, ...] = (),
                 module_group: str | None = None) -> None:
        super().__init__()
        self.name = name
        self.nodeid = f"tests/{module}.py::{name}"
        self.path = Path(f"tests/{module}.py")
        self.fixturenames = fixtures
        self.module = Node([pytest.mark.xdist_group(module_group)] if module_group else [])
        if group:
            self.add_marker(pytest.mark.xdist_group(group))
        if slow:
            self.add_marker(pytest.mark.slow)

    def listchain(self):
        return [self.module, self]

    def iter_markers(self, name: str):
        return (mark for node in reversed(self.listchain()) for mark in node.own_markers
                if mark.name == name)

    def get_closest_marker(self, name: str):
        return next(self.iter_markers(name), None)

    def add_marker(self, marker, append: bool = True) -> None:
        if append:
            self.own_markers.append(marker.mark)
        else:
            self.own_markers.insert(0, marker.mark)


def test_units_go_out_spark_lanes_groups_slow_fast():
    items = [Item("fast-1"), Item("slow-1", slow=True),
             Item("row-a", "traces-matrix-2.1.0", slow=True),
             Item("arrow-1", "spark-2"), Item("auth", "spark-1"),
             Item("kernel-1", "spark-1", slow=True), Item("fast-2"),
             Item("kernel-2", "spark-1"), Item("slow-2", slow=True),
             Item("row-b", "traces-matrix-2.1.0")]
    sort_units(items)
    assert [item.name for item in items] == [
        "auth", "kernel-1", "kernel-2", "arrow-1", "row-a", "row-b", "slow-1", "slow-2", "fast-1",
        "fast-2"]


def test_a_lane_runs_its_modules_in_the_lanes_order():
    """spark-1: the standalone cluster's auth tests, its kill-and-resume test, then
    test_spark_kernel (the cluster's waits beside the second lane's busiest module)."""
    items = [Item("k", "spark-1", slow=True, module="test_spark_kernel"),
             Item("resume", "spark-1", slow=True, module="test_spark_standalone_resume"),
             Item("other", slow=True),
             Item("auth", "spark-1", slow=True, module="test_spark_standalone_auth"),
             Item("engine", "spark-2", slow=True, module="test_spark_engine"),
             Item("arrow", "spark-2", slow=True, module="test_spark_arrow")]
    sort_units(items)
    assert [item.name for item in items] == ["auth", "resume", "k", "arrow", "engine", "other"]


def test_the_slow_spark_tests_go_to_their_lanes_and_a_fast_one_to_one_group():
    """The standalone cluster's tests and the slow in-process Spark tests go to the two lanes (a
    module not listed to the second); a fast Spark test run by hand shares one JVM (the fast tier
    has none: tests/test_fast_tier.py); a test without Spark keeps its group or none."""
    from types import SimpleNamespace

    from tests.conftest import group_of, pytest_collection_modifyitems

    spark = ("spark_local",)
    items = [Item("k-slow", slow=True, module="test_spark_kernel", fixtures=spark),
             Item("a-slow", slow=True, module="test_spark_arrow", fixtures=spark),
             Item("new-slow", slow=True, module="test_spark_new", fixtures=spark),
             Item("b-fast", module="test_spark_b", fixtures=spark),
             Item("own", slow=True, module="test_spark_standalone_auth",
                  module_group="spark-standalone"),
             Item("own-fast", module="test_spark_standalone_auth",
                  module_group="spark-standalone"),
             Item("row", "traces-matrix-2.1.0", slow=True), Item("other")]
    pytest_collection_modifyitems(SimpleNamespace(), items)
    # the lane is the unit's one name: not spark-1_spark-standalone, a third Spark unit
    assert [group_of(item) for item in items] == [
        "spark-1", "spark-2", "spark-2", "spark-local", "spark-1", "spark-1",
        "traces-matrix-2.1.0", None]


def test_every_spark_module_has_its_lane():
    """The lanes are balanced by hand (tests/conftest.py): a new Spark module is placed, not
    defaulted."""
    from tests.conftest import SPARK_LANES

    tests = Path(__file__).resolve().parent
    fixture = re.compile(r"^(?:\s*def \w+\([^)]*\bspark_(?:local|standalone|class_archive)\b"
                         r"|pytestmark = pytest\.mark\.xdist_group\(\"spark-standalone\"\))",
                         re.M)
    uses = {path.stem for path in tests.glob("test_*.py")
            if fixture.search(path.read_text(encoding="utf-8"))}
    assert "test_spark_kernel" in uses and uses == set(SPARK_LANES)


def _bench(source: str | None = None):
    spec = importlib.util.spec_from_file_location("suite_packing", BENCH)
    module = importlib.util.module_from_spec(spec)
    if source is None:
        spec.loader.exec_module(module)
    else:
        exec(compile(source, str(BENCH), "exec"), module.__dict__)
    return module


def test_the_replay_hands_out_units_as_xdist_does():
    """A group of four tests (40 s), then single tests: the other worker takes the singles, two
    ahead (the first two at the start, then one each time it finishes a test holding two or
    fewer); the group's worker gets the last single once its group is down to two tests."""
    bench = _bench()
    cpu = {"g1": 10.0, "g2": 10.0, "g3": 10.0, "g4": 10.0, "a": 12.0, "b": 12.0, "c": 12.0,
           "d": 1.0}
    collection = [("g1", "big", True), ("g2", "big", True), ("g3", "big", True),
                  ("g4", "big", True), ("a", None, True), ("b", None, True), ("c", None, False),
                  ("d", None, False)]
    units = bench.work_units(collection)
    assert [name for name, _ in units] == ["big", "a", "b", "c", "d"]
    clock, ran = bench.replay(units, cpu)
    assert ran == [["big", "d"], ["a", "b", "c"]] and clock == [41.0, 36.0]
    # xdist's own reordering (most tests first) keeps the group first here
    assert [name for name, _ in bench.work_units(collection[4:] + collection[:4], True)][0] == "big"


def test_a_report_with_wall_columns_and_group_suffixes_is_read(tmp_path):
    report = tmp_path / "cpu.tsv.gw0"
    report.write_text("3.50\tslow\ttests/t.py::x[a@b]@spark-standalone\t9.00\t1.0\n"
                      "0.25\tfast\ttests/t.py::y\n# fast: 1 tests, 0.2 s CPU\n")
    assert _bench().read_reports([str(report)]) == {"tests/t.py::x[a@b]": 3.5,
                                                    "tests/t.py::y": 0.25}
    # --time held: a test holds its worker for its wall when it waits longer than it computes
    assert _bench().read_reports([str(report)], "held") == {"tests/t.py::x[a@b]": 9.0,
                                                            "tests/t.py::y": 0.25}


def test_the_machines_cpu_counts_a_child_no_one_waits_for(tmp_path):
    """The CPU report's machine line sees a process this one never waits for (as the standalone
    cluster's daemons are: started by a shell that exits at once), which the per-test figures (this
    process and the children it waited for) cannot."""
    import resource

    from tests.cpu_report import machine_cpu

    def waited_for() -> float:
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        return usage.ru_utime + usage.ru_stime

    before, before_waited = machine_cpu(), waited_for()
    burn = "import time\nend = time.process_time() + 0.5\nwhile time.process_time() < end: pass"
    shell = subprocess.run(["sh", "-c", '"$0" -c "$1" >/dev/null 2>&1 & echo $!', sys.executable,
                            burn], capture_output=True, text=True, check=True)
    orphan = Path(f"/proc/{shell.stdout.strip()}/stat")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # until it ends (gone, or a zombie of its new parent)
        try:
            if orphan.read_text().rsplit(")", 1)[1].split()[0] == "Z":
                break
        except OSError:
            break
        time.sleep(0.05)
    assert machine_cpu() - before >= 0.45
    assert waited_for() - before_waited < 0.45  # the shell's own time only
    report = tmp_path / "cpu.tsv.gw0"
    report.write_text("0.25\tfast\ttests/t.py::y\t0.30\t1.0\n# the machine (every process) "
                      "during this session: 9.0 s CPU in 5.0 s of wall\n")
    assert _bench().read_reports([str(report)]) == {"tests/t.py::y": 0.25}


def test_the_controller_turns_xdists_reordering_off():
    """Left on, xdist would hand the units out by their number of tests, not in the order above."""
    from types import SimpleNamespace

    from tests.conftest import pytest_configure

    for args in (["-n", "2", "--dist", "loadgroup"], ["-n", "2"]):
        option = SimpleNamespace(loadscopereorder=True, dist="load", numprocesses=2)
        config = SimpleNamespace(option=option, stash={},
                                 invocation_params=SimpleNamespace(args=args))
        pytest_configure(config)
        assert option.loadscopereorder is False
