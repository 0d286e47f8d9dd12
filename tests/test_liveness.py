"""Liveness on the state graph: premise states must reach a goal state by healing actions alone."""

from checker import engines, liveness
from checker.invariant import LIVENESS, Invariant
from checker.liveness import explore_graph
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
    result = engines.run(Grid(2),
                         SearchOptions(invariants=[leads_to(lambda a: a.param("var") == 1)]))
    assert result.verdict is Verdict.VIOLATED
    (violation,) = result.violations
    # the initial state already is stuck
    assert violation.kind == "liveness" and violation.length == 0
    assert int(result.exit_code) == 13


def test_liveness_with_state_budget_is_undetermined():
    result = engines.run(Grid(5), SearchOptions(invariants=[leads_to(lambda a: True)],
                                                max_states=4))
    assert result.verdict is Verdict.UNDETERMINED


def test_the_graph_is_built_within_the_runs_time_budget():
    """The graph is built in the one level loop, so ``--max-seconds`` counts it too (it counts from
    the safety search's start): a run whose safety search used up the budget is undetermined, not
    checked on and on."""
    options = SearchOptions(invariants=[leads_to(lambda a: True)], max_seconds=60)
    safety = engines.get_engine("local").run(Grid(2), options, None)
    assert safety.verdict is Verdict.HOLDS
    safety.seconds = 61.0  # as if the safety search had taken 61 s of the 60
    result = engines.add_liveness(Grid(2), options, safety, options.liveness_properties())
    assert result.verdict is Verdict.UNDETERMINED
    assert (result.reason.startswith("time budget of 60 s ran out") and "state graph for "
                                                                        "reaches-corner"
            in result.reason)


def test_the_graph_is_built_once_for_every_property(monkeypatch):
    built = []
    explore = liveness.explore_graph

    def counting(*args, **kwargs):
        built.append(1)
        return explore(*args, **kwargs)

    monkeypatch.setattr(liveness, "explore_graph", counting)
    second = Invariant("reaches-corner-too", "again", None, kind=LIVENESS, premise=lambda s: True,
                       goal=lambda s: s.x == s.y == 2, healing=lambda a: a.param("var") == 1)
    result = engines.run(Grid(2), SearchOptions(invariants=[leads_to(lambda a: True), second],
                                                stop_at_first=False))
    assert len(built) == 1
    assert (result.verdict is Verdict.VIOLATED and [v.invariant for v in result.violations]
            == ["reaches-corner-too"])


def test_the_graph_holds_every_state_and_edge():
    graph, states, reason = explore_graph(Grid(2))
    assert reason is None and len(states) == 9 == graph.number_of_nodes()
    # each of the 9 states (x, y) in 0..2 steps to x+1 and to y+1 where it can: 2 * 2 * 3 edges
    assert graph.number_of_edges() == 12
