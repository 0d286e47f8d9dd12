"""A tiny model with protocol versions, a feature flag, several invariants, named bound sets and
stories: what ``kmc matrix`` reads from a model, small enough to check in milliseconds.

Two counters x and y start at 0. ``IncX`` adds 1 to x (2 with ``fast=on``) while x < N, ``IncY``
adds 1 to y while y < N (version v1 only), ``Reset`` sets both back to 0 when both are 1.
With x at N and y at N (or, in v2, at 0) nothing is enabled: a deadlock, on purpose.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from checker.invariant import Invariant
from invariants.registry import for_family, register
from spec.model import Action, Model
from spec.registry import Constant, ModelInfo, all_models
from spec.registry import register as register_model

NAME = "toy-matrix"


class Counters(NamedTuple):
    x: int
    y: int


class ToyMatrix(Model):
    name = NAME
    family = NAME
    matrix_variants = (("v1", ("fast=on",)),)

    def __init__(self, n: int = 4, protocol: str = "v1", fast: bool = False) -> None:
        self.n, self.protocol, self.fast = n, protocol, fast
        self.constants = {"N": n}
        self._inc_x, self._inc_y, self._reset = Action("IncX"), Action("IncY"), Action("Reset")

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "protocol": self.protocol, "features": {"fast": self.fast}}

    def init_states(self) -> list[Counters]:
        return [Counters(0, 0)]

    def state_types(self) -> tuple[type, ...]:
        return (Counters,)

    def successors(self, s: Counters) -> list[tuple[Action, Counters]]:
        out = []
        if s.x < self.n:
            out.append((self._inc_x, Counters(min(self.n, s.x + (2 if self.fast else 1)), s.y)))
        if self.protocol == "v1" and s.y < self.n:
            out.append((self._inc_y, Counters(s.x, s.y + 1)))
        if s.x == 1 and s.y == 1:
            out.append((self._reset, Counters(0, 0)))
        return out

    @staticmethod
    def matrix_bound_sets() -> dict[str, dict[str, dict[str, int]]]:
        return {"default": {"y-small": {"N": 3}},
                "deep": {"x-small": {"N": 6}, "y-small": {"N": 6}}}

    def matrix_story(self, protocol: str, invariant: str, trace: Any) -> str | None:
        if invariant == "x-small":
            return (f"TOY-1: x reaches {trace.steps[-1].state.x} in {trace.length} steps under "
                    f"{protocol}")
        return None


def _build(constants: dict[str, Any], protocol: str = "v1", features: dict[str, bool]
           | None = None) -> ToyMatrix:
    return ToyMatrix(constants["N"], protocol, bool((features or {}).get("fast")))


def install() -> None:
    """Register the model and its invariants (idempotent)."""
    if NAME in all_models():
        return
    register_model(ModelInfo(NAME, "two counters (a test model)",
                             (Constant("N", 4, "counter bound", minimum=1),), _build,
                             protocols={"v1": "both counters", "v2": "x only"},
                             default_protocol="v1", features={"fast": "x counts in twos"}))
    register(NAME, Invariant("x-small", "x stays below 3", lambda s: s.x < 3))
    register(NAME, Invariant("y-small", "y stays below 2", lambda s: s.y < 2))
    register(NAME, Invariant("bounded", "x + y stays within 2N", lambda s: s.x + s.y <= 12))
    assert set(for_family(NAME)) == {"x-small", "y-small", "bounded"}


install()
