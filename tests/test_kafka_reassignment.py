"""Partition reassignment on the KRaft rows (``spec.kafka.actions_reassignment``): the controller's
reassignment and its completion, the leader epoch, the broker that deletes its replica and the one
that starts from an empty log, the ELR that keeps a removed replica (KIP-966 rows), the bound at 0
changing nothing, and the scenarios on both sides."""

from __future__ import annotations

import os

import pytest

from invariants.kafka_kraft import elr_safety
from spec.kafka.actions_reassignment import completed
from spec.kafka.protocols import RELEASES
from spec.kafka.state import FETCH_RESPONSE, LEADER_AND_ISR, UNKNOWN_LEADER_EPOCH
from spec.registry import build_model
from traces.replay import replay_scenario, scenario_model
from traces.scenario import load_scenario

SCENARIOS = os.path.join(os.path.dirname(__file__), "..", "traces", "scenarios")
ELR_STORY = "kraft-reassignment-removed-replica-elected-from-the-elr-with-an-empty-log.json"
ADDED_BACK = "kraft-reassignment-replica-removed-and-added-back.json"
KRAFT_ROWS = [r.name for r in RELEASES if r.features.kraft]
ZK_ROWS = [r.name for r in RELEASES if not r.features.kraft]

REPLICATE = [("Produce", {"leader": 0}), ("SendFetch", {"follower": 1, "leader": 0}),
             ("ServeFetch", {"leader": 0, "follower": 1}),
             ("ReceiveFetch", {"follower": 1, "leader": 0}),
             ("SendFetch", {"follower": 1, "leader": 0}),
             ("ServeFetch", {"leader": 0, "follower": 1}), ("AdvanceHighWatermark", {"leader": 0}),
             ("ReceiveFetch", {"follower": 1, "leader": 0})]


def _model(protocol: str, *constants: str, features: tuple[str, ...] = ()):
    return build_model("kafka", ["records=1", "epochs=2", "crashes=1", "reassignments=2",
                                 *constants], protocol,
                       list(features))


def _take(model, state, name: str, **params):
    for action, successor in model.successors(state):
        if action.name == name and all(dict(action.params).get(k) == v for k, v in params.items()):
            return successor
    raise AssertionError(f"{name}({params}) is not enabled; enabled: "
                         f"{[str(a) for a, _ in model.successors(state)]}")


def _enabled(model, state, name: str, **params) -> bool:
    return any(a.name == name and all(dict(a.params).get(k) == v for k, v in params.items())
               for a, _ in model.successors(state))


def _run(model, steps, state=None):
    state = model.init_states()[0] if state is None else state
    for name, params in steps:
        state = _take(model, state, name, **params)
    return state


REMOVE_1 = [("ReassignPartition", {"remove": 1, "add": -1})]
ADD_1 = [("ReassignPartition", {"remove": -1, "add": 1})]


# -- the completion rule (PartitionReassignmentReplicas.maybeCompleteReassignment) -----------------
@pytest.mark.parametrize("kafka_15665,expected", [(False, ((0, 2), (0,))), (True, None)])
def test_completion_needs_every_target_replica_in_the_isr_only_from_kafka_15665(
    kafka_15665, expected):
    """[0, 1, 2] -> [0, 2] with ISR {0, 1}: nothing is added, so 3.5.0 completes at once (ISR {0},
    replica 2 outside it); 3.8.0 (KAFKA-15665) waits for replica 2 in the ISR."""
    assert completed((0, 1, 2), (), (1,), (0, 1), kafka_15665) == expected


def test_completion_waits_for_the_adding_replica_and_a_non_empty_isr():
    assert completed((0, 1), (1,), (), (0,), False) is None  # adding 1 not in the ISR yet
    assert completed((0, 1), (1,), (), (0, 1), False) == ((0, 1), (0, 1))
    # the ISR less the removing replicas would be empty
    assert completed((0, 1), (), (0,), (0,), True) is None
    assert completed((0, 1), (), (), (0, 1), True) is None  # no reassignment in progress


# -- the bound at 0 --------------------------------------------------------------------------------
@pytest.mark.parametrize("protocol", ["kraft-3.5", "2.8.1"])
def test_without_the_bound_the_model_is_the_one_without_reassignment(protocol):
    """reassignments=0 (the default), or a ZooKeeper row: no ReassignPartition, no replica list, and
    the plane is the row's own (spec.kafka.controllers), not the reassigning one."""
    for model in (build_model("kafka", ["records=1"], protocol), _model(protocol) if protocol
                  == "2.8.1" else None):
        if model is None:
            continue
        # not the reassigning plane
        assert model.control_plane.name in ("kraft", "zookeeper-alter-isr")
        s = model.init_states()[0]
        assert s.controller.replicas == () and all(b.replicas == () for b in s.brokers)
        assert not any(a.name == "ReassignPartition" for a, _ in model.successors(s))
        assert "reassignments" not in model.constants


# -- the controller's side -------------------------------------------------------------------------
@pytest.mark.parametrize("protocol", KRAFT_ROWS)
def test_a_removal_completes_at_once_with_a_leader_epoch_bump_and_the_replica_is_deleted(protocol):
    model = _model(protocol)
    s = _run(model, REPLICATE + REMOVE_1)
    c = s.controller
    assert ((c.replicas, c.adding, c.removing, c.isr, c.leader, c.epoch)
            == ((0,), (), (), (0,), 0, 1))
    assert s.reassignments == 1
    sent = {m.dst for m in s.network if m.kind == LEADER_AND_ISR}
    assert sent == {0, 1}  # every replica, old and new: the removed one deletes its replica
    s = _run(model, [("DeliverLeaderAndIsr", {"broker": 1})], s)
    b = s.brokers[1]
    assert (b.log, b.hw, b.cache, b.leader, b.epoch, b.isr) == ((), 0, (), -1, -1, ())
    assert b.replicas == (0,)
    # it does nothing more for the partition: no fetch, no truncation
    assert not any(a.name in ("SendFetch", "TruncateToHighWatermark")
                   and dict(a.params).get("follower") == 1
                   for a, _ in model.successors(s))


@pytest.mark.parametrize("protocol", KRAFT_ROWS)
def test_an_addition_keeps_the_leader_epoch_and_the_new_replica_fetches_from_empty(protocol):
    model = _model(protocol)
    s = _run(model, REPLICATE + REMOVE_1 + [("DeliverLeaderAndIsr", {"broker": 1}),
                                            ("DeliverLeaderAndIsr", {"broker": 0})])
    s = _run(model, ADD_1, s)
    c = s.controller
    assert (c.replicas, c.adding, c.removing, c.isr, c.epoch) == ((0, 1), (1,), (), (0,), 1)
    # the leader and the broker added
    assert {m.dst for m in s.network if m.kind == LEADER_AND_ISR} == {0, 1}
    s = _run(model, [("DeliverLeaderAndIsr", {"broker": 0}),
                     ("DeliverLeaderAndIsr", {"broker": 1})], s)
    leader, added = s.brokers
    assert leader.replicas == (0, 1) and leader.remote[1] == -1  # a new Replica: LEO unknown
    assert (added.leader, added.epoch, added.log) == (0, 1, ())


def test_symmetry_is_refused_with_reassignments():
    """The successor of a removed leader is the lowest valid id (the target list is sorted): not
    symmetric."""
    from checker.search import SearchOptions, uses_symmetry
    from spec.errors import ModelError

    assert build_model("kafka", ["records=1"], "kraft-3.5").has_symmetry
    with pytest.raises(ModelError):
        uses_symmetry(_model("kraft-3.5"), SearchOptions(symmetry=True))


def test_removing_the_leader_elects_the_first_valid_target_replica():
    model = _model("kraft-3.5")
    s = _run(model, REPLICATE + [("ReassignPartition", {"remove": 0, "add": -1})])
    assert ((s.controller.leader, s.controller.isr, s.controller.replicas, s.controller.epoch)
            == (1, (1,), (1,), 1))


def test_an_out_of_sync_target_replica_holds_the_completion_back_only_from_kafka_15665():
    """Three brokers, broker 2 dead and fenced (ISR {0, 1}); [0, 1, 2] -> [0, 2]: kraft-4.1
    (KAFKA-15665) keeps the reassignment in progress, kraft-4.1 with kafka-15665=off (3.5's rule)
    completes it with ISR {0}."""
    steps = [("Crash", {"broker": 2}), ("FenceBroker", {"broker": 2, "leader": 0}),
             ("ReassignPartition", {"remove": 1, "add": -1})]
    on = _run(_model("kraft-4.1", "brokers=3"), steps).controller
    assert (on.replicas, on.removing, on.isr) == ((0, 1, 2), (1,), (0, 1))
    off = _run(_model("kraft-4.1", "brokers=3", features=("kafka-15665=off",)), steps).controller
    assert (off.replicas, off.removing, off.isr) == ((0, 2), (), (0,))


def test_one_reassignment_at_a_time_and_the_bound():
    model = _model("kraft-3.5", "brokers=3", "reassignments=1")
    s = _run(model, [("Crash", {"broker": 2}), ("FenceBroker", {"broker": 2, "leader": 0}),
                     ("ReassignPartition", {"remove": 1, "add": -1})])
    assert not _enabled(model, s, "ReassignPartition")
    model = _model("kraft-4.1", "brokers=3")
    s = _run(model, [("Crash", {"broker": 2}), ("FenceBroker", {"broker": 2, "leader": 0}),
                     ("ReassignPartition", {"remove": 1, "add": -1})])
    # in progress
    assert s.controller.removing == (1,) and not _enabled(model, s, "ReassignPartition")


# -- the brokers' side -----------------------------------------------------------------------------
def test_a_fetch_from_a_broker_that_is_no_replica_is_answered_unknown_leader_epoch():
    """The window of an addition (no leader epoch bump): broker 1, added back, replays the addition
    and fetches in the leader's epoch before the leader replays it; the leader does not track it yet
    (``followerReplicaOrThrow``) and answers UNKNOWN_LEADER_EPOCH without recording its offset."""
    model = _model("kraft-3.5")
    s = _run(model, REPLICATE + REMOVE_1 + [("DeliverLeaderAndIsr", {"broker": 1}),
                                            ("DeliverLeaderAndIsr", {"broker": 0})]
             + ADD_1 + [("DeliverLeaderAndIsr", {"broker": 1}),
                        ("TruncateToHighWatermark", {"follower": 1}),
                        ("SendFetch", {"follower": 1, "leader": 0}),
                        ("ServeFetch", {"leader": 0, "follower": 1})])
    (answer,) = [m for m in s.network if m.kind == FETCH_RESPONSE]
    assert answer.error == UNKNOWN_LEADER_EPOCH and s.brokers[0].remote[1] == -1


def test_a_broker_that_is_no_replica_restarts_with_nothing_to_replay():
    model = _model("kraft-3.5")
    s = _run(model, REPLICATE + REMOVE_1 + [("Crash", {"broker": 1}),
                                            ("FenceBroker", {"broker": 1, "leader": 0}),
                                            ("Restart", {"broker": 1})])
    assert not any(m.kind == LEADER_AND_ISR and m.dst == 1 for m in s.network)
    # it crashed before it replayed its removal: the stray log stays (3.5.0)
    assert s.brokers[1].log
    assert s.brokers[1].leader == -1


# -- the ELR and the removed replica (KIP-966 rows) ------------------------------------------------
@pytest.mark.parametrize("protocol,elr", [("kraft-3.5", ()), ("kraft-4.1", (1,))])
def test_a_removed_replica_enters_the_elr_only_with_kip_966(protocol, elr):
    s = _run(_model(protocol, "min_isr=2"), REPLICATE + REMOVE_1)
    assert s.controller.elr == elr
    assert elr_safety(s)  # not a replica: not electable, whatever its log


def test_a_removed_replica_in_the_elr_is_not_elected_while_it_is_no_replica():
    """kraft-4.1, min ISR 2: broker 1 removed (ELR {1}, its log deleted), the leader dies: the
    election walks the replica list [0], so broker 1 is not elected and the partition goes offline;
    elr-safety counts only what may be elected."""
    model = _model("kraft-4.1", "min_isr=2")
    s = _run(model, REPLICATE + REMOVE_1 + [("DeliverLeaderAndIsr", {"broker": 1}),
                                            ("Crash", {"broker": 0})])
    assert s.controller.elr == (1,) and not s.brokers[1].log
    assert elr_safety(s)
    assert not _enabled(model, s, "FenceBroker", broker=0, leader=1)
    assert _enabled(model, s, "FenceBroker", broker=0, leader=-1)


@pytest.mark.parametrize("protocol,features,expected", [
    # effective-min-isr (3.7.0 getTopicEffectiveMinIsr): the add-back is built with min ISR min(2,
    # 1) = 1 and clears the ELR; with the raw constant the removed replica stays in the ELR and
    # elr-safety breaks
    ("kraft-4.1", (), ("blocked", 15)),
    ("kraft-4.1", ("effective-min-isr=off",), ("violated", "elr-safety", 14)),
    ("kraft-4.1", ("kip-966-elr=off", "clean-shutdown-detection=off", "kafka-18635=off"),
     ("blocked", 15)),
    ("kraft-3.5", (), ("blocked", 15)), ("kraft-3.3", (), ("blocked", 15)),
    ("3.9.1", (), ("blocked", 8)),
])
def test_the_removed_replica_is_elected_from_the_elr_with_an_empty_log(protocol, features,
                                                                       expected):
    scenario = load_scenario(os.path.join(SCENARIOS, ELR_STORY))
    result = replay_scenario(scenario_model(scenario, protocol, list(features)), scenario)
    outcome = ((result.outcome, result.invariant.name, result.step) if result.invariant
               else (result.outcome, result.step))
    assert outcome == expected


def test_the_elected_replica_then_loses_the_committed_record():
    """The story two steps further on kraft-4.1 with the raw min ISR (effective-min-isr=off): broker
    1 leads with an empty log (committed-durable)."""
    scenario = load_scenario(os.path.join(SCENARIOS, ELR_STORY))
    model = scenario_model(scenario, "kraft-4.1", ["effective-min-isr=off"])
    result = replay_scenario(model, scenario, invariants=["committed-durable"])
    assert ((result.outcome, result.invariant.name, result.step)
            == ("violated", "committed-durable", 16))


@pytest.mark.parametrize("protocol", KRAFT_ROWS)
@pytest.mark.parametrize("kafka_15665", ["on", "off"])
def test_a_replica_removed_and_added_back_catches_up_and_completes_the_reassignment(
    protocol, kafka_15665):
    scenario = load_scenario(os.path.join(SCENARIOS, ADDED_BACK))
    model = scenario_model(scenario, protocol, [f"kafka-15665={kafka_15665}"])
    result = replay_scenario(model, scenario)
    assert result.outcome == "holds", result.summary()
    steps = [(str(step.name), dict(step.params)) for step in scenario.steps]
    done = _run(model,
                steps[:scenario.steps.index(next(x for x in scenario.steps if x.name
                                                 == "ProcessAlterPartition"))
                        + 1])
    assert ((done.controller.replicas, done.controller.adding, done.controller.isr)
            == ((0, 1), (), (0, 1)))


@pytest.mark.parametrize("protocol", ZK_ROWS[-2:])
def test_the_zookeeper_rows_have_no_reassignment(protocol):
    scenario = load_scenario(os.path.join(SCENARIOS, ADDED_BACK))
    result = replay_scenario(scenario_model(scenario, protocol), scenario)
    assert (result.outcome, result.step) == ("blocked", 9)


# -- small exhaustive searches ---------------------------------------------------------------------
def _search(protocol: str, *bounds: str, invariants=("committed-durable", "elr-safety"),
            features=()):
    from checker.bfs import check
    from checker.search import SearchOptions
    from invariants.registry import for_family

    checks = [for_family("kafka")[name] for name in invariants]
    result = check(build_model("kafka", list(bounds), protocol, list(features)),
                   SearchOptions(invariants=checks))
    return result.verdict.value, result.distinct_states, result.depth


SMALL = ("records=1", "epochs=1", "crashes=0", "alters=1", "reassignments=1")


@pytest.mark.parametrize("protocol,states,depth", [("kraft-3.3", 5002, 25), ("kraft-3.5", 5002, 25),
                                                   ("kraft-4.1", 8016, 26)])
@pytest.mark.slow  # every line it runs, cheaper fast tests run too (coverage by test)
def test_state_counts_with_one_reassignment(protocol, states, depth):
    """Two brokers, one record, one leader epoch (a removal takes it), one AlterPartition: every
    line holds (3.3 and 3.5 alike: with no crash KIP-903's broker epochs never differ)."""
    assert _search(protocol, *SMALL) == ("holds", states, depth)


@pytest.mark.slow
@pytest.mark.parametrize("epochs,alters,flags,verdict",
                         [(2, 0, (), "holds"), (2, 0, ("effective-min-isr=off",), "violated"),
                          (3, 1, (), "violated")])
def test_remove_and_add_back_under_min_isr_2(epochs, alters, flags, verdict):
    """A replica removed and added back (reassignments=2) with min.insync.replicas=2, a crash: the
    KIP-966 row (kraft-4.1) loses a committed record once a third leader epoch allows the add-back's
    ELR election (the report's leader-moved order: the removal, the fencing and the election each
    take one); two epochs hold since the min ISR is capped by the replicas (effective-min-isr: the
    ``ELR_STORY`` add-back clears the ELR), and break elr-safety without that cap. Two epochs are
    searched with no AlterPartition (116,184 states on the readable model, which does not compile
    reassignment; alters=1 holds too, at 887,005 states and 35 s). (kraft-3.5 is not searched here:
    it has no ELR, so elr-safety is vacuous there and the search could not fail.)"""
    bounds = ("records=1", f"epochs={epochs}", "crashes=1", f"alters={alters}", "reassignments=2",
              "min_isr=2")
    assert _search("kraft-4.1", *bounds, features=flags)[0] == verdict


#: the bounds at which the report's fix is searched: the unfixed row violates (16,489 states to the
#: counterexample)
FIX_BOUNDS = ("records=1", "epochs=3", "crashes=1", "alters=0", "reassignments=2", "min_isr=2")


@pytest.mark.slow  # every line it runs, cheaper fast tests run too (coverage by test)
def test_the_proposed_fix_holds_where_the_row_loses_a_committed_record():
    """kraft-4.1 at ``FIX_BOUNDS`` violates committed-durable (the leader-moved order); with
    elr-filtered-by-replicas the whole space holds elr-safety and committed-durable (344,036 states:
    slow)."""
    verdict, _, depth = _search("kraft-4.1", *FIX_BOUNDS)
    assert (verdict, depth) == ("violated", 10)


@pytest.mark.slow
def test_the_proposed_fix_holds_the_search():
    assert _search("kraft-4.1", *FIX_BOUNDS, features=("elr-filtered-by-replicas=on",)) == (
        "holds", 344036, 44)


def test_an_alter_partition_that_completes_a_move_of_the_leader_answers_a_new_leader():
    """NEW_LEADER_ELECTED (3.5.0 ``ReplicationControlManager.alterPartition``): three brokers,
    replicas [0, 1] after a first reassignment; [0, 1] -> [1, 2] moves the leader's replica to
    broker 2. Broker 2 fetches up to the HW, the leader proposes ISR {0, 1, 2}; the controller's
    change completes the reassignment (replicas [1, 2], ISR {1, 2}) and elects broker 1 with a new
    leader epoch. The answer (the model's NONE with that epoch, Kafka's NEW_LEADER_ELECTED) leaves
    broker 0 pending until it replays the change, which deletes its replica."""
    model = _model("kraft-3.5", "brokers=3", "epochs=3")
    s = _run(model, [("ReassignPartition", {"remove": 2, "add": -1}),
                     ("DeliverLeaderAndIsr", {"broker": 0}), ("DeliverLeaderAndIsr", {"broker": 1}),
                     ("DeliverLeaderAndIsr", {"broker": 2}),
                     ("ReassignPartition", {"remove": 0, "add": 2})])
    assert (s.controller.replicas, s.controller.adding, s.controller.removing,
            s.controller.leader) == ((0, 1, 2), (2,),
                                   (0,), 0)
    s = _run(model, [("DeliverLeaderAndIsr", {"broker": 0}), ("DeliverLeaderAndIsr", {"broker": 2}),
                     ("TruncateToHighWatermark", {"follower": 2}),
                     ("SendFetch", {"follower": 2, "leader": 0}),
                     ("ServeFetch", {"leader": 0, "follower": 2}),
                     ("ExpandIsr", {"leader": 0, "follower": 2}),
                     ("ProcessAlterPartition", {"leader": 0})], s)
    c = s.controller
    assert ((c.replicas, c.adding, c.removing, c.isr, c.leader, c.epoch)
            == ((1, 2), (), (), (1, 2), 1, 2))
    s = _run(model, [("ReceiveAlterPartitionResponse", {"leader": 0})], s)
    assert s.brokers[0].alter_pending and s.brokers[0].leader == 0  # pending until the metadata
    s = _run(model, [("DeliverLeaderAndIsr", {"broker": 0})], s)
    assert (s.brokers[0].leader, s.brokers[0].replicas) == (-1, (1, 2))


def test_a_broker_that_is_no_replica_is_not_a_lagging_follower():
    """The liveness form (every live follower fetches from the leader) asks nothing of a broker that
    hosts no replica."""
    from invariants.kafka_control import lagging_followers

    model = _model("kraft-3.5")
    s = _run(model, REPLICATE + REMOVE_1 + [("DeliverLeaderAndIsr", {"broker": 1}),
                                            ("DeliverLeaderAndIsr", {"broker": 0})])
    assert s.brokers[1].alive and s.brokers[1].fetch == 0
    assert lagging_followers(s) == []


# -- the upstream report (docs/reports/kraft-4.1-elr-not-filtered-by-replicas.md): the orders on the
# -- fixed model
REPORT_TWO = "kraft-4.1-elr-not-filtered-by-replicas-two-brokers.json"
REPORT_THREE = "kraft-4.1-elr-not-filtered-by-replicas-three-brokers.json"


REPORT_SHORTEST = "kraft-4.1-elr-not-filtered-by-replicas-leader-moved.json"


@pytest.mark.parametrize("name,elr_safety_step,durable_step,fixed_step",
                         [(REPORT_TWO, 15, 18, 16),
                          (REPORT_THREE, 20, 22, 21)])
def test_the_reports_orders_lose_a_committed_record_and_the_fix_blocks_them(
    name, elr_safety_step, durable_step,
    fixed_step):
    """kraft-4.1 with min ISR capped by the replicas (effective-min-isr) and the ELR cleared on
    unclean elections: the removed replica stays in the ELR, is added back with an empty log and is
    elected from it (elr-safety, then committed-durable once it leads). With the proposed fix
    (elr-filtered-by-replicas) the removal drops it from the ELR and the election is not enabled."""
    scenario = load_scenario(os.path.join(SCENARIOS, name))
    result = replay_scenario(scenario_model(scenario, "kraft-4.1"), scenario)
    assert ((result.outcome, result.invariant.name, result.step)
            == ("violated", "elr-safety", elr_safety_step))
    durable = replay_scenario(scenario_model(scenario, "kraft-4.1"), scenario,
                              invariants=["committed-durable"])
    assert ((durable.outcome, durable.invariant.name, durable.step)
            == ("violated", "committed-durable", durable_step))
    fixed = replay_scenario(scenario_model(scenario, "kraft-4.1", ["elr-filtered-by-replicas=on"]),
                            scenario)
    assert (fixed.outcome, fixed.step) == ("blocked", fixed_step)


def test_the_shortest_order_needs_the_leaders_capped_min_isr():
    """The acks=all write on the one replica left is accepted only with the leader's min ISR capped
    by its replicas (3.7.0 ``Partition.effectiveMinIsr``): with the raw constant it is refused
    NOT_ENOUGH_REPLICAS; with the cap it is acknowledged, and lost when the add-back elects the
    removed leader from the ELR in its own change (``electAnyLeader`` after
    ``maybePopulateTargetElr``). With the proposed fix the add-back elects no one."""
    scenario = load_scenario(os.path.join(SCENARIOS, REPORT_SHORTEST))
    raw = replay_scenario(scenario_model(scenario, "kraft-4.1", ["effective-min-isr=off"]),
                          scenario)
    assert (raw.outcome, raw.step) == ("blocked", 3)
    acked = replay_scenario(scenario_model(scenario, "kraft-4.1"), scenario,
                            invariants=["acknowledged-durable"])
    assert ((acked.outcome, acked.invariant.name, acked.step)
            == ("violated", "acknowledged-durable", 9))
    fixed = replay_scenario(scenario_model(scenario, "kraft-4.1", ["elr-filtered-by-replicas=on"]),
                            scenario)
    assert fixed.outcome == "holds"
    model = scenario_model(scenario, "kraft-4.1")
    steps = [(str(step.name), dict(step.params)) for step in scenario.steps]
    added = _run(model, steps[:7])
    assert (added.controller.leader, added.controller.isr, added.controller.elr) == (0, (0,), (1,))
