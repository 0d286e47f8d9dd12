"""Running the matrix: its rows, the searches it runs (one a row and set of bounds), on one or
several processes, and each violated cell's story."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from checker import engines
from checker.invariant import SAFETY, Invariant
from checker.pool import can_fork, run_jobs
from checker.search import Progress, SearchOptions, search_canonical
from invariants.registry import for_family
from kmc.matrix.cells import Cell, check_cells
from kmc.options import steerable_defaults
from spec.errors import ModelError, UsageError
from spec.registry import build_model, get_model_info

DEFAULT_BOUND_SET = "default"


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
            raise UsageError(f"--protocol {text!r}: write the flags as FLAG=on|off after the "
                             "version, e.g. kip-380,unclean=on")
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
        return tuple(f"{k}={('on' if v else 'off') if isinstance(v, bool) else v}"
                     for k, v in value.items())
    return tuple(value or ())


def bound_sets(model: Any) -> dict[str, dict[str, tuple[str, ...]]]:
    """The model's named bound sets (invariant -> NAME=VALUE assignments); ``default`` always
    exists."""
    raw = model.matrix_bound_sets()
    sets = {name: {inv: _assignments(b) for inv, b in (bounds or {}).items()}
            for name, bounds in raw.items()}
    if DEFAULT_BOUND_SET not in sets:
        sets[DEFAULT_BOUND_SET] = {inv: _assignments(b)
                                   for inv, b in dict(model.matrix_bounds).items()}
    return sets


def story_of(model: Any, protocol: str, invariant: str, trace: Any, replay: dict[str, Any]
             | None = None) -> str | None:
    """The one-line story of a violated cell. For a model with a rule table (``ModelInfo.rules``) it
    is computed (``checker.stories``: the oldest later fix whose replay removes the counterexample;
    ``replay`` holds what that needs: model name, protocol, flags, constants, the invariant and the
    searches' path, ``kernel``);
    otherwise the model's own ``matrix_story`` hook, if any."""
    if trace is None:
        return None
    if (replay is not None and replay.get("protocol") is not None
        and get_model_info(replay["model"]).rules is not None):
        from checker.stories import story_of as computed_story

        found = computed_story(replay["model"], replay["protocol"], replay["flags"],
                               replay["constants"], replay["invariant"], trace,
                               replay.get("kernel", "auto"))
        return found.text if found is not None else None
    story = model.matrix_story(protocol, invariant, trace)
    if not story:
        return None
    return " ".join(str(story).split()) or None  # one line


def trace_path(directory: str, model_name: str, row: str, invariant: str) -> str:
    name = re.sub(r"[^A-Za-z0-9_.=-]+", "_", f"{model_name}-{row}-{invariant}")
    return os.path.join(directory, f"{name}.json")


@dataclass(frozen=True)
class MatrixOptions:
    """What the matrix checks and how (``kmc matrix``'s options).

    ``protocols`` are rows as ``parse_row`` reads them (default: ``default_rows``). Unless
    ``uniform_bounds``, an invariant listed in the model's bound set ``bounds`` is checked at those
    bounds, overridden by ``constants``. ``properties`` are loaded ``--property`` functions
    (``checker.properties.UserProperty``), checked like invariants. Without ``invariants`` and
    ``properties`` every safety invariant of the model is checked. Counterexamples are saved to
    ``trace_dir`` when given.

    ``workers``: searches run at once, each in its own forked process (``checker.pool``), with the
    local engine in one process; the cells, their figures and stories are the same at any count
    (each search is the same search), and come back in the same order. The workers take the searches
    largest first (``dispatch_order``); one worker runs them here in their own order.

    ``kernel``: "auto" runs each search on the row's compiled kernel where it is proven equal to
    the readable model (``checker.kernel``), "off" on the readable model everywhere: the table of
    docs/tutorials/matrix.md is the readable model's, made with "off".

    ``symmetry``, ``reduce`` and ``shortest`` are the search's own options
    (``kmc check --symmetry --reduce dead --shortest``), applied to every search; a row where one
    cannot apply is refused (one line) before any search runs. A cell's states are then the reduced
    search's, and its counterexample replays on the unreduced model but is a shortest one only with
    ``shortest``."""

    protocols: Sequence[str] = ()
    invariants: Sequence[str] = ()
    constants: Sequence[str] = ()
    features: Sequence[str] = ()
    properties: Sequence[Any] = ()
    bounds: str = DEFAULT_BOUND_SET
    uniform_bounds: bool = False
    max_seconds: float | None = None
    max_states: int | None = None
    symmetry: bool = False
    reduce: str = "none"
    shortest: bool = False
    engine: str = "local"
    engine_options: Any = None
    workers: int = 1
    trace_dir: str | None = None
    kernel: str = "auto"


@dataclass(frozen=True)
class MatrixObserver:
    """Who is told what while the matrix runs: ``on_search(row, invariant names, constants)`` before
    each search (with several workers: as it is handed to one), ``on_cell`` after each cell,
    ``progress`` during the searches in this process; with several workers, every ``running_every``
    seconds ``running`` instead: (row, invariants, seconds so far) of each search running, the
    searches done, all of them; ``on_note`` a line about what a row checks."""

    on_search: Callable[[str, Sequence[str], dict[str, Any]], None] | None = None
    on_cell: Callable[[Cell], None] | None = None
    progress: Callable[[Progress], None] | None = None
    running: Callable[[list[tuple[str, list[str], float]], int, int], None] | None = None
    running_every: float = 10.0
    #: a line about what the rows check, each once, before the first search
    on_note: Callable[[str], None] | None = None


def run_matrix(model_name: str, options: MatrixOptions = MatrixOptions(),
               observer: MatrixObserver = MatrixObserver()) -> list[Cell]:
    """Check every chosen row against every chosen safety invariant; one ``Cell`` each, in the rows'
    order and each row's columns' order."""
    info = get_model_info(model_name)
    rows = ([parse_row(p) for p in options.protocols] if options.protocols
            else default_rows(model_name))
    for row in rows:
        if row.protocol is not None and not info.has_protocol(row.protocol):
            raise UsageError(info.unknown_protocol(row.protocol))
    jobs: list[_Job] = []
    # each row's cells: (its job, its invariant), in column order
    order: list[list[tuple[int, str]]] = []
    notes: list[str] = []
    for row in rows:
        order.append(_add_jobs(model_name, row, options, observer, jobs, notes))
    if options.symmetry or options.reduce != "none" or options.shortest:
        for job in jobs:  # every refusal before the first search, not after the rows before it
            _check_reduction(job)
    if observer.on_note is not None:
        for note in dict.fromkeys(notes):  # each once, after every refusal, before any search
            observer.on_note(note)
    found = _run_jobs(model_name, jobs, options, observer)
    by_job = [{cell.invariant: cell for cell in done} for done in found]
    return [by_job[index][name] for row_cells in order for index, name in row_cells]


def _columns(model_name: str, model: Any, options: MatrixOptions
             ) -> tuple[list[str], dict[str, Invariant], str | None]:
    """The row's columns (invariant names), the safety invariants they may name and a line about
    the columns, if any; a name the model lacks, or a property named as a built-in invariant,
    refused. The directed engine's default columns are the default invariants that declare a
    distance (``kmc.options.steerable_defaults``)."""
    available = {k: v for k, v in for_family(model.family).items() if v.kind == SAFETY}
    for name in options.invariants:
        if name not in available:
            raise UsageError(f"model {model_name} has no invariant {name!r}; its invariants: "
                             f"{', '.join(available)}")
    for prop in options.properties:
        if prop.name in available:
            raise UsageError(f"--property {prop.spec}: the name {prop.name!r} is a built-in "
                             f"invariant of {model_name}; rename the function")
    # a model may leave invariants out of its default columns (``matrix_excluded``: ones that are
    # vacuous at the default bounds, such as Kafka's client properties without clients), and an
    # invariant may be checked by name only (``Invariant.default``); ``--invariant`` still names
    # them
    excluded = set(model.matrix_excluded)
    names = list(options.invariants) or ([] if options.properties else [
        k for k, v in available.items() if v.default and k not in excluded])
    note = None
    if not (options.invariants or options.properties) and engines.get_engine(
            options.engine).directed:
        kept, note = steerable_defaults([available[name] for name in names])
        names = [inv.name for inv in kept]
    return names + [p.name for p in options.properties], available, note


def _add_jobs(model_name: str, row: Row, options: MatrixOptions, observer: MatrixObserver,
              jobs: list[_Job], notes: list[str]) -> list[tuple[int, str]]:
    """The row's searches, one for each set of bounds its columns are checked at, appended to
    ``jobs``, and a line about its columns to ``notes``; the row's cells as (its job, its
    invariant), in column order."""
    flags = list(options.features) + list(row.features)
    constants = list(options.constants)
    model = build_model(model_name, constants, row.protocol, flags)
    names, available, note = _columns(model_name, model, options)
    if note:
        notes.append(note)
    sets = bound_sets(model)
    if options.bounds not in sets:
        raise UsageError(f"model {model_name} has no bound set {options.bounds!r}; its bound sets: "
                         f"{', '.join(sets)}")
    profile_of = {} if options.uniform_bounds else sets[options.bounds]
    header: dict[str, Any] = {"protocol": row.protocol} if row.protocol else {}
    if row.features:
        header["row"] = row.label
    search = {"max_seconds": options.max_seconds, "max_states": options.max_states,
              "header": header, "progress": observer.progress, "symmetry": options.symmetry,
              "reduce": options.reduce,
              # a row's compiled kernel where it is proven equal (auto), or the readable model
              "shortest": options.shortest, "kernel": options.kernel}
    groups: dict[tuple[str, ...], list[str]] = {}
    for name in names:
        groups.setdefault(tuple(profile_of.get(name, ())), []).append(name)
    where: dict[str, int] = {}
    for profile, group in groups.items():
        checked = (model if not profile else build_model(model_name, [*profile, *constants],
                                                         row.protocol, flags))
        chosen = {**available, **{p.name: p.bind(checked) for p in options.properties}}
        for name in group:
            where[name] = len(jobs)
        jobs.append(_Job(model_name, row, flags, profile, tuple(constants), checked,
                         tuple(chosen[n] for n in group), dict(search), options.engine,
                         options.engine_options))
    return [(where[name], name) for name in names]


def _run_jobs(model_name: str, jobs: list[_Job], options: MatrixOptions,
              observer: MatrixObserver) -> list[list[Cell]]:
    """Every job's cells, in the jobs' order: ``options.workers`` searches at once, each in one
    process (the engine's own workers are for one search); traces saved and the observer told as
    they come back."""

    def started(index: int) -> None:
        if observer.on_search is not None:
            job = jobs[index]
            observer.on_search(job.row.label, [inv.name for inv in job.invariants],
                               dict(job.model.constants))

    finished_jobs = []

    def finished(index: int, done: list[Cell]) -> None:
        finished_jobs.append(index)
        job = jobs[index]
        for i, cell in enumerate(done):
            if cell.trace is not None and options.trace_dir:
                from traces.io import save_trace

                path = trace_path(options.trace_dir, model_name, job.row.label, cell.invariant)
                done[i] = cell = replace(cell, trace_file=save_trace(cell.trace, path))
            if observer.on_cell is not None:
                observer.on_cell(cell)

    def report(busy: list[tuple[int, float]]) -> None:
        if observer.running is not None:
            observer.running([(jobs[i].row.label, [inv.name for inv in jobs[i].invariants], seconds)
                              for i, seconds in busy], len(finished_jobs), len(jobs))

    one_process = options.engine == "local" and getattr(options.engine_options, "workers", 1) <= 1
    at_once = min(options.workers, len(jobs)) if one_process else 1
    if at_once > 1 and can_fork():  # the searches' own progress stays in their processes
        for job in jobs:
            job.options["progress"] = None
    return run_jobs(_check_job, jobs, at_once, started, finished, report,
                    every=observer.running_every, order=dispatch_order(jobs))


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
    """One line (``UsageError``, exit 64) if the job's search cannot apply its reduction
    (``--symmetry``, ``--reduce``, ``--shortest``): the engine's refusal, or the row's
    (``--reduce dead`` on a row without dead messages)."""
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
    """An estimate of a search's cost, for handing the largest out first: the sum of its numeric
    bounds.

    A bounded state space grows about geometrically in each bound (one more record, epoch or crash
    multiplies the interleavings), so the sum ranks searches as the logarithm of their size would;
    it is computed from the job alone, costs nothing and is the same on every run. On the default
    Kafka matrix (99 searches, 766.5 s of CPU one after the other) longest-first by this sum gives
    two workers a makespan of 383.3 s, as longest-first by the measured seconds does (the jobs' own
    order: 390.4 s), ``bench/matrix_jobs.py``."""
    return sum(abs(value) for value in job.model.constants.values()
               if isinstance(value, (int, float)) and not isinstance(value, bool))


def dispatch_order(jobs: Sequence[_Job]) -> list[int]:
    """The order the workers take the searches in: the largest ``job_cost`` first (longest
    processing time first, Graham 1969: so that no worker idles at the end while another finishes a
    long search), ties in the jobs' order. Only when results come back depends on it, never the
    cells or their order."""
    costs = [job_cost(job) for job in jobs]
    return sorted(range(len(jobs)), key=lambda index: (-costs[index], index))


def _check_job(job: _Job) -> list[Cell]:
    """The job's cells, each violated one with its story (computed here: it replays, which costs a
    search's worth of CPU on the Kafka rows, and is done in the job's own process when the matrix
    runs on every core)."""
    cells = []
    for cell in check_cells(job.model, job.row.label, job.invariants, job.options, job.engine,
                            job.engine_options):
        if cell.trace is not None:
            replay = {"model": job.model_name, "protocol": job.row.protocol, "flags": job.flags,
                      "constants": [*job.profile, *job.constants],
                      "invariant": next(inv for inv in job.invariants if inv.name
                                        == cell.invariant),
                      # a story's searches switch flags the kernel may not be proven on
                      "kernel": "off" if job.options["kernel"] == "off" else "auto"}
            cell = replace(cell, story=story_of(job.model, job.row.label, cell.invariant,
                                                cell.trace, replay))
        cells.append(cell)
    return cells
