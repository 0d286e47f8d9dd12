"""The spark engine gives exactly the local engine's results (counts, depth, verdict, the very same
shortest counterexample), survives a failed task and resumes an interrupted run to the same counts.

One SparkSession (``local[2,2]``: two cores, a failed task is tried twice) serves the whole suite
(tests/conftest.py).
"""

import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from checker.bfs import check
from checker.result import Verdict
from checker.search import SearchOptions
from invariants.registry import for_family
from spec.errors import WrongModelError
from spec.registry import build_model
from spec.two_phase import TwoPhase
from tests.test_kernel import needs_cc

pytest.importorskip("pyspark")
pytestmark = [pytest.mark.spark, pytest.mark.skipif(shutil.which("java") is None,
                                                    reason="needs Java")]

INVARIANTS = list(for_family("two-phase").values())


@pytest.fixture(scope="module")
def spark(spark_local):
    return spark_local  # the suite's one session (tests/conftest.py)


def run_spark(model, options, **extra):
    from checker.spark import SparkOptions, run_engine

    extra.setdefault("partitions", 2)
    # this module's transport (the arrow one: tests/test_spark_arrow.py)
    extra.setdefault("transport", "blocks")
    extra.setdefault("driver_below", 0)  # every kernel level on the executors unless asked
    return run_engine(model, options, SparkOptions(master="local[2]", **extra))


def summary(result):
    """Everything that must be identical between engines, traces included (actions and states)."""
    return {
        "verdict": result.verdict,
        "distinct": result.distinct_states,
        "generated": result.states_generated,
        "depth": result.depth,
        "queue": result.queue,
        "violations": [
            (v.invariant, v.length, v.trace.initial, [(s.action, s.state) for s in v.trace.steps])
            for v in result.violations
        ],
    }


# about 6 s; the fast tier runs the seeded bug on the driver (below, no JVM): the counts, the
@pytest.mark.slow
# depth and the trace of the local engine
def test_two_phase_matches_tlc_and_the_local_engine_with_a_failed_task_retried(spark, tmp_path):
    """TLC's counts and the local engine's search, every level on Spark; a task of level 4 dies
    once and is retried with no change (one search for both: they were two tests of the same
    run)."""
    marker = tmp_path / "failures"
    result = run_spark(TwoPhase(3), SearchOptions(invariants=INVARIANTS), threshold=0,
                       fail_task_at_depth=4, fail_marker=str(marker))
    assert marker.read_text().count("failed") == 1  # the task really died once, and was retried
    assert (result.distinct_states, result.states_generated, result.depth) == (288, 1146, 11)
    assert result.verdict is Verdict.HOLDS and result.engine == "spark"
    assert result.extra["spark"]["transport"] == "blocks"
    assert summary(result) == summary(check(TwoPhase(3), SearchOptions(invariants=INVARIANTS)))
    levels = result.extra["spark"]["levels"]
    # threshold 0: every level after the first on Spark
    assert [lv["engine"] for lv in levels] == ["spark"] * 11
    assert sum(lv["new"] for lv in levels) == 288 - 1


@pytest.mark.slow  # about 4 s; the arrow transport's fast test hands local levels over to Spark too
def test_threshold_keeps_small_levels_local(spark):
    options = SearchOptions(invariants=INVARIANTS)
    result = run_spark(TwoPhase(5), options, threshold=1000)
    assert result.distinct_states == 8832
    assert summary(result) == summary(check(TwoPhase(5), options))
    engines = [lv["engine"] for lv in result.extra["spark"]["levels"]]
    first_spark = engines.index("spark")
    assert (engines[:first_spark] == ["local"] * first_spark and set(engines[first_spark:])
            == {"spark"})
    assert result.extra["spark"]["levels"][first_spark]["frontier"] >= 1000


@pytest.mark.slow  # a JVM: the fast tier runs the same search on the driver (below)
def test_seeded_bug_gives_the_same_shortest_trace(spark):
    model = TwoPhase(3, commit_guard=False)
    result = run_spark(model, SearchOptions(invariants=INVARIANTS), threshold=0)
    assert result.verdict is Verdict.VIOLATED and result.violations[0].length == 3
    assert summary(result) == summary(check(model, SearchOptions(invariants=INVARIANTS)))


@needs_cc
@pytest.mark.skipif(importlib.util.find_spec("pandas") is None
                    or importlib.util.find_spec("pyarrow") is None,
                    reason="the kernel's driver path is the arrow transport's: PyArrow and pandas")
def test_seeded_bug_on_the_driver_gives_the_same_shortest_trace():
    """The fast tier's Spark engine, with no JVM: on the kernel path every level below
    ``--spark-driver-below`` runs on the driver in C and no Spark application starts; the counts,
    the depth and the very trace of the local engine on the readable model. The executors' levels
    are the slow tests' (above, test_large_levels_numbered_and_written_on_the_executors: the same
    seeded bug on the blocks transport; tests/test_spark_kernel.py: the kernel path)."""
    model = TwoPhase(3, commit_guard=False)
    result = run_spark(model, SearchOptions(invariants=INVARIANTS, kernel="auto"), threshold=0,
                       transport="arrow", driver_below=300_000)
    assert result.extra["path"]["path"] == "kernel" and result.extra["spark"]["master"] is None
    assert {level["engine"] for level in result.extra["spark"]["levels"]} == {"driver"}
    assert result.verdict is Verdict.VIOLATED and result.violations[0].length == 3
    assert summary(result) == summary(check(model, SearchOptions(invariants=INVARIANTS)))


@pytest.mark.slow  # Kafka on Spark, or a run of its own: 9 to 47 s each
def test_large_levels_numbered_and_written_on_the_executors(spark):
    """The blocks transport's distributed path: range shuffle on the parent index, Parquet parent
    pointers, RDD checkpoints."""
    model = TwoPhase(4, commit_guard=False)
    options = SearchOptions(invariants=INVARIANTS, stop_at_first=False)
    result = run_spark(model, options, threshold=200, driver_index_limit=0, checkpoint_levels=2,
                       transport="blocks")
    assert result.extra["spark"]["transport"] == "blocks"
    assert result.extra["spark"]["levels"][-1]["engine"] == "spark"
    local = check(model, options)
    assert summary(result) == summary(local)
    assert [v.length for v in result.violations] == [3]


@pytest.mark.slow
def test_killed_driver_resumes_from_the_last_completed_level(spark, tmp_path):
    """A driver killed outright (SIGKILL, JVM included) resumes from the levels it had written."""
    run_dir = tmp_path / "run"
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    command = [sys.executable, "-m", "kmc.cli", "check", "two-phase", "--const", "RM=3",
               "--engine", "spark", "--master", "local[1]", "--spark-threshold", "30",
               "--spark-driver-below", "0",
               "--spark-transport", "blocks", "--checkpoint", str(run_dir), "--json", "--quiet",
               "--trace-dir", str(tmp_path / "traces"),
               "-deadlock"]  # resumed below with SearchOptions' default: no deadlock check
    child = subprocess.Popen(command, cwd=root, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 150
        depth = 0
        while depth < 6 and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
            try:
                depth = json.loads((run_dir / "run.json").read_text())["depth"]
            except (OSError, ValueError):
                pass
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
        child.wait()
    model = TwoPhase(3)
    full = check(model, SearchOptions(invariants=INVARIANTS))
    saved = json.loads((run_dir / "run.json").read_text())
    # killed mid-way
    assert 6 <= saved["depth"] < full.depth and 0 < saved["distinct"] < full.distinct_states
    resumed = run_spark(model, SearchOptions(invariants=INVARIANTS, checkpoint_path=str(run_dir),
                                             resume_from=str(run_dir)), threshold=30)
    assert summary(resumed) == summary(full)
    with pytest.raises(WrongModelError):
        run_spark(TwoPhase(5), SearchOptions(invariants=INVARIANTS, checkpoint_path=str(run_dir),
                                             resume_from=str(run_dir)))


@pytest.mark.slow  # a Spark run of its own: 3 to 5 s
def test_interrupt_between_levels_leaves_a_resumable_run(spark, tmp_path):
    """Ctrl-C after a level: run.json names that level; the resume is tested above."""
    run_dir = tmp_path / "run"

    def interrupt(progress):
        if progress.depth == 7:
            raise KeyboardInterrupt

    options = SearchOptions(invariants=INVARIANTS, checkpoint_path=str(run_dir), progress=interrupt)
    with pytest.raises(KeyboardInterrupt):
        run_spark(TwoPhase(3), options, threshold=30)
    saved = json.loads((run_dir / "run.json").read_text())
    assert saved["depth"] == 7 and saved["levels"][-1]["depth"] == 7 and saved["levels"][-1]["path"]


@pytest.mark.slow  # a Spark run of its own: 3 to 5 s
def test_deadlocks_and_state_constraints_match_the_local_engine(spark):
    from tests.test_engine import Grid

    options = SearchOptions(check_deadlock=True, stop_at_first=False)
    dead_end = run_spark(Grid(2), options, threshold=2)
    assert dead_end.violations[0].kind == "deadlock" and dead_end.violations[0].length == 4
    assert summary(dead_end) == summary(check(Grid(2), options))
    bounded = run_spark(Grid(3, bound=3), SearchOptions(), threshold=2)
    assert (bounded.distinct_states == 10 and bounded.states_generated
            == check(Grid(3, bound=3)).states_generated)
    assert summary(bounded) == summary(check(Grid(3, bound=3), SearchOptions()))


@pytest.mark.slow  # Kafka on Spark, or a run of its own: 9 to 47 s each
def test_symmetry_reduction_matches_the_local_engine(spark):
    # one epoch: 3,196 orbits, not 2's 13,000 or so; the levels from 100 states on on Spark
    model = build_model("kafka", ["records=1", "epochs=1"], "kip-101")
    # liveness: refused under symmetry
    safety = [inv for inv in for_family(model.family).values() if inv.kind == "safety"]
    options = SearchOptions(invariants=safety, symmetry=True)
    result = run_spark(model, options, threshold=100)
    assert result.distinct_states == 3196
    assert result.symmetry and result.extra["spark"]["levels"][-1]["engine"] == "spark"
    assert summary(result) == summary(check(model, options))


@pytest.mark.slow  # Kafka on Spark, or a run of its own: 9 to 47 s each
# kip-101 (and kip-279, as kip-101 on Spark): its states and requests on this transport are
# test_symmetry_reduction_matches_the_local_engine's (kip-101 records=1, the blocks transport), and
# an unreduced search on it is hw-truncation's here
@pytest.mark.parametrize("protocol", ["hw-truncation", "truncate-on-fetch"])
def test_kafka_protocols_match_the_local_engine(spark, protocol):
    # truncate-on-fetch (3.9.1) changes its ISR through AlterIsr, whose states and levels are many
    # more: one epoch
    bounds = ["records=1", "epochs=1"] if protocol == "truncate-on-fetch" else ["records=1"]
    model = build_model("kafka", bounds, protocol)
    options = SearchOptions(invariants=list(for_family(model.family).values()))
    result = run_spark(model, options, threshold=300)
    assert result.extra["spark"]["levels"][-1]["engine"] == "spark"
    assert summary(result) == summary(check(model, options))


@pytest.mark.slow  # Kafka on Spark, or a run of its own: 9 to 47 s each
def test_command_line(spark, capsys, tmp_path):
    from kmc.cli import main

    code = main(["check", "two-phase", "--const", "commit_guard=off", "--engine", "spark",
                 "--spark-threshold", "0",
                 "--spark-driver-below", "0", "--json", "--quiet", "--trace-dir", str(tmp_path)])
    out = json.loads(capsys.readouterr().out)
    assert code == 12 and out["engine"] == "spark" and out["violations"][0]["length"] == 3
    assert (out["distinct_states"], out["depth"]) == (110, 4)
    assert out["violations"][0]["trace_file"].startswith(str(tmp_path))
