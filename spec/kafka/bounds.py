"""The Kafka model's bounds, each declared once: its name, default, meaning and range.

``kmc check kafka --const NAME=VALUE`` (``spec.kafka.INFO``'s constants), ``build`` and
``KafkaModel(**bounds)`` all read this table; nothing else spells a bound's default. The defaults
are large enough for the stories (see ``spec.kafka``); a bigger bound is a bigger state space.

Four groups: the replicas' bounds (in every model's constants), the clients'
(``spec.kafka.clients``; listed in a model's constants only when they differ from their defaults: at
the defaults there is no client and the state space is the replica-only one), the switches
(``hw_events``: listed only when set) and the KRaft rows' (``spec.kafka.actions_kraft``,
``actions_alter_partition``, ``actions_broker_lifecycle``, ``actions_reassignment``: listed on those
rows only)."""

from __future__ import annotations

from dataclasses import dataclass

from spec.errors import UsageError
from spec.kafka.clients import ACKS_NONE, ACKS_VALUES
from spec.registry import Constant

REPLICAS, CLIENTS, SWITCHES, KRAFT = "replicas", "clients", "switches", "kraft"


@dataclass(frozen=True)
class Bound:
    """One bound: ``constant`` is what ``--const`` parses and ``kmc list`` shows; ``group`` says
    when a model lists it in its constants."""

    constant: Constant
    group: str

    @property
    def name(self) -> str:
        return self.constant.name

    @property
    def default(self) -> int:
        return self.constant.default


def _bound(group: str, name: str, default: int, description: str, minimum: int,
           maximum: int) -> Bound:
    return Bound(Constant(name, default, description, int, minimum=minimum, maximum=maximum), group)


BOUNDS: tuple[Bound, ...] = (
    _bound(REPLICAS, "brokers", 2, "brokers, each holding a replica", 1, 5),
    _bound(REPLICAS, "records", 2, "records produced, at most", 0, 8),
    _bound(REPLICAS, "epochs", 2, "highest leader epoch (elections: epoch 0 is the first)", 0, 8),
    _bound(REPLICAS, "crashes", 1, "broker crashes, at most", 0, 8),
    _bound(REPLICAS, "inflight", 0, "broker requests and responses in flight, at most (0: no "
           "bound)", 0, 16),
    _bound(REPLICAS, "bumps", 0, "leader epoch bumps with an unchanged leader (reassignment), at "
           "most", 0, 8),
    _bound(REPLICAS, "shutdowns", 0, "ControlledShutdown requests, at most", 0, 8),
    _bound(REPLICAS, "bounces", 0, "bounces the controller does not see at once, at most", 0, 8),
    _bound(REPLICAS, "losses", 0, "control requests lost in a controller failover (a newer one to "
           "the same broker still queued), at most", 0, 8),
    _bound(CLIENTS, "acks", ACKS_NONE, "the producer's acks: 0 none recorded, 1 on append, -1 all "
           "(once the HW passes the record)", -1, 1),
    _bound(CLIENTS, "min_isr", 1, "min.insync.replicas (acks=-1; on kraft rows with kip-966-elr "
           "also strict min ISR and ELR)", 1, 5),
    _bound(CLIENTS, "consumers", 0, "consumers of the partition", 0, 3),
    _bound(CLIENTS, "consumer_inflight", 0, "1: a consumer's Fetch and OffsetsForLeaderEpoch are a "
           "request, an answer and a receipt, delivered late (0: one step)", 0, 1),
    _bound(KRAFT, "alters", 2, "kraft rows: AlterPartition requests (ISR shrink or expand), at "
           "most", 0, 8),
    _bound(KRAFT, "unclean_shutdowns", 0, "kraft rows: unclean shutdowns (a crash that loses a "
           "suffix of the log, or the disk), at most", 0, 8),
    _bound(KRAFT, "alter_losses", 0, "kraft rows: AlterPartition answers lost after the controller "
           "wrote the change (the leader's AlterPartitionManager sends the request again), at most",
           0, 8),
    _bound(KRAFT, "metadata_lag", 0, "kraft rows: 1: a leader's view of the broker registrations "
           "(fenced, in controlled shutdown, broker epoch) may be older than the controller's, so "
           "its own ISR eligibility check passes on any of them (the controller's still applies)",
           0, 1),
    _bound(KRAFT, "clean_shutdowns", 0, "kraft rows: clean shutdowns (a broker that leads nothing "
           "is fenced and stops, writing its clean shutdown file), at most", 0, 8),
    _bound(KRAFT, "fences", 0, "kraft rows: running brokers fenced for missed heartbeats (they "
           "keep their log and fetcher and are unfenced when they heartbeat again), at most", 0, 8),
    _bound(SWITCHES, "hw_events", 0, "1: the leader's HW is recomputed only at the events that "
           "call maybeIncrementLeaderHW where a release differs (kafka-13091 off: not when an "
           "AlterIsr commits, 2.7 to 3.0); 0: whenever the ISR allows (sound for safety); the "
           "liveness property hw-advances needs 1", 0, 1),
    _bound(KRAFT, "reassignments", 0, "kraft rows: partition reassignments (a replica removed, "
           "added, or moved: its log deleted, a new one fetched from empty), at most", 0, 8),
)
CONSTANTS: tuple[Constant, ...] = tuple(bound.constant for bound in BOUNDS)
GROUPS: dict[str, str] = {bound.name: bound.group for bound in BOUNDS}
DEFAULTS: dict[str, int] = {bound.name: bound.default for bound in BOUNDS}


def bound_values(given: dict[str, int]) -> dict[str, int]:
    """Every bound's value: the given ones, the defaults for the rest. A name that is no bound is
    refused (``TypeError``, as for an unknown keyword), naming the bounds; ``acks`` must be a
    producer setting."""
    unknown = sorted(set(given) - set(DEFAULTS))
    if unknown:
        raise TypeError(f"KafkaModel has no bound {', '.join(unknown)}; its bounds: "
                        f"{', '.join(DEFAULTS)}")
    values = {**DEFAULTS, **given}
    if values["acks"] not in ACKS_VALUES:
        raise UsageError(f"acks={values['acks']} is not a producer acks setting; use acks=0, "
                         "acks=1 or acks=-1 (all)")
    return values
