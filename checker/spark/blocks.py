"""The columnar blocks that Spark moves between the jobs of a level, and the small record functions
that build, convert and merge them (executor side, module level: pickled by reference)."""

from __future__ import annotations

import gc
import os
import pickle
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from checker.codec import Codec

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


#: tasks a reused Python worker runs with its heap frozen (``_frozen_after_task``) before one
#: whose end leaves it to PySpark's full collection, which frees any cycle frozen meanwhile
FROZEN_TASKS = 64
_tasks_frozen = 0


def _gc_paused(records: Iterator[Any]) -> Iterator[Any]:
    """Run a partition with the cyclic garbage collector off: states hold no cycles, and collections
    triggered by millions of freshly unpickled tuples cost more than the unpickling itself
    (3-6x)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield from records
    finally:
        _frozen_after_task()
        if enabled:
            gc.enable()


def _frozen_after_task() -> None:
    """In a reused PySpark worker, the task's young garbage collected and every object left frozen
    out of later collections (``gc.freeze``). PySpark's daemon runs a full collection after every
    task of a reused worker, over every module a level's task imported: 28 ms of CPU a task here,
    against 1 ms once they are frozen (bench/NOTES.md, issue 39), where a level on the executors is
    two or three stages of a task a partition. Every ``FROZEN_TASKS``-th task unfreezes instead,
    so a garbage cycle frozen meanwhile is still freed."""
    global _tasks_frozen
    if not os.environ.get("SPARK_REUSE_WORKER"):  # the driver, or a worker used once
        return
    _tasks_frozen += 1
    if _tasks_frozen % FROZEN_TASKS == 0:
        gc.unfreeze()
        return
    gc.collect(0)
    gc.freeze()


def _dumps(states: list[Any]) -> bytes:
    return pickle.dumps(states, protocol=pickle.HIGHEST_PROTOCOL)


def unpack_states(blob: bytes) -> list[Any]:
    """The states of a block that ``_dumps`` packed earlier in the same Spark job.

    This is Spark's own in-memory transport between our tasks, exactly what PySpark's serializer
    does with every record; it is never applied to a file a user hands us (run directories are
    Parquet with states in the msgpack codec, see ``checker.spark.rundir``).
    """
    # only blobs _dumps made in this job (Spark's transport), never a file
    return pickle.loads(blob)  # noqa: S301


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


def _summary_of(record: tuple[int, tuple]) -> tuple:
    return record[1][6]


def _visited_chunk(record: tuple[int, tuple]) -> tuple[int, np.ndarray]:
    return record[0], record[1][1]


def _merge_chunks(split: int,
                  records: Iterable[tuple[int, np.ndarray]]) -> Iterator[tuple[int, np.ndarray]]:
    arrays = [value for _key, value in records if value.size]
    if len(arrays) == 1:
        yield split, arrays[0]
    elif arrays:
        yield split, np.sort(np.concatenate(arrays))


def _pointer_block(record: tuple[int, tuple]) -> tuple[int, tuple]:
    """A level block without its states: (fps, parents, positions, indices)."""
    key, block = record
    return key, (block[1], block[2], block[3], block[5])


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
            yield from zip(*columns, [encode(s) for s in unpack_states(states)], strict=True)


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


def _fps_to_chunk(split: int,
                  records: Iterable[tuple[int, Any]]) -> Iterator[tuple[int, np.ndarray]]:
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
