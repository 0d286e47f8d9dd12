"""The model contract is declared in ``spec.model.Model`` (and the dead-message reducer a model may
give, in ``spec.model.DeadMessages``): no layer below the spec probes a model or its reducer for one
of their members with ``getattr``/``hasattr`` (a member the contract declares is read as an
attribute)."""

import ast
from pathlib import Path

from spec.model import DeadMessages, Model

ROOT = Path(__file__).resolve().parent.parent
CONTRACT = {name for part in (Model, DeadMessages) for name in dir(part)
            if not name.startswith("__")}


def probes(source: str) -> list[tuple[int, str]]:
    """``getattr(model, "member", ...)`` and ``hasattr(model, "member")`` calls (``model``,
    ``self.model``, ...) naming a member of the contract."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id
            in ("getattr", "hasattr")
                and len(node.args) >= 2 and ast.unparse(node.args[0]).endswith(("model", "reducer"))
                and isinstance(node.args[1], ast.Constant)
                and node.args[1].value in CONTRACT):
            found.append((node.lineno, node.args[1].value))
    return found


def test_no_layer_probes_the_model_contract():
    found = [f"{path.relative_to(ROOT)}:{line} {name}"
             for package in ("checker", "invariants", "traces", "kmc")
             for path in sorted((ROOT / package).rglob("*.py"))
             for line, name in probes(path.read_text())]
    assert not found, "members of spec.model.Model probed with getattr/hasattr: " + ", ".join(found)


def test_a_probe_is_found():
    found = probes('why = getattr(model, "why_not", None)\nok = hasattr(self.model, "protocol")')
    assert found == [(1, "why_not"), (2, "protocol")]
    assert probes('describe = getattr(reducer, "describe", None)') == [(1, "describe")]
    assert (probes('getattr(state, "network", ())') == [] and probes('getattr(args, "kernel", '
                                                                     '"off")') == [])
