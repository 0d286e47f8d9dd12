"""Sequence diagrams of a trace: the messages between the brokers and the controller, step by step,
as Mermaid, Graphviz DOT or a self-contained SVG.

Events are derived from the steps, by data rather than code per action:

* a model whose state has a ``network`` (a tuple of message records with ``dst`` and, for broker
  requests, ``src``; a record with a ``src`` and no ``dst`` is a request to the controller, such as
  ``ControlledShutdown``) gets one arrow per message *sent* in a step, from its sender to its
  receiver, labelled with the message type and its fields (error codes by name); a step that only
  *consumes* a message it handles becomes a note over the receiver (``ReceiveFetch``,
  ``DeliverStopReplica``, ``ProcessControlledShutdown``), and messages a step throws away (a crash,
  a bounce, the controller dropping its queue to a bounced broker) a note over the actor;
* a model without one uses ``MESSAGE_RULES`` (action name -> sender, receiver, label templates);
* every other step is a note over its actor: ``ACTOR_RULES`` for controller or coordinator
  actions, else the broker named by the first of ``ACTOR_PARAMS`` in the action's parameters,
  else the broker whose state changed.
"""

from __future__ import annotations

import html
import textwrap
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from checker.trace import Trace
from traces.render import fmt, is_message
from traces.values import hidden_fields
from traces.views import broker_views, named

CONTROLLER = "controller"
#: actions of a participant that is not a broker
ACTOR_RULES: dict[str, str] = {
    "ElectLeader": CONTROLLER,
    "PreferredLeaderElection": CONTROLLER,
    "UncleanLeaderElection": CONTROLLER,
    "ControllerElectLeader": CONTROLLER,
    "ControllerShrinkIsr": CONTROLLER,
    "BumpLeaderEpoch": CONTROLLER,
    "ProcessBrokerChange": CONTROLLER,
    "ProcessControlledShutdown": CONTROLLER,
    "TMCommit": "TM",
    "TMAbort": "TM",
    "TMRcvPrepared": "TM",
}
#: parameters that name a broker (or a resource manager); the first of them in an action's
#: parameters acts
ACTOR_PARAMS = ("broker", "follower", "leader", "replica", "rm", "newLeader")
#: models without a network: action -> (sender, receiver, label); templates use the parameters
MESSAGE_RULES: dict[str, tuple[str, str, str]] = {
    "RMPrepare": ("RM {rm}", "TM", "Prepared"),
    "TMCommit": ("TM", "RMs", "Commit"),
    "TMAbort": ("TM", "RMs", "Abort"),
    "BecomeLeader": (CONTROLLER, "broker {changed}", "LeaderAndIsr(epoch={epoch}): lead"),
    "BecomeFollowerTruncateKip101": (CONTROLLER, "broker {replica}",
                                     "LeaderAndIsr(epoch={epoch}, leader={leader})"),
    "BecomeFollowerTruncateKip279": (CONTROLLER, "broker {replica}",
                                     "LeaderAndIsr(epoch={epoch}, leader={leader})"),
    "BecomeFollowerAndTruncateTo": (CONTROLLER, "broker {replica}",
                                    "LeaderAndIsr(epoch={epoch}, leader={leader})"),
    "FollowerReplicate": ("broker {leader}", "broker {follower}", "records"),
}
_HIDDEN_FIELDS = {"kind", "src", "dst"}
#: actions that handle a message addressed to one of the participants their parameters name (or, for
#: a controller action, to the controller); what else they consume is dropped
HANDLING_PREFIXES = ("Deliver", "Receive", "Serve", "Process", "Handle", "Rcv")


@dataclass(frozen=True)
class Event:
    step: int
    kind: str  # "message" or "note"
    src: str
    dst: str  # for a note: the participant it is over
    label: str


def _participant(kind: str, value: Any) -> str:
    return f"{kind} {value}"


def _network(state: Any) -> tuple | None:
    network = getattr(state, "network", None)
    if isinstance(network, tuple) and all(is_message(m) for m in network):
        return network
    return None


def _message_label(message: Any) -> str:
    """``FetchRequest(epoch=1, offset=0, last_epoch=-1)``: sender and receiver are the arrow's ends;
    ghost fields (``GHOST_FIELDS`` of the message type) are left out."""
    kind = type(message)
    hidden = _HIDDEN_FIELDS | hidden_fields(kind)
    fields = [f"{k}={fmt(named(kind, k, v))}" for k, v in zip(message._fields, message, strict=True)
              if k not in hidden]
    return f"{kind.__name__}({', '.join(fields)})"


def _sender(message: Any) -> str:
    src = getattr(message, "src", None)
    return CONTROLLER if src is None else _participant("broker", src)


def _receiver(message: Any) -> str:
    dst = getattr(message, "dst", None)
    return CONTROLLER if dst is None else _participant("broker", dst)


def _named_participants(action: Any) -> set[str]:
    """The participants an action acts as: the controller for a controller action, else the brokers
    its parameters name."""
    if ACTOR_RULES.get(action.name) == CONTROLLER:
        return {CONTROLLER}
    return {_participant("broker", v) for k, v in action.params if k in ACTOR_PARAMS}


def _handled(action: Any, consumed: Counter) -> Any:
    """The message ``action`` handles among those it consumed (None: it handles none of them)."""
    if not action.name.startswith(HANDLING_PREFIXES):
        return None
    names = _named_participants(action)
    return next((m for m in consumed.elements() if _receiver(m) in names), None)


def _short(message: Any, ends: bool = False) -> str:
    """A message by its type, its error if any and (``ends``) its ends:
    ``FetchResponse FENCED_LEADER_EPOCH (broker 0 to broker 1)``."""
    text = type(message).__name__
    error = named(type(message), "error", getattr(message, "error", None))
    if isinstance(error, int) and error:
        text += f" {error}"
    if ends:
        text += f" ({_sender(message)} to {_receiver(message)})"
    return text


def _changed_broker(before: Any, after: Any) -> Any:
    old, new = broker_views(before), broker_views(after)
    if old and new:
        for a, b in zip(old, new, strict=False):
            if a != b:
                return b.broker
    return None


def _actor(action: Any, before: Any, after: Any, broker_word: str) -> str:
    """The participant that acts: the controller for a controller action, else the broker named by
    the action's first broker parameter (a model lists the actor first:
    ``ShrinkIsr(leader, follower)`` is the leader's, ``SendFetch(follower, leader)`` the
    follower's), else the broker whose state changed."""
    if action.name in ACTOR_RULES:
        return ACTOR_RULES[action.name]
    for key, value in action.params:
        if key in ACTOR_PARAMS:
            return _participant("RM" if key == "rm" else broker_word, value)
    changed = _changed_broker(before, after)
    return _participant(broker_word, changed) if changed is not None else "system"


def events(trace: Trace) -> list[Event]:
    """The messages and notes of a trace, in step order."""
    out: list[Event] = []
    previous = trace.initial
    for number, step in enumerate(trace.steps, start=1):
        action, state = step.action, step.state
        before_net, after_net = _network(previous), _network(state)
        if before_net is not None and after_net is not None:
            sent = Counter(after_net) - Counter(before_net)
            consumed = Counter(before_net) - Counter(after_net)
            handled = _handled(action, consumed)
            dropped = consumed - Counter([handled]) if handled is not None else consumed
            for message in sent.elements():
                out.append(Event(number, "message", _sender(message), _receiver(message),
                                 _message_label(message)))
            if not sent and handled is not None:
                out.append(Event(number, "note", "", _receiver(handled),
                                 f"{action}: handles {_short(handled)}"))
            if dropped:
                actor = _actor(action, previous, state, "broker")
                lost = ", ".join(_short(m, ends=True) for m in dropped.elements())
                out.append(Event(number, "note", "", actor, f"{action}: drops {lost}"))
            elif not sent and handled is None:
                actor = _actor(action, previous, state, "broker")
                out.append(Event(number, "note", "", actor, str(action)))
        elif action.name in MESSAGE_RULES:
            src, dst, label = MESSAGE_RULES[action.name]
            values = {k: fmt(v) for k, v in action.params}
            values.setdefault("changed", _changed_broker(previous, state))
            try:
                out.append(Event(number, "message", src.format_map(values), dst.format_map(values),
                                 label.format_map(values)))
            except (KeyError, ValueError, IndexError):
                out.append(Event(number, "note", "", _actor(action, previous, state, "broker"),
                                 str(action)))
        else:
            out.append(Event(number, "note", "", _actor(action, previous, state, "broker"),
                             str(action)))
        previous = state
    return out


def participants(trace: Trace, evs: Sequence[Event]) -> list[str]:
    """The lanes, left to right: the controller (or any participant without a number, such as a
    two-phase TM, in order of appearance), then the numbered ones by kind and id: every broker of
    the model in id order, then resource managers ``RM 0``, ``RM 1``, ..."""
    names: list[str] = []
    views = broker_views(trace.initial)
    if any(CONTROLLER in (e.src, e.dst) for e in evs) or views:
        names.append(CONTROLLER)
    if views:
        names.extend(_participant("broker", v.broker) for v in views)
    for e in evs:
        for name in (e.src, e.dst):
            if name and name not in names:
                names.append(name)

    def numbered(name: str) -> tuple[str, int] | None:
        word, _, number = name.rpartition(" ")
        return (word, int(number)) if word and number.lstrip("-").isdigit() else None

    plain = [n for n in names if numbered(n) is None]
    return plain + sorted((n for n in names if numbered(n) is not None), key=lambda n: numbered(n)
                          or ("", 0))


def _ident(name: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in name)


def _footer(trace: Trace) -> str | None:
    if not trace.invariant:
        return None
    where = trace.violation_index if trace.violation_index is not None else trace.length
    return f"step {where}: {trace.invariant} violated"


def to_mermaid(trace: Trace) -> str:
    evs = events(trace)
    names = participants(trace, evs)
    lines = ["sequenceDiagram"]
    for name in names:
        lines.append(f"    participant {_ident(name)} as {name}")
    for e in evs:
        label = _mermaid_text(f"{e.step}. {e.label}")
        if e.kind == "message":
            lines.append(f"    {_ident(e.src)}->>{_ident(e.dst)}: {label}")
        else:
            lines.append(f"    Note over {_ident(e.dst)}: {label}")
    footer = _footer(trace)
    if footer and names:
        span = _ident(names[0]) if len(names) == 1 else f"{_ident(names[0])},{_ident(names[-1])}"
        lines.append(f"    Note over {span}: {_mermaid_text(footer)}")
    return "\n".join(lines) + "\n"


def _mermaid_text(text: str) -> str:
    # ';' and '#' end or escape a Mermaid statement; keep labels on one line
    return text.replace(";", ",").replace("#", "").replace("\n", " ")


def to_dot(trace: Trace) -> str:
    """A sequence diagram as Graphviz DOT, built with the ``graphviz`` package: one column a
    participant (in lane order, held by invisible edges), one row an event, so no two labels share a
    row."""
    graphviz = graphviz_package()
    evs = events(trace)
    names = participants(trace, evs)
    dot = graphviz.Digraph("sequence", graph_attr={"rankdir": "TB", "splines": "false",
                                                   "nodesep": "0.6", "ranksep": "0.5",
                                                   "newrank": "true"},
                           node_attr={"shape": "point", "width": "0.04", "color": "#999999"},
                           edge_attr={"fontsize": "10", "fontname": "monospace"})
    rows = len(evs)
    notes = {(names.index(e.dst), row): e for row, e in enumerate(evs, start=1) if e.kind == "note"}
    with dot.subgraph() as top:
        top.attr(rank="same")
        for col, name in enumerate(names):
            top.node(f"h{col}", name, shape="box", style="rounded", color="black",
                     fontname="monospace")
        for col in range(len(names) - 1):
            top.edge(f"h{col}", f"h{col + 1}", style="invis")
    for row in range(1, rows + 1):
        with dot.subgraph() as line:
            line.attr(rank="same")
            for col in range(len(names)):
                note = notes.get((col, row))
                if note is None:
                    line.node(f"p{col}_{row}")
                else:  # a note over a lane is a point of its lifeline
                    line.node(f"p{col}_{row}", _wrap_text(f"{note.step}. {note.label}", "\\n"),
                              shape="note", fontsize="10", fontname="monospace", color="#aaaa88",
                              style="filled", fillcolor="#ffffdd", width="0", height="0")
            for col in range(len(names) - 1):
                line.edge(f"p{col}_{row}", f"p{col + 1}_{row}", style="invis")
    for col in range(len(names)):
        chain = [f"h{col}"] + [f"p{col}_{row}" for row in range(1, rows + 1)]
        for a, b in zip(chain, chain[1:], strict=False):
            dot.edge(a, b, arrowhead="none", style="dashed", color="#bbbbbb", weight="1000")
    for row, e in enumerate(evs, start=1):
        if e.kind == "message":
            a, b = names.index(e.src), names.index(e.dst)
            dot.edge(f"p{a}_{row}", f"p{b}_{row}", label=_wrap_text(f"{e.step}. {e.label}", "\\n"))
    footer = _footer(trace)
    if footer:
        dot.attr(label=footer, labelloc="b", fontcolor="red")
    return dot.source


def graphviz_package() -> Any:
    """The ``graphviz`` package (a dependency of kmc), or EnvironmentMissingError (exit 69) naming
    the fix."""
    try:
        import graphviz
    except ImportError:
        from spec.errors import EnvironmentMissingError

        raise EnvironmentMissingError("the graphviz Python package is missing: pip install "
                                      "graphviz") from None
    return graphviz


def render_svg_with_graphviz(source: str) -> str:
    """SVG from DOT through Graphviz's ``dot`` program (EnvironmentMissingError, exit 69, when it is
    absent)."""
    from spec.errors import EnvironmentMissingError

    graphviz = graphviz_package()
    try:
        return graphviz.Source(source).pipe(format="svg", encoding="utf-8")
    except graphviz.ExecutableNotFound:
        raise EnvironmentMissingError("Graphviz's 'dot' program is not installed (apt-get install "
                                      "graphviz, brew install graphviz); --format dot writes the "
                                      "source instead") from None


# -- SVG: a layout that measures its text ----------------------------------------------------------
#: the SVG text is monospace at FONT_SIZE px: every character is CHAR_WIDTH wide (0.6 em, the
#: advance of DejaVu Sans Mono, Courier and Menlo), so a label's width is measured exactly from its
#: length
FONT_SIZE = 12
CHAR_WIDTH = 0.6 * FONT_SIZE
LINE_HEIGHT = 15
WRAP = 64  # characters a label line holds before it wraps (at a ", " or a space)
PAD = 14


def wrap_label(text: str, width: int = WRAP) -> list[str]:
    """A label cut into lines of at most ``width`` characters at spaces (a longer word stays
    whole)."""
    return textwrap.wrap(text, width, break_long_words=False, break_on_hyphens=False) or [""]


def _wrap_text(text: str, newline: str) -> str:
    return newline.join(wrap_label(text))


def text_width(line: str) -> float:
    return len(line) * CHAR_WIDTH


def lane_positions(names: Sequence[str], evs: Sequence[Event]) -> tuple[list[float], float]:
    """x of each lane and the total width, such that every header, message label and note fits: each
    gap between neighbouring lanes grows until the labels that span it fit between the lanes they
    join."""
    count = max(len(names), 1)
    half = [max(text_width(n) + 2 * PAD, 100) / 2 for n in names] or [50.0]
    gaps = [half[i] + half[i + 1] + PAD for i in range(count - 1)]
    left, right = half[0] + PAD, half[-1] + PAD
    for e in evs:
        width = max(text_width(line) for line in wrap_label(f"{e.step}. {e.label}")) + 2 * PAD
        if e.kind == "message":
            a, b = sorted((names.index(e.src), names.index(e.dst)))
            if a == b:  # a message to itself: the label sits right of the lane
                if a < count - 1:
                    gaps[a] = max(gaps[a], width + PAD)
                else:
                    right = max(right, width + PAD)
                continue
            span = sum(gaps[a:b])
            if span < width:
                for i in range(a, b):
                    gaps[i] += (width - span) / (b - a)
        else:
            c = names.index(e.dst)
            if c > 0:
                gaps[c - 1] = max(gaps[c - 1], width / 2 + half[c - 1])
            else:
                left = max(left, width / 2 + PAD)
            if c < count - 1:
                gaps[c] = max(gaps[c], width / 2 + half[c + 1])
            else:
                right = max(right, width / 2 + PAD)
    xs = [left]
    for gap in gaps:
        xs.append(xs[-1] + gap)
    return xs, xs[-1] + right


def to_svg(trace: Trace) -> str:
    """A self-contained SVG sequence diagram, laid out by measuring its text (no Graphviz needed):
    lanes are as far apart as their longest label needs, long labels wrap, and each event has its
    own row."""
    evs = events(trace)
    names = participants(trace, evs)
    xs, width = lane_positions(names, evs)
    # no lanes yet (a model without brokers, no step): one empty slot
    x = dict(zip(names, xs[:len(names)], strict=True))
    top = 60
    rows = []
    y = top
    for e in evs:
        lines = wrap_label(f"{e.step}. {e.label}")
        height = LINE_HEIGHT * len(lines) + 14
        rows.append((e, lines, y, height))
        y += height + 8
    footer = _footer(trace)
    height = y + (30 if footer else 10)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
           f'viewBox="0 0 {width:.0f} {height:.0f}" font-family="DejaVu Sans Mono, Menlo, Courier '
           f'New, monospace" font-size="{FONT_SIZE}">',
           '<defs><marker id="arrow" markerWidth="10" markerHeight="8" refX="9" refY="4" '
           'orient="auto"><path d="M0,0 L10,4 L0,8 z" fill="#333"/></marker></defs>',
           f'<rect width="{width:.0f}" height="{height:.0f}" fill="white"/>']
    for name in names:
        cx, w = x[name], max(text_width(name) + 2 * PAD, 100)
        out.append(f'<rect x="{cx - w / 2:.1f}" y="15" width="{w:.1f}" height="26" rx="6" '
                   'fill="#eef" stroke="#334"/>')
        out.append(f'<text x="{cx:.1f}" y="32" text-anchor="middle">{html.escape(name)}</text>')
        out.append(f'<line x1="{cx:.1f}" y1="41" x2="{cx:.1f}" y2="{height - 10:.0f}" '
                   'stroke="#bbb" '
                   'stroke-dasharray="4 3"/>')
    for e, lines, y0, h in rows:
        if e.kind == "message":
            x1, x2 = x[e.src], x[e.dst]
            arrow_y = y0 + h - 4
            if x1 == x2:
                out.append(f'<path d="M{x1:.1f},{y0 + 4} h30 V{arrow_y} H{x1 + 2:.1f}" fill="none" '
                           'stroke="#333" '
                           'marker-end="url(#arrow)"/>')
                anchor, tx = "start", x1 + 36
            else:
                out.append(f'<line x1="{x1:.1f}" y1="{arrow_y}" x2="{x2:.1f}" y2="{arrow_y}" '
                           'stroke="#333" '
                           'marker-end="url(#arrow)"/>')
                anchor, tx = "middle", (x1 + x2) / 2
            for i, line in enumerate(lines):
                out.append(f'<text x="{tx:.1f}" y="{y0 + LINE_HEIGHT * (i + 1) - 4}" '
                           f'text-anchor="{anchor}">{html.escape(line)}</text>')
        else:
            cx = x[e.dst]
            w = max(text_width(line) for line in lines) + 2 * PAD
            out.append(f'<rect x="{cx - w / 2:.1f}" y="{y0}" width="{w:.1f}" height="{h}" '
                       'fill="#ffd" stroke="#aa8"/>')
            for i, line in enumerate(lines):
                out.append(f'<text x="{cx:.1f}" y="{y0 + LINE_HEIGHT * (i + 1) + 2}" '
                           f'text-anchor="middle">{html.escape(line)}</text>')
    if footer:
        out.append(f'<text x="{PAD}" y="{height - 12:.0f}" '
                   f'fill="#c00">{html.escape(footer)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


DIAGRAM_FORMATS = {"mermaid": to_mermaid, "dot": to_dot, "svg": to_svg}
