"""The local multi-process engine: level-synchronous BFS with the fingerprint space sharded among
workers, and no per-state work in the coordinating parent.

Each worker owns two things:

* a **shard of the fingerprint space** (``owner_of``: a multiplicative hash of the fingerprint,
  modulo the workers) and the visited set of that shard;
* a **contiguous part of the frontier** in the global discovery order (global indexes
  ``base_w .. base_w + size_w``), with the parent log of the states it committed.

One level takes four rounds, each run by every worker at once; the parent only sends the
round's command and adds up a few numbers per worker (the level's synchronisation):

1. *expand*: each worker expands its part in order, a chunk at a time, and keeps the first
   occurrence of each successor fingerprint that is not known to be visited (its own shard, and
   every shard's last two levels) as its level's candidates, in discovery order, in a frontier store
   (objects within the worker's share of the memory budget, pooled or encoded beyond, as
   ``checker.bfs`` does), then sends every candidate's fingerprint and key
   (``worker << 40 | position among the candidates``) straight to its owner, through a file per
   (sender, owner) pair in a private directory (in /dev/shm when it has room);
2. *dedup*: each owner keeps, per fingerprint, the smallest key (parts are consecutive in the
   global order and each dictionary is in discovery order, so the smallest key is the first
   occurrence in the single-process engine's frontier order, whatever the worker count), drops
   the fingerprints its shard has visited, and sends each winning key back to the worker that
   generated it;
3. *commit*: each worker keeps its winning entries, in key order, as its part of the next
   frontier. The children of part ``w`` come before those of part ``w + 1`` in the global order,
   so the parent only needs each worker's count to number the level: the parent log (every
   global index, parent and action), the counts and the shortest counterexamples are exactly
   those of ``checker.bfs``.
4. *check*: once the parts are even (below), each worker checks the invariants on its part, a block
   at a time; the first violation in part order is the first in discovery order.

When the parts drift apart in size, the tail of one part moves to the head of the next (worker to
worker, through a file), which keeps the global order; this happens between the commit and the
check, so that both the check and the next expansion are shared evenly. The parent log stays in
the workers and is gathered at the end of the run and for checkpoints.

Every round is timed: its wall time in the parent, each worker's CPU time in it, and so each
worker's idle time at the rounds' ends (the result's ``round_wall_seconds``,
``worker_round_cpu_seconds`` and ``worker_idle_seconds``).

The levels run in the one level loop (``checker.levels``), as the single-process engine's do:
``ParallelBFS`` gives it the four rounds as its level step and its hooks (a Ctrl-C seen by the
workers, the memory of every process, a checkpoint that gathers the parts). Budgets, Ctrl-C and
checkpoints behave as in the single-process engine: a level is either committed by every worker
or abandoned by all. Runs that keep the state graph (liveness) use the single-process engine.
``ParallelOptions``: the worker processes (``--workers``; 0, the default, is one a core).

The engine measures its own serial share: the parent's CPU seconds (the initial level, the
synchronisation, gathering the log, rebuilding traces) over the parent's plus every worker's CPU
seconds. Amdahl's law then bounds the speed-up on N cores by ``1 / (s + (1 - s) / N)``.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import pickle
import shutil
import signal
import tempfile
import time
import traceback
from dataclasses import dataclass, replace
from operator import itemgetter
from typing import IO, Any

import numpy as np

from checker import bfs
from checker import checkpoint as ckpt
from checker.bfs import SPILL_AT, LocalBFS, first_false
from checker.frontier import FrontierStore, state_codec
from checker.levels import MEMORY_BUDGET, BudgetExceeded, run_levels
from checker.result import CheckResult, amdahl_speedup
from checker.search import ActionTable, Progress, SearchOptions, SearchState
from checker.visited import LOG_RECORD, FingerprintSet, LevelFingerprints
from spec.errors import CorruptDataError, UsageError
from spec.model import Model

_REBALANCE_SLACK = 0.03  # parts may differ by this fraction of the frontier before states move
_REBALANCE_MIN = 256  # ... and by at least this many states
# a successor's key: sending worker << 40 | its position in the sender's level dictionary
_KEY_BITS = 40
_KEY_MASK = (1 << _KEY_BITS) - 1
#: the rounds of a level, each one run by every worker at once and waited for by the parent
_ROUNDS = ("expand", "dedup", "commit", "check")
#: states a worker checks the invariants on at once (every invariant on a block before the next
#: block)
_CHECK_BLOCK = 256
#: states of a worker's part expanded into one level dictionary: the candidates they give are pruned
#: and stored (as objects within the worker's share of the budget, pooled beyond) a chunk at a time
_EXPAND_CHUNK = 2048
#: committed levels whose fingerprints (every shard's) each worker keeps to prune its level
#: dictionary
_RECENT_LEVELS = 2
_MIX = np.uint64(0x9E3779B97F4A7C15)  # 2**64 / golden ratio: spreads neighbouring fingerprints
_first, _second, _third = itemgetter(0), itemgetter(1), itemgetter(2)


def owner_of(fps: np.ndarray, workers: int) -> np.ndarray:
    """The worker that owns each fingerprint of ``fps`` (int64), as an int64 array."""
    mixed = fps.view(np.uint64) * _MIX
    return ((mixed >> np.uint64(32)) % np.uint64(workers)).astype(np.int64)


def available_cores() -> int:
    """The cores this process may run on (``--workers auto``)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _rss_mb_of(pids: list[int]) -> float:
    """The memory of these processes together (MB), what the memory budget is held against: the sum
    of their proportional set sizes (``Pss``: a page shared by k processes counts 1/k in each), so
    that the pages the workers share with the parent since the fork (the interpreter, the model, the
    modules: about 37 MB) count once, not once a process as the sum of the resident sets counted
    them; the resident set where /proc gives no ``Pss`` (kernels before 4.14)."""
    page = os.sysconf("SC_PAGE_SIZE")
    total = 0
    for pid in pids:
        try:
            total += _pss_kb(pid) * 1024
            continue
        except (OSError, ValueError, IndexError):
            pass
        try:
            with open(f"/proc/{pid}/statm") as f:
                total += int(f.read().split()[1]) * page
        except (OSError, ValueError, IndexError):
            pass
    return total / 2**20


def _pss_kb(pid: int) -> int:
    """The proportional set size of process ``pid`` in kB (``/proc/<pid>/smaps_rollup``); OSError or
    ValueError where it is not there."""
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            if line.startswith("Pss:"):
                return int(line.split()[1])
    raise ValueError(f"no Pss line for process {pid}")


def _peak_rss_kb() -> int:
    """This process's peak resident set in kB (VmHWM), 0 where /proc does not give it."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


# /dev/shm is used for the exchanges only with this much room (containers give 64 MB)
_SHM_MIN_FREE = 2**30


def _exchange_dir() -> str:
    """A private directory for the level's exchanges (16 bytes a successor a level, deleted as
    read): in memory (/dev/shm) where there is room, else the temporary directory."""
    shm = "/dev/shm"
    base = None
    try:
        stats = os.statvfs(shm)
        if os.access(shm, os.W_OK) and stats.f_bavail * stats.f_frsize >= _SHM_MIN_FREE:
            base = shm
    except OSError:
        pass
    return tempfile.mkdtemp(prefix="kmc-exchange-", dir=base)


def _write(path: str, *arrays: np.ndarray) -> None:
    with open(path, "wb") as f:
        for array in arrays:
            array.tofile(f)


def _read(path: str) -> np.ndarray:
    data = np.fromfile(path, np.int64)
    os.unlink(path)
    return data


class _WorkerLog:
    """The parent log of the states one worker committed, a segment a level (fingerprints, parent
    global indexes, the worker's own action ids), until the parent gathers it a level at a time.

    On disk by default (``checker.bfs.PARENTS_ON_DISK``, as the single-process engine's log):
    16-byte records in an anonymous temporary file, so that a worker keeps no memory per committed
    state for the log (in memory it was 16 bytes an orbit over the workers, a third of the workers'
    share at the peak)."""

    def __init__(self, on_disk: bool, directory: str | None) -> None:
        self._on_disk = on_disk
        self._directory = directory
        self._file: IO[bytes] | None = None
        #: in memory: (fps, parents, actions) a level; on disk: (first record, records) a level
        self._levels: list[Any] = []

    def __len__(self) -> int:
        return len(self._levels)

    def append(self, fps: np.ndarray, parents: np.ndarray, actions: np.ndarray) -> None:
        if not self._on_disk:
            self._levels.append((fps, parents, actions))
            return
        if self._file is None:
            self._file = tempfile.TemporaryFile(prefix="kmc-parents-", dir=self._directory)
        records = np.empty(fps.size, LOG_RECORD)
        records["fp"], records["parent"], records["action"] = fps, parents, actions
        self._file.seek(0, 2)
        first = self._file.tell() // LOG_RECORD.itemsize
        records.tofile(self._file)
        self._levels.append((first, int(fps.size)))

    def level(self, index: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The segment of the ``index``-th level not gathered yet."""
        if not self._on_disk:
            return self._levels[index]
        first, size = self._levels[index]
        assert self._file is not None
        self._file.flush()
        self._file.seek(first * LOG_RECORD.itemsize)
        records = np.fromfile(self._file, LOG_RECORD, size)
        if records.size != size:
            raise CorruptDataError(f"a worker's parent log lost records ({records.size} of {size} "
                                   "read back)")
        return (records["fp"].copy(), records["parent"].copy(), records["action"].copy())

    def nbytes(self) -> int:
        """Bytes of memory the segments take (0 on disk)."""
        return 0 if self._on_disk else int(sum(a.nbytes for level in self._levels for a in level))

    def clear(self) -> None:
        """Every level was gathered: the file starts again from nothing."""
        self._levels = []
        if self._file is not None:
            self._file.seek(0)
            self._file.truncate()

    def close(self) -> None:
        self.clear()
        if self._file is not None:
            self._file.close()
            self._file = None


def _chunks(blocks: Any, size: int) -> Any:
    """Blocks of states joined into chunks of at least ``size`` states (the last one may be
    smaller)."""
    chunk: list[Any] = []
    for block in blocks:
        chunk.extend(block)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _check_blocks(blocks: Any) -> Any:
    """(offset in the part, states) of at most ``_CHECK_BLOCK`` states, in order."""
    at = 0
    for block in blocks:
        for start in range(0, len(block), _CHECK_BLOCK):
            yield at + start, block[start:start + _CHECK_BLOCK]
        at += len(block)


class _RecentlySeen:
    """What a worker knows to be visited: its own shard of the visited set, and every fingerprint
    (all shards) of the last ``_RECENT_LEVELS`` committed levels.

    A successor already visited was, nearly always, found at the level being expanded or the one
    before; a worker that knew only its own shard kept the others' as candidates (objects, in its
    level dictionary and its level's entries) until their owners dropped them at the dedup round.
    Dropping a visited candidate early changes nothing else: its owner would have dropped it, and
    the first occurrence of every other fingerprint keeps its place (as
    ``checker.bfs._drop_visited``)."""

    def __init__(self, shard: FingerprintSet) -> None:
        self.shard = shard
        self.levels: list[np.ndarray] = []  # sorted, the newest last

    def add_level(self, fps: np.ndarray) -> None:
        self.levels = [*self.levels[1 - _RECENT_LEVELS:], np.sort(fps)]

    def forget(self) -> None:
        self.levels = []

    def contains(self, fps: np.ndarray, *more: Any) -> np.ndarray:
        """A boolean mask: which of ``fps`` are visited (or in one of the sorted arrays ``more``).
        The keys are sorted once for every array searched (``checker.visited.member`` sorts them for
        each)."""
        order = np.argsort(fps)
        keys = fps[order]
        hit = np.zeros(fps.size, dtype=bool)
        for data in (self.shard.array, *self.levels, *more):
            if data.size:
                pos = np.searchsorted(data, keys)
                pos[pos == data.size] = 0
                hit |= data[pos] == keys
        mask = np.empty(fps.size, dtype=bool)
        mask[order] = hit
        return mask


class _WorkerBFS(LocalBFS):
    """The expansion side of LocalBFS, run inside a worker on its part of the frontier."""

    def __init__(self, model: Model, options: SearchOptions, abort: Any, pids: list[int]) -> None:
        super().__init__(model, replace(options, progress=None, observer=None, checkpoint_path=None,
                                        resume_from=None))
        self.abort = abort
        self.pids = pids
        self._last_rss = 0.0

    def _check_budgets(self, st: SearchState, generated: int, pending: int) -> None:
        if self.abort.value:
            raise BudgetExceeded("interrupted")
        now = time.monotonic()
        if self.options.max_seconds is not None and now - self._started > self.options.max_seconds:
            raise BudgetExceeded(f"time budget of {self.options.max_seconds:g} s ran out at depth "
                                 f"{st.depth}")
        if now - self._last_rss >= 0.2:
            self._last_rss = now
            rss = _rss_mb_of(self.pids)
            if rss > self.memory_budget * SPILL_AT:
                # the level dictionary sheds visited successors more often
                self.under_pressure = True
            if rss > self.memory_budget:
                raise BudgetExceeded(f"{MEMORY_BUDGET} of {self.memory_budget:.0f} MB ran out at "
                                     f"depth {st.depth}")


def _worker_main(conn: Any, index: int, workers: int, exchange: str, model: Model,
                 options: SearchOptions, part: list[Any], visited: np.ndarray, recent: np.ndarray,
                 depth: int, started: float, abort: Any) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides what Ctrl-C means
    try:
        _Worker(conn, index, workers, exchange, model, options, part, visited, recent, depth,
                started, abort).serve()
    except (EOFError, BrokenPipeError, KeyboardInterrupt):
        pass
    finally:
        conn.close()


class _Worker:
    def __init__(self, conn: Any, index: int, workers: int, exchange: str, model: Model,
                 options: SearchOptions, part: list[Any], visited: np.ndarray, recent: np.ndarray,
                 depth: int, started: float, abort: Any) -> None:
        self.conn = conn
        self.w = index
        self.n = workers
        self.exchange = exchange
        self.model = model
        self.engine = _WorkerBFS(model, options, abort, [])
        # a worker's stores get its share of what the single process's two stores may hold
        self.engine.store_budget /= workers
        self.engine.object_states /= workers
        #: this worker's part of the frontier: a frontier store (objects while they fit this
        #: worker's share of the memory budget, pooled or encoded beyond, as the single process's),
        #: cut at either end to rebalance
        self.part = self._store(part).finish()
        #: the level being expanded: its candidates (first occurrence in this worker, visited ones
        #: dropped) in a store, by position, with their fingerprints, parents' global indexes and
        #: actions (ids in ``_actions``)
        self._candidates: FrontierStore | None = None
        self._level_parents = np.zeros(0, np.int64)
        self._level_actions = np.zeros(0, np.int32)
        self._actions = ActionTable()
        # the shard of the visited set this worker owns
        self.visited = FingerprintSet(visited[owner_of(visited, workers) == index])
        self.seen = _RecentlySeen(self.visited)
        self.seen.add_level(recent)  # the frontier's level, every shard
        self.engine._started = started
        self.st = SearchState(visited=self.visited, depth=depth)
        self.table = ActionTable()
        self.reported = 0  # actions of the local table already sent to the parent
        self._level_fps = np.zeros(0, np.int64)
        self._won = np.zeros(0, np.int64)  # fingerprints this owner will add to its shard on commit
        #: the parent log of the states this worker committed: one (fps, parents, local action ids)
        #: per level, gathered by the parent
        spill = (os.path.dirname(os.path.abspath(options.checkpoint_path))
                 if options.checkpoint_path else None)
        self.log = _WorkerLog(bfs.PARENTS_ON_DISK, spill)
        #: states moved to a neighbour go through a file in the exchange directory, in the model's
        #: compact msgpack encoding (the frontier store's: data only, the model's own classes
        #: rebuilt; the generic codec for a model without one), never pickle. The generic codec cost
        #: about 190 us a moved state, on the critical path (the other workers wait while a
        #: neighbour writes and reads)
        self.pack, self.unpack = state_codec(model)
        #: CPU seconds this worker spent in each round of a level, over the run (``do_stats``)
        self.round_cpu = dict.fromkeys(_ROUNDS, 0.0)

    def _path(self, kind: str, sender: int, receiver: int) -> str:
        return os.path.join(self.exchange, f"{kind}-{sender}-{receiver}")

    def serve(self) -> None:
        conn = self.conn
        while True:
            command, *args = conn.recv()
            if command == "stop":
                return
            try:
                started = time.process_time()
                reply = getattr(self, f"do_{command}")(*args)
                if command in _ROUNDS:
                    self.round_cpu[command] += time.process_time() - started
            except BudgetExceeded as exc:
                self._forget_level()
                reply = ("budget", exc.reason)
            except Exception as exc:  # the model's own errors, reported by the parent
                self._forget_level()
                try:
                    pickle.dumps(exc)
                    reply = ("error", exc, traceback.format_exc())
                except Exception:
                    reply = ("error", RuntimeError(str(exc)), traceback.format_exc())
            conn.send(reply)

    def _store(self, states: Any = (), previous: FrontierStore | None = None) -> FrontierStore:
        engine = self.engine
        store = FrontierStore(self.model, engine.store_budget, engine._spill_dir(),
                              keep_objects=bfs.FRONTIER_OBJECTS and not engine.under_pressure,
                              object_states=engine.object_states, previous=previous)
        store.extend(list(states))
        return store

    def _forget_level(self) -> None:
        if self._candidates is not None:
            self._candidates.close()
        self._candidates = None
        self._level_parents = np.zeros(0, np.int64)
        self._level_actions = np.zeros(0, np.int32)
        self._actions = ActionTable()
        self._level_fps = np.zeros(0, np.int64)
        self._won = np.zeros(0, np.int64)

    # -- one level, three rounds -----------------------------------------------------------------
    def do_expand(self, base: int, depth: int, pids: list[int], deadlock_wanted: bool) -> tuple:
        """Round 1: expand the part (global indexes from ``base``), send (fingerprint, key) to
        owners."""
        st, engine = self.st, self.engine
        engine.pids = pids
        st.depth = depth
        st.deadlock = None if deadlock_wanted else -1
        st.generated = 0
        self._forget_level()
        candidates = self._candidates = self._store(previous=self.part)
        # the candidates' fingerprints so far: the first occurrence in this worker wins
        found = LevelFingerprints()
        fps_chunks, parent_chunks, action_chunks = [], [], []
        action_id = self._actions.id
        index = base
        for chunk in _chunks(self.part.blocks(), _EXPAND_CHUNK):
            fresh = engine._expand(st, chunk, index, st.generated)
            index += len(chunk)
            if not fresh:
                continue
            fps = np.fromiter(fresh.keys(), np.int64, len(fresh))
            keep = ~self.seen.contains(fps, *found.runs())
            values = list(fresh.values())
            del fresh
            entries = (values if keep.all()
                       else list(map(values.__getitem__, np.flatnonzero(keep).tolist())))
            del values
            if not entries:
                continue
            fps = fps[keep]
            found.add(fps)
            fps_chunks.append(fps)
            parent_chunks.append(np.fromiter(map(_second, entries), np.int64, len(entries)))
            action_chunks.append(np.fromiter(map(action_id, map(_third, entries)), np.int32,
                                             len(entries)))
            candidates.extend(list(map(_first, entries)))
            del entries
        candidates.finish()
        del found
        deadlock = st.deadlock if deadlock_wanted and st.deadlock is not None else -1
        fps = np.concatenate(fps_chunks) if fps_chunks else np.zeros(0, np.int64)
        self._level_parents = (np.concatenate(parent_chunks) if parent_chunks
                               else np.zeros(0, np.int64))
        self._level_actions = (np.concatenate(action_chunks) if action_chunks
                               else np.zeros(0, np.int32))
        del fps_chunks, parent_chunks, action_chunks
        self._level_fps = fps
        keys = np.arange(fps.size, dtype=np.int64)
        keys |= self.w << _KEY_BITS
        owners = owner_of(fps, self.n)
        order = np.argsort(owners, kind="stable")
        cuts = np.concatenate([[0], np.cumsum(np.bincount(owners, minlength=self.n))])
        for o in range(self.n):
            sel = order[cuts[o]:cuts[o + 1]]
            _write(self._path("succ", self.w, o), fps[sel], keys[sel])
        return ("expanded", st.generated, deadlock)

    def do_dedup(self) -> tuple:
        """Round 2: as owner, the first occurrence of each fingerprint sent here, minus the
        visited."""
        fps_parts, key_parts = [], []
        for sender in range(self.n):
            data = _read(self._path("succ", sender, self.w))
            half = data.size // 2
            fps_parts.append(data[:half])
            key_parts.append(data[half:])
        fps = np.concatenate(fps_parts)
        keys = np.concatenate(key_parts)
        del fps_parts, key_parts
        # senders in order, each in its own order: the keys grow along the concatenation, so the
        # first index of each fingerprint (np.unique sorts stably for return_index) is its smallest
        # key
        unique, first = np.unique(fps, return_index=True)
        new = ~self.visited.contains(unique)
        self._won = unique[new]
        # the level's new fingerprints of this shard, for the other workers to prune their next
        # level with
        self._won.tofile(self._path("new", self.w, 0))
        won_keys = np.sort(keys[first[new]])
        senders = won_keys >> _KEY_BITS
        counts = np.bincount(senders, minlength=self.n)
        cuts = np.concatenate([[0], np.cumsum(counts)])
        for sender in range(self.n):
            _write(self._path("won", self.w, sender), won_keys[cuts[sender]:cuts[sender + 1]]
                   & _KEY_MASK)
        return ("deduped", counts)

    def do_commit(self) -> tuple:
        """Round 3: keep the winning entries as the next part and log them."""
        positions = np.sort(np.concatenate([_read(self._path("won", o, self.w))
                                            for o in range(self.n)]))
        candidates = self._candidates
        assert candidates is not None
        # the level is committed from here on (the parent sends commit to every worker once all have
        # expanded): the part just expanded is let go before its successor is built, so that the two
        # parts' blocks and pools are never held at once beside the candidates (the commit round
        # raised the worker's peak)
        self.part.close()
        part = self._store(previous=candidates)
        at = 0
        for block in candidates.blocks():  # the winners, a block of candidates at a time
            lo, hi = np.searchsorted(positions, [at, at + len(block)])
            if hi - lo == len(block):
                part.extend(block)
            elif hi > lo:
                part.extend(list(map(block.__getitem__, (positions[lo:hi] - at).tolist())))
            at += len(block)
        part.finish()
        parents = self._level_parents[positions].astype(np.int32)
        # interned in the part's order, as the engine did before: the ids the parent learns come in
        # the same order
        named = self._actions.actions
        acts = np.fromiter((self.table.id(named[a])
                            for a in self._level_actions[positions].tolist()), np.int32,
                           positions.size)
        fps = self._level_fps[positions]
        won, self._won = self._won, np.zeros(0, np.int64)
        self._forget_level()
        self.visited.add(won)
        level = [won] + [np.fromfile(self._path("new", o, 0), np.int64) for o in range(self.n) if o
                         != self.w]
        self.seen.add_level(np.concatenate(level))
        del level, won
        self.log.append(fps, parents, acts)
        self.part = part
        new_actions = self.table.actions[self.reported:]
        self.reported = len(self.table.actions)
        return ("committed", len(part), new_actions)

    def do_check(self, check: list[str]) -> tuple:
        """Round 4, once the parts of the new level are even: the invariants on this worker's part
        (offset of the first violation in the part, per invariant).

        The part is checked a block at a time, every invariant on one block before the next block,
        as the single-process engine does: a block's states stay in the CPU's caches from one
        invariant to the next. One invariant over the whole part at a time cost about 1.5 times as
        much (9.4 against 6.1-6.5 CPU s on 612,834 states: a level's states no longer fit in the
        caches)."""
        invariants = [inv for inv in self.engine.invariants if inv.name in check]
        found: dict[str, int] = {}
        for start, block in _check_blocks(self.part.blocks()):
            for inv in invariants:
                if inv.name not in found:
                    offset = first_false(inv.holds, block)
                    if offset is not None:
                        found[inv.name] = start + offset
            if len(found) == len(invariants):
                break
        return ("checked", found)

    def do_abort(self) -> tuple:
        self._forget_level()
        return ("aborted",)

    # -- moving states between neighbours, the log, checkpoints ----------------------------------
    def _move(self, moved: list[Any], path: str) -> None:
        """Write states for the neighbour to read back (a private file of this run's exchange
        directory)."""
        with open(path, "wb") as f:
            f.write(self.pack(moved))

    def do_take_tail(self, k: int, path: str) -> tuple:
        self._move(self.part.take_tail(k), path)
        return ("ok", len(self.part))

    def do_take_head(self, k: int, path: str) -> tuple:
        self._move(self.part.take_head(k), path)
        return ("ok", len(self.part))

    def _load(self, path: str) -> list[Any]:
        with open(path, "rb") as f:
            data = f.read()
        try:
            states = self.unpack(data)
        # msgpack and the model's decoder raise many types on data they did not write
        except Exception as exc:
            raise CorruptDataError("states moved between workers unreadable "
                                   f"({type(exc).__name__}: {exc})") from None
        os.unlink(path)
        return states

    def do_prepend(self, path: str) -> tuple:
        self.part.put_head(self._load(path))
        return ("ok", len(self.part))

    def do_append(self, path: str) -> tuple:
        self.part.put_tail(self._load(path))
        return ("ok", len(self.part))

    def do_take_log(self, index: int, last: bool) -> tuple:
        """The ``index``-th level of the log not gathered yet; ``last``: the log starts again after
        it."""
        segment = self.log.level(index)
        if last:
            self.log.clear()
        return ("log", segment)

    def do_dump(self) -> tuple:
        return ("states", list(self.part))

    def do_stats(self) -> tuple:
        # CPU seconds of this worker since the fork, and the out-degrees of the states it expanded
        times = os.times()
        return ("stats", time.process_time(), self.engine._degrees, dict(self.round_cpu),
                times.system, _peak_rss_kb())


class ParallelBFS(LocalBFS):
    engine = "parallel"

    def __init__(self, model: Model, options: SearchOptions, workers: int = 2) -> None:
        super().__init__(model, options)
        self.workers = max(1, workers)
        self._conns: list[Any] = []
        self._procs: list[Any] = []
        self._sizes: list[int] = []
        self._luts: list[np.ndarray] = []
        self._pending_levels = 0  # levels whose log segments are still in the workers
        self._interrupted = False
        self._exchange = ""
        self._waiting = 0.0  # wall seconds the parent waited for its workers
        #: wall seconds of each round of the levels, and of moving states between parts, over the
        #: run
        self._round_wall = dict.fromkeys((*_ROUNDS, "rebalance"), 0.0)

    # -- the search ------------------------------------------------------------------------------
    def _run(self) -> CheckResult:
        opts = self.options
        cpu_started = time.process_time()
        started = time.monotonic()
        if opts.resume_from:
            st = ckpt.load(opts.resume_from, self.model, opts)
        else:
            st = self._initial_level()
        self._started = started - st.elapsed
        self._distinct = len(st.log)
        self._abort = mp.get_context("fork").RawValue("i", 0)
        previous_handler = self._install_sigint()
        self._exchange = _exchange_dir()
        try:
            self._start_workers(st)
            result = run_levels(self, st)
        finally:
            self._stop_workers()
            shutil.rmtree(self._exchange, ignore_errors=True)
            if previous_handler is not None:
                signal.signal(signal.SIGINT, previous_handler)
        self._add_serial_share(result, time.process_time() - cpu_started, time.monotonic()
                               - started)
        return result

    # -- the hooks of the level loop (checker.levels) ---------------------------------------------
    def queue(self, st: SearchState) -> int:
        return self._queue()

    def distinct(self, st: SearchState) -> int:
        return self._distinct

    def before_level(self, st: SearchState) -> None:
        if self._interrupted:  # Ctrl-C came while the workers were idle
            raise KeyboardInterrupt

    def after_level(self, st: SearchState) -> None:
        st.elapsed = self.elapsed()
        self._report(st, st.elapsed)
        if _rss_mb_of(self._pids) > self.memory_budget:
            raise BudgetExceeded(f"{MEMORY_BUDGET} of {self.memory_budget:.0f} MB ran out at depth "
                                 f"{st.depth}")

    def save(self, st: SearchState, path: str) -> None:
        self._save(st, path)

    def finish(self, st: SearchState, reason: str | None, checkpoint_file: str
               | None) -> CheckResult:
        self._gather_log(st)
        stats = self._call_all([("stats",)] * self.workers)
        for _, _, degrees, *_ in stats:  # the out-degrees of the states each worker expanded
            for degree, states in degrees.items():
                self._degrees[degree] = self._degrees.get(degree, 0) + states
        elapsed = time.monotonic() - self._started
        st.frontier = []
        result = self._result(st, elapsed, reason, checkpoint_file)
        result.queue = self._queue()
        result.workers = self.workers
        # how the work was shared: on a machine whose cores are busy with other work the wall time
        # says little, the CPU seconds of each worker say how well the level was split
        result.extra["worker_cpu_seconds"] = [round(r[1], 3) for r in stats]
        result.extra["worker_system_cpu_seconds"] = [round(r[4], 3) for r in stats]
        # each worker's peak resident set (VmHWM: the pages inherited from the parent at the fork
        # included)
        result.extra["worker_peak_rss_kb"] = [r[5] for r in stats]
        # where the wall time of the levels went: each round lasts as long as its slowest worker, so
        # a worker is idle for the round's wall time less its own CPU time in it (the level's
        # imbalance, and any time the machine gave to other work)
        result.extra["round_wall_seconds"] = {name: round(t, 3)
                                              for name, t in self._round_wall.items()}
        result.extra["worker_round_cpu_seconds"] = {name: [round(r[3][name], 3) for r in stats]
                                                    for name in _ROUNDS}
        result.extra["worker_idle_seconds"] = [
            round(sum(max(0.0, self._round_wall[name] - r[3][name]) for name in _ROUNDS), 3)
            for r in stats]
        return result

    def _add_serial_share(self, result: CheckResult, parent_cpu: float, wall: float) -> None:
        workers_cpu = sum(result.extra.get("worker_cpu_seconds", []))
        total = parent_cpu + workers_cpu
        # the predictions are the reported share's
        share = round(parent_cpu / total, 5) if total > 0 else 1.0
        result.extra["parent_cpu_seconds"] = round(parent_cpu, 3)
        result.extra["serial_share"] = share
        result.extra["parent_busy_wall_share"] = (round(max(0.0, wall - self._waiting) / wall, 5)
                                                  if wall > 0 else 1.0)
        result.extra["amdahl_speedup"] = {str(n): round(amdahl_speedup(share, n), 2)
                                          for n in (2, 16, 64)}

    def _distinct_so_far(self, st: SearchState) -> int:
        # the log is gathered from the workers at the end
        return getattr(self, "_distinct", len(st.log))

    def _queue(self) -> int:
        return sum(self._sizes)

    def _report(self, st: SearchState, elapsed: float, force: bool = False) -> None:
        if self.options.progress:
            distinct = getattr(self, "_distinct", len(st.log))
            queue = self._queue() if self._sizes else len(st.frontier)
            self.options.progress(Progress(st.depth, st.generated, distinct, queue, elapsed))

    # -- Ctrl-C ------------------------------------------------------------------------------------
    def _install_sigint(self) -> Any:
        def on_sigint(signum: int, frame: Any) -> None:
            self._interrupted = True
            self._abort.value = 1

        try:
            if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
                return None  # started with Ctrl-C ignored (a background job): keep it so
            return signal.signal(signal.SIGINT, on_sigint)
        except ValueError:  # not the main thread: Ctrl-C is not ours to handle
            return None

    # -- workers -----------------------------------------------------------------------------------
    def _start_workers(self, st: SearchState) -> None:
        ctx = mp.get_context("fork")
        frontier, n = st.frontier, self.workers
        cuts = [len(frontier) * w // n for w in range(n + 1)]
        visited = st.visited.array
        # the frontier's fingerprints
        recent = np.array(st.log.arrays()[0][st.frontier_base:], np.int64)
        for w in range(n):
            parent_end, child_end = ctx.Pipe()
            part = frontier[cuts[w]:cuts[w + 1]]
            proc = ctx.Process(
                target=_worker_main,
                args=(child_end, w, n, self._exchange, self.model, self.options, part, visited,
                      recent, st.depth, self._started, self._abort),
                daemon=True,
            )
            proc.start()
            child_end.close()
            self._conns.append(parent_end)
            self._procs.append(proc)
            self._sizes.append(len(part))
        self._luts = [np.zeros(0, np.int64) for _ in range(n)]
        self._pids = [os.getpid()] + [p.pid for p in self._procs]
        # the parent keeps the parent log of the levels before the workers started, nothing else:
        # the visited set is sharded among the workers, the frontier lives in them
        st.frontier = []
        st.visited = FingerprintSet()

    def _stop_workers(self) -> None:
        for conn in self._conns:
            try:
                conn.send(("stop",))
            except (OSError, ValueError):
                pass
        for proc in self._procs:
            proc.join(timeout=5)
            if proc.is_alive():
                proc.terminate()
                proc.join(timeout=5)
        for conn in self._conns:
            conn.close()
        self._conns, self._procs = [], []

    def _call_all(self, messages: list[tuple]) -> list[tuple]:
        for conn, message in zip(self._conns, messages, strict=True):
            conn.send(message)
        waited = time.monotonic()
        replies = [conn.recv() for conn in self._conns]
        self._waiting += time.monotonic() - waited
        for reply in replies:
            if reply[0] == "error":
                raise reply[1]
        return replies

    def _call(self, w: int, message: tuple) -> tuple:
        return self._call_some({w: message})[w]

    def _call_some(self, messages: dict[int, tuple]) -> dict[int, tuple]:
        for w, message in messages.items():
            self._conns[w].send(message)
        waited = time.monotonic()
        replies = {w: self._conns[w].recv() for w in messages}
        self._waiting += time.monotonic() - waited
        for reply in replies.values():
            if reply[0] == "error":
                raise reply[1]
        return replies

    # -- one level ---------------------------------------------------------------------------------
    def _expand_level(self, st: SearchState) -> None:
        n = self.workers
        want_deadlock = self.options.check_deadlock and st.deadlock is None
        starts = st.frontier_base + np.concatenate([[0], np.cumsum(self._sizes)]).astype(np.int64)
        clock = time.monotonic()
        replies = self._call_all([("expand", int(starts[w]), st.depth, self._pids, want_deadlock)
                                  for w in range(n)])
        clock = self._lap("expand", clock)
        stopped = [r[1] for r in replies if r[0] == "budget"]
        if stopped:
            self._call_all([("abort",)] * n)
            for name in os.listdir(self._exchange):
                os.unlink(os.path.join(self._exchange, name))
            self._abort.value = 0
            if self._interrupted:
                raise KeyboardInterrupt
            raise BudgetExceeded(stopped[0])
        for _, generated, deadlock in replies:
            st.generated += generated
            if deadlock >= 0 and want_deadlock and st.deadlock is None:
                # parts in order: the first one found is the first in the frontier
                st.deadlock = int(deadlock)
        # from here on the level is committed by every worker: no interruption in between
        counts = np.sum([r[1] for r in self._call_all([("dedup",)] * n)], axis=0)
        clock = self._lap("dedup", clock)
        base = self._distinct
        replies = self._call_all([("commit",)] * n)
        clock = self._lap("commit", clock)
        for w, (_, size, new_actions) in enumerate(replies):
            if new_actions:
                ids = np.fromiter((st.actions.id(a) for a in new_actions), np.int64,
                                  len(new_actions))
                self._luts[w] = np.concatenate([self._luts[w], ids])
            self._sizes[w] = size
        self._pending_levels += 1
        new = int(counts.sum())
        if new:
            st.depth += 1
        st.frontier_base = base
        self._distinct = base + new
        # the parts are made even before the invariants are checked on them, so that the check (a
        # fifth of a level's work) is shared evenly too; the parts stay in the global order, so the
        # first violation in part order is still the first in discovery order
        self._rebalance()
        clock = self._lap("rebalance", clock)
        check = [inv.name for inv in self.invariants if inv.name not in st.found]
        if check:
            bases = base + np.concatenate([[0], np.cumsum(self._sizes)])
            for w, (_, found) in enumerate(self._call_all([("check", check)] * n)):
                for name, offset in found.items():
                    if name not in st.found:
                        st.found[name] = int(bases[w]) + offset
            self._lap("check", clock)

    def _lap(self, name: str, since: float) -> float:
        now = time.monotonic()
        self._round_wall[name] += now - since
        return now

    def _gather_log(self, st: SearchState) -> None:
        """Move the workers' parent-log segments to ``st.log``, level by level, worker by worker."""
        if not self._pending_levels:
            return
        if not st.log.spilled and _rss_mb_of(self._pids) > self.memory_budget * SPILL_AT:
            st.log.spill(os.path.dirname(os.path.abspath(self.options.checkpoint_path))
                         if self.options.checkpoint_path else None)
        # a level at a time: the parent holds one level's segments, never the whole log of the
        # workers
        for level in range(self._pending_levels):
            last = level == self._pending_levels - 1
            for w, (_, segment) in enumerate(self._call_all([("take_log", level, last)]
                                                            * self.workers)):
                fps, parents, acts = segment
                st.log.append(fps, parents, self._luts[w][acts] if acts.size else acts)
        self._pending_levels = 0
        if len(st.log) != self._distinct:
            raise RuntimeError(f"parent log has {len(st.log)} states, the workers counted "
                               f"{self._distinct}")

    def _rebalance(self) -> None:
        total, n = self._queue(), self.workers
        if n < 2 or total < n * _REBALANCE_MIN:
            return
        slack = max(_REBALANCE_MIN, int(total * _REBALANCE_SLACK / n))
        prefix = 0
        for w in range(n - 1):
            prefix += self._sizes[w]
            want = total * (w + 1) // n
            move = prefix - want
            if abs(move) <= slack:
                continue
            path = os.path.join(self._exchange, f"move-{w}")
            if move > 0:  # the tail of part w becomes the head of part w + 1
                move = min(move, self._sizes[w])
                self._call(w, ("take_tail", move, path))
                self._call(w + 1, ("prepend", path))
                self._sizes[w] -= move
                self._sizes[w + 1] += move
            else:  # the head of part w + 1 becomes the tail of part w
                move = min(-move, self._sizes[w + 1])
                self._call(w + 1, ("take_head", move, path))
                self._call(w, ("append", path))
                self._sizes[w] += move
                self._sizes[w + 1] -= move
            prefix = sum(self._sizes[: w + 1])

    # -- checkpoints -------------------------------------------------------------------------------
    def _save(self, st: SearchState, path: str) -> None:
        """Gather the parent log, the frontier parts (in order) and the visited set (the log's
        fingerprints)."""
        self._gather_log(st)
        parts = self._call_all([("dump",)] * self.workers)
        st.frontier = [state for _, states in parts for state in states]
        fps, _, _ = st.log.arrays()
        st.visited = FingerprintSet(np.sort(fps))
        st.elapsed = time.monotonic() - self._started
        try:
            ckpt.save(path, self.model, self.options, st)
        finally:
            st.frontier = []
            st.visited = FingerprintSet()


def check(model: Model, options: SearchOptions | None = None, workers: int = 2) -> CheckResult:
    options = options or SearchOptions()
    if options.keep_graph or workers < 2 or "fork" not in mp.get_all_start_methods():
        return LocalBFS(model, options).run()
    return ParallelBFS(model, options, workers).run()


def resolve_workers(requested: int | None) -> int:
    """``--workers``: a count, or 0 for ``auto`` (the cores this process may use)."""
    return available_cores() if not requested else requested


@dataclass(frozen=True)
class ParallelOptions:
    """The parallel engine's options: its worker processes (0: ``auto``, one a core this process may
    run on)."""

    workers: int = 0

    def __post_init__(self) -> None:
        if self.workers < 0:
            raise UsageError(f"--workers {self.workers}: give a positive number of worker "
                             "processes, or auto")


#: what ``--workers N`` does on the compiled kernel (bench/NOTES.md)
KERNEL_THREADS = ("{workers} threads in the compiled kernel's level search, in this process (the "
                  "same counts, depth and counterexamples as one thread)")


def run_engine(model: Model, options: SearchOptions,
               engine_options: ParallelOptions) -> CheckResult:
    """``--engine parallel``: ``--workers N`` processes, one a core when not given or ``auto``. A
    search that keeps the state graph (liveness) runs in one process: the graph is built there.

    Where the model's compiled kernel can run the search (``checker.kernel.why_not``: no checkpoint,
    ``--max-memory``, ``--reduce``, user property, ...), it runs the local engine's search on the
    kernel in this process (``KernelBFS``) in N threads instead of N readable workers: the same
    figures, verdicts and counterexamples, and ``result.extra["path"]`` says so (the workers asked
    for and what they became); else the readable workers, with the reason."""
    workers = resolve_workers(engine_options.workers)
    reason = None
    if options.kernel != "off":
        from checker import kernel

        outcome = kernel.run(model, options, options.kernel, engine="parallel", threads=workers)
        if isinstance(outcome, CheckResult):
            outcome.extra["path"].update(engine="local", workers_asked=workers,
                                         reason=KERNEL_THREADS.format(workers=workers))
            return outcome
        reason = outcome
    if options.keep_graph or "fork" not in mp.get_all_start_methods():
        result = LocalBFS(model, options).run()
    else:
        result = ParallelBFS(model, options, workers).run()
    if reason is not None:
        result.extra["path"] = {"path": "readable", "reason": reason}
    return result
