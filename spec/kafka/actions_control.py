"""The control plane of the Kafka model: the controller's elections and epoch bumps, its handling of
a broker change (KIP-380) and of a ControlledShutdown, the LeaderAndIsr and StopReplica requests as
a broker applies them, and the crash, restart and bounce of a broker.

``ControlPlaneActions`` is one of the action families of ``spec.kafka.model.KafkaModel`` (a base
class that defines its own functions and overrides none of another family's): it reads the bounds,
feature switches (``self.features``) and action tables that ``KafkaModel.__init__`` sets (built from
the ``ACTIONS`` at the end of this module). Which controller runs is chosen once, by the control
plane (``spec.kafka.controllers``). Each method names the release source it follows;
``spec.kafka.rules`` is the table of every rule that differs between releases.
"""

from __future__ import annotations

from spec.kafka.clients import unclean_noted
from spec.kafka.declared import BROKER, EPOCH, KEEP, Consumes, Declared
from spec.kafka.log import UNDEFINED, assign
from spec.kafka.state import (
    CONTROL_KINDS,
    CONTROLLED_SHUTDOWN,
    DATA_KINDS,
    DEAD,
    FETCHING,
    IDLE_NONE,
    IDLE_RESTARTED,
    IDLE_STOPPED,
    LEADER_AND_ISR,
    NO_FETCHER,
    NO_LEADER,
    TRUNCATING,
    Broker,
    ControlledShutdown,
    Controller,
    KafkaState,
    LeaderAndIsr,
    StopReplica,
    updater,
)
from spec.kafka.updates import (
    add_messages,
    new_leader_hw,
    remove_message,
    replace_at,
    truncate_broker,
    with_broker,
    with_network,
)

# -- the updates of the hot path: each is the copy ``record.with_(...)`` makes, called with the same
# -- keywords, generated once from the field names (``spec.kafka.state.updater``)
#: Crash: what lives in memory is lost (the log, the epoch cache and the HW checkpoint stay)
_crashed = updater(Broker, alive=False, leader=-1, epoch=-1, isr=(), fetch=NO_FETCHER, remote=(),
                   stopping=False, reconciled=-1, idle_cause=IDLE_NONE, pending_diverging=(),
                   partition_epoch=0, alter_pending=False, committed_isr=())
#: Restart / Bounce: a new incarnation, registered with a new broker epoch, told nothing yet
_restarted = updater(Broker, "hw", "broker_epoch", "incarnation", alive=True, leader=-1, epoch=-1,
                     isr=(), fetch=NO_FETCHER, remote=(), stopping=False, reconciled=-1,
                     idle_cause=IDLE_RESTARTED, pending_diverging=(), partition_epoch=0,
                     alter_pending=False, committed_isr=())
#: LeaderAndIsr: Partition.makeLeader, a follower that only learns the new epoch,
#: Partition.makeFollower
_made_leader = updater(Broker, "cache", "leader", "epoch", "isr", "remote", "stale", "reconciled",
                       fetch=NO_FETCHER, idle_cause=IDLE_NONE)
_new_epoch = updater(Broker, "epoch", "isr", "stale")
_made_follower = updater(Broker, "leader", "epoch", "isr", "fetch", "stale", remote=(),
                         reconciled=-1, idle_cause=IDLE_NONE)
_stopped = updater(Broker, "stale", fetch=NO_FETCHER, idle_cause=IDLE_STOPPED)  # StopReplica
_stopping = updater(Broker, "stopping")  # ControlledShutdown: the broker asks to shut down
_elected = updater(Controller, "leader", "epoch", "isr")
# alter-isr: the zkVersion moves
_elected_versioned = updater(Controller, "leader", "epoch", "isr", "partition_epoch")
#: alter-isr: Partition.makeLeader / makeFollower take the zkVersion and set a committed ISR (a
#: pending AlterIsr is gone)
_committed_version = updater(Broker, "partition_epoch", alter_pending=False, committed_isr=())
# KIP-903 (KRaft): the followers' broker epochs a leader knows
_remote_epochs = updater(Broker, "remote_epochs")
_registered = updater(Controller, "registered")
_with_controller = updater(KafkaState, "controller")
_after_crash = updater(KafkaState, "brokers", "network", "crashes")
_after_bounce = updater(KafkaState, "brokers", "network", "bounces")
_with_controller_network = updater(KafkaState, "controller", "network")


class ControlPlaneActions:
    """Controller actions, control requests applied by a broker, crash / restart / bounce."""

    # -- controller --------------------------------------------------------------------------------
    def _controller_actions(self, s: KafkaState, out: list) -> None:
        """The controller's reactions: to a broker's death (``KafkaController.onBrokerFailure``), to
        an offline partition whose ISR member is back, preferred elections and epoch bumps, and to a
        broker's re-registration it missed (``processBrokerChange``)."""
        add = out.append
        brokers, controller = s.brokers, s.controller
        registered = controller.registered
        for b in range(self.brokers):
            broker = brokers[b]
            if not broker.alive and registered[b] != DEAD:
                self._broker_failure_actions(s, b, add)
            elif broker.alive and registered[b] != broker.broker_epoch:
                add((self._broker_change[b], self._broker_change_state(s, b)))
        if controller.epoch >= self.epochs:
            return
        leader = controller.leader
        live_isr = tuple([r for r in controller.isr if brokers[r].alive])
        if leader == NO_LEADER:
            # an offline partition (its leader died with no live ISR member): onBrokerStartup's
            # triggerOnlinePartitionStateChange elects an ISR member that is back; or, unclean, any
            # live replica
            for b in live_isr:
                add((self._elect[b], self._elect_state(s, b, live_isr)))
            if self.features.unclean and not live_isr:
                noted = unclean_noted(s)  # the consumers' ghost (spec.kafka.clients)
                for b in range(self.brokers):
                    if brokers[b].alive:
                        add((self._unclean[b], self._elect_state(noted, b, (b,))))
        elif brokers[leader].alive:
            for b in live_isr:
                if b != leader:
                    add((self._preferred[b], self._elect_state(s, b, controller.isr)))
            if s.bumps < self.bumps:
                # reassignment, or an ISR change by the controller: a new epoch, the same leader
                add((self._bump[leader],
                     self._elect_state(s, leader, controller.isr).with_(bumps=s.bumps + 1)))

    def _broker_failure_actions(self, s: KafkaState, i: int, add) -> None:
        """The controller processes the death of broker ``i`` (0.10.2 to 2.x
        ``KafkaController.onBrokerFailure``): a partition it led is elected a new leader from the
        live ISR, epoch + 1, ISR = the live ISR (ElectLeader); with no live ISR member it goes
        offline, leader -1, epoch + 1 (ProcessBrokerFailure). A follower it was is removed from the
        ISR with epoch + 1 (``removeReplicaFromIsr``: "increment the leader epoch even if the ISR
        changes"; the last member is kept, and before 1.1.0 only with unclean election off:
        ``kafka-5642``). Not enabled at the epoch bound: the controller then never processes the
        death, and the broker cannot come back."""
        brokers, controller = s.brokers, s.controller
        processed = _with_controller(s,
                                     controller=_registered(controller,
                                                            registered=replace_at(
                                                                controller.registered, i, DEAD)))
        if i not in controller.isr and controller.leader != i:
            add((self._broker_failure[i], processed))
            return
        if controller.epoch >= self.epochs:
            return
        remaining = tuple([r for r in controller.isr if r != i])
        if not remaining and (self.features.kafka_5642 or not self.features.unclean):
            # the last ISR member is kept (1.1.0+ ReplicaStateMachine.doRemoveReplicasFromIsr: "if
            # (leaderAndIsr.isr.size == 1) leaderAndIsr.isr"); 0.10.2 to 1.0.x
            # KafkaController.removeReplicaFromIsr keep it only "if (newIsr.isEmpty &&
            # !uncleanLeaderElectionEnable)": with unclean election on the ISR empties
            remaining = controller.isr
        if controller.leader == i:
            live_isr = tuple([r for r in remaining if brokers[r].alive])
            for b in live_isr:
                add((self._elect[b], self._elect_state(processed, b, live_isr)))
            if not live_isr:
                add((self._broker_failure[i], self._elect_state(processed, NO_LEADER, remaining)))
            return
        add((self._broker_failure[i], self._elect_state(processed, controller.leader, remaining)))

    def _leader_and_isr(self, s: KafkaState, r: int, epoch: int, leader: int,
                        isr: tuple[int, ...]) -> LeaderAndIsr:
        """A LeaderAndIsr to ``r``, stamped with r's broker epoch as the controller knows it
        (KIP-380) and (ghost ``meant``) the incarnation of r that is up when it is sent; with
        ``alter-isr`` it carries the partition state's zkVersion
        (``LeaderAndIsrPartitionState.zkVersion``; always 0 on the other rows)."""
        return LeaderAndIsr.new(dst=r, epoch=epoch, leader=leader, isr=isr,
                            broker_epoch=s.controller.registered[r], meant=s.brokers[r].incarnation,
                            partition_epoch=s.controller.partition_epoch)

    def _elect_state(self, s: KafkaState, leader: int, isr: tuple[int, ...],
                     skip: int = -1) -> KafkaState:
        """The controller writes (leader, epoch + 1, isr) and sends a LeaderAndIsr to every live
        replica. With ``alter-isr`` the write moves the znode's zkVersion
        (``zkClient.updateLeaderAndIsr``), which the leader's AlterIsr must name
        (``KafkaController.processAlterIsr``); the rows without it do not track the version."""
        controller = s.controller
        epoch = controller.epoch + 1
        if self.features.zookeeper_alter_isr:
            controller = _elected_versioned(controller, leader=leader, epoch=epoch, isr=isr,
                                            partition_epoch=controller.partition_epoch + 1)
        else:
            controller = _elected(controller, leader=leader, epoch=epoch, isr=isr)
        registered, brokers, version = controller.registered, s.brokers, controller.partition_epoch
        sent = tuple([LeaderAndIsr.new(dst=r, epoch=epoch, leader=leader, isr=isr,
                                       broker_epoch=registered[r],
                                   meant=brokers[r].incarnation, partition_epoch=version)
                      for r in range(self.brokers) if brokers[r].alive and r != skip])
        return _with_controller_network(s, controller=controller,
                                        network=add_messages(s.network, *sent))

    def _broker_change_state(self, s: KafkaState, i: int) -> KafkaState:
        """ProcessBrokerChange: the controller processes the registration of a broker that
        re-registered (bounced) while it was not looking. Without KIP-380 it sees the broker in the
        old list and in the new one: nothing to do. With ``detect-bounced-broker`` (2.2,
        ``KafkaController.processBrokerChange``: ``bouncedBrokerIds``) its higher broker epoch shows
        the bounce: failure handling (the queued control requests to it are dropped; as its leader,
        the partition gets a new epoch), then start-up handling (it is sent the current
        LeaderAndIsr)."""
        broker = s.brokers[i]
        controller = s.controller
        noticed = _registered(controller,
                              registered=replace_at(controller.registered, i, broker.broker_epoch))
        if not self.features.detect_bounced_broker:
            return _with_controller(s, controller=noticed)
        network = tuple([m for m in s.network if not (m.kind in CONTROL_KINDS and m.dst == i)])
        s = s.with_(controller=noticed, network=network)
        if controller.leader == i and controller.epoch < self.epochs:
            return self._elect_state(s, i, controller.isr)
        request = self._leader_and_isr(s, i, controller.epoch, controller.leader, controller.isr)
        return with_network(s, add_messages(network, request))

    def _controlled_shutdowns(self, s: KafkaState, m: ControlledShutdown, out: list) -> None:
        """ProcessControlledShutdown (``KafkaController.doControlledShutdown``): leadership moves to
        another live ISR member, the broker leaves the ISR (a new epoch either way) and is sent a
        StopReplica. The request is rejected if the broker is down, or (``reject-stale-shutdown``,
        KIP-380) comes from an older generation than the one the controller has registered."""
        i = m.src
        controller = s.controller
        brokers = s.brokers
        rest = with_network(s, remove_message(s.network, m))
        act = self._process_shutdown[i]
        if (not brokers[i].alive or (self.features.reject_stale_shutdown and m.broker_epoch
                                     < controller.registered[i])):
            out.append((act[controller.leader], rest))
            return
        isr = tuple([r for r in controller.isr if r != i])
        if controller.leader == i:
            others = [r for r in isr if brokers[r].alive]
            if not others:  # nowhere to move leadership: Kafka answers "partitions remaining"
                out.append((act[i], rest))
                return
            if controller.epoch >= self.epochs:
                return
            for leader in others:
                # the LeaderAndIsr goes to the shutting-down broker too (live or shutting down),
                # then the StopReplica for the replica it now follows
                moved = self._elect_state(rest, leader, isr)
                out.append((act[leader], self._send_stop(moved, i, m.incarnation)))
        elif i in controller.isr:
            if controller.epoch >= self.epochs:
                return
            shrunk = self._elect_state(rest, controller.leader, isr, skip=i)
            out.append((act[controller.leader], self._send_stop(shrunk, i, m.incarnation)))
        else:
            out.append((act[controller.leader], self._send_stop(rest, i, m.incarnation)))

    def _send_stop(self, s: KafkaState, i: int, meant: int) -> KafkaState:
        controller = s.controller
        request = StopReplica.new(dst=i, epoch=controller.epoch,
                                  broker_epoch=controller.registered[i],
                              meant=meant)
        return with_network(s, add_messages(s.network, request))

    # -- a broker's own actions (ZooKeeper rows) ---------------------------------------------------
    def _zookeeper_broker_actions(self, s: KafkaState, i: int, out: list) -> None:
        """A broker's own actions on the ZooKeeper rows (``ZooKeeperController.broker_actions``; the
        KRaft rows': ``actions_broker_lifecycle._kraft_broker_actions``): Restart once the
        controller processed its death, its replica's actions (``KafkaModel._replica_actions``, the
        same under either controller), ControlledShutdown, Crash (and CrashLosingTail) and
        Bounce."""
        b = s.brokers[i]
        add = out.append
        if not b.alive:
            # once the controller processed its death (else it is a Bounce); a broker that halted
            # beyond the crash bound (a follower ahead of its leader before 2.1.0 exits on its own)
            # stays down
            if s.controller.registered[i] == DEAD and s.crashes <= self.crashes:
                add((self._restart[i], self._restart_state(s, i)))
            return
        self._replica_actions(s, i, b, out)
        if s.shutdowns < self.shutdowns and not b.stopping:
            request = ControlledShutdown.new(src=i, broker_epoch=b.broker_epoch,
                                             incarnation=b.incarnation)
            add((self._shutdown[i], with_broker(s, i, _stopping(b, stopping=True),
                                                network=add_messages(s.network, request),
                                                shutdowns=s.shutdowns + 1)))
        if s.crashes < self.crashes:
            add((self._crash[i], self._crash_state(s, i, len(b.log))))
            if self.features.lossy_crash:
                lossy = self._lossy[i]
                for keep in range(len(b.log)):
                    add((lossy[keep], self._crash_state(s, i, keep)))
        if s.bounces < self.bounces:
            add((self._bounce[i], self._bounce_state(s, i)))

    # -- crash, restart and bounce -----------------------------------------------------------------
    def _crash_state(self, s: KafkaState, i: int, keep: int) -> KafkaState:
        """Crash / CrashLosingTail: the broker dies; its queued control requests are dropped with
        its connections (a ControlledShutdown it sent is already with the controller), and the
        controller processes the death later. The log, the epoch cache and the HW checkpoint survive
        (``keep`` records of the log). A halt the protocol itself causes (a follower ahead of its
        leader before 2.1.0) counts against the crash bound too, so the state space stays finite."""
        kept = truncate_broker(s.brokers[i], keep)
        dead = _crashed(kept.with_(hw_stale=False) if kept.hw_stale else kept)
        network = tuple([m for m in s.network if m.kind == CONTROLLED_SHUTDOWN
                         or (m.dst != i and
                             (m.kind in CONTROL_KINDS or m.src != i))])
        return _after_crash(s, brokers=replace_at(s.brokers, i, dead), network=network,
                            crashes=s.crashes + 1)

    def _reborn(self, b: Broker) -> Broker:
        """A new incarnation: log, epoch cache and HW checkpoint back; registered with a new broker
        epoch."""
        return _restarted(b, hw=min(b.hw, len(b.log)), broker_epoch=b.broker_epoch + 1,
                          incarnation=b.incarnation + 1)

    def _restart_state(self, s: KafkaState, i: int) -> KafkaState:
        """Restart: back after a crash whose failure the controller processed; the controller
        processes its registration at once (``KafkaController.onBrokerStartup``) and sends it the
        current LeaderAndIsr (leader -1 if the partition is offline: ElectLeader follows)."""
        reborn = self._reborn(s.brokers[i])
        controller = s.controller
        controller = _registered(controller,
                                 registered=replace_at(controller.registered, i,
                                                       reborn.broker_epoch))
        request = LeaderAndIsr.new(dst=i, epoch=controller.epoch, leader=controller.leader,
                                   isr=controller.isr,
                               broker_epoch=reborn.broker_epoch, meant=reborn.incarnation,
                               partition_epoch=controller.partition_epoch)
        return with_broker(s, i, reborn, controller=controller,
                           network=add_messages(s.network, request))

    def _bounce_state(self, s: KafkaState, i: int) -> KafkaState:
        """Bounce: a crash and a re-registration so fast that the controller has processed neither:
        it still has the old broker epoch registered and keeps its queue of control requests to the
        broker (its sender thread reconnects to the new incarnation). Broker-to-broker messages are
        lost."""
        reborn = self._reborn(s.brokers[i])
        network = tuple([m for m in s.network if m.kind not in DATA_KINDS
                         or (m.dst != i and m.src != i)])
        return _after_bounce(s, brokers=replace_at(s.brokers, i, reborn), network=network,
                             bounces=s.bounces + 1)

    # -- control requests applied by a broker ------------------------------------------------------
    def _stale_generation(self, b: Broker, m: LeaderAndIsr | StopReplica) -> bool:
        """KIP-380 (``reject-stale-broker-epoch``, ``KafkaApis.isBrokerEpochStale``): a control
        request for an older generation is rejected (STALE_BROKER_EPOCH); a newer one is accepted
        (rejecting it stalled the broker: KAFKA-9839)."""
        return self.features.reject_stale_broker_epoch and m.broker_epoch < b.broker_epoch

    def _apply_stop_replica(self, s: KafkaState, m: StopReplica) -> KafkaState:
        """DeliverStopReplica (delete=false, ``ReplicaManager.stopReplicas``): the replica is
        removed from the fetcher and stays offline until a LeaderAndIsr with a newer epoch."""
        network = remove_message(s.network, m)
        i = m.dst
        b = s.brokers[i]
        if self._stale_generation(b, m):
            return with_network(s, network)
        stopped = _stopped(b, stale=b.stale or m.meant != b.incarnation)
        return with_broker(s, i, stopped, network=network)

    def _apply_leader_and_isr(self, s: KafkaState, m: LeaderAndIsr) -> KafkaState:
        """DeliverLeaderAndIsr (``ReplicaManager.becomeLeaderOrFollower``): ignored unless its
        leader epoch is newer than the broker's (and, KIP-380, its broker epoch is not older). A new
        leader (``Partition.makeLeader``) starts with unknown follower LEOs (a re-elected one keeps
        what it knew) and, with ``kafka-7415``, registers its epoch in its cache. A LeaderAndIsr
        with no leader (-1) changes nothing on a ZooKeeper row (``makeFollowers`` skips a partition
        whose leader is unavailable). A follower (``Partition.makeFollower``,
        ``ReplicaManager.makeFollowers``) whose leader did not change only learns the new epoch,
        unless ``kafka-7164`` (every epoch change restarts truncation); otherwise it truncates to
        its HW (before KIP-101) or enters the truncating state (an OffsetsForLeaderEpoch round
        first), or fetches at once (truncate-on-fetch). With ``alter-isr`` (2.7.0+) an applied
        LeaderAndIsr also sets the zkVersion it carries and a committed ISR, dropping a pending
        AlterIsr (``Partition.makeLeader`` / ``makeFollower``: ``alterIsrManager.clearPending``,
        ``updateAssignmentAndIsr`` -> ``CommittedIsr``; 3.x: ``CommittedPartitionState``): its
        answer is then ignored (``isrState != proposedIsrState``).

        On KRaft (``actions_kraft._kraft_apply_leader_and_isr`` hands a newer leader epoch here) the
        same, and: the partition epoch is set and a pending AlterPartition dropped as with
        ``alter-isr``; a leader re-elected in a new epoch keeps its followers' fetch states (3.3.0
        ``Replica.resetReplicaState`` with ``isNewLeader = false``: the LEOs and, KIP-903, broker
        epochs; the window KIP-903 closes), a new leader starts with every follower's broker epoch
        unknown (KIP-903), and a follower keeps none."""
        features = self.features
        network = remove_message(s.network, m)
        i = m.dst
        b = s.brokers[i]
        if m.epoch <= b.epoch or self._stale_generation(b, m):
            # an older epoch than the broker knows, or generation: ignored
            return with_network(s, network)
        if m.leader == NO_LEADER and not features.kraft:
            # ReplicaManager.makeFollowers (0.10.2.2 to 3.9): "Only change partition state when the
            # leader is available"; otherwise only getOrCreateReplica(): no makeFollower, no new
            # epoch, no truncation, the fetcher left as it was (KRaft's applyLocalFollowersDelta
            # calls makeFollower anyway: actions_kraft)
            return with_network(s, network)
        stale = b.stale or m.meant != b.incarnation
        # makeLeader / makeFollower: the leader recomputes its HW (KAFKA-13091, hw_events)
        if b.hw_stale:
            b = b.with_(hw_stale=False)
        if m.leader == i:
            cache = assign(b.cache, m.epoch, len(b.log)) if features.kafka_7415 else b.cache
            # Partition.makeLeader resets the followers' fetch states only "if (isNewLeader)"
            # (0.10.2.2, 2.0.0, 2.8.0; 3.x resetReplicaState(isNewLeader = ...)): a leader
            # re-elected in a new epoch keeps them
            remote = b.remote if b.leader == i else (-1,) * self.brokers
            if b.leader != i and not features.truncation_lowers_hw:
                # before 2.4.0 a follower's HW may sit above its LEO: isNewLeader resets it
                b = new_leader_hw(b)
            nb = _made_leader(b, cache=cache, leader=i, epoch=m.epoch, isr=m.isr, remote=remote,
                              stale=stale, reconciled=m.epoch)
            if b.leader != i and features.kip_903:
                # KIP-903: a new leader knows none
                nb = _remote_epochs(nb, remote_epochs=(UNDEFINED,) * self.brokers)
        elif b.leader == m.leader and b.fetch != NO_FETCHER and not self._restarts_truncation(b, m):
            # Partition.makeFollower returns false: the fetcher keeps going, only the new epoch is
            # learned
            nb = _new_epoch(b, epoch=m.epoch, isr=m.isr, stale=stale)
        else:
            if features.hw_truncation:
                b = truncate_broker(b, b.hw, features.kafka_10706_fix)
                fetch = FETCHING
            elif features.uses_offsets_request or not b.cache:
                # an OffsetsForLeaderEpoch round first; with truncate-on-fetch (2.8+
                # ``AbstractFetcherThread.partitionFetchState``) only a follower with no epoch is
                # Truncating (it truncates to its HW: ``truncateToHighWatermark``)
                fetch = TRUNCATING
            else:
                fetch = FETCHING
            nb = _made_follower(b, leader=m.leader, epoch=m.epoch, isr=m.isr, fetch=fetch,
                                stale=stale)
        if m.leader != i and nb.remote_epochs:
            # KIP-903: a follower keeps no follower's broker epoch
            nb = _remote_epochs(nb, remote_epochs=())
        if features.alter_by_request:
            nb = _committed_version(nb, partition_epoch=m.partition_epoch)
        return with_broker(s, i, nb, network=network)


    def _restarts_truncation(self, b: Broker, m: LeaderAndIsr) -> bool:
        """Whether a LeaderAndIsr that keeps the follower's leader makes it truncate again
        (``Partition.makeFollower``): never in 0.10.2 to 2.0.0
        (``leaderReplicaIdOpt == newLeader``); in 2.0.1 (``kafka-7164``) when it skipped an epoch
        (``leaderEpoch != oldLeaderEpoch + 1``); from 2.1.0 (KIP-320, ``leader-epoch-fencing``) on
        every epoch change."""
        if self.features.leader_epoch_fencing:
            return True
        if self.features.kafka_7164:
            return m.epoch > b.epoch + 1
        return False



def channel_order(m: LeaderAndIsr | StopReplica) -> tuple[int, int, int, int]:
    """Where a control request sits in its FIFO channel: (leader epoch when sent, broker epoch
    stamped, kind, partition epoch (KRaft rows; the zkVersion on ZooKeeper rows with alter-isr; 0
    otherwise)). The epochs only grow along a channel; a StopReplica sent for a controlled shutdown
    that needed no new epoch follows the LeaderAndIsr of that epoch whatever its zkVersion (the kind
    before the version), and the KRaft rows, which have no StopReplica, order changes of one leader
    epoch by their partition epoch."""
    return m.epoch, m.broker_epoch, m.kind, m.partition_epoch if m.kind == LEADER_AND_ISR else 0


#: the control plane's actions (``spec.kafka.declared``): the ZooKeeper controller's, the control
#: requests and the broker faults; ElectLeader, PreferredLeaderElection, UncleanLeaderElection and
#: BumpLeaderEpoch are the KRaft controller's too (``actions_kraft._kraft_controller_actions``)
ACTIONS: tuple[Declared, ...] = (
    Declared("ElectLeader", "_elect", (("leader", BROKER),),
             ("_controller_actions", "_kraft_controller_actions", "_elect_state",
              "_partition_change"),
             rules=("alter-isr", "controller-elects-from-live-isr"),
             kraft_rules=("kafka-15021", "kip-966-elr", "unclean-election-clears-elr",
                          "reassignment", "elr-not-filtered-by-replicas",
                          "elr-filtered-by-replicas"),
             flags=("unclean", "alter-isr", "kraft", "kafka-15021", "kip-966-elr",
                    "unclean-election-clears-elr", "elr-filtered-by-replicas")),
    Declared("PreferredLeaderElection", "_preferred", (("leader", BROKER),),
             ("_controller_actions", "_kraft_controller_actions", "_elect_state",
              "_partition_change"),
             rules=("alter-isr", "controller-elects-from-live-isr"),
             kraft_rules=("kafka-15021", "kip-966-elr", "unclean-election-clears-elr",
                          "reassignment", "elr-not-filtered-by-replicas",
                          "elr-filtered-by-replicas"),
             flags=("unclean", "alter-isr", "kraft", "kafka-15021", "kip-966-elr",
                    "unclean-election-clears-elr", "elr-filtered-by-replicas")),
    Declared("UncleanLeaderElection", "_unclean", (("leader", BROKER),),
             ("_controller_actions", "_kraft_controller_actions", "_elect_state",
              "_partition_change", "unclean_noted"),
             rules=("unclean", "consumer-unclean-ghost", "alter-isr",
                    "controller-elects-from-live-isr"),
             kraft_rules=("kafka-15021", "kip-966-elr", "unclean-election-clears-elr",
                          "leader-recovery-state", "reassignment", "elr-not-filtered-by-replicas",
                          "elr-filtered-by-replicas"),
             flags=("unclean", "alter-isr", "kraft", "kafka-15021", "kip-966-elr",
                    "unclean-election-clears-elr", "elr-filtered-by-replicas")),
    Declared("Crash", "_crash", (("broker", BROKER),),
             ("_crash_state", "_kraft_crash", "_broker_failure_actions"),
             rules=("crash-closes-connections", "kafka-5642", "controller-elects-from-live-isr"),
             kraft_rules=("unclean-shutdown",), flags=("kafka-5642", "unclean"), actor="broker"),
    Declared("Restart", "_restart", (("broker", BROKER),),
             ("_restart_state", "_reborn", "_kraft_restart_state"),
             rules=("controller-elects-from-live-isr", "hw-checkpoint"),
             kraft_rules=("clean-shutdown-detection", "same-incarnation-registration",
"kafka-18635"),
             flags=("kip-966-elr", "clean-shutdown-detection", "kafka-18635")),
    Declared("BumpLeaderEpoch", "_bump", (("leader", BROKER),),
             ("_controller_actions", "_kraft_controller_actions", "_elect_state"),
             rules=("alter-isr", "controller-elects-from-live-isr"), kraft_rules=("kip-966-elr",),
             flags=("unclean", "alter-isr", "kraft")),
    Declared("ControlledShutdown", "_shutdown", (("broker", BROKER),), ("_controlled_shutdowns",),
             rules=("reject-stale-shutdown", "controller-elects-from-live-isr"),
             flags=("reject-stale-shutdown",), actor="broker"),
    Declared("Bounce", "_bounce", (("broker", BROKER),), ("_bounce_state", "_reborn"),
             rules=("hw-checkpoint",)),
    Declared("ProcessBrokerChange", "_broker_change", (("broker", BROKER),),
             ("_broker_change_state",), rules=("detect-bounced-broker",),
             flags=("detect-bounced-broker",)),
    Declared("ProcessBrokerFailure", "_broker_failure", (("broker", BROKER),),
             ("_broker_failure_actions",), rules=("kafka-5642", "controller-elects-from-live-isr"),
             flags=("kafka-5642", "unclean")),
    Declared("DeliverStopReplica", "_deliver_stop", (("broker", BROKER),),
             ("_apply_stop_replica", "_stale_generation", "_deliveries"),
             rules=("reject-stale-broker-epoch", "control-channel-fifo"),
             flags=("reject-stale-broker-epoch",), actor="broker",
             consumes=Consumes("StopReplica", None, "broker", "StopReplica request")),
    Declared("LoseControlRequest", "_lose", (("broker", BROKER),), ("_deliveries",),
             rules=("control-channel-fifo",)),
    Declared("CrashLosingTail", "_lossy", (("broker", BROKER), ("keep", KEEP)),
             ("_crash_state", "_kraft_crash"), rules=("crash-closes-connections", "lossy-crash"),
             kraft_rules=("unclean-shutdown",)),
    Declared("ProcessControlledShutdown", "_process_shutdown",
             (("broker", BROKER), ("leader", BROKER)), ("_controlled_shutdowns",),
             rules=("reject-stale-shutdown", "controller-elects-from-live-isr"),
             flags=("reject-stale-shutdown",)),
    Declared("DeliverLeaderAndIsr", "_deliver", (("broker", BROKER), ("epoch", EPOCH)),
             ("_apply_leader_and_isr", "_kraft_apply_leader_and_isr",
              "_reassigned_apply_leader_and_isr", "_restarts_truncation", "_stale_generation",
              "_deliveries", "assign", "truncate_broker"),
             rules=("truncate-to-hw-on-follow", "initial-fetch-offset", "kafka-7415", "kafka-7164",
                    "leader-epoch-fencing", "reject-stale-broker-epoch", "truncation-lowers-hw",
                    "kafka-10706-fix", "alter-isr", "offline-leader-and-isr",
                    "re-elected-leader-keeps-followers", "control-channel-fifo"),
             kraft_rules=("kraft-shutdown-stops-fetcher", "reassignment-deletes-replica"),
             flags=("offsets-for-leader-epoch", "epoch-in-response", "kafka-7415", "kafka-7164",
                    "leader-epoch-fencing", "truncation-lowers-hw", "reject-stale-broker-epoch",
                    "kafka-10706-fix", "truncate-on-fetch", "alter-isr", "kraft", "kip-903",
                    "kraft-shutdown-stops-fetcher"), actor="broker",
             consumes=Consumes("LeaderAndIsr", None, "broker", "LeaderAndIsr request")),
)
