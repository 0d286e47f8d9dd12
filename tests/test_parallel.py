"""The multi-process engine gives exactly the single-process engine's counts, parent log and
shortest counterexamples (same trace, step by step), and honours budgets, Ctrl-C and checkpoints."""

import os

import numpy as np
import pytest

from checker import bfs, engines, parallel
from checker.result import Verdict
from checker.search import RecordParentLog, SearchOptions
from invariants.registry import for_family
from spec.registry import build_model
from spec.two_phase import TwoPhase
from tests.test_engine import Grid

INVARIANTS = list(for_family("two-phase").values())


def _same(a, b):
    assert (a.verdict, a.distinct_states, a.states_generated, a.depth) == (
        b.verdict, b.distinct_states, b.states_generated, b.depth)
    assert ([(v.invariant, v.length) for v in a.violations]
            == [(v.invariant, v.length) for v in b.violations])
    for va, vb in zip(a.violations, b.violations, strict=True):
        assert va.trace.initial == vb.trace.initial
        assert ([(s.action, s.state) for s in va.trace.steps]
                == [(s.action, s.state) for s in vb.trace.steps])


# RM=6: about 1 s a worker count
@pytest.mark.parametrize("rm", [3, 4, 5, pytest.param(6, marks=pytest.mark.slow)])
@pytest.mark.parametrize("workers", [2, 3])
@pytest.mark.slow  # every line it runs, cheaper fast tests run too (coverage by test)
def test_two_phase_counts_match(rm, workers):
    options = SearchOptions(invariants=INVARIANTS)
    single = bfs.check(TwoPhase(rm), options)
    multi = parallel.check(TwoPhase(rm), options, workers)
    assert multi.engine == "parallel" and multi.workers == workers
    _same(single, multi)


@pytest.mark.parametrize("stop_at_first", [True, False])
def test_seeded_bug_same_shortest_trace(stop_at_first):
    model = TwoPhase(5, commit_guard=False)
    options = SearchOptions(invariants=INVARIANTS, stop_at_first=stop_at_first)
    single = bfs.check(model, options)
    multi = parallel.check(model, options, 2)
    assert multi.verdict is Verdict.VIOLATED
    _same(single, multi)


@pytest.mark.slow  # every line it runs, cheaper fast tests run too (coverage by test)
def test_parent_log_is_identical():
    """Not only the counts: every state gets the same global index, parent and action."""
    model = TwoPhase(5)
    single, multi = RecordParentLog(), RecordParentLog()
    bfs.LocalBFS(model, SearchOptions(observer=single)).run()
    parallel.ParallelBFS(model, SearchOptions(observer=multi), 2).run()
    (fa, pa, aa), (fb, pb, ab) = single.log, multi.log
    assert fa == fb and pa == pb
    names_a = [single.actions[i] if i >= 0 else None for i in aa]
    names_b = [multi.actions[i] if i >= 0 else None for i in ab]
    assert names_a == names_b


def test_deadlock_and_bounds_match():
    for options in (SearchOptions(check_deadlock=True), SearchOptions()):
        _same(bfs.check(Grid(12), options), parallel.check(Grid(12), options, 2))
    _same(bfs.check(Grid(20, bound=15)), parallel.check(Grid(20, bound=15), SearchOptions(), 2))


def _kafka_protocols():
    from spec.registry import all_models

    protocols = list(all_models()["kafka"].protocols)
    # the oldest and the newest version the model has; the newest (KRaft, about 2.5 s) in the whole
    # suite only
    return [protocols[0], pytest.param(protocols[-1], marks=pytest.mark.slow)]


@pytest.mark.parametrize("protocol", _kafka_protocols())
@pytest.mark.slow  # every line it runs, cheaper fast tests run too (coverage by test)
def test_kafka_counts_match(protocol):
    model = build_model("kafka", ["records=1", "epochs=1"], protocol)
    # a depth bound keeps the test short whatever the model's current bounds are (the space is
    # about 30 levels deep at these constants); both engines stop at the same level
    options = SearchOptions(invariants=list(for_family("kafka").values()), stop_at_first=False,
                            max_depth=40)
    _same(bfs.check(model, options), parallel.check(model, options, 2))


@pytest.mark.slow  # every line it runs, cheaper fast tests run too (coverage by test)
def test_budget_checkpoint_and_resume(tmp_path):
    path = str(tmp_path / "run.ckpt")
    full = bfs.check(TwoPhase(5), SearchOptions(invariants=INVARIANTS))
    part = parallel.check(TwoPhase(5), SearchOptions(invariants=INVARIANTS, max_states=2000,
                                                     checkpoint_path=path), 2)
    assert part.verdict is Verdict.UNDETERMINED and part.checkpoint_file == path
    # a parallel checkpoint resumes on either engine to the same final counts
    for resume in (bfs.check, lambda m, o: parallel.check(m, o, 2)):
        resumed = resume(TwoPhase(5), SearchOptions(invariants=INVARIANTS, resume_from=path))
        assert (resumed.verdict, resumed.distinct_states, resumed.states_generated,
                resumed.depth) == (
            Verdict.HOLDS, full.distinct_states, full.states_generated, full.depth)


def test_interrupt_writes_a_checkpoint(tmp_path):
    path = str(tmp_path / "run.ckpt")
    model = TwoPhase(4, commit_guard=False)
    options = SearchOptions(invariants=INVARIANTS, stop_at_first=False)
    full = bfs.check(model, options)

    def interrupt(progress):
        if progress.depth == 4:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        parallel.check(model, SearchOptions(invariants=INVARIANTS, stop_at_first=False,
                                            checkpoint_path=path, progress=interrupt), 2)
    resumed = parallel.check(model, SearchOptions(invariants=INVARIANTS, stop_at_first=False,
                                                  resume_from=path), 2)
    _same(full, resumed)


def test_time_budget_is_undetermined():
    result = parallel.check(Grid(400), SearchOptions(max_seconds=0.05), 2)
    assert result.verdict is Verdict.UNDETERMINED and result.reason


def test_workers_option_without_an_engine_is_the_parallel_engine():
    """``kmc check --workers N`` (N > 1) without --engine runs the parallel engine with N workers;
    --workers 1 the local one; the local engine itself takes no option
    (``--engine local --workers 2`` is refused: tests/test_cli_habits)."""
    from kmc.cli import build_parser
    from kmc.options import chosen_engine

    parser = build_parser()
    assert chosen_engine(parser.parse_args(["check", "two-phase", "--workers", "2"])) == (
        "parallel", parallel.ParallelOptions(workers=2))
    assert (chosen_engine(parser.parse_args(["check", "two-phase", "--workers", "1"]))
            == ("local", bfs.LocalOptions()))
    assert chosen_engine(parser.parse_args(["check", "two-phase"])) == ("local", bfs.LocalOptions())
    # the local engine's former name, still accepted on the command line (the tutorials used it)
    assert (chosen_engine(parser.parse_args(["check", "two-phase", "--engine", "bfs"]))
            == ("local", bfs.LocalOptions()))
    result = engines.run(TwoPhase(3), SearchOptions(invariants=INVARIANTS), "parallel",
                         parallel.ParallelOptions(workers=2))
    assert result.engine == "parallel" and result.workers == 2 and result.distinct_states == 288


@pytest.mark.parametrize("workers", [1, 4])
@pytest.mark.slow  # every line it runs, cheaper fast tests run too (coverage by test)
def test_any_worker_count_gives_the_same_parent_log(workers):
    """One worker (the sharded engine alone) and more workers than cores: same log as bfs."""
    model = TwoPhase(4, commit_guard=False)
    options = SearchOptions(invariants=INVARIANTS, stop_at_first=False)
    single = bfs.check(model, options)
    multi = parallel.ParallelBFS(model, options, workers).run()
    assert multi.workers == workers
    _same(single, multi)


@pytest.mark.slow  # every line it runs, cheaper fast tests run too (coverage by test)
def test_serial_share_is_measured_and_gives_amdahl_predictions():
    result = parallel.check(TwoPhase(5), SearchOptions(invariants=INVARIANTS), 2)
    share = result.extra["serial_share"]
    assert 0.0 < share < 1.0
    assert len(result.extra["worker_cpu_seconds"]) == 2
    predicted = result.extra["amdahl_speedup"]
    assert predicted["16"] == round(parallel.amdahl_speedup(share, 16), 2)
    assert 1.0 < predicted["2"] <= predicted["16"] <= predicted["64"] <= 64



@pytest.mark.slow  # every line it runs, cheaper fast tests run too (coverage by test)
def test_rounds_are_timed_per_worker():
    """Where a level's wall time went: every round's wall time, each worker's CPU time in it (no
    more than the worker's whole CPU time) and what the worker spent idle at the rounds' ends."""
    result = parallel.check(TwoPhase(6), SearchOptions(invariants=INVARIANTS), 2)
    walls = result.extra["round_wall_seconds"]
    rounds = result.extra["worker_round_cpu_seconds"]
    assert set(walls) == {"expand", "dedup", "commit", "check", "rebalance"}
    assert set(rounds) == {"expand", "dedup", "commit", "check"}
    assert all(walls[name] > 0 for name in rounds)
    for w, total in enumerate(result.extra["worker_cpu_seconds"]):
        in_rounds = sum(rounds[name][w] for name in rounds)
        assert 0 < in_rounds <= total
        idle = result.extra["worker_idle_seconds"][w]
        assert (idle
                == pytest.approx(sum(max(0.0, walls[name] - rounds[name][w]) for name in rounds),
                                 abs=0.01))
    assert len(result.extra["worker_system_cpu_seconds"]) == 2

def test_amdahl_law():
    assert parallel.amdahl_speedup(0.0, 16) == 16
    assert parallel.amdahl_speedup(1.0, 16) == 1
    assert round(parallel.amdahl_speedup(0.05, 16), 2) == 9.14


def test_fingerprint_owners_spread_evenly():
    # regular fingerprints, the worst case for a modulo
    fps = np.arange(0, 40_000 * 7919, 7919, dtype=np.int64)
    for workers in (2, 3, 16):
        counts = np.bincount(parallel.owner_of(fps, workers), minlength=workers)
        assert counts.min() > 0.9 * fps.size / workers


@pytest.mark.slow  # every line it runs, cheaper fast tests run too (coverage by test)
def test_auto_workers_use_the_cores_there_are(monkeypatch):
    monkeypatch.setattr(parallel, "available_cores", lambda: 3)
    assert parallel.resolve_workers(0) == 3 and parallel.resolve_workers(2) == 2
    result = engines.run(TwoPhase(3), SearchOptions(invariants=INVARIANTS), "parallel",
                         parallel.ParallelOptions())
    assert result.engine == "parallel" and result.workers == 3 and result.distinct_states == 288


def test_engines_import_no_circle():
    """bfs and checkpoint never import the parallel engine; checkpoint does not import bfs."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[1] / "checker"

    def imported(name):
        tree = ast.parse((root / f"{name}.py").read_text())
        found = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                found.add(node.module)
                found.update(f"{node.module}.{alias.name}" for alias in node.names)
            elif isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
        return found

    assert not {"checker.parallel", "checker.bfs"} & imported("checkpoint")
    assert "checker.parallel" not in imported("bfs")


def test_command_line_workers_auto_and_bad_value(capsys, monkeypatch):
    from kmc import cli
    from kmc.cli import main

    monkeypatch.setattr(cli.os, "cpu_count", lambda: 2)
    assert (main(["check", "two-phase", "--const", "RM=3", "--workers", "auto", "--kernel", "off"])
            == 0)
    out = capsys.readouterr().out
    assert "engine parallel" in out and "Serial share" in out and "16 cores" in out
    assert main(["check", "two-phase", "--workers", "many"]) == 64
    assert "positive integer or auto" in capsys.readouterr().err


def test_parent_log_gathered_to_disk_past_half_the_budget(monkeypatch):
    model = TwoPhase(4, commit_guard=False)
    seen, seen_single = RecordParentLog(), RecordParentLog()
    monkeypatch.setattr(parallel, "SPILL_AT", 0.0)
    multi = parallel.ParallelBFS(model, SearchOptions(invariants=INVARIANTS, stop_at_first=False,
                                                      observer=seen), 2).run()
    single = bfs.LocalBFS(model, SearchOptions(invariants=INVARIANTS, stop_at_first=False,
                                               observer=seen_single)).run()
    _same(single, multi)
    assert seen.spilled and seen.log == seen_single.log


def test_states_moved_between_workers_go_through_the_model_codec_not_pickle(tmp_path):
    """Rebalancing moves states through a file: it holds the model's compact msgpack encoding (data
    only) and reads back equal, with the model's classes; a pickle in its place is refused, not
    executed."""
    import types

    from checker.frontier import state_codec
    from checker.parallel import _Worker
    from spec.errors import KmcError

    model = build_model("kafka", ["records=1", "epochs=1"], "3.9.1")
    states = list(model.init_states())
    for _, succ in model.successors(states[0]):
        states.append(succ)
    pack, unpack = state_codec(model)
    worker = types.SimpleNamespace(pack=pack, unpack=unpack)
    path = str(tmp_path / "move-0")
    _Worker._move(worker, states, path)
    back = _Worker._load(worker, path)
    assert back == states
    assert ([type(m) for s in back for m in s.network]
            == [type(m) for s in states for m in s.network])
    import pickle

    with open(path, "wb") as f:
        f.write(pickle.dumps(states))
    with pytest.raises((KmcError, ValueError, TypeError)):
        _Worker._load(worker, path)


@pytest.mark.parametrize("workers", [2, 3])
@pytest.mark.slow  # every line it runs, cheaper fast tests run too (coverage by test)
def test_parts_moved_between_workers_every_level_change_nothing(monkeypatch, workers):
    """Rebalancing cuts a worker's part at either end and puts the states before or after its
    neighbour's. Forced at every level on a Kafka configuration with counterexamples: the same
    counts, parent log and traces as the single-process engine."""
    monkeypatch.setattr(parallel, "_REBALANCE_MIN", 1)
    monkeypatch.setattr(parallel, "_REBALANCE_SLACK", 0.0)
    moves = []
    original_call = parallel.ParallelBFS._call

    def call(self, w, message):
        if message[0] in ("take_tail", "take_head", "prepend", "append"):
            moves.append(message[0])
        return original_call(self, w, message)

    monkeypatch.setattr(parallel.ParallelBFS, "_call", call)
    model = build_model("kafka", ["records=1", "epochs=2", "crashes=1"], "0.10.2")
    options = SearchOptions(invariants=list(for_family("kafka").values()), stop_at_first=False)
    single = bfs.check(model, options)
    multi = parallel.ParallelBFS(model, options, workers).run()
    assert single.violations, "a configuration with counterexamples, so that traces are compared"
    assert {"take_tail", "prepend"} <= set(moves) or {"take_head", "append"} <= set(moves)
    _same(single, multi)


@pytest.mark.slow  # every line it runs, cheaper fast tests run too (coverage by test)
def test_invariants_checked_in_small_blocks_find_the_same_first_violations(monkeypatch):
    """A worker checks its part a block at a time: with blocks of 3 states the first violation of an
    invariant sits past the first block, and its global index (so the trace) must still be the
    single-process engine's."""
    monkeypatch.setattr(parallel, "_CHECK_BLOCK", 3)
    model = build_model("kafka", ["records=1", "epochs=2", "crashes=1"], "0.10.2")
    options = SearchOptions(invariants=list(for_family("kafka").values()), stop_at_first=False)
    single = bfs.check(model, options)
    assert single.violations, "a configuration with counterexamples, so that traces are compared"
    _same(single, parallel.ParallelBFS(model, options, 2).run())


def test_the_memory_budget_counts_the_pages_workers_share_with_the_parent_once():
    """The budget is held against the processes' proportional set sizes: a page the parent and a
    forked worker share counts once over the two (the sum of the resident sets counted it in each,
    so two workers were charged the interpreter and the model three times)."""
    import multiprocessing

    from checker.parallel import _rss_mb_of

    # 64 MB the child shares with this process (touched: resident in both)
    ballast = bytearray(64 * 2**20)
    ballast[::4096] = b"x" * len(ballast[::4096])
    ctx = multiprocessing.get_context("fork")
    ready, hold = ctx.Event(), ctx.Event()

    def child():
        ready.set()
        hold.wait(30)

    proc = ctx.Process(target=child, daemon=True)
    proc.start()
    try:
        assert ready.wait(30)
        pids = [os.getpid(), proc.pid]
        page = os.sysconf("SC_PAGE_SIZE")
        resident = 0
        for pid in pids:
            with open(f"/proc/{pid}/statm") as f:
                resident += int(f.read().split()[1]) * page / 2**20
        together = _rss_mb_of(pids)
        if not os.path.exists(f"/proc/{proc.pid}/smaps_rollup"):
            pytest.skip("no smaps_rollup: the resident sets are summed")
        # the shared 64 MB (and the interpreter) counted once, not twice
        assert resident - together > 50
        assert together > 64  # ... but counted
    finally:
        hold.set()
        proc.join(10)
    del ballast
