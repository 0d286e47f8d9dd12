"""The Spark driver JVM's class archive (HotSpot's dynamic AppCDS): the classes a kmc driver loads,
kept parsed and verified in one file of the kmc cache, so that the next driver maps them instead of
loading about ten thousand classes from Spark's jars again.

Measured (bench/NOTES.md, "stop 49"): a local session's start and first job, 12.5 s of the
machine's CPU and 10.6 s of wall without the archive, 6.7 s and 5.6 s with it. The first run of a
Spark installation pays once: its JVM writes the archive as it exits (``-XX:ArchiveClassesAtExit``,
about 16 s of wall at the run's end and 157 MB on disk); kmc waits for it, then keeps it.

- Where: ``$XDG_CACHE_HOME/kmc/jvm`` (else ``~/.cache/kmc/jvm``), beside the kernels, named by a
  key of the Java and the Spark jars it was made with (``archive_key``) and by a digest of its own
  bytes. A file whose bytes are not its name's digest, or that is not this user's own regular file
  writable by no one else, is never given to a JVM (a truncated archive crashes HotSpot with
  SIGBUS): it is removed and made again.
- One maker at a time: a run that finds no archive makes it only when it takes the key's lock; a run
  meanwhile starts without one. A run that does not end normally (an error, Ctrl-C) does not keep
  the archive: its JVM is killed before it writes one. A failed dump is remembered
  (``<key>.failed``), so no later run pays for it again.
- ``KMC_SPARK_CLASS_ARCHIVE=off`` turns it off; the JVM's own CDS messages are off either way (a
  mismatched archive is ignored by the JVM, silently).
- Only a driver kmc starts itself: not under ``spark-submit``, and never a cluster's executors.
"""

from __future__ import annotations

import atexit
import contextlib
import glob
import hashlib
import os
import re
import stat
import sys
import time
from typing import Any

from checker.kernel_cache import cache_dir, mark_used
from spec.errors import UsageError

VARIABLE = "KMC_SPARK_CLASS_ARCHIVE"
#: the JVM's CDS log lines (a skipped signed jar while dumping, an archive it cannot map) go
#: nowhere: kmc reports the archive's state itself (``--verbose``, ``--json``)
QUIET_LOG = ("-Xlog:cds*=off", "-Xlog:class+path=off")
#: how long the exiting run waits for its JVM to write the archive
DUMP_SECONDS = 240.0
#: a maker's lock older than this is stale whatever its pid says
LOCK_SECONDS = 1800.0
#: archives kept (the most recently used): two Spark installations used in turn keep theirs
KEEP = 2

#: what the last session of this process did: "off", "used", "making", "busy" (another run makes
#: it), "failed" (a dump failed before: not tried again), "made", "not kept"
state = "off"
_maker: dict[str, Any] | None = None
_completed = False


def memory_gib(memory: str) -> float:
    """A JVM heap size as Spark writes it (``4g``, ``512m``, ``1t``) in GiB; 0 when unreadable."""
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([kmgt]?)b?", memory.strip().lower())
    if match is None:
        return 0.0
    scale = {"": 1 / 2**30, "k": 1 / 2**20, "m": 1 / 2**10, "g": 1.0, "t": 2.0**10}
    return float(match.group(1)) * scale[match.group(2)]


def archive_dir() -> str:
    return os.path.join(os.path.dirname(cache_dir()), "jvm")


def archive_key(java: str | None, spark_home: str | None, heap_gib: float) -> str:
    """A key of what an archive depends on: the Java binary (its real path, size and time), the
    Spark jars (names, sizes and times) and whether the heap is small enough for compressed
    pointers (an archive made with them is of no use without)."""
    key = hashlib.sha256()
    for path in [java or "", *sorted(glob.glob(os.path.join(spark_home or "", "jars", "*.jar")))]:
        try:
            info = os.stat(os.path.realpath(path))
            key.update(f"{os.path.realpath(path)}\0{info.st_size}\0{info.st_mtime_ns}\n".encode())
        except OSError:
            key.update(f"{path}\0missing\n".encode())
    key.update(b"compressed" if heap_gib < 31 else b"wide")
    return key.hexdigest()[:20]


def _digest(path: str) -> str | None:
    """The sha256 of ``path``'s bytes (hex, 16 digits) when it is this user's own regular file that
    no one else may write, else None."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(f.fileno())
        if (not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid()
                or info.st_mode & 0o022):
            return None
        return hashlib.file_digest(f, "sha256").hexdigest()[:16]


def kept(java: str | None, spark_home: str | None, heap_gib: float) -> str | None:
    """The archive kept for this Java and Spark, checked, or None."""
    return _valid_archive(archive_dir(), archive_key(java, spark_home, heap_gib))


def _valid_archive(directory: str, key: str) -> str | None:
    """The key's archive when its bytes are its name's digest; a file that is not is removed."""
    for path in sorted(glob.glob(os.path.join(directory, f"driver-{key}-*.jsa"))):
        name = os.path.basename(path)
        if _digest(path) == name[len(f"driver-{key}-"):-len(".jsa")]:
            mark_used(path)  # pruning keeps the most recently used
            return path
        with contextlib.suppress(OSError):
            os.unlink(path)
    return None


def _lock(path: str) -> bool:
    """Take the maker's lock ``path`` (this pid in it), first removing a stale one: its pid gone,
    or older than ``LOCK_SECONDS``."""
    for _ in range(2):
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            if not _stale(path):
                return False
            with contextlib.suppress(OSError):
                os.unlink(path)
            continue
        except OSError:
            return False
        with os.fdopen(fd, "w") as f:
            f.write(str(os.getpid()))
        return True
    return False


def _stale(path: str) -> bool:
    try:
        with open(path) as f:
            pid = int(f.read().strip() or "0")
        age = time.time() - os.stat(path).st_mtime
    except (OSError, ValueError):
        return True
    if age > LOCK_SECONDS or pid <= 0:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def driver_options(java: str | None, spark_home: str | None, heap_gib: float,
                   env: dict[str, str] | None = None) -> list[str]:
    """The driver JVM's options for the archive (using it, or making it as the JVM exits); sets
    ``state``."""
    global state, _maker
    env = os.environ if env is None else env
    _maker = None
    setting = env.get(VARIABLE, "on").strip().lower()
    if setting not in ("on", "off"):
        raise UsageError(f"{VARIABLE} must be on or off, not {env[VARIABLE]!r}")
    if setting == "off":
        state = "off"
        return []
    directory = archive_dir()
    key = archive_key(java, spark_home, heap_gib)
    try:
        os.makedirs(directory, mode=0o700, exist_ok=True)
    except OSError:
        state = "off"
        return []
    found = _valid_archive(directory, key)
    if found is not None:
        state = "used"
        return [f"-XX:SharedArchiveFile={found}", *QUIET_LOG]
    if os.path.exists(os.path.join(directory, f"driver-{key}.failed")):
        state = "failed"
        return list(QUIET_LOG)
    lock = os.path.join(directory, f"driver-{key}.lock")
    if not _lock(lock):
        state = "busy"
        return list(QUIET_LOG)
    part = os.path.join(directory, f"driver-{key}.{os.getpid()}.part")
    for left in glob.glob(os.path.join(directory, f"driver-{key}.*.part")):
        with contextlib.suppress(OSError):  # a run cut short before it kept its archive
            os.unlink(left)
    state = "making"
    _maker = {"directory": directory, "key": key, "lock": lock, "part": part}
    return [f"-XX:ArchiveClassesAtExit={part}", *QUIET_LOG]


#: ``state`` in a line of ``--verbose``
WORDS = {"used": "used (its classes mapped, not loaded)",
         "making": "none yet: this run's JVM writes it as kmc exits",
         "busy": "none yet: another run is writing it",
         "failed": "none: writing it failed once (remove the .failed file beside the archives to "
                   "try again)",
         "off": f"off ({VARIABLE}=off, or the cache cannot be written)"}


def started(process: Any) -> None:
    """The driver JVM ``process`` (PySpark's gateway process) started with ``driver_options``: when
    it makes the archive, this process keeps it at its exit (``_keep``); with no process (no JVM
    of its own started) the lock goes now."""
    if _maker is None:
        return
    if process is None:
        abandon()
        return
    _maker["process"] = process
    atexit.register(_keep)


def abandon() -> None:
    """The JVM that was to make the archive did not start: its lock and file go."""
    global state, _maker
    maker, _maker = _maker, None
    if maker is not None:
        state = "not kept"
        for path in (maker["part"], maker["lock"]):
            with contextlib.suppress(OSError):
                os.unlink(path)


def run_completed() -> None:
    """The run ended normally: its JVM may write the archive as this process exits."""
    global _completed
    _completed = True


def _keep() -> None:
    """At this process's exit: a completed run waits for its JVM to write the archive, checks it
    and keeps it under its digest; any other run kills the JVM first (no archive of a run cut
    short). The lock goes either way."""
    global state, _maker
    maker, _maker = _maker, None
    if maker is None:
        return
    process = maker.get("process")
    try:
        if _completed and process is not None:
            if sys.stderr.isatty():
                print("kmc: keeping the Spark driver's class archive for the next runs (once; "
                      f"{VARIABLE}=off skips it)", file=sys.stderr, flush=True)
            state = "made" if _finish(process, maker) else "not kept"
        else:
            if process is not None and process.poll() is None:
                process.kill()
                process.wait()
            state = "not kept"
    except KeyboardInterrupt:
        if process is not None and process.poll() is None:
            process.kill()
        state = "not kept"
    finally:
        for path in (maker["part"], maker["lock"]):
            with contextlib.suppress(OSError):
                os.unlink(path)


def _finish(process: Any, maker: dict[str, Any]) -> bool:
    """Close the JVM's stdin (PySpark's gateway then exits), wait for it, keep a whole archive."""
    part, directory, key = maker["part"], maker["directory"], maker["key"]
    from pyspark import SparkContext

    context = SparkContext._active_spark_context
    if context is not None:  # its accumulator server first: the JVM's exit would end it mid-read
        with contextlib.suppress(Exception):
            context.stop()
    with contextlib.suppress(OSError, ValueError):
        process.stdin.close()
    try:
        code = process.wait(DUMP_SECONDS)
    except Exception:  # noqa: BLE001 - too slow: no archive this time
        process.kill()
        return False
    if code != 0 or not os.path.exists(part):
        _mark_failed(directory, key)
        return False
    os.chmod(part, 0o400)
    digest = _digest(part)
    if digest is None:
        return False
    os.replace(part, os.path.join(directory, f"driver-{key}-{digest}.jsa"))
    _prune(directory)
    return True


def _mark_failed(directory: str, key: str) -> None:
    with contextlib.suppress(OSError):
        with open(os.path.join(directory, f"driver-{key}.failed"), "w") as f:
            f.write("the JVM wrote no class archive; remove this file to try again\n")


def _prune(directory: str) -> None:
    """Keep the ``KEEP`` most recently used archives."""
    def used(path: str) -> float:
        try:
            return os.stat(path).st_mtime
        except OSError:
            return 0.0

    archives = sorted(glob.glob(os.path.join(directory, "driver-*.jsa")), key=used, reverse=True)
    for path in archives[KEEP:]:
        with contextlib.suppress(OSError):
            os.unlink(path)
