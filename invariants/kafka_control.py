"""The control-plane properties of issue 4: no-stale-control-request, no-fence-stall and its
liveness form no-fence-stall-liveness.

no-stale-control-request
    A broker never applies a control request (LeaderAndIsr, StopReplica) meant for an earlier
    incarnation of itself. Checked with the ghosts, not with the broker epoch the protocol uses (or
    the check would be circular): each request carries the incarnation its sender meant (the one up
    when the controller sent it, or, for a StopReplica answering a ControlledShutdown, the one that
    asked), and a broker that applies one meant for another incarnation sets its sticky ghost
    ``stale``. Expected to break before KIP-380 and to hold with it.

no-fence-stall
    A follower is *stalled* when it is alive, not shutting down and not the controller's leader; the
    controller's leader is alive and has applied the current epoch; no control request to either of
    them is in flight, no ControlledShutdown from either is waiting at the controller and no
    registration of either is waiting for the controller to process it; the follower's fetcher has
    no state for the partition; and no Fetch or OffsetsForLeaderEpoch (or answer) between it and
    anyone is in flight. Nothing can then give it a fetcher state again but a new decision of the
    controller: KAFKA-7786's "will not fetch until the next LeaderAndIsr". Every broker holds a
    replica, so every broker is in the assignment. no-fence-stall counts only stalls whose cause is
    fencing: the fetcher dropped the partition on a FENCED_LEADER_EPOCH answer (the ghost
    ``idle_cause``), so a version without fencing cannot break it.

no-bounce-stall
    The same stall, caused by a restart the controller never followed with a LeaderAndIsr: a bounce
    so fast that the controller missed it (KIP-380's motivation, "the broker is never told what to
    replicate"). Expected to break before KIP-380's bounced-broker detection and to hold with it.

truncation-completes A liveness property on the state graph: from every reachable state where
    leadership is settled, a state where every live follower that is not shutting down has
    reconciled with the leader in its epoch (appended from a fetch answer after its truncation) is
    reachable by healing actions alone. It catches a truncation that never completes (an
    OffsetsForLeaderEpoch round that keeps asking).

no-fence-stall-liveness The same as a liveness property on the state graph: from every reachable
    state where leadership is settled (the controller's leader alive and in the current epoch), a
    state where every live follower that is not shutting down fetches from that leader in the
    current epoch is reachable by healing actions alone (deliveries, fetches, truncation, the
    controller processing a broker change). Checked by ``checker.liveness`` on the explored graph,
    so for small bounds only; it is not in the default set of ``kmc check`` (ask for it with
    ``--invariant no-fence-stall-liveness``).
"""

from __future__ import annotations

from checker.invariant import LIVENESS, Invariant

# alive, applied the current epoch
from invariants.kafka_durability import current_leader as settled_leader
from invariants.registry import register
from spec.kafka.state import (
    CONTROLLED_SHUTDOWN,
    DATA_KINDS,
    FETCHING,
    IDLE_FENCED,
    IDLE_RESTARTED,
    LEADER_AND_ISR,
    NO_FETCHER,
    STOP_REPLICA,
)


# -- no-stale-control-request ----------------------------------------------------------------------
def no_stale_control_request(state) -> bool:
    for b in state.brokers:
        if b.stale:
            return False
    return True


def _explain_stale(state) -> str:
    for i, b in enumerate(state.brokers):
        if b.stale:
            return (f"broker {i} (incarnation {b.incarnation}, broker epoch {b.broker_epoch}) "
                    f"applied a control request meant for an earlier incarnation of itself")
    return "no broker applied a control request meant for an earlier incarnation"


NO_STALE_CONTROL_REQUEST = register(
    "kafka",
    Invariant(
        "no-stale-control-request",
        "a broker never applies a control request meant for an earlier incarnation of itself "
        "(ghost check)",
        no_stale_control_request,
        explain=_explain_stale,
    ),
)


# -- no-fence-stall --------------------------------------------------------------------------------

def _controller_pending(state, i: int) -> bool:
    """A control request to broker i, a ControlledShutdown from it, or its registration is
    pending."""
    if state.controller.registered[i] != state.brokers[i].broker_epoch:
        return True
    for m in state.network:
        kind = m.kind
        if (kind == LEADER_AND_ISR or kind == STOP_REPLICA) and m.dst == i:
            return True
        if kind == CONTROLLED_SHUTDOWN and m.src == i:
            return True
    return False


def stalled_followers(state, cause: int | None = None) -> list[int]:
    """The stalled followers (of ``cause``, an ``IDLE_*`` value, when given)."""
    leader = settled_leader(state)
    if leader < 0 or _controller_pending(state, leader):
        return []
    out = []
    for i, b in enumerate(state.brokers):
        if i == leader or not b.alive or b.stopping or b.fetch != NO_FETCHER:
            continue
        if cause is not None and b.idle_cause != cause:
            continue
        if _controller_pending(state, i):
            continue
        if any(m.kind in DATA_KINDS and (m.src == i or m.dst == i) for m in state.network):
            continue
        out.append(i)
    return out


def stall_distance(state, cause: int) -> int:
    """An estimate of the steps to a state with a follower stalled by ``cause``
    (``stalled_followers``), for the directed search (``Invariant.distance``): 0 exactly there. It
    counts the conditions of a stall that do not hold yet, each at the steps it takes at least: a
    settled leader (1) with nothing from or to the controller pending (a step a request), and for
    the closest follower: alive and not shutting down (1 each), its fetcher without the partition
    for ``cause`` (2: the request and the answer or control request that removes it), nothing
    pending between it and the controller (a step a request) and no Fetch or OffsetsForLeaderEpoch
    (or answer) of it in flight (a step each)."""
    ctrl = state.controller
    leader = settled_leader(state)
    around_leader = 1 if leader < 0 else _pending_count(state, leader)
    best = None
    for i, b in enumerate(state.brokers):
        if i == ctrl.leader:
            continue
        estimate = (0 if b.alive else 1) + (1 if b.stopping else 0)
        estimate += 0 if b.fetch == NO_FETCHER and b.idle_cause == cause else 2
        estimate += _pending_count(state, i)
        estimate += sum(1 for m in state.network if m.kind in DATA_KINDS
                        and (m.src == i or m.dst == i))
        best = estimate if best is None else min(best, estimate)
    return around_leader + (best if best is not None else 1)


def _pending_count(state, i: int) -> int:
    """How many of ``_controller_pending``'s conditions hold for broker i: its registration, control
    requests to it, ControlledShutdown requests from it."""
    pending = 1 if state.controller.registered[i] != state.brokers[i].broker_epoch else 0
    for m in state.network:
        kind = m.kind
        if (((kind == LEADER_AND_ISR or kind == STOP_REPLICA) and m.dst == i)
            or (kind == CONTROLLED_SHUTDOWN and m.src == i)):
            pending += 1
    return pending


def no_fence_stall(state) -> bool:
    return not stalled_followers(state, IDLE_FENCED)


def no_bounce_stall(state) -> bool:
    return not stalled_followers(state, IDLE_RESTARTED)


def _explain_stall(state, cause: int, why: str) -> str:
    stalled = stalled_followers(state, cause)
    if not stalled:
        return "no follower is stalled"
    i = stalled[0]
    b = state.brokers[i]
    ctrl = state.controller
    return (f"broker {i} (epoch {b.epoch}) has no fetcher state for the partition since {why}, and "
            f"nothing in flight could give it one, while broker {ctrl.leader} leads epoch "
            f"{ctrl.epoch}: it waits for a LeaderAndIsr that will not come")


NO_FENCE_STALL = register(
    "kafka",
    Invariant(
        "no-fence-stall",
        "a live follower whose fetcher dropped the partition on FENCED_LEADER_EPOCH is never left "
        "with nothing that could give it a fetcher state again (KAFKA-7786)",
        no_fence_stall,
        explain=lambda state: _explain_stall(state, IDLE_FENCED,
                                             "a FENCED_LEADER_EPOCH answer removed it"),
        distance=lambda state: stall_distance(state, IDLE_FENCED),
    ),
)

NO_BOUNCE_STALL = register(
    "kafka",
    Invariant(
        "no-bounce-stall",
        "a restarted broker is never left with no fetcher state and no LeaderAndIsr coming "
        "(KIP-380: a bounce the controller missed)",
        no_bounce_stall,
        explain=lambda state: _explain_stall(state, IDLE_RESTARTED, "it restarted"),
        distance=lambda state: stall_distance(state, IDLE_RESTARTED),
    ),
)


# -- the liveness form -----------------------------------------------------------------------------
HEALING = frozenset({
    "DeliverLeaderAndIsr",
    "TruncateOnDivergingEpoch", "DeliverStopReplica", "SendFetch", "ServeFetch", "ReceiveFetch",
    "SendOffsetsForLeaderEpoch", "ServeOffsetsForLeaderEpoch", "ReceiveOffsetsForLeaderEpoch",
    "TruncateToHighWatermark", "ProcessBrokerChange",
})


def lagging_followers(state, reconciled: bool = False) -> list[int]:
    """The live followers, not shutting down, that do not fetch from the controller's leader in its
    epoch (with ``reconciled``: that have not reconciled with it in that epoch either)."""
    ctrl = state.controller
    replicas = ctrl.replicas  # a KRaft reassignment: a broker that is no replica follows nothing
    out = []
    for i, b in enumerate(state.brokers):
        if i == ctrl.leader or not b.alive or b.stopping or (replicas and i not in replicas):
            continue
        if b.fetch != FETCHING or b.leader != ctrl.leader or b.epoch != ctrl.epoch or \
                (reconciled and b.reconciled != ctrl.epoch):
            out.append(i)
    return out


def every_follower_fetches(state) -> bool:
    """Every live follower that is not shutting down fetches from the controller's leader in its
    epoch."""
    return not lagging_followers(state)


def _explain_liveness(state) -> str:
    ctrl = state.controller
    return (f"leadership is settled (broker {ctrl.leader}, epoch {ctrl.epoch}) but from here no "
            f"delivery, fetch or truncation brings broker(s) {lagging_followers(state)} back to "
            "fetching in the current epoch")


NO_FENCE_STALL_LIVENESS = register(
    "kafka",
    Invariant(
        "no-fence-stall-liveness",
        "from every state with a settled leader, every live follower can get back to fetching in "
        "the current epoch by healing actions alone (state graph)",
        None,
        kind=LIVENESS,
        explain=_explain_liveness,
        premise=lambda state: settled_leader(state) >= 0,
        goal=every_follower_fetches,
        healing=lambda action: action.name in HEALING,
    ),
)


def every_follower_reconciled(state) -> bool:
    """Every live follower that is not shutting down fetches from the controller's leader in its
    epoch and has reconciled with it there (appended from its fetch answer after truncating)."""
    return not lagging_followers(state, reconciled=True)


def _explain_truncation(state) -> str:
    ctrl = state.controller
    return (f"leadership is settled (broker {ctrl.leader}, epoch {ctrl.epoch}) but from here no "
            "delivery, fetch or truncation lets broker(s) "
            f"{lagging_followers(state, reconciled=True)} finish truncating and append from the "
            "leader")


TRUNCATION_COMPLETES = register(
    "kafka",
    Invariant(
        "truncation-completes",
        "from every state with a settled leader, every live follower can finish its truncation and "
        "append from the leader in its epoch by healing actions alone (state graph)",
        None,
        kind=LIVENESS,
        explain=_explain_truncation,
        premise=lambda state: settled_leader(state) >= 0,
        goal=every_follower_reconciled,
        healing=lambda action: action.name in HEALING,
    ),
)
