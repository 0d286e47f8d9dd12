"""The frontier store and the chunked level commit: a level's states as objects, encoded, or on
disk, read back block by block, with the same counts, parent log and counterexamples (byte for
byte) at any block size and any budget, on two-phase and on a small Kafka configuration."""

import functools
import gc
import os
import weakref
from dataclasses import replace

import numpy as np
import pytest

from checker import bfs
from checker import frontier as frontier_module
from checker.frontier import FrontierStore, StatePools, state_codec
from checker.result import Verdict
from checker.search import RecordParentLog, SearchOptions
from invariants.registry import for_family
from spec.model import INLINE, Model, StateParts
from spec.registry import build_model
from spec.two_phase import TwoPhase
from traces.io import trace_to_msgpack

TWO_PHASE = list(for_family("two-phase").values())
KAFKA = list(for_family("kafka").values())


def _kafka():
    # 2 brokers, 3566 states; 0.10.2 loses a committed record after a crash (a 15-step trace)
    return build_model("kafka", ["records=1", "epochs=1", "crashes=1"], "0.10.2")


def _reachable(model, limit):
    states, level = [], list(model.init_states())
    while level and len(states) < limit:
        states.extend(level)
        level = [succ for state in level for _, succ in model.successors(state)]
    return states[:limit]


@pytest.mark.parametrize("model", [
    TwoPhase(4), _kafka(),
    build_model("kafka", ["records=2", "epochs=1", "crashes=1", "consumers=1", "acks=-1"], "3.9.1"),
    build_model("kafka", ["records=1", "epochs=1", "crashes=1", "consumers=1",
                          "consumer_inflight=1"], "2.8.1"),
    build_model("kafka", ["records=1", "epochs=1", "crashes=1", "unclean_shutdowns=1", "min_isr=2"],
                "kraft-4.1"),
], ids=["two-phase", "kafka", "kafka-with-clients", "kafka-consumer-requests", "kafka-kraft"])
def test_the_compact_encoding_gives_back_equal_states_of_the_same_classes(model):
    states = _reachable(model, 3000)
    pack, unpack = state_codec(model)
    back = unpack(pack(states))
    assert back == states
    assert [hash(s) for s in back] == [hash(s) for s in states]
    # the same classes all the way down (a plain tuple would compare and hash equal)
    assert [type(s) for s in back] == [type(s) for s in states]
    if hasattr(states[0], "brokers"):
        assert ({type(m).__name__ for s in back for m in s.network}
                >= {"FetchRequest", "FetchResponse"})
        assert all(type(m) is type(n) for s, t in zip(back, states, strict=True)
                   for m, n in zip(s.network, t.network,
                                     strict=True))
        assert all(type(r).__name__ == "Record" for s in back for b in s.brokers for r in b.log)
        assert any(b.log for s in back for b in s.brokers)
        assert all(type(c).__name__ == "Consumer" for s in back for c in s.consumers)
        assert [s.controller for s in back] == [s.controller for s in states]
        assert all(type(s.controller).__name__ == "Controller" for s in back)
    if getattr(model, "features", None) is not None and model.features.kraft:
        assert ({type(m).__name__ for s in back for m in s.network}
                >= {"AlterPartition", "AlterPartitionResponse"})


KAFKA_MODELS = {
    "kafka": _kafka,
    "kafka-3-brokers": lambda: build_model("kafka",
                                           ["brokers=3", "records=1", "epochs=1", "crashes=0"],
                                           "2.1.0"),
    "kafka-with-clients": lambda: build_model(
        "kafka", ["records=2", "epochs=1", "crashes=1", "consumers=1", "acks=-1"], "3.9.1"),
    "kafka-kraft": lambda: build_model(
        "kafka", ["records=1", "epochs=1", "crashes=1", "unclean_shutdowns=1", "min_isr=2"],
        "kraft-4.1"),
}


@pytest.mark.parametrize("which", list(KAFKA_MODELS))
@pytest.mark.slow  # every line it runs, cheaper fast tests run too (coverage by test)
def test_the_pooled_encoding_gives_back_equal_states_sharing_their_parts(which):
    model = KAFKA_MODELS[which]()
    states = _reachable(model, 3000)
    pools = StatePools(model.state_parts())
    back = [state for start in range(0, len(states), 512)
            for state in pools.decode(pools.encode(states[start:start + 512]))]
    assert back == states
    assert [hash(s) for s in back] == [hash(s) for s in states]
    assert [type(s) for s in back] == [type(s) for s in states]
    assert all(type(b) is type(c) for s, t in zip(back, states, strict=True)
               for b, c in zip(s.brokers, t.brokers, strict=True))
    assert all(type(m) is type(n) for s, t in zip(back, states, strict=True)
               for m, n in zip(s.network, t.network, strict=True))
    # each distinct broker, controller and network is one object in the states read back: the pools'
    # own
    distinct_brokers = {b for s in states for b in s.brokers}
    assert len({id(b) for s in back for b in s.brokers}) == len(distinct_brokers)
    assert len({id(s.network) for s in back}) == len({s.network for s in states})
    assert pools.entries < len(states)  # the states share their parts, or pooling would not pay


@pytest.mark.slow  # every line it runs, cheaper fast tests run too (coverage by test)
def test_a_level_finds_the_parts_of_the_level_it_expands_by_identity():
    """The next level's pools keep the parts of the frontier's pools that successors share with
    their parents and find them by id after; what is read back is the same either way, and
    ``finish`` lets go of the frontier's pools."""
    model = KAFKA_MODELS["kafka-3-brokers"]()
    states = _reachable(model, 4000)
    frontier = FrontierStore(model, keep_objects=False)
    frontier.extend(states[:1000])
    frontier.finish()
    parents = list(frontier)
    successors = [succ for state in parents for _, succ in model.successors(state)]
    alone = FrontierStore(model, keep_objects=False)
    alone.extend(successors)
    alone.finish()
    shared = FrontierStore(model, keep_objects=False, previous=frontier)
    shared.extend(successors)
    assert shared._pools._kept, "parts of the frontier's pools were found and kept"
    frontier_parts = {id(part) for values in frontier._pools._values.values() for part in values}
    assert all(id(part) in frontier_parts for part in shared._pools._kept)
    shared.finish()
    assert shared._previous is None
    assert list(shared) == list(alone) == successors


def test_pools_are_freed_with_no_garbage_collector():
    """The search runs with the garbage collector off: a level's pools (and the parts they hold)
    must go when its store goes, not at the end of the run (a reference cycle through the generated
    functions kept every level's pools alive, 60 bytes a state more at the peak)."""
    model = KAFKA_MODELS["kafka-3-brokers"]()
    states = _reachable(model, 600)
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        frontier = FrontierStore(model, keep_objects=False)
        frontier.extend(states)
        frontier.finish()
        successors = [succ for state in frontier for _, succ in model.successors(state)]
        following = FrontierStore(model, keep_objects=False, previous=frontier)
        following.extend(successors)
        following.finish()
        assert list(following) == successors
        # the pools, and their generated functions, which hold the pooled parts
        held = [weakref.ref(obj) for store in (frontier, following)
                for obj in (store._pools, store._pools._encode)]
        del frontier, following
        assert [ref() for ref in held] == [None] * 4
    finally:
        if was_enabled:
            gc.enable()


def test_a_store_encodes_blocks_once_its_pools_hold_too_much(monkeypatch):
    monkeypatch.setattr(frontier_module, "BLOCK", 64)
    # past the first block, pools hold more than half the states
    monkeypatch.setattr(frontier_module, "POOL_LIMIT", 0)
    model = _kafka()
    states = _reachable(model, 2000)
    store = FrontierStore(model, keep_objects=False)
    store.extend(states)
    store.finish()
    forms = [form for form, _, _ in store._blocks]
    assert forms[0] == "pooled" and "encoded" in forms
    assert list(store) == states


class _InlineFirstField(TwoPhase):
    """Two-phase with pooled parts, its first field inline, and the generic codec for blocks that
    cannot be pooled (a value msgpack cannot pack as it is, such as a frozenset, the generic codec
    can)."""

    encode_state, decode_state = Model.encode_state, Model.decode_state

    def state_parts(self):
        cls = type(self.init_states()[0])
        return StateParts(kinds=(INLINE,) + (0,) * (len(cls._fields) - 1), split=tuple, join=cls)


@pytest.mark.parametrize("budget", [10**9, 0])
def test_a_block_whose_inline_parts_cannot_be_packed_is_encoded_instead(monkeypatch, budget):
    monkeypatch.setattr(frontier_module, "BLOCK", 64)
    model = _InlineFirstField(4)
    states = _reachable(model, 300)
    odd = [state._replace(rm_state=frozenset(state.rm_state)) for state in states[:10]]
    store = FrontierStore(model, budget=budget, keep_objects=False)
    store.extend(states[:256] + odd)
    store.finish()
    assert list(store) == states[:256] + odd
    assert [type(s.rm_state) for s in store] == [tuple] * 256 + [frozenset] * 10
    forms = [payload[2] if form == "disk" else form for form, payload, _ in store._blocks]
    assert forms == ["pooled"] * 4 + ["encoded"]
    assert store.spilled == (budget == 0)


def test_a_kafka_state_encodes_in_a_few_bytes():
    model = _kafka()
    states = _reachable(model, 2000)
    store = FrontierStore(model, budget=10**9, keep_objects=False)
    store.extend(states)
    store.finish()
    assert store.encoded_states == len(states)
    # about 13 bytes a state once a block is compressed
    assert store.memory_bytes < 40 * len(states)


@pytest.mark.parametrize("budget,keep", [(10**9, True), (10**9, False), (0, False), (10**5, True)])
def test_a_store_reads_back_what_was_written_in_every_form(monkeypatch, budget, keep):
    monkeypatch.setattr(frontier_module, "BLOCK", 64)
    model = TwoPhase(5)
    states = _reachable(model, 1000)
    store = FrontierStore(model, budget=budget, keep_objects=keep)
    store.extend(states[:10])
    store.extend(states[10:])
    assert len(store) == len(states) and bool(store)
    assert list(store) == states  # the last, partial block is readable before finish() too
    store.finish()
    assert list(store) == states
    assert [len(b) for b in store.blocks()] == [64] * (len(states) // 64) + [len(states) % 64]
    assert store[100:300] == states[100:300] and store[990:2000] == states[990:]
    assert store.spilled == (budget == 0)
    if keep:  # objects while they fit (all of them, or the first blocks), then encoded blocks
        assert (store.encoded_states == 0 if budget == 10**9 else 0 < store.encoded_states
                < len(states))
    else:
        assert store.encoded_states == len(states)
    store.close()
    assert len(store) == 0 and list(store) == []


def test_a_store_keeps_at_most_its_object_count_as_objects(monkeypatch):
    monkeypatch.setattr(frontier_module, "BLOCK", 64)
    model = TwoPhase(5)
    states = _reachable(model, 1000)
    store = FrontierStore(model, budget=10**9, keep_objects=True, object_states=200)
    store.extend(states)
    store.finish()
    # three whole blocks fit in 200; the rest is encoded
    assert store.encoded_states == len(states) - 192
    assert list(store) == states


def _encoded_states_of_a_run(monkeypatch, model, options):
    """(the result, states the run's stores wrote pooled or encoded)."""
    encoded = []
    original = FrontierStore.finish

    def finish(self):
        encoded.append(self.encoded_states)
        return original(self)

    monkeypatch.setattr(FrontierStore, "finish", finish)
    result = bfs.check(model, options)
    monkeypatch.setattr(FrontierStore, "finish", original)
    return result, sum(encoded)


@pytest.mark.slow  # every line it runs, cheaper fast tests run too (coverage by test)
def test_the_objects_a_store_keeps_are_a_share_of_the_memory_budget(monkeypatch):
    """Pooling and encoding are for runs whose memory needs them: a run whose levels fit the object
    share of its memory budget encodes nothing; with a share of 64 states a store, the same run
    pools past them, with the same counts."""
    assert (bfs.object_states(1024) == 1024 * 2**20 * bfs.FRONTIER_OBJECT_SHARE / 2
            / frontier_module.OBJECT_BYTES)
    assert bfs.object_states(float("inf")) == float("inf")
    model, options = TwoPhase(5, commit_guard=False), SearchOptions(invariants=TWO_PHASE,
                                                                    stop_at_first=False,
                                                                     max_memory_mb=4096)
    plain, plain_encoded = _encoded_states_of_a_run(monkeypatch, model, options)
    assert plain_encoded == 0
    monkeypatch.setattr(bfs, "FRONTIER_OBJECT_SHARE", 2 * 64 * frontier_module.OBJECT_BYTES
                        / (4096 * 2**20))
    assert bfs.object_states(4096) == 64
    pooled, pooled_encoded = _encoded_states_of_a_run(monkeypatch, model, options)
    assert pooled_encoded > 0
    assert (pooled.verdict, pooled.distinct_states, pooled.states_generated, pooled.depth) == (
        plain.verdict, plain.distinct_states, plain.states_generated, plain.depth)


def _run(model, options, patches=None):
    """A local run with module settings patched; (result, parent log, traces as bytes, stores
    spilled)."""
    saved = {}
    spilled = []
    original_seal = FrontierStore._seal

    def seal(self, states):
        original_seal(self, states)
        if self.spilled:
            spilled.append(True)

    for (module, name), value in (patches or {}).items():
        saved[(module, name)] = getattr(module, name)
        setattr(module, name, value)
    FrontierStore._seal = seal
    try:
        seen = RecordParentLog()
        result = bfs.LocalBFS(model, replace(options, observer=seen)).run()
    finally:
        FrontierStore._seal = original_seal
        for (module, name), value in saved.items():
            setattr(module, name, value)
    traces = [(v.invariant, trace_to_msgpack(v.trace)) for v in result.violations]
    return result, seen.log, traces, bool(spilled)


#: FRONTIER_SHARE giving each store one block of 100 states as objects and 200 bytes more
ONE_BLOCK_SHARE = 2 * (100 * frontier_module.OBJECT_BYTES
                       + 200) / bfs.default_memory_budget_mb() / 2**20

SETTINGS = {
    "blocks of 7, encoded": {(frontier_module, "BLOCK"): 7, (bfs, "FRONTIER_OBJECTS"): False},
    "blocks of 5, on disk": {(frontier_module, "BLOCK"): 5, (bfs, "FRONTIER_SHARE"): 0.0},
    "blocks of 7, the first 14 states as objects": {(frontier_module, "BLOCK"): 7,
                                                    (bfs, "FRONTIER_OBJECT_STATES"): 14},
    # each store's budget: one block as objects and 200 bytes, so the next (encoded) blocks go to
    # disk
    "blocks of 100, objects then disk": {(frontier_module, "BLOCK"): 100,
                                         (bfs, "FRONTIER_SHARE"): ONE_BLOCK_SHARE},
}


def _same_counts_case(which):
    if which == "two-phase":
        return TwoPhase(4, commit_guard=False), SearchOptions(invariants=TWO_PHASE,
                                                              stop_at_first=False)
    return _kafka(), SearchOptions(invariants=KAFKA, stop_at_first=False, check_deadlock=True)


@functools.cache
def _plain_run(which):
    """The default frontier's run, computed once for the four settings compared with it."""
    return _run(*_same_counts_case(which))


@pytest.mark.parametrize("setting", list(SETTINGS))
@pytest.mark.parametrize("which", ["two-phase", "kafka"])
@pytest.mark.slow  # every line it runs, cheaper fast tests run too (coverage by test)
def test_same_counts_log_and_traces_at_any_block_size_and_budget(setting, which):
    model, options = _same_counts_case(which)
    plain, plain_log, plain_traces, plain_spilled = _plain_run(which)
    other, other_log, other_traces, other_spilled = _run(model, options, SETTINGS[setting])
    assert plain.violations, "a configuration with a counterexample, so that traces are compared"
    assert (other.verdict, other.distinct_states, other.states_generated, other.depth) == (
        plain.verdict, plain.distinct_states, plain.states_generated, plain.depth)
    assert other_log == plain_log
    assert other_traces == plain_traces
    assert not plain_spilled
    assert other_spilled == ("disk" in setting)


def _open_frontier_files():
    names = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            names.append(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:
            pass
    return [n for n in names if "kmc-frontier-" in n]


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="reads /proc")
@pytest.mark.slow  # every line it runs, cheaper fast tests run too (coverage by test)
def test_a_checkpoint_holds_a_frontier_that_is_on_disk_and_resumes(tmp_path, monkeypatch):
    """Every frontier block on disk; the run stops on a state budget mid-search: the checkpoint
    holds the frontier itself (it resumes after the store is gone) and no spill file stays open."""
    monkeypatch.setattr(frontier_module, "BLOCK", 16)
    monkeypatch.setattr(bfs, "FRONTIER_SHARE", 0.0)
    path = str(tmp_path / "run.ckpt")
    model = _kafka()
    full = bfs.check(model, SearchOptions(invariants=KAFKA, stop_at_first=False))
    part = bfs.check(model, SearchOptions(invariants=KAFKA, stop_at_first=False, max_states=1500,
                                          checkpoint_path=path))
    assert part.verdict is Verdict.VIOLATED or part.reason
    assert part.checkpoint_file == path and part.queue > 16
    assert _open_frontier_files() == []
    assert os.listdir(tmp_path) == ["run.ckpt"]  # the spill files were anonymous
    resumed = bfs.check(model, SearchOptions(invariants=KAFKA, stop_at_first=False,
                                             resume_from=path))
    assert (resumed.distinct_states, resumed.states_generated, resumed.depth) == (
        full.distinct_states, full.states_generated, full.depth)
    assert [trace_to_msgpack(v.trace) for v in resumed.violations] == [
        trace_to_msgpack(v.trace) for v in full.violations]


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="reads /proc")
def test_an_abandoned_level_leaves_the_search_state_and_no_file(tmp_path, monkeypatch):
    """A budget running out in the middle of a level (here: on the 40th look at the clock) abandons
    it: the checkpoint is of whole levels, resumes to the full counts, and no spill file stays
    open."""
    monkeypatch.setattr(frontier_module, "BLOCK", 8)
    monkeypatch.setattr(bfs, "FRONTIER_SHARE", 0.0)
    monkeypatch.setattr(bfs, "_CHECK_EVERY", 16)
    looks = []
    original = bfs.LocalBFS._check_budgets

    def check_budgets(self, st, generated, pending):
        looks.append(st.depth)
        if len(looks) == 40:
            raise bfs.BudgetExceeded("time budget of 0 s ran out (test)")
        return original(self, st, generated, pending)

    model = TwoPhase(5)
    full = bfs.check(model, SearchOptions(invariants=TWO_PHASE))
    monkeypatch.setattr(bfs.LocalBFS, "_check_budgets", check_budgets)
    path = str(tmp_path / "run.ckpt")
    part = bfs.check(model, SearchOptions(invariants=TWO_PHASE, checkpoint_path=path,
                                          max_seconds=10**6))
    assert part.verdict is Verdict.UNDETERMINED and part.checkpoint_file == path
    assert _open_frontier_files() == []
    monkeypatch.setattr(bfs.LocalBFS, "_check_budgets", original)
    resumed = bfs.check(model, SearchOptions(invariants=TWO_PHASE, resume_from=path))
    assert (resumed.verdict, resumed.distinct_states, resumed.states_generated, resumed.depth) == (
        full.verdict, full.distinct_states, full.states_generated, full.depth)


def test_the_visited_set_merges_in_place_whatever_the_block():
    from checker import visited

    rng = np.random.default_rng(5)
    # (small sets are inserted by copying: COPY_BELOW 0 makes every insertion merge in place; None
    # copies)
    for move_block, copy_below in ((1, 0), (3, 0), (1 << 18, 0), (None, 1 << 20)):
        saved = visited.MOVE_BLOCK, visited.COPY_BELOW
        visited.MOVE_BLOCK, visited.COPY_BELOW = move_block or saved[0], copy_below
        try:
            seen = visited.FingerprintSet()
            level = visited.LevelFingerprints()
            expected: set[int] = set()
            for _ in range(30):
                batch = np.unique(rng.integers(-500, 500, size=40))
                batch = batch[~seen.contains(batch)]
                rng.shuffle(batch)
                level.add(batch[~level.contains(batch)])
                seen.add(batch)
                expected |= set(batch.tolist())
                assert seen.array.tolist() == sorted(expected) == level.sorted().tolist()
        finally:
            visited.MOVE_BLOCK, visited.COPY_BELOW = saved


def test_pooled_parts_repeated_from_state_to_state_or_none_are_read_back():
    """The pooled encoding remembers each position's part of the previous state (siblings share
    parts): a part that is the same object as the previous state's, an equal one that is another
    object, and a pooled part that is None (the first state's look-up must not take it for the
    remembered one) all read back as written."""

    class Pair(tuple):
        pass

    def split(state):
        return tuple(state)

    parts = StateParts(kinds=(0, 0, INLINE), split=split, join=lambda a, b, n: Pair((a, b, n)))
    pools = StatePools(parts)
    shared = (1, 2)
    states = [Pair((None, shared, 0)), Pair((None, shared, 1)), Pair(((1, 2), None, 2)),
              Pair((shared, (1, 2), 3)), Pair(((3,), (3,), 4)), Pair((None, None, 5))]
    back = pools.decode(pools.encode(states))
    assert back == states
    assert [tuple(s) for s in back] == [tuple(s) for s in states]
