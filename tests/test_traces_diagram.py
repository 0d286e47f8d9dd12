"""Sequence diagrams and state graphs a reviewer can read: Mermaid that Mermaid's sequenceDiagram
grammar accepts, lanes in broker order with each action on the lane of the broker that acts, an SVG
whose layout measures its text (nothing clipped), DOT through the graphviz package, and a clear exit
69 when Graphviz's dot program is needed and missing."""

import re
import shutil
import xml.etree.ElementTree as ET

import pytest

from checker.trace import Step, Trace
from kmc.cli import main
from spec.registry import build_model
from traces.diagram import CHAR_WIDTH, events, participants, to_dot, to_mermaid, to_svg, wrap_label


def walk(model, wanted):
    state, steps = model.init_states()[0], []
    for want in wanted:
        act, state = next((a, s) for a, s in model.successors(state) if str(a) == want)
        steps.append(Step(act, state))
    return Trace(model.describe(), model.init_states()[0], tuple(steps), invariant="log-matching",
                 violation_index=len(steps))


STEPS = ["Produce(leader=0)", "SendFetch(follower=1, leader=0)", "ShrinkIsr(leader=0, follower=1)",
         "ServeFetch(leader=0, follower=1)", "ReceiveFetch(follower=1, leader=0)",
         "SendFetch(follower=1, leader=0)", "ServeFetch(leader=0, follower=1)",
         "ExpandIsr(leader=0, follower=1)", "Crash(broker=0)", "ElectLeader(leader=1)",
         "DeliverLeaderAndIsr(broker=1, epoch=1)"]


@pytest.fixture(scope="module")
def trace():
    return walk(build_model("kafka", ["brokers=2"], "kip-320"), STEPS)


# -- Mermaid ---------------------------------------------------------------------------------------
#: the statements of Mermaid's sequenceDiagram grammar that kmc writes: an id is a word; a message
#: or note text runs to the end of the line and may not hold ';' (ends a statement) or '#' (an
#: entity)
_ID = r"[A-Za-z_][A-Za-z0-9_]*"
_TEXT = r"[^;#\n]+"
MERMAID_LINES = [
    re.compile(rf"    participant (?P<id>{_ID}) as [^;#\n]+"),
    re.compile(rf"    (?P<src>{_ID})->>(?P<dst>{_ID}): {_TEXT}"),
    re.compile(rf"    Note over (?P<over>{_ID}(,{_ID})?): {_TEXT}"),
]


def parse_mermaid(text):
    """(participants in order, [(kind, ends, text)]) or an AssertionError naming the line that does
    not parse."""
    lines = text.rstrip("\n").split("\n")
    assert lines[0] == "sequenceDiagram"
    declared, statements = [], []
    for line in lines[1:]:
        match = next((m for m in (p.fullmatch(line) for p in MERMAID_LINES) if m), None)
        assert match is not None, f"not a sequenceDiagram statement: {line!r}"
        groups = match.groupdict()
        if groups.get("id"):
            declared.append(groups["id"])
            continue
        ends = [groups["src"], groups["dst"]] if groups.get("src") else groups["over"].split(",")
        assert all(end in declared for end in ends), f"undeclared participant in {line!r}"
        statements.append(("message" if groups.get("src") else "note", ends,
                           line.split(": ", 1)[1]))
    return declared, statements


def test_mermaid_parses_with_lanes_in_broker_order(trace):
    declared, statements = parse_mermaid(to_mermaid(trace))
    assert declared == ["controller", "broker_0", "broker_1"]
    by_text = {text.split(" ", 1)[1].split("(")[0]: (kind, ends) for kind, ends, text in statements}
    assert by_text["FetchRequest"] == ("message", ["broker_1", "broker_0"])
    assert by_text["FetchResponse"] == ("message", ["broker_0", "broker_1"])
    assert by_text["LeaderAndIsr"] == ("message", ["controller", "broker_1"])
    assert by_text["ShrinkIsr"] == ("note", ["broker_0"])  # the leader shrinks the ISR: its lane
    assert by_text["Produce"] == ("note", ["broker_0"])
    assert by_text["ExpandIsr"] == ("note", ["broker_0"])
    assert (statements[-1] == ("note", ["controller", "broker_1"],
                               f"step {len(STEPS)}: log-matching violated"))


def test_mermaid_never_writes_a_statement_end_into_a_label():
    from traces.diagram import _mermaid_text

    assert ";" not in _mermaid_text("a; b # c") and "#" not in _mermaid_text("a; b # c")


def test_the_grammar_check_can_fail():
    with pytest.raises(AssertionError):
        parse_mermaid("sequenceDiagram\n    participant a as a\n    a->>b: hi; there\n")
    with pytest.raises(AssertionError):
        parse_mermaid("sequenceDiagram\n    participant a as a\n    a->>b: undeclared b\n")


def test_three_brokers_get_three_lanes_in_id_order():
    t = walk(build_model("kafka", ["brokers=3"], "kip-320"),
             ["Produce(leader=0)", "SendFetch(follower=2, leader=0)"])
    assert participants(t, events(t)) == ["controller", "broker 0", "broker 1", "broker 2"]
    declared, statements = parse_mermaid(to_mermaid(t))
    assert declared == ["controller", "broker_0", "broker_1", "broker_2"]
    assert statements[1][:2] == ("message", ["broker_2", "broker_0"])


def test_ghost_fields_stay_out_of_labels(trace):
    assert "meant=" not in to_mermaid(trace) and "meant=" not in to_svg(trace)


# -- SVG -------------------------------------------------------------------------------------------
def _texts(svg):
    root = ET.fromstring(svg)
    ns = {"s": "http://www.w3.org/2000/svg"}
    return root, [(float(t.get("x")), t.get("text-anchor"), t.text or "")
                  for t in root.iterfind(".//s:text", ns)]


def test_svg_is_wide_enough_for_every_label(trace):
    svg = to_svg(trace)
    root, texts = _texts(svg)  # well-formed XML
    width = float(root.get("width"))
    assert width > 610  # the old fixed width clipped these labels
    for x, anchor, text in texts:
        w = len(text) * CHAR_WIDTH
        left = x - w / 2 if anchor == "middle" else x
        assert left >= 0 and left + w <= width, f"{text!r} is cut at the edge"


def test_svg_message_labels_fit_between_their_lanes(trace):
    from traces.diagram import PAD, lane_positions

    evs = events(trace)
    names = participants(trace, evs)
    xs, _ = lane_positions(names, evs)
    for e in evs:
        if e.kind == "message":
            a, b = names.index(e.src), names.index(e.dst)
            longest = max(len(line) for line in wrap_label(f"{e.step}. {e.label}")) * CHAR_WIDTH
            assert abs(xs[b] - xs[a]) >= longest + 2 * PAD - 1e-6
    assert xs == sorted(xs)


def test_long_labels_wrap_at_spaces():
    lines = wrap_label("FetchResponse(epoch=-1, offset=0, error=NONE, records=[(epoch=0, "
                       "ident=1)], hw=0, diverging_epoch=-1, diverging_offset=-1)", 40)
    assert len(lines) > 1 and all(len(line) <= 40 for line in lines)
    assert " ".join(lines).startswith("FetchResponse(epoch=-1, offset=0")


# -- DOT and Graphviz ------------------------------------------------------------------------------
def test_dot_holds_lanes_in_order_and_one_row_an_event(trace):
    source = to_dot(trace)
    headers = re.findall(r'^\s*h(\d+) \[label=(?:"([^"]+)"|(\w+))', source, re.M)
    assert [quoted or bare for _, quoted, bare in headers] == ["controller", "broker 0", "broker 1"]
    assert "h0 -> h1 [style=invis]" in source and "h1 -> h2 [style=invis]" in source
    rows = {int(r) for r in re.findall(r"\bp\d+_(\d+)\b", source)}
    assert rows == set(range(1, len(events(trace)) + 1))


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot program is not installed")
def test_dot_lays_out_lanes_left_to_right(trace):
    import graphviz

    svg = graphviz.Source(to_dot(trace)).pipe(format="svg", encoding="utf-8")
    root = ET.fromstring(svg)
    ns = {"s": "http://www.w3.org/2000/svg"}
    x = {}
    for group in root.iterfind(".//s:g[@class='node']", ns):
        title = group.find("s:title", ns).text
        if re.fullmatch(r"h\d", title):
            x[title] = float(group.find("s:text", ns).get("x"))
    assert x["h0"] < x["h1"] < x["h2"]


def test_graph_svg_without_dot_is_one_line_and_exit_69(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # no dot on it
    code = main(["trace", "graph", "two-phase", "--const", "RM=2", "--format", "svg"])
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 69 and len(lines) == 1 and "dot" in lines[0] and "Traceback" not in err


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot program is not installed")
def test_graph_svg_with_dot(capsys):
    assert main(["trace", "graph", "two-phase", "--const", "RM=2", "--format", "svg"]) == 0
    assert capsys.readouterr().out.lstrip().startswith(("<?xml", "<!DOCTYPE", "<svg"))


def test_graph_nodes_name_the_action_and_summarise_the_state(capsys):
    assert main(["trace", "graph", "kafka", "--protocol", "kip-101", "--const", "records=1",
                 "--const", "epochs=1", "--const", "crashes=0", "--max-states", "3000"]) == 0
    out = capsys.readouterr().out
    assert ('0 [label="#0 initial\\nb0 leader e0 |\\nb1 follower e0 |\\ncontroller leader=0 '
            'epoch=0"' in out)
    assert re.search(r'label="#\d+ Produce\(leader=0\)\\nb0 leader e0 \|e0:1\\n', out)
    labels = re.findall(r'^\s*(\d+) \[label="([^"]*)"', out, re.M)
    assert len(labels) > 100 and all("\\n" in text for _, text in labels)
    assert len({text for _, text in labels}) == len(labels)  # the labels tell the states apart


def test_numbered_lanes_are_in_id_order_whoever_acts_first():
    t = walk(build_model("two-phase", []), ["RMPrepare(rm=3)", "RMPrepare(rm=1)",
                                            "TMRcvPrepared(rm=3)"])
    declared, statements = parse_mermaid(to_mermaid(t))
    assert declared == ["TM", "RM_1", "RM_3"]
    assert (statements[0][:2] == ("message", ["RM_3", "TM"]) and statements[2][:2]
            == ("note", ["TM"]))


def test_a_trace_with_no_step_and_no_broker_draws_an_empty_diagram():
    """Two-phase's initial state alone: no lane, no event; an SVG that parses, not a crash on the
    missing lanes."""
    model = build_model("two-phase", [])
    svg = to_svg(Trace(header={"model": "two-phase"}, initial=model.init_states()[0]))
    assert ET.fromstring(svg).tag.endswith("svg")
