"""Spark's kernel path on the driver alone (``checker.spark.driver_level``), which needs no JVM: the
search starts in C at the first level, a run whose levels all stay below ``--spark-driver-below``
starts no Spark application, and its run directory gets the driver's levels every
``--checkpoint-every`` seconds and when the search ends, each level's parent pointers and only the
frontier's states. Resumed runs across the driver and the executors are in
tests/test_spark_kernel.py (slow)."""

from __future__ import annotations

import importlib.util
import json
import shutil

import pyarrow.parquet as pq
import pytest

from checker.bfs import check
from checker.search import SearchOptions
from invariants.registry import for_family
from spec.registry import build_model
from tests.test_kernel import needs_cc

pytest.importorskip("pyspark")
pytestmark = [needs_cc, pytest.mark.skipif(shutil.which("java") is None, reason="needs Java"),
              pytest.mark.skipif(importlib.util.find_spec("pandas") is None,
                                 reason="the arrow transport needs pandas")]

BOUNDS = ["brokers=2", "records=1", "crashes=1", "epochs=1"]


def driver_run(tmp_path, monkeypatch, **options):
    """kip-320 at two brokers (3,623 states, depth 30) on Spark local[2], every level on the
    driver, stopped at depth 12 with a run directory; (the result, its run.json, how many times
    run.json was written)."""
    from checker.spark import SparkOptions, run_engine
    from checker.spark.rundir import RunDir

    writes = []
    write_bytes = RunDir.write_bytes

    def counted(self, name, data):
        writes.append(name)
        write_bytes(self, name, data)

    monkeypatch.setattr(RunDir, "write_bytes", counted)
    model = build_model("kafka", BOUNDS, protocol="kip-320")
    invariants = [inv for inv in for_family("kafka").values()
                  if inv.default and inv.holds is not None]
    run_dir = tmp_path / "run"
    result = run_engine(model, SearchOptions(invariants=invariants, kernel="auto", max_depth=12,
                                             checkpoint_path=str(run_dir), **options),
                        SparkOptions(master="local[2]", transport="arrow"))
    reference = check(model, SearchOptions(invariants=invariants, max_depth=12))
    assert (result.distinct_states, result.states_generated, result.depth, result.queue) == (
        reference.distinct_states, reference.states_generated, reference.depth, reference.queue)
    return result, json.loads((run_dir / "run.json").read_text()), writes.count("run.json")


def test_a_run_on_the_driver_starts_no_spark_and_writes_the_frontiers_states_only(tmp_path,
                                                                                  monkeypatch):
    result, saved, commits = driver_run(tmp_path, monkeypatch)
    assert result.extra["path"]["path"] == "kernel"
    assert result.extra["spark"]["master"] is None  # no Spark application, no JVM
    assert {level["engine"] for level in result.extra["spark"]["levels"]} == {"driver"}
    assert commits == 1  # at the end: --checkpoint-every (300 s) never came
    assert saved["depth"] == 12 and saved["frontier_size"] == result.queue
    widths = {}
    for level in saved["levels"][1:]:  # the first is the local prefix's (local.ckpt)
        table = pq.read_table(level["path"])
        assert table.num_rows == level["count"]
        widths[level["depth"]] = {len(value) for value in table.column("state").to_pylist()}
    assert widths.pop(12) == {result.extra["path"]["state_bytes"]}  # the frontier, resumed from
    assert set(widths) == set(range(2, 12)) and all(w == {0} for w in widths.values())


@pytest.mark.parametrize("master", ["local[x]", "local[0]", "local[2", "locally"])
def test_a_malformed_local_master_is_refused_in_one_line(master):
    from checker.spark import SparkOptions
    from spec.errors import UsageError

    with pytest.raises(UsageError, match="a local master is local, local"):
        SparkOptions(master=master)
    SparkOptions(master="local[2,4]")  # well formed: no JVM needed to tell


def test_checkpoint_every_zero_writes_run_json_after_every_level(tmp_path, monkeypatch):
    _result, saved, commits = driver_run(tmp_path, monkeypatch, checkpoint_every=0)
    assert commits == 11 and saved["depth"] == 12  # levels 2 to 12
