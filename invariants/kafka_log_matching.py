"""Log Matching, as the seed states it: for every two replicas, their logs are identical below the
smaller of their two high watermarks."""

from __future__ import annotations

from invariants.base import Invariant
from invariants.registry import register


def _first_mismatch(state) -> tuple[int, int, int] | None:
    brokers = state.brokers
    n = len(brokers)
    for a in range(n):
        la, ha = brokers[a].log, brokers[a].hw
        for b in range(a + 1, n):
            lb, hb = brokers[b].log, brokers[b].hw
            bound = min(ha, hb, len(la), len(lb))
            if la[:bound] != lb[:bound]:
                for offset in range(bound):
                    if la[offset] != lb[offset]:
                        return a, b, offset
    return None


def log_matching(state) -> bool:
    return _first_mismatch(state) is None


def _explain(state) -> str:
    found = _first_mismatch(state)
    if found is None:
        return "log matching holds"
    a, b, offset = found
    ra, rb = state.brokers[a].log[offset], state.brokers[b].log[offset]
    return (
        f"brokers {a} (HW {state.brokers[a].hw}) and {b} (HW {state.brokers[b].hw}) hold different records at "
        f"offset {offset}, below both high watermarks: record {ra.ident} of epoch {ra.epoch} vs record "
        f"{rb.ident} of epoch {rb.epoch}"
    )


LOG_MATCHING = register(
    "kafka",
    Invariant(
        "log-matching",
        "every two replicas hold identical logs below the smaller of their two high watermarks",
        log_matching,
        explain=_explain,
    ),
)
