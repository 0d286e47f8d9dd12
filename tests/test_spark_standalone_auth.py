"""The standalone cluster of ``bench/spark-standalone.sh`` accepts only clients holding its secret.

Spark's RPC is unauthenticated by default: a cluster bound to 127.0.0.1 kept other machines out but
let any user of this one submit code to its workers. The script now generates a secret (mode 0600)
and starts the master and the workers with ``spark.authenticate``; kmc's driver reads the secret
from the file ``KMC_SPARK_SECRET_FILE`` names. This test starts the cluster with the script, runs
kmc on it with the secret (it runs), without it and with a wrong one (refused: one line from kmc,
exit 69, within the connect timeout, not Spark's minute of retries), and checks that the secret is
on no command line. The three clients run side by side (one module fixture): their JVMs' starts and
the refused ones' connect timeout overlap the accepted one's run, one wait, not three.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import NamedTuple

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: the time the master has to accept the client with the secret (generous: two other clients' JVMs
#: start beside it), and the refused ones (each waits it out after its JVM's start: short, as the
#: test checks the one line, not the wait)
CONNECT_SECONDS = 60
REFUSED_SECONDS = 5
#: under ``pytest -n N --dist loadgroup`` the standalone clusters' tests share one worker: one
#: cluster of three JVMs at a time on a two-core machine
pytestmark = pytest.mark.xdist_group("spark-standalone")


@pytest.fixture(scope="module")
def cluster(spark_standalone):
    """The suite's standalone cluster (tests/conftest.py): master URL, run directory, the start's
    stderr."""
    return spark_standalone[:3]


def _command_lines() -> list[str]:
    lines = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            lines.append(cmdline.read_bytes().decode(errors="replace"))
        except OSError:  # a process that ended meanwhile
            continue
    return lines


def _start_kmc(master: str, cwd: Path, secret_file: str | None, seconds: float,
               out: Path) -> subprocess.Popen:
    """kmc on the cluster, a two-phase search whose levels past 54 states are Spark's; the master
    has ``seconds`` to accept it. Its stdout and stderr go to ``out``.stdout and .stderr (files: a
    pipe not read while the others run could fill and stall it)."""
    env = {k: v for k, v in os.environ.items() if k != "KMC_SPARK_SECRET_FILE"}
    env.update(PYTHONPATH=str(ROOT), KMC_SPARK_CONNECT_SECONDS=str(seconds))
    if secret_file is not None:
        env["KMC_SPARK_SECRET_FILE"] = secret_file
    with open(out.with_suffix(".stdout"), "w") as stdout, \
            open(out.with_suffix(".stderr"), "w") as stderr:
        return subprocess.Popen([sys.executable, "-m", "kmc", "check", "two-phase", "--const",
                                 "RM=3", "--engine", "spark", "--master", master,
                                 "--spark-threshold", "54", "--spark-driver-below", "0",
                                 "--quiet", "--json"],
                                cwd=cwd, env=env, stdout=stdout, stderr=stderr)


class Ended(NamedTuple):
    """A client's run: its exit code, stdout, stderr and seconds from the clients' start to its
    own end (each client's end is seen by a poll every 0.25 s, not after the others')."""

    code: int
    out: str
    err: str
    seconds: float


@pytest.fixture(scope="module")
def clients(cluster, tmp_path_factory):
    """kmc on the cluster with its secret, without one and with a wrong one, side by side; (what
    each did, every process's command line seen while the one with the secret ran: the driver's
    JVM and the executors the workers started for it included)."""
    master, run_dir, _ = cluster
    cwd = tmp_path_factory.mktemp("spark-clients")
    wrong = cwd / "wrong-secret"
    wrong.write_text("0" * 64)
    wrong.chmod(0o600)
    started = time.monotonic()
    runs = {"secret": _start_kmc(master, cwd, str(run_dir / "secret"), CONNECT_SECONDS,
                                 cwd / "secret"),
            "none": _start_kmc(master, cwd, None, REFUSED_SECONDS, cwd / "none"),
            "wrong": _start_kmc(master, cwd, str(wrong), REFUSED_SECONDS, cwd / "wrong")}
    seen: list[str] = []
    ends: dict[str, float] = {}
    try:
        while len(ends) < len(runs) and time.monotonic() - started < 300:
            if runs["secret"].poll() is None:
                seen.extend(_command_lines())
            for name, run in runs.items():
                if name not in ends and run.poll() is not None:
                    ends[name] = time.monotonic() - started
            time.sleep(0.25)
    finally:
        for run in runs.values():
            if run.poll() is None:
                run.kill()
            run.wait()
    ended = {name: Ended(run.returncode, (cwd / name).with_suffix(".stdout").read_text(),
                         (cwd / name).with_suffix(".stderr").read_text(),
                         ends.get(name, float("inf")))
             for name, run in runs.items()}
    return ended, seen


@pytest.mark.slow
@pytest.mark.spark
def test_the_secret_is_private_and_named(cluster):
    master, run_dir, note = cluster
    secret = run_dir / "secret"
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600
    assert stat.S_IMODE((run_dir / "auth.conf").stat().st_mode) == 0o600
    assert len(secret.read_text().strip()) == 64 and f"KMC_SPARK_SECRET_FILE={secret}" in note
    assert master.startswith("spark://127.0.0.1:")


@pytest.mark.slow
@pytest.mark.spark
def test_a_client_with_the_secret_runs_and_the_secret_is_on_no_command_line(cluster, clients):
    _, run_dir, _ = cluster
    ended, seen = clients
    code, out, err, _ = ended["secret"]
    assert code == 0, err[-2000:]
    assert json.loads(out)["distinct_states"] == 288
    secret = (run_dir / "secret").read_text().strip()
    # the executors ran while we looked
    assert any("org.apache.spark.executor" in line for line in seen)
    assert not [line for line in seen if secret in line]


@pytest.mark.slow
@pytest.mark.spark
def test_a_client_without_the_secret_is_refused_with_one_line(clients):
    """No secret, and a wrong one: each refused with kmc's one line (exit 69) within the connect
    timeout (each waits it out after its JVM's start)."""
    ended, _ = clients
    for secret in ("none", "wrong"):
        code, out, err, seconds = ended[secret]
        kmc_lines = [line for line in err.splitlines() if line.startswith("kmc:")]
        assert code == 69, (secret, err[-2000:])
        assert len(kmc_lines) == 1 and "did not accept kmc's driver" in kmc_lines[0], err[-2000:]
        assert (("set KMC_SPARK_SECRET_FILE" if secret == "none" else "is it this cluster's?")
                in kmc_lines[0])
        assert f"within {REFUSED_SECONDS:g} s" in kmc_lines[0]
        assert "Traceback" not in err
        # its JVM's start (three start side by side on two cores) and the connect timeout
        assert seconds < REFUSED_SECONDS + 90, (secret, seconds)
        assert '"exit_code": 69' in out  # --json: the error as a JSON object too


def test_a_secret_file_others_can_read_is_refused(tmp_path):
    """The driver refuses a secret file readable by others (65) before starting anything."""
    from checker.spark.session import auth_secret
    from spec.errors import BadFileError, NoInputError

    path = tmp_path / "secret"
    path.write_text("a" * 64)
    path.chmod(0o644)
    with pytest.raises(BadFileError, match="chmod 600"):
        auth_secret({"KMC_SPARK_SECRET_FILE": str(path)})
    path.chmod(0o600)
    assert auth_secret({"KMC_SPARK_SECRET_FILE": str(path)}) == "a" * 64
    path.write_text("short")
    with pytest.raises(BadFileError, match="does not hold a secret"):
        auth_secret({"KMC_SPARK_SECRET_FILE": str(path)})
    with pytest.raises(NoInputError):
        auth_secret({"KMC_SPARK_SECRET_FILE": str(tmp_path / "missing")})
    assert auth_secret({}) is None
