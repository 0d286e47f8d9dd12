"""The multi-process engine gives exactly the single-process engine's counts, parent log and
shortest counterexamples (same trace, step by step), and honours budgets, Ctrl-C and checkpoints."""

import numpy as np
import pytest

from checker import bfs, parallel
from checker.result import Verdict
from checker.search import SearchOptions
from invariants.registry import for_family
from spec.registry import build_model
from spec.two_phase import TwoPhase
from tests.test_engine import Grid

INVARIANTS = list(for_family("two-phase").values())


def _same(a, b):
    assert (a.verdict, a.distinct_states, a.states_generated, a.depth) == (
        b.verdict, b.distinct_states, b.states_generated, b.depth)
    assert [(v.invariant, v.length) for v in a.violations] == [(v.invariant, v.length) for v in b.violations]
    for va, vb in zip(a.violations, b.violations, strict=True):
        assert va.trace.initial == vb.trace.initial
        assert [(s.action, s.state) for s in va.trace.steps] == [(s.action, s.state) for s in vb.trace.steps]


@pytest.mark.parametrize("rm", [3, 4, 5, 6])
@pytest.mark.parametrize("workers", [2, 3])
def test_two_phase_counts_match(rm, workers):
    options = SearchOptions(invariants=INVARIANTS)
    single = bfs.check(TwoPhase(rm), options)
    multi = parallel.check(TwoPhase(rm), options, workers)
    assert multi.engine == "parallel" and multi.workers == workers
    _same(single, multi)


@pytest.mark.parametrize("stop_at_first", [True, False])
def test_seeded_bug_same_shortest_trace(stop_at_first):
    model = TwoPhase(5, commit_guard=False)
    options = SearchOptions(invariants=INVARIANTS, stop_at_first=stop_at_first)
    single = bfs.check(model, options)
    multi = parallel.check(model, options, 2)
    assert multi.verdict is Verdict.VIOLATED
    _same(single, multi)


def test_parent_log_is_identical():
    """Not only the counts: every state gets the same global index, parent and action."""
    model = TwoPhase(5)
    single = bfs.LocalBFS(model, SearchOptions())
    multi = parallel.ParallelBFS(model, SearchOptions(), 2)
    logs = []
    for engine in (single, multi):
        captured = {}
        original = engine._result

        def capture(st, *args, original=original, captured=captured):
            captured["log"] = st.log.arrays()
            captured["actions"] = list(st.actions.actions)
            return original(st, *args)

        engine._result = capture
        engine.run()
        logs.append(captured)
    (fa, pa, aa), (fb, pb, ab) = logs[0]["log"], logs[1]["log"]
    assert np.array_equal(fa, fb) and np.array_equal(pa, pb)
    names_a = [logs[0]["actions"][i] if i >= 0 else None for i in aa]
    names_b = [logs[1]["actions"][i] if i >= 0 else None for i in ab]
    assert names_a == names_b


def test_deadlock_and_bounds_match():
    for options in (SearchOptions(check_deadlock=True), SearchOptions()):
        _same(bfs.check(Grid(12), options), parallel.check(Grid(12), options, 2))
    _same(bfs.check(Grid(20, bound=15)), parallel.check(Grid(20, bound=15), SearchOptions(), 2))


@pytest.mark.parametrize("protocol", ["hw-truncation", "truncate-on-fetch"])
def test_kafka_counts_match(protocol):
    model = build_model("kafka", ["records=1", "epochs=1"], protocol)
    options = SearchOptions(invariants=list(for_family("kafka").values()), stop_at_first=False)
    _same(bfs.check(model, options), parallel.check(model, options, 2))


def test_budget_checkpoint_and_resume(tmp_path):
    path = str(tmp_path / "run.ckpt")
    full = bfs.check(TwoPhase(5), SearchOptions(invariants=INVARIANTS))
    part = parallel.check(TwoPhase(5), SearchOptions(invariants=INVARIANTS, max_states=2000, checkpoint_path=path), 2)
    assert part.verdict is Verdict.UNDETERMINED and part.checkpoint_file == path
    # a parallel checkpoint resumes on either engine to the same final counts
    for resume in (bfs.check, lambda m, o: parallel.check(m, o, 2)):
        resumed = resume(TwoPhase(5), SearchOptions(invariants=INVARIANTS, resume_from=path))
        assert (resumed.verdict, resumed.distinct_states, resumed.states_generated, resumed.depth) == (
            Verdict.HOLDS, full.distinct_states, full.states_generated, full.depth)


def test_interrupt_writes_a_checkpoint(tmp_path):
    path = str(tmp_path / "run.ckpt")
    model = TwoPhase(4, commit_guard=False)
    options = SearchOptions(invariants=INVARIANTS, stop_at_first=False)
    full = bfs.check(model, options)

    def interrupt(progress):
        if progress.depth == 4:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        parallel.check(model, SearchOptions(invariants=INVARIANTS, stop_at_first=False, checkpoint_path=path,
                                            progress=interrupt), 2)
    resumed = parallel.check(model, SearchOptions(invariants=INVARIANTS, stop_at_first=False, resume_from=path), 2)
    _same(full, resumed)


def test_time_budget_is_undetermined():
    result = parallel.check(Grid(400), SearchOptions(max_seconds=0.05), 2)
    assert result.verdict is Verdict.UNDETERMINED and result.reason


def test_workers_option_of_the_default_engine_runs_in_parallel():
    from checker.engines import EngineOptions

    result = bfs.run_engine(TwoPhase(3), SearchOptions(invariants=INVARIANTS), EngineOptions(workers=2))
    assert result.engine == "parallel" and result.distinct_states == 288
