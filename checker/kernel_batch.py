"""A compiled kernel a batch at a time, in any process: the expansion the Spark executors run
(``checker.spark.kernel_step``) on packed states, never a readable state.

``km_expand_batch`` (``checker/kernel_search.h``) expands an array of packed states (one row of
``state_bytes`` a state) in order and gives back, for each, its violation mask and its successor
count, and the successors in the readable model's order (canonical under ``--symmetry``) with their
fingerprints, their parent's row, their position and action code (under ``--reduce dead`` in
the reduced form, ``km_reduce`` before the canonical form); with a fingerprint set
(``FingerprintSet``), only the first occurrence of each fingerprint not in it. A fingerprint is the
kernel's 64-bit hash of the packed bytes (``km_hash``), not Python's ``hash`` of the readable state:
a search that mixes the two (the Spark engine's local prefix) says which it compares
(``checker.spark.verdict``).

The library travels as bytes (``Shipment``): an executor without the driver's compiler or cache
writes it to its own cache once and loads it with ctypes.
"""

from __future__ import annotations

import ctypes
import os
import sys
import tempfile
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

from checker.kernel import CAPACITY, Kernel, KernelCapacityError
from checker.kernel_cache import cache_dir, mark_used, write_atomically

#: states expanded a call at most (the output buffers hold this many times the kernel's successor
#: bound)
CHUNK = 4096
#: bytes of successor buffers a call may take: a kernel of large states or many successors a state
#: (the Kafka model's) expands fewer states a call
OUTPUT_BUDGET = 32 << 20
#: levels' state arrays a thread keeps for the next levels (the frontier, the level it makes, and
#: one a caller may still hold)
SPARE_LEVELS = 3
#: a level's rows beyond its estimate (its frontier times the last level's growth, and a quarter):
#: a level that passes them is grown and its last batch expanded again
ROWS_MARGIN = 1024

#: ``sys.getrefcount`` of an array held by a list only (a view of it holds it too)
_PROBE = [np.empty(0)]
_HELD_BY_A_LIST = sys.getrefcount(_PROBE[0])


@dataclass(frozen=True)
class Shipment:
    """A kernel's shared library as bytes, with what an executor checks it against."""

    name: str  # the library's file name (its cache key: a hash of the sources and constants)
    data: bytes
    state_bytes: int
    invariants: tuple[str, ...]

    @classmethod
    def of(cls, kernel: Kernel) -> Shipment:
        with open(kernel.library, "rb") as f:
            data = f.read()
        return cls(os.path.basename(kernel.library), data, kernel.state_bytes,
                   tuple(kernel.spec.invariants))


_LOADED: dict[str, BatchKernel] = {}


def batch_kernel(shipment: Shipment) -> BatchKernel:
    """The kernel of ``shipment``, loaded once a process (written to this machine's cache if it is
    not there)."""
    loaded = _LOADED.get(shipment.name)
    if loaded is not None:
        return loaded
    path = os.path.join(cache_dir(), shipment.name)
    if os.path.exists(path):
        mark_used(path)
    else:
        try:
            path = _write_library(cache_dir(), shipment)
        except OSError:  # a cache this process cannot write: a directory of its own
            path = _write_library(tempfile.mkdtemp(prefix="kmc-kernel-"), shipment)
    loaded = _LOADED[shipment.name] = BatchKernel(path, shipment.state_bytes)
    return loaded


def _write_library(directory: str, shipment: Shipment) -> str:
    """``shipment``'s library written into ``directory`` under its name, atomically (a concurrent
    worker sees the whole file or none); its path."""
    path = os.path.join(directory, shipment.name)

    def write(tmp: str) -> None:
        with open(tmp, "wb") as f:
            f.write(shipment.data)

    write_atomically(directory, path, write)
    return path


class BatchKernel:
    """The batch functions of a kernel's library (``km_expand_batch``, ``km_fingerprints``, ...)."""

    def __init__(self, library: str, state_bytes: int) -> None:
        lib = self.lib = ctypes.CDLL(library)
        p, n = ctypes.c_void_p, ctypes.c_uint64
        sig = {
            "km_state_bytes": ([], ctypes.c_uint64), "km_max_successors": ([], ctypes.c_uint64),
            "km_fpset_new": ([], p), "km_fpset_free": ([p], None),
            "km_fpset_add_many": ([p, p, n], ctypes.c_int),
            "km_fingerprints": ([p, n, p], None), "km_violations_batch": ([p, n, p], None),
            "km_expand_batch": ([p, n, ctypes.c_int, p, p, p, p, p, p, p, p, n], ctypes.c_int64),
            "km_fpset_has_many": ([p, p, n, p], None),
            "km_batch_error_code": ([], ctypes.c_uint32),
            "km_driver_new": ([], p), "km_driver_free": ([p], None),
            "km_driver_level": ([p, p, n, ctypes.c_int, p, ctypes.c_int, p, p, p, p, p, p, p],
                                ctypes.c_int),
        }
        for name, (args, res) in sig.items():
            fn = getattr(lib, name)
            fn.argtypes, fn.restype = args, res
        self._local = threading.local()
        self.state_bytes = int(lib.km_state_bytes())
        self.max_successors = int(lib.km_max_successors())
        if self.state_bytes != state_bytes:
            raise RuntimeError(f"kernel library {library}: {self.state_bytes} bytes a state, "
                               f"expected {state_bytes}")

    def chunk(self) -> int:
        """States a call: ``CHUNK``, fewer when their successors' buffers would pass
        ``OUTPUT_BUDGET``."""
        return max(1, min(CHUNK, OUTPUT_BUDGET // max(1, self.max_successors * self.state_bytes)))

    def rows(self, packed: bytes | np.ndarray) -> np.ndarray:
        """``packed`` (states end to end) as a C-contiguous array of one row a state."""
        flat = (np.frombuffer(packed, np.uint8)
                if isinstance(packed, bytes | bytearray | memoryview) else packed)
        return np.ascontiguousarray(flat, dtype=np.uint8).reshape(-1, self.state_bytes)

    def fingerprints(self, states: np.ndarray) -> np.ndarray:
        """The fingerprints of ``states`` (rows), as int64 (Spark's long)."""
        states = np.ascontiguousarray(states, dtype=np.uint8)
        out = np.empty(states.shape[0], np.uint64)
        self.lib.km_fingerprints(states.ctypes.data, states.shape[0], out.ctypes.data)
        return out.view(np.int64)

    def violations(self, states: np.ndarray) -> np.ndarray:
        """Each state's bit mask of the compiled invariants it violates (bit i: the kernel's
        invariant i)."""
        states = np.ascontiguousarray(states, dtype=np.uint8)
        out = np.empty(states.shape[0], np.uint32)
        self.lib.km_violations_batch(states.ctypes.data, states.shape[0], out.ctypes.data)
        return out

    def expand(self, states: np.ndarray, symmetry: bool, seen: FingerprintSet | None = None,
               reduce: bool = False) -> Expansion:
        """The successors of ``states`` (rows; ``chunk()`` of them or fewer), as ``km_expand_batch``
        gives them: with ``reduce``, in the form ``--reduce dead`` stores (``km_reduce``, before the
        canonical form, as the local engine's level search applies it)."""
        states = np.ascontiguousarray(states, dtype=np.uint8)
        n = states.shape[0]
        cap = max(1, n * self.max_successors)
        masks, degrees = np.empty(n, np.uint32), np.empty(n, np.uint32)
        out, fps, parent, pos, action = self._buffers(cap)
        flags = int(symmetry) | int(reduce) << 1
        written = self.lib.km_expand_batch(
            states.ctypes.data, n, flags, seen.handle if seen is not None else None,
            masks.ctypes.data, degrees.ctypes.data, out.ctypes.data, fps.ctypes.data,
            parent.ctypes.data, pos.ctypes.data, action.ctypes.data, cap)
        if written < 0:
            self._raise(written, "km_expand_batch: its output was too small")
        # copies: the buffers are this thread's next call's
        return Expansion(masks, degrees, out[:written].copy(), fps[:written].view(np.int64).copy(),
                         parent[:written].copy(), pos[:written].copy(), action[:written].copy())

    def _raise(self, status: int, short: str) -> None:
        """The error of a batch function's negative ``status``."""
        if status == -2:
            raise MemoryError("the kernel ran out of memory expanding a batch")
        if status == -3:
            code = int(self.lib.km_batch_error_code())
            raise KernelCapacityError("the compiled kernel stopped: "
                                      f"{CAPACITY.get(code, f'capacity code {code}')}; "
                                      "run this configuration with --kernel off")
        if status == -4:
            raise ValueError("this kernel does not compile --reduce dead (km_reduce)")
        raise RuntimeError(short)

    def expand_level(self, states: np.ndarray, visited: FingerprintSet, threads: int,
                     symmetry: bool, reduce: bool, masks: bool) -> LevelExpansion:
        """A whole level from the frontier ``states`` (rows) as the local engine's search expands
        one (``km_driver_level``: parts of each batch in ``threads`` threads against ``visited``,
        merged in order, each new fingerprint added to ``visited`` once, each new state copied once
        into the level's rows); ``masks``: the frontier's violation masks too."""
        states = np.ascontiguousarray(states, dtype=np.uint8)
        n = states.shape[0]
        handle = getattr(self._local, "driver", None)
        if handle is None:
            handle = self._local.driver = self.lib.km_driver_new()
            if not handle:
                raise MemoryError("the kernel could not allocate a level search")
        level_masks, degrees = np.zeros(n, np.uint32), np.empty(n, np.uint32)
        growth = getattr(self._local, "growth", float(self.max_successors))
        out = _LevelRows.empty(int(n * min(growth * 1.25, self.max_successors)) + ROWS_MARGIN,
                               self.state_bytes, self._spare_rows)
        io = np.array([0, 0, out.cap, 0], np.uint64)
        flags = int(symmetry) | int(reduce) << 1 | int(masks) << 2
        while True:
            status = self.lib.km_driver_level(
                handle, states.ctypes.data, n, flags, visited.handle, threads,
                level_masks.ctypes.data, degrees.ctypes.data, *out.pointers(), io.ctypes.data)
            if status != -1:
                break
            out = out.grown(max(2 * out.cap, int(io[1] + io[3])), int(io[1]), self._spare_rows)
            io[2] = out.cap
        if status < 0:
            self._raise(status, "km_driver_level failed")
        written = int(io[1])
        self._local.growth = written / n if n else growth
        return LevelExpansion(level_masks, degrees, out.states[:written],
                              out.fps[:written].view(np.int64), out.parent[:written],
                              out.position[:written])

    def _spare_rows(self, cap: int) -> np.ndarray:
        """Rows for a level's new states, at least ``cap``: an earlier level's array nothing holds
        any more (no view of it is alive) when there is one, as the local engine's search fills its
        two levels' buffers in turn; fresh memory is zeroed by the system, 2 MB pages at a time,
        which took a tenth of the driver's levels' CPU (bench/NOTES.md, issue 39)."""
        pool = self._local.__dict__.setdefault("rows", [])
        free = [i for i in range(len(pool)) if sys.getrefcount(pool[i]) <= _HELD_BY_A_LIST]
        for i in free:
            if pool[i].shape[0] >= cap:
                return pool[i]
        if len(pool) >= SPARE_LEVELS and free:
            del pool[free[0]]
        pool.append(np.empty((cap, self.state_bytes), np.uint8))
        return pool[-1]

    def release_rows(self) -> None:
        """This thread's spare level rows (``_spare_rows``) given back: the search is over."""
        self._local.__dict__.pop("rows", None)

    def _buffers(self, cap: int) -> tuple[np.ndarray, ...]:
        """This thread's output buffers for ``cap`` successors, kept from call to call: a fresh
        buffer of a few MB a call was mapped and zeroed by the system each time, 2 MB pages at a
        time, which took most of an expansion's CPU (bench/NOTES.md, issue 39)."""
        held = getattr(self._local, "buffers", None)
        if held is None or held[1].size < cap:
            held = (np.empty((cap, self.state_bytes), np.uint8), np.empty(cap, np.uint64),
                    np.empty(cap, np.uint32), np.empty(cap, np.uint32), np.empty(cap, np.uint32))
            self._local.buffers = held
        return held


@dataclass
class Expansion:
    """What ``km_expand_batch`` gives for a batch: per state expanded its violation mask and
    successor count; per successor written its packed bytes (rows), fingerprint, parent row in the
    batch, position and action."""

    masks: np.ndarray
    degrees: np.ndarray
    states: np.ndarray
    fps: np.ndarray
    parent: np.ndarray
    position: np.ndarray
    action: np.ndarray


@dataclass
class LevelExpansion:
    """What ``km_driver_level`` gives for a level: per frontier state its violation mask (0 unless
    asked) and successor count; per new state its row, fingerprint, parent's row in the frontier
    and position among the parent's successors, in the order of their keys."""

    masks: np.ndarray
    degrees: np.ndarray
    states: np.ndarray
    fps: np.ndarray
    parent: np.ndarray
    position: np.ndarray


@dataclass
class _LevelRows:
    """A level's output arrays, ``cap`` rows (views of the first rows written are its result)."""

    states: np.ndarray
    fps: np.ndarray
    parent: np.ndarray
    position: np.ndarray

    @classmethod
    def empty(cls, cap: int, width: int, spare: Any) -> _LevelRows:
        """``cap`` rows: the states' from ``spare(cap)``, the rest fresh (a level's fingerprints
        and links are kept, its states only while they are the frontier)."""
        return cls(spare(cap)[:cap], np.empty(cap, np.uint64), np.empty(cap, np.uint32),
                   np.empty(cap, np.uint16))

    @property
    def cap(self) -> int:
        return self.fps.size

    def pointers(self) -> tuple[int, ...]:
        return (self.states.ctypes.data, self.fps.ctypes.data, self.parent.ctypes.data,
                self.position.ctypes.data)

    def grown(self, cap: int, written: int, spare: Any) -> _LevelRows:
        """``cap`` rows, the first ``written`` copied over."""
        more = _LevelRows.empty(cap, self.states.shape[1], spare)
        for new, old in zip((more.states, more.fps, more.parent, more.position),
                            (self.states, self.fps, self.parent, self.position), strict=True):
            new[:written] = old[:written]
        return more


class FingerprintSet:
    """A C set of fingerprints (``km_fpset``): the first occurrences of one expansion across its
    batches."""

    def __init__(self, kernel: BatchKernel, known: np.ndarray | None = None) -> None:
        self.kernel = kernel
        self.handle = kernel.lib.km_fpset_new()
        if not self.handle:
            raise MemoryError("the kernel could not allocate a fingerprint set")
        if known is not None:
            try:
                self.add(known)
            except MemoryError:
                self.close()
                raise

    def add(self, fps: np.ndarray) -> None:
        """Put ``fps`` in the set."""
        if fps.size:
            fps = np.ascontiguousarray(fps, dtype=np.int64)
            if self.kernel.lib.km_fpset_add_many(self.handle, fps.ctypes.data, fps.size) == -2:
                raise MemoryError("the kernel ran out of memory filling a fingerprint set")

    def has_many(self, fps: np.ndarray) -> np.ndarray:
        """For each of ``fps``, whether the set holds it."""
        fps = np.ascontiguousarray(fps, dtype=np.int64)
        out = np.empty(fps.size, np.uint8)
        self.kernel.lib.km_fpset_has_many(self.handle, fps.ctypes.data, fps.size, out.ctypes.data)
        return out.view(bool)

    def close(self) -> None:
        if self.handle:
            self.kernel.lib.km_fpset_free(self.handle)
            self.handle = None

    def __enter__(self) -> FingerprintSet:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
