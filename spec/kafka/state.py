"""The state of the cluster: brokers, the controller, the messages in flight and the ghosts.

Every value is a NamedTuple of ints, bools and tuples (see ``spec.model``): -1 stands for "none"
(no leader, no epoch yet, UNDEFINED offset). Brokers are numbered 0..n-1 and every broker holds
a replica of the one partition.

Messages are one NamedTuple class per request or response type. Each starts with a ``kind`` field (a
distinct small int), so two messages of different types never compare equal, and the network is a
sorted tuple of them: a canonical set in which equal situations hash equal. The model builds a
message with its fields named, the kind implied:
``FetchRequest.new(src=i, dst=leader, epoch=..., offset=..., last_epoch=...)``; every type has
``with_(**changes)`` for a copy with named fields changed.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

from spec.fields import checked_new, fast_fields
from spec.kafka.log import Cache, Log, Record
from spec.model import INLINE, StateParts

# -- fetcher states --------------------------------------------------------------------------------
NO_FETCHER = 0  # leader, offline, or not told yet
TRUNCATING = 1  # must find its truncation point (OffsetsForLeaderEpoch) before fetching
FETCHING = 2  # fetching from its leader
#: KIP-279 (2.0.0+): truncating again after an intermediate truncation (an answer with an epoch it
#: did not know): the fetch state's offset is that truncation offset, its LEO, where TRUNCATING's is
#: the HW it was created at
#: (``AbstractFetcherThread.updateFetchOffsetAndMaybeMarkTruncationComplete``); what an UNDEFINED
#: answer truncates to
TRUNCATING_AGAIN = 3
FETCHER_NAMES = ("none", "truncating", "fetching", "truncating-again")

NO_LEADER = -1  # the partition's leader in an offline partition
DEAD = -1  # Controller.registered of a broker whose death the controller has processed

# -- message kinds ---------------------------------------------------------------------------------
LEADER_AND_ISR = 1
FETCH = 2
FETCH_RESPONSE = 3
OFFSETS_FOR_LEADER_EPOCH = 4
OFFSETS_FOR_LEADER_EPOCH_RESPONSE = 5
STOP_REPLICA = 6
CONTROLLED_SHUTDOWN = 7
ALTER_PARTITION = 8  # KRaft (``spec.kafka.actions_alter_partition``): leader -> controller
ALTER_PARTITION_RESPONSE = 9  # KRaft: controller -> leader
KIND_NAMES = {
    LEADER_AND_ISR: "LeaderAndIsr",
    FETCH: "Fetch",
    FETCH_RESPONSE: "FetchResponse",
    OFFSETS_FOR_LEADER_EPOCH: "OffsetsForLeaderEpoch",
    OFFSETS_FOR_LEADER_EPOCH_RESPONSE: "OffsetsForLeaderEpochResponse",
    STOP_REPLICA: "StopReplica",
    CONTROLLED_SHUTDOWN: "ControlledShutdown",
    ALTER_PARTITION: "AlterPartition",
    ALTER_PARTITION_RESPONSE: "AlterPartitionResponse",
}
#: the controller-to-broker requests: one FIFO channel per broker, kept by the controller across a
#: bounce it has not noticed yet (its sender thread reconnects to the new incarnation)
CONTROL_KINDS = (LEADER_AND_ISR, STOP_REPLICA)
#: broker-to-broker requests and responses: lost when either end crashes or bounces
DATA_KINDS = (FETCH, FETCH_RESPONSE, OFFSETS_FOR_LEADER_EPOCH, OFFSETS_FOR_LEADER_EPOCH_RESPONSE)

# -- why a live replica has no fetcher state (ghost ``idle_cause``: read by invariants only) -------
IDLE_NONE = 0  # it has a fetcher state, or leads, or is down
# a FENCED_LEADER_EPOCH answer removed the partition from its fetcher (KIP-320, 2.1.0)
IDLE_FENCED = 1
IDLE_STOPPED = 2  # a StopReplica removed it
IDLE_RESTARTED = 3  # it (re)started and has not applied a LeaderAndIsr since
IDLE_CAUSE_NAMES = ("none", "fenced", "stopped", "restarted")

# -- error codes carried by responses --------------------------------------------------------------
NONE = 0
NOT_LEADER = 1  # NOT_LEADER_FOR_PARTITION
FENCED_LEADER_EPOCH = 2
UNKNOWN_LEADER_EPOCH = 3
OFFSET_OUT_OF_RANGE = 4
# KRaft AlterPartition: the request's partition epoch is older than the controller's
INVALID_UPDATE_VERSION = 5
# KRaft AlterPartition (KIP-841, 3.3.0+): a proposed ISR member is fenced or has another broker
# epoch
INELIGIBLE_REPLICA = 6
#: ZooKeeper-mode AlterIsr (alter-isr, 2.7.0+): the top-level error when the sender's broker epoch
#: is not the one the controller registered (``KafkaController.processAlterIsr``)
STALE_BROKER_EPOCH = 7
ERROR_NAMES = ("NONE", "NOT_LEADER", "FENCED_LEADER_EPOCH", "UNKNOWN_LEADER_EPOCH",
               "OFFSET_OUT_OF_RANGE", "INVALID_UPDATE_VERSION", "INELIGIBLE_REPLICA",
               "STALE_BROKER_EPOCH")


class Broker(NamedTuple):
    alive: bool
    log: Log  # survives a crash (unless lossy-crash takes its unflushed tail)
    hw: int  # the high watermark; its checkpoint survives a crash
    cache: Cache  # leader epoch cache ((epoch, start offset), ...); survives a crash
    # -- in memory: lost by a crash --
    leader: int  # the leader it last learned from a LeaderAndIsr (-1: none)
    epoch: int  # the leader epoch it last learned (-1: none)
    # the ISR it last learned (a leader keeps it current as it shrinks/expands)
    isr: tuple[int, ...]
    fetch: int  # NO_FETCHER, TRUNCATING, FETCHING or TRUNCATING_AGAIN
    # as leader: each replica's LEO from its last fetch (-1 unknown); () otherwise
    remote: tuple[int, ...]
    # KIP-380 generation: given by the registration of this incarnation, increases
    broker_epoch: int
    # it sent a ControlledShutdown in this incarnation (its replicas are being stopped)
    stopping: bool
    # (KRaft rows: a dead broker with ``stopping`` stopped cleanly: its clean shutdown file holds
    # its broker epoch)
    # -- ghosts (read by invariants only, never by the protocol) --
    incarnation: int  # how many times it restarted
    stale: bool  # it applied a control request meant for an earlier incarnation of itself (sticky)
    #: the leader epoch in which it last reconciled its log with its leader's: a leader in its own
    #: epoch from becoming leader; a follower from the first fetch answer it appended from (no
    #: error, no diverging epoch) in that epoch. -1: not since its last restart. Log Matching counts
    #: a follower as the leader's follower only once it reconciled in the leader's epoch (the seed's
    #: "pairs")
    reconciled: int
    idle_cause: int  # why it has no fetcher state (IDLE_*): tells a fencing stall from other stalls
    #: truncate-on-fetch (2.8+): a diverging epoch taken from a fetch answer under the fetcher's
    #: lock and not yet applied: (the leader that answered, the request's leader epoch, diverging
    #: epoch, its end offset), or (). The truncation is a separate step
    #: (``AbstractFetcherThread.truncateOnFetchResponse``, after the lock was released)
    pending_diverging: tuple[int, ...]
    # -- KRaft rows and the ZooKeeper rows with alter-isr (``spec.kafka.actions_alter_partition``);
    # -- inert elsewhere --
    #: the partition epoch of the partition state it last learned (KRaft PartitionRecord; on a
    #: ZooKeeper row with alter-isr the zkVersion of the partition state znode, which 2.7 to 3.2
    #: call ``zkVersion`` and 3.3+ partitionEpoch)
    partition_epoch: int = 0
    #: as leader: an AlterPartition (AlterIsr) it sent is not answered yet (``PendingExpandIsr`` /
    #: ``PendingShrinkIsr``); ``isr`` is then the maximal ISR and ``committed_isr`` the last
    #: committed one it reverts to
    alter_pending: bool = False
    committed_isr: tuple[int, ...] = ()
    #: as leader (KIP-903, 3.5.0+): each replica's broker epoch from its last fetch (-1: unknown);
    #: () otherwise
    remote_epochs: tuple[int, ...] = ()
    #: KRaft with ``reassignments`` (``spec.kafka.actions_reassignment``): the partition's replicas
    #: as the broker last replayed them (``PartitionRegistration.replicas``, sorted); () while no
    #: reassignment ever changed them: every broker
    replicas: tuple[int, ...] = ()
    #: as leader, with ``hw_events=1`` on a release without KAFKA-13091's fix (2.7 to 3.0): an
    #: AlterIsr committed an ISR change and the leader has not recomputed its HW since
    #: (``handleAlterIsrResponse`` does not call ``maybeIncrementLeaderHW``); its next append, a
    #: fetch that moves a follower's LEO or a LeaderAndIsr does
    hw_stale: bool = False
    #: how traces show and exchange the fields (read by ``traces`` only; see ``KafkaState``)
    GHOST_FIELDS = ("incarnation", "stale", "reconciled", "idle_cause")
    SET_FIELDS = ("isr", "committed_isr", "replicas")
    MAP_FIELDS = ("remote", "remote_epochs")


class Controller(NamedTuple):
    """What ZooKeeper holds for the partition: the controller's view."""

    leader: int
    epoch: int
    isr: tuple[int, ...]  # sorted
    #: the broker epoch of each broker's registration the controller last processed, DEAD (-1) once
    #: it processed the broker's death; a broker that re-registered (bounced) while the controller
    #: was not looking has a newer one until the controller processes the broker change, and a
    #: broker that died keeps its epoch here until the controller processes the failure
    registered: tuple[int, ...]
    # -- KRaft rows only (``spec.kafka.actions_kraft``): on them ``registered`` is DEAD while the
    # -- broker is fenced (its heartbeats stopped) and its registration's broker epoch while it is
    # -- unfenced --
    #: bumped by every partition change (PartitionChangeRecord); on a ZooKeeper row with alter-isr
    #: the zkVersion of the partition state znode, bumped by every write of it (elections, ISR
    #: changes)
    partition_epoch: int = 0
    elr: tuple[int, ...] = ()  # KIP-966 eligible leader replicas, sorted
    #: KRaft with ``reassignments`` (``spec.kafka.actions_reassignment``): the partition's replicas,
    #: adding replicas and removing replicas (``PartitionRegistration.replicas`` /
    #: ``addingReplicas`` / ``removingReplicas``), sorted; ``replicas`` is () while no reassignment
    #: ever changed it: every broker
    replicas: tuple[int, ...] = ()
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()
    SET_FIELDS = ("isr", "elr", "replicas", "adding", "removing")
    MAP_FIELDS = ("registered",)


class LeaderAndIsr(NamedTuple):
    kind: int  # LEADER_AND_ISR
    dst: int
    epoch: int  # the new leader epoch
    leader: int
    isr: tuple[int, ...]
    broker_epoch: int  # KIP-380: the destination's broker epoch as the controller knows it
    meant: int  # ghost: the incarnation of the destination the sender meant
    #: KRaft rows: the partition epoch of the change (on KRaft a LeaderAndIsr stands for the
    #: PartitionRecord or PartitionChangeRecord the broker replays from the metadata log); on the
    #: ZooKeeper rows with alter-isr the zkVersion (``LeaderAndIsrPartitionState.zkVersion``); 0 on
    #: the other ZooKeeper rows
    partition_epoch: int = 0
    #: KRaft with ``reassignments``: the partition's replicas after the change (() while no
    #: reassignment ever changed them: every broker); a broker not among them deletes its replica
    #: (``spec.kafka.actions_reassignment``)
    replicas: tuple[int, ...] = ()
    GHOST_FIELDS = ("meant",)
    SET_FIELDS = ("isr", "replicas")


class StopReplica(NamedTuple):
    """Sent to a broker whose controlled shutdown the controller processes (delete=false)."""

    kind: int  # STOP_REPLICA
    dst: int
    # the controller's leader epoch when sent: orders the channel (the broker does not read it)
    epoch: int
    broker_epoch: int  # KIP-380: the destination's broker epoch as the controller knows it
    meant: int  # ghost: the incarnation of the destination the sender meant
    GHOST_FIELDS = ("meant",)


class ControlledShutdown(NamedTuple):
    """From a broker to the controller: move my leaderships away and stop my replicas."""

    kind: int  # CONTROLLED_SHUTDOWN
    src: int
    broker_epoch: int  # KIP-380: the sender's broker epoch
    incarnation: int  # ghost: the sender's incarnation
    GHOST_FIELDS = ("incarnation",)


class FetchRequest(NamedTuple):
    kind: int  # FETCH
    src: int  # the follower
    dst: int  # the broker it believes leads
    epoch: int  # its current leader epoch (KIP-320; -1 before)
    offset: int  # fetch offset (its LEO)
    last_epoch: int  # epoch of its last fetched record (truncate-on-fetch; -1 before)
    # KIP-903 (3.5.0, FetchRequest v15 ReplicaState.ReplicaEpoch): the follower's broker epoch
    broker_epoch: int = -1


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


class AlterPartition(NamedTuple):
    """From a leader to the controller (``AlterPartitionManager``; on the ZooKeeper rows with
    alter-isr the AlterIsr request of 2.7 to 3.2, ``AlterIsrManager``): the ISR it proposes."""

    kind: int  # ALTER_PARTITION
    src: int  # the leader
    dst: int  # -1: the controller
    epoch: int  # the leader's leader epoch
    partition_epoch: int  # the partition epoch of the leader's last committed state
    isr: tuple[int, ...]  # the proposed ISR
    #: KIP-903 (AlterPartition v3, 3.5.0): the broker epoch of each proposed member by broker id
    #: (-1: not checked); on the ZooKeeper rows only the sender's own entry is set: the request's
    #: ``brokerEpoch`` (AlterIsrRequestData)
    broker_epochs: tuple[int, ...]
    SET_FIELDS = ("isr",)
    MAP_FIELDS = ("broker_epochs",)


class AlterPartitionResponse(NamedTuple):
    """The controller's answer to an AlterPartition (AlterIsr on the ZooKeeper rows)."""

    kind: int  # ALTER_PARTITION_RESPONSE
    src: int  # -1: the controller
    dst: int  # the leader
    epoch: int  # the request's leader epoch
    partition_epoch: int  # the request's partition epoch
    # NONE, FENCED_LEADER_EPOCH, INVALID_UPDATE_VERSION, INELIGIBLE_REPLICA, STALE_BROKER_EPOCH
    # (ZooKeeper)
    error: int
    isr: tuple[int, ...]  # NONE: the committed ISR
    new_epoch: int  # NONE: the leader epoch after the change
    new_partition_epoch: int  # NONE: the partition epoch after the change
    SET_FIELDS = ("isr",)


Message = (LeaderAndIsr | StopReplica | ControlledShutdown | FetchRequest | FetchResponse
           | OffsetsRequest | OffsetsResponse
           | AlterPartition | AlterPartitionResponse)


class Consumer(NamedTuple):
    """A consumer of the partition (``spec.kafka.clients``): where it reads and what it believes."""

    leader: int  # the leader it believes in (its metadata), -1: none known
    epoch: int  # that leader's epoch as its metadata says (-1: unknown)
    position: int  # the offset of the next record it reads
    last_epoch: int  # the epoch of the last record it consumed (-1: none); KIP-320's offsetEpoch
    validating: bool  # 2.3+ (KIP-320): its position awaits validation with OffsetsForLeaderEpoch
    #: ghosts (read by invariants only): what it consumed, ((offset, epoch, ident), ...) in order;
    #: whether it moved its position past records it did not read without a reset it knows of (a
    #: silent skip); whether it surfaced a truncation or reset (LogTruncationException, or
    #: auto.offset.reset logged)
    consumed: tuple[tuple[int, int, int], ...]
    skipped: bool
    surfaced: int
    #: ghost: how many of ``consumed`` it had read when the last unclean election happened (0: none
    #: since it started): those records may vanish from the log (the trade unclean election makes),
    #: the later ones not
    read_before_unclean: int = 0
    #: with the constant consumer_inflight=1: its outstanding request or the answer to it, (broker,
    #: kind, the broker's incarnation, ...) (``spec.kafka.clients``), or (); always () when requests
    #: and answers are one step
    inflight: tuple = ()
    GHOST_FIELDS = ("consumed", "skipped", "surfaced", "read_before_unclean")


class KafkaState(NamedTuple):
    brokers: tuple[Broker, ...]
    controller: Controller
    network: tuple[Message, ...]  # sorted: the messages in flight, as a set
    produced: int  # records produced so far (bounded by the model's records)
    crashes: int  # crashes so far (bounded by max_crashes)
    bumps: int  # epoch bumps with an unchanged leader so far (bounded by max_bumps)
    shutdowns: int  # ControlledShutdown requests sent so far (bounded by max_shutdowns)
    bounces: int  # bounces the controller did not see at once, so far (bounded by max_bounces)
    losses: int  # control requests lost so far (bounded by max_losses)
    #: ghost: (offset, epoch, ident) of every record a leader's HW has passed, sorted
    committed: tuple[tuple[int, int, int], ...]
    # -- clients (``spec.kafka.clients``; empty unless the bounds switch them on, so a state without
    # -- clients is the replica-only state) --
    #: ghost: (offset, epoch, ident) of every record a producer was told is written (acks=1: on
    #: append, acks=all: once the HW passed it), sorted
    acked: tuple[tuple[int, int, int], ...] = ()
    #: the consumers (bound ``consumers``), by id
    consumers: tuple[Consumer, ...] = ()
    #: KRaft (``spec.kafka.actions_broker_lifecycle``): unclean shutdowns so far (bound
    #: ``unclean_shutdowns``; a disk loss is one that keeps nothing)
    unclean_shutdowns: int = 0
    alters: int = 0  # KRaft: AlterPartition requests sent so far (bound ``alters``)
    # KRaft: AlterPartition answers lost (the request sent again) so far (bound ``alter_losses``)
    alter_losses: int = 0
    clean_shutdowns: int = 0  # KRaft: clean shutdowns so far (bound ``clean_shutdowns``)
    fences: int = 0  # KRaft: running brokers fenced for missed heartbeats so far (bound ``fences``)
    # KRaft: partition reassignments started so far (bound ``reassignments``)
    reassignments: int = 0
    #: how traces show and exchange the fields (read by ``traces`` only, never by the checker):
    #: ``kmc trace show`` hides bound counters and ghosts unless ``--all``; ITF writes a sorted
    #: tuple that stands for a set as ``#set`` and a tuple indexed by broker id as ``#map``
    BOOKKEEPING_FIELDS = ("produced", "crashes", "bumps", "shutdowns", "bounces", "losses",
                          "unclean_shutdowns", "alters", "alter_losses", "clean_shutdowns",
                          "fences", "reassignments")
    GHOST_FIELDS = ("committed", "acked")
    SET_FIELDS = ("network", "committed", "acked")
    MAP_FIELDS = ("brokers",)


STATE_TYPES: tuple[type, ...] = (
    KafkaState,
    Broker,
    Record,
    Controller,
    LeaderAndIsr,
    StopReplica,
    ControlledShutdown,
    FetchRequest,
    FetchResponse,
    OffsetsRequest,
    OffsetsResponse,
    Consumer,
    AlterPartition,
    AlterPartitionResponse,
)
#: the model reads its fields by name at the cost of an index (``spec.fields``; CPython, else
#: unchanged)
FAST_FIELDS = all([fast_fields(cls) for cls in STATE_TYPES])


_new = tuple.__new__
_MESSAGE_CLASS = {
    LEADER_AND_ISR: LeaderAndIsr,
    FETCH: FetchRequest,
    FETCH_RESPONSE: FetchResponse,
    OFFSETS_FOR_LEADER_EPOCH: OffsetsRequest,
    OFFSETS_FOR_LEADER_EPOCH_RESPONSE: OffsetsResponse,
    STOP_REPLICA: StopReplica,
    CONTROLLED_SHUTDOWN: ControlledShutdown,
    ALTER_PARTITION: AlterPartition,
    ALTER_PARTITION_RESPONSE: AlterPartitionResponse,
}
_LOG_FIELD = Broker._fields.index("log")
_BROKERS_FIELD, _CONTROLLER_FIELD, _NETWORK_FIELD, _CONSUMERS_FIELD = (
    KafkaState._fields.index(name) for name in ("brokers", "controller", "network", "consumers"))
_RECORDS_FIELD = FetchResponse._fields.index("records")


# (the rebuilt classes read their fields unchecked, ``spec.fields``: data from a file or a column is
# checked for width as it is rebuilt, ``checked_new``)
def _records(plain: tuple) -> Log:
    return tuple([checked_new(Record, r) for r in plain])


def _broker(plain: tuple) -> Broker:
    if not plain[_LOG_FIELD]:
        return checked_new(Broker, plain)
    fields = list(plain)
    fields[_LOG_FIELD] = _records(fields[_LOG_FIELD])
    return checked_new(Broker, fields)


def _message(plain: tuple) -> Message:
    cls = _MESSAGE_CLASS[plain[0]]  # every message starts with its kind
    if cls is FetchResponse and len(plain) > _RECORDS_FIELD and plain[_RECORDS_FIELD]:
        fields = list(plain)
        fields[_RECORDS_FIELD] = _records(fields[_RECORDS_FIELD])
        return checked_new(cls, fields)
    return checked_new(cls, plain)


def decode_state(plain: tuple) -> KafkaState:
    """A ``KafkaState`` from its msgpack form (the state packed as nested arrays, read back as
    tuples): the frontier store's compact encoding, a few dozen bytes a state with no class names in
    it. Message classes come from their ``kind``; the other fields are tuples of ints as they are.
    Data of the wrong shape raises (ValueError, KeyError, TypeError or IndexError)."""
    fields = list(plain)
    fields[_BROKERS_FIELD] = tuple([_broker(b) for b in fields[_BROKERS_FIELD]])
    fields[_CONTROLLER_FIELD] = checked_new(Controller, fields[_CONTROLLER_FIELD])
    fields[_NETWORK_FIELD] = tuple([_message(m) for m in fields[_NETWORK_FIELD]])
    fields[_CONSUMERS_FIELD] = tuple([checked_new(Consumer, c) for c in fields[_CONSUMERS_FIELD]])
    return checked_new(KafkaState, fields)


def encode_states(states: list[KafkaState]) -> tuple:
    """A block of states in plain form, each broker and message the block's states share (the same
    object: a successor keeps the brokers and messages its step does not touch) written once:
    (brokers, messages, states), where a state names its brokers and messages by position in the
    first two. About 75 bytes a 3-broker state before compression, 1.3 distinct brokers a state."""
    broker_at: dict[int, int] = {}
    message_at: dict[int, int] = {}
    brokers: list[Broker] = []
    messages: list[Message] = []
    out = []
    for state in states:
        fields = list(state)
        fields[_BROKERS_FIELD] = _positions(state[_BROKERS_FIELD], broker_at, brokers)
        fields[_NETWORK_FIELD] = _positions(state[_NETWORK_FIELD], message_at, messages)
        out.append(fields)
    return brokers, messages, out


def _positions(values: tuple, at: dict[int, int], pool: list) -> list[int]:
    """The position of each of ``values`` in ``pool``, appending the ones not there yet (by
    identity: the objects a block's states share)."""
    refs = []
    for value in values:
        position = at.get(id(value))
        if position is None:
            position = at[id(value)] = len(pool)
            pool.append(value)
        refs.append(position)
    return refs


def decode_states(plain: tuple) -> list[KafkaState]:
    """The states of ``encode_states``, rebuilt with the model's classes (shared as they were)."""
    brokers_plain, messages_plain, out = plain
    brokers = [_broker(b) for b in brokers_plain]
    messages = [_message(m) for m in messages_plain]
    states = []
    append = states.append
    for plain_state in out:
        fields = list(plain_state)
        fields[_BROKERS_FIELD] = tuple([brokers[i] for i in fields[_BROKERS_FIELD]])
        fields[_CONTROLLER_FIELD] = checked_new(Controller, fields[_CONTROLLER_FIELD])
        fields[_NETWORK_FIELD] = tuple([messages[i] for i in fields[_NETWORK_FIELD]])
        if fields[_CONSUMERS_FIELD]:
            fields[_CONSUMERS_FIELD] = tuple([checked_new(Consumer, c)
                                              for c in fields[_CONSUMERS_FIELD]])
        append(checked_new(KafkaState, fields))
    return states


if (_BROKERS_FIELD, _CONTROLLER_FIELD, _NETWORK_FIELD) != (0, 1, 2):
    raise ImportError("state_parts splits a KafkaState as brokers, controller, network, then the "
                      "rest")


@functools.lru_cache(maxsize=8)
def state_parts(brokers: int) -> StateParts:
    """A state of ``brokers`` brokers as parts for the frontier store's pooled encoding: each
    broker, the controller, the network, the ghosts and the consumers pooled (a level's states share
    few of them: kip-380, a level of 7,942 states holds 501 distinct brokers, 15 controllers and
    1,528 networks), the bounds' counters inline. A state is then a row of ``brokers`` + 14 small
    ints, rebuilt sharing the pooled parts as the states written did."""
    kinds = []
    for name in KafkaState._fields:
        if name == "brokers":
            kinds.extend([0] * brokers)
        elif name in ("controller", "network", "consumers"):
            kinds.append(("controller", "network", "consumers").index(name) + 1)
        elif name in ("committed", "acked"):  # the same type: (offset, epoch, ident) triples
            kinds.append(4)
        else:
            kinds.append(INLINE)  # a counter
    names = [f"b{i}" for i in range(brokers)]
    # every other field, by name (no ``*rest`` tuple to build a state)
    rest = list(KafkaState._fields[1:])
    namespace = {"_new": _new, "KafkaState": KafkaState}
    # generated from the broker count and field names
    exec("def "  # noqa: S102
         f"join({', '.join(names + rest)}):\n"
         f"    return _new(KafkaState, (({', '.join(names)},), {', '.join(rest)}))\n", namespace)

    def split(state: KafkaState) -> tuple:
        return (*state[0], *state[1:])

    return StateParts(kinds=tuple(kinds), split=split, join=namespace["join"])


def leo(broker: Broker) -> int:
    return len(broker.log)


def _install_with(cls: type) -> None:
    """Give ``cls`` a ``with_(**changes)``: a copy with the named fields changed, as ``_replace``
    does.

    ``_replace`` goes through Python-level ``_make``; this copies the fields into a list, sets the
    named ones by their position (one dictionary look-up each) and builds the tuple in C, and it
    runs several times per successor. An unknown name is a TypeError, as for any function."""
    positions = {name: position for position, name in enumerate(cls._fields)}
    new = tuple.__new__

    def with_(self, **changes):
        values = list(self)
        try:
            for name, value in changes.items():
                values[positions[name]] = value
        except KeyError:
            raise TypeError(f"{cls.__name__}.with_() got an unexpected keyword argument "
                            f"{name!r}") from None
        return new(cls, values)

    with_.__doc__ = f"A copy of this {cls.__name__} with the named fields changed."
    with_.__qualname__ = f"{cls.__name__}.with_"
    cls.with_ = with_


for _cls in STATE_TYPES:
    _install_with(_cls)


def _install_new(cls: type, kind: int) -> None:
    """Give the message class ``cls`` a ``new(**fields)``: the message built with every field named
    and its ``kind`` implied by the class,
    ``FetchRequest.new(src=i, dst=leader, epoch=..., offset=..., last_epoch=...)``.

    Calling the class with keywords goes through ``type.__call__`` with a keyword dictionary (about
    twice the cost of positional arguments, and a message is built on most successors); this is
    generated once, from the field names, as a function of keyword-only parameters (a field with a
    default keeps it) that builds the tuple directly, cheaper than the class called positionally. An
    unknown or missing field is a TypeError, as for any function."""
    fields = cls._fields[1:]  # every message starts with its kind
    defaults = cls._field_defaults
    parameters = ", ".join(f"{name}=_default_{name}" if name in defaults else name
                           for name in fields)
    source = (f"def new(*, {parameters}):\n"
              f"    return _new(_cls, (_kind, {', '.join(fields)}))\n")
    namespace = {"_new": tuple.__new__, "_cls": cls, "_kind": kind,
                 **{f"_default_{name}": value for name, value in defaults.items()}}
    # generated from the class's own field names, no outside input
    exec(source, namespace)  # noqa: S102
    new = namespace["new"]
    new.__qualname__ = f"{cls.__name__}.new"
    new.__doc__ = f"A {cls.__name__} (kind {kind}) with its fields named."
    cls.new = staticmethod(new)


def updater(cls: type, *names: str, **constants: object):
    """A named update for the hot path: ``updater(Broker, "log", "cache")`` is a function
    ``(broker, log, cache) -> Broker``, the same copy as ``broker.with_(log=log, cache=cache)``;
    ``updater(Broker, alive=False, leader=-1)`` sets fixed values (a crash's reset) and takes the
    record alone.

    ``with_`` pays for a keyword dictionary and a loop on every call (about 490 ns for a 2-field
    update of a 20-field broker); this is generated once, from the field names, as a function that
    unpacks the record and builds the copy in one tuple display (about 270 ns; slices joined by
    ``+`` cost more instructions). Callers pass the fields by keyword, so they are named at the call
    as with ``with_``."""
    fields = cls._fields
    unknown = [name for name in (*names, *constants) if name not in fields]
    if unknown or len(set(names) | set(constants)) != len(names) + len(constants):
        raise TypeError(f"updater({cls.__name__}): unknown or repeated field(s) "
                        f"{unknown or list(names)}")
    slots = [f"_{position}" for position in range(len(fields))]
    items = []
    for position, name in enumerate(fields):
        if name in names:
            items.append(name)
        elif name in constants:
            items.append(f"_fixed_{name}")
        else:
            items.append(slots[position])
    parameters = ", ".join(["self", *names])
    source = (f"def update({parameters}):\n"
              f"    {', '.join(slots)}, = self\n"
              f"    return _new(_cls, ({', '.join(items)},))\n")
    namespace = {"_new": tuple.__new__, "_cls": cls,
                 **{f"_fixed_{name}": value for name, value in constants.items()}}
    # generated from the class's own field names, no outside input
    exec(source, namespace)  # noqa: S102
    update = namespace["update"]
    changed = ", ".join([*(f"{name}=..." for name in names),
                         *(f"{name}={value!r}" for name, value in constants.items())])
    update.__qualname__ = update.__name__ = f"{cls.__name__}.with_({changed})"
    update.__doc__ = f"A copy of a {cls.__name__} with {changed}."
    return update


for _kind, _cls in _MESSAGE_CLASS.items():
    _install_new(_cls, _kind)
