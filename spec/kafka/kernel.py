"""The compiled kernel of the Kafka model (``kernel.c``): how a ``KafkaState`` packs into
fixed-width bytes and back, the action codes' names, and which configurations it compiles.

The layout (``kernel.c``'s ``km_state``, every field one byte, no padding), for ``n`` brokers, ``r``
records and ``e`` epochs (the bounds size every array: ``KM_N``, ``KM_R``, ``KM_E``; a log holds at
most ``records`` records, each produce's record sitting at the offset it was produced at, and an
epoch cache at most ``epochs + 1`` entries):

- each broker: alive, its log (length, then (epoch, ident) a record, zero past the end), HW, its
  epoch cache (length, then (epoch, start offset) pairs), leader, leader epoch, ISR (a bit mask),
  fetcher state, whether it holds remote LEOs and the ``n`` of them, broker epoch, stopping, and the
  ghosts incarnation, stale, reconciled, idle cause;
- the controller: leader, epoch, ISR mask, each broker's registered broker epoch;
- the network: a count and ``KM_NET`` slots, each message written order-preserving (every value
  ``v`` as the byte ``v + 2``, a tuple as its items then 0), so the slots sorted bytewise are the
  readable model's sorted network and a state's bytes compare as its tuple does (``km_serialize``,
  the canonical form's tie-break);
- the bound counters (produced, crashes, bumps, shutdowns, bounces, losses), the committed ghost and
  the producer's acknowledged records (each a count and (offset, epoch, ident) triples);
- truncate-on-fetch: each broker's ``pending_diverging`` (``km_pending``: the source, -1 for none,
  then the request's leader epoch, the diverging epoch and its end offset; zeros for none);
- alter-isr (the ZooKeeper rows' AlterIsr): each broker's ``partition_epoch`` (its zkVersion),
  ``alter_pending`` and ``committed_isr`` (a mask) (``km_alter``), the controller's
  ``partition_epoch``, and the counters ``alters`` and ``alter_losses``. With alter-isr a
  LeaderAndIsr carries its zkVersion after ``meant``, and the network holds AlterIsr requests (src,
  dst -1, epoch, zkVersion, ISR, each broker's epoch) and answers (src -1, dst, epoch, zkVersion,
  error, ISR, new epoch, new zkVersion).

- the KRaft section (``_kraft_tail``), then the consumers (``_consumer``), each: leader, epoch,
  position, last epoch, validating, its consumed ghost (a count and ``consumed_cap`` (offset, epoch,
  ident) triples), skipped, surfaced, read_before_unclean, then its request or answer in flight
  (``consumer_inflight=1``; kind 0 and zeros for none: broker, kind, incarnation, epoch, position,
  last epoch, whether answered, a fetch answer (position, last epoch, a count and ``records``
  triples, skip, reset), a validation answer (epoch, end offset)).

Signed values are stored as their low byte (-1 as 255). The fields the compiled rows never set
(the reassignments', KAFKA-13091's ``hw_stale``) are not stored: ``pack`` refuses a state where
one is set.
"""

from __future__ import annotations

import os
from typing import Any

from spec.kafka.clients import (
    CONSUMER_FETCH,
    CONSUMER_FETCH_RESPONSE,
    CONSUMER_VALIDATE,
    CONSUMER_VALIDATE_RESPONSE,
)
from spec.kafka.log import Record
from spec.kafka.releases import resolve
from spec.kafka.state import (
    ALTER_PARTITION,
    ALTER_PARTITION_RESPONSE,
    CONTROLLED_SHUTDOWN,
    FETCH,
    FETCH_RESPONSE,
    LEADER_AND_ISR,
    OFFSETS_FOR_LEADER_EPOCH,
    OFFSETS_FOR_LEADER_EPOCH_RESPONSE,
    STOP_REPLICA,
    AlterPartition,
    AlterPartitionResponse,
    Broker,
    Consumer,
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
from spec.model import Action, KernelSource

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernel.c")

#: the C file's action kinds in order (code: kind << 24 | p1 << 16 | p2 << 8), each the model's
#: table it names
KINDS = ("_elect", "_preferred", "_unclean", "_crash", "_restart", "_bump", "_broker_failure",
         "_broker_change", "_deliver", "_lose", "_produce", "_advance", "_trunc_hw", "_send_fetch",
         "_serve_fetch", "_receive_fetch", "_send_offsets", "_serve_offsets", "_receive_offsets",
         "_shrink", "_expand", "_shutdown", "_bounce", "_deliver_stop", "_process_shutdown",
         "_truncate_diverging", "_process_alter", "_receive_alter", "_lose_alter",
         # the KRaft rows (kernel.c's KRaft section)
         "_fence", "_unfence", "_unclean_shutdown", "_kraft_shutdown", "_clean_shutdown",
         # the consumers (kernel.c's consumers section, clients.ClientActions)
         "_consumer_metadata", "_consumer_fetch", "_consumer_validate", "_consumer_fetch_follower",
         "_consumer_send_fetch", "_consumer_serve_fetch", "_consumer_receive_fetch",
         "_consumer_send_validate", "_consumer_serve_validate", "_consumer_receive_validate",
         "_consumer_disconnect")

#: the feature flags the C file reads (``Features`` fields and derived switches): ``LAYOUT_FLAGS``
#: as ``KM_F_*`` defines, the others as run-time constants
FLAGS = ("kafka_5642", "kafka_5163", "epoch_in_response", "kafka_7415", "kafka_7128", "kafka_7164",
         "kafka_7414", "leader_epoch_fencing", "kafka_7152", "kafka_9654", "kafka_8400",
         "truncation_lowers_hw", "reject_stale_broker_epoch", "detect_bounced_broker",
         "reject_stale_shutdown", "kafka_10706_fix", "kafka_13141", "kafka_18991", "unclean",
         "epoch_cache", "hw_truncation", "uses_offsets_request", "removes_fenced_partition",
         "checks_offsets_answer_epoch", "effective_min_isr", "truncate_on_fetch", "kafka_13207",
         "kafka_14704", "zookeeper_alter_isr", "kafka_14140", "kafka_15583",
         # the KRaft rows (kernel.c's KRaft section; ``kraft`` switches the section on)
         "kraft", "kip_841", "kip_903", "fetch_carries_broker_epoch", "kafka_15021", "kip_966_elr",
         "detects_unclean_shutdown", "kafka_18635", "unclean_election_clears_elr",
         "kraft_shutdown_stops_fetcher", "fenced_broker_clean_shutdown",
         # the consumers (clients.ClientActions: _consumer_actions, _metadata_state,
         # _serve_consumer_fetch, _fetch_from_follower_actions); they act on no rule at consumers=0
         "consumer_truncation_detection", "fetch_from_follower")
#: the flags that shape the state or choose a section of the C file: compile-time ``KM_F_*``
#: defines; every other flag is a run-time constant (kernel.c's ``KM_CONFIG``, ``config.<flag>``)
LAYOUT_FLAGS = ("kraft", "zookeeper_alter_isr")
#: the bounds and constants that only guard rules, run-time constants of the C file in this order
#: (kernel.c's ``KM_CONFIG``, before the flags): the crash, bump, loss, inflight, shutdown and
#: bounce bounds, the producer's acks and min.insync.replicas (``clients.producer_for``), the
#: AlterIsr bounds, the KRaft bounds (``actions_kraft._init_kraft``) and consumer_inflight
#: (``clients.ClientActions``)
RUNTIME_BOUNDS = ("crashes", "bumps", "losses", "inflight", "shutdowns", "bounces", "acks",
                  "min_isr", "alters", "alter_losses", "unclean_shutdowns", "metadata_lag",
                  "fences", "clean_shutdowns", "consumer_inflight")
#: flags whose rules the C file does not compile: a row with one on runs the readable model
UNCOMPILED_FLAGS = ("lossy_crash",)
#: the KRaft rows' bounds the C file does not compile: a configuration with one above 0 runs the
#: readable model, saying why
KRAFT_UNCOMPILED_BOUNDS = {
    "reassignments": "partition reassignment (the replica lists) is not compiled",
}
#: flags that only the consumers read (``clients.ClientActions``: ``_consumer_actions``,
#: ``_metadata_state``, ``_serve_consumer_fetch``, ``_fetch_from_follower_actions``, all reached
#: only from ``KafkaModel.successors``' ``if self.consumers``): with ``consumers=0`` they change no
#: rule (tests/test_kafka_kernel.py: the state spaces with each on and off are equal there); the
#: kernel's consumers section compiles them (tests/test_kafka_kernel_consumers.py)
CONSUMER_FLAGS = ("consumer_truncation_detection", "fetch_from_follower")
#: the compiled invariants, in the order of the violation mask's bits
INVARIANTS = ("log-matching", "log-matching-all-pairs", "log-matching-raft", "committed-durable",
              "no-uncommitted-below-hw", "replica-sanity", "no-stale-control-request",
              "no-fence-stall", "no-bounce-stall", "acknowledged-durable", "no-silent-skip",
              "consumed-stays", "elr-safety")
#: the rows the equivalence tests (tests/test_kafka_kernel.py) prove: ``--kernel auto`` picks the
#: kernel only there
PROVEN_ROWS = ("0.10.2", "0.11.0", "2.0.0", "2.0.1", "2.1.0", "2.1.1", "2.2.0", "2.8.0", "2.8.1",
               "3.4.1", "3.9.1", "kraft-3.3", "kraft-3.5", "kraft-4.0", "kraft-4.1")
MAX_BROKERS = 5  # an ISR is one byte


def _s8(v: int) -> int:
    return v & 0xFF


def _signed(b: int) -> int:
    return b - 256 if b > 127 else b


def _mask(ids: tuple[int, ...]) -> int:
    m = 0
    for i in ids:
        m |= 1 << i
    return m


def _ids(mask: int, n: int) -> tuple[int, ...]:
    return tuple(i for i in range(n) if mask >> i & 1)


def _enc(v: int) -> int:
    """A value in the order-preserving message encoding (-1 is 1, so 0 can end a tuple)."""
    if not -1 <= v <= 253:
        raise ValueError(f"value {v} is out of the kernel's message encoding")
    return v + 2


class Packing:
    """The byte layout of ``km_state`` for one configuration (brokers, records, epochs, network
    slots)."""

    def __init__(self, brokers: int, records: int, epochs: int, net: int,
                 alter_isr: bool = False, kraft: bool = False, consumers: int = 0,
                 consumed: int | None = None) -> None:
        self.n, self.r, self.e, self.net = brokers, records, epochs, net
        #: a LeaderAndIsr's partition epoch, AlterPartition and the ``km_alter`` fields: alter-isr's
        #: and the KRaft rows'
        self.alter_isr = alter_isr or kraft
        self.kraft = kraft
        alter_isr = self.alter_isr
        self.log_cap = max(records, 1)
        self.cache_cap = epochs + 1
        self.msg_bytes = max(10 + 2 * records, 7 + brokers,
                             *((7 + 2 * brokers, 9 + brokers) if alter_isr else ()))
        self.broker_bytes = 15 + 2 * self.log_cap + 2 * self.cache_cap + brokers
        self.state_bytes = (brokers * self.broker_bytes + 3 + brokers + 1 + net * self.msg_bytes + 6
                            + 2 * (1 + 3 * self.log_cap) + 4 * brokers + 3 * brokers + 3)
        #: the KRaft section (``km_state``'s last fields): each broker's followers' broker epochs
        #: (KIP-903: whether it holds them, the ``n`` of them), the controller's ELR, the KRaft
        #: bounds' counters (``_kraft_tail``)
        self.kraft_broker_bytes = 1 + brokers
        if kraft:
            self.state_bytes += brokers * self.kraft_broker_bytes + 1 + 3
        #: the consumers (``km_consumer``): its consumed ghost's slots (``consumed_slots``)
        self.consumers = consumers
        self.consumed_cap = consumed_slots(records, epochs) if consumed is None else consumed
        self.consumer_bytes = 23 + 3 * self.consumed_cap + 3 * self.log_cap
        self.state_bytes += consumers * self.consumer_bytes
        #: what ``_broker``, ``_message``, ``_unbroker`` and ``_unmessage`` gave for a value already
        #: seen: a state's successors share all but a field or two of it (``_memo``)
        self._memos: tuple[dict, dict, dict, dict] = ({}, {}, {}, {})

    #: the entries a memo holds before it starts again (a few MB)
    MEMO_ENTRIES = 1 << 15

    def _memo(self, which: int, key: Any, compute: Any, value: Any) -> Any:
        """``compute(value)``, once for each ``key`` while it stays in memo ``which``: ``key`` is
        ``value`` itself (a broker; bytes) or with its type (a message: NamedTuples of two kinds
        could be equal as tuples); what is computed is a pure function of it."""
        memo = self._memos[which]
        found = memo.get(key)
        if found is None:
            if len(memo) >= self.MEMO_ENTRIES:
                memo.clear()
            found = memo[key] = compute(value)
        return found

    # -- messages ----------------------------------------------------------------------------------
    def _message(self, m: Any) -> bytes:
        kind = m.kind
        if kind == LEADER_AND_ISR:
            if (m.partition_epoch != 0 and not self.alter_isr) or m.replicas:
                raise ValueError(f"the kernel stores no partition epoch or replicas: {m}")
            out = [kind, m.dst, m.epoch, m.leader, *m.isr]
            body = [_enc(v) for v in out] + [0] + [_enc(v) for v in (m.broker_epoch, m.meant)]
            if self.alter_isr:
                body.append(_enc(m.partition_epoch))
        elif kind == ALTER_PARTITION and self.alter_isr:
            body = ([_enc(v) for v in (kind, m.src, m.dst, m.epoch, m.partition_epoch, *m.isr)]
                    + [0] + [_enc(v) for v in m.broker_epochs] + [0])
        elif kind == ALTER_PARTITION_RESPONSE and self.alter_isr:
            body = ([_enc(v) for v in (kind, m.src, m.dst, m.epoch, m.partition_epoch, m.error,
                                       *m.isr)]
                    + [0] + [_enc(v) for v in (m.new_epoch, m.new_partition_epoch)])
        elif kind == FETCH:
            if m.broker_epoch != -1 and not self.kraft:
                raise ValueError(f"the kernel stores no broker epoch in a Fetch here: {m}")
            body = [_enc(v) for v in (kind, m.src, m.dst, m.epoch, m.offset, m.last_epoch,
                                      *((m.broker_epoch,) if self.kraft else ()))]
        elif kind == FETCH_RESPONSE:
            body = [_enc(v) for v in (kind, m.src, m.dst, m.epoch, m.offset, m.error)]
            for rec in m.records:
                body += [_enc(rec.epoch), _enc(rec.ident)]
            body += [0] + [_enc(v) for v in (m.hw, m.diverging_epoch, m.diverging_offset)]
        elif kind == OFFSETS_FOR_LEADER_EPOCH:
            body = [_enc(v) for v in (kind, m.src, m.dst, m.epoch, m.requested)]
        elif kind == OFFSETS_FOR_LEADER_EPOCH_RESPONSE:
            body = [_enc(v) for v in (kind, m.src, m.dst, m.epoch, m.requested, m.error,
                                      m.answer_epoch, m.end_offset)]
        elif kind == STOP_REPLICA:
            body = [_enc(v) for v in (kind, m.dst, m.epoch, m.broker_epoch, m.meant)]
        elif kind == CONTROLLED_SHUTDOWN:
            body = [_enc(v) for v in (kind, m.src, m.broker_epoch, m.incarnation)]
        else:
            raise ValueError(f"the kernel compiles no message of kind {kind}: {m}")
        if len(body) > self.msg_bytes:
            raise ValueError(f"message {m} is past the kernel's {self.msg_bytes} bytes")
        return bytes(body + [0] * (self.msg_bytes - len(body)))

    def _unmessage(self, b: bytes) -> Any:
        """The message ``_message`` packed, each field named as ``_message`` wrote it."""
        v = [x - 2 for x in b]
        kind = v[0]
        if kind == LEADER_AND_ISR:
            end = b.index(0, 4)
            return LeaderAndIsr.new(dst=v[1], epoch=v[2], leader=v[3], isr=tuple(v[4:end]),
                                    broker_epoch=v[end + 1], meant=v[end + 2],
                                    partition_epoch=v[end + 3] if self.alter_isr else 0)
        if kind == ALTER_PARTITION:
            end = b.index(0, 5)
            return AlterPartition.new(src=v[1], dst=v[2], epoch=v[3], partition_epoch=v[4],
                                      isr=tuple(v[5:end]),
                                      broker_epochs=tuple(v[end + 1:end + 1 + self.n]))
        if kind == ALTER_PARTITION_RESPONSE:
            end = b.index(0, 6)
            return AlterPartitionResponse.new(src=v[1], dst=v[2], epoch=v[3], partition_epoch=v[4],
                                              error=v[5], isr=tuple(v[6:end]),
                                              new_epoch=v[end + 1],
                                              new_partition_epoch=v[end + 2])
        if kind == FETCH:
            return FetchRequest.new(src=v[1], dst=v[2], epoch=v[3], offset=v[4], last_epoch=v[5],
                                    broker_epoch=v[6] if self.kraft else -1)
        if kind == FETCH_RESPONSE:
            end = 6
            records = []
            while b[end]:
                records.append(Record(epoch=v[end], ident=v[end + 1]))
                end += 2
            return FetchResponse.new(src=v[1], dst=v[2], epoch=v[3], offset=v[4], error=v[5],
                                     records=tuple(records), hw=v[end + 1],
                                     diverging_epoch=v[end + 2], diverging_offset=v[end + 3])
        if kind == OFFSETS_FOR_LEADER_EPOCH:
            return OffsetsRequest.new(src=v[1], dst=v[2], epoch=v[3], requested=v[4])
        if kind == STOP_REPLICA:
            return StopReplica.new(dst=v[1], epoch=v[2], broker_epoch=v[3], meant=v[4])
        if kind == CONTROLLED_SHUTDOWN:
            return ControlledShutdown.new(src=v[1], broker_epoch=v[2], incarnation=v[3])
        return OffsetsResponse.new(src=v[1], dst=v[2], epoch=v[3], requested=v[4], error=v[5],
                                   answer_epoch=v[6], end_offset=v[7])

    # -- states ------------------------------------------------------------------------------------
    def _broker(self, b: Broker) -> list[int]:
        if ((not self.alter_isr and (b.partition_epoch or b.alter_pending or b.committed_isr))
                or (b.remote_epochs and not self.kraft) or b.replicas or b.hw_stale):
            raise ValueError("the kernel stores none of remote_epochs, replicas, hw_stale, nor "
                             "without alter-isr partition_epoch, alter_pending, committed_isr: "
                             f"{b}")
        if len(b.log) > self.log_cap or len(b.cache) > self.cache_cap:
            raise ValueError(f"a log or epoch cache past the kernel's bounds: {b}")
        out = [int(b.alive), len(b.log)]
        for rec in b.log:
            out += [_s8(rec.epoch), _s8(rec.ident)]
        out += [0, 0] * (self.log_cap - len(b.log))
        out += [_s8(b.hw), len(b.cache)]
        for epoch, start in b.cache:
            out += [_s8(epoch), _s8(start)]
        out += [0, 0] * (self.cache_cap - len(b.cache))
        remote = b.remote
        if remote and len(remote) != self.n:
            raise ValueError(f"remote LEOs of another width: {b}")
        out += [_s8(b.leader), _s8(b.epoch), _mask(b.isr), b.fetch, int(bool(remote)),
                *(_s8(x) for x in (remote or (0,) * self.n)),
                _s8(b.broker_epoch), int(b.stopping), _s8(b.incarnation), int(b.stale),
                _s8(b.reconciled), b.idle_cause]
        return out

    def pack(self, s: KafkaState) -> bytes:
        c = s.controller
        if ((c.partition_epoch and not self.alter_isr) or (c.elr and not self.kraft) or c.replicas
                or c.adding or c.removing):
            raise ValueError(f"the kernel stores no such controller field here: {c}")
        if (len(s.consumers) != self.consumers or s.reassignments
                or (not self.kraft and (s.unclean_shutdowns or s.clean_shutdowns or s.fences))
                or (not self.alter_isr and (s.alters or s.alter_losses))):
            raise ValueError("the kernel stores no reassignment, KRaft counter or other consumers")
        out: list[int] = []
        for b in s.brokers:
            out += self._memo(0, b, self._broker, b)
        out += [_s8(c.leader), _s8(c.epoch), _mask(c.isr), *(_s8(x) for x in c.registered)]
        if len(s.network) > self.net:
            raise ValueError(f"{len(s.network)} messages in flight, past the kernel's {self.net}")
        slots = sorted(self._memo(1, (type(m), m), self._message, m) for m in s.network)
        packed = bytes(out) + bytes([len(slots)]) + b"".join(slots) + bytes(
            self.msg_bytes * (self.net - len(slots)))
        tail = [s.produced, s.crashes, s.bumps, s.shutdowns, s.bounces, s.losses]
        for ghost in (s.committed, s.acked):
            if len(ghost) > self.log_cap:
                raise ValueError(f"{len(ghost)} committed or acknowledged records, past the "
                                 f"kernel's {self.log_cap}")
            tail.append(len(ghost))
            for triple in ghost:
                tail += [_s8(x) for x in triple]
            tail += [0, 0, 0] * (self.log_cap - len(ghost))
        for b in s.brokers:  # km_pending: (source, request epoch, epoch, end), source -1: none
            tail += [_s8(x) for x in b.pending_diverging or (-1, 0, 0, 0)]
        for b in s.brokers:  # km_alter
            tail += [_s8(b.partition_epoch), int(b.alter_pending), _mask(b.committed_isr)]
        tail += [_s8(c.partition_epoch), s.alters, s.alter_losses]
        if self.kraft:
            tail += self._kraft_tail(s)
        for consumer in s.consumers:
            tail += self._consumer(consumer)
        return packed + bytes(tail)

    def _consumer(self, c: Any) -> list[int]:
        """A consumer (``km_consumer``): its fields, its consumed ghost, its request or answer in
        flight."""
        if len(c.consumed) > self.consumed_cap:
            raise ValueError(f"{len(c.consumed)} consumed records, past the kernel's "
                             f"{self.consumed_cap}")
        out = [_s8(c.leader), _s8(c.epoch), _s8(c.position), _s8(c.last_epoch), int(c.validating),
               len(c.consumed)]
        for triple in c.consumed:
            out += [_s8(x) for x in triple]
        out += [0, 0, 0] * (self.consumed_cap - len(c.consumed))
        out += [int(c.skipped), c.surfaced, c.read_before_unclean]
        # broker, kind, incarnation, epoch, position, last epoch, answered
        request = [0, 0, 0, 0, 0, 0, 0]
        fetch_answer: tuple | None = None
        validate_answer = (0, 0)
        if c.inflight:
            b, kind, incarnation = c.inflight[:3]
            request[:3] = [b, kind, incarnation]
            if kind == CONSUMER_FETCH:
                request[3:5] = c.inflight[3:5]
            elif kind == CONSUMER_FETCH_RESPONSE:
                request[4] = c.inflight[3]
                fetch_answer = c.inflight[4]
                request[6] = int(fetch_answer is not None)
            else:  # CONSUMER_VALIDATE, CONSUMER_VALIDATE_RESPONSE
                request[3], request[5] = c.inflight[3:5]
                if kind == CONSUMER_VALIDATE_RESPONSE and c.inflight[5] is not None:
                    request[6] = 1
                    validate_answer = c.inflight[5]
        out += [_s8(x) for x in request]
        position, last_epoch, read, skip, reset = fetch_answer or (0, 0, (), False, 0)
        out += [_s8(position), _s8(last_epoch), len(read)]
        for triple in read:
            out += [_s8(x) for x in triple]
        out += [0, 0, 0] * (self.log_cap - len(read))
        return out + [int(skip), reset, *(_s8(x) for x in validate_answer)]

    def _unconsumer(self, d: bytes) -> Consumer:
        """The consumer ``_consumer`` packed."""
        count = d[5]
        consumed = tuple(tuple(_signed(x) for x in d[6 + 3 * k:9 + 3 * k]) for k in range(count))
        at = 6 + 3 * self.consumed_cap
        skipped, surfaced, read_before_unclean = bool(d[at]), d[at + 1], d[at + 2]
        q = [_signed(x) for x in d[at + 3:at + 10]]
        at += 10
        b, kind, incarnation, epoch, position, last_epoch, answered = q
        inflight: tuple = ()
        if kind == CONSUMER_FETCH:
            inflight = (b, kind, incarnation, epoch, position)
        elif kind == CONSUMER_FETCH_RESPONSE:
            count = d[at + 2]
            read = tuple(tuple(_signed(x) for x in d[at + 3 + 3 * k:at + 6 + 3 * k])
                         for k in range(count))
            tail = at + 3 + 3 * self.log_cap
            answer = ((_signed(d[at]), _signed(d[at + 1]), read, bool(d[tail]), d[tail + 1])
                      if answered else None)
            inflight = (b, kind, incarnation, position, answer)
        elif kind == CONSUMER_VALIDATE:
            inflight = (b, kind, incarnation, epoch, last_epoch)
        elif kind == CONSUMER_VALIDATE_RESPONSE:
            tail = at + 5 + 3 * self.log_cap
            answer = (_signed(d[tail]), _signed(d[tail + 1])) if answered else None
            inflight = (b, kind, incarnation, epoch, last_epoch, answer)
        return Consumer(leader=_signed(d[0]), epoch=_signed(d[1]), position=_signed(d[2]),
                        last_epoch=_signed(d[3]), validating=bool(d[4]), consumed=consumed,
                        skipped=skipped, surfaced=surfaced,
                        read_before_unclean=read_before_unclean, inflight=inflight)

    def _kraft_tail(self, s: KafkaState) -> list[int]:
        """The KRaft section: each broker's followers' broker epochs (whether it holds them, the
        ``n`` of them), the controller's ELR, the counters unclean_shutdowns, clean_shutdowns,
        fences."""
        out: list[int] = []
        for b in s.brokers:
            epochs = b.remote_epochs
            if epochs and len(epochs) != self.n:
                raise ValueError(f"followers' broker epochs of another width: {b}")
            out += [int(bool(epochs)), *(_s8(x) for x in (epochs or (0,) * self.n))]
        return out + [_mask(s.controller.elr), s.unclean_shutdowns, s.clean_shutdowns, s.fences]

    def _unbroker(self, d: bytes) -> Broker:
        """The broker ``_broker`` packed (its ``km_pending``, ``km_alter`` and KRaft fields, in the
        state's tail, are ``unpack``'s)."""
        n = self.n
        log_len = d[1]
        log = tuple(Record(_signed(d[2 + 2 * k]), _signed(d[3 + 2 * k]))
                    for k in range(log_len))
        p = 2 + 2 * self.log_cap
        hw, cache_len = _signed(d[p]), d[p + 1]
        cache = tuple((_signed(d[p + 2 + 2 * k]), _signed(d[p + 3 + 2 * k]))
                      for k in range(cache_len))
        p += 2 + 2 * self.cache_cap
        leader, epoch, isr, fetch, has_remote = _signed(d[p]), _signed(d[p + 1]), d[p + 2], d[
            p + 3], d[p + 4]
        remote = tuple(_signed(x) for x in d[p + 5:p + 5 + n]) if has_remote else ()
        p += 5 + n
        return Broker(
            alive=bool(d[0]), log=log, hw=hw, cache=cache, leader=leader, epoch=epoch,
            isr=_ids(isr, n), fetch=fetch, remote=remote, broker_epoch=_signed(d[p]),
            stopping=bool(d[p + 1]), incarnation=_signed(d[p + 2]), stale=bool(d[p + 3]),
            reconciled=_signed(d[p + 4]), idle_cause=d[p + 5], pending_diverging=())

    def unpack(self, data: bytes) -> KafkaState:
        n = self.n
        at = 0
        brokers = []
        for _ in range(n):
            d = data[at:at + self.broker_bytes]
            brokers.append(self._memo(2, d, self._unbroker, d))
            at += self.broker_bytes
        controller = Controller(leader=_signed(data[at]), epoch=_signed(data[at + 1]),
                                isr=_ids(data[at + 2], n),
                                registered=tuple(_signed(x) for x in data[at + 3:at + 3 + n]))
        at += 3 + n
        count = data[at]
        at += 1
        mb = self.msg_bytes
        slots = [data[at + k * mb:at + (k + 1) * mb] for k in range(count)]
        network = tuple(self._memo(3, d, self._unmessage, d) for d in slots)
        at += self.net * mb
        produced, crashes, bumps, shutdowns, bounces, losses = data[at:at + 6]
        at += 6
        ghosts = []
        for _ in range(2):  # committed, acked
            count = data[at]
            ghosts.append(tuple(tuple(_signed(x) for x in data[at + 1 + 3 * k:at + 4 + 3 * k])
                                for k in range(count)))
            at += 1 + 3 * self.log_cap
        pending = [tuple(_signed(x) for x in data[at + 4 * i:at + 4 * i + 4]) for i in range(n)]
        at += 4 * n
        alter = [data[at + 3 * i:at + 3 * i + 3] for i in range(n)]
        at += 3 * n
        brokers = [b._replace(pending_diverging=p if p[0] >= 0 else (),
                              partition_epoch=_signed(a[0]), alter_pending=bool(a[1]),
                              committed_isr=_ids(a[2], n))
                   for b, p, a in zip(brokers, pending, alter, strict=True)]
        controller = controller._replace(partition_epoch=_signed(data[at]))
        alters, alter_losses = data[at + 1], data[at + 2]
        state = KafkaState(brokers=tuple(brokers), controller=controller, network=network,
                           produced=produced, crashes=crashes, bumps=bumps, shutdowns=shutdowns,
                           bounces=bounces, losses=losses, committed=ghosts[0], acked=ghosts[1],
                           alters=alters, alter_losses=alter_losses)
        at += 3
        if self.kraft:
            state = self._kraft_unpack(state, data[at:])
            at += self.n * self.kraft_broker_bytes + 4
        if self.consumers:
            cb = self.consumer_bytes
            state = state._replace(consumers=tuple(
                self._unconsumer(data[at + k * cb:at + (k + 1) * cb])
                for k in range(self.consumers)))
        return state

    def _kraft_unpack(self, state: KafkaState, d: bytes) -> KafkaState:
        """``state`` with the KRaft section ``d`` (``_kraft_tail``) read back."""
        n, at = self.n, 0
        brokers = []
        for b in state.brokers:
            epochs = tuple(_signed(x) for x in d[at + 1:at + 1 + n]) if d[at] else ()
            brokers.append(b._replace(remote_epochs=epochs))
            at += self.kraft_broker_bytes
        elr, unclean, clean, fences = d[at:at + 4]
        return state._replace(brokers=tuple(brokers),
                              controller=state.controller._replace(elr=_ids(elr, n)),
                              unclean_shutdowns=unclean, clean_shutdowns=clean, fences=fences)


def consumed_slots(records: int, epochs: int) -> int:
    """A consumer's consumed ghost's slots: every record again after each truncation or reset it
    surfaced (a position moves back only to a log that a new leader epoch changed). A consumer past
    them stops the search (``KM_ERR_CONSUMED``), never a silently different one."""
    return max(records, 1) * (epochs + 2)


def network_slots(brokers: int, epochs: int, crashes: int, bounces: int, shutdowns: int,
                  alter_isr: bool = False) -> int:
    """The messages in flight at most (the network's slots): a request or its answer per (follower,
    leader) pair (a follower sends only when none of the pair is in flight, ``actions_data.busy``);
    per broker a LeaderAndIsr for each election (at most ``epochs``: bumps and controlled shutdowns
    among them), each restart's and each processed bounce's, plus the initial epoch's; a
    ControlledShutdown and a StopReplica a shutdown; with alter-isr an AlterIsr or its answer a
    leader (one at a time: ``_alter_in_flight``). A state past them stops the search
    (``KM_ERR_NETWORK``), never a silently different one."""
    return (brokers * (brokers - 1) + brokers * (epochs + crashes + bounces + 2) + 2 * shutdowns
            + (brokers if alter_isr else 0))


def kraft_network_slots(model: Any) -> int:
    """The messages in flight at most on a KRaft row: a request or its answer per (follower, leader)
    pair; per broker a LeaderAndIsr for each partition change (at most ``epochs`` elections, one an
    AlterPartition or a controlled shutdown, three a death or a fence: the fencing, the unclean
    restart's change and the restart's own), plus the initial epoch's; an AlterPartition or its
    answer per leader (``_alter_in_flight``: one at a time). A state past them stops the search
    (``KM_ERR_NETWORK``), never a silently different one."""
    n = model.brokers
    deaths = model.crashes + model.unclean_shutdowns + model.fences + model.clean_shutdowns
    changes = model.epochs + model.alters + model.shutdowns + 3 * deaths + 2
    return n * (n - 1) + n * changes + n


def unsupported_reason(model: Any) -> str | None:
    """Why this configuration of the Kafka model is out of the kernel's reach, or None."""
    f = model.features
    for flag in UNCOMPILED_FLAGS:
        if getattr(f, flag):
            return f"the kernel does not compile {flag.replace('_', '-')}"
    if model.hw_events:
        return "the kernel does not compile hw_events=1 (KAFKA-13091's stale HW)"
    if f.kraft:
        for bound, why in KRAFT_UNCOMPILED_BOUNDS.items():
            value = getattr(model, bound)
            if value:
                return f"the kernel does not compile the bound {bound}={value}: {why}"
    if model.own_steps:
        return ("the kernel does not compile an action declared with its own function "
                "(Declared.steps)")
    if model.brokers > MAX_BROKERS:
        return f"brokers={model.brokers} is past the kernel's {MAX_BROKERS}"
    row = model.what_runs()["row"]  # an alias (kip-320) or a release number (2.3.1) is its row's
    if row not in PROVEN_ROWS:
        return f"the kernel is proven on {', '.join(PROVEN_ROWS)} only, not {row}"
    # a switched flag (a matrix story's fix, a --feature) is compiled like the row's own: every flag
    # a proven row can switch, alone and in combinations, is proven (tests/test_kafka_kernel.py,
    # switchable_flags)
    return None


def switchable_flags(protocol: str) -> tuple[str, ...]:
    """The flags (``-`` names) a ``--feature`` or a matrix story can switch on ``protocol`` (each
    against its value there) that keep the configuration compiled: every flag the row accepts
    switched (``protocols.resolve``), less those whose rules the C file does not compile."""
    from spec.errors import UsageError
    from spec.kafka.protocols import FLAGS as ALL_FLAGS

    base = resolve(protocol)
    out = []
    for name in ALL_FLAGS:
        try:
            switched = resolve(protocol, {name: not base.flag(name)})
        except UsageError:  # its mechanism is absent on this row
            continue
        if not any(getattr(switched, flag) for flag in UNCOMPILED_FLAGS):
            out.append(name)
    return tuple(out)


def kernel(model: Any) -> KernelSource:
    """The Kafka model's kernel at ``model``'s bounds and flags."""
    f = model.features
    kraft = bool(f.kraft)
    net = (kraft_network_slots(model) if kraft else
           network_slots(model.brokers, model.epochs, model.crashes, model.bounces, model.shutdowns,
                         f.zookeeper_alter_isr))
    packing = Packing(model.brokers, model.records, model.epochs, net, f.zookeeper_alter_isr,
                      kraft=kraft, consumers=model.consumers)
    tables = [getattr(model, name, None) for name in KINDS]

    def action(code: int) -> Action:
        table = tables[code >> 24]
        params = (code >> 16 & 0xFF, code >> 8 & 0xFF)
        entry = table[params[0]]
        return entry if isinstance(entry, Action) else entry[params[1]]

    # the compiled constants shape the state (or choose the KRaft section); the rest are run-time
    # constants (kernel.c's KM_CONFIG): one compiled library serves all their values
    defines = [("KM_N", model.brokers), ("KM_R", model.records), ("KM_E", model.epochs),
               ("KM_NET", net), ("KM_CONSUMERS", model.consumers),
               ("KM_CONSUMED", packing.consumed_cap if model.consumers else 1)]
    defines += [(f"KM_F_{flag.upper()}", int(bool(getattr(f, flag)))) for flag in LAYOUT_FLAGS]
    config = [(name, int(getattr(model, name))) for name in RUNTIME_BOUNDS[:-1]]
    # without a consumer, neutral values (as the consumer flags below)
    config.append(("consumer_inflight", model.consumer_inflight if model.consumers else 0))
    config += [(flag, int(bool(getattr(f, flag))
                          and (model.consumers > 0 or flag not in CONSUMER_FLAGS)))
               for flag in FLAGS if flag not in LAYOUT_FLAGS]
    return KernelSource(source=SOURCE, defines=tuple(defines), config=tuple(config),
                        state_bytes=packing.state_bytes,
                        pack=packing.pack, unpack=packing.unpack, action=action,
                        invariants=INVARIANTS, symmetry=True, unsupported=unsupported_reason(model),
                        reductions=("dead",))
