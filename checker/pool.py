"""Independent jobs on every core: forked worker processes, results in the jobs' order.

``kmc matrix`` checks its configurations this way (one search a configuration, each in one process)
and ``kmc simulate --workers N`` its walks. A job is a value of the parent's, read by index in the
forked workers (nothing is sent to them but the index); each result comes back through a pipe, from
a process this run forked (never data a user handed us). The jobs may be handed out in an order of
the caller's (``kmc matrix``: the largest first); the results are returned in the jobs' order
whatever the order they are handed out or finish in, so the output of a command does not depend on
the worker count.

Ctrl-C is the parent's: the workers ignore SIGINT, and the parent stops them (its own processes, by
their handles) before the interrupt goes on. A job that raises stops the run: the workers are
stopped and the exception is raised again in the parent.
"""

from __future__ import annotations

import multiprocessing as mp
import pickle
import signal
import time
import traceback
from collections import deque
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection, wait
from typing import Any, TypeVar

Job = TypeVar("Job")
Out = TypeVar("Out")


def can_fork() -> bool:
    return "fork" in mp.get_all_start_methods()


def _worker(conn: Connection, work: Callable[[Any], Any], jobs: Sequence[Any]) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's
    while True:
        try:
            index = conn.recv()
        except EOFError:
            return
        if index is None:
            return
        try:
            reply = ("done", index, work(jobs[index]))
            data = pickle.dumps(reply, pickle.HIGHEST_PROTOCOL)
        except BaseException as exc:  # noqa: BLE001 (sent to the parent, which raises it)
            try:
                data = pickle.dumps(("error", index, exc), pickle.HIGHEST_PROTOCOL)
            except Exception:  # an exception that does not pickle: its text
                text = "".join(traceback.format_exception(exc))
                data = pickle.dumps(("error", index, RuntimeError(text)), pickle.HIGHEST_PROTOCOL)
        conn.send_bytes(data)


def run_jobs(work: Callable[[Job], Out], jobs: Sequence[Job], workers: int,
             started: Callable[[int], None] | None = None,
             finished: Callable[[int, Out], bool | None] | None = None,
             running: Callable[[list[tuple[int, float]]], None] | None = None,
             every: float = 10.0, order: Sequence[int] | None = None) -> list[Out]:
    """``[work(job) for job in jobs]``, with up to ``workers`` jobs at once in forked processes.

    ``started(index)`` is called as a job is handed to a worker, ``finished(index, result)`` as its
    result comes back, ``running([(index, seconds so far), ...])`` every ``every`` seconds while
    jobs run. With one worker, one job, or no ``fork`` on this platform, the jobs run here, one
    after the other in their own order, with the same calls.

    ``order`` is the order the workers are handed the jobs in (a permutation of their indices;
    default their own order): the longest first, say, so that no worker idles at the end while
    another finishes a long job (list scheduling, longest processing time first: Graham, "Bounds on
    multiprocessing timing anomalies", 1969). It changes when results come back, never which results
    are returned or their order.

    ``finished`` may return True: the jobs after that one are not needed (a violation found, a time
    budget spent). Then no later job is handed out, the earlier ones are still run (those not handed
    out yet, when ``order`` is not the jobs' own) and waited for, and the results returned are those
    of the jobs up to the last one not after it: the same list at any worker count and in any
    ``order``, as long as ``finished`` answers the same for the same result (the results of later
    jobs that were already done are dropped, and the later jobs still running are stopped, their
    workers replaced while earlier jobs wait). A job that raises is the last one too: its error is
    raised once the jobs before it are done, unless one of them says the rest is not needed."""
    workers = min(workers, len(jobs))
    dispatch = _permutation(order, len(jobs))  # checked at any worker count
    if workers <= 1 or not can_fork():
        return _run_here(work, jobs, started, finished)
    pool = _Pool(work, jobs, dispatch, started, finished)
    try:
        pool.run(workers, running, every)
    finally:
        pool.close()
    if pool.failed is not None:
        raise pool.failed
    return [pool.results[i] for i in range(pool.last + 1)]


def _run_here(work: Callable[[Job], Out], jobs: Sequence[Job], started: Callable[[int], None]
              | None,
              finished: Callable[[int, Out], bool | None] | None) -> list[Out]:
    """The jobs in this process, one after the other in their own order, with the calls of
    ``run_jobs``."""
    results = []
    for index, job in enumerate(jobs):
        if started is not None:
            started(index)
        results.append(work(job))
        if finished is not None and finished(index, results[-1]):
            break
    return results


class _Pool:
    """The forked workers of one ``run_jobs``: which job each runs, the jobs not handed out yet, the
    results back, and the last job whose result is needed (``last``; ``failed`` its error, if it
    raised)."""

    def __init__(self, work: Callable[[Job], Out], jobs: Sequence[Job], dispatch: Sequence[int],
                 started: Callable[[int], None] | None, finished: Callable[[int, Out], bool | None]
                 | None) -> None:
        self.work, self.jobs, self.started, self.finished = work, jobs, started, finished
        self.pending = deque(dispatch)  # the jobs not handed out yet, in the order they go out
        self.ctx = mp.get_context("fork")
        self.procs: dict[Connection, Any] = {}  # every worker started, by its end of the pipe
        self.results: dict[int, Out] = {}
        self.busy: dict[Connection, tuple[int, float]] = {}  # worker -> (its job, when it started)
        self.last = len(jobs) - 1  # the last job whose result is needed
        self.failed: BaseException | None = None  # the error of job ``last``, if it raised

    def start(self) -> Connection:
        parent_end, child_end = self.ctx.Pipe()
        proc = self.ctx.Process(target=_worker, args=(child_end, self.work, self.jobs), daemon=True)
        proc.start()
        child_end.close()
        self.procs[parent_end] = proc
        return parent_end

    def waiting(self) -> bool:
        """Whether a needed job is still to be handed out."""
        # not needed: a job before it said the rest is not
        while self.pending and self.pending[0] > self.last:
            self.pending.popleft()
        return bool(self.pending)

    def hand(self, conn: Connection) -> None:
        """The next needed job of ``pending`` to this worker, if one is left."""
        if self.waiting():
            index = self.pending.popleft()
            if self.started is not None:
                self.started(index)
            conn.send(index)
            self.busy[conn] = (index, time.monotonic())

    def drop_later(self) -> None:
        """``last`` moved down: stop the jobs after it still running; a fresh worker for each, while
        needed jobs wait."""
        for conn, (index, _) in list(self.busy.items()):
            if index > self.last:
                del self.busy[conn]
                _stop(self.procs[conn])
                if self.waiting():
                    self.hand(self.start())

    def receive(self, conn: Connection) -> None:
        """A worker's answer: its result (or error) kept if needed, then its next job."""
        kind, index, value = pickle.loads(conn.recv_bytes())  # noqa: S301 (our own forked worker)
        del self.busy[conn]
        if index > self.last:  # a job after one that said the rest is not needed
            return
        # raised once the earlier jobs are done (one of them may stop the run first)
        if kind == "error":
            self.failed, self.last = value, index
            self.results = {i: r for i, r in self.results.items() if i < self.last}
            self.drop_later()
        else:
            self.results[index] = value
            if self.finished is not None and self.finished(index, value):
                self.last, self.failed = index, None
                self.results = {i: r for i, r in self.results.items() if i <= self.last}
                self.drop_later()
        self.hand(conn)

    def run(self, workers: int, running: Callable[[list[tuple[int, float]]], None] | None,
            every: float) -> None:
        last_report = time.monotonic()
        for _ in range(workers):
            self.hand(self.start())
        # every job running is needed (drop_later), and a free worker takes the next needed one
        while self.busy:
            for conn in wait(list(self.busy),
                             timeout=max(0.05, every - (time.monotonic() - last_report))):
                assert isinstance(conn, Connection)
                if conn in self.busy:  # else stopped while this loop ran
                    self.receive(conn)
            if running is not None and self.busy and time.monotonic() - last_report >= every:
                last_report = time.monotonic()
                running(sorted((index, last_report - since) for index, since in self.busy.values()))

    def close(self) -> None:
        for conn in self.procs:
            try:
                conn.send(None)
            except (OSError, ValueError):
                pass
        for conn, proc in self.procs.items():
            # stopped early (an error, Ctrl-C): the jobs still running are not waited for
            if conn in self.busy:
                proc.terminate()
            _stop(proc, wait=5)
        for conn in self.procs:
            conn.close()


def _permutation(order: Sequence[int] | None, count: int) -> list[int]:
    if order is None:
        return list(range(count))
    chosen = list(order)
    if sorted(chosen) != list(range(count)):
        raise ValueError(f"order must name each of the {count} jobs once, by index: {chosen}")
    return chosen


def _stop(proc: Any, wait: float = 0.0) -> None:
    """End one worker this run started: let it leave within ``wait`` seconds, else terminate it,
    then kill it."""
    if wait:
        proc.join(timeout=wait)
    if proc.is_alive():
        proc.terminate()
        proc.join(timeout=5)
    if proc.is_alive():
        proc.kill()
    proc.join()
