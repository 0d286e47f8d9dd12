"""Issue 27's data-plane rules, each replayed under the releases on both sides of its change (the
scenario files ``kip-279-undefined-answer-after-an-intermediate-truncation`` and
``kafka-5163-fetch-answer-applied-to-a-truncating- partition`` tell the others, replayed by
tests/test_traces_scenarios.py and tests/test_kafka_stories.py).

``truncation-lowers-hw`` (2.4.0): before it a truncation leaves a follower's HW above its LEO (the
HW lives in ``Replica``; 2.3.0 ``Log.truncateTo`` does not touch it) until the next fetch answer,
and a follower becoming leader with such a HW restarts it from the log start
(``Partition.makeLeader`` -> ``convertHWToLocalOffsetMetadata``).

``kafka-5163`` (1.1.0): before it a fetch answer whose offset is a truncating partition's fetch
offset is applied.
"""

from __future__ import annotations

import pytest

from invariants.kafka_sanity import replica_sanity
from spec.kafka.scenario import run_scenario
from spec.kafka.state import FETCHING, TRUNCATING
from spec.registry import build_model
from tests.kafka_steps import deliver, fetch, model, offsets_round

#: broker 1 holds the committed m1 with HW 1; broker 0, alone in the ISR, loses it in a lossy crash
#: and leads again with an empty log; broker 1 comes back and its OffsetsForLeaderEpoch round
#: truncates it to 0
TRUNCATED_BELOW_HW = [
    ("Produce", {"leader": 0}), *fetch(1, 0), *fetch(1, 0), ("AdvanceHighWatermark", {"leader": 0}),
    *fetch(1, 0), ("Crash", {"broker": 1}), ("ProcessBrokerFailure", {"broker": 1}), deliver(0, 1),
    ("CrashLosingTail", {"broker": 0, "keep": 0}), ("ProcessBrokerFailure", {"broker": 0}),
    ("Restart", {"broker": 0}), deliver(0, 2), ("ElectLeader", {"leader": 0}), deliver(0, 3),
    ("Restart", {"broker": 1}), deliver(1, 3), *offsets_round(1, 0),
]
#: then broker 0 dies and broker 1 is elected uncleanly: it becomes leader with the HW it kept
UNCLEAN_LEADER = [("Crash", {"broker": 0}), ("ProcessBrokerFailure", {"broker": 0}),
                  ("UncleanLeaderElection", {"leader": 1}), deliver(1, 4), deliver(1, 5)]


def _model(lowers_hw: bool):
    features = ("lossy-crash=on", "unclean=on",
                f"truncation-lowers-hw={'on' if lowers_hw else 'off'}")
    return model("2.2.0", "brokers=2", "records=1", "crashes=3", "epochs=5", features=features)


@pytest.mark.parametrize("lowers_hw, hw_after_truncation", [(False, 1), (True, 0)])
def test_a_truncation_below_the_hw_lowers_it_only_from_2_4_0(lowers_hw, hw_after_truncation):
    """2.3.x (the 2.2.0 row) keeps the follower's HW 1 over its empty log; 2.4.x (the flag on)
    lowers it to 0. The next fetch answer sets it to min(leader HW, LEO) = 0 in both
    (``processPartitionData``)."""
    m = _model(lowers_hw)
    states = run_scenario(m, TRUNCATED_BELOW_HW)
    follower = states[-1].brokers[1]
    assert (follower.log, follower.hw) == ((), hw_after_truncation)
    # the HW checkpoint read back on restart, clamped to the LEO 1
    assert states[-4].brokers[1].hw == 1
    after_fetch = run_scenario(m, fetch(1, 0), states[-1])[-1].brokers[1]
    assert after_fetch.hw == 0
    assert all(replica_sanity(s) for s in states)


@pytest.mark.parametrize("lowers_hw", [False, True])
def test_a_follower_with_its_hw_above_its_leo_becomes_leader_from_the_log_start(lowers_hw):
    """``Partition.makeLeader`` (isNewLeader): the HW 1 above the empty log is out of range and
    becomes the log start offset (0) on 2.3.x; on 2.4.x it was already 0. A leader never has HW >
    LEO (replica-sanity)."""
    m = _model(lowers_hw)
    states = run_scenario(m, TRUNCATED_BELOW_HW)
    states = run_scenario(m, UNCLEAN_LEADER, states[-1])
    leader = states[-1].brokers[1]
    assert (leader.leader, leader.log, leader.hw) == (1, (), 0)
    assert all(replica_sanity(s) for s in states)


@pytest.mark.parametrize("lowers_hw", [True, False])  # two searches of about a second each
@pytest.mark.slow  # every line it runs, cheaper fast tests run too (coverage by test)
def test_from_2_4_0_every_replica_keeps_its_hw_at_or_below_its_leo(lowers_hw):
    """replica-sanity checks HW <= LEO on leaders only (a 2.3.x follower may be above); on the rows
    with ``truncation-lowers-hw`` every replica holds it, which this exhaustive search checks apart
    (and, the flag switched off, finds a follower above its LEO: the search reaches a truncation
    below the HW). 3.9.1, not 2.8.0: before KAFKA-14704 the diverging answer itself lowers the HW to
    the leader's before the truncation. No ISR change (alters=0): a truncation below the HW needs an
    unclean election and a lossy crash, not an AlterIsr round trip (with alters=2 it took 55 s of
    CPU against 1.2 s, with the same outcome). Two leader epochs and two crashes (15,876 states)
    still let the flag switched off leave a follower above its LEO (in 3 states; with one crash in
    none; with epochs=3, 59,503 states and 138 of them, at four times the CPU)."""
    features = ["lossy-crash=on", "unclean=on",
                f"truncation-lowers-hw={'on' if lowers_hw else 'off'}"]
    m = build_model("kafka", ["brokers=2", "records=1", "epochs=2", "crashes=2", "alters=0"],
                    protocol="3.9.1", feature_assignments=features)
    seen = set(m.init_states())
    frontier = list(seen)
    above = []
    while frontier:
        state = frontier.pop()
        above += [b for b in state.brokers if b.hw > len(b.log)]
        for _, succ in m.successors(state):
            if succ not in seen:
                seen.add(succ)
                frontier.append(succ)
    assert bool(above) is not lowers_hw
    assert all(not b.alive or b.leader != i for s in seen for i, b in enumerate(s.brokers) if b.hw
               > len(b.log))


# -- kafka-5163 (1.1.0): a fetch answer applied to a truncating partition in 0.11.0 / 1.0.x --------
#: broker 1 holds m1, committed (the leader's HW 1), with its own HW 0; its fetch at offset 1 is
#: answered empty with HW 1 and stays in flight while leadership goes to broker 1 and back: the
#: partition is re-created truncating at 1
EMPTY_ANSWER_ACROSS_A_ROUND_TRIP = [
    ("Produce", {"leader": 0}), *fetch(1, 0), *fetch(1, 0), ("AdvanceHighWatermark", {"leader": 0}),
    ("SendFetch", {"follower": 1, "leader": 0}), ("ServeFetch", {"leader": 0, "follower": 1}),
    ("PreferredLeaderElection", {"leader": 1}), deliver(1, 1), deliver(0, 1),
    ("PreferredLeaderElection", {"leader": 0}), deliver(0, 2), deliver(1, 2),
    ("ReceiveFetch", {"follower": 1, "leader": 0}),
]


@pytest.mark.parametrize("kafka_5163, hw", [(False, 1), (True, 0)])
def test_an_empty_answer_to_a_truncating_partition_sets_only_the_hw_before_1_1_0(kafka_5163, hw):
    """0.11.0 / 1.0.x (``processFetchRequest``): the answer's offset is the re-created state's (its
    LEO 1), so ``processPartitionData`` takes HW min(1, 1); with no records the state is not
    replaced (``if (validBytes > 0)``) and the partition stays truncating. 1.1.0
    (``isReadyForFetch``) drops the answer."""
    m = model("0.11.0", "brokers=2", "records=1", "epochs=2",
              features=(f"kafka-5163={'on' if kafka_5163 else 'off'}",))
    states = run_scenario(m, EMPTY_ANSWER_ACROSS_A_ROUND_TRIP)
    before, after = states[-2].brokers[1], states[-1].brokers[1]
    assert before.fetch == TRUNCATING and before.hw == 0
    assert (after.fetch, after.hw, after.log) == (TRUNCATING, hw, before.log)


# -- the initial fetch offset per release ----------------------------------------------------------
#: broker 0 holds m1 with HW 0; leadership moves to broker 1 (empty log, and in 2.0.0 no epoch:
#: kafka-7415 is 2.0.1), whose answer to broker 0's OffsetsForLeaderEpoch is UNDEFINED: broker 0
#: truncates to its fetch state's offset
UNDEFINED_TO_A_FRESH_STATE = [
    ("Produce", {"leader": 0}), ("PreferredLeaderElection", {"leader": 1}), deliver(1, 1),
    deliver(0, 1), *offsets_round(0, 1),
]


@pytest.mark.parametrize("kafka_5163, log_after", [(True, 0), (False, 1)])
def test_a_fresh_fetch_state_starts_at_the_hw_from_1_1_0_and_at_the_leo_before(
    kafka_5163, log_after):
    """2.0.0 ``getOffsetTruncationState``: an UNDEFINED answer truncates to the state's initial
    fetch offset, the HW
    (0) from 1.1.0 (KAFKA-5163: ``makeFollowers`` creates the state at the HW), the LEO (1) with the
    flag off, as 0.11.0 and 1.0.x created it (``BrokerAndInitialOffset(..., logEndOffset)``)."""
    m = model("2.0.0", "brokers=2", "records=1", "epochs=2",
              features=(f"kafka-5163={'on' if kafka_5163 else 'off'}",))
    follower = run_scenario(m, UNDEFINED_TO_A_FRESH_STATE)[-1].brokers[0]
    assert (len(follower.log), follower.fetch) == (log_after, FETCHING)


@pytest.mark.parametrize("protocol, fetched, fetch_state", [
    ("2.2.0", True, TRUNCATING),  # 1.1.0 to 2.7.x: at the HW, truncating first
    # 2.8.0 initialFetchOffset: an epoch in the cache: at the LEO, fetching at once
    ("2.8.0", True, FETCHING),
    ("2.8.0", False, TRUNCATING),  # no epoch: at the HW, truncating (to the HW) first
])
def test_a_new_follower_starts_fetching_or_truncating_as_its_release_does(
    protocol, fetched, fetch_state):
    """Broker 2, with m1 of epoch 0 (fetched) or with nothing, follows broker 1 in epoch 1."""
    m = model(protocol, "brokers=3", "records=1", "epochs=2")
    steps = [("Produce", {"leader": 0}), *(fetch(2, 0) if fetched else []),
             ("PreferredLeaderElection", {"leader": 1}), deliver(2, 1)]
    follower = run_scenario(m, steps)[-1].brokers[2]
    assert (bool(follower.cache), follower.fetch) == (fetched, fetch_state)
