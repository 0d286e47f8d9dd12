"""The invariant registry gives a family's invariants in one order, whichever of its modules a
process imported first: ``kmc list``, the default invariants of a check, the matrix's columns and
``docs/reference/invariants.md`` do not depend on what a test (or a user's script) imported
before."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIRST = ("import {module}; from invariants.registry import for_family; print(' "
         "'.join(for_family('kafka')))")


def _order(module: str) -> list[str]:
    run = subprocess.run([sys.executable, "-c", FIRST.format(module=module)], cwd=ROOT,
                         capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(ROOT), "PATH": ""})
    return run.stdout.split()


def test_the_order_of_a_familys_invariants_does_not_depend_on_what_was_imported_first():
    usual = _order("invariants.registry")
    # the family's first module's, first
    assert usual[:2] == ["log-matching", "log-matching-all-pairs"]
    assert _order("invariants.kafka_control") == usual
