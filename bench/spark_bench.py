"""Local engine against Spark local[1] and local[2] on one configuration, measured in one run.

    python3 bench/spark_bench.py                      # two-phase RM=8: 1,745,408 distinct states
    python3 bench/spark_bench.py --const RM=7 --masters 'local[2]'
    python3 bench/spark_bench.py --model kafka --protocol 2.1.0 --const brokers=3 --const records=1 \
        --const epochs=1 --const crashes=0 --masters 'local[2]' --transports arrow,blocks
    python3 bench/spark_bench.py --json out.json
    python3 bench/spark_bench.py --transports arrow,arrow+checkpoint   # also with a run directory (resumable)
    python3 bench/spark_bench.py --const RM=7 --masters 'local[2]' --transports arrow,arrow+kernel --local-kernel
        # the compiled kernel (checker.spark.kernel_step) on the executors, and on the local engine
    python3 bench/spark_bench.py --model kafka --protocol kip-320 --invariant log-matching \
        --const brokers=3 --const records=1 --const epochs=1 --const crashes=1 --masters 'local[2]' \
        --skip-local --local-kernel --transports arrow+kernel,arrow+kernel+checkpoint
        # issue 39's configuration: Spark local[2] on the kernel, with and without a run directory,
        # beside the local process on the kernel (the ratios: its wall and CPU over Spark's); with
        # --no-prestart, Spark started as the engine starts it (here: never, every level on the driver)

Besides wall seconds it reports CPU seconds of the whole process tree (the driver, Spark's JVM and
its Python workers, read from /proc on Linux): on a shared machine the wall-clock ratio depends
on the other jobs, the CPU seconds much less.

Each engine checks the same model with the same invariants; the counts must be identical (the
script fails otherwise). For the Spark runs it reports where the time goes, summed over the levels
run on Spark: the wall time of job 1 (expand, shuffle, dedup, invariants) and of the indexing and
writing of large levels, the executor seconds spent expanding states, merging candidates and
removing visited ones, and checking invariants, plus the per-level fixed cost (an empty two-stage
job, the price every level pays however small).
"""  # noqa: E501

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import sys
import tempfile
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from checker.bfs import check  # noqa: E402
from checker.invariant import SAFETY  # noqa: E402
from checker.search import SearchOptions  # noqa: E402
from checker.spark import SparkOptions  # noqa: E402
from checker.spark.engine import DEFAULT_DRIVER_BELOW  # noqa: E402
from invariants.registry import for_family  # noqa: E402
from spec.registry import build_model  # noqa: E402


def empty_level_cost(sc: Any, partitions: int, repeats: int = 5) -> float:
    """Wall time of a job shaped like a level (a map, a shuffle, a reduce) on almost no data."""
    rdd = sc.parallelize(range(partitions), partitions).map(lambda x: (x, x))
    rdd.partitionBy(partitions).mapPartitions(lambda it: [sum(1 for _ in it)]).collect()  # warm up
    started = time.monotonic()
    for _ in range(repeats):
        rdd.partitionBy(partitions).mapPartitions(lambda it: [sum(1 for _ in it)]).collect()
    return (time.monotonic() - started) / repeats


def tree_cpu_seconds() -> float:
    """CPU seconds (user + system) of this process and every live descendant, plus those reaped."""
    return sum(tree_cpu_by_kind().values())


def _kind(pid: int, me: int) -> str:
    """driver (this process), jvm (Spark's JVM) or python workers (PySpark's daemon and its
    workers)."""
    if pid == me:
        return "driver"
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            command = f.read()
    except OSError:
        return "other"
    if b"java" in command.split(b"\0")[0]:
        return "jvm"
    return "python workers" if b"pyspark" in command else "other"


def tree_cpu_by_kind() -> dict[str, float]:
    """``tree_cpu_seconds`` by kind of process (``_kind``); a reaped process counts with its
    parent."""
    tick = os.sysconf("SC_CLK_TCK")
    parents: dict[int, int] = {}
    times: dict[int, float] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(entry)] = int(fields[1])
        times[int(entry)] = sum(int(v) for v in fields[11:15]) / tick  # utime stime cutime cstime
    me = os.getpid()
    kinds: dict[str, float] = {}
    for pid in times:
        at = pid
        while at and at != me and at in parents:
            at = parents[at]
        if at == me:
            kind = _kind(pid, me)
            kinds[kind] = kinds.get(kind, 0.0) + times[pid]
    return kinds


def stage_profile(sc: Any) -> dict[str, dict[str, float]]:
    """The completed stages' metrics from Spark's REST API, summed per kind of step: the job
    description's step ("expand", "keys", "merge visited") and the stage's side of its shuffle
    ("map": writes a shuffle, "reduce": reads one)."""
    import urllib.request
    from datetime import datetime

    def moment(text: str) -> float:
        return datetime.strptime(text.replace("GMT", "+0000"), "%Y-%m-%dT%H:%M:%S.%f%z").timestamp()

    url = f"{sc.uiWebUrl}/api/v1/applications/{sc.applicationId}/stages?status=complete"
    # Spark's own UI on this machine
    with urllib.request.urlopen(url,  # noqa: S310
                                timeout=60) as response:
        stages = json.load(response)
    kinds: dict[str, dict[str, float]] = {}
    for stage in stages:
        description = stage.get("description") or ""
        if not description.startswith("kmc level"):
            continue
        step = description.split(":", 1)[1].strip()
        side = ("map" if stage.get("shuffleWriteBytes", 0)
                else ("reduce" if stage.get("shuffleReadBytes", 0) else "scan"))
        row = kinds.setdefault(f"{step} ({side})",
                               {"stages": 0, "wall": 0.0, "run": 0.0, "cpu": 0.0, "gc": 0.0,
                                 "shuffle_write_mb": 0.0, "shuffle_write_records": 0,
                                 "spill_mb": 0.0})
        row["stages"] += 1
        if stage.get("submissionTime") and stage.get("completionTime"):
            row["wall"] += moment(stage["completionTime"]) - moment(stage["submissionTime"])
        row["run"] += stage.get("executorRunTime", 0) / 1e3
        row["cpu"] += stage.get("executorCpuTime", 0) / 1e9
        row["gc"] += stage.get("jvmGcTime", 0) / 1e3
        row["shuffle_write_mb"] += stage.get("shuffleWriteBytes", 0) / 1e6
        row["shuffle_write_records"] += stage.get("shuffleWriteRecords", 0)
        row["spill_mb"] += stage.get("diskBytesSpilled", 0) / 1e6
    return kinds


def start_session(master: str, stages: bool) -> float:
    """Start Spark (or take the running session) and its Python workers, the engine imported in
    them; the wall seconds it took."""
    from checker.spark import spark_session

    started = time.monotonic()
    session, _ = spark_session(master, ui=stages)
    sc = session.sparkContext
    warm = max(2, 2 * sc.defaultParallelism)
    sc.parallelize(range(4 * warm), warm).map(lambda x: __import__("checker.spark") and x).count()
    return time.monotonic() - started


def run_spark(model: Any, options: SearchOptions, master: str, threshold: int, partitions: int
              | None,
              transport: str, stages: bool = False,
              driver_below: int = DEFAULT_DRIVER_BELOW, prestart: bool = True) -> dict[str, Any]:
    """One Spark run; ``prestart``: Spark and its Python workers started before it (their start
    not counted), else as the engine starts them (a run whose levels all stay on the driver
    starts no JVM; one that reaches the executors counts their start)."""
    from checker.spark import run_engine

    startup = start_session(master, stages) if prestart else 0.0
    name = transport
    transport, *variants = transport.split("+")
    run_dir = tempfile.mkdtemp(prefix="kmc-bench-run-") if "checkpoint" in variants else None
    # +kernel: the executors expand packed states with the compiled kernel, in blocks
    # (``packed_step``); +frames: in the arrow transport's DataFrames (``kernel_step``); else the
    # readable model
    kernel = "kernel" in variants or "frames" in variants
    options = dataclasses.replace(options, kernel="on" if kernel else "off")
    # a resumable run: every level written to the run directory, run.json after each
    if run_dir is not None:
        options = dataclasses.replace(options, checkpoint_path=os.path.join(run_dir, "run"))
    spark_options = SparkOptions(master=master, threshold=threshold, transport=transport,
                                 partitions=partitions or None, packed="frames" not in variants,
                                 driver_below=driver_below)
    before = tree_cpu_by_kind()
    result = run_engine(model, options, spark_options)
    after = tree_cpu_by_kind()
    application = result.extra["spark"]["master"] is not None
    if run_dir is not None:
        shutil.rmtree(run_dir, ignore_errors=True)
    cpu_by_kind = {kind: after[kind] - before.get(kind, 0.0) for kind in after}
    cpu = sum(cpu_by_kind.values())
    parts = result.extra["spark"]["partitions"]
    fixed, profile = 0.0, {}
    if prestart or application:  # an empty level's cost and the stages: on the run's session
        from checker.spark import spark_session

        session, _ = spark_session(master, ui=stages)
        sc = session.sparkContext
        fixed = empty_level_cost(sc, parts or max(2, 2 * sc.defaultParallelism))
        profile = stage_profile(sc) if stages else {}
        session.stop()
    levels = result.extra["spark"]["levels"]
    spark_levels = [lv for lv in levels if lv["engine"] == "spark"]
    driver_levels = [lv for lv in levels if lv["engine"] == "driver"]
    return {
        "engine": f"spark {master} {name}",
        "result": result,
        "cpu_seconds": cpu,
        "cpu_by_process": cpu_by_kind,
        "startup": startup,
        "application": application,
        "prestart": prestart,
        "partitions": parts,
        "local_levels": len(levels) - len(spark_levels) - len(driver_levels),
        "driver_levels": len(driver_levels),
        "driver_seconds": sum(lv["seconds"] for lv in driver_levels),
        "driver_cpu": sum(lv["expand"] for lv in driver_levels),
        "driver_expanded": sum(lv["frontier"] for lv in driver_levels),
        "spark_expanded": sum(lv["frontier"] for lv in spark_levels),
        "spark_seconds": sum(lv["seconds"] for lv in spark_levels),
        "local_seconds": sum(lv["seconds"] for lv in levels if lv["engine"] == "local"),
        "spark_levels": len(spark_levels),
        "job_expand": sum(lv["job_expand"] for lv in spark_levels),
        "job_index": sum(lv["job_index"] for lv in spark_levels),
        "expand": sum(lv["expand"] for lv in spark_levels),
        "dedup": sum(lv["dedup"] for lv in spark_levels),
        "invariants": sum(lv["invariants"] for lv in spark_levels),
        "stages": profile,
        "fixed_per_level": fixed,
        "levels": levels,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="two-phase")
    parser.add_argument("--const", action="append", default=None, metavar="NAME=VALUE")
    parser.add_argument("--protocol")
    parser.add_argument("--masters", default="local[1],local[2]", help="comma-separated Spark "
                                                                       "masters")
    parser.add_argument("--transports", default="arrow", help="comma-separated Spark transports: "
                        "arrow, blocks, each with +checkpoint for a resumable run (a run "
                        "directory), arrow with +kernel (the compiled kernel in blocks) or +frames "
                        "(the compiled kernel in DataFrames)")
    parser.add_argument("--threshold", type=int, default=10_000, help="--spark-threshold of the "
                                                                      "Spark runs")
    parser.add_argument("--driver-below", type=int, default=DEFAULT_DRIVER_BELOW,
                        help="--spark-driver-below of the Spark runs on the kernel (levels with a "
                             "smaller frontier on the driver in C; 0: all on the executors)")
    parser.add_argument("--partitions", type=int, help="Spark partitions (default the engine's: a "
                        "core each with the arrow transport, two with blocks)")
    parser.add_argument("--skip-local", action="store_true")
    parser.add_argument("--no-prestart", action="store_true", help="start Spark as the engine does "
                        "(a run whose levels all stay on the driver starts no JVM; one that "
                        "reaches the executors counts their start), not before each Spark run")
    parser.add_argument("--local-kernel", action="store_true", help="also the local engine on the "
                        "compiled kernel (kmc check --kernel on)")
    parser.add_argument("--stages", action="store_true",
                        help="keep Spark's web UI on and report its stage metrics per step (arrow "
                             "transport)")
    parser.add_argument("--symmetry", action="store_true", help="search orbits (kmc check "
                        "--symmetry; the safety invariants only)")
    parser.add_argument("--reduce", choices=("none", "dead"), default="none",
                        help="kmc check --reduce")
    parser.add_argument("--max-depth", type=int, help="stop after this many levels (a rate on a "
                                                      "search's first levels)")
    parser.add_argument("--invariant", action="append", default=None, metavar="NAME",
                        help="check only these invariants (kmc check --invariant; default all)")
    parser.add_argument("--json", metavar="FILE", help="also write the figures here")
    args = parser.parse_args(argv)
    consts = (args.const if args.const is not None
              else (["RM=8"] if args.model == "two-phase" else []))
    model = build_model(args.model, consts, args.protocol)
    invariants = [inv for inv in for_family(model.family).values()
                  if (not args.symmetry or inv.kind == SAFETY)
                  and (args.invariant is None or inv.name in args.invariant)]
    options = SearchOptions(invariants=invariants, symmetry=args.symmetry,
                            reduce=args.reduce, max_depth=args.max_depth)
    print(f"{args.model} {' '.join(consts)}: local engine, then Spark {args.masters} (threshold "
          f"{args.threshold:,})",
          flush=True)

    rows: list[dict[str, Any]] = []
    load_before = os.getloadavg()
    if not args.skip_local:
        cpu = tree_cpu_seconds()
        result = check(model, options)
        rows.append({"engine": "local", "result": result, "cpu_seconds": tree_cpu_seconds() - cpu})
        print(f"  local: {result.seconds:.1f} s", flush=True)
    if args.local_kernel:
        from checker.bfs import LocalOptions, run_engine

        cpu = tree_cpu_seconds()
        result = run_engine(model, dataclasses.replace(options, kernel="on"), LocalOptions())
        rows.append({"engine": "local kernel", "result": result, "cpu_seconds": tree_cpu_seconds()
                     - cpu})
        print(f"  local kernel: {result.seconds:.1f} s", flush=True)
    for master in [m.strip() for m in args.masters.split(",") if m.strip()]:
        for transport in [t.strip() for t in args.transports.split(",") if t.strip()]:
            row = run_spark(model, options, master, args.threshold, args.partitions, transport,
                            args.stages, args.driver_below, not args.no_prestart)
            rows.append(row)
            print(f"  {row['engine']}: {row['result'].seconds:.1f} s", flush=True)
    load_after = os.getloadavg()

    reference = rows[0]["result"]
    for row in rows:
        r = row["result"]
        same = (r.distinct_states, r.states_generated, r.depth, r.verdict) == (
            reference.distinct_states, reference.states_generated, reference.depth,
            reference.verdict)
        if not same:
            print(f"MISMATCH: {row['engine']} gives {r.distinct_states} / {r.states_generated} / "
                  f"{r.depth}",
                  file=sys.stderr)
            return 1

    print()
    print(f"distinct {reference.distinct_states:,}, generated {reference.states_generated:,}, "
          f"depth {reference.depth}, verdict {reference.verdict.value} (identical for every "
          "engine)")
    print(f"load average {load_before[0]:.1f} before, {load_after[0]:.1f} after (1 min)")
    # the first row is the local process (the compiled kernel's with --skip-local --local-kernel):
    # "speed vs first" is its wall (CPU) seconds over the row's, 1.00x or more at least as fast
    base = rows[0]
    print(f"{'engine':<40}{'seconds':>9}{'states/s':>11}{'CPU s':>8}{'speed vs first':>16}"
          f"{'per CPU s vs first':>20}")
    for row in rows:
        r = row["result"]
        print(f"{row['engine']:<40}{r.seconds:>9.1f}{r.distinct_states / r.seconds:>11,.0f}"
              f"{row['cpu_seconds']:>8.1f}{base['result'].seconds / r.seconds:>15.2f}x"
              f"{base['cpu_seconds'] / row['cpu_seconds']:>19.2f}x")
    for row in rows[1:] if not args.skip_local else rows:
        if "startup" not in row:  # the local engine on the kernel
            continue
        print()
        if " arrow" in row["engine"]:
            start = (f"Spark and worker startup {row['startup']:.1f} s (not counted)"
                     if row["prestart"] else "Spark started by the engine ("
                     + ("counted" if row["application"] else "no application: no JVM") + ")")
            print(f"{row['engine']}: {start}, {row['partitions']} partitions, "
                  f"{row['spark_levels']} levels on Spark: the level's job "
                  f"{row['job_expand']:.1f} s wall, numbering and the rest "
                  f"{row['job_index']:.1f} s wall, {row['local_levels']} levels on the driver "
                  f"{row['local_seconds']:.1f} s")
            if row["driver_levels"]:
                print(f"  {row['driver_levels']} kernel levels on the driver in C (frontier below "
                      f"{args.driver_below:,}): {row['driver_expanded']:,} states expanded in "
                      f"{row['driver_seconds']:.1f} s wall, {row['driver_cpu']:.1f} s CPU")
            if row["spark_levels"] and row["expand"] > 0:
                rest = (row["cpu_seconds"] - row["driver_cpu"]
                        - row["local_seconds"])  # the readable prefix's levels: their wall
                print(f"  levels on the executors: {row['spark_expanded']:,} states expanded; "
                      f"{row['spark_expanded'] / (row['expand'] + row['dedup']):,.0f} a CPU second "
                      "of the executors' own tasks (expansion and dedup), "
                      f"{row['spark_expanded'] / max(rest, 1e-9):,.0f} a CPU second of every "
                      "process (the driver, the JVM, the workers) besides the driver's levels")
            print("  CPU seconds by process: "
                  + ", ".join(f"{k} {v:.1f}" for k, v in sorted(row["cpu_by_process"].items())))
            print("  Python workers' CPU in the expansion (decode, successors, invariants, "
                  f"encode, Arrow): {row['expand']:.1f} s; fixed cost of a level-shaped job on no "
                  f"data: {row['fixed_per_level']:.2f} s")
            for kind, m in sorted(row["stages"].items()):
                print(f"  stages {kind:<24} {m['stages']:>4}: wall {m['wall']:7.1f} s, task run "
                      f"{m['run']:7.1f} s, JVM task CPU {m['cpu']:7.1f} s, GC {m['gc']:5.1f} s, "
                      f"shuffle write {m['shuffle_write_mb']:7.1f} MB "
                      f"({m['shuffle_write_records']:,} rows), spilled {m['spill_mb']:.1f} MB")
            continue
        print(f"{row['engine']}: Spark and worker startup {row['startup']:.1f} s (not counted), "
              f"{row['partitions']} partitions")
        print(f"  {row['local_levels']} levels on the driver below the threshold: "
              f"{row['local_seconds']:.1f} s")
        print(f"  {row['spark_levels']} levels on Spark: job 1 (expand+shuffle+dedup+invariants) "
              f"{row['job_expand']:.1f} s wall, numbering and the rest of the level "
              f"{row['job_index']:.1f} s wall")
        print(f"  executor seconds: expand {row['expand']:.1f} (reading the frontier and computing "
              f"successors), dedup {row['dedup']:.1f} (pickling candidates, merging them, removing "
              f"visited ones), invariants {row['invariants']:.1f}")
        print(f"  fixed cost of a level-shaped job on no data: {row['fixed_per_level']:.2f} s "
              f"(x {row['spark_levels']} levels = "
              f"{row['fixed_per_level'] * row['spark_levels']:.1f} s)")
    if args.json:
        out = []
        for row in rows:
            item = {k: v for k, v in row.items() if k != "result"}
            item["load_average"] = [round(load_before[0], 2), round(load_after[0], 2)]
            item.update({k: row["result"].to_json()[k]
                         for k in ("distinct_states", "states_generated", "depth",
                                    "seconds", "states_per_second")})
            out.append(item)
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
