"""Two writers of one checkpoint, trace or export path at the same moment each leave a whole file.

Each writer writes its own temporary file beside the target (a unique name), fsyncs it and renames
it over the target: the last rename wins, whole. The test starts two writer processes at once (a
barrier) for many rounds, with contents of different sizes, and loads what is on disk after every
round. A shared temporary name (``PATH.tmp``) fails it at once: the writers truncate and interleave
each other's bytes, and the second rename finds no file.
"""

from __future__ import annotations

import multiprocessing
import os
import stat
from pathlib import Path

import pytest

from checker import checkpoint as ckpt
from checker import safe_io
from checker.bfs import check
from checker.search import SearchOptions
from invariants.registry import for_family
from spec.two_phase import TwoPhase
from traces.io import load_trace, save_trace

ROUNDS = 40
INVARIANTS = list(for_family("two-phase").values())


def _writer(write, contents, path, start, done, failures):
    """Write ``contents`` to ``path`` once a round, all writers released together by ``start``."""
    for _ in range(ROUNDS):
        start.wait(timeout=60)
        try:
            write(path, contents)
        except Exception as exc:  # reported to the test, which fails on it
            failures.put(f"{type(exc).__name__}: {exc}")
        done.wait(timeout=60)


def _race(write, contents_a, contents_b, path, load):
    """Run ROUNDS rounds of two writers at once; after each, ``load(path)`` must give one of the
    two."""
    context = multiprocessing.get_context("fork")
    start, done = context.Barrier(3), context.Barrier(3)
    failures = context.Queue()
    writers = [context.Process(target=_writer, args=(write, contents, path, start, done, failures))
               for contents in (contents_a, contents_b)]
    for process in writers:
        process.start()
    seen = []
    try:
        for _ in range(ROUNDS):
            start.wait(timeout=60)
            done.wait(timeout=60)
            seen.append(load(path))
    except BaseException:
        # the writers stop at their next wait instead of waiting for a round that never comes
        start.abort()
        done.abort()
        raise
    finally:
        for process in writers:
            process.join(timeout=60)
            if process.exitcode is None:
                process.kill()
    errors = []
    while not failures.empty():
        errors.append(failures.get())
    assert not errors, errors[:3]
    assert all(process.exitcode == 0 for process in writers)
    leftovers = [name for name in os.listdir(os.path.dirname(path)) if name.endswith(".tmp")]
    assert not leftovers, leftovers
    return seen


def _checkpoint_bytes(tmp_path: Path, max_states: int) -> bytes:
    path = tmp_path / f"ckpt-{max_states}"
    check(TwoPhase(5), SearchOptions(invariants=INVARIANTS, max_states=max_states,
                                     checkpoint_path=str(path)))
    return path.read_bytes()


@pytest.mark.slow  # every line it runs, cheaper fast tests run too (coverage by test)
def test_two_checkpoint_writers_at_once_leave_a_whole_checkpoint(tmp_path):
    small, large = _checkpoint_bytes(tmp_path, 200), _checkpoint_bytes(tmp_path, 3000)
    assert len(large) > 4 * len(small)  # the larger write takes longer: the two overlap
    path = str(tmp_path / "shared" / "run.ckpt")
    os.makedirs(os.path.dirname(path))

    def load(where):
        state = ckpt.load(where, TwoPhase(5), SearchOptions(invariants=INVARIANTS))
        return len(state.log)

    sizes = set(_race(lambda where, data: safe_io.atomic_write(where, data, "checkpoint"), small,
                      large, path, load))
    assert sizes <= {len(ckpt.load(str(tmp_path / "ckpt-200"), TwoPhase(5),
                                   SearchOptions(invariants=INVARIANTS)).log),
                     len(ckpt.load(str(tmp_path / "ckpt-3000"), TwoPhase(5),
                                   SearchOptions(invariants=INVARIANTS)).log)}


@pytest.fixture(scope="module")
def two_traces(tmp_path_factory):
    """Two traces of different lengths (two-phase without its commit guard, with 3 and with 6
    resource managers)."""
    from kmc.cli import main

    traces = []
    for rm in (3, 6):
        where = tmp_path_factory.mktemp(f"rm{rm}")
        assert main(["check", "two-phase", "--const", f"RM={rm}", "--const", "commit_guard=off",
                     "--quiet", "--trace-dir", str(where)]) == 12
        traces.append(load_trace(str(next(where.iterdir())))[0])
    assert traces[0] != traces[1]
    return traces


@pytest.mark.parametrize("suffix", [".json", ".itf.json", ".msgpack"])
@pytest.mark.slow  # every line it runs, cheaper fast tests run too (coverage by test)
def test_two_trace_writers_at_once_leave_a_whole_trace(tmp_path, two_traces, suffix):
    """``kmc trace export -o PATH`` (and every trace kmc saves with a chosen name) twice at once."""
    path = str(tmp_path / f"shared{suffix}")
    seen = _race(lambda where, trace: save_trace(trace, where), *two_traces, path,
                 lambda where: load_trace(where)[0])
    assert all(trace in two_traces for trace in seen)


def test_two_output_writers_at_once_leave_a_whole_file(tmp_path):
    """``kmc trace diagram -o PATH`` writes text through the same atomic writer."""
    a, b = b"a" * 10_000 + b"\n", b"b" * 3_000_000 + b"\n"
    path = str(tmp_path / "shared.mmd")
    seen = _race(lambda where, data: safe_io.atomic_write(where, data, "output"), a, b, path,
                 lambda where: Path(where).read_bytes())
    assert all(data in (a, b) for data in seen)


def test_a_written_file_has_the_permissions_of_a_new_file(tmp_path):
    """A temporary file is created private (0600); the file put in place gets what the umask gives
    any new file, so a checkpoint or trace in a shared directory can be read by whoever may read the
    others."""
    previous = os.umask(0o022)
    try:
        path = str(tmp_path / "x.ckpt")
        safe_io.atomic_write(path, b"data")
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o644
        os.umask(0o077)
        safe_io.atomic_write(path, b"data")
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    finally:
        os.umask(previous)
