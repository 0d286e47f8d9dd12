"""Swarm simulation (``kmc simulate --workers N``, ``--engine spark``): each walk seeded from --seed
and its number, so the same walks, counts, distinct states covered and counterexample at any worker
count, any batch size and on Spark; a violating walk shortened to a trace that replays (KAFKA-7786
on 2.1.0, README's tour)."""

from __future__ import annotations

import json
import pickle

import pytest

from checker import simulate as simulate_module
from checker.search import SearchOptions
from checker.simulate import SimulationOptions, _without_loops, simulate
from checker.trace import Step
from invariants.registry import for_family
from kmc.cli import main
from spec.registry import build_model
from spec.two_phase import TwoPhase
from traces.io import load_trace
from traces.replay import replay_trace

KAFKA_7786 = ("kafka", ["records=1", "epochs=2", "bumps=2", "crashes=0"], "2.1.0")


def _figures(result):
    return (result.verdict, result.distinct_states, result.states_generated, result.depth,
            result.extra["walks"], result.extra["steps"],
            [(v.invariant, v.trace.steps, v.trace.extra) for v in result.violations])


@pytest.mark.parametrize("stop_at_first", [True, False])
@pytest.mark.slow  # every line it runs, cheaper fast tests run too (coverage by test)
def test_the_same_walks_at_any_worker_count_and_batch_size(monkeypatch, stop_at_first):
    model = TwoPhase(4, commit_guard=False)
    options = SearchOptions(invariants=list(for_family("two-phase").values()),
                            stop_at_first=stop_at_first)
    runs = []
    for workers, batch in ((1, 64), (2, 64), (3, 64), (2, 7)):
        monkeypatch.setattr(simulate_module, "WALKS_A_BATCH", batch)
        runs.append(_figures(simulate(model, options,
                                      SimulationOptions(walks=300, depth=12, seed=5,
                                                        workers=workers))))
    assert all(run == runs[0] for run in runs[1:])
    verdict, distinct, generated, _, walks, _, violations = runs[0]
    assert violations and distinct > 1 and generated > 0
    # stopping at a violation: after the first walk that finds one
    assert (walks < 300) == stop_at_first
    other_seed = simulate(model, options, SimulationOptions(walks=300, depth=12, seed=6))
    assert _figures(other_seed) != runs[0]


def test_kafka_7786_is_found_shortened_and_replays(tmp_path, capsys):
    name, constants, protocol = KAFKA_7786
    argv = ["simulate", name, "--protocol", protocol, *[f"--const={c}" for c in constants],
            "--invariant", "no-fence-stall", "--walks", "2000", "--seed", "1", "--json"]
    outs = []
    for workers in ("1", "2"):
        code = main([*argv, "--workers", workers, "--trace-dir", str(tmp_path / workers)])
        data = json.loads(capsys.readouterr().out)
        assert code == 12 and data["verdict"] == "violated"
        outs.append((data["distinct_states"], data["states_generated"], data["walks"],
                     (tmp_path / workers / "kafka-2.1.0-no-fence-stall.json").read_bytes()))
    assert outs[0] == outs[1]
    model = build_model(name, constants, protocol)
    trace, _ = load_trace(str(tmp_path / "1" / "kafka-2.1.0-no-fence-stall.json"), model)
    assert trace.length <= trace.extra["length_as_walked"]
    # KAFKA-7786's shortest counterexample (README's tour, an exhaustive search) is 9 steps
    assert trace.length == 9
    replayed = replay_trace(model, trace, ["no-fence-stall"])
    assert replayed.outcome == "violated" and replayed.step == trace.length


def test_shortening_drops_loops_and_steps_while_the_violation_persists():
    assert ([s.state for s in _without_loops(0, [Step("a", 1), Step("b", 2), Step("c", 1),
                                                 Step("d", 3)])] == [1, 3])
    assert _without_loops(0, [Step("a", 1), Step("b", 0)]) == []
    model = TwoPhase(3, commit_guard=False)
    options = SearchOptions(invariants=list(for_family("two-phase").values()))
    long = simulate(model, options, SimulationOptions(walks=200, depth=40, seed=3, shorten=False))
    short = simulate(model, options, SimulationOptions(walks=200, depth=40, seed=3))
    assert long.violations and short.violations
    walked, shortened = long.violations[0].trace, short.violations[0].trace
    assert shortened.length <= walked.length == shortened.extra["length_as_walked"]
    assert replay_trace(model, shortened).outcome == "violated"


@pytest.mark.slow  # every line it runs, cheaper fast tests run too (coverage by test)
def test_a_time_budget_ends_the_walks(capsys):
    code = main(["simulate", "two-phase", "--const", "RM=6", "--walks", "10000000", "--depth", "30",
                 "--max-seconds", "1", "--workers", "2", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 20 and data["walks"] < 10_000_000 and data["seconds"] < 10


@pytest.mark.parametrize("argv, named", [
    (["--engine", "spark", "--workers", "2"], "--workers"),  # Spark's cores are the executors'
    (["--master", "local[2]"], "--master"),  # a master without the Spark engine would be ignored
    (["--engine", "flink"], "--engine"),
])
def test_engine_options_that_would_be_ignored_are_refused(capsys, argv, named):
    code = main(["simulate", "two-phase", *argv])
    err = capsys.readouterr().err
    assert code == 64 and len(err.strip().splitlines()) == 1 and named in err, err


class _TasksHere:
    """Spark's ``sc.parallelize(items, n).map(task).collect()`` without a JVM: each task pickled
    as Spark ships it (cloudpickle) and run here, the results in reverse order (as tasks may
    finish)."""

    master, defaultParallelism = "local[2,2]", 2

    def __init__(self, items=None, task=None):
        self.items, self.task = items, task

    @property
    def sparkContext(self):  # noqa: N802 (SparkSession's name)
        return self

    def parallelize(self, items, _slices):
        return _TasksHere(list(items))

    def map(self, task):
        from pyspark import cloudpickle

        # the task this test pickled itself a line above, as Spark ships it: nothing a user hands us
        return _TasksHere(self.items, pickle.loads(cloudpickle.dumps(task)))  # noqa: S301

    def collect(self):
        return [self.task(item) for item in reversed(self.items)]


@pytest.mark.spark
@pytest.mark.parametrize("stop_at_first", [True, False])
def test_the_swarms_waves_on_spark_are_the_walks_of_one_core(monkeypatch, stop_at_first):
    """The fast tier's Spark swarm, with no JVM: the driver's waves (``checker.spark.swarm``) over
    a stand-in for Spark's tasks; the same walks, counts, covered states and counterexample as one
    local core, cut after the first violating batch across waves. On a real ``local[2,2]``
    session: test_spark_runs_the_same_walks_as_one_core (slow, below)."""
    pytest.importorskip("pyspark")
    from checker.spark import swarm

    monkeypatch.setattr(swarm, "check_environment", lambda: None)
    monkeypatch.setattr(swarm, "spark_session", lambda master: (_TasksHere(), False))
    _same_walks_on_spark_as_one_core(monkeypatch, stop_at_first)


@pytest.mark.spark
@pytest.mark.slow  # a JVM; the fast tier runs the driver's waves without one (above)
@pytest.mark.parametrize("stop_at_first", [True, False])
def test_spark_runs_the_same_walks_as_one_core(spark_local, monkeypatch, stop_at_first):
    """The batches on Spark's executors (``checker.spark.swarm``): the same walks, counts, covered
    states and counterexample as one local core; 9 batches of 5 walks make several waves on
    ``local[2,2]`` (4 batches a wave), so cutting after the first violating batch is tested across
    waves."""
    _same_walks_on_spark_as_one_core(monkeypatch, stop_at_first)


def _same_walks_on_spark_as_one_core(monkeypatch, stop_at_first):
    monkeypatch.setattr(simulate_module, "WALKS_A_BATCH", 5)
    model = TwoPhase(4, commit_guard=False)
    options = SearchOptions(invariants=list(for_family("two-phase").values()),
                            stop_at_first=stop_at_first)
    sim = SimulationOptions(walks=45, depth=12, seed=11)
    local = simulate(model, options, sim)
    on_spark = simulate(model, options,
                        SimulationOptions(walks=45, depth=12, seed=11, engine="spark",
                                          master="local[2,2]"))
    assert _figures(on_spark) == _figures(local)
    assert on_spark.extra["swarm"] == "spark" and on_spark.workers == 2
    assert (on_spark.extra["walks"] < 45) == stop_at_first and local.violations


@pytest.mark.spark
@pytest.mark.slow  # every line it runs, cheaper fast tests run too (coverage by test)
def test_spark_swarm_from_the_command_line_finds_kafka_7786(spark_local, tmp_path, capsys):
    name, constants, protocol = KAFKA_7786
    argv = ["simulate", name, "--protocol", protocol, *[f"--const={c}" for c in constants],
            "--invariant", "no-fence-stall", "--walks", "300", "--seed", "1", "--json"]
    outs = []
    for extra in ([], ["--engine", "spark", "--master", "local[2,2]"]):
        code = main([*argv, *extra, "--trace-dir", str(tmp_path / str(len(extra)))])
        data = json.loads(capsys.readouterr().out)
        assert code == 12 and data["verdict"] == "violated"
        outs.append((data["distinct_states"], data["states_generated"], data["walks"],
                     (tmp_path / str(len(extra)) / "kafka-2.1.0-no-fence-stall.json").read_bytes()))
    assert outs[0] == outs[1]


# -- Last Replica Standing on three brokers (the swarm's target in issue 25) -----------------------
#: KIP-966's "last replica standing" with three brokers, acks=all, min.insync.replicas=2: m1 reaches
#: both followers and is acknowledged; the leader appends m2 (so neither follower is caught up,
#: KAFKA-7152) and shrinks the ISR to itself in two AlterPartitions; it shuts down uncleanly and
#: loses its log; the controller fences it but keeps the last ISR member (3.5.0
#: ``PartitionChangeBuilder.build``: an empty target ISR is not written), so the restarted broker is
#: elected from the ISR without m1. Before KAFKA-15021 every ISR shrink bumps the leader epoch
#: (3.5.0 ``PartitionChangeBuilder.triggerLeaderEpochBumpIfNeeded``): the shrinks take epochs 1 and
#: 2, the offline partition 3 and the election 4.
LRS_THREE_BROKERS = ["brokers=3", "acks=-1", "min_isr=2", "unclean_shutdowns=1"]
LRS_STORY = [("Produce", {"leader": 0})] + [
    step for follower in (1, 2) for step in (
        ("SendFetch", {"follower": follower, "leader": 0}),
        ("ServeFetch", {"leader": 0, "follower": follower}),
        ("ReceiveFetch", {"follower": follower, "leader": 0}),
        ("SendFetch", {"follower": follower, "leader": 0}),
        ("ServeFetch", {"leader": 0, "follower": follower}))
] + [("AdvanceHighWatermark", {"leader": 0}), ("Produce", {"leader": 0})] + [
    step for follower in (1, 2) for step in (
        ("ShrinkIsr", {"leader": 0, "follower": follower}),
        ("ProcessAlterPartition", {"leader": 0}), ("DeliverLeaderAndIsr", {"broker": 0}),
        ("ReceiveAlterPartitionResponse", {"leader": 0}))
] + [("UncleanShutdown", {"broker": 0, "keep": 0}), ("FenceBroker", {"broker": 0}),
     ("Restart", {"broker": 0}), ("ElectLeader", {"leader": 0}),
     ("DeliverLeaderAndIsr", {"broker": 0}), ("DeliverLeaderAndIsr", {"broker": 0})]


def _lrs_replay(protocol: str, epochs: int, features: tuple[str, ...] = ()):
    from traces.replay import replay
    from traces.scenario import StepSpec

    model = build_model("kafka", [*LRS_THREE_BROKERS, f"epochs={epochs}"], protocol, list(features))
    invariant = for_family("kafka")["acknowledged-durable"]
    specs = [StepSpec(name, tuple(params.items())) for name, params in LRS_STORY]
    return model, invariant, replay(model, specs, invariants=[invariant])


@pytest.mark.parametrize("epochs, outcome, step, blocked", [
    (2, "blocked", 23, "FenceBroker"),  # the partition going offline would take leader epoch 3
    (3, "blocked", 25, "ElectLeader"),  # electing the restarted broker would take leader epoch 4
    (4, "violated", 27, None),
])
def test_last_replica_standing_on_three_brokers_takes_four_leader_epochs_on_kraft_3_5(
    epochs, outcome, step, blocked):
    """At the default epochs=2 (and at 3) the story is cut by the leader-epoch bound, which is why
    no walk at those bounds finds it; at epochs=4 it loses the acknowledged m1 at step 27."""
    _model, _invariant, result = _lrs_replay("kraft-3.5", epochs)
    assert (result.outcome, result.step) == (outcome, step)
    if blocked:
        assert result.action.name == blocked
    else:
        assert result.invariant.name == "acknowledged-durable"


def test_last_replica_standing_on_three_brokers_is_shortened_to_25_steps_that_replay():
    """``shorten`` drops the two deliveries of the shrinks' LeaderAndIsr that the story does not
    need (the leader learns the new ISR and epoch from the AlterPartition response); every other
    step is needed."""
    model, invariant, walked = _lrs_replay("kraft-3.5", 4)
    short = simulate_module.shorten(model, walked.trace, invariant)
    assert (walked.trace.length, short.length) == (27, 25)
    names = [step.action.name for step in short.steps]
    assert names.count("ShrinkIsr") == 2 and names.count("UncleanShutdown") == 1
    assert names[-5:-2] == ["FenceBroker", "Restart", "ElectLeader"]
    replayed = replay_trace(model, short, ["acknowledged-durable"])
    assert replayed.outcome == "violated" and replayed.step == 25


def test_last_replica_standing_on_three_brokers_is_stopped_by_eligible_leader_replicas_on_kraft_4_1():  # noqa: E501
    """kraft-4.1 (KIP-966): the shrinks keep the leader epoch (KAFKA-15021), each puts the removed
    follower, which has m1, in the ELR (``PartitionChangeBuilder.maybePopulateTargetElr``); fencing
    the leader empties the ISR and elects an ELR member (``isValidNewLeader``), so the restarted
    broker, in neither the ISR nor the ELR, is not elected."""
    _model, _invariant, result = _lrs_replay("kraft-4.1", 4)
    assert (result.outcome, result.step, result.action.name) == ("blocked", 25, "ElectLeader")
    fence = result.trace.steps[22]
    assert fence.action.name == "FenceBroker" and fence.action.param("leader") in (1, 2)
    controller = fence.state.controller
    assert controller.isr == (fence.action.param("leader"),) and controller.epoch == 1
    # without the ELR the fence keeps the last member and the story loses m1, in two leader epochs
    # (no shrink bumps one)
    _model, _invariant, without = _lrs_replay("kraft-4.1", 2, ("kip-966-elr=off",))
    assert ((without.outcome, without.step, without.invariant.name)
            == ("violated", 27, "acknowledged-durable"))
