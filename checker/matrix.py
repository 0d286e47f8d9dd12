"""``kmc matrix``: every protocol version of a model against every invariant, one check per cell.

    kmc matrix [MODEL] [--protocol P[,FLAG=on|off]...]... [--invariant I]... [--const NAME=VALUE]...
               [--feature F=on]... [--uniform-bounds] [--json]

Each cell is what an exhaustive breadth-first check of that one invariant, stopping at the first
violation, reports: a violated cell the length of a shortest counterexample, a cell that holds the
distinct states and depth of the whole (bounded) state space, a cell whose budget ran out
undetermined. Invariants of one protocol share searches (see ``check_cells``) without changing any
figure. Nothing is hard-coded: every figure comes from a run. Generic over models with versions.

A row is a protocol version, or a version with some flags switched (``kip-380,kafka-7786-fix=off``):
the same configuration with one mechanism taken away. A model may declare such rows for the default
matrix (``matrix_variants`` on the model: (protocol, (FLAG=on|off, ...)) pairs) and the bounds some
invariants are checked at (``matrix_bounds``: invariant name -> NAME=VALUE assignments applied
before the user's ``--const``), for properties whose counterexamples need actions that the default
bounds leave out. Every cell records the constants it was checked at; ``--uniform-bounds`` checks
every cell at the model's defaults (and ``--const``) instead.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.table import Table

from checker import engines
from checker.bfs import check
from checker.errors import ExitCode, UsageError
from checker.result import CheckResult, Verdict
from checker.search import SearchOptions
from invariants.base import SAFETY
from invariants.registry import for_family
from spec.registry import build_model, get_model_info


@dataclass(frozen=True)
class Cell:
    protocol: str
    invariant: str
    verdict: str
    distinct_states: int
    states_generated: int
    depth: int
    length: int | None  # of the shortest counterexample, None unless violated
    seconds: float
    explanation: str | None = None
    reason: str | None = None
    constants: dict[str, Any] | None = None  # the bounds this cell was checked at

    def to_json(self) -> dict[str, Any]:
        return {
            "protocol": self.protocol,
            "constants": self.constants,
            "invariant": self.invariant,
            "verdict": self.verdict,
            "distinct_states": self.distinct_states,
            "states_generated": self.states_generated,
            "depth": self.depth,
            "length": self.length,
            "seconds": round(self.seconds, 3),
            "explanation": self.explanation,
            "reason": self.reason,
        }


def _cell(protocol: str, invariant: str, result: CheckResult) -> Cell:
    violation = next((v for v in result.violations if v.invariant == invariant), None)
    return Cell(
        protocol=protocol,
        invariant=invariant,
        verdict=Verdict.VIOLATED.value if violation else result.verdict.value,
        distinct_states=result.distinct_states,
        states_generated=result.states_generated,
        depth=result.depth,
        length=violation.length if violation else None,
        seconds=result.seconds,
        explanation=violation.trace.explanation if violation else None,
        reason=None if violation else result.reason,
        constants=dict(result.constants),
    )


def check_cells(model: Any, protocol: str, invariants: Sequence[Any], options: dict[str, Any],
                engine: str = "bfs", engine_options: Any = None) -> list[Cell]:
    """One cell per invariant, with as few searches as possible.

    A breadth-first search that checks several invariants and stops at the first level where one
    fails has, at that moment, explored exactly what a search for that invariant alone would have:
    the same distinct states, depth and shortest counterexample. So the invariants share one search;
    the ones violated at its last level get their cells, the others share the next search, and the
    ones still standing when a search exhausts the space hold. The figures are those of one search
    per cell; only the work is shared.
    """
    remaining = list(invariants)
    cells: dict[str, Cell] = {}
    while remaining:
        search = SearchOptions(invariants=remaining, **options)
        result = check(model, search) if engine == "bfs" else engines.run(model, search, engine, engine_options)
        violated = {v.invariant for v in result.violations}
        for inv in remaining:
            if inv.name in violated or not violated:
                cells[inv.name] = _cell(protocol, inv.name, result)
        remaining = [inv for inv in remaining if inv.name not in cells]
    return [cells[inv.name] for inv in invariants]


@dataclass(frozen=True)
class Row:
    """One row of the matrix: a protocol version, with some of its flags switched or not."""

    label: str
    protocol: str | None
    features: tuple[str, ...] = ()


def parse_row(text: str) -> Row:
    """``kip-380`` or ``kip-380,kafka-7786-fix=off,unclean=on``."""
    protocol, *flags = [part.strip() for part in text.split(",")]
    for flag in flags:
        if "=" not in flag:
            raise UsageError(f"--protocol {text!r}: write the flags as FLAG=on|off after the version, e.g. kip-380,unclean=on")
    return Row(text, protocol or None, tuple(flags))


def default_rows(model_name: str) -> list[Row]:
    """Every version of the model, then the variants the model declares for the matrix."""
    info = get_model_info(model_name)
    rows = [Row(name, name) for name in info.protocols] or [Row("-", None)]
    model = build_model(model_name, [], info.default_protocol, [])
    for protocol, flags in getattr(model, "matrix_variants", ()):
        rows.append(Row(",".join((protocol, *flags)), protocol, tuple(flags)))
    return rows


def run_matrix(
    model_name: str,
    protocols: Sequence[str] = (),
    invariants: Sequence[str] = (),
    constants: Sequence[str] = (),
    features: Sequence[str] = (),
    max_seconds: float | None = None,
    max_states: int | None = None,
    on_cell: Any = None,
    engine: str = "bfs",
    engine_options: Any = None,
    uniform_bounds: bool = False,
) -> list[Cell]:
    """Check every chosen row against every chosen safety invariant; one ``Cell`` each.

    ``protocols`` are rows as ``parse_row`` reads them (default: ``default_rows``). Unless
    ``uniform_bounds``, an invariant the model lists in ``matrix_bounds`` is checked at those
    bounds, overridden by ``constants``.
    """
    info = get_model_info(model_name)
    rows = [parse_row(p) for p in protocols] if protocols else default_rows(model_name)
    for row in rows:
        if row.protocol is not None and not info.has_protocol(row.protocol):
            raise UsageError(f"unknown protocol {row.protocol!r} for model {model_name}; known: {info.protocol_names()}")
    cells = []
    for row in rows:
        flags = list(features) + list(row.features)
        model = build_model(model_name, list(constants), row.protocol, flags)
        available = {k: v for k, v in for_family(model.family).items() if v.kind == SAFETY}
        names = list(invariants) or list(available)
        for name in names:
            if name not in available:
                raise UsageError(f"model {model_name} has no invariant {name!r}; its invariants: {', '.join(available)}")
        header: dict[str, Any] = {"protocol": row.protocol} if row.protocol else {}
        if row.features:
            header["row"] = row.label
        options = {"max_seconds": max_seconds, "max_states": max_states, "header": header}
        bounds = {} if uniform_bounds else dict(getattr(model, "matrix_bounds", {}))
        groups: dict[tuple[str, ...], list[str]] = {}
        for name in names:
            groups.setdefault(tuple(bounds.get(name, ())), []).append(name)
        done: dict[str, Cell] = {}
        for profile, group in groups.items():
            checked = model if not profile else build_model(model_name, [*profile, *constants], row.protocol, flags)
            for cell in check_cells(checked, row.label, [available[n] for n in group], options, engine, engine_options):
                done[cell.invariant] = cell
                if on_cell is not None:
                    on_cell(cell)
        cells.extend(done[name] for name in names)
    return cells


def bounds_note(cells: Sequence[Cell]) -> list[str]:
    """One line per set of bounds the cells were checked at, naming the invariants checked there."""
    by_bounds: dict[str, list[str]] = {}
    for cell in cells:
        text = ", ".join(f"{k}={v}" for k, v in (cell.constants or {}).items())
        names = by_bounds.setdefault(text, [])
        if cell.invariant not in names:
            names.append(cell.invariant)
    return [f"{', '.join(names)}: {text}" for text, names in by_bounds.items()]


def render(cells: Sequence[Cell], title: str) -> Table:
    invariants = list(dict.fromkeys(c.invariant for c in cells))
    protocols = list(dict.fromkeys(c.protocol for c in cells))
    by_key = {(c.protocol, c.invariant): c for c in cells}
    table = Table(title=title)
    table.add_column("protocol", style="bold")
    for name in invariants:
        table.add_column(name)
    for protocol in protocols:
        row = [protocol]
        for name in invariants:
            cell = by_key.get((protocol, name))
            if cell is None:
                row.append("")
            elif cell.verdict == Verdict.VIOLATED.value:
                row.append(f"[red]violated[/] in {cell.length} steps")
            elif cell.verdict == Verdict.HOLDS.value:
                row.append(f"[green]holds[/] ({cell.distinct_states:,} states, depth {cell.depth})")
            else:
                row.append(f"[yellow]undetermined[/] ({cell.reason})")
        table.add_row(*row)
    return table


def cmd_matrix(args: argparse.Namespace) -> int:
    console = Console()
    started = time.monotonic()
    progress = None
    if not args.json and not args.quiet:
        err = Console(stderr=True)

        def progress(cell: Cell) -> None:
            err.print(f"  {cell.protocol} / {cell.invariant}: {cell.verdict} ({cell.seconds:.1f} s)", highlight=False)

    cells = run_matrix(
        args.model,
        args.protocol,
        args.invariant,
        args.const,
        args.feature,
        max_seconds=args.max_seconds,
        max_states=args.max_states,
        on_cell=progress,
        uniform_bounds=args.uniform_bounds,
        engine=args.engine,
        engine_options=engines.EngineOptions(workers=args.workers, master=args.master,
                                             extra={} if args.spark_threshold is None else {"threshold": args.spark_threshold}),
    )
    elapsed = time.monotonic() - started
    if args.json:
        print(json.dumps([c.to_json() for c in cells], indent=2))
    else:
        bounds = ", ".join(args.const) or "model bounds"
        extra = f"; features {', '.join(args.feature)}" if args.feature else ""
        console.print(render(cells, f"{args.model}: every protocol against every invariant ({bounds}{extra})"))
        for line in bounds_note(cells):
            console.print(f"  bounds of {line}", highlight=False)
        console.print(f"{len(cells)} checks in {elapsed:.1f} s")
    if any(c.verdict == Verdict.UNDETERMINED.value for c in cells):
        return int(ExitCode.UNDETERMINED)
    return 0


def add_parser(subparsers: Any, *_: Any) -> argparse.ArgumentParser:
    from checker.cli import _positive_float, _positive_int  # the command line loads this module lazily

    parser = subparsers.add_parser("matrix", help="every protocol version against every invariant, as a table")
    parser.add_argument("model", nargs="?", default="kafka", help="model name (default kafka)")
    parser.add_argument("--protocol", action="append", default=[], metavar="NAME[,FLAG=on|off...]",
                        help="only these rows: a version, optionally with flags switched (e.g. kip-380,kafka-7786-fix=off)")
    parser.add_argument("--invariant", action="append", default=[], metavar="NAME", help="only these invariants")
    parser.add_argument("--const", action="append", default=[], metavar="NAME=VALUE", help="set a bound")
    parser.add_argument("--feature", action="append", default=[], metavar="FLAG=on|off",
                        help="switch a feature flag in every version (e.g. unclean=on)")
    parser.add_argument("--uniform-bounds", action="store_true",
                        help="check every invariant at the model's default bounds (and --const), ignoring the "
                             "per-invariant bounds the model declares for the matrix")
    parser.add_argument("--max-seconds", type=_positive_float, help="time budget per cell (then: undetermined)")
    parser.add_argument("--max-states", type=_positive_int, help="distinct-state budget per cell (then: undetermined)")
    parser.add_argument("--json", action="store_true", help="print a JSON list of cells")
    parser.add_argument("--quiet", action="store_true", help="no per-cell progress on stderr")
    parser.add_argument("--engine", default="bfs", help="search engine: " + ", ".join(engines.ENGINES))
    parser.add_argument("--workers", type=int, default=1, help="worker processes (parallel engine)")
    parser.add_argument("--master", default="local[*]", help="Spark master URL (spark engine)")
    parser.add_argument("--spark-threshold", type=int, default=None, metavar="N",
                        help="spark engine: run levels locally while the frontier has fewer than N states (default 10000)")
    parser.set_defaults(func=cmd_matrix)
    return parser
