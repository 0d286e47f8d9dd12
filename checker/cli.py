"""The ``kmc`` command line.

    kmc check MODEL [--const NAME=VALUE]... [--invariant NAME]... [--json] ...
    kmc simulate MODEL [--walks N] [--depth D] [--seed S] ...
    kmc list [--json]

Other packages add subcommands (``kmc matrix``, ``kmc trace``) through ``SUBCOMMAND_MODULES``:
each module has ``add_parser(subparsers, common)``. Every user error becomes one line on stderr
and a documented exit code (see ``checker.errors.ExitCode``), never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from collections.abc import Sequence
from typing import Any

from rich.console import Console

from checker import engines
from checker.errors import ExitCode, KmcError, UsageError
from checker.result import CheckResult, Verdict
from checker.search import Progress, SearchOptions
from invariants.base import SAFETY, Invariant
from invariants.registry import for_family
from spec.model import Model
from spec.registry import ModelInfo, all_models, build_model

SUBCOMMAND_MODULES = ("checker.matrix", "traces.cli")
DEFAULT_TRACE_DIR = "kmc-traces"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line and the usage exit code, not argparse's 2
        raise UsageError(f"{self.prog}: {message} (see '{self.prog} --help')")


# -- options shared by the subcommands ------------------------------------------------------------
def add_model_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", help="model name (see 'kmc list'), e.g. two-phase, kafka, tla:Kip320")
    parser.add_argument("--const", action="append", default=[], metavar="NAME=VALUE", help="set a constant (bound)")
    parser.add_argument("--protocol", help="protocol version, for models that have them (see 'kmc list')")
    parser.add_argument(
        "--feature", action="append", default=[], metavar="FLAG=on|off", help="switch one feature flag of the protocol"
    )


def add_search_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--invariant", action="append", default=[], metavar="NAME", help="check only these (default all)")
    parser.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    parser.add_argument("--continue", dest="keep_going", action="store_true",
                        help="do not stop at the first violation: report the shortest trace of every violated invariant")
    parser.add_argument("--deadlock", action="store_true", help="report states with no successor as deadlocks")
    parser.add_argument("--max-states", type=_positive_int, help="distinct-state budget (then: undetermined)")
    parser.add_argument("--max-seconds", type=_positive_float, help="time budget in seconds (then: undetermined)")
    parser.add_argument("--max-depth", type=_positive_int, help="depth bound (then: undetermined if states remain)")
    parser.add_argument("--max-memory", type=_positive_float, metavar="MB",
                        help="memory budget in MB (default 80%% of RAM; then: undetermined and a checkpoint)")
    parser.add_argument("--symmetry", action="store_true", help="reduce by symmetry over interchangeable ids")
    parser.add_argument("--engine", default="bfs", help="search engine: " + ", ".join(engines.ENGINES))
    parser.add_argument("--workers", type=_workers, default=1,
                        help="worker processes (N or auto: one a core); N > 1 runs the parallel engine")
    parser.add_argument("--master", default="local[*]", help="Spark master URL (spark engine)")
    parser.add_argument("--spark-threshold", type=int, default=None, metavar="N",
                        help="spark engine: run levels locally while the frontier has fewer than N states (default 10000)")
    parser.add_argument("--checkpoint", metavar="FILE", help="write a checkpoint here (periodically, on Ctrl-C, on budget)")
    parser.add_argument("--checkpoint-every", type=_positive_float, default=300.0, metavar="SECONDS")
    parser.add_argument("--resume", metavar="FILE", help="continue the run saved in this checkpoint")
    parser.add_argument("--trace-dir", default=DEFAULT_TRACE_DIR, help="where counterexample traces are saved")
    parser.add_argument("--quiet", action="store_true", help="no live progress display")


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, not {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, not {text!r}")
    return value


def _workers(text: str) -> int:
    """``--workers``: a positive count, or ``auto`` (0: one a core, decided by the engine)."""
    if text == "auto":
        return 0
    try:
        return _positive_int(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"expected a positive integer or auto, not {text!r}") from None


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, not {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number, not {text!r}")
    return value


def model_from_args(args: argparse.Namespace) -> Model:
    return build_model(args.model, args.const, args.protocol, args.feature)


def select_invariants(model: Model, names: Sequence[str]) -> list[Invariant]:
    available = for_family(model.family)
    if not names:  # liveness properties build the whole state graph: only when asked for by name
        return [inv for inv in available.values() if inv.kind == SAFETY]
    chosen = []
    for name in names:
        if name not in available:
            known = ", ".join(available) or "none"
            raise UsageError(f"model {model.name} has no invariant {name!r}; its invariants: {known}")
        chosen.append(available[name])
    return chosen


def search_options(args: argparse.Namespace, model: Model, progress: Any = None) -> SearchOptions:
    header = {}
    for key in ("protocol",):
        if getattr(model, key, None) is not None:
            header[key] = getattr(model, key)
    checkpoint = args.checkpoint or args.resume
    return SearchOptions(
        invariants=select_invariants(model, args.invariant),
        stop_at_first=not args.keep_going,
        check_deadlock=args.deadlock,
        max_states=args.max_states,
        max_seconds=args.max_seconds,
        max_depth=args.max_depth,
        max_memory_mb=args.max_memory,
        symmetry=args.symmetry,
        checkpoint_path=checkpoint,
        checkpoint_every=args.checkpoint_every,
        resume_from=args.resume,
        progress=progress,
    )


# -- live progress ----------------------------------------------------------------------------------
class LiveProgress:
    """A live rich display of depth, states generated, distinct states, queue and states/s."""

    def __init__(self, console: Console, enabled: bool) -> None:
        self.console = console
        self.enabled = enabled and console.is_terminal
        self._live = None

    def __enter__(self) -> LiveProgress:
        if self.enabled:
            from rich.live import Live

            self._live = Live(self._render(None), console=self.console, refresh_per_second=4, transient=True)
            self._live.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._live is not None:
            self._live.__exit__(*exc)

    def __call__(self, progress: Progress) -> None:
        if self._live is not None:
            self._live.update(self._render(progress))

    @staticmethod
    def _render(p: Progress | None) -> Any:
        from rich.table import Table

        table = Table(show_header=True, header_style="bold", box=None)
        for column in ("depth", "generated", "distinct", "queue", "distinct/s", "time"):
            table.add_column(column, justify="right")
        if p is not None:
            rate = p.distinct_states / p.seconds if p.seconds > 0 else 0.0
            table.add_row(
                str(p.depth), f"{p.states_generated:,}", f"{p.distinct_states:,}", f"{p.queue:,}",
                f"{rate:,.0f}", f"{p.seconds:.1f}s",
            )
        return table


# -- subcommands ------------------------------------------------------------------------------------
def save_traces(result: CheckResult, directory: str) -> None:
    from traces.io import default_trace_path, save_trace

    for violation in result.violations:
        violation.trace_file = save_trace(violation.trace, default_trace_path(directory, violation.trace))


def print_summary(console: Console, result: CheckResult) -> None:
    from traces.render import print_trace

    if result.verdict is Verdict.VIOLATED:
        for violation in result.violations:
            what = {
                "deadlock": "Deadlock reached",
                "liveness": f"Liveness property {violation.invariant} is violated (a state from which no healing path leads on)",
            }.get(violation.kind, f"Invariant {violation.invariant} is violated")
            console.print(f"[bold red]Error:[/] {what}. The behavior up to this point is ({violation.length} steps):")
            print_trace(console, violation.trace)
            if violation.trace_file:
                console.print(f"Trace saved to {violation.trace_file}")
    elif result.verdict is Verdict.HOLDS:
        console.print("[bold green]Model checking completed. No error has been found.[/]")
    else:
        console.print(f"[bold yellow]Undetermined:[/] {result.reason}. This is not a pass.")
        if result.checkpoint_file:
            console.print(f"Checkpoint written to {result.checkpoint_file}; continue with --resume {result.checkpoint_file}")
    forms = result.extra.get("property_forms", {})
    if any(not form.startswith("safety") for form in forms.values()):
        console.print("Properties: " + "; ".join(f"{name}: {form}" for name, form in forms.items()), highlight=False)
    if result.distinct_states or result.engine != "simulate":
        console.print(
            f"{result.states_generated:,} states generated, {result.distinct_states:,} distinct states found, "
            f"{result.queue:,} states left on queue."
        )
        console.print(f"The depth of the complete state graph search is {result.depth}.")
    else:
        console.print(f"{result.extra.get('walks', 0):,} walks, {result.states_generated:,} states generated, "
                      f"deepest walk {result.depth} states.")
    console.print(
        f"Finished in {result.seconds:.2f} s ({result.states_per_second:,.0f} distinct states/s, "
        f"engine {result.engine}, {result.workers} worker{'s' if result.workers != 1 else ''}"
        f"{', symmetry' if result.symmetry else ''})."
    )
    if "serial_share" in result.extra:  # the parallel engine's own measure of what did not run in parallel
        console.print(f"Serial share {result.extra['serial_share']:.2%} of the CPU time: Amdahl's law predicts "
                      f"{result.extra['amdahl_speedup']['16']}x on 16 cores.", highlight=False)


def engine_extra(args: argparse.Namespace) -> dict[str, Any]:
    """Engine-specific options of the command line (``EngineOptions.extra``)."""
    threshold = getattr(args, "spark_threshold", None)
    return {} if threshold is None else {"threshold": threshold}


def cmd_check(args: argparse.Namespace) -> int:
    console = Console(stderr=args.json)
    model = model_from_args(args)
    with LiveProgress(Console(stderr=True), enabled=not (args.quiet or args.json)) as live:
        options = search_options(args, model, progress=live)
        result = engines.run(model, options, args.engine,
                             engines.EngineOptions(workers=args.workers, master=args.master, extra=engine_extra(args)))
    record_property_forms(result, options)
    save_traces(result, args.trace_dir)
    if args.json:
        print(json.dumps(result.to_json()))
    else:
        print_summary(console, result)
    return int(result.exit_code)


def record_property_forms(result: CheckResult, options: SearchOptions) -> None:
    """``property_forms``: how each property was checked (safety on every state, or liveness on the graph)."""
    forms = dict(result.extra.get("property_forms", {}))
    for inv in options.invariants:
        forms.setdefault(inv.name, "safety (every reachable state)" if inv.kind == SAFETY else "liveness (not checked)")
    result.extra["property_forms"] = forms


def cmd_simulate(args: argparse.Namespace) -> int:
    from checker.simulate import SimulationOptions, simulate

    console = Console(stderr=args.json)
    model = model_from_args(args)
    options = SearchOptions(invariants=select_invariants(model, args.invariant), stop_at_first=not args.keep_going)
    sim = SimulationOptions(walks=args.walks, depth=args.depth, seed=args.seed, max_seconds=args.max_seconds)
    result = simulate(model, options, sim)
    save_traces(result, args.trace_dir)
    if args.json:
        print(json.dumps(result.to_json()))
    else:
        print_summary(console, result)
    return int(result.exit_code)


def _model_listing(info: ModelInfo) -> dict[str, Any]:
    return {
        "name": info.name,
        "description": info.description,
        "constants": [
            {"name": c.name, "default": c.default, "description": c.description} for c in info.constants
        ],
        "protocols": dict(info.protocols),
        "default_protocol": info.default_protocol,
        "features": dict(info.features),
        "invariants": {name: inv.description for name, inv in for_family(_family_of(info)).items()},
    }


def _family_of(info: ModelInfo) -> str:
    defaults = {c.name: c.default for c in info.constants}
    kwargs = {"protocol": info.default_protocol, "features": {}} if info.protocols else {}
    return info.build(defaults, **kwargs).family


def cmd_list(args: argparse.Namespace) -> int:
    listing = [_model_listing(info) for info in all_models().values()]
    if args.json:
        print(json.dumps({"models": listing, "engines": {k: v[2] for k, v in engines.ENGINES.items()}}))
        return 0
    console = Console()
    for item in listing:
        console.print(f"[bold]{item['name']}[/]: {item['description']}")
        for const in item["constants"]:
            console.print(f"  --const {const['name']}={const['default']}  {const['description']}")
        for name, text in item["protocols"].items():
            mark = " (default)" if name == item["default_protocol"] else ""
            console.print(f"  --protocol {name}{mark}  {text}")
        for name, text in item["features"].items():
            console.print(f"  --feature {name}=on|off  {text}")
        for name, text in item["invariants"].items():
            console.print(f"  --invariant {name}  {text}")
    console.print("[bold]engines[/]: " + "; ".join(f"{k}: {v[2]}" for k, v in engines.ENGINES.items()))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="kmc", description="An explicit-state model checker for the Kafka replication protocol.")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)

    check = sub.add_parser("check", help="exhaustive breadth-first check of a model")
    add_model_options(check)
    add_search_options(check)
    check.set_defaults(func=cmd_check)

    simulate = sub.add_parser("simulate", help="random walks, for configurations too big to exhaust")
    add_model_options(simulate)
    simulate.add_argument("--invariant", action="append", default=[], metavar="NAME")
    simulate.add_argument("--walks", type=_positive_int, default=1000)
    simulate.add_argument("--depth", type=_positive_int, default=50, help="maximum number of steps per walk")
    simulate.add_argument("--seed", type=int, default=0)
    simulate.add_argument("--max-seconds", type=_positive_float)
    simulate.add_argument("--continue", dest="keep_going", action="store_true")
    simulate.add_argument("--json", action="store_true")
    simulate.add_argument("--trace-dir", default=DEFAULT_TRACE_DIR)
    simulate.set_defaults(func=cmd_simulate)

    listing = sub.add_parser("list", help="models, protocol versions, invariants and engines")
    listing.add_argument("--json", action="store_true")
    listing.set_defaults(func=cmd_list)

    for module in SUBCOMMAND_MODULES:
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise
            continue
        mod.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    err = Console(stderr=True)
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        if not getattr(args, "func", None):
            parser.print_help()
            return int(ExitCode.USAGE)
        return args.func(args)
    except KmcError as exc:
        err.print(f"kmc: error: {exc}", markup=False, highlight=False, soft_wrap=True)
        return int(exc.code)
    except KeyboardInterrupt:
        err.print("kmc: interrupted (a checkpoint was written if --checkpoint was given)", markup=False)
        return int(ExitCode.INTERRUPTED)
    except BrokenPipeError:
        return 0


def entry() -> None:
    sys.exit(main())


if __name__ == "__main__":
    entry()
