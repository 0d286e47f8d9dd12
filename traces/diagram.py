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
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from traces.render import fmt, is_message
from traces.trace import Trace
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
#: parameters naming the broker (or resource manager) that acts, in order of preference
ACTOR_PARAMS = ("broker", "follower", "leader", "replica", "rm", "newLeader")
#: models without a network: action -> (sender, receiver, label); templates use the parameters
MESSAGE_RULES: dict[str, tuple[str, str, str]] = {
    "RMPrepare": ("RM {rm}", "TM", "Prepared"),
    "TMCommit": ("TM", "RMs", "Commit"),
    "TMAbort": ("TM", "RMs", "Abort"),
    "BecomeLeader": (CONTROLLER, "broker {changed}", "LeaderAndIsr(epoch={epoch}): lead"),
    "BecomeFollowerTruncateKip101": (CONTROLLER, "broker {replica}", "LeaderAndIsr(epoch={epoch}, leader={leader})"),
    "BecomeFollowerTruncateKip279": (CONTROLLER, "broker {replica}", "LeaderAndIsr(epoch={epoch}, leader={leader})"),
    "BecomeFollowerAndTruncateTo": (CONTROLLER, "broker {replica}", "LeaderAndIsr(epoch={epoch}, leader={leader})"),
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
    kind = type(message)
    fields = [f"{k}={fmt(named(kind, k, v))}" for k, v in zip(message._fields, message, strict=True)
              if k not in _HIDDEN_FIELDS]
    return f"{kind.__name__}({', '.join(fields)})"


def _sender(message: Any) -> str:
    src = getattr(message, "src", None)
    return CONTROLLER if src is None else _participant("broker", src)


def _receiver(message: Any) -> str:
    dst = getattr(message, "dst", None)
    return CONTROLLER if dst is None else _participant("broker", dst)


def _named_participants(action: Any) -> set[str]:
    """The participants an action acts as: the controller for a controller action, else the brokers its
    parameters name."""
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
    """A message by its type, its error if any and (``ends``) its ends: ``FetchResponse FENCED_LEADER_EPOCH
    (broker 0 to broker 1)``."""
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
    if action.name in ACTOR_RULES:
        return ACTOR_RULES[action.name]
    for key in ACTOR_PARAMS:
        value = action.param(key)
        if value is not None:
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
                out.append(Event(number, "message", _sender(message), _receiver(message), _message_label(message)))
            if not sent and handled is not None:
                out.append(Event(number, "note", "", _receiver(handled), f"{action}: handles {_short(handled)}"))
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
                out.append(Event(number, "note", "", _actor(action, previous, state, "broker"), str(action)))
        else:
            out.append(Event(number, "note", "", _actor(action, previous, state, "broker"), str(action)))
        previous = state
    return out


def participants(trace: Trace, evs: Sequence[Event]) -> list[str]:
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
    return names


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


def _dot_text(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def to_dot(trace: Trace) -> str:
    """A sequence diagram in DOT: one column of points a participant, one row a step."""
    evs = events(trace)
    names = participants(trace, evs)
    rows = max((e.step for e in evs), default=0)
    lines = ["digraph sequence {", "  rankdir=TB; splines=false; nodesep=1.2; ranksep=0.35;",
             '  node [shape=point, width=0.04, color="#999999"]; edge [fontsize=10];']
    for col, name in enumerate(names):
        lines.append(f'  "h{col}" [shape=box, style=rounded, width=1.2, label="{_dot_text(name)}", color=black];')
    lines.append("  { rank=same; " + " ".join(f'"h{c}";' for c in range(len(names))) + " }")
    for row in range(1, rows + 1):
        lines.append("  { rank=same; " + " ".join(f'"p{c}_{row}";' for c in range(len(names))) + " }")
    for col in range(len(names)):
        chain = [f'"h{col}"'] + [f'"p{col}_{row}"' for row in range(1, rows + 1)]
        if len(chain) > 1:
            lines.append("  " + " -> ".join(chain) + ' [arrowhead=none, style=dashed, color="#bbbbbb"];')
    for e in evs:
        if e.kind == "message":
            a, b = names.index(e.src), names.index(e.dst)
            lines.append(f'  "p{a}_{e.step}" -> "p{b}_{e.step}" [label="{_dot_text(f"{e.step}. {e.label}")}", '
                         "constraint=false];")
        else:
            c = names.index(e.dst)
            lines.append(f'  "n{e.step}" [shape=note, fontsize=10, label="{_dot_text(f"{e.step}. {e.label}")}"];')
            lines.append(f'  "p{c}_{e.step}" -> "n{e.step}" [arrowhead=none, style=dotted, constraint=false];')
            lines.append(f'  {{ rank=same; "p{c}_{e.step}"; "n{e.step}"; }}')
    footer = _footer(trace)
    if footer:
        lines.append(f'  label="{_dot_text(footer)}"; labelloc=b; fontcolor=red;')
    lines.append("}")
    return "\n".join(lines) + "\n"


def to_svg(trace: Trace) -> str:
    """A self-contained SVG sequence diagram (no Graphviz needed)."""
    evs = events(trace)
    names = participants(trace, evs)
    col_w, row_h, top, left = 190, 34, 60, 20
    width = left * 2 + col_w * max(len(names), 1)
    height = top + row_h * (len(evs) + 2)
    x = {name: left + col_w * i + col_w // 2 for i, name in enumerate(names)}
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="monospace" '
           'font-size="11">',
           '<defs><marker id="arrow" markerWidth="10" markerHeight="8" refX="9" refY="4" orient="auto">'
           '<path d="M0,0 L10,4 L0,8 z" fill="#333"/></marker></defs>',
           f'<rect width="{width}" height="{height}" fill="white"/>']
    for name in names:
        cx = x[name]
        out.append(f'<rect x="{cx - 60}" y="15" width="120" height="26" rx="6" fill="#eef" stroke="#334"/>')
        out.append(f'<text x="{cx}" y="32" text-anchor="middle">{html.escape(name)}</text>')
        out.append(f'<line x1="{cx}" y1="41" x2="{cx}" y2="{height - 10}" stroke="#bbb" stroke-dasharray="4 3"/>')
    for i, e in enumerate(evs):
        y = top + row_h * (i + 1)
        label = html.escape(f"{e.step}. {e.label}")
        if e.kind == "message":
            x1, x2 = x[e.src], x[e.dst]
            mid = (x1 + x2) / 2
            out.append(f'<line x1="{x1}" y1="{y}" x2="{x2}" y2="{y}" stroke="#333" marker-end="url(#arrow)"/>')
            out.append(f'<text x="{mid}" y="{y - 5}" text-anchor="middle">{label}</text>')
        else:
            cx = x[e.dst]
            w = max(60, 7 * len(e.label) + 30)
            out.append(f'<rect x="{cx - w / 2}" y="{y - 14}" width="{w}" height="20" fill="#ffd" stroke="#aa8"/>')
            out.append(f'<text x="{cx}" y="{y}" text-anchor="middle">{label}</text>')
    footer = _footer(trace)
    if footer:
        out.append(f'<text x="{left}" y="{height - 12}" fill="#c00">{html.escape(footer)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


DIAGRAM_FORMATS = {"mermaid": to_mermaid, "dot": to_dot, "svg": to_svg}
