"""``--workers N`` on the compiled kernel (``checker.parallel.run_engine``).

Where ``checker.kernel.why_not(..., engine="parallel")`` allows it, the parallel engine runs the
local engine's search on the kernel in one process, in N threads (``km_set_threads``): the same
distinct, generated, depth, verdict, out-degrees and counterexamples as the local engine on the
readable model at any worker count, and ``--verbose``/``--json`` say so.
What the kernel cannot do (a checkpoint, ...) runs the readable workers, with the reason. A mutant
kernel (``-DKM_MUTANT=1``) on this path is caught by the comparison.
"""

from __future__ import annotations

import json

import pytest

from checker import kernel as km
from checker.engines import run
from checker.parallel import ParallelOptions
from checker.search import SearchOptions
from invariants.registry import for_family
from kmc.cli import main
from tests.test_kernel import TLA_SMALL, model_of, needs_cc, summary


def options(model, kernel: str, **more) -> SearchOptions:
    return SearchOptions(invariants=[i for i in for_family(model.family).values() if i.default],
                         kernel=kernel, **more)


def on_workers(model, workers: int, kernel: str = "auto", **more):
    return run(model, options(model, kernel, **more), "parallel", ParallelOptions(workers=workers))


@needs_cc
@pytest.mark.parametrize(("name", "constants", "more"), [
    # violated, every counterexample
    ("two-phase", {"RM": 3, "commit_guard": False}, {"stop_at_first": False}),
    ("two-phase", {"RM": 4}, {}),
    ("tla:Kip320", TLA_SMALL, {}),  # a deadlock, found and replayed
    ("tla:Kip320", TLA_SMALL, {"check_deadlock": False, "max_depth": 9}),  # undetermined
])
@pytest.mark.slow  # every line it runs, cheaper fast tests run too (coverage by test)
def test_workers_on_the_kernel_equal_the_local_readable_search(name, constants, more):
    model = model_of(name, constants)
    readable = run(model, options(model, "off", **more))
    for workers in (1, 2):
        compiled = on_workers(model, workers, **more)
        path = compiled.extra["path"]
        assert ((path["path"], path["engine"], path["workers_asked"], path["threads"])
                == ("kernel", "local", workers, workers))
        assert summary(compiled) == summary(readable)


@needs_cc
def test_a_mutant_kernel_on_workers_is_caught(monkeypatch):
    """Two-phase's mutant (TMRcvPrepared without its tmState guard) run by ``--workers 2``: the
    comparison above sees it (it would pass a kernel path that dropped or changed a step)."""
    model = model_of("two-phase", {"RM": 3})
    readable = run(model, options(model, "off"))
    real = km.load
    monkeypatch.setattr(km, "load", lambda spec: real(spec, extra_flags=("-DKM_MUTANT=1",)))
    mutant = on_workers(model, 2)
    assert mutant.extra["path"]["path"] == "kernel"
    assert summary(mutant) != summary(readable)


@needs_cc
def test_what_the_kernel_cannot_do_runs_the_readable_workers(tmp_path):
    model = model_of("two-phase", {"RM": 3})
    result = on_workers(model, 2, checkpoint_path=str(tmp_path / "run.ckpt"))
    assert (result.extra["path"] == {"path": "readable", "reason": "checkpoints is not supported "
                                                                   "by the kernel"})
    assert result.engine == "parallel" and result.workers == 2
    assert summary(result) == summary(run(model, options(model, "off")))
    off = on_workers(model, 2, kernel="off")
    assert "path" not in off.extra and off.engine == "parallel"


@needs_cc
def test_the_command_line_says_the_path(capsys):
    code = main(["check", "two-phase", "--const", "RM=3", "--workers", "2", "--json", "--quiet"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and data["path"]["path"] == "kernel" and data["path"]["workers_asked"] == 2
    assert (main(["check", "two-phase", "--const", "RM=3", "--workers", "2", "--verbose",
                  "--quiet"]) == 0)
    out = " ".join(capsys.readouterr().out.split())
    assert "Path: the compiled kernel (two_phase_kernel.c" in out
    assert "--workers 2: 2 threads in the compiled kernel's level search" in out
    assert (main(["check", "two-phase", "--const", "RM=3", "--engine", "directed", "--kernel", "on",
                  "--quiet"]) == 69)
    assert ("runs on the local, parallel and spark engines, not --engine directed"
            in capsys.readouterr().err)
