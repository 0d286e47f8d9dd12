"""The local breadth-first engine: level-synchronous, with a compact visited set.

Each level expands the frontier in order, block by block (``checker.frontier``: a block of states is
read back, expanded, and let go), keeping the first occurrence of each new fingerprint (so the
result does not depend on how the level is split among blocks or workers). While the level is small
(its fingerprints fit the objects a frontier store keeps, ``object_states``), one dictionary of the
level's fingerprints (``_Level.seen``, about 80 bytes a fingerprint) drops a successor this level
already found in the hot loop itself; past that, the level goes block-wise: its new fingerprints
move to a ``LevelFingerprints`` (8 bytes each) and a vectorised lookup after each block removes
those this level already found. Either way, one vectorised lookup removes the successors visited at
earlier levels, after each block, or after each batch of blocks (``_ABSORB_AT`` successors) while
the level is one dictionary; the rest are the block's new states, in discovery order: their
invariants are checked, their parent pointers noted and the states written to the next level's
store. So a large level costs the visited set, the parent log and the two stores (compact past their
budget), plus one block of Python objects, and a small one pays no numpy lookup against itself. The
first violation found at a level is a shortest counterexample. The search state (visited set, parent
log, counts, frontier) changes only when a whole level commits, which is what makes checkpoints and
Ctrl-C safe: an abandoned level leaves nothing behind.

The loop over the levels (stop conditions, budgets, checkpoints, Ctrl-C) is ``checker.levels``;
``LocalBFS`` gives it the level step (``_expand_level``) and its hooks (spill past half the memory
budget, save a checkpoint, the result). ``LocalOptions``: the engine takes no option.
"""

from __future__ import annotations

import gc
import os
import time
from collections import Counter
from dataclasses import dataclass
from itertools import compress, count, islice
from operator import itemgetter, not_
from typing import Any

import numpy as np

from checker import checkpoint as ckpt
from checker import frontier as frontier_store
from checker.frontier import FrontierStore, store_of
from checker.levels import (
    MEMORY_BUDGET,
    BudgetExceeded,
    LevelSearch,
    default_memory_budget_mb,
    rss_mb,
    run_levels,
)
from checker.result import CheckResult, Discovery, OutDegree, collision_estimates
from checker.safe_io import interrupts_deferred
from checker.search import (
    ActionTable,
    Progress,
    SearchOptions,
    SearchState,
    SuccessorView,
    rebuild_trace,
    search_canonical,
    search_result,
    uses_bounds,
    uses_symmetry,
    validate_initial,
)
from checker.visited import FingerprintSet, LevelFingerprints
from spec.model import Model

_CHECK_EVERY = 8192  # successors between two looks at the clock
_PRUNE_AT = 131072  # new entries of a level's dictionary between two removals of the visited ones
#: successors of a level kept as one dictionary looked up in the visited set at once (a block's
#: lookup, 512 states' successors, cost numpy's fixed price of each call: about 6% of two-phase's
#: instructions)
_ABSORB_AT = 65536
#: ... once past SPILL_AT of the memory budget: 16% less peak memory for 6% more CPU
#: (bench/NOTES.md)
_PRUNE_AT_UNDER_PRESSURE = 16384
_RSS_EVERY = 0.2  # seconds between two looks at the resident set size
#: out-degrees collected (a list append a state in the hot loop) before they are counted into the
#: histogram at once (numpy's bincount: a ``Counter`` a block cost two-phase RM=6 0.5% of its
#: instructions)
_FOLD_DEGREES_AT = 1 << 16
_first, _second, _third = itemgetter(0), itemgetter(1), itemgetter(2)


def _drop_visited(visited: FingerprintSet, fresh: dict[int, tuple], recent: int) -> int:
    """Remove from ``fresh`` its last ``recent`` entries that were visited at earlier levels.

    They would be dropped at the end of the level anyway; dropping them now keeps the level's
    dictionary (the largest part of the peak memory) to the states that are really new. A later
    occurrence of a dropped fingerprint is added again and dropped again: the order of the
    others, hence the first-occurrence rule, is unchanged. Returns the new size of ``fresh``.
    """
    fps = np.fromiter(islice(reversed(fresh), recent), np.int64, recent)
    for fp in fps[visited.contains(fps)].tolist():
        del fresh[fp]
    return len(fresh)


def _action_id(table: ActionTable) -> Any:
    """Action -> id in ``table`` (interning new ones); the initial states' None -> -1."""
    intern = table.id

    def action_id(act: Any) -> int:
        return -1 if act is None else intern(act)

    return action_id


def action_ids(table: ActionTable, actions: list[Any]) -> np.ndarray:
    """The ids of ``actions`` in ``table`` as int32, new ones interned in their order (the initial
    states' None: -1).

    The actions of a level were nearly all interned at earlier levels: their ids are looked up in C
    (``dict.get`` mapped by ``np.fromiter``), and only a list with an action not interned yet (a
    None id: ``fromiter`` raises TypeError) is mapped again through ``ActionTable.id``, which
    interns in order. Two Python calls a new state less (two-phase RM=6: about 1% of the search's
    instructions, callgrind).
    """
    try:
        return np.fromiter(map(table.lookup(), actions), np.int32, len(actions))
    except TypeError:
        return np.fromiter(map(_action_id(table), actions), np.int32, len(actions))


def first_false(predicate: Any, items: list[Any]) -> int | None:
    """The position of the first item for which ``predicate`` is false (iterated in C), or None."""
    return next(compress(count(), map(not_, map(predicate, items))), None)


class _Level:
    """The level being built: its new fingerprints, parent pointers and violations, and its
    store."""

    def __init__(self, store: FrontierStore, base: int, seen: bool = False) -> None:
        self.store = store
        self.base = base  # global index of its first state
        self.count = 0
        #: while the level is kept as one dictionary: the fingerprints its successors had in the
        #: batches absorbed so far and in the batch being built (visited at earlier levels or not;
        #: empty during the first batch, which is its own); None once it is block-wise (``fps``). It
        #: is the first batch's own dictionary (not a copy of its keys, which cost two-phase RM=7 87
        #: M of its 22.2 G search instructions), so it holds that batch's entries until the level
        #: ends, at most ``_ABSORB_AT`` of them; the later batches' new fingerprints are added to it
        #: with None
        self.seen: dict[int, Any] | None = {} if seen else None
        #: the level's new fingerprints, once block-wise
        self.fps = LevelFingerprints()
        self.new_fps: list[np.ndarray] = []  # in discovery order, a chunk a block
        self.parents: list[np.ndarray] = []
        self.actions: list[np.ndarray] = []
        #: invariant name -> global index of its first violating state in this level
        self.found: dict[str, int] = {}


def _blocks(frontier: Any) -> Any:
    """The frontier block by block: a store's own blocks, a list cut in ``frontier.BLOCK``s."""
    if isinstance(frontier, FrontierStore):
        return frontier.blocks()
    size = frontier_store.BLOCK
    return (frontier[i:i + size] for i in range(0, len(frontier), size))


#: share of the memory budget past which the parent log is kept on disk
SPILL_AT = 0.5
#: share of the memory budget the two frontier stores (the frontier and the level being built) may
#: hold in memory together, half each; past it a store writes its blocks to disk. A store keeps its
#: first states as Python objects (``FRONTIER_OBJECT_SHARE``) and pools or encodes the others, all
#: of them once the run is past ``SPILL_AT`` of its budget.
FRONTIER_SHARE = 0.25
#: False: every block of the frontier is encoded from the first level on (``bench/memory_bench.py``)
FRONTIER_OBJECTS = True
#: share of the memory budget the two stores may hold as Python objects together (half each, counted
#: at ``frontier.OBJECT_BYTES`` a state): a level that fits costs no encoding at all, a level past
#: it pools (or encodes) its later blocks. Pooling is for runs whose memory needs it: the generic
#: msgpack encoding of a model with no parts (Kafka's TLA+ specifications) cost tla:Kip320 R2L3M3E3
#: four times the CPU of its search (13.2 against 3.3 s, levels of at most 15,848 states), and the
#: pooled one about 3.5 us a Kafka state. With the default budget (80% of a 23 GB machine) a store
#: keeps about a million states as objects; the largest levels of a 36-million-orbit run are pooled
#: past that (bench/NOTES.md, "Frontier objects by the memory budget").
FRONTIER_OBJECT_SHARE = 1 / 16
#: a fixed count of objects a store instead of the share (None: the share; ``bench/memory_bench.py
#: --object-states`` measures the memory a fixed count gives)
FRONTIER_OBJECT_STATES: int | None = None
#: the parent log is written to an anonymous temporary file from the first level on (fixed-width
#: records, memory-mapped only when a trace is rebuilt or a checkpoint written): 16 bytes a state
#: less in memory for a sequential write a level. False: kept in memory until ``SPILL_AT``.
PARENTS_ON_DISK = True


def object_states(memory_budget_mb: float) -> float:
    """States each of the two frontier stores keeps as Python objects under a memory budget of this
    many MB: ``FRONTIER_OBJECT_STATES`` when set, else its half of ``FRONTIER_OBJECT_SHARE`` of the
    budget."""
    if FRONTIER_OBJECT_STATES is not None:
        return FRONTIER_OBJECT_STATES
    # inf: no budget
    return memory_budget_mb * 2**20 * FRONTIER_OBJECT_SHARE / 2 / frontier_store.OBJECT_BYTES


class LocalBFS(LevelSearch):
    engine = "local"

    def __init__(self, model: Model, options: SearchOptions) -> None:
        self.model = model
        self.options = options
        self.symmetry = uses_symmetry(model, options)
        self.invariants = options.safety_invariants()
        self.memory_budget = options.max_memory_mb or default_memory_budget_mb()
        self.under_pressure = False  # past SPILL_AT of the memory budget
        #: bytes each frontier store may keep in memory
        self.store_budget = self.memory_budget * 2**20 * FRONTIER_SHARE / 2
        #: states each frontier store may keep as Python objects
        self.object_states = object_states(self.memory_budget)
        # run statistics (this process's expansions; a resumed run does not report them)
        self.coverage: Counter | None = Counter() if options.coverage else None
        #: out-degree -> states expanded with it, for those folded in (``_degrees``: all of them)
        self._degree_counts: dict[int, int] = {}
        # the out-degree of each state expanded since the last fold
        self._degree_list: list[int] = []
        self._discovered: dict[str, Discovery] = {}
        #: the form states are stored in: symmetry's canonical form, dead messages dropped
        #: (``search_canonical``)
        self.canonical = search_canonical(model, options)
        self.successor_view = SuccessorView(model, self.symmetry, self.canonical)

    @property
    def _degrees(self) -> dict[int, int]:
        """Out-degree -> states expanded with it (this process's expansions)."""
        self._fold_degrees()
        return self._degree_counts

    def _fold_degrees(self) -> None:
        """Count the out-degrees collected since the last fold into the histogram (one bincount)."""
        pending = self._degree_list
        if not pending:
            return
        counts = np.bincount(np.fromiter(pending, np.intp, len(pending)))
        folded = self._degree_counts
        for degree in np.flatnonzero(counts).tolist():
            folded[degree] = folded.get(degree, 0) + int(counts[degree])
        pending.clear()

    # -- the search ------------------------------------------------------------------------------
    def run(self) -> CheckResult:
        # States are acyclic immutable tuples: the cyclic garbage collector finds nothing to free
        # but rescans the ever-growing young generation, which used to cost half the run time.
        gc_was_enabled = gc.isenabled()
        gc.disable()
        try:
            return self._run()
        finally:
            if gc_was_enabled:
                gc.enable()

    def _run(self) -> CheckResult:
        opts = self.options
        started = time.monotonic()
        if opts.resume_from:
            st = ckpt.load(opts.resume_from, self.model, opts)
            st.frontier = store_of(self.model, st.frontier, self.store_budget, self._spill_dir(),
                                   FRONTIER_OBJECTS, self.object_states)
            if PARENTS_ON_DISK:
                st.log.spill(self._spill_dir())
        else:
            st = self._initial_level()
        self._started = started - st.elapsed
        return run_levels(self, st)

    # -- the hooks of the level loop (checker.levels) ---------------------------------------------
    def queue(self, st: SearchState) -> int:
        return len(st.frontier)

    def distinct(self, st: SearchState) -> int:
        return len(st.log)

    def expand_level(self, st: SearchState) -> None:
        self._expand_level(st)

    def after_level(self, st: SearchState) -> None:
        self._spill_if_needed(st)
        st.elapsed = self.elapsed()

    def save(self, st: SearchState, path: str) -> None:
        st.elapsed = self.elapsed()
        ckpt.save(path, self.model, self.options, st)

    def finish(self, st: SearchState, reason: str | None, checkpoint_file: str
               | None) -> CheckResult:
        elapsed = self.elapsed()
        self._report(st, elapsed, force=True)
        return self._result(st, elapsed, reason, checkpoint_file)

    def _spill_if_needed(self, st: SearchState) -> None:
        """Past ``SPILL_AT`` of the memory budget the parent log goes to disk, the level dictionary
        sheds visited successors more often, and the run goes on; only if memory still runs out
        does it stop (undetermined, with a checkpoint)."""
        if self.under_pressure or rss_mb() <= self.memory_budget * SPILL_AT:
            return
        self.under_pressure = True
        st.log.spill(self._spill_dir())

    def _spill_dir(self) -> str | None:
        """Where the parent log and the frontier stores spill: beside the checkpoint, or the
        system's temporary directory (the files are anonymous: unlinked as they are created)."""
        path = self.options.checkpoint_path
        return os.path.dirname(os.path.abspath(path)) if path else None

    def _new_store(self, expanding: Any = None) -> FrontierStore:
        """The store of the next level; ``expanding``: the frontier it is built from (its pools are
        shared)."""
        return FrontierStore(self.model, self.store_budget, self._spill_dir(),
                             keep_objects=FRONTIER_OBJECTS and not self.under_pressure,
                             object_states=self.object_states,
                             previous=expanding if isinstance(expanding, FrontierStore) else None)

    def should_stop(self, st: SearchState) -> bool:
        self._note_discoveries(st)
        if not self.options.stop_at_first:
            if not self.options.stop_when_all_found:
                return False
            every = bool(self.invariants) and len(st.found) == len(self.invariants)
            return every and (st.deadlock is not None or not self.options.check_deadlock)
        return bool(st.found) or st.deadlock is not None

    def _note_discoveries(self, st: SearchState) -> None:
        """Called after every committed level (both engines): the figures a search stopping at each
        newly violated invariant reports, so that one ``--continue`` search gives every invariant's
        own stop-at-first figures (``kmc matrix``)."""
        if self.options.resume_from:  # the levels before the checkpoint are not known
            return
        for name in st.found:
            if name not in self._discovered:
                self._discovered[name] = Discovery(self._distinct_so_far(st), st.generated,
                                                   st.depth)

    def _distinct_so_far(self, st: SearchState) -> int:
        return len(st.log)

    def _initial_level(self) -> SearchState:
        st = SearchState(edges=[] if self.options.keep_graph else None)
        if PARENTS_ON_DISK:
            st.log.spill(self._spill_dir())
        inits = list(self.model.init_states())
        validate_initial(self.model, inits)
        st.generated = len(inits)
        canonical = self.canonical
        fresh: dict[int, Any] = {}
        for state in inits:
            if canonical is not None:
                state = canonical(state)
            if uses_bounds(self.model) and not self.model.within_bounds(state):
                continue
            fresh.setdefault(hash(state), state)
        self._commit_level(st, {fp: (state, -1, None) for fp, state in fresh.items()})
        return st

    def _expand_level(self, st: SearchState) -> None:
        # A Ctrl-C or a budget running out while the level is expanded abandons it (the search
        # state goes back to the level boundary); once it is expanded, Ctrl-C is held until it is
        # committed. Either way the checkpoint written on Ctrl-C is of whole levels, and a resume
        # gives the same counts.
        generated, deadlock, actions = st.generated, st.deadlock, len(st.actions.actions)
        edges = None if st.edges is None else len(st.edges)
        level = _Level(self._new_store(st.frontier), len(st.log), seen=self._level_as_dictionary())
        held = interrupts_deferred()
        try:
            index = st.frontier_base
            # while the level is one dictionary: blocks not absorbed yet
            batch: dict[int, tuple] | None = None
            for block in _blocks(st.frontier):
                # for the progress reports (``_expand`` adds its pending ones)
                self._level_new = level.count
                if level.seen is None:
                    fresh = self._expand(st, block, index, st.generated)
                    index += len(block)
                    self._absorb(st, level, fresh)
                    continue
                # the first batch is its own ``seen``; a later one is added to the earlier ones'
                # fingerprints too
                batch = self._expand(st, block, index, st.generated, level.seen or None, batch)
                index += len(block)
                size = len(level.seen) if level.seen else len(batch)
                outgrown = size > self.object_states or not self._level_as_dictionary()
                if outgrown or len(batch) >= _ABSORB_AT:
                    self._absorb(st, level, batch)
                    # the first batch's dictionary is the level's from now on
                    if not outgrown and not level.seen:
                        level.seen = batch
                    batch = None
                if outgrown:
                    self._go_block_wise(level)
            if batch:
                self._absorb(st, level, batch)
            del batch
            level.store.finish()
            held.__enter__()
        except BaseException:
            st.generated, st.deadlock = generated, deadlock
            st.actions.truncate(actions)
            if edges is not None:
                del st.edges[edges:]
            level.store.close()
            raise
        try:
            self._commit(st, level)
        finally:
            self._level_new = 0
            held.__exit__(None, None, None)

    def _expand(self, st: SearchState, frontier: list[Any], index: int, generated_before: int,
                seen: dict[int, None] | None = None, fresh: dict[int, tuple]
                | None = None) -> dict[int, tuple]:
        """Expand ``frontier`` (whose first state has global index ``index``) in order.

        Returns fingerprint -> (state, parent global index, action) for the first occurrence of each
        successor fingerprint, in discovery order, and adds the successors computed to
        ``st.generated``. This is the hot loop: one hash and one dict lookup a successor. ``seen``:
        the fingerprints the level had before this call (``_Level.seen``), which are left out and to
        which this call's are added; None: only the first occurrence within this call counts.
        ``fresh``: a dictionary to add the new ones to (a batch of blocks, with ``seen``), else a
        new one.
        """
        model = self.model
        successors = model.successors
        within = model.within_bounds if uses_bounds(model) else None
        canonical = self.canonical
        check_deadlock = self.options.check_deadlock and st.deadlock is None
        edges = st.edges
        only_canonical = within is None and canonical is not None and edges is None
        # no bounds, symmetry or graph: every successor is kept as it is (``kept`` hands back the
        # list), and the loop needs neither the call nor a look at ``edges`` a successor (3% of
        # two-phase's instructions)
        every = within is None and canonical is None and edges is None
        cover = self.coverage
        kept = self.successor_view.kept
        if fresh is None:
            fresh = {}
        mark = seen is not None  # a new fingerprint goes into ``seen`` too
        if seen is None:
            seen = fresh
        checked = 0  # entries of ``fresh`` known not to be visited yet (the first ones)
        generated = 0
        # out-degree of each state expanded (folded into ``_degrees`` now and then)
        degrees = self._degree_list
        # every _CHECK_EVERY successors counted over the whole run, not from this call: a level is
        # expanded in many small calls (one a block)
        next_check = _CHECK_EVERY - generated_before % _CHECK_EVERY
        prune_at = _PRUNE_AT_UNDER_PRESSURE if self.under_pressure else _PRUNE_AT
        for state in frontier:
            succs = successors(state)
            if type(succs) is not list:
                succs = list(succs)
            if cover is not None:
                cover.update(map(_first, succs))
            degree = len(succs)
            degrees.append(degree)
            if every:
                _keep_every(succs, index, seen, fresh, mark)
            elif only_canonical:
                _keep_canonical(succs, index, seen, fresh, mark, canonical)
            else:
                _keep_viewed(kept(succs), index, seen, fresh, mark, edges, st.actions)
            generated += degree
            if check_deadlock and not succs:
                st.deadlock = index
                check_deadlock = False
            index += 1
            if generated >= next_check:
                next_check = generated + _CHECK_EVERY
                self._check_budgets(st, generated_before + generated, len(fresh))
                if len(fresh) - checked >= prune_at:
                    checked = _drop_visited(st.visited, fresh, len(fresh) - checked)
        st.generated += generated
        if len(degrees) >= _FOLD_DEGREES_AT:
            self._fold_degrees()
        return fresh

    def _level_as_dictionary(self) -> bool:
        """Whether a level starts (or stays) as one dictionary of its fingerprints: while its states
        are kept as objects, not past ``SPILL_AT`` of the memory budget (the dictionary's size is
        bounded by the same ``object_states`` as a frontier store's objects: ``_go_block_wise``)."""
        return FRONTIER_OBJECTS and not self.under_pressure and self.object_states > 0

    def _go_block_wise(self, level: _Level) -> None:
        """The level's dictionary outgrew ``object_states`` fingerprints (or memory is short): its
        new fingerprints go to a ``LevelFingerprints`` and the dictionary is let go."""
        if level.new_fps:
            level.fps.add(np.concatenate(level.new_fps))
        level.seen = None

    def _commit_level(self, st: SearchState, fresh: dict[int, tuple]) -> None:
        """Commit a whole level given as one dictionary (the initial states).

        ``fresh`` maps fingerprint -> (state, parent global index, action), in discovery order.
        """
        level = _Level(self._new_store(), len(st.log))
        self._absorb(st, level, fresh)
        level.store.finish()
        self._commit(st, level)

    def _absorb(self, st: SearchState, level: _Level, fresh: dict[int, tuple]) -> None:
        """Add one block's successors to the level being built: those visited at earlier levels or
        already found by this level are dropped, the others (in discovery order) are the level's
        next states: invariants checked, parent pointers noted, states written to its store."""
        if not fresh:
            return
        fps = np.fromiter(fresh.keys(), dtype=np.int64, count=len(fresh))
        new_mask = ~st.visited.contains(fps)
        # (kept as a dictionary: ``_expand`` left them out)
        if level.seen is None and len(level.fps):
            unvisited = np.flatnonzero(new_mask)
            new_mask[unvisited[level.fps.contains(fps[unvisited])]] = False
        values = list(fresh.values())
        del fresh
        entries = (values if new_mask.all()
                   else list(map(values.__getitem__, np.flatnonzero(new_mask).tolist())))
        del values
        if not entries:
            return
        new_fps = fps[new_mask]
        states = list(map(_first, entries))
        level.parents.append(np.fromiter(map(_second, entries), np.int32, len(entries)))
        level.actions.append(action_ids(st.actions, list(map(_third, entries))))
        del entries
        for name, index in self._check_invariants(st, states, level.base + level.count).items():
            # blocks come in order: the first one found is the first
            level.found.setdefault(name, index)
        if level.seen is None:
            level.fps.add(new_fps)
        level.new_fps.append(new_fps)
        level.count += len(states)
        level.store.extend(states)

    def _commit(self, st: SearchState, level: _Level) -> None:
        """The level becomes the frontier: the visited set, the parent log and the violations
        grow."""
        if level.count:
            st.visited.add(level.fps.sorted() if level.seen is None
                           else np.concatenate(level.new_fps))
            st.log.append(np.concatenate(level.new_fps), np.concatenate(level.parents),
                          np.concatenate(level.actions))
            st.depth += 1
        for name, index in level.found.items():
            st.found.setdefault(name, index)
        previous = st.frontier
        st.frontier = level.store
        st.frontier_base = level.base
        if isinstance(previous, FrontierStore):
            previous.close()
        self._report(st, time.monotonic() - self._started_or_now())

    def _started_or_now(self) -> float:
        return getattr(self, "_started", time.monotonic())

    def _check_invariants(self, st: SearchState, states: list[Any], base: int) -> dict[str, int]:
        """Invariant name -> global index of its first violation among ``states`` (global indexes
        from ``base``), for the invariants not violated at an earlier level."""
        found = {}
        for inv in self.invariants:
            if inv.name in st.found:
                continue
            offset = first_false(inv.holds, states)
            if offset is not None:
                found[inv.name] = base + offset
        return found

    def _check_budgets(self, st: SearchState, generated: int, pending: int) -> None:
        now = time.monotonic()
        elapsed = now - self._started
        if self.options.max_seconds is not None and elapsed > self.options.max_seconds:
            raise BudgetExceeded(f"time budget of {self.options.max_seconds:g} s ran out at depth "
                                 f"{st.depth}")
        if now - getattr(self, "_last_rss", 0.0) >= _RSS_EVERY:
            self._last_rss = now
            if rss_mb() > self.memory_budget:
                    raise BudgetExceeded(f"{MEMORY_BUDGET} of {self.memory_budget:.0f} MB ran out "
                                         f"at depth {st.depth}")
        if (self.options.progress and now - getattr(self, "_last_report", 0.0)
            >= self.options.progress_every):
            self._last_report = now
            distinct = len(st.log) + getattr(self, "_level_new", 0) + pending
            self.options.progress(Progress(st.depth + 1, generated, distinct, len(st.frontier),
                                           elapsed))

    def _report(self, st: SearchState, elapsed: float, force: bool = False) -> None:
        if self.options.progress:
            self._last_report = time.monotonic()
            self.options.progress(Progress(st.depth, st.generated, len(st.log), len(st.frontier),
                                           elapsed))

    # -- the result ------------------------------------------------------------------------------
    def _result(self, st: SearchState, elapsed: float, reason: str | None, checkpoint_file: str
                | None) -> CheckResult:
        if self.options.observer is not None:
            self.options.observer.finished(st)

        def trace_of(index: int, name: str, why: Any) -> Any:
            return rebuild_trace(self.model, st.log.path_to(index), st.actions.actions,
                                 self.options, name, why)

        result = search_result(self.model, self.invariants, found=st.found, deadlock=st.deadlock,
                               trace_of=trace_of, distinct_states=len(st.log),
                               states_generated=st.generated, depth=st.depth, seconds=elapsed,
                               reason=reason, engine=self.engine, discovered=self._discovered,
                               symmetry=self.symmetry, queue=len(st.frontier),
                               checkpoint_file=checkpoint_file)
        if st.edges is not None:
            result.graph = (st.log, st.edges, st.actions)
        if self.options.reduce == "dead":
            from checker.dead import report

            result.extra["reduction"] = report(self.model)
        self._add_statistics(st, result)
        return result

    def _add_statistics(self, st: SearchState, result: CheckResult) -> None:
        """Fingerprint collision estimates, out-degree and (``--coverage``) action counts."""
        # the parallel parent keeps none
        fps = st.visited.array if len(st.visited) == len(st.log) else None
        result.collision = collision_estimates(len(st.log), st.generated, fps)
        if self._degrees and not self.options.resume_from:
            result.out_degree = OutDegree.of(self._degrees)
            if self.coverage is not None:
                result.coverage = dict(self.coverage)


def check(model: Model, options: SearchOptions | None = None) -> CheckResult:
    """Breadth-first check of ``model`` with the local single-process engine."""
    return LocalBFS(model, options or SearchOptions()).run()


@dataclass(frozen=True)
class LocalOptions:
    """The local engine's options: none (it runs in this process; ``--workers N`` is the parallel
    engine's)."""


def run_engine(model: Model, options: SearchOptions, engine_options: LocalOptions) -> CheckResult:
    """``--engine bfs``: the search in this process, on the model's compiled kernel when
    ``options.kernel`` asks for it and the kernel can run it (``checker.kernel``), else on the
    readable model; ``result.extra["path"]`` says which ran (and why not the kernel)."""
    if options.kernel == "off":
        return check(model, options)
    from checker import kernel

    outcome = kernel.run(model, options, options.kernel)
    if isinstance(outcome, CheckResult):
        return outcome
    result = check(model, options)
    result.extra["path"] = {"path": "readable", "reason": outcome}
    return result


# -- the three ways ``LocalBFS._expand`` keeps one state's successors (one call a state expanded:
# -- 1.9% more instructions a state on two-phase's readable path, 0.4% on the Kafka model's) --
def _keep_every(succs: list, index: int, seen: dict, fresh: dict, mark: bool) -> None:
    """No bounds, symmetry or graph: every successor as it is, one hash and one look-up each; a new
    fingerprint goes into ``fresh`` (and into ``seen`` when ``mark``)."""
    for act, succ in succs:
        fp = hash(succ)
        if fp not in seen:
            fresh[fp] = (succ, index, act)
            if mark:
                seen[fp] = None


def _keep_canonical(succs: list, index: int, seen: dict, fresh: dict, mark: bool,
                    canonical: Any) -> None:
    """--symmetry without bounds or a graph (10% fewer instructions than ``_keep_viewed``): a
    successor whose own fingerprint is known is a canonical state found already, its canonical form
    itself."""
    for pair in succs:
        succ = pair[1]
        raw = hash(succ)
        if raw in seen:
            continue
        image = canonical(succ)
        fp = raw if image is succ else hash(image)
        if fp not in seen:
            fresh[fp] = (image, index, pair[0])
            if mark:
                seen[fp] = None


def _keep_viewed(succs: Any, index: int, seen: dict, fresh: dict, mark: bool, edges: list | None,
                 actions: Any) -> None:
    """The successors every search keeps (``checker.search.SuccessorView``: bounds, symmetry), each
    an edge of the state graph when one is kept."""
    for act, succ in succs:
        fp = hash(succ)
        if edges is not None:
            edges.append((index, fp, actions.id(act)))
        if fp not in seen:
            fresh[fp] = (succ, index, act)
            if mark:
                seen[fp] = None
