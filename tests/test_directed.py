"""The directed search (``--engine directed``, ``checker.directed``): it finds a known violation and
its trace replays, it exhausts a small space that holds with breadth-first search's counts, the same
run gives the same trace, what it cannot honour is refused with one line (exit 64), and each
declared distance is 0 exactly where its invariant is violated."""

from __future__ import annotations

import json

import pytest

from checker import engines
from checker.search import SearchOptions
from invariants.registry import for_family
from kmc.cli import main
from spec.registry import build_model
from traces.replay import replay_trace

KAFKA_7786 = (["records=1", "epochs=2", "bumps=2", "crashes=0"], "2.1.0")
#: acknowledged-durable holds here (acks=all, KIP-101's fix and KIP-279): 5,159 distinct states
HOLDS = (["records=1", "epochs=1", "crashes=1", "acks=-1"], "2.2.0")
#: acks=1 on two brokers: the leader acknowledges on append and a fail-over loses the record
ACKS_ONE = (["records=1", "epochs=1", "crashes=1", "acks=1"], "2.2.0")


def _run(bounds, protocol, names, engine="directed", **options):
    model = build_model("kafka", bounds, protocol, [])
    family = for_family("kafka")
    invariants = [family[name] for name in names]
    return model, engines.run(model, SearchOptions(invariants=invariants, **options), engine)


@pytest.mark.parametrize("bounds, protocol, invariant", [
    (*KAFKA_7786, "no-fence-stall"),
    (*ACKS_ONE, "acknowledged-durable"),
])
def test_finds_a_known_violation_whose_trace_replays(bounds, protocol, invariant):
    model, result = _run(bounds, protocol, [invariant])
    assert result.verdict == "violated" and result.engine == "directed"
    (violation,) = result.violations
    assert violation.invariant == invariant
    replayed = replay_trace(model, violation.trace, [invariant])
    assert (replayed.outcome, replayed.step) == ("violated", violation.length)
    # breadth-first search finds one no longer (its first is shortest)
    _, bfs = _run(bounds, protocol, [invariant], engine="local")
    assert bfs.violations[0].length <= violation.length


@pytest.mark.parametrize("symmetry, counts", [(False, (3835, 10977)), (True, (3743, 10846))])
@pytest.mark.slow  # every line it runs, cheaper fast tests run too (coverage by test)
def test_exhausts_a_space_that_holds_with_the_breadth_first_counts(symmetry, counts):
    _, directed = _run(*HOLDS, ["acknowledged-durable", "committed-durable"], symmetry=symmetry)
    _, bfs = _run(*HOLDS, ["acknowledged-durable", "committed-durable"], engine="local",
                  symmetry=symmetry)
    assert directed.verdict == bfs.verdict == "holds"
    assert ((directed.distinct_states, directed.states_generated)
            == (bfs.distinct_states, bfs.states_generated) == counts)
    assert directed.queue == 0 and directed.reason is None and directed.symmetry is symmetry


def test_a_budget_makes_it_undetermined_never_a_pass():
    _, result = _run(*HOLDS, ["acknowledged-durable"], max_states=500)
    assert result.verdict == "undetermined" and "state budget 500" in result.reason
    _, bounded = _run(*HOLDS, ["acknowledged-durable"], max_depth=5)
    assert bounded.verdict == "undetermined" and "depth bound 5" in bounded.reason
    _, memory = _run(*HOLDS, ["acknowledged-durable"], max_memory_mb=1)
    assert memory.verdict == "undetermined" and "memory budget of 1 MB" in memory.reason


def test_the_same_run_gives_the_same_trace_and_counts():
    runs = [_run(*KAFKA_7786, ["no-fence-stall"])[1] for _ in range(2)]
    first, second = ((r.distinct_states, r.states_generated, r.depth, r.violations[0].trace.steps)
                     for r in runs)
    assert first == second


def test_the_weight_orders_the_search():
    """Weight 0 is breadth-first order: its first violation is a shortest one, as breadth-first
    search's."""
    model = build_model("kafka", *KAFKA_7786, [])
    options = SearchOptions(invariants=[for_family("kafka")["no-fence-stall"]])
    from checker.directed import DirectedOptions

    zero = engines.run(model, options, "directed", DirectedOptions(weight=0))
    bfs = engines.run(model, options, "local")
    greedy = engines.run(model, options, "directed")
    assert zero.violations[0].length == bfs.violations[0].length
    assert greedy.violations[0].length >= zero.violations[0].length


@pytest.mark.parametrize("bounds, protocol, features, broken", [
    (*KAFKA_7786, [], {"no-fence-stall"}),
    (*ACKS_ONE, [], {"acknowledged-durable"}),
    (["records=1", "epochs=2", "crashes=1", "acks=-1"], "2.2.0", ["unclean=on"],
     {"acknowledged-durable", "committed-durable"}),
])
def test_every_distance_is_zero_exactly_where_its_invariant_is_violated(bounds, protocol, features,
                                                                        broken):
    """On every state a breadth-first search reaches (keeping the graph), for every invariant that
    declares one."""
    from checker.liveness import explore_graph

    model = build_model("kafka", bounds, protocol, features)
    declared = [inv for inv in for_family("kafka").values() if inv.distance is not None
                and inv.holds is not None]
    assert ({inv.name for inv in declared} >= {"acknowledged-durable", "committed-durable",
                                               "no-fence-stall"})
    _, states, reason = explore_graph(model, SearchOptions(max_states=20_000), started=None)
    violated = set()
    for state in states:
        for inv in declared:
            d = inv.distance(state)
            assert d >= 0 and (d == 0) == (not inv.holds(state)), (inv.name, d)
            if d == 0:
                violated.add(inv.name)
    assert violated == broken


def _cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


KRAFT = ["check", "kafka", "--protocol", "kraft-3.5", "--const", "records=1"]


@pytest.mark.parametrize("extra, words", [
    (["--invariant", "log-matching"], "declares no distance"),
    (["--invariant", "no-fence-stall-liveness"], "a liveness property is not supported by --engine "
     "directed"),
    (["--invariant", "acknowledged-durable", "--workers", "2"],
     "--workers is not an option of --engine directed"),
    (["--invariant", "acknowledged-durable", "--master", "local[2]"],
     "--master is not an option of --engine directed"),
    (["--invariant", "acknowledged-durable", "--checkpoint", "x.ckpt"],
     "--checkpoint / --resume is not supported"),
    (["--invariant", "acknowledged-durable", "--reduce", "dead"],
     "--reduce dead is not supported by --engine directed"),
    (["--invariant", "acknowledged-durable", "--coverage"],
     "--coverage is not supported by --engine directed"),
    (["--invariant", "acknowledged-durable", "--continue"], "drop --continue"),
    (["--invariant", "acknowledged-durable", "--directed-weight", "-1"],
     "--directed-weight must be"),
    # without --invariant too: the line naming the invariants it would check is not said
    (["--continue"], "drop --continue"),
    (["--reduce", "dead"], "--reduce dead is not supported by --engine directed"),
])
def test_what_it_cannot_honour_is_refused_with_one_line(capsys, tmp_path, extra, words):
    code, _, err = _cli(capsys, *KRAFT, "--engine", "directed", "--trace-dir", str(tmp_path),
                        *extra)
    lines = err.strip().splitlines()
    assert code == 64 and len(lines) == 1 and words in lines[0], err


def test_the_weight_is_refused_for_another_engine(capsys):
    code, _, err = _cli(capsys, *KRAFT, "--invariant", "acknowledged-durable", "--directed-weight",
                        "5")
    assert code == 64 and "--directed-weight is not an option of --engine local" in err


def test_the_command_line_says_the_trace_need_not_be_shortest(capsys, tmp_path):
    bounds = [w for b in KAFKA_7786[0] for w in ("--const", b)]
    argv = ["check", "kafka", "--protocol", KAFKA_7786[1], *bounds, "--invariant", "no-fence-stall",
            "--engine", "directed", "--trace-dir", str(tmp_path)]
    code, out, _ = _cli(capsys, *argv)
    assert code == 12
    assert "need not be shortest" in out and "--engine local --max-depth" in out
    code, out, _ = _cli(capsys, *argv, "--json")
    data = json.loads(out)
    assert data["engine"] == "directed" and data["directed"]["weight"] == 1000
    assert data["directed"]["guaranteed_shortest"] is False


def test_a_state_without_successors_is_a_deadlock_when_deadlock_is_checked():
    model, result = _run(*HOLDS, ["acknowledged-durable"], check_deadlock=True)
    (violation,) = result.violations
    assert (violation.invariant, violation.kind) == ("deadlock", "deadlock")
    assert not list(model.successors(violation.trace.steps[-1].state))
    assert int(result.exit_code) == 11


@pytest.mark.slow
def test_last_replica_standing_on_three_brokers_is_found_and_replays():
    """The issue's target (kraft-3.5, brokers=3 acks=-1 min_isr=2 unclean_shutdowns=1 epochs=4): the
    directed search finds an acknowledged record lost by the last ISR member's unclean shutdown
    within 200,000 states; weight 10 keeps the test to about 55,000 (bench/NOTES.md)."""
    from checker.directed import DirectedOptions

    model = build_model("kafka", ["brokers=3", "acks=-1", "min_isr=2", "unclean_shutdowns=1",
                                  "epochs=4"], "kraft-3.5",
                        [])
    options = SearchOptions(invariants=[for_family("kafka")["acknowledged-durable"]],
                            max_states=200_000)
    result = engines.run(model, options, "directed", DirectedOptions(weight=10))
    (violation,) = result.violations
    names = [step.action.name for step in violation.trace.steps]
    assert ("UncleanShutdown" in names and names.index("UncleanShutdown")
            < names.index("ElectLeader"))
    replayed = replay_trace(model, violation.trace, ["acknowledged-durable"])
    assert (replayed.outcome, replayed.step) == ("violated", violation.length)


@pytest.mark.slow  # every line it runs, cheaper fast tests run too (coverage by test)
def test_without_invariant_it_checks_the_defaults_that_declare_a_distance_and_says_so(capsys,
                                                                                       tmp_path):
    """``--engine directed`` with no ``--invariant``: the default invariants with a distance, named
    in one line on stderr with those left out; the search is the one that names them."""
    bounds = [w for b in KAFKA_7786[0] for w in ("--const", b)]
    argv = ["check", "kafka", "--protocol", KAFKA_7786[1], *bounds, "--engine", "directed",
            "--trace-dir", str(tmp_path), "--json"]
    code, out, err = _cli(capsys, *argv)
    defaults = [inv for inv in for_family("kafka").values() if inv.kind == "safety" and inv.default]
    steerable = [inv.name for inv in defaults if inv.distance is not None]
    left_out = [inv.name for inv in defaults if inv.distance is None]
    assert {"log-matching", "elr-safety"} <= set(left_out) and steerable
    (line,) = err.strip().splitlines()
    assert line.startswith(f"note: --engine directed checks the {len(steerable)} default")
    assert all(name in line for name in steerable + left_out)
    data = json.loads(out)
    assert code == 12 and sorted(data["invariants"]) == sorted(steerable)
    named = [w for name in steerable for w in ("--invariant", name)]
    code, out, err = _cli(capsys, *argv, *named)
    assert code == 12 and not err.strip()
    again = json.loads(out)
    assert ((again["distinct_states"], again["violations"][0]["invariant"])
            == (data["distinct_states"], data["violations"][0]["invariant"]))
    # the breadth-first engine checks every default invariant, without a word
    code, out, err = _cli(capsys, *argv[:-5], "--trace-dir", str(tmp_path), "--json")
    assert not err.strip() and sorted(json.loads(out)["invariants"]) == sorted(
        inv.name for inv in defaults)


@pytest.mark.slow  # every line it runs, cheaper fast tests run too (coverage by test)
def test_the_matrix_on_the_directed_engine_has_the_default_columns_with_a_distance(capsys):
    """``kmc matrix --engine directed`` without ``--invariant``: its columns are the default columns
    that declare a distance, said once for all its rows; the breadth-first matrix keeps them all."""
    argv = ["matrix", "kafka", "--protocol", "2.1.0", "--protocol", "2.2.0", "--const", "records=1",
            "--max-states", "20", "--json"]
    code, out, err = _cli(capsys, *argv, "--engine", "directed")
    notes = [line for line in err.splitlines() if line.startswith("note:")]
    directed = {cell["invariant"] for cell in json.loads(out)}
    code, out, err = _cli(capsys, *argv)
    every = {cell["invariant"] for cell in json.loads(out)}
    assert not any(line.startswith("note:") for line in err.splitlines())
    family = for_family("kafka")
    assert directed == {name for name in every if family[name].distance is not None}
    assert {"log-matching"} <= every - directed and directed
    (note,) = notes
    assert all(name in note for name in every) and "--engine directed checks the" in note
