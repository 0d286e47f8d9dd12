"""Fixtures shared by the whole suite.

``spark_local`` is the one SparkSession (``local[2,2]``: two cores, a failed task tried twice) that every
in-process Spark test uses: a JVM starts once a suite run, not once a module. Tests that start kmc in a
subprocess get a JVM of their own, as a user's run does.
"""

from __future__ import annotations

import shutil

import pytest


@pytest.fixture(scope="session")
def spark_local():
    pytest.importorskip("pyspark")
    if shutil.which("java") is None:
        pytest.skip("needs Java")
    from checker.spark import spark_session

    session, created = spark_session("local[2,2]", memory="1g")
    yield session
    if created:
        session.stop()


@pytest.fixture(scope="module")
def explorer_server():
    """A ``kmc explore`` server on a free loopback port, serving in a thread for one test module (the server tests
    and the browser tests)."""
    import threading

    from traces.explore.server import ExplorerServer

    srv = ExplorerServer(("127.0.0.1", 0), max_states=50_000)
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield srv
    srv.stop_run()
    srv.shutdown()
    srv.server_close()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The tier's module check (tests/test_fast_tier.py) runs after every other test: it reads what they imported."""
    last = [item for item in items if item.name == "test_every_module_is_imported_by_the_tier"]
    items[:] = [item for item in items if item not in last] + last
