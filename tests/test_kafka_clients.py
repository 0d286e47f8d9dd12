"""Clients in the Kafka model (issue 16): the producer's acknowledgements (acks=1, acks=all with
min.insync.replicas) and consumers (KIP-320's consumer side, 2.3.0). Each story is replayed under
every release with the outcome that release's code gives; one small configuration with clients on
has its state counts pinned; with clients off nothing changes (tests/test_kafka_state_space.py pins
those)."""

from __future__ import annotations

import os
import random
from itertools import permutations

import pytest

from checker.bfs import check
from checker.search import SearchOptions
from invariants.registry import for_family
from kmc.cli import main
from spec.errors import UsageError, WrongModelError
from spec.kafka import symmetry as kafka_symmetry
from spec.kafka.protocols import RELEASES, resolve
from spec.kafka.rules import flag_rules
from spec.registry import build_model, get_model_info
from tests.kafka_steps import with_alter_isr
from traces.replay import replay_scenario, scenario_model
from traces.scenario import load_scenario, scenario_from_data

SCENARIOS = os.path.join(os.path.dirname(__file__), "..", "traces", "scenarios")
#: the ZooKeeper rows: the client stories are told with ZooKeeper's controller actions (on the KRaft
#: rows they block at the first election; tests/test_kafka_kraft.py replays acks=all on the KRaft
#: rows)
RELEASE_NAMES = [r.name for r in RELEASES if not r.features.kraft]
#: releases whose consumer validates its position after a leader change (KAFKA-7747, 2.3.0): the
#: 2.8.0+ rows
VALIDATING = {"2.8.0", "2.8.1", "3.4.1", "3.9.1"}


def _scenario(name: str):
    return load_scenario(os.path.join(SCENARIOS, name))


def _variant(data: dict):
    return scenario_from_data(data, "variant")


def _replay(name: str, protocol: str):
    """The story of ``name`` on ``protocol``; on a row with alter-isr (2.7.0+) each ISR change is
    followed by its AlterIsr round trip (``kafka_steps.with_alter_isr``). Returns the result and the
    step-number map."""
    scenario = _scenario(name)
    steps, shift = with_alter_isr(_raw_steps(name), protocol, scenario.features)
    if shift.changes:
        scenario = _variant({**_raw_doc(name), "steps": steps})
    return replay_scenario(scenario_model(scenario, protocol), scenario), shift


def _replay_steps(data: dict, protocol: str):
    """An inline story on ``protocol``, with the AlterIsr round trips on a row with alter-isr."""
    steps, shift = with_alter_isr(data["steps"], protocol, data.get("features"))
    scenario = _variant({**data, "steps": steps})
    return replay_scenario(scenario_model(scenario, protocol), scenario), shift


# -- the producer ----------------------------------------------------------------------------------
@pytest.mark.parametrize("protocol", RELEASE_NAMES)
def test_acks_1_loses_an_acknowledged_record_on_fail_over(protocol):
    result, _ = _replay("acks-1-lost-on-leader-failover.json", protocol)
    assert ((result.outcome, result.invariant.name, result.step)
            == ("violated", "acknowledged-durable", 4))
    assert "the producer was told record 1 of epoch 0 is written at offset 0" in result.explanation


@pytest.mark.parametrize("protocol", RELEASE_NAMES)
def test_acks_all_same_fail_over_holds(protocol):
    """The same steps with acks=all: m1 was appended but never acknowledged, so nothing promised is
    lost."""
    scenario = _scenario("acks-1-lost-on-leader-failover.json")
    steps = [step if isinstance(step, str) else step["action"]
             for step in _raw_steps("acks-1-lost-on-leader-failover.json")]
    variant = _variant({"scenario": "acks=all fail-over", "model": "kafka", "steps": steps,
                                  "constants": {**scenario.constants, "acks": -1},
                                  "invariants": ["acknowledged-durable"]})
    result = replay_scenario(scenario_model(variant, protocol), variant)
    assert result.outcome == "holds"
    assert result.trace.states[-1].acked == ()


@pytest.mark.parametrize("protocol", RELEASE_NAMES)
def test_acks_all_unclean_election_loses_and_min_isr_2_refuses(protocol):
    result, shift = _replay("acks-all-lost-by-unclean-election.json", protocol)
    assert ((result.outcome, result.invariant.name, result.step)
            == ("violated", "acknowledged-durable", shift.state(8)))
    scenario = _scenario("acks-all-lost-by-unclean-election.json")
    steps = [step if isinstance(step, str) else step["action"]
             for step in _raw_steps("acks-all-lost-by-unclean-election.json")]
    result, shift = _replay_steps({"scenario": "min.insync.replicas=2", "model": "kafka",
                                   "steps": steps,
                                   "constants": {**scenario.constants, "min_isr": 2},
                                   "features": {"unclean": True},
                                   "invariants": ["acknowledged-durable"]}, protocol)
    assert (result.outcome, result.step) == ("blocked", shift.blocked(2)), (
        "NOT_ENOUGH_REPLICAS: the Produce is refused")


def test_acks_1_acknowledges_on_append_and_acks_all_at_the_hw():
    s1 = build_model("kafka", ["acks=1"], "2.2.0")
    s_all = build_model("kafka", ["acks=-1"], "2.2.0")
    for model, acked in ((s1, ((0, 0, 1),)), (s_all, ())):
        init = model.init_states()[0]
        produced = dict((str(a), t) for a, t in model.successors(init))["Produce(leader=0)"]
        assert produced.acked == acked
    none = build_model("kafka", [], "2.2.0")
    produced = dict((str(a), t)
                    for a, t in none.successors(none.init_states()[0]))["Produce(leader=0)"]
    assert produced.acked == () and produced.consumers == ()


# -- consumers -------------------------------------------------------------------------------------
@pytest.mark.parametrize("protocol", RELEASE_NAMES)
def test_kip_320_consumer_silent_skip_before_2_3(protocol):
    result, shift = _replay("kip-320-consumer-silent-skip-before-2.3.json", protocol)
    if protocol in VALIDATING:
        assert (result.outcome, result.step) == ("blocked", shift.blocked(14)), (
            "2.3.0+: the position must be validated first")
        assert result.trace.states[-1].consumers[0].validating
    else:
        assert ((result.outcome, result.invariant.name, result.step)
                == ("violated", "no-silent-skip", shift.state(14)))
        consumer = result.trace.states[-1].consumers[0]
        assert consumer.consumed == ((0, 0, 1), (1, 2, 3)), (
            "it read m1, then m3: m2 at offset 0 is never seen")
        assert consumer.surfaced == 0


@pytest.mark.parametrize("protocol", RELEASE_NAMES)
def test_kip_320_consumer_truncation_detected_from_2_3(protocol):
    result, shift = _replay("kip-320-consumer-truncation-detected-2.3.json", protocol)
    if protocol in VALIDATING:
        assert result.outcome == "holds"
        validated = result.trace.states[shift.state(14)].consumers[0]
        assert (validated.position, validated.last_epoch, validated.surfaced) == (0, 0, 1), (
            "reset to the divergence")
        assert result.trace.states[-1].consumers[0].consumed == ((0, 0, 1), (0, 2, 2), (1, 2, 3))
    else:
        assert (result.outcome, result.step) == ("blocked", shift.blocked(14)), (
            "before 2.3.0 a consumer does not validate")


def test_consumer_out_of_range_resets_to_the_hw():
    """A position beyond the leader's LEO is OFFSET_OUT_OF_RANGE: the consumer resets (surfaced), to
    the HW."""
    steps = ["ShrinkIsr(leader=0, follower=1)", "Produce(leader=0)",
             "AdvanceHighWatermark(leader=0)", "ConsumerFetch(consumer=0, leader=0)",
             "Crash(broker=0)", "ProcessBrokerFailure(broker=0)", "UncleanLeaderElection(leader=1)",
             "DeliverLeaderAndIsr(broker=1, epoch=1)", "DeliverLeaderAndIsr(broker=1, epoch=2)",
             "ConsumerMetadata(consumer=0, leader=1)", "ConsumerFetch(consumer=0, leader=1)"]
    scenario = _variant({"scenario": "reset", "model": "kafka", "steps": steps,
                         "features": {"unclean": True},
                                   "constants": {"records": 1, "epochs": 2, "crashes": 1,
                                                 "consumers": 1},
                                   "invariants": ["no-silent-skip"]})
    result = replay_scenario(scenario_model(scenario, "2.2.0"), scenario)
    assert result.outcome == "holds"
    consumer = result.trace.states[-1].consumers[0]
    assert (consumer.position, consumer.surfaced, consumer.skipped) == (0, 1, False)
    violated = replay_scenario(scenario_model(scenario, "2.2.0"), _variant(
        {"scenario": "reset", "model": "kafka", "steps": steps, "features": {"unclean": True},
         "constants": {"records": 1, "epochs": 2, "crashes": 1, "consumers": 1},
         "invariants": ["consumed-stays"]}))
    # m1 vanished by an unclean election after the consumer read it, and the consumer did not read
    # on past the loss silently (it reset, surfaced): consumed-stays excuses it (the
    # unclean-election ghost)
    assert violated.outcome == "holds"
    assert ([c.read_before_unclean for c in (violated.trace.states[6].consumers[0],
                                             violated.trace.states[7].consumers[0])]
         == [0, 1]), "UncleanLeaderElection (step 7) marks what the consumer had read"


# -- state space, symmetry, the table, bad input ---------------------------------------------------
#: protocol -> (distinct states, states generated, depth) at records=1, epochs=1, crashes=1,
#: acks=-1, consumers=1 (2.8.1 and 3.9.1 were (11535, 39484, 28) before alter-isr: their ISR changes
#: are now AlterIsr round trips) (2.2.0 (14007, 47404, 33), 2.8.1 and 3.9.1 (50397, 213800, 34)
#: before ExpandIsr waited for the answer of the fetch it records, maybeExpandIsr's only caller;
#: 3.9.1 no longer equals 2.8.1: kafka-14140 (3.4.0) refuses to add back a follower the controller
#: knows dead, and effective-min-isr (3.7.0))
PINNED_CLIENTS = {"2.2.0": (10268, 35031, 33), "2.8.1": (48821, 208275, 34),
                  "3.9.1": (47229, 202636, 34)}
#: protocol -> (distinct states, states generated, depth) at records=1, epochs=1, crashes=0,
#: consumers=1, consumer_inflight=1 (a consumer's requests and answers through the network); 2.8.1
#: was (11374, 44397, 27) before alter-isr (0.10.2 (10122, 41985, 27), 2.2.0 (12283, 48193, 30),
#: 2.8.1 (96567, 426169, 34) before ExpandIsr waited for its fetch's answer: the same states, fewer
#: ways to reach them)
PINNED_DELAYED_CONSUMER = {"0.10.2": (10122, 40717, 27), "2.2.0": (12283, 46989, 30),
                           "2.8.1": (96567, 424845, 34)}


#: 3.9.1 differs from 2.8.1 at these bounds (kafka-14140, effective-min-isr: see PINNED_CLIENTS) but
#: shares its client code; the fast tier searches 2.8.1, the whole suite both
@pytest.mark.parametrize("protocol", [p if p != "3.9.1" else pytest.param(p, marks=pytest.mark.slow)
                                      for p in sorted(PINNED_CLIENTS)])
@pytest.mark.slow  # every line it runs, cheaper fast tests run too (coverage by test)
def test_pinned_state_counts_with_clients(protocol):
    model = build_model("kafka", ["records=1", "epochs=1", "crashes=1", "acks=-1", "consumers=1"],
                        protocol)
    invariants = [for_family("kafka")[name] for name in ("acknowledged-durable", "no-silent-skip",
                                                         "consumed-stays")]
    result = check(model, SearchOptions(invariants=invariants))
    assert result.verdict.value == "holds"
    assert ((result.distinct_states, result.states_generated, result.depth)
            == PINNED_CLIENTS[protocol])


#: 2.8.1 (96,567 states, AlterIsr round trips) is searched by the whole suite; the fast tier keeps
#: the consumer's requests through the network on 0.10.2 and 2.2.0, and 2.8.1's clients in
#: test_pinned_state_counts_with_clients
@pytest.mark.parametrize("protocol", [p if p != "2.8.1" else pytest.param(p, marks=pytest.mark.slow)
                                      for p in sorted(PINNED_DELAYED_CONSUMER)])
@pytest.mark.slow  # every line it runs, cheaper fast tests run too (coverage by test)
def test_pinned_state_counts_with_delayed_consumer_requests(protocol):
    model = build_model("kafka", ["records=1", "epochs=1", "crashes=0", "consumers=1",
                                  "consumer_inflight=1"], protocol)
    invariants = [for_family("kafka")[name] for name in ("no-silent-skip", "consumed-stays")]
    result = check(model, SearchOptions(invariants=invariants))
    assert result.verdict.value == "holds"
    assert ((result.distinct_states, result.states_generated, result.depth)
            == PINNED_DELAYED_CONSUMER[protocol])


def test_clients_off_is_the_replica_only_model():
    on = build_model("kafka", ["records=1", "epochs=1", "crashes=1"], "2.2.0")
    assert "acks" not in on.constants and "consumers" not in on.constants
    assert on.init_states()[0].consumers == () and on.init_states()[0].acked == ()


def test_transitions_with_a_consumer_commute_with_renaming():
    model = build_model("kafka", ["records=1", "epochs=2", "consumers=1", "acks=1"], "2.8.1")
    rng = random.Random(7)
    frontier, seen = list(model.init_states()), []
    while frontier and len(seen) < 2000:
        state = frontier.pop()
        seen.append(state)
        frontier.extend(t for _, t in model.successors(state))
    for state in rng.sample(seen, 80):
        successors = {t for _, t in model.successors(state)}
        for perm in permutations(range(2)):
            image = kafka_symmetry.permute(state, perm)
            assert ({t for _, t in model.successors(image)}
                    == {kafka_symmetry.permute(t, perm) for t in successors})


def test_consumer_rule_is_in_the_table_and_its_rows():
    rule = flag_rules()["consumer-truncation-detection"]
    assert rule.introduced == "2.3.0" and "Fetcher.java validateOffsetsIfNeeded" in rule.source
    assert ({r.name for r in RELEASES if r.features.consumer_truncation_detection
             and not r.features.kraft} == VALIDATING)
    assert not resolve("2.2.0").consumer_truncation_detection
    names = {c.name for c in get_model_info("kafka").constants}
    assert {"acks", "min_isr", "consumers"} <= names


def test_bad_acks_is_one_line_exit_64(capsys):
    code = main(["check", "kafka", "--const", "acks=2"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 64 and len(err) == 1 and "acks" in err[0]


def _raw_doc(name: str) -> dict:
    import json

    with open(os.path.join(SCENARIOS, name)) as f:
        return json.load(f)


def _raw_steps(name: str) -> list:
    return _raw_doc(name)["steps"]


#: the shortest acks=all loss under 2.8.0 at records=2, epochs=2, crashes=1 (kmc check kafka
#: --protocol 2.8.0 --const acks=-1 --invariant acknowledged-durable): a deposed leader (broker 1,
#: epoch 1) is told by a diverging fetch that its follower's LEO is 1 (KAFKA-13141), advances its HW
#: over m2 and acknowledges it; broker 0 leads epoch 2 with m1 there
KAFKA_13141_ACKS_ALL = ["PreferredLeaderElection(leader=1)", "PreferredLeaderElection(leader=0)",
                        "Produce(leader=0)", "DeliverLeaderAndIsr(broker=0, epoch=1)",
                        "SendFetch(follower=0, leader=1)", "DeliverLeaderAndIsr(broker=0, epoch=2)",
                        "DeliverLeaderAndIsr(broker=1, epoch=1)", "Produce(leader=1)",
                        "ServeFetch(leader=1, follower=0)", "AdvanceHighWatermark(leader=1)"]


@pytest.mark.parametrize("protocol", ["2.8.0", "2.8.1", "3.4.1", "3.9.1"])
def test_kafka_13141_loses_an_acks_all_write_in_2_8_0_only(protocol):
    scenario = _variant({"scenario": "KAFKA-13141, acks=all", "model": "kafka",
                         "steps": KAFKA_13141_ACKS_ALL,
                         "constants": {"records": 2, "epochs": 2, "crashes": 1, "acks": -1},
                         "invariants": ["acknowledged-durable"]})
    result = replay_scenario(scenario_model(scenario, protocol), scenario)
    if protocol == "2.8.0":
        assert ((result.outcome, result.invariant.name, result.step)
                == ("violated", "acknowledged-durable", 10))
        assert result.trace.states[-1].acked == ((0, 1, 2),)
    else:
        assert (result.outcome, result.step) == ("blocked", 10), (
            "KAFKA-13141's fix: the HW cannot pass m2")


def test_canonical_with_a_consumer_is_exact():
    """``--symmetry`` with consumers: the canonical state is the same for every renaming of the
    brokers."""
    model = build_model("kafka", ["records=1", "epochs=2", "consumers=1"], "2.2.0")
    frontier, seen = list(model.init_states()), []
    while frontier and len(seen) < 2000:
        state = frontier.pop()
        seen.append(state)
        frontier.extend(t for _, t in model.successors(state))
    for state in random.Random(3).sample(seen, 80):
        canon = model.canonical(state)
        orbit = {kafka_symmetry.permute(state, perm) for perm in permutations(range(2))}
        assert canon in orbit and all(model.canonical(image) == canon for image in orbit)


# -- KAFKA-14704 seen by a consumer through KIP-392 fetch-from-follower ----------------------------
FROM_FOLLOWER = "kafka-14704-consumer-reads-from-follower-below-its-hw.json"
#: releases with KIP-392 (2.4.0): the model's rows from 2.8.0; fetch-from-follower is off in every
#: row
KIP_392 = {"2.8.0", "2.8.1", "3.4.1", "3.9.1"}


@pytest.mark.parametrize("protocol", RELEASE_NAMES)
def test_kafka_14704_consumer_reads_an_uncommitted_record_from_a_follower(protocol):
    scenario = _scenario(FROM_FOLLOWER)
    if protocol not in KIP_392:
        with pytest.raises(WrongModelError, match="fetch-from-follower"):
            scenario_model(scenario, protocol)
        return
    result = replay_scenario(scenario_model(scenario, protocol), scenario)
    consumer = result.trace.states[-1].consumers[0]
    if protocol in ("2.8.0", "2.8.1"):
        assert ((result.outcome, result.invariant.name, result.step)
                == ("violated", "consumed-stays", 22))
        assert consumer.consumed == ((0, 0, 1), (1, 0, 2)), (
            "m2 (epoch 0) at offset 1, never committed")
        assert "no unclean election happened" in result.explanation
    else:
        assert result.outcome == "holds"
        assert consumer.consumed == ((0, 0, 1),), (
            "3.4.1+: the follower's HW stays 1, the consumer reads m1 only")


@pytest.mark.parametrize(("protocol", "flags", "outcome"), [
    ("2.8.1", ["kafka-14704=on"], "holds"),
    ("3.4.1", ["kafka-14704=off"], "violated"),
    ("2.8.0", ["fetch-from-follower=off"], "blocked"),
])
def test_kafka_14704_consumer_story_turns_on_the_fix_and_on_kip_392(protocol, flags, outcome):
    scenario = _scenario(FROM_FOLLOWER)
    result = replay_scenario(scenario_model(scenario, protocol, flags), scenario)
    assert result.outcome == outcome
    if outcome == "blocked":
        assert result.step == 22, "without KIP-392 a consumer reads from the leader only"


def test_fetch_from_follower_is_refused_before_2_4_and_off_in_every_row():
    assert not any(r.features.fetch_from_follower for r in RELEASES)
    with pytest.raises(UsageError, match="2.4.0"):
        resolve("2.2.0", {"fetch-from-follower": True})
    assert resolve("2.8.0", {"fetch-from-follower": True}).fetch_from_follower
    rule = flag_rules()["fetch-from-follower"]
    assert rule.introduced == "2.4.0" and "findPreferredReadReplica" in rule.source


def test_replay_all_protocols_reports_rows_without_the_flag_as_n_a(capsys):
    import json

    code = main(["trace", "replay", os.path.join(SCENARIOS, FROM_FOLLOWER), "--all-protocols",
                 "--json"])
    rows = {row["protocol"]: row for row in json.loads(capsys.readouterr().out)["replays"]}
    assert code == 0
    assert rows["2.2.0"]["outcome"] == "n/a" and "fetch-from-follower" in rows["2.2.0"]["detail"]
    assert (rows["2.8.0"]["outcome"], rows["2.8.0"]["step"]) == ("violated", 22)
    assert rows["3.9.1"]["outcome"] == "holds"


# -- the unclean-election ghost and the empty-fetch skip -------------------------------------------
def test_consumed_stays_excuses_unclean_loss_only_when_not_read_on_silently():
    """The KIP-320 silent-skip story under 2.2.0: m1 vanished by an unclean election (excused) until
    the consumer reads on past the rewritten offset without being told: then consumed-stays breaks
    too."""
    scenario = _scenario("kip-320-consumer-silent-skip-before-2.3.json")
    steps = [step if isinstance(step, str) else step["action"] for step in _raw_steps(
        "kip-320-consumer-silent-skip-before-2.3.json")]
    variant = _variant({"scenario": "consumed-stays", "model": "kafka", "steps": steps,
                        "constants": scenario.constants, "features": {"unclean": True},
                        "invariants": ["consumed-stays"]})
    result = replay_scenario(scenario_model(variant, "2.2.0"), variant)
    assert ((result.outcome, result.invariant.name, result.step)
            == ("violated", "consumed-stays", 14))
    assert "read on past the loss" in result.explanation
    assert result.trace.states[13].consumers[0].read_before_unclean == 1


def test_empty_fetch_past_rewritten_records_is_a_silent_skip():
    """records=2: the consumer read m1 at offset 0; after an unclean election m2 is at offset 0 and
    the consumer's fetch at position 1 (the LEO) is answered empty without error: it will never read
    m2 (2.2.0); 2.8.0 validates."""
    steps = ["ShrinkIsr(leader=0, follower=1)", "Produce(leader=0)",
             "AdvanceHighWatermark(leader=0)", "ConsumerFetch(consumer=0, leader=0)",
             "Crash(broker=0)", "ProcessBrokerFailure(broker=0)", "UncleanLeaderElection(leader=1)",
             "DeliverLeaderAndIsr(broker=1, epoch=1)", "DeliverLeaderAndIsr(broker=1, epoch=2)",
             "Produce(leader=1)", "ConsumerMetadata(consumer=0, leader=1)",
             "ConsumerFetch(consumer=0, leader=1)"]
    story = {"scenario": "empty skip", "model": "kafka", "steps": steps,
             "features": {"unclean": True}, "constants": {"records": 2, "epochs": 2, "crashes": 1,
                                                          "consumers": 1},
             "invariants": ["no-silent-skip"]}
    result, _ = _replay_steps(story, "2.2.0")
    assert ((result.outcome, result.invariant.name, result.step)
            == ("violated", "no-silent-skip", 12))
    assert result.trace.states[-1].consumers[0].consumed == ((0, 0, 1),), (
        "nothing read: an empty answer")
    validating, shift = _replay_steps(story, "2.8.0")
    assert shift.changes == (1,), "2.8.0 shrinks the ISR through AlterIsr"
    assert (validating.outcome, validating.step) == ("blocked", shift.blocked(12)), (
        "2.3.0+: it validates its position first")


# -- a consumer's requests through the network (consumer_inflight=1) -------------------------------
#: the consumer reads m1, sends a fetch at offset 1 that the leader answers with m2, then learns a
#: new epoch (a bump) before the answer arrives
LATE_ANSWER = ["ShrinkIsr(leader=0, follower=1)", "Produce(leader=0)",
               "AdvanceHighWatermark(leader=0)", "ConsumerSendFetch(consumer=0, broker=0)",
               "ServeConsumerFetch(consumer=0, broker=0)",
               "ReceiveConsumerFetch(consumer=0, broker=0)", "Produce(leader=0)",
               "AdvanceHighWatermark(leader=0)", "ConsumerSendFetch(consumer=0, broker=0)",
               "ServeConsumerFetch(consumer=0, broker=0)", "BumpLeaderEpoch(leader=0)",
               "ConsumerMetadata(consumer=0, leader=0)",
               "ReceiveConsumerFetch(consumer=0, broker=0)"]


@pytest.mark.parametrize("protocol", ["2.2.0", "2.8.0"])
def test_a_late_fetch_answer_is_discarded_once_the_position_awaits_validation(protocol):
    result, shift = _replay_steps({"scenario": "late answer", "model": "kafka",
                                   "steps": LATE_ANSWER,
                                   "constants": {"records": 2, "epochs": 1, "crashes": 0,
                                                 "bumps": 1, "consumers": 1,
                           "consumer_inflight": 1},
                                   "invariants": ["no-silent-skip", "consumed-stays"]}, protocol)
    assert result.outcome == "holds"
    served = result.trace.states[shift.state(10)].consumers[0]
    assert served.inflight[1:4] == (2, 0, 1) and served.inflight[4][2] == ((1, 0, 2),), (
        "the answer carries m2")
    consumer = result.trace.states[-1].consumers[0]
    assert consumer.inflight == ()
    if protocol == "2.8.0":
        assert consumer.validating and consumer.consumed == ((0, 0, 1),), (
            "Fetcher discards it: awaiting validation")
    else:
        assert consumer.consumed == ((0, 0, 1), (1, 0, 2)), "before 2.3.0 the late answer is used"


def test_a_consumer_request_is_lost_with_its_broker():
    steps = ["ConsumerSendFetch(consumer=0, broker=0)", "Crash(broker=0)",
             "ConsumerDisconnect(consumer=0, broker=0)"]
    scenario = _variant({"scenario": "lost", "model": "kafka", "steps": steps,
                         "constants": {"records": 1, "epochs": 1, "crashes": 1, "consumers": 1,
                                       "consumer_inflight": 1},
                         "invariants": ["consumed-stays"]})
    result = replay_scenario(scenario_model(scenario, "2.8.1"), scenario)
    assert result.outcome == "holds"
    assert result.trace.states[1].consumers[0].inflight[:2] == (0, 1)
    assert result.trace.states[-1].consumers[0].inflight == ()
    one_step = build_model("kafka", ["records=1", "consumers=1"], "2.8.1")
    assert not any(str(a).startswith("ConsumerSendFetch")
                   for a, _ in one_step.successors(one_step.init_states()[0]))


def test_transitions_with_delayed_consumer_requests_commute_with_renaming():
    model = build_model("kafka", ["records=1", "epochs=2", "consumers=1", "consumer_inflight=1"],
                        "2.8.1")
    frontier, seen = list(model.init_states()), []
    while frontier and len(seen) < 2000:
        state = frontier.pop()
        seen.append(state)
        frontier.extend(t for _, t in model.successors(state))
    assert any(state.consumers[0].inflight for state in seen)
    for state in random.Random(11).sample(seen, 80):
        successors = {t for _, t in model.successors(state)}
        for perm in permutations(range(2)):
            image = kafka_symmetry.permute(state, perm)
            assert ({t for _, t in model.successors(image)}
                    == {kafka_symmetry.permute(t, perm) for t in successors})
