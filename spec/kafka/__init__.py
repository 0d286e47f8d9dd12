"""The Kafka replication model (``kmc check kafka``, ``kmc matrix``).

One partition replicated on every broker of a small cluster, a controller standing for ZooKeeper's
(leader, leader epoch, ISR), and the requests between them in flight. Protocol versions are data:
named sets of feature flags (``spec.kafka.protocols``), each flag switchable with ``--feature``.

Modules
    protocols  the ``Features`` flags and the version table (hw-truncation, kip-101, kip-279, kip-320,
               kip-380, truncate-on-fetch)
    log        records, the leader epoch cache and the lookups (KIP-101, KIP-279, diverging epoch),
               pure functions on tuples: the seed's table A-G is tested against them
    state      the NamedTuples of a state: Broker, Controller, one class per message type, KafkaState
    model      ``KafkaModel``: the actions (table in its docstring), guard first, effect second
    scenario   run an explicit list of (action, params) steps; refuses a step that is not enabled
    invariants/kafka_log_matching, kafka_durability, kafka_sanity, kafka_control: log-matching,
               committed-durable, replica-sanity, no-stale-control-request, no-fence-stall (and its
               liveness form no-fence-stall-liveness, checked only when named)

State (all ints, bools, tuples; -1 is "none")
    KafkaState(brokers, controller, network, produced, crashes, bumps, shutdowns, bounces, committed)
    Broker(alive, log, hw, cache, leader, epoch, isr, fetch, remote, broker_epoch, stopping, incarnation,
        stale)
        log: (Record(epoch, ident), ...); LEO = len(log); cache: ((epoch, start offset), ...);
        leader/epoch/isr: the partition state last learned from a LeaderAndIsr; fetch: 0 none,
        1 truncating, 2 fetching; remote: as leader, each replica's LEO from its last fetch
        (-1 unknown), () otherwise; broker_epoch: KIP-380 generation, + 1 at each registration;
        stopping: sent a ControlledShutdown in this incarnation; ghosts: incarnation (restart count)
        and stale (applied a control request meant for an earlier incarnation; sticky).
        A crash keeps log, cache and HW (lossy-crash: a crash may cut the log's tail) and loses
        the rest; a restart comes back with no leader, no epoch, no fetcher.
    Controller(leader, epoch, isr, registered): registered = the broker epoch of each broker's
        registration the controller last processed (differs from the broker's after a Bounce)
    network: sorted tuple of messages, LeaderAndIsr(dst, epoch, leader, isr, broker_epoch, meant),
        StopReplica(dst, epoch, broker_epoch, meant), ControlledShutdown(src, broker_epoch,
        incarnation), FetchRequest(src, dst,
        epoch, offset, last_epoch), FetchResponse(src, dst, epoch, offset, error, records, hw,
        diverging_epoch, diverging_offset), OffsetsRequest(src, dst, epoch, requested),
        OffsetsResponse(src, dst, epoch, requested, error, answer_epoch, end_offset); each starts
        with a ``kind`` int. Error codes: NOT_LEADER, FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH,
        OFFSET_OUT_OF_RANGE (``spec.kafka.state``).
    committed: ghost, sorted (offset, epoch, ident) of every record some leader's HW passed.

Actions (params): ElectLeader(leader), PreferredLeaderElection(leader), UncleanLeaderElection(leader),
DeliverLeaderAndIsr(broker, epoch), Produce(leader), SendFetch(follower, leader), ServeFetch(leader,
follower), ReceiveFetch(follower, leader), SendOffsetsForLeaderEpoch(follower, leader),
ServeOffsetsForLeaderEpoch(leader, follower), ReceiveOffsetsForLeaderEpoch(follower, leader),
TruncateToHighWatermark(follower), AdvanceHighWatermark(leader), ShrinkIsr(leader, follower),
ExpandIsr(leader, follower), Crash(broker), CrashLosingTail(broker, keep), Restart(broker); issue 4:
BumpLeaderEpoch(leader), ControlledShutdown(broker), ProcessControlledShutdown(broker, leader),
DeliverStopReplica(broker), Bounce(broker), ProcessBrokerChange(broker). The table and the control
plane's rules are in ``spec.kafka.model``'s docstring.

Modelling choices (each a place where the model could disagree with Kafka; say so in a trace)
- Initial state: broker 0 leads epoch 0, every broker in the ISR, empty logs. The seeds' epoch 1
  is the model's epoch 0. Brokers are numbered from 0.
- The controller may move leadership to any live ISR member while the leader lives (preferred
  election and reassignment alike), elects from the live ISR when the leader is dead, and (unclean)
  from any live replica when no ISR member lives. It sends LeaderAndIsr to the live replicas; a
  restarted broker gets the current one. The controller-to-broker channel is FIFO (Kafka's
  controller has one queue and one sender thread per broker); everything else may be reordered.
  Messages to or from a broker are lost when it crashes.
- A follower has one request outstanding per leader and never sends to a broker that is down.
  A response is applied only if the follower still follows its sender in the same fetcher state
  and (for fetches) its LEO still equals the fetch offset; otherwise it is dropped. Errors make a
  follower retry, except that before KIP-320 an OffsetsForLeaderEpoch error falls back to the HW
  (KIP-279: "any error ... will result in falling back to truncating using High Watermark").
- Before KIP-320 a follower whose leader did not change only learns the new epoch (0.11's
  makeFollower); with fencing every epoch bump restarts truncation.
- A fetch copies every record from the fetch offset; the follower's HW becomes min(leader HW, LEO).
  A diverging fetch response truncates and does not adopt the leader's HW (KAFKA-14704's fix,
  always on). The HW advance is its own action: min LEO over the leader's ISR view.
- The leader shrinks any follower out of the ISR at any time (lag is time-based in Kafka) and
  expands it when its fetch offset reached the HW; both are ZooKeeper writes that only the leader
  of the controller's current epoch can make.
- Records are one per batch: KIP-279's scenario 1 case "n > 20" relied on truncating to a batch
  boundary and diverges here (see tests/test_kafka_scenarios.py).
- KIP-279 and truncate-on-fetch share one lookup (``log.end_offset_for``): a request below every
  known epoch gets (requested, start of the lowest epoch), as the seed's truncation section says.

- Control plane (issue 4): Crash and Restart are seen by the controller at once, a Bounce only when
  it processes the broker change; control requests to a broker form one FIFO channel (LeaderAndIsr
  and StopReplica together) that survives an unseen bounce. KIP-570's caveat (a StopReplica
  overtaking a LeaderAndIsr within one incarnation) cannot happen here: the channel keeps its order.
  A fetcher thread handles the answer it waits for before it truncates again (TruncateToHighWatermark
  waits for it); without that, the fetch path showed a KAFKA-7786-like stall that Kafka's
  single-threaded fetcher cannot have.

Default bounds: brokers=2, records=2, epochs=2 (three leader epochs: 0, 1, 2), crashes=1,
inflight=0 (no bound beyond one outstanding request per follower), bumps=0, shutdowns=0,
bounces=0 (the control-plane actions are off, so the first four versions keep their state counts).
``kmc matrix`` checks no-stale-control-request and no-fence-stall at records=1, epochs=1, crashes=0,
bumps=1, shutdowns=1, bounces=1 (``KafkaModel.matrix_bounds``; ``--uniform-bounds`` to drop them),
where the stories of issue 4 fit: KAFKA-7786 (13 steps, via a bounce or via a crash and restart,
the seed's ten steps in their smallest form), the bounce during controlled shutdown (4 steps to the
stale StopReplica), the missed fast bounce (2 steps); the stale ControlledShutdown acted on after a
restart needs crashes=1 (6 steps, tests/test_kafka_control.py). With epoch bumps alone (records=1,
epochs=2, crashes=0, bumps=2, no shutdown or bounce) kip-320 stalls in 9 steps, the seed's story in
its smallest form, and ``--feature kafka-7786-fix=on`` alone makes it hold (18,496 states).
kip-380 also holds both control-plane invariants at larger bounds: records=1, epochs=2 (690,697
states); crashes=1 (349,598); brokers=3, records=0 (2,441,713); records=0, epochs=2, bumps=2,
bounces=2 (251,510), each with bumps, shutdowns and bounces >= 1. Every violated cell of the
matrix has its shortest counterexample inside them; the seeds' own scenarios need more (KIP-279's
scenario 1: records=4 or more, scenario 3: records=4, epochs=3, crashes=4 and unclean=on; KIP-101's
second scenario: records=3, crashes=2, lossy-crash=on) and are checked step by step in the tests.

The matrix (``kmc matrix``, default bounds as above; 7 rows x 5 invariants, about 25 s of CPU):

    row                         log-matching  committed-durable  replica-sanity  no-stale-control  no-fence-stall
    hw-truncation               violated 14   violated 12        violated 10     violated 3        violated 2
    kip-101                     violated 17   violated 16        violated 10     violated 3        violated 2
    kip-279                     violated 17   violated 16        violated 10     violated 3        violated 2
    kip-320                     holds 161590  holds 161590       violated 13     violated 3        violated 2
    kip-380                     holds 158915  holds 158915       violated 13     holds 74908       holds 74908
    truncate-on-fetch           holds 115129  holds 115129       holds 115129    holds 59480       holds 59480
    kip-380,kafka-7786-fix=off  holds 161590  holds 161590       violated 13     holds 75286       violated 13

(violated N: shortest counterexample in N steps; holds N: N distinct states, depths 31-37). Before
KIP-380 the shortest no-stale-control-request counterexample is an epoch bump whose LeaderAndIsr
reaches the broker after an unseen bounce (KIP-380's KAFKA-7235 case) and the shortest no-fence-stall
one the missed fast bounce; KAFKA-7786 itself is the last row's. replica-sanity under kip-320/kip-380
is KAFKA-10706 (a follower keeps an epoch it registered as leader but never wrote in, because 2.1's
truncation at the LEO skips the epoch cache): ``--feature kafka-10706-fix=on`` makes it hold.
"""

from __future__ import annotations

from typing import Any

from invariants.registry import add_family
from spec.kafka.model import DEFAULTS, KafkaModel
from spec.kafka.protocols import DEFAULT_PROTOCOL, FLAG_ALIASES, FLAGS, PROTOCOL_ALIASES, RELEASES, resolve
from spec.kafka.rules import rule_rows
from spec.registry import Constant, ModelInfo, register

__all__ = ["KafkaModel", "build", "INFO"]

add_family("kafka", "invariants.kafka_log_matching", "invariants.kafka_durability", "invariants.kafka_sanity",
           "invariants.kafka_control")


def build(constants: dict[str, Any], protocol: str = DEFAULT_PROTOCOL, features: dict[str, bool] | None = None):
    return KafkaModel(
        brokers=constants.get("brokers", DEFAULTS["brokers"]),
        records=constants.get("records", DEFAULTS["records"]),
        epochs=constants.get("epochs", DEFAULTS["epochs"]),
        crashes=constants.get("crashes", DEFAULTS["crashes"]),
        inflight=constants.get("inflight", DEFAULTS["inflight"]),
        bumps=constants.get("bumps", DEFAULTS["bumps"]),
        shutdowns=constants.get("shutdowns", DEFAULTS["shutdowns"]),
        bounces=constants.get("bounces", DEFAULTS["bounces"]),
        losses=constants.get("losses", DEFAULTS["losses"]),
        protocol=protocol,
        features=resolve(protocol, features),
    )


INFO = register(
    ModelInfo(
        name="kafka",
        description="Kafka replication of one partition: produce, fetch, truncation, elections, crashes",
        constants=(
            Constant("brokers", DEFAULTS["brokers"], "brokers, each holding a replica", int, minimum=1, maximum=5),
            Constant("records", DEFAULTS["records"], "records produced, at most", int, minimum=0, maximum=8),
            Constant("epochs", DEFAULTS["epochs"], "highest leader epoch (elections: epoch 0 is the first)", int,
                     minimum=0, maximum=8),
            Constant("crashes", DEFAULTS["crashes"], "broker crashes, at most", int, minimum=0, maximum=8),
            Constant("inflight", DEFAULTS["inflight"], "broker requests and responses in flight, at most (0: no bound)",
                     int, minimum=0, maximum=16),
            Constant("bumps", DEFAULTS["bumps"], "leader epoch bumps with an unchanged leader (reassignment), at most", int,
                     minimum=0, maximum=8),
            Constant("shutdowns", DEFAULTS["shutdowns"], "ControlledShutdown requests, at most", int, minimum=0, maximum=8),
            Constant("bounces", DEFAULTS["bounces"], "bounces the controller does not see at once, at most", int,
                     minimum=0, maximum=8),
            Constant("losses", DEFAULTS["losses"], "control requests lost in a controller failover (a newer one to the "
                     "same broker still queued), at most", int, minimum=0, maximum=8),
        ),
        build=build,
        protocols={r.name: r.summary for r in RELEASES},
        default_protocol=DEFAULT_PROTOCOL,
        features={**FLAGS, **{old: f"alias of {new}" for old, new in FLAG_ALIASES.items()}},
        protocol_aliases=dict(PROTOCOL_ALIASES),
        rules=rule_rows,
    )
)
