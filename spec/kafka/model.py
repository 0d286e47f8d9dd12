"""The Kafka replication model: one partition on every broker, a controller, messages in flight.

Each action below is guard first, effect second, and names its parameters. The table is the
stable interface that scenarios and traces rely on (brokers are numbered from 0):

=================================  ==========================  ============================================
action                             params                      what happens
=================================  ==========================  ============================================
ElectLeader                        leader                      the leader is dead: the controller elects a
                                                               live ISR member, epoch + 1, ISR = live ISR
PreferredLeaderElection            leader                      the leader lives: leadership moves to another
                                                               live ISR member, epoch + 1, ISR kept
UncleanLeaderElection              leader                      (unclean=on) no ISR member lives: any live
                                                               replica, epoch + 1, ISR = {leader}
BumpLeaderEpoch                    leader                      (bumps) the leader lives: epoch + 1 with the
                                                               same leader and ISR (reassignment, an ISR
                                                               change by the controller)
ProcessBrokerChange                broker                      the controller processes the registration of a
                                                               broker that bounced unseen; KIP-380: failure
                                                               then start-up handling (see below)
ProcessControlledShutdown          broker, leader              the controller handles the oldest
                                                               ControlledShutdown of the broker; ``leader``
                                                               is the leader afterwards (see below)
DeliverLeaderAndIsr                broker, epoch               the oldest control request to the broker is a
                                                               LeaderAndIsr and arrives (the controller's
                                                               channel is FIFO); applied if its epoch is newer
                                                               than the broker's (and, KIP-380, its broker
                                                               epoch is not older than the broker's)
DeliverStopReplica                 broker                      the oldest control request to the broker is a
                                                               StopReplica and arrives: the replica leaves the
                                                               fetcher (KIP-380: unless its broker epoch is
                                                               older than the broker's)
Produce                            leader                      a broker that believes it leads appends a
                                                               record in its epoch
SendFetch                          follower, leader            fetch from the LEO
ServeFetch                         leader, follower            the leader answers records, its HW, an error
                                                               or a diverging epoch
ReceiveFetch                       follower, leader            append / truncate / ignore the response
SendOffsetsForLeaderEpoch          follower, leader            ask the end offset of the latest epoch
ServeOffsetsForLeaderEpoch         leader, follower            the leader answers (epoch, end offset)
ReceiveOffsetsForLeaderEpoch       follower, leader            truncate (another round if KIP-279 says so)
TruncateToHighWatermark            follower                    a truncating follower with no epoch in its
                                                               cache truncates to its HW
AdvanceHighWatermark               leader                      HW = min LEO over the leader's ISR view
ShrinkIsr                          leader, follower            the current leader drops a follower
ExpandIsr                          leader, follower            the current leader re-adds a caught-up follower
Crash                              broker                      in-memory state and its messages are lost
CrashLosingTail                    broker, keep                (lossy-crash=on) a crash that keeps only the
                                                               first ``keep`` records of the log
Restart                            broker                      back with its log, epoch cache and HW and a new
                                                               broker epoch; the controller registers it at
                                                               once and sends it the current LeaderAndIsr
ControlledShutdown                 broker                      (shutdowns) the broker asks the controller to
                                                               move its leadership away and stop its replica
Bounce                             broker                      (bounces) a crash and a re-registration the
                                                               controller has not processed: new incarnation
                                                               and broker epoch; the controller keeps its
                                                               queue of control requests to the broker
=================================  ==========================  ============================================

Control plane (issue 4). The controller keeps, per broker, the broker epoch of the registration it
last processed (``Controller.registered``). Crash and Restart are seen at once (the queue of control
requests to a crashed broker is dropped with its connection). A Bounce is seen late: until
ProcessBrokerChange, requests queued for the old incarnation reach the new one, stamped with the old
broker epoch. ProcessBrokerChange without KIP-380 finds the broker in the old list and the new one and
does nothing; with ``detect-bounced-broker`` it drops the queue to the broker, gives the partition a
new epoch if the broker led it (the failure handling re-elects it: a simplification, Kafka would
first try another ISR member) and sends the current LeaderAndIsr. ProcessControlledShutdown: rejected
if the broker is down or (``reject-stale-shutdown``) the request carries an older broker epoch than
the one registered; a leader hands leadership to each live ISR member in turn (one successor each;
none alive: nothing changes, Kafka answers "partitions remaining"), a follower leaves the ISR; both
take a new epoch (not enabled at the epoch bound), with a LeaderAndIsr to the other live brokers (and
to the shutting-down broker when leadership moved) and a StopReplica to the broker. The ghost stamp
``meant`` of a request is the incarnation of its destination when the controller sent it, or, for a
StopReplica, the incarnation that asked to shut down.


A broker has at most one request outstanding per leader (Kafka's fetcher thread sends, then waits
for the answer, and truncates only after it), and never sends to a broker that is down (the request
would be lost at once). With ``fenced-removes-partition`` (2.1.0) a FENCED_LEADER_EPOCH answer takes
the partition out of the fetcher until the next LeaderAndIsr; ``kafka-7786-fix`` ignores an
OffsetsForLeaderEpoch answer whose request epoch is no longer the partition's.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from spec.kafka.log import (
    UNDEFINED,
    Record,
    assign,
    cache_after_append,
    diverging_epoch,
    end_offset_for,
    end_offset_kip101,
    follower_truncation,
    latest_epoch,
    truncate_cache,
)
from spec.kafka.protocols import DEFAULT_PROTOCOL, Features, resolve
from spec.kafka.state import (
    CONTROL_KINDS,
    CONTROLLED_SHUTDOWN,
    DATA_KINDS,
    FENCED_LEADER_EPOCH,
    FETCH,
    FETCH_RESPONSE,
    FETCHING,
    LEADER_AND_ISR,
    NO_FETCHER,
    NONE,
    NOT_LEADER,
    OFFSET_OUT_OF_RANGE,
    OFFSETS_FOR_LEADER_EPOCH,
    OFFSETS_FOR_LEADER_EPOCH_RESPONSE,
    STATE_TYPES,
    STOP_REPLICA,
    TRUNCATING,
    UNKNOWN_LEADER_EPOCH,
    Broker,
    ControlledShutdown,
    Controller,
    FetchRequest,
    FetchResponse,
    KafkaState,
    LeaderAndIsr,
    OffsetsRequest,
    OffsetsResponse,
    StopReplica,
)
from spec.model import Action, Model

#: default bounds (see spec.kafka.__init__ for why they are large enough)
DEFAULTS = {"brokers": 2, "records": 2, "epochs": 2, "crashes": 1, "inflight": 0, "bumps": 0, "shutdowns": 0, "bounces": 0}


def _set(brokers: tuple[Broker, ...], i: int, broker: Broker) -> tuple[Broker, ...]:
    return brokers[:i] + (broker,) + brokers[i + 1 :]


def _add(network: tuple, *messages: Any) -> tuple:
    return tuple(sorted(network + messages))


def _remove(network: tuple, message: Any) -> tuple:
    i = network.index(message)
    return network[:i] + network[i + 1 :]


def _truncate(b: Broker, offset: int, clean_cache: bool = False) -> Broker:
    """The broker after truncating its log to ``offset`` (HW clamped, later epochs dropped).

    At or beyond the LEO the log is left alone, and so is the epoch cache (Kafka's shortcut in
    ``Log.truncateTo``) unless ``clean_cache`` (KAFKA-10706's fix): then epochs starting at or after
    ``offset`` are dropped too, such as one this broker registered as leader but never wrote in.
    """
    if offset >= len(b.log):
        if clean_cache:
            cache = truncate_cache(b.cache, offset)
            if cache != b.cache:
                return b._replace(cache=cache)
        return b
    return b._replace(log=b.log[:offset], cache=truncate_cache(b.cache, offset), hw=min(b.hw, offset))


class KafkaModel(Model):
    name = "kafka"
    family = "kafka"
    #: ``kmc matrix``: the control-plane invariants are checked with the actions their stories need (an
    #: epoch bump with the same leader, a controlled shutdown, a bounce the controller sees late) and
    #: data bounds small enough to exhaust the versions where they hold; the other invariants at the
    #: defaults, where those actions are off (see spec.kafka for the measured figures)
    matrix_bounds = {
        name: ("records=1", "epochs=1", "crashes=0", "bumps=1", "shutdowns=1", "bounces=1")
        for name in ("no-stale-control-request", "no-fence-stall")
    }
    #: extra rows of the default matrix: KIP-380 without KAFKA-7786's fix, on the same configuration
    matrix_variants = (("kip-380", ("kafka-7786-fix=off",)),)
    #: broker ids are interchangeable: ``--symmetry`` (see spec.kafka.symmetry)
    has_symmetry = True

    def __init__(
        self,
        brokers: int = 2,
        records: int = 2,
        epochs: int = 2,
        crashes: int = 1,
        inflight: int = 0,
        bumps: int = 0,
        shutdowns: int = 0,
        bounces: int = 0,
        protocol: str = DEFAULT_PROTOCOL,
        features: Features | None = None,
    ) -> None:
        self.n = brokers
        self.max_records = records
        self.max_epoch = epochs
        self.max_crashes = crashes
        self.max_inflight = inflight
        self.max_bumps = bumps
        self.max_shutdowns = shutdowns
        self.max_bounces = bounces
        self.protocol = protocol
        self.features = features if features is not None else resolve(protocol)
        self.constants = {"brokers": brokers, "records": records, "epochs": epochs, "crashes": crashes,
                          "inflight": inflight, "bumps": bumps, "shutdowns": shutdowns, "bounces": bounces}
        f = self.features
        self._fencing = f.leader_epoch_fencing
        self._send_epoch = f.leader_epoch_fencing or f.stale_response_guard
        self._offsets = f.uses_offsets_request
        self._kip279 = f.epoch_in_response
        self._on_fetch = f.truncate_on_fetch
        self._hw_truncation = f.truncation == "hw-truncation"
        self._fenced_removes = f.leader_epoch_fencing and f.fenced_removes_partition
        self._fix_7786 = f.kafka_7786_fix and f.leader_epoch_fencing  # without fencing a request carries no epoch
        self._reject_stale = f.reject_stale_broker_epoch
        self._fix_10706 = f.kafka_10706_fix
        ids = range(brokers)
        a = Action
        self._elect = [a("ElectLeader", (("leader", b),)) for b in ids]
        self._preferred = [a("PreferredLeaderElection", (("leader", b),)) for b in ids]
        self._unclean = [a("UncleanLeaderElection", (("leader", b),)) for b in ids]
        self._produce = [a("Produce", (("leader", b),)) for b in ids]
        self._advance = [a("AdvanceHighWatermark", (("leader", b),)) for b in ids]
        self._trunc_hw = [a("TruncateToHighWatermark", (("follower", b),)) for b in ids]
        self._crash = [a("Crash", (("broker", b),)) for b in ids]
        self._restart = [a("Restart", (("broker", b),)) for b in ids]
        self._bump = [a("BumpLeaderEpoch", (("leader", b),)) for b in ids]
        self._shutdown = [a("ControlledShutdown", (("broker", b),)) for b in ids]
        self._bounce = [a("Bounce", (("broker", b),)) for b in ids]
        self._broker_change = [a("ProcessBrokerChange", (("broker", b),)) for b in ids]
        self._deliver_stop = [a("DeliverStopReplica", (("broker", b),)) for b in ids]
        self._lossy = [[a("CrashLosingTail", (("broker", b), ("keep", k))) for k in range(records + 1)] for b in ids]

        def table(name: str, first: str, second: str) -> list[list[Action]]:
            return [[a(name, ((first, x), (second, y))) for y in ids] for x in ids]

        self._send_fetch = table("SendFetch", "follower", "leader")
        self._serve_fetch = table("ServeFetch", "leader", "follower")
        self._receive_fetch = table("ReceiveFetch", "follower", "leader")
        self._send_offsets = table("SendOffsetsForLeaderEpoch", "follower", "leader")
        self._serve_offsets = table("ServeOffsetsForLeaderEpoch", "leader", "follower")
        self._receive_offsets = table("ReceiveOffsetsForLeaderEpoch", "follower", "leader")
        self._shrink = table("ShrinkIsr", "leader", "follower")
        self._expand = table("ExpandIsr", "leader", "follower")
        self._process_shutdown = table("ProcessControlledShutdown", "broker", "leader")
        self._deliver = [[a("DeliverLeaderAndIsr", (("broker", b), ("epoch", e))) for e in range(epochs + 1)]
                         for b in ids]

    # -- the model interface -------------------------------------------------------------------------
    def state_types(self) -> tuple[type, ...]:
        return STATE_TYPES

    def canonical(self, state: KafkaState) -> KafkaState:
        from spec.kafka.symmetry import canonical

        return canonical(state)

    def describe(self) -> dict[str, Any]:
        out = super().describe()
        out["protocol"] = self.protocol
        out["features"] = self.features.as_dict()
        return out

    def init_states(self) -> list[KafkaState]:
        """Broker 0 leads in epoch 0 with every broker in the ISR; every log is empty."""
        n = self.n
        isr = tuple(range(n))
        leader_cache = ((0, 0),) if self.features.epoch_on_become_leader else ()
        brokers = [Broker(True, (), 0, leader_cache, 0, 0, isr, NO_FETCHER, (-1,) * n, 0, False, 0, False)]
        for _ in range(1, n):
            brokers.append(Broker(True, (), 0, (), 0, 0, isr, FETCHING, (), 0, False, 0, False))
        return [KafkaState(tuple(brokers), Controller(0, 0, isr, (0,) * n), (), 0, 0, 0, 0, 0, ())]

    def successors(self, s: KafkaState) -> Iterator[tuple[Action, KafkaState]]:
        yield from self._controller_actions(s)
        for i in range(self.n):
            yield from self._broker_actions(s, i)
        yield from self._deliveries(s)

    # -- controller ------------------------------------------------------------------------------------
    def _controller_actions(self, s: KafkaState) -> Iterator[tuple[Action, KafkaState]]:
        brokers, ctrl = s.brokers, s.controller
        if ctrl.epoch < self.max_epoch:
            leader_alive = ctrl.leader >= 0 and brokers[ctrl.leader].alive
            live_isr = tuple(r for r in ctrl.isr if brokers[r].alive)
            if not leader_alive:
                for b in live_isr:
                    yield self._elect[b], self._elect_state(s, b, live_isr)
                if self.features.unclean and not live_isr:
                    for b in range(self.n):
                        if brokers[b].alive:
                            yield self._unclean[b], self._elect_state(s, b, (b,))
            else:
                for b in live_isr:
                    if b != ctrl.leader:
                        yield self._preferred[b], self._elect_state(s, b, ctrl.isr)
                if s.bumps < self.max_bumps:
                    # reassignment, or an ISR change by the controller: a new epoch, the same leader
                    bumped = self._elect_state(s, ctrl.leader, ctrl.isr)
                    yield self._bump[ctrl.leader], bumped._replace(bumps=s.bumps + 1)
        for b in range(self.n):
            if brokers[b].alive and ctrl.registered[b] != brokers[b].broker_epoch:
                yield self._broker_change[b], self._broker_change_state(s, b)

    def _leader_and_isr(self, s: KafkaState, r: int, epoch: int, leader: int, isr: tuple[int, ...]) -> LeaderAndIsr:
        """A LeaderAndIsr to ``r``, stamped with r's broker epoch as the controller knows it and (ghost)
        the incarnation of r that is up when it is sent."""
        return LeaderAndIsr(LEADER_AND_ISR, r, epoch, leader, isr, s.controller.registered[r], s.brokers[r].incarnation)

    def _elect_state(self, s: KafkaState, leader: int, isr: tuple[int, ...], skip: int = -1) -> KafkaState:
        epoch = s.controller.epoch + 1
        sent = tuple(self._leader_and_isr(s, r, epoch, leader, isr) for r in range(self.n)
                     if s.brokers[r].alive and r != skip)
        ctrl = s.controller._replace(leader=leader, epoch=epoch, isr=isr)
        return s._replace(controller=ctrl, network=_add(s.network, *sent))

    def _broker_change_state(self, s: KafkaState, i: int) -> KafkaState:
        """The controller processes the broker change of a broker that re-registered (bounced) while it
        was not looking. Without KIP-380 it sees the broker in the old list and in the new one: nothing
        to do. With KIP-380 its higher broker epoch shows the bounce: failure handling (the queued
        control requests to it are dropped; as its leader, the partition gets a new epoch), then
        start-up handling (it is sent the current LeaderAndIsr)."""
        b = s.brokers[i]
        ctrl = s.controller
        registered = ctrl.registered[:i] + (b.broker_epoch,) + ctrl.registered[i + 1 :]
        s = s._replace(controller=ctrl._replace(registered=registered))
        if not self.features.detect_bounced_broker:
            return s
        network = tuple(m for m in s.network if not (m.kind in CONTROL_KINDS and m.dst == i))
        s = s._replace(network=network)
        if ctrl.leader == i and ctrl.epoch < self.max_epoch:
            return self._elect_state(s, i, ctrl.isr)
        return s._replace(network=_add(network, self._leader_and_isr(s, i, ctrl.epoch, ctrl.leader, ctrl.isr)))

    def _controlled_shutdowns(self, s: KafkaState, m: ControlledShutdown) -> Iterator[tuple[Action, KafkaState]]:
        """The controller handles a ControlledShutdown: leadership moves to another live ISR member, the
        broker leaves the ISR (a new epoch either way) and is sent a StopReplica. The request is
        rejected if the broker is down, or (KIP-380) comes from an older generation than the one
        the controller has registered."""
        i = m.src
        ctrl = s.controller
        brokers = s.brokers
        rest = s._replace(network=_remove(s.network, m))
        act = self._process_shutdown[i]
        if not brokers[i].alive or (self.features.reject_stale_shutdown and m.broker_epoch < ctrl.registered[i]):
            yield act[ctrl.leader], rest
            return
        isr = tuple(r for r in ctrl.isr if r != i)
        if ctrl.leader == i:
            others = [r for r in isr if brokers[r].alive]
            if not others:  # nowhere to move leadership: Kafka answers "partitions remaining"
                yield act[i], rest
                return
            if ctrl.epoch >= self.max_epoch:
                return
            for leader in others:
                # the LeaderAndIsr goes to the shutting-down broker too (live or shutting down), then the
                # StopReplica for the replica it now follows
                moved = self._elect_state(rest, leader, isr)
                yield act[leader], self._send_stop(moved, i, m.incarnation)
        elif i in ctrl.isr:
            if ctrl.epoch >= self.max_epoch:
                return
            shrunk = self._elect_state(rest, ctrl.leader, isr, skip=i)
            yield act[ctrl.leader], self._send_stop(shrunk, i, m.incarnation)
        else:
            yield act[ctrl.leader], self._send_stop(rest, i, m.incarnation)

    def _send_stop(self, s: KafkaState, i: int, meant: int) -> KafkaState:
        msg = StopReplica(STOP_REPLICA, i, s.controller.epoch, s.controller.registered[i], meant)
        return s._replace(network=_add(s.network, msg))

    # -- one broker's own actions -------------------------------------------------------------------
    def _broker_actions(self, s: KafkaState, i: int) -> Iterator[tuple[Action, KafkaState]]:
        brokers = s.brokers
        b = brokers[i]
        if not b.alive:
            yield self._restart[i], self._restart_state(s, i)
            return
        if b.leader == i:
            yield from self._leader_actions(s, i, b)
        elif b.leader >= 0 and brokers[b.leader].alive:
            yield from self._follower_actions(s, i, b)
        if b.fetch == TRUNCATING and not b.cache and b.leader != i and not _busy(s.network, i, b.leader):
            # the fetcher thread first handles the answer it waits for (it is one thread per leader)
            nb = _truncate(b, b.hw, self._fix_10706)._replace(fetch=FETCHING)
            yield self._trunc_hw[i], s._replace(brokers=_set(brokers, i, nb))
        if s.shutdowns < self.max_shutdowns and not b.stopping:
            msg = ControlledShutdown(CONTROLLED_SHUTDOWN, i, b.broker_epoch, b.incarnation)
            nb = b._replace(stopping=True)
            yield self._shutdown[i], s._replace(brokers=_set(brokers, i, nb), network=_add(s.network, msg),
                                                shutdowns=s.shutdowns + 1)
        if s.crashes < self.max_crashes:
            yield self._crash[i], self._crash_state(s, i, len(b.log))
            if self.features.lossy_crash:
                for keep in range(len(b.log)):
                    yield self._lossy[i][keep], self._crash_state(s, i, keep)
        if s.bounces < self.max_bounces:
            yield self._bounce[i], self._bounce_state(s, i)

    def _leader_actions(self, s: KafkaState, i: int, b: Broker) -> Iterator[tuple[Action, KafkaState]]:
        brokers = s.brokers
        if s.produced < self.max_records:
            ident = s.produced + 1
            log = b.log + (Record(b.epoch, ident),)
            cache = assign(b.cache, b.epoch, len(b.log)) if b.epoch > latest_epoch(b.cache) else b.cache
            nb = b._replace(log=log, cache=cache)
            yield self._produce[i], s._replace(brokers=_set(brokers, i, nb), produced=ident)
        hw = len(b.log)
        remote = b.remote
        for r in b.isr:
            if r != i and remote[r] < hw:
                hw = remote[r]
        if hw > b.hw:
            committed = set(s.committed)
            log = b.log
            for offset in range(hw):
                rec = log[offset]
                committed.add((offset, rec.epoch, rec.ident))
            nb = b._replace(hw=hw)
            yield self._advance[i], s._replace(brokers=_set(brokers, i, nb), committed=tuple(sorted(committed)))
        ctrl = s.controller
        if ctrl.leader != i or ctrl.epoch != b.epoch:
            return  # a deposed leader's ZooKeeper write of the ISR fails (stale zkVersion)
        for f in range(self.n):
            if f == i:
                continue
            if f in b.isr:
                isr = tuple(r for r in b.isr if r != f)
                act = self._shrink[i][f]
            else:
                if remote[f] < b.hw or remote[f] < 0:
                    continue
                if self.features.expand_isr_guard and b.hw < _epoch_start(b.cache, b.epoch, len(b.log)):
                    continue
                isr = tuple(sorted(b.isr + (f,)))
                act = self._expand[i][f]
            nb = b._replace(isr=isr)
            yield act, s._replace(brokers=_set(brokers, i, nb), controller=ctrl._replace(isr=isr))

    def _follower_actions(self, s: KafkaState, i: int, b: Broker) -> Iterator[tuple[Action, KafkaState]]:
        leader = b.leader
        if b.fetch == NO_FETCHER or _busy(s.network, i, leader):
            return
        if self.max_inflight and _in_flight(s.network) >= self.max_inflight:
            return
        epoch = b.epoch if self._send_epoch else -1
        if b.fetch == FETCHING:
            last = latest_epoch(b.cache) if self._on_fetch else -1
            msg = FetchRequest(FETCH, i, leader, epoch, len(b.log), last)
            yield self._send_fetch[i][leader], s._replace(network=_add(s.network, msg))
        elif b.fetch == TRUNCATING and b.cache:
            msg = OffsetsRequest(OFFSETS_FOR_LEADER_EPOCH, i, leader, epoch if self._fencing else -1,
                                 latest_epoch(b.cache))
            yield self._send_offsets[i][leader], s._replace(network=_add(s.network, msg))

    # -- crash, restart and bounce -------------------------------------------------------------------
    def _crash_state(self, s: KafkaState, i: int, keep: int) -> KafkaState:
        """The broker dies and the controller sees it at once: its queued control requests are dropped
        with its connections (a ControlledShutdown it sent is already with the controller)."""
        b = _truncate(s.brokers[i], keep)
        nb = Broker(False, b.log, b.hw, b.cache, -1, -1, (), NO_FETCHER, (), b.broker_epoch, False, b.incarnation, b.stale)
        network = tuple(m for m in s.network if m.kind == CONTROLLED_SHUTDOWN or (m.dst != i and
                                                                                  (m.kind in CONTROL_KINDS or m.src != i)))
        return s._replace(brokers=_set(s.brokers, i, nb), network=network, crashes=s.crashes + 1)

    def _reborn(self, b: Broker) -> Broker:
        """A new incarnation: log, epoch cache and HW checkpoint back; registered with a new broker epoch."""
        return Broker(True, b.log, min(b.hw, len(b.log)), b.cache, -1, -1, (), NO_FETCHER, (), b.broker_epoch + 1, False,
                      b.incarnation + 1, b.stale)

    def _restart_state(self, s: KafkaState, i: int) -> KafkaState:
        """Back after a crash; the controller processes its registration at once and sends it the
        current LeaderAndIsr."""
        nb = self._reborn(s.brokers[i])
        ctrl = s.controller
        registered = ctrl.registered[:i] + (nb.broker_epoch,) + ctrl.registered[i + 1 :]
        s = s._replace(brokers=_set(s.brokers, i, nb), controller=ctrl._replace(registered=registered))
        msg = self._leader_and_isr(s, i, ctrl.epoch, ctrl.leader, ctrl.isr)
        return s._replace(network=_add(s.network, msg))

    def _bounce_state(self, s: KafkaState, i: int) -> KafkaState:
        """A crash and a re-registration so fast that the controller has processed neither: it still has
        the old broker epoch registered and keeps its queue of control requests to the broker (its
        sender thread reconnects to the new incarnation). Broker-to-broker messages are lost."""
        nb = self._reborn(s.brokers[i])
        network = tuple(m for m in s.network if m.kind not in DATA_KINDS or (m.dst != i and m.src != i))
        return s._replace(brokers=_set(s.brokers, i, nb), network=network, bounces=s.bounces + 1)

    # -- messages --------------------------------------------------------------------------------------
    def _deliveries(self, s: KafkaState) -> Iterator[tuple[Action, KafkaState]]:
        # the controller's channel to a broker is FIFO: the oldest request comes first. The (leader
        # epoch, broker epoch) a request carries only grows along a channel, and a StopReplica comes
        # after a LeaderAndIsr of the same pair (see _channel_order)
        oldest: dict[int, Any] = {}
        for m in s.network:
            kind = m.kind
            if kind == LEADER_AND_ISR or kind == STOP_REPLICA:
                first = oldest.get(m.dst)
                if first is None or _channel_order(m) < _channel_order(first):
                    oldest[m.dst] = m
            elif kind > STOP_REPLICA:
                break
        for dst in sorted(oldest):
            m = oldest[dst]
            if m.kind == LEADER_AND_ISR:
                yield self._deliver[dst][m.epoch], self._apply_leader_and_isr(s, m)
            else:
                yield self._deliver_stop[dst], self._apply_stop_replica(s, m)
        last_src = -1
        for m in s.network:
            kind = m.kind
            if kind == LEADER_AND_ISR or kind == STOP_REPLICA:
                continue
            if kind == CONTROLLED_SHUTDOWN:
                if m.src != last_src:  # the controller handles one broker's requests in order
                    last_src = m.src
                    yield from self._controlled_shutdowns(s, m)
            elif kind == FETCH:
                yield self._serve_fetch[m.dst][m.src], self._serve_fetch_state(s, m)
            elif kind == FETCH_RESPONSE:
                yield self._receive_fetch[m.dst][m.src], self._receive_fetch_state(s, m)
            elif kind == OFFSETS_FOR_LEADER_EPOCH:
                yield self._serve_offsets[m.dst][m.src], self._serve_offsets_state(s, m)
            elif kind == OFFSETS_FOR_LEADER_EPOCH_RESPONSE:
                yield self._receive_offsets[m.dst][m.src], self._receive_offsets_state(s, m)

    def _stale_generation(self, b: Broker, m: LeaderAndIsr | StopReplica) -> bool:
        """KIP-380: a control request for an older generation is rejected (STALE_BROKER_EPOCH); a newer
        one is accepted (rejecting it stalled the broker: KAFKA-9839)."""
        return self._reject_stale and m.broker_epoch < b.broker_epoch

    def _apply_stop_replica(self, s: KafkaState, m: StopReplica) -> KafkaState:
        network = _remove(s.network, m)
        i = m.dst
        b = s.brokers[i]
        if self._stale_generation(b, m):
            return s._replace(network=network)
        # the replica is removed from the fetcher and stays offline until a LeaderAndIsr with a newer epoch
        nb = b._replace(fetch=NO_FETCHER, stale=b.stale or m.meant != b.incarnation)
        return s._replace(brokers=_set(s.brokers, i, nb), network=network)

    def _apply_leader_and_isr(self, s: KafkaState, m: LeaderAndIsr) -> KafkaState:
        network = _remove(s.network, m)
        i = m.dst
        b = s.brokers[i]
        if m.epoch <= b.epoch or self._stale_generation(b, m):
            return s._replace(network=network)  # an older epoch than the broker knows, or generation: ignored
        if m.meant != b.incarnation:
            b = b._replace(stale=True)
        if m.leader == i:
            cache = b.cache
            if self.features.epoch_on_become_leader:
                cache = assign(cache, m.epoch, len(b.log))
            nb = b._replace(leader=i, epoch=m.epoch, isr=m.isr, fetch=NO_FETCHER, remote=(-1,) * self.n, cache=cache)
        elif b.leader == m.leader and b.fetch != NO_FETCHER and not self._fencing:
            # before KIP-320 a follower whose leader did not change only learns the new epoch
            nb = b._replace(epoch=m.epoch, isr=m.isr)
        else:
            if self._hw_truncation:
                b = _truncate(b, b.hw, self._fix_10706)
                fetch = FETCHING
            elif self._offsets:
                fetch = TRUNCATING
            else:
                fetch = FETCHING
            nb = b._replace(leader=m.leader, epoch=m.epoch, isr=m.isr, fetch=fetch, remote=())
        return s._replace(brokers=_set(s.brokers, i, nb), network=network)

    def _error(self, leader: Broker, i: int, request_epoch: int) -> int:
        if self._fencing:
            if request_epoch < leader.epoch:
                return FENCED_LEADER_EPOCH
            if request_epoch > leader.epoch:
                return UNKNOWN_LEADER_EPOCH
        if leader.leader != i:
            return NOT_LEADER
        return NONE

    def _serve_fetch_state(self, s: KafkaState, m: FetchRequest) -> KafkaState:
        network = _remove(s.network, m)
        i, f = m.dst, m.src
        b = s.brokers[i]
        error = self._error(b, i, m.epoch)
        brokers = s.brokers
        if error != NONE:
            resp = FetchResponse(FETCH_RESPONSE, i, f, m.epoch, m.offset, error, (), -1, -1, -1)
        else:
            leo = len(b.log)
            diverging = diverging_epoch(b.cache, leo, m.offset, m.last_epoch) if self._on_fetch else None
            if diverging is not None:
                resp = FetchResponse(FETCH_RESPONSE, i, f, m.epoch, m.offset, NONE, (), b.hw, *diverging)
            elif m.offset > leo:
                resp = FetchResponse(FETCH_RESPONSE, i, f, m.epoch, m.offset, OFFSET_OUT_OF_RANGE, (), leo, -1, -1)
            else:
                remote = b.remote[:f] + (m.offset,) + b.remote[f + 1 :]
                brokers = _set(brokers, i, b._replace(remote=remote))
                resp = FetchResponse(FETCH_RESPONSE, i, f, m.epoch, m.offset, NONE, b.log[m.offset :], b.hw, -1, -1)
        return s._replace(brokers=brokers, network=_add(network, resp))

    def _receive_fetch_state(self, s: KafkaState, m: FetchResponse) -> KafkaState:
        network = _remove(s.network, m)
        i = m.dst
        b = s.brokers[i]
        leo = len(b.log)
        if b.fetch != FETCHING or b.leader != m.src or leo != m.offset:
            return s._replace(network=network)  # the fetcher moved on: the response is dropped
        if self.features.stale_response_guard and m.epoch != b.epoch:
            return s._replace(network=network)
        if m.error == NONE and m.diverging_epoch == -1 and m.diverging_offset == -1:
            log = b.log + m.records
            nb = b._replace(log=log, cache=cache_after_append(b.cache, log, leo), hw=min(m.hw, len(log)))
        elif m.error == NONE:
            offset, _ = follower_truncation(b.cache, leo, b.hw, m.diverging_epoch, m.diverging_offset)
            nb = _truncate(b, offset, self._fix_10706)  # truncate, and do not adopt the leader's HW here (KAFKA-14704)
        elif m.error == OFFSET_OUT_OF_RANGE and m.hw < leo:
            nb = _truncate(b, m.hw, self._fix_10706)  # the leader's log ends before ours: truncate to its LEO
        elif m.error == FENCED_LEADER_EPOCH and self._fenced_removes:
            nb = b._replace(fetch=NO_FETCHER)  # 2.1.0: wait for the next LeaderAndIsr
        else:
            return s._replace(network=network)  # NOT_LEADER, FENCED, UNKNOWN: retry later
        return s._replace(brokers=_set(s.brokers, i, nb), network=network)

    def _serve_offsets_state(self, s: KafkaState, m: OffsetsRequest) -> KafkaState:
        network = _remove(s.network, m)
        i, f = m.dst, m.src
        b = s.brokers[i]
        error = self._error(b, i, m.epoch)
        if error != NONE:
            answer_epoch, end = UNDEFINED, UNDEFINED
        elif self._kip279:
            answer_epoch, end = end_offset_for(b.cache, len(b.log), m.requested)
        else:
            answer_epoch, end = UNDEFINED, end_offset_kip101(b.cache, len(b.log), m.requested)
        resp = OffsetsResponse(OFFSETS_FOR_LEADER_EPOCH_RESPONSE, i, f, m.epoch, m.requested, error, answer_epoch, end)
        return s._replace(network=_add(network, resp))

    def _receive_offsets_state(self, s: KafkaState, m: OffsetsResponse) -> KafkaState:
        network = _remove(s.network, m)
        i = m.dst
        b = s.brokers[i]
        if b.fetch != TRUNCATING or b.leader != m.src:
            return s._replace(network=network)
        if self._fix_7786 and m.epoch != b.epoch:
            return s._replace(network=network)  # KAFKA-7786's fix: the epoch changed while it was in flight
        leo = len(b.log)
        done = True
        if m.error != NONE:
            if m.error == FENCED_LEADER_EPOCH and self._fenced_removes:
                # 2.1.0 (KAFKA-7786): the partition leaves the fetcher until the next LeaderAndIsr
                nb = b._replace(fetch=NO_FETCHER)
                return s._replace(brokers=_set(s.brokers, i, nb), network=network)
            if self._fencing:
                return s._replace(network=network)  # KIP-320: retry
            offset = b.hw  # before KIP-320 any error falls back to the high watermark
        elif self._kip279:
            offset, done = follower_truncation(b.cache, leo, b.hw, m.answer_epoch, m.end_offset)
        elif m.end_offset == UNDEFINED:
            offset = b.hw
        else:
            offset = min(m.end_offset, leo)
        nb = _truncate(b, offset, self._fix_10706)._replace(fetch=FETCHING if done else TRUNCATING)
        return s._replace(brokers=_set(s.brokers, i, nb), network=network)


def _busy(network: tuple, follower: int, leader: int) -> bool:
    """A request from ``follower`` to ``leader``, or its response, is in flight."""
    for m in network:
        kind = m.kind
        if kind == FETCH or kind == OFFSETS_FOR_LEADER_EPOCH:
            if m.src == follower and m.dst == leader:
                return True
        elif (kind == FETCH_RESPONSE or kind == OFFSETS_FOR_LEADER_EPOCH_RESPONSE) and m.src == leader and m.dst == follower:
            return True
    return False


def _in_flight(network: tuple) -> int:
    """Broker-to-broker requests and responses in flight (what ``inflight`` bounds)."""
    return sum(1 for m in network if m.kind in DATA_KINDS)


def _channel_order(m: LeaderAndIsr | StopReplica) -> tuple[int, int, int]:
    """Where a control request sits in its FIFO channel: (leader epoch when sent, broker epoch stamped,
    kind). Both epochs only grow along a channel; the one case of a tie is a StopReplica sent for a
    controlled shutdown that needed no new epoch, which follows the LeaderAndIsr of that epoch."""
    return m.epoch, m.broker_epoch, m.kind


def _epoch_start(cache: tuple, epoch: int, leo: int) -> int:
    for e, start in cache:
        if e == epoch:
            return start
    return leo
