"""Integers out of range in a file a user hands kmc: one line and exit 65 on every reader path.

``kmc trace export --to msgpack`` of a trace whose state held a 4,000-digit integer (a broker's
``leader``) ended in a traceback (msgpack's OverflowError) and exit 1, and ``show``, ``explain``,
``diagram`` and ``replay`` took it as a state. Every integer in a trace, scenario or checkpoint now
lies in signed 64 bits (``checker.safe_io.MIN_INT..MAX_INT``), checked where the file is read.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from checker import checkpoint as ckpt
from checker import safe_io
from checker.bfs import check
from checker.codec import Codec
from checker.search import SearchOptions
from checker.trace import Step
from invariants.registry import for_family
from kmc.cli import main
from spec.errors import BadFileError
from spec.two_phase import TwoPhase
from traces.io import load_trace, trace_to_msgpack

READERS = [("trace", "show"), ("trace", "explain"), ("trace", "diagram"), ("trace", "replay"),
           ("trace", "export", "--to", "msgpack"), ("trace", "export", "--to", "itf"),
           ("trace", "export", "--to", "json")]
TOO_BIG = [2**63, -(2**63) - 1, 2**64 - 1, 10**25, int("9" * 4000)]


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    lines = [line for line in err.splitlines() if line.strip()]
    return code, lines, err


@pytest.fixture(scope="module")
def kafka_trace(tmp_path_factory):
    """A kmc trace of the Kafka model (0.11.0 breaks replica sanity in 11 steps)."""
    where = tmp_path_factory.mktemp("traces")
    assert main(["check", "kafka", "--quiet", "--trace-dir", str(where)]) == 12
    (path,) = where.iterdir()
    return path


def _with_leader(tmp_path, trace_path, leader, name="hostile.json"):
    doc = json.loads(trace_path.read_text())
    doc["steps"][-1]["state"]["brokers"][0]["leader"] = leader
    out = tmp_path / name
    out.write_text(json.dumps(doc))
    return out


@pytest.mark.parametrize("value", TOO_BIG, ids=lambda v: f"{len(str(v))}-digits")
@pytest.mark.parametrize("form", ["bigint", "number"])
@pytest.mark.parametrize("argv", READERS, ids=" ".join)
@pytest.mark.slow  # every line it runs, cheaper fast tests run too (coverage by test)
def test_an_integer_out_of_range_in_a_json_trace_is_65(tmp_path, capsys, kafka_trace, argv, form,
                                                       value):
    leader = {"#bigint": str(value)} if form == "bigint" else value
    path = _with_leader(tmp_path, kafka_trace, leader)
    extra = ["-o", tmp_path / "out"] if argv[1] in ("export", "diagram") else []
    code, lines, err = run(capsys, *argv, path, *extra)
    assert code == 65 and len(lines) == 1 and "Traceback" not in err, err
    assert "out of range" in lines[0] and str(path) in lines[0]
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("argv", READERS[:4], ids=" ".join)
def test_the_edges_of_the_range_are_read(tmp_path, capsys, kafka_trace, argv):
    """2^63-1 and -2^63 are integers kmc reads: the file is refused for another reason or not at all
    (never 65)."""
    for value in (2**63 - 1, -(2**63)):
        path = _with_leader(tmp_path, kafka_trace, {"#bigint": str(value)})
        extra = ["-o", tmp_path / "out.mmd"] if argv[1] == "diagram" else []
        code, lines, err = run(capsys, *argv, path, *extra)
        assert code != 65 and "Traceback" not in err, err


def test_an_integer_out_of_range_in_a_msgpack_trace_is_65(tmp_path, capsys, kafka_trace):
    """msgpack holds integers up to 2^64-1: one there (packed behind the outer document) is refused
    too."""
    trace, _ = load_trace(str(kafka_trace))
    last = trace.steps[-1]
    brokers = last.state.brokers
    state = last.state._replace(brokers=(brokers[0]._replace(leader=2**64 - 1), *brokers[1:]))
    hostile = trace.__class__(**{**trace.__dict__,
                                 "steps": (*trace.steps[:-1], Step(last.action, state))})
    path = tmp_path / "hostile.msgpack"
    path.write_bytes(trace_to_msgpack(hostile))
    for argv in READERS:
        extra = ["-o", tmp_path / "out"] if argv[1] in ("export", "diagram") else []
        code, lines, err = run(capsys, *argv, path, *extra)
        assert code == 65 and len(lines) == 1 and "out of range" in lines[0], (argv, err)


def test_an_itf_trace_from_another_tool_with_a_huge_bigint_is_65(tmp_path, capsys):
    """ITF import (no kmc header, --model given): Apalache and Quint write every integer as
    #bigint."""
    doc = {"#meta": {"format": "ITF"}, "vars": ["rm"],
           "states": [{"#meta": {"index": 0}, "rm": {"#bigint": "7" * 4000}}]}
    path = tmp_path / "quint.itf.json"
    path.write_text(json.dumps(doc))
    code, lines, err = run(capsys, "trace", "show", path, "--model", "two-phase")
    assert code == 65 and len(lines) == 1 and "out of range" in lines[0], err


@pytest.mark.parametrize("value", ["9223372036854775808", "-9223372036854775809", "1" * 25])
def test_an_integer_out_of_range_in_a_scenario_is_65(tmp_path, capsys, value):
    for doc in ({"scenario": "x", "model": "two-phase", "steps": [f"TMRcvPrepared(rm={value})"]},
                {"scenario": "x", "model": "two-phase", "constants": {"RM": int(value)},
                 "steps": []}):
        path = tmp_path / "scenario.json"
        path.write_text(json.dumps(doc))
        code, lines, err = run(capsys, "trace", "replay", path)
        assert code == 65 and len(lines) == 1 and "out of range" in lines[0], err


# -- checkpoints -----------------------------------------------------------------------------------
INVARIANTS = list(for_family("two-phase").values())


def _checkpoint(tmp_path):
    path = tmp_path / "part.ckpt"
    check(TwoPhase(4), SearchOptions(invariants=INVARIANTS, max_states=300,
                                     checkpoint_path=str(path)))
    return path


def _tampered(path, mutate):
    header, payload = ckpt.unpack(path.read_bytes())
    mutate(header, payload)
    out = path.with_name("tampered.ckpt")
    out.write_bytes(ckpt.pack(header, payload))  # with a checksum that fits again
    return out


def _huge_elapsed(header, payload):
    payload["elapsed"] = 2**64 - 1  # was taken: an integer, finite and not negative


def _huge_header(header, payload):
    header["checker_version"] = 2**64 - 1


def _huge_state(header, payload):
    codec = Codec(TwoPhase(4).state_types())
    state = codec.decode(payload["frontier"][0])
    payload["frontier"][0] = codec.encode(tuple(2**64 - 1 if isinstance(v, int) else v
                                                for v in state)
                                          if type(state) is tuple
                                          else state._replace(**{state._fields[0]: 2**64 - 1}))


@pytest.mark.parametrize("mutate", [_huge_elapsed, _huge_header, _huge_state],
                         ids=lambda f: f.__name__)
def test_an_integer_out_of_range_in_a_checkpoint_is_65(tmp_path, capsys, mutate):
    path = _tampered(_checkpoint(tmp_path), mutate)
    with pytest.raises(BadFileError, match="out of range"):
        ckpt.load(str(path), TwoPhase(4), SearchOptions(invariants=INVARIANTS))
    code, lines, err = run(capsys, "check", "two-phase", "--const", "RM=4", "--quiet", "-deadlock",
                           "--resume", path)
    assert code == 65 and len(lines) == 1 and "out of range" in lines[0], err


def test_the_safe_reader_bounds_every_integer_form():
    ok = safe_io.parse_json("f", b'[9223372036854775807, -9223372036854775808, {"#bigint": '
                            b'"-9223372036854775808"}]')
    assert ok[0] == 2**63 - 1 and ok[1] == -(2**63)
    for text in (b"9223372036854775808", b'{"#bigint": "9223372036854775808"}', b"[1e400]",
                 b"-1e999", b'{"a": [{"#bigint": "' + b"1" * 5000 + b'"}]}'):
        with pytest.raises(BadFileError):
            safe_io.parse_json("f", text)
    with pytest.raises(BadFileError, match="out of range"):
        safe_io.unpack_msgpack(__import__("msgpack").packb({"k": [2**64 - 1]}))
    assert (safe_io.unpack_msgpack(__import__("msgpack").packb({"k": [2**63 - 1, -(2**63)]}))
            == {"k": [2**63 - 1, -(2**63)]})
    assert np.iinfo(np.int64).max == safe_io.MAX_INT and np.iinfo(np.int64).min == safe_io.MIN_INT
