"""The run directory (levels, ``run.json``, RDD checkpoints) on a local path or Hadoop storage, and
the local prefix of the search saved there for ``--resume``."""

from __future__ import annotations

import os
import shutil
import tempfile
from typing import Any

from checker import checkpoint as ckpt
from checker.bfs import SearchState
from checker.errors import BadFileError, UsageError
from checker.search import SearchOptions
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
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(f"{target}.tmp", "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(f"{target}.tmp", target)
            return
        fs, path = self._hadoop(target)
        _fs, tmp = self._hadoop(f"{target}.tmp")
        out = fs.create(tmp, True)
        out.write(bytearray(data))
        out.close()
        fs.delete(path, False)
        fs.rename(tmp, path)

    def read_bytes(self, name: str) -> bytes | None:
        target = self.join(name)
        if self.local:
            try:
                with open(target, "rb") as f:
                    return f.read()
            except FileNotFoundError:
                return None
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
    with tempfile.TemporaryDirectory(prefix="kmc-") as tmp:
        path = os.path.join(tmp, "local.ckpt")
        ckpt.save(path, model, options, local)
        with open(path, "rb") as f:
            run_dir.write_bytes("local.ckpt", f.read())


def load_local_prefix(run_dir: RunDir, model: Model, options: SearchOptions) -> SearchState:
    raw = run_dir.read_bytes("local.ckpt")
    if raw is None:
        raise BadFileError(f"run directory {run_dir.path} has no local.ckpt; it is incomplete")
    with tempfile.TemporaryDirectory(prefix="kmc-") as tmp:
        path = os.path.join(tmp, "local.ckpt")
        with open(path, "wb") as f:
            f.write(raw)
        return ckpt.load(path, model, options)
