"""Replica sanity: HW <= LEO on a leader, and the leader epoch cache agrees with the log.

HW <= LEO is checked on the replicas that lead (alive, leading in the epoch they know), not on
followers: before 2.4.0 a follower's HW stays above its LEO after a truncation (the HW lives in
``Replica``; 2.3.0 ``Log.truncateTo`` / ``updateLogEndOffset`` leave it,
``ReplicaFetcherThread.truncate`` only warns "Truncating ... below high watermark") until its next
fetch answer sets it to min(leader HW, LEO) (``processPartitionData``), and nothing reads it
meanwhile: consumers read from the leader, a restart reads the checkpoint back clamped to the LEO
(``Partition.getOrCreateReplica``), and a follower becoming leader resets it
(``Partition.makeLeader`` -> ``convertHWToLocalOffsetMetadata``). A leader's HW above its LEO would
expose records it does not have; that no release allows. From 2.4.0 (``Log.updateLogEndOffset``
lowers the HW) every replica keeps HW <= LEO, which ``tests/test_kafka_data_plane_releases.py``
checks on those rows apart.

The cache agrees with the log when its epochs and start offsets strictly increase, no epoch starts
beyond the LEO, and every record carries the epoch of the cache entry that covers its offset. A
replica with an empty cache is checked for HW <= LEO only: 0.10.2 keeps no leader epoch cache
(KIP-101 brought it in 0.11.0), and from 0.11.0 on a replica with records always has an entry.
"""

from __future__ import annotations

from checker.invariant import Invariant
from invariants.registry import register


def _broker_problem(b, leads: bool) -> str | None:
    leo = len(b.log)
    if leads and b.hw > leo:
        return f"HW {b.hw} is above its LEO {leo} while it leads"
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
            return (f"the record at offset {offset} has epoch {record.epoch} but its cache says "
                    f"epoch {covering}")
    return None


def _first_problem(state) -> tuple[int, str] | None:
    for i, b in enumerate(state.brokers):
        problem = _broker_problem(b, b.alive and b.leader == i)
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
        "HW <= LEO on every leader, and every replica's leader epoch cache agrees with its log",
        replica_sanity,
        explain=_explain,
    ),
)
