"""The local multi-process engine: level-synchronous BFS with the frontier split among workers.

Worker processes are forked once per run and keep their share of the frontier, a copy of the
visited set and their own successor dictionaries; only fingerprints and parent pointers travel
to the coordinating parent, never the states of a level (except to rebalance). The frontier is
one sequence in a fixed global order, cut into consecutive parts, one per worker:

* each worker expands its part in order, keeps the first occurrence of each successor
  fingerprint, drops the ones already visited and sends the rest (fingerprint, parent offset,
  action) to the parent;
* the parent concatenates the workers' lists in part order and keeps the first occurrence of
  each fingerprint: exactly the order in which the single-process engine discovers them, so the
  parent log (global indexes, parents, actions), the counts and the shortest counterexamples are
  identical to ``checker.bfs``;
* each worker keeps the states the parent kept as its part of the next frontier, adds the
  level's new fingerprints to its visited copy and checks the invariants on its new states; the
  first violation in part order is the first in discovery order;
* when the parts drift apart in size, the tail of one part moves to the head of the next, which
  keeps the global order.

Budgets, Ctrl-C and checkpoints behave as in the single-process engine: a level is either
committed by every worker or abandoned by all, and a checkpoint gathers the frontier parts.
Runs that keep the state graph (liveness) use the single-process engine.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import time
import traceback
from dataclasses import replace
from itertools import compress
from typing import Any

import numpy as np

from checker import checkpoint as ckpt
from checker.bfs import (
    MEMORY_BUDGET,
    BudgetExceeded,
    LocalBFS,
    SearchState,
    budget_checkpoint_path,
    first_false,
)
from checker.result import CheckResult
from checker.search import ActionTable, Progress, SearchOptions, budget_reason
from checker.visited import FingerprintSet
from spec.model import Model

_REBALANCE_SLACK = 0.03  # parts may differ by this fraction of the frontier before states move
_REBALANCE_MIN = 256  # ... and by at least this many states


def _rss_mb_of(pids: list[int]) -> float:
    page = os.sysconf("SC_PAGE_SIZE")
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/statm") as f:
                total += int(f.read().split()[1]) * page
        except (OSError, ValueError, IndexError):
            pass
    return total / 2**20


class _WorkerBFS(LocalBFS):
    """The expansion side of LocalBFS, run inside a worker on its part of the frontier."""

    def __init__(self, model: Model, options: SearchOptions, abort: Any, pids: list[int]) -> None:
        super().__init__(model, replace(options, progress=None, checkpoint_path=None, resume_from=None))
        self.abort = abort
        self.pids = pids
        self._last_rss = 0.0

    def _check_budgets(self, st: SearchState, generated: int, pending: int) -> None:
        if self.abort.value:
            raise BudgetExceeded("interrupted")
        now = time.monotonic()
        if self.options.max_seconds is not None and now - self._started > self.options.max_seconds:
            raise BudgetExceeded(f"time budget of {self.options.max_seconds:g} s ran out at depth {st.depth}")
        if now - self._last_rss >= 0.2:
            self._last_rss = now
            if _rss_mb_of(self.pids) > self.memory_budget:
                raise BudgetExceeded(f"{MEMORY_BUDGET} of {self.memory_budget:.0f} MB ran out at depth {st.depth}")


def _worker_main(conn: Any, model: Model, options: SearchOptions, part: list[Any], visited: np.ndarray,
                 depth: int, started: float, abort: Any) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides what Ctrl-C means
    try:
        _Worker(conn, model, options, part, visited, depth, started, abort).serve()
    except (EOFError, BrokenPipeError, KeyboardInterrupt):
        pass
    finally:
        conn.close()


class _Worker:
    def __init__(self, conn: Any, model: Model, options: SearchOptions, part: list[Any], visited: np.ndarray,
                 depth: int, started: float, abort: Any) -> None:
        self.conn = conn
        self.part = part
        self.visited = FingerprintSet(visited.copy())
        self.engine = _WorkerBFS(model, options, abort, [])
        self.engine._started = started
        self.st = SearchState(visited=self.visited, depth=depth)
        self.table = ActionTable()
        self.reported = 0  # actions of the local table already sent to the parent
        self.pending: list[Any] = []

    def serve(self) -> None:
        conn = self.conn
        while True:
            command, *args = conn.recv()
            if command == "stop":
                return
            try:
                reply = getattr(self, f"do_{command}")(*args)
            except BudgetExceeded as exc:
                self.pending = []
                reply = ("budget", exc.reason)
            except Exception as exc:  # the model's own errors, reported by the parent
                self.pending = []
                try:
                    import pickle

                    pickle.dumps(exc)
                    reply = ("error", exc, traceback.format_exc())
                except Exception:
                    reply = ("error", RuntimeError(str(exc)), traceback.format_exc())
            conn.send(reply)

    def do_expand(self, pids: list[int], deadlock_wanted: bool) -> tuple:
        st, engine = self.st, self.engine
        engine.pids = pids
        st.deadlock = None if deadlock_wanted else -1
        st.generated = 0
        fresh = engine._expand(st, self.part, 0, 0)
        deadlock = st.deadlock if deadlock_wanted and st.deadlock is not None else -1
        if fresh:
            fps = np.fromiter(fresh.keys(), np.int64, len(fresh))
            mask = ~self.visited.contains(fps)
            values = list(fresh.values())
            del fresh
            entries = values if mask.all() else list(compress(values, mask.tolist()))
            del values
            fps = fps[mask]
        else:
            fps, entries = np.zeros(0, np.int64), []
        self.pending = [entry[0] for entry in entries]
        parents = np.fromiter([entry[1] for entry in entries], np.int64, len(entries))
        intern = self.table.id
        acts = np.fromiter([intern(entry[2]) for entry in entries], np.int32, len(entries))
        del entries
        new_actions = self.table.actions[self.reported:]
        self.reported = len(self.table.actions)
        return ("expanded", fps, parents, acts, new_actions, st.generated, deadlock)

    def do_commit(self, keep: np.ndarray | None, level_fps: np.ndarray, check: list[str]) -> tuple:
        states = self.pending if keep is None else list(compress(self.pending, keep.tolist()))
        self.pending = []
        self.visited.add(level_fps)
        found = {}
        for inv in self.engine.invariants:
            if inv.name in check:
                offset = first_false(inv.holds, states)
                if offset is not None:
                    found[inv.name] = offset
        self.part = states
        self.st.depth += 1 if level_fps.size else 0
        return ("committed", len(states), found)

    def do_abort(self) -> tuple:
        self.pending = []
        return ("aborted",)

    def do_take_tail(self, k: int) -> tuple:
        moved, self.part = self.part[len(self.part) - k:], self.part[: len(self.part) - k]
        return ("states", moved)

    def do_take_head(self, k: int) -> tuple:
        moved, self.part = self.part[:k], self.part[k:]
        return ("states", moved)

    def do_prepend(self, states: list[Any]) -> tuple:
        self.part = states + self.part
        return ("ok", len(self.part))

    def do_append(self, states: list[Any]) -> tuple:
        self.part.extend(states)
        return ("ok", len(self.part))

    def do_dump(self) -> tuple:
        return ("states", self.part)

    def do_stats(self) -> tuple:
        return ("stats", time.process_time())  # CPU seconds of this worker since the fork


class ParallelBFS(LocalBFS):
    engine = "parallel"

    def __init__(self, model: Model, options: SearchOptions, workers: int = 2) -> None:
        super().__init__(model, options)
        self.workers = max(1, workers)
        self._conns: list[Any] = []
        self._procs: list[Any] = []
        self._sizes: list[int] = []
        self._interrupted = False

    # -- the search ------------------------------------------------------------------------------
    def _run(self) -> CheckResult:
        opts = self.options
        started = time.monotonic()
        if opts.resume_from:
            st = ckpt.load(opts.resume_from, self.model, opts)
        else:
            st = self._initial_level()
        self._started = started - st.elapsed
        self._abort = mp.get_context("fork").RawValue("i", 0)
        previous_handler = self._install_sigint()
        try:
            self._start_workers(st)
            return self._search(st)
        finally:
            self._stop_workers()
            if previous_handler is not None:
                signal.signal(signal.SIGINT, previous_handler)

    def _search(self, st: SearchState) -> CheckResult:
        opts = self.options
        last_checkpoint = time.monotonic()
        reason = None
        checkpoint_file = None
        try:
            while self._queue() and not self._should_stop(st):
                if self._interrupted:
                    raise KeyboardInterrupt
                reason = budget_reason(opts, st.depth, len(st.log), self._queue(), time.monotonic() - self._started)
                if reason:
                    break
                self._expand_level(st)
                st.elapsed = time.monotonic() - self._started
                self._report(st, st.elapsed)
                if _rss_mb_of(self._pids) > self.memory_budget:
                    raise BudgetExceeded(f"{MEMORY_BUDGET} of {self.memory_budget:.0f} MB ran out at depth {st.depth}")
                if opts.checkpoint_path and time.monotonic() - last_checkpoint >= opts.checkpoint_every:
                    self._save(st)
                    last_checkpoint = time.monotonic()
        except BudgetExceeded as exc:
            reason = exc.reason
        except KeyboardInterrupt:
            if opts.checkpoint_path:
                self._save(st)
            raise
        path = budget_checkpoint_path(reason, self.model, opts)
        if path and self._queue():
            self._save(st, path)
            checkpoint_file = path
        elapsed = time.monotonic() - self._started
        st.frontier = []
        result = self._result(st, elapsed, reason, checkpoint_file)
        result.queue = self._queue()
        result.workers = self.workers
        # how the work was shared: on a machine whose cores are busy with other work the wall time
        # says little, the CPU seconds of each worker say how well the level was split
        result.extra["worker_cpu_seconds"] = [round(r[1], 3) for r in self._call_all([("stats",)] * self.workers)]
        return result

    def _queue(self) -> int:
        return sum(self._sizes)

    def _report(self, st: SearchState, elapsed: float, force: bool = False) -> None:
        if self.options.progress:
            self.options.progress(Progress(st.depth, st.generated, len(st.log), self._queue(), elapsed))

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
        for w in range(n):
            parent_end, child_end = ctx.Pipe()
            part = frontier[cuts[w]:cuts[w + 1]]
            proc = ctx.Process(
                target=_worker_main,
                args=(child_end, self.model, self.options, part, visited, st.depth, self._started, self._abort),
                daemon=True,
            )
            proc.start()
            child_end.close()
            self._conns.append(parent_end)
            self._procs.append(proc)
            self._sizes.append(len(part))
        self._luts = [np.zeros(0, np.int64) for _ in range(n)]
        self._pids = [os.getpid()] + [p.pid for p in self._procs]
        # the parent keeps the parent log only: the visited set is the log's fingerprints, and
        # the frontier lives in the workers
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
        replies = [conn.recv() for conn in self._conns]
        for reply in replies:
            if reply[0] == "error":
                raise reply[1]
        return replies

    def _call(self, w: int, message: tuple) -> tuple:
        self._conns[w].send(message)
        reply = self._conns[w].recv()
        if reply[0] == "error":
            raise reply[1]
        return reply

    # -- one level -----------------------------------------------------------------------------------
    def _expand_level(self, st: SearchState) -> None:
        want_deadlock = self.options.check_deadlock and st.deadlock is None
        replies = self._call_all([("expand", self._pids, want_deadlock)] * self.workers)
        stopped = [r[1] for r in replies if r[0] == "budget"]
        if stopped:
            self._call_all([("abort",)] * self.workers)
            self._abort.value = 0
            if self._interrupted:
                raise KeyboardInterrupt
            raise BudgetExceeded(stopped[0])
        starts = np.cumsum([0] + self._sizes)
        fps_parts, parent_parts, act_parts = [], [], []
        for w, (_, fps, parents, acts, new_actions, generated, deadlock) in enumerate(replies):
            if new_actions:
                ids = np.fromiter((st.actions.id(a) for a in new_actions), np.int64, len(new_actions))
                self._luts[w] = np.concatenate([self._luts[w], ids])
            st.generated += generated
            if deadlock >= 0 and want_deadlock and st.deadlock is None:
                st.deadlock = st.frontier_base + int(starts[w]) + deadlock
            fps_parts.append(fps)
            parent_parts.append(parents + (st.frontier_base + int(starts[w])))
            act_parts.append(self._luts[w][acts] if acts.size else np.zeros(0, np.int64))
        all_fps = np.concatenate(fps_parts)
        keep = _first_occurrences(all_fps)
        new_fps = all_fps[keep] if keep is not None else all_fps
        parents = np.concatenate(parent_parts)
        acts = np.concatenate(act_parts)
        if keep is not None:
            parents, acts = parents[keep], acts[keep]
        bounds = np.cumsum([0] + [f.size for f in fps_parts])
        level_fps = np.sort(new_fps)
        check = [inv.name for inv in self.invariants if inv.name not in st.found]
        messages = []
        for w in range(self.workers):
            part_keep = None if keep is None else keep[bounds[w]:bounds[w + 1]]
            messages.append(("commit", part_keep, level_fps, check))
        # from here on the level is committed by every worker: no interruption in between
        replies = self._call_all(messages)
        base = len(st.log)
        kept_before = 0
        for w, (_, size, found) in enumerate(replies):
            for name, offset in found.items():
                if name not in st.found:
                    st.found[name] = base + kept_before + offset
            self._sizes[w] = size
            kept_before += size
        if new_fps.size:
            st.log.append(new_fps, parents, acts)
            st.depth += 1
        st.frontier_base = base
        self._rebalance()

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
            if move > 0:  # the tail of part w becomes the head of part w + 1
                move = min(move, self._sizes[w])
                _, states = self._call(w, ("take_tail", move))
                self._call(w + 1, ("prepend", states))
                self._sizes[w] -= move
                self._sizes[w + 1] += move
            else:  # the head of part w + 1 becomes the tail of part w
                move = min(-move, self._sizes[w + 1])
                _, states = self._call(w + 1, ("take_head", move))
                self._call(w, ("append", states))
                self._sizes[w] += move
                self._sizes[w + 1] -= move
            prefix = sum(self._sizes[: w + 1])

    # -- checkpoints ---------------------------------------------------------------------------------
    def _save(self, st: SearchState, path: str | None = None) -> None:
        """Gather the frontier parts (in order) and the visited set (the log's fingerprints)."""
        parts = self._call_all([("dump",)] * self.workers)
        st.frontier = [state for _, states in parts for state in states]
        fps, _, _ = st.log.arrays()
        st.visited = FingerprintSet(np.sort(fps))
        st.elapsed = time.monotonic() - self._started
        try:
            ckpt.save(path or self.options.checkpoint_path, self.model, self.options, st)
        finally:
            st.frontier = []
            st.visited = FingerprintSet()


def _first_occurrences(fps: np.ndarray) -> np.ndarray | None:
    """A mask of the first occurrence of each value of ``fps``, or None if all are distinct."""
    if fps.size < 2:
        return None
    order = np.argsort(fps, kind="stable")
    ranked = fps[order]
    dup = ranked[1:] == ranked[:-1]
    if not dup.any():
        return None
    keep = np.ones(fps.size, bool)
    keep[order[1:][dup]] = False  # stable sort: the later positions of equal values
    return keep


def check(model: Model, options: SearchOptions | None = None, workers: int = 2) -> CheckResult:
    options = options or SearchOptions()
    if options.keep_graph or workers < 2 or "fork" not in mp.get_all_start_methods():
        return LocalBFS(model, options).run()
    return ParallelBFS(model, options, workers).run()


def run_engine(model: Model, options: SearchOptions, engine_options: Any = None) -> CheckResult:
    """``--engine parallel``: ``--workers N`` processes, one a core when N is not given."""
    workers = getattr(engine_options, "workers", 1)
    if workers < 2:
        workers = os.cpu_count() or 2
    return check(model, options, workers)
