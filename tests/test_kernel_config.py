"""One compiled Kafka kernel serves every value of its run-time constants (``KernelSource.config``:
the bounds and feature flags that only guard rules, ``KM_CONFIG`` in ``spec/kafka/kernel.c``).

The cache key (``checker.kernel.cache_key``) holds the constants that shape the state
(``KernelSource.defines``: brokers, records, epochs, the network's slots, the consumers, the KRaft
and alter-isr layouts) and none of the run-time ones; each configuration loads its own copy of the
library with its constants written in (``checker.kernel.configured``), so two configurations in one
process never see each other's, and each gives the readable model's counts. Without a C compiler
the searches skip.
"""

from __future__ import annotations

import threading

import pytest

from checker import kernel as km
from checker.engines import run
from checker.search import SearchOptions
from invariants.registry import for_family
from spec.errors import ModelError
from spec.kafka.kernel import LAYOUT_FLAGS, RUNTIME_BOUNDS
from spec.registry import build_model
from tests.readable_reference import readable_search
from tests.test_kernel import needs_cc

#: the compile-time constants: each must stay in the cache key
LAYOUT = ("KM_N", "KM_R", "KM_E", "KM_NET", "KM_CONSUMERS", "KM_CONSUMED", "KM_F_KRAFT",
          "KM_F_ZOOKEEPER_ALTER_ISR")
BASE = {"brokers": 2, "records": 1, "epochs": 2, "crashes": 1}


def kafka(protocol: str = "2.2.0", features: tuple[str, ...] = (), **bounds: int):
    more = {**BASE, **bounds}
    return build_model("kafka", [f"{k}={v}" for k, v in more.items()], protocol=protocol,
                       feature_assignments=list(features))


def _default_invariants() -> list:
    """The default safety invariants (every one compiled)."""
    return [inv for inv in for_family("kafka").values() if inv.default and inv.holds is not None]


def counts(model, kernel: str) -> tuple:
    result = run(model, SearchOptions(invariants=_default_invariants(), stop_at_first=False,
                                      check_deadlock=False, kernel=kernel))
    assert (result.extra.get("path", {}).get("path") == "kernel") == (kernel == "on")
    found = sorted(v.invariant for v in result.violations)
    return result.distinct_states, result.states_generated, result.depth, found


def readable_counts(model) -> tuple:
    """``counts(model, "off")`` from the readable model's search as ``tests.readable_reference``
    recorded it (live while it is re-made)."""
    invariants = tuple(inv.name for inv in _default_invariants())
    record = readable_search(model, {"invariants": invariants, "stop_at_first": False},
                             lambda: run(model, SearchOptions(invariants=_default_invariants(),
                                                              stop_at_first=False, kernel="off")))
    return (record["distinct"], record["generated"], record["depth"],
            sorted(v["invariant"] for v in record["violations"]))


#: pairs of configurations of one layout that differ in run-time constants only: guard bounds
#: (bumps, losses, acks, min_isr, alters) and a story's flag
PAIRS = [
    (kafka(), kafka(bumps=1)),
    (kafka(acks=-1, min_isr=2), kafka(acks=1)),
    (kafka("2.8.0", epochs=1, losses=1),
     kafka("2.8.0", epochs=1, alters=1, features=("kafka-13207=off",))),
]


def test_the_compile_time_constants_are_the_layout_and_the_cache_key_holds_no_run_time_one():
    """The defines are the layout (fails if a guard bound goes back to a define, or a layout
    constant is left out), the run-time constants are named once, and the key changes with every
    layout constant, never with a run-time one."""
    spec = kafka().kernel()
    assert tuple(name for name, _ in spec.defines) == LAYOUT
    names = [name for name, _ in spec.config]
    assert names[:len(RUNTIME_BOUNDS)] == list(RUNTIME_BOUNDS)
    assert not set(names) & {flag for flag in LAYOUT_FLAGS}
    for first, second in PAIRS:
        a, b = first.kernel(), second.kernel()
        assert a.defines == b.defines and a.config != b.config
        assert km.cache_key(a) == km.cache_key(b)
    key = km.cache_key(spec)
    assert km.cache_key(spec._replace(config=())) == key
    for name in LAYOUT:
        other = tuple((k, v + 1 if k == name else v) for k, v in spec.defines)
        assert km.cache_key(spec._replace(defines=other)) != key, name
    for bounds in ({"brokers": 3}, {"records": 2}, {"epochs": 3}, {"consumers": 1}):
        assert km.cache_key(kafka(**bounds).kernel()) != key, bounds


@needs_cc
@pytest.mark.parametrize("pair", range(len(PAIRS)))
def test_one_library_serves_two_configurations(pair):
    """Both configurations of a pair from one compiled library, loaded together in one process and
    searched alternately: each gives the readable model's counts, depth and violations (its search
    recorded: ``tests.readable_reference``)."""
    first, second = PAIRS[pair]
    a, b = km.load(first.kernel()), km.load(second.kernel())
    assert a.library != b.library
    readable = [readable_counts(first), readable_counts(second)]
    assert readable[0] != readable[1]  # the constants matter: a shared copy could not pass
    assert [counts(first, "on"), counts(second, "on"), counts(first, "on")] == [
        readable[0], readable[1], readable[0]]


@needs_cc
def test_two_configurations_in_threads_keep_their_own_constants():
    """Two configurations' kernels expanding one state in two threads at once give each its
    readable successors."""
    first, second = PAIRS[0]
    kernels = [km.load(first.kernel()), km.load(second.kernel())]
    state = next(iter(first.init_states()))
    assert list(first.successors(state)) != list(second.successors(state))
    wrong = []

    def expand(model, kernel) -> None:
        for _ in range(200):
            if kernel.successors(state) != list(model.successors(state)):
                wrong.append(model.constants)
                return

    threads = [threading.Thread(target=expand, args=(m, k))
               for m, k in zip((first, second), kernels, strict=True)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not wrong


@needs_cc
def test_a_config_out_of_the_c_files_order_is_refused():
    """The Python side's run-time constants must be the C file's KM_CONFIG, name for name."""
    spec = kafka().kernel()
    swapped = (spec.config[1], spec.config[0], *spec.config[2:])
    with pytest.raises(ModelError, match="KM_CONFIG"):
        km.load(spec._replace(config=swapped))
