"""The search engines by name, and the one way a search starts (``run``).

Each engine is a module with its own options dataclass (``checker.bfs.LocalOptions``: none;
``checker.parallel.ParallelOptions``: the workers; ``checker.spark.SparkOptions``: the master, the
threshold, the transport, ...) and ``run_engine(model, options, engine_options)``, which runs the
one level loop (``checker.levels``) with the engine's level step. Its record here (``Engine``) says
the rest once: its command-line options and what it supports; the command line's engine options, its
refusals and the engine table are built from the records. Adding an engine is its module and one
``Engine(...)`` line in ``ENGINES``. All engines give identical distinct-state counts, depths and
shortest counterexamples."""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from checker.result import CheckResult
from checker.search import SearchOptions
from spec.errors import UsageError
from spec.model import Model


@dataclass(frozen=True)
class EngineFlag:
    """A command-line option of an engine: the flag, the field of the engine's options dataclass it
    sets, its help, and the kind of its value (``int``, ``str``, or ``workers``: a count of
    processes, capped at the cores, or auto; the command line turns the kind into its argument
    type). ``choices`` limits a ``str``."""

    flag: str
    field: str
    help: str
    kind: str = "str"
    metavar: str | None = None
    choices: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Engine:
    """A search engine, said once: its module (imported when the engine is used), whose
    ``run_engine(model, options, engine_options)`` runs a search, its options dataclass
    ``options_class`` in that module, its command-line options (``flags``: the ``check`` and
    ``matrix`` parsers are built from them), and what it supports. Everything the command line
    refuses for an engine (a flag it has no field for, a reduction, a checkpoint, a liveness
    property, ``--coverage``) is decided from this record (``refusal``), never from the engine's
    name.

    - ``reductions``: the ``--reduce`` methods it runs (besides none);
    - ``checkpoints``: it writes and resumes ``--checkpoint`` files;
    - ``reduced_checkpoints``: its checkpoints also keep a reduced search (``--reduce dead``: a
      Spark run directory names the reduction in its identity; the local and parallel engines'
      checkpoint files are not tested under it);
    - ``liveness``: liveness properties may be checked with it (on the state graph, after its safety
      search);
    - ``coverage``: it counts ``--coverage``;
    - ``directed``: it searches best-first towards a violation (its counterexamples need not be
      shortest), not level by level;
    - ``kernel``: it runs a model's compiled kernel (``checker.kernel``, ``--kernel``) where the
      model has one;
    - ``first_violations``: it records each invariant's figures at its first violation
      (``Violation.discovered``), so ``kmc matrix`` checks a row's invariants in one search."""

    name: str
    module: str
    options_class: str
    description: str
    flags: tuple[EngineFlag, ...] = ()
    reductions: frozenset[str] = frozenset()
    checkpoints: bool = False
    reduced_checkpoints: bool = False
    liveness: bool = False
    coverage: bool = False
    directed: bool = False
    kernel: bool = False
    first_violations: bool = False

    @property
    def options_type(self) -> type:
        return getattr(importlib.import_module(self.module), self.options_class)

    def flag_fields(self) -> dict[str, str]:
        """Command-line flag -> the field of the engine's options it sets."""
        return {flag.flag: flag.field for flag in self.flags}

    def supports(self) -> list[str]:
        """What it supports, in words (``kmc list`` and the engine table)."""
        return ([f"--reduce {method}" for method in sorted(self.reductions)]
                + [what for what, on in (("--checkpoint", self.checkpoints),
                                         ("liveness", self.liveness), ("--coverage", self.coverage),
                                         ("directed", self.directed)) if on])

    def refusal(self, options: SearchOptions) -> str | None:
        """Why this engine cannot run the search ``options`` ask for (one line naming the option,
        the engine and the engines that can), or None."""
        if options.reduce != "none" and options.reduce not in self.reductions:
            return _not_supported(f"--reduce {options.reduce}", self.name, lambda e: options.reduce
                                  in e.reductions)
        if (options.checkpoint_path or options.resume_from) and not self.checkpoints:
            return _not_supported("--checkpoint / --resume", self.name, lambda e: e.checkpoints)
        if ((options.checkpoint_path or options.resume_from) and options.reduce != "none"
            and not self.reduced_checkpoints):
            return _not_supported(f"--checkpoint / --resume with --reduce {options.reduce}",
                                  self.name, lambda e: e.reduced_checkpoints)
        if (options.liveness_properties() or options.keep_graph) and not self.liveness:
            return _not_supported("a liveness property", self.name, lambda e: e.liveness)
        if options.coverage and not self.coverage:
            return _not_supported("--coverage", self.name, lambda e: e.coverage)
        return None

    def run(self, model: Model, options: SearchOptions, engine_options: Any = None) -> CheckResult:
        """The safety search; what this engine cannot honour refused (one line), and ``--shortest``
        after a reduced search."""
        from checker.reductions import check_supported, shortest_rerun

        wanted = self.options_type
        engine_options = wanted() if engine_options is None else engine_options
        if not isinstance(engine_options, wanted):
            raise TypeError(f"engine {self.name} takes {wanted.__name__}, not "
                            f"{type(engine_options).__name__}")
        check_supported(options)
        why = self.refusal(options)
        if why:
            raise UsageError(why)
        search = importlib.import_module(self.module).run_engine
        if options.kernel == "on" and not self.kernel:
            from checker.kernel import KernelUnavailable

            raise KernelUnavailable("--kernel on: the compiled kernel runs on the local, parallel "
                                    f"and spark engines, not --engine {self.name}; drop --engine, "
                                    "or use --kernel auto")
        result = search(model, options, engine_options)
        if options.kernel != "off" and not self.kernel:
            result.extra["path"] = {"path": "readable", "reason": "the kernel runs on the local, "
                                                                  "parallel and spark "
                                                                  f"engines, not {self.name}"}
        if options.shortest:
            result = shortest_rerun(model, options, result,
                                    lambda m, o: search(m, o, engine_options))
        if options.reduce != "none" and result.violations:
            # a reduced search's counterexamples need not be shortest, unless --shortest gave them
            # (``--json`` says it)
            result.extra["guaranteed_shortest"] = bool(options.shortest)
        return result


def _not_supported(what: str, engine: str, supports: Callable[[Engine], bool]) -> str:
    others = [e.name for e in ENGINES.values() if supports(e)]
    where = f" (engines that support it: {', '.join(others)})" if others else ""
    return f"{what} is not supported by --engine {engine}{where}"


WORKERS = EngineFlag("--workers", "workers", "worker processes (parallel engine; threads of one "
                     "process on the compiled kernel): a number (at most the cores this process "
                     "may use), or auto for one a core", kind="workers")

ENGINES: dict[str, Engine] = {
    engine.name: engine for engine in (
        Engine("local", "checker.bfs", "LocalOptions", "breadth-first search in this process (the "
               "default)",
               reductions=frozenset({"dead"}), checkpoints=True, liveness=True, coverage=True,
               kernel=True, first_violations=True),
        Engine("parallel", "checker.parallel", "ParallelOptions",
               "breadth-first search in --workers N processes (default: one a core)",
               flags=(WORKERS,), reductions=frozenset({"dead"}), checkpoints=True, liveness=True,
               kernel=True, first_violations=True),
        Engine("spark", "checker.spark", "SparkOptions",
               "distributed breadth-first search on Spark (--master, default local[*])",
               flags=(EngineFlag("--master", "master",
                                 "Spark master URL (spark engine; default local[*])"),
                      EngineFlag("--spark-threshold", "threshold",
                                 "spark engine: run levels locally while the "
                                 "frontier has fewer than N states (default 10000; on the "
                                 "compiled kernel, in C on the driver until a level has gone to "
                                 "the executors)", kind="int", metavar="N"),
                      EngineFlag("--spark-driver-below", "driver_below",
                                 "spark engine, compiled kernel: run a level on the driver in C "
                                 "when its frontier has fewer than N states, where a Spark job "
                                 "costs more than the level (default 300000; 0: every level on "
                                 "the executors)", kind="int", metavar="N"),
                      EngineFlag("--spark-transport", "transport",
                                 "spark engine: arrow (DataFrames, Arrow batches, "
                                 "dedup in the JVM; the default with PyArrow and PySpark 4) or "
                                 "blocks (RDDs); both write resumable run directories "
                                 "(--checkpoint DIR)", choices=("arrow", "blocks"))),
               reductions=frozenset({"dead"}), checkpoints=True, reduced_checkpoints=True,
               liveness=True, kernel=True),
        Engine("directed", "checker.directed", "DirectedOptions",
               "best-first search towards a violation, steered by the invariants' distances "
               "(--directed-weight)",
               flags=(EngineFlag("--directed-weight", "weight",
                                 "directed engine: order states by W x distance + "
                                 "depth (0 breadth-first, 1 A*; default 1000)", kind="int",
                                 metavar="W"),),
               directed=True),
    )
}


def engine_flags() -> dict[str, EngineFlag]:
    """Every engine's command-line options, each once, in the registry's order (``--workers``
    first)."""
    found: dict[str, EngineFlag] = {}
    for engine in ENGINES.values():
        for flag in engine.flags:
            found.setdefault(flag.flag, flag)
    return found


def engine_table() -> list[str]:
    """The engines and what each supports, as Markdown rows (README's engine table is this)."""
    kinds = ("--reduce dead", "--checkpoint", "liveness", "--coverage", "directed")
    rows = ["| engine | options | " + " | ".join(kinds) + " |", "|" + " --- |" * (len(kinds) + 2)]
    for engine in ENGINES.values():
        has = engine.supports()
        options = ", ".join(f"`{flag.flag}`" for flag in engine.flags) or "none"
        rows.append(f"| `{engine.name}` | {options} | " + " "
                                                          "| ".join("yes" if k in has else "no"
                                                                    for k in kinds) + " |")
    return rows


def get_engine(name: str) -> Engine:
    if name not in ENGINES:
        raise UsageError(f"unknown engine {name!r}; engines: {', '.join(ENGINES)}")
    return ENGINES[name]


def engine_options(name: str, given: dict[str, Any]) -> Any:
    """The options of engine ``name`` from the engine options given on the command line (flag ->
    value, e.g. ``{"--master": "spark://host:7077"}``). A flag the engine has no field for would be
    ignored: refused instead, one line (exit 64) naming the flag, the engine and the engines that
    read it."""
    engine = get_engine(name)
    flags = engine.flag_fields()
    for flag in given:
        if flag not in flags:
            owners = " or ".join(f"--engine {other.name}" for other in ENGINES.values()
                                 if flag in other.flag_fields())
            raise UsageError(f"{flag} is not an option of --engine {name} (it is read by "
                             f"{owners}); drop {flag} or choose that engine")
    return engine.options_type(**{flags[flag]: value for flag, value in given.items()})


def run(model: Model, options: SearchOptions, engine: str = "local",
        engine_options: Any = None) -> CheckResult:
    """Run the safety search on the chosen engine, then any liveness property on the state graph,
    whose time is added to the result's seconds ("Finished in" covers both).

    The one way a search starts: the command line, the matrix, the stories, the explorer and the
    benchmarks all come here."""
    result = get_engine(engine).run(model, options, engine_options)
    liveness = options.liveness_properties()
    if not liveness:
        return result
    started = time.monotonic()
    result = add_liveness(model, options, result, liveness)
    result.seconds += time.monotonic() - started
    return result


def add_liveness(model: Model, options: SearchOptions, result: CheckResult,
                 properties: list) -> CheckResult:
    """Check the liveness properties on the reachable state graph, built once for all of them within
    the run's budgets (its time counts from the safety search's start)."""
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
