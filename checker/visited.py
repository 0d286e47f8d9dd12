"""Compact storage for the visited set and the parent pointers.

The visited set is one sorted int64 array of fingerprints (8 bytes a state), merged once per BFS
level *in place*: the array has spare room at its end (grown with ``realloc``, which moves the pages
of a large array instead of copying them) and the merge moves the old fingerprints up from the
top, a block at a time, so a level's merge never holds a second copy of the set. Parent pointers
live in three arrays indexed by discovery order (the *global index* of a state): its fingerprint,
the global index of its parent (-1 for an initial state) and the id of the action that produced
it, 8 + 4 + 4 bytes, kept as one chunk a level (never concatenated during a search). Together 24
bytes a distinct state, against well over 100 for a Python set plus dict.

The local engine writes the parent pointers to disk from its first level on (``ParentLog.spill``:
the same 16-byte records in an anonymous temporary file, read back through a memory map only to
rebuild a trace or write a checkpoint; ``checker.bfs.PARENTS_ON_DISK``), so that 8 bytes a distinct
state stay in memory; a log kept in memory moves there when a run nears its memory budget. The
level being built keeps its new fingerprints in a
``LevelFingerprints`` (a few sorted runs, merged as they grow), 8 bytes a new state of the level.
"""

from __future__ import annotations

import bisect
import tempfile
from typing import IO

import numpy as np

#: a parent-log record on disk: fingerprint, parent's global index, action id
LOG_RECORD = np.dtype([("fp", "<i8"), ("parent", "<i4"), ("action", "<i4")])


#: how much spare room the visited array gets when it grows (a share of its size)
GROWTH = 0.25
#: old fingerprints moved at once by the in-place merge (the merge's only temporary arrays)
MOVE_BLOCK = 1 << 15
#: fingerprints of a sorted array past which ``member`` sorts its keys first: below it (1 MB) the
#: array stays in the cache and the keys' sort is the larger cost (two-phase RM=6, 50,816 states:
#: 1.5% of its instructions)
SORT_KEYS_PAST = 1 << 17
#: fingerprints below which ``FingerprintSet.add`` inserts by copying the set (8 MB at most, beside
#: the set): the in-place merge's moves cost more instructions (two-phase RM=6: 0.5%) and save
#: memory only on a large set
COPY_BELOW = 1 << 20


def member(data: np.ndarray, fps: np.ndarray) -> np.ndarray:
    """A boolean mask: which of ``fps`` are in the sorted array ``data``."""
    if data.size == 0 or fps.size == 0:
        return np.zeros(fps.size, dtype=bool)
    # the array is in the cache: sorting the keys would cost more than it saves
    if data.size <= SORT_KEYS_PAST:
        pos = np.searchsorted(data, fps)
        pos[pos == data.size] = 0
        return data[pos] == fps
    # binary searches for sorted keys walk the array in order (3-4x faster on a large set than
    # keys in discovery order, whose searches each miss the cache)
    order = np.argsort(fps)
    keys = fps[order]
    pos = np.searchsorted(data, keys)
    pos[pos == data.size] = 0
    mask = np.empty(fps.size, dtype=bool)
    mask[order] = data[pos] == keys
    return mask


class FingerprintSet:
    """A sorted array of distinct int64 fingerprints with batched membership and in-place
    insertion."""

    def __init__(self, values: np.ndarray | None = None) -> None:
        self._buf = np.zeros(0, dtype=np.int64) if values is None else np.array(values, np.int64)
        self._n = int(self._buf.size)

    def __len__(self) -> int:
        return self._n

    @property
    def array(self) -> np.ndarray:
        """The fingerprints, sorted: a view valid until the next ``add``."""
        return self._buf[:self._n]

    def contains(self, fps: np.ndarray) -> np.ndarray:
        """A boolean mask: which of ``fps`` are already in the set."""
        return member(self._buf[:self._n], fps)

    def add(self, fps: np.ndarray) -> None:
        """Insert fingerprints that are distinct and not yet present."""
        if fps.size == 0:
            return
        new = np.sort(fps.astype(np.int64, copy=False))
        n, m = self._n, int(new.size)
        # a small set: one copying insert (fewer instructions than the merge's moves)
        if n + m <= COPY_BELOW:
            self._buf = np.insert(self._buf[:n], np.searchsorted(self._buf[:n], new), new)
            self._n = n + m
            return
        if self._buf.size < n + m:
            self._grow(max(n + m, int(n * (1 + GROWTH))))
        buf = self._buf
        pos = np.searchsorted(buf[:n], new)  # where each new one goes among the old ones
        # move the old ones up by the number of new ones before them, the top block first: a block's
        # targets lie at or above it, so no old value is overwritten before it moves (old value k
        # moves up by the number of new ones with pos <= k: a running count over the block)
        first = int(pos[0])
        hi = n
        while hi > first:
            lo = max(first, hi - MOVE_BLOCK)
            # new ones before the block, before its end
            below, inside = np.searchsorted(pos, [lo, hi])
            shift = np.cumsum(np.bincount(pos[below:inside] - lo, minlength=hi - lo))
            shift += below
            buf[np.arange(lo, hi, dtype=np.int64) + shift] = buf[lo:hi].copy()
            hi = lo
        buf[pos + np.arange(m, dtype=np.int64)] = new
        self._n = n + m

    def _grow(self, capacity: int) -> None:
        try:
            # realloc: a large array's pages are moved, not copied
            self._buf.resize(capacity, refcheck=False)
        except ValueError:  # the array does not own its memory
            grown = np.empty(capacity, np.int64)
            grown[:self._n] = self._buf[:self._n]
            self._buf = grown

    def nbytes(self) -> int:
        """Bytes the set takes with its spare room."""
        return int(self._buf.nbytes)


class LevelFingerprints:
    """The new fingerprints of the level being built: a few sorted runs, each at least twice the
    size of the next, so a lookup is a handful of binary searches and an insertion merges in
    O(log n) amortised moves, whatever the number of chunks the level is built in."""

    def __init__(self) -> None:
        self._runs: list[np.ndarray] = []
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def contains(self, fps: np.ndarray) -> np.ndarray:
        mask = np.zeros(fps.size, dtype=bool)
        for run in self._runs:
            mask |= member(run, fps)
        return mask

    def add(self, fps: np.ndarray) -> None:
        """Insert fingerprints that are distinct and not yet present."""
        if fps.size == 0:
            return
        runs = self._runs
        runs.append(np.sort(fps.astype(np.int64, copy=False)))
        self._size += int(fps.size)
        while len(runs) > 1 and runs[-2].size <= 2 * runs[-1].size:
            last = runs.pop()
            # a merge of two runs
            runs[-1] = np.sort(np.concatenate([runs[-1], last]), kind="stable")

    def runs(self) -> list[np.ndarray]:
        """The sorted runs (together: every fingerprint), to search without merging them."""
        return self._runs

    def sorted(self) -> np.ndarray:
        """Every fingerprint, sorted (the runs merged into one)."""
        if not self._runs:
            return np.zeros(0, np.int64)
        if len(self._runs) > 1:
            self._runs = [np.sort(np.concatenate(self._runs), kind="stable")]
        return self._runs[0]


class ParentLog:
    """Parent pointers by global index, grown in chunks of one BFS level, in memory or on disk."""

    def __init__(self) -> None:
        self._fps: list[np.ndarray] = []
        self._parents: list[np.ndarray] = []
        self._actions: list[np.ndarray] = []
        self._size = 0
        self._flat: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self._file: IO[bytes] | None = None  # set once spilled: every record is in this file

    def __len__(self) -> int:
        return self._size

    @property
    def spilled(self) -> bool:
        return self._file is not None

    def append(self, fps: np.ndarray, parents: np.ndarray, actions: np.ndarray) -> None:
        if fps.size == 0:
            return
        self._flat = None
        if self._file is not None:
            records = np.empty(fps.size, LOG_RECORD)
            records["fp"], records["parent"], records["action"] = fps, parents, actions
            self._file.seek(0, 2)
            records.tofile(self._file)
            self._size += int(fps.size)
            return
        self._fps.append(np.asarray(fps, np.int64))
        self._parents.append(np.asarray(parents, np.int32))
        self._actions.append(np.asarray(actions, np.int32))
        self._size += int(fps.size)

    def spill(self, directory: str | None = None) -> None:
        """Move the records to a temporary file (deleted when the log is) and keep appending
        there."""
        if self._file is not None:
            return
        fps, parents, actions = self.arrays()
        self._file = tempfile.TemporaryFile(prefix="kmc-parents-", dir=directory)
        self._fps, self._parents, self._actions, self._flat = [], [], [], None
        size, self._size = self._size, 0
        self.append(fps, parents, actions)
        self._size = size

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if self._flat is None:
            if self._file is not None:
                self._file.flush()
                records = np.memmap(self._file, LOG_RECORD, mode="r", shape=(self._size,))
                self._flat = (records["fp"], records["parent"], records["action"])
            elif self._fps:
                self._flat = (
                    np.concatenate(self._fps),
                    np.concatenate(self._parents),
                    np.concatenate(self._actions),
                )
                # keep one chunk so later appends stay cheap
                self._fps, self._parents, self._actions = [self._flat[0]], [self._flat[1]], [
                    self._flat[2]]
            else:
                empty = np.zeros(0, np.int64)
                self._flat = (empty, empty.astype(np.int32), empty.astype(np.int32))
        return self._flat

    def path_to(self, index: int) -> list[tuple[int, int]]:
        """(fingerprint, action id) from an initial state down to ``index``; action -1 at the root.

        In memory it reads the chunks where they are (a copy of the whole log at the end of a
        run would be the run's peak memory)."""
        if self._file is not None or self._flat is not None or len(self._fps) <= 1:
            fps, parents, actions = self.arrays()
            chunks = [(0, fps, parents, actions)]
        else:
            chunks, start = [], 0
            for chunk in zip(self._fps, self._parents, self._actions, strict=True):
                chunks.append((start, *chunk))
                start += int(chunk[0].size)
        starts = [c[0] for c in chunks]
        path = []
        while index >= 0:
            start, fps, parents, actions = chunks[bisect.bisect_right(starts, index) - 1]
            path.append((int(fps[index - start]), int(actions[index - start])))
            index = int(parents[index - start])
        path.reverse()
        return path

    def nbytes(self) -> int:
        """Bytes of memory the records take (0 once spilled to disk)."""
        if self._file is not None:
            return 0
        if self._flat is not None:
            return int(sum(a.nbytes for a in self._flat))
        return int(sum(a.nbytes for chunks in (self._fps, self._parents, self._actions)
                       for a in chunks))

    def disk_bytes(self) -> int:
        return self._size * LOG_RECORD.itemsize if self._file is not None else 0
