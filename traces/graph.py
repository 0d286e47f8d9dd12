"""The explored state graph of a small run as a networkx graph, written as Graphviz DOT (or SVG).

The search keeps its graph when asked (``SearchOptions(keep_graph=True)``): parent pointers by
global index plus every edge ``(parent index, child fingerprint, action id)``. Nodes are the
distinct states in discovery order (0 is an initial state), edges carry their action; states that
violate an invariant are drawn red, and a trace's path can be highlighted. ``label_states`` gives
each node the action that first reached it and a short summary of its state (per broker: role,
leader epoch, log and HW), rebuilt by expanding the model from its initial states.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable
from typing import Any

import networkx as nx

from checker import engines
from checker.fingerprint import fingerprint
from checker.invariant import Invariant
from checker.result import CheckResult
from checker.search import SearchOptions
from spec.errors import UsageError
from spec.model import Model
from traces.render import flat_state, fmt, is_message
from traces.values import hidden_fields
from traces.views import broker_views

DEFAULT_MAX_STATES = 5000


def explore(model: Model, invariants: Iterable[Invariant] = (),
            max_states: int = DEFAULT_MAX_STATES) -> CheckResult:
    options = SearchOptions(invariants=list(invariants), stop_at_first=False, keep_graph=True,
                            max_states=max_states)
    result = engines.run(model, options, "local")
    if result.graph is None:
        raise UsageError("the search kept no state graph")
    return result


def state_graph(result: CheckResult) -> nx.DiGraph:
    """Nodes: global indices with ``fp``, ``depth`` and ``parent``; edges: ``actions`` (names of
    every action)."""
    log, edges, table = result.graph
    fps, parents, _ = log.arrays()
    graph = nx.DiGraph()
    index_of: dict[int, int] = {}
    for i, fp in enumerate(fps.tolist()):
        parent = int(parents[i])
        depth = 0 if parent < 0 else graph.nodes[parent]["depth"] + 1
        graph.add_node(i, fp=int(fp), depth=depth, initial=parent < 0, parent=parent)
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


def state_summary(state: Any, width: int = 34) -> list[str]:
    """A few short lines that tell states apart: per broker ``b0 leader e2 |e0:1 e2:2 HW1`` (the HW
    bar as in ``kmc trace show``), else the shown variables ``name=value``, wrapped at ``width``."""
    views = broker_views(state)
    if views:
        lines = []
        for v in views:
            cells = " ".join(("|" if i == v.hw else "") + e.label() for i, e in enumerate(v.log))
            if v.hw >= v.leo:
                cells += " |" if cells else "|"
            epoch = "" if v.leader_epoch is None else f" e{v.leader_epoch}"
            lines.append(f"b{v.broker} {v.role or '-'}{epoch} {cells}".rstrip())
        root = type(state)
        for name, value in zip(getattr(state, "_fields", ()), state, strict=False):
            if name in hidden_fields(root) or not isinstance(value, tuple):
                continue
            if hasattr(value, "_fields"):  # the controller: its scalars
                # a defaulted field at its default says nothing
                inert = getattr(value, "_field_defaults", {})
                scalars = [f"{k}={fmt(v)}" for k, v in zip(value._fields, value, strict=True)
                           if k not in hidden_fields(type(value)) and isinstance(v, int)
                           and not (k in inert and v == inert[k])]
                lines.append(f"{name} {' '.join(scalars)}")
            # messages in flight: type and destination
            elif value and all(is_message(m) for m in value):
                sent = [type(m).__name__ + (f">{m.dst}" if hasattr(m, "dst") else "")
                        for m in value]
                lines.extend(textwrap.wrap(f"{name}: {', '.join(sent)}", width))
        return lines
    text = " ".join(f"{k}={fmt(v)}" for k, v in flat_state(state, show_hidden=False).items())
    return textwrap.wrap(text, width, break_long_words=True) or [""]


def label_states(graph: nx.DiGraph, model: Model) -> None:
    """Give each node ``label``: its index, the action that first reached it and ``state_summary``.

    The states are rebuilt by expanding the model from its initial states (nodes are in discovery
    order, so a parent is always expanded before its children)."""
    by_fp = {data["fp"]: node for node, data in graph.nodes(data=True)}
    states: dict[int, Any] = {}
    first_action: dict[int, str] = {}
    for state in model.init_states():
        node = by_fp.get(fingerprint(state))
        if node is not None:
            states.setdefault(node, state)
    for node in sorted(graph.nodes):
        state = states.get(node)
        if state is None:
            continue
        for act, successor in model.successors(state):
            child = by_fp.get(fingerprint(successor))
            if (child is not None and child not in states and graph.nodes[child].get("parent")
                == node):
                states[child] = successor
                first_action[child] = str(act)
    for node, data in graph.nodes(data=True):
        lines = [f"#{node}"
                 + (" initial" if data.get("initial") else " "
                                                           f"{first_action.get(node, '')}")]
        if node in states:
            lines += state_summary(states[node])
        data["label"] = "\\n".join(line.rstrip() for line in lines)


def to_dot(graph: nx.DiGraph, name: str = "states") -> str:
    """DOT source for a state graph, built with the ``graphviz`` package; nodes show ``label`` if
    set."""
    from traces.diagram import graphviz_package

    graphviz = graphviz_package()

    dot = graphviz.Digraph(name, graph_attr={"rankdir": "TB"},
                           node_attr={"shape": "box", "style": "rounded", "fontsize": "9",
                                      "fontname": "monospace"},
                           edge_attr={"fontsize": "8", "fontname": "monospace"})
    for node, data in graph.nodes(data=True):
        attrs = {"label": str(data.get("label", node))}
        if data.get("initial"):
            attrs["peripheries"] = "2"
        if data.get("violates"):
            attrs.update(style="rounded,filled", fillcolor="#ff9999", tooltip="violates "
                         + ", ".join(data["violates"]))
        if data.get("path"):
            attrs.update(color="blue", penwidth="2")
        dot.node(str(node), **attrs)
    for a, b, data in graph.edges(data=True):
        attrs = {"label": " | ".join(data["actions"])}
        if data.get("path"):
            attrs.update(color="blue", penwidth="2")
        dot.edge(str(a), str(b), **attrs)
    return dot.source
