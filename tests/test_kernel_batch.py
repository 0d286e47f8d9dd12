"""The kernel a batch at a time (``checker.kernel_batch``, what the Spark executors run) is the
readable model.

On reachable states of small configurations, ``km_expand_batch``'s successors are the readable
model's, state for state, in its order, canonical under symmetry, with its action codes; each
state's violation mask is the readable invariants' verdict; the fingerprint set keeps exactly the
first occurrences; and a library shipped as bytes loads in a process that lacks it. A kernel with
one rule changed fails the same check.
"""

from __future__ import annotations

import numpy as np
import pytest

from checker import kernel as km
from checker.kernel_batch import CHUNK, BatchKernel, FingerprintSet, Shipment, batch_kernel
from invariants.registry import for_family
from tests.test_kernel import TLA_SMALL, model_of, needs_cc, reachable

CONFIGS = [("two-phase", {"RM": 4}, True), ("two-phase", {"RM": 3, "commit_guard": False}, False),
           ("tla:Kip320", TLA_SMALL, False), ("tla:Kip101", TLA_SMALL, False)]


def batch_disagreements(model, kernel: km.Kernel, states: list, symmetry: bool) -> list[str]:
    """Where one ``km_expand_batch`` call over ``states`` differs from the readable model (empty:
    nowhere)."""
    spec = kernel.spec
    batch = BatchKernel(kernel.library, kernel.state_bytes)
    rows = batch.rows(b"".join(spec.pack(s) for s in states))
    got = batch.expand(rows, symmetry)
    invariants = [inv for inv in for_family(model.family).values() if inv.name in spec.invariants]
    problems = []
    at = 0
    for i, state in enumerate(states):
        readable = list(model.successors(state))
        if got.degrees[i] != len(readable):
            problems.append(f"{state}: {got.degrees[i]} successors, readable {len(readable)}")
            continue
        for j, (act, succ) in enumerate(readable):
            want = spec.pack(model.canonical(succ) if symmetry else succ)
            if ((got.parent[at], got.position[at]) != (i, j) or spec.action(int(got.action[at]))
                != act):
                problems.append(f"{state}: successor {j} is {spec.action(int(got.action[at]))}, "
                                f"readable {act}")
            elif got.states[at].tobytes() != want:
                problems.append(f"{state}: successor {j} by {act} differs")
            at += 1
        violated = {inv.name for inv in invariants if not inv.holds(state)}
        named = {name for k, name in enumerate(spec.invariants) if got.masks[i] >> k & 1}
        if named != violated:
            problems.append(f"{state}: violates {named}, readable {violated}")
    assert np.array_equal(got.fps, batch.fingerprints(got.states))
    return problems


@needs_cc
@pytest.mark.parametrize(("name", "constants", "symmetry"), CONFIGS, ids=lambda c: str(c))
def test_the_batch_expansion_is_the_readable_model(name, constants, symmetry):
    model = model_of(name, constants)
    kernel = km.load(model.kernel())
    assert batch_disagreements(model, kernel, reachable(model, 600), symmetry) == []


@needs_cc
def test_a_batch_with_one_rule_changed_fails_the_check():
    model = model_of("two-phase", {"RM": 3})
    mutant = km.load(model.kernel(), extra_flags=("-DKM_MUTANT=1",))
    assert batch_disagreements(model, mutant, reachable(model, 600), False) != []


@needs_cc
def test_the_fingerprint_set_keeps_first_occurrences_across_batches():
    model = model_of("tla:Kip320", TLA_SMALL)
    kernel = km.load(model.kernel())
    batch = BatchKernel(kernel.library, kernel.state_bytes)
    rows = batch.rows(b"".join(kernel.spec.pack(s) for s in reachable(model, 400)))
    whole = batch.expand(rows, False)
    known = whole.fps[:25]
    expected, seen = [], set(known.tolist())
    for k, fp in enumerate(whole.fps.tolist()):
        if fp not in seen:
            seen.add(fp)
            expected.append(k)
    with FingerprintSet(batch, known) as fpset:
        parts = [batch.expand(rows[:150], False, fpset), batch.expand(rows[150:], False, fpset)]
    kept_fps = np.concatenate([p.fps for p in parts])
    kept_parents = np.concatenate([parts[0].parent, parts[1].parent + 150])
    assert kept_fps.tolist() == whole.fps[expected].tolist()
    assert kept_parents.tolist() == whole.parent[expected].tolist()
    assert len(set(kept_fps.tolist())) == kept_fps.size


@needs_cc
def test_a_shipped_library_loads_where_the_cache_lacks_it(tmp_path, monkeypatch):
    model = model_of("two-phase", {"RM": 3})
    kernel = km.load(model.kernel())
    shipment = Shipment.of(kernel)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr("checker.kernel_batch._LOADED", {})
    loaded = batch_kernel(shipment)
    assert loaded.state_bytes == kernel.state_bytes
    assert (tmp_path / "kmc" / "kernels" / shipment.name).exists()
    # a cache directory this process cannot write in (as a user whose cache is read-only): a
    # directory of its own
    import tempfile

    monkeypatch.setattr("checker.kernel_batch._LOADED", {})
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "read-only"))
    real = tempfile.mkstemp

    def mkstemp(suffix=None, prefix=None, dir=None):  # noqa: A002 (tempfile's own name)
        if dir is not None and "read-only" in str(dir):
            raise PermissionError(13, "Permission denied")
        return real(suffix=suffix, prefix=prefix, dir=dir)

    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
    assert batch_kernel(shipment).state_bytes == kernel.state_bytes


# -- the Spark executors' expansion on the kernel, without Spark (pyarrow only) --------------------


class _Broadcast:
    def __init__(self, value):
        self.value = value


def _levels(model, symmetry: bool, depth: int) -> list[list]:
    """The first ``depth`` levels of the breadth-first search, states in the stored form, in
    global-index order."""
    form = model.canonical if symmetry else (lambda s: s)
    level = list(dict.fromkeys(form(s) for s in model.init_states()))
    seen, levels = set(level), [level]
    while len(levels) < depth and level:
        fresh = []
        for state in level:
            for _, succ in model.successors(state):
                succ = form(succ)
                if succ not in seen:
                    seen.add(succ)
                    fresh.append(succ)
        levels.append(level := fresh)
    return levels


def _expand_partition(expand, fps, states, gidx, recent, pa):
    """Run one ``mapInArrow`` function over a partition given as two batches in a scrambled order:
    the candidates (key -> state bytes) and the statistics row."""
    order = np.random.default_rng(39).permutation(len(states))
    known = np.argsort(fps, kind="stable")
    expand.numbers = _Broadcast((fps[known], gidx[known], recent))
    half = len(order) // 2
    batches = [pa.RecordBatch.from_arrays([pa.array(fps[part]),
                                           pa.array([states[i] for i in part], pa.binary())],
                                          names=["fp", "state"])
               for part in (order[:half], order[half:])]
    candidates, stats = {}, None
    for out in expand(iter(batches)):
        rows = out.to_pylist()
        for row in rows:
            if row["fp"] is None:
                stats = (row["bad"], row["gen"], row["dead"])
            else:
                candidates[row["key"]] = row["state"]
    return candidates, stats


@needs_cc
@pytest.mark.parametrize(("name", "constants", "symmetry", "depth"),
                         [("two-phase", {"RM": 4, "commit_guard": False}, True, 6),
                          ("tla:Kip101", TLA_SMALL, False, 12)], ids=["two-phase", "Kip101"])
def test_the_kernel_expansion_of_a_partition_is_the_readable_one(name, constants, symmetry, depth):
    """``KernelExpand`` (packed states, the kernel's fingerprints) and ``ArrowExpand`` (msgpack,
    Python's) over the same frontier partition: the same candidates (order key -> state), states
    generated, deadlock and violations (the kernel's partition in chunks of 97 states, so its
    first-occurrence set and indices cross chunks)."""
    pa = pytest.importorskip("pyarrow")
    from checker.codec import state_column_codec
    from checker.spark.arrow_step import ArrowExpand
    from checker.spark.kernel_step import KernelExpand, kernel_checks

    model = model_of(name, constants)
    kernel = km.load(model.kernel())
    shipment = Shipment.of(kernel)
    batch = batch_kernel(shipment)
    levels = _levels(model, symmetry, depth)
    frontier, before = levels[-1], levels[-2]
    base = sum(len(level) for level in levels[:-1])
    gidx = np.arange(base, base + len(frontier), dtype=np.int64)
    invariants = [inv for inv in for_family(model.family).values()
                  if inv.name in kernel.spec.invariants]
    codec = state_column_codec(model)
    readable = ArrowExpand(model, symmetry, True, invariants, None, codec,
                           canonical=model.canonical if symmetry else None)
    py_fps = np.array([hash(s) for s in frontier], np.int64)
    py_recent = np.array([hash(s) for s in before + frontier], np.int64)
    want, want_stats = _expand_partition(readable, py_fps, [codec.encode(s) for s in frontier],
                                         gidx, py_recent, pa)
    packed = [kernel.spec.pack(s) for s in frontier]
    k_fps = batch.fingerprints(batch.rows(b"".join(packed)))
    k_recent = batch.fingerprints(batch.rows(b"".join(kernel.spec.pack(s) for s in before
                                                      + frontier)))
    compiled = KernelExpand(shipment, symmetry, True, kernel_checks(kernel, invariants), None,
                            chunk=97)
    got, got_stats = _expand_partition(compiled, k_fps, packed, gidx, k_recent, pa)
    assert want and got_stats == want_stats
    assert {key: kernel.spec.unpack(raw) for key, raw in got.items()} == {
        key: codec.decode(raw)
      for key, raw in want.items()}
    if name == "tla:Kip101":
        assert want_stats[0], (
            "the frontier should violate an invariant (the test then covers the masks)")


@needs_cc
def test_the_prefix_moves_to_spark_packed_in_the_readable_order():
    """``packed_prefix``: the kernel's C search of the local prefix's levels, every state in
    global-index order with the kernel's fingerprints; a kernel that disagrees with the readable
    prefix is one line, not a wrong run."""
    from checker.bfs import LocalBFS
    from checker.search import SearchOptions
    from checker.spark.kernel_step import packed_prefix
    from spec.errors import ModelError

    model = model_of("two-phase", {"RM": 4})
    local = LocalBFS(model, SearchOptions(symmetry=True))
    st = local._initial_level()
    for _ in range(5):
        local._expand_level(st)
    kernel = km.load(model.kernel())
    rows, fps, start = packed_prefix(kernel, model, True, st)
    levels = _levels(model, True, st.depth)
    assert rows.tobytes() == b"".join(kernel.spec.pack(s) for level in levels for s in level)
    assert start == st.frontier_base == len(rows) - len(levels[-1])
    assert (fps.tolist() == BatchKernel(kernel.library,
                                        kernel.state_bytes).fingerprints(rows).tolist())
    mutant = km.load(model.kernel(), extra_flags=("-DKM_MUTANT=1",))
    with pytest.raises(ModelError, match="disagree"):
        packed_prefix(mutant, model, True, st)


def test_the_readable_model_runs_on_spark_where_the_kernel_cannot():
    """``why_not`` per engine: Spark's blocks transport holds readable states; a Spark run directory
    holds the kernel's packed states (``checker.spark.resume`` records which), the local engine's
    checkpoints readable ones."""
    from checker.search import SearchOptions

    model = model_of("two-phase", {"RM": 3})
    assert km.why_not(model, SearchOptions(), engine="spark") is None
    assert "blocks" in km.why_not(model, SearchOptions(), engine="spark", spark_transport="blocks")
    assert km.why_not(model, SearchOptions(checkpoint_path="run"), engine="spark") is None
    assert km.why_not(model, SearchOptions(resume_from="run"), engine="spark") is None
    assert "checkpoints" in km.why_not(model, SearchOptions(checkpoint_path="run"))


def test_verbose_names_the_kernel_on_the_spark_executors():
    from types import SimpleNamespace

    from rich.console import Console

    from kmc.cli import print_path

    console = Console(record=True, width=200)
    path = {"path": "kernel", "engine": "spark", "kernel": "kernel.c", "library": "kernel-0123.so",
            "state_bytes": 43, "fingerprints": "the kernel's 64-bit hash of the packed state on "
                                               "Spark's levels"}
    print_path(console, SimpleNamespace(extra={"path": path}))
    assert ("the compiled kernel on the Spark executors (kernel.c, 43 bytes a state"
            in console.export_text())
    # how the levels moved: the executors' blocks (packed_step) or the arrow transport's DataFrames
    for levels, words in (("blocks", "levels in blocks"), ("dataframes", "levels in DataFrames")):
        console = Console(record=True, width=200)
        print_path(console, SimpleNamespace(extra={"path": {**path, "levels": levels}}))
        assert f"on the wire; {words}; library kernel-0123.so" in console.export_text()
    # where each level ran: the readable prefix, the driver's kernel (--spark-driver-below), Spark
    places = ["local"] * 3 + ["driver"] * 2 + ["spark"] * 4 + ["driver"]
    spark = {"levels": [{"engine": engine, "depth": depth}
                        for depth, engine in enumerate(places, start=2)]}
    console = Console(record=True, width=200)
    print_path(console, SimpleNamespace(extra={"path": path, "spark": spark}))
    assert "Levels: 2-4 local, 5-6 driver, 7-10 spark, 11 driver" in console.export_text()


@needs_cc
def test_an_expansion_does_not_hand_out_the_buffers_its_next_call_writes():
    """The output buffers are kept from call to call (a fresh one a call was zeroed by the system):
    what a call gave back stays as it was after the next call."""
    model = model_of("tla:Kip320", TLA_SMALL)
    kernel = km.load(model.kernel())
    batch = BatchKernel(kernel.library, kernel.state_bytes)
    rows = batch.rows(b"".join(kernel.spec.pack(s) for s in model.init_states()))
    first = batch.expand(rows, False)
    kept = (first.states.copy(), first.fps.copy(), first.parent.copy(), first.position.copy())
    second = batch.expand(first.states[:rows.shape[0]], False)  # as many states: the same buffers
    assert second.fps.size and not np.array_equal(second.fps[:kept[1].size], kept[1])
    assert np.array_equal(first.states, kept[0]) and np.array_equal(first.fps, kept[1])
    assert np.array_equal(first.parent, kept[2]) and np.array_equal(first.position, kept[3])


@needs_cc
def test_a_kernel_of_large_successor_buffers_expands_fewer_states_a_call(monkeypatch):
    """The buffers of a call hold chunk() x the successor bound x the state's bytes: within
    OUTPUT_BUDGET (a Kafka kernel's states are larger and have more successors than these)."""
    model = model_of("tla:Kip320", TLA_SMALL)
    kernel = km.load(model.kernel())
    batch = BatchKernel(kernel.library, kernel.state_bytes)
    assert batch.chunk() == CHUNK
    monkeypatch.setattr("checker.kernel_batch.OUTPUT_BUDGET", 10 * batch.max_successors
                        * batch.state_bytes)
    assert batch.chunk() == 10


@needs_cc
@pytest.mark.parametrize(("name", "constants", "depth"),
                         [("tla:Kip101", TLA_SMALL, 12), ("two-phase", {"RM": 4, "commit_guard":
                                                                        False}, 6)],
                         ids=["Kip101", "two-phase"])
def test_the_kernel_frontier_check_of_a_partition_is_the_readable_one(name, constants, depth):
    """``KernelFrontierCheck`` (packed states) and ``FrontierCheck`` (the readable invariants) over
    the same frontier partition, given in scrambled batches: for each invariant the partition's
    first violating state in global-index order, the same rows. The frontiers have several
    violating states of an invariant, and two-phase's states violating each of its two invariants
    (asserted), so a check that reports the last violating state, or loses an invariant's bit,
    fails."""
    pa = pytest.importorskip("pyarrow")
    from checker.codec import state_column_codec
    from checker.spark.arrow_step import FrontierCheck
    from checker.spark.kernel_step import KernelFrontierCheck, kernel_checks

    model = model_of(name, constants)
    kernel = km.load(model.kernel())
    shipment = Shipment.of(kernel)
    batch = batch_kernel(shipment)
    frontier = _levels(model, False, depth)[-1]
    gidx = np.arange(1000, 1000 + len(frontier), dtype=np.int64)
    invariants = [inv for inv in for_family(model.family).values()
                  if inv.name in kernel.spec.invariants]
    violating = [[i for i, s in enumerate(frontier) if not inv.holds(s)] for inv in invariants]
    assert max(len(v) for v in violating) >= 2
    assert sum(bool(v) for v in violating) >= min(2, len(invariants))
    codec = state_column_codec(model)
    packed = [kernel.spec.pack(s) for s in frontier]
    fps = batch.fingerprints(batch.rows(b"".join(packed)))

    def rows(check, states):
        order = np.random.default_rng(7).permutation(len(states))
        known = np.argsort(fps, kind="stable")
        check.numbers = _Broadcast((fps[known], gidx[known], np.zeros(0, np.int64)))
        half = len(order) // 2
        batches = [pa.RecordBatch.from_arrays([pa.array(fps[part]),
                                               pa.array([states[i] for i in part], pa.binary())],
                                              names=["fp", "state"])
                   for part in (order[:half], order[half:])]
        found = {}
        for out in check(iter(batches)):
            for row in out.to_pylist():
                found[row["index"]] = found.get(row["index"], 0) | row["bad"]
        return found

    want = rows(FrontierCheck(invariants, None, codec), [codec.encode(s) for s in frontier])
    got = rows(KernelFrontierCheck(shipment, kernel_checks(kernel, invariants), None), packed)
    assert got == want
    assert want == {int(gidx[v[0]]): sum(1 << b for b, w in enumerate(violating) if w and w[0]
                                         == v[0]) for v in violating if v}
