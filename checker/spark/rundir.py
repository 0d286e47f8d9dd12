"""The run directory (levels, ``run.json``, RDD checkpoints) on a local path or Hadoop storage, and
the local prefix of the search saved there for ``--resume``."""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
from typing import Any

from checker import checkpoint as ckpt
from checker.bfs import SearchState
from checker.safe_io import MAX_CHECKPOINT_BYTES, atomic_write, read_file
from checker.search import SearchOptions
from spec.errors import BadFileError, UsageError
from spec.model import Model

RUN_MAGIC = "kmc-spark-run"
#: 2: every level's files have a digest in run.json (``RunDir.level_digest``)
RUN_FORMAT = 2
#: the hash of a level's files (SHA-256: the JVM computes the same for a level on Hadoop storage)
DIGEST = "SHA-256"
_CHUNK = 1 << 20


def _data_file(name: str) -> bool:
    """A file Spark's Parquet reader reads: not hidden (``.``, its checksums) nor metadata
    (``_SUCCESS``)."""
    return not name.startswith((".", "_"))


class RunDir:
    """Where levels, ``run.json`` and RDD checkpoints live: a local path or a Hadoop URI
    (hdfs://...)."""

    def __init__(self, path: str, temporary: bool = False) -> None:
        self.temporary = temporary
        self.local = "://" not in path or path.startswith("file://")
        self.path = (os.path.abspath(path.removeprefix("file://")) if self.local
                     else path.rstrip("/"))
        self._sc: Any = None

    def attach(self, sc: Any) -> None:
        self._sc = sc

    def join(self, *parts: str) -> str:
        return "/".join([self.path, *parts])

    def level_path(self, depth: int) -> str:
        return self.join("levels", f"{depth:04d}")

    def exists(self) -> bool:
        if self.local:
            return os.path.isdir(self.path)
        fs, path = self._hadoop(self.path)
        return bool(fs.exists(path))

    def write_bytes(self, name: str, data: bytes) -> None:
        """Atomically (temporary file, then rename)."""
        target = self.join(name)
        if self.local:
            atomic_write(target, data, "run directory file")
            return
        fs, path = self._hadoop(target)
        _fs, tmp = self._hadoop(f"{target}.tmp")
        out = fs.create(tmp, True)
        out.write(bytearray(data))
        out.close()
        fs.delete(path, False)
        fs.rename(tmp, path)

    def read_bytes(self, name: str, max_bytes: int = MAX_CHECKPOINT_BYTES) -> bytes | None:
        """The file's bytes, or None if it does not exist; locally through the one safe reader."""
        target = self.join(name)
        if self.local:
            if not os.path.lexists(target):
                return None
            return read_file(target, f"run directory file {name}", max_bytes)
        fs, path = self._hadoop(target)
        if not fs.exists(path):
            return None
        stream = fs.open(path)
        try:
            return bytes(self._sc._jvm.org.apache.commons.io.IOUtils.toByteArray(stream))
        finally:
            stream.close()

    def level_digest(self, path: str) -> str:
        """The SHA-256 of a level's Parquet directory as Spark reads it: each data file's name, size
        and SHA-256, in name order (a file added, removed, emptied, truncated or changed changes
        it). On Hadoop storage the JVM reads the files, so they do not cross to Python."""
        if not self.local:
            return self._hadoop_digest(path)
        digest = hashlib.sha256()
        try:
            names = sorted(name for name in os.listdir(path) if _data_file(name))
        except OSError as exc:
            raise BadFileError(f"cannot read level directory {path}: {exc.strerror or exc}; "
                               "the run directory cannot be resumed") from None
        for name in names:
            full = os.path.join(path, name)
            try:
                fd = os.open(full, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
            except OSError as exc:
                raise BadFileError(f"cannot read level file {full}: {exc.strerror or exc}; "
                                   "the run directory cannot be resumed") from None
            with os.fdopen(fd, "rb") as f:
                info = os.fstat(f.fileno())
                if not stat.S_ISREG(info.st_mode):
                    raise BadFileError(f"level directory {path} holds {name}, which is not a "
                                       "regular file; "
                                       "the run directory cannot be resumed")
                digest.update(f"{name}\0{info.st_size}\0".encode())
                content = hashlib.sha256()
                while chunk := f.read(_CHUNK):
                    content.update(chunk)
                digest.update(content.digest())
        return digest.hexdigest()

    def _hadoop_digest(self, path: str) -> str:
        jvm = self._sc._jvm
        fs, where = self._hadoop(path)
        statuses = sorted((s for s in fs.listStatus(where) if _data_file(s.getPath().getName())),
                          key=lambda s: s.getPath().getName())
        digest = hashlib.sha256()
        for status in statuses:
            name = status.getPath().getName()
            if not status.isFile():
                raise BadFileError(f"level directory {path} holds {name}, which is not a file; "
                                   "the run directory cannot be resumed")
            digest.update(f"{name}\0{status.getLen()}\0".encode())
            md = jvm.java.security.MessageDigest.getInstance(DIGEST)
            stream = jvm.java.security.DigestInputStream(fs.open(status.getPath()), md)
            try:
                jvm.org.apache.commons.io.IOUtils.consume(stream)
            finally:
                stream.close()
            digest.update(bytes(md.digest()))
        return digest.hexdigest()

    def _hadoop(self, uri: str) -> tuple[Any, Any]:
        if self._sc is None:
            raise UsageError(f"run directory {uri} needs Spark to be reached")
        jvm = self._sc._jvm
        path = jvm.org.apache.hadoop.fs.Path(uri)
        return path.getFileSystem(self._sc._jsc.hadoopConfiguration()), path

    def cleanup(self) -> None:
        if self.temporary and self.local:
            shutil.rmtree(self.path, ignore_errors=True)


def save_local_prefix(run_dir: RunDir, model: Model, options: SearchOptions,
                      local: SearchState) -> None:
    """The levels run on the driver, as a checkpoint (``checker.checkpoint``'s format) in the run
    directory."""
    run_dir.write_bytes("local.ckpt", ckpt.dumps(model, options, local))


def load_local_prefix(run_dir: RunDir, model: Model, options: SearchOptions) -> SearchState:
    raw = run_dir.read_bytes("local.ckpt")
    if raw is None:
        raise BadFileError(f"run directory {run_dir.path} has no local.ckpt; it is incomplete and "
                           "cannot be resumed")
    return ckpt.loads(raw, model, options, run_dir.join("local.ckpt"))
