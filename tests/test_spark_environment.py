"""The spark engine names the fix when Java or PySpark is missing (exit code 69), before starting
anything."""

import importlib.util

import pytest

from checker.search import SearchOptions
from checker.spark import SparkOptions, check_environment, run_engine, with_task_retries
from kmc.cli import main
from spec.errors import EnvironmentMissingError, ExitCode
from spec.two_phase import TwoPhase


def test_missing_java_names_the_fix(monkeypatch, capsys):
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(EnvironmentMissingError) as info:
        run_engine(TwoPhase(3), SearchOptions(), SparkOptions())
    assert "Java 17" in str(info.value) and "openjdk-17-jre-headless" in str(info.value)
    assert info.value.code == ExitCode.ENVIRONMENT == 69
    assert main(["check", "two-phase", "--engine", "spark", "--quiet"]) == 69
    assert "Java 17" in capsys.readouterr().err
    # the swarm on Spark too
    assert main(["simulate", "two-phase", "--engine", "spark", "--walks", "3"]) == 69
    err = capsys.readouterr().err
    assert "Java 17" in err and len(err.strip().splitlines()) == 1


def test_java_home_without_java_names_the_fix(monkeypatch, tmp_path):
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    with pytest.raises(EnvironmentMissingError, match="JAVA_HOME"):
        check_environment()


def test_missing_pyspark_names_the_fix(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "pyspark"
                        else real(name, *a))
    with pytest.raises(EnvironmentMissingError, match="pip install 'pyspark"):
        check_environment()


def test_local_masters_get_task_retries():
    assert with_task_retries("local[*]") == "local[*,4]"
    assert with_task_retries("local[2]") == "local[2,4]"
    assert with_task_retries("local") == "local[1,4]"
    assert with_task_retries("local[2,3]") == "local[2,3]"
    assert with_task_retries("spark://host:7077") == "spark://host:7077"


def test_the_driver_takes_a_levels_keys_as_large_as_its_memory():
    """A level's keys come back as one result; Spark's default ``spark.driver.maxResultSize`` (1g)
    refused a level of about 22 M new states (48 bytes each) that the driver's memory holds."""
    from checker.spark.session import session_options

    assert (session_options("local[2]", "6g", ui=False, jvm_log=False)["spark.driver.maxResultSize"]
            == "6g")


@pytest.mark.parametrize("master, driver, executors", [
    ("local[2]", True, False),  # the executors are the driver's JVM
    ("spark://127.0.0.1:7077", True, True),  # a cluster on this machine
    ("spark://spark-master.example:7077", False, False),  # a real cluster's JVMs are its own
])
def test_jvms_on_this_machine_get_the_quick_compiler_alone(monkeypatch, master, driver, executors):
    """C1 alone (``-XX:TieredStopAtLevel=1``) for a local master and for a cluster on the loopback
    interface, driver and executors (bench/NOTES.md: the standalone tests' machine CPU 160-169 s
    with C2, 102 s without); ``KMC_SPARK_FULL_JIT=1`` keeps C2."""
    from checker.spark.session import session_options

    monkeypatch.delenv("KMC_SPARK_FULL_JIT", raising=False)
    options = session_options(master, "1g", ui=False, jvm_log=False)
    assert ("-XX:TieredStopAtLevel=1" in options["spark.driver.extraJavaOptions"]) is driver
    executor_options = options.get("spark.executor.extraJavaOptions")
    assert (executor_options == "-XX:TieredStopAtLevel=1") is executors
    monkeypatch.setenv("KMC_SPARK_FULL_JIT", "1")
    options = session_options(master, "1g", ui=False, jvm_log=False)
    assert "TieredStopAtLevel" not in str(options)


def test_executors_use_the_clusters_interpreter_and_loopback_needs_no_setting():
    from checker.spark.session import prepare_environment

    cluster: dict[str, str] = {}
    prepare_environment("spark://spark-master.example:7077", cluster)
    assert "PYSPARK_PYTHON" not in cluster and "SPARK_LOCAL_IP" not in cluster
    local: dict[str, str] = {}
    prepare_environment("local[2]", local)
    assert local["PYSPARK_PYTHON"] and local["SPARK_LOCAL_IP"] == "127.0.0.1"
    on_this_machine: dict[str, str] = {}
    prepare_environment("spark://127.0.0.1:7077", on_this_machine)
    assert ("PYSPARK_PYTHON" not in on_this_machine and on_this_machine["SPARK_LOCAL_IP"]
            == "127.0.0.1")
    chosen = {"PYSPARK_PYTHON": "/opt/python/bin/python3", "SPARK_LOCAL_IP": "10.0.0.5"}
    prepare_environment("local[2]", chosen)
    assert (chosen["PYSPARK_PYTHON"] == "/opt/python/bin/python3" and chosen["SPARK_LOCAL_IP"]
            == "10.0.0.5")


def _spark_installed() -> bool:
    try:
        check_environment()
    except EnvironmentMissingError:
        return False
    return True


@pytest.mark.skipif(not _spark_installed(), reason="needs PySpark and Java")
def test_below_the_threshold_the_run_says_it_stays_on_the_driver(capsys):
    result = run_engine(TwoPhase(4), SearchOptions(), SparkOptions(master="local[2]"))
    assert result.distinct_states == 1568
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1
    assert "ran on the driver" in lines[0] and "--spark-threshold 10,000" in lines[0]
    assert result.extra["spark"]["driver_only"] == lines[0]


# -- the driver JVM's stderr: kmc's lines only, unless --verbose -----------------------------------

def test_the_jvms_start_up_banner_is_dropped_and_its_errors_kept():
    """``_forward_jvm_stderr`` copies the JVM's stderr line by line but the banner no log level
    turns off (the Java runtime's notice of the incubating module Spark's launcher adds), in order,
    bytes as they are."""
    import io

    from checker.spark.session import _forward_jvm_stderr

    source = io.BytesIO(b"WARNING: Using incubator modules: jdk.incubator.vector\n"
                        b"26/12/01 23:25:00 ERROR Executor: Exception in task 0.0\n"
                        b"\xff not UTF-8\n")
    target = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    _forward_jvm_stderr(source, target)
    assert (target.buffer.getvalue() == b"26/12/01 23:25:00 ERROR Executor: Exception in task "
                                        b"0.0\n\xff not UTF-8\n")


@pytest.mark.slow  # two kmc processes, each with its own JVM (the levels past 54 states on Spark)
@pytest.mark.spark
@pytest.mark.skipif(not _spark_installed(), reason="needs PySpark and Java")
def test_a_spark_run_prints_only_kmcs_lines_unless_verbose():
    """A run on Spark printed the JVM's banner on stderr (the incubator module's warning, Spark's
    default log profile and level, NativeCodeLoader's warning); now stderr is empty with --quiet,
    and --verbose shows them."""
    import os
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    command = [sys.executable, "-m", "kmc", "check", "two-phase", "--const", "RM=3", "--engine",
               "spark", "--master", "local[1]", "--spark-threshold", "54",
               "--spark-driver-below", "0", "--quiet"]
    env = {**os.environ, "PYTHONPATH": root}
    # side by side: two JVMs' start-ups overlap (their waits, not their CPU)
    runs = [subprocess.Popen(argv, cwd=root, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
            for argv in (command, [*command, "--verbose"])]
    try:
        (quiet_out, quiet_err), (_, verbose_err) = [run.communicate(timeout=600) for run in runs]
    finally:
        for run in runs:
            if run.poll() is None:
                run.kill()
                run.communicate()
    assert runs[0].returncode == 0 and quiet_err == "", quiet_err
    assert "288 distinct states" in quiet_out, quiet_out
    assert runs[1].returncode == 0, verbose_err
    assert "Using incubator modules" in verbose_err and "log level" in verbose_err, verbose_err
