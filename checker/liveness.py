"""Liveness on the explored state graph, with networkx.

A property has the form "from every reachable state where ``premise`` holds, some state where
``goal`` holds is reachable using only healing actions" (for Kafka: deliveries, fetches and
serves, not crashes or elections). The check builds the whole reachable graph once for every
liveness property of the run (so it is meant for small configurations; it is built in the one
level loop, ``checker.levels.run_levels``, so the run's budgets and Ctrl-C end it), keeps the
healing edges, and walks backwards from the goal states: every premise state not reached that way
is stuck, and the shortest path to the first such state (in breadth-first order) is the
counterexample.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import networkx as nx

from checker.invariant import Invariant
from checker.levels import BudgetExceeded, LevelSearch, run_levels
from checker.result import CheckResult
from checker.search import (
    SearchOptions,
    SuccessorView,
    search_result,
    trace_header,
    uses_bounds,
    validate_initial,
)
from checker.trace import Step, Trace
from spec.model import Model


@dataclass
class LivenessOutcome:
    prop: str
    holds: bool
    states: int
    edges: int
    trace: Trace | None = None


class _GraphSearch(LevelSearch):
    """The reachable graph built level by level in the one level loop
    (``checker.levels.run_levels``), so the run's budgets (time, states, depth) and Ctrl-C end it as
    they end any search. It keeps every state, which a safety engine deliberately does not: the
    property is checked on the whole graph afterwards. It writes no checkpoint (a graph is rebuilt,
    not resumed)."""

    writes_checkpoints = False

    def __init__(self, model: Model, options: SearchOptions, started: float) -> None:
        self.model = model
        self.options = options
        self._started = started
        self.successors_of = SuccessorView(model, symmetry=False).of  # the graph of concrete states
        self.index: dict[Any, int] = {}
        self.states: list[Any] = []
        self.graph = nx.DiGraph()
        self.level: list[int] = []
        self.depth = 1

    def add(self, state: Any, parent: int | None, action: Any) -> int:
        target = self.index[state] = len(self.states)
        self.states.append(state)
        self.graph.add_node(target, parent=parent, action=action)
        return target

    def queue(self, st: _GraphSearch) -> int:
        return len(self.level)

    def distinct(self, st: _GraphSearch) -> int:
        return len(self.states)

    def should_stop(self, st: _GraphSearch) -> bool:
        return False

    def expand_level(self, st: _GraphSearch) -> None:
        """Every state of the level with its edges; a new state past ``--max-states`` abandons the
        graph."""
        max_states = self.options.max_states
        graph, index = self.graph, self.index
        following: list[int] = []
        for source in self.level:
            for _pos, act, succ in self.successors_of(self.states[source])[1]:
                target = index.get(succ)
                if target is None:
                    if max_states is not None and len(self.states) >= max_states:
                        raise BudgetExceeded(f"state budget {max_states} reached")
                    target = self.add(succ, source, act)
                    following.append(target)
                if not graph.has_edge(source, target):
                    graph.add_edge(source, target, actions=[act])
                else:
                    graph.edges[source, target]["actions"].append(act)
        self.level = following
        if following:
            self.depth += 1

    def finish(self, st: _GraphSearch, reason: str | None, checkpoint_file: str
               | None) -> CheckResult:
        return search_result(self.model, [], found={}, deadlock=None, trace_of=None,
                             distinct_states=len(self.states),
                             states_generated=self.graph.number_of_edges(), depth=self.depth,
                             seconds=self.elapsed(), reason=reason, engine="local",
                             queue=len(self.level))


def explore_graph(model: Model, options: SearchOptions | None = None,
                  started: float | None = None) -> tuple[nx.DiGraph, list[Any], str | None]:
    """The reachable graph: nodes are breadth-first indices, edges carry the action.

    Returns the graph, the states by index and the budget that cut the exploration short (None: the
    graph is whole). ``started`` is the run's start on the monotonic clock (``--max-seconds`` counts
    the whole run)."""
    options = options or SearchOptions()
    inits = list(model.init_states())
    validate_initial(model, inits)
    search = _GraphSearch(model, options, time.monotonic() if started is None else started)
    bounded = uses_bounds(model)
    for state in inits:
        if (not bounded or model.within_bounds(state)) and state not in search.index:
            search.level.append(search.add(state, None, None))
    result = run_levels(search, search)
    return search.graph, search.states, result.reason


def check_leads_to(model: Model, prop: Invariant, options: SearchOptions, graph: nx.DiGraph,
                   states: list[Any]) -> LivenessOutcome:
    """Check ``prop`` on the whole reachable graph (``explore_graph``)."""
    healing = prop.healing or (lambda act: True)
    healing_graph = nx.DiGraph()
    healing_graph.add_nodes_from(graph.nodes)
    healing_graph.add_edges_from(
        (u, v) for u, v, data in graph.edges(data=True) if any(healing(a) for a in data["actions"])
    )
    goals = [i for i, s in enumerate(states) if prop.goal(s)]
    # every node from which a goal is reachable by healing edges: a backward walk from the goals
    can_heal: set[int] = set(goals)
    reverse = healing_graph.reverse(copy=False)
    frontier = list(goals)
    while frontier:
        node = frontier.pop()
        for pred in reverse.successors(node):
            if pred not in can_heal:
                can_heal.add(pred)
                frontier.append(pred)
    stuck = next((i for i, s in enumerate(states) if i not in can_heal and prop.premise(s)), None)
    outcome = LivenessOutcome(prop.name, stuck is None, len(states), graph.number_of_edges())
    if stuck is not None:
        outcome.trace = _path_trace(model, graph, states, stuck, prop, options)
    return outcome


def _path_trace(model: Model, graph: nx.DiGraph, states: list[Any], node: int, prop: Invariant,
                options: SearchOptions) -> Trace:
    steps: list[Step] = []
    while graph.nodes[node]["parent"] is not None:
        steps.append(Step(graph.nodes[node]["action"], states[node]))
        node = graph.nodes[node]["parent"]
    steps.reverse()
    last = steps[-1].state if steps else states[node]
    why = prop.why(last) if prop.explain else (
        f"{prop.name}: from this state no state where the goal holds is reachable by healing "
        "actions alone"
    )
    return Trace(trace_header(model, options), states[node], tuple(steps), prop.name, len(steps),
                 why)
