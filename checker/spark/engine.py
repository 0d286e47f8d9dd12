"""The Spark engine's driver: its options (``SparkOptions``) and its place in the one level loop
(``checker.levels.run_levels``), whose level step is a local level while the frontier is below the
threshold, then, Spark started and the local prefix moved to it once, a Spark level with the arrow
(``arrow_step``) or blocks (``level_step``) transport. The loop's budgets, stop conditions and
Ctrl-C are the other engines'; its checkpoint is the run directory each Spark level commits
(``resume``), so the loop writes none. The design is in ``checker.spark``."""

from __future__ import annotations

import os
import re
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Any

from checker.bfs import LocalBFS
from checker.levels import LevelSearch, run_levels
from checker.result import CheckResult
from checker.search import Progress, SearchOptions
from checker.spark import class_archive
from checker.spark.arrow_step import ArrowLevelStep, arrow_available
from checker.spark.driver_level import LOCAL_MASTER, DriverLevelStep, lazy_master
from checker.spark.driver_state import Counters, LevelInfo, LevelTiming, SparkRun
from checker.spark.level_step import LevelStep
from checker.spark.packed_step import PackedLevelStep, packed_available
from checker.spark.resume import Resumable
from checker.spark.rundir import RunDir
from checker.spark.session import (
    DEFAULT_MASTER,
    SparkInterrupt,
    _ship_packages,
    check_environment,
    check_java_runs,
    spark_session,
)
from checker.spark.verdict import Verdicts
from spec.errors import EnvironmentMissingError, KmcError, ModelError, UsageError
from spec.model import Model

DEFAULT_THRESHOLD = 10_000
#: the kernel's levels whose frontier has fewer states run on the driver in C (``driver_level``):
#: a Spark level's fixed cost, 0.6-1.0 s of wall and 1.1 s of CPU on local[2] (bench/NOTES.md,
#: issue 39), is what the driver's kernel takes to expand about 300,000 states
DEFAULT_DRIVER_BELOW = 300_000
#: levels with at most this many new states are numbered on the driver (their keys come back with
#: job 1)
DEFAULT_DRIVER_INDEX_LIMIT = 50_000
#: levels between two reliable checkpoints of the RDDs (cuts their lineage)
DEFAULT_CHECKPOINT_LEVELS = 10
#: levels whose visited fingerprints stay separate sorted runs before they are merged into one
#: (the arrow transport: a level anti-joins each run, the merge shuffles every visited fingerprint)
DEFAULT_MERGE_LEVELS = 8


@dataclass(frozen=True)
class SparkOptions:
    """The Spark engine's options (master, threshold and transport are the command line's, named by
    the engine's record in ``checker.engines``; the others are for tests and
    ``bench/spark_bench.py``)."""

    master: str = DEFAULT_MASTER
    #: levels run on the driver with the local engine while the frontier has fewer states
    threshold: int = DEFAULT_THRESHOLD
    #: the kernel's levels run on the driver in C when the frontier has fewer states (0: every
    #: level on the executors)
    driver_below: int = DEFAULT_DRIVER_BELOW
    #: "arrow", "blocks" or None (arrow when PyArrow and PySpark 4 are there, blocks for resumable
    #: runs)
    transport: str | None = None
    partitions: int | None = None  # None: two a core (one with the arrow transport)
    checkpoint_levels: int = DEFAULT_CHECKPOINT_LEVELS
    merge_levels: int = DEFAULT_MERGE_LEVELS
    driver_index_limit: int = DEFAULT_DRIVER_INDEX_LIMIT
    driver_memory: str = "4g"
    verbose: bool = False  # a line a level on stderr
    #: the driver JVM's own log and start-up lines on stderr (``kmc check --verbose``); else errors
    #: only
    jvm_log: bool = False
    # fault injection (tests): one expansion task at this depth fails once
    fail_task_at_depth: int | None = None
    fail_marker: str = ""
    #: the kernel's levels in blocks (``packed_step``) where they can run; False: the arrow
    #: transport's DataFrames of packed rows (``kernel_step``), for cross-checks and measures
    packed: bool = True

    def __post_init__(self) -> None:
        if self.driver_below < 0:
            raise UsageError(f"--spark-driver-below must be 0 or more, not {self.driver_below}")
        if (self.master.startswith("local") and not self.master.startswith("local-cluster[")
                and not LOCAL_MASTER.fullmatch(self.master)):
            # Spark's own refusal is a JVM trace on stderr
            raise UsageError(f"--master {self.master}: a local master is local, local[N], "
                             "local[*], local[N,F] or local[*,F]")
        if self.transport not in (None, "arrow", "blocks"):
            raise UsageError(f"unknown Spark transport {self.transport!r}: arrow or blocks")


class SparkBFS(DriverLevelStep, PackedLevelStep, ArrowLevelStep, LevelStep, Resumable, Verdicts,
               LevelSearch):
    engine = "spark"

    def __init__(self, model: Model, options: SearchOptions, engine_options: SparkOptions) -> None:
        self.model = model
        self.options = options
        self.master = engine_options.master
        self.threshold = engine_options.threshold
        self.driver_below = engine_options.driver_below
        self.partitions = engine_options.partitions
        self.checkpoint_levels = engine_options.checkpoint_levels
        self.merge_levels = max(1, engine_options.merge_levels)
        self.driver_index_limit = engine_options.driver_index_limit
        # fault injection (tests): the first attempt of one expansion task at this depth fails
        self.fail_at_depth = engine_options.fail_task_at_depth
        self.fail_marker = engine_options.fail_marker
        self.memory = engine_options.driver_memory
        self.verbose = engine_options.verbose
        self.jvm_log = engine_options.jvm_log
        #: "arrow" (DataFrames, Arrow batches, dedup in the JVM), "blocks" (RDDs of columnar blocks,
        #: the transport of resumable runs) or None: arrow when available, else blocks
        self.transport = engine_options.transport
        self.packed_allowed = engine_options.packed
        #: the levels run in the kernel's blocks (``packed_step``), set once the path is chosen
        self._packed = False
        if options.keep_graph:
            raise UsageError("the spark engine does not keep the state graph (liveness); use "
                             "--engine local")
        self.local = LocalBFS(model, options)
        self.symmetry = self.local.symmetry
        self.invariants = self.local.invariants
        self.timings: list[LevelTiming] = []
        #: the transport that wrote the run directory a ``--resume`` continues ("arrow" or
        #: "blocks"), None otherwise
        self._resumed_transport: str | None = None
        #: the path that wrote it (run.json's ``path``) and the local prefix's last level
        self._resumed_path: dict[str, Any] | None = None
        self._resumed_frontier: list[Any] = []
        #: the compiled kernel the executors expand with (``kernel_step``), its library as bytes,
        #: and what ``--verbose`` and ``--json`` say of the path (``_choose_path``)
        self._kernel: Any = None
        self._shipment: Any = None
        self._path: dict[str, Any] = {}
        self._console = self._level_console()

    def _level_console(self) -> Any:
        progress = self.options.progress
        if getattr(progress, "enabled", False) and getattr(progress, "console", None) is not None:
            return progress.console
        if self.verbose:
            from rich.console import Console

            return Console(stderr=True)
        return None

    # -- the search --------------------------------------------------------------------------------
    def run(self) -> CheckResult:
        """Set up (the run directory, a resumed run), then the level loop (``checker.levels``) whose
        level step is a local level while the frontier is below the threshold, else a Spark level
        (Spark started, and the local prefix moved to it, before the first one)."""
        check_environment()
        if lazy_master(self.master):  # its JVM may start late, or never: is Java there at all?
            check_java_runs()
        opts = self.options
        if opts.checkpoint_path and not self.model.state_types():
            raise UsageError(f"model {self.model.name} declares no state types, so its Spark runs "
                             "cannot be resumed; "
                             "drop --checkpoint")
        started = time.monotonic()
        self.local._started = started
        where = opts.checkpoint_path or opts.resume_from
        self._run_dir = RunDir(where) if where else None
        self._spark = None
        self._interrupt: SparkInterrupt | None = None
        try:
            if opts.resume_from:
                self._spark, st, self._levels = self._resume(self._run_dir)
                self.local._started = started - st.elapsed
            else:
                st = Counters(self.local._initial_level())
                self._levels = [LevelInfo(1, 0, st.distinct)]
            self._started = self.local._started
            self._take_path()
            if self._resumed_transport is not None:  # the resumed levels, in their transport
                self._rebuild(self._spark, st, self._levels, self._run_dir)
            result = run_levels(self, st)
            self._raise_if_interrupted()
            class_archive.run_completed()  # its JVM may keep its class archive as it exits
        except Exception:
            # a job cancelled by Ctrl-C (``SparkInterrupt``) ends as the Ctrl-C
            self._raise_if_interrupted()
            raise
        finally:
            if self._spark is not None:
                self._stop(self._spark, self._run_dir)
            elif self._run_dir is not None and self._run_dir.temporary:
                self._run_dir.cleanup()
            if self._interrupt is not None:
                self._interrupt.uninstall()
        return result

    def _take_path(self) -> None:
        """The transport and the path (the kernel's, in blocks or DataFrames, or the readable
        model's), chosen once; a resumed run's checked to be the one that wrote its run directory
        (``_resume`` calls this before Spark starts when the directory is on this machine)."""
        if self._path:
            return
        self._arrow = self._use_arrow()
        self._choose_path()
        self._packed = (self._arrow and self._kernel is not None and self.packed_allowed
                        and packed_available(self._run_dir))
        if self._path.get("path") == "kernel":  # --verbose and --json say how its levels move
            self._path["levels"] = "blocks" if self._packed else "dataframes"
        if self._resumed_path is not None:  # the level files hold the states of this path
            self._check_resumed_path()

    def _raise_if_interrupted(self) -> None:
        if self._interrupt is not None:
            self._interrupt.raise_if_interrupted()

    # -- the hooks of the level loop (checker.levels) ---------------------------------------------
    #: the run directory (``--checkpoint``) is the resume point, written as each Spark level commits
    writes_checkpoints = False

    def queue(self, st: Counters) -> int:
        return st.frontier_size

    def distinct(self, st: Counters) -> int:
        return st.distinct

    def should_stop(self, st: Counters) -> bool:
        return self.options.stop_at_first and (bool(st.found) or st.deadlock is not None)

    def expand_level(self, st: Counters) -> None:
        """One level: on the driver with the local engine while the frontier is below the threshold
        (and Spark has not started), else on Spark with the arrow or the blocks transport."""
        self._raise_if_interrupted()
        if self._packed and not st.spark_started:  # the kernel path from the first level
            self._driver_switch(st)
        if not st.spark_started and len(st.local.frontier) < self.threshold:
            self._local_level(st)
            return
        if not st.spark_started:
            self._start_spark(st)
        if self._packed and self._on_driver(st):
            self._driver_level(self._spark, st, self._levels)
        elif self._packed:
            self._executors_started()
            self._packed_level(self._spark, st, self._levels)
        elif self._arrow:
            self._arrow_level(self._spark, st, self._levels)
        else:
            self._spark_level(self._spark, st, self._levels, self._run_dir)

    def finish(self, st: Counters, reason: str | None, checkpoint_file: str | None) -> CheckResult:
        spark = self._spark
        if (spark is not None and self._arrow and st.frontier_size > 0
            and not spark.frontier_checked):
            # a frontier the search stops at (a budget, a deadlock) is checked as the local engine
            # checks every level it commits
            if self._packed:
                self._packed_first_violations(spark, st, self._pending(st))
            else:
                self._first_violations(spark, st, self._pending(st))
            spark.frontier_checked = True
        if spark is not None and spark.unwritten:  # the driver's last levels, the resume point
            self._write_driver_levels(spark, st, self._levels)
            self._commit(spark, st, self._levels, self._run_dir)
        result = self._result(st, self._levels, self.elapsed(), reason, spark, self._run_dir)
        if spark is None or spark.sc is None:
            note = self._driver_only_note()
            result.extra["spark"]["driver_only"] = note
            if not _stderr_merged_into_stdout():
                print(note, file=sys.stderr)
        return result

    def _start_spark(self, st: Counters) -> None:
        """Start Spark and move the local prefix to it (its visited set and last level)."""
        if self._arrow:
            if self._run_dir is None:
                self._run_dir = RunDir(tempfile.mkdtemp(prefix="kmc-spark-"), temporary=True)
            self._spark = self._start(self._run_dir, per_core=1)
            if self._packed:
                self._packed_switch(self._spark, st)
            else:
                self._arrow_switch(self._spark, st, self._levels)
            return
        if self._spark is None:
            if self._run_dir is None:
                if not self.master.startswith("local"):
                    raise UsageError("on a Spark cluster, give --checkpoint DIR on shared storage "
                                     "(e.g. hdfs://...): the levels are written there")
                self._run_dir = RunDir(tempfile.mkdtemp(prefix="kmc-spark-"), temporary=True)
            self._spark = self._start(self._run_dir)
        self._switch(self._spark, st, self._levels, self._run_dir)

    def _use_arrow(self) -> bool:
        """The Arrow transport unless blocks is asked for or PyArrow, pandas or PySpark 4 is
        missing; a resumed run in the transport that wrote its run directory (both write resumable
        levels)."""
        written = self._resumed_transport
        if written is not None:
            if self.transport not in (None, written):
                raise UsageError(f"run directory {self._run_dir.path} was written by the {written} "
                                 f"Spark transport; resume it with --spark-transport {written} (or "
                                 "without --spark-transport)")
            if written == "arrow" and not arrow_available():
                raise EnvironmentMissingError("this run directory was written by the arrow Spark "
                                              "transport, which needs PyArrow and PySpark 4: "
                                              "python3 -m pip install -e '.[spark]'")
            return written == "arrow"
        if self.transport == "blocks":
            return False
        if self.transport == "arrow":
            if not arrow_available():
                raise EnvironmentMissingError("the arrow Spark transport needs PyArrow and PySpark "
                                              "4: python3 -m pip install -e '.[spark]'")
            return True
        # measured side by side on Kafka 2.1.0 brokers=3 (612,834 states, bench/NOTES.md): arrow
        # 0.28x the local engine and 93 CPU seconds, blocks 0.24x and 136 (local: 25)
        return arrow_available()

    def _choose_path(self) -> None:
        """The compiled kernel on the executors where ``checker.kernel.why_not`` allows it
        (``--kernel`` auto or on), else the readable model; ``self._path`` says which, and why not
        the kernel."""
        from checker import kernel as km
        from checker.kernel_batch import Shipment

        mode = self.options.kernel
        reason = "--kernel off" if mode == "off" else km.why_not(
            self.model, self.options, engine="spark", spark_transport="arrow" if self._arrow
            else "blocks")
        if reason is None:
            try:
                self._kernel = km.load(self.model.kernel())
            except km.KernelUnavailable as exc:
                reason = str(exc)
        if self._kernel is None:
            if mode == "on":
                raise km.KernelUnavailable(f"--kernel on: {reason}")
            self._path = {"path": "readable", "reason": reason}
            return
        self._shipment = Shipment.of(self._kernel)
        self._path = {"path": "kernel", "engine": "spark",
                      "kernel": os.path.basename(self._kernel.spec.source),
                      "library": self._shipment.name, "state_bytes": self._kernel.state_bytes,
                      "fingerprints": "the kernel's 64-bit hash of the packed state on Spark's "
                                      "levels"}

    def _driver_only_note(self) -> str:
        """One line: why this run never used Spark (every level stayed below the threshold)."""
        largest = max((t.frontier for t in self.timings), default=0)
        if self._packed:
            return ("spark engine: every level ran on the driver in C (largest frontier "
                    f"{largest:,} states, below --spark-driver-below {self.driver_below:,} or "
                    f"--spark-threshold {self.threshold:,}, where a level on the executors costs "
                    "more than on the driver); no Spark application was started. Lower them to "
                    "run levels on the executors.")
        return ("spark engine: every level ran on the driver with the local engine (largest "
                f"frontier {largest:,} states, below --spark-threshold {self.threshold:,}, where a "
                "Spark job costs more than the level); no Spark application was started. Lower "
                "--spark-threshold to run levels on Spark.")

    def _local_level(self, st: Counters) -> None:
        """A level on the driver with the local engine (the frontier is below the threshold)."""
        local = st.local
        level_started = time.monotonic()
        frontier = len(local.frontier)
        depth = local.depth
        self.local._expand_level(local)
        st.sync_from_local()
        if local.depth > depth:
            self._levels.append(LevelInfo(local.depth, local.frontier_base, len(local.frontier)))
        self._level_done(LevelTiming(local.depth, frontier, len(local.frontier) if local.depth
                                     > depth else 0,
                                     time.monotonic() - level_started, engine="local"), st)

    def _start(self, run_dir: RunDir, per_core: int = 2) -> SparkRun:
        """The Spark session and the run's partitions (``per_core`` a core unless given: the arrow
        transport takes one, as each partition's first-occurrence filter sees more of the level)."""
        session, created = spark_session(self.master, self.memory, jvm_log=self.jvm_log)
        sc = session.sparkContext
        if self._interrupt is None:  # Ctrl-C: one line, not PySpark's handler (``SparkInterrupt``)
            self._interrupt = SparkInterrupt(sc)
            self._interrupt.install()
        run_dir.attach(sc)
        if not sc.master.startswith("local"):
            staging = tempfile.mkdtemp(prefix="kmc-ship-")
            _ship_packages(sc, staging)
        sc.setCheckpointDir(run_dir.join("rdd-checkpoints"))
        partitions = int(self.partitions or max(2, per_core * sc.defaultParallelism))
        return SparkRun(session, sc, created, partitions)

    def _stop(self, spark: SparkRun, run_dir: RunDir | None) -> None:
        for rdd in (spark.frontier, spark.visited, *spark.retired, *spark.keep, *spark.pointers):
            if rdd is not None:
                try:
                    rdd.unpersist(False)
                except Exception:  # the context may already be gone
                    pass
        if spark.driver_seen is not None:
            spark.driver_seen.close()
            spark.driver_seen = None
            from checker.kernel_batch import batch_kernel

            batch_kernel(self._shipment).release_rows()  # the driver's levels' spare rows
        for broadcast in spark.broadcasts:
            try:
                broadcast.unpersist()
            except Exception:
                pass
        # The session stays active (a JVM start costs ~10 s): the next check in this process, e.g.
        # the next cell of ``kmc matrix --engine spark``, reuses it; the process exit stops it.
        if run_dir is not None and run_dir.temporary:
            run_dir.cleanup()

    def _level_done(self, timing: LevelTiming, st: Counters) -> None:
        self.timings.append(timing)
        if self._console is not None:
            self._console.print(
                f"[dim]{timing.engine:>6}[/] level {timing.depth:>3}: frontier "
                f"{timing.frontier:>10,}  new {timing.new:>10,}  distinct {st.distinct:>12,}  "
                f"{timing.seconds:7.2f} s",
                highlight=False,
            )
        if self.options.progress:
            self.options.progress(Progress(st.depth, st.generated, st.distinct, st.frontier_size,
                                           time.monotonic() - self._started))


def _stderr_merged_into_stdout() -> bool:
    """True under spark-submit, which runs its Python driver with stderr merged into stdout: a note
    there would land inside ``--json`` output (the result carries it anyway)."""
    if "PYSPARK_GATEWAY_PORT" not in os.environ:
        return False
    try:
        out, err = os.fstat(sys.stdout.fileno()), os.fstat(sys.stderr.fileno())
    except (OSError, ValueError, AttributeError):
        return False
    return os.path.samestat(out, err) and not sys.stderr.isatty()


def _explain_spark_failure(exc: Exception) -> KmcError:
    text = str(exc)
    lines = [line for line in text.splitlines() if line.strip()]
    python_error = next((line for line in reversed(lines)
                         if re.match(r"^\w*(Error|Exception)\b", line.strip())), None)
    return ModelError("a Spark job failed: "
                      f"{python_error or (lines[0] if lines else type(exc).__name__)}")


def run_engine(model: Model, options: SearchOptions, engine_options: SparkOptions) -> CheckResult:
    """The ``spark`` engine: ``kmc check MODEL --engine spark [--master URL]``."""
    try:
        return SparkBFS(model, options, engine_options).run()
    except Exception as exc:
        raise translate_spark_failure(exc) from exc


def translate_spark_failure(exc: Exception) -> Exception:
    """The exception to raise for ``exc`` from a Spark run: kmc's own errors as they are, a broken
    PySpark or a Java that does not start as exit 69 with the fix, a failed Spark job as one line
    naming the Python error."""
    if isinstance(exc, KmcError):
        return exc
    if isinstance(exc, ImportError):  # PySpark installed but broken
        return EnvironmentMissingError(f"the spark engine cannot import PySpark ({exc}); reinstall "
                                       "it: "
                                       "python3 -m pip install --force-reinstall 'pyspark>=3.4'")
    if "JAVA_GATEWAY_EXITED" in str(exc) or "Java gateway process exited" in str(exc):
        return EnvironmentMissingError("the spark engine could not start Java (the Java gateway "
                                       "exited): check that 'java -version' runs and shows Java "
                                       "17, or set JAVA_HOME")
    if type(exc).__name__ in ("Py4JJavaError", "PythonException", "Py4JError",
                              "PySparkRuntimeError"):
        return _explain_spark_failure(exc)
    return exc
