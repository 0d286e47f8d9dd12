"""The KRaft quorum controller of the Kafka model (protocol rows ``kraft-*``, flag ``kraft``): its
partition changes, elections, fencing and eligible leader replicas.

On the KRaft rows the controller is the KRaft quorum controller, not ZooKeeper's. Its control plane
(``spec.kafka.controllers.KRaftController``) runs four families, one module each, as Kafka's code
divides them:

- this module: the controller's partition changes (``ReplicationControlManager``,
  ``PartitionChangeBuilder``), its elections and the fencing of brokers whose heartbeats stopped,
  and the brokers' replay of those changes;
- ``spec.kafka.actions_alter_partition``: the leader's AlterPartition (``Partition``,
  ``AlterPartitionManager``) and the controller's answer
  (``ReplicationControlManager.alterPartition``);
- ``spec.kafka.actions_broker_lifecycle``: a broker's registration, its heartbeats asking to shut
  down (controlled and clean shutdown) and its crashes (``BrokerLifecycleManager``,
  ``BrokerHeartbeatManager``, ``ClusterControlManager.registerBroker``);
- ``spec.kafka.actions_reassignment``: partition reassignment (bound ``reassignments``).

The ZooKeeper rows with ``alter-isr`` run the AlterPartition family with the ZooKeeper controller's
AlterIsr (``spec.kafka.actions_alter_isr``).

- Every partition change bumps the **partition epoch** and is replayed by every live broker in order
  (a ``LeaderAndIsr`` here stands for the PartitionRecord / PartitionChangeRecord of the metadata
  log, with the partition epoch). The leader epoch moves with a new leader, and (before KAFKA-15021,
  3.6.0) with every ISR shrink (``PartitionChangeBuilder.triggerLeaderEpochBumpIfNeeded``).
- **Metadata lag**: a LeaderAndIsr is the partition change a broker replays late; with
  ``metadata_lag=1`` a leader's view of the registrations may be older than the controller's (its
  own eligibility check passes: ``actions_alter_partition``).
- Brokers are **fenced** when their heartbeats stop (FenceBroker): the controller removes a fenced
  broker from the ISR, keeping the last member (``PartitionChangeBuilder.build`` writes no empty
  ISR), and elects a new leader from the unfenced ISR members, or leaves the partition offline.
  ``Controller.registered`` holds DEAD while a broker is fenced and its registration's broker epoch
  while it is unfenced (registration: ``actions_broker_lifecycle``).
- KIP-966 (``kip-966-elr``; its strict min ISR, KAFKA-15583, is the data plane's flag
  ``kafka-15583``, 3.7.0 in either mode: the HW does not advance while the ISR is below
  ``min_isr``): the ISR may become empty, the replicas that leave an ISR that is below min ISR are
  **eligible leader replicas** (``PartitionChangeBuilder.maybePopulateTargetElr``), and an unfenced
  ELR member is elected when the ISR is empty (``isValidNewLeader``). With
  ``clean-shutdown-detection`` a broker that registers after an unclean shutdown leaves the ISR and
  the ELR (``actions_broker_lifecycle``).

=================================  ==========================  =====================================
action (KRaft rows)                params                      what happens
=================================  ==========================  =====================================
FenceBroker                        broker, leader              the controller fences a broker whose
                                                               heartbeats stopped; ``leader`` is the
                                                               leader afterwards (-1: offline)
UnfenceBroker                      broker, leader              a running fenced broker heartbeats
                                                               again and is unfenced; ``leader`` is
                                                               the leader afterwards
ElectLeader                        leader                      the partition is offline: an unfenced
                                                               ISR member (KIP-966: or ELR member)
                                                               is elected
=================================  ==========================  =====================================
"""

from __future__ import annotations

from spec.kafka.clients import unclean_noted
from spec.kafka.declared import BROKER, BROKER_OR_NONE, Declared
from spec.kafka.state import (
    DEAD,
    IDLE_STOPPED,
    NO_FETCHER,
    NO_LEADER,
    KafkaState,
    LeaderAndIsr,
)
from spec.kafka.updates import add_messages, remove_message, replace_at, with_broker

#: ``kmc matrix`` on the KRaft rows: the durability columns with one unclean shutdown (the fault the
#: KIPs are about) and min.insync.replicas=2, the setting under which KIP-966 promises to survive it
#: (min ISR - 1 = 1 unclean shutdown), with one AlterPartition (``alters``: each of the KIP-841,
#: KIP-903 and KIP-966 stories needs one). At two leader epochs the KIP-903 story (kraft-3.3) fits;
#: the last-replica-standing story of KIP-966 needs three on the 3.x lines (a shrink bumps the
#: leader epoch there), which is the ``deep`` set. Log Matching with one AlterPartition; the
#: control-plane columns without (their stories are about control requests, not the ISR)
_DURABILITY = ("records=1", "epochs=2", "crashes=1", "unclean_shutdowns=1", "alters=1", "min_isr=2")
KRAFT_MATRIX_BOUNDS: dict[str, tuple[str, ...]] = {
    **{name: ("records=2", "crashes=0", "alters=1")
       for name in ("log-matching", "log-matching-all-pairs",
                     "log-matching-raft")},
    **{name: _DURABILITY for name in ("committed-durable", "no-uncommitted-below-hw",
                                      "elr-safety")},
    # replica-sanity at the ZooKeeper rows' data bounds with no AlterPartition: KAFKA-18991's stale
    # append (the fetch path is the ZooKeeper row's of the same release, fixed in 3.9.1, 4.0.1 and
    # 4.1.0) needs a second record and no ISR change; with one AlterPartition kraft-4.1 holds too,
    # at 447,683 states instead of 49,463
    "replica-sanity": ("records=2", "epochs=2", "crashes=1", "alters=0"),
    # the client columns with their client: an acks=all producer, one consumer (without them they
    # hold vacuously)
    "acknowledged-durable": (*_DURABILITY, "acks=-1"),
    "consumed-stays": (*_DURABILITY, "consumers=1"),
    "no-silent-skip": ("records=2", "epochs=2", "crashes=1", "unclean_shutdowns=1", "alters=1",
                       "min_isr=2", "consumers=1"),
    "no-stale-control-request": ("records=1", "epochs=1", "crashes=0", "bumps=1", "alters=0"),
    "no-bounce-stall": ("records=1", "epochs=1", "crashes=0", "bumps=1", "alters=0"),
    "no-fence-stall": ("records=1", "epochs=2", "crashes=0", "bumps=2", "alters=0"),
}


def kraft_bound_sets() -> dict[str, dict[str, tuple[str, ...]]]:
    deep = ("records=1", "epochs=3", "crashes=1", "unclean_shutdowns=1", "alters=2", "min_isr=2")
    return {"default": dict(KRAFT_MATRIX_BOUNDS),
            "deep": {**KRAFT_MATRIX_BOUNDS,
                     **{name: deep for name in ("committed-durable", "no-uncommitted-below-hw",
                                                "replica-sanity", "elr-safety")}}}


class KRaftControllerActions:
    """The KRaft controller's partition changes: elections, fencing and unfencing, the ELR, and the
    brokers' replay of a change. No method here overrides another family's: the KRaft control plane
    (``spec.kafka.controllers``) calls these where the ZooKeeper plane calls ``actions_control``."""

    def _init_kraft(self, alters: int, unclean_shutdowns: int, alter_losses: int = 0,
                    metadata_lag: int = 0, clean_shutdowns: int = 0, fences: int = 0) -> None:
        f = self.features
        # the bounds of the KRaft rows are inert on the ZooKeeper rows (their fault is lossy-crash),
        # as the bounds of the ZooKeeper control plane (shutdowns, bounces, losses) are on the KRaft
        # rows: a scenario replays under both
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
            # ``kmc matrix`` checks a KRaft row at its own bounds (an instance attribute over the
            # class's; the bound sets: ``KafkaModel.matrix_bound_sets``)
            self.matrix_bounds = dict(KRAFT_MATRIX_BOUNDS)

    # -- partition changes by the controller -------------------------------------------------------
    def _unfenced(self, s: KafkaState, b: int) -> bool:
        """``ClusterControlManager.active`` (3.3.0+), what a leader election accepts: registered and
        not fenced (the controller does not know a broker died until its session expires) and not in
        controlled shutdown (a broker the controller moved leadership away from, ``Broker.stopping``
        on the KRaft rows)."""
        return s.controller.registered[b] != DEAD and not s.brokers[b].stopping

    def _controller_min_isr(self, s: KafkaState) -> int:
        """The min ISR every ``PartitionChangeBuilder`` gets: with ``effective-min-isr`` (3.7.0
        KAFKA-15581, af747fbfed7; 3.9.0-rc3 the same)
        ``ReplicationControlManager.getTopicEffectiveMinIsr``:
        ``Math.min(currentMinIsr, replicationFactor)``, the replication factor read from the
        partition's registration before the change
        (``topics.get(topicId).parts.get(0).replicas.length``: during a reassignment the merged
        list, target and removing replicas; () in the model while no reassignment changed them:
        every broker)."""
        if not self.features.effective_min_isr:
            return self.min_isr
        replicas = s.controller.replicas
        return min(self.min_isr, len(replicas) if replicas else self.brokers)

    def _partition_change(self, s: KafkaState, leader: int, isr: tuple[int, ...],
                          bump: bool = False, unclean_replica: int = -1,
                          target: tuple[int, ...] = (), restarted: int = -1,
                          unclean: bool = False) -> KafkaState | None:
        """A PartitionChangeRecord (``PartitionChangeBuilder.build``): the new leader and ISR, the
        partition epoch
        + 1, the leader epoch + 1 if the leader changes, on ``bump`` (reassignment) and, before
        KAFKA-15021, on an ISR shrink; with ``kip-966-elr`` the ELR (``maybePopulateTargetElr``:
        cleared when the ISR reaches min ISR, else the old ELR and ISR minus the new ISR minus
        ``unclean_replica``). Every live broker replays it. None beyond the epoch bound. A
        reassignment to ``target`` replicas, or one in progress, is applied first
        (``spec.kafka.actions_reassignment``). A broker that registers again as the change is
        written (``restarted``) replays it whatever it changes: its first metadata image holds the
        partition (see ``_kraft_restart_state``). The min ISR is ``_controller_min_isr``
        (``effective-min-isr``: capped by the replicas before the change). An ``unclean`` election
        (the record sets the ISR in ``tryElection``) empties the ELR with
        ``unclean-election-clears-elr`` (3.7.0 and 3.9.0-rc3 ``maybeUpdateRecordElr``:
        ``isCleanLeaderElection = record.isr() == null``; not clean: ``targetElr`` and
        ``targetLastKnownElr`` emptied). With the proposed fix ``elr-filtered-by-replicas`` (in no
        release) the ELR keeps only the replicas after the change (``targetReplicas`` once
        ``completeReassignmentIfNeeded`` ran: the merged list while a reassignment is in
        progress)."""
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
                elr = tuple(sorted((set(c.elr) | set(c.isr)) - set(isr)
                                   - {unclean_replica, leader}))
            if unclean and self.features.unclean_election_clears_elr:
                elr = ()
            # the proposed fix: only the target replicas stay eligible
            if self.features.elr_filtered_by_replicas:
                kept = assignment.get("replicas", c.replicas)
                elr = tuple([r for r in elr if not kept or r in kept])
            if target and leader == NO_LEADER and not isr:
                # a reassignment's own build elects from the ELR when the ISR is empty (tryElection
                # after maybePopulateTargetElr: electAnyLeader walks the target replicas,
                # isValidNewLeader takes an active ELR member); ``_reassigned`` has elected from the
                # ISR
                elected = next((r for r in assignment["replicas"] if r in elr
                                and self._unfenced(s, r)), NO_LEADER)
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
        controller = c.with_(leader=leader, epoch=new_epoch, isr=isr,
                             partition_epoch=partition_epoch, elr=elr, **assignment)
        # a change that keeps the leader epoch (an ISR change) is sent to the leader only: a
        # follower does nothing with the ISR or the partition epoch until a change of leader epoch,
        # which every live broker replays
        to = (range(self.brokers) if new_epoch != c.epoch else (leader,) if leader != NO_LEADER
              else ())
        # the replicas, old and new, replay it (spec.kafka.actions_reassignment)
        if controller.replicas:
            to = self._replaying(c, controller, to)
        if restarted >= 0 and restarted not in to:
            to = (*to, restarted)
        # a metadata record is not addressed to a registration: a fenced broker that runs replays it
        # too (its own broker epoch, which is the registered one whenever it is unfenced)
        sent = tuple([LeaderAndIsr.new(dst=r, epoch=new_epoch, leader=leader, isr=isr,
                                       broker_epoch=s.brokers[r].broker_epoch,
                                       meant=s.brokers[r].incarnation,
                                       partition_epoch=partition_epoch,
                                       replicas=controller.replicas)
                      for r in to if s.brokers[r].alive])
        return s.with_(controller=controller, network=add_messages(s.network, *sent))

    def _candidates(self, s: KafkaState, isr: tuple[int, ...], elr: tuple[int, ...],
                    excluded: int = -1) -> list[int]:
        """The electable replicas (``PartitionChangeBuilder.isValidNewLeader``): unfenced ISR
        members; with ``kip-966-elr``, unfenced ELR members when the ISR is empty."""
        found = [r for r in isr if r != excluded and self._unfenced(s, r)]
        if not found and not isr and self.features.kip_966_elr:
            # the election walks the replicas (spec.kafka.actions_reassignment)
            replicas = s.controller.replicas
            found = [r for r in elr if r != excluded and self._unfenced(s, r)
                     and (not replicas or r in replicas)]
        return found

    def _elect_from(self, s: KafkaState, leader: int, isr: tuple[int, ...]) -> KafkaState | None:
        """A new leader from the ISR, or (empty ISR, KIP-966) from the ELR: it becomes the ISR."""
        return self._partition_change(s, leader, isr if leader in isr else (leader,))

    def _kraft_controller_actions(self, s: KafkaState, out: list) -> None:
        """The KRaft controller's own actions (``KRaftController.actions``): it fences a broker
        whose session expired (or, bound ``fences``, a running one) and unfences one that heartbeats
        again; it elects a leader for an offline partition (KIP-966: from the ELR when the ISR is
        empty; ``unclean``: any unfenced replica when no member is electable), moves leadership to
        another unfenced ISR member (preferred election) and bumps the leader epoch (``bumps``)."""
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
                # the replicas (spec.kafka.actions_reassignment)
                for b in c.replicas or range(self.brokers):
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
        """FenceBroker (``ReplicationControlManager.handleBrokerFenced`` ->
        ``generateLeaderAndIsrUpdates`` with ``brokerToRemove``): the broker leaves the ISR (the
        last member stays unless ``kip-966-elr``: then the ISR may empty and the ELR keeps it); if
        it led, or the partition is offline, a new leader is elected from the unfenced ISR (or ELR),
        else the partition is (stays) offline."""
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
        """FenceBroker of a running broker (bound ``fences``): its heartbeats stop reaching the
        controller (a pause, a network partition from the quorum) and its session expires (3.5.0
        ``QuorumController.rescheduleMaybeFenceStaleBrokers`` ->
        ``ReplicationControlManager.maybeFenceOneStaleBroker`` -> ``handleBrokerFenced``,
        ``BrokerHeartbeatManager .findOneStaleBroker``): the same partition change as a dead
        broker's (out of the ISR, the last member kept unless ELR; a new leader if it led). The
        broker keeps running: its log, its fetcher and, until it replays the change, its view of the
        partition (a fenced leader goes on as leader of its epoch until then)."""
        fenced: list = []
        self._fence_actions(s, i, fenced.append)
        for act, t in fenced:
            add((act, t.with_(fences=s.fences + 1)))

    def _unfence_actions(self, s: KafkaState, i: int, add) -> None:
        """UnfenceBroker(broker, leader): a running broker that was fenced heartbeats again and is
        unfenced with the broker epoch of its registration (3.5.0
        ``BrokerHeartbeatManager.calculateNextBrokerState``: FENCED -> UNFENCED once
        ``currentMetadataOffset >= registerBrokerRecordOffset``, which a running broker has long
        replayed; ``ReplicationControlManager.handleBrokerUnfenced``: the registration change, and a
        leader for a partition with none, from its ISR (KIP-966: ELR) with the broker now active:
        ``generateLeaderAndIsrUpdates(..., brokersToIsrs.partitionsWithNoLeader())``); ``leader`` is
        the leader afterwards."""
        b = s.brokers[i]
        c = s.controller
        unfenced = s.with_(controller=c.with_(registered=replace_at(c.registered, i,
                                                                    b.broker_epoch)))
        table = self._unfence[i]
        candidates = self._candidates(unfenced, c.isr, c.elr) if c.leader == NO_LEADER else []
        if not candidates:
            add((table[c.leader + 1], unfenced))
            return
        for r in candidates:  # not enabled beyond the epoch bound, as every election
            t = self._elect_from(unfenced, r, c.isr)
            if t is not None:
                add((table[r + 1], t))

    # -- metadata replayed by a broker -------------------------------------------------------------
    def _kraft_apply_leader_and_isr(self, s: KafkaState, m: LeaderAndIsr) -> KafkaState:
        """On KRaft a partition change replayed from the metadata log
        (``ReplicaManager.applyDelta``): the same leader epoch with a newer partition epoch only
        updates the ISR (a leader's pending AlterPartition is dropped: ``Partition.makeLeader`` sets
        a committed partition state); a newer leader epoch goes through ``becomeLeaderOrFollower``
        as on the ZooKeeper rows (``actions_control._apply_leader_and_isr``, which also sets the
        partition epoch, drops a pending AlterPartition and, with KIP-903, the followers' broker
        epochs).

        With ``kraft-shutdown-stops-fetcher`` (3.3.0, KAFKA-13858 76477ffd2d8; 3.9.0-rc3 the same) a
        broker in controlled shutdown that replays a change as a follower stops fetching when the
        change leaves it out of the ISR or the partition without a leader
        (``applyLocalFollowersDelta``:
        ``isInControlledShutdown && (info.partition.leader == NO_LEADER || !info.partition.isr.contains(config.brokerId))``
        -> ``partitionsToStopFetching`` -> ``stopPartitions`` without deleting the log): it still
        takes the partition state (``makeFollower`` runs first), and has no fetcher
        (``IDLE_STOPPED``)."""  # noqa: E501
        i = m.dst
        b = s.brokers[i]
        if m.epoch == b.epoch and m.partition_epoch > b.partition_epoch:
            updated = b.with_(isr=m.isr, partition_epoch=m.partition_epoch, alter_pending=False,
                              committed_isr=(),
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


#: the KRaft controller's own actions on a broker's registration (``spec.kafka.declared``); a broker
#: id or -1 for the leader afterwards (none)
ACTIONS: tuple[Declared, ...] = (
    Declared("FenceBroker", "_fence", (("broker", BROKER), ("leader", BROKER_OR_NONE)),
             ("_fence_actions", "_fence_running_actions", "_unfenced", "_partition_change"),
             kraft_rules=("kraft-controlled-shutdown", "kafka-15021", "kip-966-elr",
                          "unclean-election-clears-elr", "fence-running-broker", "reassignment",
                          "elr-not-filtered-by-replicas", "elr-filtered-by-replicas"),
             flags=("kafka-15021", "kip-966-elr", "unclean-election-clears-elr",
                    "elr-filtered-by-replicas")),
    Declared("UnfenceBroker", "_unfence", (("broker", BROKER), ("leader", BROKER_OR_NONE)),
             ("_unfence_actions", "_candidates", "_partition_change"),
             kraft_rules=("kafka-15021", "kip-966-elr", "unclean-election-clears-elr",
                          "unfence-broker", "reassignment", "elr-not-filtered-by-replicas",
                          "elr-filtered-by-replicas"),
             flags=("kafka-15021", "kip-966-elr", "unclean-election-clears-elr",
                    "elr-filtered-by-replicas")),
)
