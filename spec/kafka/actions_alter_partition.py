"""The leader's AlterPartition and the KRaft controller's answer (KIP-497, KIP-631; protocol rows
``kraft-*`` and the ZooKeeper rows with ``alter-isr``).

- The ISR is changed by the leader with an **AlterPartition** request
  (``Partition.prepareIsrExpand`` / ``prepareIsrShrink`` / ``submitAlterPartition``): one in flight
  per leader, which meanwhile works with the *maximal* ISR (an expansion counts the new member at
  once, a shrink does not drop it until committed). The controller
  (``ReplicationControlManager.alterPartition`` / ``validateAlterPartitionData``) answers
  FENCED_LEADER_EPOCH to an older leader epoch, INVALID_UPDATE_VERSION to an older partition epoch
  and, with KIP-841 / KIP-903, INELIGIBLE_REPLICA to an ISR with a fenced member or a member whose
  broker epoch is not the one registered; on INELIGIBLE_REPLICA the leader reverts to its last
  committed ISR (``handleAlterPartitionError``), on the other errors it waits for the next partition
  change. A lost answer (``alter_losses``) leaves the same request in flight again
  (``AlterPartitionManager`` retries until answered). NEW_LEADER_ELECTED (a change that completes a
  reassignment removing the leader, ``spec.kafka.actions_reassignment``) is answered NONE with the
  new leader epoch: the leader stays pending until it replays the change, as with the code. An
  accepted change is the controller's partition change
  (``spec.kafka.actions_kraft._partition_change``).
- The ZooKeeper rows with ``alter-isr`` (2.7.0+: 2.8.0, 2.8.1, 3.4.1, 3.9.1) send the same request,
  the ZooKeeper controller's AlterIsr (``spec.kafka.controllers.AlterIsrController``:
  ``_alter_leader_actions`` here, the controller's processing and the leader's handling of its
  answer in ``spec.kafka.actions_alter_isr``).

=================================  ==========================  =====================================
action                             params                      what happens
=================================  ==========================  =====================================
ShrinkIsr / ExpandIsr              leader, follower            the leader sends an AlterPartition
                                                               (declared with the data plane's ISR
                                                               changes)
ProcessAlterPartition              leader                      the controller accepts or rejects it
LoseAlterPartitionResponse         leader                      (alter_losses) the controller accepts
                                                               it and the answer is lost: the same
                                                               request is in flight again
                                                               (AlterPartitionManager)
ReceiveAlterPartitionResponse      leader                      the leader applies the answer
=================================  ==========================  =====================================
"""

from __future__ import annotations

from spec.kafka.declared import BROKER, Consumes, Declared
from spec.kafka.log import UNDEFINED, epoch_start
from spec.kafka.state import (
    ALTER_PARTITION,
    ALTER_PARTITION_RESPONSE,
    DEAD,
    FENCED_LEADER_EPOCH,
    INELIGIBLE_REPLICA,
    INVALID_UPDATE_VERSION,
    NONE,
    AlterPartition,
    AlterPartitionResponse,
    Broker,
    KafkaState,
)
from spec.kafka.updates import add_messages, remove_message, with_broker

# the src / dst of a message to or from the controller (KRaft's, or ZooKeeper's with alter-isr)
CONTROLLER = -1


def _hw_bound(b: Broker, i: int, isr: tuple[int, ...]) -> int:
    """The HW leader ``i`` computes over ``isr`` (``maybeIncrementLeaderHW``: the least LEO, its own
    included)."""
    return min([len(b.log)] + [b.remote[r] for r in isr if r != i])


def answers_pending(b: Broker, m: AlterPartitionResponse) -> bool:
    """The answer is to the request the leader still waits for: its ISR change is pending in the
    leader epoch and partition epoch (zkVersion on a ZooKeeper row) the request was sent from;
    otherwise the answer is dropped (KRaft's and ZooKeeper's leaders alike:
    ``isrState != proposedIsrState``)."""
    return b.alter_pending and b.epoch == m.epoch and b.partition_epoch == m.partition_epoch


def _alter_in_flight(network: tuple, leader: int) -> bool:
    for m in network:
        if ((m.kind == ALTER_PARTITION and m.src == leader)
            or (m.kind == ALTER_PARTITION_RESPONSE and m.dst == leader)):
            return True
    return False


class AlterPartitionActions:
    """The leader's AlterPartition (and the ZooKeeper rows' AlterIsr request), the KRaft
    controller's answer and the leader's handling of it. No method here overrides another
    family's."""

    # -- the leader's AlterPartition ---------------------------------------------------------------
    def _alter_leader_actions(self, s: KafkaState, i: int, leader: Broker, out: list) -> None:
        """A leader's own actions; on KRaft a deposed leader still sends AlterPartition (the
        controller fences it by its leader epoch) but only one at a time
        (``PartitionState.isInflight``). The same on a ZooKeeper row with ``alter-isr`` (2.7.0
        ``Partition.maybeShrinkIsr`` / ``canAddReplicaToIsr``: ``!isrState.isInflight``; the
        ZooKeeper write of a deposed leader failing on its zkVersion is gone with the write
        itself)."""
        add = out.append
        self._produce_action(s, i, leader, add)
        self._advance_hw_action(s, i, leader, add)
        if leader.alter_pending or s.alters >= self.alters or _alter_in_flight(s.network, i):
            return
        # its replicas (spec.kafka.actions_reassignment)
        for f in leader.replicas or range(self.brokers):
            if f != i:
                self._isr_change_request_action(s, i, leader, f, add)

    def _eligible(self, s: KafkaState, leader: Broker, f: int) -> bool:
        """``Partition.isReplicaIsrEligible`` (3.3.0+ in KRaft mode): not fenced, not in controlled
        shutdown (KIP-841: ``isBrokerFenced``, ``isBrokerShuttingDown``); with KIP-903 the broker
        epoch of its last fetch is the one of its registration (``isBrokerEpochIsrEligible``). Those
        checks read the leader's metadata cache (``KRaftMetadataCache``: the registration records it
        replayed). With ``metadata_lag=0`` (the default) the cache is the controller's
        registrations; with ``metadata_lag=1`` it may be any older view, and the check passes (a
        newer view only blocks an expansion, which the model has anyway). Partition changes are
        replayed late either way: a LeaderAndIsr is the PartitionChangeRecord a broker replays when
        it reaches it (``_apply_leader_and_isr``)."""
        registered = s.controller.registered[f]
        lagging = self.metadata_lag > 0
        # with metadata_lag the leader's metadata cache may not have replayed the latest
        # registration records yet: any older view of the follower (unfenced, not shutting down, the
        # broker epoch of its fetch state) is possible, so the leader's own check passes; the
        # controller checks the proposal against its current registrations
        if self.features.kip_841 and not lagging and (registered == DEAD or s.brokers[f].stopping):
            return False
        if self.features.kip_903:
            stored = leader.remote_epochs[f] if leader.remote_epochs else UNDEFINED
            return stored != UNDEFINED and (lagging or stored == registered)
        return True

    def _isr_change_request_action(self, s: KafkaState, i: int, leader: Broker, f: int,
                                   add) -> None:
        """ShrinkIsr / ExpandIsr on KRaft (``Partition.maybeShrinkIsr`` / ``maybeExpandIsr``): the
        leader sends an AlterPartition with its leader and partition epochs and (KIP-903) each
        member's broker epoch (``addBrokerEpochToIsr``); meanwhile it works with the maximal ISR (an
        expansion counts the new member).

        On a ZooKeeper row with ``alter-isr`` (2.7.0 ``Partition.expandIsr`` / ``shrinkIsr`` ->
        ``sendAlterIsrRequest`` with ``PendingExpandIsr`` / ``PendingShrinkIsr``, whose
        ``maximalIsr`` is the ISR plus the new member, or the ISR; 3.0.0 the same; 3.1+
        ``prepareIsrExpand`` / ``prepareIsrShrink``): the same guards and request, with the
        zkVersion of its last committed state as the version
        (``AlterIsrRequestData.currentIsrVersion``, 3.3+ ``partitionEpoch``) and its own broker
        epoch (``AlterIsrRequestData.brokerEpoch``); no eligibility check (``isReplicaIsrEligible``
        is KRaft's before 3.4.0)."""
        isr = leader.isr
        if f in isr:
            if self.features.kafka_7152 and leader.remote[f] == len(leader.log):
                # KAFKA-7152: a caught-up follower is never out of sync (3.3.0 Replica.isCaughtUp)
                return
            proposed = tuple([r for r in isr if r != f])
            maximal = isr
            act = self._shrink[i][f]
        else:
            fetched = leader.remote[f]
            if fetched < 0 or fetched < leader.hw:
                return
            if (self.features.kafka_7128 and fetched
                < epoch_start(leader.cache, leader.epoch, len(leader.log))):
                return
            if self.features.kraft and not self._eligible(s, leader, f):
                return
            if not self._fetch_being_answered(s.network, i, leader, f):
                # maybeExpandIsr runs as the leader records the follower's fetch (KRaft rows too)
                return
            proposed = maximal = tuple(sorted(isr + (f,)))
            act = self._expand[i][f]
        if self.features.zookeeper_alter_isr:
            epochs = tuple([leader.broker_epoch if r == i else UNDEFINED
                            for r in range(self.brokers)])
        elif self.features.kip_903:
            epochs = tuple([(leader.broker_epoch if r == i else leader.remote_epochs[r]) if r
                            in proposed else UNDEFINED
                            for r in range(self.brokers)])
        else:
            epochs = (UNDEFINED,) * self.brokers
        request = AlterPartition.new(src=i, dst=CONTROLLER, epoch=leader.epoch,
                                 partition_epoch=leader.partition_epoch, isr=proposed,
                                     broker_epochs=epochs)
        pending = leader.with_(isr=maximal, alter_pending=True, committed_isr=isr)
        add((act, with_broker(s, i, pending, network=add_messages(s.network, request),
                              alters=s.alters + 1)))

    def _process_alter_partition(self, s: KafkaState, m: AlterPartition, add) -> None:
        """ProcessAlterPartition (``ReplicationControlManager.alterPartition`` ->
        ``validateAlterPartitionData``): FENCED_LEADER_EPOCH for an older leader epoch,
        INVALID_UPDATE_VERSION for an older partition epoch, INELIGIBLE_REPLICA (KIP-841: a fenced
        member; KIP-903: a broker epoch other than the registered one); otherwise the change is
        written (not enabled beyond the epoch bound) and answered. On a ZooKeeper row with
        ``alter-isr``, the ZooKeeper controller's rules: ``_process_alter_isr``."""
        c = s.controller
        rest = s.with_(network=remove_message(s.network, m))
        error = NONE
        if m.epoch < c.epoch or m.src != c.leader:
            error = FENCED_LEADER_EPOCH
        elif m.partition_epoch < c.partition_epoch:
            error = INVALID_UPDATE_VERSION
        elif self._ineligible(s, m):
            error = INELIGIBLE_REPLICA
        act = self._process_alter[m.src]
        if error != NONE:
            response = AlterPartitionResponse.new(src=CONTROLLER, dst=m.src, epoch=m.epoch,
                                              partition_epoch=m.partition_epoch, error=error,
                                                  isr=(), new_epoch=UNDEFINED,
                                              new_partition_epoch=UNDEFINED)
            add((act, rest.with_(network=add_messages(rest.network, response))))
            return
        changed = self._partition_change(rest, c.leader, m.isr)
        if changed is None:
            return
        after = changed.controller
        response = AlterPartitionResponse.new(src=CONTROLLER, dst=m.src, epoch=m.epoch,
                                          partition_epoch=m.partition_epoch, error=NONE,
                                              isr=after.isr, new_epoch=after.epoch,
                                          new_partition_epoch=after.partition_epoch)
        add((act, changed.with_(network=add_messages(changed.network, response))))
        if s.alter_losses < self.alter_losses:
            self._lose_alter_response(changed, m, add)

    def _lose_alter_response(self, changed: KafkaState, m: AlterPartition, add) -> None:
        """LoseAlterPartitionResponse (bound ``alter_losses``): the controller wrote the change, and
        its answer is lost (a disconnect). 3.3.0 / 3.5.0
        ``BrokerToControllerChannelManager.handleResponse`` puts a disconnected request back at the
        head of its queue (``requestQueue.putFirst``) and ``AlterPartitionManager.sendRequest``
        never times an AlterPartition out ("letting it retry indefinitely until a response is
        received, or a new LeaderAndIsr overwrites the existing isrState"; the item stays in
        ``unsentIsrUpdates`` until answered): the same request is in flight again, and the leader
        stays with its pending maximal ISR. The controller answers the resent request
        INVALID_UPDATE_VERSION (its partition epoch is now older) or FENCED_LEADER_EPOCH (the change
        moved the leader epoch), on which ``Partition.handleAlterPartitionError`` waits for the
        metadata: the partition change the leader replays (a LeaderAndIsr here) commits the ISR. A
        request lost before the controller read it is sent again just the same, which the model's
        network already has as a request delivered late."""
        # guard: the caller's (an accepted change, a loss left in the bound); effect: the change
        # without its answer
        add((self._lose_alter[m.src], changed.with_(network=add_messages(changed.network, m),
                                                    alter_losses=changed.alter_losses + 1)))

    def _ineligible(self, s: KafkaState, m: AlterPartition) -> bool:
        """``ineligibleReplicasForIsr``: fenced or in controlled shutdown (KIP-841) or a broker
        epoch that is given and not the registered one (KIP-903)."""
        registered = s.controller.registered
        for r in m.isr:
            if self.features.kip_841 and (registered[r] == DEAD or s.brokers[r].stopping):
                return True
            if (self.features.kip_903 and m.broker_epochs[r] != UNDEFINED and m.broker_epochs[r]
                != registered[r]):
                return True
        return False

    def _hw_left_stale(self, b: Broker, i: int, isr: tuple[int, ...]) -> bool:
        """KAFKA-13091 (``hw_events=1`` on a release without the fix, 2.7 to 3.0
        ``handleAlterIsrResponse``): the committed ``isr`` would let the HW advance and the leader
        does not recompute it. Marked only when the model's HW is where Kafka's is (the bound over
        the ISR before the commit, which every earlier append and fetch recomputed): where the
        model's own AdvanceHighWatermark step still lags, it is left free, so no stuck HW is
        reported that Kafka would have moved at an earlier event."""
        if not self.hw_events:
            return False
        return b.hw == _hw_bound(b, i, b.isr) and _hw_bound(b, i, isr) > b.hw

    def _receive_alter_response(self, s: KafkaState, m: AlterPartitionResponse, add) -> None:
        """ReceiveAlterPartitionResponse (``Partition.submitAlterPartition`` completion): ignored if
        the partition state changed since the request (``partitionState != proposedIsrState``); NONE
        commits the ISR unless the change moved the leader epoch (then the partition change brings
        it); INELIGIBLE_REPLICA reverts to the last committed ISR; the other errors wait for the
        next partition change (``handleAlterPartitionError``). On a ZooKeeper row with
        ``alter-isr``: ``_receive_alter_isr_response``."""
        i = m.dst
        b = s.brokers[i]
        rest = s.with_(network=remove_message(s.network, m))
        act = self._receive_alter[i]
        if not answers_pending(b, m):
            add((act, rest))
            return
        if m.error == NONE and m.new_epoch == b.epoch:
            b = b.with_(isr=m.isr, alter_pending=False, committed_isr=(),
                        partition_epoch=m.new_partition_epoch,
                        hw_stale=self._hw_left_stale(b, i, m.isr))
        elif m.error == INELIGIBLE_REPLICA:
            b = b.with_(isr=b.committed_isr, alter_pending=False, committed_isr=())
        else:
            add((act, rest))
            return
        add((act, with_broker(rest, i, b)))


    # -- the requests to the controller, delivered -------------------------------------------------
    def _alter_partition_deliveries(self, s: KafkaState, out: list) -> None:
        """KRaft: the controller processes an AlterPartition; a leader receives the answer (after
        the messages every row shares, ``KafkaModel._deliveries``)."""
        add = out.append
        for m in s.network:
            if m.kind == ALTER_PARTITION:
                self._process_alter_partition(s, m, add)
            elif m.kind == ALTER_PARTITION_RESPONSE:
                self._receive_alter_response(s, m, add)


#: the AlterPartition requests and their answers (``spec.kafka.declared``; ShrinkIsr and ExpandIsr
#: are the data plane's rows, ``spec.kafka.actions_data``)
ACTIONS: tuple[Declared, ...] = (
    Declared("ProcessAlterPartition", "_process_alter", (("leader", BROKER),),
             ("_process_alter_partition", "_partition_change", "_ineligible", "_process_alter_isr",
              "_reassigned", "completed"),
             rules=("alter-isr", "kafka-14140"),
             kraft_rules=("new-leader-elected", "kip-841", "kip-903", "kafka-15021", "kip-966-elr",
                          "unclean-election-clears-elr", "leader-recovery-state", "reassignment",
                          "kafka-15665", "elr-not-filtered-by-replicas",
                          "elr-filtered-by-replicas"),
             flags=("kafka-14140", "kip-841", "kip-903", "kafka-15021", "kip-966-elr",
                    "kafka-15665", "unclean-election-clears-elr", "elr-filtered-by-replicas"),
             consumes=Consumes("AlterPartition", "leader", None, "ISR change request")),
    Declared("ReceiveAlterPartitionResponse", "_receive_alter", (("leader", BROKER),),
             ("_receive_alter_response", "_receive_alter_isr_response"),
             rules=("kafka-13091", "alter-isr", "kafka-14140", "lost-alter-partition-answer"),
             kraft_rules=("new-leader-elected",), actor="leader",
             consumes=Consumes("AlterPartitionResponse", None, "leader", "ISR change response")),
    Declared("LoseAlterPartitionResponse", "_lose_alter", (("leader", BROKER),),
             ("_lose_alter_response",), rules=("alter-isr", "lost-alter-partition-answer")),
)
