"""``--reduce dead`` on the Spark engine (both transports, run directories and ``--resume``): the
local engine's counts, depth, verdict and the very same counterexample (replayed on the unreduced
model).

The fast test runs each transport's expansion on Kafka states whose successors hold dead answers,
without Spark: every candidate it emits is in the reduced form. The slow ones search on the suite's
Spark session (tests/conftest.py)."""

import importlib.util
import json
import shutil

import numpy as np
import pytest

from checker import engines
from checker.bfs import LocalBFS
from checker.search import SearchOptions, search_canonical
from invariants.registry import for_family
from spec.errors import WrongModelError
from spec.registry import build_model
from tests.test_spark_engine import summary  # everything engines must agree on, traces included

KAFKA = for_family("kafka")
# 2.1.0: no-fence-stall (KAFKA-7786) violated, reduced or not
CONSTS = ["records=1", "epochs=2", "bumps=2", "crashes=0"]


def _states_with_dead_successors(model, limit=40):
    """Reachable states of the unreduced model one of whose successors holds a dead answer."""
    reducer = model.dead_messages()
    found, frontier, seen = [], list(model.init_states()), set()
    while frontier and len(found) < limit:
        state = frontier.pop(0)
        for _act, succ in model.successors(state):
            if reducer.reduce(succ) != succ and state not in found:
                found.append(state)
            if succ not in seen:
                seen.add(succ)
                frontier.append(succ)
    return found


def test_each_transports_expansion_emits_the_reduced_form():
    from checker.spark.blocks import _dumps, unpack_states
    from checker.spark.expand import _Expand

    model = build_model("kafka", CONSTS, "2.1.0")
    options = SearchOptions(invariants=[], reduce="dead")
    canonical = search_canonical(model, options)
    reduce = model.dead_messages().reduce
    states = _states_with_dead_successors(model)
    assert states
    fps = np.array([hash(s) for s in states], np.int64)
    block = ("l", fps, np.zeros(len(states), np.int64), np.zeros(len(states), np.int32),
             _dumps(states), np.arange(len(states), dtype=np.int64), None)
    emitted = [s for _part, out in _Expand(model, False, False, 2,
                                           canonical=canonical)([(0, block)]) if out[0] == "c"
               for s in unpack_states(out[4])]
    assert emitted and all(reduce(s) == s for s in emitted)
    if importlib.util.find_spec("pyarrow") is not None:
        import pyarrow as pa

        from checker.codec import state_column_codec
        from checker.spark.arrow_step import ArrowExpand

        codec = state_column_codec(model)

        class Broadcast:
            value = (np.sort(fps), np.argsort(np.argsort(fps)).astype(np.int64),
                     np.zeros(0, np.int64))

        batch = pa.RecordBatch.from_arrays([pa.array(fps.tolist(), pa.int64()),
                                            pa.array([codec.encode(s) for s in states],
                                                     pa.binary())], names=["fp", "state"])
        out = list(ArrowExpand(model, False, False, [], Broadcast(), codec,
                               canonical=canonical)(iter([batch])))
        blobs = [b for batch in out for b in batch.column(2).to_pylist() if b is not None]
        assert blobs and all(reduce(codec.decode(b)) == codec.decode(b) for b in blobs)
    # the driver's own levels use the same form (the local engine's)
    assert LocalBFS(model, options).canonical is not None


@pytest.mark.skipif(importlib.util.find_spec("pyarrow") is None, reason="the arrow transport needs "
                                                                        "PyArrow")
def test_the_arrow_expansion_skips_canonical_for_a_state_found_already():
    """Under --symmetry --reduce dead the arrow expansion skips ``canonical`` for a successor whose
    own fingerprint it has seen (a canonical state found already), as the local engine does; it
    emits what the loop over ``SuccessorView.of`` emits: the same fingerprints, keys and states, in
    the same order."""
    import pyarrow as pa

    from checker.codec import state_column_codec
    from checker.search import SuccessorView
    from checker.spark.arrow_step import POSITION_BITS, ArrowExpand

    model = build_model("kafka", CONSTS, "2.1.0")
    canonical = search_canonical(model, SearchOptions(invariants=[], reduce="dead", symmetry=True))
    frontier = list(dict.fromkeys(canonical(s)
                                  for s in _states_with_dead_successors(model, limit=60)))
    # a state's global index: its place in ``frontier``
    fps = np.array([hash(s) for s in frontier], np.int64)
    codec = state_column_codec(model)
    calls = []

    def counted(state):
        calls.append(1)
        return canonical(state)

    class Broadcast:  # the level's fingerprints sorted, each one's global index; no recent levels
        value = (fps[np.argsort(fps)], np.argsort(fps).astype(np.int64), np.zeros(0, np.int64))

    batch = pa.RecordBatch.from_arrays([pa.array(fps.tolist(), pa.int64()),
                                        pa.array([codec.encode(s) for s in frontier], pa.binary())],
                                       names=["fp", "state"])
    out = list(ArrowExpand(model, True, False, [], Broadcast(), codec,
                           canonical=counted)(iter([batch])))
    got = [(fp, key, blob) for b in out for fp, key, blob in zip(b.column(0).to_pylist(),
                                                                 b.column(1).to_pylist(),
                                                                 b.column(2).to_pylist(),
                                                                 strict=True) if fp is not None]
    view, seen, want, generated = SuccessorView(model, True, canonical), set(), [], 0
    for index, state in enumerate(frontier):
        count, kept = view.of(state)
        generated += count
        for pos, _act, succ in kept:
            if hash(succ) not in seen:
                seen.add(hash(succ))
                want.append((hash(succ), index << POSITION_BITS | pos, codec.encode(succ)))
    assert got == want and len(want) > 100
    assert len(calls) < generated  # some successors were known canonical states: no call


def run_spark(model, options, **extra):
    from checker.spark import SparkOptions

    return engines.run(model, options, "spark",
                       SparkOptions(master="local[2]", partitions=2, driver_below=0, **extra))


needs_spark = pytest.mark.skipif(shutil.which("java") is None or importlib.util.find_spec("pyspark")
                                 is None,
                                 reason="needs PySpark and Java")


def _arrow_ready():
    if importlib.util.find_spec("pyspark") is None:
        return False
    from checker.spark.arrow_step import arrow_available

    return arrow_available()





@pytest.mark.parametrize("transport", ["blocks", pytest.param("arrow", marks=pytest.mark.skipif(
    not _arrow_ready(), reason="the arrow transport needs PyArrow and PySpark 4"))])
# 9,563 reduced states, the levels from 300 states on on Spark: 10 to 20 s each on a quiet machine
@pytest.mark.slow
@pytest.mark.spark
@needs_spark
def test_spark_gives_the_local_engines_reduced_search(spark_local, transport):
    model = build_model("kafka", CONSTS, "2.1.0")
    options = SearchOptions(invariants=[KAFKA["no-fence-stall"]], reduce="dead")
    local = engines.run(model, options, "local")
    result = run_spark(model, options, threshold=300, transport=transport)
    assert any(level["engine"] == "spark" for level in result.extra["spark"]["levels"])
    assert summary(result) == summary(local) and result.verdict.value == "violated"
    assert result.extra["reduction"] == local.extra["reduction"]
    assert result.extra["guaranteed_shortest"] is False


@pytest.mark.parametrize("transport", ["blocks", pytest.param("arrow", marks=pytest.mark.skipif(
    not _arrow_ready(), reason="the arrow transport needs PyArrow and PySpark 4"))])
@pytest.mark.slow  # an interrupted Spark run and its resume
@pytest.mark.spark
@needs_spark
def test_an_interrupted_reduced_run_resumes_to_the_local_result(spark_local, tmp_path, transport):
    """--symmetry --reduce dead --checkpoint DIR, Ctrl-C after a Spark level, --resume DIR (in the
    transport that wrote the directory): the local engine's counts and counterexample (its steps
    across the resumed levels)."""
    model = build_model("kafka", CONSTS, "2.1.0")
    invariants = [KAFKA["no-fence-stall"], KAFKA["replica-sanity"]]
    local = engines.run(model, SearchOptions(invariants=invariants, reduce="dead", symmetry=True))
    assert local.verdict.value == "violated"
    run_dir = tmp_path / "run"
    stop_at = local.depth - 4

    def interrupt(progress):
        if progress.depth == stop_at:
            raise KeyboardInterrupt

    options = SearchOptions(invariants=invariants, reduce="dead", symmetry=True,
                            checkpoint_path=str(run_dir), progress=interrupt)
    with pytest.raises(KeyboardInterrupt):
        run_spark(model, options, threshold=30, transport=transport)
    saved = json.loads((run_dir / "run.json").read_text())
    assert saved["transport"] == transport and saved["depth"] == stop_at
    resumed = run_spark(model, SearchOptions(invariants=invariants, reduce="dead", symmetry=True,
                                             checkpoint_path=str(run_dir),
                                             resume_from=str(run_dir)), threshold=30)
    assert summary(resumed) == summary(local) and resumed.extra["spark"]["transport"] == transport
    with pytest.raises(WrongModelError):  # the identity names the reduction
        run_spark(model, SearchOptions(invariants=invariants, symmetry=True,
                                       checkpoint_path=str(run_dir), resume_from=str(run_dir)),
                  threshold=30)
