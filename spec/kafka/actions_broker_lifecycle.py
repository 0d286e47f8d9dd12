"""A KRaft broker's lifecycle: registration, heartbeats that ask to shut down, and crashes (protocol
rows ``kraft-*``).

- Brokers **register** with a new broker epoch on every start
  (``ClusterControlManager.registerBroker``) and are fenced when their heartbeats stop (FenceBroker,
  ``spec.kafka.actions_kraft``). A broker re-registers only once fenced (an older registration with
  a live session is refused: ``DuplicateBrokerRegistrationException``). With
  ``clean-shutdown-detection`` a broker that registers after an unclean shutdown leaves the ISR and
  the ELR (``ReplicationControlManager.handleBrokerUncleanShutdown``): with ``kafka-18635`` (3.8.x,
  4.1.x) one whose registration does not carry its clean shutdown file's broker epoch, without it
  (3.9.x) every new incarnation.
- **Controlled shutdown** (``shutdowns``): the leader's heartbeat with ``wantShutDown`` puts it in
  controlled shutdown (``Broker.stopping``): out of the ISR, leadership to an active member (or
  offline); it keeps fetching, is not electable and, with KIP-841, not eligible to join the ISR.
- **Clean shutdown** (``clean_shutdowns``): a broker that leads nothing is fenced at the end of its
  controlled shutdown (SHUTDOWN_NOW) and stops cleanly, writing its clean shutdown file (a dead
  broker with ``stopping``).

Faults: Crash keeps the log (a process crash: the page cache survives); UncleanShutdown(broker,
keep) loses the log beyond ``keep`` records (bound ``unclean_shutdowns``): Kafka leaves flushing to
the OS, so any suffix, committed records included, can be lost (KIP-966's premise). A disk loss is
UncleanShutdown with keep=0: with one partition and the HW clamped to the LEO on restart the model
cannot tell them apart.

=================================  ==========================  =====================================
action (KRaft rows)                params                      what happens
=================================  ==========================  =====================================
UncleanShutdown                    broker, keep                (unclean_shutdowns) a crash that
                                                               keeps the first ``keep`` records
ProcessControlledShutdown          broker, leader              (shutdowns) the leader asks to shut
                                                               down; ``leader`` is the leader
                                                               afterwards (-1: offline)
Restart                            broker                      a fenced broker registers with a new
                                                               broker epoch and is unfenced
CleanShutdown                      broker, leader              (clean_shutdowns) a broker that leads
                                                               nothing is fenced and stops cleanly;
                                                               ``leader`` is the leader afterwards
=================================  ==========================  =====================================
"""

from __future__ import annotations

from spec.kafka.declared import BROKER, BROKER_OR_NONE, KEEP, Declared
from spec.kafka.state import (
    DEAD,
    IDLE_STOPPED,
    NO_LEADER,
    Broker,
    KafkaState,
    LeaderAndIsr,
)
from spec.kafka.updates import add_messages, replace_at, with_broker


class BrokerLifecycleActions:
    """A KRaft broker's own actions: registration (Restart), controlled and clean shutdown, crashes.
    No method here overrides another family's: the KRaft control plane (``spec.kafka.controllers``)
    calls ``_kraft_broker_actions`` where the ZooKeeper plane calls
    ``actions_control._zookeeper_broker_actions``."""

    # -- a broker's own actions: crash, unclean shutdown, restart ----------------------------------
    def _kraft_broker_actions(self, s: KafkaState, i: int, out: list) -> None:
        """A broker's own actions on the KRaft rows (``KRaftController.broker_actions``): as on the
        ZooKeeper rows, without the ZooKeeper ControlledShutdown and Bounce, with KRaft's Restart
        and the UncleanShutdown fault."""
        b = s.brokers[i]
        add = out.append
        if not b.alive:
            # re-registration waits for the old session to expire
            if s.controller.registered[i] == DEAD:
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
                add((self._unclean_shutdown[i][keep],
                     t.with_(crashes=s.crashes, unclean_shutdowns=s.unclean_shutdowns + 1)))

    def _controlled_shutdown_actions(self, s: KafkaState, i: int, b: Broker, add) -> None:
        """ProcessControlledShutdown(broker, leader) on KRaft (KIP-841's shutting-down half; bound
        ``shutdowns``): the controller reads a heartbeat with ``wantShutDown`` from the partition's
        leader (3.3.0 / 3.5.0 ``BrokerHeartbeatManager.calculateNextBrokerState``: a broker with
        leaderships goes to CONTROLLED_SHUTDOWN;
        ``ReplicationControlManager.processBrokerHeartbeat`` -> ``handleBrokerInControlledShutdown``
        -> ``generateLeaderAndIsrUpdates`` with ``brokerToRemove``): the broker leaves the ISR (the
        last member stays unless ``kip-966-elr``), leadership moves to an active ISR (or ELR)
        member, else the partition goes offline; ``leader`` is the leader afterwards (-1: offline).
        The broker keeps running and fetching, in controlled shutdown (``Broker.stopping``): not
        electable (``ClusterControlManager.active``) and, with ``kip-841``, not eligible to join the
        ISR (``Partition.isReplicaIsrEligible``: ``isBrokerShuttingDown``;
        ``ineligibleReplicasForIsr``: ``inControlledShutdown``). A broker that leads nothing goes
        straight to SHUTDOWN_NOW, which fences it (``handleBrokerFenced``) and stops it: the model's
        CleanShutdown (with its clean shutdown file; or Crash and FenceBroker, without), so only the
        leader has this step; the leader's SHUTDOWN_NOW that follows is the same CleanShutdown (or
        Crash). The heartbeat and the controller's handling are one step: the broker's view of its
        own shutdown is the controller's."""
        c = s.controller
        # guard: a fenced broker's heartbeat is refused (its session expired)
        if c.registered[i] == DEAD:
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
        """CleanShutdown(broker, leader) (bound ``clean_shutdowns``): a broker that leads nothing (a
        leader first hands its leadership on: ProcessControlledShutdown) ends its controlled
        shutdown and stops cleanly. The controller answers its heartbeat with ``wantShutDown``
        SHUTDOWN_NOW (3.8.0 ``BrokerHeartbeatManager .calculateNextBrokerState``: no leaderships
        left) and fences it (``ReplicationControlManager .processBrokerHeartbeat``:
        ``case SHUTDOWN_NOW: handleBrokerFenced``: out of the ISR, into the ELR where
        ``maybePopulateTargetElr`` puts it; FenceBroker's partition change, ``leader`` the leader
        afterwards); the broker then shuts its log manager down, which writes the clean shutdown
        file with its broker epoch (3.8.0 ``BrokerServer.shutdown`` ->
        ``LogManager.shutdown(lifecycleManager.brokerEpoch)``, ``CleanShutdownFileHandler.write``):
        a dead broker with ``stopping`` set. Its log is kept whole. The wait for the broker's
        metadata offset to reach the controlled shutdown offset is not modelled (the model's
        metadata is the LeaderAndIsr each broker replays, late).

        A fenced running broker (FenceBroker with ``fences``) with ``fenced-broker-clean-shutdown``
        (3.8.0: the clean shutdown file; the grant is 3.3.0's): its heartbeat with ``wantShutDown``
        is answered SHUTDOWN_NOW at once (3.9.0-rc3
        ``BrokerHeartbeatManager.calculateNextBrokerState``, ``case FENCED``: "has requested and
        been granted an immediate shutdown"); ``handleBrokerFenced`` of a broker already out of the
        ISR writes no partition change, and ``BrokerServer.shutdown`` writes the clean shutdown file
        with ``lifecycleManager.brokerEpoch``, its registration's, whatever the controller answered.
        Without the flag the model has it only crash."""
        fenced = s.controller.registered[i] == DEAD
        if fenced and not self.features.fenced_broker_clean_shutdown:
            return  # guard: without the flag, a fenced broker's shutdown is a Crash
        if s.controller.leader == i:
            return  # guard: a leader is moved first (CONTROLLED_SHUTDOWN)
        t = self._kraft_crash(s, i, len(b.log))
        stopped = with_broker(t, i, t.brokers[i].with_(stopping=True), crashes=s.crashes,
                              clean_shutdowns=s.clean_shutdowns + 1)
        if fenced:
            # SHUTDOWN_NOW -> handleBrokerFenced: the broker is already fenced and out of the ISR
            # (kip-966-elr; without ELR the last member stays, and an ISR it cannot leave changes
            # nothing): no partition change
            add((self._clean_shutdown[i][s.controller.leader + 1], stopped))
            return
        fenced: list = []
        self._fence_actions(stopped, i, fenced.append)
        table = self._clean_shutdown[i]
        for act, u in fenced:
            add((table[dict(act.params)["leader"] + 1], u))

    def _kraft_crash(self, s: KafkaState, i: int, keep: int) -> KafkaState:
        """Crash / UncleanShutdown: ``_crash_state`` (in-memory state and the broker's connections
        lost, ``keep`` records of the log kept), and the KRaft in-memory state (partition epoch,
        pending AlterPartition, the followers' broker epochs) with it."""
        t = self._crash_state(s, i, keep)
        dead = t.brokers[i].with_(partition_epoch=0, alter_pending=False, committed_isr=(),
                                  remote_epochs=())
        return with_broker(t, i, dead)

    def _kraft_restart_state(self, s: KafkaState, i: int) -> KafkaState | None:
        """Restart on KRaft: the broker registers as a new incarnation with a new broker epoch
        (``ClusterControlManager.registerBroker``) and is unfenced. With
        ``clean-shutdown-detection`` the registration is removed from the ISR and the ELR
        (``brokerUncleanShutdownHandler.addRecordsForShutdown`` ->
        ``ReplicationControlManager.handleBrokerUncleanShutdown``, which acts only where ELR is
        supported): on 3.9.x (KAFKA-16952, 2fd00ce5367:
        ``!request.incarnationId().equals(prevIncarnationId)``) every new incarnation, clean
        shutdown or not; with ``kafka-18635`` (as 3.8.0:
        ``request.previousBrokerEpoch() != existing.epoch()``) only one whose previous broker epoch,
        read from its clean shutdown file (``LogManager.readBrokerEpochFromCleanShutdownFiles``,
        ``BrokerLifecycleManager`` ``previousBrokerEpoch``; -1 without the file), is not its
        registered one: a broker that crashed (Crash, UncleanShutdown), not one that stopped cleanly
        (CleanShutdown: dead with ``stopping``). It then replays the partition's current state; a
        broker that a reassignment took out of the replicas (``spec.kafka.actions_reassignment``)
        has no partition state to replay (no fetcher), and a log it did not delete before it crashed
        stays on its disk as a stray log (3.5.0 deletes none at start-up)."""
        before = s.brokers[i]
        # its clean shutdown file holds the registered broker epoch
        clean = not before.alive and before.stopping
        reborn = self._reborn(before)
        c = s.controller
        hosts = not c.replicas or i in c.replicas
        if not hosts:
            reborn = reborn.with_(idle_cause=IDLE_STOPPED)
        s = with_broker(s, i, reborn,
                        controller=c.with_(registered=replace_at(c.registered, i,
                                                                 reborn.broker_epoch)))
        c = s.controller
        unclean = not (clean and self.features.kafka_18635)
        if self.features.detects_unclean_shutdown and unclean and (i in c.isr or i in c.elr):
            isr = tuple([r for r in c.isr if r != i])
            s = s.with_(controller=c.with_(elr=tuple([r for r in c.elr if r != i])))
            # the restarted broker replays the change too, although it keeps the leader epoch: its
            # first metadata image holds the partition as the change left it (3.9.0
            # ``BrokerMetadataPublisher.onMetadataUpdate``: on the first publish the delta from the
            # empty image, ``replicaManager.applyDelta`` -> makeFollower); the change is written
            # with the registration it answers (``ClusterControlManager.registerBroker``), before
            # the broker's initial catch-up to the metadata log ends
            return self._partition_change(s, c.leader if c.leader != i else NO_LEADER, isr,
                                          unclean_replica=i, restarted=i if hosts else -1)
        if not hosts:
            return s
        request = LeaderAndIsr.new(dst=i, epoch=c.epoch, leader=c.leader, isr=c.isr,
                                   broker_epoch=reborn.broker_epoch, meant=reborn.incarnation,
                                   partition_epoch=c.partition_epoch, replicas=c.replicas)
        return s.with_(network=add_messages(s.network, request))


#: a KRaft broker's own actions (``spec.kafka.declared``); a broker id or -1 for the leader
#: afterwards (none)
ACTIONS: tuple[Declared, ...] = (
    Declared("ProcessControlledShutdown", "_kraft_shutdown",
             (("broker", BROKER), ("leader", BROKER_OR_NONE)),
             ("_controlled_shutdown_actions", "_unfenced"),
             kraft_rules=("kraft-controlled-shutdown",), flags=("kip-966-elr",)),
    Declared("UncleanShutdown", "_unclean_shutdown", (("broker", BROKER), ("keep", KEEP)),
             ("_kraft_broker_actions", "_kraft_crash", "_restart_state"),
             rules=("controller-elects-from-live-isr",),
             kraft_rules=("crash-closes-connections", "unclean-shutdown")),
    Declared("CleanShutdown", "_clean_shutdown", (("broker", BROKER), ("leader", BROKER_OR_NONE)),
             ("_clean_shutdown_actions", "_fence_actions", "_partition_change"),
             kraft_rules=("kafka-15021", "kip-966-elr", "unclean-election-clears-elr",
                          "kafka-18635", "clean-shutdown", "fenced-broker-clean-shutdown",
                          "fence-running-broker", "reassignment", "elr-not-filtered-by-replicas",
                          "elr-filtered-by-replicas"),
             flags=("kafka-15021", "kip-966-elr", "unclean-election-clears-elr",
                    "fenced-broker-clean-shutdown", "elr-filtered-by-replicas")),
)
