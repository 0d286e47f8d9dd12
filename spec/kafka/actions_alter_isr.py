"""The ZooKeeper controller's AlterIsr (KIP-497, 2.7.0+; flag ``alter-isr``: the rows 2.8.0, 2.8.1,
3.4.1, 3.9.1).

These rows reuse the AlterPartition family (``spec.kafka.actions_alter_partition``): ShrinkIsr /
ExpandIsr, ProcessAlterPartition, ReceiveAlterPartitionResponse, LoseAlterPartitionResponse and the
bounds ``alters`` and ``alter_losses``. Their control plane
(``spec.kafka.controllers.AlterIsrController``) delivers with ``_process_alter_isr`` and
``_receive_alter_isr_response`` here, where the ZooKeeper controller and its leader differ from
KRaft's (the zkVersion as the version, STALE_BROKER_EPOCH, an already-written proposal answered with
the current state, no LeaderAndIsr after a write, INELIGIBLE_REPLICA only from 3.4.0: kafka-14140);
the rest of their control plane is ZooKeeper's (``spec.kafka.actions_control``). The actions are
declared with KRaft's (``actions_alter_partition``).
"""

from __future__ import annotations

from spec.kafka.actions_alter_partition import CONTROLLER, answers_pending
from spec.kafka.declared import Declared
from spec.kafka.log import UNDEFINED
from spec.kafka.state import (
    ALTER_PARTITION,
    ALTER_PARTITION_RESPONSE,
    CONTROLLED_SHUTDOWN,
    DEAD,
    FENCED_LEADER_EPOCH,
    INELIGIBLE_REPLICA,
    INVALID_UPDATE_VERSION,
    NONE,
    STALE_BROKER_EPOCH,
    AlterPartition,
    AlterPartitionResponse,
    KafkaState,
)
from spec.kafka.updates import add_messages, remove_message, with_broker


def _zookeeper_live(s: KafkaState, r: int) -> bool:
    """Whether the ZooKeeper controller counts broker ``r`` live (3.4.0
    ``ControllerContext.liveBrokerIds``: ``liveBrokerEpochs.keySet.diff(shuttingDownBrokerIds)``):
    its death not processed (``registered``), and not in controlled shutdown:
    ``doControlledShutdown`` adds it to ``shuttingDownBrokerIds`` as the controller processes its
    ControlledShutdown (its own request is then no longer in flight), ``onBrokerFailure`` removes
    it."""
    if s.controller.registered[r] == DEAD:
        return False
    b = s.brokers[r]
    if not b.alive or not b.stopping:
        return True
    return any(m.kind == CONTROLLED_SHUTDOWN and m.src == r and m.incarnation == b.incarnation
               for m in s.network)


class AlterIsrActions:
    """The ZooKeeper controller's processing of an AlterIsr and the leader's handling of its answer.
    No method here overrides another family's."""

    def _process_alter_isr(self, s: KafkaState, m: AlterPartition, add) -> None:
        """ProcessAlterPartition on a ZooKeeper row with ``alter-isr``: the ZooKeeper controller's
        AlterIsr (2.7.0, 2.8.0, 3.0.0 ``KafkaController.processAlterIsr``; 3.3.0 to 3.9
        ``tryProcessAlterPartition``, the same checks in the same order). STALE_BROKER_EPOCH (top
        level) if the sender's broker epoch is not the one the controller registered
        (``liveBrokerIdAndEpochs``); FENCED_LEADER_EPOCH for an older leader epoch; the partition's
        current state if it is already the proposed one, whatever the version (``equalsIgnoreZk``;
        3.3+ ``equalsAllowStalePartitionEpoch``, checked before the version: a request sent again
        after a lost answer is answered with the state it wrote); INVALID_UPDATE_VERSION for another
        zkVersion (2.7 to 3.2 the conditional ZooKeeper write, ``zkClient.updateLeaderAndIsr`` ->
        ``badVersionUpdates``; 3.3+ checked before the write); with ``kafka-14140`` (3.4.0
        ``tryProcessAlterPartition``, commit 163d00b3e61:
        ``newLeaderAndIsr.isr.toSet -- controllerContext.liveBrokerIds``, checked last)
        INELIGIBLE_REPLICA if a member of the proposed ISR is not live for the controller
        (``_zookeeper_live``: its death processed, or its controlled shutdown). Otherwise the ISR is
        written with the request's leader epoch (no new leader epoch: no epoch bound) and a new
        zkVersion, and answered with it; the controller then sends UpdateMetadata only
        (``sendUpdateMetadataRequest``), no LeaderAndIsr, so the leader learns the committed ISR
        from the answer alone. With ``alter_losses`` the answer may be lost after the write
        (``LoseAlterPartitionResponse``: 2.7.0 ``BrokerToControllerRequestThread.handleResponse``,
        2.8.0 the same: ``wasDisconnected`` -> ``requestQueue.putFirst``)."""
        c = s.controller
        rest = s.with_(network=remove_message(s.network, m))
        act = self._process_alter[m.src]
        if m.broker_epochs[m.src] != c.registered[m.src]:
            error = STALE_BROKER_EPOCH
        elif m.epoch < c.epoch:
            error = FENCED_LEADER_EPOCH
        elif m.src == c.leader and m.epoch == c.epoch and m.isr == c.isr:
            current = AlterPartitionResponse.new(src=CONTROLLER, dst=m.src, epoch=m.epoch,
                                             partition_epoch=m.partition_epoch, error=NONE,
                                                 isr=c.isr, new_epoch=c.epoch,
                                             new_partition_epoch=c.partition_epoch)
            add((act, rest.with_(network=add_messages(rest.network, current))))
            return
        elif m.partition_epoch != c.partition_epoch:
            error = INVALID_UPDATE_VERSION
        elif self.features.kafka_14140 and not all(_zookeeper_live(s, r) for r in m.isr):
            # KAFKA-14140 (3.4.0): newLeaderAndIsr.isr.toSet -- liveBrokerIds
            error = INELIGIBLE_REPLICA
        else:
            error = NONE
        if error != NONE:
            # STALE_BROKER_EPOCH names the proposal, which the leader sends again
            # (``AlterIsrManager`` keeps the item)
            isr = m.isr if error == STALE_BROKER_EPOCH else ()
            response = AlterPartitionResponse.new(src=CONTROLLER, dst=m.src, epoch=m.epoch,
                                              partition_epoch=m.partition_epoch, error=error,
                                                  isr=isr, new_epoch=UNDEFINED,
                                              new_partition_epoch=UNDEFINED)
            add((act, rest.with_(network=add_messages(rest.network, response))))
            return
        version = c.partition_epoch + 1
        written = rest.with_(controller=c.with_(isr=m.isr, partition_epoch=version))
        response = AlterPartitionResponse.new(src=CONTROLLER, dst=m.src, epoch=m.epoch,
                                          partition_epoch=m.partition_epoch, error=NONE, isr=m.isr,
                                              new_epoch=c.epoch,
                                          new_partition_epoch=version)
        add((act, written.with_(network=add_messages(written.network, response))))
        if s.alter_losses < self.alter_losses:
            self._lose_alter_response(written, m, add)


    def _receive_alter_isr_response(self, s: KafkaState, m: AlterPartitionResponse, add) -> None:
        """ReceiveAlterPartitionResponse on a ZooKeeper row with ``alter-isr`` (2.7.0 / 2.8.0 /
        3.0.0 ``Partition.handleAlterIsrResponse`` and
        ``AlterIsrManagerImpl.handleAlterIsrResponse``; 3.9 ``submitAlterPartition``,
        ``handleAlterPartitionUpdate``, ``handleAlterPartitionError``): ignored unless the partition
        is still in the pending state the request was sent from (``isrState != proposedIsrState``: a
        LeaderAndIsr since, or a restart, replaced it). NONE commits the answered ISR and zkVersion
        if its leader epoch is the leader's and its version newer (otherwise the answer is ignored
        and the state stays pending). STALE_BROKER_EPOCH (top level) leaves the item queued: the
        proposal is sent again with the broker's current broker epoch. FENCED_LEADER_EPOCH and
        INVALID_UPDATE_VERSION give up: the ISR stays pending (no further ISR change) until the next
        LeaderAndIsr, which a FENCED_LEADER_EPOCH leader has coming (the controller's newer epoch
        was sent to it). INELIGIBLE_REPLICA (``kafka-14140``, 3.4.0 ``handleAlterPartitionError``:
        "the request was not applied") reverts to the last committed ISR, as KRaft's leader does;
        2.7 to 3.3 never receive it. The leader's own check (3.4.0
        ``Partition.isReplicaIsrEligible``: ``zkMetadataCache.hasAliveBroker``) reads a metadata
        cache that UpdateMetadata fills, which the model has no message for: the cache may lag the
        controller at any step, so the leader may propose a member the controller rejects (what a
        lagging cache does)."""
        i = m.dst
        b = s.brokers[i]
        rest = s.with_(network=remove_message(s.network, m))
        act = self._receive_alter[i]
        if not answers_pending(b, m):
            add((act, rest))
            return
        if m.error == NONE and m.new_epoch == b.epoch and m.new_partition_epoch > b.partition_epoch:
            # before KAFKA-13091's fix (3.1.0) the committed ISR is taken without
            # maybeIncrementLeaderHW (hw_events=1)
            b = b.with_(isr=m.isr, alter_pending=False, committed_isr=(),
                        partition_epoch=m.new_partition_epoch,
                        hw_stale=self._hw_left_stale(b, i, m.isr))
            add((act, with_broker(rest, i, b)))
        elif m.error == INELIGIBLE_REPLICA:
            add((act,
                 with_broker(rest, i, b.with_(isr=b.committed_isr, alter_pending=False,
                                              committed_isr=()))))
        elif m.error == STALE_BROKER_EPOCH:
            epochs = tuple([b.broker_epoch if r == i else UNDEFINED for r in range(self.brokers)])
            again = AlterPartition.new(src=i, dst=CONTROLLER, epoch=b.epoch,
                                       partition_epoch=b.partition_epoch,
                                   isr=m.isr, broker_epochs=epochs)
            add((act, rest.with_(network=add_messages(rest.network, again))))
        else:
            add((act, rest))

    # -- the requests to the controller, delivered -------------------------------------------------
    def _alter_isr_deliveries(self, s: KafkaState, out: list) -> None:
        """A ZooKeeper row with ``alter-isr``: the ZooKeeper controller processes an AlterIsr; the
        leader receives the answer."""
        add = out.append
        for m in s.network:
            if m.kind == ALTER_PARTITION:
                self._process_alter_isr(s, m, add)
            elif m.kind == ALTER_PARTITION_RESPONSE:
                self._receive_alter_isr_response(s, m, add)


#: declared with KRaft's AlterPartition (``spec.kafka.actions_alter_partition``): the same actions,
#: other functions
ACTIONS: tuple[Declared, ...] = ()
