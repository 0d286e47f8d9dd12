"""TwoPhase.tla against TLC 2.18's published figures, and the seeded commit-guard bug."""

import pytest

from checker.bfs import check
from checker.result import Verdict
from checker.search import SearchOptions
from invariants.registry import for_family
from spec.two_phase import TwoPhase

INVARIANTS = list(for_family("two-phase").values())


@pytest.mark.parametrize(
    ("rm", "distinct", "generated", "depth"),
    [(3, 288, 1146, 11), (5, 8832, None, None),
     # 3.5 s (RM=3's TLC figures are the fast pin)
     pytest.param(7, 296448, 2744706, 23, marks=pytest.mark.slow)],
)
def test_counts_match_tlc(rm, distinct, generated, depth):
    result = check(TwoPhase(rm), SearchOptions(invariants=INVARIANTS))
    assert result.verdict is Verdict.HOLDS
    assert result.distinct_states == distinct
    if generated is not None:
        assert result.states_generated == generated
        assert result.depth == depth


def test_seeded_bug_has_a_three_step_shortest_trace():
    result = check(TwoPhase(3, commit_guard=False), SearchOptions(invariants=INVARIANTS))
    assert result.verdict is Verdict.VIOLATED
    (violation,) = result.violations
    assert violation.invariant == "TCConsistent"
    assert violation.length == 3
    steps = [step.action.name for step in violation.trace.steps]
    assert steps[0] == "TMCommit"
    assert set(steps[1:]) == {"RMChooseToAbort", "RMRcvCommitMsg"}
    # the trace is a real behaviour: replaying it reaches the violating state
    state = violation.trace.initial
    for step in violation.trace.steps:
        assert (step.action, step.state) in list(TwoPhase(3, commit_guard=False).successors(state))
        state = step.state
    assert not INVARIANTS[0].holds(state)


def test_continue_mode_reports_the_same_shortest_length():
    result = check(TwoPhase(3, commit_guard=False),
                   SearchOptions(invariants=INVARIANTS, stop_at_first=False))
    assert result.verdict is Verdict.VIOLATED
    assert [v.length for v in result.violations] == [3]
    # the whole space was explored: more distinct states than the stop-at-first run
    first = check(TwoPhase(3, commit_guard=False), SearchOptions(invariants=INVARIANTS))
    assert result.distinct_states > first.distinct_states
