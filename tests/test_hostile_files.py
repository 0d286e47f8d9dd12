"""Hostile and unlucky inputs: special files, bombs, huge numbers, pathological text, unusable
output places. Each gets one line on stderr and its documented exit code, fast, never a traceback,
a hang, a crash by signal or a lost file."""

import errno
import json
import os
import shutil
import subprocess
import sys
import time

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from checker.codec import Codec
from kmc.cli import main
from spec.errors import BadFileError, KmcError
from traces.scenario import parse_action


def safe_io():
    from checker import safe_io as module  # imported here: the command-line tests run on any kmc

    return module

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def kmc(*argv, timeout=60, env=None, **kw):
    """Run the real command line in a fresh interpreter: (exit code, stdout, stderr)."""
    run = subprocess.run([sys.executable, "-m", "kmc.cli", *map(str, argv)], cwd=ROOT,
                         capture_output=True, text=True, timeout=timeout, env=env, **kw)
    return run.returncode, run.stdout, run.stderr


def cli(*argv, seconds=60):
    """Run the command line in this process with an alarm as a guard against hangs: (code, out,
    err)."""
    import contextlib
    import io
    import signal

    def hung(signum, frame):
        raise TimeoutError(f"kmc {' '.join(map(str, argv))} hung")

    out, err = io.StringIO(), io.StringIO()
    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(seconds)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main([str(a) for a in argv])
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    return code, out.getvalue(), err.getvalue()


def one_line(err):
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.fixture(scope="module")
def trace_file(tmp_path_factory):
    where = tmp_path_factory.mktemp("traces")
    code, out, _ = kmc("check", "two-phase", "--const", "commit_guard=off", "--json", "--quiet",
                       "--trace-dir", where)
    assert code == 12
    return json.loads(out)["violations"][0]["trace_file"]


# -- special files ---------------------------------------------------------------------------------
@pytest.mark.parametrize("special", ["fifo", "/dev/zero", "/dev/urandom", "directory"])
@pytest.mark.parametrize("argv", [("trace", "show"), ("trace", "replay"),
                                  ("check", "two-phase", "--quiet", "--resume")])
def test_special_files_are_refused_at_once(tmp_path, special, argv):
    if special == "fifo":
        path = tmp_path / "pipe"
        os.mkfifo(path)
    elif special == "directory":
        path = tmp_path
    else:
        path = special
    started = time.monotonic()
    # the old reader blocked on a FIFO, read /dev/zero to 2.6 GB
    code, _, err = cli(*argv, path, seconds=20)
    assert code == 65 and "not a" in one_line(err)
    assert time.monotonic() - started < 20


# -- bombs -----------------------------------------------------------------------------------------
def _nested_ext(depth):
    """msgpack of ``depth`` extensions (type 3, a tuple) each holding the next, built in linear
    time."""
    inner = msgpack.packb(1)
    sizes = [len(inner) + 6 * k for k in range(depth)]  # ext 32: 0xc9, 4-byte length, type, data
    return b"".join(b"\xc9" + size.to_bytes(4, "big") + b"\x03" for size in reversed(sizes)) + inner


@pytest.mark.slow  # every line it runs, cheaper fast tests run too (coverage by test)
def test_deeply_nested_msgpack_extensions_do_not_crash(tmp_path):
    """A trace whose state nests 200,000 extensions used to overflow the C stack (exit -11)."""
    doc = {"format": "kmc-trace-msgpack", "version": 1,
           "header": {"model": "two-phase", "constants": {}}, "invariant": None,
           "violation_index": None, "explanation": None, "extra": {},
           "initial": _nested_ext(200_000), "steps": []}
    path = tmp_path / "bomb.msgpack"
    path.write_bytes(msgpack.packb(doc, use_bin_type=True))
    code, _, err = kmc("trace", "show", path)
    assert code == 65, err
    one_line(err)
    with pytest.raises(BadFileError):
        Codec(()).decode(_nested_ext(100_000))


def test_deeply_nested_json_is_refused_before_parsing(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    code, _, err = cli("trace", "show", path)
    assert code == 65 and "nested" in one_line(err)


@pytest.mark.skipif(shutil.which("java") is None, reason="the spark engine needs Java")
def test_deeply_nested_run_json_is_refused(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "run.json").write_text('{"magic": ' + "[" * 50_000 + "]" * 50_000 + "}")
    code, _, err = cli("check", "two-phase", "--engine", "spark", "--quiet", "--resume", run_dir)
    assert code == 65 and "nested" in one_line(err)


def test_json_depth_prescan_ignores_brackets_in_strings():
    assert safe_io().json_depth(b'{"a": "[[[[\\"[[", "b": [1, {"c": []}]}') == 4
    assert safe_io().json_depth(b"[]") == 1 and safe_io().json_depth(b'"x"') == 0


@settings(max_examples=200, deadline=None)
@given(hs.recursive(hs.none() | hs.booleans() | hs.integers() | hs.text(alphabet='[]{}"\\ab'),
                    lambda inner: hs.lists(inner, max_size=3)
                    | hs.dictionaries(hs.text('[]{}"\\', max_size=3), inner,
                                      max_size=3), max_leaves=20))
def test_json_depth_is_the_real_depth(value):
    def depth(v):
        if isinstance(v, list):
            return 1 + max(map(depth, v), default=0)
        if isinstance(v, dict):
            return 1 + max(map(depth, v.values()), default=0)
        return 0

    assert safe_io().json_depth(json.dumps(value).encode()) == depth(value)


@settings(max_examples=300, deadline=None)
@given(hs.binary(max_size=200))
def test_readers_refuse_garbage_with_their_own_error_only(data):
    for decode in (lambda: safe_io().parse_json("f", data), lambda: Codec(()).decode(data)):
        try:
            decode()
        except BadFileError:
            pass


# -- numbers and text ------------------------------------------------------------------------------
def _scenario(tmp_path, step, **extra):
    doc = {"scenario": "hostile", "model": "two-phase", "steps": [step], **extra}
    path = tmp_path / "scenario.json"
    path.write_text(json.dumps(doc))
    return path


def test_a_5000_digit_integer_in_a_scenario_is_refused(tmp_path):
    code, _, err = cli("trace", "replay", _scenario(tmp_path, "TMRcvPrepared(rm=" + "7" * 5000
                                                    + ")"))
    assert code == 65 and "digits" in one_line(err)
    path = tmp_path / "big.json"
    path.write_text('{"scenario": "x", "model": "two-phase", "constants": {"RM": ' + "9" * 5000
                    + '}, "steps": []}')
    code, _, err = cli("trace", "replay", path)
    assert code == 65 and "digits" in one_line(err)


def test_scenario_steps_parse_in_linear_time():
    """``Name`` + 9,000 spaces + ``x`` took seconds with the old backtracking pattern (minutes for
    longer)."""
    for text in ("A" + " " * 9_000 + "x", " " * 9_000, "A(" + " " * 9_000 + "x", "A(k="
                 + " " * 9_000 + "= 1)"):
        started = time.monotonic()
        with pytest.raises(BadFileError):
            parse_action(text)
        assert time.monotonic() - started < 0.5
    with pytest.raises(BadFileError, match="characters"):
        parse_action("A" + " " * 1_000_000)
    assert (parse_action("  Fetch( follower = 2 , leader=1 ) ").params
            == (("follower", 2), ("leader", 1)))


@settings(max_examples=300, deadline=None)
@given(hs.text(alphabet="ab_(),= -1\t", max_size=60))
def test_parse_action_accepts_or_refuses_with_one_error(text):
    try:
        spec = parse_action(text)
    except BadFileError:
        return
    assert spec.name and all(key for key, _ in spec.params)


@pytest.mark.parametrize("extra", [{"features": {"no-such-flag": True}},
                                   {"invariants": ["NoSuchInvariant"]},
                                   {"protocol": "no-such-protocol"},
                                   {"constants": {"NoSuchConstant": 3}}])
def test_unknown_names_inside_a_scenario_are_a_bad_file_not_bad_usage(tmp_path, extra):
    code, _, err = cli("trace", "replay", _scenario(tmp_path, "TMAbort", **extra))
    assert code == 65 and "scenario" in one_line(err)


def test_a_missing_input_is_66(tmp_path):
    code, _, err = cli("trace", "show", tmp_path / "nowhere.json")
    assert code == 66 and "no such" in one_line(err)
    code, _, err = cli("check", "two-phase", "--quiet", "--resume", tmp_path / "nowhere.ckpt")
    assert code == 66


# -- outputs ---------------------------------------------------------------------------------------
def test_an_output_that_cannot_be_created_is_73(tmp_path, trace_file):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    for argv in (("trace", "export", trace_file, "--to", "itf", "-o", blocker / "out.itf.json"),
                 ("check", "two-phase", "--const", "commit_guard=off", "--quiet", "--trace-dir",
                  blocker / "t"),
                 ("check", "two-phase", "--quiet", "--max-states", "50", "--checkpoint",
                  blocker / "c.ckpt"),
                 ("trace", "export", trace_file, "--to", "itf", "-o", tmp_path)):
        code, _, err = cli(*argv)
        assert code == 73, (argv, err)
        one_line(err)


def test_a_full_disk_is_74_and_leaves_no_partial_file(tmp_path, trace_file, monkeypatch, capsys):
    real_write = os.write

    def full(fd, data):
        real_write(fd, bytes(data[: len(data) // 2]))
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(safe_io().os, "write", full)
    out = tmp_path / "out" / "export.itf.json"
    assert main(["trace", "export", trace_file, "--to", "itf", "-o", str(out)]) == 74
    assert "No space left" in one_line(capsys.readouterr().err)
    assert os.listdir(out.parent) == []  # neither a partial export nor a temporary file


def test_two_runs_with_different_constants_keep_both_traces(tmp_path):
    paths = []
    for rm in (3, 4):
        code, out, _ = cli("check", "two-phase", "--const", f"RM={rm}", "--const",
                           "commit_guard=off", "--json", "--quiet", "--trace-dir", tmp_path)
        assert code == 12
        paths.append(json.loads(out)["violations"][0]["trace_file"])
    assert paths[0] != paths[1] and all(os.path.exists(p) for p in paths)
    assert json.loads(open(paths[0]).read())["header"]["constants"]["RM"] == 3
    code, out, _ = cli("check", "two-phase", "--const", "RM=3", "--const", "commit_guard=off",
                       "--json", "--quiet", "--trace-dir", tmp_path)
    # the same trace again: the same file
    assert json.loads(out)["violations"][0]["trace_file"] == paths[0]


def test_json_mode_reports_errors_as_a_json_object(tmp_path):
    code, out, err = cli("check", "two-phase", "--json", "--resume", "/dev/zero")
    assert code == 65
    error = json.loads(out)["error"]
    assert (error["exit_code"] == 65 and error["kind"] == "bad-input-file" and "/dev/zero"
            in error["message"])
    code, out, _ = cli("check", "two-phase", "--json", "--no-such-flag")
    assert code == 64 and json.loads(out)["error"]["kind"] == "usage"


def test_every_kmc_error_is_one_class_per_exit_code():
    from spec import errors

    classes = [c for c in vars(errors).values() if isinstance(c, type) and issubclass(c, KmcError)
               and c is not KmcError]
    assert {errors.NoInputError.code, errors.BadFileError.code, errors.UsageError.code,
            errors.EnvironmentMissingError.code} == {66, 65, 64, 69}
    assert (errors.OutputError("x").code == 73 and errors.OutputError("x", cannot_create=False).code
            == 74)
    assert len(classes) >= 7
