"""The packages point one way: spec -> checker -> invariants -> traces.

A module may import from its own package and from the packages before it, never from one after it
(``spec`` knows nothing of search, ``checker`` nothing of the Kafka invariants or of rendering). The
command-line front ends are the one exception, named here: they compose every layer (build a model,
pick its invariants, run an engine, save and print the trace), so they sit on top of all four.
Every import counts, also one inside a function (a lazy import still points somewhere).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LAYERS = {"spec": 0, "checker": 1, "invariants": 2, "traces": 3}
#: modules that compose every layer: the ``kmc`` command line and its ``matrix`` subcommand
FRONT_ENDS = {"checker.cli", "checker.__main__", "checker.matrix"}


def imports_of(path: Path) -> list[tuple[str, int]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.module, node.lineno))
    return found


def upward_imports(root: Path) -> list[str]:
    problems = []
    for package, layer in LAYERS.items():
        for path in sorted((root / package).rglob("*.py")):
            module = ".".join(path.relative_to(root).with_suffix("").parts)
            if module in FRONT_ENDS:
                continue
            for name, line in imports_of(path):
                target = name.split(".")[0]
                if LAYERS.get(target, -1) > layer:
                    problems.append(f"{path.relative_to(root)}:{line} imports {name} ({package} -> {target} points up)")
    return problems


def test_no_import_points_upward():
    assert upward_imports(ROOT) == []


def test_the_check_sees_an_upward_import(tmp_path):
    for package in LAYERS:
        (tmp_path / package).mkdir()
    (tmp_path / "spec" / "model.py").write_text("def f():\n    from checker.errors import UsageError\n")
    (tmp_path / "checker" / "search.py").write_text("import traces.trace\n")
    (tmp_path / "checker" / "cli.py").write_text("import traces.io\n")  # a front end may
    (tmp_path / "traces" / "io.py").write_text("from spec.model import Model\n")  # downhill is fine
    assert upward_imports(tmp_path) == [
        "spec/model.py:2 imports checker.errors (spec -> checker points up)",
        "checker/search.py:1 imports traces.trace (checker -> traces points up)",
    ]


@pytest.mark.parametrize("family", ["kafka", "two-phase"])
def test_a_family_is_whole_before_its_model_is_imported(family):
    """The registry owns every family: asking for the Kafka invariants in a fresh interpreter gives all of
    them, not the part registered before ``spec.kafka`` happened to be imported."""
    import subprocess
    import sys

    code = (f"from invariants.registry import for_family; n = len(for_family({family!r})); "
            f"import spec.registry as r; r.build_model({family!r}, {{}}); print(n, len(for_family({family!r})))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    assert out[0] == out[1] and int(out[0]) > 0
