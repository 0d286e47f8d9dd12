"""Every cell of ``kmc matrix`` searched on the compiled kernel against the matrix table, and every
counterexample it finds shown, exported to ITF and read back, drawn and replayed under every
protocol version; and the control-plane messages drawn readably.

The matrix table (docs/tutorials/matrix.md) is the readable model's: ``kmc matrix --kernel off``
made it, and the page records the digest of the readable model's source that did
(``tests.matrix_table.readable_digest``). A fast test here fails when that source changes and the
table was not re-run. The slow tests run each row of the default matrix as ``kmc matrix`` runs it
(``kmc.matrix.run.run_matrix``: its per-invariant bounds, one search a set of bounds), on
the row's compiled kernel (``kernel="on"``: a search the kernel cannot run is an error, not the
readable model), and every cell must be the table's: its verdict, and the shortest counterexample's
length or the distinct states. The cells whose search the kernel cannot run yet (the consumers are
not compiled: the consumed-stays column) are left to the readable table. So CI proves the kernel
against the readable model's table at every cell it compiles, every run, and a rule change cannot
land without the readable matrix re-run.
"""

from __future__ import annotations

import io
import re
from typing import NamedTuple

import pytest
from rich.console import Console

from checker import kernel
from checker.invariant import SAFETY
from checker.search import CHECKER_VERSION, SearchOptions
from invariants.registry import for_family
from kmc.matrix import run as matrix_run
from kmc.matrix.cells import Cell
from kmc.matrix.run import MatrixOptions, Row, default_rows, run_matrix
from spec.errors import NotReplayableError
from spec.registry import build_model, get_model_info
from tests.matrix_table import (
    READABLE_MATRIX,
    documented_cells,
    documented_digest,
    documented_lengths,
    readable_digest,
    readable_sources,
)
from traces.diagram import to_dot, to_mermaid, to_svg
from traces.io import load_trace, model_for_header, save_trace
from traces.render import print_trace
from traces.replay import replay_scenario, replay_trace, scenario_model
from traces.scenario import load_scenario

#: cells every run of the default matrix must find violated (each version's known bug)
KNOWN = {
    ("0.10.2", "log-matching"), ("2.1.0", "no-fence-stall"),
    ("2.1.0", "no-stale-control-request"), ("2.0.1", "no-bounce-stall"),
    ("2.8.0", "committed-durable"), ("2.8.1", "no-uncommitted-below-hw"),
    ("2.8.0,kafka-9654=off", "no-fence-stall"),
}
#: the columns whose searches the kernel may not run yet: the consumers are not compiled (a row's
#: consumed-stays search runs the readable model, the kernel says why: ``checker.kernel.why_not``)
READABLE_ONLY = {"consumed-stays"}
#: the message a request kind is drawn as, and the action that sends it
MESSAGES = {"LeaderAndIsr": "LeaderAndIsr(", "StopReplica": "StopReplica(",
            "ControlledShutdown": "ControlledShutdown(", "Fetch": "FetchRequest(",
            "OffsetsForLeaderEpoch": "OffsetsRequest("}
#: a row whose counterexamples draw a LeaderAndIsr, a Fetch and an OffsetsForLeaderEpoch request
#: (2.1.0's control-plane and replica-sanity cells; 0.11.0, 2.0.0, 2.1.1 and 2.2.0 draw all three
#: too)
EVERY_KIND_ROW = "2.1.0"
SENDERS = {"SendFetch": "FetchRequest(", "SendOffsetsForLeaderEpoch": "OffsetsRequest(",
           "ControlledShutdown": "ControlledShutdown("}


def test_the_table_is_the_readable_models_of_this_source():
    """The table was made by the readable model as it is: a change to a rule, a state or an
    invariant (``tests.matrix_table.readable_sources``) fails here until the readable matrix is
    re-run and its table and digest are on the page."""
    recorded, now = documented_digest(), readable_digest()
    assert recorded == now, (
        f"the readable Kafka model changed since docs/tutorials/matrix.md's table was made "
        f"(recorded sha256:{recorded}, now sha256:{now}; {len(readable_sources())} files of "
        f"spec/kafka and invariants/kafka_*.py): re-run `{READABLE_MATRIX}`, paste its table "
        f"into the page and set the line 'The readable model's source for this table: digest "
        f"`sha256:{now}`'; the slow tier then proves the kernel against it "
        f"(tests/test_traces_matrix.py)")


def test_the_digest_covers_the_readable_model_and_not_the_kernel(tmp_path):
    """A byte of a rule's module or of an invariant's changes the digest; the kernel's files and
    other modules do not."""
    for name in ("spec/kafka/actions_data.py", "spec/kafka/kernel.py", "spec/kafka/kernel.c",
                 "spec/fields.py", "invariants/kafka_sanity.py", "invariants/registry.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x = 1\n")
    before = readable_digest(tmp_path)
    assert ([p.relative_to(tmp_path).as_posix() for p in readable_sources(tmp_path)]
            == ["invariants/kafka_sanity.py", "spec/kafka/actions_data.py"])
    for name, moves in (("spec/kafka/kernel.py", False), ("spec/kafka/kernel.c", False),
                        ("invariants/registry.py", False), ("spec/kafka/actions_data.py", True),
                        ("invariants/kafka_sanity.py", True)):
        (tmp_path / name).write_text("x = 2\n")
        assert (readable_digest(tmp_path) != before) is moves, name
        before = readable_digest(tmp_path)


class MatrixRow(NamedTuple):
    """One row of the default matrix searched on the kernel."""

    label: str
    cells: list[Cell]  # the cells of ``kernel_columns``'s first list, in column order
    refused: dict[str, str]  # the row's other columns: why the kernel cannot run their search


def kernel_columns(row: Row) -> tuple[list[str], dict[str, str]]:
    """The row's default matrix columns whose search the compiled kernel runs, and the others with
    the kernel's reason: the columns and bounds ``kmc matrix`` checks the row at
    (``kmc.matrix.run``), each set of bounds one search."""
    model = build_model("kafka", [], row.protocol, list(row.features))
    excluded = set(getattr(model, "matrix_excluded", ()))
    columns = {k: v for k, v in for_family(model.family).items()
               if v.kind == SAFETY and v.default and k not in excluded}
    bounds = dict(getattr(model, "matrix_bounds", {}))
    groups: dict[tuple[str, ...], list[str]] = {}
    for name in columns:
        groups.setdefault(tuple(bounds.get(name, ())), []).append(name)
    on, refused = [], {}
    for profile, names in groups.items():
        checked = (model if not profile else build_model("kafka", list(profile), row.protocol,
                                                         list(row.features)))
        why = kernel.why_not(checked, SearchOptions(invariants=[columns[n] for n in names]))
        if why is None:
            on.extend(names)
        else:
            refused.update(dict.fromkeys(names, why))
    return [name for name in columns if name in on], refused


#: every row of the default matrix, each its own group under ``pytest -n N --dist loadgroup``: a
#: row's tests share one worker, so that its searches (the module fixture below) run once, and the
#: rows' searches (0 to about 15 s of CPU a row on the kernel) are shared between the workers
ROWS = default_rows("kafka")


@pytest.fixture(scope="module",
                params=[pytest.param(row, id=row.label,
                                     marks=pytest.mark.xdist_group(f"traces-matrix-{row.label}"))
                        for row in ROWS])
def matrix_row(request) -> MatrixRow:
    """The row's matrix on the compiled kernel, searched once for the module's tests of that row.
    Without the stories: their searches switch a fix's flags, a kernel library each (46 more
    compiles beside the 89 on a cold cache, about 58 s of CPU); tests/test_matrix_stories.py checks
    them."""
    row = request.param
    on, refused = kernel_columns(row)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(matrix_run, "story_of", lambda *args: None)
        cells = run_matrix("kafka", MatrixOptions(protocols=[row.label], invariants=on,
                                                  kernel="on"))
    return MatrixRow(row.label, cells, refused)


@pytest.fixture
def violations(matrix_row) -> list[tuple[str, Cell]]:
    """(row label, cell) for every violated cell of the row, with its counterexample."""
    return [(matrix_row.label, c) for c in matrix_row.cells if c.verdict == "violated"]


def test_every_row_of_the_table_is_searched():
    """The slow tests below take the table's rows one at a time: none of its rows, and none of the
    cells every run must find violated, is left out."""
    rows = {row.label for row in ROWS}
    assert {label for label, _ in documented_cells()} == rows
    assert {label for label, _ in KNOWN} <= rows and EVERY_KIND_ROW in rows


# the searches of a row of the default matrix on the kernel (one fixture a row)
@pytest.mark.slow
def test_every_cell_on_the_kernel_is_the_readable_tables(matrix_row):
    assert set(matrix_row.refused) <= READABLE_ONLY, matrix_row.refused
    table = {cell: found for cell, found in documented_cells().items()
             if cell[0] == matrix_row.label}
    searched = {(matrix_row.label, c.invariant): (c.verdict, c.length if c.verdict == "violated"
                                                  else c.distinct_states)
                for c in matrix_row.cells}
    assert searched == {cell: found for cell, found in table.items()
                        if cell[1] not in matrix_row.refused}
    assert {invariant for _, invariant in table} == {c.invariant for c in matrix_row.cells} | set(
        matrix_row.refused)


# the searches of a row of the default matrix on the kernel (one fixture a row)
@pytest.mark.slow
def test_the_matrix_counterexamples_are_collected(matrix_row, violations):
    label = matrix_row.label
    cells = {(row, v.invariant) for row, v in violations}
    assert {cell for cell in KNOWN if cell[0] == label} <= cells
    assert all(v.trace is not None for _, v in violations), "one trace per violated cell"
    # every violated cell of the row in the table, with the table's length
    assert {(row, v.invariant): v.length for row, v in violations} == {
        cell: length for cell, length in documented_lengths().items()
        if cell[0] == label and cell[1] not in matrix_row.refused}
    for row, v in violations:
        trace = v.trace
        assert trace.invariant == v.invariant and trace.length == v.length == trace.violation_index
        header = trace.header
        # a saved counterexample names everything needed to replay it
        assert header["model"] == "kafka" and header["protocol"] == row.split(",")[0]
        assert header["checker_version"] == CHECKER_VERSION and header["checker"] == "kmc"
        assert (set(header["constants"]) >= {"brokers", "records", "epochs", "crashes", "bumps",
                                             "shutdowns", "bounces"})
        features = header["features"]
        assert (isinstance(features, dict) and "kafka-7786-fix" in features
                and "leader-epoch-fencing" in features)
        if "," in row:
            assert header["row"] == row
            for switch in row.split(",")[1:]:
                name, value = switch.split("=")
                assert features[name] is (value == "on"), (row, name)


# the searches of a row of the default matrix on the kernel (one fixture a row)
@pytest.mark.slow
def test_every_counterexample_is_shown(violations):
    for row, v in violations:
        out = io.StringIO()
        print_trace(Console(file=out, width=200, color_system=None), v.trace)
        text = out.getvalue()
        for step in v.trace.steps:
            assert str(step.action) in text, (row, v.invariant, step.action)
        assert f"Invariant {v.invariant} is violated in state {v.length + 1}" in text
        assert f"protocol {row.split(',')[0]}" in text
        for flag in row.split(",")[1:]:
            assert flag in text, (row, "the trace header names the switched flag")


# the searches of a row of the default matrix on the kernel (one fixture a row)
@pytest.mark.slow
def test_every_counterexample_reads_back_identical_from_itf(violations, tmp_path):
    for i, (_, v) in enumerate(violations):
        path = save_trace(v.trace, str(tmp_path / f"cell{i}.itf.json"))
        again, model = load_trace(path)
        assert again == v.trace
        assert (model.protocol == v.trace.header["protocol"] and model.features.as_dict()
                == v.trace.header["features"])


def _arrows(mermaid: str) -> list[str]:
    return [line for line in mermaid.splitlines() if "->>" in line]


# the searches of a row of the default matrix on the kernel (one fixture a row)
@pytest.mark.slow
def test_every_counterexample_is_drawn(matrix_row, violations):
    drawn: set[str] = set()
    for row, v in violations:
        mermaid = to_mermaid(v.trace)
        assert (mermaid.startswith("sequenceDiagram") and f"step {v.length}: {v.invariant} violated"
                in mermaid)
        arrows = _arrows(mermaid)
        for number, step in enumerate(v.trace.steps, start=1):
            label = SENDERS.get(step.action.name)
            if label is not None:  # a request a broker sends: an arrow at this step
                assert any(f": {number}. {label}" in a for a in arrows), (
                    (row, v.invariant, number, step.action))
        for kind, label in MESSAGES.items():
            if any(label in a for a in arrows):
                drawn.add(kind)
        for a in arrows:
            if "ControlledShutdown(" in a:
                assert re.search(r"broker_\d+->>controller", a)
            if "Response(" in a:
                assert not re.search(r"error=\d", a), "error codes are drawn by name"
        assert to_dot(v.trace).rstrip().endswith("}") and to_svg(v.trace).startswith("<svg")
    if matrix_row.label == EVERY_KIND_ROW:
        assert {"LeaderAndIsr", "Fetch", "OffsetsForLeaderEpoch"} <= drawn


# the searches of a row of the default matrix on the kernel (one fixture a row)
@pytest.mark.slow
def test_every_counterexample_replays_under_every_protocol(violations):
    protocols = list(get_model_info("kafka").protocols)
    for row, v in violations:
        trace = v.trace
        own = model_for_header(trace.header)
        again = replay_trace(own, trace, [v.invariant])
        assert ((again.outcome, again.invariant.name, again.step)
                == ("violated", v.invariant, v.length)), row
        assert again.diverged_at is None and again.trace.states == trace.states
        # with every invariant checked, one may break earlier: a client column's trace loses a
        # committed record (committed-durable) a step before the consumer's read of it vanishes
        # (consumed-stays)
        every = replay_trace(own, trace)
        assert every.outcome == "violated" and every.step <= v.length, row
        for protocol in protocols:
            try:
                result = replay_trace(model_for_header(trace.header, protocol), trace)
            except NotReplayableError:
                continue  # not replayable there: a step that fits two different states
            assert result.outcome in ("holds", "violated", "blocked")
            assert int(result.exit_code) in (0, 12, 67)
            if result.outcome == "violated":
                assert result.step <= len(trace.steps)


def _scenario_run(fragment: str, protocol: str):
    import glob
    import os

    path = next(p for p in glob.glob(os.path.join(os.path.dirname(__file__), "..", "traces",
                                                  "scenarios", "*.json"))
                if fragment in p)
    scenario = load_scenario(path)
    return replay_scenario(scenario_model(scenario, protocol), scenario)


def test_control_requests_are_drawn_between_the_controller_and_the_brokers():
    bounce = to_mermaid(_scenario_run("bounce-during-controlled-shutdown", "kip-380").trace)
    arrows = _arrows(bounce)
    assert any(a.strip().startswith("broker_1->>controller: 1. ControlledShutdown(broker_epoch=0")
               for a in arrows)
    assert any(a.strip().startswith("controller->>broker_1: 2. StopReplica(") for a in arrows)
    assert any(a.strip().startswith("controller->>broker_0: 2. LeaderAndIsr(epoch=1")
               for a in arrows)
    assert "Note over broker_1: 3. Bounce(broker=1)" in bounce
    assert "4. DeliverStopReplica(broker=1): handles StopReplica" in bounce
    assert any("5. LeaderAndIsr(" in a and "broker_epoch=1" in a for a in arrows), (
        "KIP-380's start-up handling")
    stall = to_mermaid(_scenario_run("kafka-7786", "kip-320").trace)
    assert ("error=FENCED_LEADER_EPOCH" in stall and "handles OffsetsResponse FENCED_LEADER_EPOCH"
            in stall)
    # it sends: arrows, not a note
    assert "Note over controller: 9. BumpLeaderEpoch(leader=0)" not in stall
    assert any(a.strip().startswith("controller->>broker_0: 9. LeaderAndIsr(epoch=2")
               for a in _arrows(stall))


def test_a_crash_shows_the_messages_it_drops():
    from traces.replay import replay
    from traces.scenario import parse_action

    model = build_model("kafka", ["records=0", "shutdowns=1", "bounces=1"], "kip-380")
    steps = ["SendFetch(follower=1, leader=0)", "ControlledShutdown(broker=1)",
             "ProcessControlledShutdown(broker=1)", "Bounce(broker=1)",
             "ProcessBrokerChange(broker=1)"]
    mermaid = to_mermaid(replay(model, [parse_action(s) for s in steps]).trace)
    assert ("Note over broker_1: 4. Bounce(broker=1): drops FetchRequest (broker 1 to broker "
            "0)" in mermaid)
    assert ("Note over controller: 5. ProcessBrokerChange(broker=1): drops StopReplica (controller "
            "to broker 1)" in mermaid)


def test_show_names_fetcher_states_error_codes_and_broker_epochs():
    result = _scenario_run("kafka-7786", "kip-320")
    out = io.StringIO()
    print_trace(Console(file=out, width=220, color_system=None), result.trace)
    text = out.getvalue()
    assert ("brokers[1].fetch: truncating -> none" in text and "brokers[1].fetch: none -> "
                                                               "truncating" in text)
    assert "error=FENCED_LEADER_EPOCH" in text and "brokers[1].broker_epoch: 0 -> 1" in text
    header = [line for line in text.splitlines() if "fetcher" in line and "broker epoch" in line]
    assert header, "the broker log table has fetcher and broker epoch columns"
    last_rows = text.split("Invariant no-fence-stall is violated")[0].splitlines()[-2:]
    assert (last_rows[0].split()[:2] == ["0", "leader"] and last_rows[1].split()[:2]
            == ["1", "follower"])
    assert last_rows[1].split()[-2:] == ["none", "1"], "broker 1: no fetcher state, broker epoch 1"
    # a restarted broker that has not heard from the controller yet, and one shutting down
    bounce = _scenario_run("bounce-during-controlled-shutdown", "kip-320")
    out = io.StringIO()
    print_trace(Console(file=out, width=220, color_system=None), bounce.trace)
    assert "follower, stopping" in out.getvalue() and "no leader" in out.getvalue()
