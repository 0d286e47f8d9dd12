"""Checkpoint and resume: an interrupted run continues to the same final counts."""

import pytest

from checker.bfs import check
from checker.checkpoint import load
from checker.errors import BadFileError, WrongModelError
from checker.result import Verdict
from checker.search import SearchOptions
from invariants.registry import for_family
from spec.two_phase import TwoPhase

INVARIANTS = list(for_family("two-phase").values())


def test_budget_then_resume_gives_the_full_counts(tmp_path):
    path = str(tmp_path / "run.ckpt")
    full = check(TwoPhase(5), SearchOptions(invariants=INVARIANTS))
    part = check(TwoPhase(5), SearchOptions(invariants=INVARIANTS, max_states=2000, checkpoint_path=path))
    assert part.verdict is Verdict.UNDETERMINED and part.checkpoint_file == path
    assert part.distinct_states < full.distinct_states
    resumed = check(TwoPhase(5), SearchOptions(invariants=INVARIANTS, checkpoint_path=path, resume_from=path))
    assert resumed.verdict is Verdict.HOLDS
    assert (resumed.distinct_states, resumed.states_generated, resumed.depth) == (
        full.distinct_states, full.states_generated, full.depth)


def test_ctrl_c_writes_a_checkpoint_and_resume_finds_the_same_shortest_trace(tmp_path):
    path = str(tmp_path / "run.ckpt")
    model = TwoPhase(4, commit_guard=False)
    full = check(model, SearchOptions(invariants=INVARIANTS, stop_at_first=False))
    calls = []

    def interrupt(progress):
        calls.append(progress)
        if progress.depth == 4:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        check(model, SearchOptions(invariants=INVARIANTS, stop_at_first=False, checkpoint_path=path, progress=interrupt))
    resumed = check(model, SearchOptions(invariants=INVARIANTS, stop_at_first=False, resume_from=path))
    assert (resumed.distinct_states, resumed.states_generated, resumed.depth) == (
        full.distinct_states, full.states_generated, full.depth)
    assert [v.length for v in resumed.violations] == [v.length for v in full.violations] == [3]
    assert [str(s.action) for s in resumed.violations[0].trace.steps] == [
        str(s.action) for s in full.violations[0].trace.steps]


def test_corrupt_and_foreign_checkpoints_are_refused(tmp_path):
    path = tmp_path / "run.ckpt"
    check(TwoPhase(4), SearchOptions(invariants=INVARIANTS, max_states=100, checkpoint_path=str(path)))
    data = path.read_bytes()
    with pytest.raises(WrongModelError):
        load(str(path), TwoPhase(5), SearchOptions(invariants=INVARIANTS))
    (tmp_path / "cut.ckpt").write_bytes(data[: len(data) // 2])
    with pytest.raises(BadFileError):
        load(str(tmp_path / "cut.ckpt"), TwoPhase(4), SearchOptions(invariants=INVARIANTS))
    (tmp_path / "junk.ckpt").write_bytes(b"\x80\x04\x95 not msgpack, a pickle header")
    with pytest.raises(BadFileError):
        load(str(tmp_path / "junk.ckpt"), TwoPhase(4), SearchOptions(invariants=INVARIANTS))
