"""What a client of the partition is promised (``spec.kafka.clients``): properties about the
producer's acknowledgements and the consumers' reads, each vacuous when the clients are off
(``acks=0``, ``consumers=0``).

- ``acknowledged-durable``: a record the producer was told is written is at its offset in the log of
  the current (settled) leader. Kafka's documentation of ``acks``: with acks=1 "the leader will
  write the record to its local log but will respond without awaiting full acknowledgement from all
  followers. In this case should the leader fail immediately after acknowledging the record but
  before the followers have replicated it then the record will be lost"; with acks=all "the record
  will not be lost as long as at least one in-sync replica remains alive". Expected to break with
  acks=1 on a leader fail-over, and with acks=all exactly where replication loses a committed
  record: in ``kmc matrix`` (acks=all, two records) at 0.10.2 (KIP-101's story) and 2.8.0
  (KAFKA-13141), and with ``unclean=on``; it holds in the other rows.
- ``no-silent-skip``: a consumer never reads on past records it did not read without a reset or a
  truncation it surfaced. KIP-320, "Consumer Handling": before it, a consumer whose log was
  truncated and rewritten "will just miss whatever data had been written between the truncation
  point and its fetch offset"; from 2.3.0 (KAFKA-7747) it validates its position after a leader
  change and raises ``LogTruncationException`` or resets to the divergence point. Reading on
  includes an empty answer without error at a position past a rewritten record. Not a default
  ``kmc matrix`` column (it needs two records); by name at its bounds it breaks at 0.10.2 (KIP-101),
  at 2.2.0 with unclean election (fixed by KAFKA-7747) and at 2.8.0 (KAFKA-13141's lost commit,
  which the validation does not see).
- ``consumed-stays``: a record a consumer read is in the log of every later (settled) leader, at its
  offset, unless an unclean election happened and was surfaced: the ghost ``read_before_unclean`` of
  a consumer counts the records it had read when the last unclean election happened, and those may
  vanish (the trade unclean election makes, KIP-320's starting point) as long as the consumer does
  not read on past the loss silently (``skipped``; from 2.3.0 it validates its position and surfaces
  the truncation instead). A consumer reads below the HW only, so with clean elections this is
  committed-durable as a consumer sees it: expected to break wherever committed data is lost
  (0.10.2, KAFKA-13141), and where a consumer reads from a follower whose HW covers an uncommitted
  record (KIP-392 with KAFKA-14704).
"""

from __future__ import annotations

from checker.invariant import Invariant
from invariants.kafka_durability import (
    current_leader,
    first_missing_at_leader,
    loss_distance,
    record_at,
)
from invariants.registry import register


# -- acknowledged-durable --------------------------------------------------------------------------
def _first_lost_ack(state) -> tuple[int, tuple[int, int, int]] | None:
    return first_missing_at_leader(state, state.acked) if state.acked else None


def acknowledged_durable(state) -> bool:
    return _first_lost_ack(state) is None


def _explain_ack(state) -> str:
    found = _first_lost_ack(state)
    if found is None:
        return "every acknowledged record is in the current leader's log"
    i, (offset, epoch, ident) = found
    there = record_at(state.brokers[i].log, offset)
    return (f"the producer was told record {ident} of epoch {epoch} is written at offset {offset}, "
            f"but broker {i}, leader in epoch {state.controller.epoch}, has {there} there: an "
            "acknowledged write is lost")


ACKNOWLEDGED_DURABLE = register(
    "kafka",
    Invariant(
        "acknowledged-durable",
        "every record a producer was told is written (acks=1 on append, acks=all once the HW "
        "passed it) is at its offset in the current leader's log (Kafka's acks documentation; "
        "vacuous with acks=0)",
        acknowledged_durable,
        explain=_explain_ack,
        distance=lambda state: loss_distance(state, state.acked),
    ),
)


# -- no-silent-skip --------------------------------------------------------------------------------
def _first_skipper(state) -> int | None:
    for c, consumer in enumerate(state.consumers):
        if consumer.skipped:
            return c
    return None


def no_silent_skip(state) -> bool:
    for consumer in state.consumers:
        if consumer.skipped:
            return False
    return True


def _explain_skip(state) -> str:
    c = _first_skipper(state)
    if c is None:
        return "no consumer read on past records it did not read"
    consumer = state.consumers[c]
    return (f"consumer {c} is at offset {consumer.position}: the log below its position was "
            "truncated and rewritten after it read there, and it read on without a reset or "
            "LogTruncationException, missing what was written between the truncation point and "
            "its fetch offset (KIP-320)")


NO_SILENT_SKIP = register(
    "kafka",
    Invariant(
        "no-silent-skip",
        "a consumer never reads on past records it did not read without a reset or a truncation it "
        "surfaced (KIP-320, Consumer Handling; vacuous with consumers=0)",
        no_silent_skip,
        explain=_explain_skip,
    ),
)


# -- consumed-stays --------------------------------------------------------------------------------
def _first_vanished(state) -> tuple[int, int, tuple[int, int, int]] | None:
    if not state.consumers:
        return None
    i = current_leader(state)
    if i < 0:
        return None
    log = state.brokers[i].log
    for c, consumer in enumerate(state.consumers):
        # read before the last unclean election and not read on past silently: the loss is unclean
        # election's
        excused = 0 if consumer.skipped else consumer.read_before_unclean
        for entry in consumer.consumed[excused:]:
            offset, epoch, ident = entry
            if offset >= len(log) or log[offset].epoch != epoch or log[offset].ident != ident:
                return c, i, entry
    return None


def consumed_stays(state) -> bool:
    return _first_vanished(state) is None


def _explain_vanished(state) -> str:
    found = _first_vanished(state)
    if found is None:
        return "every record a consumer read is in the current leader's log"
    c, i, (offset, epoch, ident) = found
    there = record_at(state.brokers[i].log, offset)
    consumer = state.consumers[c]
    why = ("it read on past the loss without being told (a silent skip)" if consumer.skipped and
           consumer.read_before_unclean else "no unclean election happened since it read it")
    return (f"consumer {c} read record {ident} of epoch {epoch} at offset {offset}, but broker "
            f"{i}, leader in epoch {state.controller.epoch}, has {there} there, and {why}")


CONSUMED_STAYS = register(
    "kafka",
    Invariant(
        "consumed-stays",
        "every record a consumer read is at its offset in the current leader's log, unless an "
        "unclean election happened after it read it and it did not read on silently past the loss "
        "(KIP-320; vacuous with consumers=0)",
        consumed_stays,
        explain=_explain_vanished,
    ),
)
