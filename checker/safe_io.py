"""The one way kmc reads a file a user hands it, and writes a file a user will keep.

Reading (traces, scenarios, checkpoints, Spark ``run.json``):

* only regular files: a FIFO, a device (``/dev/zero``), a socket or a directory is refused with
  one line before anything blocks or fills memory. The file is looked at with ``stat`` first and
  opened with ``O_NONBLOCK`` (so a FIFO swapped in meanwhile cannot hang the open), checked again
  on the open descriptor, and only then read in blocking mode;
* a size cap per kind of file, checked before reading and again while reading;
* JSON: the nesting depth is measured by a linear pre-scan before ``json.loads`` (no
  ``RecursionError``); NaN, Infinity and numbers that overflow to them are refused;
* integers: every integer a file holds, a JSON number, ITF's ``{"#bigint": "..."}`` or a msgpack
  integer, must lie in ``MIN_INT..MAX_INT`` (signed 64 bits, Kafka's widest field): no later stage
  (msgpack, Arrow, the renderers) ever sees one it cannot handle. A longer literal is refused from
  its length, before Python converts it;
* msgpack: every ``max_*_len`` limit of the unpacker is bounded by the document size, and
  extension types are refused unless the caller decodes them itself (``checker.codec`` bounds the
  nesting of its own extensions and the integers inside them).

Every refusal is a ``BadFileError`` (exit 65) or, for a missing or unreadable file, a
``NoInputError`` (exit 66), each one line naming the file and what to do.

Writing: ``atomic_write`` writes a temporary file beside the target, fsyncs it and renames it over
the target, so a reader (or a second run) sees the old file or the new one, never a part;
``write_new`` never replaces an existing file with different content. A full disk or an
unwritable place is an ``OutputError`` (exit 73 or 74) and leaves no partial file behind.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import math
import os
import re
import signal
import stat
import tempfile
import threading
from collections.abc import Callable, Iterator
from typing import Any

import msgpack
import numpy as np

from spec.errors import BadFileError, NoInputError, OutputError

#: size caps by kind of file, in bytes
MAX_TRACE_BYTES = 512 * 2**20
MAX_SCENARIO_BYTES = 16 * 2**20
MAX_RUN_JSON_BYTES = 64 * 2**20
MAX_CHECKPOINT_BYTES = 64 * 2**30
#: deepest JSON nesting accepted (kmc's own traces nest well under 20 levels)
MAX_JSON_DEPTH = 64
#: the integers a file may hold: signed 64 bits, Kafka's widest integer (an offset, a producer id)
MIN_INT = -(2**63)
MAX_INT = 2**63 - 1
#: digits of the longest integer literal in that range (2^63 has 19); a longer one is refused unread
MAX_INT_DIGITS = 19

_KINDS = {
    stat.S_IFIFO: "a FIFO (named pipe)",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
    stat.S_IFDIR: "a directory",
}


def _kind(mode: int) -> str:
    return _KINDS.get(stat.S_IFMT(mode), "not a regular file")


def read_file(path: str, what: str = "file", max_bytes: int = MAX_TRACE_BYTES) -> bytes:
    """The bytes of the regular file ``path`` (a ``what``: "trace", "checkpoint", ...), at most
    ``max_bytes``."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise NoInputError(f"no such {what}: {path}; check the path") from None
    except NotADirectoryError:
        raise NoInputError(f"no such {what}: {path} (a part of the path is not a "
                           "directory)") from None
    except OSError as exc:
        raise NoInputError(f"cannot read the {what} {path}: {exc.strerror or exc}") from None
    except ValueError:  # an embedded NUL byte
        raise NoInputError(f"cannot read the {what} {path!r}: not a valid path") from None
    if not stat.S_ISREG(info.st_mode):
        raise BadFileError(f"{path} is {_kind(info.st_mode)}, not a {what} file; give the path of "
                           "a regular file")
    _check_size(path, what, info.st_size, max_bytes)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise NoInputError(f"cannot read the {what} {path}: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):  # swapped for something else since the stat above
            raise BadFileError(f"{path} is {_kind(info.st_mode)}, not a {what} file; give the path "
                               "of a regular file")
        _check_size(path, what, info.st_size, max_bytes)
        flags = fcntl.fcntl(fd, fcntl.F_GETFL)
        fcntl.fcntl(fd, fcntl.F_SETFL, flags & ~os.O_NONBLOCK)
        chunks = []
        total = 0
        while True:
            chunk = os.read(fd, min(1 << 24, max_bytes + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > max_bytes:  # the file grew while we read it
                _check_size(path, what, total, max_bytes)
        return b"".join(chunks)
    except OSError as exc:
        raise NoInputError(f"cannot read the {what} {path}: {exc.strerror or exc}") from None
    except MemoryError:
        raise BadFileError(f"{path} is too large to read into memory as a {what}") from None
    finally:
        os.close(fd)


def _check_size(path: str, what: str, size: int, max_bytes: int) -> None:
    if size > max_bytes:
        raise BadFileError(f"{path} is too large for a {what} ({size:,} bytes, the limit is "
                           f"{max_bytes:,})")


# -- JSON ------------------------------------------------------------------------------------------
_ESCAPE = re.compile(rb"\\.", re.DOTALL)
_STRING = re.compile(rb'"[^"]*"')
_DEPTH_DELTA = np.zeros(256, np.int8)
_DEPTH_DELTA[ord("[")] = _DEPTH_DELTA[ord("{")] = 1
_DEPTH_DELTA[ord("]")] = _DEPTH_DELTA[ord("}")] = -1
# everything but these is deleted before the scan
_KEEP = bytes(range(256)).translate(None, b'"[]{}\\')


def json_depth(data: bytes) -> int:
    """The deepest nesting of arrays and objects in the JSON text ``data``, in linear time.

    Escapes are removed first (so an escaped quote cannot end a string), then the text of every
    string, then everything but brackets; the depth is the maximum of the running sum.
    """
    text = _ESCAPE.sub(b"", data).translate(None, _KEEP)
    text = _STRING.sub(b"", text)
    if not text:
        return 0
    running = np.cumsum(_DEPTH_DELTA[np.frombuffer(text, np.uint8)], dtype=np.int64)
    return int(running.max(initial=0))


def _int_text(text: str) -> str:
    return (text if len(text) <= 24 else f"{text[:10]}...{text[-4:]} ({len(text.lstrip('-')):,} "
                                         "digits)")


def int_from_text(text: str, where: str) -> int:
    """The integer written in decimal ``text`` (JSON number, ITF ``#bigint``, scenario parameter),
    if it lies in ``MIN_INT..MAX_INT``; else one ``BadFileError`` naming ``where``, the file or its
    place."""
    digits = len(text.lstrip("-"))
    value = int(text) if digits <= MAX_INT_DIGITS else None
    if value is None or not MIN_INT <= value <= MAX_INT:
        raise BadFileError(f"{where}: the integer {_int_text(text)} is out of range (kmc reads "
                           "integers from -2^63 to "
                           "2^63-1, a 64-bit Kafka field); this is not a file kmc wrote")
    return value


def check_int(value: int, where: str) -> int:
    """``value`` if it lies in ``MIN_INT..MAX_INT`` (see ``int_from_text``)."""
    if not MIN_INT <= value <= MAX_INT:
        raise BadFileError(f"{where}: the integer {_int_text(str(value))} is out of range (kmc "
                           "reads integers from -2^63 "
                           "to 2^63-1, a 64-bit Kafka field); this is not a file kmc wrote")
    return value


def check_ints(value: Any, where: str) -> Any:
    """``value`` (a decoded document of dicts, lists, tuples and scalars) after checking every
    integer in it."""
    stack = [value]
    while stack:
        item = stack.pop()
        if type(item) is int:
            check_int(item, where)
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list | tuple | frozenset):
            stack.extend(item)
    return value


_BIGINT_TEXT = re.compile(r"-?[0-9]+")


def parse_json(path: str, data: bytes, what: str = "file", max_depth: int = MAX_JSON_DEPTH) -> Any:
    """``json.loads`` with the depth, integer and constant limits above; errors name the file."""
    depth = json_depth(data)
    if depth > max_depth:
        raise BadFileError(f"{path}: JSON nested {depth} levels deep (the limit is {max_depth}); "
                           f"this is not a kmc {what}")

    def no_constant(name: str) -> Any:
        raise ValueError(f"{name} is not JSON")

    def finite_float(text: str) -> float:
        value = float(text)
        if not math.isfinite(value):
            raise BadFileError(f"{path}: the number {_int_text(text)} overflows a float; this is "
                               f"not a kmc {what}")
        return value

    # 18 characters or fewer: below 10^18 < 2^63, nothing to check
    def bounded_int(text: str) -> int:
        return int(text) if len(text) <= 18 else int_from_text(text, path)

    # ITF's {"#bigint": "..."}: bounded like a number, before anyone converts it
    def bigint(obj: dict) -> dict:
        if (len(obj) == 1 and isinstance(obj.get("#bigint"), str)
            and _BIGINT_TEXT.fullmatch(obj["#bigint"])):
            int_from_text(obj["#bigint"], path)
        return obj

    try:
        # the hook costs a call per object: only for a document that has a #bigint at all (not kmc's
        # own small ones)
        hook = bigint if b"#bigint" in data else None
        return json.loads(data.decode("utf-8"), parse_constant=no_constant,
                          parse_float=finite_float, parse_int=bounded_int, object_hook=hook)
    except UnicodeDecodeError:
        raise BadFileError(f"{path}: not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise BadFileError(f"{path}: corrupt or truncated JSON at line {exc.lineno} column "
                           f"{exc.colno}: {exc.msg}") from None
    except (ValueError, RecursionError, MemoryError) as exc:
        raise BadFileError(f"{path}: not valid JSON ({type(exc).__name__}: {exc})") from None


def read_json(path: str, what: str = "file", max_bytes: int = MAX_TRACE_BYTES) -> Any:
    return parse_json(path, read_file(path, what, max_bytes), what)


# -- msgpack ---------------------------------------------------------------------------------------
def _refuse_ext(code: int, data: bytes) -> Any:
    raise BadFileError(f"unexpected msgpack extension type {code}")


def unpack_msgpack(data: bytes, ext_hook: Callable[[int, bytes], Any] | None = None,
                   where: str = "msgpack document", **kwargs: Any) -> Any:
    """``msgpack.unpackb`` with every length bounded by the document size, extensions refused unless
    ``ext_hook`` decodes them. Raises ``ValueError`` and msgpack's own errors on corrupt input."""
    size = len(data)
    value = msgpack.unpackb(
        data, raw=False, strict_map_key=False, ext_hook=ext_hook or _refuse_ext,
        max_str_len=size, max_bin_len=size, max_array_len=size,
        max_map_len=size // 2, max_ext_len=size, **kwargs,
    )
    return check_ints(value, where)  # msgpack holds up to 2^64-1


# -- writing ---------------------------------------------------------------------------------------
_FULL = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO}


def output_error(path: str, exc: OSError, what: str = "file") -> OutputError:
    """One line for an OSError met while creating or writing ``path``: 74 for a full disk or an I/O
    error, 73 for a place where the file cannot be created."""
    reason = exc.strerror or str(exc)
    if exc.errno in _FULL:
        return OutputError(f"cannot write the {what} {path}: {reason}; free some space or choose "
                           "another place",
                           cannot_create=False)
    return OutputError(f"cannot create the {what} {path}: {reason}; choose a writable place",
                       cannot_create=True)


def _temp_beside(path: str) -> tuple[int, str]:
    """A new temporary file of a unique name in ``path``'s directory (two writers of one path never
    share one), with the permissions any new file gets there (``mkstemp`` makes it 0600)."""
    directory = os.path.dirname(path) or "."
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(path)}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o666 & ~_umask())
    except OSError:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return fd, tmp


def _umask() -> int:
    """The process's umask, read without changing it where Linux shows it (``os.umask`` sets it
    while it reads)."""
    with contextlib.suppress(OSError, ValueError, IndexError):
        with open("/proc/self/status", "rb") as status:
            for line in status:
                if line.startswith(b"Umask:"):
                    return int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _write_fd(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]
    os.fsync(fd)


def atomic_write(path: str, data: bytes, what: str = "file") -> str:
    """Write ``data`` to ``path`` all at once (temporary file, fsync, rename); a Ctrl-C meanwhile is
    held until the file is in place. Returns ``path``."""
    with interrupts_deferred():
        tmp = None
        try:
            fd, tmp = _temp_beside(path)
            try:
                _write_fd(fd, data)
            finally:
                os.close(fd)
            os.replace(tmp, path)
            tmp = None
            _fsync_dir(path)
        except OSError as exc:
            raise output_error(path, exc, what) from None
        finally:
            if tmp is not None:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
    return path


def write_new(path: str, data: bytes, what: str = "file") -> str:
    """Write ``data`` to ``path``, or to ``path`` with ``-2``, ``-3``... before its suffix when a
    file with other content is already there: two runs never overwrite each other's files, and a
    run that writes the same content again reuses its file. Returns the path written."""
    stem, suffix = _split_suffix(path)
    with interrupts_deferred():
        tmp = None
        try:
            fd, tmp = _temp_beside(path)
            try:
                _write_fd(fd, data)
            finally:
                os.close(fd)
            for n in range(1, 10_000):
                target = path if n == 1 else f"{stem}-{n}{suffix}"
                try:
                    os.link(tmp, target)  # fails if target exists: exclusive and atomic
                except FileExistsError:
                    if _same_content(target, data):
                        return target
                    continue
                except OSError as exc:
                    if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV):
                        raise
                    if _exclusive_copy(target, data):  # no hard links on this file system
                        return target
                    if _same_content(target, data):
                        return target
                    continue
                _fsync_dir(target)
                return target
            raise OutputError(f"cannot create the {what} {path}: 10,000 other files already have "
                              "its name", cannot_create=True)
        except OSError as exc:
            raise output_error(path, exc, what) from None
        finally:
            if tmp is not None:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)


def _split_suffix(path: str) -> tuple[str, str]:
    base = os.path.basename(path)
    for suffix in (".itf.json", ".json", ".msgpack", ".mpk", ".itf", ".dot", ".svg", ".mmd"):
        if base.endswith(suffix) and len(base) > len(suffix):
            return path[: -len(suffix)], suffix
    return os.path.splitext(path)


def _same_content(path: str, data: bytes) -> bool:
    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode) or info.st_size != len(data):
            return False
        with open(path, "rb") as f:
            return f.read(len(data) + 1) == data
    except OSError:
        return False


def _exclusive_copy(target: str, data: bytes) -> bool:
    try:
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return False
    try:
        _write_fd(fd, data)
    finally:
        os.close(fd)
    return True


def _fsync_dir(path: str) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(os.path.dirname(path) or ".", os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


# -- Ctrl-C ----------------------------------------------------------------------------------------
@contextlib.contextmanager
def interrupts_deferred() -> Iterator[None]:
    """Hold a Ctrl-C (SIGINT) until the block ends, then raise it: for the few steps that must
    happen all together (committing a BFS level, writing a checkpoint). Outside the main thread,
    or when SIGINT is not Python's default handler, the block runs unprotected and unchanged."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    if previous is not signal.default_int_handler:
        yield  # someone else (e.g. the parallel engine) decides what Ctrl-C means here
        return
    caught: list[int] = []

    def hold(signum: int, frame: Any) -> None:
        caught.append(signum)

    signal.signal(signal.SIGINT, hold)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if caught:
        raise KeyboardInterrupt
