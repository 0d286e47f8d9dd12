"""The resume point of a Spark run: ``run.json`` rewritten after each level, and a run rebuilt from it
with ``--resume DIR``.

``Resumable`` is a mixin of ``checker.spark.engine.SparkBFS``."""

from __future__ import annotations

import json
import time

from checker import checkpoint as ckpt
from checker.codec import Codec
from checker.errors import BadFileError, WrongModelError
from checker.spark.blocks import _DecodeRow, _fp_of_row, _fp_record, _fps_to_chunk, _rows_to_block, fingerprint_partition
from checker.spark.driver_state import Counters, LevelInfo, SparkRun
from checker.spark.rundir import RUN_FORMAT, RUN_MAGIC, RunDir, load_local_prefix
from checker.spark.session import storage_level


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
        try:
            payload = json.loads(raw)
        except ValueError:
            raise BadFileError(f"{run_dir.join('run.json')} is corrupt") from None
        if not isinstance(payload, dict) or payload.get("magic") != RUN_MAGIC or payload.get("format") != RUN_FORMAT:
            raise BadFileError(f"{run_dir.join('run.json')} is not a kmc Spark run of this version")
        want = json.loads(json.dumps(ckpt._identity(self.model, self.options)))
        if payload.get("identity") != want:
            raise WrongModelError(f"run directory {run_dir.path} was written for {payload.get('identity')}, not {want}; "
                                  "resume with the same model, constants and options")
        if spark is None:
            spark = self._start(run_dir)
        if self.partitions is None:
            spark.partitions = int(payload["partitions"])
        local = load_local_prefix(run_dir, self.model, self.options)
        st = Counters(local)
        try:
            st.depth = int(payload["depth"])
            st.generated = int(payload["generated"])
            st.distinct = int(payload["distinct"])
            st.local_distinct = int(payload["local_distinct"])
            st.frontier_base = int(payload["frontier_base"])
            st.frontier_size = int(payload["frontier_size"])
            st.found = {str(k): int(v) for k, v in payload["found"].items()}
            st.deadlock = None if payload["deadlock"] is None else int(payload["deadlock"])
            st.elapsed = float(payload["elapsed"])
            levels = [LevelInfo(**item) for item in payload["levels"]]
        except (KeyError, TypeError, ValueError) as exc:
            raise BadFileError(f"{run_dir.join('run.json')} is corrupt ({type(exc).__name__}: {exc})") from None
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
