"""Issue 4's seeds as explicit action sequences, each under the version with the bug and the one
with the fix: KAFKA-7786's fence stall, KIP-380's bounce during controlled shutdown, its stale
ControlledShutdown, its fast bounce the controller misses, and KAFKA-6880's zombie replica that
KIP-320 fences. Then the matrix cells, both forms of no-fence-stall, and the pinned counts.

Brokers are numbered from 0; the seeds' epochs are the model's epochs counted from 0.
"""

from __future__ import annotations

import json
import random
from itertools import permutations

import pytest

from checker.bfs import check
from checker.search import SearchOptions
from invariants.kafka_control import no_fence_stall, no_stale_control_request, stalled_followers
from invariants.kafka_log_matching import log_matching, log_matching_all_pairs
from invariants.registry import for_family
from kmc.cli import main
from kmc.matrix.run import MatrixOptions, run_matrix
from spec.kafka import symmetry
from spec.kafka.protocols import resolve
from spec.kafka.scenario import ScenarioError, run_scenario
from spec.kafka.state import (
    FENCED_LEADER_EPOCH,
    FETCH_RESPONSE,
    FETCHING,
    NO_FETCHER,
    STOP_REPLICA,
    TRUNCATING,
)
from tests.kafka_steps import alter_isr, deliver, fetch, model, offsets_round

CONTROL_BOUNDS = ("records=1", "epochs=1", "crashes=0", "bumps=1", "shutdowns=1", "bounces=1")




# -- KAFKA-7786: an outdated FENCED_LEADER_EPOCH removes the partition from the fetcher ------------
def kafka7786_steps() -> list:
    """The seed's ten steps in their smallest form: leader 0, follower 1, which holds one record.
    The controller processes the follower's death (ISR {0}, epoch 1) before it can come back."""
    steps = [("Produce", {"leader": 0}), *fetch(1, 0)]
    steps += [("Crash", {"broker": 1}), ("ProcessBrokerFailure", {"broker": 1}), deliver(0, 1)]
    steps += [("Restart", {"broker": 1})]  # 1, 4, 5: back; LeaderAndIsr(epoch 1) queued
    steps += [("BumpLeaderEpoch", {"leader": 0})]  # 2/6: reassignment: epoch 2, the same leader
    steps += [deliver(0, 2)]  # 3/7: the leader is in epoch 2
    # 8: asks with epoch 1
    steps += [deliver(1, 1), ("SendOffsetsForLeaderEpoch", {"follower": 1, "leader": 0})]
    steps += [deliver(1, 2)]  # 9: the fetcher re-adds the partition in epoch 2
    # the leader answers FENCED
    steps += [("ServeOffsetsForLeaderEpoch", {"leader": 0, "follower": 1})]
    steps += [("ReceiveOffsetsForLeaderEpoch", {"follower": 1, "leader": 0})]  # 10
    return steps


@pytest.mark.parametrize("protocol, features, stalls", [
    ("kip-320", (), True),
    ("kip-320", ("kafka-7786-fix=on",), False),
    ("kip-380", ("kafka-7786-fix=off",), True),
    ("kip-380", (), False),
])
def test_kafka7786_fence_stall(protocol: str, features: tuple[str, ...], stalls: bool) -> None:
    m = model(protocol, "records=1", "crashes=1", "bumps=1", features=features)
    states = run_scenario(m, kafka7786_steps())
    last = states[-1]
    follower = last.brokers[1]
    assert follower.epoch == 2 and last.controller.epoch == 2
    if stalls:
        assert follower.fetch == NO_FETCHER and last.network == ()
        assert stalled_followers(last) == [1] and not no_fence_stall(last)
    else:
        assert follower.fetch == TRUNCATING, (
            "the outdated answer is ignored; the follower asks again in epoch 2")
        states = run_scenario(m, [*offsets_round(1, 0), *fetch(1, 0)], last)
        assert states[-1].brokers[1].fetch == FETCHING and states[-1].brokers[1].epoch == 2
        assert all(no_fence_stall(s) for s in states)


# -- KIP-380: a broker bounces during its controlled shutdown --------------------------------------
def shutdown_bounce_steps() -> list:
    return [
        ("ControlledShutdown", {"broker": 1}),
        # ISR {0}, epoch 1; StopReplica to 1 queued
        ("ProcessControlledShutdown", {"broker": 1, "leader": 0}),
        # back before the StopReplica arrived, and before the controller noticed
        ("Bounce", {"broker": 1}),
        ("DeliverStopReplica", {"broker": 1}),
        ("ProcessBrokerChange", {"broker": 1}),
        deliver(0, 1),
    ]


def test_kip380_bounce_during_controlled_shutdown_before_kip380() -> None:
    states = run_scenario(model("kip-320", "records=0", "shutdowns=1", "bounces=1"),
                          shutdown_bounce_steps())
    applied = states[4]
    assert applied.brokers[1].incarnation == 1 and applied.brokers[1].fetch == NO_FETCHER
    assert not no_stale_control_request(applied), (
        "the new incarnation applied its predecessor's StopReplica")
    last = states[-1]
    assert last.network == () and stalled_followers(last) == [1], (
        "and nobody tells it to replicate again")


def test_kip380_bounce_during_controlled_shutdown_fixed() -> None:
    m = model("kip-380", "records=0", "shutdowns=1", "bounces=1")
    steps = shutdown_bounce_steps() + [deliver(1, 1), ("TruncateToHighWatermark", {"follower": 1}),
                                       *fetch(1, 0)]
    states = run_scenario(m, steps)
    assert [m.broker_epoch for m in states[3].network if m.kind == STOP_REPLICA] == [0]
    assert not any(m.kind == STOP_REPLICA for m in states[4].network), (
        "delivered and rejected: STALE_BROKER_EPOCH")
    assert all(no_stale_control_request(s) for s in states)
    assert all(no_fence_stall(s) for s in states)
    assert states[-1].brokers[1].fetch == FETCHING and states[-1].brokers[1].epoch == 1


def test_each_kip380_flag_switches_alone() -> None:
    m = model("kip-380", "records=0", "shutdowns=1", "bounces=1",
              features=("reject-stale-broker-epoch=off",))
    states = run_scenario(m, shutdown_bounce_steps()[:4])
    assert not no_stale_control_request(states[-1])
    m = model("kip-380", "records=0", "bounces=1", features=("detect-bounced-broker=off",))
    last = run_scenario(m, fast_bounce_steps())[-1]
    assert stalled_followers(last) == [1]


# -- KIP-380: a ControlledShutdown from before a restart, acted on after it ------------------------
def stale_shutdown_steps() -> list:
    return [
        ("ControlledShutdown", {"broker": 1}),
        ("Crash", {"broker": 1}),
        # the controller processes the death: ISR {0}, epoch 1
        ("ProcessBrokerFailure", {"broker": 1}),
        deliver(0, 1),
        ("Restart", {"broker": 1}),  # the controller registers the new generation at once
        deliver(1, 1),
        ("ProcessControlledShutdown", {"broker": 1, "leader": 0}),  # the old request, still queued
    ]


def test_stale_controlled_shutdown_acted_on_before_kip380() -> None:
    m = model("kip-320", "records=0", "crashes=1", "shutdowns=1")
    states = run_scenario(m, [*stale_shutdown_steps(), ("DeliverStopReplica", {"broker": 1})])
    acted = states[7]
    assert acted.controller.epoch == 1 and acted.controller.isr == (0,), (
        "no new epoch: the broker is not in the ISR")
    assert [m.kind for m in acted.network] == [STOP_REPLICA], (
        "but its new incarnation is sent a StopReplica")
    last = states[-1]
    assert not no_stale_control_request(last) and last.brokers[1].fetch == NO_FETCHER
    assert stalled_followers(last) == [1]


def test_stale_controlled_shutdown_rejected_by_kip380() -> None:
    m = model("kip-380", "records=0", "crashes=1", "shutdowns=1")
    states = run_scenario(m, stale_shutdown_steps())
    assert states[-1].controller == states[-2].controller and states[-1].network == ()
    assert states[-1].brokers[1].fetch == TRUNCATING  # it follows broker 0 in epoch 1, not stopped


# -- KIP-380: a bounce so fast that the controller never notices it --------------------------------
def fast_bounce_steps() -> list:
    return [("Bounce", {"broker": 1}), ("ProcessBrokerChange", {"broker": 1})]


def test_fast_bounce_missed_before_kip380() -> None:
    last = run_scenario(model("kip-320", "records=0", "bounces=1"), fast_bounce_steps())[-1]
    assert last.network == () and last.brokers[1].leader == -1
    assert stalled_followers(last) == [1], "the broker is never told what to replicate"


def test_fast_bounce_detected_by_kip380() -> None:
    m = model("kip-380", "records=0", "bounces=1")
    steps = [*fast_bounce_steps(), deliver(1, 0), ("TruncateToHighWatermark", {"follower": 1}),
             *fetch(1, 0)]
    states = run_scenario(m, steps)
    assert states[2].network[0].broker_epoch == 1, (
        "start-up handling: a LeaderAndIsr for the new generation")
    assert all(no_fence_stall(s) for s in states) and states[-1].brokers[1].fetch == FETCHING


# -- KAFKA-6880: a zombie replica keeps fetching with stale metadata; KIP-320 fences it ------------
def zombie_prefix() -> list:
    """Broker 2 takes record 1 from leader 0, then misses every LeaderAndIsr (they stay in flight):
    1 leads epoch 1 and writes record 2, which 0 takes after truncating record 1; 0 leads epoch
    2."""
    steps = [("Produce", {"leader": 0}), *fetch(2, 0)]
    steps += [("PreferredLeaderElection", {"leader": 1}), deliver(1, 1), deliver(0, 1),
              *offsets_round(0, 1)]
    steps += [("Produce", {"leader": 1}), *fetch(0, 1)]
    steps += [("PreferredLeaderElection", {"leader": 0}), deliver(0, 2), deliver(1, 2),
              *offsets_round(1, 0)]
    return steps + fetch(2, 0)  # the zombie fetches from 0 with its stale metadata (epoch 0)


def test_kafka6880_zombie_diverges_without_fencing() -> None:
    m = model("kip-279", "brokers=3", "epochs=2")
    steps = [*zombie_prefix(), *fetch(1, 0), ("AdvanceHighWatermark", {"leader": 0}), *fetch(2, 0)]
    last = run_scenario(m, steps)[-1]
    assert last.brokers[2].epoch == 0 and last.brokers[0].remote[2] == 1, (
        "served as if it were in sync")
    assert last.brokers[2].log[0].ident == 1 and last.brokers[0].log[0].ident == 2
    assert last.brokers[2].hw == last.brokers[0].hw == 1 and not log_matching_all_pairs(last)
    assert log_matching(last), (
        "the seed's leader-follower form waits for the zombie to reconcile in epoch 2")


def test_kafka6880_zombie_fenced_by_kip320() -> None:
    m = model("kip-320", "brokers=3", "epochs=2")
    states = run_scenario(m, zombie_prefix())
    fenced = states[-1]
    assert fenced.brokers[2].fetch == NO_FETCHER and fenced.brokers[0].remote[2] == -1, (
        "FENCED_LEADER_EPOCH")
    steps = [deliver(2, 1), deliver(2, 2), *offsets_round(2, 0), *fetch(2, 0)]
    last = run_scenario(m, steps, fenced)[-1]
    assert last.brokers[2].log == last.brokers[0].log and log_matching(last)


# -- the matrix and both forms of no-fence-stall ---------------------------------------------------
@pytest.mark.slow  # matrix cells at the model bounds: about 6 s
def test_matrix_control_cells() -> None:
    rows = ["hw-truncation", "kip-320", "kip-380", "truncate-on-fetch",
            "kip-380,kafka-7786-fix=off"]
    invariants = ["no-stale-control-request", "no-fence-stall", "no-bounce-stall"]
    cells = run_matrix("kafka", MatrixOptions(protocols=rows, invariants=invariants))
    got = {(c.protocol, c.invariant): (c.verdict, c.length) for c in cells}
    # before KIP-380 (2.2.0): a StopReplica meant for the old incarnation, and a bounce the
    # controller misses
    for protocol in ("hw-truncation", "kip-320"):
        assert got[protocol, "no-stale-control-request"] == ("violated", 3)
        assert got[protocol, "no-bounce-stall"] == ("violated", 2)
    # no-fence-stall counts only stalls caused by FENCED_LEADER_EPOCH: KAFKA-7786 in 2.1.0 (kip-320)
    # and in 2.2.0 without its fix, in 9 steps (two epoch changes); no fencing before 2.1.0, the fix
    # from 2.1.1
    assert got["hw-truncation", "no-fence-stall"] == ("holds", None)
    assert got["kip-320", "no-fence-stall"] == ("violated", 9)
    assert got["kip-380,kafka-7786-fix=off", "no-fence-stall"] == ("violated", 9)
    assert got["kip-380,kafka-7786-fix=off", "no-stale-control-request"] == ("holds", None)
    for protocol in ("kip-380", "truncate-on-fetch"):
        for invariant in invariants:
            assert got[protocol, invariant] == ("holds", None)
    for cell in cells:  # checked at the model's matrix bounds for each column
        bounds = {k: cell.constants[k] for k in ("records", "epochs", "crashes", "bumps",
                                                 "shutdowns", "bounces")}
        if cell.invariant == "no-fence-stall":
            assert (bounds == {"records": 1, "epochs": 2, "crashes": 0, "bumps": 2, "shutdowns": 0,
                               "bounces": 0})
        else:
            assert (bounds == {"records": 1, "epochs": 1, "crashes": 0, "bumps": 1, "shutdowns": 1,
                               "bounces": 1})
    # {101047, 24650} before ExpandIsr waited for the answer of the fetch it records (the matrix's
    # 2.2.0 cells E and F)
    assert {c.distinct_states for c in cells if c.protocol == "kip-380"} == {90953, 22662}


@pytest.mark.parametrize("protocol, safety, code, liveness", [
    ("kip-320", "holds", 13, "violated"),
    # 1 s each: kip-320's is fast and runs the liveness form's every line (coverage by test)
    pytest.param("kip-380", "holds", 0, "holds", marks=pytest.mark.slow),
    pytest.param("kip-380,kafka-7786-fix=off", "violated", 13, "violated", marks=pytest.mark.slow),
])
def test_no_fence_stall_liveness_form(capsys, tmp_path, protocol: str, safety: str, code: int,
                                      liveness: str) -> None:
    """The safety form counts only stalls caused by fencing; the liveness form asks whether every
    follower can get back to fetching, whatever stopped it, so under 2.1.0 (kip-320) it also catches
    the bounce the controller missed (no-bounce-stall's story), which the safety form leaves to
    no-bounce-stall."""
    version, *flags = protocol.split(",")
    base = ["check", "kafka", "--protocol", version, "--json", "--trace-dir", str(tmp_path),
            "-deadlock"]
    for flag in flags:
        base += ["--feature", flag]
    for const in ("records=1", "epochs=1", "crashes=0", "bumps=1", "shutdowns=0", "bounces=1"):
        base += ["--const", const]
    # the safety form
    assert main([*base, "--invariant", "no-fence-stall"]) == (12 if safety == "violated" else 0)
    out = json.loads(capsys.readouterr().out)
    assert out["verdict"] == safety
    assert out["property_forms"] == {"no-fence-stall": "safety (every reachable state)"}
    # the liveness form, on the explored state graph
    assert main([*base, "--invariant", "no-fence-stall-liveness"]) == code
    out = json.loads(capsys.readouterr().out)
    assert out["verdict"] == liveness
    assert out["property_forms"] == {"no-fence-stall-liveness": "liveness (state graph)"}
    if liveness == "violated":
        (violation,) = out["violations"]
        assert violation["kind"] == "liveness" and "back to fetching" in violation["explanation"]
    if protocol == "kip-320":  # the stall the liveness form found is the missed bounce
        assert main([*base, "--invariant", "no-bounce-stall"]) == 12
        assert json.loads(capsys.readouterr().out)["violations"][0]["length"] == 2


def test_liveness_is_not_in_the_default_invariants(capsys) -> None:
    assert main(["check", "kafka", "--protocol", "kip-380", "--json", "--const", "records=0",
                 "--const", "epochs=0", "-deadlock"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert "no-fence-stall-liveness" not in out["invariants"]
    assert out["property_forms"]["no-fence-stall"] == "safety (every reachable state)"


# -- pinned counts and symmetry --------------------------------------------------------------------
# protocol -> (distinct states, states generated, depth) at records=1, epochs=1, crashes=0, bumps=1,
# bounces=1 (truncate-on-fetch, now 3.9.1 with alter-isr, was (9781, 27724, 23) when its leader
# wrote the ISR to ZooKeeper) (kip-320 (13289, 38010, 25), kip-380 (11477, 32197, 27),
# truncate-on-fetch (67117, 218562, 31) before ExpandIsr waited for the answer of the fetch it
# records: maybeExpandIsr runs in the fetch path only)
PINNED = {"kip-320": (12933, 35960, 25), "kip-380": (10624, 29003, 27),
          "truncate-on-fetch": (64937, 210849, 31)}


@pytest.mark.parametrize("protocol", sorted(PINNED))
@pytest.mark.slow  # every line it runs, cheaper fast tests run too (coverage by test)
def test_pinned_control_counts(protocol: str) -> None:
    m = model(protocol, "records=1", "epochs=1", "crashes=0", "bumps=1", "shutdowns=0", "bounces=1")
    result = check(m, SearchOptions())
    assert result.verdict.value == "holds"
    assert (result.distinct_states, result.states_generated, result.depth) == PINNED[protocol]


def test_symmetry_renames_the_new_fields() -> None:
    m = model("kip-320", "brokers=3", "records=0", "epochs=1", "crashes=1", "shutdowns=1",
              "bounces=1")
    states = [m.init_states()[0]]
    rng = random.Random(4)
    for _ in range(12):  # a random walk through the control actions
        succ = [t for _, t in m.successors(states[-1])]
        states.append(rng.choice(succ))
    invariants = list(for_family("kafka").values())
    for state in states:
        canon = m.canonical(state)
        for perm in permutations(range(3)):
            renamed = symmetry.permute(state, perm)
            assert m.canonical(renamed) == canon
            for inv in invariants:
                if inv.holds is not None:
                    assert inv.holds(renamed) == inv.holds(state)


# -- KAFKA-10706: an epoch registered as leader outlives a truncation at the LEO -------------------
@pytest.mark.parametrize("fix", ["off", "on"])
def test_kafka10706_epoch_registered_as_leader_outlives_truncation(fix: str) -> None:
    """Broker 1 leads epoch 1 (registering it, KAFKA-7415) and writes nothing; back as follower in
    epoch 2 it truncates to its LEO, which 2.1's ``Log.truncateTo`` skips, so epoch 1 stays in its
    cache until its next append (2.0.1+ ``assign`` then replaces it). KAFKA-10706's fix cleans the
    cache at the truncation. The harm is liveness (tests/test_kafka_stories.py): a follower that
    asks for the stale epoch again before any append never finishes truncating."""
    from invariants.kafka_sanity import replica_sanity

    m = model("kip-380", "records=1", features=(f"kafka-10706-fix={fix}",))
    steps = [("PreferredLeaderElection", {"leader": 1}), ("PreferredLeaderElection", {"leader": 0}),
             ("Produce", {"leader": 0}), deliver(0, 1), deliver(0, 2), deliver(1, 1), deliver(1, 2),
             *offsets_round(1, 0), *fetch(1, 0)]
    states = run_scenario(m, steps)
    truncated = states[-4]  # right after the OffsetsForLeaderEpoch round
    assert (truncated.brokers[1].log == () and truncated.brokers[1].cache
            == (((1, 0),) if fix == "off" else ()))
    last = states[-1]
    assert last.brokers[1].log == last.brokers[0].log
    assert last.brokers[1].cache == ((0, 0),) and all(replica_sanity(s) for s in states)


@pytest.mark.parametrize("fix, verdict, states",
                         [("off", "violated", 3501), ("on", "holds", 22662)])
@pytest.mark.slow  # every line it runs, cheaper fast tests run too (coverage by test)
def test_kafka7786_fix_alone_on_the_same_configuration(fix: str, verdict: str, states: int) -> None:
    """Epoch bumps only (no bounce, shutdown or crash): kip-320 stalls in the seed's story, in 9
    steps (leadership moves to 1, then a bump with the same leader overtakes 0's
    OffsetsForLeaderEpoch), and the KAFKA-7786 fix alone makes no-fence-stall hold."""
    m = model("kip-320", "records=1", "epochs=2", "crashes=0", "bumps=2",
              features=(f"kafka-7786-fix={fix}",))
    result = check(m, SearchOptions(invariants=[for_family("kafka")["no-fence-stall"]]))
    assert (result.verdict.value, result.distinct_states) == (verdict, states)
    if verdict == "violated":
        names = [step.action.name for step in result.violations[0].trace.steps]
        assert (len(names) == 9 and names[1] == "BumpLeaderEpoch" and names[-1]
                == "ReceiveOffsetsForLeaderEpoch")


# -- release-read control-plane rules (issue 27) ---------------------------------------------------
@pytest.mark.parametrize("protocol", ["0.10.2", "0.11.0", "2.2.0", "2.8.0", "3.9.1"])
def test_a_leaderandisr_with_no_leader_changes_nothing_on_the_broker(protocol):
    """ReplicaManager.makeFollowers (0.10.2.2 to 3.9): "Only change partition state when the leader
    is available". Broker 0 restarts into an offline partition holding m1 above its HW: the
    LeaderAndIsr with leader -1 neither truncates it (0.10.2 used to truncate to the HW here) nor
    gives it the epoch; the next election still reaches it."""
    steps = [("Produce", {"leader": 0}), ("Crash", {"broker": 1}),
             ("ProcessBrokerFailure", {"broker": 1}), deliver(0, 1), ("Crash", {"broker": 0}),
             ("ProcessBrokerFailure", {"broker": 0}), ("Restart", {"broker": 0})]
    m = model(protocol, "records=1", "epochs=3", "crashes=2")
    states = run_scenario(m, [*steps, deliver(0, 2)])
    before, after = states[-2].brokers[0], states[-1].brokers[0]
    assert len(before.log) == 1 and before.hw == 0
    assert ((after.log, after.hw, after.epoch, after.leader, after.fetch)
            == (before.log, 0, -1, -1, NO_FETCHER))
    elected = run_scenario(m, [("ElectLeader", {"leader": 0}), deliver(0, 3)],
                           states[-1])[-1].brokers[0]
    assert (elected.leader, elected.epoch, len(elected.log)) == (0, 3, 1)


@pytest.mark.parametrize("protocol", ["0.10.2", "2.0.1", "2.8.0", "3.9.1"])
def test_a_leader_re_elected_in_a_new_epoch_keeps_its_followers_fetch_state(protocol):
    """Partition.makeLeader resets the followers' LEOs only "if (isNewLeader)" (0.10.2.2, 2.0.0,
    2.8.0): a bump of the same leader keeps what it learned (the model used to forget it on every
    LeaderAndIsr)."""
    m = model(protocol, "records=1", "epochs=1", "crashes=0", "bumps=1")
    states = run_scenario(m, [("Produce", {"leader": 0}), *fetch(1, 0),
                              ("SendFetch", {"follower": 1, "leader": 0}),
                              ("ServeFetch", {"leader": 0, "follower": 1})])
    assert states[-1].brokers[0].remote[1] == 1
    bumped = run_scenario(m, [("BumpLeaderEpoch", {"leader": 0}), deliver(0, 1)],
                          states[-1])[-1].brokers[0]
    assert (bumped.epoch, bumped.leader, bumped.remote[1]) == (1, 0, 1)
    # a new leader starts with them unknown: broker 1 elected by a preferred election knows nothing
    # of broker 0
    moved = run_scenario(m, [("PreferredLeaderElection", {"leader": 1}), deliver(1, 1)],
                         states[-1])[-1].brokers[1]
    assert moved.leader == 1 and moved.remote == (-1, -1)


def test_kafka_7414_a_follower_ahead_of_its_leader_halts_before_2_0_1_and_truncates_from_it():
    """KAFKA-7414's scenario under the releases on both sides (2.0.0 halts: the broker is down, its
    next fetch blocked; 2.0.1 truncates and fetches on), and each with the flag switched the other
    way."""
    from traces.replay import replay_scenario, scenario_model
    from traces.scenario import load_scenario

    scenario = load_scenario(
        "traces/scenarios/kafka-7414-follower-ahead-of-its-leader-halts-the-broker.json")
    for protocol, flag, outcome in (("2.0.0", None, ("blocked", 15)),
                                    ("2.0.1", None, ("holds", None)),
                                    ("2.0.1", "off", ("blocked", 15)),
                                    ("2.0.0", "on", ("holds", None))):
        result = replay_scenario(scenario_model(scenario, protocol, [f"kafka-7414={flag}"] if flag
                                                else []), scenario)
        assert (result.outcome, result.step) == outcome, (protocol, flag, result.summary())
        halted = result.trace.steps[13].state.brokers[1]  # after step 14, ReceiveFetch
        assert halted.alive == (outcome[0] == "holds")
        if outcome[0] == "holds":
            assert (halted.log, halted.hw) == ((), 0)  # truncated to the leader's end offset
    assert (scenario.expectation("2.0.0").outcome == "blocked"
            and scenario.expectation("2.0.1").outcome == "holds")


@pytest.mark.parametrize("before, after", [("2.0.1", "2.1.0"), ("2.0.1", "3.9.1")])
def test_kafka_7152_a_caught_up_follower_is_never_shrunk_from_2_1_0(before, after):
    """2.1.0 Partition.getOutOfSyncReplicas: only r.logEndOffset != leaderReplica.logEndOffset may
    be out of sync (2.0.1: any follower, after replica.lag.time.max.ms). The follower has fetched m1
    and the leader knows it."""
    steps = [("Produce", {"leader": 0}), *fetch(1, 0), ("SendFetch", {"follower": 1, "leader": 0}),
             ("ServeFetch", {"leader": 0, "follower": 1})]
    shrink = [("ShrinkIsr", {"leader": 0, "follower": 1})]
    caught_up = run_scenario(model(before, "records=2"), steps)[-1]
    assert caught_up.brokers[0].remote[1] == len(caught_up.brokers[0].log) == 1
    assert run_scenario(model(before, "records=2"), shrink, caught_up)[-1].brokers[0].isr == (0,)
    with pytest.raises(ScenarioError):
        run_scenario(model(after, "records=2"), shrink,
                     run_scenario(model(after, "records=2"), steps)[-1])
    with pytest.raises(ScenarioError):  # the flag alone makes the older release refuse it too
        run_scenario(model(before, "records=2", features=("kafka-7152=on",)), shrink, caught_up)
    # behind the leader's LEO again (m2 not fetched), the follower may be shrunk (3.9.1: by
    # AlterIsr, alter-isr)
    round_trip = alter_isr(0) if resolve(after).alter_isr else []
    behind = run_scenario(model(after, "records=2"), [*steps, ("Produce", {"leader": 0}), *shrink,
                                                      *round_trip])[-1]
    assert behind.brokers[0].isr == (0,) and behind.controller.isr == (0,)


def test_kafka_7152_on_kraft_rows_too():
    """3.3.0 Replica.isCaughtUp (leaderEndOffset == logEndOffset || ...): the KRaft leader does not
    propose a caught-up follower's removal."""
    steps = [("Produce", {"leader": 0}), *fetch(1, 0), ("SendFetch", {"follower": 1, "leader": 0}),
             ("ServeFetch", {"leader": 0, "follower": 1})]
    m = model("kraft-3.3", "records=2", "alters=1")
    with pytest.raises(ScenarioError):
        run_scenario(m, [*steps, ("ShrinkIsr", {"leader": 0, "follower": 1})])
    off = model("kraft-3.3", "records=2", "alters=1", features=("kafka-7152=off",))
    assert run_scenario(off,
                        [*steps,
                         ("ShrinkIsr", {"leader": 0, "follower": 1})])[-1].brokers[0].alter_pending


@pytest.mark.parametrize("before, after", [("3.4.1", "3.9.1"), ("kraft-3.5", "kraft-4.1")])
def test_kafka_15583_the_hw_stays_while_the_isr_is_below_min_isr(before, after):
    """3.7.0 Partition.maybeIncrementLeaderHW: if (isUnderMinIsr) return false, in ZooKeeper and
    KRaft mode. The leader appends m1 with the follower out of the ISR and min.insync.replicas=2:
    3.4.1 / kraft-3.5 advance the HW over m1 (ISR {0}), 3.9.1 / kraft-4.1 do not."""
    consts = ("records=1", "min_isr=2", "alters=1")
    # every row here changes the ISR by a request: KRaft's AlterPartition, ZooKeeper's AlterIsr
    # (alter-isr, 2.7.0+)
    shrink = [("ShrinkIsr", {"leader": 0, "follower": 1}), ("ProcessAlterPartition", {"leader": 0}),
              ("ReceiveAlterPartitionResponse", {"leader": 0})]
    advance = [("AdvanceHighWatermark", {"leader": 0})]

    def shrunk_with_m1(m):
        """ISR {0} on the leader (the shrink committed; on KRaft its partition change replayed),
        then m1."""
        state = run_scenario(m, shrink)[-1]
        for action, successor in m.successors(state):
            if action.name == "DeliverLeaderAndIsr" and action.param("broker") == 0:
                state = successor
        assert state.brokers[0].isr == (0,) and state.brokers[0].leader == 0
        return run_scenario(m, [("Produce", {"leader": 0})], state)[-1]

    old = model(before, *consts)
    assert run_scenario(old, advance, shrunk_with_m1(old))[-1].brokers[0].hw == 1
    new = model(after, *consts)
    with pytest.raises(ScenarioError):
        run_scenario(new, advance, shrunk_with_m1(new))
    off = model(after, *consts, features=("kafka-15583=off",))
    assert run_scenario(off, advance, shrunk_with_m1(off))[-1].brokers[0].hw == 1
    on = model(before, *consts, features=("kafka-15583=on",))
    with pytest.raises(ScenarioError):
        run_scenario(on, advance, shrunk_with_m1(on))


@pytest.mark.parametrize("protocol, recorded", [("2.8.0", 1), ("2.8.1", -1), ("3.9.1", -1)])
def test_kafka_13141_before_its_fix_a_diverging_offset_beyond_the_leaders_leo_is_recorded(
    protocol, recorded):
    """2.8.0 Partition.readRecords answers a diverging epoch with
    FetchDataInfo(LogOffsetMetadata(fetchOffset)) before any check against the LEO, and
    updateFollowerFetchState takes it: broker 0 fetches at offset 1 (its m1 of epoch 0) from the new
    leader 1, whose log is empty; 2.8.0 records offset 1 as broker 0's LEO, 2.8.1+ records
    nothing."""
    steps = [("PreferredLeaderElection", {"leader": 1}), ("Produce", {"leader": 0}), deliver(0, 1),
             ("SendFetch", {"follower": 0, "leader": 1}), deliver(1, 1),
             ("ServeFetch", {"leader": 1, "follower": 0})]
    leader = run_scenario(model(protocol, "records=2", "epochs=2"), steps)[-1].brokers[1]
    assert len(leader.log) == 0 and leader.remote[0] == recorded


@pytest.mark.parametrize("protocol, flag, forgotten",
                         [("2.2.0", None, True), ("2.8.0", None, False),
                          ("2.2.0", "on", False), ("2.8.0", "off", True)])
def test_kafka_8400_an_errored_fetch_resets_the_followers_leo_on_the_leader_before_2_4(
    protocol, flag, forgotten):
    """2.1.0 to 2.3.x ReplicaManager.updateFollowerLogReadResults records an errored read's
    UnknownOffsetMetadata as the follower's LEO (KAFKA-8400, fixed in 2.4.0). The leader knows
    broker 1 at offset 1, bumps its epoch, and answers broker 1's fetch of the old epoch with
    FENCED_LEADER_EPOCH."""
    m = model(protocol, "records=1", "epochs=1", "crashes=0", "bumps=1",
              features=(f"kafka-8400={flag}",) if flag else ())
    steps = [("Produce", {"leader": 0}), *fetch(1, 0), ("SendFetch", {"follower": 1, "leader": 0}),
             ("ServeFetch", {"leader": 0, "follower": 1}),
             ("ReceiveFetch", {"follower": 1, "leader": 0}), ("BumpLeaderEpoch", {"leader": 0}),
             deliver(0, 1), ("SendFetch", {"follower": 1, "leader": 0})]
    before = run_scenario(m, steps)[-1]
    assert before.brokers[0].remote[1] == 1  # the re-elected leader kept it
    after = run_scenario(m, [("ServeFetch", {"leader": 0, "follower": 1})], before)[-1]
    (answer,) = [x for x in after.network if x.kind == FETCH_RESPONSE]
    assert answer.error == FENCED_LEADER_EPOCH
    assert after.brokers[0].remote[1] == (-1 if forgotten else 1)


@pytest.mark.parametrize("protocol, flag, forgotten",
                         [("0.10.2", None, True), ("0.11.0", None, True),
                          ("2.0.1", None, True), ("2.2.0", None, True),
                          ("2.8.0", None, False), ("2.2.0", "on", False)])
def test_kafka_8400_before_its_fix_an_out_of_range_fetch_also_resets_the_followers_leo(
    protocol, flag, forgotten):
    """0.10.2.0 to 2.3.0 ``ReplicaManager.readFromLocalLog`` maps OffsetOutOfRangeException to
    ``LogReadResult( FetchDataInfo(LogOffsetMetadata.UnknownOffsetMetadata, ...))`` and
    ``updateFollowerLogReadResults`` records it as the follower's LEO; 2.4.0 skips a result with an
    error. The leader knows broker 1 at offset 1 and serves a fetch from beyond its LEO (a follower
    ahead of its leader: the OFFSET_OUT_OF_RANGE answer of KAFKA-7414's story). No such fetch arises
    at the matrix bounds, so the fetch is put on the wire by hand."""
    from spec.kafka.state import OFFSET_OUT_OF_RANGE, FetchRequest
    from spec.kafka.updates import add_messages

    m = model(protocol, "records=1", features=(f"kafka-8400={flag}",) if flag else ())
    known = run_scenario(m, [("Produce", {"leader": 0}), *fetch(1, 0),
                             ("SendFetch", {"follower": 1, "leader": 0}),
                             ("ServeFetch", {"leader": 0, "follower": 1}),
                             ("ReceiveFetch", {"follower": 1, "leader": 0})])[-1]
    assert known.brokers[0].remote[1] == 1
    epoch = 0 if resolve(protocol, {}).leader_epoch_fencing else -1
    ahead = FetchRequest.new(src=1, dst=0, epoch=epoch, offset=2, last_epoch=-1)
    after = m._serve_fetch_state(known.with_(network=add_messages(known.network, ahead)), ahead)
    (answer,) = [x for x in after.network if x.kind == FETCH_RESPONSE]
    assert answer.error == OFFSET_OUT_OF_RANGE
    assert after.brokers[0].remote[1] == (-1 if forgotten else 1)
