"""Parity with TLC on Kafka's published TLA+ specifications (issue 7).

TLC 2.18 with Replicas = {r1, r2}, LogSize = 2, MaxRecords = 2, MaxLeaderEpoch = 2, deadlock
checking off, run to exhaustion: the counts below are TLC's. Also pinned: the StrongIsr verdicts
and shortest counterexample lengths, and our own counts at a second configuration.
"""

from __future__ import annotations

import json

import pytest

from checker.bfs import check
from checker.result import Verdict
from checker.search import SearchOptions
from invariants.registry import for_family
from kmc.cli import main
from spec.registry import build_model

TLC = {  # module: (distinct states, states generated, depth)
    "KafkaTruncateToHighWatermark": (10_131, 24_459, 20),
    "Kip101": (9_045, 21_447, 18),
    "Kip279": (9_027, 23_425, 18),
    "Kip320FirstTry": (8_429, 19_387, 18),
    "Kip320": (5_973, 11_839, 18),
}

# ours, at Replicas=3 LogSize=1 MaxRecords=1 MaxLeaderEpoch=1 (the literal second encoding agrees)
SECOND = {
    "KafkaTruncateToHighWatermark": (10_681, 31_552, 17),
    "Kip101": (9_841, 28_840, 18),
    "Kip279": (9_841, 36_322, 18),
    "Kip320FirstTry": (9_661, 27_088, 18),
    "Kip320": (6_787, 16_348, 18),
}

TWO = ["Replicas=2", "LogSize=2", "MaxRecords=2", "MaxLeaderEpoch=2"]


def run(module, consts, invariants=()):
    model = build_model(f"tla:{module}", consts)
    family = for_family(model.family)
    return model, check(model, SearchOptions(invariants=[family[name] for name in invariants]))


@pytest.mark.parametrize("module", sorted(TLC))
@pytest.mark.slow  # every line it runs, cheaper fast tests run too (coverage by test)
def test_counts_equal_tlc_and_every_invariant_but_the_isr_ones_holds(module):
    _, result = run(module, TWO, ["TypeOk", "LogMatching"])
    assert result.verdict is Verdict.HOLDS
    assert (result.distinct_states, result.states_generated, result.depth) == TLC[module]


@pytest.mark.parametrize("module", ["Kip279", "Kip320FirstTry", "Kip320"])
@pytest.mark.slow  # every line it runs, cheaper fast tests run too (coverage by test)
def test_strong_and_weak_isr_hold_where_tlc_says_so(module):
    _, result = run(module, TWO, ["StrongIsr", "WeakIsr"])
    assert result.verdict is Verdict.HOLDS
    assert (result.distinct_states, result.states_generated, result.depth) == TLC[module]


@pytest.mark.parametrize(("module", "replicas", "length"), [
    ("KafkaTruncateToHighWatermark", 2, 9),
    ("Kip101", 2, 11),
    ("KafkaTruncateToHighWatermark", 3, 8),
    pytest.param("Kip279", 3, 10, marks=pytest.mark.slow),  # about 12 s
])
@pytest.mark.slow  # every line it runs, cheaper fast tests run too (coverage by test)
def test_strong_isr_violated_with_a_shortest_counterexample(module, replicas, length):
    consts = [f"Replicas={replicas}", "LogSize=2", "MaxRecords=2", "MaxLeaderEpoch=2"]
    model, result = run(module, consts, ["StrongIsr"])
    assert result.verdict is Verdict.VIOLATED
    (violation,) = result.violations
    trace = violation.trace
    assert violation.invariant == "StrongIsr" and trace.length == length
    assert result.depth == length + 1  # found at the first level that holds a violating state
    invariant = for_family(model.family)["StrongIsr"]
    states = trace.states
    assert all(invariant.holds(s) for s in states[:-1]) and not invariant.holds(states[-1])
    # every step is a real transition
    for before, step in zip(states[:-1], trace.steps, strict=True):
        assert (step.action, step.state) in list(model.successors(before))
    assert "StrongIsr broken" in trace.explanation


@pytest.mark.slow
def test_kip320_first_try_violates_strong_isr_with_three_replicas():
    _, result = run("Kip320FirstTry", ["Replicas=3"], ["StrongIsr"])
    assert result.verdict is Verdict.VIOLATED and result.violations[0].trace.length == 12


@pytest.mark.parametrize("module", sorted(SECOND))
@pytest.mark.slow  # every line it runs, cheaper fast tests run too (coverage by test)
def test_pinned_counts_at_a_second_configuration(module):
    _, result = run(module, ["Replicas=3", "LogSize=1", "MaxRecords=1", "MaxLeaderEpoch=1"],
                    ["TypeOk"])
    assert result.verdict is Verdict.HOLDS
    assert (result.distinct_states, result.states_generated, result.depth) == SECOND[module]


def test_cli_end_to_end(capsys, tmp_path):
    argv = ["check", "tla:Kip320", *[a for c in TWO for a in ("--const", c)], "--invariant",
            "StrongIsr",
            # as TLC was run: deadlock checking off
            "--json", "--trace-dir", str(tmp_path), "-deadlock"]
    code = main(argv)
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and data["verdict"] == "holds"
    assert (data["distinct_states"], data["states_generated"], data["depth"]) == TLC["Kip320"]
    code = main(["check", "tla:Kip101", "--invariant", "StrongIsr", "--json", "--trace-dir",
                 str(tmp_path), "-deadlock"])
    data = json.loads(capsys.readouterr().out)
    assert code == 12 and data["verdict"] == "violated" and data["violations"][0]["length"] == 11


def test_the_older_revision_of_controller_shrink_isr_does_not_match_tlc():
    """The 2018 text guards ControllerShrinkIsr's third disjunct with quorumState.isr # {replica};
    TLC's numbers are those of the current text, without it (see spec/reference/PARITY.md)."""
    from spec.reference import VARIANTS

    result = check(VARIANTS["KafkaTruncateToHighWatermark"](controller_shrink_guard=True))
    assert (result.distinct_states, result.states_generated, result.depth) == (10_037, 24_243, 20)
