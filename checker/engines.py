"""The search engines by name. Each is ``run(model, options, engine_options) -> CheckResult`` and
all must give identical distinct-state counts, depths and shortest counterexample lengths."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from checker.errors import UsageError
from checker.result import CheckResult
from checker.search import SearchOptions
from spec.model import Model


@dataclass
class EngineOptions:
    workers: int = 1
    master: str = "local[*]"
    extra: dict[str, Any] = field(default_factory=dict)


# name -> (module, function, one-line description)
ENGINES: dict[str, tuple[str, str, str]] = {
    "bfs": ("checker.bfs", "run_engine", "breadth-first search in this process (the default)"),
}


def get_engine(name: str) -> Callable[[Model, SearchOptions, EngineOptions], CheckResult]:
    if name not in ENGINES:
        raise UsageError(f"unknown engine {name!r}; engines: {', '.join(ENGINES)}")
    module, function, _ = ENGINES[name]
    return getattr(importlib.import_module(module), function)


def run(model: Model, options: SearchOptions, engine: str = "bfs", engine_options: EngineOptions | None = None):
    return get_engine(engine)(model, options, engine_options or EngineOptions())
