"""The spark engine names the fix when Java or PySpark is missing (exit code 69), before starting anything."""

import importlib.util

import pytest

from checker.cli import main
from checker.engines import EngineOptions
from checker.errors import EnvironmentMissingError, ExitCode
from checker.search import SearchOptions
from checker.spark_engine import check_environment, run_engine, with_task_retries
from spec.two_phase import TwoPhase


def test_missing_java_names_the_fix(monkeypatch, capsys):
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(EnvironmentMissingError) as info:
        run_engine(TwoPhase(3), SearchOptions(), EngineOptions())
    assert "Java 17" in str(info.value) and "openjdk-17-jre-headless" in str(info.value)
    assert info.value.code == ExitCode.ENVIRONMENT == 69
    assert main(["check", "two-phase", "--engine", "spark", "--quiet"]) == 69
    assert "Java 17" in capsys.readouterr().err


def test_java_home_without_java_names_the_fix(monkeypatch, tmp_path):
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    with pytest.raises(EnvironmentMissingError, match="JAVA_HOME"):
        check_environment()


def test_missing_pyspark_names_the_fix(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "pyspark" else real(name, *a))
    with pytest.raises(EnvironmentMissingError, match="pip install 'pyspark"):
        check_environment()


def test_local_masters_get_task_retries():
    assert with_task_retries("local[*]") == "local[*,4]"
    assert with_task_retries("local[2]") == "local[2,4]"
    assert with_task_retries("local") == "local[1,4]"
    assert with_task_retries("local[2,3]") == "local[2,3]"
    assert with_task_retries("spark://host:7077") == "spark://host:7077"
