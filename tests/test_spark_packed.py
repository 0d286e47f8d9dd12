"""The executor side of Spark's kernel path in blocks (``checker.spark.packed_step``) without Spark:
its map, reduce and the driver's numbering, chained by hand over partitions as Spark would, number
every level exactly as the kernel's own level search does, at any partition count, with the
frontier's blocks in any order. The same path on Spark is in tests/test_spark_kernel.py (slow)."""

from __future__ import annotations

import ctypes
import random

import numpy as np
import pytest

from checker.kernel import load
from checker.kernel_batch import Shipment, batch_kernel
from checker.spark.packed_step import (
    POSITION_BITS,
    _ByIndexRange,
    _DedupPacked,
    _ExpandPacked,
    _frontier_of,
    _is_shipped,
    _visited_blocks,
)
from tests.test_kernel import TLA_SMALL, model_of, needs_cc

pytestmark = needs_cc


class Broadcast:
    def __init__(self, value):
        self.value = value


def kernel_levels(kernel, model):
    """Each level's fingerprints in global-index order, from the kernel's own C search."""
    lib = kernel.lib
    handle = lib.km_new(0, 0, 0)
    try:
        for state in model.init_states():
            lib.km_add_initial(handle, kernel.spec.pack(state))
        counts = (ctypes.c_int64 * 6)()
        bounds = [0]
        while True:
            lib.km_counts(handle, counts)
            if counts[2] == counts[3]:  # an empty frontier
                break
            bounds.append(int(counts[3]))
            assert lib.km_expand_level(handle) == 0
        rows = np.empty((bounds[-1], kernel.state_bytes), np.uint8)
        lib.km_get_states(handle, 0, bounds[-1], rows.ctypes.data)
    finally:
        lib.km_free(handle)
    fps = batch_kernel(Shipment.of(kernel)).fingerprints(rows)
    return [fps[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]


def packed_levels(kernel, model, partitions, shuffle_seed=None):
    """The levels as ``packed_step`` numbers them: the map over each frontier partition, the
    shipped blocks routed to their fingerprint partition, the reduce, the driver's numbering; the
    next frontier the kept candidates (or, with ``shuffle_seed``, cut into index ranges and handed
    over in a scrambled order, as a shuffle would)."""
    shipment = Shipment.of(kernel)
    batch = batch_kernel(shipment)
    rows = batch.rows(b"".join(kernel.spec.pack(s) for s in model.init_states()))
    fps = batch.fingerprints(rows)
    gidx = np.arange(fps.size, dtype=np.int64)
    frontier = [[("f", gidx, fps, rows)]] + [[] for _ in range(partitions - 1)]
    visited = {q: block for q, (_v, block) in
               ((q, b) for q, b in _visited_blocks(fps, partitions))}
    numbers = Broadcast((np.zeros(0, np.int64), 0, fps))
    levels, recent, base = [fps], [fps], fps.size
    rng = random.Random(shuffle_seed)
    while True:
        shipped = [[] for _ in range(partitions)]
        kept = []
        for j in range(partitions):
            out = list(_ExpandPacked(shipment, False, False, False, [], numbers,
                                     partitions)(iter(frontier[j])))
            kept.append([r for r in out if not _is_shipped(r)])
            for q, block in (r for r in out if _is_shipped(r)):
                shipped[q].append((q, block))
        new_fps, new_keys = [], []
        for q in range(partitions):
            for _q, block in _DedupPacked()(q, iter([(q, ("v", visited[q])), *shipped[q]])):
                if block[0] == "v":
                    visited[q] = block[1]
                elif block[0] == "n":
                    new_fps.append(block[1])
                    new_keys.append(block[2])
        keys = np.concatenate(new_keys)
        if not keys.size:
            return levels
        order = np.argsort(keys, kind="stable")
        keys, fps = keys[order], np.concatenate(new_fps)[order]
        assert np.all(keys[1:] > keys[:-1])
        levels.append(fps)
        recent = [*recent[-2:], fps]
        numbers = Broadcast((keys, base, np.concatenate(recent)))
        if shuffle_seed is None:
            frontier = kept
        else:
            bounds = np.array([base + keys.size * j // partitions
                               for j in range(1, partitions)], np.int64)
            cut = [[] for _ in range(partitions)]
            for j in range(partitions):
                for dest, block in _ByIndexRange(bounds, numbers)(iter(kept[j])):
                    cut[dest].append(block)
            for blocks in cut:
                rng.shuffle(blocks)
            frontier = cut
        base += keys.size


@pytest.mark.parametrize(("name", "constants"), [("two-phase", {"RM": 4}),
                                                 ("tla:Kip320", TLA_SMALL)])
@pytest.mark.parametrize("partitions", [1, 3])
def test_the_blocks_number_every_level_as_the_kernel_does(name, constants, partitions):
    model = model_of(name, constants)
    kernel = load(model.kernel())
    want = kernel_levels(kernel, model)
    got = packed_levels(kernel, model, partitions)
    assert len(got) == len(want) and all(np.array_equal(a, b) for a, b in zip(got, want,
                                                                             strict=True))
    # a frontier cut into index ranges, its blocks in any order: the same levels
    shuffled = packed_levels(kernel, model, partitions, shuffle_seed=7)
    assert all(np.array_equal(a, b) for a, b in zip(shuffled, want, strict=True))


def test_a_frontier_partition_is_in_global_index_order_whatever_its_blocks_order():
    width = 3
    rows = np.arange(18, dtype=np.uint8).reshape(6, width)
    keys = np.array([5 << POSITION_BITS, 7 << POSITION_BITS, 9 << POSITION_BITS], np.int64)
    numbers = (keys, 100, np.zeros(0, np.int64))
    kept = ("k", np.array([7 << POSITION_BITS, 8 << POSITION_BITS], np.int64),
            np.array([11, 12], np.int64), rows[:2])
    block = ("f", np.array([100], np.int64), np.array([13], np.int64), rows[2:3])
    gidx, fps, got = _frontier_of([kept, block], numbers)
    assert gidx.tolist() == [100, 101] and fps.tolist() == [13, 11]
    assert got.tolist() == [rows[2].tolist(), rows[0].tolist()]
