"""A replica's log and its leader epoch cache, as pure functions on tuples.

A log is a tuple of ``Record(epoch, ident)``: the leader epoch the record was written in and a
unique identity (the produce number), so two replicas that hold different records at the same
offset are visibly diverged. Offsets start at 0; the LEO is ``len(log)``.

The epoch cache is a tuple of ``(epoch, start_offset)`` pairs, both strictly increasing. It is kept
apart from the log because a leader may register its epoch before appending anything (KAFKA-7415).

The lookups follow Kafka's ``LeaderEpochFileCache.endOffsetFor`` in its three generations:
``end_offset_kip101`` (0.11), ``end_offset_for`` (2.0+: an (epoch, offset) pair, also the diverging
epoch lookup of truncate-on-fetch), and the follower side ``follower_truncation``.
"""

from __future__ import annotations

from typing import NamedTuple

UNDEFINED = -1  # UNDEFINED_EPOCH and UNDEFINED_EPOCH_OFFSET


class Record(NamedTuple):
    epoch: int  # the leader epoch the record was written in
    ident: int  # which produce wrote it (1, 2, ...): divergence is visible


Log = tuple[Record, ...]
Cache = tuple[tuple[int, int], ...]


def latest_epoch(cache: Cache) -> int:
    return cache[-1][0] if cache else UNDEFINED


def assign(cache: Cache, epoch: int, offset: int, kafka_7415: bool = True) -> Cache:
    """``LeaderEpochFileCache.assign(epoch, offset)`` as each release does it.

    0.11.0 to 2.0.0: append (epoch, offset) only if the epoch is newer than the latest and the
    offset is not below its start; anything else is ignored (``validateAndMaybeWarn``). 2.0.1+
    (KAFKA-7415, ``truncateAndAppend``): unless it repeats the latest entry (same epoch, offset not
    lower), drop every entry whose epoch or start offset is not below the new one's, then append it:
    a lower epoch appended after a higher one (a stale fetch answer) replaces the higher entry.
    """
    if not kafka_7415:
        if cache and (epoch <= cache[-1][0] or offset < cache[-1][1]):
            return cache
        return cache + ((epoch, offset),)
    if cache and cache[-1][0] == epoch and offset >= cache[-1][1]:
        return cache
    kept = tuple([entry for entry in cache if entry[0] < epoch and entry[1] < offset])
    return kept + ((epoch, offset),)


def truncate_cache(cache: Cache, offset: int) -> Cache:
    """``truncateFromEnd`` (``clearAndFlushLatest`` before 2.0.1): drop the epochs that start at or
    after ``offset``."""
    while cache and cache[-1][1] >= offset:
        cache = cache[:-1]
    return cache


def cache_after_append(cache: Cache, log: Log, start: int, kafka_7415: bool = True) -> Cache:
    """The cache after ``log[start:]`` was appended (``Log.append`` assigns each batch's epoch at
    its base offset; one record per batch here)."""
    for offset in range(start, len(log)):
        epoch = log[offset].epoch
        if not cache or epoch != cache[-1][0]:
            cache = assign(cache, epoch, offset, kafka_7415)
    return cache


def cache_from_log(log: Log) -> Cache:
    """The cache that the log alone implies (what Kafka rebuilds when the cache file is lost)."""
    return cache_after_append((), log, 0)


def end_offset_kip101(cache: Cache, leo: int, requested: int) -> int:
    """0.11's answer to OffsetsForLeaderEpoch(requested): an offset, or UNDEFINED.

    The LEO if ``requested`` is the latest epoch; else the start offset of the first epoch above
    it; UNDEFINED if there is none or ``requested`` is below every known epoch.
    """
    if not cache or requested == UNDEFINED:
        return UNDEFINED
    if requested == cache[-1][0]:
        return leo
    if requested < cache[0][0]:
        return UNDEFINED
    for epoch, start in cache:
        if epoch > requested:
            return start
    return UNDEFINED


def end_offset_for(cache: Cache, leo: int, requested: int,
                   kafka_7415: bool = True) -> tuple[int, int]:
    """2.0+ ``endOffsetFor(requested)``: (largest epoch <= requested, its end offset).

    If ``requested`` is the latest epoch: (requested, LEO). If no epoch is above it (or the cache
    is empty): (UNDEFINED, UNDEFINED). If every known epoch is above it: 2.0.1+ (KAFKA-7415)
    answers (requested, start offset of the lowest epoch), as the seed's truncation section says;
    2.0.0 answered (UNDEFINED, UNDEFINED) ("requested epoch < the first epoch cached").
    """
    if requested == UNDEFINED or not cache:
        return UNDEFINED, UNDEFINED
    if cache[-1][0] == requested:
        return requested, leo
    floor = UNDEFINED
    for epoch, start in cache:
        if epoch > requested:
            if floor == UNDEFINED:
                return (requested, start) if kafka_7415 else (UNDEFINED, UNDEFINED)
            return floor, start
        floor = epoch
    return UNDEFINED, UNDEFINED


def end_offset_of(cache: Cache, leo: int, epoch: int) -> int:
    """EOE(epoch) on a replica that knows ``epoch``: start of the next epoch, or the LEO."""
    for e, start in cache:
        if e > epoch:
            return start
    return leo


def epoch_start(cache: Cache, epoch: int, leo: int) -> int:
    """The start offset of ``epoch`` in the cache (``leaderEpochStartOffsetOpt``), or the LEO if
    absent."""
    for e, start in cache:
        if e == epoch:
            return start
    return leo


#: ``diverging_epoch``'s answer when the leader's lookup of the follower's last fetched epoch is
#: undefined: 2.8+ ``Partition.readRecords`` throws OffsetOutOfRangeException (OFFSET_OUT_OF_RANGE
#: to the follower)
LOOKUP_UNDEFINED = (UNDEFINED, UNDEFINED)


def diverging_epoch(cache: Cache, leo: int, fetch_offset: int,
                    last_epoch: int) -> tuple[int, int] | None:
    """The leader's check of a fetch (truncate-on-fetch, 2.8+ ``Partition.readRecords`` with
    ``lastFetchedEpoch``): the diverging (epoch, end offset), None if not diverged, or
    ``LOOKUP_UNDEFINED`` when the leader cannot look the epoch up.

    Diverged when the lookup of ``last_epoch`` (``leaderEpochCache.endOffsetFor``) finds a lower
    epoch or an end offset below the fetch offset. A follower with no epoch (``last_epoch``
    UNDEFINED) sends no ``lastFetchedEpoch`` (it truncated to its HW instead) and is not checked.
    """
    if last_epoch == UNDEFINED:
        return None
    epoch, end = end_offset_for(cache, leo, last_epoch)
    if epoch == UNDEFINED or end == UNDEFINED:
        return LOOKUP_UNDEFINED
    if epoch < last_epoch or end < fetch_offset:
        return epoch, end
    return None


def follower_truncation(cache: Cache, leo: int, hw: int, leader_epoch: int, leader_end: int,
                        kafka_7415: bool = True) -> tuple[int, bool]:
    """The follower's side of an (epoch, end offset) answer (KIP-279 and truncate-on-fetch).

    Returns (truncation offset, done). If the follower knows ``leader_epoch`` it truncates to
    min(leader's end offset, its own end offset of that epoch, LEO) and is done. If it does not, it
    truncates to the end of its largest epoch below and must ask again (another round, or the next
    fetch carries the new last epoch). If it has no epoch at or below, it truncates to
    min(leader's end offset, LEO), as Kafka's ``getOffsetTruncationState`` does. An UNDEFINED
    answer means: fall back to the high watermark.
    """
    if leader_end == UNDEFINED:
        return min(hw, leo), True
    epoch, end = end_offset_for(cache, leo, leader_epoch, kafka_7415)
    if end == UNDEFINED:
        return min(leader_end, leo), True
    if epoch != leader_epoch:
        return min(end, leo), False
    return min(leader_end, end, leo), True


def truncation_for_diverging_fetch(
    leader_log: Log, leader_cache: Cache, follower_log: Log, follower_cache: Cache
) -> int | None:
    """The seed's table (cases A-G): where a follower ends up after its first fetch, or None.

    The follower fetches at its LEO with its latest epoch; None means no divergence (it appends).
    """
    last = latest_epoch(follower_cache)
    diverging = diverging_epoch(leader_cache, len(leader_log), len(follower_log), last)
    if diverging is None:
        return None
    offset, _ = follower_truncation(follower_cache, len(follower_log), 0, *diverging)
    return offset
