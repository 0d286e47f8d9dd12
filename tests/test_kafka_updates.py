"""The generated named updates (``spec.kafka.state.updater``) make the same copies as ``with_``."""

from __future__ import annotations

import pytest

from spec.kafka.state import Broker, Controller, KafkaState, updater
from spec.registry import build_model


def _states():
    model = build_model("kafka", ["brokers=3"], "kip-320")
    return model.init_states()[0]


def test_updater_equals_with_for_every_field_of_a_broker():
    broker = _states().brokers[1]
    for position, name in enumerate(Broker._fields):
        value = ("changed", position)
        update = updater(Broker, name)
        copy = update(broker, **{name: value})
        assert type(copy) is Broker
        assert copy == broker.with_(**{name: value})
        assert (copy[position] == value and copy[:position] == broker[:position]
                and copy[position + 1 :] == broker[position + 1 :])


def test_updater_with_fixed_values_and_positional_or_keyword_calls():
    broker = _states().brokers[0]
    crash = updater(Broker, "hw", alive=False, leader=-1, pending_diverging=())
    expected = broker.with_(hw=7, alive=False, leader=-1, pending_diverging=())
    assert crash(broker, 7) == expected
    assert crash(broker, hw=7) == expected
    state = _states()
    moved = updater(KafkaState, "brokers", "produced")(state, brokers=state.brokers[::-1],
                                                       produced=3)
    assert moved == state.with_(brokers=state.brokers[::-1], produced=3)
    assert (updater(Controller, "isr")(state.controller, isr=(1,))
            == state.controller.with_(isr=(1,)))


@pytest.mark.parametrize("names, constants", [(("lof",), {}), (("log", "log"), {}),
                                              (("log",), {"log": ()}), ((), {"nope": 1})])
def test_updater_refuses_unknown_or_repeated_fields(names, constants):
    with pytest.raises(TypeError):
        updater(Broker, *names, **constants)


def test_updater_refuses_a_field_it_does_not_set():
    update = updater(Broker, "hw")
    with pytest.raises(TypeError):
        update(_states().brokers[0], log=())
