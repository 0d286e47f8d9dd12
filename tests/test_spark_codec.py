"""The compact msgpack codec of the spark engine's Arrow columns: states back with their types and
fingerprints, and anything it did not write refused (needs neither Java nor PySpark)."""

import pickle

import pytest

from checker.codec import Codec, CompactCodec, ModelStateCodec, state_column_codec
from spec.errors import CorruptDataError
from spec.registry import build_model
from spec.two_phase import TwoPhase


def _states(model, limit=400):
    """Up to ``limit`` reachable states of ``model``, breadth first."""
    frontier = list(model.init_states())
    seen = set(frontier)
    while frontier and len(seen) < limit:
        nxt = []
        for state in frontier:
            for _act, succ in model.successors(state):
                if succ not in seen:
                    seen.add(succ)
                    nxt.append(succ)
        frontier = nxt
    return list(seen)


@pytest.mark.parametrize("model",
                         [TwoPhase(3), build_model("kafka", ["records=1", "consumers=1"], "2.1.0")],
                         ids=["two-phase", "kafka"])
def test_compact_codec_round_trips_states_with_their_types_and_fingerprints(model):
    # our own codec object, pickled and unpickled in-process as Spark ships a closure to its
    # executors (no user data)
    codec = pickle.loads(pickle.dumps(CompactCodec(model.state_types())))  # noqa: S301
    reference = Codec(model.state_types())
    for state in _states(model):
        data = codec.encode(state)
        back = codec.decode(data)
        assert back == state and hash(back) == hash(state) and type(back) is type(state)
        # nested NamedTuples, tuples and frozensets rebuilt as such
        assert repr(back) == repr(state)
        assert len(data) < len(reference.encode(state))


def test_compact_codec_rejects_what_it_did_not_write():
    codec = CompactCodec(TwoPhase(3).state_types())
    for data in (b"\xc1", b"\x81\x63\x90", b"\x82\x00\x90\x01\x90", b"\x81\xa1x\x90",
                 b"\x92\x01"[:1]):
        with pytest.raises(CorruptDataError):
            codec.decode(data)
    with pytest.raises(TypeError):
        codec.encode(({1, 2},))  # a mutable set is no state


@pytest.mark.parametrize("model",
                         [TwoPhase(3), build_model("kafka", ["records=1", "consumers=1"], "2.1.0")],
                         ids=["two-phase", "kafka"])
def test_model_state_codec_round_trips_states_in_fewer_bytes(model):
    # our own object, as Spark ships it
    codec = pickle.loads(pickle.dumps(state_column_codec(model)))  # noqa: S301
    assert isinstance(codec, ModelStateCodec)
    compact = CompactCodec(model.state_types())
    for state in _states(model):
        data = codec.encode(state)
        back = codec.decode(data)
        assert back == state and hash(back) == hash(state) and type(back) is type(state)
        assert repr(back) == repr(state)
        assert len(data) <= len(compact.encode(state))


def test_a_model_without_a_plain_form_gets_the_compact_codec():
    from tests.test_engine import Grid

    assert isinstance(state_column_codec(Grid(2)), CompactCodec)


@pytest.mark.parametrize("data", [
    b"\xc1",  # not msgpack
    b"\x93\x01\x02",  # cut short
    b"\x01",  # an int, not an array
    b"\x91\x01",  # too few fields for the model's decode_state
    b"\x97\x01\x02\x03\x04\x05\x06\x07",  # too many fields for a TwoPhaseState
    b"\x96\x01\x02\x03\x04\x05\x06\x07",  # a valid array followed by extra bytes
], ids=["not-msgpack", "truncated", "not-an-array", "too-few", "too-many", "extra-bytes"])
@pytest.mark.parametrize("model", [TwoPhase(3), build_model("kafka", ["records=1"], "2.1.0")],
                         ids=["two-phase", "kafka"])
def test_model_state_codec_rejects_what_it_did_not_write(model, data):
    with pytest.raises(CorruptDataError):
        ModelStateCodec(model).decode(data)
