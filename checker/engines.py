"""The search engines by name. Each is ``run(model, options, engine_options) -> CheckResult`` and
all must give identical distinct-state counts, depths and shortest counterexample lengths."""

from __future__ import annotations

import functools
import importlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from checker.result import CheckResult
from checker.search import SearchOptions
from spec.errors import UsageError
from spec.model import Model


@dataclass
class EngineOptions:
    workers: int = 1
    master: str = "local[*]"
    extra: dict[str, Any] = field(default_factory=dict)


# name -> (module, function, one-line description)
ENGINES: dict[str, tuple[str, str, str]] = {
    "bfs": ("checker.parallel", "run_default_engine", "breadth-first search in this process (the default)"),
    "parallel": ("checker.parallel", "run_engine", "breadth-first search in --workers N processes (default: one a core)"),
    "spark": ("checker.spark", "run_engine", "distributed breadth-first search on Spark (--master, default local[*])"),
}


def get_engine(name: str) -> Callable[[Model, SearchOptions, EngineOptions], CheckResult]:
    if name not in ENGINES:
        raise UsageError(f"unknown engine {name!r}; engines: {', '.join(ENGINES)}")
    module, function, _ = ENGINES[name]
    return functools.partial(_run_reduced, name, getattr(importlib.import_module(module), function))


def _run_reduced(name: str, engine: Callable, model: Model, options: SearchOptions, engine_options: EngineOptions) -> CheckResult:
    """``--reduce``: refused (one line) where the engine cannot apply it; ``--shortest`` after a reduced search."""
    from checker.por import check_supported, shortest_rerun

    check_supported(name, options, getattr(engine_options, "workers", 1) or 1)
    result = engine(model, options, engine_options)
    if options.shortest:
        result = shortest_rerun(model, options, result, lambda m, o: engine(m, o, engine_options))
    return result


def run(model: Model, options: SearchOptions, engine: str = "bfs", engine_options: EngineOptions | None = None):
    """Run the safety search on the chosen engine, then any liveness property on the state graph, whose time
    is added to the result's seconds ("Finished in" covers both).

    The one way a search starts: the command line, the matrix, the stories, the explorer and the benchmarks
    all come here."""
    result = get_engine(engine)(model, options, engine_options or EngineOptions())
    liveness = options.liveness_properties()
    if not liveness:
        return result
    started = time.monotonic()
    result = add_liveness(model, options, result, liveness)
    result.seconds += time.monotonic() - started
    return result


def add_liveness(model: Model, options: SearchOptions, result: CheckResult, properties: list) -> CheckResult:
    from checker.liveness import check_leads_to
    from checker.result import Verdict, Violation

    if result.verdict is Verdict.UNDETERMINED or (result.violations and options.stop_at_first):
        return result  # the graph is incomplete, or the run already failed: nothing sound to add
    forms = {}
    for prop in properties:
        outcome = check_leads_to(model, prop, options, max_states=options.max_states)
        forms[prop.name] = "liveness (state graph)"
        if outcome.truncated:
            result.verdict = Verdict.UNDETERMINED
            result.reason = f"state budget reached while building the graph for {prop.name}"
        elif not outcome.holds:
            result.violations.append(Violation(prop.name, "liveness", outcome.trace))
            result.verdict = Verdict.VIOLATED
    result.invariants = result.invariants + [p.name for p in properties]
    result.extra["property_forms"] = forms
    return result
