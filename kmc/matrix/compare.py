"""``kmc matrix --expect FILE``: the committed verdict table, and the cells that differ from it."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from checker.result import Verdict
from kmc.matrix.cells import Cell
from kmc.matrix.render import describe
from spec.errors import BadFileError, NoInputError


def load_expectation(path: str) -> dict[tuple[str, str], dict[str, Any]]:
    """A verdict table the user commits: the matrix's own ``--json`` output (a list of cells)."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except FileNotFoundError:
        raise NoInputError(f"expectation file {path} does not exist; create it with 'kmc matrix "
                           f"--json > {path}'") from None
    except OSError as exc:
        raise NoInputError(f"cannot read expectation file {path}: {exc.strerror or exc}") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadFileError(f"expectation file {path} is not JSON ({exc}); write it with 'kmc "
                           "matrix --json'") from None
    if isinstance(data, dict) and isinstance(data.get("cells"), list):
        data = data["cells"]
    if not isinstance(data, list):
        raise BadFileError(f"expectation file {path} is not a list of cells; write it with 'kmc "
                           "matrix --json'")
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for i, item in enumerate(data):
        if not (isinstance(item, dict) and isinstance(item.get("protocol"), str)
                and isinstance(item.get("invariant"), str)
                and item.get("verdict") in {v.value for v in Verdict}):
            raise BadFileError(f"expectation file {path}: entry {i} lacks protocol, invariant or a "
                               "verdict "
                               "(holds, violated, undetermined)")
        out[item["protocol"], item["invariant"]] = item
    return out


def compare(cells: Sequence[Cell], expected: dict[tuple[str, str], dict[str, Any]],
            counts: bool = True, lengths: bool = True) -> list[str]:
    """One line per cell that differs from the expectation (verdict, length, distinct states) or is
    not in it; cells of the expectation this run did not check are not differences. Without
    ``counts`` the distinct states are not compared, without ``lengths`` the counterexamples'
    lengths (a reduced search's)."""
    changes = []
    for cell in cells:
        want = expected.get((cell.protocol, cell.invariant))
        where = f"{cell.protocol} / {cell.invariant}"
        if want is None:
            changes.append(f"{where}: {describe(cell)}, not in the expectation")
            continue
        diffs = []
        if want["verdict"] != cell.verdict:
            diffs.append(f"verdict {want['verdict']} -> {cell.verdict}")
        if (lengths and cell.verdict == want["verdict"] == Verdict.VIOLATED.value
            and want.get("length") != cell.length):
            diffs.append(f"length {want.get('length')} -> {cell.length}")
        if (counts and cell.verdict == want["verdict"] and cell.verdict
            != Verdict.UNDETERMINED.value
                and "distinct_states" in want and want["distinct_states"] != cell.distinct_states):
            diffs.append(f"distinct states {want['distinct_states']:,} -> {cell.distinct_states:,}"
                         if isinstance(want["distinct_states"], int) else
                         f"distinct states {want['distinct_states']!r} -> {cell.distinct_states:,}")
        if diffs:
            changes.append(f"{where}: " + ", ".join(diffs))
    return changes
