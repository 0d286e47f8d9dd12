"""A replay that blocks says why in Kafka's words: the guard the step fails and the steps that would
enable it, in text and ``--json``. A scenario written before AlterIsr was modelled (its ISR changes
with no ProcessAlterPartition / ReceiveAlterPartitionResponse) blocks on the 2.7.0+ ZooKeeper rows
and every KRaft row, and the message leads to those two missing steps."""

from __future__ import annotations

import json

from kmc.cli import main
from spec.model import Action
from traces.replay import replay, replay_scenario, scenario_model
from traces.scenario import load_scenario, scenario_from_data

SCENARIOS = "traces/scenarios/"


def _without_alter_steps(name: str, tmp_path=None):
    """A shipped scenario as it would have been written before AlterIsr was modelled: its
    ProcessAlterPartition and ReceiveAlterPartitionResponse steps taken out (and its expectations,
    which were for the full scenario)."""
    doc = json.loads(open(SCENARIOS + name).read())
    doc["steps"] = [s for s in doc["steps"] if "AlterPartition"
                    not in (s if isinstance(s, str) else s["action"])]
    doc["expect"] = {}
    if tmp_path is not None:
        path = tmp_path / name
        path.write_text(json.dumps(doc))
        return path
    return scenario_from_data(doc, name)


def test_a_pending_alter_partition_is_named_with_the_step_that_completes_it():
    old = _without_alter_steps("kip-966-last-replica-standing.json")
    result = replay_scenario(scenario_model(old, "kraft-3.5"), old)
    assert ((result.outcome, result.step, str(result.action))
            == ("blocked", 10, "DeliverLeaderAndIsr(broker=0)"))
    assert result.why.startswith("no LeaderAndIsr request to broker 0 is in flight")
    assert ("broker 0's ISR change is pending: its AlterPartition is in flight and the maximal ISR "
            "[0, 1]" in result.why)
    assert ("ProcessAlterPartition(leader=0)" in result.why
            and "ReceiveAlterPartitionResponse(leader=0)" in result.why)
    assert result.enabled_after == [Action("ProcessAlterPartition", (("leader", 0),))]
    assert "it would be enabled after ProcessAlterPartition(leader=0)" in result.summary()
    # with the steps, it runs as it should
    full = load_scenario(SCENARIOS + "kip-966-last-replica-standing.json")
    assert replay_scenario(scenario_model(full, "kraft-3.5"), full).outcome == "violated"


def test_an_isr_change_never_processed_is_named_on_a_zookeeper_row_with_alter_isr():
    old = _without_alter_steps("kafka-13141-leader-counts-a-diverging-fetch-offset.json")
    result = replay_scenario(scenario_model(old, "2.8.0"), old)
    assert ((result.outcome, result.step, str(result.action))
            == ("blocked", 13, "ElectLeader(leader=0)"))
    assert result.why.startswith("broker 0 is not in the controller's ISR [1]")
    assert ("step 10, ExpandIsr(leader=1, follower=0), sent an AlterIsr that no "
            "ProcessAlterPartition(leader=1) processed") in result.why
    assert "ReceiveAlterPartitionResponse(leader=1)" in result.why
    # before AlterIsr (2.2.0: the leader writes the ISR itself) the same steps are no AlterIsr story
    assert "AlterIsr" not in (replay_scenario(scenario_model(old, "2.2.0"), old).why or "")


def test_a_step_of_a_broker_that_is_down_says_so():
    model = scenario_model(load_scenario(SCENARIOS + "kip-101-scenario-1-committed-data-lost.json"),
                           "2.2.0")
    old = scenario_from_data({"model": "kafka", "protocol": "2.2.0",
                              "steps": ["Crash(broker=1)",
                                        "SendFetch(follower=1, leader=0)"]},
                             "x")
    result = replay(model, old.steps)
    assert result.outcome == "blocked" and result.why.startswith("broker 1 is not running")


def test_the_json_of_a_blocked_replay_has_why_and_the_enabling_steps(capsys, tmp_path):
    path = _without_alter_steps("kip-966-last-replica-standing.json", tmp_path)
    assert main(["trace", "replay", str(path), "--json"]) == 67
    captured = capsys.readouterr()
    data = json.loads(captured.out)
    assert data["outcome"] == "blocked" and "ISR change is pending" in data["why"]
    assert data["enabled_after"] == ["ProcessAlterPartition(leader=0)"]
    assert "ISR change is pending" in captured.err  # the error line says it too
    assert main(["trace", "replay", str(path), "--quiet"]) == 67
    text = " ".join(capsys.readouterr().out.split())
    assert "it would be enabled after ProcessAlterPartition(leader=0)" in text
