"""One level of the search on Spark with the compiled kernel, the JVM moving blocks, not rows.

The arrow transport on the kernel (``kernel_step`` in DataFrames) gave the JVM a row a candidate:
the shuffle, sort, anti-joins and ``min_by`` of about two 300-byte rows a new state cost the JVM
ten times the executors' C expansion (bench/NOTES.md, issue 39). Here the JVM carries a few numpy
blocks a task, and every per-state step is numpy or C in the executors' Python workers:

Per level (one Spark job, two stages)
    *Map* (a task a frontier partition, ``_ExpandPacked``): the partition's states, sorted by global
    index, are expanded by ``km_expand_batch`` with a C set of the last ``RECENT_LEVELS`` levels'
    fingerprints and the partition's own first occurrences (``kernel_step``'s filter). The task
    keeps its candidates' packed states in its own output (``("k", keys, fps, states)``, persisted
    where it ran: they never cross the shuffle) and sends each fingerprint partition the
    candidates' fingerprints and order keys only (``parent index << 20 | position``: 16 bytes a
    candidate, one block a destination), with one statistics block: states generated, the first
    deadlocked state, and for each invariant checked the first frontier state (global index) that
    violates it.
    *Reduce* (a task a fingerprint partition, ``_DedupPacked``): its visited fingerprints (one
    sorted array, persisted) and the candidates sent to it; the smallest key a fingerprint
    (``np.lexsort``), those not visited are the partition's new states; the visited array is merged
    with them (the next level reads it where it is).
    The driver collects each partition's new ``(fp, key)`` (the statistics with them), numbers the
    level by key exactly as the local engine does (the global index of the ``i``-th smallest key is
    ``base + i``), keeps them as the level's parent pointers, and broadcasts the sorted keys.

The next frontier is where its states already are: the next map task of partition ``j`` keeps, of
the candidates partition ``j`` made, those whose key is a level's key (``_frontier_of``). A
partition therefore holds a range of global indices at every level (children are numbered in their
parents' order), the neighbourhood whose shared successors its first-occurrence filter drops. A
frontier whose largest partition passes ``SKEW`` times the mean is cut again into equal ranges of
global indices (a shuffle of its states, that level only).

Every task is deterministic (its input sorted by global index, minimum keys, minimum indices), and a
state's key decides which candidate survives, so the counts, the depth, the verdict and the
counterexamples are the local engine's at any partition and executor count.

Resumable runs (``--checkpoint DIR``, a run directory on a path every executor reaches): each level,
once its job is in, is written by the executors that hold its states as Parquet ``(fp, key,
state)`` (the files ``arrow_step`` writes, one a partition), and committed to run.json with its
digest; ``--resume`` reads every level's ``(fp, key)`` to the driver (``arrow_step``'s checks),
rebuilds the visited fingerprints from them and the prefix's kernel fingerprints, and the executors
read the last level's files as the frontier.

``PackedLevelStep`` is a mixin of ``checker.spark.engine.SparkBFS``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from checker.kernel_batch import FingerprintSet, Shipment, batch_kernel
from checker.spark.blocks import _gc_paused, fingerprint_partition
from checker.spark.driver_state import Counters, LevelInfo, LevelTiming, SparkRun
from checker.spark.expand import _maybe_fail
from checker.spark.kernel_step import POSITION_BITS, kernel_checks, packed_prefix
from checker.spark.session import storage_level

POSITION_MASK = (1 << POSITION_BITS) - 1
#: levels whose fingerprints the expansion's C set starts with (``arrow_step.RECENT_LEVELS``)
RECENT_LEVELS = 3
#: a frontier whose largest partition holds more than this many times the mean is cut again into
#: equal ranges of global indices
SKEW = 1.5
#: statistics: the "fingerprint partition" their block is sent to
_STATS_TO = 0


# -- executor side (module level: pickled by reference) -------------------------------------------

def _frontier_of(records: Iterable[Any], numbers: tuple) -> tuple[np.ndarray, np.ndarray,
                                                                 np.ndarray]:
    """A frontier partition's states as (global indices, fingerprints, packed rows), sorted by
    global index: ``("f", gidx, fps, rows)`` blocks as they are, and of the candidates a task kept
    (``("k", keys, fps, rows)``) those whose key is one of the level's (``numbers``: the level's
    keys sorted, the global index of the first). A task's kept candidates come back in the order it
    made them, its parents' and so the level's, so the rows are copied once, not sorted, unless
    they come from a shuffle."""
    keys_sorted, base = numbers[0], numbers[1]
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    width = 0
    for record in records:
        kind, first, fps, rows = record
        width = rows.shape[1]
        if kind == "f":
            parts.append((first, fps, rows))
            continue
        if not keys_sorted.size:
            continue
        at = np.searchsorted(keys_sorted, first)
        at[at >= keys_sorted.size] = 0
        hit = keys_sorted[at] == first
        if hit.all():
            parts.append((base + at, fps, rows))
        elif hit.any():
            chosen = np.flatnonzero(hit)
            parts.append((base + at[chosen], fps[chosen], rows[chosen]))
    if not parts:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((0, width), np.uint8)
    if len(parts) == 1:
        gidx, fps, rows = parts[0]
    else:
        gidx, fps, rows = (np.concatenate([part[i] for part in parts]) for i in range(3))
    if gidx.size > 1 and np.any(gidx[1:] < gidx[:-1]):
        order = np.argsort(gidx, kind="stable")
        gidx, fps, rows = gidx[order], fps[order], rows[order]
    return gidx, fps, np.ascontiguousarray(rows)


class ExpandStats:
    """What an expansion of a frontier found besides its successors: states generated, the first
    deadlocked state and, for each checked invariant's bit, the first violating state (global
    indices)."""

    def __init__(self) -> None:
        self.generated = 0
        self.deadlock: int | None = None
        self.first: dict[int, int] = {}


def expand_rows(kernel: Any, gidx: np.ndarray, rows: np.ndarray, seen: FingerprintSet,
                symmetry: bool, reduce: bool, check_deadlock: bool,
                checks: list[tuple[int, int]], stats: ExpandStats) -> Iterator[Any]:
    """Expand ``rows`` (states sorted by global index ``gidx``) with ``km_expand_batch`` a chunk at
    a time, each successor whose fingerprint is not in ``seen`` once (then added): blocks
    ``("k", keys, fps, states)`` in the order of their keys (``parent index << POSITION_BITS |
    position``); ``stats`` counts. The executors' map task expands with it."""
    chunk = kernel.chunk()
    for start in range(0, rows.shape[0], chunk):
        got = kernel.expand(rows[start:start + chunk], symmetry, seen, reduce)
        for bit, kernel_bit in checks:
            if bit not in stats.first:
                hit = np.flatnonzero(got.masks >> kernel_bit & 1)
                if hit.size:
                    stats.first[bit] = int(gidx[start + hit[0]])
        stats.generated += int(got.degrees.sum())
        if check_deadlock and stats.deadlock is None:
            stuck = np.flatnonzero(got.degrees == 0)
            if stuck.size:
                stats.deadlock = int(gidx[start + stuck[0]])
        if got.fps.size:
            keys = (gidx[start + got.parent.astype(np.int64)] << POSITION_BITS
                    | got.position.astype(np.int64))
            yield ("k", keys, got.fps, got.states)


class _ExpandPacked:
    """The map side of a level: expand one frontier partition in C; keep the candidates' states
    here, send their ``(fp, key)`` to their fingerprint partitions and the statistics to one."""

    def __init__(self, shipment: Shipment, symmetry: bool, reduce: bool, check_deadlock: bool,
                 checks: list[tuple[int, int]], numbers: Any, partitions: int,
                 fail_once: str | None = None) -> None:
        self.shipment = shipment
        self.symmetry = symmetry
        self.reduce = reduce
        self.check_deadlock = check_deadlock
        self.checks = checks  # (bit of the level's mask, bit of the kernel's violation mask)
        self.numbers = numbers  # broadcast (level's keys sorted, first index, recent fingerprints)
        self.partitions = partitions
        self.fail_once = fail_once

    def __call__(self, records: Iterator[Any]) -> Iterator[Any]:
        return _gc_paused(self._run(records))

    def _run(self, records: Iterator[Any]) -> Iterator[Any]:
        cpu_started = time.process_time()
        kernel = batch_kernel(self.shipment)
        numbers = self.numbers.value
        gidx, _fps, rows = _frontier_of(records, numbers)
        if self.fail_once is not None:
            _maybe_fail(rows.shape[0], self.fail_once)
        stats = ExpandStats()
        out_fps: list[np.ndarray] = []
        out_keys: list[np.ndarray] = []
        with FingerprintSet(kernel, numbers[2]) as seen:
            for block in expand_rows(kernel, gidx, rows, seen, self.symmetry, self.reduce,
                                     self.check_deadlock, self.checks, stats):
                out_keys.append(block[1])
                out_fps.append(block[2])
                yield block
        generated, deadlock, first = stats.generated, stats.deadlock, stats.first
        fps = np.concatenate(out_fps) if out_fps else np.zeros(0, np.int64)
        keys = np.concatenate(out_keys) if out_keys else np.zeros(0, np.int64)
        dest = fps % self.partitions
        order = np.argsort(dest, kind="stable")
        bounds = np.searchsorted(dest[order], np.arange(self.partitions + 1))
        for q in range(self.partitions):
            part = order[bounds[q]:bounds[q + 1]]
            if part.size:
                yield (q, ("c", fps[part], keys[part]))
        yield (_STATS_TO, ("s", generated, deadlock, first,
                           time.process_time() - cpu_started))


def _is_shipped(record: Any) -> bool:
    """A block for the shuffle (keyed by its fingerprint partition), not a kept one."""
    return type(record[0]) is int


def _is_kept(record: Any) -> bool:
    return type(record[0]) is str


class _DedupPacked:
    """The reduce side of a level: one fingerprint partition's new states (the smallest key of each
    fingerprint not visited) and its visited fingerprints with them; the statistics pass
    through."""

    def __call__(self, q: int, records: Iterator[Any]) -> Iterator[Any]:
        return _gc_paused(self._run(q, records))

    def _run(self, q: int, records: Iterator[Any]) -> Iterator[Any]:
        started = time.process_time()
        visited = np.zeros(0, np.int64)
        fps_in: list[np.ndarray] = []
        keys_in: list[np.ndarray] = []
        for _q, block in records:
            if block[0] == "v":
                visited = block[1]
            elif block[0] == "c":
                fps_in.append(block[1])
                keys_in.append(block[2])
            else:
                yield (q, block)
        fps = np.concatenate(fps_in) if fps_in else np.zeros(0, np.int64)
        keys = np.concatenate(keys_in) if keys_in else np.zeros(0, np.int64)
        order = np.lexsort((keys, fps))
        fps, keys = fps[order], keys[order]
        first = np.ones(fps.size, bool)
        first[1:] = fps[1:] != fps[:-1]
        fps, keys = fps[first], keys[first]
        if visited.size and fps.size:
            at = np.searchsorted(visited, fps)
            at[at >= visited.size] = 0
            fresh = visited[at] != fps
            fps, keys = fps[fresh], keys[fresh]
        merged = np.concatenate([visited, fps])
        merged.sort(kind="stable")
        yield (q, ("v", merged))
        yield (q, ("n", fps, keys, time.process_time() - started))


def _is_visited(record: Any) -> bool:
    return record[1][0] == "v"


def _not_visited(record: Any) -> bool:
    return record[1][0] != "v"


def _second(record: Any) -> Any:
    return record[1]


class _FrontierViolations:
    """For each check, a frontier partition's first state (global index) violating it: a frontier
    the search stops at without expanding it."""

    def __init__(self, shipment: Shipment, checks: list[tuple[int, int]], numbers: Any) -> None:
        self.shipment = shipment
        self.checks = checks
        self.numbers = numbers

    def __call__(self, records: Iterator[Any]) -> Iterator[Any]:
        kernel = batch_kernel(self.shipment)
        gidx, _fps, rows = _frontier_of(records, self.numbers.value)
        yield _first_violating(kernel.violations(rows), gidx, self.checks)


def _first_violating(masks: np.ndarray, gidx: np.ndarray,
                     checks: list[tuple[int, int]]) -> dict[int, int]:
    """For each check's bit, the first state (global index) whose violation mask has its kernel
    bit."""
    first: dict[int, int] = {}
    for bit, kernel_bit in checks:
        hit = np.flatnonzero(masks >> kernel_bit & 1)
        if hit.size:
            first[bit] = int(gidx[hit[0]])
    return first


class _ByIndexRange:
    """A frontier partition's states keyed by the partition of their global index's range (a
    frontier cut again into equal ranges)."""

    def __init__(self, bounds: np.ndarray, numbers: Any) -> None:
        self.bounds = bounds  # the first global index of each partition but the first
        self.numbers = numbers

    def __call__(self, records: Iterator[Any]) -> Iterator[Any]:
        gidx, fps, rows = _frontier_of(records, self.numbers.value)
        dest = np.searchsorted(self.bounds, gidx, side="right")
        cuts = np.searchsorted(dest, np.arange(self.bounds.size + 2))
        for j in range(self.bounds.size + 1):
            lo, hi = cuts[j], cuts[j + 1]
            if hi > lo:
                yield (j, ("f", gidx[lo:hi], fps[lo:hi], rows[lo:hi]))


class _WriteLevel:
    """A level's states that a frontier partition holds, written as one Parquet file ``(fp, key,
    state)`` of the level's directory (atomically: a retried task rewrites it whole); its row
    count."""

    def __init__(self, path: str, numbers: Any) -> None:
        self.path = path
        self.numbers = numbers  # the level's keys sorted and its first index

    def __call__(self, j: int, records: Iterator[Any]) -> Iterator[int]:
        gidx, fps, rows = _frontier_of(records, self.numbers.value)
        if gidx.size:
            keys_sorted, base = self.numbers.value[0], self.numbers.value[1]
            write_level_file(self.path, j, fps, keys_sorted[gidx - base], rows)
        yield int(gidx.size)


def write_level_file(path: str, j: int, fps: np.ndarray, keys: np.ndarray,
                     rows: np.ndarray) -> None:
    """States of a level as the Parquet file ``part-j`` ``(fp, key, state)`` of its directory,
    atomically (a retried task rewrites it whole)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from checker.spark.kernel_step import binary_column, long_column

    table = pa.table({"fp": long_column(pa, fps), "key": long_column(pa, keys),
                      "state": binary_column(pa, rows, copy=False)})
    target = os.path.join(path, f"part-{j:05d}.parquet")
    tmp = os.path.join(path, f".part-{j:05d}.parquet.tmp")
    # no dictionary: a level's states and fingerprints are distinct (PyArrow would try one a
    # column, then fall back, a page at a time); LZ4: 0.7 us a 309-byte Kafka state and 22 bytes
    # on disk, where Snappy took 3.4 us and 31 bytes (bench/NOTES.md)
    # (no statistics of the state column: nothing filters on it, and its minimum and maximum cost
    # a comparison of 300-byte values a row)
    pq.write_table(table, tmp, use_dictionary=False, compression="lz4",
                   write_statistics=["fp", "key"])
    os.replace(tmp, target)


class _ReadLevel:
    """A level file written by ``_WriteLevel`` (or the arrow transport), read by an executor as a
    block of kept candidates: the last level of a resumed run, the frontier."""

    def __init__(self, width: int) -> None:
        self.width = width

    def __call__(self, paths: Iterator[str]) -> Iterator[Any]:
        import pyarrow.parquet as pq

        from checker.spark.kernel_step import packed_rows

        for path in paths:
            table = pq.read_table(path, columns=["fp", "key", "state"])
            for batch in table.to_batches():
                if batch.num_rows:
                    yield ("k", batch.column(1).to_numpy(), batch.column(0).to_numpy(),
                           packed_rows(batch.column(2), self.width))


# -- the driver ------------------------------------------------------------------------------------

def packed_available(run_dir: Any) -> bool:
    """True when a run can take this step: its run directory (if any) is a path of this machine's
    file system, which the executors write and read with PyArrow."""
    return run_dir is None or run_dir.local


def _visited_blocks(fps: np.ndarray, partitions: int) -> list[tuple[int, tuple]]:
    """``fps`` as one sorted block a fingerprint partition."""
    fps = np.asarray(fps, dtype=np.int64)
    dest = fps % partitions
    return [(q, ("v", np.sort(fps[dest == q], kind="stable"))) for q in range(partitions)]


class PackedLevelStep:
    """The Spark levels of ``SparkBFS`` on the kernel, in blocks."""

    def _packed_visited(self, spark: SparkRun, fps: np.ndarray) -> Any:
        parts = spark.partitions
        return (spark.sc.parallelize(_visited_blocks(fps, parts), parts)
                .partitionBy(parts, fingerprint_partition).persist(storage_level()))

    def _packed_frontier(self, spark: SparkRun, gidx: np.ndarray, fps: np.ndarray,
                         rows: np.ndarray) -> Any:
        """States in ``spark.partitions`` equal ranges of their global index, one block each."""
        parts = spark.partitions
        cuts = [gidx.size * j // parts for j in range(parts + 1)]
        blocks = [("f", gidx[cuts[j]:cuts[j + 1]], fps[cuts[j]:cuts[j + 1]],
                   rows[cuts[j]:cuts[j + 1]]) for j in range(parts)]
        spark.ranges = (int(gidx[0]) if gidx.size else 0) + np.array(cuts[:-1], np.int64)
        return spark.sc.parallelize(blocks, parts).persist(storage_level())

    def _packed_numbers(self, spark: SparkRun, keys_sorted: np.ndarray, base: int,
                        fps: np.ndarray) -> None:
        """The next frontier's numbering for its expansion (its keys sorted, its first global index)
        with the last ``RECENT_LEVELS`` levels' fingerprints."""
        for old in spark.broadcasts:
            old.unpersist()
        spark.recent = [*spark.recent[1 - RECENT_LEVELS:], fps]
        spark.broadcasts.append(spark.sc.broadcast((keys_sorted, base,
                                                    np.concatenate(spark.recent))))

    def _packed_switch(self, spark: SparkRun, st: Counters) -> None:
        """Move the local prefix to Spark: the kernel's packed states and fingerprints of it
        (``packed_prefix``), its visited fingerprints by partition, its last level in ranges."""
        from checker.codec import state_column_codec
        from checker.spark.rundir import save_local_prefix

        local = st.local
        spark.codec = state_column_codec(self.model)  # run.json's transport: "arrow"
        if not self._run_dir.temporary:
            save_local_prefix(self._run_dir, self.model, self.options, local)
        rows, kernel_fps, start = packed_prefix(self._kernel, self.model, self.symmetry, local,
                                                self.options.reduce == "dead")
        spark.visited = self._packed_visited(spark, kernel_fps)
        spark.prefix_fps = kernel_fps
        spark.visited_depth = local.depth
        gidx = np.arange(local.frontier_base, local.frontier_base + rows.shape[0] - start,
                         dtype=np.int64)
        spark.frontier = self._packed_frontier(spark, gidx, kernel_fps[start:], rows[start:])
        spark.recent = []
        self._packed_numbers(spark, np.zeros(0, np.int64), local.frontier_base, kernel_fps[start:])
        spark.frontier_checked = True  # the local engine checked its last level as it committed it
        st.spark_started = True
        st.local_distinct = len(local.log)
        local.frontier = []

    def _packed_level(self, spark: SparkRun, st: Counters, levels: list[LevelInfo]) -> None:
        level_started = time.monotonic()
        if spark.driver_frontier is not None:  # the last levels ran on the driver
            self._to_executors(spark, st, levels)
        depth = st.depth + 1
        parts = spark.partitions
        check = [] if spark.frontier_checked else self._pending(st)
        fail_once = (self.fail_marker if self.fail_at_depth is not None
                     and int(self.fail_at_depth) == depth else None)
        expand = _ExpandPacked(self._shipment, self.symmetry, self.options.reduce == "dead",
                               self.options.check_deadlock, kernel_checks(self._kernel, check),
                               spark.broadcasts[-1], parts, fail_once)
        spark.sc.setJobDescription(f"kmc level {depth}: expand")
        expanded = spark.frontier.mapPartitions(expand).persist(storage_level())
        shipped = expanded.filter(_is_shipped).partitionBy(parts, fingerprint_partition)
        reduced = (spark.visited.union(shipped)
                   .mapPartitionsWithIndex(_DedupPacked(), preservesPartitioning=True)
                   .persist(storage_level()))
        if reduced.getNumPartitions() != parts:  # the union did not keep the partitioning
            raise RuntimeError("the visited fingerprints and the candidates are partitioned apart")
        blocks = reduced.filter(_not_visited).map(_second).collect()
        job_expand = time.monotonic() - level_started
        index_started = time.monotonic()
        spark.retired += [spark.frontier, spark.visited]
        new_fps = [b[1] for b in blocks if b[0] == "n"]
        new_keys = [b[2] for b in blocks if b[0] == "n"]
        stats = [b for b in blocks if b[0] == "s"]
        timing = LevelTiming(depth, st.frontier_size, 0, 0.0, job_expand=job_expand,
                             expand=sum(s[4] for s in stats),
                             dedup=sum(b[3] for b in blocks if b[0] == "n"))
        spark.frontier_checked = True
        found: dict[int, int] = {}
        for s in stats:
            for bit, index in s[3].items():
                found[bit] = min(found.get(bit, index), index)
        for bit, inv in enumerate(check):
            if bit in found:
                st.found.setdefault(inv.name, found[bit])
        if found and self.options.stop_at_first:
            # the local engine stops after the level where it finds a violation, before expanding
            # it: the expansion's new level, successors and deadlock are not counted
            spark.retired += [expanded, reduced]
            self._packed_done(spark, st, levels, timing, level_started)
            return
        st.generated += sum(s[1] for s in stats)
        stuck = [s[2] for s in stats if s[2] is not None]
        if stuck and st.deadlock is None:
            st.deadlock = min(stuck)
        fps = np.concatenate(new_fps) if new_fps else np.zeros(0, np.int64)
        keys = np.concatenate(new_keys) if new_keys else np.zeros(0, np.int64)
        count = int(fps.size)
        timing.new = count
        if count == 0:
            spark.retired += [expanded, reduced]
            st.frontier_size = 0
            spark.frontier = None
            self._packed_done(spark, st, levels, timing, level_started)
            return
        base = st.distinct
        order = np.argsort(keys, kind="stable")
        keys, fps = keys[order], fps[order]
        info = LevelInfo(depth, base, count)
        info.pointers = (fps, keys >> POSITION_BITS, (keys & POSITION_MASK).astype(np.int32))
        self._packed_numbers(spark, keys, base, fps)
        frontier = expanded.filter(_is_kept)
        spark.visited = reduced.filter(_is_visited)
        spark.visited_depth = depth
        spark.frontier = self._rebalanced(spark, frontier, keys, base)
        spark.frontier_checked = False
        if not self._run_dir.temporary:
            self._write_packed_level(spark, info)
        spark.keep = [expanded, reduced]
        timing.job_index = time.monotonic() - index_started
        st.level_done(depth, base, count)
        levels.append(info)
        self._packed_done(spark, st, levels, timing, level_started)

    def _write_packed_level(self, spark: SparkRun, info: LevelInfo) -> None:
        """Write the new frontier (``spark.frontier``, ``info.count`` states) as the run
        directory's level file, by the executors that hold it, and record its digest."""
        depth = info.depth
        spark.sc.setJobDescription(f"kmc level {depth}: write")
        info.path = self._run_dir.level_path(depth)
        os.makedirs(info.path, exist_ok=True)
        written = sum(spark.frontier.mapPartitionsWithIndex(
            _WriteLevel(info.path, spark.broadcasts[-1])).collect())
        if written != info.count:
            raise RuntimeError(f"level {depth}: {written} states written, {info.count} numbered")
        info.digest = self._run_dir.level_digest(info.path)

    def _rebalanced(self, spark: SparkRun, frontier: Any, keys: np.ndarray, base: int) -> Any:
        """The next frontier where its states are (``frontier``, the kept candidates, selected in
        the next map task), or, when the partitions' shares of the level are skewed past ``SKEW``
        or not known (a resumed run), cut again into equal ranges of global indices (one shuffle of
        the level's states). ``spark.ranges``: the first global index of each frontier
        partition."""
        parts = frontier.getNumPartitions()
        ranges = spark.ranges
        if ranges is not None and ranges.size == parts:
            # each partition holds a range of the level before: its children (numbered in their
            # parents' order) are a range of this one
            parents = keys >> POSITION_BITS
            share = np.bincount(np.searchsorted(ranges, parents, side="right") - 1,
                                minlength=parts)
            if share.max() <= SKEW * max(1.0, keys.size / parts):
                spark.ranges = base + np.concatenate([[0], np.cumsum(share)[:-1]])
                return frontier
        parts = spark.partitions
        bounds = np.array([base + keys.size * j // parts for j in range(1, parts)], np.int64)
        spark.ranges = np.concatenate([[base], bounds]).astype(np.int64)
        return (frontier.mapPartitions(_ByIndexRange(bounds, spark.broadcasts[-1]))
                .partitionBy(parts, fingerprint_partition).map(_second)
                .persist(storage_level()))

    def _packed_done(self, spark: SparkRun, st: Counters, levels: list[LevelInfo],
                     timing: LevelTiming, level_started: float) -> None:
        for rdd in spark.retired:
            rdd.unpersist(False)
        spark.retired, spark.keep = spark.keep, []
        if self._commit_due(spark):
            self._write_driver_levels(spark, st, levels)
            self._commit(spark, st, levels, self._run_dir)
        timing.seconds = time.monotonic() - level_started
        self._level_done(timing, st)

    def _packed_first_violations(self, spark: SparkRun, st: Counters,
                                 invariants: list[Any]) -> None:
        """A frontier the search stops at without expanding it: each invariant's first violating
        state, recorded as the local engine does."""
        if not invariants or (spark.frontier is None and spark.driver_frontier is None):
            return
        checks = kernel_checks(self._kernel, invariants)
        if spark.driver_frontier is not None:  # the level ran on the driver (``driver_level``)
            gidx, _fps, rows = spark.driver_frontier
            parts = [_first_violating(batch_kernel(self._shipment).violations(rows), gidx,
                                      checks)]
        else:
            spark.sc.setJobDescription(f"kmc level {st.depth}: first violating states")
            check = _FrontierViolations(self._shipment, checks, spark.broadcasts[-1])
            parts = spark.frontier.mapPartitions(check).collect()
        found: dict[int, int] = {}
        for part in parts:
            for bit, index in part.items():
                found[bit] = min(found.get(bit, index), index)
        for bit, inv in enumerate(invariants):
            if bit in found:
                st.found.setdefault(inv.name, found[bit])

    def _packed_resume(self, spark: SparkRun, st: Counters, levels: list[LevelInfo]) -> None:
        """A run directory back in Spark: the levels' parent pointers on the driver (checked by
        ``_resumed_pointers``), the visited fingerprints (the prefix's, packed again, and every
        level's) by partition, and the last level's files read by the executors as the
        frontier."""
        from checker.codec import state_column_codec

        spark.codec = state_column_codec(self.model)
        local = st.local
        self._resumed_pointers(spark, levels)
        spark.prefix_fps = self._kernel_prefix_fps(local)
        visited = [spark.prefix_fps] + [lv.pointers[0] for lv in levels if lv.path is not None]
        spark.visited = self._packed_visited(spark, np.concatenate(visited))
        spark.visited_depth = st.depth
        spark.recent = []
        for level in levels[-RECENT_LEVELS:-1]:
            if level.pointers is not None:
                spark.recent.append(level.pointers[0])
        spark.frontier_checked = False  # the last level's states are checked as they are expanded
        if not st.frontier_size:
            return
        last = levels[-1]
        files = sorted(os.path.join(last.path, name) for name in os.listdir(last.path)
                       if not name.startswith((".", "_")))
        width = self._kernel.state_bytes
        spark.frontier = (spark.sc.parallelize(files, max(1, len(files)))
                          .mapPartitions(_ReadLevel(width)).persist(storage_level()))
        fps, parents, positions = last.pointers
        keys = parents << POSITION_BITS | positions.astype(np.int64)
        self._packed_numbers(spark, keys, last.base, fps)
