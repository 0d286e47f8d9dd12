"""The spark engine on the compiled kernel (``checker.spark.kernel_step``): packed states on the
wire, the executors expanding with ``km_expand_batch``; the same counts, depth, verdict, queue and
the very same shortest counterexamples as the local engine on the readable model, stopping at the
first violation or not, with a deadlock, under ``--symmetry``. The executor side is checked against
the readable one without Spark in the fast tier (``tests/test_kernel_batch.py``); these start Spark
(the suite's one ``local[2,2]`` session, tests/conftest.py).
"""

from __future__ import annotations

import importlib.util
import shutil

import pytest

from checker.bfs import check
from checker.result import Verdict
from checker.search import SearchOptions
from invariants.registry import for_family
from tests.test_kernel import TLA_SMALL, model_of, needs_cc
from tests.test_spark_arrow import spark_run, summary

pytest.importorskip("pyspark")
pytestmark = [pytest.mark.spark, pytest.mark.slow, needs_cc,
              pytest.mark.skipif(shutil.which("java") is None, reason="needs Java")]


@pytest.fixture(scope="module")
def spark(spark_local):
    from checker.spark.arrow_step import arrow_available

    if importlib.util.find_spec("pyarrow") is None or not arrow_available():
        pytest.skip("the arrow transport needs PyArrow, pandas and PySpark 4 (pip install -e "
                    "'.[spark]')")
    return spark_local


CASES = [
    # (model, constants, search options, threshold: the local prefix's frontier below it, the
    # verdict)
    ("two-phase", {"RM": 3, "commit_guard": False},
     {"stop_at_first": False, "check_deadlock": True}, 0, Verdict.VIOLATED),
    ("two-phase", {"RM": 5}, {"symmetry": True, "check_deadlock": True}, 20, Verdict.HOLDS),
    # tla:Kip101 with every violation (threshold 30, every level past the prefix on the
    # executors): test_levels_on_the_driver_or_the_executors_are_the_same_search's first run
    ("tla:Kip320", TLA_SMALL, {}, 0, Verdict.HOLDS),
    # the search stops at a frontier it does not expand, whose states violate: KernelFrontierCheck
    # finds the first
    ("tla:Kip101", TLA_SMALL, {"max_depth": 12}, 30, Verdict.VIOLATED),
]


@pytest.mark.parametrize(("name", "constants", "options", "threshold", "verdict"), CASES,
                         ids=["two-phase-violated", "two-phase-symmetry", "Kip320",
                              "Kip101-depth-bound"])
@pytest.mark.usefixtures("spark")
def test_spark_on_the_kernel_is_the_local_engine(name, constants, options, threshold, verdict):
    model = model_of(name, constants)
    invariants = [inv for inv in for_family(model.family).values() if inv.default]
    reference = summary(check(model, SearchOptions(invariants=invariants, **options)))
    result = spark_run(model, SearchOptions(invariants=invariants, kernel="auto", **options),
                       threshold=threshold)
    assert result.extra["path"]["path"] == "kernel"
    assert any(level["engine"] == "spark" for level in result.extra["spark"]["levels"])
    assert summary(result) == reference
    assert reference["verdict"] is verdict


@pytest.mark.usefixtures("spark")
def test_kernel_off_and_the_blocks_transport_run_the_readable_model():
    model = model_of("two-phase", {"RM": 3})
    # levels 6 to 11 on Spark (a frontier of 30 states or more), the first five local: each level
    # on Spark is a few jobs
    off = spark_run(model, SearchOptions(kernel="off"), threshold=30)
    assert off.extra["path"] == {"path": "readable", "reason": "--kernel off"}
    blocks = spark_run(model, SearchOptions(kernel="auto"), transport="blocks", threshold=30)
    assert "blocks transport" in blocks.extra["path"]["reason"]
    for run in (off, blocks):
        assert [lv["engine"] for lv in run.extra["spark"]["levels"]].count("spark") >= 5
    assert summary(off) == summary(blocks)
    # below the threshold the kernel path runs every level on the driver in C, Spark never starts
    below = spark_run(model, SearchOptions(kernel="auto"), threshold=10_000)
    assert below.extra["path"]["path"] == "kernel" and below.extra["spark"]["master"] is None
    assert {level["engine"] for level in below.extra["spark"]["levels"]} == {"driver"}
    assert summary(below) == summary(off)


REDUCED = [
    # (protocol, bounds, search options, threshold, verdict): --reduce dead on the executors'
    # batch expansion and on the packed prefix (issue 39's done-when configuration at two brokers,
    # its three-broker goal configuration to a depth, and a violation found through the reduction)
    ("2.1.0", {"brokers": 2, "records": 1, "crashes": 0}, {"symmetry": True}, 20, Verdict.HOLDS),
    ("2.1.0", {"brokers": 3, "records": 1, "crashes": 0}, {"symmetry": True, "max_depth": 11}, 50,
     Verdict.UNDETERMINED),
    ("0.10.2", {"brokers": 2, "records": 2, "epochs": 1, "crashes": 1, "acks": 1},
     {"symmetry": True, "stop_at_first": False}, 0, Verdict.VIOLATED),
]


@pytest.mark.parametrize(("protocol", "bounds", "options", "threshold", "verdict"), REDUCED,
                         ids=["2.1.0-brokers=2", "2.1.0-brokers=3-depth-11", "0.10.2-acks=1"])
@pytest.mark.usefixtures("spark")
def test_reduce_dead_on_the_kernel_is_the_local_engine(protocol, bounds, options, threshold,
                                                        verdict):
    """--reduce dead on Spark's kernel path: the readable local engine's counts, depth, verdict and
    counterexamples."""
    from spec.registry import build_model

    model = build_model("kafka", [f"{k}={v}" for k, v in bounds.items()], protocol=protocol)
    invariants = [inv for inv in for_family(model.family).values()
                  if inv.default and inv.holds is not None]  # the safety defaults
    reference = summary(check(model, SearchOptions(invariants=invariants, reduce="dead",
                                                   **options)))
    result = spark_run(model, SearchOptions(invariants=invariants, reduce="dead", kernel="auto",
                                            **options), threshold=threshold)
    assert result.extra["path"]["path"] == "kernel"
    assert any(level["engine"] == "spark" for level in result.extra["spark"]["levels"])
    assert summary(result) == reference
    assert reference["verdict"] is verdict


@pytest.mark.usefixtures("spark")
def test_a_run_on_the_kernel_killed_and_resumed_is_the_whole_run(tmp_path, capsys):
    """Issue 39's done-when configuration at two brokers with --checkpoint on the kernel path: the
    driver killed (SIGKILL to its process group, JVM included) after a Spark level committed, then
    --resume gives the readable local engine's counts and verdict. run.json names the kernel, its
    level files hold packed states; the same directory resumed with --kernel off is refused (exit
    65, one line)."""
    import json
    import os
    import signal
    import subprocess
    import sys
    import time

    import pyarrow.parquet as pq

    from kmc.cli import main
    from spec.registry import build_model

    bounds = ["brokers=2", "records=1", "crashes=0"]
    # the levels 11 to 21 (frontiers of 150 states or more) on Spark, the others on the driver in
    # C: 11 levels of Spark jobs, not the 24 from level 5 on; killed after level 11, the first
    command = ["check", "kafka", "--protocol", "2.1.0",
               *(x for b in bounds for x in ("--const", b)), "--symmetry", "--reduce", "dead",
               "--engine", "spark", "--master", "local[2]", "--spark-threshold", "150",
               "--spark-driver-below", "0", "--quiet"]
    run_dir = tmp_path / "run"
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    child = subprocess.Popen([sys.executable, "-m", "kmc", *command, "--checkpoint", str(run_dir)],
                             cwd=root, env={**os.environ, "PYTHONPATH": root},
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while child.poll() is None and time.monotonic() < deadline:
            try:
                if json.loads((run_dir / "run.json").read_text())["depth"] >= 11:
                    break
            except (OSError, ValueError):
                pass
            time.sleep(0.05)
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
        child.wait()
    saved = json.loads((run_dir / "run.json").read_text())
    assert saved["path"]["path"] == "kernel" and saved["depth"] < 28, saved["depth"]
    level = saved["levels"][-1]  # the frontier: a driver's earlier level has its pointers only
    states = pq.read_table(run_dir / "levels" / f"{level['depth']:04d}", columns=["state"])
    assert {len(raw) for raw in states["state"].to_pylist()} == {saved["path"]["state_bytes"]}

    capsys.readouterr()
    assert main([*command, "--kernel", "off", "--resume", str(run_dir)]) == 65
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "holds the states of the compiled kernel" in err, err
    assert main([*command, "--json", "--resume", str(run_dir)]) == 0
    resumed = json.loads(capsys.readouterr().out)
    # killed after a Spark level, Spark's levels ahead
    assert [lv["depth"] for lv in resumed["spark"]["levels"] if lv["engine"] == "spark"] == list(
        range(saved["depth"] + 1, 22)) and saved["depth"] >= 11, resumed["spark"]["levels"]
    model = build_model("kafka", bounds, protocol="2.1.0")
    invariants = [inv for inv in for_family("kafka").values()
                  if inv.default and inv.holds is not None]
    full = check(model, SearchOptions(invariants=invariants, symmetry=True, reduce="dead"))
    assert (resumed["distinct_states"], resumed["states_generated"], resumed["depth"],
            resumed["verdict"]) == (full.distinct_states, full.states_generated, full.depth,
                                    full.verdict.value)
    assert resumed["path"]["path"] == "kernel"


@pytest.mark.parametrize("packed", [True, False], ids=["blocks", "frames"])
@pytest.mark.usefixtures("spark")
def test_a_resume_rebuilds_the_prefixs_kernel_fingerprints(tmp_path, monkeypatch, packed):
    """A resumed run on the kernel path holds, as visited, the kernel's fingerprints of every state
    found so far, the local prefix's included: packed again on the driver (``packed_prefix``), since
    local.ckpt holds Python's. Compared with the kernel's fingerprints of the states of an
    independent breadth-first walk of the readable model to the run directory's depth; fails if the
    resume used local.ckpt's fingerprints or left the prefix out."""
    import json

    from checker import engines
    from checker.kernel import load
    from checker.kernel_batch import Shipment, batch_kernel
    from checker.spark import SparkBFS, SparkOptions
    from checker.spark import engine as spark_engine
    from spec.two_phase import TwoPhase

    model = TwoPhase(3)
    invariants = [inv for inv in for_family(model.family).values() if inv.default]
    run_dir = tmp_path / "run"
    spark_options = SparkOptions(master="local[2]", partitions=2, threshold=30, transport="arrow",
                                 driver_below=0,
                                 packed=packed)
    engines.run(model, SearchOptions(invariants=invariants, kernel="auto", max_depth=8,
                                     checkpoint_path=str(run_dir)), "spark", spark_options)
    saved = json.loads((run_dir / "run.json").read_text())
    assert saved["path"]["path"] == "kernel" and saved["depth"] == 8
    assert saved["local_distinct"] < saved["distinct"]  # a prefix, then levels on Spark

    seen, level = set(), list(model.init_states())
    for _ in range(saved["depth"]):
        seen.update(level)
        level = list(dict.fromkeys(s for state in level for _a, s in model.successors(state)
                                   if s not in seen))
    kernel = load(model.kernel())
    batch = batch_kernel(Shipment.of(kernel))
    want = set(batch.fingerprints(batch.rows(b"".join(kernel.spec.pack(s) for s in seen)))
               .tolist())
    assert len(want) == saved["distinct"]

    held = {}

    class Stop(Exception):
        pass

    def visited_then_stop(search, st):
        spark = search._spark
        if packed:
            held["fps"] = [fp for _q, (_v, fps) in spark.visited.collect() for fp in fps.tolist()]
        else:
            frames = [spark.visited, *spark.runs]
            held["fps"] = [row.fp for frame in frames for row in frame.select("fp").collect()]
        raise Stop

    monkeypatch.setattr(spark_engine, "run_levels", visited_then_stop)
    search = SparkBFS(model, SearchOptions(invariants=invariants, kernel="auto",
                                           resume_from=str(run_dir)), spark_options)
    with pytest.raises(Stop):
        search.run()
    assert len(held["fps"]) == len(want) and set(held["fps"]) == want


@pytest.mark.usefixtures("spark")
def test_levels_on_the_driver_or_the_executors_are_the_same_search(tmp_path, monkeypatch):
    """``--spark-driver-below``: every kernel level on the executors (0), every one on the driver
    (a billion), or the small ones on the driver (400: Kip101's frontier passes it at level 8 and
    falls below it at level 16, so the frontier moves to the executors and back) gives the local
    engine's counts, depth, verdict and every counterexample, stopping at the first violation or
    not. A run directory resumes across each switch (kip-320 at two brokers, whose crashes lead
    back to states many levels old): written to level 9 on the driver, resumed to level 19 (the
    executors read the driver's file and get its levels' visited fingerprints), then to the end
    (the driver collects their frontier and takes their levels' fingerprints). The driver expands
    a level in three threads here; a level cut between the threads at many small batches, and
    their merge's numbering, are tests/test_spark_driver_level.py's (a kernel of three states a
    batch)."""
    import checker.spark.driver_level
    from checker import engines
    from checker.spark import SparkOptions
    from spec.registry import build_model

    monkeypatch.setattr(checker.spark.driver_level, "driver_threads", lambda: 3)

    def where(result):
        return "".join(level["engine"][0] for level in result.extra["spark"]["levels"])

    model = model_of("tla:Kip101", TLA_SMALL)
    invariants = [inv for inv in for_family(model.family).values() if inv.default]
    for options, runs in (({"stop_at_first": False}, ((0, "ddd" + "s" * 15),
                                                      (10**9, "ddd" + "d" * 15),
                                                      (400, "ddd" + "d" * 4 + "s" * 8 + "d" * 3))),
                          ({}, ((400, "ddd" + "d" * 4 + "s" * 5),)),
                          # a frontier the search stops at, checked on the driver
                          ({"max_depth": 12}, ((10**9, "ddd" + "d" * 8),))):
        reference = summary(check(model, SearchOptions(invariants=invariants, **options)))
        assert reference["verdict"] is Verdict.VIOLATED
        for below, ran in runs:
            result = spark_run(model, SearchOptions(invariants=invariants, kernel="auto",
                                                    **options), threshold=30, driver_below=below)
            assert result.extra["path"]["path"] == "kernel"
            assert summary(result) == reference, (options, below)
            assert where(result) == ran, (options, below, where(result))

    model = build_model("kafka", ["brokers=2", "records=1", "crashes=1", "epochs=1"],
                        protocol="kip-320")
    invariants = [inv for inv in for_family("kafka").values()
                  if inv.default and inv.holds is not None]
    full = summary(check(model, SearchOptions(invariants=invariants)))
    run_dir = str(tmp_path / "run")
    spark_options = SparkOptions(master="local[2]", partitions=2, threshold=20, transport="arrow",
                                 driver_below=176)
    ran = ""
    for bound, resume in ((9, None), (19, run_dir), (None, run_dir)):
        result = engines.run(model, SearchOptions(invariants=invariants, kernel="auto",
                                                  max_depth=bound,
                                                  checkpoint_path=None if resume else run_dir,
                                                  resume_from=resume), "spark", spark_options)
        ran += where(result)
        if bound == 9:  # a level file the driver wrote is input too: its digest is checked
            import shutil
            from pathlib import Path

            from spec.errors import BadFileError

            spoiled = tmp_path / "spoiled"
            shutil.copytree(run_dir, spoiled)
            part = Path(spoiled, "levels", "0009", "part-00000.parquet")
            part.write_bytes(part.read_bytes()[:-100])
            with pytest.raises(BadFileError, match="files of level 9 .* are not the ones written"):
                engines.run(model, SearchOptions(invariants=invariants, kernel="auto",
                                                 resume_from=str(spoiled)), "spark",
                            spark_options)
    assert ran == "ddd" + "d" * 6 + "s" * 10 + "d" * 11, ran
    assert summary(result) == full
