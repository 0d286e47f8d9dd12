"""The shell examples of the documentation (README.md and docs/**/*.md), found and run as a reader
would run them.

A shell example is a fenced block marked ``sh``. The HTML comment on the line just above it says how
it is checked (no comment: it is run, and must exit 0):

    <!-- example: exit=12 -->                 run; it must exit 12
    <!-- example: slow -->                    run in the slow tier only (it takes more than a few seconds)
    <!-- example: exit=12 slow columns=140 -->
    <!-- example: not run (the reason) -->    shown, never run: the reason says why

A ``text`` block right after a run example (blank lines between them only) is its output: each line
of it must be printed, in that order and with nothing between two shown lines, except where a line
``...`` marks an abridged part (at the start, between lines or at the end). Decimal fractions
(seconds) and rates (states/s) are compared as numbers of any value; every other character is
compared as printed. A ``python`` block whose first line is ``# NAME.py`` is a file the reader
saves: it is written into the examples' directory before the page's first example runs.

The examples of one page run in order, in one temporary directory that has the checkout's
``traces/`` (the shipped scenarios), with ``kmc`` being this checkout's ``python3 -m kmc``. A block
whose first line starts like a command (``kmc``, ``python3``) but is not marked ``sh`` is an error,
so that no example escapes the check.
"""  # noqa: E501

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_MARK = re.compile(r"^<!--\s*example:\s*(.*?)\s*-->$")
_FENCE = re.compile(r"^(\s*)```(\w*)\s*$")
_COMMANDISH = re.compile(r"^(kmc|python3|bench/|\$ )")
_FLOAT = re.compile(r"\d+\.\d+(?:[eE][-+]?\d+)?")
# a rate ("8,729 distinct states/s") varies as the time does
_RATE = re.compile(r"[\d,]+(?= [\w ]*/s\b)")


@dataclass(frozen=True)
class Example:
    page: str  # path relative to the checkout
    line: int  # the fence's line, 1-based
    command: str
    run: bool
    slow: bool = False
    exit_code: int = 0
    columns: int = 100
    reason: str = ""
    output: tuple[str, ...] | None = None  # the shown output, if the page shows it

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


@dataclass(frozen=True)
class SavedFile:
    name: str
    text: str


class PageError(ValueError):
    """A page's examples cannot be read: an unmarked command block, a bad marker."""


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def _blocks(lines: list[str]) -> list[tuple[int, str, list[str], str]]:
    """(fence line index, language, content lines, the line above the fence) of every fenced
    block."""
    found = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, lang = m.group(1), m.group(2)
        j = i + 1
        body = []
        while j < len(lines) and lines[j].strip() != "```":
            body.append(lines[j][len(indent):] if lines[j].startswith(indent)
                        else lines[j].lstrip())
            j += 1
        above = lines[i - 1].strip() if i else ""
        found.append((i, lang, body, above))
        i = j + 1
    return found


def read_page(path: Path) -> tuple[list[Example], list[SavedFile]]:
    rel = str(path.relative_to(ROOT))
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks = _blocks(lines)
    examples: list[Example] = []
    files: list[SavedFile] = []
    for n, (start, lang, body, above) in enumerate(blocks):
        first = next((b for b in body if b.strip()), "")
        if lang == "python" and re.match(r"^# [\w/]+\.py$", first):
            files.append(SavedFile(first[2:], "\n".join(body) + "\n"))
            continue
        if lang != "sh":
            if (_COMMANDISH.match(first) and lang != "text"
                or (lang == "" and _COMMANDISH.match(first))):
                raise PageError(f"{rel}:{start + 1}: a command block must be fenced as ```sh (and "
                                "marked)")
            if lang == "":
                raise PageError(f"{rel}:{start + 1}: a fenced block without a language (sh, text, "
                                "python, json...)")
            continue
        mark = _MARK.match(above)
        words = mark.group(1) if mark else ""
        if words.startswith("not run"):
            reason = words[len("not run"):].strip(" ()")
            if not reason:
                raise PageError(f"{rel}:{start + 1}: 'not run' needs its reason: <!-- example: not "
                                "run (why) -->")
            examples.append(Example(rel, start + 1, "\n".join(body), run=False, reason=reason))
            continue
        options = dict(w.split("=", 1) if "=" in w else (w, "1") for w in words.split())
        unknown = set(options) - {"exit", "slow", "columns"}
        if unknown:
            raise PageError(f"{rel}:{start + 1}: unknown example option(s) {sorted(unknown)}")
        output = None
        if n + 1 < len(blocks):
            nxt_start, nxt_lang, nxt_body, _ = blocks[n + 1]
            end = start + len(body) + 2
            if nxt_lang == "text" and all(not line.strip() for line in lines[end:nxt_start]):
                output = tuple(nxt_body)
        examples.append(Example(rel, start + 1, "\n".join(body), run=True, slow="slow" in options,
                                exit_code=int(options.get("exit", 0)),
                                columns=int(options.get("columns", 100)), output=output))
    return examples, files


def prepare(directory: Path, files: list[SavedFile]) -> dict[str, str]:
    """The examples' directory (the checkout's traces/, the page's saved files) and their
    environment."""
    (directory / "traces").symlink_to(ROOT / "traces")
    for saved in files:
        (directory / saved.name).write_text(saved.text, encoding="utf-8")
    bin_dir = directory / ".bin"
    bin_dir.mkdir()
    kmc = bin_dir / "kmc"
    kmc.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m kmc "$@"\n', encoding="utf-8")
    kmc.chmod(0o755)
    python = bin_dir / "python3"
    python.symlink_to(sys.executable)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "COV_"))}
    env.update(PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}",
               PYTHONPATH=f"{directory}{os.pathsep}{ROOT}", TERM="dumb", NO_COLOR="1")
    return env


def _normal(line: str) -> str:
    return _RATE.sub("N", _FLOAT.sub("N", line.rstrip()))


def compare(shown: tuple[str, ...], printed: str) -> str | None:
    """None if ``printed`` shows ``shown`` (its ``...`` lines abridged parts); else what differs, in
    one line."""
    out = [_normal(line) for line in printed.splitlines()]
    parts: list[list[str]] = [[]]
    for line in shown:
        if line.strip() == "...":
            parts.append([])
        else:
            parts[-1].append(_normal(line))
    open_start, open_end = shown and shown[0].strip() == "...", shown and shown[-1].strip() == "..."
    pos = 0
    for k, part in enumerate(parts):
        if not part:
            continue
        anchored = k == 0 and not open_start
        candidates = [pos] if anchored else range(pos, len(out) - len(part) + 1)
        for at in candidates:
            if out[at:at + len(part)] == part:
                pos = at + len(part)
                break
        else:
            if anchored and part[0] in out:
                return (f"printed {out[0]!r} first, the page shows {part[0]!r} (mark a cut at the "
                        "start with '...')")
            near = next((i for i in range(pos, len(out)) if out[i] == part[0]), None)
            if near is None:
                return f"not printed: {part[0]!r}"
            for a, b in zip(part, out[near:], strict=False):
                if a != b:
                    return f"printed {b!r} where the page shows {a!r}"
            return f"the page shows more lines than were printed after {part[0]!r}"
    if not open_end and pos != len(out):
        return f"printed more than the page shows (mark the cut with a line '...'): {out[pos]!r}"
    return None


def run(example: Example, directory: Path, env: dict[str, str], timeout: float = 600) -> str | None:
    """Run one example; None if it did what the page says, else why not (one line)."""
    done = subprocess.run(["bash", "-e", "-c", example.command], cwd=directory, capture_output=True,
                          text=True, timeout=timeout, env={**env, "COLUMNS": str(example.columns)})
    printed = done.stdout + done.stderr
    if done.returncode != example.exit_code:
        tail = (printed.strip().splitlines() or ["(nothing printed)"])[-1]
        return (f"{example.where}: exited {done.returncode}, the page says {example.exit_code}: "
                f"{tail}")
    if example.output is not None:
        why = compare(example.output, printed)
        if why:
            return f"{example.where}: {why}"
    return None
