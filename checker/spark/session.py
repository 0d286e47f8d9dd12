"""The Spark session and its environment: PySpark and Java present, task retries on local masters,
the project's packages shipped to a real cluster, the storage level of every persisted RDD, and the
cluster's shared secret when it requires one.

Authentication (``spark.authenticate``): a standalone cluster started with a secret (as
``bench/spark-standalone.sh`` does) refuses a driver without it. kmc's driver takes the secret from
the file named by ``KMC_SPARK_SECRET_FILE`` (only the owner may read it) and gives it to its JVM
through Py4J once the JVM runs, never on a command line (PySpark passes the options it launches the
JVM with as ``--conf`` arguments, which every local user can read in ``ps``). A driver that the
master does not accept (no secret, a wrong one, no master there) is stopped after
``KMC_SPARK_CONNECT_SECONDS`` (default 60) with one line naming the likely fix, instead of Spark's
own retries and its log on stderr.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import zipfile
from collections.abc import Iterator, MutableMapping
from typing import Any

from checker.spark import class_archive
from spec.errors import BadFileError, EnvironmentMissingError, UsageError

_PACKAGES = ("spec", "checker", "invariants", "traces")
#: the Spark master when none is given: every core of this machine
DEFAULT_MASTER = "local[*]"
#: the environment variables of the secret file and of the time a cluster's master has to accept the
#: driver
SECRET_FILE_VARIABLE = "KMC_SPARK_SECRET_FILE"
CONNECT_SECONDS_VARIABLE = "KMC_SPARK_CONNECT_SECONDS"
DEFAULT_CONNECT_SECONDS = 60.0
#: the driver JVM's log configuration unless ``--verbose`` (errors only, on stderr)
LOG4J2_PROPERTIES = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                 "log4j2-kmc.properties")
_SECRET = re.compile(r"[\x21-\x7e]{16,1024}")  # printable, no blanks: a properties value as it is


def check_environment() -> None:
    """Raise ``EnvironmentMissingError`` naming the fix when PySpark or Java is missing."""
    if importlib.util.find_spec("pyspark") is None:
        raise EnvironmentMissingError(
            "the spark engine needs PySpark, which is not installed: "
            "run python3 -m pip install 'pyspark>=3.4' (or pip install -e '.[spark]')"
        )
    java_home, java = _java()
    if java_home:
        if not os.access(java, os.X_OK):
            raise EnvironmentMissingError(
                f"the spark engine needs Java 17, but JAVA_HOME={java_home} has no bin/java: "
                "point JAVA_HOME at a Java 17 installation or install one (e.g. apt-get install "
                "openjdk-17-jre-headless)"
            )
    elif java is None:
        raise EnvironmentMissingError(
            "the spark engine needs Java 17, which was not found (no java on PATH and JAVA_HOME "
            "unset): install Java 17 (e.g. apt-get install openjdk-17-jre-headless) or set "
            "JAVA_HOME"
        )


def _java() -> tuple[str | None, str | None]:
    """``$JAVA_HOME`` and the java it names, else (None, the java on the PATH or None): the one Java
    Spark's launcher starts."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        return java_home, os.path.join(java_home, "bin", "java")
    return None, shutil.which("java")


def check_java_runs() -> None:
    """Raise ``EnvironmentMissingError`` when ``java -version`` does not run: a run whose JVM starts
    late (a local master, ``driver_level.lazy_master``) learns of a broken Java before its search,
    as a run whose JVM starts first does (``engine.translate_spark_failure``)."""
    java = _java()[1] or "java"
    try:
        probe = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=120,
                               check=False)
        failure = None if probe.returncode == 0 else (probe.stderr.strip().splitlines() or [""])[0]
    except (OSError, subprocess.TimeoutExpired) as exc:
        failure = type(exc).__name__
    if failure is not None:
        raise EnvironmentMissingError(f"the spark engine could not start Java ('{java} -version' "
                                      f"failed: {failure[:200]}): install Java 17 or set JAVA_HOME")


def with_task_retries(master: str, attempts: int = 4) -> str:
    """``local`` / ``local[N]`` / ``local[*]`` -> ``local[N,attempts]``: local Spark retries failed
    tasks too."""
    if master == "local":
        return f"local[1,{attempts}]"
    match = re.fullmatch(r"local\[(\d+|\*)\]", master)
    return f"local[{match.group(1)},{attempts}]" if match else master


def prepare_environment(master: str, env: MutableMapping[str, str]) -> None:
    """The environment a session started by kmc (not by spark-submit) gives Spark, in ``env``.

    * Local masters: the executors are this machine's Python workers, so they run the driver's
      interpreter. On a cluster they run the interpreter the cluster configures
      (``spark.pyspark.python``, or ``PYSPARK_PYTHON`` in its ``spark-env.sh``), never a path of
      the driver's machine.
    * A master on this machine (``local...``, ``spark://127.0.0.1``) binds to the loopback
      interface: no ``SPARK_LOCAL_IP`` to set by hand, no warning about the host name.
    * The project's packages are importable by local Python workers (a cluster gets them shipped).
    A value the user has set is kept.
    """
    if master.startswith("local"):
        env.setdefault("PYSPARK_PYTHON", sys.executable)
    if on_loopback(master):
        env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    root = _project_root()
    paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    if root not in paths:
        env["PYTHONPATH"] = os.pathsep.join([root, *paths])


def on_loopback(master: str) -> bool:
    """True for an embedded master (``local...``) or a cluster whose master is on 127.0.0.1."""
    if master.startswith("local"):
        return True
    match = re.match(r"spark://([^:/]+)", master)
    return bool(match) and match.group(1) in ("127.0.0.1", "localhost")


def _project_root() -> str:
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def auth_secret(env: MutableMapping[str, str] | None = None) -> str | None:
    """The cluster's shared secret from the file ``KMC_SPARK_SECRET_FILE`` names, or None when it is
    unset.

    The file must be a regular file only its owner can read, holding one word of 16 to 1024
    printable characters (``bench/spark-standalone.sh`` writes 64 hex digits); anything else is one
    line and exit 65 (66 for a file that is not there)."""
    from checker.safe_io import read_file

    env = os.environ if env is None else env
    path = env.get(SECRET_FILE_VARIABLE)
    if path is None:
        return None
    if not path.strip():
        raise UsageError(f"{SECRET_FILE_VARIABLE} is set but empty; give the path of the cluster's "
                         "secret file or unset it")
    data = read_file(path, "Spark secret", 4096)
    mode = os.stat(path).st_mode & 0o777
    if mode & 0o077:
        raise BadFileError(f"the Spark secret file {path} can be read by other users (mode "
                           f"{mode:04o}); chmod 600 {path}")
    try:
        secret = data.decode("ascii").strip()
    except UnicodeDecodeError:
        secret = ""
    if not _SECRET.fullmatch(secret):
        raise BadFileError(f"the Spark secret file {path} does not hold a secret (one word of 16 "
                           "to 1024 printable "
                           "ASCII characters); bench/spark-standalone.sh start writes one")
    return secret


def connect_seconds(env: MutableMapping[str, str] | None = None) -> float:
    """How long a cluster's master has to accept the driver (``KMC_SPARK_CONNECT_SECONDS``, default
    60)."""
    env = os.environ if env is None else env
    text = env.get(CONNECT_SECONDS_VARIABLE)
    if text is None:
        return DEFAULT_CONNECT_SECONDS
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value < 1e6:
        raise UsageError(f"{CONNECT_SECONDS_VARIABLE} must be a positive number of seconds, not "
                         f"{text!r}")
    return value


def _create(builder: Any, options: dict[str, str], master: str, secret: str | None, seconds: float,
            quiet: bool = True) -> Any:
    """``builder.getOrCreate()`` with ``options``. The JVM is launched with the options alone
    (``launch_jvm``); with ``secret``, the secret is set through Py4J after. On a cluster master,
    the SparkContext (whose creation waits for the master to register the application) is made first
    under a watchdog that ends the JVM when the master has not accepted the driver within
    ``seconds``: one line instead of Spark's minute of retries. The session is built on it after."""
    from pyspark import SparkConf, SparkContext

    local = master.startswith("local")
    # the JVM first (the watchdog times the master, not Java's start-up), its stderr through
    # ``_forward_jvm_stderr``
    launch_jvm(SparkConf(loadDefaults=False).setAll(list(options.items())), quiet=quiet)
    if secret is not None:
        options = {**options, "spark.authenticate": "true", "spark.authenticate.secret": secret}
    for key, value in options.items():
        builder = builder.config(key, value)
    if local:
        return builder.getOrCreate()
    accepted = threading.Event()
    expired: list[bool] = []

    def watch() -> None:
        if not accepted.wait(seconds):
            expired.append(True)
            process = getattr(SparkContext._gateway, "proc", None)
            if process is not None:
                process.kill()

    watchdog = threading.Thread(target=watch, name="kmc-spark-connect", daemon=True)
    watchdog.start()
    try:
        SparkContext.getOrCreate(SparkConf().setAll(list(options.items())))
    except Exception:
        if not expired:
            raise
        how = ("with the secret of KMC_SPARK_SECRET_FILE: is it this cluster's?" if secret
               is not None else
               "without a secret: if the cluster requires one (spark.authenticate), set "
               "KMC_SPARK_SECRET_FILE to the file holding it (bench/spark-standalone.sh start "
               "names it)")
        raise EnvironmentMissingError(f"the Spark master {master} did not accept kmc's driver "
                                      f"within {seconds:g} s, which connected {how}; check the "
                                      "master URL and that the master runs") from None
    finally:
        accepted.set()
    return builder.getOrCreate()


def session_options(master: str, memory: str, ui: bool, jvm_log: bool) -> dict[str, str]:
    """The configuration of a session kmc starts itself (not under spark-submit, whose ``--conf``
    rule)."""
    options = {
        "spark.master": with_task_retries(master),
        "spark.ui.enabled": "true" if ui else "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.memory": memory,
        # a level's keys come back to the driver as one Arrow table, 48 bytes a new state
        # (fingerprint, key and the four statistics columns, null on a state's row): Spark's default
        # of 1g refuses a level of about 22 M states, which the driver's memory would hold
        "spark.driver.maxResultSize": memory,
        "spark.sql.shuffle.partitions": "8",
        # the Arrow transport checkpoints every level: the files of a level no longer referenced go
        "spark.cleaner.referenceTracking.cleanCheckpoints": "true",
    }
    java_options: list[str] = []
    if on_loopback(master) and not os.environ.get("KMC_SPARK_FULL_JIT"):
        # A local master's executors are this JVM, and a search makes a few dozen short jobs of
        # new query plans: HotSpot's optimizing compiler (C2) then spends more CPU compiling
        # Spark's code than the jobs spend running it (22 of 40 JVM CPU seconds on Kafka 2.1.0,
        # 612,834 states); its quick compiler alone costs a little speed and saves most of that
        # (bench/NOTES.md, "Issue 13 item 4: third round"). A cluster on this machine
        # (spark://127.0.0.1, bench/spark-standalone.sh) runs the same jobs in executors of its
        # own: they get it too. KMC_SPARK_FULL_JIT=1 keeps C2.
        java_options.append("-XX:TieredStopAtLevel=1")
        if not master.startswith("local"):
            options["spark.executor.extraJavaOptions"] = "-XX:TieredStopAtLevel=1"
    if jvm_log:
        # as setLogLevel("ERROR") below, from the start: a master's refusals and retries are
        # warnings
        options["spark.log.level"] = "ERROR"
    else:
        # errors only from the first line: no default profile, so no banner (a file, as log4j2 reads
        # it)
        java_options.append(f"-Dlog4j2.configurationFile={LOG4J2_PROPERTIES}")
    if java_options:
        options["spark.driver.extraJavaOptions"] = " ".join(java_options)
    return options


def class_archive_of(memory: str) -> tuple[str | None, str, float]:
    """What a driver's class archive is keyed by (``class_archive.archive_key``): the Java Spark's
    launcher starts, the Spark home and the heap in GiB."""
    from pyspark.find_spark_home import _find_spark_home

    return _java()[1], _find_spark_home(), class_archive.memory_gib(memory)


def with_class_archive(options: dict[str, str], memory: str) -> dict[str, str]:
    """``options`` with the driver JVM's class archive (``checker.spark.class_archive``: used when
    kept, else made as this run's JVM exits) among its Java options."""
    java_options = class_archive.driver_options(*class_archive_of(memory))
    if not java_options:
        return options
    kept = options.get("spark.driver.extraJavaOptions", "")
    return {**options, "spark.driver.extraJavaOptions": " ".join([*kept.split(), *java_options])}


def spark_session(master: str = DEFAULT_MASTER, memory: str = "4g", ui: bool = False,
                  jvm_log: bool = False) -> tuple[Any, bool]:
    """The active SparkSession, or a new one for ``master``; True when this call created it.

    ``ui``: keep Spark's web UI and its REST API (the benchmark reads the stages' metrics there).
    ``jvm_log`` (``kmc check --verbose``): Spark's own log profile (info, then warnings once the
    session runs) and the JVM's start-up lines; without it the JVM logs errors only
    (``log4j2-kmc.properties``) and its start-up banner is dropped (``_forward_jvm_stderr``), so a
    run prints kmc's lines alone.

    Under ``spark-submit`` the master and the rest of the configuration come from spark-submit.
    """
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active, False
    submitted = "PYSPARK_GATEWAY_PORT" in os.environ  # launched by spark-submit or a pyspark shell
    builder = SparkSession.builder.appName("kmc")
    with _sigint_kept():
        if submitted:
            session = builder.getOrCreate()
        else:
            prepare_environment(master, os.environ)
            secret, seconds = auth_secret(), connect_seconds()
            options = with_class_archive(session_options(master, memory, ui, jvm_log), memory)
            try:
                session = _create(builder, options, master, secret, seconds, quiet=not jvm_log)
            except BaseException:
                class_archive.abandon()
                raise
            from pyspark import SparkContext

            class_archive.started(getattr(SparkContext._gateway, "proc", None))
    session.sparkContext.setLogLevel("ERROR")
    return session, True


@contextlib.contextmanager
def _sigint_kept() -> Iterator[None]:
    """The caller's SIGINT handler, put back after the block: a ``SparkContext`` created in the main
    thread installs PySpark's own (it cancels the jobs and raises ``KeyboardInterrupt``, and after
    the context stops it fails on the stopped context), and keeps it for the life of the process.
    kmc's runs handle Ctrl-C themselves while Spark runs (``SparkInterrupt``); the rest of the
    process (a program calling kmc, the level commits' ``safe_io.interrupts_deferred``, which acts
    only under Python's default handler) keeps its own."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    try:
        yield
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)


def launch_jvm(conf: Any, quiet: bool) -> None:
    """Start the driver's JVM (PySpark's ``launch_gateway``) with ``conf``, unless one runs;
    ``quiet``: its stderr is piped through ``_forward_jvm_stderr`` (the start-up banner dropped, the
    rest as it comes)."""
    import subprocess

    from pyspark import SparkContext
    from pyspark.java_gateway import launch_gateway

    if SparkContext._gateway is not None:
        return
    gateway = launch_gateway(conf, popen_kwargs={"stderr": subprocess.PIPE} if quiet else None)
    if quiet:
        threading.Thread(target=_forward_jvm_stderr, args=(gateway.proc.stderr, sys.stderr),
                         daemon=True, name="kmc-jvm-stderr").start()
    SparkContext._ensure_initialized(gateway=gateway, conf=conf)


#: the lines the driver's JVM prints at every start whatever its log level: the Java runtime's
#: notice of the incubating module Spark's launcher adds (``--add-modules=jdk.incubator.vector``,
#: spark-launcher's ``JavaModuleOptions``, Spark 4), which no option of the runtime turns off
JVM_BANNER = (b"WARNING: Using incubator modules:",)


def _forward_jvm_stderr(source: Any, target: Any) -> None:
    """Copy the JVM's stderr (bytes, a line at a time) to ``target`` as it comes, but the
    ``JVM_BANNER`` lines."""
    sink = getattr(target, "buffer", None)
    for line in iter(source.readline, b""):
        if line.startswith(JVM_BANNER):
            continue
        try:
            if sink is not None:
                target.flush()
                sink.write(line)
                sink.flush()
            else:
                target.write(line.decode("utf-8", "replace"))
                target.flush()
        except (OSError, ValueError):  # the driver's stderr closed at exit: nothing left to show
            return


def _ship_packages(sc: Any, directory: str) -> None:
    """Send this project's packages to the executors of a real cluster (local masters import them
    directly)."""
    root = _project_root()
    target = os.path.join(directory, "kmc-packages.zip")
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as zf:
        for package in _PACKAGES:
            for folder, _dirs, files in os.walk(os.path.join(root, package)):
                for name in files:
                    if name.endswith(".py") or name.endswith(".json"):
                        full = os.path.join(folder, name)
                        zf.write(full, os.path.relpath(full, root))
    sc.addPyFile(target)


def storage_level() -> Any:
    from pyspark import StorageLevel

    return StorageLevel.MEMORY_AND_DISK


class SparkInterrupt:
    """Ctrl-C during a Spark run: one line and exit 130, as on the local engines.

    PySpark's own SIGINT handler (installed with the SparkContext) calls ``cancelAllJobs`` through
    Py4J from inside the signal handler: when the signal lands while the driver waits for a Spark
    job, that is a re-entrant call on the connection the driver waits on, and Py4J logs two
    tracebacks before the ``KeyboardInterrupt``. This handler, in its place while a search runs,
    does not touch the connection: when the driver is inside a Py4J call it cancels the jobs from a
    thread of its own (its own connection; again every 0.2 s, so a job started after is cancelled
    too, and with Spark's log turned off, so the Python workers that the terminal's Ctrl-C ended are
    not reported), and the search raises ``KeyboardInterrupt`` as soon as the call returns
    (``raise_if_interrupted``, the engine's ``run_engine``); elsewhere it raises
    ``KeyboardInterrupt`` at once. A second Ctrl-C raises at once."""

    def __init__(self, sc: Any) -> None:
        self.sc = sc
        self.pending = threading.Event()
        self.done = threading.Event()
        self.previous: Any = None

    def install(self) -> None:
        if threading.current_thread() is threading.main_thread():
            self.previous = signal.signal(signal.SIGINT, self._handler)

    def uninstall(self) -> None:
        self.done.set()
        if self.previous is not None and threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGINT, self.previous)
            self.previous = None

    @property
    def interrupted(self) -> bool:
        return self.pending.is_set()

    def raise_if_interrupted(self) -> None:
        if self.pending.is_set():
            self.done.set()
            raise KeyboardInterrupt

    def _handler(self, _signum: int, frame: Any) -> None:
        if self.pending.is_set() or not _inside_py4j(frame):
            self.pending.set()
            self.done.set()
            raise KeyboardInterrupt
        self.pending.set()
        threading.Thread(target=self._cancel, name="kmc-spark-interrupt", daemon=True).start()

    def _cancel(self) -> None:
        with contextlib.suppress(Exception):
            self.sc.setLogLevel("OFF")
        while not self.done.is_set():
            try:
                self.sc.cancelAllJobs()
            except Exception:  # the context is gone: nothing left to cancel
                return
            self.done.wait(0.2)


def _inside_py4j(frame: Any) -> bool:
    """True when ``frame`` (where the signal landed) is inside a Py4J call, i.e. the driver waits on
    the JVM."""
    while frame is not None:
        if f"{os.sep}py4j{os.sep}" in frame.f_code.co_filename:
            return True
        frame = frame.f_back
    return False
