"""The KRaft rows (``spec.kafka.controllers.KRaftController``): AlterPartition answered and rejected
as the KRaft controller does, fencing and registration, the unclean shutdown, the KIP flags refused
on the ZooKeeper rows, elr-safety, and the state counts of a small configuration of each KRaft line
pinned."""

from __future__ import annotations

import os

import pytest

from invariants.kafka_kraft import elr_safety
from invariants.registry import for_family
from kmc.cli import main
from spec.errors import UsageError
from spec.kafka.protocols import RELEASES, resolve
from spec.kafka.state import (
    ALTER_PARTITION,
    ALTER_PARTITION_RESPONSE,
    DEAD,
    FENCED_LEADER_EPOCH,
    FETCH,
    INELIGIBLE_REPLICA,
    INVALID_UPDATE_VERSION,
)
from spec.registry import build_model
from traces.replay import replay_scenario, scenario_model
from traces.scenario import load_scenario

SCENARIOS = os.path.join(os.path.dirname(__file__), "..", "traces", "scenarios")
KRAFT_ROWS = [r.name for r in RELEASES if r.features.kraft]
ZK_ROWS = [r.name for r in RELEASES if not r.features.kraft]
KRAFT_FLAGS = ("kip-841", "kip-903", "kafka-15021", "kip-966-elr", "clean-shutdown-detection")

REPLICATE = [("Produce", {"leader": 0}), ("SendFetch", {"follower": 1, "leader": 0}),
             ("ServeFetch", {"leader": 0, "follower": 1}),
             ("ReceiveFetch", {"follower": 1, "leader": 0}),
             ("SendFetch", {"follower": 1, "leader": 0}),
             ("ServeFetch", {"leader": 0, "follower": 1}), ("AdvanceHighWatermark", {"leader": 0})]
#: after REPLICATE the follower is caught up, and from 2.1.0 (KAFKA-7152) a caught-up follower is
#: never shrunk: a second record it has not fetched puts it behind (the model then needs records=2)
BEHIND = [("Produce", {"leader": 0})]


def _model(protocol: str, *constants: str, features: tuple[str, ...] = ()):
    return build_model("kafka", ["records=1", "epochs=3", "crashes=1", "unclean_shutdowns=1",
                                 *constants], protocol,
                       list(features))


def _take(model, state, name: str, **params):
    """The successor by the action ``name`` whose parameters include ``params``."""
    for action, successor in model.successors(state):
        if action.name == name and all(dict(action.params).get(k) == v for k, v in params.items()):
            return successor
    enabled = ", ".join(str(a) for a, _ in model.successors(state))
    raise AssertionError(f"{name}({params}) is not enabled; enabled: {enabled}")


def _run(model, steps, state=None):
    state = model.init_states()[0] if state is None else state
    for name, params in steps:
        state = _take(model, state, name, **params)
    return state


def _enabled(model, state, name: str, **params) -> bool:
    return any(a.name == name and all(dict(a.params).get(k) == v for k, v in params.items())
               for a, _ in model.successors(state))


# -- the flags exist only on the KRaft rows --------------------------------------------------------
@pytest.mark.parametrize("flag", KRAFT_FLAGS + ("kraft",))
def test_kraft_flags_are_refused_on_the_zookeeper_rows(flag):
    # a row's controller, not a switch (the matrix's stories must not take it for a fix)
    if flag == "kraft":
        for protocol, value in (("2.2.0", True), ("3.9.1", True), ("kraft-3.5", False)):
            with pytest.raises(UsageError, match="not a switch"):
                resolve(protocol, {flag: value})
        assert (resolve("kraft-3.5", {flag: True}).kraft
                and not resolve("3.9.1", {flag: False}).kraft)
        return
    for protocol in ("0.10.2", "2.2.0", "3.9.1"):
        with pytest.raises(UsageError, match="KRaft controller|kip-966-elr"):
            resolve(protocol, {flag: True})


def test_a_kraft_flag_on_a_zookeeper_row_is_exit_64(capsys):
    code = main(["check", "kafka", "--protocol", "3.9.1", "--feature", "kip-903=on", "--const",
                 "records=0"])
    err = capsys.readouterr().err
    assert code == 64 and len(err.strip().splitlines()) == 1 and "kraft" in err


def test_detection_needs_elr():
    with pytest.raises(UsageError, match="kip-966-elr"):
        resolve("kraft-3.5", {"clean-shutdown-detection": True})
    assert resolve("kraft-3.5",
                   {"kip-966-elr": True, "clean-shutdown-detection": True}).clean_shutdown_detection


# -- AlterPartition --------------------------------------------------------------------------------
def test_an_accepted_shrink_moves_the_partition_epoch_and_before_3_6_the_leader_epoch():
    for protocol, leader_epoch in (("kraft-3.5", 1), ("kraft-4.1", 0)):
        model = _model(protocol)
        s = _run(model, [("ShrinkIsr", {"leader": 0, "follower": 1})])
        # a shrink keeps the maximal ISR
        assert s.brokers[0].alter_pending and s.brokers[0].isr == (0, 1)
        s = _take(model, s, "ProcessAlterPartition", leader=0)
        assert ((s.controller.isr, s.controller.partition_epoch, s.controller.epoch)
                == ((0,), 1, leader_epoch))
        if leader_epoch == 0:  # KAFKA-15021: the answer commits the ISR
            s = _take(model, s, "ReceiveAlterPartitionResponse", leader=0)
        else:  # the epoch moved: the answer is ignored and the partition change brings it
            assert _take(model, s, "ReceiveAlterPartitionResponse",
                         leader=0).brokers[0].alter_pending
            s = _take(model, s, "DeliverLeaderAndIsr", broker=0, epoch=1)
        leader = s.brokers[0]
        assert (leader.isr, leader.alter_pending, leader.partition_epoch) == ((0,), False, 1)


def test_a_fenced_proposed_member_is_ineligible_and_the_leader_reverts():
    """The leader proposes broker 1 back while it is unfenced; broker 1 dies and is fenced before
    the controller handles the request: INELIGIBLE_REPLICA (KIP-841), and the leader goes back to
    its last committed ISR (``handleAlterPartitionError``). KIP-903's broker epoch check rejects it
    too (the proposal carries broker 1's epoch 0, the fenced registration none); without both the
    controller accepts the fenced member."""
    shrunk = REPLICATE + BEHIND + [("ShrinkIsr", {"leader": 0, "follower": 1}),
                                   ("ProcessAlterPartition", {"leader": 0}),
                                   ("ReceiveAlterPartitionResponse", {"leader": 0})]
    race = [("ExpandIsr", {"leader": 0, "follower": 1}), ("Crash", {"broker": 1}),
            ("FenceBroker", {"broker": 1, "leader": 0}), ("ProcessAlterPartition", {"leader": 0})]
    model = _model("kraft-4.1", "records=2")
    s = _run(model, shrunk + race[:1])
    # the maximal ISR counts the new member
    assert s.brokers[0].alter_pending and s.brokers[0].isr == (0, 1)
    s = _run(model, race[1:], s)
    (response,) = [m for m in s.network if m.kind == ALTER_PARTITION_RESPONSE]
    assert response.error == INELIGIBLE_REPLICA and s.controller.isr == (0,)
    leader = _take(model, s, "ReceiveAlterPartitionResponse", leader=0).brokers[0]
    assert not leader.alter_pending and leader.isr == (0,)
    only_903 = _run(_model("kraft-4.1", "records=2", features=("kip-841=off",)), shrunk + race)
    assert only_903.controller.isr == (0,)
    off = _run(_model("kraft-4.1", "records=2", features=("kip-841=off", "kip-903=off")), shrunk
               + race)
    assert off.controller.isr == (0, 1) and off.controller.registered[1] == DEAD


def test_kip_903_the_fetch_carries_the_broker_epoch_with_an_older_fetch_still_in_flight():
    """KIP-903 (3.5.0 ``RemoteLeaderEndPoint.buildFetch``:
    ``forReplica(..., brokerEpochSupplier(), ...)``): every Fetch the follower sends carries its
    broker epoch. Broker 2's Fetch to broker 0 is still in flight when broker 1 is elected and
    broker 2 fetches from it: the new request carries broker epoch 0 and the leader records it, so
    broker 2 stays eligible for the ISR (the Fetch used to be re-stamped after it was built, and the
    older request to broker 0 took the stamp, leaving -1 on the new one)."""
    model = build_model("kafka", ["brokers=3", "records=1", "epochs=2", "crashes=0", "alters=1"],
                        "kraft-3.5", [])
    s = _run(model, [("SendFetch", {"follower": 2, "leader": 0}),
                     ("PreferredLeaderElection", {"leader": 1}),
                     ("DeliverLeaderAndIsr", {"broker": 1}), ("DeliverLeaderAndIsr", {"broker": 2}),
                     ("TruncateToHighWatermark", {"follower": 2}),
                     ("SendFetch", {"follower": 2, "leader": 1})])
    fetches = {m.dst: m.broker_epoch for m in s.network if m.kind == FETCH and m.src == 2}
    assert fetches == {0: 0, 1: 0}
    s = _run(model, [("ServeFetch", {"leader": 1, "follower": 2})], s)
    assert s.brokers[1].remote_epochs[2] == s.controller.registered[2] == 0


def test_a_deposed_leader_is_fenced_by_its_leader_epoch():
    model = _model("kraft-4.1")
    s = _run(model, [("ShrinkIsr", {"leader": 0, "follower": 1}),
                     ("PreferredLeaderElection", {"leader": 1}),
                     ("ProcessAlterPartition", {"leader": 0})])
    (response,) = [m for m in s.network if m.kind == ALTER_PARTITION_RESPONSE]
    assert response.error == FENCED_LEADER_EPOCH
    # waits for metadata
    assert _take(model, s, "ReceiveAlterPartitionResponse", leader=0).brokers[0].alter_pending


def test_an_older_partition_epoch_is_invalid_update_version():
    """Broker 1 is fenced (the controller shrinks the ISR: partition epoch 1) while the leader's
    shrink proposal of partition epoch 0 is in flight."""
    model = _model("kraft-4.1")
    s = _run(model, [("Crash", {"broker": 1}), ("ShrinkIsr", {"leader": 0, "follower": 1}),
                     ("FenceBroker", {"broker": 1, "leader": 0}),
                     ("ProcessAlterPartition", {"leader": 0})])
    (response,) = [m for m in s.network if m.kind == ALTER_PARTITION_RESPONSE]
    assert response.error == INVALID_UPDATE_VERSION


# -- fencing, registration, faults -----------------------------------------------------------------
def test_fencing_keeps_the_last_isr_member_unless_elr():
    """The leader alone in the ISR is fenced: before KIP-966 the ISR keeps it
    (``PartitionChangeBuilder`` writes no empty ISR) and the partition goes offline; with ELR the
    ISR empties and the follower, an ELR member, is elected."""
    shrunk = [("ShrinkIsr", {"leader": 0, "follower": 1}), ("ProcessAlterPartition", {"leader": 0}),
              ("DeliverLeaderAndIsr", {"broker": 0}), ("Crash", {"broker": 0})]
    model = _model("kraft-3.5", "min_isr=2")
    s = _take(model, _run(model, shrunk), "FenceBroker", broker=0, leader=-1)
    assert ((s.controller.leader, s.controller.isr, s.controller.elr, s.controller.registered[0])
            == (-1, (0,), (), DEAD))
    model = _model("kraft-4.1", "min_isr=2")
    shrunk[2] = ("ReceiveAlterPartitionResponse", {"leader": 0})
    s = _take(model, _run(model, shrunk), "FenceBroker", broker=0, leader=1)
    assert (s.controller.leader, s.controller.isr, s.controller.elr) == (1, (1,), (0,))
    # a restart needs the fencing first (a live session refuses a new registration)
    model = _model("kraft-3.3")
    s = _take(model, model.init_states()[0], "Crash", broker=1)
    assert not _enabled(model, s, "Restart", broker=1)
    s = _take(model, _take(model, s, "FenceBroker", broker=1), "Restart", broker=1)
    assert s.brokers[1].broker_epoch == 1 and s.controller.registered[1] == 1


def test_unclean_shutdown_loses_a_suffix_and_has_its_own_bound():
    model = _model("kraft-3.3")
    s = _run(model, REPLICATE)
    lossy = [a for a, _ in model.successors(s) if a.name == "UncleanShutdown"]
    assert (sorted(str(a) for a in lossy) == ["UncleanShutdown(broker=0, keep=0)",
                                              "UncleanShutdown(broker=1, keep=0)"])
    after = _take(model, s, "UncleanShutdown", broker=0, keep=0)
    assert ((after.unclean_shutdowns, after.crashes, after.brokers[0].log, after.brokers[0].hw)
            == (1, 0, (), 0))
    assert not [a for a, _ in model.successors(after) if a.name == "UncleanShutdown"]
    # inert there (lossy-crash is theirs)
    zk = build_model("kafka", ["records=1", "unclean_shutdowns=1"], "3.9.1")
    assert not [a for a, _ in zk.successors(_run(zk, REPLICATE)) if a.name == "UncleanShutdown"]
    assert "unclean_shutdowns" not in zk.constants


# -- elr-safety ------------------------------------------------------------------------------------
def test_elr_safety_reads_the_electable_members_once_no_isr_member_lives():
    model = _model("kraft-4.1", "min_isr=2", "acks=-1", "records=2")
    s = _run(model, REPLICATE + BEHIND + [("ShrinkIsr", {"leader": 0, "follower": 1}),
                                          ("ProcessAlterPartition", {"leader": 0})])
    assert s.controller.elr == (1,) and elr_safety(s)
    lost = s.with_(brokers=(s.brokers[0], s.brokers[1].with_(log=())))
    assert elr_safety(lost)  # the ISR member (the leader) lives: the ELR is not elected from
    lost = lost.with_(brokers=(lost.brokers[0].with_(alive=False), lost.brokers[1]))
    assert not elr_safety(lost)
    fenced = lost.with_(controller=lost.controller.with_(registered=(0, DEAD)))
    assert elr_safety(fenced)  # a fenced member cannot be elected
    assert "elr-safety" in for_family("kafka")


def test_strict_min_isr_holds_the_hw_back():
    model = _model("kraft-4.1", "min_isr=2")
    s = _run(model, [("ShrinkIsr", {"leader": 0, "follower": 1}),
                     ("ProcessAlterPartition", {"leader": 0}),
                     ("ReceiveAlterPartitionResponse", {"leader": 0}), ("Produce", {"leader": 0})])
    assert s.brokers[0].isr == (0,) and not _enabled(model, s, "AdvanceHighWatermark", leader=0)
    # KIP-966's strict min ISR half
    off = _model("kraft-4.1", "min_isr=2", features=("kafka-15583=off",))
    t = _run(off, [("ShrinkIsr", {"leader": 0, "follower": 1}),
                   ("ProcessAlterPartition", {"leader": 0}),
                   ("ReceiveAlterPartitionResponse", {"leader": 0}), ("Produce", {"leader": 0})])
    assert _enabled(off, t, "AdvanceHighWatermark", leader=0)


# -- acknowledged-durable on the KRaft rows --------------------------------------------------------
@pytest.mark.parametrize("protocol", KRAFT_ROWS)
def test_acknowledged_durable_on_the_last_replica_standing(protocol):
    """acks=all, min.insync.replicas=2: the write acknowledged with ISR {0, 1} is lost on the 3.x
    lines (the last ISR member's unclean shutdown, within the one fault min ISR 2 should tolerate),
    kept on kraft-4.1 (KIP-966)."""
    scenario = load_scenario(os.path.join(SCENARIOS, "kip-966-last-replica-standing.json"))
    result = replay_scenario(scenario_model(scenario, protocol), scenario,
                             invariants=["acknowledged-durable"])
    if protocol == "kraft-4.1":
        assert (result.outcome, result.step) == ("blocked", 16)
    else:
        assert ((result.outcome, result.invariant.name, result.step)
                == ("violated", "acknowledged-durable", 18))


# -- pinned state counts of a small configuration of each KRaft line -------------------------------
@pytest.mark.parametrize("protocol,states,depth",
                         [("kraft-3.3", 11286, 30), ("kraft-3.5", 11156, 30),
                          ("kraft-4.1", 41687, 37)])
@pytest.mark.slow  # every line it runs, cheaper fast tests run too (coverage by test)
def test_state_counts_of_each_kraft_line(protocol, states, depth):
    """records=1, epochs=1, one crash, one unclean shutdown, one AlterPartition,
    min.insync.replicas=2: every line holds committed-durable and elr-safety there (the stories need
    a second leader epoch). 3.5 has fewer states than 3.3: KIP-903 forbids the expansions on a stale
    fetch state; 4.1 more: an ISR shrink keeps the leader epoch (KAFKA-15021) and ELR elections add
    ways to go on."""
    assert _small_config(protocol) == ("holds", states, depth)


#: the small configuration of the pinned KRaft counts
SMALL_CONFIG = ["records=1", "epochs=1", "crashes=1", "unclean_shutdowns=1", "alters=1",
                "min_isr=2"]


def _small_config(protocol: str, *extra: str) -> tuple[str, int, int]:
    """Verdict, distinct states and depth of committed-durable and elr-safety at ``SMALL_CONFIG``
    plus ``extra``."""
    from checker.bfs import check
    from checker.search import SearchOptions

    invariants = [for_family("kafka")[name] for name in ("committed-durable", "elr-safety")]
    result = check(build_model("kafka", [*SMALL_CONFIG, *extra], protocol),
                   SearchOptions(invariants=invariants))
    return result.verdict.value, result.distinct_states, result.depth


#: the fast tier searches each bound once, and each KRaft line under at least one of them (the step
#: tests above take each bound's actions on kraft-4.1); the whole suite searches every bound on
#: every line
_SLOW = pytest.mark.slow


@pytest.mark.parametrize("extra,protocol,states,depth", [
    # the leader's controlled shutdown adds its partition change and a running broker in controlled
    # shutdown, which stops fetching once it replays the change that takes it out of the ISR
    # (KAFKA-13858, 3.3.0)
    pytest.param("shutdowns=1", "kraft-3.3", 16993, 31, marks=_SLOW),
    ("shutdowns=1", "kraft-3.5", 16690, 31),
    pytest.param("shutdowns=1", "kraft-4.1", 67465, 37, marks=_SLOW),
    # a lost AlterPartition answer: the request is sent again and answered with an error
    pytest.param("alter_losses=1", "kraft-3.3", 17146, 31, marks=_SLOW),
    ("alter_losses=1", "kraft-3.5", 16620, 31),
    pytest.param("alter_losses=1", "kraft-4.1", 65175, 38, marks=_SLOW),
    # a leader's view older than the controller's adds nothing at this size (the same counts as
    # without it): a follower is fenced here only by a crash, which drops the answer of the fetch an
    # expansion is decided at (the lag shows with a running fence:
    # test_with_metadata_lag_the_controllers_check_keeps_...)
    ("metadata_lag=1", "kraft-3.3", 11286, 30),
    pytest.param("metadata_lag=1", "kraft-3.5", 11156, 30, marks=_SLOW),
    pytest.param("metadata_lag=1", "kraft-4.1", 41687, 37, marks=_SLOW),
    # a broker that leads nothing stops cleanly (fenced, its clean shutdown file written) and
    # restarts
    ("clean_shutdowns=1", "kraft-3.3", 23952, 32),
    pytest.param("clean_shutdowns=1", "kraft-3.5", 24861, 32, marks=_SLOW),
    pytest.param("clean_shutdowns=1", "kraft-4.1", 133645, 39, marks=_SLOW),
    # a running broker is fenced for missed heartbeats, keeps its log and fetcher, and is unfenced
    # again
    pytest.param("fences=1", "kraft-3.3", 37598, 31, marks=_SLOW),
    ("fences=1", "kraft-3.5", 37263, 30), pytest.param("fences=1", "kraft-4.1", 181788, 40,
                                                       marks=_SLOW),
])
@pytest.mark.slow  # every line it runs, cheaper fast tests run too (coverage by test)
def test_state_counts_with_each_new_kraft_bound(extra, protocol, states, depth):
    """The configuration of ``test_state_counts_of_each_kraft_line`` with one of the bounds that are
    0 by default: every line still holds."""
    assert _small_config(protocol, extra) == ("holds", states, depth)


def test_symmetry_commutes_on_the_kraft_rows():
    """Broker ids in the new fields (ELR, committed ISR, followers' broker epochs, AlterPartition's)
    are renamed."""
    from spec.kafka.symmetry import permute

    model = _model("kraft-4.1", "min_isr=2", "acks=-1", "records=2")
    s = _run(model, REPLICATE + BEHIND + [("ShrinkIsr", {"leader": 0, "follower": 1})])
    swap = (1, 0)
    for action, successor in model.successors(s):
        renamed = {t for _, t in model.successors(permute(s, swap))}
        assert permute(successor, swap) in renamed, action


def test_acks_all_produce_counts_the_committed_isr_not_the_maximal_one():
    # 3.5.0 Partition.appendRecordsToLeader refuses acks=all below min ISR by partitionState.isr,
    # the last committed ISR; an expansion still pending at the controller (the maximal ISR) does
    # not count yet
    model = build_model("kafka", ["acks=-1", "min_isr=2", "records=1"], "kraft-4.1")
    s = model.init_states()[0]
    leader = s.brokers[0]
    pending = leader.with_(isr=(0, 1), alter_pending=True, committed_isr=(0,))
    state = s.with_(brokers=(pending,) + s.brokers[1:])
    assert not [a for a, _ in model.successors(state) if a.name == "Produce"]
    committed = leader.with_(isr=(0, 1), alter_pending=False, committed_isr=())
    state = s.with_(brokers=(committed,) + s.brokers[1:])
    assert [a for a, _ in model.successors(state) if a.name == "Produce"]


# -- a lost AlterPartition answer: the AlterPartitionManager sends the same request again ----------
def test_a_lost_answer_resends_the_request_and_the_metadata_commits_the_isr():
    """LoseAlterPartitionResponse: the controller wrote the shrink, the answer is lost; the same
    request is in flight again (no new AlterPartition meanwhile), the controller answers it
    INVALID_UPDATE_VERSION (kraft-4.1: the leader epoch is kept) or FENCED_LEADER_EPOCH (3.x: the
    shrink bumped it), the leader stays pending on that answer and the partition change it replays
    commits the ISR."""
    for protocol, error in (("kraft-4.1", INVALID_UPDATE_VERSION),
                            ("kraft-3.5", FENCED_LEADER_EPOCH)):
        model = _model(protocol, "alter_losses=1")
        s = _run(model, [("ShrinkIsr", {"leader": 0, "follower": 1}),
                         ("LoseAlterPartitionResponse", {"leader": 0})])
        (request,) = [m for m in s.network if m.kind == ALTER_PARTITION]
        assert (request.isr, s.controller.isr, s.alter_losses) == ((0,), (0,), 1)
        assert s.brokers[0].alter_pending and s.brokers[0].isr == (0, 1)
        assert not _enabled(model, s, "LoseAlterPartitionResponse", leader=0)  # the bound
        assert not _enabled(model, s, "ExpandIsr", leader=0)  # still one AlterPartition in flight
        t = _take(model, s, "ProcessAlterPartition", leader=0)
        (response,) = [m for m in t.network if m.kind == ALTER_PARTITION_RESPONSE]
        assert response.error == error and t.controller.partition_epoch == 1
        t = _take(model, t, "ReceiveAlterPartitionResponse", leader=0)
        assert t.brokers[0].alter_pending  # waits for the metadata
        t = _take(model, t, "DeliverLeaderAndIsr", broker=0)
        assert ((t.brokers[0].alter_pending, t.brokers[0].isr, t.brokers[0].partition_epoch)
                == (False, (0,), 1))
    off = _model("kraft-4.1")  # alter_losses=0 (the default): no answer is lost
    assert not _enabled(off, _run(off, [("ShrinkIsr", {"leader": 0, "follower": 1})]),
                        "LoseAlterPartitionResponse")


# -- controlled shutdown on KRaft (KIP-841's shutting-down half) -----------------------------------
SHUTTING_DOWN = "kip-841-shutting-down-replica-rejoins-the-isr.json"


#: a broker in controlled shutdown that keeps fetching (KAFKA-13858's check off): KIP-841's story
KEEPS_FETCHING = "kraft-shutdown-stops-fetcher=off"


@pytest.mark.parametrize("protocol", KRAFT_ROWS)
def test_a_shutting_down_replica_rejoins_the_isr_only_without_kip_841(protocol):
    """The leader's controlled shutdown moves leadership away. From 3.3.0 (KAFKA-13858, every KRaft
    row) the broker stops fetching when it replays the change that takes it out of the ISR: blocked
    at its first fetch (step 11). If it kept fetching, KIP-841 keeps the new leader from proposing
    it (blocked at ExpandIsr, step 13); with kip-841=off too the leader does, the controller
    accepts, and the ISR holds a broker that is about to stop until it is fenced (no safety property
    breaks)."""
    scenario = load_scenario(os.path.join(SCENARIOS, SHUTTING_DOWN))
    result = replay_scenario(scenario_model(scenario, protocol), scenario)
    assert (result.outcome, result.step) == ("blocked", 11)
    assert ((replay_scenario(scenario_model(scenario, protocol, ["kip-841=off"]), scenario).step)
            == 11)
    fetching = replay_scenario(scenario_model(scenario, protocol, [KEEPS_FETCHING]), scenario)
    assert (fetching.outcome, fetching.step) == ("blocked", 13)
    off = replay_scenario(scenario_model(scenario, protocol, ["kip-841=off", KEEPS_FETCHING]),
                          scenario)
    assert off.outcome == "holds"
    model = build_model("kafka", ["records=1", "epochs=2", "crashes=1", "shutdowns=1"], protocol,
                        ["kip-841=off", KEEPS_FETCHING])
    steps = [(str(step.name), dict(step.params)) for step in scenario.steps[:15]]
    s = _run(model, steps)
    assert s.controller.isr == (0, 1) and s.brokers[0].stopping and s.brokers[1].isr == (0, 1)


def test_controlled_shutdown_moves_leadership_to_an_active_isr_member_or_leaves_the_partition_offline():  # noqa: E501
    model = _model("kraft-3.3", "shutdowns=1")
    s = _take(model, model.init_states()[0], "ProcessControlledShutdown", broker=0, leader=1)
    c = s.controller
    assert (c.leader, c.isr, c.epoch, c.registered, s.shutdowns) == (1, (1,), 1, (0, 0), 1)
    assert s.brokers[0].alive and s.brokers[0].stopping
    # the bound, and broker 1 is the leader now
    assert not _enabled(model, s, "ProcessControlledShutdown")
    # only the partition's leader goes through CONTROLLED_SHUTDOWN (a broker that leads nothing:
    # SHUTDOWN_NOW, a Crash)
    assert not _enabled(model, model.init_states()[0], "ProcessControlledShutdown", broker=1)
    # the only ISR member: no active replica to take over, the partition goes offline and the last
    # member stays
    alone = _run(model, [("ShrinkIsr", {"leader": 0, "follower": 1}),
                         ("ProcessAlterPartition", {"leader": 0}),
                         ("DeliverLeaderAndIsr", {"broker": 0})])
    t = _take(model, alone, "ProcessControlledShutdown", broker=0, leader=-1)
    assert (t.controller.leader, t.controller.isr) == (-1, (0,))
    # a broker in controlled shutdown is not electable (not active)
    assert not _enabled(model, t, "ElectLeader")
    elr = _model("kraft-4.1", "shutdowns=1", "min_isr=2")
    t = _take(elr, elr.init_states()[0], "ProcessControlledShutdown", broker=0, leader=1)
    assert (t.controller.leader, t.controller.isr, t.controller.elr) == (1, (1,), (0,))


# -- a leader's metadata lag: its own eligibility check passes on an older view; the controller's
# -- check holds
def test_with_metadata_lag_the_controllers_check_keeps_a_fenced_or_shutting_down_broker_out():
    """metadata_lag=1: the leader's metadata cache may predate the fencing (or controlled shutdown)
    of a follower, so recording that follower's fetch it proposes it; the controller answers
    INELIGIBLE_REPLICA (ineligibleReplicasForIsr) and the leader reverts to its last committed ISR.
    KIP-841's fenced story stops where the controller would have to elect the fenced broker, with or
    without the lag."""
    fenced = load_scenario(os.path.join(SCENARIOS, "kip-841-fenced-replica-rejoins-the-isr.json"))
    for protocol in ("kraft-3.3", "kraft-3.5"):
        result = replay_scenario(scenario_model(fenced, protocol, constants=["metadata_lag=1"]),
                                 fenced)
        # ElectLeader(leader=1): broker 1 is not in the ISR
        assert (result.outcome, result.step) == ("blocked", 22)
    # the story up to the fetch whose answer is on its way (broker 1 caught up, out of the ISR),
    # then a running fence
    steps = [(str(step.name), dict(step.params)) for step in fenced.steps[:13]]
    fence = ("FenceBroker", {"broker": 1, "leader": 0})
    for lag, proposes in (("metadata_lag=0", False), ("metadata_lag=1", True)):
        model = build_model("kafka", ["records=1", "epochs=3", "fences=1", lag], "kraft-3.3")
        s = _run(model, [*steps, fence])
        assert _enabled(model, s, "ExpandIsr", leader=0, follower=1) == proposes
    s = _run(model, [*steps, fence, ("ExpandIsr", {"leader": 0, "follower": 1}),
                     ("ProcessAlterPartition", {"leader": 0})])
    (response,) = [m for m in s.network if m.kind == ALTER_PARTITION_RESPONSE]
    assert response.error == INELIGIBLE_REPLICA and s.controller.isr == (0,)
    s = _take(model, s, "ReceiveAlterPartitionResponse", leader=0)
    assert (s.brokers[0].isr, s.brokers[0].alter_pending) == ((0,), False)
    shutting = load_scenario(os.path.join(SCENARIOS, SHUTTING_DOWN))
    model = build_model("kafka", ["records=1", "epochs=2", "crashes=1", "shutdowns=1",
                                  "metadata_lag=1"], "kraft-3.5",
                        [KEEPS_FETCHING])
    s = _run(model, [(str(step.name), dict(step.params)) for step in shutting.steps[:15]])
    assert s.controller.isr == (1,) and s.brokers[1].isr == (1,)  # proposed, rejected, reverted


def test_symmetry_commutes_with_a_controlled_shutdown_and_a_lost_answer():
    """A renaming of broker ids commutes with ProcessControlledShutdown and
    LoseAlterPartitionResponse."""
    from spec.kafka.symmetry import permute

    model = _model("kraft-4.1", "min_isr=2", "shutdowns=1", "alter_losses=1", "metadata_lag=1",
                   "records=2")
    swap = (1, 0)
    for state in (_run(model, REPLICATE),
                  _run(model, REPLICATE + BEHIND + [("ShrinkIsr", {"leader": 0, "follower": 1})]),
                  _run(model, REPLICATE
                       + [("ProcessControlledShutdown", {"broker": 0, "leader": 1})])):
        names = {a.name for a, _ in model.successors(state)}
        assert names & {"ProcessControlledShutdown", "LoseAlterPartitionResponse",
                        "DeliverLeaderAndIsr"}
        renamed = {t for _, t in model.successors(permute(state, swap))}
        for action, successor in model.successors(state):
            assert permute(successor, swap) in renamed, action


# -- a clean shutdown and the registration that follows (KAFKA-16952, KAFKA-18635) -----------------
CLEAN_RESTART = "kafka-18635-clean-restart-keeps-its-elr-membership.json"


@pytest.mark.parametrize("protocol,features,expected", [
    # KAFKA-18635: the clean restart stays in the ELR and is elected
    ("kraft-4.1", [], ("holds", None)),
    # 3.9.x: every new incarnation leaves the ELR: offline
    ("kraft-4.1", ["kafka-18635=off"], ("blocked", 11)),
    ("kraft-3.5", [], ("blocked", 11)),  # no ELR: the last ISR member is kept, no one to elect
    ("3.9.1", [], ("blocked", 8)),  # ZooKeeper: no CleanShutdown
])
def test_a_clean_restart_keeps_its_elr_membership_with_kafka_18635(protocol, features, expected):
    scenario = load_scenario(os.path.join(SCENARIOS, CLEAN_RESTART))
    result = replay_scenario(scenario_model(scenario, protocol, features), scenario)
    assert (result.outcome, result.step) == expected


@pytest.mark.parametrize("features,kept", [([], True), (["kafka-18635=off"], False)])
def test_only_a_restart_after_a_crash_is_unclean_with_kafka_18635(features, kept):
    """The registration after CleanShutdown carries the registered broker epoch (its clean shutdown
    file): with KAFKA-18635 it keeps its ELR membership, 3.9.x removes it. After a Crash (no clean
    shutdown file) both remove it."""
    model = _model("kraft-4.1", "min_isr=2", "clean_shutdowns=1", "alters=0",
                   features=tuple(features))
    stopped = _run(model, REPLICATE + [("CleanShutdown", {"broker": 1, "leader": 0})])
    assert (stopped.controller.isr == (0,) and stopped.controller.elr == (1,)
            and stopped.controller.registered[1] == DEAD)
    assert (stopped.brokers[1].stopping and not stopped.brokers[1].alive and stopped.brokers[1].log
            == stopped.brokers[0].log)
    assert (stopped.crashes, stopped.clean_shutdowns) == (0, 1)
    restarted = _run(model, [("Restart", {"broker": 1})], stopped)
    assert (restarted.controller.elr == (1,)) == kept
    assert not restarted.brokers[1].stopping
    crashed = _run(model, REPLICATE + [("Crash", {"broker": 1}),
                                       ("FenceBroker", {"broker": 1, "leader": 0})])
    assert crashed.controller.elr == (1,) and not crashed.brokers[1].stopping
    assert _run(model, [("Restart", {"broker": 1})], crashed).controller.elr == ()


def test_clean_shutdown_is_bounded_and_only_for_a_broker_that_leads_nothing():
    model = _model("kraft-4.1", "min_isr=2", "clean_shutdowns=1", "alters=0")
    s = model.init_states()[0]
    assert not _enabled(model, s, "CleanShutdown", broker=0)  # the leader first hands leadership on
    assert _enabled(model, s, "CleanShutdown", broker=1)
    once = _run(model, [("CleanShutdown", {"broker": 1, "leader": 0}), ("Restart", {"broker": 1})])
    assert not _enabled(model, once, "CleanShutdown")
    # bound 0 by default
    assert not _enabled(_model("kraft-4.1", "min_isr=2", "alters=0"), s, "CleanShutdown")


# -- fencing and unfencing a running broker (missed heartbeats) ------------------------------------
def test_a_fenced_running_follower_keeps_fetching_and_rejoins_the_isr_only_once_unfenced():
    """3.5.0 ``maybeFenceOneStaleBroker`` -> ``handleBrokerFenced``: the follower leaves the ISR
    (kraft-4.1: into the ELR, below min ISR) but keeps running and fetching; the leader serves it,
    and KIP-841 (``isReplicaIsrEligible``: ``isBrokerFenced``) keeps it out of the ISR until
    ``handleBrokerUnfenced``. Its broker epoch is unchanged, so KIP-903's check passes once it is
    unfenced. Without KIP-841, KIP-903's check still keeps it out (3.5.0
    ``KRaftMetadataCache.getAliveBrokerEpoch`` filters fenced brokers out); without both the leader
    proposes it."""
    for features, while_fenced in (((), False), (("kip-841=off",), False),
                                   (("kip-841=off", "kip-903=off"), True)):
        model = _model("kraft-4.1", "records=2", "min_isr=2", "fences=1", "alters=1",
                       features=features)
        s = _run(model, REPLICATE + BEHIND + [("FenceBroker", {"broker": 1, "leader": 0})])
        assert s.brokers[1].alive and s.controller.registered[1] == DEAD
        assert (s.controller.isr, s.controller.elr) == ((0,), (1,))
        s = _run(model, [("DeliverLeaderAndIsr", {"broker": 0}),
                         ("ReceiveFetch", {"follower": 1, "leader": 0}),
                         ("SendFetch", {"follower": 1, "leader": 0}),
                         ("ServeFetch", {"leader": 0, "follower": 1}),
                         ("ReceiveFetch", {"follower": 1, "leader": 0}),
                         ("SendFetch", {"follower": 1, "leader": 0}),
                         ("ServeFetch", {"leader": 0, "follower": 1})], s)
        assert (s.brokers[0].isr == (0,) and s.brokers[0].remote[1] == 2 and len(s.brokers[1].log)
                == 2)
        assert _enabled(model, s, "ExpandIsr", leader=0, follower=1) == while_fenced
        unfenced = _run(model, [("UnfenceBroker", {"broker": 1, "leader": 0})], s)
        assert unfenced.controller.registered[1] == unfenced.brokers[1].broker_epoch == 0
        assert _enabled(model, unfenced, "ExpandIsr", leader=0, follower=1)
        # the bound: one running broker fenced
        assert not _enabled(model, unfenced, "FenceBroker", broker=1)


def test_a_fenced_running_leader_is_replaced_and_goes_on_until_it_replays_the_change():
    model = _model("kraft-3.5", "records=1", "fences=1", "alters=0")
    s = _run(model, REPLICATE + [("FenceBroker", {"broker": 0, "leader": 1})])
    assert (s.brokers[0].alive and s.brokers[0].leader == 0 and s.controller.leader == 1
            and s.controller.epoch == 1)
    assert _run(model, [("DeliverLeaderAndIsr", {"broker": 0})], s).brokers[0].leader == 1


def test_unfencing_elects_a_leader_for_a_partition_with_none():
    """``handleBrokerUnfenced`` -> ``generateLeaderAndIsrUpdates(..., partitionsWithNoLeader())``:
    kraft-4.1, the running follower is fenced into the ELR, the leader dies and is fenced (the ISR
    empties, no unfenced ELR member: offline); the follower's heartbeat unfences it and it is
    elected in the same change. kraft-3.5 keeps the dead leader as the last ISR member: unfencing
    the follower elects no one."""
    steps = REPLICATE + [("FenceBroker", {"broker": 1, "leader": 0}), ("Crash", {"broker": 0}),
                         ("FenceBroker", {"broker": 0, "leader": -1})]
    model = _model("kraft-4.1", "min_isr=2", "fences=1", "alters=0")
    s = _run(model, steps)
    assert (s.controller.leader, s.controller.isr, s.controller.elr) == (-1, (), (0, 1))
    s = _run(model, [("UnfenceBroker", {"broker": 1, "leader": 1})], s)
    assert (s.controller.leader, s.controller.isr) == (1, (1,))
    model = _model("kraft-3.5", "min_isr=2", "fences=1", "alters=0")
    s = _run(model, steps + [("UnfenceBroker", {"broker": 1, "leader": -1})])
    assert (s.controller.leader, s.controller.isr) == (-1, (0,))


# -- KIP-704 (3.2.0): RECOVERING after an unclean election -----------------------------------------
@pytest.mark.parametrize("protocol", KRAFT_ROWS)
def test_kip_704_an_uncleanly_elected_leader_expands_the_isr_at_once(protocol):
    """3.2.0 to trunk of October 2024: ``Partition.makeLeader`` marks a RECOVERING partition
    RECOVERED at once ("Leader log recovery is not implemented"), so the new leader's first
    AlterPartition, an expansion, carries RECOVERED and the controller accepts it
    (``validateAlterPartitionData`` rejects only RECOVERING with more than one ISR member)."""
    scenario = load_scenario(os.path.join(SCENARIOS,
                                          "kip-704-unclean-leader-expands-the-isr-at-once.json"))
    model = scenario_model(scenario, protocol)
    result = replay_scenario(model, scenario)
    assert result.outcome == "holds"
    last = result.trace.steps[-1].state
    assert ((last.controller.leader, last.controller.isr) == (1, (0, 1)) and last.brokers[1].isr
            == (0, 1))


# -- issue 36: min ISR capped by the replicas, the ELR on an unclean election, a fenced broker's
# -- clean stop
@pytest.mark.parametrize("protocol", ["3.9.1", "kraft-4.1"])
@pytest.mark.parametrize("capped", [True, False])
def test_the_leader_caps_min_isr_by_its_replicas(protocol, capped):
    """3.7.0 ``Partition.effectiveMinIsr`` (``minInSyncReplicas.min(remoteReplicasMap.size + 1)``):
    with min.insync.replicas=3 on two replicas an acks=all write is accepted and acknowledged and
    the HW advances (strict min ISR); with the raw constant (effective-min-isr=off) the write is
    refused NOT_ENOUGH_REPLICAS and, once appended by an acks=1 producer, the HW never advances
    (kafka-15583)."""
    features = () if capped else ("effective-min-isr=off",)
    model = build_model("kafka", ["records=1", "epochs=1", "min_isr=3", "acks=-1"], protocol,
                        list(features))
    assert _enabled(model, model.init_states()[0], "Produce", leader=0) == capped
    if capped:
        s = _run(model, REPLICATE)
        assert s.brokers[0].hw == 1 and s.acked
    leader_acks = build_model("kafka", ["records=1", "epochs=1", "min_isr=3", "acks=1"], protocol,
                              list(features))
    s = _run(leader_acks, REPLICATE[:-1])
    assert _enabled(leader_acks, s, "AdvanceHighWatermark", leader=0) == capped


def test_the_controller_caps_min_isr_by_the_replicas_before_the_change():
    """3.7.0 ``getTopicEffectiveMinIsr`` = min(min ISR, replication factor of the registration
    before the change): the reassignment to [0] is built on replicas [0, 1] (min ISR 2: broker 1
    enters the ELR), the add-back to [0, 1] on replicas [0] (min ISR 1: the ISR {0} reaches it and
    the ELR is cleared); the raw constant keeps broker 1 in the ELR. (Without a reassignment the cap
    cannot show in the ELR: the capped min ISR is reached only by a full ISR.)"""
    scenario = load_scenario(
        os.path.join(SCENARIOS,
                     "kraft-reassignment-removed-replica-elected-from-the-elr-with-an"
                                "-empty-log.json"))
    steps = [(str(step.name), dict(step.params)) for step in scenario.steps]
    for features, elr_after_add_back in (((), ()), (("effective-min-isr=off",), (1,))):
        model = scenario_model(scenario, "kraft-4.1", list(features))
        removed = _run(model, steps[:8])
        assert ((removed.controller.replicas, removed.controller.isr, removed.controller.elr)
                == ((0,), (0,), (1,)))
        added = _run(model, steps[8:11], removed)
        assert (added.controller.replicas, added.controller.adding) == ((0, 1), (1,))
        assert added.controller.elr == elr_after_add_back


@pytest.mark.parametrize("clears", [True, False])
def test_an_unclean_election_empties_the_elr(clears):
    """3.7.0 / 3.9.0-rc3 ``PartitionChangeBuilder.maybeUpdateRecordElr``: the unclean election sets
    the record's ISR, so ``isCleanLeaderElection`` is false and the ELR is emptied. Broker 1 crashes
    and is fenced into the ELR, broker 0 crashes and is fenced (ISR empty, ELR {0, 1}), broker 1
    restarts uncleanly and leaves the ELR; the partition is elected uncleanly to broker 1: the ELR
    {0} goes with it (unclean-election-clears-elr=off keeps it, so broker 0 could later be elected
    "cleanly" from an ELR its log no longer deserves)."""
    features = ("unclean=on",) + (() if clears else ("unclean-election-clears-elr=off",))
    model = build_model("kafka", ["records=1", "epochs=3", "crashes=2", "min_isr=2", "alters=0"],
                        "kraft-4.1", list(features))
    s = _run(model, REPLICATE + [("Crash", {"broker": 1}),
                                 ("FenceBroker", {"broker": 1, "leader": 0}),
                                 ("Crash", {"broker": 0}),
                                 ("FenceBroker", {"broker": 0, "leader": -1}),
                                 ("Restart", {"broker": 1})])
    assert (s.controller.leader, s.controller.isr, s.controller.elr) == (-1, (), (0,))
    s = _run(model, [("UncleanLeaderElection", {"leader": 1})], s)
    assert (s.controller.leader, s.controller.isr) == (1, (1,))
    assert s.controller.elr == (() if clears else (0,))


@pytest.mark.parametrize("granted", [True, False])
def test_a_fenced_running_broker_stops_cleanly_and_keeps_its_elr_membership(granted):
    """3.9.0-rc3 ``BrokerHeartbeatManager.calculateNextBrokerState`` (case FENCED: wantShutDown ->
    SHUTDOWN_NOW) and ``BrokerServer.shutdown`` (the clean shutdown file with its broker epoch,
    whatever the controller said): a running broker fenced into the ELR stops cleanly, with no
    partition change, and its restart is clean (KAFKA-18635): it stays in the ELR. Without
    fenced-broker-clean-shutdown it can only crash, and its restart leaves the ELR."""
    features = () if granted else ("fenced-broker-clean-shutdown=off",)
    model = _model("kraft-4.1", "min_isr=2", "fences=1", "clean_shutdowns=1", "alters=0",
                   features=features)
    s = _run(model, REPLICATE + [("FenceBroker", {"broker": 1, "leader": 0})])
    assert (s.controller.isr, s.controller.elr, s.controller.registered[1]) == ((0,), (1,), DEAD)
    assert _enabled(model, s, "CleanShutdown", broker=1) == granted
    if granted:
        stopped = _run(model, [("CleanShutdown", {"broker": 1, "leader": 0})], s)
        assert (stopped.controller == s.controller and stopped.brokers[1].stopping
                and not stopped.brokers[1].alive)
        assert _run(model, [("Restart", {"broker": 1})], stopped).controller.elr == (1,)
    crashed = _run(model, [("Crash", {"broker": 1}), ("Restart", {"broker": 1})], s)
    assert crashed.controller.elr == ()
