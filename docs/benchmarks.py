"""The benchmarks page and its plots, generated (``python3 -m docs.generate``) from
``bench/results.json`` (what ``bench/suite.py`` and the other bench scripts recorded, each with its
command and the machine's load) and from one small search run here (states per level: counts, which
do not depend on the machine).

The plots are plain SVG written here (bars with their figures printed beside them), so that the page
needs no plotting library and two runs give the same bytes.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results.json"
#: the search whose levels the first plot shows (cheap: about 5,000 states, a quarter of a second)
LEVELS_COMMAND = ("kafka", ["records=1", "epochs=1"], "2.2.0")


def _fmt(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:,.2f}".rstrip("0").rstrip(".")


def bar_chart(title: str, unit: str, bars: list[tuple[str, float, str]]) -> str:
    """Horizontal bars: (label, value, colour) each, the value printed at the bar's end."""
    left, width, row, top = 250, 420, 22, 34
    peak = max(value for _, value, _ in bars) or 1.0
    height = top + row * len(bars) + 28
    # wide enough for the title (bold 14 px: about 9 px a letter)
    total = max(left + width + 110, 16 + int(9 * len(title)))
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{total}" height="{height}" '
           f'font-family="sans-serif" font-size="12">',
           f'<text x="8" y="18" font-size="14" font-weight="bold">{escape(title)}</text>']
    for i, (label, value, colour) in enumerate(bars):
        y = top + i * row
        length = max(1.0, width * value / peak)
        out.append(f'<text x="{left - 6}" y="{y + 14}" text-anchor="end">{escape(label)}</text>')
        out.append(f'<rect x="{left}" y="{y + 3}" width="{length:.1f}" height="{row - 7}" '
                   f'fill="{colour}"/>')
        out.append(f'<text x="{left + length + 4:.1f}" y="{y + 14}">{escape(_fmt(value))}</text>')
    out.append(f'<text x="{left}" y="{height - 8}" fill="#555">{escape(unit)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def levels() -> list[tuple[int, int]]:
    """(depth, new distinct states) of each level of ``LEVELS_COMMAND``'s search, every default
    safety invariant."""
    from checker import bfs
    from checker.search import SearchOptions
    from invariants.registry import for_family
    from spec.registry import build_model

    name, consts, protocol = LEVELS_COMMAND
    model = build_model(name, consts, protocol)
    invariants = [inv for inv in for_family(model.family).values() if inv.default and inv.kind
                  == "safety"]
    reports: dict[int, int] = {}
    bfs.check(model, SearchOptions(invariants=invariants, stop_at_first=False, progress_every=0,
                                   progress=lambda p: reports.__setitem__(
                                       p.depth, p.distinct_states)))
    found, before = [], 0
    for depth in sorted(reports):
        found.append((depth, reports[depth] - before))
        before = reports[depth]
    return [(d, n) for d, n in found if n]


def _median(values: list[float]) -> float:
    return statistics.median(values)


def pages() -> dict[str, str]:
    """docs-relative path -> content: the benchmarks page and its SVG plots."""
    results = json.loads(RESULTS.read_text(encoding="utf-8"))
    files: dict[str, str] = {}
    name, consts, protocol = LEVELS_COMMAND
    levels_command = f"kmc check {name} --protocol {protocol} " + " ".join(
        f"--const {c}" for c in consts)
    per_level = levels()
    files["images/bench-levels.svg"] = bar_chart(
        f"New distinct states per BFS level: {levels_command}",
        "distinct states first found at each depth",
        [(f"depth {d}", float(n), "#4a7fb5") for d, n in per_level])

    tlc = results["issue_25_tlc_side_by_side"]
    tlc_bars, tlc_rows = [], []
    for row in tlc["timed"]["rows"]:
        label = f"{row['model']} {' '.join(row['constants'])}"
        ours, theirs = _median(row["current_cpu_s"]), _median(row["tlc"]["cpu_s"])
        tlc_bars += [(f"{row['model']} kmc", ours, "#4a7fb5"),
                     (f"{row['model']} TLC", theirs, "#c0504d")]
        tlc_rows.append([label, f"{row['current']['distinct']:,}", f"{ours:.2f}", f"{theirs:.2f}",
                         f"{theirs / ours:.1f}", "yes" if row["tlc"]["same_counts"] else "no"])
    files["images/bench-tlc.svg"] = bar_chart("CPU seconds, kmc against TLC (median of the rounds)",
                                              "CPU seconds", tlc_bars)

    par = results["parallel_engine_check_round"]
    pairs = par["pairs_wall_seconds_single_then_two_workers"]
    first = par["runs"][0]["1"][0]
    files["images/bench-cores.svg"] = bar_chart(
        "Wall seconds, one process against two workers (same counts)",
        "wall seconds; each pair one after the other", [bar for i, (one, two) in enumerate(pairs, 1)
         for bar in ((f"pair {i}: 1 process", one, "#9bbb59"),
                     (f"pair {i}: 2 workers", two, "#4a7fb5"))])
    cores = results["issue_25_matrix_cores"]

    ceiling = results["command_vs_ceiling"]
    lines = [
        "# Benchmarks", "",
        "<!-- generated by `python3 -m docs.generate` from bench/results.json: do not edit by hand "
        "-->", "",
        "The figures below are read from `bench/results.json`, each with the command that measured "
        "it and the machine's load then (the development machine has 2 cores, shared); the plots "
        "are drawn from the same numbers. The whole journal of measurements, with profiles and "
        "what was tried: [the journal](archive/journal.md) (`bench/NOTES.md`).", "",
        "To measure again:", "",
        "<!-- example: not run (the whole suite takes about 20 minutes; bench/ is not part of the "
        "tests) -->",
        "```sh",
        "python3 bench/suite.py --out bench/results.json          # the whole suite, about 20 "
        "minutes",
        "python3 bench/suite.py --quick --out quick.json          # a one-minute smoke run",
        "```", "",
        "Each workload runs in a fresh interpreter and prints verdict, distinct states, states "
        "generated, wall time, distinct states per second, peak RSS growth during the search and "
        "the bytes a state of the visited set plus parent pointers; the JSON file also has CPU "
        "time (all processes) and the comparisons.", "",
        "## States per level", "",
        f"`{levels_command}` (every default safety invariant; {sum(n for _, n in per_level):,} "
        f"distinct states, {len(per_level)} levels), run by the generator itself: counts, the same "
        "on any machine and load.", "",
        "![new distinct states per level](images/bench-levels.svg)", "",
        "## Time against TLC", "",
        f"`{tlc['command']}`, tree {tlc['tree']}; {tlc['conditions']}. TLC: "
        f"{tlc['tlc']['version']}, `{' '.join(tlc['tlc']['tlc_options'])}`, {tlc['tlc']['java']}.",
        "",
        "| model and constants | distinct states | kmc CPU s | TLC CPU s | TLC / kmc | same counts "
        "|",
        "|---|---|---|---|---|---|",
        *["| " + " | ".join(row) + " |" for row in tlc_rows], "",
        "![CPU seconds against TLC](images/bench-tlc.svg)", "",
        f"The whole `{ceiling['command']}` command against a bare hand-written BFS of the same "
        f"model (`bench/bare_two_phase.py`): {ceiling['command_seconds']} s against "
        f"{ceiling['bare_seconds']} s (best of {len(ceiling['all_command_seconds'])}; all: "
        f"{ceiling['all_command_seconds']} and {ceiling['all_bare_seconds']}), "
        f"{ceiling['command_over_bare']} times the ceiling, on the machine of "
        f"`bench/results.json`'s `started` ({results['started']}, {results['machine']['cpus']} "
        "cores).", "",
        "## Speed-up per core", "",
        f"`{par['command']}`; {par['conditions']}. The parallel engine on "
        f"`kmc check {first_model(results)}` ({first['distinct']:,} distinct states, the same "
        "counts at every worker count); wall speed-ups "
        f"{', '.join(str(s) for s in par['wall_speedups'])}.", "",
        "![one process against two workers](images/bench-cores.svg)", "",
        f"`{cores['command']}`; {cores['conditions']}:", "",
        "| workers | wall s | CPU s | load at start | load at end | note |",
        "|---|---|---|---|---|---|",
        *[f"| {r['workers']} | {r['wall_s']} | {r['cpu_s']} | {r['load_start']} | {r['load_end']} "
          f"| {r.get('note', '')} |" for r in cores["runs"]], "",
        "## Every recorded measurement", "",
        "Each entry of `bench/results.json`, with its command and conditions where it recorded "
        "them:", "",
        "| entry | command | conditions |", "|---|---|---|",
        *[f"| `{key}` | {_code(_first(value, 'command'))} | "
          f"{_cell(_first(value, 'conditions') or 'load not recorded')} |"
          for key, value in results.items() if isinstance(value, dict | list) and key != "machine"],
        "",
    ]
    files["benchmarks.md"] = "\n".join(lines).rstrip() + "\n"
    return files


def first_model(results: dict[str, Any]) -> str:
    run = results["parallel_engine"]
    return f"{run['model']} --protocol {run['protocol']} " + " ".join("--const "
                                                                      f"{c}" for c in run["consts"])


def _first(value: Any, key: str) -> str:
    """``key`` of an entry, or of its first item or value that has it."""
    if isinstance(value, dict):
        if key in value:
            return str(value[key])
        items = list(value.values())
    else:
        items = list(value)
    for item in items:
        if isinstance(item, dict) and key in item:
            return str(item[key])
    return ""


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ") or " "


def _code(text: str) -> str:
    """A command as a code span in a table cell (a pipe in it as an HTML entity: see
    ``docs.generate._cell``)."""
    if not text:
        return " "
    text = text.replace("`", "")
    if "|" in text:
        return "<code>" + escape(text).replace("|", "&#124;") + "</code>"
    return f"`{text}`"
