"""The compiled search at scale (``checker/kernel_search.h``, ``checker.kernel.KernelBFS``).

It stores what TLC stores: a 64-bit fingerprint of each state, its parent's index and its position
among the parent's successors, and the frontier whole (the next level spills to a file past
``KernelBFS.spill_bytes``); a counterexample is replayed on the kernel from its initial state. Here:
at 1, 2 and 3 threads (``--workers N``), with the frontier cut in batches of 3 states a thread
(``-DKM_CHUNK=3``: every merge boundary exercised on small models) and with every level spilled,
the distinct and generated counts, depth, out-degrees, verdicts and counterexamples (states and
actions, in their order) equal the readable model's; and the bytes a state beyond the frontier are
at most 40.
"""

from __future__ import annotations

import pytest

from checker import kernel as km
from checker.engines import run
from checker.search import SearchOptions
from invariants.registry import for_family
from spec.errors import OutputError
from tests.test_kafka_kernel import summary
from tests.test_kernel import TLA_SMALL, model_of, needs_cc

#: (model, constants, options): violations with every counterexample, a deadlock, symmetry with
#: --reduce dead on the Kafka model
CASES = [
    ("two-phase", {"RM": 4, "commit_guard": False}, {"stop_at_first": False}),
    ("tla:Kip320", TLA_SMALL, {"check_deadlock": True}),
    ("kafka", {"brokers": 2, "records": 1, "epochs": 2, "crashes": 1, "protocol": "0.10.2"},
     {"symmetry": True, "reduce": "dead", "stop_at_first": False}),
]


def model_and_options(name: str, constants: dict, kernel: str, options: dict):
    constants = dict(constants)
    if name == "kafka":
        from spec.registry import build_model

        protocol = constants.pop("protocol")
        model = build_model("kafka", [f"{k}={v}" for k, v in constants.items()],
                            protocol=protocol)
    else:
        model = model_of(name, constants)
    family, options = for_family(model.family), dict(options)
    names = options.pop("invariants", [n for n, i in family.items() if i.default and i.holds])
    return model, SearchOptions(invariants=[family[n] for n in names], kernel=kernel, **options)


def lean(name: str, constants: dict, threads: int, chunk: int | None = None, **options):
    model, opts = model_and_options(name, constants, "on", options)
    flags = (f"-DKM_CHUNK={chunk}",) if chunk else ()
    return km.KernelBFS(model, opts, km.load(model.kernel(), flags), threads).run()


@needs_cc
@pytest.mark.parametrize(("name", "constants", "options"), CASES, ids=lambda c: str(c)[:20])
@pytest.mark.slow  # every line it runs, cheaper fast tests run too (coverage by test)
def test_any_thread_count_is_the_readable_search(name, constants, options):
    model, opts = model_and_options(name, constants, "off", options)
    readable = summary(run(model, opts))
    assert readable[-1], "a case with a counterexample"
    for threads in (1, 2, 3):
        result = lean(name, constants, threads, chunk=3, **options)
        assert result.extra["path"]["threads"] == threads == result.workers
        assert summary(result) == readable, threads


@needs_cc
@pytest.mark.slow  # every line it runs, cheaper fast tests run too (coverage by test)
def test_a_spilled_frontier_is_the_same_search(monkeypatch):
    """Every state of every level goes to the file (`spill_bytes` 1: one state in memory)."""
    name, constants, options = "two-phase", {"RM": 6}, {}
    whole = lean(name, constants, 2)
    assert whole.extra["path"]["spilled_bytes"] == 0
    monkeypatch.setattr(km.KernelBFS, "spill_bytes", 1)
    spilled = lean(name, constants, 2, chunk=100, **options)
    assert spilled.extra["path"]["spilled_bytes"] > 0
    assert summary(spilled) == summary(whole)
    assert summary(whole) == summary(run(*model_and_options(name, constants, "off", options)))


@needs_cc
def test_a_state_costs_at_most_40_bytes_beyond_the_frontier():
    """The Kafka model's states are 100-odd bytes: a search that kept them whole fails this."""
    result = lean("kafka", {"brokers": 3, "records": 1, "epochs": 1, "crashes": 0,
                            "protocol": "2.1.0"}, 1, symmetry=True, reduce="dead", max_depth=14)
    path = result.extra["path"]
    assert result.distinct_states > 10_000 and path["state_bytes"] > 40
    assert (path["visited_bytes"] + path["link_bytes"]) / result.distinct_states <= 40
    assert result.collision.observed is not None and result.collision.optimistic > 0


@needs_cc
def test_a_frontier_that_cannot_spill_is_one_line(monkeypatch, tmp_path):
    monkeypatch.setattr(km.KernelBFS, "spill_bytes", 1)
    monkeypatch.setattr(km.tempfile, "tempdir", str(tmp_path / "missing"))
    with pytest.raises(OutputError, match="could not spill its next level to .*missing"):
        lean("two-phase", {"RM": 6}, 1)


@pytest.mark.slow
@needs_cc
@pytest.mark.parametrize(("name", "constants", "options"), [
    ("two-phase", {"RM": 7}, {}),
    ("kafka", {"brokers": 3, "records": 1, "epochs": 1, "crashes": 1, "protocol": "2.1.0"},
     {"symmetry": True, "reduce": "dead", "max_depth": 12, "stop_at_first": False}),
], ids=lambda c: str(c)[:20])
def test_bigger_searches_at_any_thread_count_with_spills(monkeypatch, name, constants, options):
    readable = summary(run(*model_and_options(name, constants, "off", options)))
    monkeypatch.setattr(km.KernelBFS, "spill_bytes", 1 << 16)
    for threads in (1, 2, 3):
        result = lean(name, constants, threads, **options)
        assert result.extra["path"]["spilled_bytes"] > 0
        assert summary(result) == readable, threads
