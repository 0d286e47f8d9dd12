"""Ctrl-C at any moment and a broken environment: exit 130 or 69 with one line, no traceback, no
process left behind, and a resumed run that counts exactly what an uninterrupted one does."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def start(*argv, env=None):
    return subprocess.Popen([sys.executable, "-m", "kmc.cli", *map(str, argv)], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


def finish(proc, timeout=120):
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        raise
    return proc.returncode, out, err


def survivors(pgid):
    """Processes still alive in the process group ``pgid`` (the command's workers, executors...)."""
    alive = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            alive.append(int(pid))
    return alive


def wait_for(predicate, seconds=60.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.005)
    return False


# RM=7 resumed on two workers: about 4.5 s of CPU; the fast tier interrupts and resumes kmc below
@pytest.mark.slow
def test_sigint_to_two_workers_exits_130_and_leaves_a_resumable_checkpoint(tmp_path):
    ckpt = tmp_path / "run.ckpt"
    argv = ("check", "two-phase", "--const", "RM=7", "--workers", "2", "--quiet", "--json",
            "--trace-dir", tmp_path)
    proc = start(*argv, "--checkpoint", ckpt)
    # the parent and its two workers are running
    assert wait_for(lambda: len(survivors(proc.pid)) >= 3)
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    code, out, err = finish(proc)
    assert code == 130 and "Traceback" not in err, err  # was -2: killed by the signal
    assert "--resume" in err and json.loads(out)["error"]["kind"] == "interrupted"
    assert wait_for(lambda: not survivors(proc.pid), 10), "orphan worker processes"
    code, out, err = finish(start(*argv, "--resume", ckpt))
    assert code == 0, err
    resumed = json.loads(out)  # TLC's figures for RM=7, pinned in docs/explanation/how-it-works.md
    assert ((resumed["distinct_states"], resumed["states_generated"], resumed["depth"])
            == (296_448, 2_744_706, 23))


def test_two_interrupts_and_a_resume_count_what_an_uninterrupted_run_counts(tmp_path):
    """The old engine counted a level's successors twice when Ctrl-C landed inside it (440,378 vs
    402,306)."""
    ckpt = tmp_path / "run.ckpt"
    argv = ("check", "two-phase", "--const", "RM=6", "--quiet", "--json", "--trace-dir", tmp_path)
    full = json.loads(finish(start(*argv))[1])
    for delay in (0.6, 0.9):
        resume = ("--resume", ckpt) if ckpt.exists() else ("--checkpoint", ckpt)
        proc = start(*argv, *resume)
        time.sleep(delay)
        proc.send_signal(signal.SIGINT)
        code, _, err = finish(proc)
        assert code in (0, 130) and "Traceback" not in err, err
    code, out, err = finish(start(*argv, "--resume", ckpt) if ckpt.exists() else start(*argv))
    assert code == 0, err
    resumed = json.loads(out)
    for key in ("distinct_states", "states_generated", "depth"):
        assert resumed[key] == full[key], key


def _numpy_loaded(pid):
    try:
        with open(f"/proc/{pid}/maps") as f:
            return "_multiarray_umath" in f.read()
    except OSError:
        return False


def test_ctrl_c_while_kmc_is_still_starting_is_130_without_traceback():
    """Delivered while Python imports kmc's modules (before main() can catch anything)."""
    proc = start("check", "two-phase", "--quiet")
    assert wait_for(lambda: _numpy_loaded(proc.pid) or proc.poll() is not None, 30)
    proc.send_signal(signal.SIGINT)
    code, _, err = finish(proc)
    assert code == 130 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err


def test_a_broken_pyspark_is_69(tmp_path):
    fake = tmp_path / "site" / "pyspark"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('libpyspark.so: cannot open shared object "
                                      "file')\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "site")}
    code, _, err = finish(start("check", "two-phase", "--engine", "spark", "--spark-threshold", "1",
                                "--quiet", env=env))
    assert code == 69 and "Traceback" not in err and "PySpark" in err, err


@pytest.mark.spark
def test_a_java_that_does_not_start_is_69(tmp_path):
    pytest.importorskip("pyspark")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    java = bin_dir / "java"
    java.write_text("#!/bin/sh\necho 'Error: this is not a Java' >&2\nexit 1\n")
    java.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    code, _, err = finish(start("check", "two-phase", "--engine", "spark", "--spark-threshold", "1",
                                "--quiet", env=env))
    # was 64 (usage)
    assert code == 69 and "Traceback" not in err and "Java" in err.splitlines()[-1], err
