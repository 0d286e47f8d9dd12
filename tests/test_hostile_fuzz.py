"""A short, seeded slice of the mutation fuzzer (``bench/fuzz.py``; the long runs are in bench/):
mutated traces, scenarios and checkpoints, special files and unusable outputs given to the real
command line. Any traceback, crash, hang, undocumented exit code, silent wrong result or lost
file fails the test with the case that caused it. Signals are covered by test_hostile_signals."""

import importlib.util
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _fuzz():
    spec = importlib.util.spec_from_file_location("kmc_fuzz",
                                                  os.path.join(ROOT, "bench", "fuzz.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules["kmc_fuzz"] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


# about 7 s of CPU; each class of hostile input has direct fast tests (tests/test_hostile_*.py)
@pytest.mark.slow
def test_a_slice_of_the_fuzzer_finds_no_defect(tmp_path):
    fuzz = _fuzz()
    classes = ("trace", "scenario", "checkpoint", "special", "output")
    outcomes = fuzz.run_cases(seed=2026, per_class=2, classes=classes, root=str(tmp_path))
    assert len(outcomes) == 10 and {o.cls for o in outcomes} == set(classes)
    assert [o.__dict__ for o in outcomes if o.defects] == []
