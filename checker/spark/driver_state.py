"""The driver's bookkeeping of a Spark run: each level's place and parent pointers, its timings, the
RDDs and broadcasts alive, and the counts of the search."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from checker.bfs import SearchState


@dataclass
class LevelInfo:
    depth: int
    base: int  # global index of the level's first state
    count: int
    # Parquet directory (None: a level of the local prefix or kept on the driver)
    path: str | None = None
    #: the SHA-256 of the level's files as written (``RunDir.level_digest``), checked before a
    #: resume reads them
    digest: str | None = None
    #: (fingerprints, parent indices, successor positions) of a small level kept on the driver
    pointers: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
    #: a large level's parent pointers kept on the executors (runs without a run directory)
    rdd: Any = None

    def to_json(self) -> dict[str, Any]:
        return {"depth": self.depth, "base": self.base, "count": self.count, "path": self.path,
                "digest": self.digest}


@dataclass
class LevelTiming:
    depth: int
    frontier: int
    new: int
    seconds: float
    job_expand: float = 0.0  # wall time of job 1 (expand, shuffle, dedup, invariants)
    job_index: float = 0.0  # wall time of job 2 (index, join, Parquet write)
    expand: float = 0.0  # executor seconds expanding states
    dedup: float = 0.0  # executor seconds merging candidates and removing visited ones
    invariants: float = 0.0  # executor seconds checking invariants (and counting)
    engine: str = "spark"

    def to_json(self) -> dict[str, Any]:
        return {k: round(v, 4) if isinstance(v, float) else v for k, v in self.__dict__.items()}


@dataclass
class SparkRun:
    session: Any
    sc: Any
    created: bool
    partitions: int
    #: the last level: RDD (fp, (gidx, parent, pos, state)), or DataFrame (fp, state) with the Arrow
    #: transport
    frontier: Any = None
    #: RDD (fp, sorted int64 array), one record per partition, or DataFrame (fp) with the Arrow
    #: transport
    visited: Any = None
    #: the Arrow transport's visited fingerprints of the levels since the last merge into
    #: ``visited`` (DataFrames (fp), hash-partitioned and sorted like it)
    runs: list[Any] = field(default_factory=list)
    #: the Arrow transport's fingerprints of the last levels (the newest last)
    recent: list[Any] = field(default_factory=list)
    retired: list[Any] = field(default_factory=list)  # RDDs to unpersist after the next level
    broadcasts: list[Any] = field(default_factory=list)
    pointers: list[Any] = field(default_factory=list)  # parent pointers of large levels
    # the codec of the Arrow transport's state column (``checker.codec.state_column_codec``)
    codec: Any = None
    #: the Arrow transport: the frontier's states were checked against the invariants (the local
    #: prefix's last level, or a level whose expansion or ``FrontierCheck`` checked them)
    frontier_checked: bool = False
    #: the Arrow transport: for each partition, the long that Spark's hash partitioning sends there
    labels: list[int] = field(default_factory=list)
    #: the kernel's blocks (``packed_step``): the level's RDDs to release once the next level is in,
    #: and the first global index of each frontier partition (None: not known)
    keep: list[Any] = field(default_factory=list)
    ranges: Any = None
    #: the kernel's levels on the driver (``driver_level``): the frontier there (global indices,
    #: fingerprints, packed rows; None: on the executors) and its keys, the driver's C set of
    #: visited fingerprints and the depth it is complete to, the depth the executors' visited
    #: fingerprints are complete to, and the local prefix's kernel fingerprints
    driver_frontier: Any = None
    driver_keys: Any = None
    driver_seen: Any = None
    driver_seen_depth: int = 0
    visited_depth: int = 0
    prefix_fps: Any = None
    #: a level has gone to the executors (``--spark-threshold`` no longer keeps levels on the
    #: driver)
    executors_used: bool = False
    #: the driver's levels not yet in the run directory (``DriverLevelStep._write_driver_levels``)
    #: and when run.json was last written
    unwritten: list[Any] = field(default_factory=list)
    committed_at: float = field(default_factory=time.monotonic)


class Counters:
    """The driver's view of the search: the local prefix (a ``SearchState``) plus Spark's counts."""

    def __init__(self, local: SearchState) -> None:
        self.local = local
        self.spark_started = False
        self.local_distinct = len(local.log)
        self.sync_from_local()

    def level_done(self, depth: int, base: int, count: int) -> None:
        """A Spark level is in: ``count`` new states, numbered from ``base``, at ``depth``."""
        self.depth = depth
        self.frontier_base = base
        self.frontier_size = count
        self.distinct += count

    def sync_from_local(self) -> None:
        local = self.local
        self.depth = local.depth
        self.generated = local.generated
        self.distinct = len(local.log)
        self.frontier_base = local.frontier_base
        self.frontier_size = len(local.frontier)
        if not self.spark_started:
            self.local_distinct = self.distinct
        self.found = local.found
        self.deadlock = local.deadlock
        self.elapsed = local.elapsed
