"""Compact storage for the visited set and the parent pointers.

The visited set is one sorted int64 array of fingerprints (8 bytes a state), merged once per BFS
level. Parent pointers live in three arrays indexed by discovery order (the *global index* of a
state): its fingerprint, the global index of its parent (-1 for an initial state) and the id of
the action that produced it, 8 + 4 + 4 bytes. Together 24 bytes a distinct state, against well
over 100 for a Python set plus dict.
"""

from __future__ import annotations

import numpy as np


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
    """Parent pointers by global index, grown in chunks of one BFS level."""

    def __init__(self) -> None:
        self._fps: list[np.ndarray] = []
        self._parents: list[np.ndarray] = []
        self._actions: list[np.ndarray] = []
        self._size = 0
        self._flat: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    def __len__(self) -> int:
        return self._size

    def append(self, fps: np.ndarray, parents: np.ndarray, actions: np.ndarray) -> None:
        if fps.size == 0:
            return
        self._fps.append(np.asarray(fps, np.int64))
        self._parents.append(np.asarray(parents, np.int32))
        self._actions.append(np.asarray(actions, np.int32))
        self._size += int(fps.size)
        self._flat = None

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if self._flat is None:
            if self._fps:
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
        fps, parents, actions = self.arrays()
        return int(fps.nbytes + parents.nbytes + actions.nbytes)
