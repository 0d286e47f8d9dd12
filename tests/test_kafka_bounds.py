"""The Kafka model's bounds are declared once (``spec.kafka.bounds``): ``--const``, ``build`` and
``KafkaModel`` read that table."""

import pytest

from spec.kafka import INFO, KafkaModel, build
from spec.kafka.bounds import BOUNDS, DEFAULTS


def test_the_command_line_constants_are_the_bounds_table():
    assert INFO.constants == tuple(bound.constant for bound in BOUNDS)
    assert [c.name for c in INFO.constants][:3] == ["brokers", "records", "epochs"]


def test_every_bound_given_by_name_reaches_the_model():
    changed = {bound.name: bound.constant.maximum if bound.name != "acks" else -1
               for bound in BOUNDS}
    model = KafkaModel(protocol="kraft-4.0", **changed)
    assert (model.brokers, model.epochs, model.records, model.fences) == (5, 8, 8, 8)
    assert (model.acks, model.min_isr, model.consumers, model.reassignments) == (-1, 5, 3, 8)
    assert (build({"brokers": 3, "epochs": 1}, "3.9.1").constants
            == KafkaModel(protocol="3.9.1", brokers=3, epochs=1).constants)


def test_the_defaults_are_the_tables_and_an_unknown_bound_is_refused():
    model = KafkaModel()
    # the replicas' bounds
    assert model.constants == {name: DEFAULTS[name] for name in list(DEFAULTS)[:9]}
    with pytest.raises(TypeError, match="no bound broker; its bounds: brokers, records"):
        KafkaModel(broker=3)
