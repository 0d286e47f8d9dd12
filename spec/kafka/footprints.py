"""What each action of the Kafka model reads and writes: the footprints partial-order reduction works from.

A footprint names the parts of a state an action may read (its guard and its effect) and may write, in these
terms (a *resource* each):

- a broker's field, by broker: ``("b", i, "log")``;
- a controller field: ``("c", "leader")``, and per broker the broker epoch it registered: ``("c", "registered", i)``;
- a channel of the network, by kind, source and destination (-1: the controller): ``("net", "fetch", f, l)``; the
  controller's FIFO channel of LeaderAndIsr / StopReplica to a broker is one channel, ``("net", "ctl", -1, i)``;
- a field of the state itself: the bounds' counters (``("s", "produced")``) and the ghosts (``("s", "committed")``);
- a consumer, whole: ``("consumer", c)``.

The table below gives, for each action name, the parameters that name its actors (``DeliverLeaderAndIsr``'s
epoch or ``CrashLosingTail``'s ``keep`` do not change what it touches), what it reads and writes (broker fields by
parameter: the acting broker, the destination; ``ALL`` for every broker), and *necessary conditions*: conjuncts
of its guard, each with what it reads, such that the action is disabled whenever one is false. When a disabled
action's conjunct is false, only an action that writes what that conjunct reads can enable it (a message in a
channel is enabled by its send; a bound's counter never goes down). Where an action's reads are hard to pin down
(the KRaft controller's partition changes, the clients) it is declared to read and write everything: never less
than it does, at the price of no reduction around it.

The declarations are checked by ``tests/test_footprints.py``: every action run on reachable states of every
protocol row changes only what it declares it writes; every enabled action's necessary conditions hold; a
conjunct changes value only when something it reads changed; and two actions declared independent commute and
neither enables nor disables the other.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from spec.kafka.actions_control import channel_order
from spec.kafka.actions_data import busy
from spec.kafka.clients import ACKS_NONE
from spec.kafka.state import (
    ALTER_PARTITION,
    ALTER_PARTITION_RESPONSE,
    CONTROLLED_SHUTDOWN,
    DEAD,
    FENCED_LEADER_EPOCH,
    FETCH,
    FETCH_RESPONSE,
    FETCHING,
    LEADER_AND_ISR,
    NO_LEADER,
    NONE,
    OFFSET_OUT_OF_RANGE,
    OFFSETS_FOR_LEADER_EPOCH,
    OFFSETS_FOR_LEADER_EPOCH_RESPONSE,
    STOP_REPLICA,
    TRUNCATING,
    TRUNCATING_AGAIN,
    Broker,
    Controller,
    KafkaState,
)
from spec.model import Action

Resource = tuple
ALL = "*"  # every broker (or consumer)
CONTROLLER = -1  # the controller's end of a channel

#: a channel name by message kind, and the message's (source, destination) in it
_CHANNEL = {
    LEADER_AND_ISR: "ctl", STOP_REPLICA: "ctl", CONTROLLED_SHUTDOWN: "shutdown", FETCH: "fetch",
    FETCH_RESPONSE: "fetch_resp", OFFSETS_FOR_LEADER_EPOCH: "offsets", OFFSETS_FOR_LEADER_EPOCH_RESPONSE: "offsets_resp",
    ALTER_PARTITION: "alter", ALTER_PARTITION_RESPONSE: "alter_resp",
}
#: broker-to-broker channels: (name, whether the follower is the source)
_DATA_CHANNELS = (("fetch", True), ("fetch_resp", False), ("offsets", True), ("offsets_resp", False))
#: what a crash loses (``actions_control._crashed``, ``actions_kraft._kraft_crash``), and the durable part
MEMORY = ("alive", "leader", "epoch", "isr", "fetch", "remote", "stopping", "reconciled", "idle_cause", "pending_diverging",
          "partition_epoch", "alter_pending", "committed_isr", "remote_epochs")
DATA = ("log", "hw", "cache")
EVERY_FIELD = Broker._fields
_STATE_FIELDS = tuple(f for f in KafkaState._fields if f not in ("brokers", "controller", "network", "consumers"))
_CONTROLLER_FIELDS = tuple(f for f in Controller._fields if f != "registered")


def channel_of(m: Any) -> Resource:
    """The channel a message in flight belongs to."""
    name = _CHANNEL[m.kind]
    if name == "ctl":
        return ("net", name, CONTROLLER, m.dst)
    if name == "shutdown":
        return ("net", name, m.src, CONTROLLER)
    return ("net", name, m.src, m.dst)


# -- resource templates: functions of (the action's parameters, the broker count, the consumer count) -------------
Template = Callable[[dict, int, int], Iterable[Resource]]


def _who(who: Any, params: dict, n: int) -> range | tuple:
    if who == ALL:
        return range(n)
    return (params[who],)


#: a leader's per-follower maps: one resource per follower (two fetches served to two followers write two entries)
PER_FOLLOWER = ("remote", "remote_epochs")


def B(who: str, *fields: str) -> Template:
    """Fields of a broker: the one a parameter names, or ``ALL``; a per-follower map is every follower's entry."""
    def resources(p: dict, n: int, k: int) -> list:
        out = []
        for i in _who(who, p, n):
            for f in fields:
                out.extend([("b", i, f, j) for j in range(n)] if f in PER_FOLLOWER else [("b", i, f)])
        return out
    return resources


def REMOTE(leader: str, follower: str) -> Template:
    """A leader's entries for one follower: its LEO and (KIP-903) broker epoch from its last fetch."""
    return lambda p, n, k: [("b", p[leader], f, p[follower]) for f in PER_FOLLOWER]


def C(*fields: str) -> Template:
    """Controller fields (``registered``: every broker's entry)."""
    def resources(p: dict, n: int, k: int) -> list:
        out = []
        for f in fields:
            out.extend([("c", "registered", i) for i in range(n)] if f == "registered" else [("c", f)])
        return out
    return resources


def REG(who: str) -> Template:
    """The broker epoch the controller registered for a broker (DEAD once it processed its death)."""
    return lambda p, n, k: [("c", "registered", i) for i in _who(who, p, n)]


def CTL(who: str) -> Template:
    """The head of the controller's FIFO channel of LeaderAndIsr / StopReplica to a broker: what a delivery takes."""
    return lambda p, n, k: [("net", "ctl", CONTROLLER, i) for i in _who(who, p, n)]


def CTL_SEND(who: str) -> Template:
    """The tail of that channel: what the controller appends to. A send and a delivery on one FIFO channel commute
    when the channel is not empty (the request sent is newer than every one queued: ``channel_order``), and a send
    can enable a delivery only by filling an empty channel, which the delivery's necessary condition reads; so the
    two ends are two resources. Whatever empties or filters the channel (a crash, KIP-380's broker change) writes
    both."""
    return lambda p, n, k: [("net", "ctl_send", CONTROLLER, i) for i in _who(who, p, n)]


def SHUTDOWN(who: str) -> Template:
    """ControlledShutdown requests from a broker to the controller (ZooKeeper rows)."""
    return lambda p, n, k: [("net", "shutdown", i, CONTROLLER) for i in _who(who, p, n)]


def NET(name: str, src: str, dst: str) -> Template:
    """The broker-to-broker channel ``name`` from ``src`` to ``dst`` (parameter names)."""
    return lambda p, n, k: [("net", name, p[src], p[dst])]


def PAIR(follower: str, leader: str) -> Template:
    """The four channels between a follower and a leader: its requests and their answers (``busy``)."""
    def resources(p: dict, n: int, k: int) -> list:
        f, ldr = p[follower], p[leader]
        return [("net", name, f, ldr) if out else ("net", name, ldr, f) for name, out in _DATA_CHANNELS]
    return resources


def LINKS(who: str) -> Template:
    """Every broker-to-broker channel a broker is an end of, and its AlterPartition channels (a crash drops them)."""
    def resources(p: dict, n: int, k: int) -> list:
        out = []
        for i in _who(who, p, n):
            for other in range(n):
                for name, _ in _DATA_CHANNELS:
                    out += [("net", name, i, other), ("net", name, other, i)]
            out += [("net", "alter", i, CONTROLLER), ("net", "alter_resp", CONTROLLER, i)]
        return out
    return resources


def DATA_NET() -> Template:
    """Every broker-to-broker channel (the ``inflight`` bound counts them all)."""
    return LINKS(ALL)


def S(*fields: str) -> Template:
    """Fields of the state itself: the bounds' counters and the ghosts ``committed`` and ``acked``."""
    return lambda p, n, k: [("s", f) for f in fields]


def CONSUMERS() -> Template:
    return lambda p, n, k: [("consumer", c) for c in range(k)]


@dataclass(frozen=True)
class When:
    """Templates that count only on the models ``applies(model)`` is true of (a bound or a feature switches them on)."""

    applies: Callable[[Any], bool]
    templates: tuple[Template, ...]


def when(applies: Callable[[Any], bool], *templates: Template) -> When:
    return When(applies, templates)


def BUSY(*whos: str) -> Template:
    """Whether a broker is an end of a broker-to-broker message in flight (what the stall invariants read of the data
    channels): a derived resource, for invisibility only (a request answered keeps both ends busy)."""
    return lambda p, n, k: [("busy", i) for who in whos for i in _who(who, p, n)]


def universe(n: int, k: int) -> frozenset:
    """Every resource of a state with ``n`` brokers and ``k`` consumers."""
    out = set(B(ALL, *EVERY_FIELD)({}, n, k)) | set(C(*Controller._fields)({}, n, k)) | set(S(*_STATE_FIELDS)({}, n, k))
    for template in (CTL(ALL), CTL_SEND(ALL), SHUTDOWN(ALL), LINKS(ALL), CONSUMERS(), BUSY(ALL)):
        out |= set(template({}, n, k))
    return frozenset(out)


#: resources derived from others (never read by an action): they count for invisibility, not for dependency
def derived(resource: Resource) -> bool:
    return resource[0] == "busy"


EVERYTHING: tuple = ()  # the declaration of an action that reads and writes everything (see ``Footprint.universal``)


# -- necessary conditions ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Conjunct:
    """A conjunct of an action's guard: ``holds(model, state, params)`` is false only if the action is disabled, and
    its value depends only on ``reads``."""

    what: str
    reads: Template
    holds: Callable[[Any, KafkaState, dict], bool]


def alive(who: str) -> Conjunct:
    return Conjunct(f"{who} alive", B(who, "alive"), lambda m, s, p: s.brokers[p[who]].alive)


def down(who: str) -> Conjunct:
    return Conjunct(f"{who} down", B(who, "alive"), lambda m, s, p: not s.brokers[p[who]].alive)


def leads(who: str) -> Conjunct:
    return Conjunct(f"{who} believes it leads", B(who, "leader"), lambda m, s, p: s.brokers[p[who]].leader == p[who])


def follows(follower: str, leader: str) -> Conjunct:
    return Conjunct(f"{follower} follows {leader}", B(follower, "leader"),
                    lambda m, s, p: s.brokers[p[follower]].leader == p[leader] != p[follower])


def below(counter: str, bound: str) -> Conjunct:
    """A bound not reached yet (a counter only grows: once reached, the action is disabled for good)."""
    return Conjunct(f"{counter} < {bound}", S(counter), lambda m, s, p: getattr(s, counter) < getattr(m, bound))


def epoch_below_bound() -> Conjunct:
    """The controller's epoch below the epoch bound (it only grows)."""
    return Conjunct("controller epoch < epochs", C("epoch"), lambda m, s, p: s.controller.epoch < m.max_epoch)


def queued(template: Template) -> Conjunct:
    """A message in the channel ``template`` names (its one resource)."""
    def holds(m: Any, s: KafkaState, p: dict) -> bool:
        (channel,) = template(p, m.n, m.n_consumers)
        return any(channel_of(msg) == channel for msg in s.network)
    return Conjunct("a message queued", template, holds)


def queued_control(who: str) -> Conjunct:
    """A control request queued to a broker: the channel's head and tail (a send fills an empty channel)."""
    return Conjunct("a control request queued", lambda p, n, k: [*CTL(who)(p, n, k), *CTL_SEND(who)(p, n, k)],
                    lambda m, s, p: any(channel_of(msg) == ("net", "ctl", CONTROLLER, p[who]) for msg in s.network))


def registered_dead(who: str) -> Conjunct:
    return Conjunct(f"{who}'s death processed", REG(who), lambda m, s, p: s.controller.registered[p[who]] == DEAD)


def registered_alive(who: str) -> Conjunct:
    return Conjunct(f"{who}'s death not processed", REG(who), lambda m, s, p: s.controller.registered[p[who]] != DEAD)


def registration_behind(who: str) -> Conjunct:
    """The controller has not processed the broker's latest registration (a bounce it did not see)."""
    return Conjunct(f"{who}'s registration not processed",
                    lambda p, n, k: [*REG(who)(p, n, k), *B(who, "broker_epoch")(p, n, k)],
                    lambda m, s, p: s.controller.registered[p[who]] != s.brokers[p[who]].broker_epoch)


def pending_diverging(who: str) -> Conjunct:
    return Conjunct(f"{who} has a diverging epoch to apply", B(who, "pending_diverging"),
                    lambda m, s, p: bool(s.brokers[p[who]].pending_diverging))


def fetch_state(who: str, state: int) -> Conjunct:
    return Conjunct(f"{who}'s fetcher state is {state}", B(who, "fetch"), lambda m, s, p: s.brokers[p[who]].fetch == state)


def truncating(who: str) -> Conjunct:
    """Truncating: a fresh fetch state, or another KIP-279 round after an intermediate truncation."""
    return Conjunct(f"{who} is truncating", B(who, "fetch"),
                    lambda m, s, p: s.brokers[p[who]].fetch in (TRUNCATING, TRUNCATING_AGAIN))


def no_epoch(who: str) -> Conjunct:
    return Conjunct(f"{who}'s epoch cache is empty", B(who, "cache"), lambda m, s, p: not s.brokers[p[who]].cache)


def idle(follower: str, leader: str) -> Conjunct:
    """No request of the follower to the leader, nor its answer, in flight (``busy``)."""
    return Conjunct(f"{follower} waits for nothing from {leader}", PAIR(follower, leader),
                    lambda m, s, p: not busy(s.network, p[follower], p[leader]))


def controller_agrees(who: str) -> Conjunct:
    """The controller has the broker as leader in the broker's epoch (a deposed leader's ISR write fails)."""
    return Conjunct(f"the controller has {who} lead in its epoch", lambda p, n, k: [*C("leader", "epoch")(p, n, k),
                                                                                     *B(who, "epoch")(p, n, k)],
                    lambda m, s, p: s.controller.leader == p[who] and s.controller.epoch == s.brokers[p[who]].epoch)


def in_isr(leader: str, follower: str, inside: bool) -> Conjunct:
    return Conjunct(f"{follower} {'in' if inside else 'outside'} {leader}'s ISR", B(leader, "isr"),
                    lambda m, s, p: (p[follower] in s.brokers[p[leader]].isr) == inside)


def caught_up(leader: str, follower: str) -> Conjunct:
    """The follower's last fetch offset reached the leader's HW (``maybeExpandIsr``)."""
    return Conjunct(f"{follower} reached {leader}'s HW", lambda p, n, k: [*REMOTE(leader, follower)(p, n, k),
                                                                         *B(leader, "hw")(p, n, k)],
                    lambda m, s, p: 0 <= _remote(s.brokers[p[leader]], p[follower]) >= s.brokers[p[leader]].hw)


def lags_behind(leader: str, follower: str) -> Conjunct:
    """KAFKA-7152 (2.1.0 ``getOutOfSyncReplicas``: ``r.logEndOffset != leaderReplica.logEndOffset``): a follower whose
    LEO, as the leader last learned it, is the leader's is never shrunk; true on the rows without the fix."""
    return Conjunct(f"{follower} behind {leader}'s LEO (KAFKA-7152)",
                    lambda p, n, k: [*REMOTE(leader, follower)(p, n, k), *B(leader, "log")(p, n, k)],
                    lambda m, s, p: (not m.features.kafka_7152
                                     or _remote(s.brokers[p[leader]], p[follower]) != len(s.brokers[p[leader]].log)))


def _remote(leader: Broker, follower: int) -> int:
    """The follower's LEO as the leader last saw it; -1 when unknown or the broker keeps none (it does not lead)."""
    return leader.remote[follower] if follower < len(leader.remote) else -1


# -- the table --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Footprint:
    """One action name: the parameters that name its actors, what it may read and write, its necessary conditions,
    and on which models it is declared (``when``). ``reads == EVERYTHING``: it reads and writes every resource."""

    name: str
    params: tuple[str, ...]
    reads: tuple[Template, ...]
    writes: tuple[Template, ...] = ()
    guard: tuple[Conjunct, ...] = ()
    when: Callable[[Any], bool] = lambda m: True

    @property
    def universal(self) -> bool:
        return self.reads is EVERYTHING


def _zk(m: Any) -> bool:
    return not m.features.kraft


def _kraft(m: Any) -> bool:
    return m.features.kraft


def _zk_write(m: Any) -> bool:
    """A ZooKeeper row whose leader writes the ISR to ZooKeeper itself (before 2.7.0's AlterIsr: no alter-isr)."""
    return not m.features.alter_by_request


def _by_request(m: Any) -> bool:
    """The ISR changes by a request to the controller: KRaft's AlterPartition, or ZooKeeper's AlterIsr (alter-isr)."""
    return m.features.alter_by_request


def _reassigning(m: Any) -> bool:
    """A KRaft row with ``reassignments`` (``spec.kafka.actions_reassignment``): a replica list that changes."""
    return bool(m.max_reassignments) and m.features.kraft


def _acks(m: Any) -> bool:
    return m.acks != ACKS_NONE


def _inflight(m: Any) -> bool:
    return bool(m.max_inflight)


def _halts(m: Any) -> bool:
    """Before 2.1.0 a follower ahead of its leader halts its broker on OFFSET_OUT_OF_RANGE (unless unclean election)."""
    return not m.features.leader_epoch_fencing and not m.features.unclean


#: the controller's partition state, what every election writes, and what it reads of the brokers (``_elected``,
#: ``_registered`` in ``actions_control``: a ZooKeeper controller keeps no ELR, and a partition epoch only as the
#: zkVersion that AlterIsr checks, alter-isr: every controller write moves it there, ``_elected_versioned``)
_PARTITION = ("leader", "epoch", "isr")
_ELECTION_READS = (C(*Controller._fields), B(ALL, "alive", "incarnation", "broker_epoch"))
_ELECTION_WRITES = (C(*_PARTITION, "registered"), CTL_SEND(ALL), when(_by_request, C("partition_epoch")))


def _election(name: str, param: str, *guard: Conjunct, reads: tuple = (), writes: tuple = (),
              when: Callable[[Any], bool] = _zk) -> Footprint:
    """A ZooKeeper controller action: it reads the controller and each broker's liveness, writes the partition state
    and a LeaderAndIsr to every live broker (``_elect_state``)."""
    return Footprint(name, (param,), _ELECTION_READS + reads, _ELECTION_WRITES + writes, guard, when)


def _crash(name: str, when: Callable[[Any], bool] = lambda m: True) -> Footprint:
    """Crash / CrashLosingTail / UncleanShutdown: the broker's memory and connections lost, its log maybe cut."""
    counter = {"UncleanShutdown": "unclean_shutdowns"}.get(name, "crashes")
    bound = {"UncleanShutdown": "max_unclean_shutdowns"}.get(name, "max_crashes")
    return Footprint(name, ("broker",), (B("broker", *EVERY_FIELD), S(counter)),
                     (B("broker", *MEMORY, *DATA), CTL("broker"), CTL_SEND("broker"), LINKS("broker"), BUSY(ALL), S(counter)),
                     (alive("broker"), below(counter, bound)), when)


#: what applying a LeaderAndIsr may write of its broker
_APPLIED = (*DATA, "leader", "epoch", "isr", "fetch", "remote", "stale", "reconciled", "idle_cause", "partition_epoch",
            "alter_pending", "committed_isr", "remote_epochs")
#: and with reassignments (``actions_reassignment._apply_leader_and_isr``: a removed replica is deleted, a replica
#: takes the replica list)
_REASSIGNED = ("replicas", "pending_diverging")
_READS_OF_LEADER = ("alive", "leader", "epoch", "log", "cache", "hw")
#: what a producer with acks (spec.kafka.clients) and KIP-966's strict min ISR read besides (with effective-min-isr, the
#: replicas that cap the min ISR)
_ISR_READS = ("isr", "committed_isr", "alter_pending", "replicas")
_FOLLOWER_SEND_READS = ("alive", "leader", "epoch", "fetch", "pending_diverging", "log", "cache", "broker_epoch")

FOOTPRINTS: tuple[Footprint, ...] = (
    # -- the ZooKeeper controller (spec.kafka.actions_control) ---------------------------------------------------
    _election("ElectLeader", "leader", epoch_below_bound()),
    _election("ProcessBrokerFailure", "broker", down("broker"), registered_alive("broker")),
    _election("PreferredLeaderElection", "leader", epoch_below_bound()),
    _election("UncleanLeaderElection", "leader", epoch_below_bound(), writes=(CONSUMERS(),),  # read_before_unclean
              when=lambda m: _zk(m) and m.features.unclean),
    _election("BumpLeaderEpoch", "leader", below("bumps", "max_bumps"), epoch_below_bound(), reads=(S("bumps"),),
              writes=(S("bumps"),)),
    _election("ProcessBrokerChange", "broker", alive("broker"), registration_behind("broker"),
              reads=(CTL("broker"), CTL_SEND("broker")), writes=(CTL("broker"),)),
    _election("ProcessControlledShutdown", "broker", queued(SHUTDOWN("broker")), reads=(SHUTDOWN("broker"),),
              writes=(SHUTDOWN("broker"),)),
    # -- control requests applied by a broker ------------------------------------------------------------------
    Footprint("DeliverLeaderAndIsr", ("broker",), (CTL("broker"), B("broker", *EVERY_FIELD)),
              (CTL("broker"), B("broker", *_APPLIED), when(_reassigning, B("broker", *_REASSIGNED))),
              (queued_control("broker"),)),
    Footprint("DeliverStopReplica", ("broker",), (CTL("broker"), B("broker", "broker_epoch", "stale", "incarnation")),
              (CTL("broker"), B("broker", "stale", "fetch", "idle_cause")), (queued_control("broker"),), when=_zk),
    # it needs a newer request queued behind the oldest: it reads the tail too
    Footprint("LoseControlRequest", ("broker",), (CTL("broker"), CTL_SEND("broker"), S("losses")), (CTL("broker"), S("losses")),
              (below("losses", "max_losses"), queued_control("broker")), when=_zk),
    # -- a leader's own actions (spec.kafka.actions_data; with a producer, spec.kafka.clients) --------------------
    Footprint("Produce", ("leader",), (B("leader", *_READS_OF_LEADER), S("produced"), when(_acks, B("leader", *_ISR_READS))),
              (B("leader", "log", "cache"), S("produced"), when(_acks, S("acked"))),
              (below("produced", "max_records"), alive("leader"), leads("leader"))),
    Footprint("AdvanceHighWatermark", ("leader",), (B("leader", *_READS_OF_LEADER, "remote", *_ISR_READS), S("committed")),
              (B("leader", "hw"), S("committed"), when(_acks, S("acked"))), (alive("leader"), leads("leader"))),
    Footprint("ShrinkIsr", ("leader", "follower"),
              (B("leader", "alive", "leader", "epoch", "isr", "log"), REMOTE("leader", "follower"), C("leader", "epoch", "isr")),
              (B("leader", "isr"), C("isr")), (alive("leader"), leads("leader"), controller_agrees("leader"),
                                              in_isr("leader", "follower", True), lags_behind("leader", "follower")),
              when=_zk_write),
    # the answer of the fetch whose recording expands the ISR is on the wire (actions_data._fetch_being_answered)
    Footprint("ExpandIsr", ("leader", "follower"),
              (B("leader", *_READS_OF_LEADER, "isr"), REMOTE("leader", "follower"), C("leader", "epoch", "isr"),
               NET("fetch_resp", "leader", "follower")),
              (B("leader", "isr"), C("isr")), (alive("leader"), leads("leader"), controller_agrees("leader"),
                                              in_isr("leader", "follower", False), caught_up("leader", "follower"),
                                              queued(NET("fetch_resp", "leader", "follower"))),
              when=_zk_write),
    # -- a follower's requests and their answers ------------------------------------------------------------------
    Footprint("SendFetch", ("follower", "leader"),
              (B("follower", *_FOLLOWER_SEND_READS), B("leader", "alive"), PAIR("follower", "leader"),
               when(_inflight, DATA_NET())),
              (NET("fetch", "follower", "leader"), BUSY("follower", "leader")),
              (alive("follower"), follows("follower", "leader"), alive("leader"), fetch_state("follower", FETCHING),
               idle("follower", "leader"))),
    Footprint("SendOffsetsForLeaderEpoch", ("follower", "leader"),
              (B("follower", *_FOLLOWER_SEND_READS), B("leader", "alive"), PAIR("follower", "leader"),
               when(_inflight, DATA_NET())),
              (NET("offsets", "follower", "leader"), BUSY("follower", "leader")),
              (alive("follower"), follows("follower", "leader"), alive("leader"), truncating("follower"),
               idle("follower", "leader"))),
    Footprint("ServeFetch", ("leader", "follower"),
              (NET("fetch", "follower", "leader"), NET("fetch_resp", "leader", "follower"),
               B("leader", "epoch", "leader", "log", "cache", "hw"), REMOTE("leader", "follower"),
               when(_reassigning, B("leader", "replicas"))),
              (NET("fetch", "follower", "leader"), NET("fetch_resp", "leader", "follower"),
               REMOTE("leader", "follower")),
              (queued(NET("fetch", "follower", "leader")),)),
    Footprint("ServeOffsetsForLeaderEpoch", ("leader", "follower"),
              (NET("offsets", "follower", "leader"), B("leader", "epoch", "leader", "log", "cache")),
              (NET("offsets", "follower", "leader"), NET("offsets_resp", "leader", "follower")),
              (queued(NET("offsets", "follower", "leader")),)),
    # ReceiveFetch may halt the follower's broker (before 2.1.0): then it writes what a crash writes
    Footprint("ReceiveFetch", ("follower", "leader"),
              (NET("fetch_resp", "leader", "follower"), B("follower", "fetch", "leader", "epoch", *DATA),
               when(_halts, B("follower", *EVERY_FIELD), S("crashes"))),
              (NET("fetch_resp", "leader", "follower"),
               B("follower", *DATA, "reconciled", "pending_diverging", "fetch", "idle_cause"), BUSY("follower", "leader"),
               when(_halts, B("follower", *MEMORY), CTL("follower"), CTL_SEND("follower"), LINKS("follower"), BUSY(ALL),
                    S("crashes"))),
              (queued(NET("fetch_resp", "leader", "follower")),)),
    Footprint("ReceiveOffsetsForLeaderEpoch", ("follower", "leader"),
              (NET("offsets_resp", "leader", "follower"), B("follower", "fetch", "leader", "epoch", "cache", "log", "hw")),
              (NET("offsets_resp", "leader", "follower"), B("follower", *DATA, "fetch", "idle_cause"),
               BUSY("follower", "leader")),
              (queued(NET("offsets_resp", "leader", "follower")),)),
    Footprint("TruncateOnDivergingEpoch", ("follower",),
              (B("follower", "alive", "pending_diverging", "fetch", "leader", *DATA),),
              (B("follower", "pending_diverging", "fetch", *DATA),), (alive("follower"), pending_diverging("follower"))),
    Footprint("TruncateToHighWatermark", ("follower",),
              (B("follower", "alive", "fetch", "cache", "leader", "log", "hw"), LINKS("follower")),
              (B("follower", "fetch", *DATA),), (alive("follower"), fetch_state("follower", TRUNCATING), no_epoch("follower"))),
    # -- crash, restart, bounce, controlled shutdown --------------------------------------------------------------
    _crash("Crash"),
    _crash("CrashLosingTail", lambda m: _zk(m) and m.features.lossy_crash),
    Footprint("Restart", ("broker",),
              (B("broker", *EVERY_FIELD), REG("broker"), C("leader", "epoch", "isr", "partition_epoch"), S("crashes")),
              (B("broker", *EVERY_FIELD), REG("broker"), CTL_SEND("broker")),
              (down("broker"), registered_dead("broker")), when=_zk),
    Footprint("ControlledShutdown", ("broker",),
              (B("broker", "alive", "stopping", "broker_epoch", "incarnation"), S("shutdowns")),
              (B("broker", "stopping"), SHUTDOWN("broker"), S("shutdowns")),
              (alive("broker"), below("shutdowns", "max_shutdowns")), when=_zk),
    Footprint("Bounce", ("broker",), (B("broker", *EVERY_FIELD), S("bounces")),
              (B("broker", *EVERY_FIELD), LINKS("broker"), BUSY(ALL), S("bounces")),
              (alive("broker"), below("bounces", "max_bounces")), when=_zk),
    # -- the KRaft rows (spec.kafka.actions_kraft): the controller's partition changes and the restart that registers
    # -- read and write everything (their reads span the controller, every broker's registration and the AlterPartition
    # -- channels); UncleanShutdown is a crash that counts apart
    *(Footprint(name, params, EVERYTHING, when=_kraft) for name, params in (
        ("ElectLeader", ("leader",)), ("PreferredLeaderElection", ("leader",)), ("UncleanLeaderElection", ("leader",)),
        ("BumpLeaderEpoch", ("leader",)), ("FenceBroker", ("broker",)), ("ProcessControlledShutdown", ("broker",)),
        ("Restart", ("broker",)), ("CleanShutdown", ("broker",)), ("UnfenceBroker", ("broker",)),
        ("ReassignPartition", ()))),
    # -- AlterPartition and its answer, on the KRaft rows and (AlterIsr, alter-isr) on the 2.7.0+ ZooKeeper rows: the
    # -- leader's request reads its pending state, the alters bound and its AlterPartition channels; the controller's
    # -- handling reads the registrations and the partition state: everything
    *(Footprint(name, params, EVERYTHING, when=_by_request) for name, params in (
        ("ShrinkIsr", ("leader", "follower")), ("ExpandIsr", ("leader", "follower")), ("ProcessAlterPartition", ("leader",)),
        ("ReceiveAlterPartitionResponse", ("leader",)), ("LoseAlterPartitionResponse", ("leader",)))),
    _crash("UncleanShutdown", _kraft),
    # -- the consumers (spec.kafka.clients): they read the brokers, the controller and the consumers ----------------
    *(Footprint(name, ("consumer",), EVERYTHING) for name in (
        "ConsumerMetadata", "ConsumerFetch", "ConsumerValidate", "ConsumerFetchFromFollower", "ConsumerSendFetch",
        "ServeConsumerFetch", "ReceiveConsumerFetch", "ConsumerSendValidate", "ServeConsumerValidate",
        "ReceiveConsumerValidate", "ConsumerDisconnect")),
)

# -- state-dependent footprints ----------------------------------------------------------------------------------
# The table above gives what an action may touch in any state. In some states an action touches much less: a
# response that only makes the fetcher retry writes nothing but its channel, whatever the follower's state. A
# ``Narrower`` declares such a case: in a state where ``condition`` holds, the action reads only ``reads`` (its
# guard included) and writes only ``writes``. ``KafkaFootprints.narrower`` adds the condition's reads to ``reads``.
#
# Why the reduction may use the narrower footprint in a state s (Valmari's stubborn sets; Godefroid, *Partial-Order
# Methods for the Verification of Concurrent Systems*, LNCS 1032, ch. 4: a dependency relation may be taken per
# state if, used in s, it over-approximates dependency in every state reachable from s by actions outside the
# stubborn set): the condition's reads are among the action's reads, so every action that writes one of them is
# dependent on it and inside any stubborn set the action is in. No action outside the set changes what the
# condition reads, so the condition holds in every state reachable from s by actions outside the set, and there the
# action's footprint is still the narrower one; the other actions keep their footprints of every state (the table).
# The same argument keeps the action invisible along those paths when its narrower writes are (C2).
# ``tests/test_footprints.py`` checks each entry on sampled states of every row: what the action changed where the
# condition holds, that the condition changes only with what it reads, and that the pairs it makes independent commute.
@dataclass(frozen=True)
class Narrower:
    """An action's footprint in the states where ``condition`` holds (``condition.reads``: what its value depends on)."""

    name: str
    condition: Conjunct
    reads: tuple[Template, ...]
    writes: tuple[Template, ...]
    when: Callable[[Any], bool] = lambda m: True
    #: actions (by name) that write what only the condition reads but never make it false (an append only lengthens
    #: the log): they are not dependent on the action through the condition (the stability argument above needs
    #: only that no action outside the stubborn set falsifies the condition)
    keeps: tuple[str, ...] = ()


def _in_channel(s: KafkaState, channel: Resource) -> list:
    return [m for m in s.network if channel_of(m) == channel]


def _only_retried(name: str, follower: str, leader: str, retried: Callable[[Any, Any], bool]) -> Conjunct:
    """Every answer queued in the channel ``name`` from ``leader`` to ``follower`` is one the follower drops
    whatever its state (``retried(model, message)``)."""
    def holds(m: Any, s: KafkaState, p: dict) -> bool:
        answers = _in_channel(s, ("net", name, p[leader], p[follower]))
        return bool(answers) and all(retried(m, a) for a in answers)
    return Conjunct(f"the {name} answer is retried", NET(name, leader, follower), holds)


def _fetch_answer_retried(m: Any, answer: Any) -> bool:
    """``DataPlaneActions._receive_fetch_state``: every branch drops an answer with NOT_LEADER or
    UNKNOWN_LEADER_EPOCH ("retry after the back-off"), and FENCED_LEADER_EPOCH where it does not remove the partition
    (before 2.1.0's ``fenced-removes-partition``); the fetcher's state decides only among dropping branches.
    OFFSET_OUT_OF_RANGE (truncation, or a halt before 2.0.1) and an answer with records are not dropped."""
    if answer.error in (NONE, OFFSET_OUT_OF_RANGE):
        return False
    return answer.error != FENCED_LEADER_EPOCH or not m.features.removes_fenced_partition


def _offsets_answer_retried(m: Any, answer: Any) -> bool:
    """``DataPlaneActions._receive_offsets_state``: an error answer leaves the partition truncating (dropped),
    but FENCED_LEADER_EPOCH where it removes the partition (2.1.0+)."""
    return answer.error != NONE and (answer.error != FENCED_LEADER_EPOCH or not m.features.removes_fenced_partition)


def _served_an_error(name: str) -> Conjunct:
    """Every request queued in the channel ``name`` from the follower to the leader gets an error from the leader
    (``DataPlaneActions._error``: FENCED / UNKNOWN_LEADER_EPOCH by the request's epoch, NOT_LEADER): the answer
    is built from the request and the leader's epoch and belief of who leads, never from its log."""
    def holds(m: Any, s: KafkaState, p: dict) -> bool:
        i = p["leader"]
        requests = _in_channel(s, ("net", name, p["follower"], i))
        return bool(requests) and all(m._error(s.brokers[i], i, r.epoch) != NONE for r in requests)
    return Conjunct(f"the {name} request gets an error", lambda p, n, k: [*NET(name, "follower", "leader")(p, n, k),
                                                                         *B("leader", "epoch", "leader")(p, n, k)], holds)


def _ignored_leader_and_isr() -> Conjunct:
    """The oldest control request queued to the broker is a LeaderAndIsr it ignores
    (``ControlPlaneActions._apply_leader_and_isr``: an epoch not newer than its own, KIP-380's older broker epoch,
    or, on a ZooKeeper row, no leader)."""
    def holds(m: Any, s: KafkaState, p: dict) -> bool:
        i = p["broker"]
        head = _head(s, i)
        if head is None:
            return False
        b = s.brokers[i]
        return head.kind == LEADER_AND_ISR and (head.epoch <= b.epoch or m._stale_generation(b, head)
                                                or head.leader == NO_LEADER)
    return Conjunct("the LeaderAndIsr is ignored", lambda p, n, k: [*CTL("broker")(p, n, k),
                                                                   *B("broker", "epoch", "broker_epoch")(p, n, k)], holds)


def _head(s: KafkaState, i: int) -> Any:
    """The oldest control request queued to broker ``i`` (the one a delivery takes), or None."""
    queued = [r for r in s.network if _CHANNEL[r.kind] == "ctl" and r.dst == i]
    return min(queued, key=channel_order) if queued else None


def _head_keeps_stale() -> Conjunct:
    """The oldest control request to the broker was meant for its incarnation, or the broker is marked stale already
    (``_apply_leader_and_isr``: ``stale = b.stale or m.meant != b.incarnation``)."""
    def holds(m: Any, s: KafkaState, p: dict) -> bool:
        head, b = _head(s, p["broker"]), s.brokers[p["broker"]]
        return head is not None and (b.stale or head.meant == b.incarnation)
    return Conjunct("the request leaves stale as it is", lambda p, n, k: [*CTL("broker")(p, n, k),
                                                                          *B("broker", "incarnation", "stale")(p, n, k)],
                    holds)


def _no_8400(m: Any) -> bool:
    """Before KAFKA-8400 (2.4.0) an errored fetch from a follower the leader knows makes it forget its LEO."""
    return not m.features.kafka_8400


def _strictly_behind() -> Conjunct:
    """KAFKA-7152's conjunct of ShrinkIsr (``lags_behind``) in a form an append keeps true: the follower's LEO as the
    leader last learned it is below the leader's LEO (always true on the rows without the fix)."""
    return Conjunct("follower strictly behind the leader's LEO (KAFKA-7152)",
                    lambda p, n, k: [*REMOTE("leader", "follower")(p, n, k), *B("leader", "log")(p, n, k)],
                    lambda m, s, p: (not m.features.kafka_7152
                                     or _remote(s.brokers[p["leader"]], p["follower"]) < len(s.brokers[p["leader"]].log)))


NARROWER: tuple[Narrower, ...] = (
    Narrower("ReceiveFetch", _only_retried("fetch_resp", "follower", "leader", _fetch_answer_retried),
             (NET("fetch_resp", "leader", "follower"),),
             (NET("fetch_resp", "leader", "follower"), BUSY("follower", "leader"))),
    Narrower("ReceiveOffsetsForLeaderEpoch", _only_retried("offsets_resp", "follower", "leader", _offsets_answer_retried),
             (NET("offsets_resp", "leader", "follower"),),
             (NET("offsets_resp", "leader", "follower"), BUSY("follower", "leader"))),
    # not narrowed on the KRaft rows (a served fetch there may also record KIP-903's broker epoch: actions_data)
    Narrower("ServeFetch", _served_an_error("fetch"),
             (NET("fetch", "follower", "leader"), B("leader", "epoch", "leader"), when(_no_8400, REMOTE("leader", "follower"))),
             (NET("fetch", "follower", "leader"), NET("fetch_resp", "leader", "follower"),
              when(_no_8400, REMOTE("leader", "follower"))), when=_zk),
    Narrower("ServeOffsetsForLeaderEpoch", _served_an_error("offsets"),
             (NET("offsets", "follower", "leader"), B("leader", "epoch", "leader")),
             (NET("offsets", "follower", "leader"), NET("offsets_resp", "leader", "follower"))),
    # ShrinkIsr reads the leader's log only for KAFKA-7152's conjunct, which a Produce by the leader cannot falsify
    # once the follower is strictly behind: shrink and produce then commute (``DataPlaneActions._isr_change_action``).
    # Nor can a follower's action of the leader's broker: the broker believes it leads (read here, so that what
    # changes that is in the stubborn set), hence drops answers (``follower.leader != m.src``) and does not truncate
    # to its HW (``leader != i``). Not TruncateOnDivergingEpoch: ``_made_leader`` keeps a pending diverging epoch,
    # and before KAFKA-13207's fix the truncation cut a leader's log too
    Narrower("ShrinkIsr", _strictly_behind(),
             (B("leader", "alive", "leader", "epoch", "isr"), C("leader", "epoch", "isr")),
             (B("leader", "isr"), C("isr")), when=_zk,
             keeps=("Produce", "ReceiveFetch", "ReceiveOffsetsForLeaderEpoch", "TruncateToHighWatermark")),
    # not narrowed on the KRaft rows (their plane applies a same-epoch ISR update too: _kraft_apply_leader_and_isr)
    Narrower("DeliverLeaderAndIsr", _ignored_leader_and_isr(), (CTL("broker"),), (CTL("broker"),), when=_zk),
    # one applied to the incarnation it was meant for (or to a broker already marked) leaves the ghost ``stale`` as it
    # is: invisible to no-stale-control-request (which is all it reads)
    Narrower("DeliverLeaderAndIsr", _head_keeps_stale(), (CTL("broker"), B("broker", *EVERY_FIELD)),
             (CTL("broker"), B("broker", *(f for f in _APPLIED if f != "stale"))), when=_zk),
)


#: what an invariant may declare it reads (``Invariant.reads``): "brokers.<field>", "controller.<field>", a state
#: field ("committed", "acked"), "network", "consumers"
def tag_resources(tag: str, n: int, k: int) -> frozenset:
    """The resources an invariant's read tag stands for; an unknown tag is a ValueError."""
    head, _, field = tag.partition(".")
    if head == "brokers" and field in EVERY_FIELD:
        return frozenset(B(ALL, field)({}, n, k))
    if head == "brokers" and not field:
        return frozenset(B(ALL, *EVERY_FIELD)({}, n, k))
    if head == "controller" and (field in Controller._fields or not field):
        return frozenset(C(*((field,) if field else Controller._fields))({}, n, k))
    if head == "network" and not field:
        return frozenset(r for r in universe(n, k) if r[0] == "net")
    if tag == "network.control":  # the controller's channels to the brokers and theirs to it
        return frozenset(CTL(ALL)({}, n, k)) | frozenset(CTL_SEND(ALL)({}, n, k)) | frozenset(SHUTDOWN(ALL)({}, n, k))
    if tag == "network.busy":  # which brokers are an end of a broker-to-broker message in flight
        return frozenset(BUSY(ALL)({}, n, k))
    if head == "consumers" and not field:
        return frozenset(CONSUMERS()({}, n, k))
    if head in _STATE_FIELDS and not field:
        return frozenset(S(head)({}, n, k))
    raise ValueError(f"unknown read tag {tag!r}: use brokers.<field>, controller.<field>, network, consumers or a state field")


# -- what changed between two states (the check of the declarations) --------------------------------------------
def changed(before: KafkaState, after: KafkaState) -> set:
    """The resources whose values differ between two states."""
    out = set()
    n = len(before.brokers)
    for i, (a, b) in enumerate(zip(before.brokers, after.brokers, strict=True)):
        if a != b:
            for f, x, y in zip(Broker._fields, a, b, strict=True):
                if x == y:
                    continue
                if f in PER_FOLLOWER:  # () where the broker keeps no map: every entry is "unknown"
                    x, y = x or (None,) * n, y or (None,) * n
                    out.update(("b", i, f, j) for j in range(n) if x[j] != y[j])
                else:
                    out.add(("b", i, f))
    ca, cb = before.controller, after.controller
    if ca != cb:
        out.update(("c", f) for f in _CONTROLLER_FIELDS if getattr(ca, f) != getattr(cb, f))
        out.update(("c", "registered", i) for i, (x, y) in enumerate(zip(ca.registered, cb.registered, strict=True)) if x != y)
    if before.network != after.network:
        old, new = set(before.network), set(after.network)
        out.update(channel_of(m) for m in old - new)
        # a control request added goes to the tail of its channel (``CTL_SEND``)
        out.update(("net", "ctl_send", CONTROLLER, m.dst) if _CHANNEL[m.kind] == "ctl" else channel_of(m) for m in new - old)
        out.update(("busy", i) for i in _busy(before.network) ^ _busy(after.network))
    out.update(("s", f) for f in _STATE_FIELDS if getattr(before, f) != getattr(after, f))
    out.update(("consumer", c) for c, (x, y) in enumerate(zip(before.consumers, after.consumers, strict=True)) if x != y)
    return out


def _busy(network: tuple) -> set:
    data = {name for name, _ in _DATA_CHANNELS}
    return {end for m in network if _CHANNEL[m.kind] in data for end in (m.src, m.dst)}


# -- the table for one model ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Declared:
    """One action of one model (a key: name and actors): what it reads and writes, its necessary conditions."""

    key: tuple
    reads: frozenset
    writes: frozenset
    guard: tuple[tuple[Conjunct, frozenset], ...]
    params: dict


class KafkaFootprints:
    """The footprints of every action a model of this configuration can take (``Model.reduction``): the interface
    ``checker.por`` reads (``keys``, ``key``, ``reads``, ``writes``, ``necessary``, ``resources``)."""

    def __init__(self, model: Any) -> None:
        self.model = model
        n, k = model.n, model.n_consumers
        self.n, self.k = n, k
        self.everything = universe(n, k)
        table: dict[str, Footprint] = {}
        for fp in FOOTPRINTS:
            if fp.when(model):
                if fp.name in table:
                    raise ValueError(f"two footprints declared for {fp.name}")
                table[fp.name] = fp
        self.table = table
        self.declared: dict[tuple, Declared] = {}
        for fp in table.values():
            ranges = [range(k) if p == "consumer" else range(n) for p in fp.params]
            for values in _product(ranges):
                params = dict(zip(fp.params, values, strict=True))
                key = (fp.name, *values)
                if fp.universal:
                    reads = writes = self.everything
                else:
                    reads = frozenset(r for t in self._templates(fp.reads) for r in t(params, n, k))
                    writes = frozenset(r for t in self._templates(fp.writes) for r in t(params, n, k))
                guard = tuple((c, frozenset(c.reads(params, n, k))) for c in fp.guard)
                self.declared[key] = Declared(key, reads, writes, guard, params)
        self.keys: list[tuple] = list(self.declared)
        self._keys_of: dict[Action, tuple] = {}
        #: key -> its state-dependent footprints: (condition, its reads, reads, writes, keeps, what only the condition
        #: reads), the first that holds applies
        self.narrowed: dict[tuple, list[tuple[Conjunct, frozenset, frozenset, frozenset, tuple, frozenset]]] = {}
        for nf in NARROWER:
            if not nf.when(model) or nf.name not in table or table[nf.name].universal:
                continue
            for key, d in self.declared.items():
                if key[0] != nf.name:
                    continue
                cond = frozenset(nf.condition.reads(d.params, n, k))
                # never more than the table declares for every state, but always what the condition reads
                effect = d.reads & frozenset(r for t in self._templates(nf.reads) for r in t(d.params, n, k))
                writes = d.writes & frozenset(r for t in self._templates(nf.writes) for r in t(d.params, n, k))
                # what only the condition reads: where the actions that keep the condition are not dependent
                only_condition = cond - effect - writes
                self.narrowed.setdefault(key, []).append((nf.condition, cond, cond | effect, writes, nf.keeps,
                                                          only_condition))

    def _templates(self, declared: tuple) -> list[Template]:
        out: list[Template] = []
        for t in declared:
            if isinstance(t, When):
                if t.applies(self.model):
                    out.extend(t.templates)
            else:
                out.append(t)
        return out

    def derived(self, resource: Resource) -> bool:
        return derived(resource)

    def key(self, action: Action) -> tuple:
        """The declared key of an action the model yields; KeyError (naming it) if it has no footprint."""
        key = self._keys_of.get(action)
        if key is None:
            fp = self.table.get(action.name)
            if fp is None:
                raise KeyError(f"no footprint declared for {action}")
            key = (action.name, *(action.param(p) for p in fp.params))
            if key not in self.declared:
                raise KeyError(f"no footprint declared for {action}")
            self._keys_of[action] = key
        return key

    def reads(self, key: tuple) -> frozenset:
        return self.declared[key].reads

    def writes(self, key: tuple) -> frozenset:
        return self.declared[key].writes

    def necessary(self, key: tuple, state: KafkaState) -> frozenset:
        """For an action disabled in ``state``: the reads of its first false necessary condition (only an action
        writing one of them can enable it), or all it reads when every declared condition holds."""
        d = self.declared[key]
        for conjunct, reads in d.guard:
            if not conjunct.holds(self.model, state, d.params):
                return reads
        return d.reads

    def narrower(self, key: tuple, state: KafkaState) -> tuple | None:
        """For an action enabled in ``state``: the entry of ``narrowed`` that applies there (condition, the
        condition's reads, reads, writes, the names of the actions that keep the condition, what only the condition
        reads), or None (the table's footprint). The entry is the table's own object, the same every time (callers
        cache by its id)."""
        entries = self.narrowed.get(key)
        if entries:
            params = self.declared[key].params
            for entry in entries:
                if entry[0].holds(self.model, state, params):
                    return entry
        return None

    def resources(self, tags: Iterable[str]) -> frozenset:
        out: set = set()
        for tag in tags:
            out |= tag_resources(tag, self.n, self.k)
        return frozenset(out)


def _product(ranges: list) -> list[tuple]:
    out: list[tuple] = [()]
    for r in ranges:
        out = [t + (v,) for t in out for v in r]
    return out
