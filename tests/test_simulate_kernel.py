"""``kmc simulate`` on the compiled kernel (``checker.simulate._KernelWalker``): the same walks for
the same seed as the readable model's (counts, distinct states covered, deepest walk, every
counterexample and the walk it came from), at one worker and two; a mutant kernel
(``-DKM_MUTANT=1``) gives other walks; what the kernel cannot run (a user property, Spark's
executors) runs the readable walks with the reason, and ``--kernel on`` then refuses."""

from __future__ import annotations

import json

import pytest

from checker import kernel as km
from checker.search import SearchOptions
from checker.simulate import SimulationOptions, _walker, simulate
from invariants.registry import for_family
from kmc.cli import main
from tests.test_kernel import TLA_SMALL, model_of, needs_cc


def options(model, **more) -> SearchOptions:
    return SearchOptions(invariants=[i for i in for_family(model.family).values() if i.default],
                         **more)


def walks(result) -> tuple:
    violations = [(v.invariant, v.length, tuple(map(str, (s.action for s in v.trace.steps))),
                   v.trace.states, v.trace.extra) for v in result.violations]
    extra = {k: result.extra[k] for k in ("walks", "steps", "deepest_walk",
                                          "distinct_states_covered")}
    return (result.verdict, result.distinct_states, result.states_generated, result.depth, extra,
            violations)


CASES = [
    # violated, walks continue
    ("two-phase", {"RM": 4, "commit_guard": False}, {"stop_at_first": False}),
    ("two-phase", {"RM": 4}, {}),  # holds: undetermined, every walk to its end
    ("tla:Kip101", TLA_SMALL, {"stop_at_first": False}),
]


@needs_cc
@pytest.mark.parametrize(("name", "constants", "more"), CASES)
def test_the_kernel_walks_are_the_readable_walks(name, constants, more):
    model = model_of(name, constants)
    readable = simulate(model, options(model, **more),
                        SimulationOptions(walks=200, depth=30, seed=7))
    for workers in (1, 2):
        sim = SimulationOptions(walks=200, depth=30, seed=7, workers=workers, kernel="on")
        compiled = simulate(model, options(model, **more), sim)
        assert compiled.extra["path"]["path"] == "kernel"
        assert walks(compiled) == walks(readable)
    # the violated case has counterexamples
    assert bool(readable.violations) == ("commit_guard" in constants)


@needs_cc
def test_a_mutant_kernel_walks_elsewhere(monkeypatch):
    model = model_of("two-phase", {"RM": 4})
    sim = SimulationOptions(walks=200, depth=30, seed=7, kernel="on")
    readable = simulate(model, options(model), SimulationOptions(walks=200, depth=30, seed=7))
    real = km.load
    monkeypatch.setattr(km, "load", lambda spec: real(spec, extra_flags=("-DKM_MUTANT=1",)))
    assert walks(simulate(model, options(model), sim)) != walks(readable)


@needs_cc
def test_what_the_kernel_cannot_walk_runs_the_readable_model(tmp_path, capsys):
    model = model_of("two-phase", {"RM": 3})
    _, path = _walker(model, options(model), SimulationOptions(engine="spark", kernel="auto"))
    assert path == {"path": "readable", "reason": "the walks on Spark's executors run the readable "
                                                  "model (the kernel runs with --engine local)"}
    prop = tmp_path / "props.py"
    prop.write_text("def few_aborts(state):\n    return list(state.rm_state).count(3) < 9\n")
    argv = ["simulate", "two-phase", "--const", "RM=3", "--walks", "10", "--json", "--quiet"]
    # undetermined: simulation proves nothing
    assert main([*argv, "--property", f"{prop}:few_aborts"]) == 20
    data = json.loads(capsys.readouterr().out)
    assert (data["path"] == {"path": "readable", "reason": "property few_aborts is not compiled "
                                                           "into the kernel"})
    assert main([*argv, "--property", f"{prop}:few_aborts", "--kernel", "on"]) == 69
    assert "--kernel on: property few_aborts is not compiled" in capsys.readouterr().err
    assert main(argv) == 20 and json.loads(capsys.readouterr().out)["path"]["path"] == "kernel"
    assert main([*argv, "--kernel", "off"]) == 20
    assert (json.loads(capsys.readouterr().out)["path"]
            == {"path": "readable", "reason": "--kernel off"})
