"""``bench/delivery_memo.py`` (issue 35): the deliveries remembered by (destination broker,
message), each entry filled by the model's rule on a probe view that raises on any other read, give
the readable model's successors on every state a small reduced search expands, on a ZooKeeper row
before and after truncate-on-fetch and a KRaft row. The check can fail: a key without the
destination broker fails it, and a rule that reads outside the key is caught by the probe and left
to the rule."""

from __future__ import annotations

import importlib.util
import os
import types

import pytest

from spec.kafka.state import FETCH_RESPONSE
from spec.registry import build_model
from tests.test_symmetry import _reachable

BENCH = os.path.join(os.path.dirname(__file__), "..", "bench", "delivery_memo.py")
KEY = "key = (brokers[i], m)"

ROWS = [
    ("2.1.0", ["brokers=3", "records=1", "crashes=0"], 6),
    ("2.8.1", ["brokers=2", "records=2", "epochs=2", "crashes=1"], 7),
    ("kraft-4.1", ["brokers=3", "acks=-1", "min_isr=2", "unclean_shutdowns=1"], 5),
]


def _load(source: str | None = None) -> types.ModuleType:
    """The bench module, from its file or from ``source`` (a mutant of it)."""
    if source is None:
        spec = importlib.util.spec_from_file_location("delivery_memo", BENCH)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    module = types.ModuleType("delivery_memo_mutant")
    # the bench file, one line changed
    exec(compile(source, BENCH, "exec"),  # noqa: S102
         module.__dict__)
    return module


@pytest.mark.parametrize("protocol, constants, depth", ROWS, ids=[row[0] for row in ROWS])
@pytest.mark.slow  # every line it runs, cheaper fast tests run too (coverage by test)
def test_memoised_deliveries_equal_the_model(protocol, constants, depth):
    compared, entries, fallbacks = _load().verify((protocol, constants, depth))
    assert compared > 100 and entries > 20  # the memo was used, not only filled
    # every delivery of these rows reads only its destination broker and its message
    assert fallbacks == 0


def test_a_key_without_the_broker_fails():
    with open(BENCH) as f:
        source = f.read()
    assert source.count(KEY) == 1
    mutant = _load(source.replace(KEY, "key = m"))
    with pytest.raises(SystemExit, match="differ"):
        mutant.verify(("2.1.0", ["brokers=3", "records=1", "crashes=0"], 9))


def test_a_read_outside_the_key_falls_back_to_the_rule():
    memo = _load()
    model = build_model("kafka", ["brokers=3", "records=1", "crashes=0"], "2.1.0")
    receive = model._receive_fetch_state

    def reads_the_controller(s, m):
        s.controller.leader  # noqa: B018 (a read outside the key, nothing else)
        return receive(s, m)

    step = memo.memoised(reads_the_controller, model.brokers)
    pairs = [(s, m) for s in _reachable(model, 300) for m in s.network if m.kind == FETCH_RESPONSE]
    assert pairs
    for s, m in pairs:
        assert step(s, m) == receive(s, m)
    assert step.table and all(entry is memo.FALLBACK for entry in step.table.values())
