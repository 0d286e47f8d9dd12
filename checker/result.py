"""Verdicts and check results, shared by every engine."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from checker.errors import ExitCode
from traces.trace import Trace


class Verdict(StrEnum):
    HOLDS = "holds"
    VIOLATED = "violated"
    UNDETERMINED = "undetermined"  # a budget ran out: never a pass


@dataclass
class Violation:
    invariant: str  # invariant name, or "deadlock"
    kind: str  # "safety", "liveness" or "deadlock"
    trace: Trace
    trace_file: str | None = None

    @property
    def length(self) -> int:
        return self.trace.length

    def to_json(self) -> dict[str, Any]:
        return {
            "invariant": self.invariant,
            "kind": self.kind,
            "length": self.length,
            "trace_file": self.trace_file,
            "explanation": self.trace.explanation,
        }


@dataclass
class CheckResult:
    model: str
    constants: dict[str, Any]
    verdict: Verdict
    distinct_states: int
    states_generated: int
    depth: int  # TLC's convention: the initial states are level 1
    seconds: float
    violations: list[Violation] = field(default_factory=list)
    invariants: list[str] = field(default_factory=list)
    engine: str = "bfs"
    workers: int = 1
    symmetry: bool = False
    reason: str | None = None  # why the verdict is undetermined
    queue: int = 0
    checkpoint_file: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    #: (parent log, edges, action table) when the search kept the state graph
    graph: Any = None

    @property
    def exit_code(self) -> ExitCode:
        if self.verdict is Verdict.UNDETERMINED:
            return ExitCode.UNDETERMINED
        if self.verdict is Verdict.HOLDS:
            return ExitCode.HOLDS
        kinds = {v.kind for v in self.violations}
        if "safety" in kinds:
            return ExitCode.SAFETY_VIOLATED
        if "liveness" in kinds:
            return ExitCode.LIVENESS_VIOLATED
        return ExitCode.DEADLOCK

    @property
    def states_per_second(self) -> float:
        return self.distinct_states / self.seconds if self.seconds > 0 else 0.0

    def to_json(self) -> dict[str, Any]:
        out = {
            "model": self.model,
            "constants": self.constants,
            "verdict": self.verdict.value,
            "distinct_states": self.distinct_states,
            "states_generated": self.states_generated,
            "depth": self.depth,
            "seconds": round(self.seconds, 3),
            "states_per_second": round(self.states_per_second, 1),
            "invariants": self.invariants,
            "violations": [v.to_json() for v in self.violations],
            "engine": self.engine,
            "workers": self.workers,
            "symmetry": self.symmetry,
            "reason": self.reason,
            "exit_code": int(self.exit_code),
        }
        if self.checkpoint_file:
            out["checkpoint_file"] = self.checkpoint_file
        out.update(self.extra)
        return out
