"""Partition reassignment on the KRaft rows (bound ``reassignments``): a replica removed, added, or
moved.

The KRaft controller reassigns a partition with
``ReplicationControlManager.alterPartitionReassignments`` -> ``changePartitionReassignment`` (3.5.0
and 3.9.0 alike): ``PartitionReassignmentReplicas(current, target)`` gives the replicas to remove
(current - target), to add (target - current) and the merged replica list (target + removing), and
one ``PartitionChangeBuilder.build`` writes them as the partition's ``replicas`` /
``addingReplicas`` / ``removingReplicas``. Every build (this one, and each later partition change:
an AlterPartition, a fencing, an election) first runs ``completeReassignmentIfNeeded``
(``PartitionReassignmentReplicas.maybeCompleteReassignment``): the reassignment completes when the
target ISR, less the removing replicas, is not empty and holds every adding replica (3.5.0), or,
with KAFKA-15665 (3.8.0, commit 756f44a3e58, flag ``kafka-15665``), every target replica; the
partition then has the target replicas and that ISR. A reassignment with nothing to add (a replica
removed) may so complete in the build that starts it; one that adds a replica completes in the build
of the AlterPartition that puts the new replica in the ISR (the leader's ExpandIsr, after the new
replica fetched up to the HW). Within the build ``tryElection`` keeps the leader only if it is still
a valid leader (in the target ISR, unfenced), else elects the first valid one of the target replicas
(``electAnyLeader``; the model keeps the replica list sorted, so "first" is the lowest id; with ELR
and an empty target ISR an active ELR member, which ``actions_kraft._partition_change`` elects once
the ELR is computed), and ``triggerLeaderEpochBumpIfNeeded`` (3.5.0; 3.9.0
``triggerLeaderEpochBumpForReplicaReassignmentIfNeeded``) bumps the leader epoch when the new
replica list does not contain every old replica. An addition alone keeps the leader epoch (only the
partition epoch moves). On the KIP-966 rows ``maybePopulateTargetElr`` runs after the completion and
does not look at the replica list (3.9.0-rc3, and trunk in October 2024): a removed replica that was
in the ISR enters the ELR when the completed ISR is below min ISR, and stays there; the elections
walk the target replicas (``electAnyLeader``:
``targetReplicas.stream().filter(this::isValidNewLeader)``), so it is electable again once a later
reassignment adds it back.

The broker side (3.5.0 ``ReplicaManager.applyDelta`` with ``TopicsDelta.localChanges``,
KAFKA-13198): a broker that replays a change whose replicas no longer include it deletes its replica
(``localChanges.deletes`` -> ``stopPartitions`` with ``deleteLocalLog = true``: the fetcher is
removed, the log deleted); a broker added replays the change that adds it
(``localChanges.followers`` -> ``applyLocalFollowersDelta`` -> ``getOrCreatePartition`` and
``makeFollower``), so it starts from an empty log (or, if it crashed before deleting its old one,
that stray log: 3.5.0 deletes no stray log at start-up) and fetches from the leader. The leader
tracks the assigned replicas only (``Partition.updateAssignmentAndIsr``: ``remoteReplicasMap`` gets
a fresh ``Replica`` with unknown LEO for a new one and drops a removed one), expands the ISR only
with them, and answers a fetch from a broker that is not one of its replicas UNKNOWN_LEADER_EPOCH
without recording its offset (``Partition.fetchRecords`` -> ``followerReplicaOrThrow``: "possible in
KRaft, for example, when new replicas are added as part of a reassignment").

Not modelled: cancelling or replacing a reassignment in progress (``cancelPartitionReassignment``,
``PartitionReassignmentRevert``): ReassignPartition is enabled only while none is in progress; the
order of the target list (sorted); stray-log deletion at start-up (3.7+). The ZooKeeper rows keep
every broker a replica (their reassignment, ``KafkaController.onPartitionReassignment``, is not
modelled): the bound is inert there.

=================================  ==========================  =====================================
action (KRaft rows)                params                      what happens
=================================  ==========================  =====================================
ReassignPartition                  remove, add                 (reassignments) the controller
                                                               reassigns the partition to its
                                                               replicas less ``remove`` plus ``add``
                                                               (-1: none); completes at once if
                                                               nothing is added and the ISR allows
=================================  ==========================  =====================================

Completion has no action of its own: it is part of the partition change that makes it possible
(ProcessAlterPartition of the ExpandIsr that adds the new replica), as in Kafka.
"""

from __future__ import annotations

from spec.kafka.declared import BROKER_OR_NONE, Declared
from spec.kafka.state import (
    IDLE_STOPPED,
    NO_FETCHER,
    NO_LEADER,
    UNKNOWN_LEADER_EPOCH,
    Broker,
    Controller,
    FetchRequest,
    FetchResponse,
    KafkaState,
    LeaderAndIsr,
    updater,
)
from spec.kafka.updates import add_messages, remove_message, with_broker, with_network

UNDEFINED = -1  # spec.kafka.log.UNDEFINED: no diverging epoch
#: the families this mixin wraps; with no reassignment (the bound 0, or a ZooKeeper row) the model
#: calls the wrapped ones directly, so the state space and the cost per state are those of the model
#: without it

#: ``ReplicaManager.stopPartitions`` with ``deleteLocalLog = true``: the fetcher removed, the log
#: and its epoch cache and HW checkpoint deleted, the partition forgotten (its partition state, its
#: leader's view of the followers)
_deleted = updater(Broker, "replicas", log=(), hw=0, cache=(), leader=NO_LEADER, epoch=-1, isr=(),
                   fetch=NO_FETCHER, remote=(), reconciled=-1, idle_cause=IDLE_STOPPED,
                   pending_diverging=(), partition_epoch=0, alter_pending=False, committed_isr=(),
                   remote_epochs=())


def replicas_of(replicas: tuple[int, ...], n: int) -> tuple[int, ...]:
    """The replica list a ``replicas`` field stands for: () is every broker (no reassignment ever
    changed it)."""
    return replicas if replicas else tuple(range(n))


def completed(replicas: tuple[int, ...], adding: tuple[int, ...], removing: tuple[int, ...],
              isr: tuple[int, ...], kafka_15665: bool) -> tuple[tuple[int, ...],
                                                                tuple[int, ...]] | None:
    """``PartitionReassignmentReplicas.maybeCompleteReassignment`` (3.5.0; 3.8.0 with KAFKA-15665):
    (replicas, ISR) once the reassignment is complete, None while it is not (or none is in
    progress)."""
    if not adding and not removing:
        return None
    new_isr = tuple([r for r in isr if r not in removing])
    new_replicas = tuple([r for r in replicas if r not in removing])
    if removing and (not new_isr or not new_replicas):
        return None
    # 3.8.0: newTargetIsr.containsAll(newTargetReplicas)
    needed = new_replicas if kafka_15665 else adding
    if not set(needed) <= set(new_isr):
        return None
    return new_replicas, new_isr


class ReassignmentActions:
    """ReassignPartition and what a reassignment changes in the controller's partition changes and
    on the brokers (the hooks in ``spec.kafka.actions_kraft._partition_change`` call ``_reassigned``
    and ``_replaying``)."""

    def _init_reassignment(self, reassignments: int) -> None:
        self.reassignments = reassignments
        if reassignments and self.features.kraft:
            self.constants["reassignments"] = reassignments
            # a removed leader's successor is the first valid target replica, the lowest id here
            # (Kafka: the first in the order the user gave): renaming broker ids does not commute
            # with that, so no --symmetry
            self.has_symmetry = False

    # -- the controller ----------------------------------------------------------------------------
    def _reassigning_controller_actions(self, s: KafkaState, out: list) -> None:
        """The KRaft controller's actions with reassignments
        (``spec.kafka.controllers.KRaftReassigningController``): its own, then a reassignment while
        the bound allows one."""
        self._kraft_controller_actions(s, out)
        if s.reassignments < self.reassignments:
            self._reassign_actions(s, out.append)

    def _reassign_actions(self, s: KafkaState, add) -> None:
        """ReassignPartition(remove, add) (bound ``reassignments``): an AlterPartitionReassignments
        request whose target is the partition's replicas less ``remove`` plus ``add`` (-1: none; at
        least one of them, and a target of one replica or more).
        ``validateManualPartitionAssignment`` asks only that the target brokers be registered, which
        every broker of the model is (fenced or not). Enabled while no reassignment is in progress
        (the model has no cancellation); not enabled beyond the epoch bound (a removal bumps the
        leader epoch)."""
        c = s.controller
        if c.adding or c.removing:
            return
        current = replicas_of(c.replicas, self.brokers)
        others = [b for b in range(self.brokers) if b not in current]
        for remove in (-1, *current):
            for added in (-1, *others):
                if remove == added == -1:
                    continue
                target = tuple(sorted({r for r in current if r != remove}
                                      | ({added} if added >= 0 else set())))
                if not target:
                    continue
                t = self._partition_change(s, c.leader, c.isr, target=target)
                if t is not None:
                    add((self._reassign[remove + 1][added + 1],
                         t.with_(reassignments=s.reassignments + 1)))

    def _reassigned(self, s: KafkaState, leader: int, isr: tuple[int, ...], bump: bool,
                    target: tuple[int, ...]) -> tuple[int, tuple[int, ...], bool, dict]:
        """The reassignment part of ``PartitionChangeBuilder.build`` (called by
        ``_partition_change`` when it starts a reassignment to ``target`` or one is in progress):
        the merged replica list of a new reassignment
        (``PartitionReassignmentReplicas(current, target)``: target + removing), its completion
        (``completeReassignmentIfNeeded``), the leader (``tryElection``: kept if valid in the target
        ISR, else the first valid target replica, else none) and the leader epoch bump of a replica
        list that lost a replica. Returns the leader, ISR, bump and the controller's new
        ``replicas`` / ``adding`` / ``removing``."""
        c = s.controller
        current = replicas_of(c.replicas, self.brokers)
        if target:
            removing = tuple([r for r in current if r not in target])
            adding = tuple([r for r in target if r not in current])
            replicas = tuple(sorted(set(target) | set(removing)))
        else:
            replicas, adding, removing = current, c.adding, c.removing
        done = completed(replicas, adding, removing, isr, self.features.kafka_15665)
        if done is not None:
            (replicas, isr), adding, removing = done, (), ()
        valid = leader != NO_LEADER and leader in isr and self._unfenced(s, leader)
        if not valid and (target or (leader != NO_LEADER and leader not in isr)):
            leader = next((r for r in replicas if r in isr and self._unfenced(s, r)), NO_LEADER)
        bump = bump or not set(current) <= set(replicas)
        return leader, isr, bump, {"replicas": replicas, "adding": adding, "removing": removing}

    def _replaying(self, before: Controller, after: Controller, to) -> list[int]:
        """Who replays a partition change once the partition has a replica list: with a new leader
        epoch every replica, old and new (a removed one deletes its replica); otherwise the leader
        and any broker the change adds."""
        old = set(replicas_of(before.replicas, self.brokers))
        new = set(after.replicas)
        if after.epoch != before.epoch:
            return [r for r in range(self.brokers) if r in old or r in new]
        return sorted(set(to) | (new - old))

    # -- the brokers -------------------------------------------------------------------------------
    def _reassigned_apply_leader_and_isr(self, s: KafkaState, m: LeaderAndIsr) -> KafkaState:
        """A partition change with a replica list (``ReplicaManager.applyDelta``): a broker not in
        it deletes its replica (``localChanges.deletes`` ->
        ``stopPartitions(deleteLocalLog = true)``), whatever the leader epoch (the metadata log is
        replayed in order); a replica applies it as before and takes the replica list; a leader
        forgets what it knew of a broker that left or joined its replicas
        (``updateAssignmentAndIsr``: a new ``Replica``, LEO unknown). The KRaft plane with
        reassignments applies every partition change through it
        (``spec.kafka.controllers.KRaftReassigningController``)."""
        if not m.replicas:
            return self._kraft_apply_leader_and_isr(s, m)
        i = m.dst
        b = s.brokers[i]
        if i not in m.replicas:
            return with_broker(s, i, _deleted(b, replicas=m.replicas),
                               network=remove_message(s.network, m))
        t = self._kraft_apply_leader_and_isr(s, m)
        after = t.brokers[i]
        if after.partition_epoch != m.partition_epoch or after.replicas == m.replicas:
            return t  # ignored, or nothing new about the replicas
        changed = set(replicas_of(b.replicas, self.brokers)) ^ set(m.replicas)
        updated = after.with_(replicas=m.replicas)
        if after.leader == i and after.remote:
            updated = updated.with_(remote=tuple([-1 if r in changed else x
                                                  for r, x in enumerate(after.remote)]))
            if after.remote_epochs:
                updated = updated.with_(remote_epochs=tuple([UNDEFINED if r in changed else x
                                                             for r, x in enumerate(
                                                                 after.remote_epochs)]))
        return with_broker(t, i, updated)

    def _serve_non_replica(self, s: KafkaState, m: FetchRequest, network: tuple) -> KafkaState:
        """ServeFetch of a fetch from a broker that is not one of the leader's replicas (3.5.0
        ``Partition.fetchRecords`` -> ``followerReplicaOrThrow``, after the leader epoch checks):
        UNKNOWN_LEADER_EPOCH, its offset not recorded (called by the shared
        ``actions_data._serve_fetch_state`` once a leader has a replica list)."""
        response = FetchResponse.new(src=m.dst, dst=m.src, epoch=m.epoch, offset=m.offset,
                                     error=UNKNOWN_LEADER_EPOCH, records=(), hw=UNDEFINED,
                                     diverging_epoch=UNDEFINED, diverging_offset=UNDEFINED)
        return with_network(s, add_messages(network, response))


#: the reassignment's action (``spec.kafka.declared``; completion is part of a partition change): a
#: replica removed, one added, or both (-1: none)
ACTIONS: tuple[Declared, ...] = (
    Declared("ReassignPartition", "_reassign",
             (("remove", BROKER_OR_NONE), ("add", BROKER_OR_NONE)),
             ("_reassign_actions", "_reassigned", "completed", "_partition_change"),
             kraft_rules=("new-leader-elected", "kafka-15021", "kip-966-elr",
"unclean-election-clears-elr", "reassignment", "kafka-15665",
"elr-not-filtered-by-replicas", "elr-filtered-by-replicas"),
             flags=("kafka-15021", "kip-966-elr", "kafka-15665", "unclean-election-clears-elr",
                    "elr-filtered-by-replicas")),
)
