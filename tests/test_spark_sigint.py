"""Starting Spark leaves the caller's Ctrl-C handler in place (``checker.spark.session``).

PySpark's ``SparkContext``, created in the main thread, installs a SIGINT handler of its own for the
life of the process. kmc handles Ctrl-C itself while Spark runs (``SparkInterrupt``), so the
session it starts puts the caller's handler back: a program calling kmc, and the level commits'
``safe_io.interrupts_deferred`` (which acts only under Python's default handler), keep theirs.
"""

from __future__ import annotations

import signal

import pytest

from checker.spark import session as spark_session_module


class _FakeSession:
    class sparkContext:  # noqa: N801 (PySpark's attribute name)
        @staticmethod
        def setLogLevel(level):  # noqa: N802 (PySpark's method name)
            pass


def _pyspark_like_create(*args, **kwargs):
    """What PySpark's ``SparkContext`` does on creation: install its own SIGINT handler."""
    def signal_handler(signum, frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, signal_handler)
    return _FakeSession()


@pytest.mark.parametrize("submitted", [False, True])
def test_a_session_kmc_starts_keeps_the_callers_sigint_handler(monkeypatch, submitted):
    pytest.importorskip("pyspark")
    from pyspark.sql import SparkSession

    # as in a process with no session yet (a test worker may hold the suite's ``spark_local``)
    monkeypatch.setattr(SparkSession, "getActiveSession", classmethod(lambda cls: None))
    class Builder:
        def appName(self, name):  # noqa: N802 (PySpark's method name)
            return self

        getOrCreate = staticmethod(_pyspark_like_create)  # noqa: N815

    monkeypatch.setattr(SparkSession, "builder", Builder())
    monkeypatch.setattr(spark_session_module, "_create", _pyspark_like_create)
    monkeypatch.setattr(spark_session_module, "prepare_environment", lambda master, env: None)
    if submitted:
        monkeypatch.setenv("PYSPARK_GATEWAY_PORT", "1")
    else:
        monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)

    def callers(signum, frame):
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, callers)
    try:
        _, created = spark_session_module.spark_session("local[2]")
        assert created
        assert signal.getsignal(signal.SIGINT) is callers
    finally:
        signal.signal(signal.SIGINT, previous)
