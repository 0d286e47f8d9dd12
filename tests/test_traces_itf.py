"""ITF as Apalache and Quint write it: what kmc writes (#set, #tup, #map, enums by name, the action
and its params in each state's #meta), what it reads from those tools (hand-written files of their
shape, and files that the itf-py library writes), and old kmc ITF files, all read back equal."""

import json

import pytest

from checker.trace import Step, Trace
from kmc.cli import main
from spec.errors import UsageError, WrongModelError
from spec.registry import build_model
from traces.io import load_trace, save_trace, trace_to_itf
from traces.values import ShapeError, ValueDecoder, encode, plain_to_json


def walk(model, choose):
    """A behaviour of ``model``: at each step the first enabled action ``choose`` accepts."""
    state, steps = model.init_states()[0], []
    for want in choose:
        act, state = next((a, s) for a, s in model.successors(state) if str(a) == want)
        steps.append(Step(act, state))
    return Trace(model.describe(), model.init_states()[0], tuple(steps))


KAFKA_STEPS = ["Produce(leader=0)", "SendFetch(follower=1, leader=0)",
               "ServeFetch(leader=0, follower=1)", "ReceiveFetch(follower=1, leader=0)",
               "Crash(broker=0)", "ElectLeader(leader=1)"]


@pytest.fixture(scope="module")
def kafka_trace():
    return walk(build_model("kafka", [], "kip-320"), KAFKA_STEPS)


def _save(tmp_path, name, doc):
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return str(path)


# -- what kmc writes -------------------------------------------------------------------------------
def test_kafka_itf_uses_sets_maps_tuples_and_names(kafka_trace):
    doc = trace_to_itf(kafka_trace)
    assert doc["#meta"]["format"] == "ITF" and doc["#meta"]["status"] == "ok"
    after_fetch = doc["states"][3]
    broker0 = dict(after_fetch["brokers"]["#map"])[0]
    assert after_fetch["brokers"]["#map"][1][0] == 1  # a function of broker id
    assert broker0["isr"] == {"#set": [0, 1]}
    assert broker0["cache"] == [{"#tup": [0, 0]}]  # a sequence of (epoch, start offset) pairs
    assert (broker0["fetch"] == "none" and dict(after_fetch["brokers"]["#map"])[1]["fetch"]
            == "fetching")
    assert broker0["remote"] == {"#map": [[0, -1], [1, 0]]}
    (response,) = after_fetch["network"]["#set"]
    assert response["kind"] == "FetchResponse" and response["error"] == "NONE"
    assert after_fetch["controller"]["isr"] == {"#set": [0, 1]}
    assert (after_fetch["#meta"] == {"index": 3, "action": "ServeFetch",
                                     "params": {"leader": 0, "follower": 1}})
    last = doc["states"][-1]
    assert last["#meta"]["action"] == "ElectLeader" and last["committed"] == {"#set": []}


def test_big_ints_and_bags():
    from spec.kafka.state import STATE_TYPES
    from traces.itf import itf_value

    assert itf_value(2**60) == {"#bigint": str(2**60)} and itf_value(5) == 5
    assert ValueDecoder(()).value({"#bigint": str(2**60)}, "x") == 2**60
    # a tuple standing for a set keeps its array form when it holds a duplicate, so it reads back
    # equal
    sample = build_model("kafka", []).init_states()[0]
    bag = sample._replace(committed=((0, 1, 1), (0, 1, 1)))
    written = trace_to_itf(Trace({"model": "kafka"}, bag))["states"][0]
    assert written["committed"] == [{"#tup": [0, 1, 1]}] * 2
    record = {k: v for k, v in written.items() if k != "#meta"}
    assert ValueDecoder(STATE_TYPES, sample).state(record) == bag


@pytest.mark.parametrize("suffix", [".itf.json", ".json", ".msgpack"])
def test_kafka_trace_round_trips(tmp_path, kafka_trace, suffix):
    trace, _ = load_trace(save_trace(kafka_trace, str(tmp_path / f"t{suffix}")))
    assert trace == kafka_trace


# -- what Apalache and Quint write -----------------------------------------------------------------
def _big(n):
    return {"#bigint": str(n)}


def _quint_broker(leader_role, log, fetch):
    """A broker as a Quint spec of the same model would write it: every int a #bigint, enums as
    variants."""
    return {"alive": True, "log": [{"epoch": _big(e), "ident": _big(i)} for e, i in log],
            "hw": _big(0), "cache": [{"#tup": [_big(0), _big(0)]}] if leader_role else [],
            "leader": _big(0), "epoch": _big(0), "isr": {"#set": [_big(1), _big(0)]},
            "fetch": {"tag": fetch, "value": {"#tup": []}},
            "remote": {"#map": [[_big(1), _big(-1)], [_big(0), _big(-1)]]} if leader_role
            else {"#map": []}, "broker_epoch": _big(0), "stopping": False, "incarnation": _big(0),
            "stale": False, "reconciled": _big(0 if leader_role else -1), "idle_cause": _big(0),
            "pending_diverging": []}


def _quint_state(index, log0, action=None, picks=None, network=()):
    state = {
        "#meta": {"index": index},
        "kafka::brokers": {"#map": [[_big(0), _quint_broker(True, log0, "none")],
                                    [_big(1), _quint_broker(False, [], "fetching")]]},
        "kafka::controller": {"leader": _big(0), "epoch": _big(0),
                              "isr": {"#set": [_big(0), _big(1)]},
                              "registered": {"#map": [[_big(0), _big(0)], [_big(1), _big(0)]]}},
        "kafka::network": {"#set": list(network)},
        "kafka::produced": _big(len(log0)), "kafka::crashes": _big(0), "kafka::bumps": _big(0),
        "kafka::shutdowns": _big(0), "kafka::bounces": _big(0), "kafka::losses": _big(0),
        "kafka::committed": {"#set": []}, "kafka::acked": {"#set": []}, "kafka::consumers": [],
    }
    if action is not None:
        state["mbt::actionTaken"] = action
        state["mbt::nondetPicks"] = picks or {}
    return state


def _fetch_request():
    return {"tag": "FetchRequest", "value": {"kind": "Fetch", "src": _big(1), "dst": _big(0),
                                             "epoch": _big(0), "offset": _big(0),
                                             "last_epoch": _big(-1)}}


def quint_document(with_actions):
    states = [
        _quint_state(0, [], "init" if with_actions else None),
        _quint_state(1, [(0, 1)], "Produce" if with_actions else None,
                     {"leader": {"tag": "Some", "value": _big(0)},
                      "follower": {"tag": "None", "value": {"#tup": []}}}),
        _quint_state(2, [(0, 1)], "SendFetch" if with_actions else None,
                     {"leader": {"tag": "Some", "value": _big(0)},
                      "follower": {"tag": "Some", "value": _big(1)}},
                     network=[_fetch_request()]),
    ]
    variables = ["kafka::" + v for v in ("brokers", "controller", "network", "produced", "crashes",
                                         "bumps", "shutdowns", "bounces", "losses", "committed",
                                         "acked", "consumers")]
    if with_actions:
        variables += ["mbt::actionTaken", "mbt::nondetPicks"]
    return {"#meta": {"format": "ITF",
                      "format-description": "https://apalache-mc.org/docs/adr/015adr-trace.html",
                      "source": "kafka.qnt", "status": "ok", "description": "Created by Quint",
                      "timestamp": 1},
            "vars": variables, "states": states}


def _expected_kafka(model):
    return walk(model, ["Produce(leader=0)", "SendFetch(follower=1, leader=0)"])


@pytest.mark.parametrize("with_actions", [True, False])
def test_a_quint_shaped_kafka_trace_reads(tmp_path, with_actions):
    """ISR as #set, brokers as #map keyed by #bigint ids, enums as unit variants, a message as a
    variant; the actions from mbt::actionTaken/nondetPicks, or, when absent, found from the model's
    successors."""
    path = _save(tmp_path, "quint.itf.json", quint_document(with_actions))
    trace, model = load_trace(path, model_name="kafka", protocol="kip-320")
    expected = _expected_kafka(model)
    assert trace.states == expected.states
    assert [s.action for s in trace.steps] == [s.action for s in expected.steps]


def test_a_foreign_itf_trace_needs_the_model(tmp_path):
    path = _save(tmp_path, "quint.itf.json", quint_document(True))
    with pytest.raises(UsageError, match="--model"):
        load_trace(path)


def test_a_foreign_state_that_is_no_successor_is_wrong_model(tmp_path):
    doc = quint_document(False)
    doc["states"][2]["kafka::produced"] = _big(2)  # not what SendFetch does
    with pytest.raises(WrongModelError, match="not a successor"):
        load_trace(_save(tmp_path, "bad.itf.json", doc), model_name="kafka", protocol="kip-320")


def test_an_apalache_shaped_two_phase_trace_reads(tmp_path):
    """Apalache: plain numbers, sequences as arrays, no actions, the constants as params in every
    state."""
    model = build_model("two-phase", [])
    state, steps = model.init_states()[0], []
    for _ in range(4):
        act, state = next(iter(model.successors(state)))
        steps.append(Step(act, state))
    expected = Trace(model.describe(), model.init_states()[0], tuple(steps))
    states = []
    for i, s in enumerate(expected.states):
        record = {k: (list(v) if isinstance(v, tuple) else v) for k, v in s._asdict().items()}
        states.append({"#meta": {"index": i}, "RM": 3, **record})
    doc = {"#meta": {"format": "ITF",
                     "format-description": "https://apalache-mc.org/docs/adr/015adr-trace.html",
                     "description": "Created by Apalache"}, "params": ["RM"],
           "vars": list(model.init_states()[0]._fields), "states": states}
    trace, _ = load_trace(_save(tmp_path, "apalache.itf.json", doc), model_name="two-phase")
    assert (trace.states == expected.states and [s.action for s in trace.steps]
            == [s.action for s in expected.steps])


def test_cli_reads_an_isr_as_set_instead_of_exit_66(tmp_path, kafka_trace, capsys):
    """Issue 14: an ITF trace with the ISR as #set was rejected with exit 66."""
    doc = trace_to_itf(kafka_trace)
    assert '"isr": {"#set"' in json.dumps(doc)
    assert main(["trace", "show", _save(tmp_path, "k.itf.json", doc)]) == 0
    foreign = _save(tmp_path, "quint.itf.json", quint_document(False))
    assert main(["trace", "show", foreign, "--model", "kafka", "--protocol", "kip-320"]) == 0
    assert "SendFetch(follower=1, leader=0)" in capsys.readouterr().out
    assert main(["trace", "show", foreign]) == 64
    err = capsys.readouterr().err
    assert "--model" in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_unknown_enum_names_and_bad_maps_are_shape_errors():
    from spec.kafka.state import STATE_TYPES, Broker

    decoder = ValueDecoder(STATE_TYPES)
    with pytest.raises(ShapeError, match="not a fetch"):
        decoder.value("sleeping", "b.fetch", int, Broker, "fetch")
    with pytest.raises(ShapeError, match="broker id"):
        decoder.value({"#map": [[5, 0]]}, "b.remote", tuple[int, ...])
    assert decoder.value({"#map": [[1, 7], [0, 6]]}, "r", tuple[int, ...]) == (6, 7)
    assert decoder.value({"#set": [3, 1, 2]}, "isr", tuple[int, ...]) == (1, 2, 3)


# -- old kmc ITF files -----------------------------------------------------------------------------
def old_itf(trace):
    """The ITF layout kmc wrote before: untagged tuples, enums as ints, the action as {name,
    params}."""
    from traces.io import _meta

    states = []
    for i, (action, state) in enumerate([(None, trace.initial)]
                                        + [(s.action, s.state) for s in trace.steps]):
        meta = {"index": i, "action": None if action is None
                else {"name": action.name, "params": dict(action.params)}}
        states.append({"#meta": meta, **encode(state)})
    return {"#meta": {"format": "ITF", "kmc": _meta(trace)}, "vars": list(trace.initial._fields),
            "states": states}


def test_old_kmc_itf_files_still_read(tmp_path, kafka_trace):
    path = _save(tmp_path, "old.itf.json", old_itf(kafka_trace))
    assert '"fetch": 2' in open(path).read() and '"#set"' not in open(path).read()
    trace, _ = load_trace(path)
    assert trace == kafka_trace


def test_header_values_keep_tuples_and_sets():
    assert (plain_to_json({"a": (1, 2), "b": frozenset({3})})
            == {"a": {"#tup": [1, 2]}, "b": {"#set": [3]}})


# -- the itf-py library as an independent reader and writer ----------------------------------------
def test_itf_py_reads_what_kmc_writes_and_kmc_reads_what_itf_py_writes(tmp_path, kafka_trace):
    itf_py = pytest.importorskip("itf_py")
    ours = trace_to_itf(kafka_trace)
    theirs = itf_py.trace_from_json(json.loads(json.dumps(ours)))
    assert (theirs.vars == list(kafka_trace.initial._fields) and len(theirs.states)
            == kafka_trace.length + 1)
    state = theirs.states[3].values
    assert state["brokers"][0].isr == frozenset({0, 1}) and state["brokers"][0].fetch == "none"
    assert state["brokers"][0].cache == [(0, 0)] and state["brokers"][0].remote == {0: -1, 1: 0}
    # written back by itf-py (every int a #bigint, sets in its own order), without our action
    # metadata
    for s in theirs.states:
        s.meta = {"index": s.meta["index"]}
    rewritten = itf_py.trace_to_json(theirs)
    rewritten["#meta"] = {k: v for k, v in rewritten["#meta"].items() if k != "kmc"}
    assert '"#bigint"' in json.dumps(rewritten)
    trace, _ = load_trace(_save(tmp_path, "itfpy.itf.json", rewritten), model_name="kafka",
                          protocol="kip-320")
    assert trace.states == kafka_trace.states
    assert [s.action for s in trace.steps] == [s.action for s in kafka_trace.steps]


def test_a_string_where_the_model_has_no_names_is_a_shape_error():
    from spec.kafka.state import STATE_TYPES

    sample = build_model("kafka", []).init_states()[0]
    decoder = ValueDecoder(STATE_TYPES, sample)
    record = {k: v for k, v in trace_to_itf(Trace({"model": "kafka"}, sample))["states"][0].items()
              if k != "#meta"}
    assert decoder.state(record) == sample
    record["controller"]["isr"] = {"#set": ["zero", 1]}
    with pytest.raises(ShapeError, match="states hold no strings"):
        decoder.state(record)
    assert decoder.value("x", "param") == "x"  # an action parameter may be a string
