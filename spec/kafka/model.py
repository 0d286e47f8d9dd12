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
DeliverLeaderAndIsr                broker, epoch               the oldest LeaderAndIsr to the broker arrives
                                                               (the controller's channel is FIFO); applied if
                                                               its epoch is newer than the broker's
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
Restart                            broker                      back with its log, epoch cache and HW; the
                                                               controller sends it the current LeaderAndIsr
=================================  ==========================  ============================================

A broker has at most one request outstanding per leader (Kafka's fetcher thread sends, then waits
for the answer), and never sends to a broker that is down (the request would be lost at once).
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
    TRUNCATING,
    UNKNOWN_LEADER_EPOCH,
    Broker,
    Controller,
    FetchRequest,
    FetchResponse,
    KafkaState,
    LeaderAndIsr,
    OffsetsRequest,
    OffsetsResponse,
)
from spec.model import Action, Model

#: default bounds (see spec.kafka.__init__ for why they are large enough)
DEFAULTS = {"brokers": 2, "records": 2, "epochs": 2, "crashes": 1, "inflight": 0}


def _set(brokers: tuple[Broker, ...], i: int, broker: Broker) -> tuple[Broker, ...]:
    return brokers[:i] + (broker,) + brokers[i + 1 :]


def _add(network: tuple, *messages: Any) -> tuple:
    return tuple(sorted(network + messages))


def _remove(network: tuple, message: Any) -> tuple:
    i = network.index(message)
    return network[:i] + network[i + 1 :]


def _truncate(b: Broker, offset: int) -> Broker:
    """The broker after truncating its log to ``offset`` (HW clamped, later epochs dropped)."""
    if offset >= len(b.log):
        return b
    return b._replace(log=b.log[:offset], cache=truncate_cache(b.cache, offset), hw=min(b.hw, offset))


class KafkaModel(Model):
    name = "kafka"
    family = "kafka"
    #: broker ids are interchangeable: ``--symmetry`` (see spec.kafka.symmetry)
    has_symmetry = True

    def __init__(
        self,
        brokers: int = 2,
        records: int = 2,
        epochs: int = 2,
        crashes: int = 1,
        inflight: int = 0,
        protocol: str = DEFAULT_PROTOCOL,
        features: Features | None = None,
    ) -> None:
        self.n = brokers
        self.max_records = records
        self.max_epoch = epochs
        self.max_crashes = crashes
        self.max_inflight = inflight
        self.protocol = protocol
        self.features = features if features is not None else resolve(protocol)
        self.constants = {"brokers": brokers, "records": records, "epochs": epochs, "crashes": crashes,
                          "inflight": inflight}
        f = self.features
        self._fencing = f.leader_epoch_fencing
        self._send_epoch = f.leader_epoch_fencing or f.stale_response_guard
        self._offsets = f.uses_offsets_request
        self._kip279 = f.epoch_in_response
        self._on_fetch = f.truncate_on_fetch
        self._hw_truncation = f.truncation == "hw-truncation"
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
        brokers = [Broker(True, (), 0, leader_cache, 0, 0, isr, NO_FETCHER, (-1,) * n, 0)]
        for _ in range(1, n):
            brokers.append(Broker(True, (), 0, (), 0, 0, isr, FETCHING, (), 0))
        return [KafkaState(tuple(brokers), Controller(0, 0, isr), (), 0, 0, ())]

    def successors(self, s: KafkaState) -> Iterator[tuple[Action, KafkaState]]:
        yield from self._controller_actions(s)
        for i in range(self.n):
            yield from self._broker_actions(s, i)
        yield from self._deliveries(s)

    # -- controller ------------------------------------------------------------------------------------
    def _controller_actions(self, s: KafkaState) -> Iterator[tuple[Action, KafkaState]]:
        brokers, ctrl = s.brokers, s.controller
        if ctrl.epoch >= self.max_epoch:
            return
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

    def _elect_state(self, s: KafkaState, leader: int, isr: tuple[int, ...]) -> KafkaState:
        epoch = s.controller.epoch + 1
        sent = tuple(LeaderAndIsr(LEADER_AND_ISR, r, epoch, leader, isr) for r in range(self.n) if s.brokers[r].alive)
        return s._replace(controller=Controller(leader, epoch, isr), network=_add(s.network, *sent))

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
        if b.fetch == TRUNCATING and not b.cache and b.leader != i:
            nb = _truncate(b, b.hw)._replace(fetch=FETCHING)
            yield self._trunc_hw[i], s._replace(brokers=_set(brokers, i, nb))
        if s.crashes < self.max_crashes:
            yield self._crash[i], self._crash_state(s, i, len(b.log))
            if self.features.lossy_crash:
                for keep in range(len(b.log)):
                    yield self._lossy[i][keep], self._crash_state(s, i, keep)

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
            yield act, s._replace(brokers=_set(brokers, i, nb), controller=Controller(ctrl.leader, ctrl.epoch, isr))

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

    # -- crash and restart ---------------------------------------------------------------------------
    def _crash_state(self, s: KafkaState, i: int, keep: int) -> KafkaState:
        b = _truncate(s.brokers[i], keep)
        nb = Broker(False, b.log, b.hw, b.cache, -1, -1, (), NO_FETCHER, (), b.incarnation)
        network = tuple(m for m in s.network if m.dst != i and (m.kind == LEADER_AND_ISR or m.src != i))
        return s._replace(brokers=_set(s.brokers, i, nb), network=network, crashes=s.crashes + 1)

    def _restart_state(self, s: KafkaState, i: int) -> KafkaState:
        b = s.brokers[i]
        nb = Broker(True, b.log, min(b.hw, len(b.log)), b.cache, -1, -1, (), NO_FETCHER, (), b.incarnation + 1)
        ctrl = s.controller
        msg = LeaderAndIsr(LEADER_AND_ISR, i, ctrl.epoch, ctrl.leader, ctrl.isr)
        return s._replace(brokers=_set(s.brokers, i, nb), network=_add(s.network, msg))

    # -- messages --------------------------------------------------------------------------------------
    def _deliveries(self, s: KafkaState) -> Iterator[tuple[Action, KafkaState]]:
        last_dst = -1
        for m in s.network:
            kind = m.kind
            if kind == LEADER_AND_ISR:
                # the controller's channel to a broker is FIFO: the oldest (lowest epoch) comes first
                if m.dst != last_dst:
                    last_dst = m.dst
                    yield self._deliver[m.dst][m.epoch], self._apply_leader_and_isr(s, m)
            elif kind == FETCH:
                yield self._serve_fetch[m.dst][m.src], self._serve_fetch_state(s, m)
            elif kind == FETCH_RESPONSE:
                yield self._receive_fetch[m.dst][m.src], self._receive_fetch_state(s, m)
            elif kind == OFFSETS_FOR_LEADER_EPOCH:
                yield self._serve_offsets[m.dst][m.src], self._serve_offsets_state(s, m)
            elif kind == OFFSETS_FOR_LEADER_EPOCH_RESPONSE:
                yield self._receive_offsets[m.dst][m.src], self._receive_offsets_state(s, m)

    def _apply_leader_and_isr(self, s: KafkaState, m: LeaderAndIsr) -> KafkaState:
        network = _remove(s.network, m)
        i = m.dst
        b = s.brokers[i]
        if m.epoch <= b.epoch:
            return s._replace(network=network)  # an older epoch than the broker knows: ignored
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
                b = _truncate(b, b.hw)
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
            nb = _truncate(b, offset)  # truncate, and do not adopt the leader's HW here (KAFKA-14704)
        elif m.error == OFFSET_OUT_OF_RANGE and m.hw < leo:
            nb = _truncate(b, m.hw)  # the leader's log ends before ours: truncate to its LEO
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
        leo = len(b.log)
        done = True
        if m.error != NONE:
            if self._fencing:
                return s._replace(network=network)  # KIP-320: retry
            offset = b.hw  # before KIP-320 any error falls back to the high watermark
        elif self._kip279:
            offset, done = follower_truncation(b.cache, leo, b.hw, m.answer_epoch, m.end_offset)
        elif m.end_offset == UNDEFINED:
            offset = b.hw
        else:
            offset = min(m.end_offset, leo)
        nb = _truncate(b, offset)._replace(fetch=FETCHING if done else TRUNCATING)
        return s._replace(brokers=_set(s.brokers, i, nb), network=network)


def _busy(network: tuple, follower: int, leader: int) -> bool:
    """A request from ``follower`` to ``leader``, or its response, is in flight."""
    for m in network:
        kind = m.kind
        if kind == FETCH or kind == OFFSETS_FOR_LEADER_EPOCH:
            if m.src == follower and m.dst == leader:
                return True
        elif kind != LEADER_AND_ISR and m.src == leader and m.dst == follower:
            return True
    return False


def _in_flight(network: tuple) -> int:
    return sum(1 for m in network if m.kind != LEADER_AND_ISR)


def _epoch_start(cache: tuple, epoch: int, leo: int) -> int:
    for e, start in cache:
        if e == epoch:
            return start
    return leo
