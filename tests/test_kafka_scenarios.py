"""The seeds' scenarios as explicit action sequences, each with its expected outcome, under the
version that has the bug and under the version that fixes it.

Brokers are numbered from 0; the seeds' epoch 1 is the model's epoch 0 (the initial leader's).
"""

from __future__ import annotations

import pytest

from invariants.kafka_durability import committed_durable
from invariants.kafka_log_matching import log_matching
from spec.kafka.log import Record
from spec.kafka.scenario import ScenarioError, run_scenario
from tests.kafka_steps import deliver, fetch, model, offsets_round


def idents(state, broker: int) -> list[int]:
    return [r.ident for r in state.brokers[broker].log]


# -- section 3.1 of the seed: how logs diverge, and each version's truncation repairs it -----------
def section_31_steps(protocol: str) -> list:
    steps = [("Produce", {"leader": 0})]  # record A in epoch 1
    steps += [("SendFetch", {"follower": f, "leader": 0}) for f in (1, 2)]
    steps += [("ServeFetch", {"leader": 0, "follower": f}) for f in (1, 2)]
    steps += [("ReceiveFetch", {"follower": f, "leader": 0}) for f in (1, 2)]
    steps += [("SendFetch", {"follower": f, "leader": 0}) for f in (1, 2)]
    steps += [("ServeFetch", {"leader": 0, "follower": f}) for f in (1, 2)]
    steps += [("AdvanceHighWatermark", {"leader": 0}), ("Produce", {"leader": 0})]  # HW 1, record B
    steps += [("PreferredLeaderElection", {"leader": 1}), deliver(1, 1), deliver(0, 1)]
    if protocol in ("kip-101", "kip-279"):
        steps += offsets_round(0, 1)
    elif protocol == "truncate-on-fetch":
        steps += [*fetch(0, 1), ("TruncateOnDivergingEpoch", {"follower": 0})]
    return steps


@pytest.mark.parametrize("protocol", ["hw-truncation", "kip-101", "kip-279", "truncate-on-fetch"])
def test_section_31_divergence_is_truncated(protocol: str) -> None:
    states = run_scenario(model(protocol, "brokers=3"), section_31_steps(protocol))
    before = states[14]  # step 4 of the seed: replica 2 elected in epoch 2
    assert idents(before, 0) == [1, 2] and idents(before, 1) == [1] and before.brokers[0].hw == 1
    last = states[-1]
    assert idents(last, 0) == [1], "replica 1 must remove offset 1 (record B) on becoming follower"
    assert log_matching(last)


# -- KIP-279 scenario 1: a preferred election, then a fast return of the old leader ----------------
def kip279_scenario1_steps(k: int) -> list:
    """A (0) writes three records in epoch 1, B (1) replicates the first; B leads epoch 2 and writes
    ``k`` records; B's session expires; A leads epoch 3 and writes one; B comes back."""
    steps = [("Produce", {"leader": 0}), *fetch(1, 0), ("Produce", {"leader": 0}),
             ("Produce", {"leader": 0})]
    steps += [("PreferredLeaderElection", {"leader": 1}), deliver(1, 1)]
    steps += [("Produce", {"leader": 1})] * k
    steps += [("Crash", {"broker": 1}), ("ElectLeader", {"leader": 0}), deliver(0, 1),
              deliver(0, 2)]
    steps += [("Produce", {"leader": 0}), ("Restart", {"broker": 1}), deliver(1, 2)]
    steps += offsets_round(1, 0)
    # B fetches, rejoins the ISR, the HW advances and reaches B
    steps += [*fetch(1, 0), ("SendFetch", {"follower": 1, "leader": 0}),
              ("ServeFetch", {"leader": 0, "follower": 1})]
    steps += [("ExpandIsr", {"leader": 0, "follower": 1}), ("AdvanceHighWatermark", {"leader": 0})]
    steps += [("ReceiveFetch", {"follower": 1, "leader": 0}), *fetch(1, 0)]
    return steps


@pytest.mark.parametrize("k, case", [(1, "n < 20"), (2, "n == 20"), (3, "n > 20")])
def test_kip279_scenario1_breaks_kip101(k: int, case: str) -> None:
    m = model("kip-101", "records=7")
    states = run_scenario(m, kip279_scenario1_steps(k))
    last = states[-1]
    # A answered the start of epoch 3 (offset 3) to B's request for epoch 2: B kept its epoch-2
    # records
    assert idents(last, 1)[:2] == [1, 4]
    assert idents(last, 0) == [1, 2, 3, 4 + k]
    assert not log_matching(last), f"{case}: the logs diverge below both high watermarks"
    # With one record per batch the model cannot show KIP-279's "n > 20" rescue, which relies on
    # truncating to the start of the batch that holds offset 21: the record-level answer keeps B's
    # epoch-2 records at offsets 1 and 2, so this case diverges too.


@pytest.mark.parametrize("k", [1, 2, 3])
def test_kip279_scenario1_fixed_by_kip279(k: int) -> None:
    m = model("kip-279", "records=7")
    states = run_scenario(m, kip279_scenario1_steps(k))
    truncated = states[-12]  # right after the OffsetsForLeaderEpoch round
    assert idents(truncated, 1) == [1], "B truncates to the end of epoch 1 on its side: offset 1"
    last = states[-1]
    assert idents(last, 1) == idents(last, 0) == [1, 2, 3, 4 + k]
    assert log_matching(last) and committed_durable(last)


# -- KIP-279 scenario 3: fast leader fail-over with unclean leader election ------------------------
def kip279_scenario3_steps(protocol: str) -> list:
    """Each death is processed by the controller (a new epoch) before the next restart: the seed's
    epochs 0, 1, 2, 3 of the writes are the model's 1, 3, 5, 7."""
    # B leaves the ISR
    steps = [("Crash", {"broker": 1}), ("ProcessBrokerFailure", {"broker": 1}), deliver(0, 1)]
    # [epoch 1] write A:0, stop A, bring up B which becomes leader
    steps += [("Produce", {"leader": 0}), ("AdvanceHighWatermark", {"leader": 0}),
              ("Crash", {"broker": 0})]
    steps += [("ProcessBrokerFailure", {"broker": 0}), ("Restart", {"broker": 1}), deliver(1, 2)]
    steps += [("UncleanLeaderElection", {"leader": 1}), deliver(1, 3)]
    # [epoch 3] write B:0, stop B, bring up A which becomes leader
    steps += [("Produce", {"leader": 1}), ("AdvanceHighWatermark", {"leader": 1}),
              ("Crash", {"broker": 1})]
    steps += [("ProcessBrokerFailure", {"broker": 1}), ("Restart", {"broker": 0}), deliver(0, 4)]
    steps += [("UncleanLeaderElection", {"leader": 0}), deliver(0, 5)]
    # [epoch 5] write A:1, stop A, bring up B which becomes leader
    steps += [("Produce", {"leader": 0}), ("AdvanceHighWatermark", {"leader": 0}),
              ("Crash", {"broker": 0})]
    steps += [("ProcessBrokerFailure", {"broker": 0}), ("Restart", {"broker": 1}), deliver(1, 6)]
    steps += [("UncleanLeaderElection", {"leader": 1}), deliver(1, 7)]
    # [epoch 7] write B:1; bring up A
    steps += [("Produce", {"leader": 1}), ("AdvanceHighWatermark", {"leader": 1})]
    steps += [("Restart", {"broker": 0}), deliver(0, 7)]
    steps += offsets_round(0, 1)
    if protocol != "kip-101":
        steps += offsets_round(0, 1)  # B answered epoch 3, which A does not know: a second round
    steps += fetch(0, 1)
    return steps


SCENARIO_3 = ("records=4", "epochs=7", "crashes=4")


def test_kip279_scenario3_breaks_kip101() -> None:
    m = model("kip-101", *SCENARIO_3, features=("unclean=on",))
    states = run_scenario(m, kip279_scenario3_steps("kip-101"))
    last = states[-1]
    # B answered offset 1 (the start of epoch 7) for epoch 5: A kept A:0, which B never had
    assert last.brokers[0].log == (Record(1, 1), Record(7, 4))
    assert last.brokers[1].log == (Record(3, 2), Record(7, 4))
    assert not log_matching(last)


@pytest.mark.parametrize("protocol", ["2.0.1", "2.2.0"])
def test_kip279_scenario3_fixed_by_kip279_with_the_kafka_7415_lookup(protocol: str) -> None:
    m = model(protocol, *SCENARIO_3, features=("unclean=on",))
    states = run_scenario(m, kip279_scenario3_steps(protocol))
    after_first_round = states[-7]
    assert idents(after_first_round, 0) == [1], (
        "first round: B answers (epoch 3, offset 1); A truncates to 1")
    after_second_round = states[-4]
    assert idents(after_second_round, 0) == [], (
        "second round: B answers (1, 0) for epoch 1: A truncates to 0")
    last = states[-1]
    assert last.brokers[0].log == last.brokers[1].log
    assert log_matching(last)
    # unclean election trades durability away: A:0 was committed in epoch 1 and is gone
    assert not committed_durable(last)


# -- KIP-101's first scenario (KIP-279's scenario 2): a lagging HW, a bounce the controller missed
def kip101_restart_steps(protocol: str) -> list:
    """A restart the controller processes takes the follower out of the ISR (it could not be
    elected), so the follower bounces unseen and an epoch bump of the same leader makes the new
    incarnation a follower."""
    steps = [("Produce", {"leader": 0}), *fetch(1, 0), ("Produce", {"leader": 0})]
    steps += [("SendFetch", {"follower": 1, "leader": 0}),
              ("ServeFetch", {"leader": 0, "follower": 1})]
    steps += [("AdvanceHighWatermark", {"leader": 0}),
              ("ReceiveFetch", {"follower": 1, "leader": 0})]
    steps += [("SendFetch", {"follower": 1, "leader": 0}),
              ("ServeFetch", {"leader": 0, "follower": 1})]
    steps += [("AdvanceHighWatermark", {"leader": 0}),
              ("ReceiveFetch", {"follower": 1, "leader": 0})]
    # follower (HW 1) bounces while the leader's HW is 2; a reassignment bumps the epoch
    steps += [("Bounce", {"broker": 1}), ("BumpLeaderEpoch", {"leader": 0}), deliver(1, 1)]
    if protocol != "hw-truncation":
        steps += offsets_round(1, 0)
    # the leader dies and the follower is elected
    steps += [("Crash", {"broker": 0}), ("ElectLeader", {"leader": 1}), deliver(1, 2)]
    return steps


KIP_101_1 = ("bounces=1", "bumps=1", "crashes=1")


def test_kip101_restart_scenario_loses_committed_data_before_kip101() -> None:
    states = run_scenario(model("hw-truncation", *KIP_101_1), kip101_restart_steps("hw-truncation"))
    restarted = states[17]
    assert restarted.brokers[1].hw == 1 and restarted.brokers[0].hw == 2
    assert idents(restarted, 1) == [1], "the follower truncates the committed record to its own HW"
    assert not committed_durable(states[-1])


@pytest.mark.parametrize("protocol", ["kip-101", "kip-279"])
def test_kip101_restart_scenario_fixed(protocol: str) -> None:
    states = run_scenario(model(protocol, *KIP_101_1), kip101_restart_steps(protocol))
    assert idents(states[-1], 1) == [1, 2], "the leader answers offset 2 for epoch 0: no truncation"
    assert committed_durable(states[-1]) and log_matching(states[-1])


# -- KIP-101's second scenario: both brokers crash and one loses its unflushed tail -------------
def kip101_lossy_steps(protocol: str) -> list:
    steps = [("Produce", {"leader": 0}), ("Produce", {"leader": 0}), *fetch(1, 0), *fetch(1, 0)]
    steps += [("AdvanceHighWatermark", {"leader": 0}), *fetch(1, 0)]  # both hold m1, m2 with HW 2
    steps += [("CrashLosingTail", {"broker": 1, "keep": 1}), ("Crash", {"broker": 0})]
    # the controller processes the leader's death first (offline, ISR {1}), then broker 1's (the
    # last ISR member)
    steps += [("ProcessBrokerFailure", {"broker": 0}), ("ProcessBrokerFailure", {"broker": 1})]
    steps += [("Restart", {"broker": 1}), ("ElectLeader", {"leader": 1}), deliver(1, 2),
              deliver(1, 3)]
    steps += [("Produce", {"leader": 1}), ("Restart", {"broker": 0}), deliver(0, 3)]
    if protocol != "hw-truncation":
        steps += offsets_round(0, 1)
    steps += [*fetch(0, 1), ("SendFetch", {"follower": 0, "leader": 1}),
              ("ServeFetch", {"leader": 1, "follower": 0})]
    steps += [("ExpandIsr", {"leader": 1, "follower": 0}), ("AdvanceHighWatermark", {"leader": 1})]
    steps += [("ReceiveFetch", {"follower": 0, "leader": 1}), *fetch(0, 1)]
    return steps


KIP_101_2 = ("records=3", "epochs=3", "crashes=2")


def test_kip101_lossy_crash_diverges_before_kip101() -> None:
    m = model("hw-truncation", *KIP_101_2, features=("lossy-crash=on",))
    last = run_scenario(m, kip101_lossy_steps("hw-truncation"))[-1]
    assert idents(last, 0)[:2] == [1, 2] and idents(last, 1)[:2] == [1, 3]
    assert not log_matching(last)


def test_kip101_lossy_crash_fixed_by_kip101() -> None:
    m = model("kip-101", *KIP_101_2, features=("lossy-crash=on",))
    last = run_scenario(m, kip101_lossy_steps("kip-101"))[-1]
    assert idents(last, 0) == idents(last, 1) == [1, 3]
    assert log_matching(last)


def test_a_step_that_is_not_enabled_is_refused() -> None:
    with pytest.raises(ScenarioError, match="ServeFetch"):
        run_scenario(model("kip-101"), [("ServeFetch", {"leader": 0, "follower": 1})])
