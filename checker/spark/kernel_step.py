"""The arrow transport on a model's compiled kernel: packed states on the wire, the expansion in C.

When ``checker.kernel.why_not(model, options, engine="spark")`` allows it, a Spark level carries
each state as its packed bytes (``state_bytes`` each, the kernel's layout; no msgpack) and its
fingerprint is the kernel's hash of those bytes (``km_hash``). The executors expand their partition
with ``km_expand_batch`` (``checker.kernel_batch``) a chunk of states at a time (under ``--reduce
dead`` each successor reduced before its canonical form, as the local engine's kernel does), in
global-index order, keeping the first occurrence of each fingerprint not in the last levels (a C
set), and check the compiled invariants on the frontier (each state's violation mask). Everything
else is the arrow transport's (``arrow_step``): the shuffle, the anti-joins, ``min_by`` per
fingerprint, the driver's numbering and the statistics row, so the counts, depths, verdicts and
counterexamples are the local engine's.

The local prefix runs on the driver with the readable model (Python fingerprints). When Spark
starts, the kernel's own search (``km_expand_level``) runs the same levels on the driver in C, which
gives every state of the prefix packed, in the readable search's order (checked against the readable
frontier), so the visited set and the frontier go to Spark with the kernel's fingerprints
(``packed_prefix``). A counterexample is replayed on the readable model: its steps in the prefix by
Python fingerprint, its Spark steps by the kernel's (``checker.spark.verdict``).

A run directory (``--checkpoint``) holds the kernel's packed states and fingerprints in its level
files, and run.json names the kernel's library and state width (``checker.spark.resume``); a
``--resume`` packs the saved local prefix again for its fingerprints and refuses a directory written
on the other path or by another kernel.
"""

from __future__ import annotations

import ctypes
import time
from collections.abc import Iterator
from typing import Any

import numpy as np

from checker.kernel import Kernel
from checker.kernel_batch import FingerprintSet, Shipment, batch_kernel
from checker.spark.blocks import _gc_paused
from checker.spark.expand import _maybe_fail
from spec.errors import ModelError

#: the order key's bits for the successor position (``arrow_step.POSITION_BITS``, repeated: that
#: module imports this)
POSITION_BITS = 20


def binary_column(pa: Any, rows: np.ndarray, copy: bool = True) -> Any:
    """``rows`` (one packed state a row) as an Arrow binary array, without a Python object a
    state; ``copy=False``: over the rows' own memory (half the CPU of writing a level file,
    bench/NOTES.md), for an array used before ``rows`` can change."""
    count, width = rows.shape
    offsets = (np.arange(0, (count + 1) * width, width, dtype=np.int32) if width
               else np.zeros(count + 1, np.int32))
    data = np.ascontiguousarray(rows)
    data = data.tobytes() if copy else data.reshape(-1)
    return pa.Array.from_buffers(pa.binary(), count,
                                 [None, pa.py_buffer(offsets), pa.py_buffer(data)])


def long_column(pa: Any, values: np.ndarray) -> Any:
    """``values`` as an Arrow int64 array over their own memory. ``pa.array`` of a NumPy array
    imports pandas the first time a process calls it (0.25 s of CPU here: a run directory's whole
    cost on a search whose levels all ran on the driver, bench/NOTES.md)."""
    values = np.ascontiguousarray(values, dtype=np.int64)
    return pa.Array.from_buffers(pa.int64(), values.size, [None, pa.py_buffer(values)])


def packed_rows(column: Any, width: int) -> np.ndarray:
    """An Arrow binary column of packed states as rows (a copy of its data buffer, not a Python
    object a state)."""
    import pyarrow as pa

    count = len(column)
    if count == 0:
        return np.zeros((0, width), np.uint8)
    buffers = column.buffers()
    kind = np.int64 if pa.types.is_large_binary(column.type) else np.int32
    offsets = np.frombuffer(buffers[1], kind, count + 1, column.offset * np.dtype(kind).itemsize)
    if np.any(np.diff(offsets) != width):
        raise RuntimeError(f"a packed state is not {width} bytes (the frontier was not written by "
                           "the kernel)")
    data = np.frombuffer(buffers[2], np.uint8, int(offsets[-1] - offsets[0]), int(offsets[0]))
    return data.reshape(count, width)


def _in_order(batches: Iterator[Any], numbers: tuple, width: int) -> tuple[np.ndarray, np.ndarray]:
    """A frontier partition's packed states sorted by global index, and their global indices."""
    fps_in: list[np.ndarray] = []
    rows_in: list[np.ndarray] = []
    for batch in batches:
        fps_in.append(batch.column(0).to_numpy())
        rows_in.append(packed_rows(batch.column(1), width))
    fps = np.concatenate(fps_in) if fps_in else np.zeros(0, np.int64)
    rows = np.concatenate(rows_in) if rows_in else np.zeros((0, width), np.uint8)
    known, indices, _recent = numbers
    at = np.searchsorted(known, fps)
    at[at >= known.size] = 0
    if fps.size and not np.array_equal(known[at], fps):
        raise RuntimeError("a frontier state has no global index (the level's numbering was not "
                           "broadcast)")
    gidx = indices[at]
    order = np.argsort(gidx, kind="stable")
    return np.ascontiguousarray(rows[order]), gidx[order]


def _candidates_arrays(pa: Any, fps: Any, keys: Any, states: Any) -> Any:
    """A batch of candidates of the arrow transport (Arrow arrays of fingerprints, order keys and
    states, packed or encoded), its statistics columns null."""
    nothing = pa.nulls(len(fps), pa.int64())
    return pa.RecordBatch.from_arrays([fps, keys, states, nothing, nothing, nothing, nothing],
                                      names=["fp", "key", "state", "bad", "gen", "dead", "cpu"])


def _violated(masks: np.ndarray, checks: list[tuple[int, int]]) -> int:
    """The bits (``checks``: (bit of the level's mask, bit of the kernel's)) that some state of
    ``masks`` violates."""
    bad = 0
    for bit, kernel_bit in checks:
        if np.any(masks >> kernel_bit & 1):
            bad |= 1 << bit
    return bad


def first_violations(masks: np.ndarray, gidx: np.ndarray,
                     checks: list[tuple[int, int]]) -> dict[int, int]:
    """For each bit of ``checks`` ((bit of the level's mask, bit of the kernel's)) that some state
    of ``masks`` violates, the global index (``gidx``, ascending) of the first such state."""
    first = {}
    for bit, kernel_bit in checks:
        hit = np.flatnonzero(masks >> kernel_bit & 1)
        if hit.size:
            first[bit] = int(gidx[hit[0]])
    return first


def statistics_batch(pa: Any, violated: int, generated: int, deadlock: int | None,
                     cpu_micros: int) -> Any:
    """A partition's last row in the arrow transport: its statistics with a null fingerprint."""
    return pa.RecordBatch.from_arrays(
        [pa.array([None], pa.int64()), pa.array([None], pa.int64()),
         pa.array([None], pa.binary()), pa.array([violated], pa.int64()),
         pa.array([generated], pa.int64()), pa.array([deadlock], pa.int64()),
         pa.array([cpu_micros], pa.int64())],
        names=["fp", "key", "state", "bad", "gen", "dead", "cpu"],
    )


class PartitionExpand:
    """What the arrow transport's expansions share (``arrow_step.ArrowExpand`` on readable states,
    ``KernelExpand`` on packed ones): ``mapInArrow`` over one frontier partition, its candidates as
    Arrow batches, then one statistics row (``statistics_batch``)."""

    def __init__(self, symmetry: bool, check_deadlock: bool, numbers: Any,
                 fail_once: str | None) -> None:
        self.symmetry = symmetry
        self.check_deadlock = check_deadlock
        # broadcast (fingerprints sorted, their global indices, recent levels' fingerprints)
        self.numbers = numbers
        self.fail_once = fail_once

    def __call__(self, batches: Iterator[Any]) -> Iterator[Any]:
        return _gc_paused(self._run(batches))

    def _run(self, batches: Iterator[Any]) -> Iterator[Any]:
        raise NotImplementedError

    def _fail_once(self, size: int) -> None:
        """Fault injection (tests): the first attempt of partition 0 dies."""
        if self.fail_once is not None:
            _maybe_fail(size, self.fail_once)


class KernelExpand(PartitionExpand):
    """``mapInArrow`` over one frontier partition of packed states: ``arrow_step.ArrowExpand`` on
    the kernel. ``checks``: (bit of the statistics row's mask, bit of the kernel's violation mask)
    of the invariants to check on the partition's own states."""

    def __init__(self, shipment: Shipment, symmetry: bool, check_deadlock: bool,
                 checks: list[tuple[int, int]], numbers: Any, fail_once: str | None = None,
                 chunk: int | None = None, reduce: bool = False) -> None:
        super().__init__(symmetry, check_deadlock, numbers, fail_once)
        self.shipment = shipment
        self.reduce = reduce  # --reduce dead: successors in the stored form (``km_reduce``)
        self.chunk = chunk  # states a ``km_expand_batch`` call (None: the kernel's ``chunk()``)
        self.checks = checks

    def _run(self, batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        cpu_started = time.process_time()
        kernel = batch_kernel(self.shipment)
        rows, gidx = _in_order(batches, self.numbers.value, kernel.state_bytes)
        self._fail_once(rows.shape[0])
        violated, generated, deadlock = 0, 0, None
        with FingerprintSet(kernel, self.numbers.value[2]) as seen:
            chunk = self.chunk or kernel.chunk()
            for start in range(0, rows.shape[0], chunk):
                got = kernel.expand(rows[start:start + chunk], self.symmetry, seen, self.reduce)
                violated |= _violated(got.masks, self.checks)
                generated += int(got.degrees.sum())
                if self.check_deadlock and deadlock is None:
                    stuck = np.flatnonzero(got.degrees == 0)
                    if stuck.size:
                        deadlock = int(gidx[start + stuck[0]])
                if got.fps.size:
                    keys = gidx[start
                                + got.parent.astype(
                                    np.int64)] << POSITION_BITS | got.position.astype(np.int64)
                    yield _candidates_arrays(pa, long_column(pa, got.fps), long_column(pa, keys),
                                             binary_column(pa, got.states))
        yield statistics_batch(pa, violated, generated, deadlock,
                               int((time.process_time() - cpu_started) * 1e6))


class KernelFrontierCheck:
    """``arrow_step.FrontierCheck`` on packed states: for each invariant of ``checks``, the
    partition's first state (in global-index order) that violates it, as rows (global index, the
    bits it violates)."""

    def __init__(self, shipment: Shipment, checks: list[tuple[int, int]], numbers: Any) -> None:
        self.shipment = shipment
        self.checks = checks
        self.numbers = numbers

    def __call__(self, batches: Iterator[Any]) -> Iterator[Any]:
        return _gc_paused(self._run(batches))

    def _run(self, batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        kernel = batch_kernel(self.shipment)
        rows, gidx = _in_order(batches, self.numbers.value, kernel.state_bytes)
        first: dict[int, int] = {}  # a state's global index -> the bits it is the first to violate
        for bit, index in first_violations(kernel.violations(rows), gidx, self.checks).items():
            first[index] = first.get(index, 0) | 1 << bit
        yield pa.RecordBatch.from_arrays([pa.array(list(first), pa.int64()),
                                          pa.array(list(first.values()), pa.int64())],
                                         names=["index", "bad"])


def kernel_checks(kernel: Kernel, invariants: list[Any]) -> list[tuple[int, int]]:
    """(bit in the level's mask, bit in the kernel's) of ``invariants`` (all compiled: ``why_not``
    said so)."""
    names = kernel.spec.invariants
    return [(bit, names.index(inv.name)) for bit, inv in enumerate(invariants)]


def packed_prefix(kernel: Kernel, model: Any, symmetry: bool, local: Any,
                  reduce: bool = False) -> tuple[np.ndarray, np.ndarray, int]:
    """Every state of the readable local prefix ``local`` (a ``checker.bfs.SearchState``), packed in
    its global-index order, with the kernel's fingerprints, and the first index of its last level:
    the kernel's own search of the same levels, in C (under ``reduce``, ``--reduce dead``'s stored
    form, ``km_set_reduce``), checked to end where the readable one ends with the very same
    frontier."""
    lib, spec = kernel.lib, kernel.spec
    handle = lib.km_new(0, 0, int(symmetry))
    if not handle:
        raise MemoryError("the kernel could not allocate its search")
    try:
        if not lib.km_set_reduce(handle, int(reduce)):
            raise ModelError(f"kernel {spec.source} does not compile --reduce dead")
        for state in model.init_states():
            if lib.km_add_initial(handle, spec.pack(state)) == -2:
                raise MemoryError("the kernel ran out of memory")
        counts = (ctypes.c_int64 * 6)()
        total = len(local.log)
        for _ in range(local.depth):
            lib.km_counts(handle, counts)
            if counts[0] >= total:
                break
            if lib.km_expand_level(handle) == -2:
                raise MemoryError("the kernel ran out of memory")
        lib.km_counts(handle, counts)
        distinct, level_start = int(counts[0]), int(counts[2])
        rows = np.empty((distinct, kernel.state_bytes), np.uint8)
        lib.km_get_states(handle, 0, distinct, rows.ctypes.data)
    finally:
        lib.km_free(handle)
    frontier = b"".join(spec.pack(s) for s in local.frontier)
    if (distinct != total or level_start != local.frontier_base or rows[level_start:].tobytes()
        != frontier):
        raise ModelError(f"the compiled kernel ({kernel.spec.source}) and the readable model "
                         f"disagree on the first {local.depth} levels ({distinct:,} states against "
                         f"{total:,}): run with --kernel off, and "
                         "run tests/test_kernel.py")
    batch = batch_kernel(Shipment.of(kernel))
    return rows, batch.fingerprints(rows), level_start
