"""Verdicts and check results, shared by every engine, and the statistics printed after a check."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

import numpy as np

from checker.trace import Trace
from spec.errors import ExitCode

# fingerprints scanned at a time for the observed collision estimate (two 512 KiB temporaries)
_CHUNK = 1 << 16


class Verdict(StrEnum):
    HOLDS = "holds"
    VIOLATED = "violated"
    UNDETERMINED = "undetermined"  # a budget ran out: never a pass


@dataclass(frozen=True)
class Discovery:
    """What a search that stops at a violation reports: distinct states, states generated and depth
    at the end of the level where the violation was found (the same with or without
    ``--continue``)."""

    distinct_states: int
    states_generated: int
    depth: int


@dataclass(frozen=True)
class OutDegree:
    """Successors computed per expanded state (TLC's "outdegree"), over the states expanded."""

    minimum: int
    maximum: int
    mean: float
    percentile_95: int  # the smallest degree that at least 95% of the expanded states do not exceed

    @classmethod
    def of(cls, histogram: dict[int, int]) -> OutDegree:
        """From out-degree -> number of states expanded with it."""
        states = sum(histogram.values())
        total = sum(degree * n for degree, n in histogram.items())
        seen, p95 = 0, max(histogram)
        for degree in sorted(histogram):
            seen += histogram[degree]
            if seen >= 0.95 * states:
                p95 = degree
                break
        return cls(min(histogram), max(histogram), total / states, p95)


@dataclass(frozen=True)
class Collision:
    """TLC's two estimates of the probability that two distinct states shared a fingerprint.

    ``optimistic`` is n * (g - n) / 2^64 for n distinct states and g states generated (each of the
    g - n duplicate lookups could have hit one of n fingerprints by chance); ``observed`` is
    1 / d for the smallest distance d between two of the sorted fingerprints actually stored
    (None when the engine does not keep them in one place).
    """

    optimistic: float
    observed: float | None


def collision_estimates(distinct: int, generated: int, sorted_fps: np.ndarray
                        | None = None) -> Collision:
    optimistic = distinct * max(generated - distinct, 0) / 2.0**64
    observed = None
    if sorted_fps is not None and sorted_fps.size >= 2:
        # as unsigned 64-bit values (flip the sign bit) so that every gap fits
        smallest = None
        for start in range(0, sorted_fps.size - 1, _CHUNK):
            part = sorted_fps[start:start + _CHUNK + 1].view(np.uint64) ^ np.uint64(1 << 63)
            gap = int(np.diff(part).min())
            smallest = gap if smallest is None else min(smallest, gap)
        observed = 1.0 / smallest if smallest else 1.0
    return Collision(optimistic, observed)


@dataclass
class Violation:
    invariant: str  # invariant name, or "deadlock"
    kind: str  # "safety", "liveness" or "deadlock"
    trace: Trace
    trace_file: str | None = None
    #: the figures of a search stopping at this violation (None when the engine does not record
    #: them)
    discovered: Discovery | None = None

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
            "discovered": asdict(self.discovered) if self.discovered else None,
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
    engine: str = "local"
    workers: int = 1
    symmetry: bool = False
    reason: str | None = None  # why the verdict is undetermined
    queue: int = 0
    checkpoint_file: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    #: (parent log, edges, action table) when the search kept the state graph
    graph: Any = None
    collision: Collision | None = None
    out_degree: OutDegree | None = None
    #: action (with parameters) -> successors it generated, with ``--coverage``
    coverage: dict[Any, int] | None = None

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
        if self.collision is not None:
            out["fingerprint_collision"] = asdict(self.collision)
        if self.out_degree is not None:
            out["out_degree"] = {**asdict(self.out_degree), "mean": round(self.out_degree.mean, 3)}
        if self.coverage is not None:
            out["coverage"] = [{"action": str(act), "count": n} for act, n in self.coverage.items()]
        out.update(self.extra)
        return out


def amdahl_speedup(serial_share: float, cores: int) -> float:
    """The speed-up Amdahl's law predicts on ``cores`` cores for a run with this serial share."""
    return 1.0 / (serial_share + (1.0 - serial_share) / cores)
