"""``--property MODULE:FUNCTION``: a user's own property, checked like a built-in invariant by
``kmc check`` and ``kmc matrix``, with one clear line (exit 64) for a bad one."""

from __future__ import annotations

import json
import textwrap

import pytest

from kmc.cli import main
from tests import toy_matrix

TOY = toy_matrix.NAME

PROPS = '''
from spec.two_phase import ABORTED, COMMITTED


def no_commit_with_abort(state):
    """no resource manager commits while another aborts"""
    return not (COMMITTED in state.rm_state and ABORTED in state.rm_state)


def at_most_all_prepared(state, model):
    """the TM never records more prepared RMs than the model has"""
    return sum(state.tm_prepared) <= model.rm


def x_below_two(state):
    """x stays below 2"""
    return state.x < 2


def divides(state):
    return 1 // 0


def three(a, b, c):
    return True


NOT_A_FUNCTION = 3
'''


@pytest.fixture
def props(tmp_path, monkeypatch):
    (tmp_path / "my_props.py").write_text(PROPS)
    (tmp_path / "broken_props.py").write_text("def f(state):\n    return (\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_user_property_holds_and_is_found_violated(capsys, props):
    code, out, _ = run(capsys, "check", "two-phase", "--property", "my_props:no_commit_with_abort",
                       "--json", "--trace-dir", props)
    data = json.loads(out)
    assert (code == 0 and data["invariants"] == ["no_commit_with_abort"] and data["distinct_states"]
            == 288)
    code, out, _ = run(capsys, "check", "two-phase", "--const", "commit_guard=off", "--property",
                       "my_props:no_commit_with_abort", "--json", "--trace-dir", props)
    data = json.loads(out)
    (violation,) = data["violations"]
    assert (code == 12 and violation["invariant"] == "no_commit_with_abort" and violation["length"]
            == 3)
    # the same verdict and length as the built-in TCConsistent, which states the same property
    code, out, _ = run(capsys, "check", "two-phase", "--const", "commit_guard=off", "--invariant",
                       "TCConsistent", "--json", "--trace-dir", props)
    assert json.loads(out)["violations"][0]["length"] == 3


def test_a_property_of_the_state_and_the_model_beside_the_built_ins(capsys, props):
    code, out, _ = run(capsys, "check", "two-phase", "--invariant", "TCConsistent", "--property",
                       "my_props:at_most_all_prepared", "--property",
                       f"{props / 'my_props.py'}:no_commit_with_abort", "--json")
    data = json.loads(out)
    assert (code == 0 and data["invariants"] == ["TCConsistent", "at_most_all_prepared",
                                                 "no_commit_with_abort"])


def test_the_matrix_checks_user_properties(capsys, props):
    code, out, _ = run(capsys, "matrix", TOY, "--quiet", "--json", "--property",
                       "my_props:x_below_two")
    cells = {(c["protocol"], c["invariant"]): c for c in json.loads(out)}
    assert code == 0 and {i for _, i in cells} == {"x_below_two"}
    assert (cells["v1", "x_below_two"]["verdict"] == "violated"
            and cells["v1", "x_below_two"]["length"] == 2)
    assert cells["v1,fast=on", "x_below_two"]["length"] == 1
    code, out, _ = run(capsys, "matrix", TOY, "--quiet", "--json", "--invariant", "x-small",
                       "--property", "my_props:x_below_two")
    assert [c["invariant"] for c in json.loads(out)][:2] == ["x-small", "x_below_two"]


@pytest.mark.parametrize("spec, words", [
    ("no_colon", "takes MODULE:FUNCTION"),
    ("my_props:", "takes MODULE:FUNCTION"),
    ("missing_module:f", "no module 'missing_module'"),
    ("my_props:nope", "has no function 'nope'"),
    ("my_props:NOT_A_FUNCTION", "is a int, not a function"),
    ("my_props:three", "must take (state) or (state, model)"),
    ("broken_props:f", "importing broken_props failed: SyntaxError"),
    ("my_props:divides", "raised ZeroDivisionError"),
    ("my_props:TCConsistent", "has no function"),
])
def test_a_bad_property_is_one_line_and_exit_64(capsys, props, spec, words):
    code, out, err = run(capsys, "check", "two-phase", "--property", spec)
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 64 and len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith("kmc: error:") and words in lines[0], lines[0]


def test_a_property_may_not_shadow_a_built_in(capsys, props):
    (props / "shadow.py").write_text(textwrap.dedent('''
        def TCConsistent(state):
            return True
    '''))
    code, _, err = run(capsys, "check", "two-phase", "--property", "shadow:TCConsistent")
    assert code == 64 and "already taken" in err


def test_the_matrix_refuses_a_property_named_like_a_built_in(capsys, props):
    (props / "shadow_toy.py").write_text("def bounded(state):\n    return True\n")
    code, _, err = run(capsys, "matrix", TOY, "--quiet", "--property", "shadow_toy:bounded")
    assert code == 64 and "is a built-in invariant" in err and len(err.strip().splitlines()) == 1
