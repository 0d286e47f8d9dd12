"""The Kafka replication model: one partition on every broker, a controller, messages in flight.

Each action below is guard first, effect second, and names its parameters; the method that computes
it names the release source it follows, and ``spec.kafka.rules`` (``kmc list --rules``) is the table
of every rule with its release, ticket and source. The table is the stable interface that scenarios
and traces rely on (brokers are numbered from 0):

=================================  ==========================  =====================================
action                             params                      what happens
=================================  ==========================  =====================================
ElectLeader                        leader                      the controller elects a live ISR
                                                               member, epoch + 1, ISR = the live
                                                               ISR: when it processes the leader's
                                                               death, or for an offline partition
                                                               whose ISR member is back
ProcessBrokerFailure               broker                      the controller processes a death that
                                                               needs no election: a follower leaves
                                                               the ISR with epoch + 1 (the last
                                                               member stays), a leader with no live
                                                               ISR member leaves the partition
                                                               offline (leader -1, epoch + 1)
PreferredLeaderElection            leader                      the leader lives: leadership moves to
                                                               another live ISR member, epoch + 1,
                                                               ISR kept
UncleanLeaderElection              leader                      (unclean=on) the partition is offline
                                                               and no ISR member lives: any live
                                                               replica, epoch + 1, ISR = {leader}
BumpLeaderEpoch                    leader                      (bumps) the leader lives: epoch + 1
                                                               with the same leader and ISR
                                                               (reassignment)
ProcessBrokerChange                broker                      the controller processes the
                                                               registration of a broker that bounced
                                                               unseen; KIP-380: failure then
                                                               start-up handling
ProcessControlledShutdown          broker, leader              the controller handles the oldest
                                                               ControlledShutdown of the broker;
                                                               ``leader`` is the leader afterwards
DeliverLeaderAndIsr                broker, epoch               the oldest control request to the
                                                               broker is a LeaderAndIsr and arrives
                                                               (FIFO channel); applied if its epoch
                                                               is newer than the broker's (and,
                                                               KIP-380, its broker epoch is not
                                                               older than the broker's)
DeliverStopReplica                 broker                      the oldest control request to the
                                                               broker is a StopReplica and arrives
LoseControlRequest                 broker                      (losses) a controller failover drops
                                                               the oldest queued request to the
                                                               broker; a newer one is still queued
Produce                            leader                      a broker that believes it leads
                                                               appends a record in its epoch
SendFetch                          follower, leader            fetch from the LEO
ServeFetch                         leader, follower            the leader answers records, its HW,
                                                               an error or a diverging epoch
ReceiveFetch                       follower, leader            append / record a diverging epoch /
                                                               truncate on OFFSET_OUT_OF_RANGE /
                                                               retry / drop
TruncateOnDivergingEpoch           follower                    (truncate-on-fetch) apply the
                                                               diverging epoch recorded by
                                                               ReceiveFetch
SendOffsetsForLeaderEpoch          follower, leader            ask the end offset of the latest
                                                               epoch
ServeOffsetsForLeaderEpoch         leader, follower            the leader answers (epoch, end
                                                               offset)
ReceiveOffsetsForLeaderEpoch       follower, leader            truncate (another round if KIP-279
                                                               says so), or retry after an error
TruncateToHighWatermark            follower                    a truncating follower with no epoch
                                                               in its cache truncates to its HW
AdvanceHighWatermark               leader                      HW = min LEO over the leader's ISR
                                                               view
ShrinkIsr                          leader, follower            the current leader drops a follower
ExpandIsr                          leader, follower            the current leader re-adds a
                                                               caught-up follower
Crash                              broker                      in-memory state and its messages are
                                                               lost
CrashLosingTail                    broker, keep                (lossy-crash=on) a crash that keeps
                                                               only the first ``keep`` records of
                                                               the log
Restart                            broker                      once the controller processed its
                                                               death: back with its log, epoch cache
                                                               and HW and a new broker epoch; the
                                                               controller registers it at once and
                                                               sends it the current LeaderAndIsr
ControlledShutdown                 broker                      (shutdowns) the broker asks the
                                                               controller to move its leadership
                                                               away and stop its replica
Bounce                             broker                      (bounces) a crash and a
                                                               re-registration the controller has
                                                               not processed: new incarnation and
                                                               broker epoch; the controller keeps
                                                               its queue of control requests to the
                                                               broker
=================================  ==========================  =====================================

On the KRaft rows (``kraft-*``) the controller is KRaft's: FenceBroker, ProcessAlterPartition,
LoseAlterPartitionResponse, ReceiveAlterPartitionResponse and UncleanShutdown join the table,
ShrinkIsr / ExpandIsr send an AlterPartition, ProcessControlledShutdown(broker, leader) is the
leader's heartbeat with wantShutDown (no request message), and ProcessBrokerFailure,
ProcessBrokerChange, ControlledShutdown, Bounce, LoseControlRequest and DeliverStopReplica do not
occur (``spec.kafka.actions_kraft``, ``actions_alter_partition`` and ``actions_broker_lifecycle``
have their tables and sources).

Control plane. The controller keeps, per broker, the broker epoch of the registration it last
processed (``Controller.registered``), or DEAD once it processed the broker's death. A Crash is
processed later by ElectLeader / ProcessBrokerFailure (0.10.2 to 2.x
``KafkaController.onBrokerFailure``); the queue of control requests to the crashed broker is dropped
with its connection, and it can Restart only after the controller processed its death (a crash and
restart the controller never saw is a Bounce). A Bounce is seen late: until ProcessBrokerChange,
requests queued for the old incarnation reach the new one, stamped with the old broker epoch.
ProcessBrokerChange without KIP-380 finds the broker in the old list and the new one and does
nothing; with ``detect-bounced-broker`` it drops the queue to the broker, gives the partition a new
epoch if the broker led it (the failure handling re-elects it: a simplification, Kafka would first
try another ISR member) and sends the current LeaderAndIsr. ProcessControlledShutdown: rejected if
the broker is down or (``reject-stale-shutdown``) the request carries an older broker epoch than the
one registered; a leader hands leadership to each live ISR member in turn (one successor each; none
alive: nothing changes, Kafka answers "partitions remaining"), a follower leaves the ISR; both take
a new epoch (not enabled at the epoch bound), with a LeaderAndIsr to the other live brokers (and to
the shutting-down broker when leadership moved) and a StopReplica to the broker. The ghost stamp
``meant`` of a request is the incarnation of its destination when the controller sent it, or, for a
StopReplica, the incarnation that asked to shut down.

Data plane. A broker has at most one request outstanding per leader (Kafka's fetcher thread sends,
then waits for the answer, and truncates only after it), and never sends to a broker that is down.
With truncate-on-fetch the diverging epoch of an answer is recorded under the fetcher's lock
(ReceiveFetch) and applied in a second step (TruncateOnDivergingEpoch) after the lock was released,
as 2.8's ``AbstractFetcherThread.processFetchRequest`` does: a LeaderAndIsr may be applied in
between (the window of KAFKA-13207, KAFKA-14704 and KAFKA-18991).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from spec.kafka.actions_alter_isr import AlterIsrActions
from spec.kafka.actions_alter_partition import AlterPartitionActions
from spec.kafka.actions_broker_lifecycle import BrokerLifecycleActions
from spec.kafka.actions_control import ControlPlaneActions, channel_order
from spec.kafka.actions_data import DataPlaneActions, busy
from spec.kafka.actions_kraft import KRaftControllerActions, kraft_bound_sets
from spec.kafka.actions_reassignment import ReassignmentActions
from spec.kafka.bounds import CLIENTS, DEFAULTS, GROUPS, REPLICAS, SWITCHES, bound_values
from spec.kafka.clients import ClientActions, new_consumer, producer_for
from spec.kafka.controllers import control_plane
from spec.kafka.declared import build_action_tables

# every family's actions (spec.kafka.declared), in table order
from spec.kafka.families import ACTIONS
from spec.kafka.log import UNDEFINED
from spec.kafka.protocols import DEFAULT_PROTOCOL, Features
from spec.kafka.releases import resolve
from spec.kafka.state import (
    CONTROLLED_SHUTDOWN,
    FETCH,
    FETCH_RESPONSE,
    FETCHING,
    IDLE_NONE,
    LEADER_AND_ISR,
    NO_FETCHER,
    OFFSETS_FOR_LEADER_EPOCH,
    OFFSETS_FOR_LEADER_EPOCH_RESPONSE,
    STATE_TYPES,
    STOP_REPLICA,
    TRUNCATING,
    Broker,
    Controller,
    KafkaState,
    decode_state,
    decode_states,
    encode_states,
    state_parts,
)
from spec.kafka.symmetry import canonical as kafka_canonical
from spec.kafka.symmetry import reduces_nothing
from spec.kafka.updates import remove_message, truncate_broker, with_broker, with_fetch_state
from spec.model import Action, DeadMessages, Model, StateParts

#: ``kmc matrix`` bounds of the client columns, each the replica columns' data bounds (two epochs, a
#: crash) with one client. acknowledged-durable: a producer with acks=all and two records, as
#: committed-durable (KAFKA-13141 needs the second record: a deposed leader's HW passes it), 0.16 to
#: 0.25 million states where it holds. consumed-stays: one consumer and one record, enough for a
#: consumed record to be lost where replication loses it (0.10.2's KIP-101 story, 2.8.0's
#: KAFKA-13207) or by an unclean election, 0.1 to 0.13 million states. no-silent-skip needs a second
#: record (one consumed, one that replaces it below the consumer's position)
ACKS_MATRIX_BOUNDS = ("records=2", "epochs=2", "crashes=1", "acks=-1")
CONSUMED_MATRIX_BOUNDS = ("records=1", "epochs=2", "crashes=1", "consumers=1")
SKIP_MATRIX_BOUNDS = ("records=2", "epochs=2", "crashes=1", "consumers=1")


class KafkaModel(ClientActions, ReassignmentActions, KRaftControllerActions, AlterPartitionActions,
                 AlterIsrActions, BrokerLifecycleActions, ControlPlaneActions, DataPlaneActions,
                 Model):
    """The model: bounds, feature switches and action tables, and the next-state relation
    (``successors``: controller actions, each broker's own actions, message deliveries).

    Composed once, when it is built: the action families (``spec.kafka.actions_control``,
    ``actions_data``, ``actions_kraft``, ``actions_alter_partition``, ``actions_alter_isr``,
    ``actions_broker_lifecycle``, ``actions_reassignment``, ``clients``) are base classes whose
    functions all have their own names (none overrides another's), the protocol row's controller is
    ``self.control_plane`` (``spec.kafka.controllers``: ZooKeeper, ZooKeeper with AlterIsr, KRaft)
    and the producer's acknowledgement is ``self.producer`` (``spec.kafka.clients.producer_for``).
    Every feature switch is read as ``self.features.<name>`` (``spec.kafka.protocols.Features``);
    nothing is rebound on the model after ``__init__``."""

    name = "kafka"
    family = "kafka"
    #: ``kmc matrix``: the bounds each column is checked at; the others at the defaults (records=2,
    #: epochs=2, crashes=1: KIP-101's lost commit, KAFKA-13141, KAFKA-14704, KAFKA-10706,
    #: KAFKA-18991's stale append). Log Matching in its three forms at records=3 and no crash:
    #: KIP-279's scenario 1 (a preferred election and a fast return) breaks 0.11.0 and, through
    #: 2.0.0's lookup, 2.0.0 (KAFKA-7415). The control-plane columns need the actions their stories
    #: need and small data bounds: a bounce and a controlled shutdown for KIP-380's
    #: (no-stale-control-request, no-bounce-stall); two epoch bumps with the same leader for
    #: KAFKA-7786's (no-fence-stall)
    matrix_bounds = {
        **{name: ("records=3", "crashes=0") for name in ("log-matching", "log-matching-all-pairs",
                                                         "log-matching-raft")},
        "no-stale-control-request": ("records=1", "epochs=1", "crashes=0", "bumps=1", "shutdowns=1",
                                     "bounces=1"),
        "no-bounce-stall": ("records=1", "epochs=1", "crashes=0", "bumps=1", "shutdowns=1",
                            "bounces=1"),
        "no-fence-stall": ("records=1", "epochs=2", "crashes=0", "bumps=2"),
        "acknowledged-durable": ACKS_MATRIX_BOUNDS,
        "consumed-stays": CONSUMED_MATRIX_BOUNDS,
        "no-silent-skip": SKIP_MATRIX_BOUNDS,
    }
    #: ``kmc matrix --bounds deep``: where rows that hold at the default bounds break with more room
    #: (run in the benchmark with a time budget, not in CI): three brokers for KIP-320's motivation
    #: (a follower truncating against a stale leader) and KAFKA-7128; four records for KAFKA-13207's
    #: story and KIP-279's scenario 1 with more than one record in the returning leader's epoch;
    #: three epoch bumps for KAFKA-7786 after a retry; a crash with the control-plane actions
    def matrix_bound_sets(self) -> dict[str, dict[str, tuple[str, ...]]]:
        if self.features.kraft:
            return kraft_bound_sets()  # spec.kafka.actions_kraft: the KRaft rows' own bounds
        deep_data = ("brokers=3", "records=1", "epochs=2", "crashes=1")
        return {
            "default": dict(KafkaModel.matrix_bounds),
            "deep": {
                **{name: ("records=4", "crashes=0")
                   for name in ("log-matching", "log-matching-all-pairs",
                                "log-matching-raft")},
                **{name: deep_data for name in ("committed-durable", "no-uncommitted-below-hw",
                                                "replica-sanity")},
                "no-stale-control-request": ("records=1", "epochs=2", "crashes=1", "bumps=1",
                                             "shutdowns=1", "bounces=1"),
                "no-bounce-stall": ("records=1", "epochs=2", "crashes=1", "bumps=1", "shutdowns=1",
                                    "bounces=1"),
                "no-fence-stall": ("records=1", "epochs=3", "crashes=0", "bumps=3"),
                **{name: SKIP_MATRIX_BOUNDS for name in ("consumed-stays", "no-silent-skip")},
                "acknowledged-durable": ("records=3", "epochs=2", "crashes=1", "acks=-1"),
            },
        }

    #: extra rows of the default matrix: what-if rows with one switch changed (KAFKA-9654's fix
    #: taken out of the first truncate-on-fetch release; unclean election allowed in the newest)
    matrix_variants = (("2.8.0", ("kafka-9654=off",)), ("3.9.1", ("unclean=on",)))
    #: a bounded run ends in states with nothing left to do (every record produced, every epoch
    #: used, a broker down past the crash bound): those are the bounds, not the protocol, so
    #: ``kmc check kafka`` checks deadlock only with ``--deadlock``
    deadlock_by_default = False
    #: no-silent-skip needs two records (a consumer reads one, another replaces it below its
    #: position), a crash and two epochs: 0.7 to 0.85 million states per holding row with a
    #: consumer, about half a minute each, so it is checked by name
    #: (``kmc matrix --invariant no-silent-skip`` takes its bounds from ``matrix_bounds``), not by
    #: default. acknowledged-durable and consumed-stays are default columns at their own bounds
    #: elr-safety is about eligible leader replicas (KIP-966), which only the KRaft controller
    #: keeps: on a ZooKeeper row it holds vacuously, so its cell is left empty there rather than
    #: costing a search
    @property
    def matrix_excluded(self) -> tuple[str, ...]:
        return ("no-silent-skip",) if self.features.kraft else ("no-silent-skip", "elr-safety")

    #: broker ids are interchangeable: ``--symmetry`` (see spec.kafka.symmetry)
    has_symmetry = True

    def __init__(self, protocol: str = DEFAULT_PROTOCOL, features: Features | None = None,
                 **bounds: int) -> None:
        """``bounds``: any of ``spec.kafka.bounds.BOUNDS`` by name (``brokers=3``), the others at
        their defaults."""
        bound = bound_values(bounds)
        self.brokers = bound["brokers"]
        self.records = bound["records"]
        self.epochs = bound["epochs"]
        self.crashes = bound["crashes"]
        self.inflight = bound["inflight"]
        self.bumps = bound["bumps"]
        self.shutdowns = bound["shutdowns"]
        self.bounces = bound["bounces"]
        self.losses = bound["losses"]
        self.protocol = protocol
        self.features = features if features is not None else resolve(protocol)
        # the replicas' bounds always, the clients' and the switches' where they differ from their
        # defaults (no client: the replica-only state space); the KRaft families add theirs on the
        # KRaft rows (``_init_kraft``)
        self.constants = {name: value for name, value in bound.items()
                          if GROUPS[name] == REPLICAS
                          or (GROUPS[name] in (CLIENTS, SWITCHES) and value != DEFAULTS[name])}
        #: KAFKA-13091's stale HW (``Broker.hw_stale``): ``hw_events`` on a release without the fix
        self.hw_events = (bound["hw_events"] and self.features.alter_by_request
                          and not self.features.kafka_13091)
        acks, min_isr, reassignments = bound["acks"], bound["min_isr"], bound["reassignments"]
        self.acks = acks
        self.min_isr = min_isr
        self._init_clients(bound["consumers"], bound["consumer_inflight"])
        self._init_kraft(bound["alters"], bound["unclean_shutdowns"], bound["alter_losses"],
                         bound["metadata_lag"], bound["clean_shutdowns"], bound["fences"])
        # spec.kafka.actions_reassignment: after the KRaft families
        self._init_reassignment(reassignments)
        build_action_tables(self, ACTIONS)  # every family's table, at the bounds set above
        # -- the composition, chosen once: the protocol row's controller (spec.kafka.controllers:
        # -- ZooKeeper, ZooKeeper with AlterIsr, KRaft) and the producer's acknowledgement
        # -- (spec.kafka.clients: acks=0, 1 or all)
        self.control_plane = control_plane(self.features, reassignments)
        self.producer = producer_for(acks, min_isr, self.features.effective_min_isr, self.brokers)
        #: the declared actions no plane calls (``Declared.steps``): run after the planes' actions,
        #: in declaration order
        self.own_steps = tuple(d.steps for d in ACTIONS if d.steps is not None)

    # -- the model interface -----------------------------------------------------------------------
    def state_types(self) -> tuple[type, ...]:
        return STATE_TYPES

    def encode_state(self, state: KafkaState) -> KafkaState:
        return state  # NamedTuples of ints, bools and tuples: msgpack packs it as it is

    def decode_state(self, plain: tuple) -> KafkaState:
        return decode_state(plain)

    def encode_states(self, states: Sequence[KafkaState]) -> tuple:
        return encode_states(list(states))

    def decode_states(self, plain: tuple) -> list[KafkaState]:
        return decode_states(plain)

    def state_parts(self) -> StateParts:
        return state_parts(self.brokers)

    #: the least renaming of broker ids (``spec.kafka.symmetry``); a plain function, as the engine
    #: calls it once a successor
    canonical = staticmethod(kafka_canonical)

    def symmetry_reduces_nothing(self) -> str | None:
        return reduces_nothing(self.brokers)

    def dead_messages(self) -> DeadMessages:
        """The answers in flight that are dead, dropped (``spec.kafka.dead``), for
        ``--reduce dead``."""
        from spec.kafka.dead import DeadMessages

        return DeadMessages(self)

    def kernel(self) -> Any:
        """The compiled kernel (``spec/kafka/kernel.c``, which follows the action families rule for
        rule; ``spec.kafka.kernel`` says which rows and bounds it compiles)."""
        from spec.kafka.kernel import kernel

        return kernel(self)

    def describe(self) -> dict[str, Any]:
        out = super().describe()
        out["protocol"] = self.protocol
        out["features"] = self.features.as_dict()
        return out

    def why_not(self, state: Any, name: str, params: dict[str, Any],
                history: Sequence[Any] = ()) -> str | None:
        """The guard a blocked step fails, in Kafka's words (``spec.kafka.blocked``)."""
        from spec.kafka.blocked import why_not

        return why_not(self, state, name, params, history)

    def what_runs(self) -> dict[str, Any]:
        """The protocol asked for, the release it is (a number: ``spec.kafka.releases``), the row,
        the mode, the flags that are on and those that differ from the row's defaults (the release's
        own and any ``--feature``)."""
        from spec.kafka.releases import run_description

        return run_description(self.protocol, self.features)

    def init_states(self) -> list[KafkaState]:
        """Broker 0 leads in epoch 0 with every broker in the ISR; every log is empty."""
        n = self.brokers
        isr = tuple(range(n))
        leader_cache = ((0, 0),) if self.features.kafka_7415 else ()
        leader = Broker(alive=True, log=(), hw=0, cache=leader_cache, leader=0, epoch=0, isr=isr,
                        fetch=NO_FETCHER, remote=(-1,) * n, broker_epoch=0, stopping=False,
                        incarnation=0, stale=False, reconciled=0, idle_cause=IDLE_NONE,
                        pending_diverging=(), remote_epochs=(-1,) * n
                        if self.features.fetch_carries_broker_epoch else ())
        follower = leader.with_(cache=(), fetch=FETCHING, remote=(), reconciled=-1,
                                remote_epochs=())
        controller = Controller(leader=0, epoch=0, isr=isr, registered=(0,) * n)
        return [KafkaState(brokers=(leader,) + (follower,) * (n - 1), controller=controller,
                           network=(), produced=0, crashes=0, bumps=0, shutdowns=0, bounces=0,
                           losses=0, committed=(), acked=(), consumers=(new_consumer(),)
                           * self.consumers)]

    def successors(self, s: KafkaState) -> list[tuple[Action, KafkaState]]:
        # one list, filled in order by each family (no nested generators: this is the hot path)
        out: list[tuple[Action, KafkaState]] = []
        plane = self.control_plane
        plane.actions(self, s, out)
        for i in range(self.brokers):
            plane.broker_actions(self, s, i, out)
        self._deliveries(s, out)
        if self.consumers:
            self._consumer_actions(s, out)
        # spec.kafka.declared: an action declared with its own function
        for steps in self.own_steps:
            steps(self, s, out)
        return out

    # -- one broker's own actions (the ZooKeeper rows': actions_control._zookeeper_broker_actions;
    # -- KRaft's: actions_broker_lifecycle)
    def _replica_actions(self, s: KafkaState, i: int, b: Broker, out: list) -> None:
        """What a live replica does on its own, under either controller: finish a truncation to a
        diverging epoch, lead (produce, HW, ISR: the control plane's ``leader_actions``, as the ISR
        change differs) or follow (send its requests), or truncate to its HW with no epoch."""
        if b.pending_diverging:
            self._truncate_on_diverging_action(s, i, b, out.append)
        leader = b.leader
        if leader == i:
            self.control_plane.leader_actions(self, s, i, b, out)
        elif leader >= 0 and s.brokers[leader].alive:
            # KIP-903 (KRaft): the Fetch carries the follower's broker epoch
            broker_epoch = b.broker_epoch if self.features.fetch_carries_broker_epoch else UNDEFINED
            self._follower_actions(s, i, b, out, broker_epoch)
        if b.fetch == TRUNCATING and not b.cache and leader != i and not busy(s.network, i, leader):
            # a follower with no epoch asks for UNDEFINED_EPOCH and gets UNDEFINED_EPOCH_OFFSET: it
            # truncates to its HW (the round trip is folded into one step; the fetcher thread first
            # handles the answer it waits for, hence the busy check)
            truncated = with_fetch_state(truncate_broker(b, b.hw, self.features.kafka_10706_fix),
                                         fetch=FETCHING)
            out.append((self._trunc_hw[i], with_broker(s, i, truncated)))

    # -- messages ----------------------------------------------------------------------------------
    def _deliveries(self, s: KafkaState, out: list) -> None:
        # the controller's channel to a broker is FIFO: the oldest request comes first. The (leader
        # epoch, broker epoch) a request carries only grows along a channel, and a StopReplica comes
        # after a LeaderAndIsr of the same pair (see channel_order)
        network = s.network
        plane = self.control_plane
        if not network:
            return
        add = out.append
        oldest: dict[int, Any] = {}
        queued: dict[int, int] = {}
        for m in network:
            kind = m.kind
            if kind == LEADER_AND_ISR or kind == STOP_REPLICA:
                queued[m.dst] = queued.get(m.dst, 0) + 1
                first = oldest.get(m.dst)
                if first is None or channel_order(m) < channel_order(first):
                    oldest[m.dst] = m
            elif kind > STOP_REPLICA:
                break
        if oldest:
            for dst in sorted(oldest):
                m = oldest[dst]
                if m.kind == LEADER_AND_ISR:
                    add((self._deliver[dst][m.epoch], plane.apply_leader_and_isr(self, s, m)))
                else:
                    add((self._deliver_stop[dst], self._apply_stop_replica(s, m)))
                if s.losses < self.losses and queued[dst] > 1:
                    # a controller failover: the old controller's queue is dropped and the new one
                    # sends the current state; the broker misses the oldest request but still gets a
                    # newer one
                    add((self._lose[dst], s.with_(network=remove_message(network, m),
                                                  losses=s.losses + 1)))
        last_src = -1
        for m in network:
            kind = m.kind
            if kind == LEADER_AND_ISR or kind == STOP_REPLICA:
                continue
            if kind == CONTROLLED_SHUTDOWN:
                if m.src != last_src:  # the controller handles one broker's requests in order
                    last_src = m.src
                    self._controlled_shutdowns(s, m, out)
            elif kind == FETCH:
                add((self._serve_fetch[m.dst][m.src], self._serve_fetch_state(s, m)))
            elif kind == FETCH_RESPONSE:
                add((self._receive_fetch[m.dst][m.src], self._receive_fetch_state(s, m)))
            elif kind == OFFSETS_FOR_LEADER_EPOCH:
                add((self._serve_offsets[m.dst][m.src], self._serve_offsets_state(s, m)))
            elif kind == OFFSETS_FOR_LEADER_EPOCH_RESPONSE:
                add((self._receive_offsets[m.dst][m.src], self._receive_offsets_state(s, m)))
        # AlterPartition (ZooKeeper: AlterIsr) and its answer, where the control plane has them
        plane.deliveries(self, s, out)
