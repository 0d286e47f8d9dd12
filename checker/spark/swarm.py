"""``kmc simulate --engine spark``: the swarm's batches of walks on Spark's executors.

The walks are the local swarm's (``checker.simulate``): walk ``i`` is seeded from ``--seed`` and
``i``, a batch is ``WALKS_A_BATCH`` consecutive walks, and a batch's result does not depend on where
it ran. The driver hands the batches out in waves of twice the cluster's default parallelism, one
Spark task a batch, and takes the results back in the batches' order; it stops after the wave
holding the first batch that says the rest is not needed (a violation with stop-at-first, a time
budget spent) and keeps the results up to that batch: the same list as ``checker.pool.run_jobs``
gives on any number of local cores, so the same seed gives the same walks, counts, covered states
and counterexample on Spark as on one core (without ``--max-seconds``).

A time budget is a deadline on the driver's clock; each wave's tasks get the seconds left when it is
submitted and count them on their own executor's clock (clocks of different machines are not
compared).

What travels: the walker (the model and the invariants, as the Spark engine ships them) to the
executors, and each batch's result (counts, the sorted fingerprints its walks covered, the shortest
violating walk per invariant) back, through Spark's own serialisation between this driver and the
executors it started: never a file a user hands us.
"""

from __future__ import annotations

import dataclasses
import tempfile
import time
from collections.abc import Callable, Sequence
from typing import Any

from checker.spark import class_archive
from checker.spark.session import DEFAULT_MASTER, _ship_packages, check_environment, spark_session


def wave_size(sc: Any) -> int:
    """Batches submitted at once: two tasks a core of the cluster, so a slow batch does not leave
    cores idle."""
    return max(2, 2 * int(sc.defaultParallelism))


class _Task:
    """One Spark task: one batch, with the seconds left of the run's budget counted from the task's
    start."""

    def __init__(self, work: Callable[[Any], Any], seconds_left: float | None) -> None:
        self.work = work
        self.seconds_left = seconds_left

    def __call__(self, item: tuple[int, Any]) -> tuple[int, Any]:
        index, batch = item
        if self.seconds_left is not None and getattr(batch, "deadline", None) is not None:
            batch = dataclasses.replace(batch, deadline=time.monotonic() + self.seconds_left)
        return index, self.work(batch)


def run_batches(work: Callable[[Any], Any], jobs: Sequence[Any], master: str | None,
                finished: Callable[[int, Any], bool], deadline: float
                | None = None) -> tuple[list[Any], int]:
    """``_run_batches`` with Spark's failures as the Spark engine reports them (one line; exit 69
    when Java or PySpark is missing or broken)."""
    from checker.spark.engine import translate_spark_failure

    try:
        return _run_batches(work, jobs, master or DEFAULT_MASTER, finished, deadline)
    except Exception as exc:
        raise translate_spark_failure(exc) from exc


def _run_batches(work: Callable[[Any], Any], jobs: Sequence[Any], master: str,
                finished: Callable[[int, Any], bool], deadline: float
                 | None = None) -> tuple[list[Any], int]:
    """``[work(job) for job in jobs]`` on Spark, cut after the first job ``finished`` says ends the
    run (as ``checker.pool.run_jobs``); ``deadline`` is the run's ``time.monotonic()`` deadline on
    this driver. Returns the results and the cluster's default parallelism (the cores the walks ran
    on)."""
    check_environment()
    session, _created = spark_session(master)
    sc = session.sparkContext
    if not sc.master.startswith("local"):
        _ship_packages(sc, tempfile.mkdtemp(prefix="kmc-ship-"))
    wave = wave_size(sc)
    results: list[Any] = []
    for start in range(0, len(jobs), wave):
        left = None if deadline is None else max(0.0, deadline - time.monotonic())
        chunk = list(enumerate(jobs[start:start + wave], start))
        done = sc.parallelize(chunk, len(chunk)).map(_Task(work, left)).collect()
        if _finished_in(done, results, finished):
            break
    class_archive.run_completed()  # its JVM may keep its class archive as it exits
    return results, int(sc.defaultParallelism)


def _finished_in(done: list[tuple[int, Any]], results: list[Any],
                 finished: Callable[[int, Any], bool]) -> bool:
    """Append a wave's results in job order to ``results``, up to the first that ``finished`` says
    ends the run; True when one did."""
    for index, result in sorted(done, key=_first):
        results.append(result)
        if finished(index, result):
            return True
    return False


def _first(item: tuple[int, Any]) -> int:
    return item[0]
