"""The spark engine's Arrow transport (DataFrames, states as compact msgpack, dedup and the anti-join
in the JVM) gives what every other engine gives: counts, depth and the very same shortest
counterexample, on two-phase and on Kafka. One ``local[2,2]`` session serves the module.
"""

import importlib.util
import shutil

import pytest

from checker.bfs import check
from checker.engines import EngineOptions, get_engine
from checker.result import Verdict
from checker.search import SearchOptions
from invariants.registry import for_family
from spec.registry import build_model

pytest.importorskip("pyspark")
pytestmark = [pytest.mark.spark, pytest.mark.skipif(shutil.which("java") is None, reason="needs Java")]

def _arrow_ready():
    if importlib.util.find_spec("pyspark") is None:
        return False
    from checker.spark.arrow_step import arrow_available

    return arrow_available()


@pytest.fixture(scope="module")
def spark():
    if not _arrow_ready():
        pytest.skip("the arrow transport needs PyArrow, pandas and PySpark 4 (pip install -e '.[spark]')")
    from checker.spark_engine import spark_session

    session, created = spark_session("local[2,2]", memory="1g")
    yield session
    if created:
        session.stop()


#: Spark gets the widest levels and the rest (a level costs a job)
THRESHOLD = {"two-phase": 100, "kafka": 1500}


def summary(result):
    return {
        "verdict": result.verdict,
        "distinct": result.distinct_states,
        "generated": result.states_generated,
        "depth": result.depth,
        "violations": [
            (v.invariant, v.length, v.trace.initial, [(s.action, s.state) for s in v.trace.steps])
            for v in result.violations
        ],
    }


def spark_run(model, options, transport="arrow", threshold=0, **extra):
    from checker.spark_engine import run_engine

    extra.update(partitions=2, threshold=threshold)
    if transport is not None:
        extra["transport"] = transport
    return run_engine(model, options, EngineOptions(master="local[2]", extra=extra))


@pytest.mark.parametrize(
    "name, consts, protocol",
    [("two-phase", ["RM=3", "commit_guard=off"], None), ("kafka", ["records=1"], "hw-truncation")],
    ids=["two-phase", "kafka"],
)
@pytest.mark.slow
@pytest.mark.usefixtures("spark")
def test_every_engine_gives_the_same_counts_and_shortest_counterexamples(name, consts, protocol):
    """bfs, parallel with 1, 2 and auto workers, and spark local[2] with both transports."""
    model = build_model(name, consts, protocol)
    options = SearchOptions(invariants=list(for_family(model.family).values()), stop_at_first=False)
    reference = summary(check(model, options))
    assert reference["verdict"] is Verdict.VIOLATED and reference["violations"]
    for workers in (1, 2, 0):
        result = get_engine("parallel")(model, options, EngineOptions(workers=workers or 2))
        assert summary(result) == reference, f"parallel, {workers or 'auto'} workers"
    # the visited set's runs merged every 3 levels: both the anti-joins against runs and the merge run
    arrow = spark_run(model, options, threshold=THRESHOLD[name], merge_levels=3)
    assert arrow.extra["spark"]["transport"] == "arrow"
    assert arrow.extra["spark"]["levels"][-1]["engine"] == "spark"
    assert summary(arrow) == reference
    if name == "two-phase":  # the blocks transport on Kafka: tests/test_spark_engine.py
        blocks = spark_run(model, options, transport="blocks", threshold=THRESHOLD[name])
        assert blocks.extra["spark"]["transport"] == "blocks" and summary(blocks) == reference


@pytest.mark.usefixtures("spark")
def test_a_failed_arrow_task_is_retried_with_no_change(tmp_path):
    from spec.two_phase import TwoPhase

    marker = tmp_path / "failures"
    options = SearchOptions(invariants=list(for_family("two-phase").values()))
    result = spark_run(TwoPhase(3), options, transport=None, fail_task_at_depth=4, fail_marker=str(marker))
    assert marker.read_text().count("failed") == 1  # the task really died once, and was retried
    assert result.extra["spark"]["transport"] == "arrow"  # the default transport
    assert summary(result) == summary(check(TwoPhase(3), options))
