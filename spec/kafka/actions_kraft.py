"""The KRaft control plane of the Kafka model (protocol rows ``kraft-*``, flag ``kraft``).

On the KRaft rows the controller is the KRaft quorum controller, not ZooKeeper's:

- The ISR is changed by the leader with an **AlterPartition** request (``Partition.prepareIsrExpand`` /
  ``prepareIsrShrink`` / ``submitAlterPartition``): one in flight per leader, which meanwhile works with the
  *maximal* ISR (an expansion counts the new member at once, a shrink does not drop it until committed).
  The controller (``ReplicationControlManager.alterPartition`` / ``validateAlterPartitionData``) answers
  FENCED_LEADER_EPOCH to an older leader epoch, INVALID_UPDATE_VERSION to an older partition epoch and, with
  KIP-841 / KIP-903, INELIGIBLE_REPLICA to an ISR with a fenced member or a member whose broker epoch is not
  the one registered; on INELIGIBLE_REPLICA the leader reverts to its last committed ISR
  (``handleAlterPartitionError``), on the other errors it waits for the next partition change. A lost answer
  (``alter_losses``) leaves the same request in flight again (``AlterPartitionManager`` retries until answered).
  NEW_LEADER_ELECTED (a change that completes a reassignment removing the leader, ``spec.kafka.actions_reassignment``)
  is answered NONE with the new leader epoch: the leader stays pending until it replays the change, as with the code.
- **Controlled shutdown** (``shutdowns``): the leader's heartbeat with ``wantShutDown`` puts it in controlled
  shutdown (``Broker.stopping``): out of the ISR, leadership to an active member (or offline); it keeps fetching,
  is not electable and, with KIP-841, not eligible to join the ISR.
- **Metadata lag**: a LeaderAndIsr is the partition change a broker replays late; with ``metadata_lag=1`` a leader's
  view of the registrations may be older than the controller's (its own eligibility check passes).
- Every partition change bumps the **partition epoch** and is replayed by every live broker in order (a
  ``LeaderAndIsr`` here stands for the PartitionRecord / PartitionChangeRecord of the metadata log, with the
  partition epoch). The leader epoch moves with a new leader, and (before KAFKA-15021, 3.6.0) with every ISR
  shrink (``PartitionChangeBuilder.triggerLeaderEpochBumpIfNeeded``).
- Brokers **register** with a new broker epoch on every start (``ClusterControlManager.registerBroker``) and
  are **fenced** when their heartbeats stop (FenceBroker): the controller removes a fenced broker from the ISR,
  keeping the last member (``PartitionChangeBuilder.build`` writes no empty ISR), and elects a new leader
  from the unfenced ISR members, or leaves the partition offline. ``Controller.registered`` holds DEAD while a
  broker is fenced and its registration's broker epoch while it is unfenced. A broker re-registers only once
  fenced (an older registration with a live session is refused: ``DuplicateBrokerRegistrationException``).
- KIP-966 (``kip-966-elr``; its strict min ISR, KAFKA-15583, is the data plane's flag ``kafka-15583``, 3.7.0
  in either mode: the HW does not advance while the ISR is below ``min_isr``): the ISR may become empty, the
  replicas that leave an ISR that is below
  min ISR are **eligible leader replicas** (``PartitionChangeBuilder.maybePopulateTargetElr``), and an
  unfenced ELR member is elected when the ISR is empty (``isValidNewLeader``). With
  ``clean-shutdown-detection`` a broker that registers after an unclean shutdown leaves the ISR and the ELR
  (``ReplicationControlManager.handleBrokerUncleanShutdown``): with ``kafka-18635`` (3.8.x, 4.1.x) one whose
  registration does not carry its clean shutdown file's broker epoch, without it (3.9.x) every new incarnation.
- **Clean shutdown** (``clean_shutdowns``): a broker that leads nothing is fenced at the end of its controlled
  shutdown (SHUTDOWN_NOW) and stops cleanly, writing its clean shutdown file (a dead broker with ``stopping``).

The ZooKeeper rows with ``alter-isr`` (2.7.0+: 2.8.0, 2.8.1, 3.4.1, 3.9.1) reuse the AlterPartition families for the
ZooKeeper controller's AlterIsr: ShrinkIsr / ExpandIsr, LoseAlterPartitionResponse and the bounds ``alters`` and
``alter_losses`` as above. Their control plane (``spec.kafka.controllers.AlterIsrController``) runs
``_alter_leader_actions`` and delivers with ``_process_alter_isr`` and ``_receive_alter_isr_response`` where the
ZooKeeper controller and its leader differ (the zkVersion as the version, STALE_BROKER_EPOCH, an already-written proposal
answered with the current state, no LeaderAndIsr after a write, INELIGIBLE_REPLICA only from 3.4.0: kafka-14140); the
rest of their control plane is ZooKeeper's (``spec.kafka.actions_control``). The KRaft rows' plane is ``KRaftController``.

Faults: Crash keeps the log (a process crash: the page cache survives); UncleanShutdown(broker, keep) loses
the log beyond ``keep`` records (bound ``unclean_shutdowns``): Kafka leaves flushing to the OS, so any
suffix, committed records included, can be lost (KIP-966's premise). A disk loss is UncleanShutdown with
keep=0: with one partition and the HW clamped to the LEO on restart the model cannot tell them apart.

=================================  ==========================  ============================================
action (KRaft rows)                params                      what happens
=================================  ==========================  ============================================
FenceBroker                        broker, leader              the controller fences a broker whose
                                                               heartbeats stopped; ``leader`` is the leader
                                                               afterwards (-1: offline)
ElectLeader                        leader                      the partition is offline: an unfenced ISR
                                                               member (KIP-966: or ELR member) is elected
ShrinkIsr / ExpandIsr              leader, follower            the leader sends an AlterPartition
ProcessAlterPartition              leader                      the controller accepts or rejects it
LoseAlterPartitionResponse         leader                      (alter_losses) the controller accepts it and
                                                               the answer is lost: the same request is
                                                               in flight again (AlterPartitionManager)
ReceiveAlterPartitionResponse      leader                      the leader applies the answer
UncleanShutdown                    broker, keep                (unclean_shutdowns) a crash that keeps the
                                                               first ``keep`` records
ProcessControlledShutdown          broker, leader              (shutdowns) the leader asks to shut down;
                                                               ``leader`` is the leader afterwards (-1:
                                                               offline)
Restart                            broker                      a fenced broker registers with a new broker
                                                               epoch and is unfenced
CleanShutdown                      broker, leader              (clean_shutdowns) a broker that leads nothing
                                                               is fenced and stops cleanly; ``leader`` is
                                                               the leader afterwards
=================================  ==========================  ============================================
"""

from __future__ import annotations

from spec.kafka.clients import unclean_noted
from spec.kafka.declared import BROKER, BROKER_OR_NONE, KEEP, Declared
from spec.kafka.log import UNDEFINED, epoch_start
from spec.kafka.state import (
    ALTER_PARTITION,
    ALTER_PARTITION_RESPONSE,
    CONTROLLED_SHUTDOWN,
    DEAD,
    FENCED_LEADER_EPOCH,
    IDLE_STOPPED,
    INELIGIBLE_REPLICA,
    INVALID_UPDATE_VERSION,
    NO_FETCHER,
    NO_LEADER,
    NONE,
    STALE_BROKER_EPOCH,
    AlterPartition,
    AlterPartitionResponse,
    Broker,
    KafkaState,
    LeaderAndIsr,
)
from spec.kafka.updates import add_messages, remove_message, replace_at, with_broker

CONTROLLER = -1  # the src / dst of a message to or from the KRaft controller


#: ``kmc matrix`` on the KRaft rows: the durability columns with one unclean shutdown (the fault the KIPs are about)
#: and min.insync.replicas=2, the setting under which KIP-966 promises to survive it (min ISR - 1 = 1 unclean
#: shutdown), with one AlterPartition (``alters``: each of the KIP-841, KIP-903 and KIP-966 stories needs one). At two
#: leader epochs the KIP-903 story (kraft-3.3) fits; the last-replica-standing story of KIP-966 needs three on the 3.x
#: lines (a shrink bumps the leader epoch there), which is the ``deep`` set. Log Matching with one AlterPartition;
#: the control-plane columns without (their stories are about control requests, not the ISR)
_DURABILITY = ("records=1", "epochs=2", "crashes=1", "unclean_shutdowns=1", "alters=1", "min_isr=2")
KRAFT_MATRIX_BOUNDS: dict[str, tuple[str, ...]] = {
    **{name: ("records=2", "crashes=0", "alters=1") for name in ("log-matching", "log-matching-all-pairs",
                                                                  "log-matching-raft")},
    **{name: _DURABILITY for name in ("committed-durable", "no-uncommitted-below-hw", "elr-safety")},
    # replica-sanity at the ZooKeeper rows' data bounds with no AlterPartition: KAFKA-18991's stale append (the
    # fetch path is the ZooKeeper row's of the same release, fixed in 3.9.1, 4.0.1 and 4.1.0) needs a second
    # record and no ISR change; with one AlterPartition kraft-4.1 holds too, at 447,683 states instead of 49,463
    "replica-sanity": ("records=2", "epochs=2", "crashes=1", "alters=0"),
    # the client columns with their client: an acks=all producer, one consumer (without them they hold vacuously)
    "acknowledged-durable": (*_DURABILITY, "acks=-1"),
    "consumed-stays": (*_DURABILITY, "consumers=1"),
    "no-silent-skip": ("records=2", "epochs=2", "crashes=1", "unclean_shutdowns=1", "alters=1", "min_isr=2", "consumers=1"),
    "no-stale-control-request": ("records=1", "epochs=1", "crashes=0", "bumps=1", "alters=0"),
    "no-bounce-stall": ("records=1", "epochs=1", "crashes=0", "bumps=1", "alters=0"),
    "no-fence-stall": ("records=1", "epochs=2", "crashes=0", "bumps=2", "alters=0"),
}


def kraft_bound_sets() -> dict[str, dict[str, tuple[str, ...]]]:
    deep = ("records=1", "epochs=3", "crashes=1", "unclean_shutdowns=1", "alters=2", "min_isr=2")
    return {"default": dict(KRAFT_MATRIX_BOUNDS),
            "deep": {**KRAFT_MATRIX_BOUNDS, **{name: deep for name in ("committed-durable", "no-uncommitted-below-hw",
                                                                       "replica-sanity", "elr-safety")}}}


def _hw_bound(b: Broker, i: int, isr: tuple[int, ...]) -> int:
    """The HW leader ``i`` computes over ``isr`` (``maybeIncrementLeaderHW``: the least LEO, its own included)."""
    return min([len(b.log)] + [b.remote[r] for r in isr if r != i])


def _answers_pending(b: Broker, m: AlterPartitionResponse) -> bool:
    """The answer is to the request the leader still waits for: its ISR change is pending in the leader epoch and
    partition epoch (zkVersion on a ZooKeeper row) the request was sent from; otherwise the answer is dropped
    (KRaft's and ZooKeeper's leaders alike: ``isrState != proposedIsrState``)."""
    return b.alter_pending and b.epoch == m.epoch and b.partition_epoch == m.partition_epoch


class KRaftActions:
    """The KRaft controller, AlterPartition (and the ZooKeeper rows' AlterIsr), fencing and the unclean shutdown.
    No method here overrides another family's: the KRaft and AlterIsr control planes (``spec.kafka.controllers``)
    call these where the ZooKeeper plane calls ``actions_control`` and ``actions_data``."""

    def _init_kraft(self, alters: int, unclean_shutdowns: int, alter_losses: int = 0, metadata_lag: int = 0,
                    clean_shutdowns: int = 0, fences: int = 0) -> None:
        f = self.features
        # the bounds of the KRaft rows are inert on the ZooKeeper rows (their fault is lossy-crash), as the bounds of
        # the ZooKeeper control plane (shutdowns, bounces, losses) are on the KRaft rows: a scenario replays under both
        self.alters = alters
        self.unclean_shutdowns = unclean_shutdowns
        self.alter_losses = alter_losses
        self.metadata_lag = metadata_lag  # a bound (0 or 1), not a protocol switch
        self.clean_shutdowns = clean_shutdowns
        self.fences = fences
        if f.zookeeper_alter_isr:
            self.constants["alters"] = alters
            if alter_losses:
                self.constants["alter_losses"] = alter_losses
        if f.kraft:
            self.constants.update({"alters": alters, "unclean_shutdowns": unclean_shutdowns})
            if alter_losses:
                self.constants["alter_losses"] = alter_losses
            if metadata_lag:
                self.constants["metadata_lag"] = metadata_lag
            if clean_shutdowns:
                self.constants["clean_shutdowns"] = clean_shutdowns
            if fences:
                self.constants["fences"] = fences
            # ``kmc matrix`` checks a KRaft row at its own bounds (an instance attribute over the class's; the bound
            # sets: ``KafkaModel.matrix_bound_sets``)
            self.matrix_bounds = dict(KRAFT_MATRIX_BOUNDS)

    # -- partition changes by the controller ---------------------------------------------------------------
    def _unfenced(self, s: KafkaState, b: int) -> bool:
        """``ClusterControlManager.active`` (3.3.0+), what a leader election accepts: registered and not fenced (the
        controller does not know a broker died until its session expires) and not in controlled shutdown (a broker
        the controller moved leadership away from, ``Broker.stopping`` on the KRaft rows)."""
        return s.controller.registered[b] != DEAD and not s.brokers[b].stopping

    def _controller_min_isr(self, s: KafkaState) -> int:
        """The min ISR every ``PartitionChangeBuilder`` gets: with ``effective-min-isr`` (3.7.0 KAFKA-15581, af747fbfed7;
        3.9.0-rc3 the same) ``ReplicationControlManager.getTopicEffectiveMinIsr``: ``Math.min(currentMinIsr,
        replicationFactor)``, the replication factor read from the partition's registration before the change
        (``topics.get(topicId).parts.get(0).replicas.length``: during a reassignment the merged list, target and
        removing replicas; () in the model while no reassignment changed them: every broker)."""
        if not self.features.effective_min_isr:
            return self.min_isr
        replicas = s.controller.replicas
        return min(self.min_isr, len(replicas) if replicas else self.brokers)

    def _partition_change(self, s: KafkaState, leader: int, isr: tuple[int, ...], bump: bool = False,
                          unclean_replica: int = -1, target: tuple[int, ...] = (),
                          restarted: int = -1, unclean: bool = False) -> KafkaState | None:
        """A PartitionChangeRecord (``PartitionChangeBuilder.build``): the new leader and ISR, the partition epoch
        + 1, the leader epoch + 1 if the leader changes, on ``bump`` (reassignment) and, before KAFKA-15021, on an
        ISR shrink; with ``kip-966-elr`` the ELR (``maybePopulateTargetElr``: cleared when the ISR reaches min
        ISR, else the old ELR and ISR minus the new ISR minus ``unclean_replica``). Every live broker replays it.
        None beyond the epoch bound. A reassignment to ``target`` replicas, or one in progress, is applied first
        (``spec.kafka.actions_reassignment``). A broker that registers again as the change is written (``restarted``)
        replays it whatever it changes: its first metadata image holds the partition (see ``_kraft_restart_state``).
        The min ISR is ``_controller_min_isr`` (``effective-min-isr``: capped by the replicas before the change). An
        ``unclean`` election (the record sets the ISR in ``tryElection``) empties the ELR with
        ``unclean-election-clears-elr`` (3.7.0 and 3.9.0-rc3 ``maybeUpdateRecordElr``: ``isCleanLeaderElection =
        record.isr() == null``; not clean: ``targetElr`` and ``targetLastKnownElr`` emptied). With the proposed fix
        ``elr-filtered-by-replicas`` (in no release) the ELR keeps only the replicas after the change (``targetReplicas``
        once ``completeReassignmentIfNeeded`` ran: the merged list while a reassignment is in progress)."""
        c = s.controller
        isr = tuple(sorted(isr))
        min_isr = self._controller_min_isr(s)
        assignment: dict = {}
        if target or c.adding or c.removing:  # spec.kafka.actions_reassignment
            leader, isr, bump, assignment = self._reassigned(s, leader, isr, bump, target)
        elr = c.elr
        if self.features.kip_966_elr:
            if len(isr) >= min_isr:
                elr = ()
            else:
                elr = tuple(sorted((set(c.elr) | set(c.isr)) - set(isr) - {unclean_replica, leader}))
            if unclean and self.features.unclean_election_clears_elr:
                elr = ()
            if self.features.elr_filtered_by_replicas:  # the proposed fix: only the target replicas stay eligible
                kept = assignment.get("replicas", c.replicas)
                elr = tuple([r for r in elr if not kept or r in kept])
            if target and leader == NO_LEADER and not isr:
                # a reassignment's own build elects from the ELR when the ISR is empty (tryElection after
                # maybePopulateTargetElr: electAnyLeader walks the target replicas, isValidNewLeader takes an active ELR
                # member); ``_reassigned`` has elected from the ISR
                elected = next((r for r in assignment["replicas"] if r in elr and self._unfenced(s, r)), NO_LEADER)
                if elected != NO_LEADER:
                    leader, isr = elected, (elected,)
                    elr = tuple([r for r in elr if r != elected])
        shrink = not set(c.isr) <= set(isr)
        new_epoch = c.epoch
        if leader != c.leader or bump or (shrink and not self.features.kafka_15021):
            new_epoch += 1
        if new_epoch > self.epochs:
            return None
        partition_epoch = c.partition_epoch + 1
        controller = c.with_(leader=leader, epoch=new_epoch, isr=isr, partition_epoch=partition_epoch, elr=elr,
                             **assignment)
        # a change that keeps the leader epoch (an ISR change) is sent to the leader only: a follower does nothing with
        # the ISR or the partition epoch until a change of leader epoch, which every live broker replays
        to = range(self.brokers) if new_epoch != c.epoch else (leader,) if leader != NO_LEADER else ()
        if controller.replicas:  # the replicas, old and new, replay it (spec.kafka.actions_reassignment)
            to = self._replaying(c, controller, to)
        if restarted >= 0 and restarted not in to:
            to = (*to, restarted)
        # a metadata record is not addressed to a registration: a fenced broker that runs replays it too (its own
        # broker epoch, which is the registered one whenever it is unfenced)
        sent = tuple([LeaderAndIsr.new(dst=r, epoch=new_epoch, leader=leader, isr=isr,
                                       broker_epoch=s.brokers[r].broker_epoch, meant=s.brokers[r].incarnation,
                                       partition_epoch=partition_epoch, replicas=controller.replicas)
                      for r in to if s.brokers[r].alive])
        return s.with_(controller=controller, network=add_messages(s.network, *sent))

    def _candidates(self, s: KafkaState, isr: tuple[int, ...], elr: tuple[int, ...], excluded: int = -1) -> list[int]:
        """The electable replicas (``PartitionChangeBuilder.isValidNewLeader``): unfenced ISR members; with
        ``kip-966-elr``, unfenced ELR members when the ISR is empty."""
        found = [r for r in isr if r != excluded and self._unfenced(s, r)]
        if not found and not isr and self.features.kip_966_elr:
            replicas = s.controller.replicas  # the election walks the replicas (spec.kafka.actions_reassignment)
            found = [r for r in elr if r != excluded and self._unfenced(s, r) and (not replicas or r in replicas)]
        return found

    def _elect_from(self, s: KafkaState, leader: int, isr: tuple[int, ...]) -> KafkaState | None:
        """A new leader from the ISR, or (empty ISR, KIP-966) from the ELR: it becomes the ISR."""
        return self._partition_change(s, leader, isr if leader in isr else (leader,))

    def _kraft_controller_actions(self, s: KafkaState, out: list) -> None:
        """The KRaft controller's own actions (``KRaftController.actions``): it fences a broker whose session expired
        (or, bound ``fences``, a running one) and unfences one that heartbeats again; it elects a leader for an offline
        partition (KIP-966: from the ELR when the ISR is empty; ``unclean``: any unfenced replica when no member is
        electable), moves leadership to another unfenced ISR member (preferred election) and bumps the leader epoch
        (``bumps``)."""
        add = out.append
        brokers, c = s.brokers, s.controller
        for b in range(self.brokers):
            if not brokers[b].alive and c.registered[b] != DEAD:
                self._fence_actions(s, b, add)
            elif c.registered[b] != DEAD:
                if s.fences < self.fences:
                    self._fence_running_actions(s, b, add)
            elif brokers[b].alive:
                self._unfence_actions(s, b, add)
        if c.leader == NO_LEADER:
            for b in self._candidates(s, c.isr, c.elr):
                t = self._elect_from(s, b, c.isr)
                if t is not None:
                    add((self._elect[b], t))
            if self.features.unclean and not self._candidates(s, c.isr, c.elr):
                noted = unclean_noted(s)  # the consumers' ghost (spec.kafka.clients)
                for b in c.replicas or range(self.brokers):  # the replicas (spec.kafka.actions_reassignment)
                    if self._unfenced(s, b):
                        t = self._partition_change(noted, b, (b,), unclean=True)
                        if t is not None:
                            add((self._unclean[b], t))
        elif brokers[c.leader].alive and self._unfenced(s, c.leader):
            for b in c.isr:
                if b != c.leader and self._unfenced(s, b):
                    t = self._partition_change(s, b, c.isr)
                    if t is not None:
                        add((self._preferred[b], t))
            if s.bumps < self.bumps:
                t = self._partition_change(s, c.leader, c.isr, bump=True)
                if t is not None:
                    add((self._bump[c.leader], t.with_(bumps=s.bumps + 1)))

    def _fence_actions(self, s: KafkaState, i: int, add) -> None:
        """FenceBroker (``ReplicationControlManager.handleBrokerFenced`` -> ``generateLeaderAndIsrUpdates`` with
        ``brokerToRemove``): the broker leaves the ISR (the last member stays unless ``kip-966-elr``: then the
        ISR may empty and the ELR keeps it); if it led, or the partition is offline, a new leader is elected from
        the unfenced ISR (or ELR), else the partition is (stays) offline."""
        c = s.controller
        fenced = s.with_(controller=c.with_(registered=replace_at(c.registered, i, DEAD)))
        table = self._fence[i]
        if i not in c.isr and c.leader != i:
            add((table[c.leader + 1], fenced))
            return
        isr = tuple([r for r in c.isr if r != i])
        if not isr and not self.features.kip_966_elr:
            isr = c.isr  # PartitionChangeBuilder.build: an empty target ISR is not written
        if c.leader == i or c.leader == NO_LEADER:
            elr_after = c.elr
            if self.features.kip_966_elr and len(isr) < self._controller_min_isr(s):
                elr_after = tuple(sorted((set(c.elr) | set(c.isr)) - set(isr)))
            candidates = self._candidates(fenced, isr, elr_after, excluded=i)
            if candidates:
                for b in candidates:
                    t = self._partition_change(fenced, b, isr if b in isr else (b,))
                    if t is not None:
                        add((table[b + 1], t))
                return
            t = self._partition_change(fenced, NO_LEADER, isr)
        else:
            t = self._partition_change(fenced, c.leader, isr)
        if t is not None:
            add((table[t.controller.leader + 1], t))

    def _fence_running_actions(self, s: KafkaState, i: int, add) -> None:
        """FenceBroker of a running broker (bound ``fences``): its heartbeats stop reaching the controller (a pause, a
        network partition from the quorum) and its session expires (3.5.0 ``QuorumController.rescheduleMaybeFenceStaleBrokers``
        -> ``ReplicationControlManager.maybeFenceOneStaleBroker`` -> ``handleBrokerFenced``, ``BrokerHeartbeatManager
        .findOneStaleBroker``): the same partition change as a dead broker's (out of the ISR, the last member kept unless
        ELR; a new leader if it led). The broker keeps running: its log, its fetcher and, until it replays the change,
        its view of the partition (a fenced leader goes on as leader of its epoch until then)."""
        fenced: list = []
        self._fence_actions(s, i, fenced.append)
        for act, t in fenced:
            add((act, t.with_(fences=s.fences + 1)))

    def _unfence_actions(self, s: KafkaState, i: int, add) -> None:
        """UnfenceBroker(broker, leader): a running broker that was fenced heartbeats again and is unfenced with the
        broker epoch of its registration (3.5.0 ``BrokerHeartbeatManager.calculateNextBrokerState``: FENCED ->
        UNFENCED once ``currentMetadataOffset >= registerBrokerRecordOffset``, which a running broker has long
        replayed; ``ReplicationControlManager.handleBrokerUnfenced``: the registration change, and a leader for a
        partition with none, from its ISR (KIP-966: ELR) with the broker now active: ``generateLeaderAndIsrUpdates(...,
        brokersToIsrs.partitionsWithNoLeader())``); ``leader`` is the leader afterwards."""
        b = s.brokers[i]
        c = s.controller
        unfenced = s.with_(controller=c.with_(registered=replace_at(c.registered, i, b.broker_epoch)))
        table = self._unfence[i]
        candidates = self._candidates(unfenced, c.isr, c.elr) if c.leader == NO_LEADER else []
        if not candidates:
            add((table[c.leader + 1], unfenced))
            return
        for r in candidates:  # not enabled beyond the epoch bound, as every election
            t = self._elect_from(unfenced, r, c.isr)
            if t is not None:
                add((table[r + 1], t))

    # -- the leader's AlterPartition -------------------------------------------------------------------------
    def _alter_leader_actions(self, s: KafkaState, i: int, leader: Broker, out: list) -> None:
        """A leader's own actions; on KRaft a deposed leader still sends AlterPartition (the controller fences
        it by its leader epoch) but only one at a time (``PartitionState.isInflight``). The same on a ZooKeeper row with
        ``alter-isr`` (2.7.0 ``Partition.maybeShrinkIsr`` / ``canAddReplicaToIsr``: ``!isrState.isInflight``; the
        ZooKeeper write of a deposed leader failing on its zkVersion is gone with the write itself)."""
        add = out.append
        self._produce_action(s, i, leader, add)
        self._advance_hw_action(s, i, leader, add)
        if leader.alter_pending or s.alters >= self.alters or _alter_in_flight(s.network, i):
            return
        for f in leader.replicas or range(self.brokers):  # its replicas (spec.kafka.actions_reassignment)
            if f != i:
                self._isr_change_request_action(s, i, leader, f, add)

    def _eligible(self, s: KafkaState, leader: Broker, f: int) -> bool:
        """``Partition.isReplicaIsrEligible`` (3.3.0+ in KRaft mode): not fenced, not in controlled shutdown
        (KIP-841: ``isBrokerFenced``, ``isBrokerShuttingDown``); with KIP-903 the broker epoch of its last fetch is the
        one of its registration (``isBrokerEpochIsrEligible``). Those checks read the leader's metadata cache
        (``KRaftMetadataCache``: the registration records it replayed). With ``metadata_lag=0`` (the default) the cache
        is the controller's registrations; with ``metadata_lag=1`` it may be any older view, and the check passes (a
        newer view only blocks an expansion, which the model has anyway). Partition changes are replayed late either
        way: a LeaderAndIsr is the PartitionChangeRecord a broker replays when it reaches it (``_apply_leader_and_isr``)."""
        registered = s.controller.registered[f]
        lagging = self.metadata_lag > 0
        # with metadata_lag the leader's metadata cache may not have replayed the latest registration records yet: any
        # older view of the follower (unfenced, not shutting down, the broker epoch of its fetch state) is possible, so
        # the leader's own check passes; the controller checks the proposal against its current registrations
        if self.features.kip_841 and not lagging and (registered == DEAD or s.brokers[f].stopping):
            return False
        if self.features.kip_903:
            stored = leader.remote_epochs[f] if leader.remote_epochs else UNDEFINED
            return stored != UNDEFINED and (lagging or stored == registered)
        return True

    def _isr_change_request_action(self, s: KafkaState, i: int, leader: Broker, f: int, add) -> None:
        """ShrinkIsr / ExpandIsr on KRaft (``Partition.maybeShrinkIsr`` / ``maybeExpandIsr``): the leader sends an
        AlterPartition with its leader and partition epochs and (KIP-903) each member's broker epoch
        (``addBrokerEpochToIsr``); meanwhile it works with the maximal ISR (an expansion counts the new member).

        On a ZooKeeper row with ``alter-isr`` (2.7.0 ``Partition.expandIsr`` / ``shrinkIsr`` -> ``sendAlterIsrRequest``
        with ``PendingExpandIsr`` / ``PendingShrinkIsr``, whose ``maximalIsr`` is the ISR plus the new member, or the
        ISR; 3.0.0 the same; 3.1+ ``prepareIsrExpand`` / ``prepareIsrShrink``): the same guards and request, with the
        zkVersion of its last committed state as the version (``AlterIsrRequestData.currentIsrVersion``, 3.3+
        ``partitionEpoch``) and its own broker epoch (``AlterIsrRequestData.brokerEpoch``); no eligibility check
        (``isReplicaIsrEligible`` is KRaft's before 3.4.0)."""
        isr = leader.isr
        if f in isr:
            if self.features.kafka_7152 and leader.remote[f] == len(leader.log):
                return  # KAFKA-7152: a caught-up follower is never out of sync (3.3.0 Replica.isCaughtUp)
            proposed = tuple([r for r in isr if r != f])
            maximal = isr
            act = self._shrink[i][f]
        else:
            fetched = leader.remote[f]
            if fetched < 0 or fetched < leader.hw:
                return
            if self.features.kafka_7128 and fetched < epoch_start(leader.cache, leader.epoch, len(leader.log)):
                return
            if self.features.kraft and not self._eligible(s, leader, f):
                return
            if not self._fetch_being_answered(s.network, i, leader, f):
                return  # maybeExpandIsr runs as the leader records the follower's fetch (KRaft rows too)
            proposed = maximal = tuple(sorted(isr + (f,)))
            act = self._expand[i][f]
        if self.features.zookeeper_alter_isr:
            epochs = tuple([leader.broker_epoch if r == i else UNDEFINED for r in range(self.brokers)])
        elif self.features.kip_903:
            epochs = tuple([(leader.broker_epoch if r == i else leader.remote_epochs[r]) if r in proposed else UNDEFINED
                            for r in range(self.brokers)])
        else:
            epochs = (UNDEFINED,) * self.brokers
        request = AlterPartition.new(src=i, dst=CONTROLLER, epoch=leader.epoch,
                                 partition_epoch=leader.partition_epoch, isr=proposed, broker_epochs=epochs)
        pending = leader.with_(isr=maximal, alter_pending=True, committed_isr=isr)
        add((act, with_broker(s, i, pending, network=add_messages(s.network, request), alters=s.alters + 1)))

    def _process_alter_partition(self, s: KafkaState, m: AlterPartition, add) -> None:
        """ProcessAlterPartition (``ReplicationControlManager.alterPartition`` -> ``validateAlterPartitionData``):
        FENCED_LEADER_EPOCH for an older leader epoch, INVALID_UPDATE_VERSION for an older partition epoch,
        INELIGIBLE_REPLICA (KIP-841: a fenced member; KIP-903: a broker epoch other than the registered one);
        otherwise the change is written (not enabled beyond the epoch bound) and answered. On a ZooKeeper row with
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
                                              partition_epoch=m.partition_epoch, error=error, isr=(), new_epoch=UNDEFINED,
                                              new_partition_epoch=UNDEFINED)
            add((act, rest.with_(network=add_messages(rest.network, response))))
            return
        changed = self._partition_change(rest, c.leader, m.isr)
        if changed is None:
            return
        after = changed.controller
        response = AlterPartitionResponse.new(src=CONTROLLER, dst=m.src, epoch=m.epoch,
                                          partition_epoch=m.partition_epoch, error=NONE, isr=after.isr, new_epoch=after.epoch,
                                          new_partition_epoch=after.partition_epoch)
        add((act, changed.with_(network=add_messages(changed.network, response))))
        if s.alter_losses < self.alter_losses:
            self._lose_alter_response(changed, m, add)

    def _process_alter_isr(self, s: KafkaState, m: AlterPartition, add) -> None:
        """ProcessAlterPartition on a ZooKeeper row with ``alter-isr``: the ZooKeeper controller's AlterIsr (2.7.0, 2.8.0,
        3.0.0 ``KafkaController.processAlterIsr``; 3.3.0 to 3.9 ``tryProcessAlterPartition``, the same checks in the same
        order). STALE_BROKER_EPOCH (top level) if the sender's broker epoch is not the one the controller registered
        (``liveBrokerIdAndEpochs``); FENCED_LEADER_EPOCH for an older leader epoch; the partition's current state if it is
        already the proposed one, whatever the version (``equalsIgnoreZk``; 3.3+ ``equalsAllowStalePartitionEpoch``,
        checked before the version: a request sent again after a lost answer is answered with the state it wrote);
        INVALID_UPDATE_VERSION for another zkVersion (2.7 to 3.2 the conditional ZooKeeper write,
        ``zkClient.updateLeaderAndIsr`` -> ``badVersionUpdates``; 3.3+ checked before the write); with ``kafka-14140``
        (3.4.0 ``tryProcessAlterPartition``, commit 163d00b3e61: ``newLeaderAndIsr.isr.toSet --
        controllerContext.liveBrokerIds``, checked last) INELIGIBLE_REPLICA if a member of the proposed ISR is not live
        for the controller (``_zookeeper_live``: its death processed, or its controlled shutdown). Otherwise the ISR is
        written with the request's leader epoch (no new leader epoch: no epoch bound) and a new zkVersion, and answered
        with it; the controller then sends UpdateMetadata only (``sendUpdateMetadataRequest``), no LeaderAndIsr, so the
        leader learns the committed ISR from the answer alone. With ``alter_losses`` the answer may be lost after the
        write (``LoseAlterPartitionResponse``: 2.7.0 ``BrokerToControllerRequestThread.handleResponse``, 2.8.0 the same:
        ``wasDisconnected`` -> ``requestQueue.putFirst``)."""
        c = s.controller
        rest = s.with_(network=remove_message(s.network, m))
        act = self._process_alter[m.src]
        if m.broker_epochs[m.src] != c.registered[m.src]:
            error = STALE_BROKER_EPOCH
        elif m.epoch < c.epoch:
            error = FENCED_LEADER_EPOCH
        elif m.src == c.leader and m.epoch == c.epoch and m.isr == c.isr:
            current = AlterPartitionResponse.new(src=CONTROLLER, dst=m.src, epoch=m.epoch,
                                             partition_epoch=m.partition_epoch, error=NONE, isr=c.isr, new_epoch=c.epoch,
                                             new_partition_epoch=c.partition_epoch)
            add((act, rest.with_(network=add_messages(rest.network, current))))
            return
        elif m.partition_epoch != c.partition_epoch:
            error = INVALID_UPDATE_VERSION
        elif self.features.kafka_14140 and not all(_zookeeper_live(s, r) for r in m.isr):
            error = INELIGIBLE_REPLICA  # KAFKA-14140 (3.4.0): newLeaderAndIsr.isr.toSet -- liveBrokerIds
        else:
            error = NONE
        if error != NONE:
            # STALE_BROKER_EPOCH names the proposal, which the leader sends again (``AlterIsrManager`` keeps the item)
            isr = m.isr if error == STALE_BROKER_EPOCH else ()
            response = AlterPartitionResponse.new(src=CONTROLLER, dst=m.src, epoch=m.epoch,
                                              partition_epoch=m.partition_epoch, error=error, isr=isr, new_epoch=UNDEFINED,
                                              new_partition_epoch=UNDEFINED)
            add((act, rest.with_(network=add_messages(rest.network, response))))
            return
        version = c.partition_epoch + 1
        written = rest.with_(controller=c.with_(isr=m.isr, partition_epoch=version))
        response = AlterPartitionResponse.new(src=CONTROLLER, dst=m.src, epoch=m.epoch,
                                          partition_epoch=m.partition_epoch, error=NONE, isr=m.isr, new_epoch=c.epoch,
                                          new_partition_epoch=version)
        add((act, written.with_(network=add_messages(written.network, response))))
        if s.alter_losses < self.alter_losses:
            self._lose_alter_response(written, m, add)

    def _lose_alter_response(self, changed: KafkaState, m: AlterPartition, add) -> None:
        """LoseAlterPartitionResponse (bound ``alter_losses``): the controller wrote the change, and its answer is lost
        (a disconnect). 3.3.0 / 3.5.0 ``BrokerToControllerChannelManager.handleResponse`` puts a disconnected request
        back at the head of its queue (``requestQueue.putFirst``) and ``AlterPartitionManager.sendRequest`` never times
        an AlterPartition out ("letting it retry indefinitely until a response is received, or a new LeaderAndIsr
        overwrites the existing isrState"; the item stays in ``unsentIsrUpdates`` until answered): the same request
        is in flight again, and the leader stays with its pending maximal ISR. The controller answers the resent
        request INVALID_UPDATE_VERSION (its partition epoch is now older) or FENCED_LEADER_EPOCH (the change moved the
        leader epoch), on which ``Partition.handleAlterPartitionError`` waits for the metadata: the partition change
        the leader replays (a LeaderAndIsr here) commits the ISR. A request lost before the controller read it is
        sent again just the same, which the model's network already has as a request delivered late."""
        # guard: the caller's (an accepted change, a loss left in the bound); effect: the change without its answer
        add((self._lose_alter[m.src], changed.with_(network=add_messages(changed.network, m),
                                                    alter_losses=changed.alter_losses + 1)))

    def _ineligible(self, s: KafkaState, m: AlterPartition) -> bool:
        """``ineligibleReplicasForIsr``: fenced or in controlled shutdown (KIP-841) or a broker epoch that is given and
        not the registered one (KIP-903)."""
        registered = s.controller.registered
        for r in m.isr:
            if self.features.kip_841 and (registered[r] == DEAD or s.brokers[r].stopping):
                return True
            if self.features.kip_903 and m.broker_epochs[r] != UNDEFINED and m.broker_epochs[r] != registered[r]:
                return True
        return False

    def _hw_left_stale(self, b: Broker, i: int, isr: tuple[int, ...]) -> bool:
        """KAFKA-13091 (``hw_events=1`` on a release without the fix, 2.7 to 3.0 ``handleAlterIsrResponse``): the
        committed ``isr`` would let the HW advance and the leader does not recompute it. Marked only when the model's
        HW is where Kafka's is (the bound over the ISR before the commit, which every earlier append and fetch
        recomputed): where the model's own AdvanceHighWatermark step still lags, it is left free, so no stuck HW is
        reported that Kafka would have moved at an earlier event."""
        if not self.hw_events:
            return False
        return b.hw == _hw_bound(b, i, b.isr) and _hw_bound(b, i, isr) > b.hw

    def _receive_alter_response(self, s: KafkaState, m: AlterPartitionResponse, add) -> None:
        """ReceiveAlterPartitionResponse (``Partition.submitAlterPartition`` completion): ignored if the partition
        state changed since the request (``partitionState != proposedIsrState``); NONE commits the ISR unless the
        change moved the leader epoch (then the partition change brings it); INELIGIBLE_REPLICA reverts to the
        last committed ISR; the other errors wait for the next partition change (``handleAlterPartitionError``). On a
        ZooKeeper row with ``alter-isr``: ``_receive_alter_isr_response``."""
        i = m.dst
        b = s.brokers[i]
        rest = s.with_(network=remove_message(s.network, m))
        act = self._receive_alter[i]
        if not _answers_pending(b, m):
            add((act, rest))
            return
        if m.error == NONE and m.new_epoch == b.epoch:
            b = b.with_(isr=m.isr, alter_pending=False, committed_isr=(), partition_epoch=m.new_partition_epoch,
                        hw_stale=self._hw_left_stale(b, i, m.isr))
        elif m.error == INELIGIBLE_REPLICA:
            b = b.with_(isr=b.committed_isr, alter_pending=False, committed_isr=())
        else:
            add((act, rest))
            return
        add((act, with_broker(rest, i, b)))

    def _receive_alter_isr_response(self, s: KafkaState, m: AlterPartitionResponse, add) -> None:
        """ReceiveAlterPartitionResponse on a ZooKeeper row with ``alter-isr`` (2.7.0 / 2.8.0 / 3.0.0
        ``Partition.handleAlterIsrResponse`` and ``AlterIsrManagerImpl.handleAlterIsrResponse``; 3.9
        ``submitAlterPartition``, ``handleAlterPartitionUpdate``, ``handleAlterPartitionError``): ignored unless the
        partition is still in the pending state the request was sent from (``isrState != proposedIsrState``: a
        LeaderAndIsr since, or a restart, replaced it). NONE commits the answered ISR and zkVersion if its leader epoch
        is the leader's and its version newer (otherwise the answer is ignored and the state stays pending).
        STALE_BROKER_EPOCH (top level) leaves the item queued: the proposal is sent again with the broker's current
        broker epoch. FENCED_LEADER_EPOCH and INVALID_UPDATE_VERSION give up: the ISR stays pending (no further ISR
        change) until the next LeaderAndIsr, which a FENCED_LEADER_EPOCH leader has coming (the controller's newer
        epoch was sent to it). INELIGIBLE_REPLICA (``kafka-14140``, 3.4.0 ``handleAlterPartitionError``: "the request
        was not applied") reverts to the last committed ISR, as KRaft's leader does; 2.7 to 3.3 never receive it.
        The leader's own check (3.4.0 ``Partition.isReplicaIsrEligible``: ``zkMetadataCache.hasAliveBroker``) reads a
        metadata cache that UpdateMetadata fills, which the model has no message for: the cache may lag the controller
        at any step, so the leader may propose a member the controller rejects (what a lagging cache does)."""
        i = m.dst
        b = s.brokers[i]
        rest = s.with_(network=remove_message(s.network, m))
        act = self._receive_alter[i]
        if not _answers_pending(b, m):
            add((act, rest))
            return
        if m.error == NONE and m.new_epoch == b.epoch and m.new_partition_epoch > b.partition_epoch:
            # before KAFKA-13091's fix (3.1.0) the committed ISR is taken without maybeIncrementLeaderHW (hw_events=1)
            b = b.with_(isr=m.isr, alter_pending=False, committed_isr=(), partition_epoch=m.new_partition_epoch,
                        hw_stale=self._hw_left_stale(b, i, m.isr))
            add((act, with_broker(rest, i, b)))
        elif m.error == INELIGIBLE_REPLICA:
            add((act, with_broker(rest, i, b.with_(isr=b.committed_isr, alter_pending=False, committed_isr=()))))
        elif m.error == STALE_BROKER_EPOCH:
            epochs = tuple([b.broker_epoch if r == i else UNDEFINED for r in range(self.brokers)])
            again = AlterPartition.new(src=i, dst=CONTROLLER, epoch=b.epoch, partition_epoch=b.partition_epoch,
                                   isr=m.isr, broker_epochs=epochs)
            add((act, rest.with_(network=add_messages(rest.network, again))))
        else:
            add((act, rest))

    # -- the requests to the controller, delivered --------------------------------------------------------------
    def _alter_partition_deliveries(self, s: KafkaState, out: list) -> None:
        """KRaft: the controller processes an AlterPartition; a leader receives the answer (after the messages every
        row shares, ``KafkaModel._deliveries``)."""
        add = out.append
        for m in s.network:
            if m.kind == ALTER_PARTITION:
                self._process_alter_partition(s, m, add)
            elif m.kind == ALTER_PARTITION_RESPONSE:
                self._receive_alter_response(s, m, add)

    def _alter_isr_deliveries(self, s: KafkaState, out: list) -> None:
        """A ZooKeeper row with ``alter-isr``: the ZooKeeper controller processes an AlterIsr; the leader receives the
        answer."""
        add = out.append
        for m in s.network:
            if m.kind == ALTER_PARTITION:
                self._process_alter_isr(s, m, add)
            elif m.kind == ALTER_PARTITION_RESPONSE:
                self._receive_alter_isr_response(s, m, add)

    # -- metadata replayed by a broker -----------------------------------------------------------------------
    def _kraft_apply_leader_and_isr(self, s: KafkaState, m: LeaderAndIsr) -> KafkaState:
        """On KRaft a partition change replayed from the metadata log (``ReplicaManager.applyDelta``): the same leader
        epoch with a newer partition epoch only updates the ISR (a leader's pending AlterPartition is dropped:
        ``Partition.makeLeader`` sets a committed partition state); a newer leader epoch goes through
        ``becomeLeaderOrFollower`` as on the ZooKeeper rows (``actions_control._apply_leader_and_isr``, which also sets
        the partition epoch, drops a pending AlterPartition and, with KIP-903, the followers' broker epochs).

        With ``kraft-shutdown-stops-fetcher`` (3.3.0, KAFKA-13858 76477ffd2d8; 3.9.0-rc3 the same) a broker in controlled
        shutdown that replays a change as a follower stops fetching when the change leaves it out of the ISR or the
        partition without a leader (``applyLocalFollowersDelta``: ``isInControlledShutdown && (info.partition.leader ==
        NO_LEADER || !info.partition.isr.contains(config.brokerId))`` -> ``partitionsToStopFetching`` ->
        ``stopPartitions`` without deleting the log): it still takes the partition state (``makeFollower`` runs
        first), and has no fetcher (``IDLE_STOPPED``)."""
        i = m.dst
        b = s.brokers[i]
        if m.epoch == b.epoch and m.partition_epoch > b.partition_epoch:
            updated = b.with_(isr=m.isr, partition_epoch=m.partition_epoch, alter_pending=False, committed_isr=(),
                              hw_stale=False)  # makeLeader recomputes the HW
            t = with_broker(s, i, updated, network=remove_message(s.network, m))
        else:
            t = self._apply_leader_and_isr(s, m)
        if self.features.kraft_shutdown_stops_fetcher and b.stopping and m.leader != i:
            after = t.brokers[i]
            applied = after.partition_epoch == m.partition_epoch and after.epoch == m.epoch
            if applied and (m.leader == NO_LEADER or i not in m.isr) and after.fetch != NO_FETCHER:
                t = with_broker(t, i, after.with_(fetch=NO_FETCHER, idle_cause=IDLE_STOPPED))
        return t

    # -- a broker's own actions: crash, unclean shutdown, restart ----------------------------------------------
    def _kraft_broker_actions(self, s: KafkaState, i: int, out: list) -> None:
        """A broker's own actions on the KRaft rows (``KRaftController.broker_actions``): as on the
        ZooKeeper rows, without the ZooKeeper ControlledShutdown and Bounce, with KRaft's Restart and the
        UncleanShutdown fault."""
        b = s.brokers[i]
        add = out.append
        if not b.alive:
            if s.controller.registered[i] == DEAD:  # re-registration waits for the old session to expire
                t = self._kraft_restart_state(s, i)
                if t is not None:
                    add((self._restart[i], t))
            return
        self._replica_actions(s, i, b, out)  # spec.kafka.model: the same under either controller
        if s.shutdowns < self.shutdowns and not b.stopping and s.controller.leader == i:
            self._controlled_shutdown_actions(s, i, b, add)
        if s.clean_shutdowns < self.clean_shutdowns:
            self._clean_shutdown_actions(s, i, b, add)
        if s.crashes < self.crashes:
            add((self._crash[i], self._kraft_crash(s, i, len(b.log))))
        if s.unclean_shutdowns < self.unclean_shutdowns:
            for keep in range(len(b.log)):
                t = self._kraft_crash(s, i, keep)
                add((self._unclean_shutdown[i][keep], t.with_(crashes=s.crashes, unclean_shutdowns=s.unclean_shutdowns + 1)))

    def _controlled_shutdown_actions(self, s: KafkaState, i: int, b: Broker, add) -> None:
        """ProcessControlledShutdown(broker, leader) on KRaft (KIP-841's shutting-down half; bound ``shutdowns``): the
        controller reads a heartbeat with ``wantShutDown`` from the partition's leader (3.3.0 / 3.5.0
        ``BrokerHeartbeatManager.calculateNextBrokerState``: a broker with leaderships goes to CONTROLLED_SHUTDOWN;
        ``ReplicationControlManager.processBrokerHeartbeat`` -> ``handleBrokerInControlledShutdown`` ->
        ``generateLeaderAndIsrUpdates`` with ``brokerToRemove``): the broker leaves the ISR (the last member stays
        unless ``kip-966-elr``), leadership moves to an active ISR (or ELR) member, else the partition goes offline;
        ``leader`` is the leader afterwards (-1: offline). The broker keeps running and fetching, in controlled
        shutdown (``Broker.stopping``): not electable (``ClusterControlManager.active``) and, with ``kip-841``, not
        eligible to join the ISR (``Partition.isReplicaIsrEligible``: ``isBrokerShuttingDown``;
        ``ineligibleReplicasForIsr``: ``inControlledShutdown``). A broker that leads nothing goes straight to
        SHUTDOWN_NOW, which fences it (``handleBrokerFenced``) and stops it: the model's CleanShutdown (with its clean
        shutdown file; or Crash and FenceBroker, without), so only the leader has this step; the leader's SHUTDOWN_NOW
        that follows is the same CleanShutdown (or Crash).
        The heartbeat and the controller's handling are one step: the broker's view of its own shutdown is the
        controller's."""
        c = s.controller
        if c.registered[i] == DEAD:  # guard: a fenced broker's heartbeat is refused (its session expired)
            return
        table = self._kraft_shutdown[i]
        shutting = with_broker(s, i, b.with_(stopping=True), shutdowns=s.shutdowns + 1)
        isr = tuple([r for r in c.isr if r != i])
        if not isr and not self.features.kip_966_elr:
            isr = c.isr  # PartitionChangeBuilder.build: an empty target ISR is not written
        elr_after = c.elr
        if self.features.kip_966_elr and len(isr) < self._controller_min_isr(s):
            elr_after = tuple(sorted((set(c.elr) | set(c.isr)) - set(isr)))
        candidates = self._candidates(shutting, isr, elr_after, excluded=i)
        for r in candidates:
            t = self._partition_change(shutting, r, isr if r in isr else (r,))
            if t is not None:
                add((table[r + 1], t))
        if not candidates:
            t = self._partition_change(shutting, NO_LEADER, isr)
            if t is not None:
                add((table[0], t))

    def _clean_shutdown_actions(self, s: KafkaState, i: int, b: Broker, add) -> None:
        """CleanShutdown(broker, leader) (bound ``clean_shutdowns``): a broker that leads nothing (a leader first hands
        its leadership on: ProcessControlledShutdown) ends its controlled shutdown and stops cleanly. The controller
        answers its heartbeat with ``wantShutDown`` SHUTDOWN_NOW (3.8.0 ``BrokerHeartbeatManager
        .calculateNextBrokerState``: no leaderships left) and fences it (``ReplicationControlManager
        .processBrokerHeartbeat``: ``case SHUTDOWN_NOW: handleBrokerFenced``: out of the ISR, into the ELR where
        ``maybePopulateTargetElr`` puts it; FenceBroker's partition change, ``leader`` the leader afterwards); the
        broker then shuts its log manager down, which writes the clean shutdown file with its broker epoch (3.8.0
        ``BrokerServer.shutdown`` -> ``LogManager.shutdown(lifecycleManager.brokerEpoch)``,
        ``CleanShutdownFileHandler.write``): a dead broker with ``stopping`` set. Its log is kept whole. The wait for
        the broker's metadata offset to reach the controlled shutdown offset is not modelled (the model's metadata is
        the LeaderAndIsr each broker replays, late).

        A fenced running broker (FenceBroker with ``fences``) with ``fenced-broker-clean-shutdown`` (3.8.0: the clean
        shutdown file; the grant is 3.3.0's): its heartbeat with ``wantShutDown`` is answered SHUTDOWN_NOW at once
        (3.9.0-rc3 ``BrokerHeartbeatManager.calculateNextBrokerState``, ``case FENCED``: "has requested and been
        granted an immediate shutdown"); ``handleBrokerFenced`` of a broker already out of the ISR writes no partition
        change, and ``BrokerServer.shutdown`` writes the clean shutdown file with ``lifecycleManager.brokerEpoch``, its
        registration's, whatever the controller answered. Without the flag the model has it only crash."""
        fenced = s.controller.registered[i] == DEAD
        if fenced and not self.features.fenced_broker_clean_shutdown:
            return  # guard: without the flag, a fenced broker's shutdown is a Crash
        if s.controller.leader == i:
            return  # guard: a leader is moved first (CONTROLLED_SHUTDOWN)
        t = self._kraft_crash(s, i, len(b.log))
        stopped = with_broker(t, i, t.brokers[i].with_(stopping=True), crashes=s.crashes,
                              clean_shutdowns=s.clean_shutdowns + 1)
        if fenced:
            # SHUTDOWN_NOW -> handleBrokerFenced: the broker is already fenced and out of the ISR (kip-966-elr; without
            # ELR the last member stays, and an ISR it cannot leave changes nothing): no partition change
            add((self._clean_shutdown[i][s.controller.leader + 1], stopped))
            return
        fenced: list = []
        self._fence_actions(stopped, i, fenced.append)
        table = self._clean_shutdown[i]
        for act, u in fenced:
            add((table[dict(act.params)["leader"] + 1], u))

    def _kraft_crash(self, s: KafkaState, i: int, keep: int) -> KafkaState:
        """Crash / UncleanShutdown: ``_crash_state`` (in-memory state and the broker's connections lost, ``keep``
        records of the log kept), and the KRaft in-memory state (partition epoch, pending AlterPartition, the
        followers' broker epochs) with it."""
        t = self._crash_state(s, i, keep)
        dead = t.brokers[i].with_(partition_epoch=0, alter_pending=False, committed_isr=(), remote_epochs=())
        return with_broker(t, i, dead)

    def _kraft_restart_state(self, s: KafkaState, i: int) -> KafkaState | None:
        """Restart on KRaft: the broker registers as a new incarnation with a new broker epoch
        (``ClusterControlManager.registerBroker``) and is unfenced. With ``clean-shutdown-detection`` the registration
        is removed from the ISR and the ELR (``brokerUncleanShutdownHandler.addRecordsForShutdown`` ->
        ``ReplicationControlManager.handleBrokerUncleanShutdown``, which acts only where ELR is supported): on 3.9.x
        (KAFKA-16952, 2fd00ce5367: ``!request.incarnationId().equals(prevIncarnationId)``) every new incarnation, clean
        shutdown or not; with ``kafka-18635`` (as 3.8.0: ``request.previousBrokerEpoch() != existing.epoch()``) only one
        whose previous broker epoch, read from its clean shutdown file (``LogManager.readBrokerEpochFromCleanShutdownFiles``,
        ``BrokerLifecycleManager`` ``previousBrokerEpoch``; -1 without the file), is not its registered one: a broker
        that crashed (Crash, UncleanShutdown), not one that stopped cleanly (CleanShutdown: dead with ``stopping``).
        It then replays the partition's current state; a broker that a reassignment took out of the replicas
        (``spec.kafka.actions_reassignment``) has no partition state to replay (no fetcher), and a log it did not delete
        before it crashed stays on its disk as a stray log (3.5.0 deletes none at start-up)."""
        before = s.brokers[i]
        clean = not before.alive and before.stopping  # its clean shutdown file holds the registered broker epoch
        reborn = self._reborn(before)
        c = s.controller
        hosts = not c.replicas or i in c.replicas
        if not hosts:
            reborn = reborn.with_(idle_cause=IDLE_STOPPED)
        s = with_broker(s, i, reborn, controller=c.with_(registered=replace_at(c.registered, i, reborn.broker_epoch)))
        c = s.controller
        unclean = not (clean and self.features.kafka_18635)
        if self.features.detects_unclean_shutdown and unclean and (i in c.isr or i in c.elr):
            isr = tuple([r for r in c.isr if r != i])
            s = s.with_(controller=c.with_(elr=tuple([r for r in c.elr if r != i])))
            # the restarted broker replays the change too, although it keeps the leader epoch: its first metadata image
            # holds the partition as the change left it (3.9.0 ``BrokerMetadataPublisher.onMetadataUpdate``: on the
            # first publish the delta from the empty image, ``replicaManager.applyDelta`` -> makeFollower); the change is
            # written with the registration it answers (``ClusterControlManager.registerBroker``), before the broker's
            # initial catch-up to the metadata log ends
            return self._partition_change(s, c.leader if c.leader != i else NO_LEADER, isr, unclean_replica=i,
                                          restarted=i if hosts else -1)
        if not hosts:
            return s
        request = LeaderAndIsr.new(dst=i, epoch=c.epoch, leader=c.leader, isr=c.isr, broker_epoch=reborn.broker_epoch,
                                   meant=reborn.incarnation, partition_epoch=c.partition_epoch, replicas=c.replicas)
        return s.with_(network=add_messages(s.network, request))


def _zookeeper_live(s: KafkaState, r: int) -> bool:
    """Whether the ZooKeeper controller counts broker ``r`` live (3.4.0 ``ControllerContext.liveBrokerIds``:
    ``liveBrokerEpochs.keySet.diff(shuttingDownBrokerIds)``): its death not processed (``registered``), and not in
    controlled shutdown: ``doControlledShutdown`` adds it to ``shuttingDownBrokerIds`` as the controller processes its
    ControlledShutdown (its own request is then no longer in flight), ``onBrokerFailure`` removes it."""
    if s.controller.registered[r] == DEAD:
        return False
    b = s.brokers[r]
    if not b.alive or not b.stopping:
        return True
    return any(m.kind == CONTROLLED_SHUTDOWN and m.src == r and m.incarnation == b.incarnation for m in s.network)


def _alter_in_flight(network: tuple, leader: int) -> bool:
    for m in network:
        if (m.kind == ALTER_PARTITION and m.src == leader) or (m.kind == ALTER_PARTITION_RESPONSE and m.dst == leader):
            return True
    return False


#: the KRaft controller's own actions and the AlterPartition requests (``spec.kafka.declared``); a broker id or -1
#: for the leader afterwards (none)
ACTIONS: tuple[Declared, ...] = (
    Declared("FenceBroker", "_fence", (("broker", BROKER), ("leader", BROKER_OR_NONE)),
             ("_fence_actions", "_fence_running_actions", "_unfenced", "_partition_change")),
    Declared("ProcessAlterPartition", "_process_alter", (("leader", BROKER),),
             ("_process_alter_partition", "_partition_change", "_ineligible", "_process_alter_isr", "_reassigned",
              "completed")),
    Declared("ReceiveAlterPartitionResponse", "_receive_alter", (("leader", BROKER),),
             ("_receive_alter_response", "_receive_alter_isr_response")),
    Declared("LoseAlterPartitionResponse", "_lose_alter", (("leader", BROKER),), ("_lose_alter_response",)),
    Declared("ProcessControlledShutdown", "_kraft_shutdown", (("broker", BROKER), ("leader", BROKER_OR_NONE)),
             ("_controlled_shutdown_actions", "_unfenced")),
    Declared("UncleanShutdown", "_unclean_shutdown", (("broker", BROKER), ("keep", KEEP)),
             ("_kraft_broker_actions", "_kraft_crash", "_restart_state")),
    Declared("CleanShutdown", "_clean_shutdown", (("broker", BROKER), ("leader", BROKER_OR_NONE)),
             ("_clean_shutdown_actions", "_fence_actions", "_partition_change")),
    Declared("UnfenceBroker", "_unfence", (("broker", BROKER), ("leader", BROKER_OR_NONE)),
             ("_unfence_actions", "_candidates", "_partition_change")),
)
