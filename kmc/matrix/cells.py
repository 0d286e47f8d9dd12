"""The matrix's cells: one invariant of one row, from a search that checks it (``check_cells``), or
from stop-at-first rounds on an engine that does not record where each violation was found
(``check_cells_by_rounds``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from checker import engines
from checker.invariant import Invariant
from checker.result import CheckResult, Verdict
from checker.search import SearchOptions


@dataclass(frozen=True)
class Cell:
    protocol: str
    invariant: str
    verdict: str
    distinct_states: int
    states_generated: int
    depth: int
    length: int | None  # of the shortest counterexample, None unless violated
    seconds: float  # of the search the cell was found by
    explanation: str | None = None
    reason: str | None = None
    constants: dict[str, Any] | None = None  # the bounds this cell was checked at
    story: str | None = None  # the KIP/JIRA story a violation is an instance of (the model says)
    trace_file: str | None = None
    trace: Any = None  # the counterexample itself (not in the JSON)

    def to_json(self) -> dict[str, Any]:
        return {
            "protocol": self.protocol,
            "constants": self.constants,
            "invariant": self.invariant,
            "verdict": self.verdict,
            "distinct_states": self.distinct_states,
            "states_generated": self.states_generated,
            "depth": self.depth,
            "length": self.length,
            "seconds": round(self.seconds, 3),
            "explanation": self.explanation,
            "reason": self.reason,
            "story": self.story,
            "trace_file": self.trace_file,
        }


def cell_of(protocol: str, invariant: str, result: CheckResult) -> Cell:
    """The cell of ``invariant`` in ``result``: its violation's discovery figures when violated."""
    violation = next((v for v in result.violations if v.invariant == invariant), None)
    if violation is None:
        verdict, reason = result.verdict, result.reason
        # other invariants broke; this one held on what was explored
        if verdict is Verdict.VIOLATED:
            complete = result.queue == 0
            verdict = Verdict.HOLDS if complete else Verdict.UNDETERMINED
            reason = (None if complete else f"a budget ran out with {result.queue:,} states "
                                            "unexplored")
        return Cell(protocol, invariant, verdict.value, result.distinct_states,
                    result.states_generated, result.depth, None, result.seconds, reason=reason,
                    constants=dict(result.constants))
    found = violation.discovered
    distinct, generated, depth = (found.distinct_states, found.states_generated,
                                  found.depth) if found else (
        result.distinct_states, result.states_generated, result.depth)
    return Cell(protocol, invariant, Verdict.VIOLATED.value, distinct, generated, depth,
                violation.length, result.seconds, explanation=violation.trace.explanation,
                constants=dict(result.constants), trace=violation.trace)


def _search(model: Any, invariants: Sequence[Invariant], options: dict[str, Any],
            stop_at_first: bool, engine: str, engine_options: Any) -> CheckResult:
    search = SearchOptions(invariants=list(invariants), stop_at_first=stop_at_first,
                           stop_when_all_found=not stop_at_first, **options)
    return engines.run(model, search, engine, engine_options)


def check_cells(model: Any, protocol: str, invariants: Sequence[Invariant], options: dict[str, Any],
                engine: str = "local", engine_options: Any = None) -> list[Cell]:
    """One cell per invariant from one ``--continue`` search of ``model`` checking them all.

    When the engine does not record where each violation was found, falls back to
    ``check_cells_by_rounds``.
    """
    if not engines.get_engine(engine).first_violations:
        return check_cells_by_rounds(model, protocol, invariants, options, engine, engine_options)
    result = _search(model, invariants, options, False, engine, engine_options)
    if any(v.discovered is None for v in result.violations):
        return check_cells_by_rounds(model, protocol, invariants, options, engine, engine_options)
    return [cell_of(protocol, inv.name, result) for inv in invariants]


def check_cells_by_rounds(model: Any, protocol: str, invariants: Sequence[Invariant],
                          options: dict[str, Any], engine: str = "local",
                          engine_options: Any = None) -> list[Cell]:
    """One cell per invariant from stop-at-first searches: each search checks the invariants still
    open and stops at the first level where one fails, which is exactly what a search for that one
    invariant alone would have explored; the others share the next search."""
    remaining = list(invariants)
    cells: dict[str, Cell] = {}
    while remaining:
        result = _search(model, remaining, options, True, engine, engine_options)
        violated = {v.invariant for v in result.violations}
        for inv in remaining:
            if inv.name in violated or not violated:
                cell = cell_of(protocol, inv.name, result)
                cells[inv.name] = replace(cell, distinct_states=result.distinct_states,
                                          states_generated=result.states_generated,
                                          depth=result.depth)
        remaining = [inv for inv in remaining if inv.name not in cells]
    return [cells[inv.name] for inv in invariants]
