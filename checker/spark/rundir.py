"""The run directory (levels, ``run.json``, RDD checkpoints) on a local path or Hadoop storage, and
the local prefix of the search saved there for ``--resume``."""

from __future__ import annotations

import os
import shutil
from typing import Any

from checker import checkpoint as ckpt
from checker.bfs import SearchState
from checker.safe_io import MAX_CHECKPOINT_BYTES, atomic_write, read_file
from checker.search import SearchOptions
from spec.errors import BadFileError, UsageError
from spec.model import Model

RUN_MAGIC = "kmc-spark-run"
RUN_FORMAT = 1


class RunDir:
    """Where levels, ``run.json`` and RDD checkpoints live: a local path or a Hadoop URI (hdfs://...)."""

    def __init__(self, path: str, temporary: bool = False) -> None:
        self.temporary = temporary
        self.local = "://" not in path or path.startswith("file://")
        self.path = os.path.abspath(path.removeprefix("file://")) if self.local else path.rstrip("/")
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

    def _hadoop(self, uri: str) -> tuple[Any, Any]:
        if self._sc is None:
            raise UsageError(f"run directory {uri} needs Spark to be reached")
        jvm = self._sc._jvm
        path = jvm.org.apache.hadoop.fs.Path(uri)
        return path.getFileSystem(self._sc._jsc.hadoopConfiguration()), path

    def cleanup(self) -> None:
        if self.temporary and self.local:
            shutil.rmtree(self.path, ignore_errors=True)


def save_local_prefix(run_dir: RunDir, model: Model, options: SearchOptions, local: SearchState) -> None:
    """The levels run on the driver, as a checkpoint (``checker.checkpoint``'s format) in the run directory."""
    run_dir.write_bytes("local.ckpt", ckpt.dumps(model, options, local))


def load_local_prefix(run_dir: RunDir, model: Model, options: SearchOptions) -> SearchState:
    raw = run_dir.read_bytes("local.ckpt")
    if raw is None:
        raise BadFileError(f"run directory {run_dir.path} has no local.ckpt; it is incomplete and cannot be resumed")
    return ckpt.loads(raw, model, options, run_dir.join("local.ckpt"))
