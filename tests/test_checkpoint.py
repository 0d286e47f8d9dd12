"""Checkpoint and resume: an interrupted run continues to the same final counts, and a checkpoint
that is corrupt, tampered with or made for something else is refused, never resumed."""

import dataclasses
import os
import signal
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hs

from checker import checkpoint as ckpt
from checker.bfs import check
from checker.checkpoint import load
from checker.codec import Codec
from checker.result import Verdict
from checker.search import SearchOptions
from invariants.registry import for_family
from spec.errors import BadFileError, WrongModelError
from spec.two_phase import TwoPhase

INVARIANTS = list(for_family("two-phase").values())
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def counts(result):
    return (result.verdict, result.distinct_states, result.states_generated, result.depth,
            [v.length for v in result.violations])


def test_budget_then_resume_gives_the_full_counts(tmp_path):
    path = str(tmp_path / "run.ckpt")
    full = check(TwoPhase(5), SearchOptions(invariants=INVARIANTS))
    part = check(TwoPhase(5), SearchOptions(invariants=INVARIANTS, max_states=2000,
                                            checkpoint_path=path))
    assert part.verdict is Verdict.UNDETERMINED and part.checkpoint_file == path
    assert part.distinct_states < full.distinct_states
    resumed = check(TwoPhase(5), SearchOptions(invariants=INVARIANTS, checkpoint_path=path,
                                               resume_from=path))
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
        check(model, SearchOptions(invariants=INVARIANTS, stop_at_first=False, checkpoint_path=path,
                                   progress=interrupt))
    resumed = check(model, SearchOptions(invariants=INVARIANTS, stop_at_first=False,
                                         resume_from=path))
    assert (resumed.distinct_states, resumed.states_generated, resumed.depth) == (
        full.distinct_states, full.states_generated, full.depth)
    assert [v.length for v in resumed.violations] == [v.length for v in full.violations] == [3]
    assert [str(s.action) for s in resumed.violations[0].trace.steps] == [
        str(s.action) for s in full.violations[0].trace.steps]


def test_corrupt_and_foreign_checkpoints_are_refused(tmp_path):
    path = tmp_path / "run.ckpt"
    check(TwoPhase(4), SearchOptions(invariants=INVARIANTS, max_states=100,
                                     checkpoint_path=str(path)))
    data = path.read_bytes()
    with pytest.raises(WrongModelError) as refused:
        load(str(path), TwoPhase(5), SearchOptions(invariants=INVARIANTS))
    # the line names what differs, not both whole run descriptions
    assert "constants.RM: saved 4, here 5" in str(refused.value) and "\n" not in str(refused.value)
    (tmp_path / "cut.ckpt").write_bytes(data[: len(data) // 2])
    with pytest.raises(BadFileError):
        load(str(tmp_path / "cut.ckpt"), TwoPhase(4), SearchOptions(invariants=INVARIANTS))
    (tmp_path / "junk.ckpt").write_bytes(b"\x80\x04\x95 not msgpack, a pickle header")
    with pytest.raises(BadFileError):
        load(str(tmp_path / "junk.ckpt"), TwoPhase(4), SearchOptions(invariants=INVARIANTS))


# -- a checkpoint that cannot lie ------------------------------------------------------------------
def _partial(tmp_path, model=None, max_states=300, **kw):
    model = model or TwoPhase(4)
    path = tmp_path / "part.ckpt"
    part = check(model, SearchOptions(invariants=INVARIANTS, max_states=max_states,
                                      checkpoint_path=str(path), **kw))
    assert part.verdict is Verdict.UNDETERMINED and path.exists()
    return path


def _tampered(path, mutate):
    """The checkpoint with its payload changed by ``mutate`` and a checksum that fits again."""
    header, payload = ckpt.unpack(path.read_bytes())
    mutate(payload)
    out = path.with_name("tampered.ckpt")
    out.write_bytes(ckpt.pack(header, payload))
    return out


def _arr(payload, key, dtype):
    return np.frombuffer(payload[key], dtype=dtype).copy()


def _set(payload, key, array):
    payload[key] = np.asarray(array).tobytes()


def _other_state():
    return Codec(TwoPhase(5).state_types()).encode(next(iter(TwoPhase(5).init_states())))


MUTATIONS = {
    "visited reordered": lambda p: _set(p, "visited", _arr(p, "visited", "<i8")[::-1]),
    "visited with a stranger": lambda p: _set(p, "visited",
                                              np.sort(np.r_[_arr(p, "visited", "<i8")[1:],
                                                            [12345]])),
    "negative generated": lambda p: p.update(generated=-5),
    "huge generated": lambda p: p.update(generated=2**64 - 1),
    "generated below distinct": lambda p: p.update(generated=3),
    "negative depth": lambda p: p.update(depth=-1),
    "depth off by one": lambda p: p.update(depth=p["depth"] + 1),
    "emptied frontier": lambda p: p.update(frontier=[]),
    "frontier reordered": lambda p: p.update(frontier=p["frontier"][::-1]),
    "frontier state of the wrong "
    "type": lambda p: p["frontier"].__setitem__(0, Codec(()).encode((1, 2, 3))),
    "frontier state of another "
    "configuration": lambda p: p["frontier"].__setitem__(0, _other_state()),
    "frontier not decodable": lambda p: p["frontier"].__setitem__(0, b"\xc1"),
    "parent out of range": lambda p: _set(p, "log_parents",
                                          np.r_[_arr(p, "log_parents", "<i4")[:-1], [10**6]]),
    "parent in its own level": lambda p: _set(p, "log_parents",
                                              np.r_[_arr(p, "log_parents", "<i4")[:-1],
                                                   [len(_arr(p, "log_parents", "<i4")) - 2]]),
    "action id out of range": lambda p: _set(p, "log_actions",
                                             np.r_[_arr(p, "log_actions", "<i4")[:-1], [999]]),
    "actions swapped": lambda p: p.update(actions=p["actions"][::-1]),
    "violation of an unchecked invariant": lambda p: p.update(found={"NoSuchInvariant": 0}),
    "violation out of range": lambda p: p.update(found={INVARIANTS[0].name: 10**6}),
    "violation at a good state": lambda p: p.update(found={INVARIANTS[0].name: 1}),
    "negative frontier base": lambda p: p.update(frontier_base=-1),
    "elapsed not a number": lambda p: p.update(elapsed=float("nan")),
}


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_a_tampered_checkpoint_is_refused_even_with_a_good_checksum(tmp_path, name):
    path = _tampered(_partial(tmp_path), MUTATIONS[name])
    with pytest.raises(BadFileError):
        load(str(path), TwoPhase(4), SearchOptions(invariants=INVARIANTS))


def test_a_flipped_byte_anywhere_is_refused_by_the_checksum(tmp_path):
    data = _partial(tmp_path).read_bytes()
    bad = tmp_path / "bad.ckpt"
    for position in range(0, len(data), max(1, len(data) // 97)):
        bad.write_bytes(data[:position] + bytes([data[position] ^ 0x40]) + data[position + 1:])
        with pytest.raises(BadFileError):
            load(str(bad), TwoPhase(4), SearchOptions(invariants=INVARIANTS))


def test_a_three_step_violation_never_resumes_to_holds(tmp_path):
    """The worst case of the old format: a violation found, then a tampered checkpoint said
    'holds'."""
    model = TwoPhase(4, commit_guard=False)
    path = _partial(tmp_path, model, max_states=40)
    for name, mutate in MUTATIONS.items():
        bad = _tampered(path, mutate)
        try:
            result = check(model, SearchOptions(invariants=INVARIANTS, resume_from=str(bad)))
        except BadFileError:
            continue
        assert result.verdict is Verdict.VIOLATED and [v.length
                                                       for v in result.violations] == [3], name


@pytest.mark.slow  # every line it runs, cheaper fast tests run too (coverage by test)
def test_refused_checkpoint_is_one_line_and_exit_65(tmp_path):
    path = _tampered(_partial(tmp_path), MUTATIONS["visited reordered"])
    run = subprocess.run([sys.executable, "-m", "kmc.cli", "check", "two-phase", "--const", "RM=4",
                          "--quiet", "-deadlock", "--resume", str(path)], cwd=ROOT,
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 65 and "Traceback" not in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1 and "cannot be resumed" in run.stderr


# two kmc processes: about 1.4 s of CPU; tests/test_hostile_writers.py races two checkpoint writes
# fast
@pytest.mark.slow
def test_two_runs_sharing_one_checkpoint_path_both_finish(tmp_path):
    path = str(tmp_path / "shared.ckpt")
    command = [sys.executable, "-m", "kmc.cli", "check", "two-phase", "--const", "RM=5", "--quiet",
               "-deadlock", "--checkpoint", path, "--checkpoint-every", "0.001", "--trace-dir",
               str(tmp_path)]
    runs = [subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
            for _ in range(2)]
    for run in runs:
        out, err = run.communicate(timeout=120)
        assert run.returncode == 0 and "Traceback" not in err, err
    # whatever was written last is whole
    load(path, TwoPhase(5), SearchOptions(invariants=INVARIANTS))
    assert not [n for n in os.listdir(tmp_path) if n.endswith(".tmp")]


# -- interrupts at any moment ----------------------------------------------------------------------
@pytest.mark.parametrize("at", [50, 400, 900, 1500])
def test_a_real_sigint_inside_a_level_resumes_to_the_same_counts(tmp_path, at):
    """SIGINT delivered while a level is being committed (here: from inside an invariant) used to
    leave the level's successors counted twice after the resume (generated 8,514 instead of
    8,258)."""
    model = TwoPhase(4)
    full = check(model, SearchOptions(invariants=INVARIANTS))
    calls = [0]
    first = INVARIANTS[0]

    def holds(state):
        calls[0] += 1
        if calls[0] == at:
            signal.raise_signal(signal.SIGINT)
        return first.holds(state)

    path = str(tmp_path / "run.ckpt")
    with pytest.raises(KeyboardInterrupt):
        check(model,
              SearchOptions(invariants=[dataclasses.replace(first, holds=holds), *INVARIANTS[1:]],
                            checkpoint_path=path))
    resumed = check(model, SearchOptions(invariants=INVARIANTS, resume_from=path))
    assert counts(resumed) == counts(full)


def test_interrupt_resume_sequences_give_the_uninterrupted_counts(tmp_path):
    """Interrupt, resume, interrupt again, resume: every count equals the uninterrupted run's."""
    model = TwoPhase(5)
    full = check(model, SearchOptions(invariants=INVARIANTS))
    path = str(tmp_path / "run.ckpt")
    for stop_at in (3, 7, 12):
        def interrupt(progress, stop_at=stop_at):
            if progress.depth == stop_at:
                raise KeyboardInterrupt

        with pytest.raises(KeyboardInterrupt):
            check(model, SearchOptions(invariants=INVARIANTS, checkpoint_path=path,
                                       progress=interrupt, resume_from=path if stop_at != 3
                                       else None))
    resumed = check(model, SearchOptions(invariants=INVARIANTS, resume_from=path))
    assert counts(resumed) == counts(full)


# -- properties ------------------------------------------------------------------------------------
@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rm=hs.integers(2, 4), budget=hs.integers(1, 400), guard=hs.booleans())
def test_round_trip_then_resume_equals_the_full_run(tmp_path, rm, budget, guard):
    model = TwoPhase(rm, commit_guard=guard)
    options = SearchOptions(invariants=INVARIANTS)
    full = check(model, options)
    path = tmp_path / f"rt-{rm}-{budget}-{guard}.ckpt"
    part = check(model, SearchOptions(invariants=INVARIANTS, max_states=budget,
                                      checkpoint_path=str(path)))
    if not path.exists():
        assert part.verdict is not Verdict.UNDETERMINED or part.queue == 0
        return
    st = load(str(path), model, options)
    again = ckpt.loads(ckpt.dumps(model, options, st), model, options)
    assert all(np.array_equal(a, b) for a, b in zip(again.log.arrays(), st.log.arrays(),
                                                    strict=True))
    assert ((again.frontier, again.generated, again.depth, again.found)
            == (st.frontier, st.generated, st.depth, st.found))
    assert len(st.log) == part.distinct_states and st.generated == part.states_generated
    assert (counts(check(model, SearchOptions(invariants=INVARIANTS, resume_from=str(path))))
            == counts(full))


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=hs.data())
def test_any_payload_mutation_is_refused_or_resumes_to_the_same_result(tmp_path, data):
    model = TwoPhase(3, commit_guard=False)
    full = check(model, SearchOptions(invariants=INVARIANTS))
    path = tmp_path / "base.ckpt"
    if not path.exists():
        check(model, SearchOptions(invariants=INVARIANTS, max_states=20, checkpoint_path=str(path)))
    header, payload = ckpt.unpack(path.read_bytes())
    key = data.draw(hs.sampled_from(sorted(payload)))
    value = payload[key]
    if isinstance(value, bytes) and value:
        i = data.draw(hs.integers(0, len(value) - 1))
        payload[key] = value[:i] + bytes([data.draw(hs.integers(0, 255))]) + value[i + 1:]
    elif isinstance(value, list) and value:
        op = data.draw(hs.sampled_from(["drop", "dup", "swap"]))
        i = data.draw(hs.integers(0, len(value) - 1))
        if op == "drop":
            del value[i]
        elif op == "dup":
            value.insert(i, value[i])
        else:
            value[0], value[i] = value[i], value[0]
    else:
        payload[key] = data.draw(hs.one_of(hs.none(), hs.integers(-2**63, 2**64 - 1), hs.floats(),
                                           hs.text(max_size=3),
                                           hs.dictionaries(hs.text(max_size=8),
                                                           hs.integers(-3, 300), max_size=2)))
    bad = tmp_path / "mutated.ckpt"
    bad.write_bytes(ckpt.pack(header, payload))
    try:
        resumed = check(model, SearchOptions(invariants=INVARIANTS, resume_from=str(bad)))
    except BadFileError:
        return
    assert counts(resumed)[:4] == counts(full)[:4] and counts(resumed)[4] == counts(full)[4]


def test_a_parent_log_action_the_model_cannot_take_is_the_checkpoints_fault(tmp_path):
    """A well-formed checkpoint whose parent log records another action for a state outside the
    loader's sample resumes; when the violation's trace is rebuilt through that state, the run is
    refused as a bad file (exit 65), not ended with the model's "not deterministic" error (found by
    the payload fuzz above: byte 40 of log_actions)."""
    model = TwoPhase(3, commit_guard=False)
    path = tmp_path / "base.ckpt"
    check(model, SearchOptions(invariants=INVARIANTS, max_states=20, checkpoint_path=str(path)))
    header, payload = ckpt.unpack(path.read_bytes())
    actions = payload["log_actions"]
    payload["log_actions"] = actions[:40] + bytes([0]) + actions[41:]
    bad = tmp_path / "mutated.ckpt"
    bad.write_bytes(ckpt.pack(header, payload))
    with pytest.raises(BadFileError, match="records a path the model cannot take"):
        check(model, SearchOptions(invariants=INVARIANTS, resume_from=str(bad)))


def test_a_checkpoint_claiming_a_deadlock_where_there_is_none_is_refused(tmp_path):
    """A well-formed checkpoint (its checksum made again) that records a deadlock at a state with a
    successor is refused, not resumed into a false counterexample (the hostile-input fuzzer found
    this: exit 11). The same file with its true claim (none) resumes."""
    path = str(tmp_path / "run.ckpt")
    options = SearchOptions(invariants=INVARIANTS, check_deadlock=True, max_states=300,
                            checkpoint_path=path)
    part = check(TwoPhase(4), options)
    assert part.verdict is Verdict.UNDETERMINED
    with open(path, "rb") as f:
        header, payload = ckpt.unpack(f.read())
    assert payload.get("deadlock") is None
    resume = SearchOptions(invariants=INVARIANTS, check_deadlock=True, resume_from=path)
    assert load(path, TwoPhase(4), resume).deadlock is None
    payload["deadlock"] = 1  # the state after the first step: it has successors
    with open(path, "wb") as f:
        f.write(ckpt.pack(header, payload))
    with pytest.raises(BadFileError, match="records a deadlock at state 1, which has a successor"):
        load(path, TwoPhase(4), resume)


def test_a_recorded_violation_that_does_not_replay_is_refused_not_reported():
    """Every counterexample's last state is checked again once replayed (not only under --symmetry):
    a violation or deadlock recorded by a changed checkpoint or Spark run directory, at a state that
    satisfies the invariant or has a successor, is bad data (exit 65), never a report."""
    from checker.search import rebuild_trace
    from spec.errors import ExitCode

    model = TwoPhase(3)
    initial = model.init_states()[0]
    path = [(hash(initial), -1)]
    options = SearchOptions(invariants=INVARIANTS, check_deadlock=True)
    for name in ("TCConsistent", "deadlock"):
        with pytest.raises(BadFileError, match=f"the recorded {name} violation does not "
                                               "replay") as caught:
            rebuild_trace(model, path, [], options, name)
        assert caught.value.code == ExitCode.BAD_FILE == 65
    # a plain path is no claim
    assert rebuild_trace(model, path, [], options, None).initial == initial
