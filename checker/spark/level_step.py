"""One level of the search on Spark: the move of the local prefix to RDDs, then per level job 1
(expand, dedup, invariants), the numbering and job 2 (the parent pointers, the level's Parquet
files).

``LevelStep`` is a mixin of ``checker.spark.engine.SparkBFS``."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from checker.codec import Codec
from checker.spark.blocks import (
    _fp_record,
    _fps_to_chunk,
    _frontier_record,
    _LevelRows,
    _merge_chunks,
    _merge_stats,
    _pointer_block,
    _rows_to_block,
    _stats,
    _summary_of,
    _visited_chunk,
    fingerprint_partition,
)
from checker.spark.driver_state import Counters, LevelInfo, LevelTiming, SparkRun
from checker.spark.expand import _Dedup, _Expand, _ParentRange
from checker.spark.numbering import _Attach, _IndexOf, _join_numbers, _Number, _OrderKeys
from checker.spark.rundir import RunDir, save_local_prefix
from checker.spark.session import storage_level


class LevelStep:
    """The Spark levels of ``SparkBFS``."""

    def _switch(self, spark: SparkRun, st: Counters, levels: list[LevelInfo],
                run_dir: RunDir) -> None:
        """Move the local prefix to Spark: its visited set and last level become RDDs."""
        local = st.local
        sc, parts = spark.sc, spark.partitions
        if not run_dir.temporary:
            save_local_prefix(run_dir, self.model, self.options, local)
        fps = local.visited.array.tolist()
        spark.visited = (
            sc.parallelize(fps, parts).map(_fp_record).partitionBy(parts, fingerprint_partition)
            .mapPartitionsWithIndex(_fps_to_chunk,
                                    preservesPartitioning=True).persist(storage_level())
        )
        items = list(enumerate(local.frontier, start=local.frontier_base))
        spark.frontier = (
            sc.parallelize(items,
                           parts).map(_frontier_record).partitionBy(parts, fingerprint_partition)
            .mapPartitionsWithIndex(_rows_to_block,
                                    preservesPartitioning=True).persist(storage_level())
        )
        st.spark_started = True
        st.local_distinct = len(local.log)
        local.frontier = []

    def _spark_level(self, spark: SparkRun, st: Counters, levels: list[LevelInfo],
                     run_dir: RunDir) -> None:
        parts = spark.partitions
        level_started = time.monotonic()
        depth = st.depth + 1
        frontier_size = st.frontier_size
        resumable = not run_dir.temporary
        ranges = _ParentRange(st.frontier_base, frontier_size, parts)
        expand = _Expand(self.model, self.symmetry, self.options.check_deadlock, parts,
                         fail_once=self.fail_marker if self.fail_at_depth is not None
                         and int(self.fail_at_depth) == depth
                         else None, canonical=self.local.canonical)
        candidates = spark.frontier.mapPartitions(expand).partitionBy(parts, fingerprint_partition)
        pending = [inv for inv in self.invariants if inv.name not in st.found]
        new = (
            spark.visited.union(candidates)
            .mapPartitionsWithIndex(_Dedup(pending, ranges, self.driver_index_limit),
                                    preservesPartitioning=True)
            .persist(storage_level())
        )
        # job 1: expand, shuffle, dedup, invariants; only the summaries come back
        summaries = new.map(_summary_of).collect()
        job_expand = time.monotonic() - level_started
        count, histogram, stats, first = _merge_summaries(summaries)
        st.generated += stats[1]
        if stats[2] is not None and st.deadlock is None:
            st.deadlock = stats[2]
        for rdd in spark.retired:
            rdd.unpersist(False)
        spark.retired = [spark.frontier]
        timing = LevelTiming(depth, frontier_size, count, 0.0, job_expand=job_expand,
                             expand=stats[3], dedup=stats[4], invariants=stats[5])
        if count == 0:
            spark.retired.append(new)
            st.frontier_size = 0
            spark.frontier = None
            self._commit(spark, st, levels, run_dir)
            timing.seconds = time.monotonic() - level_started
            self._level_done(timing, st)
            return
        index_started = time.monotonic()
        base = st.distinct
        info = LevelInfo(depth, base, count)
        level, found = self._number_level(spark, new, summaries, info, histogram, ranges, first)
        checkpointing = self.checkpoint_levels > 0 and depth % self.checkpoint_levels == 0
        if checkpointing:
            level.checkpoint()
        if resumable:
            # job 2: the parent pointers and the states as Parquet, the resume point
            info.path = run_dir.level_path(depth)
            self._write_level(spark, level, info.path, resumable)
            info.digest = run_dir.level_digest(info.path)
        elif info.pointers is None:
            # job 2: a large level's parent pointers stay on the executors, as arrays
            info.rdd = level.map(_pointer_block,
                                 preservesPartitioning=True).persist(storage_level())
            info.rdd.count()
            spark.pointers.append(info.rdd)
        for name, (_key, fp) in first.items():
            if name not in found:
                (found[name],) = spark.sc.runJob(level, _IndexOf(fp), [fp % parts])
        st.found.update(found)
        visited = (
            spark.visited.union(new.map(_visited_chunk, preservesPartitioning=True))
            .mapPartitionsWithIndex(_merge_chunks, preservesPartitioning=True)
            .persist(storage_level())
        )
        if checkpointing:
            visited.checkpoint()
        # until job 1 of the next level has materialized their successors
        spark.retired += [spark.visited, new]
        spark.visited = visited
        spark.frontier = level
        timing.job_index = time.monotonic() - index_started
        st.level_done(depth, base, count)
        levels.append(info)
        self._commit(spark, st, levels, run_dir)
        timing.seconds = time.monotonic() - level_started
        self._level_done(timing, st)

    def _number_level(self, spark: SparkRun, new: Any, summaries: list, info: LevelInfo,
                      histogram: list[int], ranges: _ParentRange,
                      first: dict[str, tuple]) -> tuple[Any, dict[str, int]]:
        """Job 2's first half: each new state's global index (parent order), attached to the level,
        and the indices of the violations the driver can look up (a small level's); the level
        persisted."""
        parts, count, base = spark.partitions, info.count, info.base
        keys = [summary[4] for summary in summaries]
        found: dict[str, int] = {}
        if count <= self.driver_index_limit and all(k is not None for k in keys):
            # a small level: number it on the driver (its keys came back with job 1), no shuffle
            fps = np.concatenate([k[0] for k in keys])
            parents = np.concatenate([k[1] for k in keys])
            positions = np.concatenate([k[2] for k in keys])
            order = np.lexsort((positions, parents))
            info.pointers = (fps[order], parents[order], positions[order])
            by_fp = np.argsort(fps)
            indices = np.empty(count, np.int64)
            indices[order] = base + np.arange(count, dtype=np.int64)
            numbers = spark.sc.broadcast((fps[by_fp], indices[by_fp]))
            spark.broadcasts.append(numbers)
            level = new.map(_Attach(numbers), preservesPartitioning=True).persist(storage_level())
            lookup = dict(zip(fps.tolist(), indices.tolist(), strict=True))
            found = {name: lookup[fp] for name, (_key, fp) in first.items()}
        else:
            # a large level: order keys go to parent ranges, are sorted and numbered from per-range
            # offsets (the histogram of job 1), and the indices come back to the fingerprint
            # partitions
            offsets, running = [], base
            for size in histogram:
                offsets.append(running)
                running += size
            numbers = (
                new.flatMap(_OrderKeys(ranges)).partitionBy(parts, fingerprint_partition)
                .mapPartitionsWithIndex(_Number(offsets,
                                                parts)).partitionBy(parts, fingerprint_partition)
            )
            level = (
                new.union(numbers).mapPartitionsWithIndex(_join_numbers, preservesPartitioning=True)
                .persist(storage_level())
            )
        return level, found

    def _write_level(self, spark: SparkRun, level: Any, path: str, resumable: bool) -> None:
        from pyspark.sql.types import BinaryType, IntegerType, LongType, StructField, StructType

        fields = [
            StructField("gidx", LongType(), False),
            StructField("fp", LongType(), False),
            StructField("parent", LongType(), False),
            StructField("pos", IntegerType(), False),
        ]
        codec = None
        if resumable:
            fields.append(StructField("state", BinaryType(), False))
            codec = Codec(self.model.state_types())
        frame = spark.session.createDataFrame(level.flatMap(_LevelRows(codec)), StructType(fields),
                                              verifySchema=False)
        frame.write.mode("overwrite").parquet(path)


def _merge_summaries(summaries: list) -> tuple[int, list[int], Any, dict[str, tuple]]:
    """Job 1's summaries merged: the level's new states, its histogram over the parent ranges, the
    statistics and each invariant's first violation (the smallest order key)."""
    count = sum(s[0] for s in summaries)
    histogram = [sum(column) for column in zip(*(s[1] for s in summaries), strict=True)]
    stats = _stats()
    first: dict[str, tuple] = {}
    for summary in summaries:
        stats = _merge_stats(stats, summary[3])
        for name, item in summary[2].items():
            if name not in first or item[0] < first[name][0]:
                first[name] = item
    return count, histogram, stats, first
