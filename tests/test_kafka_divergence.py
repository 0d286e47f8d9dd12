"""The seed's divergence table (log-divergence-and-truncation.md, section 3.3, cases A to G) and the
OffsetsForLeaderEpoch lookups of KIP-101 and KIP-279, as pure functions: logs in, truncation out.

Epochs are the seed's (1, 2, 3); the leader has learned epoch 3 and registered it at its LEO.
"""

from __future__ import annotations

import pytest

from spec.kafka.log import (
    UNDEFINED,
    Record,
    cache_from_log,
    end_offset_for,
    end_offset_kip101,
    follower_truncation,
    truncation_for_diverging_fetch,
)


def log_of(*epochs: int) -> tuple[Record, ...]:
    return tuple(Record(epoch, 100 * epoch + offset) for offset, epoch in enumerate(epochs))


def leader(*epochs: int, current: int = 3):
    log = log_of(*epochs)
    cache = cache_from_log(log)
    if not cache or cache[-1][0] < current:
        cache = cache + ((current, len(log)),)
    return log, cache


# case: (leader log epochs, follower log epochs, expected truncation offset or None for no
# divergence)
CASES = {
    "A: follower behind, same epoch": ((1, 1, 1, 1), (1, 1), None),
    "B: follower behind, leader has a higher epoch": ((1, 1, 2, 2), (1, 1), None),
    "C: follower ahead with extra records of epoch 1": ((1, 1), (1, 1, 1, 1), 2),
    "D: follower ahead with records of a higher epoch": ((1, 1), (1, 1, 2, 2), 2),
    "E: forks, each in a different epoch": ((1, 1, 3, 3), (1, 1, 2, 2), 2),
    "F: follower forks in epoch 2, leader has more of epoch 1": ((1, 1), (1, 2, 2), 1),
    "G: no common epoch at all": ((1,), (2, 2), 0),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_seed_divergence_table(case: str) -> None:
    leader_epochs, follower_epochs, expected = CASES[case]
    leader_log, leader_cache = leader(*leader_epochs)
    follower_log = log_of(*follower_epochs)
    offset = truncation_for_diverging_fetch(leader_log, leader_cache, follower_log,
                                            cache_from_log(follower_log))
    assert offset == expected


def test_seed_case_c_diverging_epoch_and_follower_lookup() -> None:
    # the leader answers {epoch=1, endOffset=2}; the follower's own EOE(1) is 4; min is 2
    leader_log, leader_cache = leader(1, 1)
    assert end_offset_for(leader_cache, len(leader_log), 1) == (1, 2)
    follower_log = log_of(1, 1, 1, 1)
    assert follower_truncation(cache_from_log(follower_log), 4, 0, 1, 2) == (2, True)


def test_seed_case_g_lookup_below_every_epoch() -> None:
    # the follower knows no epoch <= 1: its lookup gives (1, start of its lowest epoch) = (1, 0)
    follower_cache = ((2, 0),)
    assert end_offset_for(follower_cache, 2, 1) == (1, 0)


def test_kip279_scenario1_lookups() -> None:
    # Broker A: epoch 1 from 0 to 20, epoch 3 from 21; broker B asks for epoch 2
    cache_a = ((1, 0), (3, 21))
    # KIP-101: the start of the next epoch, unqualified
    assert end_offset_kip101(cache_a, 31, 2) == 21
    # KIP-279: (largest epoch <= 2, its end offset)
    assert end_offset_for(cache_a, 31, 2) == (1, 21)
    cache_b = ((1, 0), (2, 11))
    # B truncates [11, n] and fetches from 11
    assert follower_truncation(cache_b, 21, 0, 1, 21) == (11, True)


def test_kip279_scenario3_rounds() -> None:
    # A has epochs 0 and 2, B has 1 and 3 (one record each); A asks for epoch 2
    cache_a, cache_b = ((0, 0), (2, 1)), ((1, 0), (3, 1))
    answer = end_offset_for(cache_b, 2, 2)
    assert answer == (1, 1)
    # A does not know epoch 1: another round
    assert follower_truncation(cache_a, 2, 0, *answer) == (1, False)
    answer = end_offset_for(cache_b, 2, 0)
    assert answer == (0, 0)  # below every epoch B knows: the start of its lowest epoch
    assert follower_truncation(((0, 0),), 1, 0, *answer) == (0, True)
    # KIP-101's one round: offset 1, and offset 0 stays divergent
    assert end_offset_kip101(cache_b, 2, 2) == 1


def test_kip101_undefined_cases() -> None:
    assert end_offset_kip101((), 0, 0) == UNDEFINED
    assert end_offset_kip101(((1, 0),), 3, 0) == UNDEFINED  # below every known epoch
    assert end_offset_kip101(((1, 0),), 3, 1) == 3  # the latest epoch: the LEO
    # fall back to the HW
    assert follower_truncation(((1, 0),), 3, 1, UNDEFINED, UNDEFINED) == (1, True)
