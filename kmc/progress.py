"""TLC-like progress lines on stderr, for ``kmc check`` and ``kmc matrix``."""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from typing import Any

from checker.search import Progress
from kmc.matrix.cells import Cell
from kmc.matrix.render import describe


class ProgressLines:
    """TLC-like progress lines on stderr: one when a search starts, one every ``interval`` seconds
    during it, one per finished cell. Plain lines, so they read the same in a CI log."""

    def __init__(self, stream: Any = None, interval: float = 10.0) -> None:
        self.stream = stream or sys.stderr
        self.interval = interval
        self._last = time.monotonic()

    def _line(self, text: str) -> None:
        print(f"{time.strftime('%H:%M:%S')} {text}", file=self.stream, flush=True)

    def search(self, row: str, names: Sequence[str], constants: dict[str, Any]) -> None:
        bounds = ", ".join(f"{k}={v}" for k, v in constants.items())
        self._line(f"Checking {row}: {', '.join(names)} in one search ({bounds})")
        self._last = time.monotonic()

    def __call__(self, p: Progress) -> None:
        if time.monotonic() - self._last >= self.interval:
            self._last = time.monotonic()
            self._line(f"Progress({p.depth}): {p.states_generated:,} states generated, "
                       f"{p.distinct_states:,} distinct states found, {p.queue:,} states left on "
                       f"queue ({p.seconds:.0f} s).")

    def cell(self, cell: Cell) -> None:
        self._line(f"  {cell.protocol} / {cell.invariant}: {describe(cell)}")

    def running(self, searches: list[tuple[str, list[str], float]], done: int, total: int) -> None:
        """Searches on several cores: which run, for how long, and how many are done."""
        now = ", ".join(f"{row} ({', '.join(names)}, {seconds:.0f} "
                        "s)" for row, names, seconds in searches)
        self._line(f"Progress: {done} of {total} searches done; running {now}")
