"""``kmc trace``: show, export, replay, diagram, graph and explain from the command line, with
one-line errors and distinct exit codes for corrupt files (65), other models (66) and impossible
steps (67)."""

import contextlib
import io
import json
import re
import shutil
from pathlib import Path

import pytest

from kmc.cli import main


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(err):
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


@pytest.fixture
def trace_file(capsys, tmp_path):
    code, out, _ = run(capsys, "check", "two-phase", "--const", "commit_guard=off", "--json",
                       "--trace-dir", tmp_path)
    assert code == 12
    return json.loads(out)["violations"][0]["trace_file"]


@pytest.fixture(scope="module")
def _kafka_trace_of_the_module(tmp_path_factory):
    """One ``kmc check`` of Kafka for the module's tests (a search of about half a second): they
    only read its trace."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["check", "kafka", "--protocol", "hw-truncation", "--json", "--trace-dir",
                     str(tmp_path_factory.mktemp("kafka-trace"))])
    assert code == 12
    return Path(json.loads(out.getvalue())["violations"][0]["trace_file"])


@pytest.fixture
def kafka_trace_file(_kafka_trace_of_the_module, tmp_path):
    """The module's Kafka trace, copied for each test (a test cannot change what the next one
    reads)."""
    return str(shutil.copy(_kafka_trace_of_the_module, tmp_path / _kafka_trace_of_the_module.name))


def test_show_names_actions_and_changes(capsys, trace_file):
    code, out, _ = run(capsys, "trace", "show", trace_file)
    assert code == 0
    assert ("TMCommit" in out and "rm_state: [3, 0, 0] -> [3, 2, 0]" in out
            and "TCConsistent is violated" in out)
    code, out, _ = run(capsys, "trace", "show", trace_file, "--full")
    assert code == 0 and "msg_abort = False" in out


def test_show_kafka_draws_broker_logs(capsys, kafka_trace_file):
    code, out, _ = run(capsys, "trace", "show", kafka_trace_file)
    assert code == 0 and "broker" in out and "HW" in out and "LEO" in out
    assert re.search(r"e\d+:\d+", out)  # a record cell: epoch and record
    code, out, _ = run(capsys, "trace", "show", kafka_trace_file, "--broker", "1")
    assert code == 0 and "brokers[0]" not in out
    code, _, err = run(capsys, "trace", "show", kafka_trace_file, "--broker", "7")
    assert code == 64 and "no broker 7" in one_line_error(err)


@pytest.mark.slow  # every line it runs, cheaper fast tests run too (coverage by test)
def test_show_hides_ghosts_and_counters_unless_all(capsys, kafka_trace_file):
    """Issue 14: bound counters and ghost variables are bookkeeping; the legend names what is
    hidden."""
    code, out, _ = run(capsys, "trace", "show", kafka_trace_file)
    body = [line for line in out.splitlines() if "legend:" not in line]
    legend = " ".join(line for line in out.splitlines() if "legend:" in line)
    assert code == 0 and "hidden (--all shows them): bound counters produced, crashes" in legend
    assert ("ghost variables committed; incarnation, stale, reconciled, idle_cause of Broker"
            in legend)
    assert ("eE:R = record R written in leader epoch E" in legend and "brokers are numbered 0, "
                                                                      "1" in legend)
    assert not any(re.match(r"\s+(produced|crashes|committed)\b", line) for line in body)
    assert not any("incarnation" in line or "meant=" in line or ".stale" in line for line in body)
    assert any(re.match(r"\s+brokers\[0\]\.log: ", line) for line in body)
    code, out, _ = run(capsys, "trace", "show", kafka_trace_file, "--all")
    assert code == 0 and re.search(r"produced: 0 -> 1", out) and "brokers[0].incarnation = 0" in out
    assert ("hidden (--all" not in out and re.search(r"meant=0", out) and "brokers[0].log = []"
            not in out)
    code, out, _ = run(capsys, "trace", "show", kafka_trace_file, "--full")
    assert "brokers[0].log = []" in out and "produced = 0" not in out
    code, out, _ = run(capsys, "trace", "show", kafka_trace_file, "--no-legend")
    assert "legend:" not in out


def test_show_numbers_replicas_as_the_model_does(capsys, tmp_path):
    """The TLA+ reference models number replicas from 1: variables are indexed by replica id, as in
    TLA+."""
    code, out, _ = run(capsys, "check", "tla:Kip101", "--const", "Replicas=2", "--const",
                       "LogSize=2", "--const", "MaxRecords=2", "--const", "MaxLeaderEpoch=2",
                       "--invariant", "StrongIsr", "--json", "--trace-dir", tmp_path, "-deadlock")
    assert code == 12
    code, out, _ = run(capsys, "trace", "show", json.loads(out)["violations"][0]["trace_file"])
    assert (code == 0 and "replica_state[1]." in out and "replica_state[2]." in out
            and "replica_state[0]" not in out)
    assert "brokers are numbered 1, 2" in out


def test_export_to_every_format_reads_back_identical(capsys, tmp_path, kafka_trace_file):
    from traces.io import load_trace

    original, _ = load_trace(kafka_trace_file)
    for fmt, name in (("itf", "k.itf.json"), ("msgpack", "k.msgpack"), ("json", "k.json")):
        out_path = tmp_path / "out" / name
        code, out, _ = run(capsys, "trace", "export", kafka_trace_file, "--to", fmt, "-o", out_path)
        assert code == 0 and str(out_path) in out
        assert load_trace(str(out_path))[0] == original
    itf = json.loads((tmp_path / "out" / "k.itf.json").read_text())
    assert (itf["#meta"]["format"] == "ITF" and itf["#meta"]["kmc"]["header"]["protocol"]
            == "hw-truncation")


def test_replay_outcomes_and_exit_codes(capsys, trace_file):
    code, out, _ = run(capsys, "trace", "replay", trace_file, "--quiet")
    assert code == 12 and "TCConsistent is violated at step 3" in out
    code, out, err = run(capsys, "trace", "replay", trace_file, "--const", "commit_guard=on",
                         "--quiet")
    assert code == 67 and "step 1 of 3, TMCommit, is not enabled" in one_line_error(err)
    code, out, _ = run(capsys, "trace", "replay", trace_file, "--json")
    data = json.loads(out)
    assert (code == 12 and (data["outcome"], data["step"], data["invariant"])
            == ("violated", 3, "TCConsistent"))


def test_replay_kafka_against_every_protocol(capsys, kafka_trace_file):
    code, out, _ = run(capsys, "trace", "replay", kafka_trace_file, "--all-protocols", "--json")
    data = json.loads(out)
    from spec.registry import get_model_info

    assert (code == 0 and [r["protocol"] for r in data["replays"]]
            == list(get_model_info("kafka").protocols))
    assert {"2.1.0", "2.2.0"} <= {r["protocol"] for r in data["replays"]}
    assert data["replays"][0]["outcome"] == "violated"
    code, _, _ = run(capsys, "trace", "replay", kafka_trace_file, "--protocol", "kip-279",
                     "--quiet")
    assert code in (0, 12, 67)


def test_replay_under_other_protocols_keeps_the_traces_own_switches(capsys, tmp_path):
    # an unclean election is what this trace is about: replayed under another release it must still
    # be allowed (before, --all-protocols rebuilt each release with its defaults and the unclean
    # step was blocked)
    code, out, _ = run(capsys, "check", "kafka", "--protocol", "3.9.1", "--feature", "unclean=on",
                       "--invariant", "committed-durable", "--json", "--trace-dir", tmp_path)
    assert code == 12
    trace = json.loads(out)["violations"][0]["trace_file"]
    code, out, _ = run(capsys, "trace", "replay", trace, "--all-protocols", "--json")
    rows = json.loads(out)["replays"]
    # every ZooKeeper release with AlterIsr (alter-isr, 2.8.0 and later) takes the trace's steps;
    # the older ones stop at the trace's AlterIsr round trip, never at its unclean election (the
    # KRaft rows have another controller)
    from spec.kafka.protocols import resolve

    zookeeper = [r for r in rows if not r["protocol"].startswith("kraft")]
    assert (code == 0 and {r["outcome"] for r in zookeeper if resolve(r["protocol"]).alter_isr}
            == {"violated"}), rows
    older = [r for r in zookeeper if not resolve(r["protocol"]).alter_isr]
    assert (older and all(r["outcome"] == "violated"
                          or r["action"].startswith("ProcessAlterPartition") for r in older)), rows
    assert ({r["outcome"] for r in rows if r["protocol"].startswith("kraft")}
            <= {"blocked", "n/a", "violated"})
    # the user's own flag still wins over the trace's: with unclean=off the unclean step cannot be
    # taken
    code, out, _ = run(capsys, "trace", "replay", trace, "--protocol", "2.1.0", "--feature",
                       "unclean=off", "--json")
    assert json.loads(out.splitlines()[0])["outcome"] == "blocked" and code != 0


def test_replay_scenario_file(capsys):
    path = "traces/scenarios/kip-101-scenario-1-committed-data-lost.json"
    code, out, _ = run(capsys, "trace", "replay", path, "--quiet")
    assert code == 12 and "committed-durable" in out and "as expected" in out
    code, out, _ = run(capsys, "trace", "replay", path, "--protocol", "kip-101", "--quiet")
    assert code == 0 and "every invariant holds" in out and "as expected" in out


def test_diagrams(capsys, tmp_path, kafka_trace_file):
    code, out, _ = run(capsys, "trace", "diagram", kafka_trace_file)
    assert (code == 0 and out.startswith("sequenceDiagram") and "->>" in out
            and "participant controller" in out)
    code, out, _ = run(capsys, "trace", "diagram", kafka_trace_file, "--format", "dot")
    assert code == 0 and out.startswith("digraph sequence") and out.rstrip().endswith("}")
    svg = tmp_path / "d.svg"
    code, _, _ = run(capsys, "trace", "diagram", kafka_trace_file, "--format", "svg", "-o", svg)
    assert code == 0 and svg.read_text().startswith("<svg") and "FetchRequest" in svg.read_text()


def test_state_graph_dot(capsys, trace_file):
    code, out, _ = run(capsys, "trace", "graph", "two-phase", "--const", "RM=2", "--const",
                       "commit_guard=off", "--trace", trace_file)
    assert code == 66  # the trace is of RM=3, not of this graph's configuration
    code, out, _ = run(capsys, "trace", "graph", "two-phase", "--const", "RM=2")
    assert code == 0 and out.startswith('digraph "two-phase"')
    assert out.count("->") >= 20 and "TMCommit" in out
    import networkx as nx

    from spec.registry import build_model
    from traces.graph import explore, state_graph

    result = explore(build_model("two-phase", ["RM=2"]))
    graph = state_graph(result)
    assert isinstance(graph, nx.DiGraph) and graph.number_of_nodes() == result.distinct_states == 56
    assert nx.is_weakly_connected(graph) and graph.nodes[0]["initial"]


def test_explain_is_one_paragraph(capsys, kafka_trace_file):
    code, out, _ = run(capsys, "trace", "explain", kafka_trace_file)
    assert code == 0 and len(out.strip().splitlines()) == 1
    assert "is violated in step" in out and "after" in out and "broker" in out


def test_bad_files_give_one_line_and_distinct_codes(capsys, tmp_path, trace_file):
    text = open(trace_file).read()
    truncated = tmp_path / "truncated.json"
    truncated.write_text(text[: len(text) // 3])
    garbage = tmp_path / "garbage.msgpack"
    garbage.write_bytes(b"\xc1\xff\x00junk")
    other = tmp_path / "other.json"
    # four RMs, header says three
    other.write_text(text.replace('"rm_state": [', '"rm_state": [0, '))
    cases = [
        (["trace", "show", truncated], 65),
        (["trace", "replay", garbage], 65),
        (["trace", "export", truncated, "--to", "itf"], 65),
        (["trace", "show", other], 66),
        (["trace", "replay", trace_file, "--model", "kafka"], 66),
        (["trace", "replay", trace_file, "--const", "commit_guard=on"], 67),
        (["trace", "show", tmp_path / "missing.json"], 66),  # missing input: sysexits EX_NOINPUT
        (["trace", "replay", trace_file, "--protocol", "kip-101"], 64),
    ]
    for argv, expected in cases:
        code, _, err = run(capsys, *argv)
        assert code == expected, (argv, err)
        one_line_error(err)


def test_replay_json_prints_one_object_when_blocked(capsys, trace_file):
    """A blocked replay under --json is one JSON object on stdout (its exit_code 67), the error line
    on stderr only: before, the result and then an error object were printed, two JSON documents
    where one is promised."""
    code, out, err = run(capsys, "trace", "replay", trace_file, "--const", "commit_guard=on",
                         "--json")
    assert code == 67 and len(out.strip().splitlines()) == 1, out
    data = json.loads(out)  # a second object on stdout would make this fail ("Extra data")
    assert (data["outcome"], data["step"], data["exit_code"]) == ("blocked", 1, 67)
    assert "is not enabled" in one_line_error(err)


@pytest.mark.parametrize("alias,release", [("kip-279", "2.0.0"), ("kip-380", "2.2.0"),
                                           ("truncate-on-fetch", "3.9.1")])
def test_a_scenario_naming_an_alias_as_its_protocol_loads_and_replays(capsys, tmp_path, alias,
                                                                      release):
    """A saved scenario whose protocol is an older name replays as the release it stands for (it was
    refused with exit 65 because only the release names were accepted)."""
    doc = json.loads(open("traces/scenarios/kip-101-scenario-1-committed-data-lost.json").read())
    doc["protocol"] = alias
    path = tmp_path / "aliased.json"
    path.write_text(json.dumps(doc))
    code, out, err = run(capsys, "trace", "replay", path, "--json")
    assert code != 65, err
    data = json.loads(out)
    expected, _ = run(capsys, "trace", "replay",
                      "traces/scenarios/kip-101-scenario-1-committed-data-lost.json", "--protocol",
                      release, "--json")[:2]
    assert data["protocol"] == alias and data["as_expected"] is True
    assert code == expected
    # a number that is no release is still refused, naming the nearest release
    doc["protocol"] = "4.2.0"
    path.write_text(json.dumps(doc))
    code, _, err = run(capsys, "trace", "replay", path)
    assert (code == 65 and "unknown protocol '4.2.0'" in one_line_error(err)
            and "the nearest: 4.1.1" in err)
    # a name that is neither a row, an alias nor a number: refused, naming them
    doc["protocol"] = "kip-999"
    path.write_text(json.dumps(doc))
    code, _, err = run(capsys, "trace", "replay", path)
    assert code == 65 and "unknown protocol 'kip-999'" in one_line_error(err) and "aliases: " in err


@pytest.mark.parametrize("constant, value", [("RM", 10**17), ("RM", -1), ("commit_guard", "maybe")])
def test_a_header_constant_no_configuration_has_is_a_corrupt_file(capsys, tmp_path, trace_file,
                                                                  constant, value):
    """A header constant outside the model's range (or of the wrong kind) is a corrupt or hostile
    file, 65; a trace of another valid configuration stays 66 (above). Before, ``RM=10^17`` gave 66,
    as if the trace were of another configuration."""
    doc = json.loads(open(trace_file).read())
    doc["header"]["constants"][constant] = value
    bad = tmp_path / "bad-header.json"
    bad.write_text(json.dumps(doc))
    for verb in ("show", "replay"):
        code, _, err = run(capsys, "trace", verb, bad)
        assert code == 65, (verb, err)
        assert "header is corrupt" in one_line_error(err)
