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

What a model may declare for the matrix (``matrix_variants``, ``matrix_bounds``, ``matrix_bound_sets()``,
``matrix_excluded``, ``matrix_story()``) is part of the model contract, ``spec.model.Model``, which documents each.

Exit codes: 0 when the matrix ran and (with ``--expect``) every cell matched; 1 when a cell
differs from ``--expect`` (changed verdict, length or distinct states, or a cell the file lacks);
20 when, without ``--expect``, a cell is undetermined; 64 usage; 65 an unreadable expectation file;
66 a missing one. A violated cell is a finding, not a failure: an old protocol version is expected
to break.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import re
import sys
import textwrap
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from rich.console import Console
from rich.text import Text

from checker import engines
from checker.invariant import SAFETY, Invariant
from checker.pool import can_fork, run_jobs
from checker.result import CheckResult, Verdict
from checker.search import Progress, SearchOptions, search_canonical
from invariants.registry import for_family
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
from spec.errors import BadFileError, ModelError, NoInputError, UsageError
from spec.registry import build_model, get_model_info

#: exit code when a cell differs from the ``--expect`` file (like diff: 1 means "different")
CELLS_CHANGED = 1
FORMATS = ("table", "markdown", "csv", "json")
DEFAULT_BOUND_SET = "default"


@dataclass(frozen=True)
class Cell:
    protocol: str
    invariant: str
    verdict: str
    distinct_states: int
    states_generated: int
    depth: int
    length: int | None  # of the shortest counterexample, None unless violated
    seconds: float  # of the search the cell was found by
    explanation: str | None = None
    reason: str | None = None
    constants: dict[str, Any] | None = None  # the bounds this cell was checked at
    story: str | None = None  # the KIP/JIRA story a violation is an instance of (the model says)
    trace_file: str | None = None
    trace: Any = None  # the counterexample itself (not in the JSON)

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
            "story": self.story,
            "trace_file": self.trace_file,
        }


def cell_of(protocol: str, invariant: str, result: CheckResult) -> Cell:
    """The cell of ``invariant`` in ``result``: its violation's discovery figures when violated."""
    violation = next((v for v in result.violations if v.invariant == invariant), None)
    if violation is None:
        verdict, reason = result.verdict, result.reason
        if verdict is Verdict.VIOLATED:  # other invariants broke; this one held on what was explored
            complete = result.queue == 0
            verdict = Verdict.HOLDS if complete else Verdict.UNDETERMINED
            reason = None if complete else f"a budget ran out with {result.queue:,} states unexplored"
        return Cell(protocol, invariant, verdict.value, result.distinct_states, result.states_generated, result.depth,
                    None, result.seconds, reason=reason, constants=dict(result.constants))
    found = violation.discovered
    distinct, generated, depth = (found.distinct_states, found.states_generated, found.depth) if found else (
        result.distinct_states, result.states_generated, result.depth)
    return Cell(protocol, invariant, Verdict.VIOLATED.value, distinct, generated, depth, violation.length,
                result.seconds, explanation=violation.trace.explanation, constants=dict(result.constants),
                trace=violation.trace)


def _search(model: Any, invariants: Sequence[Invariant], options: dict[str, Any], stop_at_first: bool,
            engine: str, engine_options: Any) -> CheckResult:
    search = SearchOptions(invariants=list(invariants), stop_at_first=stop_at_first,
                           stop_when_all_found=not stop_at_first, **options)
    return engines.run(model, search, engine, engine_options)


def check_cells(model: Any, protocol: str, invariants: Sequence[Invariant], options: dict[str, Any],
                engine: str = "local", engine_options: Any = None) -> list[Cell]:
    """One cell per invariant from one ``--continue`` search of ``model`` checking them all.

    When the engine does not record where each violation was found, falls back to
    ``check_cells_by_rounds``.
    """
    if not engines.get_engine(engine).first_violations:
        return check_cells_by_rounds(model, protocol, invariants, options, engine, engine_options)
    result = _search(model, invariants, options, False, engine, engine_options)
    if any(v.discovered is None for v in result.violations):
        return check_cells_by_rounds(model, protocol, invariants, options, engine, engine_options)
    return [cell_of(protocol, inv.name, result) for inv in invariants]


def check_cells_by_rounds(model: Any, protocol: str, invariants: Sequence[Invariant], options: dict[str, Any],
                          engine: str = "local", engine_options: Any = None) -> list[Cell]:
    """One cell per invariant from stop-at-first searches: each search checks the invariants still
    open and stops at the first level where one fails, which is exactly what a search for that one
    invariant alone would have explored; the others share the next search."""
    remaining = list(invariants)
    cells: dict[str, Cell] = {}
    while remaining:
        result = _search(model, remaining, options, True, engine, engine_options)
        violated = {v.invariant for v in result.violations}
        for inv in remaining:
            if inv.name in violated or not violated:
                cell = cell_of(protocol, inv.name, result)
                cells[inv.name] = replace(cell, distinct_states=result.distinct_states,
                                          states_generated=result.states_generated, depth=result.depth)
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
    for protocol, flags in model.matrix_variants:
        rows.append(Row(",".join((protocol, *flags)), protocol, tuple(flags)))
    return rows


def _assignments(value: Any) -> tuple[str, ...]:
    """Bounds as NAME=VALUE strings, from a dict of constants or a sequence of assignments."""
    if isinstance(value, dict):
        return tuple(f"{k}={('on' if v else 'off') if isinstance(v, bool) else v}" for k, v in value.items())
    return tuple(value or ())


def bound_sets(model: Any) -> dict[str, dict[str, tuple[str, ...]]]:
    """The model's named bound sets (invariant -> NAME=VALUE assignments); ``default`` always exists."""
    raw = model.matrix_bound_sets()
    sets = {name: {inv: _assignments(b) for inv, b in (bounds or {}).items()} for name, bounds in raw.items()}
    if DEFAULT_BOUND_SET not in sets:
        sets[DEFAULT_BOUND_SET] = {inv: _assignments(b) for inv, b in dict(model.matrix_bounds).items()}
    return sets


def story_of(model: Any, protocol: str, invariant: str, trace: Any, replay: dict[str, Any] | None = None) -> str | None:
    """The one-line story of a violated cell. For a model with a rule table (``ModelInfo.rules``) it is
    computed (``checker.stories``: the oldest later fix whose replay removes the counterexample; ``replay``
    holds what that needs: model name, protocol, flags, constants and the invariant); otherwise the
    model's own ``matrix_story`` hook, if any."""
    if trace is None:
        return None
    if replay is not None and replay.get("protocol") is not None and get_model_info(replay["model"]).rules is not None:
        from checker.stories import story_of as computed_story

        found = computed_story(replay["model"], replay["protocol"], replay["flags"], replay["constants"],
                               replay["invariant"], trace)
        return found.text if found is not None else None
    story = model.matrix_story(protocol, invariant, trace)
    if not story:
        return None
    return " ".join(str(story).split()) or None  # one line


def trace_path(directory: str, model_name: str, row: str, invariant: str) -> str:
    name = re.sub(r"[^A-Za-z0-9_.=-]+", "_", f"{model_name}-{row}-{invariant}")
    return os.path.join(directory, f"{name}.json")


def run_matrix(
    model_name: str,
    protocols: Sequence[str] = (),
    invariants: Sequence[str] = (),
    constants: Sequence[str] = (),
    features: Sequence[str] = (),
    max_seconds: float | None = None,
    max_states: int | None = None,
    on_cell: Callable[[Cell], None] | None = None,
    engine: str = "local",
    engine_options: Any = None,
    uniform_bounds: bool = False,
    bounds: str = DEFAULT_BOUND_SET,
    properties: Sequence[Any] = (),
    trace_dir: str | None = None,
    on_search: Callable[[str, Sequence[str], dict[str, Any]], None] | None = None,
    progress: Callable[[Progress], None] | None = None,
    workers: int = 1,
    running: Callable[[list[tuple[str, list[str], float]], int, int], None] | None = None,
    running_every: float = 10.0,
    symmetry: bool = False,
    reduce: str = "none",
    shortest: bool = False,
) -> list[Cell]:
    """Check every chosen row against every chosen safety invariant; one ``Cell`` each.

    ``protocols`` are rows as ``parse_row`` reads them (default: ``default_rows``). Unless
    ``uniform_bounds``, an invariant listed in the model's bound set ``bounds`` is checked at those
    bounds, overridden by ``constants``. ``properties`` are loaded ``--property`` functions
    (``checker.properties.UserProperty``), checked like invariants. Without ``invariants`` and
    ``properties`` every safety invariant of the model is checked. Counterexamples are saved to
    ``trace_dir`` when given. ``on_search(row, invariant names, constants)`` is called before each
    search, ``on_cell`` after each cell, ``progress`` during the searches.

    ``workers``: searches run at once, each in its own forked process (``checker.pool``), with the engine
    ``bfs`` in one process; the cells, their figures and stories are the same at any count (each search is
    the same search), and come back in the same order. The workers take the searches largest first
    (``dispatch_order``); one worker runs them here in their own order. Then ``on_search`` is called as a search
    is handed to a worker, ``on_cell`` as its cells come back, and every ``running_every`` seconds ``running`` instead of
    ``progress``: (row, invariants, seconds so far) of each search running, the searches done, all of them.

    ``symmetry``, ``reduce`` and ``shortest`` are the search's own options (``kmc check --symmetry --reduce
    dead --shortest``), applied to every search; a row where one cannot apply is refused (one line) before any
    search runs. A cell's states are then the reduced search's, and its counterexample replays on the unreduced
    model but is a shortest one only with ``shortest``.
    """
    info = get_model_info(model_name)
    rows = [parse_row(p) for p in protocols] if protocols else default_rows(model_name)
    for row in rows:
        if row.protocol is not None and not info.has_protocol(row.protocol):
            raise UsageError(info.unknown_protocol(row.protocol))
    jobs: list[_Job] = []
    order: list[list[tuple[int, str]]] = []  # each row's cells: (its job, its invariant), in column order
    for row in rows:
        flags = list(features) + list(row.features)
        model = build_model(model_name, list(constants), row.protocol, flags)
        available = {k: v for k, v in for_family(model.family).items() if v.kind == SAFETY}
        for name in invariants:
            if name not in available:
                raise UsageError(f"model {model_name} has no invariant {name!r}; its invariants: {', '.join(available)}")
        for prop in properties:
            if prop.name in available:
                raise UsageError(f"--property {prop.spec}: the name {prop.name!r} is a built-in invariant of {model_name}; "
                                 "rename the function")
        # a model may leave invariants out of its default columns (``matrix_excluded``: ones that are vacuous at the
        # default bounds, such as Kafka's client properties without clients), and an invariant may be checked by
        # name only (``Invariant.default``); ``--invariant`` still names them
        excluded = set(model.matrix_excluded)
        names = list(invariants) or ([] if properties else [k for k, v in available.items()
                                                            if v.default and k not in excluded])
        names += [p.name for p in properties]
        sets = bound_sets(model)
        if bounds not in sets:
            raise UsageError(f"model {model_name} has no bound set {bounds!r}; its bound sets: {', '.join(sets)}")
        profile_of = {} if uniform_bounds else sets[bounds]
        header: dict[str, Any] = {"protocol": row.protocol} if row.protocol else {}
        if row.features:
            header["row"] = row.label
        options = {"max_seconds": max_seconds, "max_states": max_states, "header": header, "progress": progress,
                   "symmetry": symmetry, "reduce": reduce, "shortest": shortest}
        groups: dict[tuple[str, ...], list[str]] = {}
        for name in names:
            groups.setdefault(tuple(profile_of.get(name, ())), []).append(name)
        where: dict[str, int] = {}
        for profile, group in groups.items():
            checked = model if not profile else build_model(model_name, [*profile, *constants], row.protocol, flags)
            chosen = {**available, **{p.name: p.bind(checked) for p in properties}}
            for name in group:
                where[name] = len(jobs)
            jobs.append(_Job(model_name, row, flags, profile, tuple(constants), checked,
                             tuple(chosen[n] for n in group), options, engine, engine_options))
        order.append([(where[name], name) for name in names])
    if symmetry or reduce != "none" or shortest:
        for job in jobs:  # every refusal before the first search, not after the rows before it
            _check_reduction(job)

    def started(index: int) -> None:
        if on_search is not None:
            job = jobs[index]
            on_search(job.row.label, [inv.name for inv in job.invariants], dict(job.model.constants))

    def finished(index: int, done: list[Cell]) -> None:
        job = jobs[index]
        for i, cell in enumerate(done):
            if cell.trace is not None and trace_dir:
                from traces.io import save_trace

                saved = save_trace(cell.trace, trace_path(trace_dir, model_name, job.row.label, cell.invariant))
                done[i] = cell = replace(cell, trace_file=saved)
            if on_cell is not None:
                on_cell(cell)

    # ``workers`` searches at once, each in one process (the engine's own workers are for one search)
    at_once = min(workers, len(jobs)) if engine == "local" and getattr(engine_options, "workers", 1) <= 1 else 1
    if at_once > 1 and can_fork():  # the searches' own progress stays in their processes
        for job in jobs:
            job.options["progress"] = None
    finished_jobs = []

    def report(busy: list[tuple[int, float]]) -> None:
        if running is not None:
            running([(jobs[i].row.label, [inv.name for inv in jobs[i].invariants], seconds) for i, seconds in busy],
                    len(finished_jobs), len(jobs))

    def note(index: int, done: list[Cell]) -> None:
        finished_jobs.append(index)
        finished(index, done)

    found = run_jobs(_check_job, jobs, at_once, started, note, report, every=running_every, order=dispatch_order(jobs))
    by_job = [{cell.invariant: cell for cell in done} for done in found]
    return [by_job[index][name] for row_cells in order for index, name in row_cells]


@dataclass(frozen=True)
class _Job:
    """One search of the matrix: a row's invariants checked at the same bounds."""

    model_name: str
    row: Row
    flags: list[str]
    profile: tuple[str, ...]
    constants: tuple[str, ...]
    model: Any
    invariants: tuple[Invariant, ...]
    options: dict[str, Any]
    engine: str
    engine_options: Any


def _check_reduction(job: _Job) -> None:
    """One line (``UsageError``, exit 64) if the job's search cannot apply its reduction (``--symmetry``, ``--reduce``,
    ``--shortest``): the engine's refusal, or the row's (``--reduce dead`` on a row without dead messages)."""
    from checker.reductions import check_supported

    options = SearchOptions(invariants=list(job.invariants), **{k: v for k, v in job.options.items()
                                                                if k not in ("header", "progress")})
    check_supported(options)
    why = engines.get_engine(job.engine).refusal(options)
    if why:
        raise UsageError(why)
    try:
        search_canonical(job.model, options)
    except (UsageError, ModelError) as exc:
        raise UsageError(f"row {job.row.label}: {exc}") from None


def job_cost(job: _Job) -> float:
    """An estimate of a search's cost, for handing the largest out first: the sum of its numeric bounds.

    A bounded state space grows about geometrically in each bound (one more record, epoch or crash multiplies
    the interleavings), so the sum ranks searches as the logarithm of their size would; it is computed from the
    job alone, costs nothing and is the same on every run. On the default Kafka matrix (99 searches, 766.5 s of
    CPU one after the other) longest-first by this sum gives two workers a makespan of 383.3 s, as longest-first
    by the measured seconds does (the jobs' own order: 390.4 s), ``bench/matrix_jobs.py``."""
    return sum(abs(value) for value in job.model.constants.values()
               if isinstance(value, (int, float)) and not isinstance(value, bool))


def dispatch_order(jobs: Sequence[_Job]) -> list[int]:
    """The order the workers take the searches in: the largest ``job_cost`` first (longest processing time
    first, Graham 1969: so that no worker idles at the end while another finishes a long search), ties in the
    jobs' order. Only when results come back depends on it, never the cells or their order."""
    costs = [job_cost(job) for job in jobs]
    return sorted(range(len(jobs)), key=lambda index: (-costs[index], index))


def _check_job(job: _Job) -> list[Cell]:
    """The job's cells, each violated one with its story (computed here: it replays, which costs a search's
    worth of CPU on the Kafka rows, and is done in the job's own process when the matrix runs on every core)."""
    cells = []
    for cell in check_cells(job.model, job.row.label, job.invariants, job.options, job.engine, job.engine_options):
        if cell.trace is not None:
            replay = {"model": job.model_name, "protocol": job.row.protocol, "flags": job.flags,
                      "constants": [*job.profile, *job.constants],
                      "invariant": next(inv for inv in job.invariants if inv.name == cell.invariant)}
            cell = replace(cell, story=story_of(job.model, job.row.label, cell.invariant, cell.trace, replay))
        cells.append(cell)
    return cells


# -- expectations -------------------------------------------------------------------------------------
def load_expectation(path: str) -> dict[tuple[str, str], dict[str, Any]]:
    """A verdict table the user commits: the matrix's own ``--json`` output (a list of cells)."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except FileNotFoundError:
        raise NoInputError(f"expectation file {path} does not exist; create it with 'kmc matrix --json > {path}'") from None
    except OSError as exc:
        raise NoInputError(f"cannot read expectation file {path}: {exc.strerror or exc}") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadFileError(f"expectation file {path} is not JSON ({exc}); write it with 'kmc matrix --json'") from None
    if isinstance(data, dict) and isinstance(data.get("cells"), list):
        data = data["cells"]
    if not isinstance(data, list):
        raise BadFileError(f"expectation file {path} is not a list of cells; write it with 'kmc matrix --json'")
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for i, item in enumerate(data):
        if not (isinstance(item, dict) and isinstance(item.get("protocol"), str) and isinstance(item.get("invariant"), str)
                and item.get("verdict") in {v.value for v in Verdict}):
            raise BadFileError(f"expectation file {path}: entry {i} lacks protocol, invariant or a verdict "
                               "(holds, violated, undetermined)")
        out[item["protocol"], item["invariant"]] = item
    return out


def compare(cells: Sequence[Cell], expected: dict[tuple[str, str], dict[str, Any]], counts: bool = True,
            lengths: bool = True) -> list[str]:
    """One line per cell that differs from the expectation (verdict, length, distinct states) or is
    not in it; cells of the expectation this run did not check are not differences. Without ``counts`` the
    distinct states are not compared, without ``lengths`` the counterexamples' lengths (a reduced search's)."""
    changes = []
    for cell in cells:
        want = expected.get((cell.protocol, cell.invariant))
        where = f"{cell.protocol} / {cell.invariant}"
        if want is None:
            changes.append(f"{where}: {describe(cell)}, not in the expectation")
            continue
        diffs = []
        if want["verdict"] != cell.verdict:
            diffs.append(f"verdict {want['verdict']} -> {cell.verdict}")
        if lengths and cell.verdict == want["verdict"] == Verdict.VIOLATED.value and want.get("length") != cell.length:
            diffs.append(f"length {want.get('length')} -> {cell.length}")
        if (counts and cell.verdict == want["verdict"] and cell.verdict != Verdict.UNDETERMINED.value
                and "distinct_states" in want and want["distinct_states"] != cell.distinct_states):
            diffs.append(f"distinct states {want['distinct_states']:,} -> {cell.distinct_states:,}"
                         if isinstance(want["distinct_states"], int) else
                         f"distinct states {want['distinct_states']!r} -> {cell.distinct_states:,}")
        if diffs:
            changes.append(f"{where}: " + ", ".join(diffs))
    return changes


# -- output -------------------------------------------------------------------------------------------
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
        return f"violated in {cell.length}" if violated else f"holds ({cell.distinct_states:,})" if holds else "undetermined"
    if form == "keyed":
        return f"violated {cell.length}" if violated else f"holds {cell.distinct_states:,}" if holds else "undetermined"
    return f"✗ {cell.length}" if violated else f"✓ {cell.distinct_states:,}" if holds else "?"


_CELL_LEGEND = {
    "wide": "'violated in N': a shortest counterexample has N steps; 'holds (N)': N distinct states, all checked",
    "keyed": "'violated N': a shortest counterexample has N steps; 'holds N': N distinct states, all checked",
    "compact": "'✗ N': violated, a shortest counterexample has N steps; '✓ N': holds, N distinct states; '?': undetermined",
}


def _key(i: int) -> str:
    return chr(ord("A") + i) if i < 26 else f"A{i - 25}"


def _grid(cells: Sequence[Cell], form: str) -> list[str]:
    invariants = list(dict.fromkeys(c.invariant for c in cells))
    protocols = list(dict.fromkeys(c.protocol for c in cells))
    by_key = {(c.protocol, c.invariant): c for c in cells}
    headers = ["protocol"] + (invariants if form == "wide" else [_key(i) for i in range(len(invariants))])
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
        lines += [f"  {c.invariant.ljust(width)}  {describe(c)}" for c in cells if c.protocol == protocol]
    return lines


def layout(cells: Sequence[Cell], width: int) -> list[str]:
    """The matrix as plain lines no wider than ``width`` when any layout allows: a grid with the
    invariants' names as headers, else a grid with short keys and a legend, else the same with
    compact cells, else one line per cell. Names are never cut."""
    if not cells:
        return []
    for form in ("wide", "keyed", "compact"):
        lines = _grid(cells, form)
        legend = textwrap.wrap(_CELL_LEGEND[form], width, break_long_words=False, break_on_hyphens=False)
        if max(map(len, lines)) <= width and max(map(len, legend)) <= width:
            return lines + legend
    return _listing(cells)


def reduction_note(args: argparse.Namespace, width: int) -> list[str]:
    """What a reduced matrix's figures are (``--symmetry``, ``--reduce``): not the full search's."""
    said = []
    if args.symmetry or args.reduce != "none":
        said.append("the states counted are the reduced search's (" + ", then ".join(
            how for how, on in (("dead messages dropped", args.reduce == "dead"), ("one a symmetry orbit", args.symmetry))
            if on) + ")")
    if args.reduce != "none" and not args.shortest:
        said.append("a counterexample replays on the full model but need not be a shortest one, and a story is told of "
                    "it: --shortest gives the full search's lengths and stories")
    return textwrap.wrap("; ".join(said) + ".", width, break_long_words=False, break_on_hyphens=False) if said else []


def notes(cells: Sequence[Cell], width: int) -> list[str]:
    """The bounds each invariant was checked at and each violation's story, wrapped at ``width``."""
    out = []
    for line in bounds_note(cells):
        out += textwrap.wrap("bounds of " + line, width, subsequent_indent="    ", break_long_words=False,
                             break_on_hyphens=False)
    stories = [c for c in cells if c.story]
    if stories:
        out.append("stories of the violations:")
        for c in stories:
            out += textwrap.wrap(f"{c.protocol} / {c.invariant}: {c.story}", width, initial_indent="  ",
                                 subsequent_indent="    ", break_long_words=False, break_on_hyphens=False)
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
            texts.append("" if cell is None else f"**{_text(cell, 'wide')}**" if cell.verdict == "violated"
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


CSV_FIELDS = ("protocol", "invariant", "verdict", "length", "distinct_states", "states_generated", "depth",
              "seconds", "story", "trace_file", "constants")


def to_csv(cells: Sequence[Cell]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_FIELDS)
    for cell in cells:
        data = cell.to_json()
        data["constants"] = " ".join(f"{k}={v}" for k, v in (cell.constants or {}).items())
        writer.writerow(["" if data[k] is None else data[k] for k in CSV_FIELDS])
    return buffer.getvalue()


class ProgressLines:
    """TLC-like progress lines on stderr: one when a search starts, one every ``interval`` seconds
    during it, one per finished cell. Plain lines, so they read the same in a CI log."""

    def __init__(self, stream: Any = None, interval: float = 10.0) -> None:
        self.stream = stream or sys.stderr
        self.interval = interval
        self._last = time.monotonic()

    def _line(self, text: str) -> None:
        print(f"{time.strftime('%H:%M:%S')} {text}", file=self.stream, flush=True)

    def search(self, row: str, names: Sequence[str], constants: dict[str, Any]) -> None:
        bounds = ", ".join(f"{k}={v}" for k, v in constants.items())
        self._line(f"Checking {row}: {', '.join(names)} in one search ({bounds})")
        self._last = time.monotonic()

    def __call__(self, p: Progress) -> None:
        if time.monotonic() - self._last >= self.interval:
            self._last = time.monotonic()
            self._line(f"Progress({p.depth}): {p.states_generated:,} states generated, {p.distinct_states:,} distinct "
                       f"states found, {p.queue:,} states left on queue ({p.seconds:.0f} s).")

    def cell(self, cell: Cell) -> None:
        self._line(f"  {cell.protocol} / {cell.invariant}: {describe(cell)}")

    def running(self, searches: list[tuple[str, list[str], float]], done: int, total: int) -> None:
        """Searches on several cores: which run, for how long, and how many are done."""
        now = ", ".join(f"{row} ({', '.join(names)}, {seconds:.0f} s)" for row, names, seconds in searches)
        self._line(f"Progress: {done} of {total} searches done; running {now}")


def matrix_workers(given: int | None) -> int:
    """``--workers`` of the matrix: as given, else auto (the default: one a core of this process's CPU affinity)."""
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
    if args.workers is None:  # --engine parallel without --workers: one worker a core for each search
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
    cells = run_matrix(
        args.model, args.protocol, args.invariant, args.const, args.feature,
        max_seconds=args.max_seconds, max_states=args.max_states, uniform_bounds=args.uniform_bounds,
        bounds=args.bounds, properties=properties, trace_dir=args.trace_dir, engine=args.engine,
        engine_options=engine_options,
        on_cell=lines.cell if lines else None, on_search=on_search, progress=lines,
        workers=args.workers if at_once else 1, running=lines.running if lines else None,
        running_every=args.progress_every, symmetry=args.symmetry, reduce=args.reduce, shortest=args.shortest,
    )
    elapsed = time.monotonic() - started
    console = Console(highlight=False)
    if fmt == "json":
        print(json.dumps([c.to_json() for c in cells], indent=2))
    elif fmt == "csv":
        sys.stdout.write(to_csv(cells))
    elif fmt == "markdown":
        print(to_markdown(cells))
    else:
        width = console.width
        bounds = ", ".join(args.const) or "model bounds"
        extra = f"; features {', '.join(args.feature)}" if args.feature else ""
        extra += "".join(f"; {how}" for how, on in (("symmetry", args.symmetry), (f"reduce {args.reduce}", args.reduce != "none"),
                                                    ("shortest", args.shortest)) if on)
        title = f"{args.model}: every protocol against every invariant ({bounds}{extra})"
        for line in textwrap.wrap(title, width, break_long_words=False, break_on_hyphens=False):
            console.print(Text(line, style="bold"), soft_wrap=True)
        for line in layout(cells, width) + notes(cells, width) + reduction_note(args, width):
            text = Text(line)
            text.highlight_regex(r"\bviolated\b|✗", "red")
            text.highlight_regex(r"\bholds\b|✓", "green")
            text.highlight_regex(r"\bundetermined\b", "yellow")
            console.print(text, soft_wrap=True)
        how = "one search each" if engines.get_engine(args.engine).first_violations else "stop-at-first searches"
        if at_once and min(args.workers, len(configurations)) > 1 and can_fork():
            how += f", {min(args.workers, len(configurations))} at once"
        console.print(f"{len(cells)} cells from {len(configurations)} configurations ({how}) in {elapsed:.1f} s",
                      soft_wrap=True)
    if expected is not None:
        # a reduced search's states are not the full search's, nor (without --shortest) its lengths: an expectation
        # written by the full search is compared on what the reduction keeps
        changes = compare(cells, expected, counts=not args.symmetry and args.reduce == "none",
                          lengths=args.reduce == "none" or args.shortest)
        out = sys.stderr if fmt in ("json", "csv") else sys.stdout
        if changes:
            print(f"{len(changes)} cell{'s' if len(changes) != 1 else ''} differ from {args.expect}:", file=out)
            for change in changes:
                print(f"  {change}", file=out)
            return CELLS_CHANGED
        print(f"every cell matches {args.expect}", file=out)
        return 0
    if any(c.verdict == Verdict.UNDETERMINED.value for c in cells):
        return 20
    return 0


def add_parser(subparsers: Any, *_: Any) -> argparse.ArgumentParser:
    parser = subparsers.add_parser("matrix", help="every protocol version against every invariant, as a table",
                                   description="Every protocol version against every invariant. Exit codes: 0 ran (and "
                                   "matched --expect), 1 a cell differs from --expect, 20 a cell undetermined (without "
                                   "--expect), 64 usage, 65 unreadable --expect file, 66 missing --expect file.")
    parser.add_argument("model", nargs="?", default="kafka", help="model name (default kafka)")
    parser.add_argument("--protocol", action="append", default=[], metavar="NAME[,FLAG=on|off...]",
                        help="only these rows: a version, optionally with flags switched (e.g. kip-380,kafka-7786-fix=off)")
    parser.add_argument("--invariant", action="append", default=[], metavar="NAME", help="only these invariants")
    parser.add_argument("--property", action="append", default=[], metavar="MODULE:FUNCTION",
                        help="also check this function of a state (or of a state and the model) as an invariant; "
                             "with --property and no --invariant only the properties are checked")
    parser.add_argument("--const", action="append", default=[], metavar="NAME=VALUE", help="set a bound")
    parser.add_argument("--feature", action="append", default=[], metavar="FLAG=on|off",
                        help="switch a feature flag in every version (e.g. unclean=on)")
    parser.add_argument("--bounds", default=DEFAULT_BOUND_SET, metavar="NAME",
                        help="the model's named set of per-invariant bounds (default: default)")
    parser.add_argument("--uniform-bounds", action="store_true",
                        help="check every invariant at the model's default bounds (and --const), ignoring the "
                             "per-invariant bounds the model declares for the matrix")
    parser.add_argument("--max-seconds", type=positive_float, help="time budget per search (then: undetermined)")
    parser.add_argument("--max-states", type=positive_int, help="distinct-state budget per search (then: undetermined)")
    parser.add_argument("--format", choices=FORMATS, default="table", help="output format (default table)")
    parser.add_argument("--json", action="store_true", help="the same as --format json")
    parser.add_argument("--expect", metavar="FILE", help="compare with this verdict table (a saved 'kmc matrix --json'); "
                        "exit 1 and name the cells that changed").complete = FILE_COMPLETION
    parser.add_argument("--trace-dir", metavar="DIR", help="save every counterexample here (one JSON trace a violated cell)")
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    parser.add_argument("--progress-every", type=positive_float, default=10.0, metavar="SECONDS",
                        help="seconds between two progress lines during a search (default 10)")
    parser.add_argument("--symmetry", action="store_true", help="every search reduced by symmetry over interchangeable ids")
    parser.add_argument("--reduce", choices=reduce_choices(), default="none",
                        help="every search reduced: dead, messages whose delivery can "
                             f"only be a no-op dropped ({reductions_help()}; rows that cannot be reduced are refused); "
                             "default none. With --expect the verdicts are compared, and the lengths only with --shortest")
    parser.add_argument("--shortest", action="store_true",
                        help="with --reduce: a shortest counterexample for each violated cell (a full search bounded by "
                             "the reduced one's length)")
    add_engine_options(parser, default="local", workers_help="searches run at once, each in its own process (a number, "
                       "or auto: one a core, the default; at most the cores); with --engine parallel, the worker "
                       "processes of each search")
    parser.set_defaults(func=cmd_matrix)
    return parser
