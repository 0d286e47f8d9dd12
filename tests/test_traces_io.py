"""Traces: every counterexample reads back identical from ITF, our JSON and msgpack; hostile or
broken files give one clear error, never a traceback or code execution."""

import json
import os

import pytest

from checker import engines
from checker.search import SearchOptions
from invariants.registry import for_family
from spec.errors import BadFileError, WrongModelError
from spec.registry import build_model
from traces.io import load_trace, read_document, save_trace, trace_to_itf

FORMATS = (".json", ".itf.json", ".msgpack")


def counterexamples(name, consts=(), protocol=None, every=True):
    model = build_model(name, list(consts), protocol)
    options = SearchOptions(invariants=list(for_family(model.family).values()),
                            stop_at_first=not every, header={"protocol": protocol} if protocol
                            else {})
    result = engines.run(model, options, "local")
    assert result.violations, f"{name} {protocol}: expected a counterexample"
    return model, [v.trace for v in result.violations]


@pytest.fixture(scope="module")
def two_phase_trace():
    _, traces = counterexamples("two-phase", ["commit_guard=off"])
    return traces[0]


def kafka_counterexamples():
    """The first counterexample of each buggy protocol version at the model's default bounds."""
    out = []
    for protocol in ("hw-truncation", "kip-101", "kip-279"):
        out.extend(counterexamples("kafka", protocol=protocol, every=False)[1])
    return out


@pytest.fixture(scope="module")
def kafka_traces():
    return kafka_counterexamples()


@pytest.mark.parametrize("suffix", FORMATS)
def test_two_phase_trace_reads_back_identical(tmp_path, two_phase_trace, suffix):
    path = save_trace(two_phase_trace, str(tmp_path / f"t{suffix}"))
    trace, model = load_trace(path)
    assert trace == two_phase_trace
    assert model.name == "two-phase" and model.constants["commit_guard"] is False


@pytest.mark.parametrize("suffix", FORMATS)
@pytest.mark.slow  # every line it runs, cheaper fast tests run too (coverage by test)
def test_kafka_counterexamples_read_back_identical(tmp_path, kafka_traces, suffix):
    for i, original in enumerate(kafka_traces):
        path = save_trace(original, str(tmp_path / f"k{i}{suffix}"))
        trace, model = load_trace(path)
        assert trace == original
        assert (trace.states == original.states and [s.action for s in trace.steps]
                == [s.action for s in original.steps])
        assert model.protocol == original.header["protocol"]


def test_reference_model_states_with_sets_of_records_read_back(tmp_path):
    """tla: models keep frozensets of NamedTuples: the set tag and the record types must survive."""
    import random

    from checker.trace import Step, Trace

    model = build_model("tla:Kip101", [])
    rng = random.Random(7)
    state, steps = model.init_states()[0], []
    for _ in range(12):
        enabled = list(model.successors(state))
        if not enabled:
            break
        act, state = rng.choice(enabled)
        steps.append(Step(act, state))
    original = Trace(model.describe(), model.init_states()[0], tuple(steps))
    assert any(s.state.leader_and_isr_requests for s in steps)
    for suffix in FORMATS:
        trace, _ = load_trace(save_trace(original, str(tmp_path / f"r{suffix}")))
        assert trace == original


def test_itf_layout_is_what_tla_tools_read(two_phase_trace):
    itf = trace_to_itf(two_phase_trace)
    assert itf["#meta"]["format"] == "ITF"
    assert itf["vars"] == list(two_phase_trace.initial._fields)
    assert [s["#meta"]["index"] for s in itf["states"]] == list(range(two_phase_trace.length + 1))
    assert itf["states"][0]["#meta"] == {"index": 0}  # as Apalache and Quint write it
    first = two_phase_trace.steps[0].action
    assert (itf["states"][1]["#meta"] == {"index": 1, "action": first.name,
                                          "params": dict(first.params)})
    assert itf["#meta"]["kmc"]["header"]["model"] == "two-phase"
    assert set(itf["states"][2]) == {"#meta", *itf["vars"]}
    json.dumps(itf)  # plain JSON


def test_itf_sets_are_tagged_and_big_ints_use_bigint():
    from traces.values import ValueDecoder, encode

    assert encode(frozenset({3, 1})) == {"#set": [1, 3]}
    assert encode(2**60) == {"#bigint": str(2**60)}
    assert ValueDecoder(()).value({"#bigint": str(2**60)}, "x") == 2**60
    assert ValueDecoder(()).value({"#set": [1, 2]}, "x") == frozenset({1, 2})


def _write(tmp_path, name, content):
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return str(path)


def test_corrupt_and_truncated_files_are_bad_files(tmp_path, two_phase_trace):
    good_json = open(save_trace(two_phase_trace, str(tmp_path / "g.json"))).read()
    good_mp = open(save_trace(two_phase_trace, str(tmp_path / "g.msgpack")), "rb").read()
    for name, content in [
        ("trunc.json", good_json[: len(good_json) // 2]),
        ("trunc.msgpack", good_mp[: len(good_mp) // 2]),
        ("empty.json", ""),
        ("garbage.bin", os.urandom(64) + b"\x00"),
        ("nan.json", '{"format": "kmc-trace", "version": 2, "x": NaN}'),
        ("deep.json", "[" * 100000 + "]" * 100000),
        ("wrongversion.json", good_json.replace('"version": 2', '"version": 99')),
        ("noheader.json", json.dumps({"format": "kmc-trace", "version": 2, "initial": {},
                                      "steps": []})),
        ("notatrace.json", json.dumps({"hello": "world"})),
        ("pickle.bin", b"\x80\x04\x95\x00\x00cos\nsystem\n."),
    ]:
        with pytest.raises(BadFileError):
            read_document(_write(tmp_path, name, content))


def test_states_that_do_not_fit_the_model_are_wrong_model(tmp_path, two_phase_trace):
    data = json.loads(open(save_trace(two_phase_trace, str(tmp_path / "g.json"))).read())
    data["initial"]["rm_state"] = [0, 0, 0, 0]  # four RMs under RM=3
    with pytest.raises(WrongModelError):
        load_trace(_write(tmp_path, "fourrms.json", json.dumps(data)))
    data = json.loads(open(str(tmp_path / "g.json")).read())
    data["steps"][0]["state"] = {"bogus": 1}
    with pytest.raises(WrongModelError):
        load_trace(_write(tmp_path, "bogus.json", json.dumps(data)))
    data = json.loads(open(str(tmp_path / "g.json")).read())
    data["header"]["model"] = "no-such-model"
    with pytest.raises(WrongModelError):
        load_trace(_write(tmp_path, "nomodel.json", json.dumps(data)))
    with pytest.raises(WrongModelError):
        load_trace(str(tmp_path / "g.json"), model_name="kafka")


def test_version_1_files_still_read(tmp_path, two_phase_trace):
    """The first JSON format wrote sets as plain lists; the field annotation brings them back."""
    from spec.model import state_to_data

    v1 = {"format": "kmc-trace", "version": 1, "header": two_phase_trace.header,
          "invariant": two_phase_trace.invariant,
          "violation_index": two_phase_trace.violation_index,
          "explanation": two_phase_trace.explanation,
          "initial": state_to_data(two_phase_trace.initial),
          "steps": [{"action": s.action.to_data(), "state": state_to_data(s.state)}
                    for s in two_phase_trace.steps]}
    trace, _ = load_trace(_write(tmp_path, "v1.json", json.dumps(v1)))
    assert trace.states == two_phase_trace.states
