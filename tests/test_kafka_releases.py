"""Any release by its number: every Kafka release from 0.10.2.0 to 4.1.x resolves to a protocol row
and the flags the rule table's since/until releases give it; the named rows are their own releases;
``kmc list --releases`` shows the mapping; an unknown number is one line naming the nearest releases
(exit 64); ``kmc check`` says what it checked."""

from __future__ import annotations

import json
import re
from dataclasses import replace

import pytest

from checker.search import SearchOptions, trace_header
from kmc.cli import main
from spec.errors import UsageError
from spec.kafka.protocols import FLAGS, RELEASE_BY_NAME, RELEASES, REQUIRES
from spec.kafka.releases import (
    KAFKA_RELEASES,
    flags_of,
    lookup,
    mapping,
    resolve,
    row_release,
)
from spec.kafka.rules import flag_rules
from spec.registry import build_model

TINY = ["records=0", "epochs=0", "crashes=0"]


def _v(text: str) -> tuple[int, ...]:
    parts = tuple(int(p) for p in text.split("."))
    return parts + (0,) * ((4 if parts[0] == 0 else 3) - len(parts))


def _table_on(flag: str, release: str, kraft: bool) -> bool:
    """The rule table read a second way: a flag is on by default from the first of its ``since``
    releases that applies (its own line, or any later line for the last one; ``introduced`` when
    none are given), off from ``until``; ``kraft`` is the mode."""
    rule = flag_rules()[flag]
    v = _v(release)
    if flag == "kraft":
        return kraft
    if rule.until and v >= _v(rule.until):
        return False
    since = [rule.introduced.split()[0]] if rule.since is None else list(rule.since)
    for i, first in enumerate(since):
        f = _v(first)
        line = f[:3] if f[0] == 0 else f[:2]
        if v >= f and (i == len(since) - 1 or (v[:3] if v[0] == 0 else v[:2]) == line):
            return True
    return False


#: (protocol name, row, flags against the row) read from the sources (release tags; 4.0.x and 4.1.0
#: from their commits)
PINNED = [
    ("0.10.2.1", "0.10.2", {}),
    ("1.0.2", "0.11.0", {}),
    # b71ee043f89, 5cc162f30ec: 1.1.0
    ("1.1.0", "0.11.0", {"kafka-5642": True, "kafka-5163": True}),
    ("2.3.1", "2.2.0", {"consumer-truncation-detection": True}),  # 409fabc5610: 2.3.0
    ("2.6.0", "2.2.0", {"kafka-8400": True, "truncation-lowers-hw": True,
                        "consumer-truncation-detection": True}),
    # 0b7c490a6cbe
    ("2.6.1", "2.2.0", {"kafka-8400": True, "truncation-lowers-hw": True, "kafka-10706-fix": True,
                        "consumer-truncation-detection": True}),
    ("2.7.2", "2.2.0", {"kafka-8400": True, "truncation-lowers-hw": True, "kafka-10706-fix": True,
                        # 13141 needs truncate-on-fetch
                        "consumer-truncation-detection": True, "alter-isr": True}),
    ("3.0.2", "2.8.1", {}),
    ("3.1.0", "2.8.1", {"kafka-13091": True}),  # 26ee78f3923: 3.1.0
    ("3.4.0", "2.8.1", {"kafka-14140": True, "kafka-13091": True}),  # 163d00b3e61: 3.4.0
    ("3.6.2", "3.4.1", {}),
    # edc7e10a745, af747fbfed7: 3.7.0
    ("3.7.1", "3.4.1", {"kafka-15583": True, "effective-min-isr": True}),
    ("3.9.0", "3.4.1", {"kafka-15583": True, "effective-min-isr": True}),
    ("kraft-3.4.1", "kraft-3.3", {"kafka-14704": True}),  # 649d5497442: 3.4.1
    ("kraft-3.6.0", "kraft-3.5", {"kafka-15021": True}),
    ("kraft-3.8.0", "kraft-3.5", {"kafka-15021": True, "kafka-15583": True,
                                  "clean-shutdown-detection": True, "kafka-18635": True,
                                  "kafka-15665": True, "effective-min-isr": True,
                                  "unclean-election-clears-elr": True,
                                  # 3.8.0 registerBroker: previousBrokerEpoch
                                  "fenced-broker-clean-shutdown": True}),
    ("kraft-3.9.0", "kraft-3.5", {"kafka-15021": True, "kafka-15583": True,
                                  "clean-shutdown-detection": True, "kafka-15665": True,
                                  "effective-min-isr": True, "unclean-election-clears-elr": True,
                                  # 3.9.0: every new incarnation (KAFKA-16952)
                                  "fenced-broker-clean-shutdown": True}),
    ("4.0.0", "kraft-4.0", {}),
    ("kraft-4.0.0", "kraft-4.0", {}),
    ("4.0.1", "kraft-4.0", {"kafka-18991": True, "kafka-18635": True}),
    ("4.1.0", "kraft-4.1", {}),
]


@pytest.mark.parametrize("name,row,differs", PINNED)
def test_a_release_number_runs_its_row_with_the_flags_of_its_release(name, row, differs):
    found = lookup(name)
    assert (found.row, dict(found.differs)) == (row, differs)
    model = build_model("kafka", TINY, name)
    assert (model.features == replace(RELEASE_BY_NAME[row].features,
                                      **{f.replace("-", "_"): on for f, on in differs.items()}))
    assert model.protocol == name


def test_every_release_flag_set_against_the_rule_table():
    """Every release in every mode it has, every flag, against the rule table read independently
    (``_table_on``): a flag is on only where the table puts it on by default, and is off there only
    where the mechanism it changes is absent from the release's mode (its requirement fails even
    with ELR's code switched on: alter-isr on KRaft, kip-841 on ZooKeeper, kafka-13141 before
    truncate-on-fetch)."""
    seen = 0
    for found in mapping():
        kraft = found.mode == "KRaft"
        with_elr = replace(found.features, kip_966_elr=kraft)
        for flag in FLAGS:
            table = _table_on(flag, found.release, kraft)
            if found.features.flag(flag):
                assert table, (found.asked, flag)
            elif table:
                assert flag in REQUIRES and not REQUIRES[flag][1](with_elr), (found.asked, flag)
        seen += 1
    zookeeper = [r for r in KAFKA_RELEASES if _v(r) < _v("4.0.0")]
    kraft = [r for r in KAFKA_RELEASES if _v(r) >= _v("3.3.0")]
    assert (seen == len(zookeeper) + len(kraft) and KAFKA_RELEASES[0] == "0.10.2.0" and "4.1.0"
            in KAFKA_RELEASES)


def test_every_named_row_is_the_release_it_names():
    """A row's hand-written flags equal its release's flags computed from the rule table (kraft-3.5
    is 3.5.0 in KRaft mode): a rule whose since/until disagrees with the rows, or a row that forgets
    a flag, fails here."""
    for row in RELEASES:
        release = row_release(row)
        assert release is not None, row.name
        assert flags_of(release, row.features.kraft) == row.features, row.name


def test_a_release_after_a_row_adds_only_what_the_table_gives():
    """A mutation check of the computation: a rule's since moved later takes the flag off the
    releases before it."""
    import spec.kafka.releases as releases

    rules = dict(flag_rules())
    rules["kafka-15583"] = replace(rules["kafka-15583"], since=("3.8.0",))
    original = releases.flag_rules
    releases.flag_rules = lambda: rules
    try:
        assert (not releases.flags_of("3.7.1", False).kafka_15583
                and releases.flags_of("3.8.0", False).kafka_15583)
    finally:
        releases.flag_rules = original
    assert flags_of("3.7.1", False).kafka_15583


def test_4_1_0_is_kraft_and_its_former_zookeeper_meaning_replays_from_a_trace():
    """4.x has no ZooKeeper mode: --protocol 4.1.0 is kraft-4.1. A trace recorded when 4.1.0 named
    the newest ZooKeeper row (its header's flags have kraft off) is built on that row, 3.9.1."""
    assert resolve("4.1.0") == RELEASE_BY_NAME["kraft-4.1"].features
    recorded = {flag: on for flag, on in RELEASE_BY_NAME["3.9.1"].features.as_dict().items()}
    model = build_model("kafka", TINY, "4.1.0",
                        [f"{k}={'on' if v else 'off'}" for k, v in recorded.items()])
    assert model.protocol == "3.9.1" and model.features == RELEASE_BY_NAME["3.9.1"].features


@pytest.mark.parametrize("name,nearest",
                         [("3.7.5", "3.7.2 and 3.8.0"), ("kraft-3.1.0", "kraft-3.3.0"),
                          ("4.2.0", "4.1.1"), ("0.9.0.1", "0.10.2.0"), ("3.9.2", "3.9.1")])
def test_an_unknown_release_is_one_line_naming_the_nearest(capsys, name, nearest):
    assert main(["check", "kafka", "--protocol", name]) == 64
    err = capsys.readouterr().err.strip()
    assert (len(err.splitlines()) == 1 and f"unknown protocol {name!r}" in err
            and f"the nearest: {nearest}" in err)
    with pytest.raises(UsageError, match="nearest"):
        resolve(name)


def test_a_name_of_no_release_shape_still_lists_the_rows(capsys):
    # 5,000 digits: no int() of them (Python's limit)
    for name in ("bogus", "1" * 5000 + ".1.1", "kraft-", "3.7.1.0.0"):
        assert main(["check", "kafka", "--protocol", name]) == 64
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1
        assert "kraft-4.0" in err and "aliases: " in err and "release by its number" in err


def test_list_releases_shows_every_release_with_its_row_and_flags(capsys):
    assert main(["list", "--releases", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["releases"]
    assert [r["protocol"] for r in rows] == [m.asked for m in mapping()]
    by_name = {r["protocol"]: r for r in rows}
    assert by_name["3.7.1"] == {"protocol": "3.7.1", "release": "3.7.1", "mode": "ZooKeeper",
                                "row": "3.4.1",
                                "differs": {"kafka-15583": True, "effective-min-isr": True}}
    assert main(["list", "--releases"]) == 0
    text = capsys.readouterr().out
    lines = re.sub(r"\s+", " ", text)
    assert "3.7.0, 3.7.1, 3.7.2, 3.8.0, 3.8.1, 3.9.0 -> 3.4.1 +kafka-15583" in lines
    assert "4.0.1 -> kraft-4.0 +kafka-18991 +kafka-18635" in lines
    assert main(["list", "--releases", "--rules"]) == 64


@pytest.mark.slow  # every line it runs, cheaper fast tests run too (coverage by test)
def test_check_says_what_it_checked(capsys):
    """--json names the protocol asked for, the release, the row and the flags that ran (it had no
    protocol); the text output starts with the same as a header line, --verbose adds every flag that
    is on."""
    assert main(["check", "kafka", "--protocol", "3.7.1", "--feature", "unclean=on",
                 *sum((["--const", c] for c in TINY), []), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert ((data["protocol"], data["release"], data["row"], data["mode"])
            == ("3.7.1", "3.7.1", "3.4.1", "ZooKeeper"))
    assert (data["differs_from_row"] == {"unclean": True, "kafka-15583": True,
                                         "effective-min-isr": True})
    assert (data["flags"]
            == list(resolve("3.4.1", {"kafka-15583": True, "effective-min-isr": True,
                                      "unclean": True}).on()))
    assert main(["check", "kafka", "--protocol", "kip-101",
                 *sum((["--const", c] for c in TINY), []), "--quiet", "--verbose"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "Checking kafka --protocol kip-101: ZooKeeper mode, row 0.11.0"
    assert lines[1] == "Flags on: offsets-for-leader-epoch"


def test_a_saved_trace_header_records_the_release_and_row():
    model = build_model("kafka", TINY, "kraft-3.7.1")
    header = trace_header(model, SearchOptions(invariants=[]))
    assert ((header["protocol"], header["release"], header["row"])
            == ("kraft-3.7.1", "3.7.1", "kraft-3.5"))
    assert header["features"] == model.features.as_dict()
    named = trace_header(build_model("kafka", TINY, "2.8.1"), SearchOptions(invariants=[]))
    assert named["row"] == "2.8.1" and "release" not in named


def test_a_release_replays_its_own_trace_header():
    """A saved trace's header lists every flag; replayed on its own release number, the flags the
    release has are not switched (kraft-3.8.0 has clean-shutdown-detection without ELR on by
    default: inert, not refused)."""
    for found in mapping():
        assert resolve(found.asked, found.features.as_dict()) == found.features, found.asked
    with pytest.raises(UsageError, match="needs kip-966-elr"):
        # switched on against the row: still refused
        resolve("kraft-3.5", {"clean-shutdown-detection": True})


def test_list_rules_says_where_each_flag_is_on_by_default():
    from spec.kafka.rules import rule_rows

    rows = {r["flag"]: r for r in rule_rows()}
    assert rows["kafka-13141"]["default"] == "2.7.2 on its line, 2.8.1 on its line, from 3.0.0"
    assert rows["offsets-for-leader-epoch"]["default"] == "from 0.11.0, until 2.8.0"
    assert rows["kip-966-elr"]["default"] == "from 4.1.0"
    assert rows["unclean"]["default"].startswith("in no release by default")


def test_kmc_list_names_the_release_numbers(capsys):
    assert main(["list", "--json"]) == 0
    kafka = next(m for m in json.loads(capsys.readouterr().out)["models"] if m["name"] == "kafka")
    assert kafka["release_numbers"] == f"{KAFKA_RELEASES[0]} to {KAFKA_RELEASES[-1]}"


def test_a_saved_trace_of_the_former_4_1_0_row_still_replays(capsys, tmp_path):
    """A trace saved when 4.1.0 named the newest ZooKeeper row (header protocol 4.1.0, its flags
    3.9.1's, no release or row keys) replays on 3.9.1 as it was made, on its own and under another
    protocol."""
    from traces.io import save_trace
    from traces.replay import replay_scenario, scenario_model
    from traces.scenario import load_scenario

    scenario = load_scenario("traces/scenarios/kip-101-scenario-1-committed-data-lost.json")
    model = scenario_model(scenario, "3.9.1")
    trace = replay_scenario(model, scenario).trace
    header = {**model.describe(), "protocol": "4.1.0"}
    assert header["features"]["kraft"] is False and "row" not in header
    path = save_trace(replace(trace, header=header), str(tmp_path / "old.json"))
    assert main(["trace", "replay", path, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["protocol"] == "3.9.1"
    assert main(["trace", "replay", path, "--protocol", "3.4.1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["outcome"] == "holds"
    # under a KRaft row it blocks (ZooKeeper steps), its kraft=off not carried as a switch against
    # kraft-4.1's defaults
    assert main(["trace", "replay", path, "--protocol", "kraft-4.1", "--json"]) == 67
    assert json.loads(capsys.readouterr().out)["outcome"] == "blocked"


def test_a_scenario_expects_of_a_release_what_it_expects_of_its_row_when_the_flags_are_the_rows(
    capsys):
    """3.5.1 runs 3.4.1 unchanged: the scenario's 3.4.1 expectation is 3.5.1's; 3.7.1 adds
    kafka-15583: none is."""
    path = "traces/scenarios/kafka-18991-stale-diverging-answer-after-leadership-returns.json"
    assert main(["trace", "replay", path, "--protocol", "3.5.1", "--json"]) == 12
    data = json.loads(capsys.readouterr().out)
    assert data["expected"] is not None and data["as_expected"] is True
    main(["trace", "replay", path, "--protocol", "3.7.1", "--json"])
    assert json.loads(capsys.readouterr().out)["expected"] is None


@pytest.mark.slow  # every line it runs, cheaper fast tests run too (coverage by test)
def test_simulate_says_what_it_ran(capsys):
    assert (main(["simulate", "kafka", "--protocol", "4.0.1", "--walks", "2", "--depth", "4",
                  "--json"]) == 20)
    data = json.loads(capsys.readouterr().out)
    assert (data["release"], data["row"], data["differs_from_row"]) == (
        "4.0.1", "kraft-4.0",
        {"kafka-18991": True, "kafka-18635": True})


@pytest.mark.parametrize("flag,protocol,fixed", [
    ("kafka-18991", "kraft-4.0", "4.0.1"), ("kafka-18991", "4.0.0", "4.0.1"),
    ("kafka-18991", "kraft-3.5", "3.9.1"), ("kafka-18991", "3.4.1", "3.9.1"),
    ("kafka-13141", "2.8.0", "2.8.1"), ("kafka-14704", "2.8.1", "3.4.1"),
    ("kafka-7786-fix", "2.1.0", "2.1.1"), ("kip-966-elr", "kraft-4.0", "4.1.0"),
    ("kafka-18635", "kraft-4.0", "4.0.1"), ("kafka-18991", "kraft-4.1", None),
    ("unclean", "3.9.1", None),
])
def test_a_fix_is_named_by_the_release_that_brings_it_to_the_rows_line(flag, protocol, fixed):
    """A story's "fixed in" (``kmc matrix``) is the first release at or after the row's with the
    fix: KAFKA-18991 came to the 4.0 line in 4.0.1, not in 3.9.1; KAFKA-13141 to the 2.8 line in
    2.8.1 (2.7.2 has it too, but 2.7 has no truncate-on-fetch follower to fix)."""
    from spec.kafka.releases import fixed_in

    assert fixed_in(protocol).get(flag) == fixed
