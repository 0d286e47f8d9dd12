"""Symmetry reduction: canonical forms are exact (every renaming of a state has the same one), the
verdicts and shortest counterexample lengths are those of the unreduced search (the Kafka model's
on its kernel, each search equal to the readable model's recorded one:
``tests.readable_reference``), and the traces found under symmetry are real behaviours of the
model."""

import random
from itertools import permutations

import pytest

from checker import bfs, parallel
from checker.result import Verdict
from checker.search import SearchOptions
from invariants.registry import for_family
from spec.kafka import symmetry as kafka_symmetry
from spec.registry import build_model
from spec.symmetry import candidate_permutations, canonical_brute_force
from spec.two_phase import TwoPhase
from tests.test_kafka_kernel import searched_on_the_kernel
from tests.test_kernel import needs_cc

TWO_PHASE = list(for_family("two-phase").values())
KAFKA = list(for_family("kafka").values())


def _reachable(model, limit):
    options = SearchOptions(max_states=limit)
    engine = bfs.LocalBFS(model, options)
    seen = []
    original = engine._check_invariants

    def collect(st, states, base):
        seen.extend(states)
        return original(st, states, base)

    engine._check_invariants = collect
    engine.run()
    return seen


def test_candidate_permutations():
    assert list(candidate_permutations([3, 1, 2])) == [(2, 0, 1)]
    assert len(list(candidate_permutations([1, 1, 1]))) == 6
    assert len(list(candidate_permutations([0, 1, 1, 0]))) == 4


def test_two_phase_canonical_is_exact():
    model = TwoPhase(4)
    rng = random.Random(7)
    for state in rng.sample(_reachable(model, 2000), 200):
        canon = model.canonical(state)
        assert canon == canonical_brute_force(state, 4, model.permute)
        for perm in permutations(range(4)):
            assert model.canonical(model.permute(state, perm)) == canon


@pytest.mark.parametrize("brokers", [2, 3])
@pytest.mark.slow  # every line it runs, cheaper fast tests run too (coverage by test)
def test_kafka_canonical_is_exact(brokers):
    model = build_model("kafka", [f"brokers={brokers}", "records=1", "epochs=2"], "kip-101")
    rng = random.Random(brokers)
    states = _reachable(model, 3000)
    for state in rng.sample(states, 150):
        canon = model.canonical(state)
        orbit = {kafka_symmetry.permute(state, perm) for perm in permutations(range(brokers))}
        assert canon in orbit  # a renaming of the state ...
        for image in orbit:  # ... and the same one for every renaming
            assert model.canonical(image) == canon


@pytest.mark.parametrize("brokers", [2, 3])
@pytest.mark.slow  # every line it runs, cheaper fast tests run too (coverage by test)
def test_kafka_transitions_commute_with_renaming(brokers):
    """The symmetry is real: the successors of a renamed state are the renamed successors (this
    also catches a broker id kept in a field that ``spec.kafka.symmetry`` does not rename)."""
    model = build_model("kafka", [f"brokers={brokers}", "records=1", "epochs=2"], "kip-279")
    rng = random.Random(brokers + 10)
    for state in rng.sample(_reachable(model, 3000), 100):
        successors = {succ for _, succ in model.successors(state)}
        for perm in permutations(range(brokers)):
            image = kafka_symmetry.permute(state, perm)
            assert ({succ for _, succ in model.successors(image)}
                    == {kafka_symmetry.permute(t, perm) for t in successors})


@pytest.mark.parametrize("rm", [3, 5])
@pytest.mark.slow  # every line it runs, cheaper fast tests run too (coverage by test)
def test_two_phase_reduction(rm):
    full = bfs.check(TwoPhase(rm), SearchOptions(invariants=TWO_PHASE))
    reduced = bfs.check(TwoPhase(rm), SearchOptions(invariants=TWO_PHASE, symmetry=True))
    assert reduced.verdict is full.verdict is Verdict.HOLDS
    assert reduced.depth == full.depth
    assert full.distinct_states > 2 * reduced.distinct_states
    assert parallel.check(TwoPhase(rm), SearchOptions(invariants=TWO_PHASE, symmetry=True),
                          2).distinct_states == (
        reduced.distinct_states)


def _check_real_trace(model, violation):
    state = violation.trace.initial
    for step in violation.trace.steps:
        assert (step.action, step.state) in list(model.successors(state))
        state = step.state
    inv = {i.name: i for i in TWO_PHASE + KAFKA}[violation.invariant]
    assert not inv.holds(state)


def test_two_phase_seeded_bug_under_symmetry():
    model = TwoPhase(4, commit_guard=False)
    full = bfs.check(model, SearchOptions(invariants=TWO_PHASE))
    reduced = bfs.check(model, SearchOptions(invariants=TWO_PHASE, symmetry=True))
    assert reduced.verdict is Verdict.VIOLATED
    assert [v.length for v in reduced.violations] == [v.length for v in full.violations] == [3]
    _check_real_trace(model, reduced.violations[0])


def _kafka(protocol, **bounds):
    """The Kafka model with these bounds and any newer optional bound at its minimum (off)."""
    from spec.registry import get_model_info

    core = {"brokers", "records", "epochs", "crashes", "inflight"}
    values = {c.name: max(0, c.minimum or 0) for c in get_model_info("kafka").constants if c.name
              not in core}
    values.update(bounds)
    return build_model("kafka", [f"{k}={v}" for k, v in values.items()], protocol)


SMALL_KAFKA = [
    # the older protocols' violations
    pytest.param({"brokers": 2, "records": 1, "epochs": 2, "crashes": 1}, id="2-brokers"),
    # three brokers, a real reduction: every protocol, 3 to 4 s each
    pytest.param({"brokers": 3, "records": 1, "epochs": 1, "crashes": 0, "inflight": 1},
                 id="3-brokers", marks=pytest.mark.slow),
]


def _protocols():
    from spec.registry import get_model_info

    return list(get_model_info("kafka").protocols)


#: 1 to 2 s each: the fast tier compares the oldest release and the newest KRaft one (2.1.0's stall
#: under symmetry: test_kafka_three_broker_counterexample_replays_to_a_concrete_trace below); the
#: whole suite every release
SYMMETRY_FAST = {"0.10.2", "kraft-4.1"}


@pytest.mark.parametrize("bounds", SMALL_KAFKA)
@pytest.mark.parametrize("protocol",
                         [p if p in SYMMETRY_FAST else pytest.param(p, marks=pytest.mark.slow)
                          for p in _protocols()])
@pytest.mark.slow  # every line it runs, cheaper fast tests run too (coverage by test)
@needs_cc
def test_kafka_same_verdicts_under_symmetry(protocol, bounds):
    model = _kafka(protocol, **bounds)
    safety = [inv for inv in KAFKA if inv.holds is not None and inv.kind == "safety"]
    # both on the kernel, each equal to the readable model's search (recorded:
    # tests.readable_reference), so the verdicts compared are the readable symmetry's
    full = searched_on_the_kernel(model, SearchOptions(invariants=safety, stop_at_first=False))
    reduced = searched_on_the_kernel(
        model, SearchOptions(invariants=safety, stop_at_first=False, symmetry=True))
    assert reduced.verdict is full.verdict
    assert ({v.invariant: v.length for v in reduced.violations}
            == {v.invariant: v.length for v in full.violations})
    assert reduced.distinct_states <= full.distinct_states
    if bounds["brokers"] == 3:
        assert reduced.distinct_states * 1.5 < full.distinct_states
    for violation in reduced.violations:
        _check_real_trace(model, violation)


@pytest.mark.slow  # every line it runs, cheaper fast tests run too (coverage by test)
def test_kafka_three_broker_counterexample_replays_to_a_concrete_trace():
    """KAFKA-7786's fence stall with three brokers: the same shortest length with and without
    symmetry, and the trace found under symmetry is a real run of the model whose last state is a
    renaming of the canonical one the search met, not that state itself (so the replay did the
    renaming)."""
    model = _kafka("2.1.0", brokers=3, records=1, epochs=2, bumps=2, crashes=0)
    stall = [inv for inv in KAFKA if inv.name == "no-fence-stall"]
    full = bfs.check(model, SearchOptions(invariants=stall))
    reduced = bfs.check(model, SearchOptions(invariants=stall, symmetry=True))
    assert reduced.distinct_states < full.distinct_states
    assert [v.length for v in reduced.violations] == [v.length for v in full.violations] == [9]
    violation = reduced.violations[0]
    _check_real_trace(model, violation)
    last = violation.trace.steps[-1].state
    assert last != model.canonical(last)
    assert (last in {kafka_symmetry.permute(model.canonical(last), p)
                     for p in permutations(range(3))})


def test_a_false_symmetry_is_caught_when_the_trace_is_replayed():
    """A property that tells ids apart breaks the reduction: the search meets the violation on a
    canonical state (the last resource manager committed), the concrete replay commits the first
    one, and the re-check of the concrete state refuses the result instead of reporting a
    counterexample that is not one."""
    from checker.invariant import Invariant
    from spec.errors import ModelError
    from spec.two_phase import COMMITTED

    last_not_committed = Invariant("last-rm-not-committed", "the last RM never commits",
                                   lambda s: s.rm_state[-1] != COMMITTED)
    model = TwoPhase(3)
    # a real violation ...
    assert bfs.check(model, SearchOptions(invariants=[last_not_committed])).violations
    # ... but not where the canonical search found it
    with pytest.raises(ModelError, match="not a symmetry"):
        bfs.check(model, SearchOptions(invariants=[last_not_committed], symmetry=True))


def test_kafka_canonical_takes_states_already_in_order_as_they_are():
    model = _kafka("3.9.1", brokers=3, records=1, epochs=1, crashes=0)
    for state in random.Random(3).sample(_reachable(model, 2000), 100):
        canon = model.canonical(state)
        # a canonical state is its own form, with no renaming
        assert model.canonical(canon) is canon


def _cli(capsys, *argv):
    from kmc.cli import main

    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_symmetry_warns_in_one_line_when_the_group_is_trivial(capsys, tmp_path):
    code, _, err = _cli(capsys, "check", "kafka", "--const", "brokers=1", "--const", "records=1",
                        "--symmetry", "--quiet", "--trace-dir", str(tmp_path))
    assert code == 0
    assert [line for line in err.splitlines() if line.strip()] == [
        "warning: --symmetry reduces nothing here: one broker has no other id to rename it to"]
    code, _, err = _cli(capsys, "check", "kafka", "--const", "brokers=3", "--const", "records=1",
                        "--symmetry", "--quiet", "--max-states", "50", "--trace-dir", str(tmp_path))
    # three brokers: no warning (the budget ends the run early)
    assert code == 20 and "warning" not in err


def test_liveness_under_symmetry_is_refused_in_one_line(capsys, tmp_path):
    code, out, err = _cli(capsys, "check", "kafka", "--const", "records=1", "--const", "crashes=0",
                          "--symmetry", "--invariant", "no-fence-stall-liveness", "--trace-dir",
                          str(tmp_path))
    assert code == 64
    assert out == ""
    lines = [line for line in err.splitlines() if line.strip()]
    assert (len(lines) == 1 and "liveness property no-fence-stall-liveness" in lines[0]
            and "Traceback" not in err)


@pytest.mark.parametrize("which", ["kafka", "two-phase"])
@pytest.mark.slow  # every line it runs, cheaper fast tests run too (coverage by test)
def test_the_symmetry_loop_keeps_the_first_occurrence_of_every_canonical_successor(which):
    """The engine's --symmetry loop skips canonicalising a successor whose own fingerprint is
    already in the level's dictionary; its dictionary must be the plain one: every successor
    canonicalised, the first occurrence of each canonical fingerprint kept, in discovery order."""
    model = (build_model("kafka", ["brokers=3", "records=1", "epochs=1", "crashes=0"], "2.1.0")
             if which == "kafka"
         else TwoPhase(4))
    frontier = [model.canonical(s) for s in _reachable(model, 3000)]
    expected = {}
    for index, state in enumerate(frontier):
        for act, succ in model.successors(state):
            image = model.canonical(succ)
            expected.setdefault(hash(image), (image, index, act))
    engine = bfs.LocalBFS(model, SearchOptions(symmetry=True))
    engine._started = 0.0
    st = bfs.SearchState()
    fresh = engine._expand(st, frontier, 0, 0)
    assert list(fresh.items()) == list(expected.items())
    assert st.generated == sum(len(list(model.successors(s))) for s in frontier)
    # the skip happened: some successors were canonical states already in the dictionary
    assert (sum(1 for s in frontier for _, t in model.successors(s) if model.canonical(t) == t)
            > len(fresh))


def test_three_brokers_the_reduced_search_meets_each_orbit_of_the_full_search_once():
    """What keeps three brokers at about 2 states in 6 (bench/orbit_sizes.py): not the canonical
    form, which leaves no orbit in pieces (the reduced search stores exactly one state for each
    orbit the unreduced search meets) and whose orbits are whole (every renaming of a stored state
    is a state of the model), but the unreduced search itself: its one initial state names broker 0
    the leader of epoch 0, so of each orbit of 6 it meets only the 2 states the renamings that fix
    broker 0 give. A symmetric start (any broker the first leader) would triple the unreduced count
    and leave the orbits as they are."""
    model = build_model("kafka", ["brokers=3", "records=1", "epochs=0", "crashes=0"], "2.1.0")
    states = _reachable(model, None)
    canonical = {}
    for state in states:
        canonical.setdefault(model.canonical(state), []).append(state)
    reduced = bfs.check(model, SearchOptions(symmetry=True))
    assert reduced.distinct_states == len(canonical)
    assert (len(states) == 2 * len(canonical)
            - sum(1 for members in canonical.values() if len(members) == 1))
    fixing_broker_0 = [(0, 1, 2), (0, 2, 1)]
    sizes = set()
    for image, members in canonical.items():
        assert (set(members) == {kafka_symmetry.permute(members[0], perm)
                                 for perm in fixing_broker_0})
        sizes.add(len({kafka_symmetry.permute(image, perm) for perm in permutations(range(3))}))
    assert sizes <= {3, 6} and 6 in sizes  # whole orbits: 6 states, 3 where two brokers look alike
