"""The consumers in the compiled kernel (``spec/kafka/kernel.c``'s consumers section) and in the
readable model (``spec/kafka/clients.py``) are one model.

State for state: on states of small configurations with one consumer (a breadth-first prefix and
seeded random walks that reach its validations, truncations, resets and requests in flight), on
a ZooKeeper row without and with KIP-320's truncation detection (2.1.0, 3.4.1), a truncate-on-fetch
row (2.8.0) and the KRaft rows (kraft-3.3, kraft-4.1), with ``consumer_inflight`` 0 and 1 and each
consumer flag on and off: packing is exact, and the (action, successor) lists in order, the
canonical form, the dead reduction and the invariant verdicts equal the readable model's
(``tests.test_kafka_kernel.disagreements``), by the record of the readable side
(``tests.readable_reference``; the kernel walks the same seeded walks on its own successors and
hashes its sample as ``tests.test_kafka_kernel.state_for_state`` does; the first fast configuration
live both ways too). Search for search: the matrix's consumed-stays cell
of each row (fast where the readable search is cheap, the rest slow) with ``--kernel on`` and
``off`` (recorded: ``tests.readable_reference``): verdict, counts, depth, out-degrees and
counterexamples (the kernel's replayed on the readable model). A kernel with one consumer rule
changed (``-DKM_MUTANT=7``: a metadata update that does not put the position into validation)
fails the check. Without a C compiler these skip.
"""

from __future__ import annotations

import random

import pytest

from checker import kernel as km
from checker.engines import run
from checker.invariant import Invariant
from checker.search import SearchOptions
from invariants.kafka_durability import current_leader
from invariants.registry import for_family
from spec.kafka.clients import (
    CONSUMER_FETCH,
    CONSUMER_FETCH_RESPONSE,
    CONSUMER_VALIDATE,
    CONSUMER_VALIDATE_RESPONSE,
)
from spec.kafka.kernel import PROVEN_ROWS, Packing
from tests.readable_reference import REFERENCE, REMAKE, readable_record, recording
from tests.test_kafka_kernel import (
    StateDigest,
    _id,
    differs_in_bulk,
    disagreements,
    kafka,
    kernel_breadth_first,
    kernel_record,
    reachable,
    search,
    searches_agree,
    switched,
    unoptimised,
)
from tests.test_kernel import needs_cc


@pytest.fixture(autouse=True, scope="module")
def _unoptimised_kernels():
    """The proofs' kernels at -O0 (``tests.test_kafka_kernel.unoptimised``)."""
    yield from unoptimised()


#: what the walks favour (half their steps where one is enabled): the consumers' actions and an
#: unclean election (which sets their ghost read_before_unclean)
FAVOURED = ("Consumer", "ServeConsumer", "ReceiveConsumer", "Unclean")


def walks(model, count: int, depth: int, seed: int) -> list:
    """The distinct states of ``count`` seeded random walks of at most ``depth`` steps from the
    initial states (deep states a breadth-first prefix does not reach), in the order met; half the
    steps that can take a ``FAVOURED`` action take one."""
    rng = random.Random(seed)
    seen: dict = {}
    for _ in range(count):
        state = rng.choice(model.init_states())
        for _ in range(depth):
            seen.setdefault(state, None)
            successors = model.successors(state)
            if not successors:
                break
            favoured = [x for x in successors if str(x[0]).startswith(FAVOURED)]
            state = rng.choice(favoured if favoured and rng.random() < 0.5 else successors)[1]
    return list(seen)


def sample(model, prefix: int = 1500, count: int = 60, depth: int = 200, seed: int = 7) -> list:
    return list(dict.fromkeys(reachable(model, prefix) + walks(model, count, depth, seed)))


#: one consumer, the matrix's consumed-stays bounds less a record where two are not needed
SMALL = {"brokers": 2, "records": 1, "epochs": 2, "crashes": 1, "consumers": 1}
#: (row, switched flags, bounds): the fast tier's, each flag and mode once (a smaller sample)
STATE_FOR_STATE = [
    ("2.1.0", {}, SMALL),
    ("3.4.1", {"fetch-from-follower": True}, {**SMALL, "consumer_inflight": 1}),
    ("2.8.0", {"fetch-from-follower": True}, {**SMALL, "records": 2}),
    ("kraft-3.3", {}, {**SMALL, "consumer_inflight": 1}),
]
#: the slow tier's: every combination above and more, with the full sample
MORE_STATE_FOR_STATE = [
    ("2.1.0", {}, {**SMALL, "consumer_inflight": 1}),
    ("3.4.1", {}, {**SMALL, "records": 2}),
    ("3.4.1", {}, {**SMALL, "consumer_inflight": 1}),
    ("3.4.1", {"consumer-truncation-detection": False}, SMALL),
    ("3.4.1", {"fetch-from-follower": True}, {**SMALL, "records": 2}),
    ("2.8.0", {}, {**SMALL, "records": 2, "consumer_inflight": 1}),
    ("3.9.1", {"unclean": True}, SMALL),
    # (the matrix's kraft-4.1 bounds, min_isr=2, are searched both ways below: the walks seldom
    # reach a read there)
    ("kraft-4.1", {}, {**SMALL, "alters": 1}),
    ("kraft-4.1", {"fetch-from-follower": True},
     {**SMALL, "records": 2, "consumer_inflight": 1}),
]


def _model(row: str, flags: dict, bounds: dict):
    return switched(row, flags, **bounds) if flags else kafka(row, **bounds)


def _state_for_state(row: str, flags: dict, bounds: dict, live: bool = False, **size: int) -> None:
    """The kernel is the readable model on ``sample``, by the record (``tests.readable_reference``):
    the kernel's own sample (``kernel_sample``) and its record against the readable model's;
    ``live`` (and while the record is re-made) the readable side too, compared in bulk and with
    the record, and what the sample reaches asserted (the record holds it otherwise: the same
    states). On a mismatch the comparison runs live, naming the state."""
    model = _model(row, flags, bounds)
    spec = model.kernel()
    assert spec.unsupported is None
    kernel = km.load(spec)
    size = {"prefix": 1500, "count": 60, "depth": 200, "seed": 7, **size}
    compiled = kernel_record(kernel, kernel_sample(model, kernel, **size))
    if live or recording():
        digest = StateDigest()
        states = sample(model, **size)
        assert differs_in_bulk(model, kernel, states, digest) is None, \
            disagreements(model, kernel, states)
        assert _recorded(model, size, digest.record) == digest.record() == compiled
        _reaches_the_consumers_rules(model, bounds, states)
        return
    if _recorded(model, size) == compiled:
        return
    assert disagreements(model, kernel, sample(model, **size)) == []
    raise AssertionError(f"the kernel is the live readable model state for state but not the "
                         f"record in tests/{REFERENCE.name}: re-make it with `{REMAKE}`")


def _recorded(model, size: dict, compute=None) -> dict:
    """The recorded state-for-state record of ``sample(model, **size)``."""
    return readable_record(model, {"state_for_state": {"sample": size}}, compute, packed=True)


def kernel_sample(model, kernel: km.Kernel, prefix: int, count: int, depth: int,
                  seed: int) -> list[bytes]:
    """``sample`` on the kernel, packed: its breadth-first prefix and its walks (``kernel_walks``),
    each state once in the order met."""
    return list(dict.fromkeys(kernel_breadth_first(model, kernel, prefix)
                              + kernel_walks(model, kernel, count, depth, seed)))


def kernel_walks(model, kernel: km.Kernel, count: int, depth: int, seed: int) -> list[bytes]:
    """``walks`` on the kernel (packed states, one batch expansion a state met): the same random
    choices among the same successors in the same order, so the same states when the kernel is the
    readable model."""
    from checker.kernel_batch import BatchKernel

    batch = BatchKernel(kernel.library, kernel.state_bytes)
    names: dict[int, str] = {}
    rng = random.Random(seed)
    seen: dict = {}  # state -> (its successors, the positions of the favoured ones)

    def expand(state: bytes) -> tuple[list[bytes], list[int]]:
        out = batch.expand(batch.rows(state), symmetry=False)
        codes = out.action.tolist()
        for code in set(codes) - names.keys():
            names[code] = str(kernel.spec.action(code))
        blob, width = out.states.tobytes(), kernel.state_bytes
        return ([blob[i * width:(i + 1) * width] for i in range(len(codes))],
                [i for i, code in enumerate(codes) if names[code].startswith(FAVOURED)])

    initial = [kernel.spec.pack(state) for state in model.init_states()]
    for _ in range(count):
        state = rng.choice(initial)
        for _ in range(depth):
            if state not in seen:
                seen[state] = expand(state)
            successors, favoured = seen[state]
            if not successors:
                break
            step = rng.choice(favoured if favoured and rng.random() < 0.5
                              else range(len(successors)))
            state = successors[step]
    return list(seen)


def _reaches_the_consumers_rules(model, bounds: dict, states: list) -> None:
    """The sample reaches what the consumers' rules act on: records read, and with
    consumer_inflight each kind of request and answer in flight."""
    consumers = [c for s in states for c in s.consumers]
    assert any(c.consumed for c in consumers)
    if bounds.get("consumer_inflight"):
        kinds = {c.inflight[1] for c in consumers if c.inflight}
        assert kinds >= {CONSUMER_FETCH, CONSUMER_FETCH_RESPONSE}
        if model.features.consumer_truncation_detection:
            assert kinds >= {CONSUMER_VALIDATE, CONSUMER_VALIDATE_RESPONSE}
    elif model.features.consumer_truncation_detection:
        assert any(c.validating for c in consumers)


@needs_cc
@pytest.mark.parametrize(("row", "flags", "bounds"), STATE_FOR_STATE, ids=_id)
def test_the_consumers_are_the_readable_model_state_for_state(row, flags, bounds):
    """By the record; the first configuration live both ways too."""
    _state_for_state(row, flags, bounds, live=(row, flags, bounds) == STATE_FOR_STATE[0],
                     prefix=400, count=20, depth=120)


@pytest.mark.slow
@needs_cc
@pytest.mark.parametrize(("row", "flags", "bounds"), STATE_FOR_STATE + MORE_STATE_FOR_STATE,
                         ids=_id)
def test_more_consumer_states_of_each_row(row, flags, bounds):
    _state_for_state(row, flags, bounds)


@needs_cc
@pytest.mark.parametrize("row", ["0.10.2", "2.8.0", "kraft-3.3", "kraft-4.0"])
def test_the_consumed_stays_counterexamples_are_the_readable_model_state_for_state(row):
    """The states of each violated consumed-stays cell's counterexample (found by the kernel; a
    record read, then lost with an unclean election or a truncation) and every successor of each:
    the deep states the walks rarely reach."""
    model = kafka(row, **_cell(row))
    result = search(model, "on", ("consumed-stays",))
    assert result.extra["path"]["path"] == "kernel" and result.violations
    trace = list(result.violations[0].trace.states)
    states = list(dict.fromkeys(trace + [t for s in trace for _, t in model.successors(s)]))
    assert any(c.consumed for s in states for c in s.consumers)
    assert disagreements(model, km.load(model.kernel()), states) == []


def _noted(state) -> bool:
    """No record a consumer read before an unclean election (``unclean_noted``'s ghost) is missing
    from the current leader's log (the loss consumed-stays excuses)."""
    i = current_leader(state)
    if i < 0:
        return True
    log = state.brokers[i].log
    for c in state.consumers:
        for offset, epoch, ident in c.consumed[:c.read_before_unclean]:
            if offset >= len(log) or (log[offset].epoch, log[offset].ident) != (epoch, ident):
                return False
    return True


def _no_stale_serve(state) -> bool:
    """No consumer's fetch in flight is at a live broker of the same incarnation that leads in
    another epoch than the request's, with records below its HW from the request's position (what
    ServeConsumerFetch fences with truncation detection)."""
    for c in state.consumers:
        if c.inflight and c.inflight[1] == CONSUMER_FETCH:
            b = state.brokers[c.inflight[0]]
            if (b.alive and b.incarnation == c.inflight[2] and b.leader == c.inflight[0]
                    and b.epoch != c.inflight[3] and b.hw > c.inflight[4]):
                return False
    return True


#: (row, switched flags, bounds, a predicate whose first violation the readable model finds)
TARGETS = [
    ("3.9.1", {"unclean": True}, SMALL, _noted),
    ("kraft-4.1", {"unclean": True}, SMALL, _noted),
    ("3.4.1", {}, {**SMALL, "crashes": 0, "consumer_inflight": 1}, _no_stale_serve),
    ("kraft-4.1", {}, {**SMALL, "crashes": 0, "consumer_inflight": 1}, _no_stale_serve),
]


@needs_cc
@pytest.mark.parametrize(("row", "flags", "bounds", "target"), TARGETS,
                         ids=lambda v: v.__name__.strip("_") if callable(v) else _id(v))
def test_rare_consumer_states_are_the_readable_model_state_for_state(row, flags, bounds, target):
    """The states on a shortest path (the readable model's search) to a state the walks seldom
    reach, and every successor of each: a consumer that read before an unclean election (its ghost
    ``read_before_unclean``, which consumed-stays reads), a fetch in flight to a broker that leads
    in a newer epoch."""
    model = _model(row, flags, bounds)
    trace = replay(model, readable_record(model, {"target": target.__name__},
                                          lambda: _shortest_path(model, target)))
    states = list(dict.fromkeys(trace + [t for s in trace for _, t in model.successors(s)]))
    assert disagreements(model, km.load(model.kernel()), states) == []


def _shortest_path(model, target) -> list[str]:
    """The actions of the readable model's shortest path to a state that violates ``target`` (its
    search, breadth first: ``tests.readable_reference`` records them)."""
    goal = Invariant("target", target.__doc__ or "", target)
    result = run(model, SearchOptions(invariants=[goal], kernel="off"))
    assert result.violations
    trace = result.violations[0].trace
    actions = [str(step.action) for step in trace.steps]
    assert replay(model, actions) == trace.states, "an action's name does not name one successor"
    return actions


def replay(model, actions: list[str]) -> list:
    """The readable states of the path that takes ``actions`` (by name) from the initial state."""
    (state,) = model.init_states()
    trace = [state]
    for name in actions:
        state = next(succ for action, succ in model.successors(state) if str(action) == name)
        trace.append(state)
    return trace


@needs_cc
def test_a_consumer_rule_changed_fails_the_check():
    """``-DKM_MUTANT=7``: ConsumerMetadata without KIP-320's validation of the position
    (``_metadata_state``)."""
    model = kafka("3.4.1", **SMALL)
    mutant = km.load(model.kernel(), extra_flags=("-DKM_MUTANT=7",))
    assert disagreements(model, mutant, sample(model, prefix=600, count=10, depth=150)) != []


@needs_cc
def test_a_consumer_past_its_slots_stops_the_search():
    """A kernel built with one consumed slot stops at the first consumer that reads a second record,
    with one clear error, rather than searching another state space."""
    model = kafka("2.1.0", brokers=2, records=2, epochs=1, crashes=0, consumers=1)
    spec = model.kernel()
    defines = dict(spec.defines)
    narrow = Packing(model.brokers, model.records, model.epochs, defines["KM_NET"], consumers=1,
                     consumed=1)
    spec = spec._replace(defines=tuple((k, 1 if k == "KM_CONSUMED" else v)
                                       for k, v in spec.defines),
                         state_bytes=narrow.state_bytes, pack=narrow.pack, unpack=narrow.unpack)
    options = SearchOptions(invariants=[for_family("kafka")["consumed-stays"]], kernel="on")
    with pytest.raises(km.KernelCapacityError, match="a consumer's consumed records past its "
                                                     "slots; run this configuration with --kernel "
                                                     "off"):
        km.KernelBFS(model, options, km.load(spec)).run()


def _cell(row: str) -> dict:
    """The matrix's consumed-stays bounds of ``row`` (``KafkaModel.matrix_bound_sets``: the KRaft
    rows' own), as ``kmc matrix`` builds them."""
    bounds = kafka(row).matrix_bound_sets()["default"]["consumed-stays"]
    return {k: int(v) for k, v in (b.split("=") for b in bounds)}


#: the row whose consumed-stays cell the readable model searches in a few seconds (a violation
#: found early); the others, 10 to 100 s of readable CPU each, are slow
FAST_CELLS = ("0.10.2",)


def _cell_search(row: str) -> None:
    model = kafka(row, **_cell(row))
    options = {"invariants": ("consumed-stays",)}
    searches_agree(model, **options)


@needs_cc
@pytest.mark.parametrize("row", FAST_CELLS)
def test_the_consumed_stays_cells_search_as_the_readable_model(row):
    _cell_search(row)


#: the cells whose readable search costs 28-55 s of CPU each (about 200 s together, a quarter of
#: the suite's budget): their readable side is the matrix table, made by ``kmc matrix --kernel off``
#: and held to the readable source by its digest (tests/test_traces_matrix.py's fast digest test),
#: and their kernel side is searched against that table, cell by cell, by
#: ``test_every_cell_on_the_kernel_is_the_readable_tables``; the other rows are searched both ways
#: here, with every count, depth, out-degree and counterexample compared
TABLE_CELLS = ("2.8.1", "3.4.1", "3.9.1", "kraft-3.5", "kraft-4.1")


@pytest.mark.slow
@needs_cc
@pytest.mark.parametrize("row", [r for r in PROVEN_ROWS
                                 if r not in FAST_CELLS and r not in TABLE_CELLS])
def test_every_consumed_stays_cell_searches_as_the_readable_model(row):
    _cell_search(row)


#: (row, switched flags, bounds, search options): with requests in flight, symmetry and the dead
#: reduction
INFLIGHT_SEARCHES = [
    ("3.4.1", {"fetch-from-follower": True},
     {**SMALL, "epochs": 1, "crashes": 0, "consumer_inflight": 1},
     {"invariants": ("consumed-stays", "no-silent-skip"), "symmetry": True, "reduce": "dead",
      "stop_at_first": False, "max_depth": 14}),
]
MORE_INFLIGHT_SEARCHES = [
    ("3.4.1", {"fetch-from-follower": True}, {**SMALL, "epochs": 1, "consumer_inflight": 1},
     {"invariants": ("consumed-stays", "no-silent-skip"), "symmetry": True, "reduce": "dead",
      "stop_at_first": False}),
    ("kraft-3.3", {}, {**SMALL, "epochs": 1, "consumer_inflight": 1},
     {"invariants": ("consumed-stays", "no-silent-skip"), "symmetry": True,
      "stop_at_first": False}),
]


@needs_cc
@pytest.mark.parametrize(("row", "flags", "bounds", "options"), INFLIGHT_SEARCHES, ids=_id)
def test_consumer_searches_with_requests_in_flight_agree(row, flags, bounds, options):
    _inflight_search(row, flags, bounds, options)


@pytest.mark.slow
@needs_cc
@pytest.mark.parametrize(("row", "flags", "bounds", "options"), MORE_INFLIGHT_SEARCHES, ids=_id)
def test_more_consumer_searches_with_requests_in_flight_agree(row, flags, bounds, options):
    _inflight_search(row, flags, bounds, options)


def _inflight_search(row: str, flags: dict, bounds: dict, options: dict) -> None:
    model = _model(row, flags, bounds)
    searches_agree(model, **options)


@pytest.mark.parametrize("flags", [{"consumer-truncation-detection": True},
                                   {"consumer-truncation-detection": True,
                                    "fetch-from-follower": True}], ids=_id)
def test_without_consumers_the_consumer_flags_compile_the_same_kernel(flags):
    """At consumers=0 the consumer flags act on no rule (tests/test_kafka_kernel.py), so they are
    passed to the C file as 0 there (run-time constants, ``KernelSource.config``) and a story's
    replay with one switched loads the row's configured library; with a consumer they are the
    row's."""
    bounds = {"brokers": 2, "records": 1, "epochs": 2, "crashes": 1}
    assert (switched("2.2.0", flags, **bounds).kernel().config
            == kafka("2.2.0", **bounds).kernel().config)
    assert (switched("2.2.0", flags, **bounds, consumers=1).kernel().config
            != kafka("2.2.0", **bounds, consumers=1).kernel().config)
