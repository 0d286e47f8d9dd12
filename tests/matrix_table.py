"""The matrix table of the documentation (docs/tutorials/matrix.md), read as tests use it.

The table is ``kmc matrix``'s output at the model's bounds, re-run whenever the model changes, and
lives in one place: the matrix tutorial (it was README's until README was cut to a front page). Its
lines keep the format ``kmc matrix`` prints; tests that compare a reduced search with the full one
read the full search's verdicts from it.

The table is the readable model's (``kmc matrix --kernel off``): the page records the digest of the
readable model's source that made it (``readable_digest``), a fast test
(tests/test_traces_matrix.py) fails when that source changes and the table was not re-run, and the
slow tier searches every cell on the compiled kernel against the table.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

#: the one page that holds the table
MATRIX_PAGE = Path(__file__).resolve().parents[1] / "docs" / "tutorials" / "matrix.md"
TITLE = "kafka: every protocol against every invariant (model bounds)"
ROOT = MATRIX_PAGE.parents[2]
#: the command that makes the table on the readable model
READABLE_MATRIX = "COLUMNS=140 kmc matrix --kernel off --quiet --workers 2"
#: the line of the page that records the digest (``readable_digest``) of the model that made it
DIGEST_LINE = re.compile(r"^The readable model's source for this table: digest "
                         r"`sha256:([0-9a-f]{64})`", re.M)


def readable_sources(root: Path = ROOT) -> list[Path]:
    """The readable Kafka model's source: every module of ``spec/kafka`` but its compiled kernel's
    (``kernel.py``; ``kernel.c`` is not a module), and the Kafka invariants
    (``invariants/kafka_*.py``): its rules, states, releases, stories and invariants, sorted."""
    model = [p for p in (root / "spec" / "kafka").glob("*.py") if p.name != "kernel.py"]
    return sorted(model + list((root / "invariants").glob("kafka_*.py")))


def readable_digest(root: Path = ROOT) -> str:
    """The SHA-256 of ``readable_sources``: each file's path (from ``root``) and its bytes."""
    digest = hashlib.sha256()
    for path in readable_sources(root):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def documented_digest() -> str | None:
    """The digest the page records for the readable model that made its table (None: none)."""
    found = DIGEST_LINE.search(MATRIX_PAGE.read_text(encoding="utf-8"))
    return found.group(1) if found else None


def matrix_text() -> str:
    """The table's block, from its title line on."""
    text = MATRIX_PAGE.read_text(encoding="utf-8")
    return text[text.index(TITLE):]


def documented_matrix() -> dict[tuple[str, str], str]:
    """The full search's verdict of every cell of the default matrix, as the table gives it: (row,
    invariant) -> "holds" or "violated"."""
    return {cell: "violated" if text.startswith("✗") else "holds"
            for cell, text in _cells().items()}


def documented_lengths() -> dict[tuple[str, str], int]:
    """The shortest counterexample's length (steps) of every violated cell of the table: (row,
    invariant) -> N."""
    return {cell: int(text.split()[1].replace(",", "")) for cell, text in _cells().items()
            if text.startswith("✗")}


def documented_cells() -> dict[tuple[str, str], tuple[str, int]]:
    """Every cell of the table: (row, invariant) -> ("violated", the shortest counterexample's
    steps) or ("holds", the distinct states)."""
    return {cell: ("violated" if text.startswith("✗") else "holds",
                   int(text.split()[1].replace(",", ""))) for cell, text in _cells().items()}


def _cells() -> dict[tuple[str, str], str]:
    """Every cell of the table as printed (``✗ N`` or ``✓ N``): (row, invariant) -> its text."""
    block = matrix_text()
    lines = block.splitlines()
    columns = lines[1].split()[1:]
    legend = dict(re.findall(r"^([A-Z]): (\S+)$", block[:block.index("'✗ N'")], re.M))
    verdicts = {}
    for line in lines[2:]:
        if re.match(r"^[A-Z]: ", line):
            break
        row, *cells = re.split(r"\s{2,}", line.strip())
        assert 0 < len(cells) <= len(columns), line  # a ZooKeeper row has no ELR column (J)
        for column, cell in zip(columns, cells, strict=False):
            verdicts[(row, legend[column])] = cell
    return verdicts
