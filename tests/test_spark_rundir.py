"""A Spark run directory is input, and hostile input is refused: every level's files are checked
against the digest run.json recorded when the level committed, and every field of run.json is
bounded against the run it claims to be, before any of it is used (exit 65, one line). Ctrl-C during
a Spark level is one line, exit 130, and the run resumes to the uninterrupted run's counts.

The fast tests check the refusals on a run directory made by hand (no Spark); the slow ones corrupt
a real run directory as the issue's hostile user did (a level's Parquet file emptied, truncated; a
huge partition count) and resume it with ``kmc check --resume``."""

import copy
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import NamedTuple

import pytest

from checker.bfs import check as bfs_check
from checker.search import SearchOptions
from checker.spark.resume import MAX_PARTITIONS, _check_digests, _checked_levels
from checker.spark.rundir import RunDir
from invariants.registry import for_family
from spec.errors import BadFileError, ExitCode
from spec.two_phase import TwoPhase

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WHERE = "run.json"


def handmade(tmp_path):
    """A run directory of 5 levels: 3 on the driver (10 states), 2 on Spark with a file each (4 + 2
    states)."""
    run_dir = RunDir(str(tmp_path / "run"))
    levels = [{"depth": 1, "base": 0, "count": 1, "path": None, "digest": None},
              {"depth": 2, "base": 1, "count": 3, "path": None, "digest": None},
              {"depth": 3, "base": 4, "count": 6, "path": None, "digest": None}]
    base = 10
    for depth, count in ((4, 4), (5, 2)):
        path = run_dir.level_path(depth)
        os.makedirs(path)
        for part in range(2):
            with open(os.path.join(path, f"part-0000{part}.snappy.parquet"), "wb") as f:
                f.write(bytes(range(depth, depth + 64)) * (part + 1))
        with open(os.path.join(path, "_SUCCESS"), "wb"):
            pass
        levels.append({"depth": depth, "base": base, "count": count, "path": path,
                       "digest": run_dir.level_digest(path)})
        base += count
    payload = {"transport": "blocks", "partitions": 4, "depth": 5, "generated": 40, "distinct": 16,
               "local_distinct": 10, "frontier_base": 14, "frontier_size": 2, "found": {},
               "deadlock": None, "elapsed": 3.5, "levels": levels}
    return run_dir, payload


def check(run_dir, payload):
    levels = _checked_levels(payload, run_dir, WHERE, {"TCConsistent"}, check_deadlock=False)
    _check_digests(run_dir, levels)
    return levels


def test_a_handmade_run_directory_passes(tmp_path):
    run_dir, payload = handmade(tmp_path)
    levels = check(run_dir, payload)
    assert ([level.depth for level in levels] == [1, 2, 3, 4, 5] and levels[-1].digest
            == payload["levels"][-1]["digest"])


def _part(run_dir, depth=4):
    return os.path.join(run_dir.level_path(depth), "part-00001.snappy.parquet")


@pytest.mark.parametrize("corrupt", [
    # emptied: resumed as good with a wrong result before the digest
    lambda path: open(path, "wb").close(),
    # truncated: a JVM trace and exit 64 before
    lambda path: os.truncate(path, os.path.getsize(path) // 2),
    lambda path: open(path, "r+b").write(b"\xff"),  # one byte changed
    lambda path: shutil.copy(path, path.replace("00001", "00002")),  # a file added
    os.remove,  # a file removed
], ids=["emptied", "truncated", "changed", "added", "removed"])
def test_a_level_file_that_is_not_the_one_written_is_refused(tmp_path, corrupt):
    run_dir, payload = handmade(tmp_path)
    corrupt(_part(run_dir))
    with pytest.raises(BadFileError, match="files of level 4 .* are not the ones written"):
        check(run_dir, payload)
    assert BadFileError.code == ExitCode.BAD_FILE == 65


def test_checksum_and_success_files_are_not_part_of_the_digest(tmp_path):
    """Spark's reader skips hidden and underscore files, so may the digest (a .crc rewritten is
    harmless)."""
    run_dir, payload = handmade(tmp_path)
    with open(os.path.join(run_dir.level_path(5), "_SUCCESS"), "wb") as f:
        f.write(b"x")
    check(run_dir, payload)


def _edit(payload, key, value):
    changed = copy.deepcopy(payload)
    if isinstance(key, tuple):
        changed["levels"][key[0]][key[1]] = value
    else:
        changed[key] = value
    return changed


@pytest.mark.parametrize(("key", "value", "why"), [
    ("partitions", 10**9, "partitions"),  # a JVM OutOfMemoryError after 192 s before the bound
    ("partitions", MAX_PARTITIONS + 1, "partitions"),
    ("partitions", 17, "partitions"),  # more partitions than the run has states
    ("partitions", 0, "impossible partitions"),
    ("elapsed", 1e300, "elapsed"),
    ("elapsed", float("nan"), "elapsed"),
    ("depth", 6, "depth 6, 5 levels"),
    ("found", {"NotAnInvariantOfThisRun": 3}, "violations"),
    ("found", {"TCConsistent": 16}, "violations"),
    ("deadlock", 3, "deadlock"),  # this run does not check deadlocks
    ("local_distinct", 0, "inconsistent"),
    ("generated", 15, "inconsistent"),
    ((3, "digest"), None, "no digest"),
    ((3, "digest"), "0" * 63, "no digest"),
    ((3, "path"), None, "level 4 is inconsistent"),
    ((2, "path"), "elsewhere", "level 3 is inconsistent"),
    ((1, "digest"), "0" * 64, "digest but no files"),
    ((3, "count"), 0, "out of order"),
    ((3, "base"), 11, "out of order"),
    ("transport", "rdd", "no Spark transport"),
    ("transport", None, "no Spark transport"),
])
def test_every_field_of_run_json_is_bounded_against_the_run(tmp_path, key, value, why):
    run_dir, payload = handmade(tmp_path)
    with pytest.raises(BadFileError, match=why):
        check(run_dir, _edit(payload, key, value))


def test_a_run_directory_resumes_in_the_transport_that_wrote_it(tmp_path):
    """The two transports' level files differ (blocks: gidx, fp, parent, pos, state; arrow: fp, key,
    state)."""
    from checker.spark import SparkBFS, SparkOptions
    from spec.errors import UsageError

    search = SparkBFS(TwoPhase(3), SearchOptions(invariants=[]), SparkOptions(transport="blocks"))
    search._run_dir, search._resumed_transport = RunDir(str(tmp_path)), "arrow"
    with pytest.raises(UsageError, match="written by the arrow Spark transport; resume it with "
                                         "--spark-transport arrow"):
        search._use_arrow()
    search._resumed_transport = "blocks"
    assert search._use_arrow() is False


KERNEL_PATH = {"path": "kernel", "engine": "spark", "kernel": "kernel.c",
               "library": "kernel-0123456789abcdef.so", "state_bytes": 12,
               "fingerprints": "the kernel's 64-bit hash"}


@pytest.mark.parametrize(("written", "now", "why"), [
    (KERNEL_PATH, {"path": "readable", "reason": "--kernel off"},
     r"holds the states of the compiled kernel kernel-0123456789abcdef.so \(12 bytes a state\), "
     r"this run is on the readable model \(--kernel off\)"),
    ({"path": "readable"}, KERNEL_PATH, "holds the states of the readable model, this run is on "
                                        "the compiled kernel kernel-0123456789abcdef.so"),
    ({**KERNEL_PATH, "library": "kernel-fedcba9876543210.so"}, KERNEL_PATH,
     "holds the states of the compiled kernel kernel-fedcba9876543210.so"),
    ({**KERNEL_PATH, "state_bytes": 13}, KERNEL_PATH,
     r"holds the states of the compiled kernel kernel-0123456789abcdef.so \(13 bytes a state\)"),
], ids=["kernel-then-readable", "readable-then-kernel", "another-kernel", "another-width"])
def test_a_run_directory_resumes_on_the_path_and_kernel_that_wrote_it(tmp_path, written, now,
                                                                      why):
    """run.json records the path (the kernel's library and state width, or readable); a resume on
    another path or kernel is refused with one line (exit 65): its level files hold other states
    and fingerprints."""
    from checker.spark import SparkBFS, SparkOptions
    from checker.spark.resume import _checked_path, _path_record

    search = SparkBFS(TwoPhase(3), SearchOptions(invariants=[]), SparkOptions())
    search._run_dir = RunDir(str(tmp_path))
    search._resumed_path = _checked_path({"path": _path_record(written)}, WHERE)
    search._path = now
    with pytest.raises(BadFileError, match=f"run directory {tmp_path} {why}") as refused:
        search._check_resumed_path()
    assert refused.value.code == ExitCode.BAD_FILE and "\n" not in str(refused.value)
    search._path = written  # the same path and kernel resume
    search._check_resumed_path()


@pytest.mark.parametrize("path", [
    {"path": "kernel", "library": "k.so"}, {"path": "kernel", "library": "", "state_bytes": 12},
    {"path": "kernel", "library": "k" * 256, "state_bytes": 12},
    {"path": "kernel", "library": "k.so", "state_bytes": True},
    {"path": "kernel", "library": "k.so", "state_bytes": 0},
    {"path": "kernel", "library": "k.so", "state_bytes": 2**40},
    {"path": "kernel", "library": 7, "state_bytes": 12},
    {"path": "other", "library": "k.so", "state_bytes": 12},
    {"path": "readable", "reason": "x"}, "kernel", None,
])
def test_run_jsons_path_is_bounded(path):
    from checker.spark.resume import _checked_path

    with pytest.raises(BadFileError, match="names an impossible path"):
        _checked_path({"path": path}, WHERE)
    # a run directory written before the path was recorded holds readable states
    assert _checked_path({}, WHERE) == {"path": "readable"}


def test_a_run_directory_of_the_other_path_is_refused_before_spark_starts(tmp_path, monkeypatch):
    """A run directory whose run.json names the kernel, resumed with --kernel off: refused (exit
    65, one line) from run.json alone, before the JVM would start (a minute of a cluster's
    time) and before local.ckpt is read (the handmade directory has none)."""
    from checker import checkpoint as ckpt
    from checker.spark import SparkBFS, SparkOptions
    from checker.spark.rundir import RUN_FORMAT, RUN_MAGIC

    run_dir, payload = handmade(tmp_path)
    options = SearchOptions(invariants=[for_family("two-phase")["TCConsistent"]], kernel="off",
                            resume_from=run_dir.path)
    payload.update(magic=RUN_MAGIC, format=RUN_FORMAT, transport="arrow",
                   identity=ckpt._identity(TwoPhase(3), options),
                   path={"path": "kernel", "library": "kernel-0123456789abcdef.so",
                         "state_bytes": 2})
    run_dir.write_bytes("run.json", json.dumps(payload).encode())

    def no_spark(*_args, **_kwargs):
        raise AssertionError("Spark started before the run directory's path was checked")

    monkeypatch.setattr(SparkBFS, "_start", no_spark)
    with pytest.raises(BadFileError, match="holds the states of the compiled kernel "
                                           r"kernel-0123456789abcdef.so \(2 bytes a state\), this "
                                           r"run is on the readable model \(--kernel off\)"):
        SparkBFS(TwoPhase(3), options, SparkOptions(transport="arrow")).run()


def test_a_level_digest_on_a_fifo_is_refused_not_waited_on(tmp_path):
    run_dir, payload = handmade(tmp_path)
    os.mkfifo(os.path.join(run_dir.level_path(4), "part-00009.snappy.parquet"))
    with pytest.raises(BadFileError, match="not a regular file"):
        check(run_dir, payload)


# -- a real run directory, corrupted and resumed on the command line -------------------------------

COMMAND = ["check", "two-phase", "--const", "RM=3", "--engine", "spark", "--master", "local[2]",
           "--spark-threshold", "30", "--spark-driver-below", "0", "--quiet"]
#: both paths' run directories: the compiled kernel's (``--kernel auto``: packed states in the
#: level files, written by the executors) and the readable model's (msgpack states, by Spark)
PATHS = {"kernel": [], "readable": ["--kernel", "off"]}


class Interrupted(NamedTuple):
    """A run interrupted by the terminal's Ctrl-C: its run directory as the interrupt left it, the
    path's name, the exit code and stderr."""

    run_dir: Path
    path: str
    code: int
    err: str


@pytest.fixture(scope="module", params=list(PATHS))
def interrupted_run(spark_local, tmp_path_factory, request):
    """A two-phase RM=3 run in a kmc process of its own (its own JVM), levels 6 to 11 on Spark, on
    each path, interrupted by the terminal's Ctrl-C (SIGINT to the process group: driver, JVM,
    Python workers) while level 8's Spark jobs run, after level 7 was written. Its run directory is
    the Ctrl-C test's, resumed, and the corruption tests' real run directory (a copy of it each)."""
    path = request.param
    run_dir = tmp_path_factory.mktemp("spark-run") / "run"
    env = {**os.environ, "PYTHONPATH": ROOT}
    child = subprocess.Popen([sys.executable, "-m", "kmc", *COMMAND, *PATHS[path], "--checkpoint",
                              str(run_dir)], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 240
        while child.poll() is None and time.monotonic() < deadline:
            try:
                if json.loads((run_dir / "run.json").read_text())["depth"] >= 7:
                    break
            except (OSError, ValueError):
                pass
            time.sleep(0.05)
        time.sleep(0.3)  # inside level 8's Spark jobs
        os.killpg(child.pid, signal.SIGINT)
        _out, err = child.communicate(timeout=120)
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
    written = json.loads((run_dir / "run.json").read_text())["path"]["path"]
    assert written == path, written
    return Interrupted(run_dir, path, child.returncode, err)


def resume(run_dir, flags=()):
    """``kmc check --resume`` in a process of its own (a refusal comes before its JVM would
    start)."""
    env = {**os.environ, "PYTHONPATH": ROOT}
    done = subprocess.run([sys.executable, "-m", "kmc", *COMMAND, *flags, "--resume",
                           str(run_dir)], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    return done.returncode, done.stdout, done.stderr


def _first_part(run_dir, depth):
    path = run_dir / "levels" / f"{depth:04d}"
    return next(p for p in sorted(path.iterdir()) if p.name.startswith("part-")
                and p.stat().st_size)


@pytest.mark.slow  # the interrupted run (a kmc process with its own JVM) and three kmc processes
@pytest.mark.spark
@pytest.mark.parametrize("corruption", ["emptied", "truncated", "partitions"])
def test_the_issues_corruptions_of_a_real_run_directory_are_refused(interrupted_run, tmp_path,
                                                                   corruption):
    run_dir = tmp_path / "run"
    shutil.copytree(interrupted_run.run_dir, run_dir)
    flags = PATHS[interrupted_run.path]
    if corruption == "partitions":
        saved = json.loads((run_dir / "run.json").read_text())
        saved["partitions"] = 2**40
        (run_dir / "run.json").write_text(json.dumps(saved))
    else:
        part = _first_part(run_dir, 7)
        os.truncate(part, 0 if corruption == "emptied" else part.stat().st_size // 2)
    code, out, err = resume(run_dir, flags)
    assert code == 65, (code, err)
    assert err.count("\n") == 1 and err.startswith("kmc: error: ") and "Exception" not in err, err


# -- Ctrl-C during a Spark level -------------------------------------------------------------------

@pytest.mark.slow  # a kmc process with its own JVM, then a resume in this one
@pytest.mark.spark
def test_ctrl_c_during_a_spark_level_is_one_line_and_resumes(interrupted_run, tmp_path, capsys):
    """The terminal's Ctrl-C while a Spark level runs: exit 130, one line naming the run directory
    (PySpark's handler printed two Py4J tracebacks, and the JVM the workers' deaths), then
    ``--resume`` (in this process, on a copy of the run directory) counts what an uninterrupted run
    counts."""
    from kmc.cli import main

    written, path, code, err = interrupted_run
    run_dir = tmp_path / "run"
    shutil.copytree(written, run_dir)
    assert code == 130, err
    ours = [line for line in err.splitlines() if line.startswith("kmc:")]
    assert ours == [f"kmc: error: interrupted; the run is saved up to its last written level in "
                    f"{written}: run the same command with --resume {written} to continue"], err
    # no Python traceback, no JVM error line
    assert "Traceback" not in err and " ERROR " not in err, err
    assert json.loads((run_dir / "run.json").read_text())["depth"] < 11  # stopped mid-way
    capsys.readouterr()
    assert main([*COMMAND, *PATHS[path], "--json", "--resume", str(run_dir)]) == 0
    resumed = json.loads(capsys.readouterr().out)
    assert resumed["path"]["path"] == path
    full = bfs_check(TwoPhase(3), SearchOptions(invariants=list(for_family("two-phase").values()),
                                                check_deadlock=True))
    assert (resumed["distinct_states"], resumed["states_generated"], resumed["depth"]) == (
        full.distinct_states, full.states_generated, full.depth)
