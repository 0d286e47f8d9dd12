"""The Kafka search's memories on its hot path give what computing afresh gives (issue 35): ``--reduce dead``'s
verdicts by (follower, answer) and its answers by network (``spec.kafka.dead.DeadMessages.reduce``), the renaming
cache keyed by ids (``spec.kafka.symmetry._permute``), and the local engine's stored forms of successors met from
several states (``checker.bfs.LocalBFS._expand``). Each is checked against the form computed with nothing
remembered, on sampled reachable states of a ZooKeeper and a KRaft row, warm caches included."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from checker import bfs
from checker.search import SearchOptions, search_canonical
from spec.kafka import symmetry as kafka_symmetry
from spec.registry import build_model
from tests.test_symmetry import _reachable

ROWS = [
    ("2.1.0", ["brokers=3", "records=1", "crashes=0"]),
    ("kraft-4.1", ["brokers=3", "acks=-1", "min_isr=2", "unclean_shutdowns=1"]),
    ("kraft-3.5", ["brokers=2", "records=2", "unclean_shutdowns=1", "alters=2", "alter_losses=1"]),
]


def _afresh(reducer, state):
    """``state`` without its dead messages, every verdict computed now (``dead`` with its own memory emptied)."""
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
        for _, succ in model.successors(state):  # siblings share the parent's network and brokers: warm memory
            reduced = reducer.reduce(succ)
            assert reduced == _afresh(reference, succ)
            dropped += reduced is not succ
    assert dropped  # some answers were dead


@pytest.mark.parametrize("protocol,consts", ROWS[:2])
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


@pytest.mark.parametrize("protocol,consts", ROWS[:2])
def test_the_engines_remembered_forms_keep_the_plain_dictionary(protocol, consts):
    """``_expand`` under --symmetry --reduce dead takes a successor's stored form from its memory when it met the
    successor before: the level's dictionary must be the one of every successor's form computed afresh, the first
    occurrence of each kept, in discovery order; and the memory was used."""
    model = build_model("kafka", consts, protocol)
    options = SearchOptions(symmetry=True, reduce="dead")
    form = search_canonical(model, options)
    frontier = [form(s) for s in _reachable(model, 1500)[-400:]]
    expected = {}
    for index, state in enumerate(frontier):
        for act, succ in model.successors(state):
            image = form(succ)
            expected.setdefault(hash(image), (image, index, act))
    engine = bfs.LocalBFS(model, options)
    calls = []
    engine.canonical = lambda s: calls.append(s) or form(s)
    engine._started = 0.0
    st = bfs.SearchState()
    fresh = engine._expand(st, frontier, 0, 0)
    assert list(fresh.items()) == list(expected.items())
    generated = sum(len(model.successors(s)) for s in frontier)
    assert st.generated == generated
    # a successor whose form is not itself and that several states meet is computed once (the memory holds it) ...
    met = Counter(t for s in frontier for _, t in model.successors(s) if form(t) != t)
    assert any(count > 1 for count in met.values())
    computed = Counter(calls)
    assert all(computed[t] == 1 for t in met)
