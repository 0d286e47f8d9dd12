"""``kmc explore`` without a browser: the page's data computed from the model, the rule rows of each
action, the HTTP API's answers to good and malformed requests (4xx with one line, and the server
keeps serving), run to completion from a state, and the command line (loopback by default, Ctrl-C
stops it with exit 0)."""

from __future__ import annotations

import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from kmc.cli import declared_actions
from spec.kafka.action_rules import ACTION_FUNCTIONS, rules_for_action
from spec.registry import all_models, build_model, get_model_info
from traces.explore import runner, session
from traces.io import load_trace, save_trace
from traces.render import flat_state, fmt
from traces.replay import replay_trace
from traces.scenario import load_scenario
from traces.views import broker_views

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ROOT / "traces" / "scenarios"
STALL = "kafka-7786-fenced-answer-stalls-the-follower.json"


@pytest.fixture(scope="module")
def server(explorer_server):
    return explorer_server  # tests/conftest.py


def get(server, path, method="GET", data=None):
    """(status, decoded JSON or text) of one request."""
    request = urllib.request.Request(server.url.rstrip("/") + path, method=method, data=data)
    try:
        with urllib.request.urlopen(request, timeout=30) as resp:
            body, status, kind = resp.read(), resp.status, resp.headers.get("Content-Type", "")
    except urllib.error.HTTPError as exc:
        body, status, kind = exc.read(), exc.code, exc.headers.get("Content-Type", "")
    return status, (json.loads(body) if "json" in kind else body.decode())


# -- positions and paths ---------------------------------------------------------------------------
def test_query_round_trip():
    position = session.parse_position(
        "model=kafka&protocol=2.1.0&const=records=1&feature=unclean=on&path=3.0.7&at=2")
    assert position.config == session.Config("kafka", "2.1.0", ("records=1",), ("unclean=on",))
    assert position.path == (3, 0, 7) and position.at == 2
    assert session.parse_position(position.query()) == position
    assert session.parse_position("model=kafka&path=1.0").at == 2  # at defaults to the whole path


@pytest.mark.parametrize("query, words", [
    ("", "no model"),
    ("model=kafka&path=1..2", "must be a number"),
    ("model=kafka&path=-1", "must be a number"),
    ("model=kafka&path=1&at=2", "past the end"),
    ("model=kafka&model=two-phase", "given 2 times"),
    ("model=kafka&evil=1", "unknown parameter"),
    ("model=kafka&path=" + ".".join(["0"] * (session.MAX_PATH + 1)), "at most"),
])
def test_bad_positions_are_named(query, words):
    with pytest.raises(session.RequestError, match=words):
        session.parse_position(query)


def test_walk_follows_the_model_order_and_rejects_missing_actions():
    model = build_model("kafka", [], "2.1.0")
    w = session.walk(model, session.parse_position("model=kafka&protocol=2.1.0&path=1.0.2"))
    state = model.init_states()[0]
    for index, (act, after) in zip((1, 0, 2), zip(w.actions, w.states[1:], strict=True),
                                   strict=True):
        expected_act, state = list(model.successors(state))[index]
        assert (act, after) == (expected_act, state)
    enabled = len(list(model.successors(w.states[-1])))
    with pytest.raises(session.RequestError, match=f"has {enabled} enabled action"):
        session.walk(model,
                     session.parse_position(f"model=kafka&protocol=2.1.0&path=1.0.2.{enabled}"))


def test_state_view_shows_every_variable_as_the_model_has_it():
    model = build_model("kafka", [], "2.1.0")
    w = session.walk(model, session.parse_position("model=kafka&protocol=2.1.0&path=1.3.0"))
    view = session.state_view(w.current, w.states[-2])
    rows = {r["key"]: r for b in view["brokers"]
            for r in b["fields"]} | {r["key"]: r for r in view["others"]}
    flat, visible, before = flat_state(w.current), flat_state(w.current,
                                                              show_hidden=False), flat_state(
                                                                  w.states[-2])
    assert set(rows) == set(flat)
    for key, value in flat.items():
        assert rows[key]["value"] == fmt(value, show_hidden=True), key
        assert rows[key]["changed"] == (before.get(key) != value), key
        assert rows[key]["hidden"] == (key not in visible), key
    assert any(r["hidden"] for r in rows.values()) and any(r["changed"] for r in rows.values())
    for shown, broker in zip(view["brokers"], broker_views(w.current), strict=True):
        assert (shown["id"], shown["leo"], shown["hw"],
                shown["leader_epoch"]) == (broker.broker, broker.leo, broker.hw,
                                         broker.leader_epoch)
        assert [c["label"] for c in shown["log"]] == [e.label() for e in broker.log]


def test_only_broker_variables_go_under_a_broker():
    """A consumer numbered 0 is not broker 0; the TLA+ models' per-replica logs are their
    replicas'."""
    model = build_model("kafka", ["consumers=1"], "2.8.0")
    view = session.state_view(model.init_states()[0], None)
    assert all(r["key"].startswith("brokers[") for b in view["brokers"] for r in b["fields"])
    assert any(r["key"].startswith("consumers[0].") for r in view["others"])
    reference = build_model("tla:Kip101")
    view = session.state_view(reference.init_states()[0], None)
    assert ({r["key"] for r in view["brokers"][0]["fields"]}
            >= {"replica_log[1]", "replica_state[1].hw"})


def test_scenario_loads_at_its_expected_violation():
    for name in (STALL, "kip-101-scenario-1-committed-data-lost.json"):
        scenario = load_scenario(str(SCENARIOS / name))
        loaded = session.load_scenario_file(session.scenario_file(name))
        expected = scenario.expectation(loaded.position.config.protocol)
        assert expected.outcome == "violated"
        model = build_model(loaded.position.config.model, list(loaded.position.config.consts),
                            loaded.position.config.protocol, list(loaded.position.config.features))
        w = session.walk(model, loaded.position)
        trace = w.trace()
        assert (trace.invariant, trace.violation_index) == (expected.invariant, expected.step), name
        first = {p["name"]: p["first_violated_at"] for p in session.properties_view(w)}
        assert first[expected.invariant] == expected.step


def test_compare_agrees_with_the_scenario_expectations():
    """The path of the KAFKA-7786 story under every release: what the scenario file expects of
    each."""
    loaded = session.load_scenario_file(session.scenario_file(STALL))
    scenario = load_scenario(str(SCENARIOS / STALL))
    config = loaded.position.config
    model = build_model(config.model, list(config.consts), config.protocol, list(config.features))
    rows = session.compare(get_model_info("kafka"), session.walk(model, loaded.position))
    by_protocol = {r["protocol"]: r for r in rows}
    assert set(by_protocol) == set(get_model_info("kafka").protocols)
    checked = 0
    for protocol, row in by_protocol.items():
        expected = scenario.expect.get(protocol)
        if (expected is None or expected.outcome == "blocked" and expected.step
            > len(loaded.position.path)):
            continue
        assert row["outcome"] == expected.outcome, protocol
        if expected.step is not None:
            assert row["step"] == expected.step, protocol
        checked += 1
    assert checked >= 5
    assert by_protocol["2.1.0"]["current"] and by_protocol["2.1.0"]["invariant"] == "no-fence-stall"


# -- the rule table --------------------------------------------------------------------------------
def test_every_kafka_action_has_its_functions_and_they_exist():
    from spec.kafka import (
        actions_alter_isr,
        actions_alter_partition,
        actions_broker_lifecycle,
        actions_control,
        actions_data,
        actions_kraft,
        actions_reassignment,
        clients,
        log,
        updates,
    )
    from spec.kafka.model import KafkaModel

    places = (KafkaModel, actions_control, actions_data, actions_kraft, actions_alter_partition,
              actions_alter_isr, actions_broker_lifecycle, actions_reassignment, clients, log,
              updates)

    info = get_model_info("kafka")
    names = set()
    for protocol in info.protocols:
        names |= {a.name
                  for a in declared_actions(build_model("kafka", ["consumers=1", "acks=-1"],
                                                        protocol))}
    assert names <= set(ACTION_FUNCTIONS), sorted(names - set(ACTION_FUNCTIONS))
    for action, functions in ACTION_FUNCTIONS.items():
        for function in functions:
            assert (function == "spec.kafka.log"
                    or any(hasattr(place, function) for place in places)), \
                f"{action}: no function {function} in the model"


def test_rule_table_model_column_is_read_by_function():
    from spec.kafka.action_rules import row_functions

    assert row_functions("actions_data._error, _receive_fetch_state; "
                         "actions_control._restarts_truncation") == [
        ("actions_data._error", frozenset()), ("actions_data._receive_fetch_state", frozenset()),
        ("actions_control._restarts_truncation", frozenset())]
    assert row_functions("actions_kraft._controlled_shutdown_actions "
                         "(ProcessControlledShutdown(broker, leader)), _unfenced") == [
        ("actions_kraft._controlled_shutdown_actions", frozenset({"ProcessControlledShutdown"})),
        ("actions_kraft._unfenced", frozenset())]


def test_actions_follow_the_rules_of_their_release():
    rows_210, rows_211 = get_model_info("kafka").rules("2.1.0"), get_model_info("kafka").rules(
        "2.1.1")

    def tickets(action, rows, kraft=False):
        return {(r["ticket"], r.get("on", "")) for r in rules_for_action(action, rows, kraft)}

    assert ("KAFKA-7786", "no") in tickets("ReceiveOffsetsForLeaderEpoch", rows_210)
    assert ("KAFKA-7786", "yes") in tickets("ReceiveOffsetsForLeaderEpoch", rows_211)
    assert ("KIP-320", "yes") in tickets("ServeFetch", rows_210)
    assert ("KAFKA-7128", "yes") in tickets("ExpandIsr", rows_210)
    unclean = tickets("UncleanLeaderElection", rows_210)
    assert any(t.startswith("KIP-106") for t, _ in unclean)
    # the parenthesis restricts
    assert not any(t.startswith("KIP-106") for t, _ in tickets("ElectLeader", rows_210))
    # a KRaft override, not ZooKeeper's
    assert not any("KIP-966" in t for t, _ in tickets("ElectLeader", rows_210))
    assert any("KIP-966" in t for t, _ in tickets("ElectLeader",
                                                  get_model_info("kafka").rules("kraft-4.1"),
                                                  kraft=True))


def test_a_scenario_opens_under_another_release():
    """KAFKA-7786's story under 2.1.1 (the fix): the whole story runs and no property breaks."""
    loaded = session.load_file(str(SCENARIOS / STALL), protocol="2.1.1")
    config = loaded.position.config
    assert config.protocol == "2.1.1" and loaded.expected == "holds"
    model = build_model(config.model, list(config.consts), config.protocol, list(config.features))
    assert session.walk(model, loaded.position).trace().invariant is None


# -- the HTTP API ----------------------------------------------------------------------------------
def test_page_and_view(server):
    status, page = get(server, "/")
    assert status == 200 and "<title>kmc explore</title>" in page
    status, info = get(server, "/api/models")
    assert (status == 200 and STALL in info["scenarios"]
            and any(m["name"] == "kafka" for m in info["models"]))
    status, view = get(server, "/api/view?model=kafka&protocol=2.1.0&path=1.0")
    assert status == 200 and view["at"] == 2 and [s["label"]
                                                  for s in view["path"]] == [
                                                      "Produce(leader=0)",
                                                    "PreferredLeaderElection(leader=1)"]
    model = build_model("kafka", [], "2.1.0")
    w = session.walk(model, session.parse_position("model=kafka&protocol=2.1.0&path=1.0"))
    assert [a["label"] for a in view["actions"]] == [str(a) for a, _ in model.successors(w.current)]
    assert view["diagram_svg"].startswith("<svg") and view["mermaid"].startswith("sequenceDiagram")


@pytest.mark.parametrize("name", sorted(all_models()))
def test_every_model_can_be_walked(server, name):
    """Each registered model's page: its initial state, then the first enabled action three
    times."""
    path: list[int] = []
    for _ in range(4):
        query = f"model={name}" + (f"&path={'.'.join(map(str, path))}" if path else "")
        status, view = get(server, "/api/view?" + query.replace(":", "%3A"))
        assert status == 200, view
        assert view["at"] == len(path) and len(view["properties"]) > 0
        if not view["actions"]:
            break
        path.append(view["actions"][0]["index"])


MALFORMED = [
    ("GET", "/api/view?model=kafka&path=99", 400, "enabled action"),
    ("GET", "/api/view?model=nope", 400, "unknown model"),
    ("GET", "/api/view?model=kafka&path=%ff%fe", 400, "must be a number"),
    ("GET", "/api/view?model=kafka&protocol=9.9", 400, "unknown protocol"),
    ("GET", "/api/view?model=kafka&const=records=99", 400, "above its maximum"),
    ("GET", "/api/view?model=kafka&feature=nope=on", 400, "no feature flag"),
    ("GET", "/api/view?model=kafka&init=5", 400, "initial state"),
    ("GET", "/api/view?model=kafka&" + "a=1&" * 600, 400, "cannot read the request"),
    ("GET", "/api/export?model=kafka&format=xml", 400, "json or itf"),
    ("GET", "/api/scenario?name=../../../etc/passwd", 404, "no shipped scenario"),
    ("GET", "/api/scenario", 400, "name=FILE"),
    ("GET", "/api/compare?model=kafka&path=7.7.7.7", 400, "enabled action"),
    ("POST", "/api/run?model=kafka&max_states=-3", 400, "positive number"),
    ("POST", "/api/run?model=kafka&path=42", 400, "enabled action"),
    ("POST", "/api/view?model=kafka", 405, "not allowed"),
    ("DELETE", "/api/run", 405, "not allowed"),
    ("GET", "/etc/passwd", 404, "no such page"),
]


@pytest.mark.parametrize("method, path, status, words", MALFORMED)
def test_bad_requests_get_4xx_and_one_line(server, method, path, status, words):
    got, body = get(server, path, method=method)
    assert got == status, body
    assert isinstance(body, dict) and words in body["error"] and "\n" not in body["error"]
    assert get(server, "/api/models")[0] == 200  # still serving


def test_garbage_on_the_socket_does_not_stop_the_server(server):
    host, port = server.server_address[:2]
    for raw in (b"\x00\x01\x02 garbage\r\n\r\n", b"GET /" + b"a" * 70000 + b" HTTP/1.1\r\n\r\n",
                b"POST /api/run HTTP/1.1\r\nContent-Length: 999999999\r\n\r\n",
                b"PATCH / HTTP/1.1\r\n\r\n", b""):
        with socket.create_connection((host, port), timeout=10) as sock:
            sock.sendall(raw)
            sock.shutdown(socket.SHUT_WR)
            sock.recv(65536)
    assert get(server, "/api/view?model=kafka")[0] == 200


def test_export_reads_back_as_the_same_trace(server, tmp_path):
    query = session.load_scenario_file(session.scenario_file(STALL)).position.query()
    status, data = get(server, f"/api/export?{query}&format=json")
    assert status == 200 and data["invariant"] == "no-fence-stall" and data["violation_index"] == 15
    path = tmp_path / "stall.json"
    path.write_text(json.dumps(data))
    trace, model = load_trace(str(path))
    result = replay_trace(model, trace)
    assert ((result.outcome, result.step, result.invariant.name)
            == ("violated", 15, "no-fence-stall"))
    status, itf = get(server, f"/api/export?{query}&format=itf")
    assert status == 200 and itf["#meta"]["kmc"]["invariant"] == "no-fence-stall"


def wait_run(server, timeout=60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status, report = get(server, "/api/run")
        assert status == 200
        if not report["running"]:
            return report
        time.sleep(0.05)
    raise AssertionError("the run did not end")


def test_run_to_completion_finds_the_shortest_rest_of_a_story(server):
    """From step 9 of the KAFKA-7786 story, the search finds the rest of a stall: 6 more steps."""
    full = session.load_scenario_file(session.scenario_file(STALL)).position
    prefix = session.Position(full.config, full.init, full.path[:9], 9)
    status, _ = get(server, f"/api/run?{prefix.query()}&max_states=20000", method="POST")
    assert status == 202
    report = wait_run(server)
    assert (report["result"]["verdict"] == "violated" and report["result"]["violations"]
            == ["no-fence-stall"])
    found = session.parse_position(report["found"])
    assert found.path[:9] == full.path[:9] and found.at == len(found.path)
    model = build_model(full.config.model, list(full.config.consts), full.config.protocol)
    trace = session.walk(model, found).trace()
    assert trace.invariant == "no-fence-stall" and trace.violation_index == len(found.path)
    assert len(found.path) <= len(full.path)  # breadth first: no longer than the story's own ending


def test_run_holds_counts_like_check_and_cancel_stops(server):
    from checker import engines
    from checker.search import SearchOptions
    from traces.replay import safety_invariants

    query = "model=kafka&protocol=2.1.0&const=records=1&const=epochs=1&const=crashes=0"
    get(server, f"/api/run?{query}", method="POST")
    report = wait_run(server)
    model = build_model("kafka", ["records=1", "epochs=1", "crashes=0"], "2.1.0")
    check = engines.run(model, SearchOptions(invariants=safety_invariants(model)), "local")
    assert report["result"]["verdict"] == "holds" and report["found"] is None
    assert (report["result"]["distinct"] == check.distinct_states and report["result"]["depth"]
            == check.depth)
    # a big configuration, stopped from the page
    big = (
        "model=kafka&protocol=4.1.0&const=brokers=3&const=records=3&const=epochs=3&const=crashes=2")
    status, _ = get(server, f"/api/run?{big}&max_states=400000", method="POST")
    assert status == 202
    time.sleep(0.5)
    status, report = get(server, "/api/run/cancel", method="POST")
    assert status == 200 and not report["running"] and report["cancelled"]
    assert (report["result"]["verdict"] == "undetermined" and report["result"]["reason"]
            == runner.CANCELLED)


def test_starting_at_is_the_model_from_another_state():
    model = build_model("kafka", ["records=1"], "2.1.0")
    state = list(model.successors(model.init_states()[0]))[0][1]
    wrapped = runner.StartingAt(model, state)
    assert wrapped.init_states() == [state] and wrapped.protocol == "2.1.0"
    assert (list(wrapped.successors(state)) == list(model.successors(state)) and wrapped.describe()
            == model.describe())


# -- the command line ------------------------------------------------------------------------------
def start_cli(*argv):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, "-m", "kmc", "explore", *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)
    # the first line within two minutes (a loaded machine), else the server is stopped: never a hang
    with selectors.DefaultSelector() as waiting:
        waiting.register(proc.stdout, selectors.EVENT_READ)
        ready = waiting.select(timeout=120)
    if not ready:
        proc.kill()
        proc.communicate()
        return proc, "(kmc explore printed nothing in 120 s)"
    return proc, proc.stdout.readline()


@pytest.mark.slow  # every line it runs, cheaper fast tests run too (coverage by test)
def test_cli_serves_on_loopback_and_ctrl_c_stops_it(tmp_path):
    trace_path = tmp_path / "t.json"
    loaded = session.load_scenario_file(session.scenario_file(STALL))
    config = loaded.position.config
    model = build_model(config.model, list(config.consts), config.protocol)
    save_trace(session.walk(model, loaded.position).trace(), str(trace_path))
    proc, line = start_cli("--trace", str(trace_path))
    try:
        assert line.startswith("kmc explore: serving http://127.0.0.1:"), line
        url = line.split()[-1]
        base, fragment = url.split("#", 1)
        assert session.parse_position(fragment) == loaded.position
        with urllib.request.urlopen(base + "api/view?" + fragment, timeout=30) as resp:
            assert json.loads(resp.read())["violation"]["step"] == 15
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0 and "stopped" in out and "Traceback" not in err


def test_loopback_hosts_are_not_warned_about():
    from kmc.explore import is_loopback

    assert all(is_loopback(h) for h in ("127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "::", "10.1.2.3", "example.com"))


def test_cli_warns_for_another_host_and_refuses_bad_options(capsys):
    proc, line = start_cli("two-phase", "--host", "0.0.0.0")
    try:
        assert line.startswith("kmc explore: serving http://0.0.0.0:")
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    assert "warning: --host 0.0.0.0" in err and proc.returncode == 0
    # the refusals come before any server starts: in this process (a kmc start each
    from kmc.cli import main
    # in a subprocess cost about 2 s of CPU; the one above is the real command line)

    stall = str(SCENARIOS / STALL)
    for argv, code in ((["explore"], 64), (["explore", "--trace", stall, "--feature", "unclean=on"],
                                           64),
                       (["explore", "two-phase", "--trace", stall], 66),
                       (["explore", "--trace", stall, "--const", "records=2"], 64),
                       (["explore", "--trace", str(tmp_missing := ROOT / "no-such.json")], 66),
                       (["explore", "kafka", "--port", "70000"], 64)):
        capsys.readouterr()
        assert main(argv) == code, argv
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, (argv, err)
    assert not tmp_missing.exists()


def test_the_screenshot_script_saves_the_documentations_picture():
    """``python3 -m traces.explore.screenshot`` needs Playwright and Chromium only when it runs (the
    browser tests run it); its import and its target need neither, so the fast tier imports it on
    a machine without Chromium too (tests/test_fast_tier.py)."""
    from traces.explore import screenshot

    assert screenshot.DEFAULT_OUT == ROOT / "docs" / "images" / "explorer.png"
    assert "playwright" not in {name.split(".")[0] for name in vars(screenshot)}
