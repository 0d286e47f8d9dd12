"""Distributed breadth-first search on Spark: ``kmc check MODEL --engine spark``.

The result is identical to the local engine's (``checker.bfs``): distinct states, states
generated, depth, verdict and the very same shortest counterexample.

Start small, grow large
    Shallow levels are tiny and a Spark job costs 0.1-0.3 s however small its input, so levels
    run on the driver with the local engine while the frontier holds fewer than ``threshold``
    states (``--spark-threshold``, default 10,000) and move to Spark from the first level whose
    frontier reaches it. A search that never gets there never starts Spark. On the compiled
    kernel, a level whose frontier has fewer than ``--spark-driver-below`` states (default
    300,000: what the driver's kernel expands in a Spark level's fixed cost) runs on the driver in
    C with the executors' batch functions and numbering (``driver_level``), and the frontier moves
    to the executors when a level passes it and back when levels shrink.

Two transports ``arrow`` (the default when PyArrow, pandas and PySpark 4 are installed;
    ``arrow_step``): DataFrames, states as compact msgpack in a binary column, successors over Arrow
    batches (``mapInArrow``), dedup and the anti-join against the visited set in the JVM; its design
    is in ``arrow_step``. ``blocks`` (``--spark-transport blocks``): RDDs of columnar blocks,
    described below. Both write resumable run directories (``--checkpoint DIR``); ``--resume DIR``
    continues in the transport that wrote it (run.json's ``transport``).

One level on Spark with the blocks transport is one job (two for large or resumable levels)
    The frontier (the last level) and the visited set are pair RDDs partitioned by the 64-bit
    state fingerprint with one partition function, so combining them moves no data. Each
    partition is one columnar block (numpy arrays of fingerprints, parent indices and successor
    positions, and one pickled list of states), which PySpark moves far faster than millions of
    small records. The visited set holds one sorted int64 array per partition and never leaves
    the executors.

    Job 1 (expand, shuffle, dedup, invariants): every frontier partition expands its states in
    global-index order and keeps, per successor fingerprint, the first occurrence with its order
    key (parent global index, successor position). The candidates are shuffled to their
    fingerprint's partition, where the smallest key per fingerprint wins and the fingerprints
    already visited are dropped; the invariants are checked there on the new states. The driver
    gets back only counts, a histogram of parent ranges, per invariant the first violating key
    and, for a level of at most ``driver_index_limit`` (50,000) new states, the keys themselves.

    Numbering: global indices are assigned exactly as the local engine assigns them (level by
    level, in (parent index, successor position) order). A small level is sorted on the driver,
    which keeps its parent pointers (20 bytes a state) and broadcasts the indices. A large level
    is numbered on the executors: its keys are range-partitioned on the parent index, sorted
    within each range and numbered from per-range offsets (the histogram of job 1), and the
    indices go back to the fingerprint partitions; its parent pointers are written as Parquet
    under the run directory (job 2). With ``--checkpoint DIR`` every level is written so, with its
    states encoded by ``checker.codec``. A counterexample is rebuilt from the parent pointers by
    replay, as the local engine does.

Fault tolerance
    Every task is deterministic (states in global-index order, minimum keys) and the statistics
    travel as ordinary records, not as accumulators, so a task that Spark retries changes
    nothing. Local masters get Spark's usual
    four attempts per task (``local[N]`` becomes ``local[N,4]``). With ``--checkpoint DIR`` (a run
    directory) a driver that dies resumes from the last completed level with ``--resume DIR``:
    ``run.json`` is rewritten atomically after each level and names the level files it covers, with
    the SHA-256 of each level's files. A run directory is input: ``--resume`` checks every field of
    run.json against the run it claims to be and every level's files against their digest before it
    reads any (``resume``), and refuses with one line (exit 65). Ctrl-C cancels the running jobs and
    ends with one line (``session.SparkInterrupt``).

Modules ``engine`` the engine's options (``SparkOptions``) and its hooks into the one level loop of
    ``checker.levels`` (``SparkBFS``: a level step that runs a local level below the threshold, else
    starts Spark once and runs a Spark level; ``run_engine``); ``arrow_step`` one level on Spark
    with the arrow transport; ``level_step`` one level with the blocks transport; ``expand`` job 1
    (expand, dedup, invariants); ``numbering`` global indices and parent pointers; ``blocks`` the
    columnar blocks and record functions; ``driver_state`` the driver's bookkeeping; ``rundir`` the
    run directory; ``resume`` run.json and ``--resume``; ``verdict`` traces and the result;
    ``session`` the SparkSession and its environment. This package re-exports the names the engine
    registry, the tests and the benchmarks import
    (``from checker.spark import SparkOptions, run_engine``).
"""

from __future__ import annotations

from checker.spark.blocks import fingerprint_partition
from checker.spark.driver_state import LevelInfo, LevelTiming
from checker.spark.engine import (
    DEFAULT_CHECKPOINT_LEVELS,
    DEFAULT_DRIVER_INDEX_LIMIT,
    DEFAULT_THRESHOLD,
    SparkBFS,
    SparkOptions,
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
    "SparkOptions",
    "check_environment",
    "fingerprint_partition",
    "run_engine",
    "spark_session",
    "with_task_retries",
]
