"""The Kafka replication model (``kmc check kafka``, ``kmc matrix``).

One partition replicated on every broker of a small cluster, a controller standing for ZooKeeper's
(leader, leader epoch, ISR), and the requests between them in flight. Protocol versions are real
release lines (0.10.2, 0.11.0, 2.0.0, 2.0.1, 2.1.0, 2.1.1, 2.2.0, 2.8.0, 2.8.1, 3.4.1, 4.1.0; the
older names hw-truncation, kip-101, kip-279, kip-320, kip-380 and truncate-on-fetch are aliases),
each a set of feature flags (``spec.kafka.protocols``), each flag switchable with ``--feature``.
``spec.kafka.rules`` (``kmc list --rules``) gives every rule its release, JIRA or KIP and the source
file and method it follows, and says where the model abstracts.

Modules
    protocols  the ``Features`` flags, the release rows and the aliases; a flag is refused where the
               mechanism it changes does not exist in the chosen release line
    rules      the rule table
    log        records, the leader epoch cache and the lookups per release (0.11.0, 2.0.0,
               KAFKA-7415, diverging epoch), pure functions on tuples: the seed's table A-G is
               tested against them
    state      the NamedTuples of a state: Broker, Controller, one class per message type,
               KafkaState; each has ``with_(**changes)`` for named-field updates;
               ``updater(Broker, "log", "cache")`` declares, once, the same update for the hot path
               (called as ``_appended(leader, log=..., cache=...)``: the field names stay at the
               call; about half of ``with_``'s cost)
    actions_control / actions_data   the actions, guard first, effect second, each citing its
               source; each family module ends with ``ACTIONS``, its actions declared once
               (``spec.kafka.declared``)
    model      ``KafkaModel``: bounds, switches and the action table (in its docstring)
    scenario   run an explicit list of (action, params) steps; refuses a step that is not enabled
    invariants/kafka_log_matching, kafka_durability, kafka_sanity, kafka_control: log-matching (the
               seed's leader-follower form), log-matching-all-pairs, log-matching-raft,
               committed-durable, no-uncommitted-below-hw, replica-sanity, no-stale-control-request,
               no-fence-stall, no-bounce-stall; liveness, checked only when named:
               no-fence-stall-liveness, truncation-completes; invariants/kafka_clients (with the
               client constants acks, consumers): acknowledged-durable, consumed-stays,
               no-silent-skip
    clients    the producer's acknowledgements and the consumers (``spec.kafka.clients``)

State (all ints, bools, tuples; -1 is "none") KafkaState(brokers, controller, network, produced,
    crashes, bumps, shutdowns, bounces, losses, committed) Broker(alive, log, hw, cache, leader,
    epoch, isr, fetch, remote, broker_epoch, stopping, incarnation,
        stale, reconciled, idle_cause, pending_diverging) log: (Record(epoch, ident), ...); LEO =
        len(log); cache: ((epoch, start offset), ...); leader/epoch/isr: the partition state last
        learned from a LeaderAndIsr; fetch: 0 none, 1 truncating, 2 fetching; remote: as leader,
        each replica's LEO from its last fetch (-1 unknown), () otherwise; broker_epoch: KIP-380
        generation, + 1 at each registration; stopping: sent a ControlledShutdown in this
        incarnation; pending_diverging: a diverging epoch read from a fetch answer and not yet
        applied (truncate-on-fetch). Ghosts, read by invariants only: incarnation (restart count),
        stale (applied a control request meant for an earlier incarnation; sticky), reconciled (the
        leader epoch in which it last appended from its leader's fetch answer, or its own epoch as
        leader), idle_cause (why it has no fetcher state: fenced, stopped, restarted). A crash keeps
        log, cache and HW (lossy-crash: a crash may cut the log's tail) and loses the rest; a
        restart comes back with no leader, no epoch, no fetcher.
    Controller(leader, epoch, isr, registered): registered = the broker epoch of each broker's
        registration the controller last processed, -1 once it processed the broker's death
    network: sorted tuple of messages, LeaderAndIsr(dst, epoch, leader, isr, broker_epoch, meant),
        StopReplica(dst, epoch, broker_epoch, meant), ControlledShutdown(src, broker_epoch,
        incarnation), FetchRequest(src, dst, epoch, offset, last_epoch), FetchResponse(src, dst,
        epoch, offset, error, records, hw, diverging_epoch, diverging_offset), OffsetsRequest(src,
        dst, epoch, requested), OffsetsResponse(src, dst, epoch, requested, error, answer_epoch,
        end_offset); each starts with a ``kind`` int. Error codes: NOT_LEADER, FENCED_LEADER_EPOCH,
        UNKNOWN_LEADER_EPOCH, OFFSET_OUT_OF_RANGE (``spec.kafka.state``).
    committed: ghost, sorted (offset, epoch, ident) of every record some leader's HW passed.

The actions, their parameters and the control plane's rules are in ``spec.kafka.model``'s docstring;
what each release does differently, with its source, is in ``spec.kafka.rules``.

Modelling choices (each a place where the model could disagree with Kafka; the rule table lists
them)
- Initial state: broker 0 leads epoch 0 with every broker in the ISR, empty logs. The seeds' epoch 1
  is the model's epoch 0. Brokers are numbered from 0.
- Elections pick any live ISR member (Kafka: the first in assignment order; every order is some
  assignment's). The controller processes a broker's death later (ElectLeader /
  ProcessBrokerFailure, an epoch bump either way) and a restart only after that; its channel to a
  broker is FIFO; everything else may be reordered. Messages to or from a broker are lost when it
  crashes.
- A follower has one request outstanding per leader and never sends to a broker that is down. A
  fetch copies every record from the fetch offset (one record per batch); the follower's HW becomes
  min(leader HW, LEO). The HW advance is its own action: min LEO over the leader's ISR view (Kafka
  also counts caught-up followers outside the ISR, which only lowers it).
- The leader shrinks any follower out of the ISR at any time (lag is time-based in Kafka); both ISR
  changes are ZooKeeper writes only the leader of the controller's current epoch can make.
- A restarted broker gets its last HW back (Kafka: the last checkpoint, which may be older).

Default bounds: brokers=2, records=2, epochs=2 (three leader epochs: 0, 1, 2), crashes=1, inflight=0
(no bound beyond one outstanding request per follower), bumps=0, shutdowns=0, bounces=0, losses=0
(the control-plane actions are off). ``kmc matrix`` checks the control-plane columns at their own
bounds (``KafkaModel.matrix_bounds``: a bounce and a controlled shutdown for
no-stale-control-request and no-bounce-stall; two epoch bumps for no-fence-stall).
docs/tutorials/matrix.md shows the matrix and what each cell means.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from spec.kafka.action_rules import rules_for_action
from spec.kafka.bounds import CONSTANTS, DEFAULTS
from spec.kafka.model import KafkaModel
from spec.kafka.protocols import (
    DEFAULT_PROTOCOL,
    FLAG_ALIASES,
    FLAGS,
    FORMER_NAMES,
    PROTOCOL_ALIASES,
    RELEASES,
)
from spec.kafka.releases import (
    _NUMBER,
    fixed_in,
    is_release,
    nearest,
    release_rows,
    resolve,
    same_row,
    version,
)
from spec.kafka.rules import rule_rows
from spec.registry import ModelInfo, register

__all__ = ["KafkaModel", "build", "INFO"]

def _rule_rows(protocol: str | None = None) -> list[dict[str, str]]:
    """``kmc list --rules [--protocol P]``: the rule table, each flag marked on or off under P (a
    row or a release); under P a flag that is off there has ``fixed_in``, the first release at or
    after P's with it (on P's own release line where that line has it:
    ``spec.kafka.releases.fixed_in``), which a matrix story names."""
    if protocol is None:
        return rule_rows(None)
    rows = rule_rows(resolve(protocol))
    first = fixed_in(protocol)
    for row in rows:
        if row.get("on") == "no" and row["flag"] in first:
            # the rule's own release where it is the same one (0.11.0 for 0.11.0.0)
            same = (version(first[row["flag"]]) == version(row["release"])
                    if _NUMBER.fullmatch(row["release"]) else False)
            row["fixed_in"] = row["release"] if same else first[row["flag"]]
    return rows


@cache
def _rows_of(protocol: str | None) -> list[dict[str, str]]:
    return _rule_rows(protocol)


def _action_rules(action_name: str, model: KafkaModel) -> list[dict[str, str]]:
    """The explorer's rules of an action: the rows of the model's release that name a function
    computing it."""
    return rules_for_action(action_name, _rows_of(model.protocol), model.features.kraft)


def build(constants: dict[str, Any], protocol: str, features: dict[str, bool] | None = None):
    if (protocol in FORMER_NAMES and (features or {}).get("kraft") is False
        and resolve(protocol).kraft):
        # a trace or scenario made when this name was a ZooKeeper row (its recorded flags have kraft
        # off): that row
        protocol = FORMER_NAMES[protocol]
    bounds = {name: constants[name] for name in DEFAULTS if name in constants}
    return KafkaModel(protocol=protocol, features=resolve(protocol, features), **bounds)


INFO = register(
    ModelInfo(
        name="kafka",
        description="Kafka replication of one partition: produce, fetch, truncation, elections, "
                    "crashes",
        constants=CONSTANTS,
        build=build,
        protocols={r.name: r.summary for r in RELEASES},
        default_protocol=DEFAULT_PROTOCOL,
        features={**FLAGS, **{old: f"alias of {new}" for old, new in FLAG_ALIASES.items()}},
        protocol_aliases=dict(PROTOCOL_ALIASES),
        protocol_numbers=is_release,
        protocol_hint=nearest,
        release_table=release_rows,
        protocol_row=same_row,
        rules=_rule_rows,
        action_rules=_action_rules,
    )
)
