"""Why a step is not enabled, in Kafka's words: the guard a replayed step fails
(``kmc trace replay`` when it blocks).

Read from the state only, the guards a Kafka engineer meets when a trace or scenario made under one
release is replayed under another: the broker that would act is not running; it does not lead; its
ISR change is pending (the AlterIsr / AlterPartition is in flight and the maximal ISR still counts,
``Partition.scala`` one change at a time); the request or answer the step consumes is not in flight.
A step blocked by another guard gets no sentence here (the replay still names the steps that would
enable it, ``traces.replay``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from spec.kafka.families import ACTIONS
from spec.kafka.state import KafkaState

#: the broker that acts in a step, by its parameter; the steps only the leader takes
#: (``Partition.scala``: leaderLogIfLocal, the ISR changes, the HW); the message a step consumes:
#: read from each action's declaration (``spec.kafka.declared``: ``actor``, ``leader_only``,
#: ``consumes``)
_ACTOR = {d.name: d.actor for d in ACTIONS if d.actor}
_LEADER_ONLY = frozenset(d.name for d in ACTIONS if d.leader_only)
_CONSUMES = {d.name: d.consumes for d in ACTIONS if d.consumes is not None}


def _request_name(kraft: bool) -> str:
    return "AlterPartition" if kraft else "AlterIsr"


def pending_alter(model: Any, s: KafkaState) -> str | None:
    """A leader whose ISR change is pending, in words with the steps that complete it; None if none
    is."""
    for i, b in enumerate(s.brokers):
        if b.alive and b.alter_pending:
            request = _request_name(model.features.kraft)
            return (f"broker {i}'s ISR change is pending: its {request} is in flight and the "
                    f"maximal ISR {list(b.isr)} counts until the controller writes it "
                    f"(ProcessAlterPartition(leader={i})) and the leader receives the answer "
                    f"(ReceiveAlterPartitionResponse(leader={i})); a scenario written before "
                    f"{request} was modelled (2.7.0+ ZooKeeper rows, KIP-497; every KRaft row) "
                    "lacks these two steps")
    return None


def unprocessed_isr_change(model: Any, history: Sequence[Any]) -> str | None:
    """The first ISR change of the replayed steps that no ProcessAlterPartition of its leader
    followed, on a row whose leader changes the ISR by request (2.7.0+ ZooKeeper rows with
    alter-isr, KIP-497; every KRaft row)."""
    if not model.features.alter_by_request:
        return None
    for k, act in enumerate(history):
        if act.name in ("ShrinkIsr", "ExpandIsr"):
            leader = act.param("leader", None)
            if not any(a.name == "ProcessAlterPartition" and a.param("leader", None) == leader
                       for a in history[k + 1:]):
                request = _request_name(model.features.kraft)
                return (f"step {k + 1}, {act}, sent an {request} that no "
                        f"ProcessAlterPartition(leader={leader}) processed, so the controller's "
                        f"ISR never changed: a scenario written before {request} was modelled "
                        "(2.7.0+ ZooKeeper rows, KIP-497; every KRaft row) needs "
                        f"ProcessAlterPartition(leader={leader}) and "
                        f"ReceiveAlterPartitionResponse(leader={leader}) after it")
    return None


def why_not(model: Any, s: KafkaState, name: str, params: dict[str, Any],
            history: Sequence[Any] = ()) -> str | None:
    """The guard step ``name`` with ``params`` fails in state ``s`` after the steps ``history``, in
    Kafka's words; None if it is none of these. An ISR change the replay never had processed is
    named in any case."""
    guard = _guard(model, s, name, params)
    missing = unprocessed_isr_change(model, history)
    if guard and missing and "ProcessAlterPartition" not in guard:
        return f"{guard}; {missing}"
    return guard or missing


def _guard(model: Any, s: KafkaState, name: str, params: dict[str, Any]) -> str | None:
    n = len(s.brokers)
    actor = params.get(_ACTOR.get(name, ""))
    if isinstance(actor, int) and 0 <= actor < n:
        b = s.brokers[actor]
        if not b.alive:
            return (f"broker {actor} is not running (it crashed or stopped): it takes no step "
                    "until it restarts")
        if name in _LEADER_ONLY and b.leader != actor:
            return (f"broker {actor} does not lead: it follows broker {b.leader} in leader epoch "
                    f"{b.epoch} (only the leader "
                    f"{'changes the ISR' if name in ('ShrinkIsr', 'ExpandIsr') else 'takes ' + name})")  # noqa: E501
        if name in ("ShrinkIsr", "ExpandIsr"):
            if model.features.alter_by_request and b.alter_pending:
                return pending_alter(model, s)
            follower = params.get("follower")
            if name == "ShrinkIsr" and follower not in b.isr:
                return (f"broker {follower} is not in the leader's ISR {list(b.isr)}: there is "
                        "nothing to shrink")
            if name == "ExpandIsr" and follower in b.isr:
                return f"broker {follower} is already in the leader's ISR {list(b.isr)}"
    if name == "ElectLeader":
        c, leader = s.controller, params.get("leader")
        if isinstance(leader, int) and 0 <= leader < n and leader not in c.isr:
            return (f"broker {leader} is not in the controller's ISR {list(c.isr)}: the controller "
                    f"elects a leader from the live ISR (unclean election elects outside it)")
    if name in _CONSUMES:
        kind, sender, receiver, words = _CONSUMES[name]
        src, dst = params.get(sender or ""), params.get(receiver or "")
        waiting = [m for m in s.network if type(m).__name__ == kind
                   and (sender is None or m.src == src)
                   and (receiver is None or m.dst == dst)]
        if not waiting:
            where = (f" from broker {src}" if sender else "") + (" to broker "
                                                                 f"{dst}" if receiver else "")
            return f"no {words}{where} is in flight" + (f" ({pending_alter(model, s)})"
                                                        if pending_alter(model, s) else "")
    return None
