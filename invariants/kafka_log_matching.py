"""Log Matching, in three strengths.

log-matching The seed's statement (the log-divergence chapter, section 3): "For all leader-follower
    pairs, the log prefix on both replicas is identical where the prefix is bounded by the
    min(Leader Local HWM, Follower Local HWM)." A pair is a live broker that leads in its epoch and
    a live broker that follows it in that same epoch *and has reconciled with it* (the ghost
    ``reconciled``: it appended from a fetch answer of that leader in that epoch, after whatever
    truncation its release does). A crashed replica, or one that has not yet truncated against the
    new leader, is not that leader's follower yet. A violation means a follower that the protocol
    believes in sync holds, below both high watermarks, a record the leader does not: consumers of
    the two replicas can read different data at the same offset.

log-matching-all-pairs Every two replicas, crashed and not-yet-reconciled ones included, hold
    identical logs below the smaller of their two high watermarks. Stronger than the seed; breaks by
    design in stories where a replica holds a stale HW until it truncates (KIP-101's second
    scenario).

log-matching-raft Raft's form: if two replicas hold a record of the same leader epoch at the same
    offset, their logs are identical up to and including that offset.

The two stronger forms are checked when named (``--invariant log-matching-all-pairs``), not by
default.
"""

from __future__ import annotations

from checker.invariant import Invariant
from invariants.registry import register


def _mismatch(la: tuple, lb: tuple, bound: int) -> int | None:
    if la[:bound] == lb[:bound]:
        return None
    for offset in range(bound):
        if la[offset] != lb[offset]:
            return offset
    return None


def pairs(state) -> list[tuple[int, int]]:
    """The (leader, follower) pairs of the seed: the follower follows the leader in the leader's
    epoch and has reconciled with it in that epoch; both are alive."""
    brokers = state.brokers
    out = []
    for lead, leader in enumerate(brokers):
        if not leader.alive or leader.leader != lead:
            continue
        for f, follower in enumerate(brokers):
            if (f != lead and follower.alive and follower.leader == lead and follower.epoch
                == leader.epoch
                    and follower.reconciled == leader.epoch):
                out.append((lead, f))
    return out


def _first_pair_mismatch(state) -> tuple[int, int, int] | None:
    brokers = state.brokers
    for lead, f in pairs(state):
        a, b = brokers[lead], brokers[f]
        offset = _mismatch(a.log, b.log, min(a.hw, b.hw, len(a.log), len(b.log)))
        if offset is not None:
            return lead, f, offset
    return None


def _first_any_mismatch(state) -> tuple[int, int, int] | None:
    brokers = state.brokers
    n = len(brokers)
    for a in range(n):
        la, ha = brokers[a].log, brokers[a].hw
        for b in range(a + 1, n):
            lb, hb = brokers[b].log, brokers[b].hw
            offset = _mismatch(la, lb, min(ha, hb, len(la), len(lb)))
            if offset is not None:
                return a, b, offset
    return None


def _first_raft_mismatch(state) -> tuple[int, int, int] | None:
    brokers = state.brokers
    n = len(brokers)
    for a in range(n):
        la = brokers[a].log
        for b in range(a + 1, n):
            lb = brokers[b].log
            for offset in range(min(len(la), len(lb)) - 1, -1, -1):
                if la[offset].epoch == lb[offset].epoch:
                    if la[: offset + 1] != lb[: offset + 1]:
                        return a, b, offset
                    break  # identical up to here: lower offsets are covered
    return None


def log_matching(state) -> bool:
    return _first_pair_mismatch(state) is None


def log_matching_all_pairs(state) -> bool:
    return _first_any_mismatch(state) is None


def log_matching_raft(state) -> bool:
    return _first_raft_mismatch(state) is None


def _describe(state, found: tuple[int, int, int], relation: str) -> str:
    a, b, offset = found
    ba, bb = state.brokers[a], state.brokers[b]
    la, lb = ba.log, bb.log
    ra = f"record {la[offset].ident} of epoch {la[offset].epoch}" if offset < len(la) else "nothing"
    rb = f"record {lb[offset].ident} of epoch {lb[offset].epoch}" if offset < len(lb) else "nothing"
    return (f"{relation} brokers {a} (HW {ba.hw}) and {b} (HW {bb.hw}) hold different records at "
            f"offset {offset}: {ra} vs {rb}")


def _explain(state) -> str:
    found = _first_pair_mismatch(state)
    if found is None:
        return "every leader and its reconciled followers agree below their high watermarks"
    return _describe(state, found,
                     "leader and reconciled follower,") + ", below both high watermarks"


def _explain_all(state) -> str:
    found = _first_any_mismatch(state)
    if found is None:
        return "every two replicas agree below their high watermarks"
    return _describe(state, found, "replicas") + ", below both high watermarks"


def _explain_raft(state) -> str:
    found = _first_raft_mismatch(state)
    if found is None:
        return "every two replicas that share a record's epoch at an offset agree up to it"
    a, b, offset = found
    epoch = state.brokers[a].log[offset].epoch
    return (f"brokers {a} and {b} both hold a record of epoch {epoch} at offset {offset} but their "
            "logs differ at or before it: "
            f"{_describe(state, (a, b, _mismatch(state.brokers[a].log, state.brokers[b].log, offset + 1)), '')}")  # noqa: E501


LOG_MATCHING = register(
    "kafka",
    Invariant(
        "log-matching",
        "a leader and each follower reconciled with it in its epoch hold identical logs below the "
        "smaller of their two HWs (the seed's Log Matching)",
        log_matching,
        explain=_explain,
    ),
)

LOG_MATCHING_ALL_PAIRS = register(
    "kafka",
    Invariant(
        "log-matching-all-pairs",
        "every two replicas, crashed or not yet reconciled included, hold identical logs below the "
        "smaller HW",
        log_matching_all_pairs,
        explain=_explain_all,
        default=False,
    ),
)

LOG_MATCHING_RAFT = register(
    "kafka",
    Invariant(
        "log-matching-raft",
        "two replicas holding a record of the same epoch at the same offset hold identical logs up "
        "to it (Raft)",
        log_matching_raft,
        explain=_explain_raft,
        default=False,
    ),
)
