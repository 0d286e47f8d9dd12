"""Replica sanity: HW <= LEO, and the leader epoch cache agrees with the log.

The cache agrees with the log when its epochs and start offsets strictly increase, no epoch starts
beyond the LEO, and every record carries the epoch of the cache entry that covers its offset. A replica
with an empty cache is checked for HW <= LEO only: 0.10.2 keeps no leader epoch cache (KIP-101 brought
it in 0.11.0), and from 0.11.0 on a replica with records always has an entry.
"""

from __future__ import annotations

from checker.invariant import Invariant
from invariants.registry import register


def _broker_problem(b) -> str | None:
    leo = len(b.log)
    if b.hw > leo:
        return f"HW {b.hw} is above its LEO {leo}"
    cache = b.cache
    if not cache:
        return None
    for k in range(1, len(cache)):
        if cache[k][0] <= cache[k - 1][0] or cache[k][1] <= cache[k - 1][1]:
            return f"epoch cache {list(cache)} does not strictly increase"
    if cache and cache[-1][1] > leo:
        return f"epoch {cache[-1][0]} starts at {cache[-1][1]}, beyond its LEO {leo}"
    k = -1
    for offset, record in enumerate(b.log):
        while k + 1 < len(cache) and cache[k + 1][1] <= offset:
            k += 1
        covering = cache[k][0] if k >= 0 else -1
        if record.epoch != covering:
            return f"the record at offset {offset} has epoch {record.epoch} but its cache says epoch {covering}"
    return None


def _first_problem(state) -> tuple[int, str] | None:
    for i, b in enumerate(state.brokers):
        problem = _broker_problem(b)
        if problem is not None:
            return i, problem
    return None


def replica_sanity(state) -> bool:
    return _first_problem(state) is None


def _explain(state) -> str:
    found = _first_problem(state)
    if found is None:
        return "every replica is sane"
    i, problem = found
    return f"broker {i}: {problem}"


REPLICA_SANITY = register(
    "kafka",
    Invariant(
        "replica-sanity",
        "HW <= LEO on every replica, and its leader epoch cache agrees with its log",
        replica_sanity,
        explain=_explain,
        reads=("brokers.log", "brokers.hw", "brokers.cache"),
    ),
)
