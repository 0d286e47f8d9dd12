"""The Kafka replication model (``kmc check kafka``, ``kmc matrix``).

One partition replicated on every broker of a small cluster, a controller standing for ZooKeeper's
(leader, leader epoch, ISR), and the requests between them in flight. Protocol versions are data:
named sets of feature flags (``spec.kafka.protocols``), each flag switchable with ``--feature``.

Modules
    protocols  the ``Features`` flags and the version table (hw-truncation, kip-101, kip-279,
               truncate-on-fetch); issue 4 adds kip-320 / kip-380 rows and flags there
    log        records, the leader epoch cache and the lookups (KIP-101, KIP-279, diverging epoch),
               pure functions on tuples: the seed's table A-G is tested against them
    state      the NamedTuples of a state: Broker, Controller, one class per message type, KafkaState
    model      ``KafkaModel``: the actions (table in its docstring), guard first, effect second
    scenario   run an explicit list of (action, params) steps; refuses a step that is not enabled
    invariants/kafka_log_matching, kafka_durability, kafka_sanity: log-matching, committed-durable,
               replica-sanity

State (all ints, bools, tuples; -1 is "none")
    KafkaState(brokers, controller, network, produced, crashes, committed)
    Broker(alive, log, hw, cache, leader, epoch, isr, fetch, remote, incarnation)
        log: (Record(epoch, ident), ...); LEO = len(log); cache: ((epoch, start offset), ...);
        leader/epoch/isr: the partition state last learned from a LeaderAndIsr; fetch: 0 none,
        1 truncating, 2 fetching; remote: as leader, each replica's LEO from its last fetch
        (-1 unknown), () otherwise; incarnation: ghost restart count (for issue 4's checks).
        A crash keeps log, cache and HW (lossy-crash: a crash may cut the log's tail) and loses
        the rest; a restart comes back with no leader, no epoch, no fetcher.
    Controller(leader, epoch, isr)
    network: sorted tuple of messages, LeaderAndIsr(dst, epoch, leader, isr), FetchRequest(src, dst,
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
ExpandIsr(leader, follower), Crash(broker), CrashLosingTail(broker, keep), Restart(broker).

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

Default bounds: brokers=2, records=2, epochs=2 (three leader epochs: 0, 1, 2), crashes=1,
inflight=0 (no bound beyond one outstanding request per follower). Every violated cell of the
matrix has its shortest counterexample inside them; the seeds' own scenarios need more (KIP-279's
scenario 1: records=4 or more, scenario 3: records=4, epochs=3, crashes=4 and unclean=on; KIP-101's
second scenario: records=3, crashes=2, lossy-crash=on) and are checked step by step in the tests.

For issue 4 (KIP-320 fencing, KAFKA-7786, KIP-380): add flags to ``Features`` (default off) and
rows to ``PROTOCOLS``; ``leader_epoch_fencing`` already makes requests carry the current epoch and
the leader answer FENCED/UNKNOWN/NOT_LEADER (the follower then retries: put KAFKA-7786's partition
removal behind a new flag in ``_receive_offsets_state``). Add message classes (StopReplica,
ControlledShutdown, ...) in ``state`` with a new ``kind`` and list them in ``STATE_TYPES``; add a
broker-epoch or stamp field to ``LeaderAndIsr`` there. ``Broker.incarnation`` is the ghost
incarnation; a broker epoch would be a new field set on restart.
"""

from __future__ import annotations

from typing import Any

from invariants.registry import add_family
from spec.kafka.model import DEFAULTS, KafkaModel
from spec.kafka.protocols import DEFAULT_PROTOCOL, FLAGS, PROTOCOLS, resolve
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
        ),
        build=build,
        protocols={name: text for name, (text, _) in PROTOCOLS.items()},
        default_protocol=DEFAULT_PROTOCOL,
        features=dict(FLAGS),
    )
)
