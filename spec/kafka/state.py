"""The state of the cluster: brokers, the controller, the messages in flight and the ghosts.

Every value is a NamedTuple of ints, bools and tuples (see ``spec.model``): -1 stands for "none"
(no leader, no epoch yet, UNDEFINED offset). Brokers are numbered 0..n-1 and every broker holds
a replica of the one partition.

Messages are one NamedTuple class per request or response type. Each starts with a ``kind``
field (a distinct small int), so two messages of different types never compare equal, and the
network is a sorted tuple of them: a canonical set in which equal situations hash equal.
"""

from __future__ import annotations

from typing import NamedTuple

from spec.kafka.log import Cache, Log, Record

# -- fetcher states ----------------------------------------------------------------------------------
NO_FETCHER = 0  # leader, offline, or not told yet
TRUNCATING = 1  # must find its truncation point (OffsetsForLeaderEpoch) before fetching
FETCHING = 2  # fetching from its leader
FETCHER_NAMES = ("none", "truncating", "fetching")

# -- message kinds (the control-plane issue adds StopReplica, ControlledShutdown, ...) ------------------
LEADER_AND_ISR = 1
FETCH = 2
FETCH_RESPONSE = 3
OFFSETS_FOR_LEADER_EPOCH = 4
OFFSETS_FOR_LEADER_EPOCH_RESPONSE = 5
KIND_NAMES = {
    LEADER_AND_ISR: "LeaderAndIsr",
    FETCH: "Fetch",
    FETCH_RESPONSE: "FetchResponse",
    OFFSETS_FOR_LEADER_EPOCH: "OffsetsForLeaderEpoch",
    OFFSETS_FOR_LEADER_EPOCH_RESPONSE: "OffsetsForLeaderEpochResponse",
}

# -- error codes carried by responses -----------------------------------------------------------------
NONE = 0
NOT_LEADER = 1  # NOT_LEADER_FOR_PARTITION
FENCED_LEADER_EPOCH = 2
UNKNOWN_LEADER_EPOCH = 3
OFFSET_OUT_OF_RANGE = 4
ERROR_NAMES = ("NONE", "NOT_LEADER", "FENCED_LEADER_EPOCH", "UNKNOWN_LEADER_EPOCH", "OFFSET_OUT_OF_RANGE")


class Broker(NamedTuple):
    alive: bool
    log: Log  # survives a crash (unless lossy-crash takes its unflushed tail)
    hw: int  # the high watermark; its checkpoint survives a crash
    cache: Cache  # leader epoch cache ((epoch, start offset), ...); survives a crash
    # -- in memory: lost by a crash --
    leader: int  # the leader it last learned from a LeaderAndIsr (-1: none)
    epoch: int  # the leader epoch it last learned (-1: none)
    isr: tuple[int, ...]  # the ISR it last learned (a leader keeps it current as it shrinks/expands)
    fetch: int  # NO_FETCHER, TRUNCATING or FETCHING
    remote: tuple[int, ...]  # as leader: each replica's LEO from its last fetch (-1 unknown); () otherwise
    # -- ghost --
    incarnation: int  # how many times it restarted (room for broker epochs and stale-request checks)


class Controller(NamedTuple):
    """What ZooKeeper holds for the partition: the controller's view."""

    leader: int
    epoch: int
    isr: tuple[int, ...]  # sorted


class LeaderAndIsr(NamedTuple):
    kind: int  # LEADER_AND_ISR
    dst: int
    epoch: int  # the new leader epoch
    leader: int
    isr: tuple[int, ...]


class FetchRequest(NamedTuple):
    kind: int  # FETCH
    src: int  # the follower
    dst: int  # the broker it believes leads
    epoch: int  # its current leader epoch (KIP-320; -1 before)
    offset: int  # fetch offset (its LEO)
    last_epoch: int  # epoch of its last fetched record (truncate-on-fetch; -1 before)


class FetchResponse(NamedTuple):
    kind: int  # FETCH_RESPONSE
    src: int  # the leader
    dst: int  # the follower
    epoch: int  # the request's epoch
    offset: int  # the request's fetch offset
    error: int
    records: Log  # the leader's log from the fetch offset
    hw: int  # the leader's high watermark (OFFSET_OUT_OF_RANGE: the leader's LEO)
    diverging_epoch: int  # truncate-on-fetch: the diverging (epoch, end offset), -1 if none
    diverging_offset: int


class OffsetsRequest(NamedTuple):
    kind: int  # OFFSETS_FOR_LEADER_EPOCH
    src: int
    dst: int
    epoch: int  # current leader epoch (KIP-320; -1 before)
    requested: int  # the follower's latest epoch


class OffsetsResponse(NamedTuple):
    kind: int  # OFFSETS_FOR_LEADER_EPOCH_RESPONSE
    src: int
    dst: int
    epoch: int  # the request's current leader epoch
    requested: int
    error: int
    answer_epoch: int  # KIP-279: the epoch the offset is for (-1 before, or UNDEFINED)
    end_offset: int  # -1: UNDEFINED_EPOCH_OFFSET


Message = LeaderAndIsr | FetchRequest | FetchResponse | OffsetsRequest | OffsetsResponse


class KafkaState(NamedTuple):
    brokers: tuple[Broker, ...]
    controller: Controller
    network: tuple[Message, ...]  # sorted: the messages in flight, as a set
    produced: int  # records produced so far (bounded by max_records)
    crashes: int  # crashes so far (bounded by max_crashes)
    #: ghost: (offset, epoch, ident) of every record a leader's HW has passed, sorted
    committed: tuple[tuple[int, int, int], ...]


STATE_TYPES: tuple[type, ...] = (
    KafkaState,
    Broker,
    Record,
    Controller,
    LeaderAndIsr,
    FetchRequest,
    FetchResponse,
    OffsetsRequest,
    OffsetsResponse,
)


def leo(broker: Broker) -> int:
    return len(broker.log)
