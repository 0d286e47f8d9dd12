"""``kmc matrix`` for CI and pull requests: one search per configuration with the figures of one
search per cell, ``--expect``, the output formats, a layout that never cuts a name, saved traces,
stories, named bound sets and progress lines."""

from __future__ import annotations

import csv
import io
import json

import pytest

from checker.bfs import check
from checker.search import SearchOptions
from invariants.registry import for_family
from kmc.cli import main
from kmc.matrix import cells as matrix_cells
from kmc.matrix import command as matrix_module
from kmc.matrix import run as matrix_run
from kmc.matrix.cells import Cell
from kmc.matrix.render import layout, notes
from kmc.matrix.run import MatrixObserver, MatrixOptions, parse_row, run_matrix
from kmc.progress import ProgressLines
from spec.registry import build_model
from tests import toy_matrix
from traces.io import load_trace

TOY = toy_matrix.NAME


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def per_invariant(model_name: str, cell: Cell, constants: list[str]) -> tuple:
    """What a stop-at-first search of the cell's invariant alone reports."""
    row = parse_row(cell.protocol)
    model = build_model(model_name, constants, row.protocol, list(row.features))
    alone = check(model, SearchOptions(invariants=[for_family(model.family)[cell.invariant]]))
    length = alone.violations[0].length if alone.violations else None
    return alone.verdict.value, length, alone.distinct_states, alone.states_generated, alone.depth


def figures(cell: Cell) -> tuple:
    return cell.verdict, cell.length, cell.distinct_states, cell.states_generated, cell.depth


def test_one_search_per_configuration_equals_per_invariant_runs(monkeypatch):
    searches = []
    real = matrix_cells._search
    monkeypatch.setattr(matrix_cells, "_search", lambda model, invs, *a: searches.append(
        (model.describe()["protocol"], model.constants["N"], [i.name for i in invs]))
                        or real(model, invs, *a))
    cells = run_matrix(TOY)
    # rows v1, v2, v1+fast; y-small at N=3 (the default bound set), the others at N=4: two searches
    # a row
    assert len(searches) == 6 and all(len(names) <= 2 for _, _, names in searches)
    verdicts = {(c.protocol, c.invariant): c.verdict for c in cells}
    assert verdicts == {
        ("v1", "x-small"): "violated", ("v1", "bounded"): "holds", ("v1", "y-small"): "violated",
        ("v2", "x-small"): "violated", ("v2", "bounded"): "holds", ("v2", "y-small"): "holds",
        ("v1,fast=on", "x-small"): "violated", ("v1,fast=on", "bounded"): "holds",
        ("v1,fast=on", "y-small"): "violated",
    }
    for cell in cells:
        constants = [f"N={cell.constants['N']}"]
        assert figures(cell) == per_invariant(TOY, cell, constants), cell


# about 2.5 s; the toy model's test above checks the same grouping in the fast tier
@pytest.mark.slow
def test_kafka_one_search_equals_per_invariant_runs():
    """The Kafka model at small uniform bounds: every invariant of two rows in one search each (two
    epochs: at one, every cell holds since the leader adds a follower to the ISR only as it records
    its fetch)."""
    constants = ["records=1", "epochs=2"]
    rows = ["hw-truncation", "kip-320"]
    cells = run_matrix("kafka", MatrixOptions(protocols=rows, constants=constants,
                                              uniform_bounds=True))
    assert {c.verdict for c in cells} == {"holds", "violated"}
    for cell in cells:
        assert figures(cell) == per_invariant("kafka", cell, constants), cell


def test_by_rounds_fallback_gives_the_same_cells():
    model = build_model(TOY, [], "v1", [])
    invariants = list(for_family(TOY).values())
    options = {"max_seconds": None, "max_states": None, "header": {}}
    one = matrix_cells.check_cells(model, "v1", invariants, options)
    rounds = matrix_cells.check_cells_by_rounds(model, "v1", invariants, options)
    assert [figures(c) for c in one] == [figures(c) for c in rounds]


# -- --expect --------------------------------------------------------------------------------------
def test_expect_passes_on_its_own_json_and_fails_on_a_changed_cell(capsys, tmp_path):
    code, out, _ = run(capsys, "matrix", TOY, "--json", "--quiet")
    assert code == 0
    expected = tmp_path / "expected.json"
    expected.write_text(out)
    code, out, _ = run(capsys, "matrix", TOY, "--quiet", "--expect", str(expected))
    assert code == 0 and f"every cell matches {expected}" in out

    cells = json.loads(expected.read_text())
    for cell in cells:
        if (cell["protocol"], cell["invariant"]) == ("v1", "x-small"):
            cell["length"] += 1
        if (cell["protocol"], cell["invariant"]) == ("v2", "y-small"):
            cell["verdict"] = "violated"
        if (cell["protocol"], cell["invariant"]) == ("v2", "bounded"):
            cell["distinct_states"] += 7
    changed = tmp_path / "changed.json"
    changed.write_text(json.dumps(cells))
    code, out, _ = run(capsys, "matrix", TOY, "--quiet", "--expect", str(changed))
    assert code == matrix_module.CELLS_CHANGED == 1
    assert "3 cells differ" in out
    assert "v1 / x-small: length 4 -> 3" in out
    assert "v2 / y-small: verdict violated -> holds" in out
    assert "v2 / bounded: distinct states" in out
    # a cell the expectation lacks is a difference too; cells it has but the run skipped are not
    code, out, _ = run(capsys, "matrix", TOY, "--quiet", "--expect", str(expected), "--protocol",
                       "v2")
    assert code == 0
    cells = [c for c in json.loads(expected.read_text()) if c["protocol"] != "v2"]
    changed.write_text(json.dumps(cells))
    code, out, _ = run(capsys, "matrix", TOY, "--quiet", "--expect", str(changed), "--protocol",
                       "v2")
    assert code == 1 and "not in the expectation" in out


def test_expect_file_errors(capsys, tmp_path):
    code, _, err = run(capsys, "matrix", TOY, "--quiet", "--expect", str(tmp_path / "missing.json"))
    assert code == 66 and len(err.strip().splitlines()) == 1 and "kmc matrix --json" in err
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    code, _, err = run(capsys, "matrix", TOY, "--quiet", "--expect", str(bad))
    assert code == 65 and len(err.strip().splitlines()) == 1
    bad.write_text(json.dumps([{"protocol": "v1"}]))
    code, _, err = run(capsys, "matrix", TOY, "--quiet", "--expect", str(bad))
    assert code == 65 and "entry 0" in err


def test_undetermined_cells_exit_20_without_expect(capsys):
    code, out, _ = run(capsys, "matrix", TOY, "--quiet", "--json", "--max-states", "3",
                       "--protocol", "v2")
    assert code == 20 and "undetermined" in {c["verdict"] for c in json.loads(out)}


# -- formats, layout, traces, stories, bound sets --------------------------------------------------
def test_formats_and_stories(capsys, tmp_path):
    code, out, _ = run(capsys, "matrix", TOY, "--quiet", "--format", "json")
    cells = json.loads(out)
    story = {(c["protocol"], c["invariant"]): c["story"] for c in cells}
    assert story["v1", "x-small"] == "TOY-1: x reaches 3 in 3 steps under v1"
    assert story["v1,fast=on", "x-small"] == "TOY-1: x reaches 4 in 2 steps under v1,fast=on"
    assert story["v1", "y-small"] is None and story["v1", "bounded"] is None

    code, out, _ = run(capsys, "matrix", TOY, "--quiet", "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert code == 0 and len(rows) == 9
    by_key = {(r["protocol"], r["invariant"]): r for r in rows}
    assert (by_key["v1", "x-small"]["length"] == "3"
            and by_key["v1", "x-small"]["story"].startswith("TOY-1"))
    assert by_key["v2", "bounded"]["verdict"] == "holds" and by_key["v2", "bounded"]["length"] == ""

    code, out, _ = run(capsys, "matrix", TOY, "--quiet", "--format", "markdown")
    assert out.startswith("| protocol | x-small | y-small | bounded |\n|---|---|---|---|\n")
    assert "| `v1,fast=on` | **violated in 2** |" in out
    assert "- `v1` / `x-small`: TOY-1: x reaches 3 in 3 steps under v1" in out

    code, out, _ = run(capsys, "matrix", TOY, "--quiet")
    assert "stories of the violations:" in out and "v1 / x-small: TOY-1: x reaches 3" in out


def test_bound_sets(capsys):
    code, out, _ = run(capsys, "matrix", TOY, "--quiet", "--json", "--bounds", "deep", "--protocol",
                       "v1")
    cells = {c["invariant"]: c for c in json.loads(out)}
    assert code == 0
    assert cells["x-small"]["constants"] == {"N": 6} and cells["y-small"]["constants"] == {"N": 6}
    assert cells["bounded"]["constants"] == {"N": 4}
    code, _, err = run(capsys, "matrix", TOY, "--quiet", "--bounds", "nope")
    assert code == 64 and "its bound sets: default, deep" in err
    # a model without matrix_bound_sets has one set, "default", which is its matrix_bounds
    model = build_model("two-phase", [])
    assert matrix_run.bound_sets(model) == {"default": {}}
    # the Kafka model declares "default" (its matrix_bounds) and "deep"
    kafka = build_model("kafka", [])
    sets = matrix_run.bound_sets(kafka)
    assert set(sets) == {"default", "deep"}
    assert sets["default"] == {k: tuple(v) for k, v in kafka.matrix_bounds.items()}
    assert sets["deep"]["committed-durable"] == ("brokers=3", "records=1", "epochs=2", "crashes=1")


def test_trace_dir_saves_every_counterexample(capsys, tmp_path):
    code, out, _ = run(capsys, "matrix", TOY, "--quiet", "--json", "--trace-dir",
                       str(tmp_path / "traces"))
    cells = json.loads(out)
    violated = [c for c in cells if c["verdict"] == "violated"]
    assert len(violated) == 5 and len({c["trace_file"] for c in violated}) == 5
    for cell in cells:
        if cell["verdict"] != "violated":
            assert cell["trace_file"] is None
            continue
        trace, _ = load_trace(cell["trace_file"], build_model(TOY, [f"N={cell['constants']['N']}"],
                                                              *_row(cell["protocol"])))
        assert trace.length == cell["length"] and trace.invariant == cell["invariant"]


def _row(label: str) -> tuple:
    row = parse_row(label)
    return row.protocol, list(row.features)


KAFKA_ROWS = ("hw-truncation", "kip-101", "kip-279", "kip-320", "kip-380", "truncate-on-fetch",
              "kip-380,kafka-7786-fix=off")
KAFKA_INVARIANTS = ("log-matching", "committed-durable", "replica-sanity",
                    "no-stale-control-request", "no-fence-stall")


def kafka_like_cells() -> list[Cell]:
    """The default Kafka matrix's names with figures of its size (the layout depends only on
    widths)."""
    cells = []
    for i, protocol in enumerate(KAFKA_ROWS):
        for j, invariant in enumerate(KAFKA_INVARIANTS):
            holds = (i + j) % 3 == 0
            cells.append(Cell(protocol, invariant, "holds" if holds else "violated", 161_590
                              - 97 * i, 1_234_567, 19,
                              None if holds else 10 + i + j, 1.0,
                              constants={"brokers": 2, "records": 2, "epochs": 2,
"crashes": 1, "inflight": 0, "bumps": 0, "shutdowns": 0, "bounces": 0},
                              story=None if holds else f"KAFKA-{7000 + i} follower truncation "
                                                       "below the high watermark"))
    return cells


@pytest.mark.parametrize("width", [80, 100])
def test_layout_fits_and_never_cuts_a_name(width):
    cells = kafka_like_cells()
    lines = layout(cells, width) + notes(cells, width)
    assert max(map(len, lines)) <= width
    words = {w for line in lines for w in line.replace(",", " ").split()}
    for name in KAFKA_ROWS + KAFKA_INVARIANTS:
        assert (name in words or any(line.strip().startswith(name) or f" {name}" in line
                                     for line in lines)), name
    for protocol in KAFKA_ROWS:  # every row label whole at the start of a line
        assert any(line.startswith(protocol + " ") or line == protocol for line in lines), protocol
    for invariant in KAFKA_INVARIANTS:
        assert any(invariant in line.split() or line.endswith(invariant) for line in lines), (
            invariant)


def test_layout_prefers_full_names_when_they_fit():
    cells = kafka_like_cells()
    wide = layout(cells, 200)
    assert wide[0].split() == ["protocol", *KAFKA_INVARIANTS]
    narrow = layout(cells, 60)  # no grid fits: one line per cell
    assert max(map(len, narrow)) <= 60 and narrow[0] == "hw-truncation"


@pytest.mark.parametrize("columns", ["80", "100"])
def test_matrix_command_output_fits_the_terminal(capsys, monkeypatch, columns):
    monkeypatch.setenv("COLUMNS", columns)
    code, out, _ = run(capsys, "matrix", TOY, "--quiet")
    assert code == 0
    assert max(map(len, out.splitlines())) <= int(columns)
    for name in ("x-small", "y-small", "bounded", "v1,fast=on"):
        assert name in out


def test_progress_lines_on_a_stream_that_is_not_a_terminal(capsys):
    stream = io.StringIO()
    lines = ProgressLines(stream, interval=0.0)
    cells = run_matrix(TOY, MatrixOptions(protocols=["v1"]),
                       MatrixObserver(on_search=lines.search, on_cell=lines.cell, progress=lines))
    text = stream.getvalue()
    assert (text.count("Checking v1:") == 2 and "Progress(" in text and "states left on queue"
            in text)
    assert text.count(" v1 / ") == len(cells) == 3
    # the command writes them to stderr (not a terminal under pytest) unless --quiet
    code, _, err = run(capsys, "matrix", TOY, "--protocol", "v2")
    assert code == 0 and "Checking v2: x-small, bounded, y-small in one search" not in err
    assert "Checking v2:" in err and "v2 / x-small: violated in 3 steps" in err
    code, _, err = run(capsys, "matrix", TOY, "--protocol", "v2", "--quiet")
    assert err == ""


def test_the_parallel_engine_gives_the_same_cells(capsys):
    outs = []
    for workers in ("1", "2"):
        code, out, _ = run(capsys, "matrix", TOY, "--quiet", "--json", "--workers", workers)
        outs.append([{k: v for k, v in c.items() if k != "seconds"} for c in json.loads(out)])
    assert code == 0 and outs[0] == outs[1]


@pytest.mark.parametrize("command", [
    pytest.param([TOY], id="toy"),
    pytest.param(["kafka", "--protocol", "0.10.2", "--protocol", "2.1.0", "--invariant",
                  "no-fence-stall", "--invariant", "no-stale-control-request", "--invariant",
                  "log-matching", "--const", "records=1"],
                 id="kafka", marks=pytest.mark.slow),  # Kafka's four matrix runs: about 3 s of CPU
])
def test_the_matrix_on_two_cores_gives_the_same_table_counts_stories_and_traces(
    capsys, tmp_path, command):
    """--workers 2 runs the searches two at once, each in its own process: the same table, counts,
    stories and saved traces as one after the other."""
    outs = {}
    for workers in ("1", "2"):
        traces = tmp_path / f"traces-{workers}"
        code, table, _ = run(capsys, "matrix", *command, "--quiet", "--workers", workers,
                             "--trace-dir", str(traces))
        *lines, footer = table.splitlines()
        assert code == 0 and footer.endswith(" s")
        assert ("2 at once" in footer) == (workers == "2")
        code, data, _ = run(capsys, "matrix", *command, "--quiet", "--workers", workers, "--json")
        cells = [{k: v for k, v in c.items() if k != "seconds"} for c in json.loads(data)]
        saved = {p.name: p.read_bytes() for p in traces.iterdir()}
        outs[workers] = (lines, cells, saved)
    assert outs["1"] == outs["2"]
    lines, cells, saved = outs["1"]
    assert any(c["story"] for c in cells)
    assert len(saved) == sum(c["verdict"] == "violated" for c in cells) > 0


def test_the_matrix_on_two_cores_reports_which_searches_run(capsys):
    stream = io.StringIO()
    lines = ProgressLines(stream, interval=0.0)
    cells = run_matrix(TOY, MatrixOptions(workers=2), MatrixObserver(
        on_search=lines.search, on_cell=lines.cell, running=lines.running, running_every=0.0))
    text = stream.getvalue()
    assert (text.count("Checking ")
            == len({(c.protocol, tuple(sorted(c.constants.items()))) for c in cells}))
    assert text.count(" / ") == len(cells)
    assert "Progress: " in text and "searches done; running " in text


def test_one_search_on_two_cores_keeps_its_progress_lines():
    stream = io.StringIO()
    lines = ProgressLines(stream, interval=0.0)
    run_matrix(TOY, MatrixOptions(protocols=["v1"], invariants=["x-small"], workers=2),
               MatrixObserver(
        on_search=lines.search, on_cell=lines.cell, progress=lines, running=lines.running))
    assert "Progress(" in stream.getvalue()  # one search: run here, with its own progress lines


def _searches_started(workers: int, **kwargs) -> list[tuple[str, int]]:
    started = []
    run_matrix(TOY, MatrixOptions(workers=workers, **kwargs),
               MatrixObserver(on_search=lambda row, names, constants: started.append(
                   (row, constants["N"]))))
    return started


def test_two_workers_take_the_largest_searches_first_and_one_takes_them_in_order():
    """Each row checks y-small at N=3 and the others at N=4: two workers take the three N=4 searches
    first (the largest bounds), ties in the rows' order; one worker runs the searches here in the
    rows' order."""
    assert (_searches_started(2) == [("v1", 4), ("v2", 4), ("v1,fast=on", 4), ("v1", 3), ("v2", 3),
                                     ("v1,fast=on", 3)])
    assert (_searches_started(1) == [("v1", 4), ("v1", 3), ("v2", 4), ("v2", 3), ("v1,fast=on", 4),
                                     ("v1,fast=on", 3)])


def test_the_dispatch_order_is_by_the_estimate_largest_first():
    captured = []
    real = matrix_run.run_jobs
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(matrix_run, "run_jobs",
                      lambda work, jobs, *a, **k: captured.append((jobs, k["order"]))
                      or real(work, jobs, *a, **k))
        run_matrix(TOY, MatrixOptions(bounds="deep", workers=2))
    jobs, order = captured[0]
    costs = [matrix_run.job_cost(job) for job in jobs]
    assert costs == [job.model.constants["N"] for job in jobs] and len(set(costs)) > 1
    assert order == sorted(range(len(jobs)), key=lambda i: (-costs[i], i)) != list(range(len(jobs)))


def test_the_cost_estimate_is_the_sum_of_the_numeric_bounds():
    class Job:
        def __init__(self, constants):
            self.model = type("M", (), {"constants": constants})()

    assert (matrix_run.job_cost(Job({"brokers": 2, "records": 3, "acks": -1, "unclean": True,
                                     "mode": "x"})) == 6)
    assert (matrix_run.dispatch_order([Job({"N": 1}), Job({"N": 3}), Job({"N": 1, "M": 2}),
                                       Job({})]) == [1, 2, 0, 3])


def test_kernel_off_runs_every_search_and_story_on_the_readable_model(capsys, monkeypatch):
    """``kmc matrix --kernel off`` (how the documented table is made): no search of a cell or of
    its story runs on the compiled kernel, and the cells and stories are the kernel's."""
    from checker import kernel

    command = ["matrix", "kafka", "--protocol", "2.1.0", "--invariant", "no-fence-stall",
               "--const", "records=1", "--const", "epochs=2", "--json", "--quiet"]
    calls = []
    real = kernel.run
    monkeypatch.setattr(kernel, "run", lambda *a, **k: calls.append(a) or real(*a, **k))
    code, auto, _ = run(capsys, *command)
    assert code == 0 and calls, "auto: the kernel runs the cell and its story's searches"
    calls.clear()
    code, off, _ = run(capsys, *command, "--kernel", "off")
    assert code == 0 and not calls
    cells = [{k: v for k, v in c.items() if k != "seconds"} for c in json.loads(off)]
    assert cells == [{k: v for k, v in c.items() if k != "seconds"} for c in json.loads(auto)]
    assert cells[0]["verdict"] == "violated" and cells[0]["story"].startswith("KAFKA-7786")
