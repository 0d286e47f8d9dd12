"""A toy engine, added the way every engine is: this module (its options dataclass and
``run_engine``) and one ``Engine(...)`` line in ``checker.engines.ENGINES`` (the test puts it
there). It runs the local engine's search, and records the one option it takes, ``--toy-note``, in
the result."""

from __future__ import annotations

from dataclasses import dataclass

from checker import bfs
from checker.engines import Engine, EngineFlag
from checker.result import CheckResult
from checker.search import SearchOptions
from spec.model import Model


@dataclass(frozen=True)
class ToyOptions:
    note: str = ""


def run_engine(model: Model, options: SearchOptions, engine_options: ToyOptions) -> CheckResult:
    result = bfs.check(model, options)
    result.extra["toy_note"] = engine_options.note
    return result


#: the registry line
ENGINE = Engine("toy", __name__, "ToyOptions", "the local search under another name (a test)",
                flags=(EngineFlag("--toy-note", "note", "toy engine: a word it records"),))
