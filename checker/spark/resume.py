"""The resume point of a Spark run: ``run.json`` rewritten after each level, and a run rebuilt from it
with ``--resume DIR``.

``Resumable`` is a mixin of ``checker.spark.engine.SparkBFS``."""

from __future__ import annotations

import json
import math
import os
import time
from typing import Any

from checker import checkpoint as ckpt
from checker.codec import Codec
from checker.safe_io import parse_json
from checker.spark.blocks import _DecodeRow, _fp_of_row, _fp_record, _fps_to_chunk, _rows_to_block, fingerprint_partition
from checker.spark.driver_state import Counters, LevelInfo, SparkRun
from checker.spark.rundir import RUN_FORMAT, RUN_MAGIC, RunDir, load_local_prefix
from checker.spark.session import storage_level
from spec.errors import BadFileError, WrongModelError

_MAX = 2**53


def _remote_json(where: str, raw: bytes) -> Any:
    return parse_json(where, raw, "Spark run.json")


def _count(payload: dict[str, Any], key: str, where: str, low: int = 0) -> int:
    value = payload.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= _MAX:
        raise BadFileError(f"{where} has an impossible {key} ({value!r}); it cannot be resumed")
    return value


def _checked_levels(payload: dict[str, Any], run_dir: RunDir, where: str) -> list[LevelInfo]:
    """run.json's counts and levels, checked to agree with each other and with the directory's files.

    Level files are looked for in this run directory (``levels/NNNN``) wherever it was written, so
    a run directory that was moved or copied resumes; one whose level files are missing is refused.
    """
    for key in ("depth", "generated", "distinct", "local_distinct", "frontier_base", "frontier_size"):
        _count(payload, key, where)
    _count(payload, "partitions", where, low=1)
    elapsed = payload.get("elapsed")
    if not isinstance(elapsed, int | float) or isinstance(elapsed, bool) or not (math.isfinite(elapsed) and elapsed >= 0):
        raise BadFileError(f"{where} has an impossible elapsed time ({elapsed!r}); it cannot be resumed")
    raw_levels = payload.get("levels")
    if not isinstance(raw_levels, list) or not raw_levels:
        raise BadFileError(f"{where} lists no levels; it cannot be resumed")
    levels: list[LevelInfo] = []
    expected_base = 0
    for i, item in enumerate(raw_levels, start=1):
        if not isinstance(item, dict) or set(item) != {"depth", "base", "count", "path"}:
            raise BadFileError(f"{where}: level {i} is malformed; it cannot be resumed")
        depth, base, count = (_count(item, key, f"{where}: level {i}") for key in ("depth", "base", "count"))
        path = item["path"]
        if depth != i or base != expected_base:
            raise BadFileError(f"{where}: level {i} is out of order (depth {depth}, first state {base}); it cannot be resumed")
        if path is not None:
            if not isinstance(path, str):
                raise BadFileError(f"{where}: level {i} has a malformed path; it cannot be resumed")
            path = run_dir.level_path(depth)  # here, even if the directory was moved since
            if run_dir.local and not os.path.isdir(path):
                raise BadFileError(f"run directory {run_dir.path} has lost level {depth} ({path} is missing); "
                                   "it cannot be resumed")
        levels.append(LevelInfo(depth, base, count, path))
        expected_base = base + count
    last = levels[-1]
    if (payload["distinct"] != expected_base or payload["depth"] != last.depth
            or payload["frontier_base"] != last.base or payload["frontier_size"] not in (0, last.count)
            or payload["generated"] < payload["distinct"] or payload["local_distinct"] > payload["distinct"]):
        raise BadFileError(f"{where} is inconsistent (its counts disagree with its levels); it cannot be resumed")
    found = payload.get("found")
    if not isinstance(found, dict) or not all(
        isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) and 0 <= v < expected_base
        for k, v in found.items()
    ):
        raise BadFileError(f"{where} records violations at impossible indexes; it cannot be resumed")
    deadlock = payload.get("deadlock")
    if deadlock is not None and (not isinstance(deadlock, int) or isinstance(deadlock, bool)
                                 or not 0 <= deadlock < expected_base):
        raise BadFileError(f"{where} records a deadlock at an impossible index; it cannot be resumed")
    return levels


class Resumable:
    """Commit and resume for ``SparkBFS``."""

    def _commit(self, spark: SparkRun, st: Counters, levels: list[LevelInfo], run_dir: RunDir) -> None:
        """The level is complete: rewrite run.json (atomically), the resume point."""
        st.elapsed = time.monotonic() - self._started
        if run_dir.temporary:
            return
        payload = {
            "magic": RUN_MAGIC,
            "format": RUN_FORMAT,
            "identity": ckpt._identity(self.model, self.options),
            "partitions": spark.partitions,
            "depth": st.depth,
            "generated": st.generated,
            "distinct": st.distinct,
            "local_distinct": st.local_distinct,
            "frontier_base": st.frontier_base,
            "frontier_size": st.frontier_size,
            "found": st.found,
            "deadlock": st.deadlock,
            "elapsed": st.elapsed,
            "levels": [level.to_json() for level in levels],
        }
        run_dir.write_bytes("run.json", json.dumps(payload, indent=1).encode())
    def _resume(self, run_dir: RunDir) -> tuple[SparkRun | None, Counters, list[LevelInfo]]:
        if run_dir.local and not run_dir.exists():
            raise BadFileError(f"run directory {run_dir.path} does not exist; check the path given to --resume")
        spark = None
        if not run_dir.local:
            spark = self._start(run_dir)
        raw = run_dir.read_bytes("run.json")
        if raw is None:  # nothing was committed yet (the run was still in its local levels)
            st = Counters(self.local._initial_level())
            return spark, st, [LevelInfo(1, 0, st.distinct)]
        where = run_dir.join("run.json")
        payload = parse_json(where, raw, "Spark run.json") if run_dir.local else _remote_json(where, raw)
        if not isinstance(payload, dict) or payload.get("magic") != RUN_MAGIC or payload.get("format") != RUN_FORMAT:
            raise BadFileError(f"{where} is not a kmc Spark run of this version; start the run again without --resume")
        want = json.loads(json.dumps(ckpt._identity(self.model, self.options)))
        if payload.get("identity") != want:
            raise WrongModelError(f"run directory {run_dir.path} was written for another run "
                                  f"({ckpt.identity_difference(payload.get('identity'), want)}); "
                                  "resume with the same model, constants and options")
        levels = _checked_levels(payload, run_dir, where)
        local = load_local_prefix(run_dir, self.model, self.options)
        if spark is None:
            spark = self._start(run_dir)
        if self.partitions is None:
            spark.partitions = payload["partitions"]
        st = Counters(local)
        st.depth = payload["depth"]
        st.generated = payload["generated"]
        st.distinct = payload["distinct"]
        st.local_distinct = payload["local_distinct"]
        st.frontier_base = payload["frontier_base"]
        st.frontier_size = payload["frontier_size"]
        st.found = dict(payload["found"])
        st.deadlock = payload["deadlock"]
        st.elapsed = float(payload["elapsed"])
        if st.local_distinct != len(local.log) or st.generated < local.generated:
            raise BadFileError(f"{where} does not fit the run directory's local.ckpt (it counts {st.local_distinct} "
                               f"states on the driver, local.ckpt has {len(local.log)}); it cannot be resumed")
        st.spark_started = True
        local.frontier = []
        sc, parts = spark.sc, spark.partitions
        paths = [level.path for level in levels if level.path]
        local_fps = sc.parallelize(local.visited.array.tolist(), parts).map(_fp_record)
        if paths:
            read = spark.session.read.parquet(*paths).select("fp").rdd.map(_fp_of_row)
            local_fps = local_fps.union(read)
        spark.visited = (
            local_fps.partitionBy(parts, fingerprint_partition)
            .mapPartitionsWithIndex(_fps_to_chunk, preservesPartitioning=True).persist(storage_level())
        )
        if st.frontier_size:
            codec = Codec(self.model.state_types())
            last = levels[-1]
            if last.path is None:
                raise BadFileError(f"{run_dir.join('run.json')} is inconsistent (its last level has no file)")
            spark.frontier = (
                spark.session.read.parquet(last.path).rdd.map(_DecodeRow(codec))
                .partitionBy(parts, fingerprint_partition)
                .mapPartitionsWithIndex(_rows_to_block, preservesPartitioning=True).persist(storage_level())
            )
        return spark, st, levels
