"""Replay: the shipped scenarios reach their expected outcome under every protocol version, and a
recorded counterexample is replayed by action (violated under its own version, blocked or holding
under a fixed one)."""

import functools
import glob
import os

import pytest

from spec.errors import BadFileError, NotReplayableError, WrongModelError
from spec.registry import build_model, get_model_info
from traces.replay import replay, replay_scenario, replay_trace, scenario_model
from traces.scenario import load_scenario, parse_action, scenario_from_data

SCENARIOS = sorted(glob.glob(os.path.join(os.path.dirname(__file__), "..", "traces", "scenarios",
                                          "*.json")))


def test_scenarios_are_shipped():
    assert len(SCENARIOS) >= 2


#: (file, release) -> why the model's replay differs from what that release's code does. Each
#: scenario's ``expect`` says what the release does; these cells are the model's known differences,
#: reported to be fixed in the model (a strict xfail: once the model is fixed the cell passes and
#: this entry must go)
KNOWN_MODEL_DIFFERENCES: dict[tuple[str, str], str] = {}


def _cells():
    releases = list(get_model_info("kafka").protocols)
    for path in SCENARIOS:
        name = os.path.basename(path)
        model_name = load_scenario(path).model
        for protocol in (releases if model_name == "kafka"
                         else list(get_model_info(model_name).protocols) or [None]):
            reason = KNOWN_MODEL_DIFFERENCES.get((name, protocol))
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            yield pytest.param(path, protocol, id=f"{name}-{protocol}", marks=marks)


@functools.cache
def _loaded(path: str):
    """Each scenario file read and checked once for its cells (a Scenario is frozen; about 6 ms a
    load, 630 cells)."""
    return load_scenario(path)


@pytest.mark.parametrize("path, protocol", list(_cells()))
def test_scenario_reaches_its_expected_outcome_under_every_release(path, protocol):
    scenario = _loaded(path)
    if not _exists_in(scenario, protocol):
        # a flag the story needs (fetch-from-follower, 2.4.0+) does not exist in this release line:
        # refused, and the file expects nothing there
        assert protocol not in scenario.expect, (
            f"{path}: expects an outcome under {protocol}, which refuses its flags")
        return
    model = scenario_model(scenario, protocol)
    result = replay_scenario(model, scenario)
    expected = scenario.expectation(protocol)
    assert expected is not None, f"{path}: no expectation for {protocol}"
    assert result.matches(expected), (
        f"{path} under {protocol}: {result.summary()}, expected {expected.describe()}")


@pytest.mark.slow  # every line it runs, cheaper fast tests run too (coverage by test)
def test_every_scenario_names_every_release_in_expect():
    releases = list(get_model_info("kafka").protocols)
    for path in SCENARIOS:
        scenario = load_scenario(path)
        if scenario.model == "kafka":
            assert list(scenario.expect) == [r for r in releases if _exists_in(scenario, r)], path
            assert scenario.source and scenario.description, path
            # the release code the story follows, not only the KIP text (the seed's own divergence
            # example excepted)
            assert (".scala" in scenario.source or ".java" in scenario.source or "log-divergence"
                    in scenario.source), path


def _exists_in(scenario, protocol) -> bool:
    """Whether the scenario's flags exist in ``protocol`` (a release line refuses a flag whose
    mechanism it lacks)."""
    try:
        scenario_model(scenario, protocol)
    except WrongModelError:
        return False
    return True


def test_known_model_differences_name_shipped_cells():
    names = {os.path.basename(p) for p in SCENARIOS}
    releases = set(get_model_info("kafka").protocols)
    for name, release in KNOWN_MODEL_DIFFERENCES:
        assert name in names and release in releases, (name, release)


def test_kip_101_scenario_1_breaks_only_hw_truncation():
    scenario = _shipped("kip-101-scenario-1")
    buggy = replay_scenario(scenario_model(scenario, "hw-truncation"), scenario)
    assert ((buggy.outcome, buggy.invariant.name, buggy.step)
            == ("violated", "committed-durable", 13))
    assert "step 13" in buggy.explanation and "broker 1" in buggy.explanation
    assert [s.action.name for s in buggy.trace.steps][7:9] == ["Bounce", "BumpLeaderEpoch"]
    fixed = replay_scenario(scenario_model(scenario, "kip-101"), scenario)
    assert fixed.outcome == "holds" and fixed.exit_code == 0


def test_two_phase_counterexample_is_blocked_by_the_commit_guard():
    buggy = build_model("two-phase", ["commit_guard=off"])
    steps = [parse_action("TMCommit"), parse_action("RMChooseToAbort(rm=1)"),
             parse_action("RMRcvCommitMsg(rm=2)")]
    result = replay(buggy, steps)
    assert (result.outcome, result.step, result.invariant.name) == ("violated", 3, "TCConsistent")
    assert int(result.exit_code) == 12
    fixed = replay(build_model("two-phase", ["commit_guard=on"]), steps, header=None)
    assert (fixed.outcome, fixed.step, str(fixed.action)) == ("blocked", 1, "TMCommit")
    assert int(fixed.exit_code) == 67 and "TMAbort" in fixed.summary()


@pytest.mark.slow  # every line it runs, cheaper fast tests run too (coverage by test)
def test_recorded_kafka_counterexamples_replay_under_every_protocol():
    from tests.test_traces_io import kafka_counterexamples

    for trace in kafka_counterexamples():
        own = trace.header["protocol"]
        for protocol in get_model_info("kafka").protocols:
            model = build_model("kafka", [f"{k}={v}" for k, v in trace.header["constants"].items()],
                                protocol)
            result = replay_trace(model, trace)
            assert result.outcome in ("violated", "blocked", "holds")
            if protocol == own:  # its own version reproduces it exactly, state for state
                assert ((result.outcome, result.invariant.name, result.step)
                        == ("violated", trace.invariant, trace.length))
                assert result.diverged_at is None and result.trace.states == trace.states


def test_partial_parameters_must_pick_one_successor():
    model = build_model("two-phase", [])
    with pytest.raises(NotReplayableError, match="ambiguous"):
        replay(model, [parse_action("RMPrepare")])
    assert replay(model, [parse_action("RMPrepare(rm=2)")]).trace.steps[0].action.param("rm") == 2


def test_scenario_syntax_errors_are_bad_files():
    for text in ("Produce(", "Produce(leader)", "Produce(leader=__import__('os'))", "1x"):
        with pytest.raises(BadFileError):
            parse_action(text)
    for doc in ({"steps": []}, {"model": "kafka", "steps": "x"},
                {"model": "kafka", "steps": [], "bogus": 1},
                {"model": "kafka", "steps": [{"action": "X", "params": {"a": 1.5}}]},
                {"model": "kafka", "steps": [], "expect": {"kip-101": {"outcome": "maybe"}}}):
        with pytest.raises(BadFileError):
            scenario_from_data(doc, "s.json")


def _shipped(fragment):
    """The shipped scenario whose name contains ``fragment`` (the shortest: a story's 0.10.2 form is
    a longer name)."""
    return load_scenario(min((p for p in SCENARIOS if fragment in os.path.basename(p)), key=len))


def test_kip_279_scenario_1_every_case_diverges_under_kip_101_only():
    for tag, step in (("n-lt-20", 30), ("n-eq-20", 31), ("n-gt-20", 32)):
        scenario = _shipped(f"kip-279-scenario-1-{tag}")
        diverged = replay_scenario(scenario_model(scenario, "kip-101"), scenario, ["log-matching"])
        assert (diverged.outcome, diverged.step) == ("violated", step), tag
        last = diverged.trace.steps[-1].state
        assert ([r.epoch for r in last.brokers[1].log][1] == 1
                and [r.epoch for r in last.brokers[0].log][1] == 0)
        fixed = replay_scenario(scenario_model(scenario, "kip-279"), scenario)
        end = fixed.trace.steps[-1].state
        assert fixed.outcome == "holds" and end.brokers[0].log == end.brokers[1].log
    # n < 20: replica-sanity breaks first, when B appends A's epoch-0 record after its own epoch-1
    # record
    first = replay_scenario(scenario_model(_shipped("n-lt-20"), "kip-101"), _shipped("n-lt-20"))
    assert ((first.invariant.name, first.step, str(first.action))
            == ("replica-sanity", 22, "ReceiveFetch(follower=1, leader=0)"))


def test_kip_279_scenario_3_one_round_diverges_two_rounds_agree():
    one_round = _shipped("scenario-3-unclean-kip-101")
    assert one_round.features == {"unclean": True} and one_round.invariants == ("log-matching",)
    # every release loses the records committed before an unclean election: why the files check
    # log-matching only
    everywhere = replay(scenario_model(one_round, "2.0.1"), one_round.steps, invariants=None)
    assert ((everywhere.outcome, everywhere.invariant.name, everywhere.step)
            == ("violated", "committed-durable", 11))
    diverged = replay_scenario(scenario_model(one_round, "0.11.0"), one_round)
    assert (diverged.outcome, diverged.step) == ("violated", 37)
    two_rounds = _shipped("scenario-3-unclean-kip-279")
    result = replay_scenario(scenario_model(two_rounds, "2.0.1"), two_rounds)
    assert (result.outcome == "holds"
            and [r.ident for r in result.trace.steps[-1].state.brokers[0].log] == [2, 4])


def test_kafka_7786_stalls_2_2_0_without_its_fix():
    scenario = _shipped("kafka-7786")
    result = replay_scenario(scenario_model(scenario, "2.2.0", ["kafka-7786-fix=off"]), scenario)
    assert ((result.outcome, result.invariant.name, result.step)
            == ("violated", "no-fence-stall", 15))
    assert "broker 1" in result.explanation
    fixed = replay_scenario(scenario_model(scenario, "2.2.0"), scenario)
    # still truncating: asks again
    assert fixed.outcome == "holds" and fixed.trace.steps[-1].state.brokers[1].fetch == 1


def test_control_plane_scenarios_break_before_kip_380_and_hold_with_it():
    for fragment, invariant, step in (("bounce-during-controlled-shutdown",
                                       "no-stale-control-request", 4),
                                      ("stale-controlled-shutdown", "no-stale-control-request", 8),
                                      ("fast-bounce", "no-bounce-stall", 2)):
        scenario = _shipped(fragment)
        buggy = replay_scenario(scenario_model(scenario, "2.1.1"), scenario)
        assert (buggy.outcome, buggy.invariant.name, buggy.step) == ("violated", invariant,
                                                                     step), fragment
        assert (replay_scenario(scenario_model(scenario, "2.2.0"), scenario).outcome
                in ("holds", "blocked"))


def test_kip_101_scenario_2_is_fixed_by_kafka_7415_lookup():
    """0.11.0 answers UNDEFINED for an epoch below the leader's first one: broker 0 keeps m1 at its
    HW; with KAFKA-7415's lookup (2.0.1+) the answer is (0, 0) and m1 is truncated. Log Matching in
    the seed's form waits until broker 0 fetched in the leader's epoch: a crashed replica no longer
    breaks it (the old model's finding)."""
    scenario = _shipped("kip-101-scenario-2")
    kept = replay_scenario(scenario_model(scenario, "0.11.0"), scenario)
    assert (kept.outcome, kept.step) == ("violated", 26)
    assert [r.ident for r in kept.trace.steps[-1].state.brokers[0].log] == [1]
    fixed = replay_scenario(scenario_model(scenario, "2.0.1"), scenario)
    assert (fixed.outcome == "holds"
            and [r.ident for r in fixed.trace.steps[-1].state.brokers[0].log] == [2])
    # KAFKA-7415 alone makes the difference on 2.0.0's rules
    assert replay_scenario(scenario_model(scenario, "0.11.0",
                                          ["epoch-in-response=on", "kafka-7415=on"]),
                           scenario).outcome == "holds"


def test_check_from_is_a_step_number():
    for bad in (-1, True, "3", 2):
        with pytest.raises(BadFileError, match="check_from"):
            scenario_from_data({"model": "kafka", "steps": ["Produce(leader=0)"],
                                "check_from": bad}, "s.json")
    ok = scenario_from_data({"model": "kafka", "steps": ["Produce(leader=0)"], "check_from": 1},
                            "s.json")
    assert ok.check_from == 1
