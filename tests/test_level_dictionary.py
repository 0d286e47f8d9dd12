"""The level's deduplication: one dictionary of the level's fingerprints while the level is small
(``checker.bfs._Level.seen``), block-wise (``checker.visited.LevelFingerprints``) once it outgrows
the objects a frontier store keeps, or from the start when memory is short. Whichever way, the same
counts, the same parent log (so the same first occurrences) and the same counterexamples."""

from dataclasses import replace

import pytest

from checker import bfs, visited
from checker import frontier as frontier_module
from checker.search import RecordParentLog, SearchOptions
from invariants.registry import for_family
from spec.registry import build_model
from spec.two_phase import TwoPhase

#: ``checker.bfs`` settings of each mode: by default every level here fits its dictionary and is
#: absorbed at once; with a small ``_ABSORB_AT`` the dictionary's blocks are absorbed a few at a
#: time; with 64 objects a store the larger levels go block-wise part of the way through; with none,
#: every level from its start
MODES = {"dictionary": {}, "dictionary, small batches": {"_ABSORB_AT": 40},
         "switches": {"FRONTIER_OBJECT_STATES": 64}, "block-wise": {"FRONTIER_OBJECT_STATES": 0}}
#: the methods counted (taken once: a run's counting wrapper must not wrap the previous run's)
SWITCH, LOOKUP, ABSORB = (bfs.LocalBFS._go_block_wise, visited.LevelFingerprints.contains,
                          bfs.LocalBFS._absorb)
ABSORB_AT = bfs._ABSORB_AT


def _run(model, options, monkeypatch, settings):
    """(result, parent log, calls: levels that went block-wise midway, lookups against a
    LevelFingerprints, batches absorbed)."""
    for name, default in (("FRONTIER_OBJECT_STATES", None), ("_ABSORB_AT", ABSORB_AT)):
        monkeypatch.setattr(bfs, name, settings.get(name, default))
    calls = {"switch": 0, "lookup": 0, "absorb": 0}

    def counting_switch(self, level):
        calls["switch"] += 1
        return SWITCH(self, level)

    def counting_lookup(self, fps):
        calls["lookup"] += 1
        return LOOKUP(self, fps)

    def counting_absorb(self, st, level, fresh):
        calls["absorb"] += 1
        return ABSORB(self, st, level, fresh)

    monkeypatch.setattr(bfs.LocalBFS, "_go_block_wise", counting_switch)
    monkeypatch.setattr(bfs.LocalBFS, "_absorb", counting_absorb)
    monkeypatch.setattr(visited.LevelFingerprints, "contains", counting_lookup)
    seen = RecordParentLog()
    result = bfs.LocalBFS(model, replace(options, observer=seen)).run()
    return result, seen.log, calls


def _summary(result):
    return (result.verdict, result.distinct_states, result.states_generated, result.depth,
            [(v.invariant, v.trace.steps) for v in result.violations])


CASES = {
    "two-phase RM=5": (lambda: TwoPhase(5), {}),
    "two-phase RM=5 without the commit guard "
    "(violations)": (lambda: TwoPhase(5, commit_guard=False),
                     {"stop_at_first": False}),
    "two-phase RM=6 --symmetry": (lambda: TwoPhase(6), {"symmetry": True}),
    "tla:Kip320 "
    "R2L2M2E2": (lambda: build_model("tla:Kip320", ["Replicas=2", "LogSize=2", "MaxRecords=2",
                                                    "MaxLeaderEpoch=2"]), {}),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_level_as_one_dictionary_block_wise_or_switching_midway_gives_the_same_search(
    monkeypatch, case):
    make, extra = CASES[case]
    model = make()
    # levels of several blocks, so that a switch has blocks after it
    monkeypatch.setattr(frontier_module, "BLOCK", 32)
    options = SearchOptions(invariants=list(for_family(model.family).values()), **extra)
    runs = {mode: _run(model, options, monkeypatch, settings) for mode, settings in MODES.items()}
    expected, expected_log, _ = runs["dictionary"]
    for mode, (result, log, _) in runs.items():
        assert _summary(result) == _summary(expected), mode
        assert log == expected_log, mode
    # each mode took its own path: otherwise the comparison above compares a path with itself
    calls = {mode: run[2] for mode, run in runs.items()}
    assert calls["dictionary"]["switch"] == calls["dictionary"]["lookup"] == 0
    assert (calls["dictionary, small batches"]["switch"] == calls["dictionary, small "
                                                                  "batches"]["lookup"] == 0)
    assert calls["dictionary, small batches"]["absorb"] > calls["dictionary"]["absorb"]
    assert runs["switches"][2]["switch"] > 0 and runs["switches"][2]["lookup"] > 0
    assert runs["block-wise"][2]["switch"] == 0 and runs["block-wise"][2]["lookup"] > 0


def test_past_half_the_memory_budget_a_level_is_block_wise(monkeypatch):
    """Memory short (past ``SPILL_AT``): no level dictionary, whatever ``object_states`` allows."""
    model = TwoPhase(5)
    options = SearchOptions(invariants=list(for_family(model.family).values()))
    plain, plain_log, plain_calls = _run(model, options, monkeypatch, {})
    monkeypatch.setattr(bfs, "SPILL_AT", 0.0)
    pressed, pressed_log, pressed_calls = _run(model, options, monkeypatch, {})
    assert _summary(pressed) == _summary(plain) and pressed_log == plain_log
    assert plain_calls["lookup"] == 0 and pressed_calls["lookup"] > 0


@pytest.mark.parametrize("sort_keys_past", [0, 1 << 40])
def test_membership_with_and_without_sorting_the_keys(monkeypatch, sort_keys_past):
    """``visited.member`` sorts its keys only for a large array: both ways give the same mask, keys
    in any order, with keys below, between, equal to and above the array's values."""
    import numpy as np

    monkeypatch.setattr(visited, "SORT_KEYS_PAST", sort_keys_past)
    rng = np.random.default_rng(7)
    data = np.unique(rng.integers(-2**62, 2**62, 5000))
    keys = np.concatenate([data[::3], rng.integers(-2**62, 2**62, 4000),
                           [data[0] - 1, data[-1] + 1, data[-1]]])
    rng.shuffle(keys)
    expected = np.isin(keys, data)
    assert expected.any() and not expected.all()
    assert (visited.member(data, keys) == expected).all()
    fps = visited.FingerprintSet()
    fps.add(data)
    assert (fps.contains(keys) == expected).all()


def test_action_ids_look_up_known_actions_and_intern_new_ones_in_order():
    """``bfs.action_ids``: known actions looked up in C, a list with a new one (or the initial
    states' None) interned one by one in its order; the same ids as ``ActionTable.id`` gives each
    action in turn."""
    import numpy as np

    from checker.search import ActionTable
    from spec.model import Action

    a, b, c, d = (Action(name) for name in "abcd")
    table, reference = ActionTable([a, b]), ActionTable([a, b])
    for actions in ([b, a, b], [d, a, c, None, b], [c, c, d], [None], []):
        ids = bfs.action_ids(table, actions)
        assert ids.dtype == np.int32
        assert ids.tolist() == [-1 if act is None else reference.id(act) for act in actions]
        assert table.actions == reference.actions
    assert table.actions == [a, b, d, c]


@pytest.mark.parametrize("fold_at", [1, 7, bfs._FOLD_DEGREES_AT])
@pytest.mark.parametrize("coverage", [False, True])
def test_out_degrees_folded_in_batches_are_every_expanded_state_s(monkeypatch, fold_at, coverage):
    """The out-degree histogram (collected a state, folded in batches of ``_FOLD_DEGREES_AT``)
    counts each expanded state's successors once, whatever the batch and with ``--coverage`` (the
    hot loop's other branch)."""
    from collections import Counter

    from tests.test_cli_habits import reachable

    monkeypatch.setattr(bfs, "_FOLD_DEGREES_AT", fold_at)
    model = TwoPhase(4)
    engine = bfs.LocalBFS(model, SearchOptions(invariants=[], coverage=coverage))
    result = engine.run()
    _, generated, degrees = reachable(model)
    assert engine._degrees == dict(Counter(degrees))
    assert result.states_generated == generated and not engine._degree_list
    assert (result.out_degree.minimum, result.out_degree.maximum) == (min(degrees), max(degrees))
    assert (result.coverage is not None) == coverage
