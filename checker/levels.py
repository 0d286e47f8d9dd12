"""The level loop, written once: every engine (``checker.bfs``, ``checker.parallel``,
``checker.spark``) plugs into ``run_levels`` with the one thing it does its own way, how a level is
expanded, and a few hooks (how it counts, saves and measures).

The loop, as TLC runs it between its levels::

    while the frontier is not empty and the search should not stop (a violation, a deadlock):
        the engine's before_level (the parallel engine: a Ctrl-C its workers saw)
        a budget ran out (depth, time, states: ``budget_reason``)?  stop, undetermined
        the engine expands one level (and commits it whole, or abandons it whole)
        the engine's after_level (memory, progress)
        a periodic checkpoint every ``--checkpoint-every`` seconds
    a budget running out inside a level (time, memory: ``BudgetExceeded``) stops it, undetermined
    Ctrl-C: a checkpoint of the last whole level, then the interrupt goes on
    a run stopped by a budget with states left: a checkpoint (``budget_checkpoint_path``)
    the engine's result

An engine that keeps its own resume point (Spark writes each level to its run directory) says
``writes_checkpoints = False`` and the loop writes none.
"""

from __future__ import annotations

import os
import time
from typing import Any

from checker.result import CheckResult
from checker.search import SearchOptions, budget_reason
from spec.model import Model

MEMORY_BUDGET = "memory budget"
DEFAULT_CHECKPOINT_DIR = "kmc-checkpoints"


class BudgetExceeded(Exception):
    """A budget (time, memory) ran out inside a level: the level is abandoned and the run is
    undetermined."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def budget_checkpoint_path(reason: str | None, model: Model, options: SearchOptions) -> str | None:
    """Where a run that stops on a budget saves its checkpoint: ``--checkpoint`` if given; when the
    memory budget runs out without one, ``kmc-checkpoints/<model>.ckpt`` (a run too big for this
    machine should not lose its work); otherwise nowhere."""
    if not reason:
        return None
    if options.checkpoint_path:
        return options.checkpoint_path
    if reason.startswith(MEMORY_BUDGET):
        os.makedirs(DEFAULT_CHECKPOINT_DIR, exist_ok=True)
        name = "".join(c if c.isalnum() or c in "-_." else "-" for c in model.name)
        return os.path.join(DEFAULT_CHECKPOINT_DIR, f"{name}.ckpt")
    return None


class LevelSearch:
    """What an engine gives the level loop. ``st`` is the engine's own search state (a
    ``checker.search.SearchState``, or the Spark driver's ``Counters``); it has a ``depth``."""

    model: Model
    options: SearchOptions
    #: the monotonic clock at the (possibly resumed) start of the search, less the time before a
    #: resume
    _started: float
    #: False: the engine keeps its own resume point, and the loop writes no checkpoint
    writes_checkpoints = True

    def queue(self, st: Any) -> int:
        """States of the frontier, the next level to expand."""
        raise NotImplementedError

    def distinct(self, st: Any) -> int:
        """Distinct states found so far."""
        raise NotImplementedError

    def should_stop(self, st: Any) -> bool:
        """After a committed level: the search is over (a violation or deadlock it stops at)."""
        raise NotImplementedError

    def expand_level(self, st: Any) -> None:
        """Expand the frontier into the next level and commit it; raise ``BudgetExceeded`` (the
        level abandoned) when a budget runs out inside it."""
        raise NotImplementedError

    def before_level(self, st: Any) -> None:
        """Before a level is started (after the stop conditions)."""

    def after_level(self, st: Any) -> None:
        """After a level is committed: the engine's memory measure and progress report."""

    def save(self, st: Any, path: str) -> None:
        """Write a checkpoint of the last committed level to ``path``."""
        raise NotImplementedError

    def finish(self, st: Any, reason: str | None, checkpoint_file: str | None) -> CheckResult:
        """The result of the search (``reason``: the budget that stopped it, or None)."""
        raise NotImplementedError

    def elapsed(self) -> float:
        return time.monotonic() - self._started


def run_levels(search: LevelSearch, st: Any) -> CheckResult:
    """Run ``search`` level by level from ``st`` (its initial level, or a resumed one) to its
    result."""
    opts = search.options
    saves = search.writes_checkpoints
    last_checkpoint = time.monotonic()
    reason = None
    checkpoint_file = None
    try:
        while search.queue(st) and not search.should_stop(st):
            search.before_level(st)
            reason = budget_reason(opts, st.depth, search.distinct(st), search.queue(st),
                                   search.elapsed())
            if reason:
                break
            search.expand_level(st)
            search.after_level(st)
            if opts.observer is not None:
                opts.observer.level(st)
            if (saves and opts.checkpoint_path and time.monotonic() - last_checkpoint
                >= opts.checkpoint_every):
                search.save(st, opts.checkpoint_path)
                last_checkpoint = time.monotonic()
    except BudgetExceeded as exc:
        reason = exc.reason
    except KeyboardInterrupt:
        if saves and opts.checkpoint_path:
            search.save(st, opts.checkpoint_path)
        raise
    path = budget_checkpoint_path(reason, search.model, opts) if saves else None
    if path and search.queue(st):
        search.save(st, path)
        checkpoint_file = path
    return search.finish(st, reason, checkpoint_file)


def rss_mb() -> float:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except OSError:  # not Linux: fall back to the peak
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def default_memory_budget_mb() -> float:
    """80% of physical memory: run out of budget (undetermined) before the OOM killer acts."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**20 * 0.8
    except (ValueError, OSError):
        return float("inf")
