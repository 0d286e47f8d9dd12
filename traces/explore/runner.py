"""Run to completion from the explorer's current state: the project's local breadth-first engine
(``kmc check``'s ``--engine local``, one process) on the model with that state as its only initial
state, in a background thread, bounded by a distinct-state budget and cancellable; the page polls
its progress. A counterexample it finds is a path from the current state, which the page appends to
its own.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from checker import engines
from checker.bfs import BudgetExceeded
from checker.result import CheckResult
from checker.search import Progress, SearchOptions
from spec.model import Model, StateParts
from traces.replay import safety_invariants

#: the default distinct-state budget of a run from the page (``kmc explore --max-states``)
DEFAULT_MAX_STATES = 200_000
CANCELLED = "cancelled from the page"


class StartingAt(Model):
    """``model`` with one initial state, ``state``; everything else is the model's own (its
    successors, bounds, symmetry, encoding, description), so the engine searches exactly the states
    reachable from ``state``. Each method of the interface is forwarded by name (the engine reads
    some of them from the class)."""

    def __init__(self, model: Model, state: Any) -> None:
        self.model = model
        self.state = state
        self.name = model.name
        self.family = model.family
        self.constants = model.constants
        self.has_symmetry = model.has_symmetry
        self.protocol = model.protocol
        self.deadlock_by_default = model.deadlock_by_default

    def init_states(self) -> list[Any]:
        return [self.state]

    def successors(self, state: Any) -> Any:
        return self.model.successors(state)

    def within_bounds(self, state: Any) -> bool:
        return self.model.within_bounds(state)

    def canonical(self, state: Any) -> Any:
        return self.model.canonical(state)

    def symmetry_reduces_nothing(self) -> str | None:
        return self.model.symmetry_reduces_nothing()

    def state_types(self) -> tuple[type, ...]:
        return self.model.state_types()

    def encode_state(self, state: Any) -> Any:
        return self.model.encode_state(state)

    def decode_state(self, plain: Any) -> Any:
        return self.model.decode_state(plain)

    def encode_states(self, states: Any) -> Any:
        return self.model.encode_states(states)

    def decode_states(self, plain: Any) -> list[Any]:
        return self.model.decode_states(plain)

    def state_parts(self) -> StateParts | None:
        return self.model.state_parts()

    def describe(self) -> dict[str, Any]:
        return self.model.describe()

    def all_actions(self) -> Any:
        return self.model.all_actions()


@dataclass
class Run:
    """One run from the page: its bounds, its progress while it goes, its result when done."""

    query: str  # the position it started from
    max_states: int
    started: float = field(default_factory=time.monotonic)
    progress: Progress | None = None
    result: CheckResult | None = None
    error: str | None = None
    #: the position the counterexample leads to (the page's path, then the counterexample's steps)
    found: str | None = None
    cancel: threading.Event = field(default_factory=threading.Event)
    done: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None

    def report(self) -> dict[str, Any]:
        p = self.progress
        out: dict[str, Any] = {
            "query": self.query, "max_states": self.max_states, "running": not self.done.is_set(),
            "cancelled": CANCELLED in (self.error, getattr(self.result, "reason", None)),
            "error": self.error, "found": self.found,
            "progress": None if p is None else {"depth": p.depth, "generated": p.states_generated,
                                                "distinct": p.distinct_states, "queue": p.queue,
                                                "seconds": round(p.seconds, 2)},
        }
        r = self.result
        if r is not None:
            out["result"] = {"verdict": r.verdict.value if hasattr(r.verdict, "value")
                             else str(r.verdict),
                             "distinct": r.distinct_states, "generated": r.states_generated,
                             "depth": r.depth, "seconds": round(r.seconds, 2), "reason": r.reason,
                             "violations": [v.invariant for v in r.violations]}
        return out


def start(model: Model, state: Any, query: str, max_states: int,
          on_trace: Callable[[Run, Any], None] | None = None) -> Run:
    """Start a run from ``state`` in a daemon thread; ``on_trace(run, trace)`` gets the first
    counterexample."""
    run = Run(query, max_states)

    raised = threading.Event()

    def progress(p: Progress) -> None:
        run.progress = p
        # once: the engine's final report comes after its loop
        if run.cancel.is_set() and not raised.is_set():
            raised.set()
            raise BudgetExceeded(CANCELLED)

    options = SearchOptions(invariants=safety_invariants(model), stop_at_first=True,
                            check_deadlock=bool(model.deadlock_by_default),
                            max_states=max_states, progress=progress, progress_every=0.2)

    def work() -> None:
        try:
            run.result = engines.run(StartingAt(model, state), options, "local")
            if run.result.violations and on_trace is not None:
                on_trace(run, run.result.violations[0].trace)
        except BudgetExceeded as exc:  # a cancel seen in the final report, after the search loop
            run.error = exc.reason
        except Exception as exc:  # noqa: BLE001 - the page shows it; the server goes on
            run.error = f"{type(exc).__name__}: {exc}"
        finally:
            run.done.set()

    run.thread = threading.Thread(target=work, name="kmc-explore-run", daemon=True)
    run.thread.start()
    return run
