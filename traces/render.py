"""Printing a trace with rich: each step names its action and shows only what changed
(old -> new), and for Kafka-like models the per-broker logs are drawn after every step that touched
them, one row a broker, so divergence is visible at a glance:

    broker  role     epoch  0      1      2     HW  LEO
    1       leader   2      e1:0   e1:1  |      1   2
    2       follower 2      e1:0   e2:2         1   2

Each cell is ``e<epoch>:<record>``; a bar marks the HW; cells where this log differs from another
replica's are red, and cells below the HW are bold (committed as far as this replica knows).
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from checker.trace import Trace
from traces.values import field_set, hidden_fields
from traces.views import BrokerView, broker_views, diverging_offsets, named


def is_message(value: Any) -> bool:
    """A message in flight: a record with a destination, or a request to the controller (a sender
    only)."""
    return (isinstance(value, tuple) and hasattr(value, "_fields")
            and (hasattr(value, "dst") or hasattr(value, "src")))


def fmt(value: Any, show_hidden: bool = False) -> str:
    """A compact text form of a state value: records ``(id=0, epoch=2)``, tuples ``[..]``, sets
    ``{..}``.

    Ghost fields of a record (``GHOST_FIELDS`` of its type) are left out unless ``show_hidden``.
    """
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        kind = type(value)
        skip = () if show_hidden else hidden_fields(kind)
        return "(" + ", ".join(f"{k}={fmt(named(kind, k, v), show_hidden)}"
                               for k, v in zip(value._fields, value, strict=True)
                               if k not in skip) + ")"
    if isinstance(value, tuple):
        return "[" + ", ".join(fmt(v, show_hidden) for v in value) + "]"
    if isinstance(value, frozenset):
        return "{" + ", ".join(sorted((fmt(v, show_hidden) for v in value),
                                      key=lambda t: (len(t), t))) + "}"
    return str(value)


def _per_broker(value: Any) -> bool:
    """An element of a per-broker tuple: a broker record, or a log (a tuple of records).

    Messages in flight (records with a ``dst``) and ghost sets of plain tuples are not per broker.
    """
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return not is_message(value)
    return isinstance(value, tuple) and all(hasattr(v, "_fields") for v in value)


def flat_state(state: Any, show_hidden: bool = True) -> dict[str, Any]:
    """Variable name -> value, one level into the per-replica tuples of the state.

    A record becomes one entry a field (``quorum_state.leader``); a top-level tuple of records or of
    tuples is indexed by broker id (``brokers[0].hw``; ``replica_state[1].hw`` in a model numbering
    replicas from 1); anything deeper stays whole. Without ``show_hidden``, the fields a state type
    declares as ghosts or bound counters (``GHOST_FIELDS``, ``BOOKKEEPING_FIELDS``) are left out.
    """
    out: dict[str, Any] = {}
    views = broker_views(state)
    ids = [v.broker for v in views] if views else None

    def label(i: int, length: int) -> int:
        return ids[i] if ids is not None and length == len(ids) else i

    def record(value: Any, prefix: str, top: bool) -> None:
        skip = () if show_hidden else hidden_fields(type(value))
        for name, item in zip(value._fields, value, strict=True):
            if name in skip:
                continue
            key = f"{prefix}{name}"
            item = named(type(value), name, item)
            if isinstance(item, tuple) and hasattr(item, "_fields"):
                record(item, key + ".", False)
            elif top and isinstance(item, tuple) and item and all(_per_broker(v) for v in item):
                for i, element in enumerate(item):
                    if hasattr(element, "_fields"):
                        record(element, f"{key}[{label(i, len(item))}].", False)
                    else:
                        out[f"{key}[{label(i, len(item))}]"] = element
            else:
                out[key] = item

    if isinstance(state, tuple) and hasattr(state, "_fields"):
        record(state, "", True)
    else:
        out["state"] = state
    return out


def state_diff(before: Any, after: Any, show_hidden: bool = True) -> list[tuple[str, Any, Any]]:
    """(variable, old, new) for every variable that changed, by name."""
    old, new = flat_state(before, show_hidden), flat_state(after, show_hidden)
    return [(k, old.get(k), new.get(k)) for k in dict.fromkeys([*old, *new]) if old.get(k)
            != new.get(k)]


def broker_index(state: Any, broker: int) -> int:
    """Position of ``broker`` in per-broker tuples: from the model's views, else ``broker - 1``."""
    views = broker_views(state)
    if views:
        for view in views:
            if view.broker == broker:
                return view.index
        raise KeyError(broker)
    return broker - 1


def _for_broker(diff: list[tuple[str, Any, Any]], broker: int,
                index: int) -> list[tuple[str, Any, Any]]:
    """The changes that concern one broker: keys indexed by its id, and position ``index`` of
    per-broker lists."""
    out = []
    for key, old, new in diff:
        first = re.search(r"\[(\d+)\]", key)
        if first is not None:
            if int(first.group(1)) == broker:
                out.append((key, old, new))
        elif (isinstance(old, tuple) and isinstance(new, tuple) and not hasattr(old, "_fields")
              and len(old) == len(new) > index and not any(isinstance(v, tuple) for v in old)):
            if old[index] != new[index]:
                out.append((f"{key}[{broker}]", old[index], new[index]))
    return out


def _record_label(value: Any, show_hidden: bool = False) -> str:
    kind = type(value)
    skip = {"kind"} | (set() if show_hidden else set(hidden_fields(kind)))
    fields = ", ".join(f"{k}={fmt(named(kind, k, v), show_hidden)}"
                       for k, v in zip(value._fields, value, strict=True)
                       if k not in skip)
    return f"{type(value).__name__}({fields})"


def _is_record_bag(value: Any) -> bool:
    return (isinstance(value, tuple) and not hasattr(value, "_fields")
            and all(hasattr(v, "_fields") for v in value))


def _change_line(key: str, old: Any, new: Any, show_hidden: bool = False) -> Text:
    if (_is_record_bag(old) and _is_record_bag(new) and (old or new)
        and any(is_message(v) for v in old + new)):
        # a set of messages: what was sent and what was consumed
        line = Text(f"  {key}: ")
        gone = Counter(old) - Counter(new)
        came = Counter(new) - Counter(old)
        parts = [("- " + _record_label(v, show_hidden), "red") for v in gone.elements()]
        parts += [("+ " + _record_label(v, show_hidden), "bold green") for v in came.elements()]
        for i, (text, style) in enumerate(parts):
            if i:
                line.append("; ")
            line.append(text, style=style)
        return line
    line = Text(f"  {key}: ")
    line.append(fmt(old, show_hidden), style="red")
    line.append(" -> ")
    line.append(fmt(new, show_hidden), style="bold green")
    return line


def log_table(views: list[BrokerView], only: int | None = None, changed: set[int]
              | None = None) -> Table:
    """The per-broker logs of one state as a rich table."""
    diverging = diverging_offsets(views)
    width = max((v.leo for v in views), default=0)
    table = Table(box=None, pad_edge=False, show_header=True, header_style="dim")
    for column in ("broker", "role", "epoch"):
        table.add_column(column)
    for offset in range(width):
        table.add_column(str(offset))
    table.add_column("HW", justify="right")
    table.add_column("LEO", justify="right")
    with_cache = any(v.epoch_cache for v in views)
    if with_cache:
        table.add_column("epoch cache")
    with_fetcher = any(v.fetcher for v in views)
    if with_fetcher:
        table.add_column("fetcher")
    with_generation = any(v.broker_epoch is not None for v in views)
    if with_generation:
        table.add_column("broker epoch", justify="right")
    for view in views:
        if only is not None and view.broker != only:
            continue
        cells: list[Any] = []
        for offset in range(width):
            if offset >= view.leo:
                cells.append(Text("|" if offset == view.hw else "", style="yellow"))
                continue
            style = "bold" if offset < view.hw else "dim"
            if offset in diverging.get(view.broker, ()):
                style = "bold white on red"
            cell = Text("|" if offset == view.hw else "", style="yellow")
            cell.append(view.log[offset].label(), style=style)
            cells.append(cell)
        name = Text(str(view.broker), style="bold cyan" if changed and view.broker in changed
                    else "")
        role = Text(view.role, style="green" if view.role == "leader"
                    else ("red" if view.role == "offline" else ""))
        epoch = "" if view.leader_epoch is None else str(view.leader_epoch)
        row = [name, role, epoch, *cells, str(view.hw), str(view.leo)]
        if with_cache:
            row.append(" ".join(f"e{e}@{o}" for e, o in view.epoch_cache))
        if with_fetcher:
            row.append(Text(view.fetcher, style="bold red" if view.fetcher == "none" and view.role
                            == "follower" else ""))
        if with_generation:
            row.append("" if view.broker_epoch is None else str(view.broker_epoch))
        table.add_row(*row)
    return table


def _changed_brokers(before: list[BrokerView] | None, after: list[BrokerView] | None) -> set[int]:
    if not before or not after:
        return set()
    return {a.broker for a, b in zip(after, before, strict=False) if a != b}


def _protocol_features(header: dict[str, Any]) -> dict[str, Any] | None:
    """The feature flags the header's protocol has by itself (None: unknown, or no protocol)."""
    if not header.get("protocol"):
        return None
    try:
        from spec.registry import build_model

        base = build_model(str(header.get("model")), [], str(header["protocol"]),
                           []).describe().get("features")
    except Exception:  # an unknown model or protocol: show every flag
        return None
    return base if isinstance(base, dict) else None


def describe_header(trace: Trace) -> str:
    h = trace.header
    parts = [f"model {h.get('model')}"]
    if h.get("protocol"):
        parts.append(f"protocol {h['protocol']}")
    consts = h.get("constants") or {}
    if consts:
        parts.append(", ".join(f"{k}={v}" for k, v in consts.items()))
    features = h.get("features") or {}
    if isinstance(features, dict) and features:
        base = _protocol_features(h)
        if base is None:
            parts.append("features " + ", ".join(f"{k}={'on' if v else 'off'}"
                                                 for k, v in features.items()))
        else:
            changed = [f"{k}={'on' if v else 'off'}" for k, v in features.items() if base.get(k)
                       != v]
            parts.append(f"features of {h['protocol']}"
                         + (" with " + ", ".join(changed) if changed else ""))
    if h.get("checker_version"):
        parts.append(f"{h.get('checker', 'kmc')} {h['checker_version']}")
    return "; ".join(parts)


#: action parameters that name a broker
BROKER_PARAMS = ("broker", "leader", "follower", "replica", "newLeader")
#: per-broker fields that the log table draws (role, log, HW, LEO, epoch, epoch cache, fetcher,
#: broker epoch)
TABLE_FIELDS = frozenset({"alive", "up", "online", "log", "records", "hw", "high_watermark",
                          "cache", "epoch_cache", "epochs", "leader_epoch", "epoch", "fetch",
                          "fetcher", "broker_epoch"})


def _in_log_table(key: str) -> bool:
    """``brokers[0].hw``: a per-broker variable the log table shows (the initial state lists it only
    with --full)."""
    match = re.fullmatch(r"[A-Za-z_]\w*\[\d+\]\.(\w+)", key)
    return match is not None and match.group(1) in TABLE_FIELDS


def _record_types(trace: Trace) -> list[type]:
    """The record classes the trace's states are built from, in order of first appearance."""
    found: dict[type, None] = {}

    def walk(value: Any) -> None:
        if isinstance(value, tuple):
            if hasattr(value, "_fields"):
                found.setdefault(type(value))
            for item in value:
                walk(item)
        elif isinstance(value, frozenset):
            for item in value:
                walk(item)

    for state in trace.states:
        walk(state)
    return list(found)


def legend(trace: Trace, show_hidden: bool = False) -> list[str]:
    """What the abbreviations of ``print_trace`` mean, and which variables it hides (computed from
    the trace)."""
    lines = []
    views = broker_views(trace.initial)
    if views:
        ids = [v.broker for v in views]
        per_broker = next((name for name, value in zip(trace.initial._fields, trace.initial,
                                                       strict=True)
                           if isinstance(value, tuple) and len(value) == len(ids)
                           and all(map(_per_broker, value))), None)
        where = [f"{per_broker}[N]"] if per_broker else []
        params = dict.fromkeys(k for step in trace.steps for k, _ in step.action.params
                               if k in BROKER_PARAMS)
        if params:
            where.append(", ".join(f"{k}=N" for k in params) + " in actions")
        if any(is_message(v) and hasattr(v, "dst") for state in trace.states
               for v in getattr(state, "network", ()) or ()):
            where.append("src/dst=N in messages")
        where.append("'broker N' in diagrams")
        lines.append(f"brokers are numbered {', '.join(map(str, ids))} everywhere: broker N is "
                     f"{', '.join(where)}")
        lines.append("logs: eE:R = record R written in leader epoch E; | = the high watermark "
                     "(HW), records left of it are committed; LEO = log end offset; epoch = the "
                     "leader epoch the broker knows; epoch cache eE@O = epoch E starts at offset "
                     "O; ISR = in-sync replicas; -1 = none")
    if not show_hidden:
        root = type(trace.initial)
        counters = (sorted(field_set(root, "BOOKKEEPING_FIELDS"), key=root._fields.index)
                    if hasattr(root, "_fields") else [])
        ghosts = []
        for cls in _record_types(trace):
            names = [n for n in cls._fields if n in field_set(cls, "GHOST_FIELDS")]
            # a state field with a default (a model's optional part, e.g. Kafka's clients) that
            if cls is root:
                # no state of the trace changes from it is not part of this trace's story
                defaults = getattr(root, "_field_defaults", {})
                names = [n for n in names if n not in defaults
                         or any(getattr(state, n) != defaults[n] for state in trace.states)]
            if names:
                ghosts.append(", ".join(names) if cls is root else f"{', '.join(names)} of "
                                                                   f"{cls.__name__}")
        parts = []
        if counters:
            parts.append("bound counters " + ", ".join(counters))
        if ghosts:
            parts.append("ghost variables " + "; ".join(ghosts))
        if parts:
            lines.append("hidden (--all shows them): " + "; ".join(parts))
    return lines


def print_trace(console: Console, trace: Trace, full: bool = False, broker: int | None = None,
                logs: bool = True, show_hidden: bool = True, show_legend: bool = False) -> None:
    """Step by step: the action, what changed, and the broker logs when they changed.

    ``show_hidden`` False leaves out ghost variables and bound counters (``kmc trace show`` without
    ``--all``); ``show_legend`` starts with what the abbreviations mean.
    """
    views = broker_views(trace.initial) if logs else None
    console.print(Text(f"State 1: initial state  ({describe_header(trace)})", style="bold"))
    if show_legend:
        for line in legend(trace, show_hidden):
            console.print(Text("  legend: " + line, style="dim"), soft_wrap=True)
    empty = []
    for key, value in flat_state(trace.initial, show_hidden).items():
        if broker is not None and views is not None and "[" in key:
            continue
        if views and not full and _in_log_table(key):
            continue
        if not full and isinstance(value, tuple) and not value:
            # nothing in flight, no pending diverging epoch, no consumers: named on one line
            empty.append(key)
            continue
        console.print(f"  {key} = {fmt(value, show_hidden)}")
    if empty:
        console.print(Text(f"  empty: {', '.join(empty)}", style="dim"), soft_wrap=True)
    if views:
        console.print(log_table(views, broker))
    previous, previous_views = trace.initial, views
    violation = trace.violation_index if trace.invariant else None
    for number, step in enumerate(trace.steps, start=1):
        title = Text(f"State {number + 1}: ", style="bold") + Text(f"step {number}, ", style="dim")
        title.append(str(step.action), style="bold cyan")
        console.print(title)
        diff = state_diff(previous, step.state, show_hidden)
        if broker is not None:
            diff = _for_broker(diff, broker, broker_index(trace.initial, broker))
        if full:
            changed = {key for key, _, _ in diff}
            for key, value in flat_state(step.state, show_hidden).items():
                if key in changed:
                    old = next(o for k, o, _ in diff if k == key)
                    console.print(_change_line(key, old, value, show_hidden))
                else:
                    console.print(f"  {key} = {fmt(value, show_hidden)}", style="dim")
        else:
            for key, old, new in diff:
                console.print(_change_line(key, old, new, show_hidden))
            if not diff:
                console.print("  (no change)" if show_hidden else "  (no change to a shown "
                                                                  "variable)", style="dim")
        current_views = broker_views(step.state) if logs else None
        if current_views and (current_views != previous_views or number == violation or full):
            console.print(log_table(current_views, broker,
                                    _changed_brokers(previous_views, current_views)))
        previous, previous_views = step.state, current_views
    if trace.invariant:
        where = trace.violation_index if trace.violation_index is not None else trace.length
        what = ("A deadlock is reached" if trace.invariant == "deadlock"
                else f"Invariant {trace.invariant} is violated")
        console.print(Text(f"{what} in state {where + 1} (after step {where}).", style="bold red"))
        if trace.explanation:
            console.print(f"  {trace.explanation}")
