"""The matrix as text: a grid that fits the terminal (or one line a cell), its notes (bounds,
stories, reductions), Markdown and CSV (``--json`` is each cell's ``Cell.to_json``)."""

from __future__ import annotations

import argparse
import csv
import io
import textwrap
from collections.abc import Sequence

from checker.result import Verdict
from kmc.matrix.cells import Cell

FORMATS = ("table", "markdown", "csv", "json")


def describe(cell: Cell) -> str:
    if cell.verdict == Verdict.VIOLATED.value:
        return f"violated in {cell.length} steps"
    if cell.verdict == Verdict.HOLDS.value:
        return f"holds ({cell.distinct_states:,} states)"
    return f"undetermined ({cell.reason})"


def _text(cell: Cell | None, form: str) -> str:
    if cell is None:
        return ""
    violated, holds = cell.verdict == Verdict.VIOLATED.value, cell.verdict == Verdict.HOLDS.value
    if form == "wide":
        return (f"violated in {cell.length}" if violated else f"holds ({cell.distinct_states:,})"
                if holds else "undetermined")
    if form == "keyed":
        return (f"violated {cell.length}" if violated else f"holds {cell.distinct_states:,}"
                if holds else "undetermined")
    return f"✗ {cell.length}" if violated else f"✓ {cell.distinct_states:,}" if holds else "?"


_CELL_LEGEND = {
    "wide": "'violated in N': a shortest counterexample has N steps; 'holds (N)': N distinct "
            "states, all checked",
    "keyed": "'violated N': a shortest counterexample has N steps; 'holds N': N distinct states, "
             "all checked",
    "compact": "'✗ N': violated, a shortest counterexample has N steps; '✓ N': holds, N distinct "
               "states; '?': undetermined",
}


def _key(i: int) -> str:
    return chr(ord("A") + i) if i < 26 else f"A{i - 25}"


def _grid(cells: Sequence[Cell], form: str) -> list[str]:
    invariants = list(dict.fromkeys(c.invariant for c in cells))
    protocols = list(dict.fromkeys(c.protocol for c in cells))
    by_key = {(c.protocol, c.invariant): c for c in cells}
    headers = ["protocol"] + (invariants if form == "wide"
                              else [_key(i) for i in range(len(invariants))])
    rows = [[p] + [_text(by_key.get((p, n)), form) for n in invariants] for p in protocols]
    widths = [max(len(r[i]) for r in [headers, *rows]) for i in range(len(headers))]
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    if form != "wide":
        lines += [f"{_key(i)}: {name}" for i, name in enumerate(invariants)]
    return lines


def _listing(cells: Sequence[Cell]) -> list[str]:
    """One line per cell under its row: always narrow."""
    width = max(len(c.invariant) for c in cells)
    lines: list[str] = []
    for protocol in dict.fromkeys(c.protocol for c in cells):
        lines.append(protocol)
        lines += [f"  {c.invariant.ljust(width)}  {describe(c)}" for c in cells if c.protocol
                  == protocol]
    return lines


def layout(cells: Sequence[Cell], width: int) -> list[str]:
    """The matrix as plain lines no wider than ``width`` when any layout allows: a grid with the
    invariants' names as headers, else a grid with short keys and a legend, else the same with
    compact cells, else one line per cell. Names are never cut."""
    if not cells:
        return []
    for form in ("wide", "keyed", "compact"):
        lines = _grid(cells, form)
        legend = textwrap.wrap(_CELL_LEGEND[form], width, break_long_words=False,
                               break_on_hyphens=False)
        if max(map(len, lines)) <= width and max(map(len, legend)) <= width:
            return lines + legend
    return _listing(cells)


def reduction_note(args: argparse.Namespace, width: int) -> list[str]:
    """What a reduced matrix's figures are (``--symmetry``, ``--reduce``): not the full search's."""
    said = []
    if args.symmetry or args.reduce != "none":
        said.append("the states counted are the reduced search's (" + ", then ".join(
            how for how, on in (("dead messages dropped", args.reduce == "dead"),
                                ("one a symmetry orbit", args.symmetry))
            if on) + ")")
    if args.reduce != "none" and not args.shortest:
        said.append("a counterexample replays on the full model but need not be a shortest one, "
                    "and a story is told of it: --shortest gives the full search's lengths and "
                    "stories")
    return (textwrap.wrap("; ".join(said) + ".", width, break_long_words=False,
                          break_on_hyphens=False) if said else [])


def notes(cells: Sequence[Cell], width: int) -> list[str]:
    """The bounds each invariant was checked at and each violation's story, wrapped at ``width``."""
    out = []
    for line in bounds_note(cells):
        out += textwrap.wrap("bounds of " + line, width, subsequent_indent="    ",
                             break_long_words=False, break_on_hyphens=False)
    stories = [c for c in cells if c.story]
    if stories:
        out.append("stories of the violations:")
        for c in stories:
            out += textwrap.wrap(f"{c.protocol} / {c.invariant}: {c.story}", width,
                                 initial_indent="  ", subsequent_indent="    ",
                                 break_long_words=False, break_on_hyphens=False)
    return out


def bounds_note(cells: Sequence[Cell]) -> list[str]:
    """One line per set of bounds the cells were checked at, naming the invariants checked there."""
    by_bounds: dict[str, list[str]] = {}
    for cell in cells:
        text = ", ".join(f"{k}={v}" for k, v in (cell.constants or {}).items())
        names = by_bounds.setdefault(text, [])
        if cell.invariant not in names:
            names.append(cell.invariant)
    return [f"{', '.join(names)}: {text}" for text, names in by_bounds.items()]


def to_markdown(cells: Sequence[Cell]) -> str:
    invariants = list(dict.fromkeys(c.invariant for c in cells))
    by_key = {(c.protocol, c.invariant): c for c in cells}
    lines = ["| protocol | " + " | ".join(invariants) + " |", "|---" * (len(invariants) + 1) + "|"]
    for protocol in dict.fromkeys(c.protocol for c in cells):
        texts = []
        for name in invariants:
            cell = by_key.get((protocol, name))
            texts.append("" if cell is None else f"**{_text(cell, 'wide')}**" if cell.verdict
                         == "violated"
                         else _text(cell, "wide"))
        lines.append(f"| `{protocol}` | " + " | ".join(texts) + " |")
    lines.append("")
    lines.append(_CELL_LEGEND["wide"] + ".")
    lines += ["", *[f"- bounds of {line}" for line in bounds_note(cells)]]
    stories = [c for c in cells if c.story]
    if stories:
        lines += ["", "Stories of the violations:", ""]
        lines += [f"- `{c.protocol}` / `{c.invariant}`: {c.story}" for c in stories]
    return "\n".join(lines)


CSV_FIELDS = ("protocol", "invariant", "verdict", "length", "distinct_states", "states_generated",
              "depth", "seconds", "story", "trace_file", "constants")


def to_csv(cells: Sequence[Cell]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_FIELDS)
    for cell in cells:
        data = cell.to_json()
        data["constants"] = " ".join(f"{k}={v}" for k, v in (cell.constants or {}).items())
        writer.writerow(["" if data[k] is None else data[k] for k in CSV_FIELDS])
    return buffer.getvalue()
