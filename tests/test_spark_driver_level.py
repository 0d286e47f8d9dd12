"""The Spark driver's level search (``km_driver_level``, ``checker.spark.driver_level``) is the
executors' level: the same new states, fingerprints and keys, in key order, at any thread count.

The reference is the executors' expansion of the whole frontier in one set of first occurrences
(``packed_step.expand_rows``, ``km_expand_batch``), which keeps each fingerprint's smallest key as
their fingerprint partitions do. A kernel built with three states a batch (``-DKM_CHUNK=3``) cuts
every level into many batches of one to three threads' parts, so the merge's order shows; a level
whose rows were underestimated is grown and gives the same; and a level's rows are reused for a
later level only when nothing holds them. No Spark, no JVM.
"""

from __future__ import annotations

import weakref

import numpy as np
import pytest

from checker import kernel as km
from checker import kernel_batch
from checker.kernel_batch import BatchKernel, FingerprintSet
from checker.spark.driver_level import expand_level
from checker.spark.kernel_step import kernel_checks
from checker.spark.packed_step import ExpandStats, expand_rows
from invariants.registry import for_family
from tests.test_kernel import TLA_SMALL, model_of, needs_cc

#: (model, constants, symmetry): a search that holds, and one with violations and deadlocks
CONFIGS = [("two-phase", {"RM": 4}, True), ("tla:Kip101", TLA_SMALL, False)]


def small_batches(name: str, constants: dict) -> tuple[object, km.Kernel, BatchKernel]:
    model = model_of(name, constants)
    kernel = km.load(model.kernel(), extra_flags=("-DKM_CHUNK=3",))
    return model, kernel, BatchKernel(kernel.library, kernel.state_bytes)


def initial_rows(model, kernel: km.Kernel, batch: BatchKernel) -> np.ndarray:
    rows = batch.rows(b"".join(kernel.spec.pack(s) for s in model.init_states()))
    _fps, first = np.unique(batch.fingerprints(rows), return_index=True)
    return rows[np.sort(first)]


def reference_level(batch, gidx, rows, visited, symmetry, checks):
    """The executors' level: keys, fingerprints, states and the statistics."""
    stats = ExpandStats()
    with FingerprintSet(batch, visited) as seen:
        blocks = list(expand_rows(batch, gidx, rows, seen, symmetry, False, True, checks, stats))
    if not blocks:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), rows[:0], stats
    keys, fps, states = (np.concatenate([b[i] for b in blocks]) for i in (1, 2, 3))
    return keys, fps, states, stats


def driver_levels(batch, kernel, rows, symmetry, threads, checks):
    """Every level of the search by ``expand_level``, beside the reference: each level's pair."""
    visited_fps = batch.fingerprints(rows)
    base = 0
    pairs = []
    with FingerprintSet(batch, visited_fps) as visited:
        while rows.shape[0]:
            gidx = np.arange(base, base + rows.shape[0], dtype=np.int64)
            want = reference_level(batch, gidx, rows, visited_fps, symmetry, checks)
            stats = ExpandStats()
            got = (*expand_level(batch, gidx, rows, visited, threads, symmetry, False, True,
                                 checks, stats), stats)
            pairs.append((got, want))
            base += rows.shape[0]
            visited_fps = np.concatenate([visited_fps, want[1]])
            rows = want[2]
    return pairs


def assert_same(pairs) -> None:
    assert len(pairs) > 5
    for depth, (got, want) in enumerate(pairs):
        for name, a, b in zip(("keys", "fps", "states"), got[:3], want[:3], strict=True):
            assert np.array_equal(a, b), (depth, name)
        assert np.all(np.diff(got[0]) > 0), depth  # key order
        assert (got[3].generated, got[3].deadlock, got[3].first) == (
            want[3].generated, want[3].deadlock, want[3].first), depth


@needs_cc
@pytest.mark.parametrize(("name", "constants", "symmetry"), CONFIGS, ids=lambda c: str(c))
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_the_drivers_level_is_the_executors_level(name, constants, symmetry, threads):
    model, kernel, batch = small_batches(name, constants)
    invariants = [inv for inv in for_family(model.family).values() if inv.default]
    checks = kernel_checks(kernel, invariants)
    pairs = driver_levels(batch, kernel, initial_rows(model, kernel, batch), symmetry, threads,
                          checks)
    assert_same(pairs)
    if name == "tla:Kip101":  # the checks and the deadlocks are compared, not vacuous
        assert any(got[3].first for got, _want in pairs)
        assert any(got[3].deadlock is not None for got, _want in pairs)
    assert (pairs[-1][0][0].size, pairs[-1][1][0].size) == (0, 0)


@needs_cc
def test_a_level_past_its_estimate_is_grown_and_the_same(monkeypatch):
    model, kernel, batch = small_batches("tla:Kip101", TLA_SMALL)
    monkeypatch.setattr(kernel_batch, "ROWS_MARGIN", 0)
    grown = []
    real = kernel_batch._LevelRows.grown

    def grow(self, *args):
        grown.append(args[0])
        return real(self, *args)

    monkeypatch.setattr(kernel_batch._LevelRows, "grown", grow)

    class Shrinking(BatchKernel):  # an estimate of no rows at all, every level
        def expand_level(self, *args, **kwargs):
            self._local.growth = 0.0
            return super().expand_level(*args, **kwargs)

    shrinking = Shrinking(kernel.library, kernel.state_bytes)
    pairs = driver_levels(shrinking, kernel, initial_rows(model, kernel, shrinking), False, 2, [])
    assert_same(pairs)
    assert len(grown) >= len(pairs) - 1


@needs_cc
def test_a_levels_rows_are_reused_only_when_nothing_holds_them():
    model, kernel, batch = small_batches("two-phase", {"RM": 4})
    rows = initial_rows(model, kernel, batch)
    held, copies, bases = [], [], []
    base = 0
    with FingerprintSet(batch, batch.fingerprints(rows)) as visited:
        while rows.shape[0]:
            gidx = np.arange(base, base + rows.shape[0], dtype=np.int64)
            base += rows.shape[0]
            _keys, _fps, rows = expand_level(batch, gidx, rows, visited, 2, True, False, False,
                                             [], ExpandStats())
            bases.append(weakref.ref(rows.base))
            if len(bases) % 3 == 0:  # every third level held (a view and what it held)
                held.append(rows[: rows.shape[0] // 2])
                copies.append(held[-1].copy())
    for view, copy in zip(held, copies, strict=True):
        assert np.array_equal(view, copy)
    reused = sum(1 for i, ref in enumerate(bases)
                 if ref() is not None and any(ref() is b() for b in bases[:i]))
    assert reused > 0


def test_a_level_file_is_written_without_pandas(tmp_path):
    """A run directory's level file is written over the arrays' own memory, without
    ``pa.array``'s import of pandas (a quarter of a second of CPU, the whole cost of
    ``--checkpoint`` on a search whose levels all ran on the driver); it reads back the same."""
    import subprocess
    import sys

    script = (
        "import sys, numpy as np\n"
        "from checker.spark.packed_step import write_level_file\n"
        f"write_level_file({str(tmp_path)!r}, 0, np.arange(2, 6, dtype=np.uint64).view(np.int64),"
        " np.arange(4, dtype=np.int64) * 7, np.full((4, 3), 9, np.uint8))\n"
        "print('pandas' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True, cwd=str(__import__("pathlib").Path(__file__).parent.parent))
    assert out.stdout.strip() == "False"
    import pyarrow.parquet as pq

    table = pq.read_table(tmp_path / "part-00000.parquet")
    assert table.column("fp").to_pylist() == [2, 3, 4, 5]
    assert table.column("key").to_pylist() == [0, 7, 14, 21]
    assert table.column("state").to_pylist() == [b"\t\t\t"] * 4


def test_a_reused_workers_heap_is_frozen_after_its_task_and_thawed_every_so_often(monkeypatch):
    """PySpark's daemon collects a reused worker's whole heap after every task: a level's task
    freezes what survives it (``gc.freeze``), in a reused worker only (never the driver), and
    every ``FROZEN_TASKS``-th task thaws it so that a frozen cycle is still freed."""
    import gc

    from checker.spark import blocks

    def task():
        yield from range(3)

    assert gc.get_freeze_count() == 0
    try:
        monkeypatch.delenv("SPARK_REUSE_WORKER", raising=False)
        assert list(blocks._gc_paused(task())) == [0, 1, 2]
        assert gc.get_freeze_count() == 0 and gc.isenabled()
        monkeypatch.setenv("SPARK_REUSE_WORKER", "1")
        monkeypatch.setattr(blocks, "_tasks_frozen", 0)
        monkeypatch.setattr(blocks, "FROZEN_TASKS", 3)
        thawed = []
        for _ in range(6):
            assert list(blocks._gc_paused(task())) == [0, 1, 2]
            thawed.append(gc.get_freeze_count() == 0)
            assert gc.isenabled()
        assert thawed == [False, False, True, False, False, True]
    finally:
        gc.unfreeze()
