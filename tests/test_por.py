"""Partial-order reduction (``--reduce por``, ``checker.por``): the full search's verdict on the matrix's cells, a
counterexample that replays and violates its invariant, ``--shortest``, the cycle proviso, and the refusals."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

import spec.kafka  # noqa: F401 - registers the model and its invariants
from checker import bfs, engines, matrix, por
from checker.result import Verdict
from checker.search import SearchOptions
from invariants.registry import for_family
from kmc.cli import main
from spec.kafka.protocols import resolve
from spec.registry import build_model
from traces.replay import replay_trace

KAFKA = for_family("kafka")


def _cells(monkeypatch, rows: list[str], invariants: list[str], reduce: str) -> dict:
    """The default matrix's cells of ``rows`` (its own bounds per invariant), searched with ``reduce``."""
    plain = bfs.check
    def reduced(model, search, *engine):
        return plain(model, dataclasses.replace(search, reduce=reduce))

    monkeypatch.setattr(matrix.engines, "run", reduced)
    return {(c.protocol, c.invariant): c.verdict for c in matrix.run_matrix("kafka", rows, invariants)}


#: a deterministic part of the default matrix (about 2 s of CPU for both searches): before KIP-380 and KRaft, with the
#: control-plane columns; cells that hold and cells that break (2.2.0's cells, which hold after KIP-380, and the
#: replica-sanity column took 13 of the 15 s: they are in the slow every-cell test)
FAST_ROWS = ["2.1.0", "kraft-3.5"]
FAST_INVARIANTS = ["no-fence-stall", "no-stale-control-request", "no-bounce-stall"]


def readme_matrix() -> dict[tuple[str, str], str]:
    """The full search's verdict of every cell of the default matrix, as README's table gives it (README's table is
    the matrix's output, re-run whenever the model changes): (row, invariant) -> "holds" or "violated"."""
    text = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    block = text[text.index("kafka: every protocol against every invariant (model bounds)"):]
    lines = block.splitlines()
    columns = lines[1].split()[1:]
    legend = dict(re.findall(r"^([A-Z]): (\S+)$", block[:block.index("'✗ N'")], re.M))
    verdicts = {}
    for line in lines[2:]:
        if re.match(r"^[A-Z]: ", line):
            break
        row, *cells = re.split(r"\s{2,}", line.strip())
        assert 0 < len(cells) <= len(columns), line  # a ZooKeeper row has no ELR column (J)
        for column, cell in zip(columns, cells, strict=False):
            verdicts[(row, legend[column])] = "violated" if cell.startswith("✗") else "holds"
    return verdicts


def test_por_gives_the_full_verdict_on_part_of_the_matrix(monkeypatch):
    full = _cells(monkeypatch, FAST_ROWS, FAST_INVARIANTS, "none")
    reduced = _cells(monkeypatch, FAST_ROWS, FAST_INVARIANTS, "por")
    assert reduced == full
    assert set(full.values()) == {"holds", "violated"}  # both verdicts are compared
    table = readme_matrix()  # and the slow test's reference, README's table, says the same of these cells
    assert {cell: table[cell] for cell in full} == full


@pytest.mark.slow
def test_por_gives_the_full_verdict_on_every_cell_of_the_default_matrix(monkeypatch):
    """Every cell under the reduction against README's table of the full search (which the matrix tests and every
    model change keep equal to ``kmc matrix``), on one row a footprint condition. The rows with AlterIsr in ZooKeeper mode
    (alter-isr: 2.8.0 and later, and the what-if rows built on them) hold 0.2 to 2.2 million states a cell, about
    three quarters of the matrix's 13 minutes of CPU: their every cell is compared with the full search at smaller
    bounds below, so that the suite stays within its budget."""
    table = readme_matrix()
    assert len(table) == 147
    rows = list(dict.fromkeys(row for row, _ in table))
    light = [row for row in rows if not resolve(row.split(",")[0]).alter_isr]
    assert 0 < len(light) < len(rows) and "kraft-4.1" in light and "3.9.1" not in light
    # one row a group of footprint conditions (spec.kafka.footprints ``when``): the halting follower and no epoch
    # cache (0.10.2), OffsetsForLeaderEpoch with leader-epoch fencing (2.1.0), KIP-380's broker epochs (2.2.0), the
    # KRaft controller with the ELR (kraft-4.1); the rows between repeat a neighbour's conditions, and all ten cost
    # five minutes of the suite's CPU (0.11.0 and 2.0.1 added three)
    searched = ["0.10.2", "2.1.0", "2.2.0", "kraft-4.1"]
    assert set(searched) <= set(light)
    expected = {cell: verdict for cell, verdict in table.items() if cell[0] in searched}
    # kraft-4.1's consumed-stays (861,238 states, a client column with no ELR condition of its own) is left to the
    # rows before it, and so are its log-matching and acknowledged-durable (162,948 and 228,054 states, 45 s of the
    # suite's CPU under the reduction: their searches' bounds add records and a client, not a condition): the other
    # seven columns, elr-safety's search among them, cover the KRaft controller's and the ELR's conditions
    for name in ("consumed-stays", "log-matching", "acknowledged-durable"):
        del expected[("kraft-4.1", name)]
    kraft = [name for row, name in expected if row == "kraft-4.1"]
    assert len(kraft) == 7 and "elr-safety" in kraft
    found = {**_cells(monkeypatch, searched[:3], [], "por"), **_cells(monkeypatch, ["kraft-4.1"], kraft, "por")}
    assert found == expected


#: AlterIsr rows at bounds a few seconds of CPU each: a record, two epochs, a crash (every default invariant)
ALTER_ISR_SMALL = ["records=1", "epochs=2", "crashes=1"]


@pytest.mark.slow
@pytest.mark.parametrize("protocol", ["2.8.0", "3.9.1", "3.9.1,unclean=on"])
def test_por_gives_the_full_verdicts_on_the_alter_isr_rows_at_small_bounds(protocol):
    name, *flags = protocol.split(",")
    model = build_model("kafka", ALTER_ISR_SMALL, name, flags)
    assert model.features.alter_isr
    invariants = [inv for inv_name, inv in KAFKA.items() if inv_name not in model.matrix_excluded]
    full = bfs.check(model, SearchOptions(invariants=invariants, stop_at_first=False))
    reduced = bfs.check(model, SearchOptions(invariants=invariants, stop_at_first=False, reduce="por"))
    assert {v.invariant for v in reduced.violations} == {v.invariant for v in full.violations}
    assert reduced.verdict == full.verdict and reduced.distinct_states <= full.distinct_states


def _violated(protocol: str, consts: list[str], invariant: str, **options):
    model = build_model("kafka", consts, protocol)
    result = engines.run(model, SearchOptions(invariants=[KAFKA[invariant]], **options))
    assert result.verdict is Verdict.VIOLATED
    return model, result


@pytest.mark.parametrize("protocol,consts,invariant", [
    ("2.1.0", ["records=1", "epochs=2", "bumps=2", "crashes=0"], "no-fence-stall"),  # KAFKA-7786
    ("2.8.0", [], "committed-durable"),  # KAFKA-13141
    pytest.param("0.11.0", ["records=3", "crashes=0"], "log-matching", marks=pytest.mark.slow),  # KIP-279 scenario 1: 5 s
])
def test_a_reduced_counterexample_replays_and_shortest_finds_the_full_length(protocol, consts, invariant):
    _, full = _violated(protocol, consts, invariant)
    model, reduced = _violated(protocol, consts, invariant, reduce="por")
    trace = reduced.violations[0].trace
    replayed = replay_trace(model, trace, [invariant])
    assert replayed.outcome == "violated" and replayed.invariant.name == invariant
    assert replayed.step == len(trace.steps)
    assert len(trace.steps) >= len(full.violations[0].trace.steps)  # not shortest in general
    _, shortest = _violated(protocol, consts, invariant, reduce="por", shortest=True)
    assert len(shortest.violations[0].trace.steps) == len(full.violations[0].trace.steps)
    assert shortest.extra["shortest"]["depth_bound"] == len(trace.steps)
    assert shortest.distinct_states == reduced.distinct_states  # the reduced search's counts stay the result's


def test_deadlock_is_not_hidden():
    """A state with no enabled action is never reduced: the deadlock the full search reports, the reduced one too."""
    for protocol in ("2.1.0", "kraft-3.5"):  # a crash past the bound leaves a state with nothing to do
        model = build_model("kafka", ["records=1", "crashes=1"], protocol)
        full = bfs.check(model, SearchOptions(invariants=[], check_deadlock=True))
        reduced = bfs.check(model, SearchOptions(invariants=[], check_deadlock=True, reduce="por"))
        assert [v.invariant for v in full.violations] == [v.invariant for v in reduced.violations] == ["deadlock"]
        assert not model.successors(reduced.violations[0].trace.states[-1])


@pytest.mark.slow  # two full searches: about 20 s
def test_the_cycle_proviso_expands_fully(monkeypatch):
    """An ample set whose successor was visited already is replaced by every enabled action (C3): without the
    proviso the reduced search drops states that the one with it keeps."""
    model = build_model("kafka", ["brokers=3", "records=1", "epochs=1", "crashes=0"], "2.1.0")
    options = SearchOptions(invariants=[KAFKA["no-stale-control-request"]], reduce="por", max_depth=14)
    with_proviso = bfs.LocalBFS(model, options)
    kept = with_proviso.run()
    assert with_proviso.reduction.proviso > 0

    class NothingVisited:
        def contains(self, fps):
            import numpy as np

            return np.zeros(len(fps), dtype=bool)

    original = por.Reduction.successors
    monkeypatch.setattr(por.Reduction, "successors", lambda self, s, succs, visited, canonical: original(
        self, s, succs, NothingVisited(), canonical))
    without = bfs.LocalBFS(model, options)
    assert without.run().distinct_states < kept.distinct_states
    assert without.reduction.proviso == 0


def test_an_invariant_that_declares_no_reads_turns_the_reduction_off():
    model = build_model("kafka", ["records=1", "crashes=0"], "2.1.0")
    silent = dataclasses.replace(KAFKA["no-stale-control-request"], reads=None)
    assert por.Reduction(model, [silent]).visible == (1 << len(model.reduction().keys)) - 1
    declared = por.Reduction(model, [KAFKA["no-stale-control-request"]])
    assert declared.visible and declared.visible != (1 << len(model.reduction().keys)) - 1


@pytest.mark.parametrize("argv,message", [
    (["--reduce", "por", "--engine", "parallel"], "not supported by --engine parallel (engines that support it: bfs)"),
    (["--reduce", "por", "--workers", "2"], "not supported by --engine parallel (engines that support it: bfs)"),
    (["--shortest"], "--shortest goes with --reduce por"),
    (["--reduce", "por", "--invariant", "no-fence-stall-liveness"], "safety properties only"),
])
def test_refused_with_one_line(capsys, argv, message):
    code = main(["check", "kafka", "--const", "records=1", "--const", "crashes=0", "--quiet", *argv])
    err = capsys.readouterr().err.strip()
    assert code == 64 and message in err and len(err.splitlines()) == 1, err


def test_cli_reports_the_reduction(capsys):
    code = main(["check", "kafka", "--const", "records=1", "--const", "crashes=0", "--quiet", "--json", "--reduce", "por",
                 "--invariant", "no-stale-control-request"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and data["verdict"] == "holds"
    assert data["reduction"]["method"] == "por" and data["reduction"]["reduced_states"] > 0


def test_an_invariant_no_action_can_change_reads_nothing():
    """elr-safety holds wherever the ELR is empty (``Invariant.vacuous_while``): on a row whose actions never write
    the ELR it is constant and makes no action visible; on kraft-4.1 (KIP-966) it reads what it declares."""
    elr = KAFKA["elr-safety"]
    zk = por.Reduction(build_model("kafka", ["records=1", "crashes=0"], "2.1.0"), [elr])
    assert zk.constant == ["elr-safety"] and zk.visible == 0
    kraft = por.Reduction(build_model("kafka", ["records=1", "crashes=0"], "kraft-4.1"), [elr])
    assert kraft.constant == [] and kraft.visible != 0
    # an initial state the predicate does not hold in: not constant
    never = dataclasses.replace(elr, vacuous_while=(elr.vacuous_while[0], lambda state: False))
    assert por.Reduction(build_model("kafka", ["records=1", "crashes=0"], "2.1.0"), [never]).visible != 0


def test_state_dependent_footprints_are_used_and_keep_the_verdict():
    """A reduced search uses the narrower footprints (``spec.kafka.footprints.NARROWER``) and finds what the full
    one finds (the matrix tests compare verdicts cell by cell). No crash: 6,382 states, the narrower footprints used
    about 7,500 times (with crashes=1, 30,314 states and four times the CPU, the same use)."""
    model = build_model("kafka", ["records=1", "crashes=0"], "2.1.0")
    options = SearchOptions(invariants=[KAFKA["no-stale-control-request"]], stop_at_first=False)
    full = bfs.check(model, options)
    search = bfs.LocalBFS(model, dataclasses.replace(options, reduce="por"))
    reduced = search.run()
    assert search.reduction.narrowed_uses > 0
    assert reduced.verdict == full.verdict and reduced.distinct_states <= full.distinct_states


def test_a_narrower_footprint_keeps_what_could_end_its_condition_dependent():
    """Where a state-dependent footprint applies, every action that writes what its condition reads is dependent on
    it (what makes it sound: they are then inside the stubborn set), but for those it declares keep the condition."""
    from collections import deque

    model = build_model("kafka", ["brokers=3", "records=1", "crashes=0", "epochs=1"], "2.1.0")
    table = model.reduction()
    reduction = por.Reduction(model, [])
    seen: set = set()
    queue = deque(model.init_states())
    checked: dict = {}
    while queue and len(seen) < 3000 and len(checked) < 2:
        state = queue.popleft()
        if state in seen:
            continue
        seen.add(state)
        for act, target in model.successors(state):
            queue.append(target)
            key = table.key(act)
            entry = table.narrower(key, state)
            if entry is None or act.name not in ("ServeFetch", "ShrinkIsr"):
                continue
            _, condition, _, _, keeps, _ = entry
            mask = reduction.dependent_in(reduction.index[key], state)
            for j, other in enumerate(table.keys):
                if other != key and table.writes(other) & condition:
                    assert bool(mask >> j & 1) == (other[0] not in keeps), (key, other)
            checked[act.name] = key
    assert set(checked) == {"ServeFetch", "ShrinkIsr"}  # an errored fetch served, a shrink with a Produce kept out


def _pinned_configurations() -> list[tuple[str, tuple[str, ...]]]:
    """The pinned configurations of the ZooKeeper rows before AlterIsr (``test_kafka_state_space.PINNED``, both bound
    sets) and of the control plane (``test_kafka_control.PINNED``'s kip-320 and kip-380); the AlterIsr rows' pins are
    compared at their own small bounds above (0.2 million states a pin against a few thousand here)."""
    from tests.test_kafka_control import PINNED as CONTROL
    from tests.test_kafka_state_space import PINNED, SMALL_A, SMALL_B

    data = [(row, consts) for row in PINNED if not resolve(row).alter_isr for consts in (SMALL_A, SMALL_B)]
    control = ("records=1", "epochs=1", "crashes=0", "bumps=1", "shutdowns=0", "bounces=1")
    return data + [(row, control) for row in CONTROL if not resolve(row).alter_isr]


@pytest.mark.slow
def test_por_gives_the_full_verdict_on_every_pinned_configuration():
    """Every default invariant on each pinned configuration (the ones whose state counts the suite pins), searched to
    the end with and without the reduction: the same invariants violated, at no more states."""
    configurations = _pinned_configurations()
    assert len(configurations) == 14
    broken = 0
    for protocol, consts in configurations:
        verdicts = []
        for reduce in ("none", "por"):
            model = build_model("kafka", list(consts), protocol=protocol)
            invariants = [inv for inv in KAFKA.values() if inv.kind == "safety" and inv.default]
            result = engines.run(model, SearchOptions(invariants=invariants, stop_at_first=False, reduce=reduce), "bfs")
            verdicts.append((sorted({v.invariant for v in result.violations}), result.distinct_states))
        (full, full_states), (reduced, reduced_states) = verdicts
        assert reduced == full, (protocol, consts)
        assert reduced_states <= full_states
        broken += bool(full)
    assert 0 < broken < len(configurations)  # configurations that hold and ones that break are compared
