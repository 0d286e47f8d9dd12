"""The engine record (``checker.engines.Engine``) says an engine's options and what it supports
once: the ``check`` and ``matrix`` parsers, the refusals and the engine table come from it. A toy
engine added as one module and one registry line gets its option on both parsers, runs, and is
refused what its record leaves out (--reduce dead)."""

from __future__ import annotations

import dataclasses
import json

import pytest

from checker import engines
from checker.search import SearchOptions
from kmc import cli, options
from kmc.cli import main
from spec.registry import build_model
from tests import toy_engine

CAPABILITIES = {  # what a search may ask for -> the record's field that allows it
    "reductions": lambda: SearchOptions(reduce="dead"),
    "checkpoints": lambda: SearchOptions(checkpoint_path="run.ckpt"),
    "liveness": lambda: SearchOptions(keep_graph=True),
    "coverage": lambda: SearchOptions(coverage=True),
}


@pytest.mark.parametrize("name", list(engines.ENGINES))
def test_each_flag_of_a_record_sets_a_field_of_its_options(name):
    engine = engines.ENGINES[name]
    fields = {f.name for f in dataclasses.fields(engine.options_type)}
    assert set(engine.flag_fields().values()) <= fields
    for flag in engine.flags:
        assert flag.kind in ("int", "str", "workers") and flag.flag.startswith("--")


@pytest.mark.parametrize("name", list(engines.ENGINES))
@pytest.mark.parametrize("capability", list(CAPABILITIES))
def test_the_refusals_are_the_records(name, capability):
    engine = engines.ENGINES[name]
    supported = ("dead" in engine.reductions if capability == "reductions"
                 else getattr(engine, capability))
    why = engine.refusal(CAPABILITIES[capability]())
    assert (why is None) == supported, (name, capability, why)
    if why:
        assert f"--engine {name}" in why and "not supported" in why


def test_the_engine_table_is_the_records():
    rows = engines.engine_table()
    assert (rows[0] == "| engine | options | --reduce dead | --checkpoint | liveness | --coverage "
                       "| directed |")
    assert rows[2] == "| `local` | none | yes | yes | yes | yes | no |"
    assert rows[3] == "| `parallel` | `--workers` | yes | yes | yes | no | no |"
    assert rows[5] == "| `directed` | `--directed-weight` | no | no | no | no | yes |"
    assert len(rows) == 2 + len(engines.ENGINES)


@pytest.fixture
def with_toy(monkeypatch):
    monkeypatch.setitem(engines.ENGINES, "toy", toy_engine.ENGINE)


def test_a_toy_engine_is_one_module_and_one_registry_line(with_toy, capsys):
    parser = cli.build_parser()
    assert (parser.parse_args(["check", "two-phase", "--engine", "toy", "--toy-note", "x"]).toy_note
            == "x")
    assert (parser.parse_args(["matrix", "two-phase", "--engine", "toy", "--toy-note",
                               "y"]).toy_note == "y")
    assert (main(["check", "two-phase", "--const", "RM=3", "--engine", "toy", "--toy-note", "hello",
                  "--json"]) == 0)
    data = json.loads(capsys.readouterr().out)
    # its search is the local one's
    assert data["distinct_states"] == 288 and data["engine"] == "local"
    assert (options.reduce_choices() == ("none", "dead") and options.reductions_help()
            == "dead: local, parallel, spark")
    assert main(["check", "two-phase", "--engine", "toy", "--reduce", "dead", "--quiet"]) == 64
    refusal = ("--reduce dead is not supported by --engine toy (engines that support it: local, "
               "parallel, spark)")
    assert refusal in capsys.readouterr().err
    assert main(["check", "two-phase", "--engine", "local", "--toy-note", "z", "--quiet"]) == 64
    assert ("--toy-note is not an option of --engine local (it is read by --engine "
            "toy)" in capsys.readouterr().err)
    result = engines.run(build_model("two-phase", ["RM=3"]), SearchOptions(), "toy",
                         toy_engine.ToyOptions("direct"))
    assert result.extra["toy_note"] == "direct"


@pytest.mark.parametrize("engine", ["local", "parallel"])
def test_an_observer_sees_every_level_and_the_final_search_state(engine):
    """The hook that replaced tests' swapping of private engine methods: ``level`` after each
    committed level, ``finished`` once with the state the result is built from (the parallel
    engine's parent log gathered)."""
    from checker.search import RecordParentLog

    class Levels(RecordParentLog):
        def __init__(self) -> None:
            super().__init__()
            self.depths: list[int] = []

        def level(self, st):
            self.depths.append(st.depth)

    seen = Levels()
    given = engines.engine_options(engine, {"--workers": 2} if engine == "parallel" else {})
    result = engines.run(build_model("two-phase", ["RM=3"]), SearchOptions(observer=seen), engine,
                         given)
    # one call a committed level; the last one expanded the deepest states and found nothing new
    assert seen.depths == [*range(2, result.depth + 1), result.depth]
    assert len(seen.log[0]) == result.distinct_states == 288 and seen.actions
