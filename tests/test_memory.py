"""Memory: the visited set takes 8 bytes a distinct state in memory and the parent pointers 16 on
disk (24 in memory when they are kept there), and a run that outgrows its memory budget stops as
undetermined with a checkpoint (never an out-of-memory kill), from which it resumes to the full
counts."""

import functools
import os
import shutil
import tempfile
import time
from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest

from checker import bfs, parallel
from checker.result import Verdict
from checker.search import RecordParentLog, SearchOptions
from invariants.registry import for_family
from kmc.cli import main
from spec.two_phase import TwoPhase

INVARIANTS = list(for_family("two-phase").values())


@pytest.mark.parametrize("on_disk", [True, False])
def test_visited_and_parents_take_8_bytes_a_state_in_memory_and_16_on_disk(monkeypatch, on_disk):
    monkeypatch.setattr(bfs, "PARENTS_ON_DISK", on_disk)
    seen = RecordParentLog()
    result = bfs.LocalBFS(TwoPhase(5), SearchOptions(observer=seen)).run()
    memory, disk = (seen.state.visited.array.nbytes + seen.state.log.nbytes(),
                    seen.state.log.disk_bytes())
    if on_disk:  # the default: only the visited set stays in memory
        assert (memory, disk) == (8 * result.distinct_states, 16 * result.distinct_states)
    else:
        assert (memory, disk) == (24 * result.distinct_states, 0)


@functools.cache
def _full_two_phase_6():
    """The reference run both engines' resumed runs are compared with, computed once."""
    return bfs.check(TwoPhase(6), SearchOptions(invariants=INVARIANTS))


# the local engine's budget: every line it runs, cheaper fast tests run too (coverage by test)
@pytest.mark.parametrize("engine", [pytest.param("local", marks=pytest.mark.slow), "parallel"])
def test_tiny_memory_budget_gives_undetermined_and_a_checkpoint(tmp_path, monkeypatch, engine):
    monkeypatch.chdir(tmp_path)
    options = SearchOptions(invariants=INVARIANTS, max_memory_mb=1)
    if engine == "local":
        result = bfs.check(TwoPhase(6), options)
    else:
        result = parallel.check(TwoPhase(6), options, 2)
    assert result.verdict is Verdict.UNDETERMINED
    assert "memory budget" in result.reason
    # no --checkpoint given: the default place, so that the work done is not lost
    assert result.checkpoint_file == os.path.join("kmc-checkpoints", "two-phase.ckpt")
    assert (tmp_path / result.checkpoint_file).stat().st_size > 0
    resumed = bfs.check(TwoPhase(6),
                        SearchOptions(invariants=INVARIANTS, resume_from=result.checkpoint_file))
    full = _full_two_phase_6()
    assert resumed.verdict is Verdict.HOLDS
    assert (resumed.distinct_states, resumed.states_generated, resumed.depth) == (
        full.distinct_states, full.states_generated, full.depth)


def test_memory_budget_uses_the_checkpoint_option(tmp_path, capsys):
    path = tmp_path / "big.ckpt"
    code = main(["check", "two-phase", "--const", "RM=6", "--max-memory", "1", "--checkpoint",
                 str(path), "--quiet"])
    assert code == 20
    assert path.stat().st_size > 0
    out = capsys.readouterr().out
    assert "memory budget" in out and "not a pass" in out


@pytest.mark.parametrize("guard", [True, False])
@pytest.mark.slow  # every line it runs, cheaper fast tests run too (coverage by test)
def test_dropping_visited_candidates_early_changes_nothing(monkeypatch, guard):
    """The level dictionary sheds already-visited successors as it grows: same counts, same log."""
    model = TwoPhase(5, commit_guard=guard)
    options = SearchOptions(invariants=INVARIANTS, stop_at_first=False)

    def run():
        seen = RecordParentLog()
        result = bfs.LocalBFS(model, replace(options, observer=seen)).run()
        return result, seen.log

    plain, plain_log = run()
    monkeypatch.setattr(bfs, "_PRUNE_AT", 64)
    monkeypatch.setattr(bfs, "_CHECK_EVERY", 64)
    pruned, pruned_log = run()
    assert (pruned.distinct_states, pruned.states_generated, pruned.depth) == (
        plain.distinct_states, plain.states_generated, plain.depth)
    assert pruned_log == plain_log
    assert ([(v.invariant, v.length) for v in pruned.violations]
            == [(v.invariant, v.length) for v in plain.violations])


def test_parent_log_spills_to_disk_with_the_same_records():
    import numpy as np

    from checker.visited import ParentLog

    log = ParentLog()
    log.append(np.array([5, 7], np.int64), np.array([-1, 0], np.int32), np.array([-1, 3], np.int32))
    log.spill()
    log.append(np.array([9], np.int64), np.array([1], np.int32), np.array([4], np.int32))
    assert log.spilled and len(log) == 3 and log.nbytes() == 0 and log.disk_bytes() == 48
    fps, parents, actions = log.arrays()
    assert (fps.tolist() == [5, 7, 9] and parents.tolist() == [-1, 0, 1] and actions.tolist()
            == [-1, 3, 4])
    assert log.path_to(2) == [(5, -1), (7, 3), (9, 4)]


@pytest.mark.parametrize("guard", [True, False])
@pytest.mark.slow  # every line it runs, cheaper fast tests run too (coverage by test)
def test_a_run_past_half_its_memory_budget_spills_and_gives_the_same_result(monkeypatch, guard):
    """The parent log on disk from the first level on: same counts, parent log and traces."""
    model = TwoPhase(5, commit_guard=guard)
    options = SearchOptions(invariants=INVARIANTS, stop_at_first=False)

    def run():
        recorder = RecordParentLog()
        result = bfs.LocalBFS(model, replace(options, observer=recorder)).run()
        return result, {"log": recorder.log, "spilled": recorder.spilled}

    monkeypatch.setattr(bfs, "PARENTS_ON_DISK", False)
    plain, plain_seen = run()
    monkeypatch.setattr(bfs, "SPILL_AT", 0.0)
    spilled, spilled_seen = run()
    assert spilled_seen["spilled"] and not plain_seen["spilled"]
    assert spilled_seen["log"] == plain_seen["log"]
    assert (spilled.verdict, spilled.distinct_states, spilled.states_generated, spilled.depth) == (
        plain.verdict, plain.distinct_states, plain.states_generated, plain.depth)
    assert [(v.invariant, v.trace.steps) for v in spilled.violations] == [
        (v.invariant, v.trace.steps) for v in plain.violations]


def test_under_memory_pressure_the_level_dictionary_sheds_visited_states_more_often(monkeypatch):
    """Past SPILL_AT the engine prunes at _PRUNE_AT_UNDER_PRESSURE: same counts and parent log."""
    model = TwoPhase(5, commit_guard=False)
    options = SearchOptions(invariants=INVARIANTS, stop_at_first=False)

    original_drop = bfs._drop_visited

    def run():
        recorder = RecordParentLog()
        engine = bfs.LocalBFS(model, replace(options, observer=recorder))
        seen = {}

        def counting_drop(*args):
            seen["drops"] = seen.get("drops", 0) + 1
            return original_drop(*args)

        monkeypatch.setattr(bfs, "_drop_visited", counting_drop)
        result = engine.run()
        # once past SPILL_AT, the run stays so
        seen.update(log=recorder.log, pressure=engine.under_pressure)
        return result, seen

    monkeypatch.setattr(bfs, "_CHECK_EVERY", 64)
    plain, plain_seen = run()
    monkeypatch.setattr(bfs, "SPILL_AT", 0.0)
    monkeypatch.setattr(bfs, "_PRUNE_AT_UNDER_PRESSURE", 64)
    pressed, pressed_seen = run()
    assert pressed_seen["pressure"] and not plain_seen["pressure"]
    assert pressed_seen.get("drops", 0) > plain_seen.get("drops", 0)
    assert pressed_seen["log"] == plain_seen["log"]
    assert (pressed.distinct_states, pressed.states_generated, pressed.depth) == (
        plain.distinct_states, plain.states_generated, plain.depth)


def _levels_in_process(model, options, workers, on_expanded):
    """The parallel engine's rounds run in this process, worker after worker, on ``workers``
    in-process workers (the parent's own work, the level numbering, as ``ParallelBFS`` does without
    rebalancing); calls ``on_expanded(workers, frontier_levels)`` after each expand round. Returns
    the distinct states."""
    engine = bfs.LocalBFS(model, options)
    st = engine._initial_level()
    exchange = tempfile.mkdtemp(prefix="kmc-test-exchange-")
    frontier = list(st.frontier)
    cuts = [len(frontier) * w // workers for w in range(workers + 1)]
    levels = [np.array(st.log.arrays()[0][st.frontier_base:], np.int64)]
    crew = [parallel._Worker(None, w, workers, exchange, model, options,
                             frontier[cuts[w]:cuts[w + 1]], st.visited.array, levels[-1], st.depth,
                             time.monotonic(), SimpleNamespace(value=0))
            for w in range(workers)]
    distinct, base, sizes = len(st.log), st.frontier_base, [cuts[w + 1] - cuts[w]
                                                            for w in range(workers)]
    try:
        while sum(sizes):
            starts = base + np.concatenate([[0], np.cumsum(sizes)])
            for w, worker in enumerate(crew):
                worker.do_expand(int(starts[w]), st.depth, [], False)
            on_expanded(crew, levels)
            for worker in crew:
                worker.do_dedup()
            levels.append(np.sort(np.concatenate([worker._won for worker in crew])))
            sizes = [worker.do_commit()[1] for worker in crew]
            base = distinct
            distinct += sum(sizes)
    finally:
        for worker in crew:
            worker.part.close()
            worker.log.close()
        shutil.rmtree(exchange, ignore_errors=True)
    return distinct


def test_parallel_workers_keep_a_level_compact_and_drop_what_other_shards_visited(monkeypatch):
    """What a worker keeps a state, checked on its own data structures (not a timing): the part and
    the level's candidates are frontier stores, encoded past the worker's share of the object states
    (the engine used to keep both as lists of objects, whatever the level's size); no candidate is a
    state any shard committed at the last two levels (the engine used to keep another shard's
    visited successors as objects until their owner dropped them); the parent log is on disk (it was
    16 bytes a state in the workers' memory); and the counts are the single process's."""
    # 128 a worker: every large level is encoded
    monkeypatch.setattr(bfs, "FRONTIER_OBJECT_STATES", 256)
    model, options = TwoPhase(5), SearchOptions(invariants=INVARIANTS)
    seen = {"encoded": 0, "largest": 0}

    def on_expanded(crew, levels):
        recent = np.concatenate(levels[-2:])
        for worker in crew:
            candidates = worker._candidates
            assert (isinstance(worker.part, parallel.FrontierStore)
                    and isinstance(candidates, parallel.FrontierStore))
            assert candidates._objects <= 128 and worker.part._objects <= 128
            # another shard's recent states are not kept
            assert not np.isin(worker._level_fps, recent).any()
            assert worker.log.nbytes() == 0
            seen["encoded"] += candidates.encoded_states
            seen["largest"] = max(seen["largest"], len(candidates))

    distinct = _levels_in_process(model, options, 2, on_expanded)
    assert (distinct
            == bfs.LocalBFS(model, SearchOptions(invariants=INVARIANTS)).run().distinct_states)
    assert seen["largest"] > 1000 and seen["encoded"] > 0


def test_a_worker_lets_go_of_the_part_it_expanded_before_it_builds_the_next(monkeypatch):
    """At the commit round a worker held three levels' stores at once (the part it had expanded, the
    candidates and the part being built from them), which set its peak. The expanded part is closed
    first now: when the next part's store is made, the worker's current part is empty and holds no
    pools; the counts are the single process's."""
    # pooled levels: the pools are what the order saves
    monkeypatch.setattr(bfs, "FRONTIER_OBJECT_STATES", 256)
    model, options = TwoPhase(5), SearchOptions(invariants=INVARIANTS)
    made = {"in_commit": 0, "held": 0}
    original_store, original_commit = parallel._Worker._store, parallel._Worker.do_commit
    committing = []

    def store(worker, *args, **kwargs):
        if committing:
            made["in_commit"] += 1
            part = worker.part
            if len(part) or part._blocks or part._pools is not None:
                made["held"] += 1
        return original_store(worker, *args, **kwargs)

    def commit(worker):
        committing.append(worker)
        try:
            return original_commit(worker)
        finally:
            committing.pop()

    monkeypatch.setattr(parallel._Worker, "_store", store)
    monkeypatch.setattr(parallel._Worker, "do_commit", commit)
    distinct = _levels_in_process(model, options, 2, lambda crew, levels: None)
    assert (distinct
            == bfs.LocalBFS(model, SearchOptions(invariants=INVARIANTS)).run().distinct_states)
    assert made["in_commit"] > 10 and made["held"] == 0
