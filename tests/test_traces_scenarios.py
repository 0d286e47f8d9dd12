"""Replay: the shipped scenarios reach their expected outcome under every protocol version, and a
recorded counterexample is replayed by action (violated under its own version, blocked or holding
under a fixed one)."""

import glob
import os

import pytest

from checker.errors import BadFileError, NotReplayableError
from spec.registry import build_model, get_model_info
from traces.replay import replay, replay_scenario, replay_trace, scenario_model
from traces.scenario import load_scenario, parse_action, scenario_from_data

SCENARIOS = sorted(glob.glob(os.path.join(os.path.dirname(__file__), "..", "traces", "scenarios", "*.json")))


def test_scenarios_are_shipped():
    assert len(SCENARIOS) >= 2


@pytest.mark.parametrize("path", SCENARIOS, ids=os.path.basename)
def test_scenario_reaches_its_expected_outcome_under_every_protocol(path):
    scenario = load_scenario(path)
    protocols = list(get_model_info(scenario.model).protocols) or [None]
    checked = 0
    for protocol in protocols:
        model = scenario_model(scenario, protocol)
        result = replay_scenario(model, scenario)
        expected = scenario.expectation(protocol)
        assert expected is not None, f"{path}: no expectation for {protocol}"
        assert result.matches(expected), f"{path} under {protocol}: {result.summary()}, expected {expected.describe()}"
        checked += 1
    assert checked == len(protocols)


def test_kip_101_scenario_1_breaks_only_hw_truncation():
    scenario = load_scenario(next(p for p in SCENARIOS if "kip-101-scenario-1" in p))
    buggy = replay_scenario(scenario_model(scenario, "hw-truncation"), scenario)
    assert (buggy.outcome, buggy.invariant.name, buggy.step) == ("violated", "committed-durable", 13)
    assert "step 13" in buggy.explanation and "broker 1" in buggy.explanation
    fixed = replay_scenario(scenario_model(scenario, "kip-101"), scenario)
    assert fixed.outcome == "holds" and fixed.exit_code == 0


def test_two_phase_counterexample_is_blocked_by_the_commit_guard():
    buggy = build_model("two-phase", ["commit_guard=off"])
    steps = [parse_action("TMCommit"), parse_action("RMChooseToAbort(rm=1)"), parse_action("RMRcvCommitMsg(rm=2)")]
    result = replay(buggy, steps)
    assert (result.outcome, result.step, result.invariant.name) == ("violated", 3, "TCConsistent")
    assert int(result.exit_code) == 12
    fixed = replay(build_model("two-phase", ["commit_guard=on"]), steps, header=None)
    assert (fixed.outcome, fixed.step, str(fixed.action)) == ("blocked", 1, "TMCommit")
    assert int(fixed.exit_code) == 67 and "TMAbort" in fixed.summary()


def test_recorded_kafka_counterexamples_replay_under_every_protocol():
    from tests.test_traces_io import kafka_counterexamples

    for trace in kafka_counterexamples():
        own = trace.header["protocol"]
        for protocol in get_model_info("kafka").protocols:
            model = build_model("kafka", [f"{k}={v}" for k, v in trace.header["constants"].items()], protocol)
            result = replay_trace(model, trace)
            assert result.outcome in ("violated", "blocked", "holds")
            if protocol == own:  # its own version reproduces it exactly, state for state
                assert (result.outcome, result.invariant.name, result.step) == ("violated", trace.invariant, trace.length)
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
    for doc in ({"steps": []}, {"model": "kafka", "steps": "x"}, {"model": "kafka", "steps": [], "bogus": 1},
                {"model": "kafka", "steps": [{"action": "X", "params": {"a": 1.5}}]},
                {"model": "kafka", "steps": [], "expect": {"kip-101": {"outcome": "maybe"}}}):
        with pytest.raises(BadFileError):
            scenario_from_data(doc, "s.json")
