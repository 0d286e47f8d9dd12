"""Dead-message reduction (``--reduce dead``, ``checker.dead``, ``spec.kafka.dead``): the proof
obligations of the reduction checked on every reachable state of small configurations of each kind
of row, a mutant that drops a live answer caught by them and by the verdicts, the full search's
verdict on matrix cells (the reduced searches on the kernel, each equal to the readable model's,
recorded by ``python3 -m tests.readable_reference``), counterexamples that replay on the unreduced
model, ``--shortest``, the engines and the refusals."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter

import pytest

import spec.kafka  # noqa: F401 - registers the model and its invariants
from checker import bfs, engines
from checker.result import Verdict
from checker.search import SearchOptions
from invariants.registry import for_family
from kmc.cli import main
from kmc.matrix.run import MatrixOptions, run_matrix
from spec.kafka import dead as dead_module
from spec.kafka.state import (
    ALTER_PARTITION_RESPONSE,
    FENCED_LEADER_EPOCH,
    FETCH,
    FETCH_RESPONSE,
    OFFSETS_FOR_LEADER_EPOCH_RESPONSE,
)
from spec.registry import build_model

# the docs' matrix table: kmc matrix's output
from tests.matrix_table import documented_matrix as readme_matrix
from tests.test_kafka_kernel import searched_on_the_kernel
from tests.test_kernel import needs_cc
from tests.test_symmetry import _reachable
from traces.replay import replay_trace

KAFKA = for_family("kafka")


def _violated(protocol: str, consts: list[str], invariant: str, **options):
    model = build_model("kafka", consts, protocol)
    result = engines.run(model, SearchOptions(invariants=[KAFKA[invariant]], **options))
    assert result.verdict is Verdict.VIOLATED
    return model, result


def reachable(model, max_states: int) -> list:
    """The unreduced search's states (its first levels up to ``max_states``)."""
    return _reachable(model, max_states)


def obligations(model, states: list) -> list[str]:
    """Every way the model's dead messages break the reduction's argument (``spec.kafka.dead``) on
    ``states``: a dead message whose delivery is not a no-op; one that a step leaves in flight
    alive; a step of a state that the state without its dead messages cannot take to the same
    reduced successor (a dead message that enables or changes a step); a violated invariant that
    holds without the dead messages. Empty: none found."""
    reducer = model.dead_messages()
    reduce = reducer.reduce
    invariants = [inv for name, inv in KAFKA.items() if name not in model.matrix_excluded
                  and inv.holds is not None]
    failures = []
    for s in states:
        dead = [m for m in s.network if reducer.dead(s, m)]
        if not dead:
            continue
        succs = model.successors(s)
        removed = []
        for m in dead:
            network = list(s.network)
            network.remove(m)
            without = s.with_(network=tuple(network))
            removed.append(without)
            if not any(t == without for _, t in succs):
                failures.append(f"{m} is not delivered as a no-op in {s}")
        r = reduce(s)
        from_reduced = {(act, reduce(t)) for act, t in model.successors(r)}
        for act, t in succs:
            if t in removed:
                continue
            left = Counter(t.network)
            for m in dead:
                if left[m] >= Counter(s.network)[m] and not reducer.dead(t, m):
                    failures.append(f"{m} is dead in a state and alive after {act}")
            if (act, reduce(t)) not in from_reduced:
                failures.append(f"{act} of a state with dead messages has no counterpart without "
                                "them")
        for inv in invariants:
            if not inv.holds(s) and inv.holds(r):
                failures.append(f"{inv.name} is violated with the dead messages and holds without "
                                "them")
    return failures


#: one configuration a kind of row (``spec.kafka.dead``'s classes): no fencing (0.10.2: retried
#: NOT_LEADER answers only), KIP-279 without fencing (2.0.1), fencing without KAFKA-7786's fix
#: (2.1.0: every no-op fetch answer dead), with it (2.2.0: and the OffsetsForLeaderEpoch answers of
#: another epoch), truncate-on-fetch without and with KAFKA-18991's fix (2.8.0, 3.9.1); crashes,
#: bounces and controlled shutdowns where the bounds allow them. Three in the fast tier (about 10 s
#: of CPU together), the others in the slow one
OBLIGATION_ROWS = [
    ("2.1.0", ["records=1", "epochs=2", "crashes=1"]),
    ("2.2.0", ["records=1", "epochs=1", "crashes=0", "bumps=1", "shutdowns=1", "bounces=1"]),
    ("3.9.1", ["records=1", "epochs=2", "crashes=1"]),
    *[pytest.param(protocol, consts, marks=pytest.mark.slow) for protocol, consts in (
        ("0.10.2", ["records=1", "epochs=2", "crashes=1"]),
        ("2.0.1", ["records=1", "epochs=2", "crashes=1"]),
        ("2.1.0", ["records=1", "epochs=2", "crashes=0", "bumps=2"]),
        ("2.2.0", ["records=1", "epochs=2", "crashes=1"]),
        ("2.8.0", ["records=1", "epochs=2", "crashes=1"]),
    )],
]


#: the goal configuration's row with three brokers (the first levels: its 2,105,961 orbits are out
#: of a test's reach)
OBLIGATION_ROWS.append(pytest.param("2.1.0", ["brokers=3", "records=1", "crashes=0"],
                                    marks=pytest.mark.slow))

#: the KRaft rows (classes 1, 3 and 5): kraft-3.5 (no KAFKA-18991 fix: its fetch answers of another
#: epoch are live) and kraft-4.1 (the fix, the ELR, clean shutdown detection) at the durability
#: columns' bounds (an unclean shutdown, an AlterPartition, a crash) in the fast tier (about 3 s of
#: CPU together); in the slow one kraft-3.3, both rows with three brokers at Last Replica Standing's
#: bounds, and the other KRaft faults (lost AlterPartition answers, a running broker fenced,
#: controlled and clean shutdowns, metadata lag, bumps)
_KRAFT_DURABILITY = ["records=1", "epochs=2", "crashes=1", "unclean_shutdowns=1", "alters=1",
                     "min_isr=2"]
_LAST_REPLICA_STANDING = ["brokers=3", "acks=-1", "min_isr=2", "unclean_shutdowns=1"]
OBLIGATION_ROWS += [
    ("kraft-3.5", _KRAFT_DURABILITY),
    ("kraft-4.1", _KRAFT_DURABILITY),
    *[pytest.param(protocol, consts, marks=pytest.mark.slow) for protocol, consts in (
        ("kraft-3.3", _KRAFT_DURABILITY),
        ("kraft-3.5", _LAST_REPLICA_STANDING),
        ("kraft-4.1", _LAST_REPLICA_STANDING),
        ("kraft-3.5", ["records=2", "epochs=3", "crashes=1", "alters=2", "alter_losses=1",
                       "fences=1", "metadata_lag=1", "bumps=1"]),
        ("kraft-4.1", ["records=2", "epochs=2", "crashes=1", "alters=2", "alter_losses=1",
                       "fences=1", "clean_shutdowns=1", "shutdowns=1"]),
    )],
]


@pytest.mark.parametrize("protocol,consts", OBLIGATION_ROWS)
@pytest.mark.slow  # every line it runs, cheaper fast tests run too (coverage by test)
def test_dead_messages_keep_the_reductions_obligations(protocol, consts):
    model = build_model("kafka", consts, protocol)
    states = reachable(model, 6000)
    # it drops messages
    assert sum(1 for s in states if s.network != model.dead_messages().reduce(s).network) > 100
    assert obligations(model, states) == []


def _mutant_dead(monkeypatch):
    """A mutant that also calls live answers dead: a FENCED_LEADER_EPOCH OffsetsForLeaderEpoch
    answer, which 2.1.0 applies (it removes the partition from the fetcher: KAFKA-7786's stall)."""
    original = dead_module.DeadMessages.dead

    def dead(self, s, m):
        if m.kind == OFFSETS_FOR_LEADER_EPOCH_RESPONSE and m.error == FENCED_LEADER_EPOCH:
            return True
        return original(self, s, m)

    monkeypatch.setattr(dead_module.DeadMessages, "dead", dead)


def test_the_obligations_and_the_verdicts_catch_a_live_answer_called_dead(monkeypatch):
    consts = ["records=1", "epochs=2", "crashes=0", "bumps=2"]
    model = build_model("kafka", consts, "2.1.0")
    states = reachable(model, 6000)
    options = SearchOptions(invariants=[KAFKA["no-fence-stall"]], reduce="dead")
    assert bfs.check(model, options).verdict is Verdict.VIOLATED
    _mutant_dead(monkeypatch)
    assert any("not delivered as a no-op" in f for f in obligations(model, states))
    # KAFKA-7786 lost: what the verdict tests compare
    assert bfs.check(model, options).verdict is Verdict.HOLDS


def _kraft_18991_mutant(monkeypatch):
    """A mutant that calls the KRaft rows' no-op fetch answers dead also without KAFKA-18991's fix
    (kraft-3.5): an answer the follower drops now is taken once it is back at the same leader and
    offset in a newer epoch (3.5.0 ``AbstractFetcherThread.processFetchRequest`` checks the fetch
    offset, not the request's leader epoch)."""
    original = dead_module.DeadMessages.dead

    def dead(self, s, m):
        if m.kind == FETCH_RESPONSE:
            return original(self, s, m) or self._noop(s, m)
        return original(self, s, m)

    monkeypatch.setattr(dead_module.DeadMessages, "dead", dead)


@pytest.mark.slow  # every line it runs, cheaper fast tests run too (coverage by test)
def test_the_obligations_and_the_verdicts_catch_a_live_kraft_answer_called_dead(monkeypatch):
    """KAFKA-18991's stale append on kraft-3.5 (replica-sanity, the matrix's bounds) is found by the
    reduced search; the mutant's dead answers come back to life after a partition change, which the
    obligations catch (the verdict alone would not: the mutant's search still reaches a stale append
    by another interleaving). On kraft-4.1 the same answers are dead (the fix) and the mutant is the
    reduction itself."""
    model = build_model("kafka", ["records=2", "epochs=2", "crashes=1", "alters=0"], "kraft-3.5")
    states = reachable(model, 6000)
    options = SearchOptions(invariants=[KAFKA["replica-sanity"]], reduce="dead")
    assert bfs.check(model, options).verdict is Verdict.VIOLATED
    _kraft_18991_mutant(monkeypatch)
    assert any("alive after DeliverLeaderAndIsr" in f for f in obligations(model, states))
    fixed = build_model("kafka", ["records=2", "epochs=2", "crashes=1", "alters=0"], "kraft-4.1")
    assert obligations(fixed, reachable(fixed, 6000)) == []


@pytest.mark.slow  # every line it runs, cheaper fast tests run too (coverage by test)
def test_the_obligations_catch_a_kraft_fetch_answer_that_enables_an_expansion_called_dead(
    monkeypatch):
    """On the KRaft rows too the leader's ExpandIsr needs the answer of the fetch it records on the
    wire (3.3.0 to 4.1 ``Partition.updateFollowerFetchState`` -> ``maybeExpandIsr``): a reduction
    that forgets it (class 6 as the ZooKeeper rows' alone) drops an answer whose presence enables an
    expansion, which the obligations catch."""
    model = build_model("kafka", _KRAFT_DURABILITY, "kraft-4.1")
    states = reachable(model, 6000)
    assert obligations(model, states) == []
    monkeypatch.setattr(dead_module.DeadMessages, "_may_expand", lambda self, s, m: False)
    assert any("ExpandIsr" in f and "no counterpart" in f for f in obligations(model, states))


@pytest.mark.slow  # every line it runs, cheaper fast tests run too (coverage by test)
def test_the_obligations_catch_a_live_alter_partition_answer_called_dead(monkeypatch):
    """An AlterPartition answer the leader still waits for (NONE in its epochs: it commits the ISR)
    is live."""
    original = dead_module.DeadMessages.dead
    monkeypatch.setattr(dead_module.DeadMessages, "dead",
                        lambda self, s, m: m.kind == ALTER_PARTITION_RESPONSE
                        or original(self, s, m))
    model = build_model("kafka", _KRAFT_DURABILITY, "kraft-4.1")
    assert any("not delivered as a no-op" in f for f in obligations(model, reachable(model, 6000)))


def _cells(monkeypatch, rows: list[str], invariants: list[str], reduce: str) -> dict:
    """The default matrix's cells of ``rows`` (its own bounds per invariant), searched with
    ``reduce`` (``searched_on_the_kernel``: the readable model's search, recorded); each reduced
    counterexample replayed on the unreduced model."""
    plain = engines.run

    def reduced(model, search, *engine):
        result = searched_on_the_kernel(model, dataclasses.replace(search, reduce=reduce), plain)
        for v in result.violations:
            replayed = replay_trace(model, v.trace, [v.invariant])
            assert replayed.outcome == "violated" and replayed.invariant.name == v.invariant
            assert replayed.step == len(v.trace.steps)
        return result

    with monkeypatch.context() as patch:  # undone before another call takes ``engines.run``
        patch.setattr(engines, "run", reduced)
        return {(c.protocol, c.invariant): c.verdict
                for c in run_matrix("kafka", MatrixOptions(rows, invariants))}


FAST_INVARIANTS = ["no-fence-stall", "no-stale-control-request", "no-bounce-stall", "log-matching"]


@pytest.mark.slow
@needs_cc
def test_the_full_verdict_on_part_of_the_matrix(monkeypatch):
    """2.1.0's control-plane and Log Matching cells (2.2.0's, which cost five times as much, are in
    the slow test below; the fast tier compares a verdict and its shortest length in the rebuild
    tests)."""
    full = _cells(monkeypatch, ["2.1.0"], FAST_INVARIANTS, "none")
    reduced = _cells(monkeypatch, ["2.1.0"], FAST_INVARIANTS, "dead")
    assert reduced == full
    assert set(full.values()) == {"holds", "violated"}  # both verdicts are compared


@pytest.mark.slow
@needs_cc
def test_the_full_verdict_on_every_cell_of_representative_rows(monkeypatch):
    """Every default column of the rows of each class of ``spec.kafka.dead`` but the AlterIsr ones,
    at the matrix's bounds, against the docs' matrix table of the full search (as ``test_por``
    compares its reduction)."""
    rows = ["0.10.2", "2.1.0", "2.2.0"]
    expected = {cell: verdict for cell, verdict in readme_matrix().items() if cell[0] in rows}
    assert len(expected) == 27
    assert _cells(monkeypatch, rows, [], "dead") == expected


KRAFT_FAST = ["replica-sanity", "no-fence-stall", "no-stale-control-request"]


@pytest.mark.slow  # every line it runs, cheaper fast tests run too (coverage by test)
@needs_cc
def test_the_full_verdict_on_kraft_cells(monkeypatch):
    """kraft-3.5's and kraft-4.1's replica-sanity (KAFKA-18991: violated, then fixed) and two
    control-plane cells, reduced, against the docs' matrix table of the full search; each reduced
    counterexample replayed on the unreduced model."""
    rows = ["kraft-3.5", "kraft-4.1"]
    table = readme_matrix()
    expected = {(row, name): table[(row, name)] for row in rows for name in KRAFT_FAST}
    assert set(expected.values()) == {"holds", "violated"}
    assert _cells(monkeypatch, rows, KRAFT_FAST, "dead") == expected


@pytest.mark.slow
@needs_cc
def test_the_full_verdict_on_every_kraft_cell(monkeypatch):
    """Every default column of the three KRaft rows at the matrix's bounds, reduced, against the
    docs' matrix table, but kraft-4.1's consumed-stays (861,238 states unreduced, a client column
    with no ELR condition of its own: left to the rows before it, as test_por leaves it): about 10
    min of wall at load 7 to 9 with it."""
    rows = ["kraft-3.3", "kraft-3.5", "kraft-4.1"]
    expected = {cell: verdict for cell, verdict in readme_matrix().items() if cell[0] in rows}
    del expected[("kraft-4.1", "consumed-stays")]
    assert len(expected) == 29
    found = {**_cells(monkeypatch, rows[:2], [], "dead"),
             **_cells(monkeypatch, ["kraft-4.1"],
                      [name for row, name in expected if row == "kraft-4.1"], "dead")}
    assert found == expected


@pytest.mark.slow
@pytest.mark.parametrize("protocol", ["2.8.0", "3.9.1"])
@needs_cc
def test_the_full_verdicts_on_the_alter_isr_rows_at_small_bounds(protocol):
    model = build_model("kafka", ["records=1", "epochs=2", "crashes=1"], protocol)
    # the safety invariants (what ``bfs.check`` checks of them: the liveness ones are the graph's)
    invariants = SearchOptions(invariants=[inv for name, inv in KAFKA.items()
                                           if name not in model.matrix_excluded]
                               ).safety_invariants()
    full = searched_on_the_kernel(model, SearchOptions(invariants=invariants, stop_at_first=False))
    reduced = searched_on_the_kernel(
        model, SearchOptions(invariants=invariants, stop_at_first=False, reduce="dead"))
    assert {v.invariant for v in reduced.violations} == {v.invariant for v in full.violations}
    assert reduced.verdict == full.verdict and reduced.distinct_states < full.distinct_states
    for v in reduced.violations:
        assert replay_trace(model, v.trace, [v.invariant]).outcome == "violated"


@pytest.mark.parametrize("protocol,consts,invariant", [
    ("2.1.0", ["records=1", "epochs=2", "bumps=2", "crashes=0"], "no-fence-stall"),  # KAFKA-7786
    # KAFKA-13141: 1 s; every line it runs, KAFKA-7786's runs too (coverage by test)
    pytest.param("2.8.0", [], "committed-durable", marks=pytest.mark.slow),
])
def test_a_reduced_counterexample_replays_and_shortest_finds_the_full_length(
    protocol, consts, invariant):
    _, full = _violated(protocol, consts, invariant)
    model, reduced = _violated(protocol, consts, invariant, reduce="dead")
    trace = reduced.violations[0].trace
    # on the model as it is: every step one of its own
    replayed = replay_trace(model, trace, [invariant])
    assert replayed.outcome == "violated" and replayed.invariant.name == invariant
    assert replayed.step == len(trace.steps)
    assert len(trace.steps) >= len(full.violations[0].trace.steps)  # not shortest in general
    _, shortest = _violated(protocol, consts, invariant, reduce="dead", shortest=True)
    assert len(shortest.violations[0].trace.steps) == len(full.violations[0].trace.steps)
    assert shortest.extra["shortest"]["depth_bound"] == len(trace.steps)


@pytest.mark.slow  # every line it runs, cheaper fast tests run too (coverage by test)
def test_the_parallel_engine_gives_the_local_counts():
    model = build_model("kafka", ["brokers=3", "records=1", "epochs=1", "crashes=0"], "2.1.0")
    options = SearchOptions(invariants=[KAFKA["no-stale-control-request"]], reduce="dead",
                            symmetry=True, max_depth=12)
    local = engines.run(model, options)
    parallel = engines.run(model, options, "parallel",
                           engines.engine_options("parallel", {"--workers": 2}))
    assert ((parallel.distinct_states, parallel.states_generated)
            == (local.distinct_states, local.states_generated))
    full = engines.run(model, dataclasses.replace(options, reduce="none"))
    assert local.distinct_states < full.distinct_states


def test_deadlock_is_neither_hidden_nor_made():
    model = build_model("kafka", ["records=1", "crashes=1"], "2.1.0")
    full = bfs.check(model, SearchOptions(invariants=[], check_deadlock=True))
    reduced = bfs.check(model, SearchOptions(invariants=[], check_deadlock=True, reduce="dead"))
    assert ([v.invariant for v in full.violations] == [v.invariant for v in reduced.violations]
            == ["deadlock"])
    assert not model.successors(reduced.violations[0].trace.states[-1])


@pytest.mark.parametrize("argv,message", [
    (["--reduce", "dead", "--engine", "directed"], "engines that support it: local, parallel, "
     "spark"),
    (["--reduce", "dead", "--protocol", "kraft-3.5", "--const", "reassignments=1"],
     "does not cover reassignments"),
    (["--reduce", "dead", "--invariant", "no-fence-stall-liveness"], "safety properties only"),
    (["--reduce", "dead", "--checkpoint", "x.ckpt"], "engines that support it: spark"),
])
def test_refused_with_one_line(capsys, argv, message):
    code = main(["check", "kafka", "--const", "records=1", "--const", "crashes=0", "--quiet",
                 *argv])
    err = capsys.readouterr().err.strip()
    assert code == 64 and message in err and len(err.splitlines()) == 1, err


def test_cli_reports_the_reduction(capsys):
    code = main(["check", "kafka", "--protocol", "2.1.0", "--const", "records=1", "--const",
                 "crashes=0", "--quiet", "--json", "--reduce", "dead"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and data["verdict"] == "holds"
    assert data["reduction"]["method"] == "dead" and len(data["reduction"]["dead_messages"]) == 2


def test_a_reduced_runs_checkpoint_is_refused_by_a_full_run():
    """A run stopped by its memory budget writes a checkpoint; its identity names the reduction, so
    a run without it refuses to resume from reduced states (a run without a reduction keeps the
    identity it always had)."""
    from checker.checkpoint import _identity

    model = build_model("kafka", ["records=1", "crashes=0"], "2.1.0")
    assert "reduce" not in _identity(model, SearchOptions())
    assert _identity(model, SearchOptions(reduce="dead"))["reduce"] == "dead"


def _no_second_fetch_at_one(state) -> bool:
    """Holds while no follower has a Fetch at offset 1 in flight to a leader that already recorded
    its LEO as 1: the reduced search's shortest way there sends that Fetch while the empty answer to
    the previous one is dead (dropped), a step the unreduced model takes only once the answer is
    delivered (``actions_data.busy``)."""
    return not any(m.kind == FETCH and m.offset == 1 and state.brokers[m.dst].remote[m.src] == 1
                   for m in state.network)


@pytest.mark.parametrize("engine", ["local", "parallel"])
def test_a_counterexample_whose_step_waits_for_a_dead_answer_is_rebuilt(engine):
    """A step the search took in a stored state that the concrete state of the rebuilt trace still
    holds a dead answer for (the follower's next Fetch): the rebuilt trace delivers the dead answers
    first, every step one of the model's."""
    from checker.invariant import Invariant

    model = build_model("kafka", ["records=1", "crashes=0", "epochs=0"], "2.1.0")
    invariant = Invariant("no-second-fetch-at-one", "a follower's second Fetch at offset 1",
                          _no_second_fetch_at_one)
    options = SearchOptions(invariants=[invariant], reduce="dead")
    extra = engines.engine_options("parallel", {"--workers": 2}) if engine == "parallel" else None
    result = engines.run(model, options, engine, extra)
    assert result.verdict is Verdict.VIOLATED
    # --json says it too: the reduced search's trace
    assert result.extra["guaranteed_shortest"] is False
    trace = result.violations[0].trace
    state = model.init_states()[0]
    # every step a successor of the state before it, in the unreduced model
    for step in trace.steps:
        assert (step.action, step.state) in model.successors(state)
        state = step.state
    assert not _no_second_fetch_at_one(state)
    full = bfs.check(model, SearchOptions(invariants=[invariant]))
    assert len(trace.steps) == len(full.violations[0].trace.steps) == 8
