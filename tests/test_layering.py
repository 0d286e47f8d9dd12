"""The packages point one way: spec -> checker -> invariants -> traces -> kmc, and no module imports
itself back.

A module may import from its own package and from the packages before it, never from one after it
(``spec`` knows nothing of search, ``checker`` nothing of the Kafka invariants or of rendering, and
nothing below imports the command line). The command-line front ends compose every layer (build a
model, pick its invariants, run an engine, save and print the trace), so they are the top floor,
``kmc``: there is no exemption. Every import counts, also one inside a function (a lazy import still
points somewhere) and ``importlib.import_module`` of a literal name.

No import cycle anywhere, between packages or inside one: modules that import each other (even
lazily) are one idea cut in two, or a shared part that wants a module of its own.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LAYERS = {"spec": 0, "checker": 1, "invariants": 2, "traces": 3, "kmc": 4}


def imports_of(path: Path) -> list[tuple[str, int]]:
    """(module imported, line) for every import of the file: ``import a.b``, ``from a import b`` (as
    ``a.b``; the caller decides whether ``a.b`` is a module or a name of ``a``) and
    ``importlib.import_module("a.b")``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found += [(f"{node.module}.{alias.name}", node.lineno) for alias in node.names]
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str):
            called = (node.func.attr if isinstance(node.func, ast.Attribute)
                      else getattr(node.func, "id", None))
            if called in ("import_module", "__import__"):
                found.append((node.args[0].value, node.lineno))
    return found


def project_modules(root: Path) -> dict[str, Path]:
    """Dotted name -> file of every module of the layered packages (a package is its
    ``__init__.py``)."""
    modules = {}
    for package in LAYERS:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def import_graph(root: Path) -> dict[str, dict[str, int]]:
    """module -> {project module it imports: the first line}; ``from a import b`` is an edge to
    ``a.b`` when that is a module, else to ``a``, and an edge to each package the imported module is
    in (its ``__init__`` runs first)."""
    modules = project_modules(root)
    graph: dict[str, dict[str, int]] = {name: {} for name in modules}
    for name, path in modules.items():
        for target, line in imports_of(path):
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name:
                graph[name].setdefault(target, line)
            # importing ``a.b.c`` first runs the package ``a.b`` (its ``__init__``), unless the
            # importer is inside it
            package = target.rpartition(".")[0]
            while package and not (name + ".").startswith(package + "."):
                if package in modules:
                    graph[name].setdefault(package, line)
                package = package.rpartition(".")[0]
    return graph


def upward_imports(root: Path) -> list[str]:
    problems = []
    for package, layer in LAYERS.items():
        for path in sorted((root / package).rglob("*.py")):
            for name, line in imports_of(path):
                target = name.split(".")[0]
                if LAYERS.get(target, -1) > layer:
                    problems.append(f"{path.relative_to(root)}:{line} imports {name} ({package} -> "
                                    f"{target} points up)")
    return problems


def import_cycles(root: Path) -> list[str]:
    """Each strongly connected set of two or more modules (Tarjan), as one cycle through it:
    ``a -> b -> a``."""
    graph = import_graph(root)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    components: list[list[str]] = []

    def visit(node: str) -> None:  # recursion depth is bounded by the number of modules (about 150)
        index[node] = low[node] = len(index)
        stack.append(node)
        for succ in sorted(graph[node]):
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return [" -> ".join(_cycle_through(graph, component)) for component in sorted(components)]


def _cycle_through(graph: dict[str, dict[str, int]], component: list[str]) -> list[str]:
    """A shortest cycle from the component's first module back to it (breadth-first inside the
    component)."""
    start, members = component[0], set(component)
    parents: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for succ in sorted(graph[node]):
                if succ == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(parents[path[-1]])
                    return [*reversed(path), start]
                if succ in members and succ not in parents:
                    parents[succ] = node
                    following.append(succ)
        frontier = following
    raise AssertionError(f"no cycle through {component}")


def test_no_import_points_upward():
    assert upward_imports(ROOT) == []


def test_no_import_cycle():
    assert import_cycles(ROOT) == []


def _tree(root: Path, files: dict[str, str]) -> Path:
    for package in LAYERS:
        (root / package).mkdir()
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_the_check_sees_an_upward_import(tmp_path):
    _tree(tmp_path, {
        "spec/model.py": "def f():\n    from checker.errors import UsageError\n",
        "checker/search.py": "import traces.trace\n",
        "checker/engines.py": "import importlib\nimportlib.import_module('kmc.cli')\n",
        "traces/io.py": "from spec.model import Model\n",  # downhill is fine
        # the top floor may import every floor
        "kmc/cli.py": "import traces.io\nfrom checker import engines\n",
    })
    assert upward_imports(tmp_path) == [
        "spec/model.py:2 imports checker.errors.UsageError (spec -> checker points up)",
        "checker/engines.py:2 imports kmc.cli (checker -> kmc points up)",
        "checker/search.py:1 imports traces.trace (checker -> traces points up)",
    ]


def test_the_check_sees_a_cycle_inside_a_package_and_across_packages(tmp_path):
    _tree(tmp_path, {
        "checker/__init__.py": "",
        "checker/search.py": "from checker.result import Verdict\n",
        "checker/result.py": "def f():\n    from checker import dead\n",  # lazily: still a cycle
        "checker/dead.py": "import checker.search\n",
        "checker/levels.py": "from checker import search\n",  # into the cycle, not part of it
        "spec/model.py": "from spec import fields\n",
        "spec/fields.py": "import importlib\nimportlib.import_module('spec.model')\n",
        "kmc/cli.py": "from kmc.options import X\n",
        # a name of a module: the edge is to the module
        "kmc/options.py": "from spec.model import Model\n",
    })
    assert import_cycles(tmp_path) == [
        "checker.dead -> checker.search -> checker.result -> checker.dead",
        "spec.fields -> spec.model -> spec.fields",
    ]


@pytest.mark.parametrize("family", ["kafka", "two-phase"])
def test_a_family_is_whole_before_its_model_is_imported(family):
    """The registry owns every family: asking for the Kafka invariants in a fresh interpreter gives
    all of them, not the part registered before ``spec.kafka`` happened to be imported."""
    import subprocess
    import sys

    code = (f"from invariants.registry import for_family; n = len(for_family({family!r})); "
            f"import spec.registry as r; r.build_model({family!r}, {{}}); print(n, "
            f"len(for_family({family!r})))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout.split()
    assert out[0] == out[1] and int(out[0]) > 0
