"""The spark engine's Arrow transport (DataFrames, states as compact msgpack, dedup and the
anti-join in the JVM) gives what every other engine gives: counts, depth and the very same shortest
counterexample, on two-phase and on Kafka. One ``local[2,2]`` session serves the whole suite
(tests/conftest.py).
"""

import importlib.util
import shutil

import pytest

from checker import engines
from checker.bfs import check
from checker.invariant import Invariant
from checker.parallel import ParallelOptions
from checker.result import Verdict
from checker.search import SearchOptions
from checker.spark import SparkOptions
from invariants.registry import for_family
from spec.registry import build_model

pytest.importorskip("pyspark")
pytestmark = [pytest.mark.spark, pytest.mark.skipif(shutil.which("java") is None,
                                                    reason="needs Java")]

def _arrow_ready():
    if importlib.util.find_spec("pyspark") is None:
        return False
    from checker.spark.arrow_step import arrow_available

    return arrow_available()


@pytest.fixture(scope="module")
def spark(spark_local):
    if not _arrow_ready():
        pytest.skip("the arrow transport needs PyArrow, pandas and PySpark 4 (pip install -e "
                    "'.[spark]')")
    return spark_local  # the suite's one session (tests/conftest.py)


#: the cases of a parametrized Spark test (each costs 3 to 9 s and needs the JVM): the whole suite
#: runs them all, the fast tier none (it starts no JVM: tests/test_spark_engine.py's driver case)
SLOW = pytest.mark.slow

#: Spark gets the widest levels and the rest (a level costs a job)
THRESHOLD = {"two-phase": 100, "kafka": 500}


def summary(result):
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


def spark_run(model, options, transport="arrow", threshold=0, **extra):
    from checker.spark import run_engine

    extra.update(partitions=2, threshold=threshold)
    if transport is not None:
        extra["transport"] = transport
    extra.setdefault("driver_below", 0)  # every kernel level on the executors unless asked
    return run_engine(model, options, SparkOptions(master="local[2]", **extra))


@pytest.mark.parametrize(
    "name, consts, protocol",
    [("two-phase", ["RM=3", "commit_guard=off"], None), ("kafka", ["records=1"], "hw-truncation")],
    ids=["two-phase", "kafka"],
)
@pytest.mark.slow
@pytest.mark.usefixtures("spark")
def test_every_engine_gives_the_same_counts_and_shortest_counterexamples(name, consts, protocol):
    """local, parallel with 1 and 2 workers, and spark local[2] with both transports (auto workers
    are the cores there are: tests/test_parallel.py's test_auto_workers_use_the_cores_there_are;
    on CI's two cores a run with auto workers was the run with 2 again)."""
    model = build_model(name, consts, protocol)
    options = SearchOptions(invariants=list(for_family(model.family).values()), stop_at_first=False)
    reference = summary(check(model, options))
    assert reference["verdict"] is Verdict.VIOLATED and reference["violations"]
    for workers in (1, 2):
        result = engines.run(model, options, "parallel", ParallelOptions(workers=workers))
        assert summary(result) == reference, f"parallel, {workers or 'auto'} workers"
    # the visited set's runs merged every 3 levels: both the anti-joins against runs and the merge
    # run
    arrow = spark_run(model, options, threshold=THRESHOLD[name], merge_levels=3)
    assert arrow.extra["spark"]["transport"] == "arrow"
    assert arrow.extra["spark"]["levels"][-1]["engine"] == "spark"
    assert summary(arrow) == reference
    if name == "two-phase":  # the blocks transport on Kafka: tests/test_spark_engine.py
        blocks = spark_run(model, options, transport="blocks", threshold=THRESHOLD[name])
        assert blocks.extra["spark"]["transport"] == "blocks" and summary(blocks) == reference


@pytest.mark.slow  # a retried task: about 7 s
@pytest.mark.usefixtures("spark")
def test_a_failed_arrow_task_is_retried_with_no_change(tmp_path):
    from spec.two_phase import TwoPhase

    marker = tmp_path / "failures"
    options = SearchOptions(invariants=list(for_family("two-phase").values()))
    result = spark_run(TwoPhase(3), options, transport=None, fail_task_at_depth=4,
                       fail_marker=str(marker))
    assert marker.read_text().count("failed") == 1  # the task really died once, and was retried
    assert result.extra["spark"]["transport"] == "arrow"  # the default transport
    assert summary(result) == summary(check(TwoPhase(3), options))


def _grid_invariants(*names):
    """Invariants of ``tests.test_engine.Grid`` states: each is violated first at a known level."""
    every = {
        "sum<3": Invariant("sum<3", "x + y < 3", lambda s: s.x + s.y < 3),  # violated from level 4
        "x<2": Invariant("x<2", "x < 2", lambda s: s.x < 2),  # from level 3, by (2, 0)
        "y<3": Invariant("y<3", "y < 3", lambda s: s.y < 3),  # from level 4, by (0, 3)
        # the last level, (4, 4): no successors
        "sum<8": Invariant("sum<8", "x + y < 8", lambda s: s.x + s.y < 8),
    }
    return [every[name] for name in names]


@pytest.mark.parametrize(
    "invariants, options",
    [
        pytest.param(("sum<3",), {}, marks=SLOW),  # the first violation, in a level Spark expands
        # several invariants, violated at several levels (a JVM: slow, as the other cases; the
        # fast tier's Spark engine runs on the driver, tests/test_spark_engine.py)
        pytest.param(("sum<3", "x<2", "y<3"), {"stop_at_first": False}, marks=SLOW),
        pytest.param(("x<2", "y<3"), {}, marks=SLOW),
        # violated on the last level only (no successors)
        pytest.param(("sum<8",), {"stop_at_first": False}, marks=SLOW),
        # the last level: a violation and a deadlock at once
        pytest.param(("sum<8",), {"check_deadlock": True}, marks=SLOW),
        # the frontier at the depth bound is still checked
        pytest.param(("sum<3",), {"max_depth": 5}, marks=SLOW),
        pytest.param(("sum<8",), {"max_depth": 9}, marks=SLOW),
        # a budget stops at a frontier
        pytest.param(("y<3",), {"max_states": 12, "stop_at_first": False}, marks=SLOW),
        pytest.param((), {"check_deadlock": True}, marks=SLOW),
    ],
    ids=["first", "several", "two-first", "last-level", "last-and-deadlock", "depth-bound",
         "depth-bound-last", "state-budget", "deadlock"],
)
@pytest.mark.usefixtures("spark")
def test_invariants_checked_on_the_frontier_report_what_the_local_engine_reports(
    invariants, options):
    """The arrow transport checks a state's invariants when it expands it (the level after it was
    found): the same first violating state, trace, counts and queue as the local engine, whether the
    violation is on a level Spark expands, on the last level, at a depth or state budget, or with a
    deadlock. Grid(4): levels by x + y, 25 states, the last level (4, 4) at depth 8 (threshold 2:
    Spark runs from level 3 on)."""
    from tests.test_engine import Grid

    search = SearchOptions(invariants=_grid_invariants(*invariants), **options)
    reference = summary(check(Grid(4), search))
    result = spark_run(Grid(4), search, threshold=2)
    assert result.extra["spark"]["transport"] == "arrow"
    assert any(level["engine"] == "spark" for level in result.extra["spark"]["levels"])
    assert summary(result) == reference


@pytest.mark.slow  # Kafka on Spark: about 4 s
@pytest.mark.usefixtures("spark")
def test_kafka_stops_at_its_first_violation_as_the_local_engine():
    """On Kafka (the model's own state codec) with every invariant and stop-at-first: the violation
    is found on a level Spark expands, and the counts are those of the level it is on."""
    model = build_model("kafka", ["records=1"], "hw-truncation")
    options = SearchOptions(invariants=list(for_family(model.family).values()))
    reference = summary(check(model, options))
    assert reference["verdict"] is Verdict.VIOLATED
    result = spark_run(model, options, threshold=300)
    assert result.extra["spark"]["levels"][-1]["engine"] == "spark"
    assert summary(result) == reference


@pytest.mark.slow  # a JVM (Spark's own partitioning): the fast tier starts none
@pytest.mark.parametrize("partitions", [2, 3, 5])
def test_the_frontier_is_split_in_ranges_of_global_indices(spark, partitions):
    """Partition j of the frontier holds the j-th of equal ranges of keys (global-index order), so
    one task expands neighbouring states, which share successors."""
    from types import SimpleNamespace

    import numpy as np
    from pyspark.sql import functions as F  # noqa: N812

    from checker.spark.arrow_step import _by_index_range, _partition_labels

    keys = np.arange(0, 3000, 3, dtype=np.int64)  # 1,000 keys, not the row numbers
    # given in no particular order
    rows = [(int(k) * 7919 % 1_000_003, int(k), b"s") for k in keys[::-1]]
    frame = spark.createDataFrame(rows, "fp long, key long, state binary")
    run = SimpleNamespace(labels=_partition_labels(spark, partitions))
    placed = _by_index_range(run, frame, keys).select("fp",
                                                      F.spark_partition_id().alias(
                                                          "part")).collect()
    part_of = {row.fp: row.part for row in placed}
    expected = [j for j in range(partitions)
                for _ in range(len(keys) * (j + 1) // partitions - len(keys) * j // partitions)]
    assert [part_of[int(k) * 7919 % 1_000_003] for k in keys] == expected
