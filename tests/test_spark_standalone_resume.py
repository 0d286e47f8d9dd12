"""A resumable run on the standalone cluster of ``bench/spark-standalone.sh`` (a master and two
workers on 127.0.0.1, authenticated) survives the loss of its driver and of a worker: killed mid-run
(SIGKILL, the driver's JVM with it), ``--resume`` on the cluster left ends with the local engine's
counts. At a small size (Kafka 2.1.0, three brokers, ``--symmetry --reduce dead``: 835 orbits, 21
levels; 584 and 19 before ExpandIsr waited for a fetch answer, which keeps such answers live) the
three-broker goal configuration's command."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CONSTS = ["brokers=3", "records=1", "crashes=0", "epochs=0"]
#: under ``pytest -n N --dist loadgroup`` the standalone clusters' tests share one worker: one
#: cluster of three JVMs at a time on a two-core machine
pytestmark = pytest.mark.xdist_group("spark-standalone")
#: the levels whose frontier has 78 states or more run on the cluster, those of depth 12 to 14 (79
#: to 85 states); the smaller ones on the driver in C: 3 levels a job each on the cluster (each of
#: them seconds of jobs on a worker's one core), not the 7 from depth 10 on of 60 states. The run
#: is killed as soon as level 12, the first on the cluster, is written and resumed at least one
#: cluster level before the end of them.
DRIVER_BELOW = 78
FIRST_ON_THE_CLUSTER, LAST_ON_THE_CLUSTER = 12, 14


@pytest.fixture(scope="module")
def cluster(spark_standalone):
    """The suite's standalone cluster (tests/conftest.py), which the auth tests ran on first; this
    test kills one of its workers, so it stops the cluster when done."""
    yield spark_standalone.master, spark_standalone.run_dir
    spark_standalone.stop()


def _command(master: str, *extra: str) -> list[str]:
    consts = [word for c in CONSTS for word in ("--const", c)]
    return [sys.executable, "-m", "kmc", "check", "kafka", "--protocol", "2.1.0", *consts,
            "--symmetry", "--reduce", "dead", "--engine", "spark", "--master", master,
            "--spark-threshold", "30", "--spark-driver-below", str(DRIVER_BELOW), "--quiet",
            *extra]


@pytest.mark.slow  # a cluster of three JVMs, a run killed and resumed on it: minutes
@pytest.mark.spark
def test_a_run_killed_with_a_worker_resumes_on_the_cluster_to_the_local_counts(cluster, tmp_path):
    master, cluster_dir = cluster
    env = {**os.environ, "PYTHONPATH": str(ROOT), "KMC_SPARK_CONNECT_SECONDS": "180",
           "KMC_SPARK_SECRET_FILE": str(cluster_dir / "secret")}
    run_dir = tmp_path / "run"
    # the local engine's run, side by side with the cluster's (its counts are the reference)
    local = subprocess.Popen([sys.executable, "-m", "kmc", "check", "kafka", "--protocol", "2.1.0",
                              *[word for c in CONSTS for word in ("--const", c)], "--symmetry",
                              "--reduce", "dead", "--quiet", "--json"], cwd=tmp_path, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    child = subprocess.Popen(_command(master, "--checkpoint", str(run_dir)), cwd=tmp_path, env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                             start_new_session=True)
    depth = 0
    try:
        deadline = time.monotonic() + 600
        while (depth < FIRST_ON_THE_CLUSTER and child.poll() is None
               and time.monotonic() < deadline):
            time.sleep(0.05)
            try:
                depth = json.loads((run_dir / "run.json").read_text())["depth"]
            except (OSError, ValueError, KeyError):
                pass
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)  # the driver and its JVM
        _out, err = child.communicate()
    # killed mid-run, a level on the cluster behind and one ahead at least
    assert FIRST_ON_THE_CLUSTER <= depth < LAST_ON_THE_CLUSTER, err[-2000:]
    worker = next((cluster_dir / "pids").glob("*Worker-2.pid"))
    # one worker, and the executor it ran
    os.kill(int(worker.read_text().split()[0]), signal.SIGKILL)
    resumed = subprocess.run(_command(master, "--resume", str(run_dir), "--json"), cwd=tmp_path,
                             env=env, capture_output=True, text=True, timeout=900)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    got = json.loads(resumed.stdout)
    # the resumed run's cluster levels ran on the worker left
    assert [lv["depth"] for lv in got["spark"]["levels"] if lv["engine"] == "spark"
            and lv["depth"] > depth] == list(range(depth + 1, LAST_ON_THE_CLUSTER + 1)), got[
                "spark"]["levels"]
    want = json.loads(local.communicate(timeout=300)[0])
    keys = ("verdict", "distinct_states", "states_generated", "depth")
    assert [got[k] for k in keys] == [want[k] for k in keys] and want["distinct_states"] == 835
