"""The one trace type: an initial state, then each step's action and resulting state.

A trace is what a Kafka engineer reads to understand a bug, so it carries everything needed to
replay it later: the model, its constants, protocol version and feature flags, and the checker
version, in ``header``; plus which invariant fails and at which step.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from spec.model import Action


@dataclass(frozen=True)
class Step:
    action: Action
    state: Any


@dataclass(frozen=True)
class Trace:
    header: dict[str, Any]
    initial: Any
    steps: tuple[Step, ...] = ()
    #: the invariant that fails (or "deadlock"), None for a plain behaviour
    invariant: str | None = None
    #: index in ``states`` of the first state that violates it (len(steps) for a shortest trace)
    violation_index: int | None = None
    explanation: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def states(self) -> list[Any]:
        return [self.initial] + [step.state for step in self.steps]

    @property
    def length(self) -> int:
        """The number of actions."""
        return len(self.steps)
