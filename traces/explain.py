"""One paragraph that says what went wrong in a counterexample: which invariant broke, in which
step and after which action, between which brokers and at which offsets."""

from __future__ import annotations

from typing import Any

from checker.invariant import Invariant
from checker.trace import Trace
from traces.views import broker_views, divergences


def _step_phrase(trace: Trace, index: int) -> str:
    if index == 0:
        return "in the initial state"
    action = trace.steps[index - 1].action
    return f"in step {index} of {trace.length}, after {action}"


def explain(trace: Trace, invariant: Invariant | None = None) -> str:
    """The paragraph for ``trace``'s violation (or a one-line note if it records none)."""
    if not trace.invariant:
        return f"A behaviour of {trace.length} steps; it records no violated invariant."
    index = trace.violation_index if trace.violation_index is not None else trace.length
    index = max(0, min(index, trace.length))
    state = trace.states[index]
    if trace.invariant == "deadlock":
        return f"Deadlock {_step_phrase(trace, index)}: no action is enabled in the last state."
    parts = [f"Invariant {trace.invariant}"]
    if invariant is not None:
        parts[0] += f" ({invariant.description})"
    parts[0] += f" is violated {_step_phrase(trace, index)}."
    why = invariant.why(state) if invariant is not None else trace.explanation
    if why:
        parts.append(why.rstrip(".") + ".")
    parts.extend(_divergence_sentences(state, trace, index))
    protocol = trace.header.get("protocol")
    if protocol:
        parts.append(f"Protocol {protocol}.")
    return " ".join(parts)


def _divergence_sentences(state: Any, trace: Trace, index: int) -> list[str]:
    views = broker_views(state)
    if not views:
        return []
    found = divergences(views)
    if not found:
        marks = ", ".join(f"broker {v.broker} LEO {v.leo} HW {v.hw}" for v in views)
        return [f"The logs agree where they overlap ({marks})."]
    out = []
    for div in found:
        where = "below both high watermarks" if div.below_both_hws else "above a high watermark"
        since = _diverged_since(trace, index, div.a.broker, div.b.broker, div.offset)
        out.append(f"The logs of {div.describe()}, {where}{since}.")
    return out


def _diverged_since(trace: Trace, index: int, a: int, b: int, offset: int) -> str:
    """When the two logs first came to differ at ``offset`` (the step that wrote the difference)."""
    first = None
    for i in range(index, -1, -1):
        views = broker_views(trace.states[i])
        if not views:
            break
        va = next((v for v in views if v.broker == a), None)
        vb = next((v for v in views if v.broker == b), None)
        if (va is None or vb is None or offset >= min(va.leo, vb.leo) or va.log[offset]
            == vb.log[offset]):
            break
        first = i
    if first is None or first == 0:
        return ""
    return f"; they have differed there since step {first} ({trace.steps[first - 1].action})"
