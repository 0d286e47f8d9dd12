"""The kernel cache: compiled kernels kept per user, written atomically, pruned when unused.

A kernel is compiled once per configuration's state layout (``checker.kernel.cache_key``) and
copied once per configuration's run-time constants (``checker.kernel.configured``, about 100 kB);
a Spark executor writes the library it is shipped (``checker.kernel_batch``). All of them live in
one directory, ``$XDG_CACHE_HOME/kmc/kernels`` (else ``~/.cache/kmc/kernels``). Without pruning it
only grows: every rule change and every configuration tried leaves files behind (a cold
``kmc matrix`` writes about 15 MB).

So a library is *used* when a run loads it: its modification time is moved to now (at most once
a day, so a run that loads the same kernel many times writes nothing). After a compile, at most once
a day (``.pruned``'s time), the cache removes every library not used for ``KEEP_DAYS`` days and
every temporary file a killed run left more than a day ago. A library removed while another run
is about to load it is written again by that run (``checker.kernel.load`` retries once): pruning
never fails a run, it only costs a compile. Removing the directory by hand is always safe between
runs.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable

#: a library not used for this many days is removed at the next prune
KEEP_DAYS = 30
#: how often the cache is pruned, and how often a used library's time is moved forward (seconds)
DAY = 86_400.0
#: the file whose modification time is the last prune's
STAMP = ".pruned"


def cache_dir() -> str:
    """The cache directory: ``$XDG_CACHE_HOME/kmc/kernels``, else ``~/.cache/kmc/kernels``."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "kmc", "kernels")


def write_atomically(directory: str, path: str, write: Callable[[str], None]) -> None:
    """``path`` in ``directory``, made by ``write(tmp)`` on a temporary file and renamed (atomic: a
    concurrent run sees the whole library or none). ``OSError`` when the directory cannot be
    written."""
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(suffix=".so.tmp", dir=directory)
    os.close(fd)
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def mark_used(path: str, now: float | None = None) -> None:
    """Move ``path``'s modification time to now when it is a day old or more (a library in use is
    not pruned); a file that cannot be touched (a read-only cache) is left as it is."""
    now = time.time() if now is None else now
    try:
        if now - os.stat(path).st_mtime >= DAY:
            os.utime(path, (now, now))
    except OSError:
        pass


def prune(directory: str, now: float | None = None, force: bool = False) -> list[str]:
    """Remove the libraries of ``directory`` not used for ``KEEP_DAYS`` days and the temporary
    files older than a day, at most once a day unless ``force``; the names removed. Never raises:
    a file another run removed first, or one that cannot be removed, is skipped."""
    now = time.time() if now is None else now
    stamp = os.path.join(directory, STAMP)
    try:
        if not force and now - os.stat(stamp).st_mtime < DAY:
            return []
    except OSError:
        pass  # never pruned: prune now
    removed = []
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return []
    for entry in entries:
        age = _age(entry, now)
        if age is None:
            continue
        stale = (entry.name.endswith(".so") and age >= KEEP_DAYS * DAY
                 or entry.name.endswith(".tmp") and age >= DAY)
        if stale and _remove(entry.path):
            removed.append(entry.name)
    try:
        with open(stamp, "w"):
            pass
        os.utime(stamp, (now, now))
    except OSError:
        pass
    return sorted(removed)


def _age(entry: os.DirEntry, now: float) -> float | None:
    """Seconds since ``entry`` (a regular file) was last modified; None for anything else."""
    try:
        if not entry.is_file(follow_symlinks=False):
            return None
        return now - entry.stat(follow_symlinks=False).st_mtime
    except OSError:
        return None


def _remove(path: str) -> bool:
    try:
        os.unlink(path)
        return True
    except OSError:
        return False
