"""Distributed breadth-first search on Spark: ``kmc check MODEL --engine spark``.

The engine lives in the ``checker.spark`` package (its docstring describes the design); this module
keeps the names that the engine registry, the tests and the benchmarks import from here.
"""

from __future__ import annotations

from checker.spark.blocks import fingerprint_partition
from checker.spark.driver_state import LevelInfo, LevelTiming
from checker.spark.engine import (
    DEFAULT_CHECKPOINT_LEVELS,
    DEFAULT_DRIVER_INDEX_LIMIT,
    DEFAULT_THRESHOLD,
    SparkBFS,
    run_engine,
)
from checker.spark.rundir import RUN_FORMAT, RUN_MAGIC, RunDir
from checker.spark.session import check_environment, spark_session, with_task_retries

__all__ = [
    "DEFAULT_CHECKPOINT_LEVELS",
    "DEFAULT_DRIVER_INDEX_LIMIT",
    "DEFAULT_THRESHOLD",
    "RUN_FORMAT",
    "RUN_MAGIC",
    "LevelInfo",
    "LevelTiming",
    "RunDir",
    "SparkBFS",
    "check_environment",
    "fingerprint_partition",
    "run_engine",
    "spark_session",
    "with_task_retries",
]
