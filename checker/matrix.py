"""``kmc matrix``: every protocol version of a model against every invariant, one check per cell.

    kmc matrix [MODEL] [--protocol P]... [--invariant I]... [--const NAME=VALUE]... [--feature F=on]... [--json]

Each cell is what an exhaustive breadth-first check of that one invariant, stopping at the first
violation, reports: a violated cell the length of a shortest counterexample, a cell that holds the
distinct states and depth of the whole (bounded) state space, a cell whose budget ran out
undetermined. Invariants of one protocol share searches (see ``check_cells``) without changing any
figure. Nothing is hard-coded: every figure comes from a run. Generic over models with versions.
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

    def to_json(self) -> dict[str, Any]:
        return {
            "protocol": self.protocol,
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
    )


def check_cells(model: Any, protocol: str, invariants: Sequence[Any], options: dict[str, Any]) -> list[Cell]:
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
        result = check(model, SearchOptions(invariants=remaining, **options))
        violated = {v.invariant for v in result.violations}
        for inv in remaining:
            if inv.name in violated or not violated:
                cells[inv.name] = _cell(protocol, inv.name, result)
        remaining = [inv for inv in remaining if inv.name not in cells]
    return [cells[inv.name] for inv in invariants]


def run_matrix(
    model_name: str,
    protocols: Sequence[str] = (),
    invariants: Sequence[str] = (),
    constants: Sequence[str] = (),
    features: Sequence[str] = (),
    max_seconds: float | None = None,
    max_states: int | None = None,
    on_cell: Any = None,
) -> list[Cell]:
    """Check every chosen protocol against every chosen safety invariant; one ``Cell`` each."""
    info = get_model_info(model_name)
    chosen_protocols = list(protocols) or list(info.protocols) or [None]
    for name in chosen_protocols:
        if name is not None and name not in info.protocols:
            raise UsageError(f"unknown protocol {name!r} for model {model_name}; known: {', '.join(info.protocols)}")
    cells = []
    for protocol in chosen_protocols:
        model = build_model(model_name, list(constants), protocol, list(features))
        available = {k: v for k, v in for_family(model.family).items() if v.kind == SAFETY}
        names = list(invariants) or list(available)
        for name in names:
            if name not in available:
                raise UsageError(f"model {model_name} has no invariant {name!r}; its invariants: {', '.join(available)}")
        options = {
            "max_seconds": max_seconds,
            "max_states": max_states,
            "header": {"protocol": protocol} if protocol else {},
        }
        for cell in check_cells(model, protocol or "-", [available[n] for n in names], options):
            cells.append(cell)
            if on_cell is not None:
                on_cell(cell)
    return cells


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
    )
    elapsed = time.monotonic() - started
    if args.json:
        print(json.dumps([c.to_json() for c in cells], indent=2))
    else:
        bounds = ", ".join(args.const) or "default bounds"
        extra = f"; features {', '.join(args.feature)}" if args.feature else ""
        console.print(render(cells, f"{args.model}: every protocol against every invariant ({bounds}{extra})"))
        console.print(f"{len(cells)} checks in {elapsed:.1f} s")
    if any(c.verdict == Verdict.UNDETERMINED.value for c in cells):
        return int(ExitCode.UNDETERMINED)
    return 0


def add_parser(subparsers: Any, *_: Any) -> argparse.ArgumentParser:
    parser = subparsers.add_parser("matrix", help="every protocol version against every invariant, as a table")
    parser.add_argument("model", nargs="?", default="kafka", help="model name (default kafka)")
    parser.add_argument("--protocol", action="append", default=[], metavar="NAME", help="only these versions")
    parser.add_argument("--invariant", action="append", default=[], metavar="NAME", help="only these invariants")
    parser.add_argument("--const", action="append", default=[], metavar="NAME=VALUE", help="set a bound")
    parser.add_argument("--feature", action="append", default=[], metavar="FLAG=on|off",
                        help="switch a feature flag in every version (e.g. unclean=on)")
    parser.add_argument("--max-seconds", type=float, help="time budget per cell (then: undetermined)")
    parser.add_argument("--max-states", type=int, help="distinct-state budget per cell (then: undetermined)")
    parser.add_argument("--json", action="store_true", help="print a JSON list of cells")
    parser.add_argument("--quiet", action="store_true", help="no per-cell progress on stderr")
    parser.set_defaults(func=cmd_matrix)
    return parser
