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
    #: checked when no invariant is named (``kmc check``, ``kmc matrix``); False for a stronger or alternative
    #: form that is checked only by name
    default: bool = True
    #: the parts of a state ``holds`` reads, as the model's footprints name them (``spec.kafka.footprints``:
    #: "brokers.log", "controller.epoch", "committed", "network"...), for partial-order reduction (``checker.por``);
    #: None: it may read anything (the reduction then expands every state fully while it is checked)
    reads: tuple[str, ...] | None = None
    #: (tags, predicate): the property holds in every state where ``predicate`` does, which reads only ``tags``. When
    #: no action of the model writes those parts and every initial state satisfies it, the property is constant and
    #: partial-order reduction takes it to read nothing (``checker.por``)
    vacuous_while: tuple[tuple[str, ...], Callable[[Any], bool]] | None = None
    #: ``distance(state) -> int``: an estimate of the steps from ``state`` to one that violates the property, 0 only
    #: where it is violated (``holds`` false), for the directed search (``checker.directed``, ``--engine directed``),
    #: which expands the states of the smallest estimate first; None: the property cannot steer that search
    distance: Callable[[Any], int] | None = None

    def why(self, state: Any) -> str:
        if self.explain is not None:
            return self.explain(state)
        return f"{self.name} does not hold: {self.description}"
