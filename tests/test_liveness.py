"""Liveness on the state graph: premise states must reach a goal state by healing actions alone."""

from checker import engines
from checker.invariant import LIVENESS, Invariant
from checker.result import Verdict
from checker.search import SearchOptions
from tests.test_engine import Grid


def leads_to(healing):
    return Invariant(
        "reaches-corner", "every state can reach (n, n) by healing actions", None, kind=LIVENESS,
        premise=lambda s: True, goal=lambda s: s.x == s.y == 2, healing=healing,
    )


def test_liveness_holds_when_every_state_can_heal():
    result = engines.run(Grid(2), SearchOptions(invariants=[leads_to(lambda a: True)]))
    assert result.verdict is Verdict.HOLDS
    assert result.extra["property_forms"]["reaches-corner"].startswith("liveness")


def test_liveness_violation_has_the_shortest_trace_to_a_stuck_state():
    # only Inc(var=1) heals: a state with y < 2 can never reach the corner
    result = engines.run(Grid(2), SearchOptions(invariants=[leads_to(lambda a: a.param("var") == 1)]))
    assert result.verdict is Verdict.VIOLATED
    (violation,) = result.violations
    assert violation.kind == "liveness" and violation.length == 0  # the initial state already is stuck
    assert int(result.exit_code) == 13


def test_liveness_with_state_budget_is_undetermined():
    result = engines.run(Grid(5), SearchOptions(invariants=[leads_to(lambda a: True)], max_states=4))
    assert result.verdict is Verdict.UNDETERMINED
