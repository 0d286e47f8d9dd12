"""Directed explicit-state search: ``--engine directed``, greedy best-first or weighted A* towards a violation.

A breadth-first search visits every state of depth d before any of depth d + 1; a violation deep in a state space
that grows by a factor a level is out of its reach (Last Replica Standing on three brokers: 25 steps, about 2.4x
more states a level). A directed search expands first the state a heuristic says is closest to a violation:
HSF-SPIN's best-first search (Edelkamp, Leue and Lluch Lafuente, "Directed explicit-state model checking in the
validation of communication protocols", STTT 5(2-3), 2004). The heuristic belongs to the property: an invariant
declares ``distance(state) -> int`` (``checker.invariant.Invariant.distance``), an estimate of the steps to a state
that violates it, 0 only where it is violated; with several invariants the estimate of a state is the smallest.

- **Order.** A priority queue keyed by ``weight * distance + depth`` (``--directed-weight``): weight 0 is
  breadth-first, a large weight greedy best-first (depth only breaks ties between equal estimates), weight 1
  A*. Ties are broken by insertion order (first in, first out), so a run is deterministic: the same command
  gives the same counts and the same trace.
- **States.** The successors a search keeps (``checker.search.SuccessorView``: the model's bounds,
  ``--symmetry``'s canonical forms) and a visited set of fingerprints (``checker.fingerprint``); each new state
  is checked against every safety invariant when it is first generated, as in breadth-first search, and a
  state without successors is a deadlock when deadlock is checked.
- **Budgets.** ``--max-seconds``, ``--max-states``, ``--max-depth`` (a state at that depth is checked, not
  expanded) and ``--max-memory`` (the resident set size, looked at every 1,024 expansions: the queue holds its
  states as objects).
- **Result.** A violation ends with a trace rebuilt from parent pointers by replay (``rebuild_trace``): a real
  behaviour of the model, but not in general a shortest one (the first path the search found to the state); a
  breadth-first ``kmc check`` bounded at its length (``--max-depth`` = steps + 1) gives a shortest one. When the
  budget (``--max-seconds``, ``--max-states``, ``--max-depth``) ends the search first, the verdict is
  undetermined: a directed search proves nothing about the states it did not reach. Only when it exhausts the
  state space does it report that the invariants hold, with the distinct-state count breadth-first search gives.

Not supported, each refused with one line (exit 64): worker processes and Spark (the order is one queue's), checkpoints,
liveness properties, partial-order reduction, ``--coverage``, ``--continue`` (it stops at its first violation) and an
invariant without a distance.
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

#: the default weight of the distance against the depth: greedy best-first in effect (a state one step closer by
#: the estimate goes before any state up to this many steps shallower)
DEFAULT_WEIGHT = 1000
_CHECK_EVERY = 1024  # expansions between two looks at the clock


def _nonnegative_int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise UsageError(f"--directed-weight must be a whole number >= 0, not {value!r} (0: breadth-first, 1: A*, "
                         f"large: greedy best-first; default {DEFAULT_WEIGHT})")
    return value


@dataclass
class DirectedOptions:
    """The directed engine's options: the weight of the heuristic distance against the depth."""

    weight: int = DEFAULT_WEIGHT

    def __post_init__(self) -> None:
        self.weight = _nonnegative_int(self.weight)


def check_supported(options: SearchOptions) -> list[Any]:
    """The invariants' distances, or one line (exit 64) for what a directed search cannot honour (beyond what its
    engine record refuses: reductions, checkpoints, liveness, coverage)."""
    if not options.stop_at_first:
        raise UsageError("--engine directed stops at its first violation (its order is towards one); drop --continue, or "
                         "use the breadth-first engine for every invariant's shortest trace")
    safety = options.safety_invariants()
    if not safety:
        raise UsageError("--engine directed needs an invariant with a distance to steer by; name one with --invariant")
    missing = [inv.name for inv in safety if inv.distance is None]
    if missing:
        raise UsageError(f"invariant {missing[0]} declares no distance to a violation, which --engine directed steers "
                         "by; check it with the breadth-first engine, or name only invariants that declare one")
    return [inv.distance for inv in safety]


def run_engine(model: Model, options: SearchOptions, engine_options: DirectedOptions) -> CheckResult:
    """``--engine directed``: best-first search in this process (see the module's docstring)."""
    distances = check_supported(options)
    symmetry = uses_symmetry(model, options)
    invariants = options.safety_invariants()
    view = SuccessorView(model, symmetry)
    weight = engine_options.weight
    started = time.monotonic()

    def estimate(state: Any) -> int:
        return min(d(state) for d in distances)

    def violated(state: Any) -> str | None:
        return next((inv.name for inv in invariants if not inv.holds(state)), None)

    initial = list(model.init_states())
    validate_initial(model, initial)
    canonical = model.canonical if symmetry else None
    table = ActionTable()
    # fingerprint -> (parent fingerprint, action id); an initial state's parent is None
    parents: dict[int, tuple[int | None, int]] = {}
    queue: list[tuple[int, int, int, int, Any]] = []  # (key, insertion, depth, fingerprint, state)
    order = count()
    generated = 0
    deepest = 0
    pruned = 0
    found: tuple[str, int] | None = None  # (invariant or "deadlock", fingerprint)
    best = None

    def push(state: Any, depth: int, fp: int) -> None:
        nonlocal best
        h = estimate(state)
        best = h if best is None else min(best, h)
        heapq.heappush(queue, (weight * h + depth, next(order), depth, fp, state))

    bounded = uses_bounds(model)
    for state in initial:
        state = canonical(state) if canonical else state
        generated += 1
        fp = hash(state)
        if fp in parents or (bounded and not model.within_bounds(state)):
            continue
        parents[fp] = (None, -1)
        name = violated(state)
        if name:
            found = (name, fp)
            break
        push(state, 1, fp)
    reason = None
    expanded = 0
    last_report = started
    while found is None and queue:
        if expanded % _CHECK_EVERY == 0:
            now = time.monotonic()
            elapsed = now - started
            if options.max_seconds is not None and elapsed > options.max_seconds:
                reason = f"time budget of {options.max_seconds:g} s ran out"
                break
            if options.max_memory_mb is not None and rss_mb() > options.max_memory_mb:
                reason = f"memory budget of {options.max_memory_mb:g} MB ran out"
                break
            if options.progress is not None and now - last_report >= options.progress_every:
                last_report = now
                options.progress(Progress(deepest, generated, len(parents), len(queue), elapsed))
        if options.max_states is not None and len(parents) >= options.max_states:
            reason = f"state budget {options.max_states} reached"
            break
        _key, _order, depth, fp, state = heapq.heappop(queue)
        expanded += 1
        deepest = max(deepest, depth)
        if options.max_depth is not None and depth >= options.max_depth:
            pruned += 1
            continue
        total, kept = view.of(state)
        generated += total
        if total == 0 and options.check_deadlock:
            found = ("deadlock", fp)
            break
        for _pos, act, succ in kept:
            sfp = hash(succ)
            if sfp in parents:
                continue
            parents[sfp] = (fp, table.id(act))
            name = violated(succ)
            if name:
                found = (name, sfp)
                deepest = max(deepest, depth + 1)
                break
            push(succ, depth + 1, sfp)
    if found is None and reason is None and pruned:
        reason = f"depth bound {options.max_depth} reached with {pruned} states unexpanded"
    seconds = time.monotonic() - started

    def trace_of(fp: int, name: str, why: Any) -> Any:
        path = []
        at: int | None = fp
        while at is not None:
            parent, action_id = parents[at]
            path.append((at, action_id))
            at = parent
        path.reverse()
        return rebuild_trace(model, path, table.actions, options, name, why)

    name, fp = found if found is not None else (None, None)
    result = search_result(model, invariants, found={name: fp} if name not in (None, "deadlock") else {},
                           deadlock=fp if name == "deadlock" else None, trace_of=trace_of,
                           distinct_states=len(parents), states_generated=generated, depth=deepest, seconds=seconds,
                           reason=reason, engine="directed", symmetry=symmetry, queue=len(queue),
                           collision=collision_estimates(len(parents), generated))
    result.extra["directed"] = {"weight": weight, "expanded": expanded, "best_distance": best,
                                "guaranteed_shortest": False}
    return result
