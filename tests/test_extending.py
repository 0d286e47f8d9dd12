"""Extending kmc the two ways ``docs/explanation/how-it-works.md`` shows: an engine is one module
and one registry line (``checker.engines.ENGINES``), a Kafka action is its function and one table
row (``spec.kafka.declared``). Each toy here is added that way and nothing else, runs, and is gone
afterwards: the registry and the model's actions are left as they were."""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from typing import Any

import pytest

from checker import engines
from checker.result import CheckResult, Verdict, collision_estimates
from checker.search import (
    ActionTable,
    SearchOptions,
    SuccessorView,
    rebuild_trace,
    search_result,
    uses_symmetry,
    validate_initial,
)
from invariants.registry import for_family
from kmc.cli import main
from spec.kafka import model as kafka_model
from spec.kafka.declared import BROKER, Declared
from spec.model import Model
from spec.registry import build_model


class ToyBreadthFirst:
    """A toy engine, the shape of an engine module: its options dataclass and ``run_engine``. Level
    by level, a plain dictionary for the visited states and their parents, the successors every
    search sees (``SuccessorView``), the result built where every engine builds it
    (``search_result``)."""

    @dataclass(frozen=True)
    class Options:
        pass

    @staticmethod
    def run_engine(model: Model, options: SearchOptions, engine_options: Any) -> CheckResult:
        started = time.monotonic()
        view = SuccessorView(model, uses_symmetry(model, options))
        invariants = options.safety_invariants()
        table = ActionTable()
        parents: dict[int, tuple[int | None, int]] = {}  # fingerprint -> (parent, action id)
        found: dict[str, int] = {}
        initial = list(model.init_states())
        validate_initial(model, initial)
        level, generated, depth = [], len(initial), 0
        for state in initial:
            if hash(state) not in parents:
                parents[hash(state)] = (None, -1)
                level.append(state)
        while level and not found:
            depth += 1
            for state in level:
                for inv in invariants:
                    if inv.name not in found and not inv.holds(state):
                        found[inv.name] = hash(state)
            if found:
                break
            following = []
            for state in level:
                total, kept = view.of(state)
                generated += total
                for _pos, act, succ in kept:
                    if hash(succ) not in parents:
                        parents[hash(succ)] = (hash(state), table.id(act))
                        following.append(succ)
            level = following

        def trace_of(fp: int, name: str, why: Any) -> Any:
            path = []
            at: int | None = fp
            while at is not None:
                parent, action = parents[at]
                path.append((at, action))
                at = parent
            return rebuild_trace(model, path[::-1], table.actions, options, name, why)

        return search_result(model, invariants, found=found, deadlock=None, trace_of=trace_of,
                             distinct_states=len(parents), states_generated=generated, depth=depth,
                             seconds=time.monotonic() - started,
                             reason=None, engine="toy", queue=0,
                             collision=collision_estimates(len(parents), generated))


#: the registry line
TOY_ENGINE = engines.Engine("toy", "toy_breadth_first", "Options",
                            "a plain breadth-first search (a test)")


def _counts(result: CheckResult) -> tuple[Any, ...]:
    trace = result.violations[0].trace if result.violations else None
    return (result.verdict, result.distinct_states, result.depth,
            [v.invariant for v in result.violations], len(trace.steps) if trace else None)


def test_an_engine_is_one_module_and_one_registry_line(monkeypatch, capsys):
    with monkeypatch.context() as m:
        m.setitem(sys.modules, "toy_breadth_first", ToyBreadthFirst)
        m.setitem(engines.ENGINES, TOY_ENGINE.name, TOY_ENGINE)
        for consts in (["RM=3"], ["RM=3", "commit_guard=off"]):
            model = build_model("two-phase", consts)
            invariants = list(for_family("two-phase").values())
            toy = engines.run(model, SearchOptions(invariants=invariants), "toy")
            local = engines.run(model, SearchOptions(invariants=invariants), "local")
            assert _counts(toy) == _counts(local), consts
            assert toy.engine == "toy" and local.engine == "local"
        assert toy.verdict is Verdict.VIOLATED and toy.violations[0].trace.steps
        held = engines.run(build_model("two-phase", ["RM=3"]), SearchOptions(), "toy")
        # as ``kmc check`` prints
        assert (held.distinct_states, held.states_generated, held.depth) == (288, 1146, 11)
        # the command line knows it too, from its record alone, and refuses what the record does not
        # list
        assert main(["check", "two-phase", "--const", "RM=3", "--engine", "toy", "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["distinct_states"] == 288
        assert main(["check", "two-phase", "--engine", "toy", "--coverage", "--quiet"]) == 64
        assert "--coverage is not supported by --engine toy" in capsys.readouterr().err
    assert "toy" not in engines.ENGINES and "toy_breadth_first" not in sys.modules
    assert main(["check", "two-phase", "--engine", "toy", "--quiet"]) == 64


def _heartbeats(model: Any, s: Any, out: list) -> None:
    """Heartbeat(broker): a running broker's heartbeat, which changes nothing the model keeps.
    Guard: the broker runs. Effect: none (the same state)."""
    for i, b in enumerate(s.brokers):
        if b.alive:
            out.append((model._heartbeat[i], s))


#: the table row
HEARTBEAT = Declared("Heartbeat", "_heartbeat", (("broker", BROKER),), ("_heartbeats",),
                     actor="broker", steps=_heartbeats)

START_UP = ["--protocol", "3.9.1", "--const", "records=0", "--const", "epochs=0", "--const",
            "crashes=0"]


def test_a_kafka_action_is_its_function_and_one_table_row(monkeypatch, capsys):
    def run(*extra: str) -> dict[str, Any]:
        assert main(["check", "kafka", *START_UP, "--kernel", "off", "--json", *extra]) == 0
        return json.loads(capsys.readouterr().out)

    before = run()
    with monkeypatch.context() as m:
        # the row, where a family's ACTIONS would bring it (spec.kafka.families: every family's
        # rows, which the model builds its tables from); the function is the row's own ``steps``
        m.setattr(kafka_model, "ACTIONS", (*kafka_model.ACTIONS, HEARTBEAT))
        after = run()
        # it fires: the same states, each running broker's heartbeat one more successor of each
        # state
        assert after["distinct_states"] == before["distinct_states"]
        beats = after["states_generated"] - before["states_generated"]
        assert beats > 0
        assert main(["check", "kafka", *START_UP, "--kernel", "off", "--coverage"]) == 0
        shown = capsys.readouterr().out
        lines = [line.split() for line in shown.splitlines()
                 if line.strip().startswith("Heartbeat(")]
        assert [words[0] for words in lines] == ["Heartbeat(broker=0)", "Heartbeat(broker=1)"]
        assert sum(int(words[1].replace(",", "")) for words in lines) == beats
        model = build_model("kafka", ["records=0", "epochs=0", "crashes=0"], "3.9.1")
        assert [str(a) for a in model._heartbeat] == ["Heartbeat(broker=0)", "Heartbeat(broker=1)"]
        # a compiled kernel does not know the new row: the readable model runs, saying why
        toy_row = build_model("kafka", ["records=0", "epochs=0", "crashes=0"], "2.1.0")
        assert "its own function" in toy_row.kernel().unsupported
    again = run()
    assert ((again["distinct_states"], again["states_generated"])
            == (before["distinct_states"], before["states_generated"]))
    assert "Heartbeat" not in {d.name for d in kafka_model.ACTIONS}
    assert not hasattr(build_model("kafka", ["records=0"], "3.9.1"), "_heartbeat")


@pytest.mark.parametrize("field", ["rules", "flags"])
def test_a_toy_row_is_checked_as_the_families_rows_are(field):
    """The row's rule ids and flags are refused when unknown, like the families' rows."""
    with pytest.raises(ValueError):
        Declared("Heartbeat", "_heartbeat", (("broker", BROKER),), ("_heartbeats",),
                 **{field: ("no-such",)})
