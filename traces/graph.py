"""The explored state graph of a small run as a networkx graph, written as Graphviz DOT.

The search keeps its graph when asked (``SearchOptions(keep_graph=True)``): parent pointers by
global index plus every edge ``(parent index, child fingerprint, action id)``. Nodes are the
distinct states in discovery order (0 is an initial state), edges carry their action; states that
violate an invariant are drawn red, and a trace's path can be highlighted.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import networkx as nx

from checker import engines
from checker.errors import UsageError
from checker.result import CheckResult
from checker.search import SearchOptions
from invariants.base import Invariant
from spec.model import Model

DEFAULT_MAX_STATES = 5000


def explore(model: Model, invariants: Iterable[Invariant] = (), max_states: int = DEFAULT_MAX_STATES) -> CheckResult:
    options = SearchOptions(invariants=list(invariants), stop_at_first=False, keep_graph=True, max_states=max_states)
    result = engines.run(model, options, "bfs", engines.EngineOptions())
    if result.graph is None:
        raise UsageError("the search kept no state graph")
    return result


def state_graph(result: CheckResult) -> nx.DiGraph:
    """Nodes: global indices with ``fp`` and ``depth``; edges: ``actions`` (names of every action)."""
    log, edges, table = result.graph
    fps, parents, _ = log.arrays()
    graph = nx.DiGraph()
    index_of: dict[int, int] = {}
    for i, fp in enumerate(fps.tolist()):
        parent = int(parents[i])
        depth = 0 if parent < 0 else graph.nodes[parent]["depth"] + 1
        graph.add_node(i, fp=int(fp), depth=depth, initial=parent < 0)
        index_of[int(fp)] = i
    for parent, child_fp, action_id in edges:
        child = index_of.get(int(child_fp))
        if child is None:  # outside the bounds: generated, not stored
            continue
        label = str(table.actions[action_id])
        if graph.has_edge(int(parent), child):
            graph.edges[int(parent), child]["actions"].append(label)
        else:
            graph.add_edge(int(parent), child, actions=[label])
    violating: dict[str, Any] = {}
    for violation in result.violations:
        trace = violation.trace
        violating.setdefault(violation.invariant, hash(trace.states[-1]))
    for name, fp in violating.items():
        node = index_of.get(fp)
        if node is not None:
            graph.nodes[node].setdefault("violates", []).append(name)
    return graph


def highlight_path(graph: nx.DiGraph, fingerprints: Iterable[int]) -> None:
    """Mark the nodes and edges of a path (the states of a trace, by fingerprint)."""
    by_fp = {data["fp"]: node for node, data in graph.nodes(data=True)}
    path = [by_fp.get(fp) for fp in fingerprints]
    for node in path:
        if node is not None:
            graph.nodes[node]["path"] = True
    for a, b in zip(path, path[1:], strict=False):
        if a is not None and b is not None and graph.has_edge(a, b):
            graph.edges[a, b]["path"] = True


def _q(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def to_dot(graph: nx.DiGraph, name: str = "states") -> str:
    """DOT text for a state graph (written here: pydot is not a dependency)."""
    lines = [f"digraph {_q(name)} {{", "  rankdir=TB;", "  node [shape=circle, fontsize=9, width=0.3];",
             "  edge [fontsize=8];"]
    for node, data in graph.nodes(data=True):
        attrs = [f"label={_q(str(node))}"]
        if data.get("initial"):
            attrs.append("shape=doublecircle")
        if data.get("violates"):
            attrs += ["style=filled", "fillcolor=\"#ff9999\"", f"tooltip={_q('violates ' + ', '.join(data['violates']))}"]
        if data.get("path"):
            attrs += ["color=blue", "penwidth=2"]
        lines.append(f"  {node} [{', '.join(attrs)}];")
    for a, b, data in graph.edges(data=True):
        attrs = [f"label={_q(' | '.join(data['actions']))}"]
        if data.get("path"):
            attrs += ["color=blue", "penwidth=2"]
        lines.append(f"  {a} -> {b} [{', '.join(attrs)}];")
    lines.append("}")
    return "\n".join(lines) + "\n"
