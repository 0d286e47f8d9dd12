"""Job 1 of a Spark level: expand the frontier, shuffle the candidates to their fingerprint's
partition, drop the visited ones and check the invariants on the new states (executor side)."""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from checker.search import SuccessorView
from checker.spark.blocks import (
    _by_partition,
    _dumps,
    _gc_paused,
    _level_block,
    _merge_stats,
    _stats,
    unpack_states,
)
from spec.model import Model


class _Expand:
    """Job 1, map side: expand one frontier partition in global-index order, keeping the first
    occurrence (smallest key) of every successor fingerprint; one candidates block per target
    partition, and one statistics record."""

    def __init__(self, model: Model, symmetry: bool, check_deadlock: bool, partitions: int,
                 fail_once: str | None = None, canonical: Any = None) -> None:
        self.model = model
        self.symmetry = symmetry
        #: the form states are stored in (``checker.search.search_canonical``: ``--reduce dead``
        #: drops dead messages, ``--symmetry`` renames); None: the model's canonical form under
        #: symmetry
        self.canonical = canonical
        self.check_deadlock = check_deadlock
        self.partitions = partitions
        self.fail_once = fail_once  # fault injection: a marker path ("" for none) or None

    def __call__(self, records: Iterable[tuple[int, tuple]]) -> Iterator[tuple[int, tuple]]:
        return _gc_paused(self._run(records))

    def _run(self, records: Iterable[tuple[int, tuple]]) -> Iterator[tuple[int, tuple]]:
        started = time.perf_counter()
        frontier: list[tuple[int, Any]] = []
        for _key, block in records:
            frontier.extend(zip(block[5].tolist(), unpack_states(block[4]), strict=True))
        frontier.sort(key=_first)
        if self.fail_once is not None:
            _maybe_fail(len(frontier), self.fail_once)
        successors_of = SuccessorView(self.model, self.symmetry, self.canonical).of
        best: dict[int, tuple] = {}
        generated = 0
        deadlock = None
        for index, state in frontier:
            count, kept = successors_of(state)
            for pos, _act, succ in kept:
                fp = hash(succ)
                if fp not in best:
                    best[fp] = (index, pos, succ)
            generated += count
            if not count and self.check_deadlock and deadlock is None:
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
            block = ("c", fps[idx], parents[idx], positions[idx],
                     _dumps([values[i][2] for i in idx.tolist()]))
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

    def __call__(self, split: int,
                 records: Iterable[tuple[int, Any]]) -> Iterator[tuple[int, tuple]]:
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
                    loaded[block] = unpack_states(blocks[block][4])
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
        stats = _merge_stats(stats, _stats(dedup=deduped - started, invariants=time.perf_counter()
                                           - deduped))
        summary = (int(fps.size), histogram, first_violation, stats, keys)
        yield split, _level_block(fps, parents, positions, states, summary=summary)
