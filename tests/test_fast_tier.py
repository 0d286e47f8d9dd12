"""The fast tier (``python3 -m pytest -m "not slow"``) covers every module of the project: each
module under ``spec/``, ``checker/``, ``invariants/``, ``traces/`` and ``kmc/`` is imported by the
time the tier ends.

``test_every_module_is_imported_by_the_tier`` runs last (tests/conftest.py puts it there) and looks
at this process's ``sys.modules``: the modules the collected test files import and those the tests
import as they run. Under ``pytest -n N`` (pytest-xdist) each worker runs a share of the tests, so
the controller does the check instead: every worker hands it the project modules it imported, and a
whole tier whose workers together miss a module fails the run with the same message
(tests/conftest.py). ``kmc/__main__.py`` (``python -m kmc``) runs only in the child processes of the
command-line tests (tests/test_cli_habits.py and others); a test here imports it in this process. It
checks the whole tier only: a run of some files or some tests (``-k``, ``--lf``, a path) skips it.
Without PySpark or Java the Spark tests are skipped, and the ``checker.spark`` modules are not asked
for.
"""

from __future__ import annotations

import importlib
import importlib.util
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("spec", "checker", "invariants", "traces", "kmc")


def project_modules(root: Path = ROOT) -> list[str]:
    """The dotted name of every module (``.py`` file) under the project's packages, sorted."""
    names = []
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return sorted(names)


def not_imported(modules: list[str], loaded: set[str], spark: bool) -> list[str]:
    """The modules of ``modules`` missing from ``loaded``; without Spark (no PySpark or no Java) the
    ``checker.spark`` modules are not asked for."""
    return [m for m in modules if m not in loaded and (spark or not m.startswith("checker.spark"))]


def spark_available() -> bool:
    return importlib.util.find_spec("pyspark") is not None and shutil.which("java") is not None


def whole_tier(config: pytest.Config) -> bool:
    """True when this run is a whole tier, the fast one (``-m "not slow"``) or the whole suite: no
    other marker expression, and no test chosen or left out by name, path, keyword or last
    failures."""
    option = config.option
    if option.markexpr.strip() not in ("", "not slow"):
        return False
    if option.keyword or getattr(option, "lf", False) or getattr(option, "deselect", None):
        return False
    if getattr(option, "ignore", None) or getattr(option, "ignore_glob", None):
        return False
    tests = ROOT / "tests"
    return all((config.invocation_params.dir / arg).resolve() in (ROOT, tests)
               for arg in config.args)


def test_the_module_list_is_every_file_and_a_missing_module_is_named(tmp_path):
    (tmp_path / "spec" / "kafka").mkdir(parents=True)
    for package in PACKAGES[1:]:
        (tmp_path / package).mkdir()
    for name in ("spec/__init__.py", "spec/kafka/__init__.py", "spec/kafka/log.py",
                 "checker/__main__.py", "checker/spark/engine.py", "traces/io.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    modules = project_modules(tmp_path)
    assert (modules == ["checker.__main__", "checker.spark.engine", "spec", "spec.kafka",
                        "spec.kafka.log", "traces.io"])
    loaded = {"spec", "spec.kafka", "checker.__main__", "traces.io"}
    assert not_imported(modules, loaded, spark=True) == ["checker.spark.engine", "spec.kafka.log"]
    assert not_imported(modules, loaded, spark=False) == ["spec.kafka.log"]
    assert len(project_modules()) > 90 and "spec.kafka.model" in project_modules()


def test_python_dash_m_kmc_imports_without_running():
    """``python -m kmc`` is run in child processes; its module is imported here so that the tier
    covers it."""
    module = importlib.import_module("kmc.__main__")
    assert module.entry.__module__ == "kmc.cli"


def missing_message(missing: list[str]) -> str:
    return (f"no fast test imports {', '.join(missing)}: add one, or take a test of it out of the "
            "slow tier")


def test_every_module_is_imported_by_the_tier(request):
    if not whole_tier(request.config):
        pytest.skip("checks a whole tier (python3 -m pytest -m 'not slow'), not a choice of tests")
    if hasattr(request.config, "workeroutput"):
        pytest.skip("a worker of pytest -n sees its share of the tests: the controller checks the "
                    "workers' modules together (tests/conftest.py, pytest_sessionfinish)")
    missing = not_imported(project_modules(), set(sys.modules), spark_available())
    assert not missing, missing_message(missing)


def test_no_fast_test_starts_a_jvm(request):
    """The fast tier starts no Spark JVM (about 15 s of CPU, a quarter of the tier's Spark share):
    a test on the suite's SparkSession (``spark_local``, tests/conftest.py) is slow; the fast tier
    proves the Spark engine on the driver's path, which needs none (tests/test_spark_engine.py's
    seeded bug on the driver, tests/test_spark_driver_only.py, tests/test_simulate.py's swarm
    waves). Looks at the tests this run collected."""
    fast = [item.nodeid for item in request.session.items
            if "spark_local" in getattr(item, "fixturenames", ())
            and item.get_closest_marker("slow") is None]
    assert not fast, f"fast tests that start Spark's JVM (mark them slow): {fast}"
