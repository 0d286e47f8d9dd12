"""Distributed breadth-first search on Spark: ``kmc check MODEL --engine spark``.

The result is identical to the local engine's (``checker.bfs``): distinct states, states
generated, depth, verdict and the very same shortest counterexample.

Start small, grow large
    Shallow levels are tiny and a Spark job costs 0.1-0.3 s however small its input, so levels
    run on the driver with the local engine while the frontier holds fewer than ``threshold``
    states (``--spark-threshold``, default 10,000) and move to Spark from the first level whose
    frontier reaches it. A search that never gets there never starts Spark.

One level on Spark is one job (two for large or resumable levels)
    The frontier (the last level) and the visited set are pair RDDs partitioned by the 64-bit
    state fingerprint with one partition function, so combining them moves no data. Each
    partition is one columnar block (numpy arrays of fingerprints, parent indices and successor
    positions, and one pickled list of states), which PySpark moves far faster than millions of
    small records. The visited set holds one sorted int64 array per partition and never leaves
    the executors.

    Job 1 (expand, shuffle, dedup, invariants): every frontier partition expands its states in
    global-index order and keeps, per successor fingerprint, the first occurrence with its order
    key (parent global index, successor position). The candidates are shuffled to their
    fingerprint's partition, where the smallest key per fingerprint wins and the fingerprints
    already visited are dropped; the invariants are checked there on the new states. The driver
    gets back only counts, a histogram of parent ranges, per invariant the first violating key
    and, for a level of at most ``driver_index_limit`` (50,000) new states, the keys themselves.

    Numbering: global indices are assigned exactly as the local engine assigns them (level by
    level, in (parent index, successor position) order). A small level is sorted on the driver,
    which keeps its parent pointers (20 bytes a state) and broadcasts the indices. A large level
    is numbered on the executors: its keys are range-partitioned on the parent index, sorted
    within each range and numbered from per-range offsets (the histogram of job 1), and the
    indices go back to the fingerprint partitions; its parent pointers are written as Parquet
    under the run directory (job 2). With ``--checkpoint DIR`` every level is written so, with its
    states encoded by ``checker.codec``. A counterexample is rebuilt from the parent pointers by
    replay, as the local engine does.

Fault tolerance
    Every task is deterministic (states in global-index order, minimum keys) and the statistics
    travel as ordinary records, not as accumulators, so a task that Spark retries changes
    nothing. Local masters get Spark's usual
    four attempts per task (``local[N]`` becomes ``local[N,4]``). With ``--checkpoint DIR`` (a run
    directory) a driver that dies resumes from the last completed level with ``--resume DIR``:
    ``run.json`` is rewritten atomically after each level and names the level files it covers.
"""

from __future__ import annotations

import gc
import importlib.util
import json
import os
import pickle
import re
import shutil
import sys
import tempfile
import time
import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from checker import checkpoint as ckpt
from checker.bfs import BudgetExceeded, LocalBFS, SearchState
from checker.codec import Codec
from checker.errors import BadFileError, EnvironmentMissingError, KmcError, ModelError, UsageError, WrongModelError
from checker.result import CheckResult, Verdict, Violation
from checker.search import ActionTable, Progress, SearchOptions, rebuild_trace, uses_bounds
from spec.model import Model

DEFAULT_THRESHOLD = 10_000
#: levels with at most this many new states are numbered on the driver (their keys come back with job 1)
DEFAULT_DRIVER_INDEX_LIMIT = 50_000
#: levels between two reliable checkpoints of the RDDs (cuts their lineage)
DEFAULT_CHECKPOINT_LEVELS = 10
RUN_MAGIC = "kmc-spark-run"
RUN_FORMAT = 1
_PACKAGES = ("spec", "checker", "invariants", "traces")


# -- environment ---------------------------------------------------------------------------------
def check_environment() -> None:
    """Raise ``EnvironmentMissingError`` naming the fix when PySpark or Java is missing."""
    if importlib.util.find_spec("pyspark") is None:
        raise EnvironmentMissingError(
            "the spark engine needs PySpark, which is not installed: "
            "run python3 -m pip install 'pyspark>=3.4' (or pip install -e '.[spark]')"
        )
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        java = os.path.join(java_home, "bin", "java")
        if not os.access(java, os.X_OK):
            raise EnvironmentMissingError(
                f"the spark engine needs Java 17, but JAVA_HOME={java_home} has no bin/java: "
                "point JAVA_HOME at a Java 17 installation or install one (e.g. apt-get install openjdk-17-jre-headless)"
            )
    elif shutil.which("java") is None:
        raise EnvironmentMissingError(
            "the spark engine needs Java 17, which was not found (no java on PATH and JAVA_HOME unset): "
            "install Java 17 (e.g. apt-get install openjdk-17-jre-headless) or set JAVA_HOME"
        )


def with_task_retries(master: str, attempts: int = 4) -> str:
    """``local`` / ``local[N]`` / ``local[*]`` -> ``local[N,attempts]``: local Spark retries failed tasks too."""
    if master == "local":
        return f"local[1,{attempts}]"
    match = re.fullmatch(r"local\[(\d+|\*)\]", master)
    return f"local[{match.group(1)},{attempts}]" if match else master


def _project_root() -> str:
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def spark_session(master: str = "local[*]", memory: str = "4g") -> tuple[Any, bool]:
    """The active SparkSession, or a new one for ``master``; True when this call created it.

    Under ``spark-submit`` the master and the rest of the configuration come from spark-submit.
    """
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active, False
    submitted = "PYSPARK_GATEWAY_PORT" in os.environ  # launched by spark-submit or a pyspark shell
    builder = SparkSession.builder.appName("kmc")
    if not submitted:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        root = _project_root()
        paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        if root not in paths:
            os.environ["PYTHONPATH"] = os.pathsep.join([root, *paths])
        builder = (
            builder.master(with_task_retries(master))
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.driver.memory", memory)
            .config("spark.sql.shuffle.partitions", "8")
        )
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session, True


def _ship_packages(sc: Any, directory: str) -> None:
    """Send this project's packages to the executors of a real cluster (local masters import them directly)."""
    root = _project_root()
    target = os.path.join(directory, "kmc-packages.zip")
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as zf:
        for package in _PACKAGES:
            for folder, _dirs, files in os.walk(os.path.join(root, package)):
                for name in files:
                    if name.endswith(".py") or name.endswith(".json"):
                        full = os.path.join(folder, name)
                        zf.write(full, os.path.relpath(full, root))
    sc.addPyFile(target)


# -- executor-side functions (module level: pickled by reference) -------------------------------
#
# Records are keyed by partition index (a partition index is its own fingerprint partition), and
# their values are columnar blocks, so that PySpark moves numpy arrays and one pickled list of
# states per block instead of millions of small records:
#   visited chunk   ndarray                                 sorted fingerprints of one partition
#   statistics      (None, generated, deadlock, expand s, dedup s, invariants s)
#   candidates      ("c", fps, parents, positions, states)  first occurrences from one map task
#   level           ("l", fps, parents, positions, states, indices, summary)  sorted by fp
#   order keys      ("k", parents, positions, fps)           for the distributed numbering
#   indices         ("g", fps, indices)
# ``states`` is a pickled list (Spark's own transport, never written to a file).

def fingerprint_partition(key: int) -> int:
    """The partition function of every keyed RDD (PySpark takes it modulo the partition count)."""
    return key


def _stats(generated: int = 0, deadlock: int | None = None, expand: float = 0.0, dedup: float = 0.0,
           invariants: float = 0.0) -> tuple:
    return (None, generated, deadlock, expand, dedup, invariants)


def _merge_stats(a: tuple, b: tuple) -> tuple:
    if a[2] is None:
        deadlock = b[2]
    elif b[2] is None:
        deadlock = a[2]
    else:
        deadlock = min(a[2], b[2])
    return (None, a[1] + b[1], deadlock, a[3] + b[3], a[4] + b[4], a[5] + b[5])


def _gc_paused(records: Iterator[Any]) -> Iterator[Any]:
    """Run a partition with the cyclic garbage collector off: states hold no cycles, and collections
    triggered by millions of freshly unpickled tuples cost more than the unpickling itself (3-6x)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield from records
    finally:
        if enabled:
            gc.enable()


def _dumps(states: list[Any]) -> bytes:
    return pickle.dumps(states, protocol=pickle.HIGHEST_PROTOCOL)


def _by_partition(fps: np.ndarray, partitions: int) -> Iterator[tuple[int, np.ndarray]]:
    """(partition, indices into fps) for every partition that gets some of ``fps``."""
    dest = fps % partitions
    order = np.argsort(dest, kind="stable")
    counts = np.bincount(dest, minlength=partitions)
    start = 0
    for part, size in enumerate(counts.tolist()):
        if size:
            yield part, order[start:start + size]
            start += size


def _level_block(fps: np.ndarray, parents: np.ndarray, positions: np.ndarray, states: list[Any],
                 indices: np.ndarray | None = None, summary: Any = None) -> tuple:
    """A level block sorted by fingerprint."""
    order = np.argsort(fps, kind="stable")
    listed = order.tolist()
    return ("l", fps[order], parents[order], positions[order], _dumps([states[i] for i in listed]),
            None if indices is None else indices[order], summary)


class _Expand:
    """Job 1, map side: expand one frontier partition in global-index order, keeping the first
    occurrence (smallest key) of every successor fingerprint; one candidates block per target
    partition, and one statistics record."""

    def __init__(self, model: Model, symmetry: bool, check_deadlock: bool, partitions: int,
                 fail_once: str | None = None) -> None:
        self.model = model
        self.symmetry = symmetry
        self.bounds = uses_bounds(model)
        self.check_deadlock = check_deadlock
        self.partitions = partitions
        self.fail_once = fail_once  # fault injection: a marker path ("" for none) or None

    def __call__(self, records: Iterable[tuple[int, tuple]]) -> Iterator[tuple[int, tuple]]:
        return _gc_paused(self._run(records))

    def _run(self, records: Iterable[tuple[int, tuple]]) -> Iterator[tuple[int, tuple]]:
        started = time.perf_counter()
        frontier: list[tuple[int, Any]] = []
        for _key, block in records:
            frontier.extend(zip(block[5].tolist(), pickle.loads(block[4]), strict=True))
        frontier.sort(key=_first)
        if self.fail_once is not None:
            _maybe_fail(len(frontier), self.fail_once)
        successors = self.model.successors
        within = self.model.within_bounds if self.bounds else None
        canonical = self.model.canonical if self.symmetry else None
        best: dict[int, tuple] = {}
        generated = 0
        deadlock = None
        for index, state in frontier:
            pos = -1
            for pos, (_act, succ) in enumerate(successors(state)):
                if within is not None and not within(succ):
                    continue
                if canonical is not None:
                    succ = canonical(succ)
                fp = hash(succ)
                if fp not in best:
                    best[fp] = (index, pos, succ)
            generated += pos + 1
            if pos < 0 and self.check_deadlock and deadlock is None:
                deadlock = index
        expanded = time.perf_counter()
        count = len(best)
        values = list(best.values())
        fps = np.fromiter(best.keys(), np.int64, count)
        parents = np.fromiter((v[0] for v in values), np.int64, count)
        positions = np.fromiter((v[1] for v in values), np.int32, count)
        del best
        packing = 0.0
        for part, idx in _by_partition(fps, self.partitions):
            packed = time.perf_counter()
            block = ("c", fps[idx], parents[idx], positions[idx], _dumps([values[i][2] for i in idx.tolist()]))
            packing += time.perf_counter() - packed
            yield part, block
        # expansion includes reading the frontier; packing the candidates counts with the shuffle
        yield 0, _stats(generated, deadlock, expand=expanded - started, dedup=packing)


def _first(item: tuple) -> Any:
    return item[0]


def _maybe_fail(size: int, marker: str) -> None:
    """Fault injection for tests: the first attempt of partition 0 dies (after reading its input),
    leaving a line in ``marker`` (a local file) when one is given."""
    from pyspark import TaskContext

    ctx = TaskContext.get()
    if ctx is not None and ctx.partitionId() == 0 and ctx.attemptNumber() == 0:
        if marker:
            with open(marker, "a") as f:
                f.write(f"stage {ctx.stageId()} partition 0 attempt 0 failed\n")
        raise RuntimeError(f"injected task failure (partition 0, attempt 0, {size} states read)")


class _ParentRange:
    """Range partition on the parent's global index: bucket j holds parents in the j-th slice."""

    def __init__(self, base: int, size: int, buckets: int) -> None:
        self.base, self.size, self.buckets = base, max(size, 1), buckets

    def of(self, parents: np.ndarray) -> np.ndarray:
        return np.minimum(self.buckets - 1, (parents - self.base) * self.buckets // self.size)


class _Dedup:
    """Job 1, reduce side, on visited ∪ candidates of one partition.

    Keeps the smallest key (parent index, successor position) per fingerprint, drops the
    fingerprints already visited, unpickles only the blocks holding new states, checks the
    invariants not yet violated on them, and yields one level block whose summary is what job 1
    returns to the driver: the count, the histogram of parent ranges, the first violation
    (key, fp) per invariant, the statistics and, when the partition is small, the keys.
    """

    def __init__(self, invariants: list[Any], ranges: _ParentRange, key_limit: int) -> None:
        self.invariants = invariants
        self.ranges = ranges
        self.key_limit = key_limit

    def __call__(self, split: int, records: Iterable[tuple[int, Any]]) -> Iterator[tuple[int, tuple]]:
        return _gc_paused(self._run(split, records))

    def _run(self, split: int, records: Iterable[tuple[int, Any]]) -> Iterator[tuple[int, tuple]]:
        started = time.perf_counter()
        visited: list[np.ndarray] = []
        blocks: list[tuple] = []
        stats = _stats()
        for _key, value in records:
            if isinstance(value, np.ndarray):
                visited.append(value)
            elif value[0] is None:
                stats = _merge_stats(stats, value)
            else:
                blocks.append(value)
        states: list[Any] = []
        if blocks:
            fps = np.concatenate([b[1] for b in blocks])
            parents = np.concatenate([b[2] for b in blocks])
            positions = np.concatenate([b[3] for b in blocks])
            origin = np.concatenate([np.full(b[1].size, i, np.int32) for i, b in enumerate(blocks)])
            offset = np.concatenate([np.arange(b[1].size, dtype=np.int64) for b in blocks])
            order = np.lexsort((positions, parents, fps))  # by fp, then the smallest key first
            sorted_fps = fps[order]
            first = np.ones(order.size, dtype=bool)
            first[1:] = sorted_fps[1:] != sorted_fps[:-1]
            keep = order[first]
            for chunk in visited:
                if not keep.size:
                    break
                look = fps[keep]
                at = np.searchsorted(chunk, look)
                at[at == chunk.size] = 0
                keep = keep[chunk[at] != look]
            fps, parents, positions = fps[keep], parents[keep], positions[keep]
            loaded: dict[int, list[Any]] = {}
            for block, index in zip(origin[keep].tolist(), offset[keep].tolist(), strict=True):
                if block not in loaded:
                    loaded[block] = pickle.loads(blocks[block][4])
                states.append(loaded[block][index])
            del loaded, blocks
        else:
            fps = np.zeros(0, np.int64)
            parents = np.zeros(0, np.int64)
            positions = np.zeros(0, np.int32)
        deduped = time.perf_counter()
        first_violation: dict[str, tuple] = {}
        for inv in self.invariants:
            holds = inv.holds
            best = None
            for i, state in enumerate(states):
                if not holds(state):
                    key = (int(parents[i]), int(positions[i]))
                    if best is None or key < best[0]:
                        best = (key, int(fps[i]))
            if best is not None:
                first_violation[inv.name] = best
        histogram = np.bincount(self.ranges.of(parents), minlength=self.ranges.buckets).tolist()
        keys = (fps, parents, positions) if fps.size <= self.key_limit else None
        stats = _merge_stats(stats, _stats(dedup=deduped - started, invariants=time.perf_counter() - deduped))
        summary = (int(fps.size), histogram, first_violation, stats, keys)
        yield split, _level_block(fps, parents, positions, states, summary=summary)


def _summary_of(record: tuple[int, tuple]) -> tuple:
    return record[1][6]


def _visited_chunk(record: tuple[int, tuple]) -> tuple[int, np.ndarray]:
    return record[0], record[1][1]


def _merge_chunks(split: int, records: Iterable[tuple[int, np.ndarray]]) -> Iterator[tuple[int, np.ndarray]]:
    arrays = [value for _key, value in records if value.size]
    if len(arrays) == 1:
        yield split, arrays[0]
    elif arrays:
        yield split, np.sort(np.concatenate(arrays))


class _Attach:
    """Small levels: the global indices numbered on the driver, looked up in a broadcast."""

    def __init__(self, numbers: Any) -> None:
        self.numbers = numbers  # broadcast (sorted fps, their global indices)

    def __call__(self, record: tuple[int, tuple]) -> tuple[int, tuple]:
        key, block = record
        fps, indices = self.numbers.value
        found = indices[np.searchsorted(fps, block[1])]
        return key, (*block[:5], found, None)


class _OrderKeys:
    """Large levels, step 1: the order keys of a level block, one block per parent range."""

    def __init__(self, ranges: _ParentRange) -> None:
        self.ranges = ranges

    def __call__(self, record: tuple[int, tuple]) -> Iterator[tuple[int, tuple]]:
        _key, block = record
        fps, parents, positions = block[1], block[2], block[3]
        buckets = self.ranges.of(parents)
        for bucket in np.unique(buckets).tolist():
            idx = np.flatnonzero(buckets == bucket)
            yield bucket, ("k", parents[idx], positions[idx], fps[idx])


class _Number:
    """Large levels, step 2: sort one parent range by key and number it from its offset; send each
    index back to its fingerprint's partition."""

    def __init__(self, offsets: list[int], partitions: int) -> None:
        self.offsets = offsets
        self.partitions = partitions

    def __call__(self, split: int, records: Iterable[tuple[int, tuple]]) -> Iterator[tuple[int, tuple]]:
        blocks = [value for _key, value in records]
        if not blocks:
            return
        parents = np.concatenate([b[1] for b in blocks])
        positions = np.concatenate([b[2] for b in blocks])
        fps = np.concatenate([b[3] for b in blocks])
        order = np.lexsort((positions, parents))
        fps = fps[order]
        indices = self.offsets[split] + np.arange(fps.size, dtype=np.int64)
        for part, idx in _by_partition(fps, self.partitions):
            yield part, ("g", fps[idx], indices[idx])


def _join_numbers(split: int, records: Iterable[tuple[int, tuple]]) -> Iterator[tuple[int, tuple]]:
    """Large levels, step 3, on level block ∪ indices of one partition: the block with its indices."""
    level = None
    numbered: list[tuple] = []
    for _key, value in records:
        if value[0] == "l":
            level = value
        else:
            numbered.append(value)
    if level is None:
        return
    if numbered:
        fps = np.concatenate([b[1] for b in numbered])
        indices = np.concatenate([b[2] for b in numbered])
        order = np.argsort(fps)
        fps, indices = fps[order], indices[order]
        found = indices[np.searchsorted(fps, level[1])]
    else:
        found = np.zeros(0, np.int64)
    yield split, (*level[:5], found, None)


class _IndexOf:
    """The global index of one fingerprint, read from its level block."""

    def __init__(self, fp: int) -> None:
        self.fp = fp

    def __call__(self, records: Iterable[tuple[int, tuple]]) -> Iterator[int]:
        for _key, block in records:
            at = int(np.searchsorted(block[1], self.fp))
            if at < block[1].size and int(block[1][at]) == self.fp:
                yield int(block[5][at])


def _pointer_block(record: tuple[int, tuple]) -> tuple[int, tuple]:
    """A level block without its states: (fps, parents, positions, indices)."""
    key, block = record
    return key, (block[1], block[2], block[3], block[5])


class _PointerAt:
    """(fp, parent, position) of the state with one global index, from pointer blocks."""

    def __init__(self, index: int) -> None:
        self.index = index

    def __call__(self, records: Iterable[tuple[int, tuple]]) -> Iterator[tuple[int, int, int]]:
        for _key, (fps, parents, positions, indices) in records:
            for at in np.flatnonzero(indices == self.index).tolist():
                yield int(fps[at]), int(parents[at]), int(positions[at])


class _LevelRows:
    """A level block as Parquet rows: (gidx, fp, parent, pos[, encoded state])."""

    def __init__(self, codec: Codec | None) -> None:
        self.codec = codec

    def __call__(self, record: tuple[int, tuple]) -> Iterator[tuple]:
        _key, (_tag, fps, parents, positions, states, indices, _summary) = record
        columns = (indices.tolist(), fps.tolist(), parents.tolist(), positions.tolist())
        if self.codec is None:
            yield from zip(*columns, strict=True)
        else:
            encode = self.codec.encode
            yield from zip(*columns, [encode(s) for s in pickle.loads(states)], strict=True)


class _DecodeRow:
    """A Parquet row of a resumable level back to (fp, (gidx, parent, pos, state))."""

    def __init__(self, codec: Codec) -> None:
        self.codec = codec

    def __call__(self, row: Any) -> tuple[int, tuple]:
        return row.fp, (row.gidx, row.parent, row.pos, self.codec.decode(bytes(row.state)))


def _rows_to_block(split: int, records: Iterable[tuple[int, tuple]]) -> Iterator[tuple[int, tuple]]:
    """(fp, (gidx, parent, pos, state)) records of one partition as one level block."""
    rows = list(records)
    if not rows:
        return
    count = len(rows)
    fps = np.fromiter((r[0] for r in rows), np.int64, count)
    indices = np.fromiter((r[1][0] for r in rows), np.int64, count)
    parents = np.fromiter((r[1][1] for r in rows), np.int64, count)
    positions = np.fromiter((r[1][2] for r in rows), np.int32, count)
    yield split, _level_block(fps, parents, positions, [r[1][3] for r in rows], indices)


def _fps_to_chunk(split: int, records: Iterable[tuple[int, Any]]) -> Iterator[tuple[int, np.ndarray]]:
    fps = np.fromiter((record[0] for record in records), dtype=np.int64)
    if fps.size:
        yield split, np.sort(fps)


def _fp_of_row(row: Any) -> tuple[int, None]:
    return row.fp, None


def _fp_record(fp: int) -> tuple[int, None]:
    return fp, None


def _frontier_record(item: tuple[int, Any]) -> tuple[int, tuple]:
    index, state = item
    return hash(state), (index, -1, -1, state)


# -- the run directory ---------------------------------------------------------------------------
class RunDir:
    """Where levels, ``run.json`` and RDD checkpoints live: a local path or a Hadoop URI (hdfs://...)."""

    def __init__(self, path: str, temporary: bool = False) -> None:
        self.temporary = temporary
        self.local = "://" not in path or path.startswith("file://")
        self.path = os.path.abspath(path.removeprefix("file://")) if self.local else path.rstrip("/")
        self._sc: Any = None

    def attach(self, sc: Any) -> None:
        self._sc = sc

    def join(self, *parts: str) -> str:
        return "/".join([self.path, *parts])

    def level_path(self, depth: int) -> str:
        return self.join("levels", f"{depth:04d}")

    def exists(self) -> bool:
        if self.local:
            return os.path.isdir(self.path)
        fs, path = self._hadoop(self.path)
        return bool(fs.exists(path))

    def write_bytes(self, name: str, data: bytes) -> None:
        """Atomically (temporary file, then rename)."""
        target = self.join(name)
        if self.local:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(f"{target}.tmp", "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(f"{target}.tmp", target)
            return
        fs, path = self._hadoop(target)
        _fs, tmp = self._hadoop(f"{target}.tmp")
        out = fs.create(tmp, True)
        out.write(bytearray(data))
        out.close()
        fs.delete(path, False)
        fs.rename(tmp, path)

    def read_bytes(self, name: str) -> bytes | None:
        target = self.join(name)
        if self.local:
            try:
                with open(target, "rb") as f:
                    return f.read()
            except FileNotFoundError:
                return None
        fs, path = self._hadoop(target)
        if not fs.exists(path):
            return None
        stream = fs.open(path)
        try:
            return bytes(self._sc._jvm.org.apache.commons.io.IOUtils.toByteArray(stream))
        finally:
            stream.close()

    def _hadoop(self, uri: str) -> tuple[Any, Any]:
        if self._sc is None:
            raise UsageError(f"run directory {uri} needs Spark to be reached")
        jvm = self._sc._jvm
        path = jvm.org.apache.hadoop.fs.Path(uri)
        return path.getFileSystem(self._sc._jsc.hadoopConfiguration()), path

    def cleanup(self) -> None:
        if self.temporary and self.local:
            shutil.rmtree(self.path, ignore_errors=True)


# -- the driver ------------------------------------------------------------------------------------
@dataclass
class LevelInfo:
    depth: int
    base: int  # global index of the level's first state
    count: int
    path: str | None = None  # Parquet directory (None: a level of the local prefix or kept on the driver)
    #: (fingerprints, parent indices, successor positions) of a small level kept on the driver
    pointers: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
    #: a large level's parent pointers kept on the executors (runs without a run directory)
    rdd: Any = None

    def to_json(self) -> dict[str, Any]:
        return {"depth": self.depth, "base": self.base, "count": self.count, "path": self.path}


@dataclass
class LevelTiming:
    depth: int
    frontier: int
    new: int
    seconds: float
    job_expand: float = 0.0  # wall time of job 1 (expand, shuffle, dedup, invariants)
    job_index: float = 0.0  # wall time of job 2 (index, join, Parquet write)
    expand: float = 0.0  # executor seconds expanding states
    dedup: float = 0.0  # executor seconds merging candidates and removing visited ones
    invariants: float = 0.0  # executor seconds checking invariants (and counting)
    engine: str = "spark"

    def to_json(self) -> dict[str, Any]:
        return {k: round(v, 4) if isinstance(v, float) else v for k, v in self.__dict__.items()}


@dataclass
class _Spark:
    session: Any
    sc: Any
    created: bool
    partitions: int
    frontier: Any = None  # RDD (fp, (gidx, parent, pos, state)) of the last level
    visited: Any = None  # RDD (fp, sorted int64 array), one record per partition
    retired: list[Any] = field(default_factory=list)  # RDDs to unpersist after the next level
    broadcasts: list[Any] = field(default_factory=list)
    pointers: list[Any] = field(default_factory=list)  # parent pointers of large levels


class SparkBFS:
    engine = "spark"

    def __init__(self, model: Model, options: SearchOptions, engine_options: Any) -> None:
        self.model = model
        self.options = options
        extra = dict(getattr(engine_options, "extra", {}) or {})
        self.master = getattr(engine_options, "master", None) or "local[*]"
        self.threshold = int(extra.get("threshold", DEFAULT_THRESHOLD))
        self.partitions = extra.get("partitions")
        self.checkpoint_levels = int(extra.get("checkpoint_levels", DEFAULT_CHECKPOINT_LEVELS))
        self.driver_index_limit = int(extra.get("driver_index_limit", DEFAULT_DRIVER_INDEX_LIMIT))
        # fault injection (tests): the first attempt of one expansion task at this depth fails
        self.fail_at_depth = extra.get("fail_task_at_depth")
        self.fail_marker = str(extra.get("fail_marker") or "")
        self.memory = str(extra.get("driver_memory", "4g"))
        self.verbose = bool(extra.get("verbose", False))
        if options.keep_graph:
            raise UsageError("the spark engine does not keep the state graph (liveness); use --engine bfs")
        self.local = LocalBFS(model, options)
        self.symmetry = self.local.symmetry
        self.invariants = self.local.invariants
        self.timings: list[LevelTiming] = []
        self._console = self._level_console()

    def _level_console(self) -> Any:
        progress = self.options.progress
        if getattr(progress, "enabled", False) and getattr(progress, "console", None) is not None:
            return progress.console
        if self.verbose:
            from rich.console import Console

            return Console(stderr=True)
        return None

    # -- the search --------------------------------------------------------------------------------
    def run(self) -> CheckResult:
        check_environment()
        opts = self.options
        if opts.checkpoint_path and not self.model.state_types():
            raise UsageError(f"model {self.model.name} declares no state types, so its Spark runs cannot be resumed; "
                             "drop --checkpoint")
        started = time.monotonic()
        self.local._started = started
        where = opts.checkpoint_path or opts.resume_from
        run_dir = RunDir(where) if where else None
        spark: _Spark | None = None
        reason = None
        try:
            if opts.resume_from:
                spark, st, levels = self._resume(run_dir)
                self.local._started = started - st.elapsed
            else:
                st = _Counters(self.local._initial_level())
                levels = [LevelInfo(1, 0, st.distinct)]
            self._started = self.local._started
            reason = self._local_phase(st, levels)
            if reason is None and st.frontier_size > 0 and not self._should_stop(st):
                if spark is None:
                    if run_dir is None:
                        if not self.master.startswith("local"):
                            raise UsageError("on a Spark cluster, give --checkpoint DIR on shared storage "
                                             "(e.g. hdfs://...): the levels are written there")
                        run_dir = RunDir(tempfile.mkdtemp(prefix="kmc-spark-"), temporary=True)
                    spark = self._start(run_dir)
                    self._switch(spark, st, levels, run_dir)
                reason = self._spark_phase(spark, st, levels, run_dir)
            elapsed = time.monotonic() - self._started
            result = self._result(st, levels, elapsed, reason, spark, run_dir)
        finally:
            if spark is not None:
                self._stop(spark, run_dir)
            elif run_dir is not None and run_dir.temporary:
                run_dir.cleanup()
        return result

    def _should_stop(self, st: _Counters) -> bool:
        return self.options.stop_at_first and (bool(st.found) or st.deadlock is not None)

    def _budget_reason(self, st: _Counters) -> str | None:
        opts = self.options
        if opts.max_depth is not None and st.depth >= opts.max_depth:
            return f"depth bound {opts.max_depth} reached with {st.frontier_size} states unexplored"
        if opts.max_seconds is not None and time.monotonic() - self._started > opts.max_seconds:
            return f"time budget of {opts.max_seconds:g} s ran out at depth {st.depth}"
        if opts.max_states is not None and st.distinct >= opts.max_states:
            return f"state budget {opts.max_states} reached with {st.frontier_size} states unexplored"
        return None

    def _local_phase(self, st: _Counters, levels: list[LevelInfo]) -> str | None:
        """Levels on the driver with the local engine while the frontier is below the threshold."""
        local = st.local
        if st.spark_started:
            return None
        while local.frontier and not self._should_stop(st) and len(local.frontier) < self.threshold:
            reason = self._budget_reason(st)
            if reason:
                return reason
            level_started = time.monotonic()
            frontier = len(local.frontier)
            depth = local.depth
            try:
                self.local._expand_level(local)
            except BudgetExceeded as exc:
                return exc.reason
            st.sync_from_local()
            if local.depth > depth:
                levels.append(LevelInfo(local.depth, local.frontier_base, len(local.frontier)))
            self._level_done(LevelTiming(local.depth, frontier, len(local.frontier) if local.depth > depth else 0,
                                         time.monotonic() - level_started, engine="local"), st)
        return None

    def _start(self, run_dir: RunDir) -> _Spark:
        session, created = spark_session(self.master, self.memory)
        sc = session.sparkContext
        run_dir.attach(sc)
        if not sc.master.startswith("local"):
            staging = tempfile.mkdtemp(prefix="kmc-ship-")
            _ship_packages(sc, staging)
        sc.setCheckpointDir(run_dir.join("rdd-checkpoints"))
        partitions = int(self.partitions or max(2, 2 * sc.defaultParallelism))
        return _Spark(session, sc, created, partitions)

    def _stop(self, spark: _Spark, run_dir: RunDir | None) -> None:
        for rdd in (spark.frontier, spark.visited, *spark.retired, *spark.pointers):
            if rdd is not None:
                try:
                    rdd.unpersist(False)
                except Exception:  # the context may already be gone
                    pass
        for broadcast in spark.broadcasts:
            try:
                broadcast.unpersist()
            except Exception:
                pass
        # The session stays active (a JVM start costs ~10 s): the next check in this process, e.g.
        # the next cell of ``kmc matrix --engine spark``, reuses it; the process exit stops it.
        if run_dir is not None and run_dir.temporary:
            run_dir.cleanup()

    def _switch(self, spark: _Spark, st: _Counters, levels: list[LevelInfo], run_dir: RunDir) -> None:
        """Move the local prefix to Spark: its visited set and last level become RDDs."""
        local = st.local
        sc, parts = spark.sc, spark.partitions
        if not run_dir.temporary:
            _save_local_prefix(run_dir, self.model, self.options, local)
        fps = local.visited.array.tolist()
        spark.visited = (
            sc.parallelize(fps, parts).map(_fp_record).partitionBy(parts, fingerprint_partition)
            .mapPartitionsWithIndex(_fps_to_chunk, preservesPartitioning=True).persist(_storage())
        )
        items = list(enumerate(local.frontier, start=local.frontier_base))
        spark.frontier = (
            sc.parallelize(items, parts).map(_frontier_record).partitionBy(parts, fingerprint_partition)
            .mapPartitionsWithIndex(_rows_to_block, preservesPartitioning=True).persist(_storage())
        )
        st.spark_started = True
        st.local_distinct = len(local.log)
        local.frontier = []

    def _spark_phase(self, spark: _Spark, st: _Counters, levels: list[LevelInfo], run_dir: RunDir) -> str | None:
        while st.frontier_size > 0 and not self._should_stop(st):
            reason = self._budget_reason(st)
            if reason:
                return reason
            self._spark_level(spark, st, levels, run_dir)
        return None

    def _spark_level(self, spark: _Spark, st: _Counters, levels: list[LevelInfo], run_dir: RunDir) -> None:
        parts = spark.partitions
        level_started = time.monotonic()
        depth = st.depth + 1
        frontier_size = st.frontier_size
        resumable = not run_dir.temporary
        ranges = _ParentRange(st.frontier_base, frontier_size, parts)
        expand = _Expand(self.model, self.symmetry, self.options.check_deadlock, parts,
                         fail_once=self.fail_marker if self.fail_at_depth is not None and int(self.fail_at_depth) == depth
                         else None)
        candidates = spark.frontier.mapPartitions(expand).partitionBy(parts, fingerprint_partition)
        pending = [inv for inv in self.invariants if inv.name not in st.found]
        new = (
            spark.visited.union(candidates)
            .mapPartitionsWithIndex(_Dedup(pending, ranges, self.driver_index_limit), preservesPartitioning=True)
            .persist(_storage())
        )
        # job 1: expand, shuffle, dedup, invariants; only the summaries come back
        summaries = new.map(_summary_of).collect()
        job_expand = time.monotonic() - level_started
        count = sum(s[0] for s in summaries)
        histogram = [sum(column) for column in zip(*(s[1] for s in summaries), strict=True)]
        stats = _stats()
        first: dict[str, tuple] = {}
        for summary in summaries:
            stats = _merge_stats(stats, summary[3])
            for name, item in summary[2].items():
                if name not in first or item[0] < first[name][0]:
                    first[name] = item
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
            level = new.map(_Attach(numbers), preservesPartitioning=True).persist(_storage())
            lookup = dict(zip(fps.tolist(), indices.tolist(), strict=True))
            found = {name: lookup[fp] for name, (_key, fp) in first.items()}
        else:
            # a large level: order keys go to parent ranges, are sorted and numbered from per-range
            # offsets (the histogram of job 1), and the indices come back to the fingerprint partitions
            offsets, running = [], base
            for size in histogram:
                offsets.append(running)
                running += size
            numbers = (
                new.flatMap(_OrderKeys(ranges)).partitionBy(parts, fingerprint_partition)
                .mapPartitionsWithIndex(_Number(offsets, parts)).partitionBy(parts, fingerprint_partition)
            )
            level = (
                new.union(numbers).mapPartitionsWithIndex(_join_numbers, preservesPartitioning=True)
                .persist(_storage())
            )
        checkpointing = self.checkpoint_levels > 0 and depth % self.checkpoint_levels == 0
        if checkpointing:
            level.checkpoint()
        if resumable:
            # job 2: the parent pointers and the states as Parquet, the resume point
            info.path = run_dir.level_path(depth)
            self._write_level(spark, level, info.path, resumable)
        elif info.pointers is None:
            # job 2: a large level's parent pointers stay on the executors, as arrays
            info.rdd = level.map(_pointer_block, preservesPartitioning=True).persist(_storage())
            info.rdd.count()
            spark.pointers.append(info.rdd)
        for name, (_key, fp) in first.items():
            if name not in found:
                (found[name],) = spark.sc.runJob(level, _IndexOf(fp), [fp % parts])
        st.found.update(found)
        visited = (
            spark.visited.union(new.map(_visited_chunk, preservesPartitioning=True))
            .mapPartitionsWithIndex(_merge_chunks, preservesPartitioning=True)
            .persist(_storage())
        )
        if checkpointing:
            visited.checkpoint()
        spark.retired += [spark.visited, new]  # until job 1 of the next level has materialized their successors
        spark.visited = visited
        spark.frontier = level
        timing.job_index = time.monotonic() - index_started
        st.depth = depth
        st.frontier_base = base
        st.frontier_size = count
        st.distinct += count
        levels.append(info)
        self._commit(spark, st, levels, run_dir)
        timing.seconds = time.monotonic() - level_started
        self._level_done(timing, st)

    def _write_level(self, spark: _Spark, level: Any, path: str, resumable: bool) -> None:
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
        frame = spark.session.createDataFrame(level.flatMap(_LevelRows(codec)), StructType(fields), verifySchema=False)
        frame.write.mode("overwrite").parquet(path)

    def _commit(self, spark: _Spark, st: _Counters, levels: list[LevelInfo], run_dir: RunDir) -> None:
        """The level is complete: rewrite run.json (atomically), the resume point."""
        st.elapsed = time.monotonic() - self._started
        if run_dir.temporary:
            return
        payload = {
            "magic": RUN_MAGIC,
            "format": RUN_FORMAT,
            "identity": ckpt._identity(self.model, self.options),
            "partitions": spark.partitions,
            "depth": st.depth,
            "generated": st.generated,
            "distinct": st.distinct,
            "local_distinct": st.local_distinct,
            "frontier_base": st.frontier_base,
            "frontier_size": st.frontier_size,
            "found": st.found,
            "deadlock": st.deadlock,
            "elapsed": st.elapsed,
            "levels": [level.to_json() for level in levels],
        }
        run_dir.write_bytes("run.json", json.dumps(payload, indent=1).encode())

    def _level_done(self, timing: LevelTiming, st: _Counters) -> None:
        self.timings.append(timing)
        if self._console is not None:
            self._console.print(
                f"[dim]{timing.engine:>5}[/] level {timing.depth:>3}: frontier {timing.frontier:>10,}  "
                f"new {timing.new:>10,}  distinct {st.distinct:>12,}  {timing.seconds:7.2f} s",
                highlight=False,
            )
        if self.options.progress:
            self.options.progress(Progress(st.depth, st.generated, st.distinct, st.frontier_size,
                                           time.monotonic() - self._started))

    # -- resume --------------------------------------------------------------------------------------
    def _resume(self, run_dir: RunDir) -> tuple[_Spark | None, _Counters, list[LevelInfo]]:
        if run_dir.local and not run_dir.exists():
            raise BadFileError(f"run directory {run_dir.path} does not exist; check the path given to --resume")
        spark = None
        if not run_dir.local:
            spark = self._start(run_dir)
        raw = run_dir.read_bytes("run.json")
        if raw is None:  # nothing was committed yet (the run was still in its local levels)
            st = _Counters(self.local._initial_level())
            return spark, st, [LevelInfo(1, 0, st.distinct)]
        try:
            payload = json.loads(raw)
        except ValueError:
            raise BadFileError(f"{run_dir.join('run.json')} is corrupt") from None
        if not isinstance(payload, dict) or payload.get("magic") != RUN_MAGIC or payload.get("format") != RUN_FORMAT:
            raise BadFileError(f"{run_dir.join('run.json')} is not a kmc Spark run of this version")
        want = json.loads(json.dumps(ckpt._identity(self.model, self.options)))
        if payload.get("identity") != want:
            raise WrongModelError(f"run directory {run_dir.path} was written for {payload.get('identity')}, not {want}; "
                                  "resume with the same model, constants and options")
        if spark is None:
            spark = self._start(run_dir)
        if self.partitions is None:
            spark.partitions = int(payload["partitions"])
        local = _load_local_prefix(run_dir, self.model, self.options)
        st = _Counters(local)
        try:
            st.depth = int(payload["depth"])
            st.generated = int(payload["generated"])
            st.distinct = int(payload["distinct"])
            st.local_distinct = int(payload["local_distinct"])
            st.frontier_base = int(payload["frontier_base"])
            st.frontier_size = int(payload["frontier_size"])
            st.found = {str(k): int(v) for k, v in payload["found"].items()}
            st.deadlock = None if payload["deadlock"] is None else int(payload["deadlock"])
            st.elapsed = float(payload["elapsed"])
            levels = [LevelInfo(**item) for item in payload["levels"]]
        except (KeyError, TypeError, ValueError) as exc:
            raise BadFileError(f"{run_dir.join('run.json')} is corrupt ({type(exc).__name__}: {exc})") from None
        st.spark_started = True
        local.frontier = []
        sc, parts = spark.sc, spark.partitions
        paths = [level.path for level in levels if level.path]
        local_fps = sc.parallelize(local.visited.array.tolist(), parts).map(_fp_record)
        if paths:
            read = spark.session.read.parquet(*paths).select("fp").rdd.map(_fp_of_row)
            local_fps = local_fps.union(read)
        spark.visited = (
            local_fps.partitionBy(parts, fingerprint_partition)
            .mapPartitionsWithIndex(_fps_to_chunk, preservesPartitioning=True).persist(_storage())
        )
        if st.frontier_size:
            codec = Codec(self.model.state_types())
            last = levels[-1]
            if last.path is None:
                raise BadFileError(f"{run_dir.join('run.json')} is inconsistent (its last level has no file)")
            spark.frontier = (
                spark.session.read.parquet(last.path).rdd.map(_DecodeRow(codec))
                .partitionBy(parts, fingerprint_partition)
                .mapPartitionsWithIndex(_rows_to_block, preservesPartitioning=True).persist(_storage())
            )
        return spark, st, levels

    # -- the result ----------------------------------------------------------------------------------
    def _path_to(self, index: int, st: _Counters, levels: list[LevelInfo], spark: _Spark | None) -> list[tuple]:
        """(fingerprint, ("pos", p) | ("action", id)) from an initial state down to global index ``index``."""
        local = st.local
        steps: list[tuple] = []
        while index >= st.local_distinct:
            from pyspark.sql import functions as F  # noqa: N812 (only reached when Spark ran)

            level = next(lv for lv in levels if lv.base <= index < lv.base + lv.count)
            if level.pointers is not None:
                fps, parents, positions = level.pointers
                at = index - level.base
                steps.append((int(fps[at]), ("pos", int(positions[at]))))
                index = int(parents[at])
                continue
            if level.rdd is not None and spark is not None:
                (fp, parent, pos), = spark.sc.runJob(level.rdd, _PointerAt(index))
                steps.append((fp, ("pos", pos)))
                index = parent
                continue
            if spark is None or level.path is None:
                raise BadFileError(f"level {level.depth} has no parent pointers")
            rows = (spark.session.read.parquet(level.path).where(F.col("gidx") == index)
                    .select("fp", "parent", "pos").collect())
            if len(rows) != 1:
                raise BadFileError(f"the parent pointers of level {level.depth} are incomplete (state {index})")
            steps.append((int(rows[0].fp), ("pos", int(rows[0].pos))))
            index = int(rows[0].parent)
        for fp, action_id in reversed(local.log.path_to(index)):
            steps.append((fp, ("action", action_id)))
        steps.reverse()
        return steps

    def _trace(self, index: int, st: _Counters, levels: list[LevelInfo], spark: _Spark | None, name: str,
               why: Any) -> Any:
        """Turn successor positions into actions by replaying canonical states, then rebuild as the local engine."""
        if index < st.local_distinct:
            path = st.local.log.path_to(index)
            return rebuild_trace(self.model, path, st.local.actions.actions, self.options, name, why)
        steps = self._path_to(index, st, levels, spark)
        canonical = self.model.canonical if self.symmetry else (lambda s: s)
        table = ActionTable(st.local.actions.actions)
        root_fp = steps[0][0]
        current = next((canonical(s) for s in self.model.init_states() if hash(canonical(s)) == root_fp), None)
        if current is None:
            raise ModelError("cannot rebuild a trace: no initial state has the recorded fingerprint")
        path = [(root_fp, -1)]
        for fp, (kind, value) in steps[1:]:
            chosen = None
            for pos, (act, succ) in enumerate(self.model.successors(current)):
                succ = canonical(succ)
                if hash(succ) != fp:
                    continue
                if (kind == "pos" and pos == value) or (kind == "action" and act == st.local.actions.actions[value]):
                    chosen = (act, succ)
                    break
            if chosen is None:
                raise ModelError("cannot rebuild a trace: the recorded step is not deterministic in this model")
            path.append((fp, table.id(chosen[0])))
            current = chosen[1]
        return rebuild_trace(self.model, path, table.actions, self.options, name, why)

    def _result(self, st: _Counters, levels: list[LevelInfo], elapsed: float, reason: str | None,
                spark: _Spark | None, run_dir: RunDir | None) -> CheckResult:
        violations = []
        by_name = {inv.name: inv for inv in self.invariants}
        for name, index in sorted(st.found.items(), key=lambda item: (item[1], item[0])):
            inv = by_name[name]
            violations.append(Violation(name, "safety", self._trace(index, st, levels, spark, name, inv.why)))
        if st.deadlock is not None:
            trace = self._trace(st.deadlock, st, levels, spark, "deadlock",
                                lambda s: "deadlock: no action is enabled in the last state")
            violations.append(Violation("deadlock", "deadlock", trace))
        if violations:
            verdict = Verdict.VIOLATED
        elif reason:
            verdict = Verdict.UNDETERMINED
        else:
            verdict = Verdict.HOLDS
        workers = spark.sc.defaultParallelism if spark is not None else 1
        checkpoint_file = run_dir.path if (reason and run_dir is not None and not run_dir.temporary
                                           and st.spark_started and st.frontier_size) else None
        return CheckResult(
            model=self.model.name,
            constants=dict(self.model.constants),
            verdict=verdict,
            distinct_states=st.distinct,
            states_generated=st.generated,
            depth=st.depth,
            seconds=elapsed,
            violations=violations,
            invariants=[inv.name for inv in self.invariants],
            engine=self.engine,
            workers=workers,
            symmetry=self.symmetry,
            reason=reason if verdict is Verdict.UNDETERMINED else None,
            queue=st.frontier_size,
            checkpoint_file=checkpoint_file,
            extra={
                "spark": {
                    "master": spark.sc.master if spark is not None else None,
                    "partitions": spark.partitions if spark is not None else None,
                    "threshold": self.threshold,
                    "levels": [t.to_json() for t in self.timings],
                }
            },
        )


class _Counters:
    """The driver's view of the search: the local prefix (a ``SearchState``) plus Spark's counts."""

    def __init__(self, local: SearchState) -> None:
        self.local = local
        self.spark_started = False
        self.local_distinct = len(local.log)
        self.sync_from_local()

    def sync_from_local(self) -> None:
        local = self.local
        self.depth = local.depth
        self.generated = local.generated
        self.distinct = len(local.log)
        self.frontier_base = local.frontier_base
        self.frontier_size = len(local.frontier)
        if not self.spark_started:
            self.local_distinct = self.distinct
        self.found = local.found
        self.deadlock = local.deadlock
        self.elapsed = local.elapsed


def _storage() -> Any:
    from pyspark import StorageLevel

    return StorageLevel.MEMORY_AND_DISK


def _save_local_prefix(run_dir: RunDir, model: Model, options: SearchOptions, local: SearchState) -> None:
    with tempfile.TemporaryDirectory(prefix="kmc-") as tmp:
        path = os.path.join(tmp, "local.ckpt")
        ckpt.save(path, model, options, local)
        with open(path, "rb") as f:
            run_dir.write_bytes("local.ckpt", f.read())


def _load_local_prefix(run_dir: RunDir, model: Model, options: SearchOptions) -> SearchState:
    raw = run_dir.read_bytes("local.ckpt")
    if raw is None:
        raise BadFileError(f"run directory {run_dir.path} has no local.ckpt; it is incomplete")
    with tempfile.TemporaryDirectory(prefix="kmc-") as tmp:
        path = os.path.join(tmp, "local.ckpt")
        with open(path, "wb") as f:
            f.write(raw)
        return ckpt.load(path, model, options)


def _explain_spark_failure(exc: Exception) -> KmcError:
    text = str(exc)
    lines = [line for line in text.splitlines() if line.strip()]
    python_error = next((line for line in reversed(lines) if re.match(r"^\w*(Error|Exception)\b", line.strip())), None)
    return ModelError(f"a Spark job failed: {python_error or (lines[0] if lines else type(exc).__name__)}")


def run_engine(model: Model, options: SearchOptions, engine_options: Any = None) -> CheckResult:
    """The ``spark`` engine: ``kmc check MODEL --engine spark [--master URL]``."""
    try:
        return SparkBFS(model, options, engine_options).run()
    except (KmcError, KeyboardInterrupt):
        raise
    except Exception as exc:
        if type(exc).__name__ in ("Py4JJavaError", "PythonException", "Py4JError", "PySparkRuntimeError"):
            raise _explain_spark_failure(exc) from exc
        raise
