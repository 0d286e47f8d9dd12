"""The search engines by name, and the one way a search starts (``run``).

Each engine is a module with its own options dataclass (``checker.bfs.LocalOptions``: none;
``checker.parallel.ParallelOptions``: the workers; ``checker.spark.SparkOptions``: the master, the
threshold, the transport, ...) and ``run_engine(model, options, engine_options)``, which runs the one
level loop (``checker.levels``) with the engine's level step. The command line builds the chosen
engine's options (``engine_options``) and refuses an option the engine has no field for. All engines
give identical distinct-state counts, depths and shortest counterexamples."""

from __future__ import annotations

import dataclasses
import importlib
import time
from dataclasses import dataclass
from typing import Any

from checker.result import CheckResult
from checker.search import SearchOptions
from spec.errors import UsageError
from spec.model import Model


@dataclass(frozen=True)
class Engine:
    """A search engine: its module (imported when the engine is used), whose ``run_engine(model,
    options, engine_options)`` runs a search, and its options dataclass ``options_class`` in that
    module (each field the command line sets names its flag in ``metadata["flag"]``)."""

    name: str
    module: str
    options_class: str
    description: str

    @property
    def options_type(self) -> type:
        return getattr(importlib.import_module(self.module), self.options_class)

    def flags(self) -> dict[str, str]:
        """Command-line flag -> the field of the engine's options it sets."""
        return {f.metadata["flag"]: f.name for f in dataclasses.fields(self.options_type) if "flag" in f.metadata}

    def run(self, model: Model, options: SearchOptions, engine_options: Any = None) -> CheckResult:
        """The safety search; ``--reduce`` refused (one line) where this engine cannot apply it, and
        ``--shortest`` after a reduced search."""
        from checker.por import check_supported, shortest_rerun

        wanted = self.options_type
        engine_options = wanted() if engine_options is None else engine_options
        if not isinstance(engine_options, wanted):
            raise TypeError(f"engine {self.name} takes {wanted.__name__}, not {type(engine_options).__name__}")
        search = importlib.import_module(self.module).run_engine
        check_supported(self.name, options, getattr(engine_options, "workers", 1) or 1)
        if options.kernel == "on" and self.name != "bfs":
            from checker.kernel import KernelUnavailable

            raise KernelUnavailable(f"--kernel on: the compiled kernel runs on the local engine, not --engine {self.name}; "
                                    "drop --engine and --workers, or use --kernel auto")
        result = search(model, options, engine_options)
        if options.kernel != "off" and self.name != "bfs":
            result.extra["path"] = {"path": "readable", "reason": f"the kernel runs on the local engine, not {self.name}"}
        if options.shortest:
            result = shortest_rerun(model, options, result, lambda m, o: search(m, o, engine_options))
        if options.reduce != "none" and result.violations:
            # a reduced search's counterexamples need not be shortest, unless --shortest gave them (``--json`` says it)
            result.extra["guaranteed_shortest"] = bool(options.shortest)
        return result


ENGINES: dict[str, Engine] = {
    engine.name: engine for engine in (
        Engine("bfs", "checker.bfs", "LocalOptions", "breadth-first search in this process (the default)"),
        Engine("parallel", "checker.parallel", "ParallelOptions",
               "breadth-first search in --workers N processes (default: one a core)"),
        Engine("spark", "checker.spark", "SparkOptions",
               "distributed breadth-first search on Spark (--master, default local[*])"),
        Engine("directed", "checker.directed", "DirectedOptions",
               "best-first search towards a violation, steered by the invariants' distances (--directed-weight)"),
    )
}


def get_engine(name: str) -> Engine:
    if name not in ENGINES:
        raise UsageError(f"unknown engine {name!r}; engines: {', '.join(ENGINES)}")
    return ENGINES[name]


def engine_options(name: str, given: dict[str, Any]) -> Any:
    """The options of engine ``name`` from the engine options given on the command line (flag ->
    value, e.g. ``{"--master": "spark://host:7077"}``). A flag the engine has no field for would be
    ignored: refused instead, one line (exit 64) naming the flag, the engine and the engines that read it."""
    engine = get_engine(name)
    flags = engine.flags()
    for flag in given:
        if flag not in flags:
            owners = " or ".join(f"--engine {other.name}" for other in ENGINES.values() if flag in other.flags())
            raise UsageError(f"{flag} is not an option of --engine {name} (it is read by {owners}); "
                             f"drop {flag} or choose that engine")
    return engine.options_type(**{flags[flag]: value for flag, value in given.items()})


def run(model: Model, options: SearchOptions, engine: str = "bfs", engine_options: Any = None) -> CheckResult:
    """Run the safety search on the chosen engine, then any liveness property on the state graph, whose time
    is added to the result's seconds ("Finished in" covers both).

    The one way a search starts: the command line, the matrix, the stories, the explorer and the benchmarks
    all come here."""
    result = get_engine(engine).run(model, options, engine_options)
    liveness = options.liveness_properties()
    if not liveness:
        return result
    started = time.monotonic()
    result = add_liveness(model, options, result, liveness)
    result.seconds += time.monotonic() - started
    return result


def add_liveness(model: Model, options: SearchOptions, result: CheckResult, properties: list) -> CheckResult:
    """Check the liveness properties on the reachable state graph, built once for all of them within the run's
    budgets (its time counts from the safety search's start)."""
    from checker.liveness import check_leads_to, explore_graph
    from checker.result import Verdict, Violation

    if result.verdict is Verdict.UNDETERMINED or (result.violations and options.stop_at_first):
        return result  # the graph is incomplete, or the run already failed: nothing sound to add
    graph, states, reason = explore_graph(model, options, started=time.monotonic() - result.seconds)
    forms = {prop.name: "liveness (state graph)" for prop in properties}
    if reason:
        result.verdict = Verdict.UNDETERMINED
        result.reason = f"{reason} while building the state graph for {', '.join(forms)}"
    else:
        for prop in properties:
            outcome = check_leads_to(model, prop, options, graph, states)
            if not outcome.holds:
                result.violations.append(Violation(prop.name, "liveness", outcome.trace))
                result.verdict = Verdict.VIOLATED
    result.invariants = result.invariants + [p.name for p in properties]
    result.extra["property_forms"] = forms
    return result
