"""The Spark driver's class archive (``checker.spark.class_archive``): which Java options a driver
gets, when an archive is trusted, one maker at a time, and what a run that ends keeps. The fast
cases start no JVM (a stand-in process writes the archive); the slow one reads a real run's
``--json``."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from checker.spark import class_archive as ca
from spec.errors import UsageError


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv(ca.VARIABLE, raising=False)
    monkeypatch.setattr(ca, "_maker", None)
    monkeypatch.setattr(ca, "_completed", False)
    spark_home = tmp_path / "spark"
    (spark_home / "jars").mkdir(parents=True)
    (spark_home / "jars" / "spark-core.jar").write_bytes(b"jar")
    java = tmp_path / "java"
    java.write_bytes(b"java")
    return str(java), str(spark_home)


def _archive(java: str, spark_home: str, data: bytes = b"classes") -> str:
    """An archive as a maker keeps it: named by the key and by its bytes' digest."""
    key = ca.archive_key(java, spark_home, 1.0)
    digest = hashlib.sha256(data).hexdigest()[:16]
    path = os.path.join(ca.archive_dir(), f"driver-{key}-{digest}.jsa")
    os.makedirs(ca.archive_dir(), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
    os.chmod(path, 0o400)
    return path


def test_heap_sizes_as_spark_writes_them():
    assert [ca.memory_gib(m) for m in ("4g", "512m", "1t", "2G", "x")] == [4, 0.5, 1024, 2, 0]


def test_the_key_follows_the_java_the_jars_and_the_pointer_width(cache):
    java, spark_home = cache
    key = ca.archive_key(java, spark_home, 4)
    assert ca.archive_key(java, spark_home, 8) == key  # compressed pointers either way
    assert ca.archive_key(java, spark_home, 64) != key
    with open(os.path.join(spark_home, "jars", "more.jar"), "wb") as f:
        f.write(b"x")
    assert ca.archive_key(java, spark_home, 4) != key
    assert ca.archive_key(java + "-other", spark_home, 4) != key


def test_off_gives_no_option_and_a_setting_it_does_not_know_is_one_line(cache, monkeypatch):
    monkeypatch.setenv(ca.VARIABLE, "OFF")
    assert ca.driver_options(*cache, 1.0) == [] and ca.state == "off"
    monkeypatch.setenv(ca.VARIABLE, "sometimes")
    with pytest.raises(UsageError, match="^KMC_SPARK_CLASS_ARCHIVE must be on or off, not "
                                         "'sometimes'$"):
        ca.driver_options(*cache, 1.0)


def test_a_kept_archive_is_used_and_one_maker_at_a_time(cache):
    java, spark_home = cache
    making = ca.driver_options(java, spark_home, 1.0)
    assert ca.state == "making" and making[0].startswith("-XX:ArchiveClassesAtExit=")
    assert making[0].endswith(f".{os.getpid()}.part") and set(ca.QUIET_LOG) <= set(making)
    ca._maker = None  # a second run of this user while the first makes it: the lock is held
    assert ca.driver_options(java, spark_home, 1.0) == list(ca.QUIET_LOG) and ca.state == "busy"
    path = _archive(java, spark_home)
    assert ca.driver_options(java, spark_home, 1.0)[0] == f"-XX:SharedArchiveFile={path}"
    assert ca.state == "used" and ca.kept(java, spark_home, 1.0) == path


def test_a_stale_lock_is_taken_over(cache):
    java, spark_home = cache
    os.makedirs(ca.archive_dir())
    lock = os.path.join(ca.archive_dir(), f"driver-{ca.archive_key(java, spark_home, 1.0)}.lock")
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    with open(lock, "w") as f:
        f.write(dead)
    ca.driver_options(java, spark_home, 1.0)
    assert ca.state == "making" and open(lock).read() == str(os.getpid())


@pytest.mark.parametrize("spoil", ["truncated", "others may write", "a link"])
def test_an_archive_that_is_not_its_digest_or_not_private_is_never_given_to_a_jvm(cache, spoil):
    """A truncated archive crashes HotSpot (SIGBUS): its bytes must be its name's digest; a file
    others may write, or a link, is not trusted either."""
    java, spark_home = cache
    path = _archive(java, spark_home)
    if spoil == "truncated":
        os.chmod(path, 0o600)
        with open(path, "r+b") as f:
            f.truncate(3)
    elif spoil == "others may write":
        os.chmod(path, 0o666)
    else:
        real = path + ".real"
        os.rename(path, real)
        os.symlink(real, path)
    options = ca.driver_options(java, spark_home, 1.0)
    assert ca.state == "making" and not any("SharedArchiveFile" in o for o in options)
    assert not os.path.lexists(path)  # removed: made again by this run


class _JVM:
    """A stand-in for PySpark's gateway process: writes ``data`` to the archive's file as it
    exits (when ``writes``), with ``code``."""

    def __init__(self, part: str, data: bytes | None, code: int = 0):
        self.part, self.data, self.code, self.killed = part, data, code, False
        self.stdin = open(os.devnull, "wb")

    def wait(self, timeout=None):
        if self.data is not None and not self.killed:
            with open(self.part, "wb") as f:
                f.write(self.data)
        return -9 if self.killed else self.code

    def poll(self):
        return None

    def kill(self):
        self.killed = True


def _maker(cache, data: bytes | None, code: int = 0) -> tuple[_JVM, str]:
    options = ca.driver_options(*cache, 1.0)
    part = options[0].split("=", 1)[1]
    jvm = _JVM(part, data, code)
    ca.started(jvm)
    return jvm, part


def test_a_completed_run_keeps_its_archive_under_its_digest(cache):
    java, spark_home = cache
    _maker(cache, b"the classes")
    ca.run_completed()
    ca._keep()
    assert ca.state == "made"
    kept = ca.kept(java, spark_home, 1.0)
    assert kept.endswith(f"-{hashlib.sha256(b'the classes').hexdigest()[:16]}.jsa")
    assert oct(os.stat(kept).st_mode & 0o777) == "0o400"
    assert sorted(os.listdir(ca.archive_dir())) == [os.path.basename(kept)]  # no lock, no part


def test_a_run_cut_short_keeps_nothing_and_its_jvm_writes_nothing(cache):
    jvm, part = _maker(cache, b"the classes")
    ca._keep()  # no run_completed: an error or Ctrl-C
    assert jvm.killed and ca.state == "not kept" and os.listdir(ca.archive_dir()) == []


def test_a_failed_dump_is_remembered_and_not_tried_again(cache):
    _maker(cache, None, code=1)
    ca.run_completed()
    ca._keep()
    assert ca.state == "not kept"
    assert ca.driver_options(*cache, 1.0) == list(ca.QUIET_LOG) and ca.state == "failed"


def test_no_jvm_started_lets_the_lock_go(cache):
    ca.driver_options(*cache, 1.0)
    ca.started(None)
    assert os.listdir(ca.archive_dir()) == [] and ca._maker is None


def test_the_most_recently_used_archives_are_kept(cache, monkeypatch):
    java, spark_home = cache
    paths = []
    for n in range(3):
        path = _archive(java + str(n), spark_home, b"x" * n)
        os.utime(path, (1000 + n, 1000 + n))
        paths.append(path)
    ca._prune(ca.archive_dir())
    assert [os.path.exists(p) for p in paths] == [False, True, True]


@pytest.mark.slow
def test_a_run_after_the_first_maps_the_kept_archive(spark_class_archive, tmp_path):
    """The suite's first Spark run made the archive (tests/conftest.py); a later run's driver uses
    it and says so in --json and --verbose."""
    assert spark_class_archive is not None and os.path.exists(spark_class_archive)
    command = [sys.executable, "-m", "kmc", "check", "two-phase", "--const", "RM=3", "--engine",
               "spark", "--master", "local[2]", "--spark-threshold", "1", "--spark-driver-below",
               "0"]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    done = subprocess.run([*command, "--json"], cwd=tmp_path, capture_output=True, text=True,
                          env=env, timeout=300)
    result = json.loads(done.stdout)
    assert (result["spark"]["class_archive"], result["distinct_states"]) == ("used", 288)


def test_verbose_names_the_archives_state():
    from types import SimpleNamespace

    from rich.console import Console

    from kmc.cli import print_path

    console = Console(record=True, width=200)
    path = {"path": "readable", "reason": "--kernel off"}
    for state in ("used", "busy", None):
        spark = {"class_archive": state}
        print_path(console, SimpleNamespace(extra={"path": path, "spark": spark}))
    text = console.export_text()
    assert text.count("Spark driver's class archive:") == 2
    assert "class archive: used (its classes mapped, not loaded)" in text
    assert "class archive: none yet: another run is writing it" in text
