"""Directed explicit-state search: ``--engine directed``, greedy best-first or weighted A* towards a
violation.

A breadth-first search visits every state of depth d before any of depth d + 1; a violation deep in
a state space that grows by a factor a level is out of its reach (Last Replica Standing on three
brokers: 25 steps, about 2.4x more states a level). A directed search expands first the state a
heuristic says is closest to a violation: HSF-SPIN's best-first search (Edelkamp, Leue and Lluch
Lafuente, "Directed explicit-state model checking in the validation of communication protocols",
STTT 5(2-3), 2004). The heuristic belongs to the property: an invariant declares
``distance(state) -> int`` (``checker.invariant.Invariant.distance``), an estimate of the steps to a
state that violates it, 0 only where it is violated; with several invariants the estimate of a state
is the smallest.

- **Order.** A priority queue keyed by ``weight * distance + depth`` (``--directed-weight``): weight
  0 is breadth-first, a large weight greedy best-first (depth only breaks ties between equal
  estimates), weight 1 A*. Ties are broken by insertion order (first in, first out), so a run is
  deterministic: the same command gives the same counts and the same trace.
- **States.** The successors a search keeps (``checker.search.SuccessorView``: the model's bounds,
  ``--symmetry``'s canonical forms) and a visited set of fingerprints (``checker.fingerprint``);
  each new state is checked against every safety invariant when it is first generated, as in
  breadth-first search, and a state without successors is a deadlock when deadlock is checked.
- **Budgets.** ``--max-seconds``, ``--max-states``, ``--max-depth`` (a state at that depth is
  checked, not expanded) and ``--max-memory`` (the resident set size, looked at every 1,024
  expansions: the queue holds its states as objects).
- **Result.** A violation ends with a trace rebuilt from parent pointers by replay
  (``rebuild_trace``): a real behaviour of the model, but not in general a shortest one (the first
  path the search found to the state); a breadth-first ``kmc check`` bounded at its length
  (``--max-depth`` = steps + 1) gives a shortest one. When the budget (``--max-seconds``,
  ``--max-states``, ``--max-depth``) ends the search first, the verdict is undetermined: a directed
  search proves nothing about the states it did not reach. Only when it exhausts the state space
  does it report that the invariants hold, with the distinct-state count breadth-first search gives.

Not supported, each refused with one line (exit 64): worker processes and Spark (the order is one
queue's), checkpoints, liveness properties, partial-order reduction, ``--coverage``, ``--continue``
(it stops at its first violation) and an invariant without a distance. Without ``--invariant`` the
command line gives it the default invariants that declare a distance, naming in one line those left
out (``kmc.options.steerable_defaults``).
"""

from __future__ import annotations

import heapq
import time
from dataclasses import dataclass
from itertools import count
from typing import Any

from checker.bfs import rss_mb
from checker.result import CheckResult, collision_estimates
from checker.search import (
    ActionTable,
    Progress,
    SearchOptions,
    SuccessorView,
    rebuild_trace,
    search_result,
    uses_bounds,
    uses_symmetry,
    validate_initial,
)
from spec.errors import UsageError
from spec.model import Model

#: the default weight of the distance against the depth: greedy best-first in effect (a state one
#: step closer by the estimate goes before any state up to this many steps shallower)
DEFAULT_WEIGHT = 1000
_CHECK_EVERY = 1024  # expansions between two looks at the clock


def _nonnegative_int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise UsageError(f"--directed-weight must be a whole number >= 0, not {value!r} (0: "
                         "breadth-first, 1: A*, large: greedy best-first; default "
                         f"{DEFAULT_WEIGHT})")
    return value


@dataclass
class DirectedOptions:
    """The directed engine's options: the weight of the heuristic distance against the depth."""

    weight: int = DEFAULT_WEIGHT

    def __post_init__(self) -> None:
        self.weight = _nonnegative_int(self.weight)


def check_supported(options: SearchOptions) -> list[Any]:
    """The invariants' distances, or one line (exit 64) for what a directed search cannot honour
    (beyond what its engine record refuses: reductions, checkpoints, liveness, coverage)."""
    if not options.stop_at_first:
        raise UsageError("--engine directed stops at its first violation (its order is towards "
                         "one); drop --continue, or use the breadth-first engine for every "
                         "invariant's shortest trace")
    safety = options.safety_invariants()
    if not safety:
        raise UsageError("--engine directed needs an invariant with a distance to steer by; name "
                         "one with --invariant")
    missing = [inv.name for inv in safety if inv.distance is None]
    if missing:
        raise UsageError(f"invariant {missing[0]} declares no distance to a violation, which "
                         "--engine directed steers "
                         "by; check it with the breadth-first engine, or name only invariants that "
                         "declare one")
    return [inv.distance for inv in safety]


def run_engine(model: Model, options: SearchOptions,
               engine_options: DirectedOptions) -> CheckResult:
    """``--engine directed``: best-first search in this process (see the module's docstring)."""
    return _BestFirst(model, options, engine_options.weight, check_supported(options)).run()


class _BestFirst:
    """One directed search: the queue keyed by ``weight * distance + depth``, the parent pointers,
    the counts."""

    def __init__(self, model: Model, options: SearchOptions, weight: int,
                 distances: list[Any]) -> None:
        self.model, self.options, self.weight, self.distances = model, options, weight, distances
        self.symmetry = uses_symmetry(model, options)
        self.invariants = options.safety_invariants()
        self.view = SuccessorView(model, self.symmetry)
        self.started = time.monotonic()
        self.table = ActionTable()
        # fingerprint -> (parent fingerprint, action id); an initial state's parent is None
        self.parents: dict[int, tuple[int | None, int]] = {}
        # (key, insertion, depth, fingerprint, state)
        self.queue: list[tuple[int, int, int, int, Any]] = []
        self.order = count()
        self.generated = 0
        self.deepest = 0
        self.pruned = 0
        self.expanded = 0
        self.found: tuple[str, int] | None = None  # (invariant or "deadlock", fingerprint)
        self.best: int | None = None

    def violated(self, state: Any) -> str | None:
        return next((inv.name for inv in self.invariants if not inv.holds(state)), None)

    def push(self, state: Any, depth: int, fp: int) -> None:
        h = min(d(state) for d in self.distances)
        self.best = h if self.best is None else min(self.best, h)
        heapq.heappush(self.queue, (self.weight * h + depth, next(self.order), depth, fp, state))

    def seed(self) -> None:
        """The initial states, canonical with ``--symmetry``, within bounds, each checked."""
        model = self.model
        initial = list(model.init_states())
        validate_initial(model, initial)
        canonical = model.canonical if self.symmetry else None
        bounded = uses_bounds(model)
        for state in initial:
            state = canonical(state) if canonical else state
            self.generated += 1
            fp = hash(state)
            if fp in self.parents or (bounded and not model.within_bounds(state)):
                continue
            self.parents[fp] = (None, -1)
            name = self.violated(state)
            if name:
                self.found = (name, fp)
                break
            self.push(state, 1, fp)

    def budget(self, last_report: float) -> tuple[str | None, float]:
        """Why the search must stop now, or None; and when progress was last reported (every
        ``_CHECK_EVERY`` expansions the clock, the memory and the progress line; the state budget at
        each)."""
        options = self.options
        if self.expanded % _CHECK_EVERY == 0:
            now = time.monotonic()
            elapsed = now - self.started
            if options.max_seconds is not None and elapsed > options.max_seconds:
                return f"time budget of {options.max_seconds:g} s ran out", last_report
            if options.max_memory_mb is not None and rss_mb() > options.max_memory_mb:
                return f"memory budget of {options.max_memory_mb:g} MB ran out", last_report
            if options.progress is not None and now - last_report >= options.progress_every:
                last_report = now
                options.progress(Progress(self.deepest, self.generated, len(self.parents),
                                          len(self.queue), elapsed))
        if options.max_states is not None and len(self.parents) >= options.max_states:
            return f"state budget {options.max_states} reached", last_report
        return None, last_report

    def expand(self) -> None:
        """The best state of the queue: its new successors checked and queued (a deadlock if it has
        none)."""
        _key, _order, depth, fp, state = heapq.heappop(self.queue)
        self.expanded += 1
        self.deepest = max(self.deepest, depth)
        if self.options.max_depth is not None and depth >= self.options.max_depth:
            self.pruned += 1
            return
        total, kept = self.view.of(state)
        self.generated += total
        if total == 0 and self.options.check_deadlock:
            self.found = ("deadlock", fp)
            return
        for _pos, act, succ in kept:
            sfp = hash(succ)
            if sfp in self.parents:
                continue
            self.parents[sfp] = (fp, self.table.id(act))
            name = self.violated(succ)
            if name:
                self.found = (name, sfp)
                self.deepest = max(self.deepest, depth + 1)
                return
            self.push(succ, depth + 1, sfp)

    def run(self) -> CheckResult:
        self.seed()
        reason = None
        last_report = self.started
        while self.found is None and self.queue:
            reason, last_report = self.budget(last_report)
            if reason:
                break
            self.expand()
        if self.found is None and reason is None and self.pruned:
            reason = (f"depth bound {self.options.max_depth} reached with {self.pruned} states "
                      "unexpanded")
        return self.result(reason, time.monotonic() - self.started)

    def trace_of(self, fp: int, name: str, why: Any) -> Any:
        path = []
        at: int | None = fp
        while at is not None:
            parent, action_id = self.parents[at]
            path.append((at, action_id))
            at = parent
        path.reverse()
        return rebuild_trace(self.model, path, self.table.actions, self.options, name, why)

    def result(self, reason: str | None, seconds: float) -> CheckResult:
        name, fp = self.found if self.found is not None else (None, None)
        distinct = len(self.parents)
        result = search_result(self.model, self.invariants,
                               found={name: fp} if name not in (None, "deadlock") else {},
                               deadlock=fp if name == "deadlock" else None, trace_of=self.trace_of,
                               distinct_states=distinct, states_generated=self.generated,
                               depth=self.deepest, seconds=seconds, reason=reason,
                               engine="directed", symmetry=self.symmetry, queue=len(self.queue),
                               collision=collision_estimates(distinct, self.generated))
        result.extra["directed"] = {"weight": self.weight, "expanded": self.expanded,
                                    "best_distance": self.best, "guaranteed_shortest": False}
        return result
