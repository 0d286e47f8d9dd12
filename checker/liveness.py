"""Liveness on the explored state graph, with networkx.

A property has the form "from every reachable state where ``premise`` holds, some state where
``goal`` holds is reachable using only healing actions" (for Kafka: deliveries, fetches and
serves, not crashes or elections). The check builds the whole reachable graph (so it is meant for
small configurations), keeps the healing edges, and walks backwards from the goal states: every
premise state not reached that way is stuck, and the shortest path to the first such state (in
breadth-first order) is the counterexample.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import networkx as nx

from checker.invariant import Invariant
from checker.search import SearchOptions, SuccessorView, trace_header, uses_bounds, validate_initial
from checker.trace import Step, Trace
from spec.model import Model


@dataclass
class LivenessOutcome:
    prop: str
    holds: bool
    states: int
    edges: int
    trace: Trace | None = None
    truncated: bool = False


def explore_graph(model: Model, max_states: int | None = None) -> tuple[nx.DiGraph, list[Any], bool]:
    """The reachable graph: nodes are breadth-first indices, edges carry the action.

    Returns the graph, the states by index and whether ``max_states`` cut the exploration short.
    """
    inits = list(model.init_states())
    validate_initial(model, inits)
    bounded = uses_bounds(model)
    successors_of = SuccessorView(model, symmetry=False).of  # the graph of concrete states
    index: dict[Any, int] = {}
    states: list[Any] = []
    graph = nx.DiGraph()
    for state in inits:
        if (not bounded or model.within_bounds(state)) and state not in index:
            index[state] = len(states)
            states.append(state)
            graph.add_node(index[state], parent=None, action=None)
    cursor = 0
    truncated = False
    while cursor < len(states):
        source = cursor
        for _pos, act, succ in successors_of(states[source])[1]:
            target = index.get(succ)
            if target is None:
                if max_states is not None and len(states) >= max_states:
                    truncated = True
                    continue
                target = index[succ] = len(states)
                states.append(succ)
                graph.add_node(target, parent=source, action=act)
            if not graph.has_edge(source, target):
                graph.add_edge(source, target, actions=[act])
            else:
                graph.edges[source, target]["actions"].append(act)
        cursor += 1
    return graph, states, truncated


def check_leads_to(
    model: Model, prop: Invariant, options: SearchOptions, max_states: int | None = None
) -> LivenessOutcome:
    graph, states, truncated = explore_graph(model, max_states)
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
    outcome = LivenessOutcome(prop.name, stuck is None, len(states), graph.number_of_edges(), truncated=truncated)
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
        f"{prop.name}: from this state no state where the goal holds is reachable by healing actions alone"
    )
    return Trace(trace_header(model, options), states[node], tuple(steps), prop.name, len(steps), why)
