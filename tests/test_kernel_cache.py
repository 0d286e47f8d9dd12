"""The kernel cache keeps what runs use and prunes the rest (``checker.kernel_cache``).

A library not used for ``KEEP_DAYS`` days and a temporary file a killed run left are removed after
a compile, at most once a day; a library a run loads is marked used; a library pruned by another
run between the check and the load is compiled again, not a failed run.
"""

from __future__ import annotations

import os
import shutil
import time

import pytest

from checker import kernel as km
from checker import kernel_cache as cache
from spec.registry import build_model

needs_cc = pytest.mark.skipif(shutil.which(km.compiler()) is None,
                              reason=f"no C compiler ({km.compiler()!r} is not on the PATH)")

NOW = 2_000_000_000.0


def aged(path, days: float) -> None:
    path.write_bytes(b"x")
    os.utime(path, (NOW - days * cache.DAY, NOW - days * cache.DAY))


def test_prune_removes_unused_libraries_and_old_temporary_files_only(tmp_path):
    aged(tmp_path / "old.so", cache.KEEP_DAYS + 1)
    aged(tmp_path / "recent.so", cache.KEEP_DAYS - 1)
    aged(tmp_path / "left-by-a-killed-run.so.tmp", 2)
    aged(tmp_path / "being-written.so.tmp", 0.01)
    aged(tmp_path / "notes.txt", 400)  # not the cache's
    (tmp_path / "a-directory.so").mkdir()
    os.symlink(tmp_path / "notes.txt", tmp_path / "link.so")
    os.utime(tmp_path / "link.so", (NOW - 400 * cache.DAY,) * 2, follow_symlinks=False)
    assert cache.prune(str(tmp_path), now=NOW) == ["left-by-a-killed-run.so.tmp", "old.so"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        ".pruned", "a-directory.so", "being-written.so.tmp", "link.so", "notes.txt", "recent.so"]


def test_prune_runs_at_most_once_a_day_unless_forced(tmp_path):
    aged(tmp_path / "old.so", cache.KEEP_DAYS + 1)
    assert cache.prune(str(tmp_path), now=NOW) == ["old.so"]
    aged(tmp_path / "old.so", cache.KEEP_DAYS + 1)
    assert cache.prune(str(tmp_path), now=NOW + cache.DAY / 2) == []
    assert cache.prune(str(tmp_path), now=NOW + cache.DAY / 2, force=True) == ["old.so"]
    assert cache.prune(str(tmp_path / "missing"), now=NOW) == []


def test_a_used_library_is_marked_at_most_once_a_day(tmp_path):
    library = tmp_path / "k.so"
    aged(library, 0.5)
    cache.mark_used(str(library), now=NOW)
    assert os.stat(library).st_mtime == NOW - 0.5 * cache.DAY
    aged(library, 40)
    cache.mark_used(str(library), now=NOW)
    assert os.stat(library).st_mtime == NOW
    cache.mark_used(str(tmp_path / "gone.so"), now=NOW)  # nothing to mark: no error


@needs_cc
def test_a_run_marks_its_library_used_and_a_compile_prunes_the_unused(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    directory = tmp_path / "kmc" / "kernels"
    first = km.load(build_model("two-phase", ["RM=3"]).kernel())
    month = time.time() - (cache.KEEP_DAYS + 1) * cache.DAY
    os.utime(first.library, (month, month))
    aged_stamp = time.time() - 2 * cache.DAY
    os.utime(directory / cache.STAMP, (aged_stamp, aged_stamp))
    # loaded again: used, so the next compile's prune keeps it
    again = km.load(build_model("two-phase", ["RM=3"]).kernel())
    assert again.library == first.library
    assert time.time() - os.stat(first.library).st_mtime < 60
    os.utime(first.library, (month, month))
    km.load(build_model("two-phase", ["RM=3", "commit_guard=false"]).kernel())  # compiles, prunes
    assert not os.path.exists(first.library)
    assert len(list(directory.glob("*.so"))) == 1


@needs_cc
def test_a_library_pruned_before_it_loads_is_compiled_again(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    spec = build_model("two-phase", ["RM=3"]).kernel()
    real = km.configured
    calls = []

    def configured_then_pruned(spec, library):
        path = real(spec, library)
        calls.append(path)
        if len(calls) == 1:  # another run's prune, between the check and the load (a path this
            # process never loaded: dlopen would find one it did)
            os.unlink(path)
        return path

    monkeypatch.setattr(km, "configured", configured_then_pruned)
    kernel = km.load(spec)
    assert len(calls) == 2 and os.path.exists(kernel.library)
    assert kernel.state_bytes == spec.state_bytes
