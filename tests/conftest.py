"""Fixtures shared by the whole suite.

``spark_local`` is the one SparkSession (``local[2,2]``: two cores, a failed task tried twice) of a
process that every in-process Spark test uses: a JVM starts once a process (under ``pytest -n N``
at most one a worker: the Spark lanes below), not once a module; every such test is slow (the fast
tier starts no JVM: tests/test_fast_tier.py's test_no_fast_test_starts_a_jvm). Tests that start
kmc in a subprocess get a JVM of their own, as a user's run does. ``spark_standalone`` is the one
standalone cluster (``bench/spark-standalone.sh``: a master and two workers, three JVMs) that the
standalone tests share: one start a suite run, not one a module.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import NamedTuple

import pytest

#: the suite compiles a few hundred small kernels once each: at -Og, not a search's -O2 (a Kafka
#: kernel's compile 0.49 s of CPU against 0.69 s at -O1 and 1.17 s at -O2; the kernel-heavy modules
#: took 146 s of the machine's CPU against 154 s at -O1: bench/NOTES.md, stop 50). A test that
#: needs -O2 sets it itself (tests/test_kernel_opt_levels.py).
os.environ.setdefault("KMC_KERNEL_OPT", "-Og")
#: the suite starts some hundreds of Python processes (kmc runs, the parallel engine's workers,
#: Spark's Python workers, xdist's workers): where the environment turns Python's bytecode cache
#: off (PYTHONDONTWRITEBYTECODE=1), each compiled the project's modules from source again. The
#: suite's children share one cache outside the checkout instead (bench/NOTES.md, stop 49: the fast
#: tier's CPU 108-111 s without, 84 s with it); what they run is the same code.
if os.environ.pop("PYTHONDONTWRITEBYTECODE", None) is not None:
    os.environ.setdefault("PYTHONPYCACHEPREFIX", os.path.join(
        tempfile.gettempdir(), f"kmc-suite-bytecode-{os.getuid()}"))


@pytest.fixture(scope="session")
def spark_class_archive(tmp_path_factory):
    """The Spark driver's class archive (``checker.spark.class_archive``), made before the suite's
    first Spark session by one small kmc run, as a user's first Spark run makes it: the lanes'
    sessions and every later kmc run's driver map Spark's classes instead of loading them (about 6
    s of CPU and 5 s of wall a JVM start). The other lane waits on the lock while the first makes
    it."""
    pytest.importorskip("pyspark")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("needs Java")
    import fcntl

    from checker.spark import class_archive
    from checker.spark.session import class_archive_of

    directory = class_archive.archive_dir()
    os.makedirs(directory, mode=0o700, exist_ok=True)
    with open(os.path.join(directory, "suite.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        found = class_archive.kept(*class_archive_of("1g"))  # each check reads the whole archive
        if found is None:
            subprocess.run([sys.executable, "-m", "kmc", "check", "two-phase", "--const", "RM=3",
                            "--engine", "spark", "--master", "local[2]", "--spark-threshold", "1",
                            "--spark-driver-below", "0", "--quiet"],
                           cwd=tmp_path_factory.mktemp("class-archive"), capture_output=True,
                           env={**os.environ, "PYTHONPATH": str(Path(__file__).parent.parent)},
                           timeout=600, check=False)
            found = class_archive.kept(*class_archive_of("1g"))
    return found


@pytest.fixture(scope="session")
def spark_local(spark_class_archive):
    pytest.importorskip("pyspark")
    if shutil.which("java") is None:
        pytest.skip("needs Java")
    from checker.spark import spark_session

    session, created = spark_session("local[2,2]", memory="1g")
    yield session
    if created:
        session.stop()


def free_port() -> int:
    """A loopback port free now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class StandaloneCluster(NamedTuple):
    """A standalone cluster started by ``bench/spark-standalone.sh``."""

    master: str  # its URL, spark://127.0.0.1:PORT
    run_dir: Path  # its secret, logs and pid files
    note: str  # what "start" wrote on stderr
    stop: Callable[[], object]  # stops it (again: a no-op)


@pytest.fixture(scope="session")
def spark_standalone(tmp_path_factory, spark_class_archive):
    """The standalone cluster of ``bench/spark-standalone.sh`` on a free port, started once for the
    standalone tests (tests/test_spark_standalone_auth.py, then
    tests/test_spark_standalone_resume.py, which kills one of its workers and stops it:
    ``pytest_collection_modifyitems`` runs it after the others). A start is three JVMs, about 31 s
    of their CPU; the workers get 240 s to register on a loaded machine."""
    pytest.importorskip("pyspark")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("the standalone cluster needs Java")
    script = Path(__file__).resolve().parent.parent / "bench" / "spark-standalone.sh"
    run_dir = tmp_path_factory.mktemp("spark-standalone")
    env = dict(os.environ, KMC_SPARK_DIR=str(run_dir), KMC_SPARK_PORT=str(free_port()),
               KMC_SPARK_REGISTER_SECONDS="240")
    stop = partial(subprocess.run, ["bash", str(script), "stop"], env=env, capture_output=True,
                   timeout=120)
    started = subprocess.run(["bash", str(script), "start"], env=env, capture_output=True,
                             text=True, timeout=360)
    try:
        assert started.returncode == 0, started.stderr
        yield StandaloneCluster(started.stdout.strip().splitlines()[-1], run_dir, started.stderr,
                                stop)
    finally:
        stop()


@pytest.fixture(scope="module")
def explorer_server():
    """A ``kmc explore`` server on a free loopback port, serving in a thread for one test module
    (the server tests and the browser tests)."""
    import threading

    from traces.explore.server import ExplorerServer

    srv = ExplorerServer(("127.0.0.1", 0), max_states=50_000)
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield srv
    srv.stop_run()
    srv.shutdown()
    srv.server_close()


#: the suite's Spark modules in two lanes (``xdist_group``s), each on one worker of README's
#: ``pytest -n 3``: a Spark test mostly waits in its own process (a JVM's start, a standalone
#: cluster's registration, a run paced to be killed), so the third worker computes beside the lanes;
#: with a group a module, every worker started in a Spark module at once (stop 46's report: for the
#: first 250 s, 260 s of CPU in 500 core-seconds). The lanes are balanced by the modules' measured
#: wall (bench/NOTES.md); a Spark module not listed goes to the second lane
#: (tests/test_suite_order.py lists them all). Measured (bench/NOTES.md, stop 48): the standalone
#: cluster's own JVMs, which no test's CPU report sees, keep the cores busy while its tests wait,
#: so the lanes' order moves the suite's wall by less than its noise; ``-n 4`` was 23% slower.
#: Each slow Spark module's lane, in the order the lane runs them: the standalone cluster's tests
#: (three JVMs) beside the second lane's busiest module, then test_spark_kernel beside the second
#: lane's waits; the kill-and-resume test after the auth tests.
SPARK_LANES = {
    "test_spark_standalone_auth": "spark-1", "test_spark_standalone_resume": "spark-1",
    "test_spark_kernel": "spark-1",
    "test_spark_arrow": "spark-2", "test_spark_dead": "spark-2", "test_spark_engine": "spark-2",
    "test_spark_rundir": "spark-2", "test_simulate": "spark-2",
    "test_spark_class_archive": "spark-2",
}


def spark_lane(item: pytest.Item) -> str | None:
    """The Spark lane of a slow test that starts a JVM in the worker or uses the standalone
    cluster, or None."""
    if item.get_closest_marker("slow") is None and group_of(item) != "spark-standalone":
        return None
    fixtures = getattr(item, "fixturenames", ())
    if ("spark_local" in fixtures or "spark_standalone" in fixtures
            or "spark_class_archive" in fixtures or group_of(item) == "spark-standalone"):
        return SPARK_LANES.get(item.path.stem, "spark-2")
    return None


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's worker reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The tier's module check (tests/test_fast_tier.py) runs after every other test: it reads what
    they imported. Under ``pytest -n N`` the slow Spark tests go to their lanes (above), a fast
    test of ``spark_local`` (none now) to one group, and the work units go out in the order of
    ``sort_units`` (below)."""
    lanes = [spark_lane(item) for item in items]  # before a lane drops a module's group
    for item, lane in zip(items, lanes, strict=True):
        if lane is not None:
            _drop_groups(item)
            item.add_marker(pytest.mark.xdist_group(lane))
        elif ("spark_local" in getattr(item, "fixturenames", ())
              and not item.get_closest_marker("xdist_group")):
            item.add_marker(pytest.mark.xdist_group("spark-local"))
    if hasattr(config, "workerinput"):
        sort_units(items)  # a lane's modules in SPARK_LANES's order: resume after auth
    else:  # the standalone cluster's kill-and-resume test kills one of its workers: after the rest
        items.sort(key=lambda item: item.nodeid.startswith("tests/test_spark_standalone_resume.py"))
    last = [item for item in items if item.name == "test_every_module_is_imported_by_the_tier"]
    items[:] = [item for item in items if item not in last] + last


# -- the workers of ``pytest -n N`` (pytest-xdist) -------------------------------------------------
# pytest-xdist's loadgroup scheduler (xdist/scheduler/loadscope.py) hands out work units: an
# ``xdist_group`` (all its tests, on one worker) or a single test. A worker gets one unit at the
# start and another whenever it has finished a test and holds at most two; when none is left it
# finishes what it holds, so the last units decide how far apart the workers end. The units go out
# in the order of the workers' collection (each worker sorts it the same way, above; xdist's own
# reordering by a unit's number of tests is turned off, pytest_configure below): the longest first,
# as far as markers tell.
# - The two Spark lanes first (``spark-1``: the standalone cluster's tests, three JVMs, then
#   test_spark_kernel; ``spark-2``: the other modules), each one unit: on README's three workers two
#   start in the lanes, where they mostly wait on JVMs, and one computes; a lane's worker takes the
#   other units once its lane is done.
# - The other groups (the collected matrix's rows, a fast Spark group if one comes back), then the
#   slow single tests, then the fast ones, which fill the end (a stable sort: the tests of a module
#   keep their order).
# The groups are kept whenever no ``--dist`` is named, so that README's fast tier (``pytest -n 2 -m
# "not slow"``, no Spark test) keeps them as README's suite command (``--dist loadgroup``) does.


def group_of(item: pytest.Item) -> str | None:
    """The name of ``item``'s work unit under ``--dist loadgroup``, or None: as pytest-xdist 3.8
    names it (``xdist/remote.py``, ``pytest_collection_modifyitems``), every ``xdist_group`` of the
    item and of its module and class, sorted and joined by ``_``."""
    names = {str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
             for mark in item.iter_markers("xdist_group")}
    return "_".join(sorted(names)) if names else None


def _drop_groups(item: pytest.Item) -> None:
    """Drop the ``xdist_group`` markers of ``item`` and of the nodes above it (a module's
    ``pytestmark``): its lane is its one group (a second name would make a unit of its own, a third
    Spark lane at the suite's start)."""
    for node in item.listchain():
        node.own_markers[:] = [mark for mark in node.own_markers if mark.name != "xdist_group"]


def unit_rank(item: pytest.Item) -> int:
    """Where ``item``'s work unit goes in the workers' queue: lower first (above)."""
    name = group_of(item)
    if name is not None:
        return 0 if name in SPARK_LANES.values() else 1
    return 2 if item.get_closest_marker("slow") else 3


def sort_units(items: list[pytest.Item]) -> None:
    """The workers' order: by ``unit_rank``, the groups of a rank in their name's order (the
    lanes: ``spark-1`` first), each group's tests together in their order, a lane's modules in
    ``SPARK_LANES``'s order."""
    lane_order = {module: rank for rank, module in enumerate(SPARK_LANES)}

    def key(item: pytest.Item) -> tuple[int, str, int]:
        group = group_of(item)
        in_lane = lane_order.get(item.path.stem, -1) if group in SPARK_LANES.values() else -1
        return unit_rank(item), group or "", in_lane

    items.sort(key=key)


#: the project modules the workers imported (the fast tier's module check, below)
_WORKER_MODULES = pytest.StashKey[set]()


def _dist_named(config: pytest.Config) -> bool:
    return any(str(arg).startswith(("--dist", "-d")) for arg in config.invocation_params.args)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    config.stash[_WORKER_MODULES] = set()
    if hasattr(config.option, "loadscopereorder") and not hasattr(config, "workerinput"):
        config.option.loadscopereorder = False  # the controller: the units in the workers' order
    if _dist_named(config) or not hasattr(config.option, "dist"):
        return
    # a worker: tag each grouped test's id with its group, as --dist loadgroup does
    if hasattr(config, "workerinput"):
        config.option.loadgroup = True
    # the controller: schedule by group
    elif config.option.numprocesses and config.option.dist == "load":
        config.option.dist = "loadgroup"


# -- the fast tier's module check across the workers of ``pytest -n N`` (pytest-xdist) -------------


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error) -> None:
    """The controller: the project modules a finished worker imported."""
    node.config.stash[_WORKER_MODULES].update(getattr(node, "workeroutput",
                                                      {}).get("kmc_modules", ()))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    from tests.test_fast_tier import (
        PACKAGES,
        missing_message,
        not_imported,
        project_modules,
        spark_available,
        whole_tier,
    )

    config = session.config
    if hasattr(config, "workeroutput"):  # a worker: hand the controller what this process imported
        config.workeroutput["kmc_modules"] = sorted(m for m in sys.modules
                                                    if m.split(".")[0] in PACKAGES)
        return
    loaded = config.stash[_WORKER_MODULES]
    if (not loaded or not whole_tier(config) or exitstatus
        not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED)):
        return  # not a run of pytest -n, not a whole tier, or a run that did not finish
    missing = not_imported(project_modules(), loaded, spark_available())
    if missing:
        config.get_terminal_writer().line()
        config.get_terminal_writer().line("FAILED test_every_module_is_imported_by_the_tier: "
                                          f"{missing_message(missing)}",
                                          red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
