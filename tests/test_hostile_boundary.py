"""The command line's boundary: an empty value given to any option or argument of any subcommand is
refused with one line naming it and exit 64, never taken as the default
(``kmc check kafka --protocol ""`` used to run 0.11.0 and exit 12).

The options are found by walking the parser (every subcommand, nested ones too), so an option or a
subcommand added later is covered without editing this file.
"""

from __future__ import annotations

import argparse
import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest

from kmc.cli import build_parser, main
from kmc.options import EMPTY_VALUE_ALLOWED, chosen_engine

ROOT = Path(__file__).resolve().parent.parent
#: a value for a positional argument that is not the one under test: never valid, so that if the
#: parser let the empty value through, the command would stop quickly on it with another message
PLACEHOLDER = "no-such-input-kmc-test"


Command = tuple[tuple[str, ...], argparse.ArgumentParser]


def _commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> list[Command]:
    """(words of the subcommand, its parser) for the top level and every subcommand below it."""
    found = [(path, parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                if sub not in [p for _, p in found]:
                    found.extend(_commands(sub, (*path, name)))
    return found


def _takes_value(action: argparse.Action) -> bool:
    return (action.nargs != 0 and not isinstance(action, argparse._SubParsersAction
                                                 | argparse._HelpAction))


def _positional_value(action: argparse.Action) -> str:
    return str(next(iter(action.choices))) if action.choices else PLACEHOLDER


def _cases() -> list[tuple[str, list[str]]]:
    """(the argument's display name, argv) for every argument of every subcommand that takes a
    value."""
    cases = []
    for path, parser in _commands(build_parser()):
        values = [a for a in parser._actions if _takes_value(a)]
        positionals = [a for a in values if not a.option_strings]
        for action in values:
            if EMPTY_VALUE_ALLOWED & set(action.option_strings):
                continue
            name = argparse._get_action_name(action)
            if action.option_strings:
                for spelling in action.option_strings:
                    # the value as a separate word, and glued with = for long options
                    args = [_positional_value(p) for p in positionals]
                    cases.append((name, [*path, *args, spelling, ""]))
                    if spelling.startswith("--"):
                        cases.append((name, [*path, f"{spelling}=", *args]))
                    cases.append((name, [*path, *args, spelling, "  "]))
            else:
                args = ["" if p is action else _positional_value(p) for p in positionals]
                cases.append((name, [*path, *args]))
    return cases


CASES = _cases()


def test_the_walk_sees_every_subcommand():
    """The walk reaches the nested subcommands (kmc trace show, ...) and finds a few hundred
    cases."""
    paths = {" ".join(path) for path, _ in _commands(build_parser())}
    assert ({"check", "simulate", "list", "matrix", "trace", "trace show", "trace export",
             "trace replay"} <= paths)
    assert len(CASES) > 150


@pytest.mark.parametrize(("name", "argv"), CASES, ids=[" ".join(argv) + "|" for _, argv in CASES])
@pytest.mark.slow  # every line it runs, cheaper fast tests run too (coverage by test)
def test_an_empty_value_is_refused(capsys, name, argv):
    code = main(argv)
    out, err = capsys.readouterr()
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 64, (argv, err)
    assert len(lines) == 1 and "Traceback" not in err, err
    assert f"argument {name}: an empty value" in lines[0], lines[0]


def test_the_reported_case_end_to_end():
    """The issue's command, as a user runs it: one line naming --protocol, exit 64, nothing on
    stdout."""
    proc = subprocess.run([sys.executable, "-m", "kmc", "check", "kafka", "--protocol", "",
                           "--quiet"],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 64, proc.stderr
    assert proc.stdout == ""
    assert proc.stderr.strip().splitlines() == [
        "kmc: error: argument --protocol: an empty value means nothing here; give a value or leave "
        "the argument out (see 'kmc check --help')"]


def test_defaults_and_real_values_still_parse():
    """The check is on what the command line gives, not on defaults: an option left out keeps its
    default."""
    args = build_parser().parse_args(["check", "two-phase"])
    assert (args.protocol is None and args.trace_dir == "kmc-traces" and chosen_engine(args)[0]
            == "local")
    args = build_parser().parse_args(["trace", "export", "t.json", "-o", "x.itf.json"])
    assert args.output == "x.itf.json"


# -- the same in a file: a scenario's names --------------------------------------------------------
SCENARIO = ROOT / "traces" / "scenarios" / "acks-1-lost-on-leader-failover.json"


@pytest.mark.parametrize(("field", "value"), [("scenario", ""), ("model", ""), ("protocol", ""),
                                              ("protocol", "  "),
                                              ("expect", {"": {"outcome": "holds"}})])
def test_an_empty_name_in_a_scenario_is_refused(tmp_path, capsys, field, value):
    """An empty scenario name, model or protocol, or an expectation for the protocol "" (never
    checked, so the replay passed with it) is a bad file: one line, exit 65."""
    doc = copy.deepcopy(json.loads(SCENARIO.read_text()))
    doc[field] = value
    path = tmp_path / "scenario.json"
    path.write_text(json.dumps(doc))
    code = main(["trace", "replay", str(path)])
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert code == 65 and len(lines) == 1, lines
    assert "is empty" in lines[0] or "empty protocol name" in lines[0], lines[0]


# -- the same in a trace's header ------------------------------------------------------------------
@pytest.fixture(scope="module")
def kmc_trace(tmp_path_factory):
    where = tmp_path_factory.mktemp("traces")
    assert (main(["check", "two-phase", "--const", "commit_guard=off", "--quiet", "--trace-dir",
                  str(where)]) == 12)
    (path,) = where.iterdir()
    return json.loads(path.read_text())


def _set_header(doc, key, value):
    doc["header"][key] = value


@pytest.mark.parametrize(("change", "message"), [
    # was taken for another tool's ITF trace (64)
    (lambda d: _set_header(d, "model", ""), "names no model"),
    # was the default protocol
    (lambda d: _set_header(d, "protocol", ""), "is not a protocol name"),
    (lambda d: d.__setitem__("invariant", " "), "is not an invariant name"),
    (lambda d: d.__setitem__("violation_index", len(d["steps"]) + 1),
     "past the trace's last state"),
    (lambda d: d.__setitem__("violation_index", 10**18), "past the trace's last state"),
], ids=["model", "protocol", "invariant", "violation-index", "violation-index-huge"])
@pytest.mark.parametrize("command", ["show", "explain", "replay"])
def test_an_empty_or_impossible_header_field_in_a_trace_is_refused(tmp_path, capsys, kmc_trace,
                                                                   change, message, command):
    doc = copy.deepcopy(kmc_trace)
    change(doc)
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(doc))
    code = main(["trace", command, str(path)])
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert code == 65 and len(lines) == 1 and message in lines[0], lines
