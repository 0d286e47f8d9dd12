"""The invariant type: a named, described, pure predicate on states."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

SAFETY = "safety"
LIVENESS = "liveness"


@dataclass(frozen=True)
class Invariant:
    """A property checked on every distinct reachable state (safety) or on the state graph.

    ``holds(state) -> bool`` for safety properties. ``explain(state) -> str``, when given, says in
    a sentence why a violating state violates it (which brokers, which offsets).
    For ``kind == LIVENESS`` the property is checked on the explored graph by
    ``graph_check(model, graph) -> list of violating state fingerprints`` (see checker.liveness);
    ``holds`` may still give a safety approximation that engines check state by state.

    A liveness property here has the form "from every reachable state where ``premise`` holds, a
    state where ``goal`` holds is reachable using only actions for which ``healing(action)`` is
    true" (AG(premise => EF goal) restricted to healing steps), checked on the explored state
    graph by ``checker.liveness``.
    """

    name: str
    description: str
    holds: Callable[[Any], bool] | None
    kind: str = SAFETY
    explain: Callable[[Any], str] | None = None
    graph_check: Callable[..., Any] | None = None
    premise: Callable[[Any], bool] | None = None
    goal: Callable[[Any], bool] | None = None
    healing: Callable[[Any], bool] | None = None
    #: checked when no invariant is named (``kmc check``, ``kmc matrix``); False for a stronger or
    #: alternative form that is checked only by name
    default: bool = True
    #: ``distance(state) -> int``: an estimate of the steps from ``state`` to one that violates the
    #: property, 0 only where it is violated (``holds`` false), for the directed search
    #: (``checker.directed``, ``--engine directed``), which expands the states of the smallest
    #: estimate first; None: the property cannot steer that search
    distance: Callable[[Any], int] | None = None

    def why(self, state: Any) -> str:
        if self.explain is not None:
            return self.explain(state)
        return f"{self.name} does not hold: {self.description}"
