"""The ``kmc`` command line (also ``python -m kmc``).

    kmc check MODEL [--const NAME=VALUE]... [--invariant NAME]... [--property MOD:FUNC]... [--json] ...
    kmc simulate MODEL [--walks N] [--depth D] [--seed S] ...
    kmc list [--json]
    kmc completion bash|zsh|tcsh
    kmc --version

The other front ends of this package add their subcommands (``kmc matrix``, ``kmc trace``,
``kmc explore``): each module has ``add_parser(subparsers)``; the options they share are
``kmc.options``. Every user error becomes one line on stderr and a documented exit code (see
``spec.errors.ExitCode``), never a traceback.
"""  # noqa: E501

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

from rich.console import Console

import kmc
from checker import engines
from checker.invariant import SAFETY
from checker.result import CheckResult, Verdict, collision_estimates
from checker.search import CHECKER_VERSION, Progress, SearchOptions, uses_symmetry
from invariants.registry import for_family
from kmc import explore, trace
from kmc.matrix import command as matrix
from kmc.options import (
    DEFAULT_TRACE_DIR,
    KmcParser,
    add_model_options,
    add_property_option,
    add_search_options,
    chosen_engine,
    model_from_args,
    positive_float,
    positive_int,
    search_options,
    select_invariants,
    steered_options,
    worker_count,
)
from kmc.progress import ProgressLines
from spec.errors import EnvironmentMissingError, ExitCode, KmcError, UsageError
from spec.model import Model
from spec.registry import ModelInfo, all_models, get_model_info

COMPLETION_SHELLS = ("bash", "zsh", "tcsh")
# seconds between two progress lines of kmc check on a stderr that is not a terminal
PROGRESS_LINE_EVERY = 60.0


def kmc_version() -> str:
    try:
        from importlib.metadata import PackageNotFoundError, version

        return version("kmc")
    except (ImportError, PackageNotFoundError):
        return CHECKER_VERSION


# -- live progress ---------------------------------------------------------------------------------
class LiveProgress:
    """A live rich display of depth, states generated, distinct states, queue and states/s."""

    def __init__(self, console: Console, enabled: bool) -> None:
        self.console = console
        self.enabled = enabled and console.is_terminal
        self._live = None

    def __enter__(self) -> LiveProgress:
        if self.enabled:
            from rich.live import Live

            self._live = Live(self._render(None), console=self.console, refresh_per_second=4,
                              transient=True)
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


# -- subcommands -----------------------------------------------------------------------------------
def save_traces(result: CheckResult, directory: str) -> None:
    from traces.io import default_trace_path, save_trace

    for violation in result.violations:
        violation.trace_file = save_trace(violation.trace,
                                          default_trace_path(directory, violation.trace),
                                          keep_others=True)


def print_summary(console: Console, result: CheckResult) -> None:
    from traces.render import print_trace

    if result.verdict is Verdict.VIOLATED:
        for violation in result.violations:
            what = {
                "deadlock": "Deadlock reached (a state with no successor; -deadlock turns the "
                            "check off, as in TLC)",
                "liveness": f"Liveness property {violation.invariant} is violated (a state from "
                            "which no healing path leads on)",
            }.get(violation.kind, f"Invariant {violation.invariant} is violated")
            console.print(f"[bold red]Error:[/] {what}. The behavior up to this point is "
                          f"({violation.length} steps):")
            print_trace(console, violation.trace)
            if violation.trace_file:
                console.print(f"Trace saved to {violation.trace_file}")
    elif result.verdict is Verdict.HOLDS:
        console.print("[bold green]Model checking completed. No error has been found.[/]")
    else:
        console.print(f"[bold yellow]Undetermined:[/] {result.reason}. This is not a pass.")
        if result.checkpoint_file:
            console.print(f"Checkpoint written to {result.checkpoint_file}; continue with --resume "
                          f"{result.checkpoint_file}")
    forms = result.extra.get("property_forms", {})
    if any(not form.startswith("safety") for form in forms.values()):
        console.print("Properties: " + "; ".join(f"{name}: {form}" for name, form in forms.items()),
                      highlight=False)
    simulated = result.engine == "simulate"
    if simulated:
        console.print(f"{result.extra.get('walks', 0):,} walks, {result.states_generated:,} states "
                      f"generated, {result.distinct_states:,} distinct states covered, deepest "
                      f"walk {result.depth} states.")
    else:
        if result.collision is not None:
            console.print(statistics_lines(result), highlight=False)
        console.print(
            f"{result.states_generated:,} states generated, {result.distinct_states:,} distinct "
            f"states found, {result.queue:,} states left on queue."
        )
        if result.engine == "directed":  # best-first: no level is ever complete
            console.print("The deepest state the directed search expanded is at depth "
                          f"{result.depth}.")
        else:
            console.print(f"The depth of the complete state graph search is {result.depth}.")
        if result.out_degree is not None:
            d = result.out_degree
            console.print(f"The average outdegree of the complete state graph is {d.mean:.2f} "
                          f"(minimum is {d.minimum}, the maximum {d.maximum} and the 95th "
                          f"percentile is {d.percentile_95}).",
                          highlight=False, soft_wrap=True)
    rate = (f"{result.states_generated / result.seconds if result.seconds > 0 else 0.0:,.0f} "
            "states generated/s"
            if simulated else f"{result.states_per_second:,.0f} distinct states/s")
    console.print(
        f"Finished in {result.seconds:.2f} s ({rate}, "
        f"engine {result.engine}, {result.workers} worker{'s' if result.workers != 1 else ''}"
        f"{', symmetry' if result.symmetry else ''})."
    )
    # the parallel engine's own measure of what did not run in parallel
    if "serial_share" in result.extra:
        console.print(f"Serial share {result.extra['serial_share']:.2%} of the CPU time: Amdahl's "
                      f"law predicts {result.extra['amdahl_speedup']['16']}x on 16 cores.",
                      highlight=False)


def statistics_lines(result: CheckResult) -> str:
    """TLC's two estimates of the probability of a fingerprint collision (see
    ``checker.result.Collision``)."""
    c = result.collision
    lines = ["Estimates of the probability that kmc did not check all reachable states",
             "because two distinct states had the same fingerprint:",
             f"  calculated (optimistic):  val = {c.optimistic:.1E}"]
    if c.observed is not None:
        lines.append(f"  based on the actual fingerprints:  val = {c.observed:.1E}")
    return "\n".join(lines)


def declared_actions(model: Model) -> list[Any]:
    """Every action the model declares: its ``all_actions()`` if it has one, else the ``Action``
    values it holds in its attributes (models build their actions once, see
    ``spec.model.Action``)."""
    from spec.model import Action

    declared = model.all_actions()
    if declared is not None:
        return list(dict.fromkeys(declared))
    found: dict[Any, None] = {}

    def walk(value: Any, depth: int) -> None:
        if isinstance(value, Action):
            found.setdefault(value)
        elif depth < 4 and isinstance(value, (list, tuple)):
            for item in value:
                walk(item, depth + 1)
        elif depth < 4 and isinstance(value, dict):
            for item in value.values():
                walk(item, depth + 1)

    for value in vars(model).values():
        walk(value, 0)
    return list(found)


def coverage_report(model: Model, result: CheckResult) -> dict[str, Any]:
    """The ``--coverage`` figures: successors per action, sorted by name and parameters, the action
    names that never fired and the declared instances (with parameters) that never fired."""
    counts = sorted(result.coverage.items(), key=lambda item: (item[0].name, repr(item[0].params)))
    declared = declared_actions(model)
    fired_names = {act.name for act, _ in counts}
    never = [a for a in declared if a not in result.coverage]
    return {
        "counts": [(str(act), n) for act, n in counts],
        "total": sum(result.coverage.values()),
        "never_fired": list(dict.fromkeys(a.name for a in never if a.name not in fired_names)),
        "never_fired_instances": [str(a) for a in never if a.name in fired_names],
    }


def print_coverage(console: Console, report: dict[str, Any], result: CheckResult) -> None:
    console.print(f"Coverage: successors generated by each action ({report['total']:,} = "
                  f"{result.states_generated:,} states generated - "
                  f"{result.states_generated - report['total']:,} initial states):",
                  highlight=False, soft_wrap=True)
    width = max((len(name) for name, _ in report["counts"]), default=0)
    for name, n in report["counts"]:
        console.print(f"  {name.ljust(width)}  {n:>12,}", highlight=False, soft_wrap=True)
    width = max(console.width, 40)
    for line in wrap_items("Actions that never fired:", report["never_fired"] or ["none"], width):
        console.print(line, highlight=False, soft_wrap=True)
    if report["never_fired_instances"]:
        for line in wrap_items("Instances that never fired (of actions that did):",
                               report["never_fired_instances"], width):
            console.print(line, highlight=False, soft_wrap=True)


def wrap_items(title: str, items: Sequence[str], width: int) -> list[str]:
    """``title`` and comma-separated items, wrapped between items (an item is never split)."""
    lines, current = [], title
    for i, item in enumerate(items):
        text = item + ("," if i < len(items) - 1 else ".")
        if len(current) + 1 + len(text) > width and current.strip():
            lines.append(current)
            current = "  " + text
        else:
            current = f"{current} {text}"
    return lines + [current]


def run_search(model: Model, options: SearchOptions, engine: str,
               engine_options: Any) -> CheckResult:
    """The safety search on the chosen engine, then any liveness property (``engines.run``)."""
    return engines.run(model, options, engine, engine_options)


def cmd_check(args: argparse.Namespace) -> int:
    args.engine, engine_options = chosen_engine(args)
    # Spark: its JVM's own log and start-up lines
    if args.verbose and hasattr(engine_options, "jvm_log"):
        engine_options = dataclasses.replace(engine_options, jvm_log=True)
    console = Console(stderr=args.json)
    model = model_from_args(args)
    err = Console(stderr=True)
    runs = model.what_runs()
    with LiveProgress(err, enabled=not (args.quiet or args.json)) as live:
        progress: Any = live
        # a log, not a terminal: a TLC-like line every minute
        if not (args.quiet or err.is_terminal):
            progress = ProgressLines(interval=PROGRESS_LINE_EVERY)
        options, note = steered_options(args, search_options(args, model, progress=progress))
        # a refused combination is one line on its own, before the header
        uses_symmetry(model, options)
        if runs and not args.json:
            print_what_runs(console, model.name, runs, verbose=args.verbose)
        why = model.symmetry_reduces_nothing() if options.symmetry else None
        if why:  # decided from the model before the search: one line, and the search runs as asked
            print(f"warning: --symmetry reduces nothing here: {why}", file=sys.stderr)
        result = run_search(model, options, args.engine, engine_options)
    if note:  # after the search: a refusal of the engine's stays one line
        print(note, file=sys.stderr)
    record_property_forms(result, options)
    if args.kernel == "off":  # which path ran, whatever was asked (--json, --verbose)
        result.extra.setdefault("path", {"path": "readable", "reason": "--kernel off"})
    # an engine that keeps no fingerprints in one place: the optimistic estimate
    if result.collision is None:
        result.collision = collision_estimates(result.distinct_states, result.states_generated)
    save_traces(result, args.trace_dir)
    report = coverage_report(model, result) if result.coverage is not None else None
    if args.json:
        data = result.to_json()
        data.update(runs)  # the protocol asked for, its release, the row and the flags that ran
        if report is not None:
            data["coverage"] = [{"action": name, "count": n} for name, n in report["counts"]]
            data["never_fired"] = report["never_fired"]
            data["never_fired_instances"] = report["never_fired_instances"]
        print(json.dumps(data))
    else:
        print_summary(console, result)
        print_reduction(console, result)
        print_directed(console, result)
        if report is not None:
            print_coverage(console, report, result)
        if args.verbose:
            print_path(console, result)
    return int(result.exit_code)


def print_what_runs(console: Console, model_name: str, runs: dict[str, Any],
                    verbose: bool = False) -> None:
    """The header of a run: the protocol asked for, the release it is, the row and the flags that
    differ from the row's (``--verbose``: every flag that is on)."""
    asked, row = runs.get("protocol"), runs.get("row")
    release = f"release {runs['release']}, " if runs.get("release") else ""
    mode = f"{runs['mode']} mode, " if runs.get("mode") else ""
    differs = " ".join(f"{'+' if on else '-'}{flag}"
                       for flag, on in (runs.get("differs_from_row") or {}).items())
    what = (f"row {row}" + (f" {differs}" if differs else "") if row != asked or differs
            else f"row {row}")
    console.print(f"Checking {model_name} --protocol {asked}: {release}{mode}{what}",
                  highlight=False, markup=False)
    if verbose:
        console.print("Flags on: " + (", ".join(runs.get("flags") or []) or "none"),
                      highlight=False, markup=False)


def print_path(console: Console, result: CheckResult) -> None:
    """``--verbose``: which path ran, the compiled kernel or the readable model (and why not the
    kernel)."""
    path = result.extra["path"]
    if path["path"] == "kernel" and path.get("engine") == "spark":
        levels = {"blocks": "; levels in blocks", "dataframes": "; levels in DataFrames"}
        console.print(f"Path: the compiled kernel on the Spark executors ({path['kernel']}, "
                      f"{path['state_bytes']} bytes a state on the wire"
                      f"{levels.get(path.get('levels'), '')}; library {path['library']})",
                      highlight=False)
        places = level_places(result.extra.get("spark", {}))
        if places:
            console.print(f"Levels: {places}", highlight=False)
    elif path["path"] == "kernel":
        console.print(f"Path: the compiled kernel ({path['kernel']}, {path['state_bytes']} bytes a "
                      f"state, {path['kernel_bytes'] / 2**20:.1f} MB; library {path['library']})",
                      highlight=False)
        # --workers N on the kernel: the local engine's search, N threads of one process
        if "workers_asked" in path:
            console.print(f"--workers {path['workers_asked']}: {path['reason']}", highlight=False)
    else:
        console.print(f"Path: the readable model ({path['reason']})", highlight=False)
    archive = result.extra.get("spark", {}).get("class_archive")
    if archive is not None:
        from checker.spark.class_archive import WORDS

        console.print(f"Spark driver's class archive: {WORDS.get(archive, archive)}",
                      highlight=False)


def level_places(spark: dict[str, Any]) -> str:
    """Where a Spark run's levels ran, as runs of depths: "1-3 local, 4-9 driver, 10-19 spark"
    (local: the readable model below --spark-threshold; driver: the kernel in C below
    --spark-driver-below; spark: the executors)."""
    runs: list[list[Any]] = []
    for level in spark.get("levels", []):
        if runs and runs[-1][0] == level["engine"] and runs[-1][2] + 1 == level["depth"]:
            runs[-1][2] = level["depth"]
        else:
            runs.append([level["engine"], level["depth"], level["depth"]])
    return ", ".join(f"{lo}{'' if lo == hi else f'-{hi}'} {engine}" for engine, lo, hi in runs)


def print_reduction(console: Console, result: CheckResult) -> None:
    """What ``--reduce dead`` did, and whether its counterexamples are shortest
    (``checker.dead``)."""
    reduction = result.extra.get("reduction")
    if not reduction:
        return
    console.print("Dead-message reduction: dropped as soon as dead: "
                  f"{', '.join(reduction['dead_messages'])}")
    shortest = result.extra.get("shortest")
    if shortest:
        console.print("Shortest counterexamples: from a full search bounded at depth "
                      f"{shortest['depth_bound']} ({shortest['distinct_states']:,} distinct "
                      "states)")
    elif result.violations:
        console.print("A counterexample found with dead-message reduction need not be shortest: "
                      "add --shortest")


def print_directed(console: Console, result: CheckResult) -> None:
    """That a directed search's counterexample need not be shortest, and the command that gives a
    shortest one."""
    if result.engine != "directed" or not result.violations:
        return
    steps = max(v.length for v in result.violations)
    console.print("A counterexample of the directed search need not be shortest: a breadth-first "
                  f"search bounded at its length (--engine local --max-depth {steps + 1}) gives a "
                  "shortest one", highlight=False)


def record_property_forms(result: CheckResult, options: SearchOptions) -> None:
    """``property_forms``: how each property was checked (safety on every state, or liveness on the
    graph)."""
    forms = dict(result.extra.get("property_forms", {}))
    for inv in options.invariants:
        forms.setdefault(inv.name, "safety (every reachable state)" if inv.kind == SAFETY
                         else "liveness (not checked)")
    result.extra["property_forms"] = forms


def cmd_simulate(args: argparse.Namespace) -> int:
    from checker.simulate import SimulationOptions, simulate

    console = Console(stderr=args.json)
    model = model_from_args(args)
    runs = model.what_runs()
    if runs and not args.json:
        print_what_runs(console, model.name, runs)
    options = SearchOptions(invariants=select_invariants(model, args.invariant, args.property),
                            stop_at_first=not args.keep_going)
    if args.engine == "spark" and args.workers != 1:
        raise UsageError("kmc simulate --workers is for --engine local; on Spark the walks run on "
                         "the executors' cores (drop --workers, or size the cluster with --master "
                         "local[N])")
    if args.engine != "spark" and args.master is not None:
        raise UsageError(f"--master is for --engine spark, not --engine {args.engine}; add "
                         "--engine spark or drop it")
    sim = SimulationOptions(walks=args.walks, depth=args.depth, seed=args.seed,
                            max_seconds=args.max_seconds, workers=args.workers, engine=args.engine,
                            master=args.master, kernel=args.kernel)
    result = simulate(model, options, sim)
    if args.kernel == "off":  # which path ran, whatever was asked (--json)
        result.extra.setdefault("path", {"path": "readable", "reason": "--kernel off"})
    save_traces(result, args.trace_dir)
    if args.json:
        print(json.dumps({**result.to_json(), **runs}))
    else:
        print_summary(console, result)
    return int(result.exit_code)


def _model_listing(info: ModelInfo) -> dict[str, Any]:
    return {
        "name": info.name,
        "description": info.description,
        "constants": [
            {"name": c.name, "default": c.default, "description": c.description}
            for c in info.constants
        ],
        "protocols": dict(info.protocols),
        "protocol_aliases": dict(info.protocol_aliases),
        "default_protocol": info.default_protocol,
        "features": dict(info.features),
        "invariants": {name: inv.description for name, inv in for_family(_family_of(info)).items()},
        **({"release_numbers": _release_span(info)} if info.release_table is not None else {}),
    }


def _release_span(info: ModelInfo) -> str:
    """``0.10.2.0 to 4.1.1``: the first and last release a model takes by its number."""
    releases = sorted({row["release"] for row in info.release_table()},
                      key=lambda r: tuple(int(p) for p in r.split(".")))
    return f"{releases[0]} to {releases[-1]}"


def _family_of(info: ModelInfo) -> str:
    defaults = {c.name: c.default for c in info.constants}
    kwargs = {"protocol": info.default_protocol, "features": {}} if info.protocols else {}
    return info.build(defaults, **kwargs).family


def cmd_list_rules(args: argparse.Namespace) -> int:
    """``kmc list --rules [--model M] [--protocol P]``: the model's rule table (id, release, ticket,
    source)."""
    info = get_model_info(args.model)
    if info.rules is None:
        raise UsageError(f"model {info.name} has no rule table; 'kmc list' shows its protocol "
                         "versions")
    if args.protocol is not None and not info.has_protocol(args.protocol):
        raise UsageError(info.unknown_protocol(args.protocol))
    rows = info.rules(args.protocol)
    if args.json:
        print(json.dumps({"model": info.name, "protocol": args.protocol, "rules": rows}))
        return 0
    console = Console()
    title = f"{info.name} rules" + (f" under {args.protocol}" if args.protocol else "")
    console.print(f"[bold]{title}[/] ({len(rows)} rules; a flag is switched with --feature "
                  "FLAG=on|off)")
    for row in rows:
        on = {"yes": " [green]on[/]", "no": " [red]off[/]"}.get(row.get("on", ""), "")
        console.print(f"\n[bold]{row['rule']}[/]{on}")
        console.print(f"  id: {row['id']}   flag: {row['flag']}   ticket: {row['ticket']}   "
                      f"since: {row['release']}")
        console.print(f"  releases: {row['releases']}")
        if "rows" in row:
            console.print(f"  protocol rows with it: {row['rows']}")
        if row.get("default"):
            console.print(f"  on by default: {row['default']} (every release: kmc list --releases)")
        console.print(f"  source: {row['source']}", markup=False)
        console.print(f"  model: {row['model']}", markup=False)
        if row.get("abstraction"):
            console.print(f"  abstraction: {row['abstraction']}", markup=False)
    return 0


def release_groups(rows: list[dict[str, Any]]) -> list[tuple[list[str], dict[str, Any]]]:
    """Consecutive releases of one mode with the same row and the same flags against it, as (names,
    row)."""
    groups: list[tuple[list[str], dict[str, Any]]] = []
    for row in rows:
        key = (row["mode"], row["row"], tuple(row["differs"].items()))
        if (groups and (groups[-1][1]["mode"], groups[-1][1]["row"],
                        tuple(groups[-1][1]["differs"].items())) == key):
            groups[-1][0].append(row["protocol"])
        else:
            groups.append(([row["protocol"]], row))
    return groups


def cmd_list_releases(args: argparse.Namespace) -> int:
    """``kmc list --releases [--model M]``: every release by its number, the protocol row it runs
    and the flags that differ from the row's (the release's flags, computed from the rule table's
    since/until releases)."""
    info = get_model_info(args.model)
    if info.release_table is None:
        raise UsageError(f"model {info.name} has no releases by number; 'kmc list' shows its "
                         "protocol versions")
    rows = info.release_table()
    if args.json:
        print(json.dumps({"model": info.name, "releases": rows}))
        return 0
    console = Console()
    console.print(f"[bold]{info.name} releases[/] ({len(rows)}): --protocol <release> runs the row "
                  "with the flags shown "
                  "(+ on, - off against the row's defaults); kraft-<release> is KRaft mode, 4.x "
                  "KRaft only")
    mode = None
    for names, row in release_groups(rows):
        if row["mode"] != mode:
            mode = row["mode"]
            console.print(f"\n[bold]{mode} mode[/]")
        flags = " ".join(f"{'+' if on else '-'}{flag}" for flag, on in row["differs"].items())
        console.print(f"  {', '.join(names)}  ->  {row['row']}" + (f" {flags}" if flags else ""),
                      highlight=False)
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    if args.rules and args.releases:
        raise UsageError("--rules and --releases are two listings: give one")
    if args.rules:
        return cmd_list_rules(args)
    if args.protocol is not None:
        raise UsageError("--protocol goes with --rules: kmc list --rules --protocol P")
    if args.releases:
        return cmd_list_releases(args)
    listing = [_model_listing(info) for info in all_models().values()]
    if args.json:
        print(json.dumps({"models": listing,
                          "engines": {k: v.description for k, v in engines.ENGINES.items()}}))
        return 0
    console = Console()
    for item in listing:
        console.print(f"[bold]{item['name']}[/]: {item['description']}")
        for const in item["constants"]:
            console.print(f"  --const {const['name']}={const['default']}  {const['description']}")
        for name, text in item["protocols"].items():
            mark = " (default)" if name == item["default_protocol"] else ""
            console.print(f"  --protocol {name}{mark}  {text}")
        for alias, target in item["protocol_aliases"].items():
            console.print(f"  --protocol {alias}  alias of {target}: {item['protocols'][target]}")
        if item.get("release_numbers"):
            console.print("  --protocol <release>  any release by its number, "
                          f"{item['release_numbers']} "
                          "(kraft-<release>: KRaft mode): its row and flags, kmc list --releases")
        for name, text in item["features"].items():
            console.print(f"  --feature {name}=on|off  {text}")
        for name, text in item["invariants"].items():
            console.print(f"  --invariant {name}  {text}")
    console.print("[bold]engines[/]: "
                  + "; ".join(f"{k}: {v.description}" for k, v in engines.ENGINES.items()))
    return 0


def cmd_completion(args: argparse.Namespace) -> int:
    try:
        import shtab
    except ImportError:
        raise EnvironmentMissingError("shell completion needs shtab: pip install shtab") from None
    print(shtab.complete(build_parser(), shell=args.shell))
    return 0


def _top_level(parser: argparse.ArgumentParser) -> Any:
    def run(args: argparse.Namespace) -> int:
        if args.version:
            print(f"kmc {kmc_version()}")
            return 0
        parser.print_help()
        return int(ExitCode.USAGE)

    return run


#: where ``kmc simulate`` runs its walks
SIMULATE_ENGINES = ("local", "spark")


def add_simulate_parser(sub: Any) -> None:
    """``kmc simulate``: random walks, for configurations too big to exhaust."""
    simulate = sub.add_parser("simulate", help="random walks, for configurations too big to "
                                               "exhaust")
    add_model_options(simulate)
    simulate.add_argument("--invariant", action="append", default=[], metavar="NAME")
    add_property_option(simulate)
    simulate.add_argument("--walks", type=positive_int, default=1000)
    simulate.add_argument("--depth", type=positive_int, default=50,
                          help="maximum number of steps per walk")
    simulate.add_argument("--seed", type=int, default=0)
    simulate.add_argument("--max-seconds", type=positive_float)
    simulate.add_argument("--workers", type=worker_count, default=1,
                          help="processes the walks run in (a number, or auto: one a core); the "
                               "same walks at any count")
    simulate.add_argument("--engine", default="local", choices=SIMULATE_ENGINES,
                          help="local (--workers processes here, the default) or spark (the walks' "
                          "batches on Spark's executors, --master): the same walks either way")
    simulate.add_argument("--master", default=None,
                          help="Spark master URL (--engine spark; default local[*], or "
                               "spark-submit's)")
    simulate.add_argument("--kernel", choices=("auto", "on", "off"), default="auto",
                          help="the compiled successor kernel (--engine local; models that have "
                          "one): auto where it applies (the default), on (else exit 69), off (the "
                          "readable model); the same walks for a seed either way; --json's path "
                          "says which ran")
    simulate.add_argument("--continue", dest="keep_going", action="store_true")
    simulate.add_argument("--json", action="store_true")
    simulate.add_argument("--trace-dir", default=DEFAULT_TRACE_DIR)
    simulate.add_argument("--quiet", action="store_true", help="no live progress display (as for "
                                                               "check)")
    simulate.set_defaults(func=cmd_simulate)


def build_parser() -> argparse.ArgumentParser:
    parser = KmcParser(prog="kmc", description="An explicit-state model checker for the Kafka "
                                               "replication protocol.")
    parser.add_argument("--version", action="store_true", help="print kmc's version and exit")
    parser.set_defaults(func=_top_level(parser))
    sub = parser.add_subparsers(dest="command", parser_class=KmcParser)

    check = sub.add_parser("check", help="exhaustive breadth-first check of a model")
    add_model_options(check)
    add_search_options(check)
    check.add_argument("--kernel", choices=("auto", "on", "off"), default="auto",
                       help="the compiled successor kernel (local, parallel and spark engines; "
                            "models that have one: two-phase, tla:Kip101, tla:Kip279, tla:Kip320, "
                            "kafka on every row without reassignments): auto where "
                            "it applies (the default), on (else exit 69), off (the readable "
                            "model); the same counts, depth, verdict and traces either way")
    check.add_argument("--verbose", action="store_true",
                       help="the header also lists every feature flag that is on in the run, and "
                            "the run says which path ran (the compiled kernel or the readable "
                            "model, and why); a Spark run also shows its JVM's start-up lines and "
                            "Spark's log (else only errors)")
    check.set_defaults(func=cmd_check)

    add_simulate_parser(sub)

    listing = sub.add_parser("list", help="models, protocol versions, invariants and engines")
    listing.add_argument("--json", action="store_true")
    listing.add_argument("--rules", action="store_true",
                         help="the rule table: every behaviour that differs between releases, with "
                              "its source")
    listing.add_argument("--releases", action="store_true",
                         help="every release by its number: the protocol row it runs and the flags "
                              "it differs by")
    listing.add_argument("--model", default="kafka", help="with --rules or --releases: the model "
                                                          "(default kafka)")
    listing.add_argument("--protocol", help="with --rules: mark which rules this protocol version "
                                            "has")
    listing.set_defaults(func=cmd_list)

    completion = sub.add_parser("completion", help="print a shell completion script (bash, zsh or "
                                                   "tcsh)",
                                description="Print a completion script for kmc. bash: "
                                "kmc completion bash > "
                                "~/.local/share/bash-completion/completions/kmc; zsh: kmc "
                                "completion zsh > \"${fpath[1]}/_kmc\"")
    completion.add_argument("shell", choices=COMPLETION_SHELLS)
    completion.set_defaults(func=cmd_completion)

    for front_end in (matrix, trace, explore):
        front_end.add_parser(sub)
    return parser


_KINDS = {
    ExitCode.USAGE: "usage", ExitCode.BAD_FILE: "bad-input-file", ExitCode.NO_INPUT: "no-input",
    ExitCode.NOT_REPLAYABLE: "not-replayable", ExitCode.ENVIRONMENT: "unavailable",
    ExitCode.CANNOT_CREATE: "cannot-create-output", ExitCode.IO_ERROR: "output-io-error",
    ExitCode.INTERRUPTED: "interrupted",
}


def _fail(err: Console, as_json: bool, code: int, message: str) -> int:
    """The one line on stderr (and, under --json, a JSON error object on stdout) for a stopped
    command."""
    err.print(f"kmc: error: {message}", markup=False, highlight=False, soft_wrap=True)
    if as_json:
        kind = _KINDS.get(code, "error") if code != ExitCode.WRONG_MODEL else "wrong-input"
        try:
            print(json.dumps({"error": {"exit_code": code, "kind": kind, "message": message}}),
                  flush=True)
        except (BrokenPipeError, OSError):
            pass
    return code


def _interrupted_message(args: argparse.Namespace | None) -> str:
    import os

    checkpoint = getattr(args, "checkpoint", None) or getattr(args, "resume", None)
    # a Spark run directory (``--engine spark --checkpoint DIR``) is resumable once its first Spark
    # level committed
    if (checkpoint and (os.path.isfile(checkpoint)
                        or os.path.isfile(os.path.join(checkpoint, "run.json")))):
        saved = ("the last complete level is saved" if os.path.isfile(checkpoint) else
                 "the run is saved up to its last written level")  # spark: --checkpoint-every
        return (f"interrupted; {saved} in {checkpoint}: "
                f"run the same command with --resume {checkpoint} to continue")
    return "interrupted (give --checkpoint FILE to be able to continue a run later)"


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; every user error is one line (a JSON object too under --json) and its exit
    code."""
    err = Console(stderr=True)
    words = list(sys.argv[1:] if argv is None else argv)
    as_json = "--json" in words
    args = None
    try:
        kmc.started()  # a Ctrl-C while kmc started ends it here (kmc/__init__.py)
        parser = build_parser()
        args = parser.parse_args(argv)
        if not getattr(args, "func", None):
            parser.print_help()
            return int(ExitCode.USAGE)
        return args.func(args)
    except KmcError as exc:
        return _fail(err, as_json, int(exc.code), str(exc))
    except KeyboardInterrupt:
        return _fail(err, as_json, int(ExitCode.INTERRUPTED), _interrupted_message(args))
    except BrokenPipeError:
        return 0
    # an output nobody wrapped: where it cannot be created, or the disk is full
    except OSError as exc:
        from checker.safe_io import output_error

        out = output_error(exc.filename or "output", exc)
        return _fail(err, as_json, int(out.code), str(out))
    except RecursionError:
        return _fail(err, as_json, int(ExitCode.BAD_FILE),
                     "an input nests too deeply to be read (RecursionError)")


def entry() -> None:
    try:
        code = main()
    except KeyboardInterrupt:  # a second Ctrl-C while the first was being reported
        code = int(ExitCode.INTERRUPTED)
    # The command is done and its answer printed: a Ctrl-C from now on changes nothing. Ignoring
    # it also keeps Python's shutdown, which puts back the default SIGINT action, from being
    # killed by the signal (exit -2 instead of the command's code).
    import signal

    with contextlib.suppress(ValueError, OSError):
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    if code == int(ExitCode.INTERRUPTED):
        # After a Ctrl-C handled here, the interpreter could still end the process by SIGINT (-2:
        # its exit path for an unhandled KeyboardInterrupt) instead of with this code: seen when the
        # signal came about 0.17 s into a command, 14 times in 60 timed tries (not a kmc traceback:
        # the line and the JSON were printed). Nothing is left to do (the command's own clean-up ran
        # in its finally blocks): flush and end with the code.
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":
    entry()
