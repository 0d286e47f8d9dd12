"""The compiled kernels and the readable models are one model (``checker.kernel``).

State for state: on reachable states of small configurations, the kernel's (action, successor) list
equals the readable model's (the same multiset, and the same order, which traces are replayed in),
its invariant verdicts equal the readable invariants', and packing is exact. Search for search: the
same distinct states, states generated, depth, verdict, out-degrees and counterexamples (the
kernel's replayed on the readable model). A kernel compiled with one rule changed
(``-DKM_MUTANT=1``) fails the state-for-state check. Without a C compiler the kernel tests skip
(saying so), and the command line gives the same answers on the readable model.
"""

from __future__ import annotations

import json
import random
import shutil
from collections import Counter

import pytest

from checker import kernel as km
from checker.engines import run
from checker.search import SearchOptions
from invariants.registry import for_family
from kmc.cli import main
from spec.registry import build_model

needs_cc = pytest.mark.skipif(shutil.which(km.compiler()) is None,
                              reason=f"no C compiler ({km.compiler()!r} is not on the PATH): the "
                                     "kernel cannot be built")

TLA_SMALL = {"Replicas": 2, "LogSize": 2, "MaxRecords": 2, "MaxLeaderEpoch": 2}
#: (model, constants) checked state for state: every reachable state, or a sample of them
CONFIGS = [
    ("two-phase", {"RM": 3}),
    ("two-phase", {"RM": 4, "commit_guard": False}),
    ("tla:Kip101", TLA_SMALL),
    ("tla:Kip279", TLA_SMALL),
    ("tla:Kip320", TLA_SMALL),
    ("tla:Kip320", {"Replicas": 3, "LogSize": 2, "MaxRecords": 2, "MaxLeaderEpoch": 1}),
    ("tla:Kip279", {"Replicas": 2, "LogSize": 3, "MaxRecords": 3, "MaxLeaderEpoch": 2}),
]
SAMPLE = 1000


def model_of(name: str, constants: dict) -> object:
    return build_model(name, [f"{k}={v}" for k, v in constants.items()])


def reachable(model, limit: int = 8_000) -> list:
    """The reachable states of ``model`` in breadth-first order (the first ``limit``)."""
    seen = dict.fromkeys(model.init_states())
    order = list(seen)
    for state in order:
        if len(order) >= limit:
            break
        for _, succ in model.successors(state):
            if succ not in seen:
                seen[succ] = None
                order.append(succ)
    return order


def sample(model) -> list:
    states = reachable(model)
    return states if len(states) <= SAMPLE else random.Random(35).sample(states, SAMPLE)


def disagreements(model, kernel: km.Kernel, states: list) -> list[str]:
    """Where the kernel and the readable model differ on ``states`` (empty: they are one model
    there)."""
    invariants = [inv for inv in for_family(model.family).values()
                  if inv.name in kernel.spec.invariants]
    problems = []
    for state in states:
        readable = list(model.successors(state))
        compiled = kernel.successors(state)
        if Counter(readable) != Counter(compiled):
            problems.append(f"successors of {state}: readable "
                            f"{Counter(readable) - Counter(compiled)}, kernel "
                            f"{Counter(compiled) - Counter(readable)}")
        elif readable != compiled:
            problems.append(f"successors of {state} in another order")
        violated = {inv.name for inv in invariants if not inv.holds(state)}
        if kernel.violated(state) != violated:
            problems.append(f"invariants of {state}: readable {violated}, kernel "
                            f"{kernel.violated(state)}")
        if model.has_symmetry and kernel.canonical(state) != model.canonical(state):
            problems.append(f"canonical form of {state}")
    return problems


@needs_cc
@pytest.mark.parametrize(("name", "constants"), CONFIGS, ids=lambda c: c if isinstance(c, str) else
                         ",".join(f"{k}={v}" for k, v in c.items()))
def test_the_kernel_is_the_readable_model_state_for_state(name, constants):
    model = model_of(name, constants)
    kernel = km.load(model.kernel())
    states = sample(model)
    for state in states[:200]:
        assert kernel.spec.unpack(kernel.spec.pack(state)) == state
    assert disagreements(model, kernel, states) == []


@needs_cc
@pytest.mark.parametrize("name", ["two-phase", "tla:Kip320", "tla:Kip101"])
def test_a_kernel_with_one_rule_changed_fails_the_check(name):
    """The mutant (two-phase: TMRcvPrepared without its tmState guard; the TLA+ family:
    ControllerElectLeader without its new-leader guard) is caught on the same states."""
    model = model_of(name, {"RM": 3} if name == "two-phase" else TLA_SMALL)
    mutant = km.load(model.kernel(), extra_flags=("-DKM_MUTANT=1",))
    assert disagreements(model, mutant, sample(model)) != []


def search(model, kernel: str, **options) -> object:
    opts = SearchOptions(invariants=[i for i in for_family(model.family).values() if i.default],
                         kernel=kernel, **options)
    return run(model, opts)


def summary(result) -> tuple:
    violations = [(v.invariant, v.length, tuple(map(str, (s.action for s in v.trace.steps))),
                   v.trace.states, v.discovered) for v in result.violations]
    return (result.verdict, result.distinct_states, result.states_generated, result.depth,
            result.out_degree, violations)


def assert_same_search(name: str, constants: dict, **options) -> None:
    model = model_of(name, constants)
    compiled = search(model, "on", **options)
    assert compiled.extra["path"]["path"] == "kernel"
    readable = search(model, "off", **options)
    assert "path" not in readable.extra
    assert summary(compiled) == summary(readable)


FAST_SEARCHES = [
    ("two-phase", {"RM": 5}, {}),
    ("two-phase", {"RM": 5}, {"symmetry": True}),
    ("two-phase", {"RM": 4, "commit_guard": False}, {"stop_at_first": False}),
    ("two-phase", {"RM": 5, "commit_guard": False}, {"symmetry": True}),
    ("tla:Kip101", TLA_SMALL, {"check_deadlock": False, "stop_at_first": False}),
    ("tla:Kip279", TLA_SMALL, {"check_deadlock": False}),
    ("tla:Kip320", TLA_SMALL, {"check_deadlock": False}),
    ("tla:Kip320", TLA_SMALL, {}),  # a deadlock, found and replayed
    ("tla:Kip320", TLA_SMALL, {"check_deadlock": False, "max_depth": 9}),  # undetermined
]


@needs_cc
@pytest.mark.parametrize(("name", "constants", "options"), FAST_SEARCHES)
def test_searches_agree(name, constants, options):
    assert_same_search(name, constants, **options)


@pytest.mark.slow
@needs_cc
@pytest.mark.parametrize(("name", "constants", "options"), [
    ("two-phase", {"RM": 7}, {}),
    ("tla:Kip320", {"Replicas": 2, "LogSize": 3, "MaxRecords": 3, "MaxLeaderEpoch": 3},
     {"check_deadlock": False}),
    ("tla:Kip101", {"Replicas": 3, "LogSize": 2, "MaxRecords": 2, "MaxLeaderEpoch": 1},
     {"check_deadlock": False, "stop_at_first": False}),
])
def test_big_searches_agree(name, constants, options):
    assert_same_search(name, constants, **options)


# -- the command line ------------------------------------------------------------------------------
def check_json(capsys, *words: str) -> tuple[int, dict]:
    code = main(["check", *words, "--json", "--quiet"])
    return code, json.loads(capsys.readouterr().out)


@needs_cc
def test_check_says_which_path_ran(capsys, tmp_path):
    code, data = check_json(capsys, "two-phase", "--const", "RM=4", "--const", "commit_guard=false",
                            "--trace-dir", str(tmp_path / "k"))
    assert code == 12 and data["path"]["path"] == "kernel"
    code_off, readable = check_json(capsys, "two-phase", "--const", "RM=4", "--const",
                                    "commit_guard=false", "--kernel", "off", "--trace-dir",
                                    str(tmp_path / "r"))
    assert code_off == 12 and readable["path"] == {"path": "readable", "reason": "--kernel off"}
    for key in ("distinct_states", "states_generated", "depth", "verdict"):
        assert data[key] == readable[key]
    saved = [(tmp_path / d / "two-phase-TCConsistent.json").read_text() for d in ("k", "r")]
    # the kernel's counterexample, replayed, is saved as the readable path saves it
    assert saved[0] == saved[1]
    assert main(["check", "two-phase", "--verbose", "--quiet"]) == 0
    assert "Path: the compiled kernel (two_phase_kernel.c" in capsys.readouterr().out


def test_what_the_kernel_cannot_honour_runs_on_the_readable_model(capsys, tmp_path):
    prop = tmp_path / "props.py"
    prop.write_text("def few_aborts(state):\n    return list(state.rm_state).count(3) < 9\n")
    code, data = check_json(capsys, "two-phase", "--property", f"{prop}:few_aborts")
    assert code == 0 and data["path"] == {"path": "readable",
                                          "reason": "property few_aborts is not compiled into the "
                                                    "kernel"}
    assert main(["check", "two-phase", "--engine", "directed", "--kernel", "on", "--quiet"]) == 69
    assert ("--kernel on: the compiled kernel runs on the local, parallel and spark engines"
            in capsys.readouterr().err)


def test_without_a_compiler_the_answers_are_the_same(capsys, monkeypatch):
    """A machine with no C compiler (KMC_CC names a program that does not exist): auto runs the
    readable model and says why, on is refused in one line (exit 69)."""
    monkeypatch.setenv("KMC_CC", "kmc-no-such-compiler")
    code, data = check_json(capsys, "tla:Kip320", "-deadlock")
    assert (code == 0 and data["distinct_states"] == 5973 and data["states_generated"] == 11839
            and data["depth"] == 18)
    assert data["path"] == {"path": "readable", "reason": "no C compiler: 'kmc-no-such-compiler' "
                                                          "is not on the PATH (set KMC_CC to one, "
                                                          "or use --kernel off)"}
    assert main(["check", "two-phase", "--kernel", "on", "--quiet"]) == 69
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "--kernel on: no C compiler" in err


@needs_cc
def test_a_failing_compiler_is_one_line(monkeypatch, tmp_path):
    fake = tmp_path / "cc"
    fake.write_text("#!/bin/sh\necho 'fake.c:1: error: broken' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("KMC_CC", str(fake))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    with pytest.raises(km.KernelUnavailable, match="failed on two_phase_kernel.c: fake.c:1: error: "
                                                   "broken"):
        km.load(model_of("two-phase", {"RM": 3}).kernel())
    # no half-written library left
    assert list((tmp_path / "cache" / "kmc" / "kernels").iterdir()) == []


def test_the_optimisation_level_is_checked_and_keys_the_cache(capsys, monkeypatch, tmp_path):
    """``$KMC_KERNEL_OPT`` (the suite sets -Og) picks the level the kernel is compiled at: a level
    is part of the cache's key, so -O1 and -O2 are two libraries, and anything but -O0, -Og and
    -O1..-O3 is one line, exit 64."""
    spec = model_of("two-phase", {"RM": 3}).kernel()
    monkeypatch.setenv("KMC_CC", "cc")
    monkeypatch.setenv("KMC_KERNEL_OPT", "-O1")
    assert km.build_command(spec, "cc", "out.so")[1] == "-O1"
    monkeypatch.delenv("KMC_KERNEL_OPT")
    assert km.build_command(spec, "cc", "out.so")[1] == "-O2"
    if shutil.which(km.compiler()) is not None:
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
        libraries = set()
        for level in ("-O1", "-O2"):
            monkeypatch.setenv("KMC_KERNEL_OPT", level)
            libraries.add(km.load(spec).library)
        assert len(libraries) == 2
    monkeypatch.setenv("KMC_KERNEL_OPT", "-Ofast; rm -rf /")
    assert main(["check", "two-phase", "--kernel", "on", "--quiet"]) == 64
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0
    assert "KMC_KERNEL_OPT='-Ofast; rm -rf /' is not an optimisation level" in err
