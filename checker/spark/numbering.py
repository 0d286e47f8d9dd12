"""Global indices of a level's new states, as the local engine numbers them, and the lookups of an
index or a parent pointer by fingerprint or index (executor side)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from checker.spark.blocks import _by_partition
from checker.spark.expand import _ParentRange


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

    def __call__(self, split: int,
                 records: Iterable[tuple[int, tuple]]) -> Iterator[tuple[int, tuple]]:
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
    """Large levels, step 3, on level block ∪ indices of one partition: the block with its
    indices."""
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


class _PointerAt:
    """(fp, parent, position) of the state with one global index, from pointer blocks."""

    def __init__(self, index: int) -> None:
        self.index = index

    def __call__(self, records: Iterable[tuple[int, tuple]]) -> Iterator[tuple[int, int, int]]:
        for _key, (fps, parents, positions, indices) in records:
            for at in np.flatnonzero(indices == self.index).tolist():
                yield int(fps[at]), int(parents[at]), int(positions[at])
