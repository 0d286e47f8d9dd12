"""Every counterexample ``kmc matrix`` finds, shown, exported to ITF and read back, drawn and
replayed under every protocol version; and the control-plane messages drawn readably.

The matrix is run in process with ``kmc.matrix.run``'s own rows (every version and the variants the
model declares) and per-invariant bounds, keeping each violation's trace (``run_matrix`` keeps only
the figures). The matrix table (docs/tutorials/matrix.md, ``kmc matrix``'s output) says which cells
are violated and in how many steps, so only the searches with a violated cell run, each to the depth
of its longest shortest counterexample (a counterexample of N steps ends at depth N + 1): that finds
every violated cell's shortest counterexample, and no search explores what could only end in
"holds". Every violated cell of the table must be collected, with the table's length.
"""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console

from checker.bfs import check
from checker.invariant import SAFETY
from checker.search import CHECKER_VERSION, SearchOptions
from invariants.registry import for_family
from kmc.matrix.run import Row, default_rows
from spec.errors import NotReplayableError
from spec.registry import build_model, get_model_info
from tests.matrix_table import documented_lengths
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


def row_violations(row: Row, model_name: str = "kafka") -> list[tuple[str, object]]:
    """(row label, violation) for every violated cell of one row of the default matrix, as
    ``run_matrix`` groups its searches: per set of bounds, the invariants sharing one search until
    each is decided. A group with no violated cell in the matrix table is not searched; the others
    stop at the depth of their longest counterexample in the table."""
    lengths = documented_lengths()
    found = []
    model = build_model(model_name, [], row.protocol, list(row.features))
    # the matrix's own columns, as run_matrix picks them
    excluded = set(getattr(model, "matrix_excluded", ()))
    available = {k: v for k, v in for_family(model.family).items()
                 if v.kind == SAFETY and v.default and k not in excluded}
    bounds = dict(getattr(model, "matrix_bounds", {}))
    groups: dict[tuple[str, ...], list[str]] = {}
    for name in available:
        groups.setdefault(tuple(bounds.get(name, ())), []).append(name)
    header = {"protocol": row.protocol, **({"row": row.label} if row.features else {})}
    for profile, names in groups.items():
        steps = [lengths[row.label, n] for n in names if (row.label, n) in lengths]
        if not steps:
            continue  # every cell of the group holds: nothing to collect
        checked = (model if not profile else build_model(model_name, list(profile), row.protocol,
                                                         list(row.features)))
        # one search a group, as ``kmc matrix`` runs it: on until each invariant is violated or the
        # depth where the table's longest counterexample of the group ends
        result = check(checked, SearchOptions(invariants=[available[n] for n in names],
                                              header=header, max_depth=max(steps) + 1,
                                              stop_at_first=False, stop_when_all_found=True))
        found.extend((row.label, v) for v in result.violations)
    return found


#: the default matrix's rows with a violated cell in the table, each its own group under
#: ``pytest -n N --dist loadgroup``: a row's tests share one worker, so that its searches (the
#: module fixture below) run once, and the rows' searches (minutes in all, 0 to about 40 s a row)
#: are shared between the workers
VIOLATED_ROWS = [row for row in default_rows("kafka")
                 if any(label == row.label for label, _ in documented_lengths())]


@pytest.fixture(scope="module",
                params=[pytest.param(row, id=row.label, marks=pytest.mark.xdist_group(
    f"traces-matrix-{row.label}")) for row in VIOLATED_ROWS])
def violations(request):
    """The row's violated cells, searched once for the module's tests of that row."""
    return row_violations(request.param)


def test_every_row_of_the_table_with_a_violated_cell_is_searched():
    """The slow tests below take the table's rows one at a time: none of its violated cells, and
    none of the cells every run must find violated, is left out."""
    rows = {row.label for row in VIOLATED_ROWS}
    assert {label for label, _ in documented_lengths()} == rows
    assert {label for label, _ in KNOWN} <= rows and EVERY_KIND_ROW in rows


# the searches of a row's violated cells of the default matrix (one fixture a row)
@pytest.mark.slow
def test_the_matrix_counterexamples_are_collected(violations):
    (label,) = {row for row, _ in violations}
    cells = {(row, v.invariant) for row, v in violations}
    assert {cell for cell in KNOWN if cell[0] == label} <= cells
    assert len(cells) == len(violations), "one trace per violated cell"
    # every violated cell of the row in the table, with the table's length
    assert {(row, v.invariant): v.length for row, v in violations} == {
        cell: length for cell, length in documented_lengths().items() if cell[0] == label}
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


# the searches of a row's violated cells of the default matrix (one fixture a row)
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


# the searches of a row's violated cells of the default matrix (one fixture a row)
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


# the searches of a row's violated cells of the default matrix (one fixture a row)
@pytest.mark.slow
def test_every_counterexample_is_drawn(violations):
    (label,) = {row for row, _ in violations}
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
    if label == EVERY_KIND_ROW:
        assert {"LeaderAndIsr", "Fetch", "OffsetsForLeaderEpoch"} <= drawn


# the searches of a row's violated cells of the default matrix (one fixture a row)
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
