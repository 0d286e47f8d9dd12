"""TLC's habits on kmc's command line: --version, python -m kmc, shell completion, --workers
auto, the deadlock check on by default (-deadlock turns it off), the fingerprint collision
estimates, --coverage, out-degree, liveness time in "Finished in", simulate's rate, exit 66 for a
missing input."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from checker import engines
from checker.invariant import LIVENESS, Invariant
from checker.kernel import compiler as kernel_compiler
from checker.result import collision_estimates
from checker.search import SearchOptions
from kmc import cli, options
from kmc.cli import main
from spec.registry import build_model
from tests import toy_matrix

ROOT = Path(__file__).resolve().parent.parent
TOY = toy_matrix.NAME


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def reachable(model) -> tuple[set, int, list[int]]:
    """States, states generated and out-degrees by a plain breadth-first search (the test's own)."""
    inits = list(model.init_states())
    seen, frontier, generated, degrees = set(inits), list(inits), len(inits), []
    while frontier:
        nxt = []
        for state in frontier:
            succs = list(model.successors(state))
            degrees.append(len(succs))
            generated += len(succs)
            for _, succ in succs:
                if succ not in seen:
                    seen.add(succ)
                    nxt.append(succ)
        frontier = nxt
    return seen, generated, degrees


def test_version(capsys):
    code, out, err = run(capsys, "--version")
    assert (code == 0 and out.strip().startswith("kmc ") and out.strip().split()[1][0].isdigit()
            and err == "")


def test_python_dash_m_kmc_is_the_same_command():
    done = subprocess.run([sys.executable, "-m", "kmc", "--version"], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.startswith("kmc ")


def test_usage_errors_have_one_prefix(capsys):
    code, _, err = run(capsys, "--bogus")
    assert code == 64 and one_line(err).count("kmc:") == 1
    code, _, err = run(capsys, "check", "two-phase", "--workers", "many")
    assert code == 64 and "positive integer or auto" in one_line(err)


@pytest.mark.parametrize("shell", ["bash", "zsh"])
def test_completion_scripts(capsys, shell):
    pytest.importorskip("shtab")
    code, out, _ = run(capsys, "completion", shell)
    assert code == 0
    for word in ("check", "matrix", "simulate", "--coverage", "--property", "--expect"):
        assert word in out, word


def test_workers_auto_is_one_a_core(capsys, monkeypatch):
    """auto counts the cores this process may run on (its CPU affinity: a container or taskset may
    allow fewer than the machine has), not os.cpu_count()."""
    parser = cli.build_parser()
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 3, 5}, raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 64)
    for command in (["check", "two-phase"], ["matrix", "two-phase"], ["simulate", "two-phase"]):
        parsed = parser.parse_args([*command, "--workers", "auto"])
        assert parsed.workers == 3, command
    from kmc.matrix.command import matrix_workers

    # not given: auto, resolved by the command
    assert parser.parse_args(["matrix", "two-phase"]).workers is None
    assert matrix_workers(None) == 3 and matrix_workers(1) == 1  # the matrix's default is auto
    monkeypatch.undo()
    counts = []
    for workers in ("auto", "1"):
        code, out, _ = run(capsys, "check", "two-phase", "--const", "RM=4", "--workers", workers,
                           "--json")
        data = json.loads(out)
        counts.append((code, data["distinct_states"], data["states_generated"], data["depth"]))
    assert counts[0] == counts[1] and counts[0][:2] == (0, 1568)


def test_a_worker_count_above_the_cores_is_capped_with_one_warning_line(capsys, monkeypatch):
    """``kmc check two-phase --const RM=3 --workers 1000`` on two cores forked 1,000 processes and
    drove the load past 500: a count above the cores this process may use runs on that many, with
    one line saying so, on every subcommand that takes --workers; a count within them is taken as
    given, silently."""
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    parser = cli.build_parser()
    warning = ("kmc: warning: --workers 1000 is more than the 2 cores this process may use; "
               "running 2")
    for command in (["check", "two-phase"], ["matrix", "two-phase"], ["simulate", "two-phase"]):
        assert parser.parse_args([*command, "--workers", "1000"]).workers == 2, command
        assert capsys.readouterr().err.splitlines() == [warning], command
        assert (parser.parse_args([*command, "--workers", "2"]).workers == 2
                and capsys.readouterr().err == "")
    code, out, err = run(capsys, "check", "two-phase", "--const", "RM=3", "--workers", "1000",
                         "--json", "--kernel", "off")
    data = json.loads(out)
    assert ((code, data["engine"], data["workers"], data["distinct_states"])
            == (0, "parallel", 2, 288))
    assert one_line(err) == warning


# -- deadlock, as TLC ------------------------------------------------------------------------------
def test_deadlock_is_checked_by_default_and_minus_deadlock_turns_it_off(capsys, tmp_path):
    # the toy model stops when both counters reach N: a deadlock
    base = ["check", TOY, "--invariant", "bounded", "--json", "--trace-dir", tmp_path]
    code, out, _ = run(capsys, *base)
    data = json.loads(out)
    assert code == 11 and data["violations"][0]["kind"] == "deadlock"
    for off in ("-deadlock", "--no-deadlock"):
        code, out, _ = run(capsys, *base, off)
        assert code == 0 and json.loads(out)["verdict"] == "holds"
    code, out, err = run(capsys, *base, "--deadlock")  # explicit: checks
    assert code == 11
    code, _, err = run(capsys, *base, "--deadlock", "-deadlock")
    assert code == 64 and "contradict" in one_line(err)


# -- statistics after every check ------------------------------------------------------------------
def test_collision_estimates_are_tlcs(capsys):
    # the readable path's fingerprints (the compiled kernel stores whole states: below)
    code, out, _ = run(capsys, "check", "two-phase", "--const", "RM=3", "--json", "--kernel", "off")
    data = json.loads(out)
    n, g = data["distinct_states"], data["states_generated"]
    assert data["fingerprint_collision"]["optimistic"] == pytest.approx(n * (g - n) / 2**64)
    states, generated, _ = reachable(build_model("two-phase", ["RM=3"]))
    assert (len(states), generated) == (n, g)
    fps = np.sort(np.array([hash(s) for s in states], dtype=np.int64))
    smallest = min(int(b) - int(a) for a, b in zip(fps[:-1].tolist(), fps[1:].tolist(),
                                                   strict=True))
    assert data["fingerprint_collision"]["observed"] == pytest.approx(1 / smallest)
    code, out, _ = run(capsys, "check", "two-phase", "--const", "RM=3", "--kernel", "off")
    assert ("calculated (optimistic):  val = " in out and "based on the actual fingerprints:  val "
                                                          "= " in out)
    # the kernel keeps 64-bit fingerprints of its own (km_hash): both estimates
    if shutil.which(kernel_compiler()):
        code, out, _ = run(capsys, "check", "two-phase", "--const", "RM=3", "--kernel", "on")
        assert ("calculated (optimistic):  val = " in out and "based on the actual fingerprints:  "
                                                              "val = " in out)
        code, out, _ = run(capsys, "check", "two-phase", "--const", "RM=3", "--kernel", "on",
                           "--json")
        estimates = json.loads(out)["fingerprint_collision"]
        assert estimates["optimistic"] == pytest.approx(n * (g - n) / 2**64)
        assert 0 < estimates["observed"] < 1e-6
    # the parallel engine keeps no fingerprint set in one place: the optimistic estimate only
    code, out, _ = run(capsys, "check", "two-phase", "--const", "RM=3", "--workers", "2", "--json",
                       "--kernel", "off")
    data = json.loads(out)
    assert (data["fingerprint_collision"] == {"optimistic": pytest.approx(n * (g - n) / 2**64),
                                              "observed": None})


def test_collision_estimate_handles_the_whole_signed_range():
    fps = np.array([-(2**63) + 1, -5, 7, 2**63 - 1], dtype=np.int64)
    assert collision_estimates(4, 10, fps).observed == pytest.approx(1 / 12)
    assert collision_estimates(1, 1, fps[:1]).observed is None
    assert collision_estimates(10, 4).optimistic == 0.0


def test_out_degree(capsys):
    code, out, _ = run(capsys, "check", "two-phase", "--const", "RM=3", "--json")
    degree = json.loads(out)["out_degree"]
    _, _, degrees = reachable(build_model("two-phase", ["RM=3"]))
    assert (degree["minimum"], degree["maximum"]) == (min(degrees), max(degrees))
    assert degree["mean"] == pytest.approx(sum(degrees) / len(degrees), abs=1e-3)
    p95 = sorted(degrees)[math.ceil(0.95 * len(degrees)) - 1]
    assert degree["percentile_95"] == p95
    code, out, _ = run(capsys, "check", "two-phase", "--const", "RM=3")
    assert (f"(minimum is {min(degrees)}, the maximum {max(degrees)} and the 95th percentile is "
            f"{p95})" in out)


@pytest.mark.parametrize("argv, model", [
    (["two-phase", "--const", "RM=3"], build_model("two-phase", ["RM=3"])),
    (["two-phase", "--const", "RM=4", "--continue"], build_model("two-phase", ["RM=4"])),
    ([TOY, "--protocol", "v2", "--invariant", "bounded"], build_model(TOY, [], "v2")),
])
def test_coverage_counts_sum_to_states_generated_minus_initial_states(capsys, argv, model):
    code, out, _ = run(capsys, "check", *argv, "--coverage", "--json", "-deadlock")
    data = json.loads(out)
    assert code == 0
    assert (sum(item["count"] for item in data["coverage"]) == data["states_generated"]
            - len(model.init_states()))
    assert all(item["count"] > 0 for item in data["coverage"])
    if argv[0] == TOY:  # v2 never increments y, so never resets either
        assert data["never_fired"] == ["IncY", "Reset"]
        assert [item["action"] for item in data["coverage"]] == ["IncX"]
    else:  # TMCommit, TMAbort and five actions per resource manager, all fired
        assert data["never_fired"] == [] and len(data["coverage"]) == 2 + 5 * model.rm
    code, out, _ = run(capsys, "check", *argv, "--coverage", "-deadlock")
    assert ("Coverage: successors generated by each action" in out and "Actions that never fired:"
            in out)


def test_coverage_refuses_other_engines(capsys):
    code, _, err = run(capsys, "check", "two-phase", "--coverage", "--workers", "2")
    assert code == 64 and "--coverage" in one_line(err)


def test_liveness_time_is_in_finished_in(monkeypatch):
    def slow_liveness(model, options, result, properties):
        time.sleep(0.3)
        return result

    monkeypatch.setattr(engines, "add_liveness", slow_liveness)
    prop = Invariant("eventually", "a liveness property", None, kind=LIVENESS)
    model = build_model("two-phase", ["RM=2"])
    result = cli.run_search(model, SearchOptions(invariants=[prop]), "local", None)
    assert result.seconds >= 0.3


def test_simulate_reports_states_generated_per_second(capsys):
    code, out, _ = run(capsys, "simulate", "two-phase", "--walks", "50")
    assert code == 20
    finished = next(line for line in out.splitlines() if line.startswith("Finished in"))
    assert "states generated/s" in finished and "distinct states/s" not in finished


# -- missing inputs: 66 ----------------------------------------------------------------------------
def test_missing_inputs_exit_66(capsys, tmp_path):
    for argv in (["check", "two-phase", "--resume", tmp_path / "nope.ckpt"],
                 ["matrix", TOY, "--quiet", "--expect", tmp_path / "nope.json"],
                 ["check", "two-phase", "--property", f"{tmp_path / 'nope.py'}:f"]):
        code, _, err = run(capsys, *argv)
        assert code == 66, argv
        assert one_line(err).startswith("kmc: error:")


def test_check_writes_progress_lines_when_stderr_is_not_a_terminal(capsys, monkeypatch):
    monkeypatch.setattr(cli, "PROGRESS_LINE_EVERY", 0.0)
    code, _, err = run(capsys, "check", "two-phase", "--const", "RM=3")
    assert code == 0 and "Progress(" in err and "distinct states found" in err
    code, _, err = run(capsys, "check", "two-phase", "--const", "RM=3", "--quiet")
    assert err == ""


@pytest.mark.slow  # every line it runs, cheaper fast tests run too (coverage by test)
def test_a_model_whose_bounds_end_in_idle_states_checks_deadlock_only_when_asked(capsys):
    """The Kafka model's bounded runs end in states with nothing left to do (every record produced,
    a broker down past the crash bound): deadlock is not checked unless --deadlock."""
    base = ["check", "kafka", "--protocol", "3.9.1", "--const", "records=0", "--const", "epochs=0",
            "--json"]
    code, out, _ = run(capsys, *base)
    assert code == 0 and json.loads(out)["verdict"] == "holds"
    code, out, _ = run(capsys, *base, "--deadlock")
    assert code == 11 and json.loads(out)["violations"][0]["kind"] == "deadlock"


@pytest.mark.parametrize("argv", [
    ["check", "two-phase", "--master", "local[2]"],
    ["check", "two-phase", "--spark-threshold", "5"],
    ["check", "two-phase", "--engine", "parallel", "--spark-transport", "blocks"],
    ["check", "two-phase", "--engine", "spark", "--workers", "2"],
    ["matrix", "two-phase", "--master", "local[2]"],
    ["matrix", "two-phase", "--engine", "spark", "--workers", "2"],
    ["check", "two-phase", "--engine", "local", "--workers", "2"],
    ["check", "two-phase", "--engine", "parallel", "--master", "local[2]"],
    ["matrix", "two-phase", "--engine", "parallel", "--spark-threshold", "5"],
])
def test_an_option_the_engine_would_ignore_is_refused(capsys, argv):
    """--workers means nothing to Spark, --master and the --spark-* options nothing to the local
    engines: one line naming the option and exit 64, not a run that silently ignores it."""
    code, out, err = run(capsys, *argv, "--quiet")
    assert code == 64 and out == ""
    flag = next(word for word in argv if word in options.engine_flag_dests())
    engine = argv[argv.index("--engine") + 1] if "--engine" in argv else "local"
    assert len(err.strip().splitlines()) == 1 and flag in err and f"--engine {engine}" in err


def test_each_engine_takes_its_own_options_type():
    """The registry maps a name to an engine whose options type is its own; another engine's options
    are a programming error, not a silent run with defaults."""
    from checker.parallel import ParallelOptions

    assert [e.options_type.__name__
            for e in engines.ENGINES.values()] == ["LocalOptions", "ParallelOptions",
                                                   "SparkOptions",
                                                  "DirectedOptions"]
    assert engines.get_engine("spark").flag_fields() == {"--master": "master",
                                                         "--spark-threshold": "threshold",
                                                         "--spark-driver-below": "driver_below",
                                                   "--spark-transport": "transport"}
    with pytest.raises(TypeError, match="engine local takes LocalOptions, not ParallelOptions"):
        engines.run(build_model("two-phase", []), SearchOptions(), "local",
                    ParallelOptions(workers=2))
