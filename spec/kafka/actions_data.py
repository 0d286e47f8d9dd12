"""The data plane of the Kafka model: what a leader does on its own (produce, advance the high
watermark, shrink and expand the ISR), what a follower sends (Fetch, OffsetsForLeaderEpoch), and how
the leader serves those requests and the follower applies the answers (append, truncate, retry).

``DataPlaneActions`` is a mixin of ``spec.kafka.model.KafkaModel``: it reads the bounds, feature
switches and action tables that ``KafkaModel.__init__`` sets. The rules are in that module's docstring.
"""

from __future__ import annotations

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
)
from spec.kafka.state import (
    DATA_KINDS,
    FENCED_LEADER_EPOCH,
    FETCH,
    FETCH_RESPONSE,
    FETCHING,
    NO_FETCHER,
    NONE,
    NOT_LEADER,
    OFFSET_OUT_OF_RANGE,
    OFFSETS_FOR_LEADER_EPOCH,
    OFFSETS_FOR_LEADER_EPOCH_RESPONSE,
    TRUNCATING,
    UNKNOWN_LEADER_EPOCH,
    Broker,
    Controller,
    FetchRequest,
    FetchResponse,
    KafkaState,
    OffsetsRequest,
    OffsetsResponse,
)
from spec.kafka.updates import (
    add_messages,
    remove_message,
    replace_broker,
    truncate_broker,
    with_brokers,
    with_fetch,
    with_network,
)

_new = tuple.__new__


class DataPlaneActions:
    """Produce, high watermark and ISR changes by the leader; fetch and OffsetsForLeaderEpoch rounds."""

    # -- a leader's and a follower's own actions ---------------------------------------------------------
    def _leader_actions(self, s: KafkaState, i: int, b: Broker, out: list) -> None:
        add = out.append
        brokers = s[0]
        log, cache, epoch = b[1], b[3], b[5]
        leo = len(log)
        produced = s[3]
        if produced < self.max_records:
            ident = produced + 1
            new_log = log + (_new(Record, (epoch, ident)),)
            new_cache = assign(cache, epoch, leo) if epoch > latest_epoch(cache) else cache
            nb = _new(Broker, (b[0], new_log, b[2], new_cache) + b[4:])
            add((self._produce[i], _new(KafkaState, (replace_broker(brokers, i, nb), s[1], s[2], ident) + s[4:])))
        hw = leo
        remote = b.remote
        isr = b.isr
        for r in isr:
            if r != i and remote[r] < hw:
                hw = remote[r]
        if hw > b.hw:
            committed = set(s.committed)
            for offset in range(hw):
                rec = log[offset]
                committed.add((offset, rec[0], rec[1]))
            nb = _new(Broker, (b[0], log, hw) + b[3:])
            add((self._advance[i], _new(KafkaState, (replace_broker(brokers, i, nb),) + s[1:8] + (tuple(sorted(committed)),))))
        ctrl = s[1]
        if ctrl[0] != i or ctrl[1] != epoch:
            return  # a deposed leader's ZooKeeper write of the ISR fails (stale zkVersion)
        shrink, expand = self._shrink[i], self._expand[i]
        for f in range(self.n):
            if f == i:
                continue
            if f in isr:
                new_isr = tuple([r for r in isr if r != f])
                act = shrink[f]
            else:
                if remote[f] < b.hw or remote[f] < 0:
                    continue
                if self.features.expand_isr_guard and b.hw < epoch_start(cache, epoch, leo):
                    continue
                new_isr = tuple(sorted(isr + (f,)))
                act = expand[f]
            nb = _new(Broker, b[:6] + (new_isr,) + b[7:])
            nctrl = _new(Controller, (ctrl[0], ctrl[1], new_isr, ctrl[3]))
            add((act, _new(KafkaState, (replace_broker(brokers, i, nb), nctrl) + s[2:])))

    def _follower_actions(self, s: KafkaState, i: int, b: Broker, out: list) -> None:
        leader = b.leader
        fetch = b.fetch
        network = s[2]
        if fetch == NO_FETCHER or busy(network, i, leader):
            return
        if self.max_inflight and in_flight(network) >= self.max_inflight:
            return
        epoch = b.epoch if self._send_epoch else -1
        if fetch == FETCHING:
            last = latest_epoch(b.cache) if self._on_fetch else -1
            msg = _new(FetchRequest, (FETCH, i, leader, epoch, len(b.log), last))
            out.append((self._send_fetch[i][leader], with_network(s, add_messages(network, msg))))
        elif fetch == TRUNCATING and b.cache:
            msg = _new(OffsetsRequest, (OFFSETS_FOR_LEADER_EPOCH, i, leader, epoch if self._fencing else -1,
                                        latest_epoch(b.cache)))
            out.append((self._send_offsets[i][leader], with_network(s, add_messages(network, msg))))

    # -- fetch and OffsetsForLeaderEpoch, served and received ------------------------------------------
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
        network = remove_message(s.network, m)
        i, f = m.dst, m.src
        b = s.brokers[i]
        error = self._error(b, i, m.epoch)
        brokers = s.brokers
        if error != NONE:
            resp = _new(FetchResponse, (FETCH_RESPONSE, i, f, m.epoch, m.offset, error, (), -1, -1, -1))
        else:
            leo = len(b.log)
            diverging = diverging_epoch(b.cache, leo, m.offset, m.last_epoch) if self._on_fetch else None
            if diverging is not None:
                resp = _new(FetchResponse, (FETCH_RESPONSE, i, f, m.epoch, m.offset, NONE, (), b.hw) + diverging)
            elif m.offset > leo:
                resp = _new(FetchResponse, (FETCH_RESPONSE, i, f, m.epoch, m.offset, OFFSET_OUT_OF_RANGE, (), leo, -1, -1))
            else:
                remote = b.remote[:f] + (m.offset,) + b.remote[f + 1 :]
                brokers = replace_broker(brokers, i, _new(Broker, b[:8] + (remote,) + b[9:]))
                resp = _new(FetchResponse, (FETCH_RESPONSE, i, f, m.epoch, m.offset, NONE, b.log[m.offset :], b.hw, -1, -1))
        return with_brokers(s, brokers, add_messages(network, resp))

    def _receive_fetch_state(self, s: KafkaState, m: FetchResponse) -> KafkaState:
        network = remove_message(s.network, m)
        i = m.dst
        b = s.brokers[i]
        leo = len(b.log)
        if b.fetch != FETCHING or b.leader != m.src or leo != m.offset:
            return with_network(s, network)  # the fetcher moved on: the response is dropped
        if self.features.stale_response_guard and m.epoch != b.epoch:
            return with_network(s, network)
        if m.error == NONE and m.diverging_epoch == -1 and m.diverging_offset == -1:
            log = b.log + m.records
            nb = _new(Broker, (b[0], log, min(m.hw, len(log)), cache_after_append(b.cache, log, leo)) + b[4:])
        elif m.error == NONE:
            offset, _ = follower_truncation(b.cache, leo, b.hw, m.diverging_epoch, m.diverging_offset)
            nb = truncate_broker(b, offset, self._fix_10706)  # truncate, and do not adopt the leader's HW here (KAFKA-14704)
        elif m.error == OFFSET_OUT_OF_RANGE and m.hw < leo:
            nb = truncate_broker(b, m.hw, self._fix_10706)  # the leader's log ends before ours: truncate to its LEO
        elif m.error == FENCED_LEADER_EPOCH and self._fenced_removes:
            nb = with_fetch(b, NO_FETCHER)  # 2.1.0: wait for the next LeaderAndIsr
        else:
            return with_network(s, network)  # NOT_LEADER, FENCED, UNKNOWN: retry later
        return with_brokers(s, replace_broker(s.brokers, i, nb), network)

    def _serve_offsets_state(self, s: KafkaState, m: OffsetsRequest) -> KafkaState:
        network = remove_message(s.network, m)
        i, f = m.dst, m.src
        b = s.brokers[i]
        error = self._error(b, i, m.epoch)
        if error != NONE:
            answer_epoch, end = UNDEFINED, UNDEFINED
        elif self._kip279:
            answer_epoch, end = end_offset_for(b.cache, len(b.log), m.requested)
        else:
            answer_epoch, end = UNDEFINED, end_offset_kip101(b.cache, len(b.log), m.requested)
        resp = _new(OffsetsResponse, (OFFSETS_FOR_LEADER_EPOCH_RESPONSE, i, f, m.epoch, m.requested, error, answer_epoch, end))
        return with_network(s, add_messages(network, resp))

    def _receive_offsets_state(self, s: KafkaState, m: OffsetsResponse) -> KafkaState:
        network = remove_message(s.network, m)
        i = m.dst
        b = s.brokers[i]
        if b.fetch != TRUNCATING or b.leader != m.src:
            return with_network(s, network)
        if self._fix_7786 and m.epoch != b.epoch:
            return with_network(s, network)  # KAFKA-7786's fix: the epoch changed while it was in flight
        leo = len(b.log)
        done = True
        if m.error != NONE:
            if m.error == FENCED_LEADER_EPOCH and self._fenced_removes:
                # 2.1.0 (KAFKA-7786): the partition leaves the fetcher until the next LeaderAndIsr
                nb = with_fetch(b, NO_FETCHER)
                return with_brokers(s, replace_broker(s.brokers, i, nb), network)
            if self._fencing:
                return with_network(s, network)  # KIP-320: retry
            offset = b.hw  # before KIP-320 any error falls back to the high watermark
        elif self._kip279:
            offset, done = follower_truncation(b.cache, leo, b.hw, m.answer_epoch, m.end_offset)
        elif m.end_offset == UNDEFINED:
            offset = b.hw
        else:
            offset = min(m.end_offset, leo)
        nb = with_fetch(truncate_broker(b, offset, self._fix_10706), FETCHING if done else TRUNCATING)
        return with_brokers(s, replace_broker(s.brokers, i, nb), network)


def busy(network: tuple, follower: int, leader: int) -> bool:
    """A request from ``follower`` to ``leader``, or its response, is in flight."""
    for m in network:
        kind = m.kind
        if kind == FETCH or kind == OFFSETS_FOR_LEADER_EPOCH:
            if m.src == follower and m.dst == leader:
                return True
        elif (kind == FETCH_RESPONSE or kind == OFFSETS_FOR_LEADER_EPOCH_RESPONSE) and m.src == leader and m.dst == follower:
            return True
    return False


def in_flight(network: tuple) -> int:
    """Broker-to-broker requests and responses in flight (what ``inflight`` bounds)."""
    return sum(1 for m in network if m.kind in DATA_KINDS)


def epoch_start(cache: tuple, epoch: int, leo: int) -> int:
    for e, start in cache:
        if e == epoch:
            return start
    return leo
