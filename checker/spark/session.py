"""The Spark session and its environment: PySpark and Java present, task retries on local masters,
the project's packages shipped to a real cluster, the storage level of every persisted RDD."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import sys
import zipfile
from collections.abc import MutableMapping
from typing import Any

from spec.errors import EnvironmentMissingError

_PACKAGES = ("spec", "checker", "invariants", "traces")


def check_environment() -> None:
    """Raise ``EnvironmentMissingError`` naming the fix when PySpark or Java is missing."""
    if importlib.util.find_spec("pyspark") is None:
        raise EnvironmentMissingError(
            "the spark engine needs PySpark, which is not installed: "
            "run python3 -m pip install 'pyspark>=3.4' (or pip install -e '.[spark]')"
        )
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        java = os.path.join(java_home, "bin", "java")
        if not os.access(java, os.X_OK):
            raise EnvironmentMissingError(
                f"the spark engine needs Java 17, but JAVA_HOME={java_home} has no bin/java: "
                "point JAVA_HOME at a Java 17 installation or install one (e.g. apt-get install openjdk-17-jre-headless)"
            )
    elif shutil.which("java") is None:
        raise EnvironmentMissingError(
            "the spark engine needs Java 17, which was not found (no java on PATH and JAVA_HOME unset): "
            "install Java 17 (e.g. apt-get install openjdk-17-jre-headless) or set JAVA_HOME"
        )


def with_task_retries(master: str, attempts: int = 4) -> str:
    """``local`` / ``local[N]`` / ``local[*]`` -> ``local[N,attempts]``: local Spark retries failed tasks too."""
    if master == "local":
        return f"local[1,{attempts}]"
    match = re.fullmatch(r"local\[(\d+|\*)\]", master)
    return f"local[{match.group(1)},{attempts}]" if match else master


def prepare_environment(master: str, env: MutableMapping[str, str]) -> None:
    """The environment a session started by kmc (not by spark-submit) gives Spark, in ``env``.

    * Local masters: the executors are this machine's Python workers, so they run the driver's
      interpreter. On a cluster they run the interpreter the cluster configures
      (``spark.pyspark.python``, or ``PYSPARK_PYTHON`` in its ``spark-env.sh``), never a path of
      the driver's machine.
    * A master on this machine (``local...``, ``spark://127.0.0.1``) binds to the loopback
      interface: no ``SPARK_LOCAL_IP`` to set by hand, no warning about the host name.
    * The project's packages are importable by local Python workers (a cluster gets them shipped).
    A value the user has set is kept.
    """
    if master.startswith("local"):
        env.setdefault("PYSPARK_PYTHON", sys.executable)
    if on_loopback(master):
        env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    root = _project_root()
    paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    if root not in paths:
        env["PYTHONPATH"] = os.pathsep.join([root, *paths])


def on_loopback(master: str) -> bool:
    """True for an embedded master (``local...``) or a cluster whose master is on 127.0.0.1."""
    if master.startswith("local"):
        return True
    match = re.match(r"spark://([^:/]+)", master)
    return bool(match) and match.group(1) in ("127.0.0.1", "localhost")


def _project_root() -> str:
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def spark_session(master: str = "local[*]", memory: str = "4g", ui: bool = False) -> tuple[Any, bool]:
    """The active SparkSession, or a new one for ``master``; True when this call created it.

    ``ui``: keep Spark's web UI and its REST API (the benchmark reads the stages' metrics there).

    Under ``spark-submit`` the master and the rest of the configuration come from spark-submit.
    """
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active, False
    submitted = "PYSPARK_GATEWAY_PORT" in os.environ  # launched by spark-submit or a pyspark shell
    builder = SparkSession.builder.appName("kmc")
    if not submitted:
        prepare_environment(master, os.environ)
        builder = (
            builder.master(with_task_retries(master))
            .config("spark.ui.enabled", "true" if ui else "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.driver.memory", memory)
            .config("spark.sql.shuffle.partitions", "8")
            # the Arrow transport checkpoints every level: the files of a level no longer referenced go
            .config("spark.cleaner.referenceTracking.cleanCheckpoints", "true")
        )
        if master.startswith("local") and not os.environ.get("KMC_SPARK_FULL_JIT"):
            # A local master's executors are this JVM, and a search makes a few dozen short jobs of
            # new query plans: HotSpot's optimizing compiler (C2) then spends more CPU compiling
            # Spark's code than the jobs spend running it (22 of 40 JVM CPU seconds on Kafka 2.1.0,
            # 612,834 states); its quick compiler alone costs a little speed and saves most of that
            # (bench/NOTES.md, "Issue 13 item 4: third round"). KMC_SPARK_FULL_JIT=1 keeps C2.
            builder = builder.config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1")
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session, True


def _ship_packages(sc: Any, directory: str) -> None:
    """Send this project's packages to the executors of a real cluster (local masters import them directly)."""
    root = _project_root()
    target = os.path.join(directory, "kmc-packages.zip")
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as zf:
        for package in _PACKAGES:
            for folder, _dirs, files in os.walk(os.path.join(root, package)):
                for name in files:
                    if name.endswith(".py") or name.endswith(".json"):
                        full = os.path.join(folder, name)
                        zf.write(full, os.path.relpath(full, root))
    sc.addPyFile(target)


def storage_level() -> Any:
    from pyspark import StorageLevel

    return StorageLevel.MEMORY_AND_DISK
