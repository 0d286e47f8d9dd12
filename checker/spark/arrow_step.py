"""One level of the search on Spark SQL: states as binary in Arrow batches, dedup and the anti-join
against the visited set in the JVM (``--spark-transport arrow``; needs PyArrow, pandas and PySpark
4).

Per level
    The frontier is a DataFrame ``(fp long, state binary)``; the states are encoded with the model's
    own plain form when it has one (``ModelStateCodec``), else ``CompactCodec`` (msgpack either
    way, never pickle). ``mapInArrow`` runs ``ArrowExpand`` on each frontier partition: it decodes
    the partition's states, checks the invariants not yet violated on each (a frontier state is a
    distinct state of the level before, and each is expanded exactly once, so each is checked once:
    the local engine's cost, where checking the candidates checked about 1.8 a new state), expands
    them in global-index order (the driver broadcasts the level's fingerprints and their global
    indices), keeps the first occurrence of every successor fingerprint with its order key ``parent
    index << 20 | successor position``, skips the successors in the last ``RECENT_LEVELS`` levels
    (their fingerprints come with the numbering: visited for sure, so not worth encoding) and
    encodes the rest, one Arrow batch at a time. One more row per partition carries its statistics
    (states generated, the first deadlocked state, the worker's CPU seconds, the bit mask of the
    invariants some state of the partition violates) with a null fingerprint.

    Spark then, in the JVM: shuffles the candidates to their fingerprint's partition and sorts them
    there, drops those already visited (left anti-joins on the fingerprint, merges against sorted
    runs partitioned alike, so no visited fingerprint moves), keeps the smallest key per
    fingerprint (``min_by``, a sort aggregation on the sorted input) and checkpoints the result,
    the new level, as the same job computes it (a local checkpoint on a local master: blocks in
    memory or spilled to disk; it keeps the level's partitioning and order, so the next level's
    plans need no exchange on the visited side and Catalyst's plans do not grow level by level).
    That job brings back only the level's ``(fp, key)`` columns and the statistics as Arrow: one
    job a level. The driver numbers the states exactly as the local engine does (by key), keeps them
    as the level's parent pointers for traces and broadcasts ``(fp, global index)`` for the next
    level.

    Violations: the statistics say which invariants some frontier state violates (rarely any);
    then one more job, ``FrontierCheck``, finds each one's first violating state in global-index
    order, the state the local engine reports. As the local engine stops after the level where it
    finds a violation (``stop_at_first``), the expansion's results are then dropped. A frontier the
    search does not expand (a budget or a deadlock stops it) is checked by ``FrontierCheck`` too.

    The visited set is a DataFrame of fingerprints hash-partitioned and sorted like the levels,
    plus one run per level since its last merge (the level's own fingerprints, a projection of
    its checkpoint). Every ``merge_levels`` levels the runs are merged into it (one shuffle of
    fingerprints, done by the next level's job).

    The next frontier is the new level repartitioned into equal ranges of its global indices (an
    exchange in the next level's job, ``_by_index_range``): neighbouring states, which share many
    successors on Kafka, are then expanded by one task, whose own first-occurrence filter drops the
    shared successors before they are encoded and shuffled.

Resumable runs (``--checkpoint DIR``): the local prefix is saved when Spark starts, and each level,
once its job is in, is written as Parquet ``(fp, key, state)`` (one more job, which reads the
level's checkpoint) and committed to run.json with its digest. ``--resume DIR`` reads every level's
``(fp, key)`` back to the driver as its parent pointers (each checked to point into the level
before), the visited fingerprints from every level and the last level as the frontier
(``_arrow_resume``).

Every task is deterministic (its input sorted by global index, minimum keys), so a retried task
or a recomputed partition changes nothing.

``ArrowLevelStep`` is a mixin of ``checker.spark.engine.SparkBFS``.
"""

from __future__ import annotations

import importlib.util
import time
from collections.abc import Iterator
from typing import Any

import numpy as np

from checker.codec import CompactCodec, ModelStateCodec, state_column_codec
from checker.search import SuccessorView
from checker.spark.blocks import _gc_paused
from checker.spark.driver_state import Counters, LevelInfo, LevelTiming, SparkRun
from checker.spark.kernel_step import (
    KernelExpand,
    KernelFrontierCheck,
    PartitionExpand,
    _candidates_arrays,
    binary_column,
    kernel_checks,
    packed_prefix,
    statistics_batch,
)
from checker.spark.rundir import RunDir, save_local_prefix
from spec.errors import BadFileError, UsageError
from spec.model import Model

#: bits of the order key that hold the successor position (a state has fewer than 2**20 successors)
POSITION_BITS = 20
POSITION_MASK = (1 << POSITION_BITS) - 1
#: levels whose fingerprints the expansion gets (the frontier and the ones before it): a successor
#: in one of them is known to be visited and is neither encoded nor checked (the anti-join in the
#: JVM drops it anyway; on Kafka most successors already visited are one to three levels back)
RECENT_LEVELS = 3
#: rows per Arrow batch that ``ArrowExpand`` yields
BATCH_ROWS = 8192
CANDIDATES_SCHEMA = "fp long, key long, state binary, bad long, gen long, dead long, cpu long"


def arrow_available() -> bool:
    """True when the Arrow transport can run: PyArrow and pandas installed (PySpark's ``mapInArrow``
    insists on pandas, though no pandas object is made) and PySpark 4 (``toArrow``)."""
    if importlib.util.find_spec("pyarrow") is None or importlib.util.find_spec("pandas") is None:
        return False
    from pyspark.sql import DataFrame

    return hasattr(DataFrame, "toArrow") and hasattr(DataFrame, "mapInArrow")


class ArrowExpand(PartitionExpand):
    """``mapInArrow`` over one frontier partition: its candidates as Arrow batches, then one
    statistics row. ``invariants`` are checked on the partition's own states (the frontier), not on
    the candidates."""

    def __init__(self, model: Model, symmetry: bool, check_deadlock: bool, invariants: list[Any],
                 numbers: Any, codec: ModelStateCodec | CompactCodec, fail_once: str | None = None,
                 canonical: Any = None) -> None:
        super().__init__(symmetry, check_deadlock, numbers, fail_once)
        self.model = model
        # the stored form (``search_canonical``: --reduce dead, --symmetry)
        self.canonical = canonical
        self.invariants = invariants
        self.codec = codec

    def _run(self, batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        cpu_started = time.process_time()
        blobs, gidx, order = _frontier_in_order(batches, self.numbers.value)
        recent = self.numbers.value[2]
        self._fail_once(len(blobs))
        decode = self.codec.decode
        # the frontier's states are checked here, each once (they are the level's distinct states);
        # an invariant violated in this partition is not checked again in it (``FrontierCheck``
        # finds the first violating state when the driver sees the bit)
        checks = [(1 << bit, inv.holds) for bit, inv in enumerate(self.invariants)]
        violated = 0
        seen: set[int] = set(recent.tolist())
        out_fp: list[int] = []
        out_key: list[int] = []
        out_state: list[bytes] = []
        expand = self._expander(seen, out_fp, out_key, out_state)
        generated = 0
        deadlock = None
        for i in order.tolist():
            index = int(gidx[i])
            state = decode(blobs[i])
            if checks:
                bad, checks = _check(state, checks)
                violated |= bad
            count = expand(state, index << POSITION_BITS)
            generated += count
            if not count and self.check_deadlock and deadlock is None:
                deadlock = index
            if len(out_fp) >= BATCH_ROWS:
                yield _candidates(pa, out_fp, out_key, out_state)
                out_fp.clear()
                out_key.clear()
                out_state.clear()
        if out_fp:
            yield _candidates(pa, out_fp, out_key, out_state)
        yield statistics_batch(pa, violated, generated, deadlock,
                               int((time.process_time() - cpu_started) * 1e6))

    def _expander(self, seen: set[int], out_fp: list[int], out_key: list[int],
                  out_state: list[bytes]) -> Any:
        """``expand(state, base_key)``: appends the state's successors not in ``seen`` (adding
        them) to the three columns, each with its order key ``base_key | position``, and returns
        the number of successors it generated; chosen once a partition."""
        encode = self.codec.encode
        view = SuccessorView(self.model, self.symmetry, self.canonical)
        successors_of = view.of
        successors, canonical = self.model.successors, view.canonical

        def too_many(count: int) -> None:
            if count > POSITION_MASK + 1:
                raise RuntimeError(f"a state with more than {POSITION_MASK + 1} successors")

        def expand_canonical(state: Any, base_key: int) -> int:
            succs = successors(state)
            if type(succs) is not list:
                succs = list(succs)
            count = len(succs)
            too_many(count)
            for pos, pair in enumerate(succs):
                succ = pair[1]
                raw = hash(succ)
                if raw in seen:
                    continue
                image = canonical(succ)
                fp = raw if image is succ else hash(image)
                if fp in seen:
                    continue
                seen.add(fp)
                out_fp.append(fp)
                out_key.append(base_key | pos)
                out_state.append(encode(image))
            return count

        def expand_viewed(state: Any, base_key: int) -> int:
            count, kept = successors_of(state)
            too_many(count)
            for pos, _act, succ in kept:
                fp = hash(succ)
                if fp in seen:
                    continue
                seen.add(fp)
                out_fp.append(fp)
                out_key.append(base_key | pos)
                out_state.append(encode(succ))
            return count

        # --symmetry / --reduce dead without bounds: a successor whose own fingerprint is one
        # ``seen`` holds is a canonical state found already (its canonical form is itself), so it is
        # skipped before ``canonical``, as the local engine's loop does
        # (``checker.bfs.LocalBFS._expand``); the candidates are the same
        only_canonical = view.within is None and view.canonical is not None
        return expand_canonical if only_canonical else expand_viewed


class FrontierCheck:
    """``mapInArrow`` over one frontier partition: the invariants on its states in global-index
    order; one row (global index, invariants violated) for each state that is the partition's first
    to violate one of them. Run on a frontier that is not expanded (the search stops there) and to
    find the first violating state once an expansion reported that some state violates an
    invariant."""

    def __init__(self, invariants: list[Any], numbers: Any, codec: ModelStateCodec
                 | CompactCodec) -> None:
        self.invariants = invariants
        self.numbers = numbers
        self.codec = codec

    def __call__(self, batches: Iterator[Any]) -> Iterator[Any]:
        return _gc_paused(self._run(batches))

    def _run(self, batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        blobs, gidx, order = _frontier_in_order(batches, self.numbers.value)
        decode = self.codec.decode
        checks = [(1 << bit, inv.holds) for bit, inv in enumerate(self.invariants)]
        found_index: list[int] = []
        found_bad: list[int] = []
        for i in order.tolist():
            if not checks:
                break
            state = decode(blobs[i])
            bad, checks = _check(state, checks)
            if bad:
                found_index.append(int(gidx[i]))
                found_bad.append(bad)
        yield pa.RecordBatch.from_arrays([pa.array(found_index, pa.int64()),
                                          pa.array(found_bad, pa.int64())],
                                         names=["index", "bad"])


def _check(state: Any, checks: list[tuple[int, Any]]) -> tuple[int, list[tuple[int, Any]]]:
    """(the bits of the invariants in ``checks`` that ``state`` violates, the checks left to run on
    the next states: a partition reports each invariant's first violation only)."""
    bad = 0
    for bit, holds in checks:
        if not holds(state):
            bad |= bit
    if bad:
        checks = [(bit, holds) for bit, holds in checks if not bit & bad]
    return bad, checks


def _frontier_in_order(batches: Iterator[Any], numbers: tuple) -> tuple[list[bytes], np.ndarray,
                                                                        np.ndarray]:
    """A frontier partition's encoded states, their global indices (from the level's numbering) and
    the order that sorts them by global index (every task is deterministic whatever its input
    order)."""
    fps_in: list[np.ndarray] = []
    blobs: list[bytes] = []
    for batch in batches:
        fps_in.append(batch.column(0).to_numpy())
        blobs.extend(batch.column(1).to_pylist())
    fps = np.concatenate(fps_in) if fps_in else np.zeros(0, np.int64)
    known, indices, _recent = numbers
    at = np.searchsorted(known, fps)
    at[at >= known.size] = 0
    if fps.size and not np.array_equal(known[at], fps):
        raise RuntimeError("a frontier state has no global index (the level's numbering was not "
                           "broadcast)")
    gidx = indices[at]
    return blobs, gidx, np.argsort(gidx, kind="stable")


def _candidates(pa: Any, fps: list[int], keys: list[int], states: list[bytes]) -> Any:
    return _candidates_arrays(pa, pa.array(fps, pa.int64()), pa.array(keys, pa.int64()),
                              pa.array(states, pa.binary()))



def _arrow_conf(spark: SparkRun, model: Model) -> None:
    """The session's settings for the arrow transport's plans, its state codec and its partition
    labels."""
    session, parts = spark.session, spark.partitions
    conf = session.conf
    conf.set("spark.sql.shuffle.partitions", str(parts))
    # the plans rely on the partitioning and order that a checkpoint keeps (hash of the
    # fingerprint, sorted by it): adaptive execution hides them behind its own plan node, and
    # a broadcast of the visited set would send it to every task each level
    conf.set("spark.sql.adaptive.enabled", "false")
    conf.set("spark.sql.autoBroadcastJoinThreshold", "-1")
    conf.set("spark.sql.execution.arrow.pyspark.enabled", "true")
    spark.codec = state_column_codec(model)
    spark.labels = _partition_labels(session, parts)


def _fp_table(fps: Any) -> Any:
    import pyarrow as pa

    return pa.table({"fp": pa.array(np.asarray(fps, dtype=np.int64))})


def _partition_labels(session: Any, partitions: int) -> list[int]:
    """For each partition ``j`` a long ``label`` that ``repartition(partitions, label)`` sends to
    partition ``j`` (Spark places a row at ``pmod(hash(label), partitions)``), asked of Spark itself
    once a run: the smallest such longs."""
    from pyspark.sql import functions as F  # noqa: N812

    labels: dict[int, int] = {}
    start = 0
    while len(labels) < partitions:
        rows = session.range(start, start + 64 * partitions).select(
            "id", F.expr(f"pmod(hash(id), {partitions})").alias("part")).collect()
        for row in rows:
            labels.setdefault(int(row.part), int(row.id))
        start += 64 * partitions
    return [labels[j] for j in range(partitions)]


def _by_index_range(spark: SparkRun, frame: Any, ordered_keys: np.ndarray) -> Any:
    """``frame``'s ``(fp, state)`` in ``spark.partitions`` ranges of equal size by ``key`` (whose
    order is the global-index order; ``ordered_keys`` are its keys sorted), the range of partition
    ``j`` in partition ``j``."""
    from pyspark.sql import functions as F  # noqa: N812

    labels = spark.labels
    parts = len(labels)
    label = None
    for j in range(parts - 1):
        bound = int(ordered_keys[ordered_keys.size * (j + 1) // parts]) if ordered_keys.size else 0
        test = F.col("key") < F.lit(bound)
        label = (F.when(test, F.lit(labels[j])) if label is None
                 else label.when(test, F.lit(labels[j])))
    last = F.lit(labels[-1])
    label = last if label is None else label.otherwise(last)
    return frame.repartition(parts, label.cast("long")).select("fp", "state")


def _cut(spark: SparkRun, frame: Any, eager: bool = True) -> Any:
    """``frame`` with its lineage cut, keeping its partitioning and order, materialized now
    (``eager``) or by the first job that reads it. On a local master (the executor is this JVM) a
    local checkpoint: blocks in the block manager, in memory or spilled to disk, no file written.
    On a cluster whose every executor reaches the run directory (a master on this machine) a
    reliable checkpoint, so a lost executor's part is read back; on other clusters a local
    checkpoint (a lost executor then fails the run instead of recomputing its part)."""
    from checker.spark.session import on_loopback

    master = spark.sc.master
    if on_loopback(master) and not master.startswith("local"):
        return frame.checkpoint(eager=True)
    return frame.localCheckpoint(eager=eager)


class ArrowLevelStep:
    """The Spark levels of ``SparkBFS`` on DataFrames (the Arrow transport)."""

    def _arrow_switch(self, spark: SparkRun, st: Counters, levels: list[LevelInfo]) -> None:
        """Move the local prefix to Spark: its visited fingerprints and its last level become
        DataFrames."""
        import pyarrow as pa

        local = st.local
        session, parts = spark.session, spark.partitions
        _arrow_conf(spark, self.model)
        if not self._run_dir.temporary:
            save_local_prefix(self._run_dir, self.model, self.options, local)
        # packed states with the kernel's fingerprints (``kernel_step``)
        if self._kernel is not None:
            rows, kernel_fps, start = packed_prefix(self._kernel, self.model, self.symmetry, local,
                                                 self.options.reduce == "dead")
            visited_fps, fps, states = kernel_fps, kernel_fps[start:], binary_column(
                pa, rows[start:])
        else:
            visited_fps = np.asarray(local.visited.array, dtype=np.int64)
            fps = np.fromiter((hash(s) for s in local.frontier), np.int64, len(local.frontier))
            states = pa.array([spark.codec.encode(s) for s in local.frontier], pa.binary())
        visited = pa.table({"fp": pa.array(visited_fps)})
        spark.visited = _cut(spark,
                             session.createDataFrame(visited).repartition(
                                 parts, "fp").sortWithinPartitions("fp"))
        spark.runs = []
        indices = np.arange(fps.size, dtype=np.int64)
        table = pa.table({"fp": pa.array(fps), "key": pa.array(indices), "state": states})
        spark.frontier = _cut(spark, _by_index_range(spark, session.createDataFrame(table),
                                                     indices))
        self._broadcast_numbers(spark, fps, np.arange(local.frontier_base, local.frontier_base
                                                      + fps.size,
                                                      dtype=np.int64))
        spark.frontier_checked = True  # the local engine checked its last level as it committed it
        st.spark_started = True
        st.local_distinct = len(local.log)
        local.frontier = []

    def _broadcast_numbers(self, spark: SparkRun, fps: np.ndarray, indices: np.ndarray) -> None:
        """The numbering of the next frontier for its expansion, with the fingerprints of the last
        ``RECENT_LEVELS`` levels (the executors' copies of the older ones go; the driver keeps
        them for a recomputation until the frontier is checkpointed)."""
        order = np.argsort(fps, kind="stable")
        for old in spark.broadcasts:
            old.unpersist()
        spark.recent = [*spark.recent[1 - RECENT_LEVELS:], fps]
        spark.broadcasts.append(spark.sc.broadcast((fps[order], indices[order],
                                                    np.concatenate(spark.recent))))

    def _arrow_level(self, spark: SparkRun, st: Counters, levels: list[LevelInfo]) -> None:
        import pyarrow.compute as pc
        from pyspark.sql import functions as F  # noqa: N812

        level_started = time.monotonic()
        depth = st.depth + 1
        frontier_size = st.frontier_size
        # the invariants are checked on the frontier as it is expanded (each distinct state once),
        # unless they were on its way in (the local prefix's last level)
        check = [] if spark.frontier_checked else self._pending(st)
        level = self._expanded(spark, depth, check)
        table = level.select("fp", "key", "bad", "gen", "dead", "cpu").toArrow()
        job_expand = time.monotonic() - level_started
        index_started = time.monotonic()
        stats = table.filter(pc.is_null(table["fp"]))
        table = table.filter(pc.is_valid(table["fp"]))
        timing = LevelTiming(depth, frontier_size, table.num_rows, 0.0, job_expand=job_expand,
                             expand=(pc.sum(stats["cpu"]).as_py() or 0) / 1e6)
        # one row: the OR of the tasks'
        violated = int(pc.sum(stats["bad"]).as_py() or 0) if stats.num_rows else 0
        spark.frontier_checked = True
        if violated:
            found = self._first_violations(spark, st,
                                           [inv for bit, inv in enumerate(check) if violated >> bit
                                            & 1])
            if found and self.options.stop_at_first:
                # the local engine stops after the level where it finds a violation, before
                # expanding it: the expansion's new level, successors and deadlock are not counted
                timing.new = 0
                self._commit(spark, st, levels, self._run_dir)
                timing.seconds = time.monotonic() - level_started
                self._level_done(timing, st)
                return
        st.generated += int(pc.sum(stats["gen"]).as_py() or 0)
        deadlock = pc.min(stats["dead"]).as_py() if stats.num_rows else None
        if deadlock is not None and st.deadlock is None:
            st.deadlock = int(deadlock)
        count = table.num_rows
        if count == 0:
            st.frontier_size = 0
            spark.frontier = None
            self._commit(spark, st, levels, self._run_dir)
            timing.seconds = time.monotonic() - level_started
            self._level_done(timing, st)
            return
        base = st.distinct
        fps = table["fp"].to_numpy()
        keys = table["key"].to_numpy()
        order = np.argsort(keys, kind="stable")
        rank = np.empty(count, np.int64)
        rank[order] = np.arange(count, dtype=np.int64)
        info = LevelInfo(depth, base, count)
        info.pointers = (fps[order], keys[order] >> POSITION_BITS,
                         (keys[order] & POSITION_MASK).astype(np.int32))
        self._broadcast_numbers(spark, fps, base + rank)
        states = level.where(F.col("fp").isNotNull())
        if not self._run_dir.temporary:
            # the resume point: the level's (fp, key, state) as Parquet, and their digest in
            # run.json below
            spark.sc.setJobDescription(f"kmc level {depth}: write")
            info.path = self._run_dir.level_path(depth)
            states.select("fp", "key", "state").write.mode("overwrite").parquet(info.path)
            info.digest = self._run_dir.level_digest(info.path)
        # the expansion's partitions are ranges of the level in global-index order (made by the next
        # level's job, its first stage): siblings and cousins, which share many successors, are then
        # expanded by one task, whose first-occurrence filter drops the duplicates before they are
        # encoded and shuffled (Kafka 2.1.0, 612,834 states: about 625,000 candidates instead of
        # 1,068,676)
        spark.frontier = _by_index_range(spark, states, keys[order])
        spark.frontier_checked = False
        spark.runs.append(states.select("fp"))
        if len(spark.runs) >= self.merge_levels:
            self._merge_runs(spark)
        timing.job_index = time.monotonic() - index_started
        st.level_done(depth, base, count)
        levels.append(info)
        self._commit(spark, st, levels, self._run_dir)
        timing.seconds = time.monotonic() - level_started
        self._level_done(timing, st)

    def _expanded(self, spark: SparkRun, depth: int, check: list) -> Any:
        """The level's one job, as a plan: expand the frontier (checking ``check`` on it), shuffle,
        anti-join the visited runs, keep the smallest key per fingerprint; cut so that the next
        level's job computes it."""
        from pyspark.sql import functions as F  # noqa: N812

        fail_once = (self.fail_marker if self.fail_at_depth is not None and int(self.fail_at_depth)
                     == depth else None)
        if self._kernel is not None:  # packed states expanded in C (``kernel_step``)
            expand: Any = KernelExpand(self._shipment, self.symmetry, self.options.check_deadlock,
                                       kernel_checks(self._kernel, check), spark.broadcasts[-1],
                                       fail_once, reduce=self.options.reduce == "dead")
        else:
            expand = ArrowExpand(self.model, self.symmetry, self.options.check_deadlock, check,
                                 spark.broadcasts[-1], spark.codec, fail_once,
                                 canonical=self.local.canonical)
        spark.sc.setJobDescription(f"kmc level {depth}: expand")
        candidates = spark.frontier.mapInArrow(expand, CANDIDATES_SCHEMA)
        # shuffled to their fingerprint's partition and sorted there (the visited runs are
        # partitioned and sorted alike, so the anti-joins are merges that move no visited
        # fingerprint), then the smallest key per fingerprint; the statistics rows (null
        # fingerprint) match nothing and end in one group
        fresh = candidates.join(spark.visited, "fp", "left_anti")
        for run in spark.runs:
            fresh = fresh.join(run, "fp", "left_anti")
        new = fresh.groupBy("fp").agg(
            F.min("key").alias("key"), F.min_by("state", "key").alias("state"),
            F.bit_or("bad").alias("bad"), F.sum("gen").alias("gen"), F.min("dead").alias("dead"),
            F.sum("cpu").alias("cpu"),
        )
        # the level's one job: expand, shuffle, anti-joins, dedup; the new level stays in Spark (a
        # checkpoint made as the job computes it, the next level's leaf) and only its keys come
        # back, as Arrow (the statistics columns are null on a state's row)
        level = _cut(spark, new, eager=False)
        return level

    def _merge_runs(self, spark: SparkRun) -> None:
        # the visited set's runs merged into one (a shuffle of fingerprints only); the levels'
        # states they pointed to can go
        merged = spark.visited
        for run in spark.runs:
            merged = merged.unionByName(run)
        # made by the next level's job (its first stage)
        spark.visited = _cut(spark,
                             merged.repartition(spark.partitions, "fp").sortWithinPartitions("fp"),
                             eager=False)
        spark.runs = []

    def _arrow_resume(self, spark: SparkRun, st: Counters, levels: list[LevelInfo],
                      run_dir: RunDir) -> None:
        """A run directory the arrow transport wrote, back in Spark: the parent pointers of its
        levels on the driver (each level's keys, checked to point into the level before), the
        visited fingerprints (the local prefix's and every level's) and the last level as the
        frontier, numbered for its expansion. Its files were checked against their digests and their
        row count against run.json's (``Resumable._resume``)."""
        from pyspark.sql import functions as F  # noqa: N812

        session, parts = spark.session, spark.partitions
        _arrow_conf(spark, self.model)
        local = st.local
        self._resumed_pointers(spark, levels)
        paths = [level.path for level in levels if level.path is not None]
        # the prefix's fingerprints on the kernel's path are the kernel's
        prefix_fps = (local.visited.array if self._kernel is None
                      else self._kernel_prefix_fps(local))
        local_fps = session.createDataFrame(_fp_table(prefix_fps))
        merged = session.read.parquet(*paths).select("fp").unionByName(local_fps)
        spark.visited = _cut(spark, merged.repartition(parts, "fp").sortWithinPartitions("fp"))
        spark.runs = []
        last = levels[-1]
        spark.recent = [level.pointers[0] for level in levels[-RECENT_LEVELS:-1] if level.pointers
                        is not None]
        if st.frontier_size:
            fps, parents, positions = last.pointers
            keys = (parents << POSITION_BITS) | positions.astype(np.int64)
            frame = session.read.parquet(last.path).where(F.col("fp").isNotNull())
            spark.frontier = _cut(spark, _by_index_range(spark, frame, keys))
            self._broadcast_numbers(spark, fps, last.base + np.arange(fps.size, dtype=np.int64))
        spark.frontier_checked = False  # the last level's states are checked as they are expanded

    def _kernel_prefix_fps(self, local: Any) -> np.ndarray:
        """The kernel's fingerprints of a resumed run's local prefix (``local``, whose frontier is
        the prefix's last level while they are taken): the kernel's search of the same levels."""
        local.frontier = self._resumed_frontier
        try:
            return packed_prefix(self._kernel, self.model, self.symmetry, local,
                                 self.options.reduce == "dead")[1]
        finally:
            local.frontier = []

    def _resumed_pointers(self, spark: SparkRun, levels: list[LevelInfo]) -> None:
        """The parent pointers of a run directory's levels on the driver: each level's keys, read
        back and checked to point into the level before (one line, exit 65, if not)."""
        previous = None
        for level in levels:
            if level.path is None:
                previous = level
                continue
            table = spark.session.read.parquet(level.path).select("fp", "key").toArrow()
            keys = table["key"].to_numpy()
            order = np.argsort(keys, kind="stable")
            fps, keys = table["fp"].to_numpy()[order], keys[order]
            parents = keys >> POSITION_BITS
            if (table.num_rows != level.count
                or (keys.size and (keys[0] < 0 or np.any(keys[1:] == keys[:-1])))
                    or previous is None or np.any(parents < previous.base)
                    or np.any(parents >= previous.base + previous.count)):
                raise BadFileError(f"run directory {self._run_dir.path}: level {level.depth}'s "
                                   "parent pointers do not "
                                   "point into the level before; it cannot be resumed")
            level.pointers = (fps, parents, (keys & POSITION_MASK).astype(np.int32))
            previous = level

    def _pending(self, st: Counters) -> list[Any]:
        """The invariants not violated yet (each gets a bit of a 64-bit mask)."""
        pending = [inv for inv in self.invariants if inv.name not in st.found]
        if len(pending) > 62:
            raise UsageError("the arrow Spark transport checks at most 62 invariants at once; use "
                             "--spark-transport blocks")
        return pending

    def _first_violations(self, spark: SparkRun, st: Counters, invariants: list[Any]) -> bool:
        """Find, for each of ``invariants``, the frontier's first state (in global-index order) that
        violates it, and record it as the local engine does; True when one was found. One job over
        the frontier, the invariants only: run when an expansion reported violations and when the
        search stops at a frontier it does not expand."""
        if not invariants:
            return False
        spark.sc.setJobDescription(f"kmc level {st.depth}: first violating states")
        if self._kernel is not None:
            check: Any = KernelFrontierCheck(self._shipment,
                                             kernel_checks(self._kernel, invariants),
                                             spark.broadcasts[-1])
        else:
            check = FrontierCheck(invariants, spark.broadcasts[-1], spark.codec)
        rows = spark.frontier.mapInArrow(check, "index long, bad long").toArrow()
        indices, bad = rows["index"].to_numpy(), rows["bad"].to_numpy()
        found = False
        for bit, inv in enumerate(invariants):
            hit = indices[(bad >> bit & 1).astype(bool)]
            if hit.size:
                st.found.setdefault(inv.name, int(hit.min()))
                found = True
        return found
