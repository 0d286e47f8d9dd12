"""The matrix table of the documentation (docs/tutorials/matrix.md), read as tests use it.

The table is ``kmc matrix``'s output at the model's bounds, re-run whenever the model changes, and
lives in one place: the matrix tutorial (it was README's until README was cut to a front page). Its
lines keep the format ``kmc matrix`` prints; tests that compare a reduced search with the full one
read the full search's verdicts from it.
"""

from __future__ import annotations

import re
from pathlib import Path

#: the one page that holds the table
MATRIX_PAGE = Path(__file__).resolve().parents[1] / "docs" / "tutorials" / "matrix.md"
TITLE = "kafka: every protocol against every invariant (model bounds)"


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
