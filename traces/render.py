"""Printing a trace with rich: each step names its action and shows only what changed."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.text import Text

from spec.model import state_to_data
from traces.trace import Trace


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            out.update(_flatten(item, f"{prefix}.{key}" if prefix else str(key)))
        return out
    if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        out = {}
        for i, item in enumerate(value):
            out.update(_flatten(item, f"{prefix}[{i}]"))
        return out
    return {prefix: value}


def state_diff(before: Any, after: Any) -> list[tuple[str, Any, Any]]:
    """(variable, old, new) for every variable that changed, by name."""
    old, new = _flatten(state_to_data(before)), _flatten(state_to_data(after))
    return [(k, old.get(k), new.get(k)) for k in dict.fromkeys([*old, *new]) if old.get(k) != new.get(k)]


def print_trace(console: Console, trace: Trace) -> None:
    console.print(Text("State 1: initial state", style="bold"))
    for key, value in _flatten(state_to_data(trace.initial)).items():
        console.print(f"  {key} = {value}")
    previous = trace.initial
    for number, step in enumerate(trace.steps, start=2):
        console.print(Text(f"State {number}: ", style="bold") + Text(str(step.action), style="bold cyan"))
        for key, old, new in state_diff(previous, step.state):
            line = Text(f"  {key}: ")
            line.append(str(old), style="red")
            line.append(" -> ")
            line.append(str(new), style="green")
            console.print(line)
        previous = step.state
    if trace.invariant:
        console.print(Text(f"Invariant {trace.invariant} is violated in state {len(trace.steps) + 1}.", style="bold red"))
        if trace.explanation:
            console.print(f"  {trace.explanation}")
