"""Pinned state counts and the matrix: any change to the Kafka model's state space shows up here
and must be explained in the commit that makes it."""

from __future__ import annotations

import json

import pytest

from checker.bfs import check
from checker.engines import run
from checker.fingerprint import validate_state
from checker.search import SearchOptions
from invariants.registry import for_family
from kmc.cli import main
from kmc.matrix.run import MatrixOptions, parse_row, run_matrix
from spec.registry import build_model
from tests.matrix_table import documented_cells
from tests.test_kafka_kernel import searched_on_the_kernel
from tests.test_kernel import needs_cc

SMALL_A = ("records=1", "epochs=1", "crashes=1")
SMALL_B = ("records=2", "epochs=1", "crashes=0")

# protocol -> {configuration: (distinct states, states generated, depth)}. Changed with the
# release-accurate model (each change explained in its commit): the controller now processes a
# broker's death (an epoch bump), Restart waits for it, OffsetsForLeaderEpoch errors are retried,
# the ghosts ``reconciled`` and ``idle_cause`` tell log-matching pairs and stall causes apart, and
# truncation on fetch takes two steps. ExpandIsr waits for the answer of the fetch it records
# (maybeExpandIsr's only caller is the fetch path): SMALL_A was 3764 (0.10.2), 4720 (0.11.0, 2.0.0),
# 4755 (2.0.1), 4851 (2.1.0, 2.2.0), 16686 (2.8.0), 16352 (2.8.1, 3.9.1) distinct states; SMALL_B
# kept its distinct states and generated fewer (14285, 15684, 15874, 15165, 142629, 134125, 134224);
# 3.9.1 with kafka-14140 (INELIGIBLE_REPLICA for a dead member) is no longer 2.8.1's
PINNED = {
    "0.10.2": {SMALL_A: (2913, 8948, 26), SMALL_B: (4734, 13603, 24)},
    "0.11.0": {SMALL_A: (3331, 10202, 30), SMALL_B: (5224, 15068, 27)},
    "2.0.0": {SMALL_A: (3331, 10202, 30), SMALL_B: (5224, 15068, 27)},
    "2.0.1": {SMALL_A: (3421, 10467, 30), SMALL_B: (5288, 15258, 27)},
    "2.1.0": {SMALL_A: (3623, 10492, 30), SMALL_B: (5342, 14549, 27)},
    "2.2.0": {SMALL_A: (3623, 10492, 30), SMALL_B: (5342, 14549, 27)},
    # alter-isr (2.7.0's AlterIsr, issue 27): the 2.8.0+ rows change the ISR by a request to the
    # controller, at most ``alters`` (2) of them, with the pending maximal ISR and the zkVersion in
    # the state: about 4 and 8 times the states of the direct ZooKeeper write (3978 / 5090, 3927 /
    # 4954, 3927 / 4944 before)
    "2.8.0": {SMALL_A: (16190, 59252, 32), SMALL_B: (42997, 141832, 32)},
    "2.8.1": {SMALL_A: (15856, 58367, 32), SMALL_B: (40593, 133509, 33)},
    "3.9.1": {SMALL_A: (15320, 56646, 32), SMALL_B: (40620, 133608, 33)},
}


#: the AlterIsr rows' second configuration (about 41,000 states each) is searched in the fast tier
#: on 2.8.0 only; 2.8.1 and 3.9.1 keep their first one there (the whole suite searches both on every
#: row)
_SLOW_PINS = {("2.8.1", SMALL_B), ("3.9.1", SMALL_B)}


@pytest.mark.parametrize("consts, protocol", [
    pytest.param(consts, protocol, id=f"{name}-{protocol}",
                 marks=[pytest.mark.slow] if (protocol, consts) in _SLOW_PINS else [])
    for consts, name in ((SMALL_A, "1rec-1epoch-1crash"), (SMALL_B, "2rec-1epoch-0crash"))
    for protocol in sorted(PINNED)])
@pytest.mark.slow  # every line it runs, cheaper fast tests run too (coverage by test)
def test_pinned_state_counts(protocol: str, consts: tuple[str, ...]) -> None:
    result = check(build_model("kafka", list(consts), protocol=protocol), SearchOptions())
    assert result.verdict.value == "holds"
    assert ((result.distinct_states, result.states_generated, result.depth)
            == PINNED[protocol][consts])


@pytest.mark.slow  # every line it runs, cheaper fast tests run too (coverage by test)
def test_states_are_valid_and_successors_deterministic() -> None:
    model = build_model("kafka", ["brokers=3", "records=1", "epochs=1"],
                        protocol="truncate-on-fetch")
    frontier = list(model.init_states())
    for _ in range(6):
        nxt = []
        for state in frontier:
            first = list(model.successors(state))
            assert first == list(model.successors(state))
            names = [a for a, _ in first]
            assert len(names) == len(set(names)), "each successor is named by a distinct action"
            for _, succ in first:
                validate_state(succ)
                nxt.append(succ)
        frontier = nxt[:200]


# the newest ZooKeeper row's ISR changes are AlterIsr round trips (alter-isr): 809,390 states, about
# 22 s of CPU on the readable model, under a second on the kernel. It is the state space of the
# matrix's 3.9.1 committed-durable cell (truncate-on-fetch is 3.9.1's flag set, the cell's bounds
# the defaults; a search that holds counts every reachable state, whatever it checks): the docs'
# matrix table holds the readable model's count, pinned to its source by a digest, and
# tests/test_traces_matrix.py::test_every_cell_on_the_kernel_is_the_readable_tables[3.9.1] proves
# the kernel's search of that cell equal to it; so it is searched here on the kernel
@pytest.mark.slow
@needs_cc
def test_default_bounds_newest_release_holds() -> None:
    inv = for_family("kafka")["log-matching"]
    model = build_model("kafka", [], protocol="truncate-on-fetch")
    result = run(model, SearchOptions(invariants=[inv], kernel="on"))
    assert result.extra["path"]["path"] == "kernel"
    assert result.verdict.value == "holds"
    # (135117, 37) when the leader wrote the ISR to ZooKeeper itself; alter-isr (2.7.0's AlterIsr)
    # multiplies it (839777, 43) before ExpandIsr waited for the answer of the fetch it records and
    # kafka-14140 (3.4.0) refused a dead follower
    assert (result.distinct_states, result.depth) == (809390, 43)
    assert documented_cells()[("3.9.1", "committed-durable")] == ("holds", result.distinct_states)


@pytest.mark.slow  # every line it runs, cheaper fast tests run too (coverage by test)
def test_kip_279_scenario_1_is_the_shortest_0_11_0_divergence() -> None:
    """At records=3 without crashes, 0.11.0's shortest Log Matching counterexample is KIP-279's
    scenario 1: a preferred election, the old leader back at once, and the follower that led in
    between keeping the record it wrote because 0.11.0's answer is the start of the next epoch."""
    inv = for_family("kafka")["log-matching"]
    result = check(build_model("kafka", ["records=3", "crashes=0"], protocol="0.11.0"),
                   SearchOptions(invariants=[inv]))
    assert result.verdict.value == "violated"
    trace = result.violations[0].trace
    assert trace.length == 17
    names = [step.action.name for step in trace.steps]
    assert (names[:2] == ["PreferredLeaderElection", "PreferredLeaderElection"]
            and "ReceiveOffsetsForLeaderEpoch" in names)
    assert "below both high watermarks" in trace.explanation


@pytest.mark.slow  # matrix cells at the model bounds: about 10 s
@needs_cc
def test_matrix_cells() -> None:
    cells = run_matrix("kafka", MatrixOptions(constants=["records=1", "epochs=1"],
                                              uniform_bounds=True,
                                             invariants=["log-matching", "committed-durable"]))
    rows = ("0.10.2", "0.11.0", "2.0.0", "2.0.1", "2.1.0", "2.1.1", "2.2.0", "2.8.0", "2.8.1",
            "3.4.1", "3.9.1", "kraft-3.3", "kraft-3.5", "kraft-4.0", "kraft-4.1",
            "2.8.0,kafka-9654=off", "3.9.1,unclean=on")
    assert ([(c.protocol, c.invariant) for c in cells]
            == [(p, i) for p in rows for i in ("log-matching", "committed-durable")])
    by_key = {(c.protocol, c.invariant): c for c in cells}
    # at one epoch KIP-101's first scenario no longer fits: the restarted follower must fetch its
    # way back into the ISR (the leader adds a follower only as it records its fetch), which takes
    # the second epoch (23 steps at epochs=2)
    assert by_key["0.10.2", "committed-durable"].verdict == "holds"
    assert by_key["3.9.1", "log-matching"].verdict == "holds"
    for cell in cells:
        assert (cell.length is None) == (cell.verdict != "violated")
        assert cell.constants["records"] == 1 and cell.constants["bumps"] == 0
        # sharing searches between invariants changes no figure: compare with a search of its own
        # (on the kernel, equal to the readable model's recorded one: tests.readable_reference)
        row = parse_row(cell.protocol)
        alone = searched_on_the_kernel(
            build_model("kafka", ["records=1", "epochs=1"], protocol=row.protocol,
                        feature_assignments=list(row.features)),
            SearchOptions(invariants=[for_family("kafka")[cell.invariant]]))
        assert (alone.verdict.value, alone.distinct_states,
                alone.depth) == (cell.verdict, cell.distinct_states,
                                cell.depth)
        assert (alone.violations[0].length if alone.violations else None) == cell.length


@pytest.mark.slow  # every line it runs, cheaper fast tests run too (coverage by test)
def test_matrix_json_command(capsys) -> None:
    # two epochs: KIP-101's first scenario needs the restarted follower to fetch its way back into
    # the ISR (the leader adds a follower only as it records its fetch) before the election that
    # loses m1
    code = main(["matrix", "--json", "--const", "records=1", "--const", "epochs=2",
                 "--protocol", "hw-truncation", "--protocol", "kip-320", "--invariant",
                 "committed-durable", "--uniform-bounds"])
    assert code == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["protocol"] for r in rows] == ["hw-truncation", "kip-320"]
    for row in rows:
        assert ({"protocol", "invariant", "verdict", "distinct_states", "depth", "length"}
                <= set(row))
    assert rows[0]["verdict"] == "violated" and rows[0]["length"] > 0
    assert rows[1]["verdict"] == "holds" and rows[1]["length"] is None


def test_feature_flags_switch_from_the_registry() -> None:
    model = build_model("kafka", [], protocol="truncate-on-fetch",
                        feature_assignments=["leader-epoch-fencing=off"])
    assert model.describe()["features"]["leader-epoch-fencing"] is False
    assert model.describe()["protocol"] == "truncate-on-fetch"
