"""Named fields at the cost of an index (``spec.fields``): every Kafka state type reads each field
as its item, refuses writes, and no decoder of outside data builds an instance of the wrong width
(its fields are read unchecked)."""

import sys
from typing import NamedTuple

import msgpack
import pytest

from checker.codec import CompactCodec, ModelStateCodec
from spec.errors import CorruptDataError
from spec.fields import checked_new, fast_fields
from spec.kafka import state as kafka_state
from spec.registry import build_model

CPYTHON = sys.implementation.name == "cpython"


@pytest.mark.skipif(not CPYTHON, reason="member descriptors over tuple items are a CPython layout")
def test_every_kafka_state_type_reads_its_fields_through_member_descriptors():
    assert kafka_state.FAST_FIELDS
    for cls in kafka_state.STATE_TYPES:
        sentinels = [object() for _ in cls._fields]
        value = tuple.__new__(cls, sentinels)
        for position, name in enumerate(cls._fields):
            assert type(cls.__dict__[name]).__name__ == "member_descriptor", (cls, name)
            assert getattr(value, name) is sentinels[position]
        with pytest.raises(AttributeError):
            setattr(value, cls._fields[-1], 1)
        with pytest.raises(AttributeError):
            delattr(value, cls._fields[0])


def test_a_state_type_stays_a_named_tuple():
    broker = build_model("kafka", ["records=1"], "2.1.0").init_states()[0].brokers[0]
    changed = broker._replace(hw=3)
    assert changed.hw == 3 and changed.log == broker.log and changed[2] == 3
    assert broker._asdict()["leader"] == broker.leader == broker[4]
    assert repr(broker).startswith("Broker(alive=True, log=()")
    assert hash(broker) == hash(tuple(broker)) and broker == tuple(broker)


def test_fast_fields_leaves_what_it_cannot_handle_alone():
    class Plain:
        _fields = ("a",)

    assert not fast_fields(Plain)
    assert not fast_fields(tuple)

    class Pair(NamedTuple):
        a: int
        b: int

    assert fast_fields(Pair) == CPYTHON
    assert Pair(1, 2).b == 2 and Pair(1, 2).a == 1


def test_checked_new_refuses_the_wrong_width():
    class Pair(NamedTuple):
        a: int
        b: int

    assert checked_new(Pair, (1, 2)) == (1, 2)
    for items in ((1,), (1, 2, 3), ()):
        with pytest.raises(ValueError):
            checked_new(Pair, items)


def _plain(model):
    return model.encode_state(model.init_states()[0])


@pytest.mark.parametrize("cut", ["broker", "controller", "message", "record", "state"])
def test_kafka_decoders_refuse_a_part_of_the_wrong_width(cut):
    model = build_model("kafka", ["records=1"], "2.1.0")
    state = model.init_states()[0]
    broker = state.brokers[0]._replace(log=(kafka_state.Record(0, 1),))
    fetch = kafka_state.FetchRequest(kafka_state.FETCH, 1, 0, -1, 0, -1, -1)
    plain = [list(part) if isinstance(part, tuple) else part for part in state._replace(
        brokers=(broker, state.brokers[1]), network=(fetch,))]
    plain[0] = [list(b) for b in plain[0]]
    plain[0][0][1] = [list(r) for r in plain[0][0][1]]
    plain[2] = [list(m) for m in plain[2]]
    if cut == "broker":
        plain[0][1] = plain[0][1][:-1]
    elif cut == "controller":
        plain[1] = plain[1][:2]
    elif cut == "message":
        plain[2][0] = plain[2][0][:4]
    elif cut == "record":
        plain[0][0][1][0] = [0]
    else:
        plain = plain[:-1]
    data = msgpack.packb(plain)
    with pytest.raises(CorruptDataError):
        ModelStateCodec(model).decode(data)
    whole = msgpack.unpackb(msgpack.packb(_plain(model)), use_list=False)
    assert ModelStateCodec(model).decode(msgpack.packb(whole)) == state  # the uncut form decodes


def test_the_compact_codec_refuses_a_named_tuple_of_the_wrong_width():
    model = build_model("kafka", ["records=1"], "2.1.0")
    codec = CompactCodec(model.state_types())
    controller = model.init_states()[0].controller
    data = codec.encode(controller)
    assert codec.decode(data) == controller
    # the codec numbers the types by name, not in state_types() order
    number = codec._numbers[type(controller)]
    for items in ([0, 0], list(controller) + [0]):
        with pytest.raises(CorruptDataError):
            codec.decode(msgpack.packb({number: items}))
