"""The result of a Spark run: the verdict and, for each violation, the counterexample rebuilt from
the parent pointers by replay, exactly as the local engine rebuilds it.

``Verdicts`` is a mixin of ``checker.spark.engine.SparkBFS``."""

from __future__ import annotations

from typing import Any

from checker.result import CheckResult
from checker.search import ActionTable, rebuild_trace, search_result
from checker.spark import class_archive
from checker.spark.driver_state import Counters, LevelInfo, SparkRun
from checker.spark.numbering import _PointerAt
from checker.spark.rundir import RunDir
from spec.errors import BadFileError, ModelError


class Verdicts:
    """Traces and the ``CheckResult`` of ``SparkBFS``."""

    def _path_to(self, index: int, st: Counters, levels: list[LevelInfo], spark: SparkRun
                 | None) -> list[tuple]:
        """(fingerprint, ("pos", p) | ("action", id)) from an initial state down to global index
        ``index``."""
        local = st.local
        steps: list[tuple] = []
        while index >= st.local_distinct:
            from pyspark.sql import functions as F  # noqa: N812 (only reached when Spark ran)

            level = next(lv for lv in levels if lv.base <= index < lv.base + lv.count)
            if level.pointers is not None:
                fps, parents, positions = level.pointers
                at = index - level.base
                steps.append((int(fps[at]), ("pos", int(positions[at]))))
                index = int(parents[at])
                continue
            if level.rdd is not None and spark is not None:
                (fp, parent, pos), = spark.sc.runJob(level.rdd, _PointerAt(index))
                steps.append((fp, ("pos", pos)))
                index = parent
                continue
            if spark is None or level.path is None:
                raise BadFileError(f"level {level.depth} has no parent pointers")
            rows = (spark.session.read.parquet(level.path).where(F.col("gidx") == index)
                    .select("fp", "parent", "pos").collect())
            if len(rows) != 1:
                raise BadFileError(f"the parent pointers of level {level.depth} are incomplete "
                                   f"(state {index})")
            steps.append((int(rows[0].fp), ("pos", int(rows[0].pos))))
            index = int(rows[0].parent)
        for fp, action_id in reversed(local.log.path_to(index)):
            steps.append((fp, ("action", action_id)))
        steps.reverse()
        return steps

    def _trace(self, index: int, st: Counters, levels: list[LevelInfo], spark: SparkRun | None,
               name: str, why: Any) -> Any:
        """Turn successor positions into actions by replaying canonical states, then rebuild as the
        local engine."""
        if index < st.local_distinct:
            path = st.local.log.path_to(index)
            return rebuild_trace(self.model, path, st.local.actions.actions, self.options, name,
                                 why)
        steps = self._path_to(index, st, levels, spark)
        # the stored form the search expanded (``search_canonical``: dead messages dropped, then
        # renamed)
        canonical = self.local.canonical or (lambda s: s)
        table = ActionTable(st.local.actions.actions)
        root_fp = steps[0][0]
        current = next((canonical(s) for s in self.model.init_states() if hash(canonical(s))
                        == root_fp), None)
        if current is None:
            raise ModelError("cannot rebuild a trace: no initial state has the recorded "
                             "fingerprint")
        path = [(root_fp, -1)]
        # the local prefix's steps carry Python's fingerprints, Spark's levels on the kernel the
        # kernel's
        spark_fp = self._kernel_fingerprint if getattr(self, "_kernel", None) is not None else hash
        for fp, (kind, value) in steps[1:]:
            fingerprint = spark_fp if kind == "pos" else hash
            chosen = None
            for pos, (act, succ) in enumerate(self.model.successors(current)):
                succ = canonical(succ)
                if fingerprint(succ) != fp:
                    continue
                if ((kind == "pos" and pos == value)
                    or (kind == "action" and act == st.local.actions.actions[value])):
                    chosen = (act, succ)
                    break
            if chosen is None:
                raise ModelError("cannot rebuild a trace: the recorded step is not deterministic "
                                 "in this model")
            # rebuild_trace replays by Python fingerprint
            path.append((hash(chosen[1]), table.id(chosen[0])))
            current = chosen[1]
        return rebuild_trace(self.model, path, table.actions, self.options, name, why)

    def _kernel_fingerprint(self, state: Any) -> int:
        """The fingerprint a Spark level on the kernel gave ``state`` (a stored form): its packed
        bytes' hash."""
        from checker.kernel_batch import batch_kernel

        batch = batch_kernel(self._shipment)
        return int(batch.fingerprints(batch.rows(self._kernel.spec.pack(state)))[0])

    def _result(self, st: Counters, levels: list[LevelInfo], elapsed: float, reason: str | None,
                spark: SparkRun | None, run_dir: RunDir | None) -> CheckResult:
        extra: dict[str, Any] = {}
        if self.options.reduce == "dead":  # what was dropped, as the local engine reports it
            from checker.dead import report

            extra["reduction"] = report(self.model)
        if getattr(self, "_path", None):
            extra["path"] = self._path
            # no level reached Spark's executors
            if spark is None and self._path["path"] == "kernel":
                extra["path"] = {"path": "readable", "reason": "every level ran on the driver with "
                                 "the local engine (below --spark-threshold), on the readable "
                                 "model"}
        context = spark.sc if spark is not None else None  # None: no Spark application started
        workers = context.defaultParallelism if context is not None else 1
        checkpoint_file = run_dir.path if (reason and run_dir is not None and not run_dir.temporary
                                           and st.spark_started and st.frontier_size) else None
        return search_result(
            self.model, self.invariants, found=st.found, deadlock=st.deadlock,
            trace_of=lambda index, name, why: self._trace(index, st, levels, spark, name, why),
            distinct_states=st.distinct, states_generated=st.generated, depth=st.depth,
            seconds=elapsed, reason=reason, engine=self.engine, workers=workers,
            symmetry=self.symmetry, queue=st.frontier_size, checkpoint_file=checkpoint_file,
            extra={
                **extra,
                "spark": {
                    "master": context.master if context is not None else None,
                    "partitions": spark.partitions if spark is not None else None,
                    "threshold": self.threshold,
                    # the compiled kernel's levels with a smaller frontier ran on the driver in C
                    # (each level's "engine": "driver"; ``checker.spark.driver_level``)
                    "driver_below": self.driver_below,
                    "transport": ("arrow" if getattr(spark, "codec", None) is not None
                                  else "blocks") if spark else None,
                    "levels": [t.to_json() for t in self.timings],
                    # the driver JVM's class archive (checker.spark.class_archive): used, making,
                    # busy, failed or off; None when no Spark application started
                    "class_archive": class_archive.state if context is not None else None,
                }
            },
        )
