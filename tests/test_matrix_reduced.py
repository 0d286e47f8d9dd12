"""``kmc matrix --symmetry --reduce dead --shortest``: every search of the matrix reduced, refusals
before the first search, and ``--expect`` comparing what a reduction keeps (verdicts; lengths with
``--shortest``)."""

from __future__ import annotations

import json

import pytest

import spec.kafka  # noqa: F401 - registers the model and its invariants
from kmc.cli import main
from kmc.matrix import command as matrix
from kmc.matrix import run as matrix_run
from kmc.matrix.cells import Cell
from kmc.matrix.compare import compare

ROWS = ["--protocol", "2.1.0", "--protocol", "2.1.1"]
#: KAFKA-7786's stall (2.1.0 breaks, 2.1.1 holds) and KIP-380's stale control request (both break)
CELLS = [*ROWS, "--invariant", "no-fence-stall", "--invariant", "no-stale-control-request",
         "--quiet", "--workers", "1"]


def _json(capsys, *extra: str) -> list[dict]:
    assert main(["matrix", *CELLS, "--json", *extra]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.slow  # eleven matrices of four cells: about 10 s
def test_reduced_matrix_keeps_every_verdict_and_shortest_gives_the_lengths(capsys, tmp_path):
    full = _json(capsys)
    assert {c["verdict"] for c in full} == {"holds", "violated"}  # both verdicts are compared
    expect = tmp_path / "full.json"
    expect.write_text(json.dumps(full))
    for extra in (["--reduce", "dead"], ["--reduce", "dead", "--symmetry"], ["--symmetry"]):
        reduced = _json(capsys, *extra)
        assert [(c["protocol"], c["invariant"], c["verdict"]) for c in reduced] == \
               [(c["protocol"], c["invariant"], c["verdict"]) for c in full], extra
        # the reduced searches store their own states: dead answers dropped (far fewer); orbits
        # (about as many here: two brokers, the first leader named in the initial state; every step
        # visible)
        fewer = sum(c["distinct_states"] for c in reduced) / sum(c["distinct_states"] for c in full)
        assert fewer < 0.9 if "dead" in extra else fewer <= 1, extra
        assert main(["matrix", *CELLS, *extra, "--expect", str(expect)]) == 0, extra
        capsys.readouterr()
    shortest = _json(capsys, "--reduce", "dead", "--shortest")
    assert [c["length"] for c in shortest] == [c["length"] for c in full]
    assert main(["matrix", *CELLS, "--reduce", "dead", "--shortest", "--expect", str(expect)]) == 0


@pytest.mark.slow  # every line it runs, cheaper fast tests run too (coverage by test)
def test_expect_under_a_reduction_still_catches_a_changed_verdict(capsys, tmp_path):
    full = _json(capsys)
    flipped = [{**c, "verdict": "holds" if c["verdict"] == "violated" else c["verdict"]}
               for c in full]
    expect = tmp_path / "flipped.json"
    expect.write_text(json.dumps(flipped))
    assert (main(["matrix", *CELLS, "--reduce", "dead", "--expect", str(expect)])
            == matrix.CELLS_CHANGED)
    out = capsys.readouterr().out
    assert "2.1.0 / no-fence-stall: verdict holds -> violated" in out
    # a reduced search's counts are not compared with the full search's
    assert "distinct states" not in out


def test_compare_leaves_out_what_a_reduction_changes():
    cell = Cell("2.1.0", "no-fence-stall", "violated", distinct_states=100, states_generated=300,
                depth=12, length=12,
                       seconds=1.0)
    want = {("2.1.0", "no-fence-stall"): {"verdict": "violated", "length": 9,
                                          "distinct_states": 200}}
    assert (compare([cell], want) == ["2.1.0 / no-fence-stall: length 9 -> 12, distinct states 200 "
                                      "-> 100"])
    assert compare([cell], want, counts=False) == ["2.1.0 / no-fence-stall: length 9 -> 12"]
    assert compare([cell], want, counts=False, lengths=False) == []


@pytest.mark.parametrize("argv, message", [
    (["--protocol", "2.1.0", "--protocol", "kraft-4.1", "--const", "reassignments=1", "--reduce",
      "dead"],
     "row kraft-4.1: --reduce dead does not cover reassignments"),
    (["--protocol", "2.1.0", "--reduce", "dead", "--engine", "directed"],
     "--reduce dead is not supported by --engine directed (engines that support it: local, "
     "parallel, spark)"),
    (["--protocol", "2.1.0", "--shortest"], "--shortest goes with --reduce"),
])
def test_a_row_or_engine_that_cannot_be_reduced_is_refused_before_any_search(
    capsys, monkeypatch, argv, message):
    searched = []
    monkeypatch.setattr(matrix_run, "check_cells", lambda *a, **k: searched.append(a) or [])
    assert main(["matrix", *argv, "--quiet"]) == 64
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert searched == []  # the 2.1.0 row was not searched before the refusal
