"""Levels of Spark's kernel path too small to be worth distributing, run on the driver in C.

A Spark level pays a fixed cost however few its states (two stages, a shuffle, the block manager,
a collect: bench/NOTES.md measures it), which the compiled kernel on the driver spends expanding
hundreds of thousands of states. So a level whose frontier has fewer states than
``--spark-driver-below`` is expanded on the driver by the local engine's level search on the
kernel (``km_driver_level``, the batches and threads of ``km_expand_level``) against a C set of
every visited fingerprint: each successor not visited, the first time it is made, is new. The
frontier is expanded in global index order and each state's successors in order (the threads'
parts of a batch merged in order), so the first time a fingerprint is made is its smallest key
(``parent index << POSITION_BITS | position``), the one the executors' fingerprint partitions
keep, and the new states come out in key order: numbered ``base + i`` exactly as a distributed
level numbers them. The counts, the depth, the verdict and the counterexamples are the
same wherever each level ran.

Moving between the two
    To the driver: the executors send their frontier partitions (``_frontier_of``, the states in
    global index order); the driver's set is built once from the prefix's kernel fingerprints and
    every level's (the parent pointers it keeps), and then takes each level's as it is numbered.
    To the executors: the driver's frontier is cut into equal ranges of global index
    (``_packed_frontier``), and the executors' visited fingerprints are built again when levels ran
    on the driver since they were last complete.
From the start
    The kernel path begins on the driver at the first level (``_driver_switch``): the readable
    local engine makes the initial states only, and every level runs in C on the driver while its
    frontier is below ``--spark-driver-below`` or, until a level has gone to the executors, below
    ``--spark-threshold``. On a local master the JVM starts at the first level that goes to the
    executors (``_executors_started``), so a search that never needs them starts no Spark
    application.
A run directory (``--checkpoint``) gets the driver's levels as Parquet files of the executors'
schema ``(fp, key, state)``, with their digests in run.json: ``--resume`` reads them as it reads
theirs. They are written as the local engine writes its checkpoints, every ``--checkpoint-every``
seconds, and before a level goes to the executors and when the search ends (its budget, its end):
the levels since the last write at once, each one's ``(fp, key)`` and only the last one's states
(the frontier a resume expands; a level behind it is read for its parent pointers only). Writing
every state of every level took a quarter of the run's CPU (bench/NOTES.md, issue 39).

``DriverLevelStep`` is a mixin of ``checker.spark.engine.SparkBFS``.
"""

from __future__ import annotations

import os
import re
import tempfile
import time
from collections.abc import Iterator
from typing import Any

import numpy as np

from checker.kernel_batch import FingerprintSet, batch_kernel
from checker.spark.driver_state import Counters, LevelInfo, LevelTiming, SparkRun
from checker.spark.kernel_step import POSITION_BITS, first_violations, kernel_checks
from checker.spark.packed_step import (
    POSITION_MASK,
    RECENT_LEVELS,
    ExpandStats,
    _frontier_of,
    write_level_file,
)
from checker.spark.rundir import RunDir, save_local_prefix

#: a local master's URL (``local``, ``local[N]``, ``local[*]``, ``local[N,F]``, ``local[*,F]``):
#: checked before its JVM starts, which is then left to the first level on the executors
LOCAL_MASTER = re.compile(r"local(\[(\*|[1-9][0-9]*)(,[1-9][0-9]*)?\])?")


def lazy_master(master: str) -> bool:
    """True when a run on ``master`` may start its JVM late: a well-formed local master, not under
    spark-submit (whose session exists already). Any other master starts at the first level, where
    Spark refuses a bad one in one line, as before."""
    return bool(LOCAL_MASTER.fullmatch(master)) and "PYSPARK_GATEWAY_PORT" not in os.environ


def local_partitions(master: str) -> int:
    """The partitions ``SparkBFS._start`` gives a local master (one a core, at least two)."""
    cores = re.match(r"local\[(\*|[0-9]+)", master)
    if cores is None:
        return 2
    count = (os.cpu_count() or 1) if cores.group(1) == "*" else int(cores.group(1))
    return max(2, count)


class _CollectFrontier:
    """A frontier partition's states, sorted by global index, for the driver (executor side)."""

    def __init__(self, numbers: Any) -> None:
        self.numbers = numbers

    def __call__(self, records: Iterator[Any]) -> Iterator[Any]:
        yield _frontier_of(records, self.numbers.value)


def driver_threads() -> int:
    """Threads a driver level expands with: the cores this process may use (the executors wait
    while the driver expands)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def expand_level(kernel: Any, gidx: np.ndarray, rows: np.ndarray, visited: FingerprintSet,
                 threads: int, symmetry: bool, reduce: bool, check_deadlock: bool,
                 checks: list[tuple[int, int]], stats: ExpandStats,
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A level's new states ``(keys, fps, states)`` in key order from its frontier ``rows`` (sorted
    by global index ``gidx``), each the first occurrence of a fingerprint not in ``visited``, which
    then holds them; ``stats`` counts.

    The local engine's level search on the kernel (``km_driver_level``, as ``km_expand_level``):
    each batch's parts in ``threads`` threads (ctypes lets go of the GIL) against ``visited`` read
    only, merged in the frontier's order, so a fingerprint's first occurrence is its smallest key;
    each new fingerprint added once, each new state copied once."""
    got = kernel.expand_level(rows, visited, threads, symmetry, reduce, bool(checks))
    stats.first.update(first_violations(got.masks, gidx, checks))
    stats.generated += int(got.degrees.sum(dtype=np.int64))
    if check_deadlock:
        stuck = np.flatnonzero(got.degrees == 0)
        if stuck.size:
            stats.deadlock = int(gidx[stuck[0]])
    keys = gidx[got.parent] << POSITION_BITS | got.position.astype(np.int64)
    return keys, got.fps, got.states


def visited_fingerprints(spark: SparkRun, levels: list[LevelInfo], after: int = 0) -> np.ndarray:
    """The kernel fingerprints of every state found (the prefix's when ``after`` is 0, and those of
    each level deeper than ``after`` whose parent pointers the driver keeps)."""
    parts = [spark.prefix_fps] if after == 0 and spark.prefix_fps is not None else []
    parts += [level.pointers[0] for level in levels
              if level.pointers is not None and level.depth > after]
    return np.concatenate(parts) if parts else np.zeros(0, np.int64)


class DriverLevelStep:
    """The kernel path's small levels on the driver, and the frontier's moves to and from the
    executors."""

    def _on_driver(self, st: Counters) -> bool:
        """The next level runs on the driver: its frontier has fewer than ``--spark-driver-below``
        states, or fewer than ``--spark-threshold`` and no level has gone to the executors."""
        return st.frontier_size < self.driver_below or (
            not self._spark.executors_used and st.frontier_size < self.threshold)

    def _driver_switch(self, st: Counters) -> None:
        """The kernel path from the first level: the local prefix (the initial states) packed and
        kept on the driver as its frontier (``packed_prefix``), Spark started only if the master is
        not a local one (``lazy_master``)."""
        from checker.codec import state_column_codec
        from checker.spark.kernel_step import packed_prefix

        local = st.local
        if self._run_dir is None:
            self._run_dir = RunDir(tempfile.mkdtemp(prefix="kmc-spark-"), temporary=True)
        spark = SparkRun(None, None, False, self.partitions or local_partitions(self.master))
        spark.codec = state_column_codec(self.model)  # run.json's transport: "arrow"
        if not self._run_dir.temporary:
            save_local_prefix(self._run_dir, self.model, self.options, local)
        rows, kernel_fps, start = packed_prefix(self._kernel, self.model, self.symmetry, local,
                                                self.options.reduce == "dead")
        spark.prefix_fps = kernel_fps
        gidx = np.arange(local.frontier_base, local.frontier_base + rows.shape[0] - start,
                         dtype=np.int64)
        spark.driver_frontier = (gidx, kernel_fps[start:], rows[start:])
        spark.driver_keys = np.zeros(0, np.int64)
        spark.recent = [kernel_fps[start:]]
        spark.frontier_checked = True  # the local engine checked its last level as it committed it
        st.spark_started = True
        st.local_distinct = len(local.log)
        local.frontier = []
        self._spark = spark
        if not lazy_master(self.master):
            self._executors_started()

    def _executors_started(self) -> None:
        """Spark's session for a run whose levels so far ran on the driver (its JVM, its Python
        workers), the first time a level goes to the executors."""
        spark = self._spark
        if spark.sc is None:
            started = self._start(self._run_dir, per_core=1)
            spark.session, spark.sc, spark.created = started.session, started.sc, started.created
            spark.partitions = started.partitions

    def _driver_frontier(self, spark: SparkRun) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The frontier on the driver (global indices, fingerprints, packed rows), collected from
        the executors if it is there."""
        if spark.driver_frontier is None:
            spark.sc.setJobDescription("kmc: the frontier to the driver")
            parts = [part for part in spark.frontier.mapPartitions(
                _CollectFrontier(spark.broadcasts[-1])).collect() if part[0].size]
            width = self._kernel.state_bytes
            if not parts:
                parts = [(np.zeros(0, np.int64), np.zeros(0, np.int64),
                          np.zeros((0, width), np.uint8))]
            gidx, fps, rows = (np.concatenate([part[i] for part in parts]) for i in range(3))
            order = np.argsort(gidx, kind="stable")
            spark.driver_frontier = (gidx[order], fps[order], np.ascontiguousarray(rows[order]))
            spark.retired.append(spark.frontier)
            spark.frontier = None
        return spark.driver_frontier

    def _driver_seen(self, spark: SparkRun, levels: list[LevelInfo], kernel: Any) -> Any:
        """The driver's C set of every visited fingerprint, brought up to the last level."""
        if spark.driver_seen is None:
            spark.driver_seen = FingerprintSet(kernel, visited_fingerprints(spark, levels))
        elif spark.driver_seen_depth < levels[-1].depth:
            spark.driver_seen.add(visited_fingerprints(spark, levels, spark.driver_seen_depth))
        spark.driver_seen_depth = levels[-1].depth
        return spark.driver_seen

    def _driver_level(self, spark: SparkRun, st: Counters, levels: list[LevelInfo]) -> None:
        """One level on the driver (the frontier is below ``--spark-driver-below``)."""
        level_started = time.monotonic()
        depth = st.depth + 1
        check = [] if spark.frontier_checked else self._pending(st)
        kernel = batch_kernel(self._shipment)
        gidx, _fps, rows = self._driver_frontier(spark)
        seen = self._driver_seen(spark, levels, kernel)
        cpu_started = time.process_time()
        stats = ExpandStats()
        keys, fps, states = expand_level(kernel, gidx, rows, seen, driver_threads(),
                                         self.symmetry, self.options.reduce == "dead",
                                         self.options.check_deadlock,
                                         kernel_checks(self._kernel, check), stats)
        timing = LevelTiming(depth, st.frontier_size, 0, 0.0,
                             expand=time.process_time() - cpu_started, engine="driver")
        spark.frontier_checked = True
        for bit, inv in enumerate(check):
            if bit in stats.first:
                st.found.setdefault(inv.name, stats.first[bit])
        if stats.first and self.options.stop_at_first:
            # the local engine stops before expanding a level where it finds a violation: the set
            # now holds successors that are not counted
            spark.driver_seen.close()
            spark.driver_seen = None
            self._packed_done(spark, st, levels, timing, level_started)
            return
        st.generated += stats.generated
        if stats.deadlock is not None and st.deadlock is None:
            st.deadlock = stats.deadlock
        spark.driver_seen_depth = depth  # the set took this level's fingerprints as it made them
        count = keys.size
        timing.new = count
        if count == 0:
            st.frontier_size = 0
            spark.driver_frontier = None
            self._packed_done(spark, st, levels, timing, level_started)
            return
        base = st.distinct
        info = LevelInfo(depth, base, count)
        info.pointers = (fps, keys >> POSITION_BITS, (keys & POSITION_MASK).astype(np.int32))
        spark.recent = [*spark.recent[1 - RECENT_LEVELS:], fps]
        spark.driver_frontier = (base + np.arange(count, dtype=np.int64), fps, states)
        spark.driver_keys = keys
        spark.frontier_checked = False
        if not self._run_dir.temporary:
            spark.unwritten.append(info)
        st.level_done(depth, base, count)
        levels.append(info)
        self._packed_done(spark, st, levels, timing, level_started)

    def _commit_due(self, spark: SparkRun) -> bool:
        """run.json is written after this level: it ran on the executors, or the driver's levels
        have waited ``--checkpoint-every`` seconds."""
        return (not spark.unwritten
                or time.monotonic() - spark.committed_at >= self.options.checkpoint_every)

    def _write_driver_levels(self, spark: SparkRun, st: Counters, levels: list[LevelInfo]) -> None:
        """The driver's levels since run.json was last written, as level files: each one's
        fingerprints and keys, and the states of the last one if it is the frontier."""
        for info in spark.unwritten:
            info.path = self._run_dir.level_path(info.depth)
            os.makedirs(info.path, exist_ok=True)
            fps, parents, positions = info.pointers
            keys = parents << POSITION_BITS | positions.astype(np.int64)
            frontier = (info is levels[-1] and st.frontier_size > 0
                        and spark.driver_frontier is not None)
            states = spark.driver_frontier[2] if frontier else np.zeros((info.count, 0), np.uint8)
            write_level_file(info.path, 0, fps, keys, states)
            info.digest = self._run_dir.level_digest(info.path)
        spark.unwritten = []

    def _to_executors(self, spark: SparkRun, st: Counters, levels: list[LevelInfo]) -> None:
        """The driver's frontier back to the executors, in equal ranges of global index, with their
        visited fingerprints made complete again and the level's numbering broadcast."""
        gidx, fps, rows = spark.driver_frontier
        spark.executors_used = True
        self._write_driver_levels(spark, st, levels)  # the executors' level commits them
        if spark.visited_depth < st.depth:
            if spark.visited is not None:
                spark.retired.append(spark.visited)
            spark.visited = self._packed_visited(spark, visited_fingerprints(spark, levels))
            spark.visited_depth = st.depth
        spark.frontier = self._packed_frontier(spark, gidx, fps, rows)
        for old in spark.broadcasts:
            old.unpersist()
        spark.broadcasts.append(spark.sc.broadcast((spark.driver_keys, st.frontier_base,
                                                    np.concatenate(spark.recent))))
        spark.driver_frontier = None
        batch_kernel(self._shipment).release_rows()  # not held while the executors run levels
