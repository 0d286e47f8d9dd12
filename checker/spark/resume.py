"""The resume point of a Spark run: ``run.json`` rewritten after each level, and a run rebuilt from
it with ``--resume DIR``.

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
from checker.spark.blocks import (
    _DecodeRow,
    _fp_of_row,
    _fp_record,
    _fps_to_chunk,
    _rows_to_block,
    fingerprint_partition,
)
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


#: the most partitions a run directory may name: twice the cores of a 128-executor, 32-core cluster
#: (a Spark job of more tasks than that on a local master takes minutes a stage and its driver's
#: memory)
MAX_PARTITIONS = 16_384
#: the longest a run may claim to have run, in seconds (a century)
MAX_ELAPSED = 100 * 365 * 86_400
_HEX = frozenset("0123456789abcdef")


def _checked_levels(payload: dict[str, Any], run_dir: RunDir, where: str, invariants: set[str],
                    check_deadlock: bool) -> list[LevelInfo]:
    """run.json's counts and levels, bounded and checked to agree with each other and with the
    directory's files, before any of them is used (a run directory is input: every refusal is one
    line, exit 65).

    Level files are looked for in this run directory (``levels/NNNN``) wherever it was written, so a
    run directory that was moved or copied resumes; one whose level files are missing is refused.
    Each level's files are checked against the digest run.json records for them
    (``RunDir.level_digest``) by ``Resumable._resume`` (on Hadoop storage once Spark runs).
    """
    raw_levels = _checked_header(payload, where)
    levels: list[LevelInfo] = []
    expected_base = 0
    for i, item in enumerate(raw_levels, start=1):
        level = _checked_level(item, i, expected_base, payload["local_distinct"], run_dir, where)
        levels.append(level)
        expected_base = level.base + level.count
    _check_totals(payload, levels[-1], expected_base, where)
    _check_found(payload, expected_base, where, invariants, check_deadlock)
    return levels


def _checked_header(payload: dict[str, Any], where: str) -> list[Any]:
    """run.json's counts, transport and elapsed time bounded; its list of levels, one a depth."""
    for key in ("depth", "generated", "distinct", "local_distinct", "frontier_base",
                "frontier_size"):
        _count(payload, key, where)
    if payload.get("transport") not in ("arrow", "blocks"):
        raise BadFileError(f"{where} names no Spark transport (arrow or blocks); it cannot be "
                           "resumed")
    elapsed = payload.get("elapsed")
    if (not isinstance(elapsed, int | float) or isinstance(elapsed, bool)
            or not (math.isfinite(elapsed) and 0 <= elapsed <= MAX_ELAPSED)):
        raise BadFileError(f"{where} has an impossible elapsed time ({elapsed!r}); it cannot be "
                           "resumed")
    raw_levels = payload.get("levels")
    if not isinstance(raw_levels, list) or not raw_levels:
        raise BadFileError(f"{where} lists no levels; it cannot be resumed")
    if len(raw_levels) != payload["depth"]:
        raise BadFileError(f"{where} is inconsistent (depth {payload['depth']}, {len(raw_levels)} "
                           "levels); "
                           "it cannot be resumed")
    return raw_levels


def _checked_level(item: Any, i: int, expected_base: int, local_distinct: int, run_dir: RunDir,
                   where: str) -> LevelInfo:
    """Level ``i`` of run.json: in order after the one before, with files and a digest exactly when
    it ran on Spark, its files in this run directory."""
    if not isinstance(item, dict) or set(item) != {"depth", "base", "count", "path", "digest"}:
        raise BadFileError(f"{where}: level {i} is malformed; it cannot be resumed")
    depth, base, count = (_count(item, key, f"{where}: level {i}")
                          for key in ("depth", "base", "count"))
    path, digest = item["path"], item["digest"]
    if depth != i or base != expected_base or count == 0:
        raise BadFileError(f"{where}: level {i} is out of order (depth {depth}, first state "
                           f"{base}, {count} states); it cannot be resumed")
    # the levels before ran on the driver: their states are in local.ckpt
    on_spark = base >= local_distinct
    if on_spark != (path is not None) or (base < local_distinct < base + count):
        raise BadFileError(f"{where}: level {i} is inconsistent (it "
                           f"{'has' if path is not None else 'has no'} level files, and the "
                           f"driver ran the first {local_distinct} states); "
                           "it cannot be resumed")
    if path is not None:
        if not isinstance(path, str):
            raise BadFileError(f"{where}: level {i} has a malformed path; it cannot be resumed")
        if not (isinstance(digest, str) and len(digest) == 64 and set(digest) <= _HEX):
            raise BadFileError(f"{where}: level {i} has no digest of its files; it cannot be "
                               "resumed")
        path = run_dir.level_path(depth)  # here, even if the directory was moved since
        if run_dir.local and not os.path.isdir(path):
            raise BadFileError(f"run directory {run_dir.path} has lost level {depth} ({path} "
                               "is missing); "
                               "it cannot be resumed")
    elif digest is not None:
        raise BadFileError(f"{where}: level {i} has a digest but no files; it cannot be "
                           "resumed")
    return LevelInfo(depth, base, count, path, digest)


def _check_totals(payload: dict[str, Any], last: LevelInfo, expected_base: int,
                  where: str) -> None:
    """run.json's totals agree with its levels; its partition count is one a cluster could have."""
    local_distinct = payload["local_distinct"]
    if (payload["distinct"] != expected_base or payload["depth"] != last.depth
            or payload["frontier_base"] != last.base or payload["frontier_size"]
        not in (0, last.count)
            or payload["generated"] < payload["distinct"] or not 0 < local_distinct
        <= payload["distinct"]):
        raise BadFileError(f"{where} is inconsistent (its counts disagree with its levels); it "
                           "cannot be resumed")
    # a partition count beyond any cluster's, or beyond one partition a state, is not a run's
    partitions = _count(payload, "partitions", where, low=1)
    if partitions > min(MAX_PARTITIONS, max(2, payload["distinct"])):
        raise BadFileError(f"{where} names {partitions:,} partitions for a run of "
                           f"{payload['distinct']:,} states (at most "
                           f"{min(MAX_PARTITIONS, max(2, payload['distinct'])):,}); it cannot be "
                           "resumed")


def _check_found(payload: dict[str, Any], expected_base: int, where: str, invariants: set[str],
                 check_deadlock: bool) -> None:
    """The violations and deadlock run.json records are of this run's checks, at states it has."""
    found = payload.get("found")
    if not isinstance(found, dict) or not all(
        isinstance(k, str) and k in invariants and isinstance(v, int) and not isinstance(v, bool)
        and 0 <= v < expected_base
        for k, v in found.items()
    ):
        raise BadFileError(f"{where} records violations of invariants this run does not check or "
                           "at impossible "
                           "indexes; it cannot be resumed")
    deadlock = payload.get("deadlock")
    if deadlock is not None and (not check_deadlock or not isinstance(deadlock, int)
                                 or isinstance(deadlock, bool)
                                 or not 0 <= deadlock < expected_base):
        raise BadFileError(f"{where} records a deadlock at an impossible index; it cannot be "
                           "resumed")


def _path_record(path: dict[str, Any] | None) -> dict[str, Any]:
    """The path run.json records: the kernel's library and state width, or readable."""
    if path is None or path.get("path") != "kernel":
        return {"path": "readable"}
    return {"path": "kernel", "library": path["library"], "state_bytes": path["state_bytes"]}


def _checked_path(payload: dict[str, Any], where: str) -> dict[str, Any]:
    """run.json's path, bounded (a run directory written before it was recorded holds readable
    states)."""
    path = payload.get("path", {"path": "readable"})
    if path == {"path": "readable"}:
        return path
    if (not isinstance(path, dict) or set(path) != {"path", "library", "state_bytes"}
            or path["path"] != "kernel" or not isinstance(path["library"], str)
            or not 0 < len(path["library"]) <= 255 or isinstance(path["state_bytes"], bool)
            or not isinstance(path["state_bytes"], int) or not 0 < path["state_bytes"] <= 1 << 16):
        raise BadFileError(f"{where} names an impossible path (the kernel's or the readable "
                           "model's); it cannot be resumed")
    return path


def _check_digests(run_dir: RunDir, levels: list[LevelInfo]) -> None:
    """Every level file is the one written: its digest is the one run.json recorded when the level
    committed."""
    for level in levels:
        if level.path is not None and run_dir.level_digest(level.path) != level.digest:
            raise BadFileError(f"run directory {run_dir.path}: the files of level {level.depth} "
                               f"({level.path}) "
                               "are not the ones written (their SHA-256 differs from run.json's); "
                               "it cannot be resumed")


class Resumable:
    """Commit and resume for ``SparkBFS``."""

    def _commit(self, spark: SparkRun, st: Counters, levels: list[LevelInfo],
                run_dir: RunDir) -> None:
        """The level is complete: rewrite run.json (atomically), the resume point."""
        st.elapsed = time.monotonic() - self._started
        if run_dir.temporary:
            return
        payload = {
            "magic": RUN_MAGIC,
            "format": RUN_FORMAT,
            "identity": ckpt._identity(self.model, self.options),
            "transport": "arrow" if spark.codec is not None else "blocks",
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
            # what the level files hold: the kernel's packed states and fingerprints (its library,
            # a digest of its sources and constants, and its state width), or readable states
            "path": _path_record(getattr(self, "_path", None)),
        }
        run_dir.write_bytes("run.json", json.dumps(payload, indent=1).encode())
        spark.committed_at = time.monotonic()
    def _resume(self, run_dir: RunDir) -> tuple[SparkRun | None, Counters, list[LevelInfo]]:
        if run_dir.local and not run_dir.exists():
            raise BadFileError(f"run directory {run_dir.path} does not exist; check the path given "
                               "to --resume")
        spark = None
        if not run_dir.local:
            spark = self._start(run_dir)
        raw = run_dir.read_bytes("run.json")
        if raw is None:  # nothing was committed yet (the run was still in its local levels)
            st = Counters(self.local._initial_level())
            return spark, st, [LevelInfo(1, 0, st.distinct)]
        where = run_dir.join("run.json")
        payload = (parse_json(where, raw, "Spark run.json") if run_dir.local
                   else _remote_json(where, raw))
        if (not isinstance(payload, dict) or payload.get("magic") != RUN_MAGIC
            or payload.get("format") != RUN_FORMAT):
            raise BadFileError(f"{where} is not a kmc Spark run of this version; start the run "
                               "again without --resume")
        want = json.loads(json.dumps(ckpt._identity(self.model, self.options)))
        if payload.get("identity") != want:
            raise WrongModelError(f"run directory {run_dir.path} was written for another run "
                                  f"({ckpt.identity_difference(payload.get('identity'), want)}); "
                                  "resume with the same model, constants and options")
        levels = _checked_levels(payload, run_dir, where, {inv.name for inv in self.invariants},
                                 self.options.check_deadlock)
        self._resumed_transport = payload["transport"]
        self._resumed_path = _checked_path(payload, where)
        if run_dir.local:  # before Spark starts; on Hadoop storage once it runs
            _check_digests(run_dir, levels)
            self._take_path()
        local = load_local_prefix(run_dir, self.model, self.options)
        if spark is None:
            spark = self._start(run_dir)
        else:
            _check_digests(run_dir, levels)
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
            raise BadFileError(f"{where} does not fit the run directory's local.ckpt (it counts "
                               f"{st.local_distinct} states on the driver, local.ckpt has "
                               f"{len(local.log)}); it cannot be resumed")
        st.spark_started = True
        # the local prefix's last level, which the kernel path packs again (``packed_prefix``)
        self._resumed_frontier = local.frontier
        local.frontier = []
        paths = [level.path for level in levels if level.path]
        if paths:
            try:
                frame = spark.session.read.parquet(*paths)
                rows = frame.count()
            # files of the right digest Spark cannot read: run.json was rewritten to fit
            except Exception as exc:
                raise BadFileError(f"run directory {run_dir.path}: its level files cannot be read "
                                   f"as Parquet ({type(exc).__name__}); it cannot be "
                                   "resumed") from None
            if rows != st.distinct - st.local_distinct:
                raise BadFileError(f"run directory {run_dir.path}: its level files hold {rows:,} "
                                   f"states, run.json counts {st.distinct - st.local_distinct:,}; "
                                   "it cannot be resumed")
        return spark, st, levels

    def _check_resumed_path(self) -> None:
        """The path this run takes (``_choose_path``) is the one that wrote the run directory: its
        level files hold that path's states and fingerprints (exit 65, one line, if not)."""
        written, now = self._resumed_path, _path_record(self._path)
        if written == now:
            return
        where = self._run_dir.path

        def said(record: dict[str, Any]) -> str:
            if record["path"] == "readable":
                return "the readable model"
            return (f"the compiled kernel {record['library']} ({record['state_bytes']} bytes a "
                    "state)")

        why = f" ({self._path['reason']})" if self._path.get("reason") else ""
        hint = ("resume it with --kernel off" if written["path"] == "readable" else
                "resume it on the kernel that wrote it, with the same sources and constants")
        raise BadFileError(f"run directory {where} holds the states of {said(written)}, this run "
                           f"is on {said(now)}{why}; it cannot be resumed ({hint})")

    def _rebuild(self, spark: SparkRun, st: Counters, levels: list[LevelInfo],
                 run_dir: RunDir) -> None:
        """The resumed levels back in Spark, in the transport that wrote them."""
        if self._resumed_transport == "arrow" and self._packed:
            self._packed_resume(spark, st, levels)
            return
        if self._resumed_transport == "arrow":
            self._arrow_resume(spark, st, levels, run_dir)
            return
        local = st.local
        sc, parts = spark.sc, spark.partitions
        paths = [level.path for level in levels if level.path]
        local_fps = sc.parallelize(local.visited.array.tolist(), parts).map(_fp_record)
        if paths:
            read = spark.session.read.parquet(*paths).select("fp").rdd.map(_fp_of_row)
            local_fps = local_fps.union(read)
        spark.visited = (
            local_fps.partitionBy(parts, fingerprint_partition)
            .mapPartitionsWithIndex(_fps_to_chunk,
                                    preservesPartitioning=True).persist(storage_level())
        )
        if st.frontier_size:
            codec = Codec(self.model.state_types())
            last = levels[-1]
            if last.path is None:
                raise BadFileError(f"{run_dir.join('run.json')} is inconsistent (its last level "
                                   "has no file)")
            spark.frontier = (
                spark.session.read.parquet(last.path).rdd.map(_DecodeRow(codec))
                .partitionBy(parts, fingerprint_partition)
                .mapPartitionsWithIndex(_rows_to_block,
                                        preservesPartitioning=True).persist(storage_level())
            )
