"""The Kafka search's memories on its hot path give what computing afresh gives (issue 35):
``--reduce dead``'s no-op verdicts by (follower, answer) (``spec.kafka.dead.DeadMessages._noop``)
and the renamings of brokers and networks (``spec.kafka.symmetry._permute``), each checked against
the form computed with nothing remembered, on sampled reachable states of a ZooKeeper and two KRaft
rows, warm memories included (siblings share their parent's brokers and messages). A memory keyed by
less than its answer reads fails them: ``_noop`` keyed by the answer alone, or a renaming keyed
without its permutation (both tried and reverted)."""

from __future__ import annotations

import random

import pytest

from spec.kafka import symmetry as kafka_symmetry
from spec.registry import build_model
from tests.test_symmetry import _reachable

ROWS = [
    ("2.1.0", ["brokers=3", "records=1", "crashes=0"]),
    ("kraft-4.1", ["brokers=3", "acks=-1", "min_isr=2", "unclean_shutdowns=1"]),
    ("kraft-3.5", ["brokers=2", "records=2", "unclean_shutdowns=1", "alters=2", "alter_losses=1"]),
]


def _afresh(reducer, state):
    """``state`` without its dead messages, every verdict computed now (``dead`` with its own memory
    emptied)."""
    kept = []
    for m in state.network:
        reducer._known.clear()
        if not (m.kind in reducer.kinds and reducer.dead(state, m)):
            kept.append(m)
    return state.with_(network=tuple(kept))


@pytest.mark.parametrize("protocol,consts", ROWS)
def test_reduce_with_its_memory_drops_what_dead_drops_afresh(protocol, consts):
    model = build_model("kafka", consts, protocol)
    reducer, reference = model.dead_messages(), model.dead_messages()
    rng = random.Random(35)
    dropped = 0
    for state in rng.sample(_reachable(model, 1500), 150):
        # siblings share the parent's network and brokers: warm memory
        for _, succ in model.successors(state):
            reduced = reducer.reduce(succ)
            assert reduced == _afresh(reference, succ)
            dropped += reduced is not succ
    assert dropped  # some answers were dead


@pytest.mark.parametrize("protocol,consts", ROWS[:2])
@pytest.mark.slow  # every line it runs, cheaper fast tests run too (coverage by test)
def test_the_renaming_cache_gives_the_renaming_made_afresh(protocol, consts):
    model = build_model("kafka", consts, protocol)
    rng = random.Random(36)
    renamed = 0
    for state in rng.sample(_reachable(model, 1500), 120):
        for _, succ in model.successors(state):
            warm = kafka_symmetry.canonical(succ)
            kafka_symmetry._RENAMED.clear()
            assert warm == kafka_symmetry.canonical(succ)
            renamed += warm is not succ
    assert renamed
