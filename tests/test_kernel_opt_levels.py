"""The kernel at the optimisation level users get (-O2) gives the readable model's matrix cells.

The suite compiles its kernels at -Og (tests/conftest.py: cheaper compiles) and the kernel proofs'
two modules at -O0; a user's kernel is compiled at -O2 (``checker.kernel.optimisation``). A C
construct whose meaning the optimiser may change (undefined behaviour: an overflow, an
uninitialised field, an aliasing cast) would pass the suite and differ for users. So two rows of
the default matrix, one ZooKeeper row and one KRaft row (between them the fetcher's epoch
validation, the ISR's controller, ELR, the clients), are searched here at -O2, every cell the
kernel runs, and compared with the readable model's table (docs/tutorials/matrix.md), as
tests/test_traces_matrix.py compares every row at -Og.
"""

from __future__ import annotations

import shutil

import pytest

from checker import kernel
from kmc.matrix import run as matrix_run
from kmc.matrix.run import MatrixOptions, run_matrix
from tests.matrix_table import documented_cells
from tests.test_traces_matrix import READABLE_ONLY, ROWS, kernel_columns

ROWS_AT_O2 = ("2.1.0", "kraft-4.1")


@pytest.mark.slow  # each row's libraries compiled at -O2: about 17 s of CPU, empty cache
@pytest.mark.skipif(shutil.which(kernel.compiler()) is None, reason="no C compiler")
@pytest.mark.parametrize("label", ROWS_AT_O2)
def test_a_row_at_users_optimisation_level_is_the_readable_table(label, monkeypatch):
    row = next(row for row in ROWS if row.label == label)
    monkeypatch.setenv("KMC_KERNEL_OPT", "-O2")
    assert kernel.optimisation() == "-O2"  # and so in each library's cache key
    on, refused = kernel_columns(row)
    assert on and set(refused) <= READABLE_ONLY
    monkeypatch.setattr(matrix_run, "story_of", lambda *args: None)
    cells = run_matrix("kafka", MatrixOptions(protocols=[label], invariants=on, kernel="on"))
    searched = {(label, c.invariant): (c.verdict, c.length if c.verdict == "violated"
                                       else c.distinct_states) for c in cells}
    table = {cell: found for cell, found in documented_cells().items()
             if cell[0] == label and cell[1] in on}
    assert searched == table and len(table) == len(on)
