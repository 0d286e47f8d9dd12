"""Compact storage for the visited set and the parent pointers.

The visited set is one sorted int64 array of fingerprints (8 bytes a state), merged once per BFS
level. Parent pointers live in three arrays indexed by discovery order (the *global index* of a
state): its fingerprint, the global index of its parent (-1 for an initial state) and the id of
the action that produced it, 8 + 4 + 4 bytes. Together 24 bytes a distinct state, against well
over 100 for a Python set plus dict.

When a run nears its memory budget, the parent pointers move to disk (``ParentLog.spill``: the
same 16-byte records in a temporary file, read back through a memory map), so that 8 bytes a
distinct state stay in memory, plus the frontier and the level being built (Python objects).
"""

from __future__ import annotations

import tempfile
from typing import IO

import numpy as np

#: a parent-log record on disk: fingerprint, parent's global index, action id
LOG_RECORD = np.dtype([("fp", "<i8"), ("parent", "<i4"), ("action", "<i4")])


class FingerprintSet:
    """A sorted array of distinct int64 fingerprints with batched membership and insertion."""

    def __init__(self, values: np.ndarray | None = None) -> None:
        self._sorted = np.zeros(0, dtype=np.int64) if values is None else np.asarray(values, np.int64)

    def __len__(self) -> int:
        return int(self._sorted.size)

    @property
    def array(self) -> np.ndarray:
        return self._sorted

    def contains(self, fps: np.ndarray) -> np.ndarray:
        """A boolean mask: which of ``fps`` are already in the set."""
        data = self._sorted
        if data.size == 0 or fps.size == 0:
            return np.zeros(fps.size, dtype=bool)
        pos = np.searchsorted(data, fps)
        pos[pos == data.size] = 0
        return data[pos] == fps

    def add(self, fps: np.ndarray) -> None:
        """Insert fingerprints that are distinct and not yet present."""
        if fps.size == 0:
            return
        new = np.sort(fps.astype(np.int64, copy=False))
        data = self._sorted
        if data.size == 0:
            self._sorted = new
            return
        self._sorted = np.insert(data, np.searchsorted(data, new), new)


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
        """Move the records to a temporary file (deleted when the log is) and keep appending there."""
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
                self._fps, self._parents, self._actions = [self._flat[0]], [self._flat[1]], [self._flat[2]]
            else:
                empty = np.zeros(0, np.int64)
                self._flat = (empty, empty.astype(np.int32), empty.astype(np.int32))
        return self._flat

    def path_to(self, index: int) -> list[tuple[int, int]]:
        """(fingerprint, action id) from an initial state down to ``index``; action -1 at the root."""
        fps, parents, actions = self.arrays()
        path = []
        while index >= 0:
            path.append((int(fps[index]), int(actions[index])))
            index = int(parents[index])
        path.reverse()
        return path

    def nbytes(self) -> int:
        """Bytes of memory the records take (0 once spilled to disk)."""
        if self._file is not None:
            return 0
        fps, parents, actions = self.arrays()
        return int(fps.nbytes + parents.nbytes + actions.nbytes)

    def disk_bytes(self) -> int:
        return self._size * LOG_RECORD.itemsize if self._file is not None else 0
