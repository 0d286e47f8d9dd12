"""``kmc matrix``: every protocol version of a model against every invariant, for people and for CI.

    kmc matrix [MODEL] [--protocol P[,FLAG=on|off]...]... [--invariant I]... [--property MOD:FUNC]...
               [--const NAME=VALUE]... [--feature F=on]... [--bounds NAME | --uniform-bounds]
               [--format table|markdown|csv|json] [--expect FILE] [--trace-dir DIR]

Each cell is what an exhaustive breadth-first check of that one invariant, stopping at its first
violation, reports: a violated cell the length of a shortest counterexample (and the distinct
states, states generated and depth when it was found), a cell that holds the figures of the whole
(bounded) state space, a cell whose budget ran out *undetermined*. Nothing is hard-coded: every
figure comes from a run, and the matrix is generic over models with protocol versions.

One search per distinct configuration: the invariants checked at the same bounds of the same row
share one ``--continue`` search that checks them all at once. Breadth-first search visits states in
the same order whatever invariants it checks, so each invariant's first violation is at the same
state, with the same shortest counterexample, as in a search of its own; the engine records the
figures at the end of that level (``Violation.discovered``), which are the figures of a search of
its own that stops there; the search stops once every invariant it checks is violated. Engines
that do not record them (spark) use a few stop-at-first searches instead
(``check_cells_by_rounds``), with the same figures.

What a model may declare for the matrix (``matrix_variants``, ``matrix_bounds``,
``matrix_bound_sets()``, ``matrix_excluded``, ``matrix_story()``) is part of the model contract,
``spec.model.Model``, which documents each.

Exit codes: 0 when the matrix ran and (with ``--expect``) every cell matched; 1 when a cell
differs from ``--expect`` (changed verdict, length or distinct states, or a cell the file lacks);
20 when, without ``--expect``, a cell is undetermined; 64 usage; 65 an unreadable expectation file;
66 a missing one. A violated cell is a finding, not a failure: an old protocol version is expected
to break.
"""  # noqa: E501

from __future__ import annotations

import argparse
import json
import sys
import textwrap
import time
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.text import Text

from checker import engines
from checker.pool import can_fork
from checker.result import Verdict
from kmc.matrix.compare import compare, load_expectation
from kmc.matrix.render import FORMATS, layout, notes, reduction_note, to_csv, to_markdown
from kmc.matrix.run import DEFAULT_BOUND_SET, MatrixObserver, MatrixOptions, run_matrix
from kmc.options import (
    FILE_COMPLETION,
    FORMER_ENGINE_NAMES,
    add_engine_options,
    chosen_engine,
    positive_float,
    positive_int,
    reduce_choices,
    reductions_help,
)
from kmc.progress import ProgressLines

#: exit code when a cell differs from the ``--expect`` file (like diff: 1 means "different")
CELLS_CHANGED = 1


def matrix_workers(given: int | None) -> int:
    """``--workers`` of the matrix: as given, else auto (the default: one a core of this process's
    CPU affinity)."""
    if given is not None:
        return given
    from checker.parallel import available_cores

    return available_cores()


def cmd_matrix(args: argparse.Namespace) -> int:
    from checker.properties import load_properties

    # --workers: searches at once (another engine: the workers of each search)
    at_once = FORMER_ENGINE_NAMES.get(args.engine, args.engine) == "local"
    args.workers = matrix_workers(args.workers) if at_once or args.workers is not None else None
    args.engine, engine_options = chosen_engine(args, workers_for_engine=not at_once)
    # --engine parallel without --workers: one worker a core for each search
    if args.workers is None:
        args.workers = matrix_workers(None)
    fmt = "json" if args.json else args.format
    expected = load_expectation(args.expect) if args.expect else None
    properties = load_properties(args.property)
    lines = None if args.quiet else ProgressLines(interval=args.progress_every)
    configurations = []

    def on_search(row: str, names: Sequence[str], constants: dict[str, Any]) -> None:
        configurations.append(row)
        if lines is not None:
            lines.search(row, names, constants)

    started = time.monotonic()
    options = MatrixOptions(
        protocols=args.protocol, invariants=args.invariant, constants=args.const,
        features=args.feature, properties=properties, bounds=args.bounds,
        uniform_bounds=args.uniform_bounds, max_seconds=args.max_seconds,
        max_states=args.max_states, symmetry=args.symmetry, reduce=args.reduce,
        shortest=args.shortest, engine=args.engine, engine_options=engine_options,
        workers=args.workers if at_once else 1, trace_dir=args.trace_dir, kernel=args.kernel)
    def on_note(line: str) -> None:
        print(line, file=sys.stderr)

    observer = MatrixObserver(on_search=on_search, on_cell=lines.cell if lines else None,
                              progress=lines, running=lines.running if lines else None,
                              running_every=args.progress_every, on_note=on_note)
    cells = run_matrix(args.model, options, observer)
    elapsed = time.monotonic() - started
    if fmt == "json":
        print(json.dumps([c.to_json() for c in cells], indent=2))
    elif fmt == "csv":
        sys.stdout.write(to_csv(cells))
    elif fmt == "markdown":
        print(to_markdown(cells))
    else:
        _print_table(args, cells, len(configurations), elapsed, at_once)
    if expected is not None:
        return _compared(args, cells, expected, fmt)
    if any(c.verdict == Verdict.UNDETERMINED.value for c in cells):
        return 20
    return 0


def _print_table(args: argparse.Namespace, cells: list[Any], configurations: int, elapsed: float,
                 at_once: bool) -> None:
    """The matrix as a table for the terminal: a title, the cells, their notes and one line of how
    many searches ran and how long they took."""
    console = Console(highlight=False)
    width = console.width
    bounds = ", ".join(args.const) or "model bounds"
    extra = f"; features {', '.join(args.feature)}" if args.feature else ""
    extra += "".join(f"; {how}" for how, on in (("symmetry", args.symmetry),
                                                (f"reduce {args.reduce}", args.reduce
                                                 != "none"), ("shortest", args.shortest)) if on)
    title = f"{args.model}: every protocol against every invariant ({bounds}{extra})"
    for line in textwrap.wrap(title, width, break_long_words=False, break_on_hyphens=False):
        console.print(Text(line, style="bold"), soft_wrap=True)
    for line in layout(cells, width) + notes(cells, width) + reduction_note(args, width):
        text = Text(line)
        text.highlight_regex(r"\bviolated\b|✗", "red")
        text.highlight_regex(r"\bholds\b|✓", "green")
        text.highlight_regex(r"\bundetermined\b", "yellow")
        console.print(text, soft_wrap=True)
    how = ("one search each" if engines.get_engine(args.engine).first_violations
           else "stop-at-first searches")
    if at_once and min(args.workers, configurations) > 1 and can_fork():
        how += f", {min(args.workers, configurations)} at once"
    console.print(f"{len(cells)} cells from {configurations} configurations ({how}) in "
                  f"{elapsed:.1f} s",
                  soft_wrap=True)


def _compared(args: argparse.Namespace, cells: list[Any], expected: Any, fmt: str) -> int:
    """The cells against ``--expect``: each change a line, exit ``CELLS_CHANGED`` when any."""
    # a reduced search's states are not the full search's, nor (without --shortest) its lengths:
    # an expectation written by the full search is compared on what the reduction keeps
    changes = compare(cells, expected, counts=not args.symmetry and args.reduce == "none",
                      lengths=args.reduce == "none" or args.shortest)
    out = sys.stderr if fmt in ("json", "csv") else sys.stdout
    if changes:
        print(f"{len(changes)} cell{'s' if len(changes) != 1 else ''} differ from "
              f"{args.expect}:", file=out)
        for change in changes:
            print(f"  {change}", file=out)
        return CELLS_CHANGED
    print(f"every cell matches {args.expect}", file=out)
    return 0


def add_parser(subparsers: Any, *_: Any) -> argparse.ArgumentParser:
    parser = subparsers.add_parser("matrix", help="every protocol version against every invariant, "
                                                  "as a table",
                                   description="Every protocol version against every invariant. "
                                   "Exit codes: 0 ran (and matched --expect), 1 a cell differs "
                                   "from --expect, 20 a cell undetermined (without --expect), 64 "
                                   "usage, 65 unreadable --expect file, 66 missing --expect file.")
    parser.add_argument("model", nargs="?", default="kafka", help="model name (default kafka)")
    parser.add_argument("--protocol", action="append", default=[], metavar="NAME[,FLAG=on|off...]",
                        help="only these rows: a version, optionally with flags switched (e.g. "
                             "kip-380,kafka-7786-fix=off)")
    parser.add_argument("--invariant", action="append", default=[], metavar="NAME",
                        help="only these invariants")
    parser.add_argument("--property", action="append", default=[], metavar="MODULE:FUNCTION",
                        help="also check this function of a state (or of a state and the model) as "
                             "an invariant; with --property and no --invariant only the properties "
                             "are checked")
    parser.add_argument("--const", action="append", default=[], metavar="NAME=VALUE",
                        help="set a bound")
    parser.add_argument("--feature", action="append", default=[], metavar="FLAG=on|off",
                        help="switch a feature flag in every version (e.g. unclean=on)")
    parser.add_argument("--bounds", default=DEFAULT_BOUND_SET, metavar="NAME",
                        help="the model's named set of per-invariant bounds (default: default)")
    parser.add_argument("--uniform-bounds", action="store_true",
                        help="check every invariant at the model's default bounds (and --const), "
                             "ignoring the per-invariant bounds the model declares for the matrix")
    parser.add_argument("--max-seconds", type=positive_float, help="time budget per search (then: "
                                                                   "undetermined)")
    parser.add_argument("--max-states", type=positive_int, help="distinct-state budget per search "
                                                                "(then: undetermined)")
    parser.add_argument("--format", choices=FORMATS, default="table",
                        help="output format (default table)")
    parser.add_argument("--json", action="store_true", help="the same as --format json")
    parser.add_argument("--expect", metavar="FILE", help="compare with this verdict table (a saved "
                        "'kmc matrix --json'); exit 1 and name the cells that "
                        "changed").complete = FILE_COMPLETION
    parser.add_argument("--trace-dir", metavar="DIR", help="save every counterexample here (one "
                                                           "JSON trace a violated cell)")
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    parser.add_argument("--progress-every", type=positive_float, default=10.0, metavar="SECONDS",
                        help="seconds between two progress lines during a search (default 10)")
    parser.add_argument("--symmetry", action="store_true", help="every search reduced by symmetry "
                                                                "over interchangeable ids")
    parser.add_argument("--reduce", choices=reduce_choices(), default="none",
                        help="every search reduced: dead, messages whose delivery can "
                             f"only be a no-op dropped ({reductions_help()}; rows that cannot be "
                             "reduced are refused); "
                             "default none. With --expect the verdicts are compared, and the "
                             "lengths only with --shortest")
    parser.add_argument("--shortest", action="store_true",
                        help="with --reduce: a shortest counterexample for each violated cell (a "
                             "full search bounded by the reduced one's length)")
    parser.add_argument("--kernel", choices=("auto", "off"), default="auto",
                        help="auto: each search on the row's compiled kernel where it is proven "
                             "equal to the readable model (default); off: the readable model "
                             "everywhere, as the documented table is made after a rule changes")
    add_engine_options(parser, default="local", workers_help="searches run at once, each in its "
                       "own process (a number, or auto: one a core, the default; at most the "
                       "cores); with --engine parallel, the worker processes of each search")
    parser.set_defaults(func=cmd_matrix)
    return parser
