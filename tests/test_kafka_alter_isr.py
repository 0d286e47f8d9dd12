"""ZooKeeper-mode AlterIsr (issue 27 item 5, flag ``alter-isr``): from 2.7.0 at inter-broker
protocol 2.7-IV2 the leader changes the ISR with an AlterIsr request to the controller instead of
writing ZooKeeper itself. Each behaviour is replayed on a row before the change (2.2.0, which stands
for 2.2 to 2.7 at an older inter-broker protocol) and on a row after it (2.8.0 and later), with the
outcome the release sources give (2.7.0 / 2.8.0 ``Partition.scala``, ``AlterIsrManager.scala``,
``KafkaController.processAlterIsr``; 3.9.0 ``tryProcessAlterPartition``)."""

from __future__ import annotations

import pytest

from spec.errors import UsageError
from spec.kafka.protocols import RELEASES, resolve
from spec.kafka.scenario import ScenarioError, run_scenario
from spec.kafka.state import (
    ALTER_PARTITION,
    ALTER_PARTITION_RESPONSE,
    FENCED_LEADER_EPOCH,
    LEADER_AND_ISR,
    NONE,
    STALE_BROKER_EPOCH,
    STOP_REPLICA,
)
from tests.kafka_steps import deliver, fetch, model, offsets_round

SHRINK = ("ShrinkIsr", {"leader": 0, "follower": 1})
EXPAND = ("ExpandIsr", {"leader": 0, "follower": 1})
PROCESS = ("ProcessAlterPartition", {"leader": 0})
RECEIVE = ("ReceiveAlterPartitionResponse", {"leader": 0})
ADVANCE = ("AdvanceHighWatermark", {"leader": 0})
AFTER = ("2.8.0", "2.8.1", "3.4.1", "3.9.1")


def _messages(state, kind):
    return [m for m in state.network if m.kind == kind]


def _enabled(m, state) -> set[str]:
    return {a.name for a, _ in m.successors(state)}


def test_the_flag_is_on_from_the_first_row_with_alter_isr_and_only_in_zookeeper_mode():
    on = {r.name for r in RELEASES if r.features.alter_isr}
    assert on == set(AFTER), "2.7.0+ at IBP 2.7-IV2: the model's 2.8.0 and later ZooKeeper rows"
    assert resolve("2.2.0", {"kafka-8400": True, "alter-isr": True}).alter_isr, (
        "2.7.x: the 2.2.0 row with both on")
    # no KIP-380 broker epochs yet; the KRaft controller's is AlterPartition
    for protocol in ("2.1.1", "kraft-3.5"):
        with pytest.raises(UsageError, match="alter-isr"):
            resolve(protocol, {"alter-isr": True})


def test_a_shrink_writes_zookeeper_at_once_before_2_7_and_is_an_alter_isr_request_from_it():
    """2.2.0 ``Partition.shrinkIsr`` -> ``updateIsr``: the ISR is in ZooKeeper at once. 2.8.0
    ``shrinkIsr`` -> ``sendAlterIsrRequest(PendingShrinkIsr)``: the controller's ISR is unchanged
    until it processes the request; it writes the ISR with a new zkVersion, sends no LeaderAndIsr
    (UpdateMetadata only), and the leader commits the ISR from the answer."""
    old = run_scenario(model("2.2.0", "records=1"), [SHRINK])[-1]
    assert old.brokers[0].isr == old.controller.isr == (0,) and not old.network
    m = model("2.8.0", "records=1")
    sent, processed, received = run_scenario(m, [SHRINK, PROCESS, RECEIVE])[1:]
    leader = sent.brokers[0]
    assert (leader.isr, leader.committed_isr, leader.alter_pending) == ((0, 1), (0, 1), True), (
        "the maximal ISR")
    assert sent.controller.isr == (0, 1)
    (request,) = _messages(sent, ALTER_PARTITION)
    assert ((request.epoch, request.partition_epoch, request.isr, request.broker_epochs)
            == (0, 0, (0,), (0, -1)))
    assert ((processed.controller.isr, processed.controller.partition_epoch,
             processed.controller.epoch) == ((0,), 1, 0))
    assert not _messages(processed, LEADER_AND_ISR), (
        "processAlterIsr sends UpdateMetadata, not LeaderAndIsr")
    (answer,) = _messages(processed, ALTER_PARTITION_RESPONSE)
    assert ((answer.error, answer.isr, answer.new_epoch, answer.new_partition_epoch)
            == (NONE, (0,), 0, 1))
    leader = received.brokers[0]
    assert (leader.isr, leader.alter_pending, leader.partition_epoch) == ((0,), False, 1)
    # the 2.2.0 row with alter-isr on (2.7.x at IBP 2.7-IV2) does the same
    seven = model("2.2.0", "records=1", features=("kafka-8400=on", "alter-isr=on"))
    assert run_scenario(seven, [SHRINK, PROCESS, RECEIVE])[-1].brokers[0].isr == (0,)


def test_one_alter_isr_in_flight_and_no_second_change_until_it_is_answered():
    """``canAddReplicaToIsr`` / ``maybeShrinkIsr``: ``!isrState.isInflight``. With three brokers the
    leader may not shrink the second follower while the first shrink is pending."""
    m = model("2.8.0", "brokers=3", "records=1")
    pending = run_scenario(m, [SHRINK])[-1]
    assert not {"ShrinkIsr", "ExpandIsr"} & _enabled(m, pending)
    done = run_scenario(m, [PROCESS, RECEIVE], pending)[-1]
    assert (("ShrinkIsr", (("leader", 0), ("follower", 2)))
            in {(a.name, a.params) for a, _ in m.successors(done)})
    old = model("2.2.0", "brokers=3", "records=1")
    assert "ShrinkIsr" in _enabled(old, run_scenario(old, [SHRINK])[-1]), (
        "2.2.0: the write is done at once")


@pytest.mark.parametrize("protocol", ["2.2.0", "2.8.0"])
def test_the_hw_during_a_pending_shrink_and_a_pending_expand_uses_the_maximal_isr(protocol):
    """2.7.0 ``maybeIncrementLeaderHW``: the HW is the least LEO over ``isrState.maximalIsr``: a
    pending shrink still counts the follower being removed, a pending expansion counts the new
    member at once. 2.2.0 writes the shrink at once, so its HW passes m1 with the follower out of
    the ISR right after the ShrinkIsr."""
    m = model(protocol, "records=2")
    shrunk = run_scenario(m, [SHRINK, ("Produce", {"leader": 0})])[-1]
    if protocol == "2.2.0":
        assert run_scenario(m, [ADVANCE], shrunk)[-1].brokers[0].hw == 1
        return
    with pytest.raises(ScenarioError):  # the follower (LEO unknown) is still in the maximal ISR
        run_scenario(m, [ADVANCE], shrunk)
    committed = run_scenario(m, [PROCESS, RECEIVE, ADVANCE], shrunk)[-1]
    assert committed.brokers[0].hw == 1, "once the shrink is committed the HW passes m1"
    # the follower catches up to the HW and the leader proposes it back; meanwhile m2 is not
    # committed on the leader alone: the maximal ISR {0, 1} holds the HW at the follower's LEO
    back = run_scenario(m, [*fetch(1, 0), ("SendFetch", {"follower": 1, "leader": 0}),
                            ("ServeFetch", {"leader": 0, "follower": 1}), EXPAND,
                            ("Produce", {"leader": 0})],
                        committed)[-1]
    leader = back.brokers[0]
    assert ((leader.isr, leader.committed_isr, leader.alter_pending, leader.remote[1])
            == ((0, 1), (0,), True, 1))
    assert back.controller.isr == (0,)
    with pytest.raises(ScenarioError):
        run_scenario(m, [ADVANCE], back)


@pytest.mark.parametrize("protocol", AFTER)
def test_a_shrink_in_flight_while_the_leader_changes_is_fenced_and_dropped_by_the_leaderandisr(
    protocol):
    """``processAlterIsr``: FENCED_LEADER_EPOCH for an older leader epoch;
    ``handleAlterIsrResponse``: gives up, the state stays pending (no further ISR change);
    ``makeFollower``: ``clearPending``, a committed ISR. The controller elected broker 1 from the
    ISR it has, {0, 1}: the shrink never reached ZooKeeper. 2.2.0 cannot tell this story: its shrink
    is in ZooKeeper at once, and broker 1 is no longer electable."""
    m = model(protocol, "records=1")
    elect = ("PreferredLeaderElection", {"leader": 1})
    states = run_scenario(m, [SHRINK, elect, PROCESS])
    fenced = states[-1]
    (answer,) = _messages(fenced, ALTER_PARTITION_RESPONSE)
    assert answer.error == FENCED_LEADER_EPOCH and fenced.controller.isr == (0, 1)
    waiting = run_scenario(m, [RECEIVE], fenced)[-1]
    assert (waiting.brokers[0].alter_pending and not {"ShrinkIsr", "ExpandIsr"}
            & _enabled(m, waiting))
    follower = run_scenario(m, [deliver(0, 1)], waiting)[-1].brokers[0]
    assert ((follower.leader, follower.alter_pending, follower.committed_isr,
             follower.partition_epoch) == (1, False, (), 1))
    with pytest.raises(ScenarioError):
        run_scenario(model("2.2.0", "records=1"), [SHRINK, elect])


def test_a_lost_answer_is_resent_and_answered_with_the_state_it_wrote():
    """``BrokerToControllerRequestThread.handleResponse`` (2.7.0, 2.8.0): a disconnect puts the
    request back first in the queue; ``processAlterIsr`` answers a request whose ISR is already the
    partition's with the current state (``equalsIgnoreZk``, before the version check; 3.3+
    ``equalsAllowStalePartitionEpoch``), so the leader commits. The KRaft controller answers the
    same resend INVALID_UPDATE_VERSION (the leader waits for the metadata)."""
    m = model("2.8.0", "records=1", "alter_losses=1")
    lost = run_scenario(m, [SHRINK, ("LoseAlterPartitionResponse", {"leader": 0})])[-1]
    assert lost.controller.isr == (0,) and lost.controller.partition_epoch == 1
    assert (not _messages(lost, ALTER_PARTITION_RESPONSE) and len(_messages(lost, ALTER_PARTITION))
            == 1)
    again = run_scenario(m, [PROCESS], lost)[-1]
    (answer,) = _messages(again, ALTER_PARTITION_RESPONSE)
    assert (answer.error, answer.isr, answer.new_partition_epoch) == (NONE, (0,), 1)
    assert again.controller.partition_epoch == 1, "no second write"
    leader = run_scenario(m, [RECEIVE], again)[-1].brokers[0]
    assert (leader.isr, leader.alter_pending, leader.partition_epoch) == ((0,), False, 1)


def test_a_request_from_a_bounced_leader_is_refused_by_broker_epoch():
    """``processAlterIsr``: ``liveBrokerIdAndEpochs`` has the new broker epoch once the controller
    processed the bounce: STALE_BROKER_EPOCH (top level, before the leader epoch); the new
    incarnation has no pending ISR state and ignores the answer. Before the controller notices the
    bounce, the same request is written (the broker epoch still matches), as Kafka's controller
    would."""
    m = model("2.8.0", "records=1", "bounces=1", "epochs=2")
    bounced = run_scenario(m, [SHRINK, ("Bounce", {"broker": 0})])[-1]
    assert bounced.brokers[0].broker_epoch == 1 and not bounced.brokers[0].alter_pending
    noticed = run_scenario(m, [("ProcessBrokerChange", {"broker": 0}), PROCESS], bounced)[-1]
    (answer,) = _messages(noticed, ALTER_PARTITION_RESPONSE)
    assert answer.error == STALE_BROKER_EPOCH and noticed.controller.isr == (0, 1)
    ignored = run_scenario(m, [RECEIVE], noticed)[-1]
    assert not _messages(ignored, ALTER_PARTITION) and not ignored.brokers[0].alter_pending
    unnoticed = run_scenario(m, [PROCESS], bounced)[-1]
    assert (unnoticed.controller.isr == (0,)
            and _messages(unnoticed, ALTER_PARTITION_RESPONSE)[0].error == NONE)


@pytest.mark.parametrize("protocol", ("2.2.0",) + AFTER)
def test_a_controlled_shutdowns_stop_replica_waits_for_the_leaderandisr_sent_before_it(protocol):
    """2.8.0 ``KafkaController.doControlledShutdown``: the LeaderAndIsr of the leadership move
    (``handleStateChanges(partitionsLedByBroker, OnlinePartition, ...)``, to the shutting-down
    broker too) is queued before the StopReplica of the next batch
    (``addStopReplicaRequestForBrokers``, ``sendRequestsToBrokers``), and the controller's channel
    to a broker is one ``LinkedBlockingQueue`` that ``RequestSendThread.doWork`` sends in order, one
    request at a time (``ControllerChannelManager``). Both carry the new leader epoch; with
    ``alter-isr`` the LeaderAndIsr also carries the new zkVersion (1) where the StopReplica has
    none, and the StopReplica must not overtake it for that (``channel_order``: the kind before the
    version)."""
    m = model(protocol, "records=1", "epochs=1", "shutdowns=1")
    shutdown = [("ControlledShutdown", {"broker": 0}),
                ("ProcessControlledShutdown", {"broker": 0, "leader": 1})]
    queued = run_scenario(m, shutdown)[-1]
    to_0 = [msg for msg in queued.network if msg.dst == 0]
    assert sorted(msg.kind for msg in to_0) == [LEADER_AND_ISR, STOP_REPLICA]
    (move,) = [msg for msg in to_0 if msg.kind == LEADER_AND_ISR]
    assert move.partition_epoch == (1 if protocol in AFTER else 0), (
        "the election's write moves the zkVersion")
    assert "DeliverStopReplica" not in _enabled(m, queued), (
        "the StopReplica is behind the LeaderAndIsr")
    moved = run_scenario(m, [deliver(0, 1)], queued)[-1]
    assert moved.brokers[0].leader == 1 and "DeliverStopReplica" in _enabled(m, moved)


def test_the_alters_bound_counts_alter_isr_requests():
    m = model("2.8.0", "records=1", "alters=1")
    done = run_scenario(m, [SHRINK, PROCESS, RECEIVE])[-1]
    assert done.alters == 1 and not {"ShrinkIsr", "ExpandIsr"} & _enabled(m, done)
    assert model("2.8.0").constants["alters"] == 2 and "alters" not in model("2.2.0").constants


def test_alter_isr_off_is_the_direct_zookeeper_write_of_before():
    """``--feature alter-isr=off`` on 2.8.0 (2.8 at an inter-broker protocol below 2.7-IV2) is the
    model before this change, state for state: the count 2.8.0 had pinned when its leader wrote the
    ISR itself (3978, 11501, 26 before ExpandIsr waited for the answer of the fetch it records, as
    the 2.2.0 row does)."""
    from checker.bfs import check
    from checker.search import SearchOptions

    result = check(model("2.8.0", "records=1", "epochs=1", "crashes=1",
                         features=("alter-isr=off",)), SearchOptions())
    assert (result.distinct_states, result.states_generated, result.depth) == (3201, 9243, 27)


#: KAFKA-14140 (3.4.0, 163d00b3e61): a dead follower proposed into the ISR. Broker 1 is shrunk out,
#: fetches again and leader 0 proposes it back (the fetch it serves records its LEO:
#: maybeExpandIsr); broker 1 crashes and the controller processes its death before the AlterIsr (no
#: new epoch: broker 1 is in no ISR the controller has)
_BACK = [SHRINK, PROCESS, RECEIVE, ("SendFetch", {"follower": 1, "leader": 0}),
         ("ServeFetch", {"leader": 0, "follower": 1}), EXPAND]
_DEAD_FOLLOWER_EXPANDED = [*_BACK, ("Crash", {"broker": 1}),
                           ("ProcessBrokerFailure", {"broker": 1}), PROCESS]


@pytest.mark.parametrize("protocol, features, rejected", [
    ("3.4.1", (), True), ("3.9.1", (), True), ("2.8.1", (), False),
    ("3.4.1", ("kafka-14140=off",), False)])
def test_kafka_14140_the_controller_answers_ineligible_replica_for_a_dead_member_and_the_leader_reverts(  # noqa: E501
        protocol, features, rejected):
    """3.4.0 ``KafkaController.tryProcessAlterPartition``:
    ``newLeaderAndIsr.isr.toSet -- liveBrokerIds`` non-empty -> INELIGIBLE_REPLICA (after the
    version check); ``Partition.handleAlterPartitionError``: INELIGIBLE_REPLICA resets the partition
    state to the last committed one. 2.7 to 3.3 write the ISR with the dead broker in it."""
    from spec.kafka.state import INELIGIBLE_REPLICA

    m = model(protocol, "records=1", "alters=2", features=features)
    processed = run_scenario(m, _DEAD_FOLLOWER_EXPANDED)[-1]
    (answer,) = _messages(processed, ALTER_PARTITION_RESPONSE)
    if not rejected:
        assert answer.error == NONE and processed.controller.isr == (0, 1), (
            "2.7-3.3: a dead broker written to the ISR")
        return
    assert answer.error == INELIGIBLE_REPLICA and processed.controller.isr == (0,)
    leader = run_scenario(m, [RECEIVE], processed)[-1].brokers[0]
    assert (leader.isr, leader.alter_pending) == ((0,), False), "reverted to the committed ISR"


def test_kafka_14140_a_member_in_controlled_shutdown_is_ineligible_once_the_controller_processed_it():  # noqa: E501
    """3.4.0 ``ControllerContext.liveBrokerIds`` excludes ``shuttingDownBrokerIds``, which
    ``doControlledShutdown`` adds to. Broker 1 (out of the ISR, proposed back) asks to shut down and
    the controller processes it (a StopReplica) before the AlterIsr: INELIGIBLE_REPLICA on 3.4.1,
    written on 2.8.1. Before the controller processed the request broker 1 is still live for it."""
    from spec.kafka.state import INELIGIBLE_REPLICA

    shutdown = [("ControlledShutdown", {"broker": 1}),
                ("ProcessControlledShutdown", {"broker": 1, "leader": 0})]
    for protocol, steps, error in (("3.4.1", [*_BACK, *shutdown, PROCESS], INELIGIBLE_REPLICA),
                                   ("2.8.1", [*_BACK, *shutdown, PROCESS], NONE),
                                   ("3.4.1", [*_BACK, shutdown[0], PROCESS], NONE)):
        (answer,) = _messages(run_scenario(model(protocol, "records=1", "alters=2", "shutdowns=1"),
                                           steps)[-1],
                              ALTER_PARTITION_RESPONSE)
        assert answer.error == error, (protocol, steps[-2])


@pytest.mark.parametrize("protocol", ["2.2.0", "2.8.1", "3.9.1"])
def test_the_leader_expands_the_isr_only_as_it_records_an_accepted_fetch(protocol):
    """2.2.0 / 2.8.0 / 3.9.0 ``Partition.updateFollowerFetchState`` (0.10.2
    ``updateReplicaLogReadResult``) is the only caller of ``maybeExpandIsr``. Broker 1 is shrunk out
    and fetches m1 (the leader records LEO 1, which passes the HW and, KAFKA-7128, the start offset
    1 of epoch 1; the leader does not expand then); leader 0 is re-elected in epoch 1 (it keeps
    broker 1's recorded LEO: makeLeader of a leader that was one). Until broker 1 fetches in epoch 1
    the leader does not add it: not from the LEO of epoch 0, not on the FENCED_LEADER_EPOCH answer
    to its fetch of epoch 0; the accepted fetch of epoch 1 does. (Before this model change ExpandIsr
    was enabled right after the re-election.)"""
    m = model(protocol, "records=1", "bumps=1", "alters=2")
    shrink = [SHRINK, PROCESS, RECEIVE] if resolve(protocol).alter_isr else [SHRINK]
    rebuilt = run_scenario(m, [("Produce", {"leader": 0}), *shrink, *fetch(1, 0), *fetch(1, 0),
                               ("BumpLeaderEpoch", {"leader": 0}), deliver(0, 1)])[-1]
    leader = rebuilt.brokers[0]
    assert (leader.epoch, leader.isr, leader.remote[1], leader.hw) == (1, (0,), 1, 0), (
        "the record of epoch 0 is kept")
    assert "ExpandIsr" not in _enabled(m, rebuilt)
    fenced = run_scenario(m, [("SendFetch", {"follower": 1, "leader": 0}),
                              ("ServeFetch", {"leader": 0, "follower": 1})], rebuilt)[-1]
    assert "ExpandIsr" not in _enabled(m, fenced), "the answer is FENCED_LEADER_EPOCH"
    # KIP-320: a new epoch
    truncation = offsets_round(1, 0) if resolve(protocol).uses_offsets_request else []
    accepted = run_scenario(m, [("ReceiveFetch", {"follower": 1, "leader": 0}), deliver(1, 1),
                                *truncation, ("SendFetch", {"follower": 1, "leader": 0}),
                                ("ServeFetch", {"leader": 0, "follower": 1}), EXPAND], fenced)[-1]
    assert accepted.brokers[0].isr == (0, 1)
