"""Progress of the high watermark: hw-advances, a liveness property (KAFKA-13091).

hw-advances From every reachable state where leadership is settled (the controller's leader alive
    and in the current epoch), no ISR change is in flight and the leader's HW is below the least LEO
    over its ISR (its own included, as its last fetches tell it), a state where the HW reached that
    bound (or the state is no longer such one) is reachable by the leader's own steps and the
    healing actions alone (deliveries, fetches, truncation, the AlterIsr / AlterPartition round,
    AdvanceHighWatermark): no new produce request, crash or restart. Checked by ``checker.liveness``
    on the explored graph, so for small bounds only, and only when named.

    2.7 to 3.0 break it (KAFKA-13091, fixed in 3.1.0): ``Partition.handleAlterIsrResponse`` commits
    a shrink without ``maybeIncrementLeaderHW``, so with the removed follower dead and no append the
    HW stays where it was (an acks=all producer times out). The model shows it only with
    ``--const hw_events=1`` (``Broker.hw_stale``): by default its AdvanceHighWatermark is enabled
    whenever the ISR allows, which is sound for safety and makes this property hold. Read at
    min_isr=1: from 3.7.0 (KAFKA-15583) a HW under min ISR rightly does not advance.
"""

from __future__ import annotations

from checker.invariant import LIVENESS, Invariant
from invariants.kafka_control import HEALING

# alive, applied the current epoch
from invariants.kafka_durability import current_leader as settled_leader
from invariants.registry import register

#: the steps that need no new client request or fault: the control plane's healing, and the leader's
#: own HW and ISR round
HW_HEALING = HEALING | {"AdvanceHighWatermark", "ProcessAlterPartition",
                        "ReceiveAlterPartitionResponse"}


def hw_behind(state) -> int:
    """The settled leader whose HW is below the least LEO over its ISR with no ISR change in flight,
    or -1."""
    i = settled_leader(state)
    if i < 0:
        return -1
    b = state.brokers[i]
    if b.alter_pending:
        return -1
    bound = min([len(b.log)] + [b.remote[r] for r in b.isr if r != i])
    return i if bound > b.hw else -1


def hw_caught_up(state) -> bool:
    return hw_behind(state) < 0


def _explain(state) -> str:
    i = settled_leader(state)
    b = state.brokers[i]
    return (f"leader {i} (epoch {b.epoch}) has HW {b.hw} while its ISR {list(b.isr)} has every "
            f"record below {min([len(b.log)] + [b.remote[r] for r in b.isr if r != i])}, and no "
            "step without new traffic moves it")


HW_ADVANCES = register(
    "kafka",
    Invariant(
        "hw-advances",
        "from every state whose settled leader's HW is below what its ISR allows, the HW gets "
        "there by the leader's own steps and healing actions alone, without new produce requests "
        "(state graph; KAFKA-13091 with hw_events=1)",
        None,
        kind=LIVENESS,
        explain=_explain,
        premise=lambda state: hw_behind(state) >= 0,
        goal=hw_caught_up,
        healing=lambda action: action.name in HW_HEALING,
    ),
)
