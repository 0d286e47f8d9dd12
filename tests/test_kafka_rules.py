"""The rule table and the release lines: every flag has a rule with a release and a source, every
protocol row is a release whose flags agree with the table, old names still work, and a flag that
does not exist in a release line is refused with one line (exit 64)."""

from __future__ import annotations

import functools
import importlib
import inspect
import json
import re
from dataclasses import replace

import pytest

from kmc.cli import main
from spec.errors import UsageError
from spec.kafka.protocols import FLAG_ALIASES, FLAGS, PROTOCOL_ALIASES, RELEASES, resolve
from spec.kafka.rules import RULE_IDS, RULES, flag_rules, releases_with, rule_rows
from spec.registry import build_model, get_model_info

RELEASE_ORDER = [r.name for r in RELEASES]


def _version(name: str) -> tuple[int, ...]:
    parts = tuple(int(part) for part in name.removeprefix("kraft-").split("."))
    return parts + (0,) * (3 - len(parts))  # kraft-3.3 is 3.3.0


#: the release lines: ZooKeeper rows, then KRaft rows; a fix stays on in the later rows of its own
#: line
LINES = ([r.name for r in RELEASES if not r.features.kraft],
         [r.name for r in RELEASES if r.features.kraft])


def test_every_flag_has_exactly_one_rule_with_a_release_and_a_source():
    by_flag = flag_rules()
    assert set(by_flag) == set(FLAGS)
    for rule in RULES:
        assert rule.name and rule.ticket and rule.source and rule.model, rule
        assert rule.introduced and rule.releases, rule
    assert sum(1 for r in RULES if r.flag) == len(FLAGS), "one rule per flag"


def flag_readers() -> dict[str, set[str]]:
    """Each flag's field -> the names the model may read it by: the field itself and every derived
    switch of ``Features`` (a property defined beside the releases) that reads it, directly or
    through another one."""
    from spec.kafka.protocols import Features

    code = {name: value.func if isinstance(value, functools.cached_property) else value.fget
            for name, value in vars(Features).items()
            if isinstance(value, (functools.cached_property, property))}
    reads = {name: set(re.findall(r"self\.(\w+)", inspect.getsource(function)))
             for name, function in code.items()}
    readers: dict[str, set[str]] = {f.replace("-", "_"): {f.replace("-", "_")} for f in FLAGS}
    changed = True
    while changed:  # a switch derived from a derived switch reads that one's flags too
        changed = False
        for name, names in reads.items():
            for known in readers.values():
                if name not in known and names & known:
                    known.add(name)
                    changed = True
    return readers


def test_every_flag_is_used_by_the_model_code():
    """A flag that no code reads would be a rule the model only claims to have. The model reads a
    flag as ``features.<field>`` or through a derived switch of ``Features`` that reads it (no other
    name: the map between names is computed from ``spec.kafka.protocols``, not written here)."""
    import pathlib

    code = "".join(p.read_text() for p in pathlib.Path("spec/kafka").glob("*.py") if p.name
                   not in ("protocols.py",
                         "rules.py"))
    readers = flag_readers()
    for flag in FLAGS:
        names = readers[flag.replace("-", "_")]
        assert any(re.search(rf"\bfeatures\.{name}\b|\bf\.{name}\b", code) for name in names), \
            f"no model code reads {flag} (by any of {sorted(names)})"


def test_the_model_names_no_flag_twice():
    """No switch has a second name on the model: every shortcut attribute the model once kept is
    gone."""
    from spec.kafka.model import KafkaModel

    for protocol in ("0.10.2", "2.1.0", "2.8.0", "kraft-4.1"):
        model = KafkaModel(protocol=protocol, consumers=1, acks=-1)
        flags = {name: value for name, value in vars(model).items() if isinstance(value, bool)}
        assert not flags, f"{protocol}: switches kept as model attributes: {sorted(flags)}"


def test_a_fix_is_on_from_the_release_that_introduced_it():
    """Each flag's first release row is not older than the release the table names (backports aside,
    the table's 'introduced' is the oldest release with the fix), and once on it stays on in later
    rows."""
    for flag, rule in flag_rules().items():
        rows = releases_with(flag)
        if not rows or rule.introduced == "-":
            continue
        assert _version(rows[0]) >= _version(rule.introduced), (flag, rows[0], rule.introduced)
        if flag == "offsets-for-leader-epoch":  # 2.8.0 replaced the round with truncation on fetch
            continue
        for line in LINES:
            on = [r for r in rows if r in line]
            if on:
                assert on == line[line.index(on[0]):], (flag, on)


@pytest.mark.parametrize("flag,first",
                         [("kafka-7786-fix", "2.1.1"), ("reject-stale-broker-epoch", "2.2.0"),
                          ("kafka-7415", "2.0.1"), ("kafka-7128", "2.0.1"), ("kafka-7164", "2.0.1"),
                          ("truncate-on-fetch", "2.8.0"), ("kafka-13207", "2.8.1"),
                          ("kafka-13141", "2.8.1"), ("kafka-14704", "3.4.1"),
                          ("kafka-18991", "3.9.1"), ("kafka-10706-fix", "2.8.0"),
                          ("leader-epoch-fencing", "2.1.0")])
def test_release_placements_from_the_fix_commits(flag, first):
    assert releases_with(flag)[0] == first


def test_old_protocol_and_flag_names_are_aliases():
    for alias, target in PROTOCOL_ALIASES.items():
        assert resolve(alias) == resolve(target)
        model = build_model("kafka", ["records=0", "epochs=0", "crashes=0"], alias)
        assert model.protocol == alias
    for old, new in FLAG_ALIASES.items():
        base = ("2.8.0" if new == "kafka-18991" else "0.11.0" if new.startswith("kafka-71")
                else "2.0.1")
        assert resolve(base, {old: True}).flag(new)
    info = get_model_info("kafka")
    assert list(info.protocols) == RELEASE_ORDER and info.has_protocol("kip-320")


def test_a_flag_outside_its_release_line_is_refused_naming_the_valid_ones():
    with pytest.raises(UsageError, match="does not exist in 0.10.2.*truncate-on-fetch"):
        resolve("0.10.2", {"kafka-13207": True})
    with pytest.raises(UsageError, match="no feature flag 'kafka-1'"):
        resolve("2.8.0", {"kafka-1": True})


def test_cli_flag_errors_exit_64_with_one_line(capsys):
    assert main(["check", "kafka", "--protocol", "0.11.0", "--feature", "kafka-18991=on"]) == 64
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "kafka-18991" in err[0] and "flags of 0.11.0" in err[0]


def test_list_rules_prints_the_table(capsys):
    assert main(["list", "--rules", "--protocol", "2.1.0", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    rows = data["rules"]
    assert len(rows) == len(RULES)
    fenced = next(r for r in rows if r["flag"] == "fenced-removes-partition")
    assert fenced["on"] == "yes" and "onPartitionFenced" in fenced["source"]
    assert next(r for r in rows if r["flag"] == "kafka-7786-fix")["on"] == "no"
    # each row names the id an action's declaration names it by: a flagged rule's flag, else its own
    assert [r["id"] for r in rows] == [rule.id for rule in RULES]
    assert set(RULE_IDS) == {r["id"] for r in rows}
    unflagged = next(rule for rule in RULES if not rule.flag)
    assert main(["list", "--rules"]) == 0
    text = capsys.readouterr().out
    assert "KAFKA-7786" in text and "AbstractFetcherThread.scala" in text
    assert f"id: {unflagged.id}   flag: (every release)" in text
    assert "id: kafka-7786-fix   flag: kafka-7786-fix" in text
    assert main(["list", "--rules", "--protocol", "bogus"]) == 64


def test_rule_rows_name_the_rows_that_have_each_flag():
    rows = {r["flag"]: r for r in rule_rows()}
    assert rows["kafka-7786-fix"]["rows"].startswith("2.1.1, 2.2.0")


# -- every rule's model column names functions that exist ------------------------------------------
_SPEC_MODULES = ("actions_control", "actions_data", "actions_kraft", "actions_alter_partition",
                 "actions_alter_isr", "actions_broker_lifecycle", "actions_reassignment", "clients",
                 "log", "model", "updates", "state", "protocols", "scenario")
#: ``module.name`` (optionally ``spec.kafka.module.name``), or a bare ``_name`` that belongs to the
#: module named last
_REFERENCE = re.compile(r"(?:spec\.kafka\.)?\b([a-z_]+)\.([A-Za-z_]\w*)|(?<![.\w])(_[a-z]\w*)")


def model_references(text: str) -> list[tuple[str | None, str]]:
    """The (module, name) pairs a rule's ``model`` column names, in order; a bare ``_name`` takes
    the module of the reference before it
    (``actions_data._receive_fetch_state, _truncate_on_diverging_action``)."""
    refs: list[tuple[str | None, str]] = []
    module = None
    for match in _REFERENCE.finditer(text):
        if match.group(1):
            if match.group(1) in _SPEC_MODULES:
                module = match.group(1)
                refs.append((module, match.group(2)))
        else:
            refs.append((module, match.group(3)))
    return refs


def resolves(module_name: str | None, name: str) -> bool:
    """``name`` is a function, class or constant of ``spec.kafka.<module>``, or a method of a class
    defined there."""
    if module_name is None:
        return False
    module = importlib.import_module(f"spec.kafka.{module_name}")
    if hasattr(module, name):
        return True
    return any(cls.__module__ == module.__name__ and name in vars(cls)
               for _, cls in inspect.getmembers(module, inspect.isclass))


def unresolved(rule) -> list[str]:
    """What is wrong with a rule's model column: each name that resolves to nothing, or that it
    names nothing at all (only a rule that says "not modelled: why" may name no function)."""
    if rule.model.startswith("not modelled: "):
        return []
    refs = model_references(rule.model)
    if not refs:
        return [f"{rule.name!r} names no model function ({rule.model!r})"]
    return [f"{rule.name!r} names {m or '?'}.{n}, which does not exist" for m, n in refs
            if not resolves(m, n)]


def test_every_rule_names_model_functions_that_exist():
    problems = [problem for rule in RULES for problem in unresolved(rule)]
    assert not problems, "\n".join(problems)


def test_the_model_column_check_fails_on_a_missing_or_absent_name():
    """The resolver itself: a name that does not exist, a bare name with no module, and a column
    naming nothing are each reported (the two names the table used to carry,
    clients._controller_actions and actions_kraft._restart_state, among them)."""
    rule = RULES[0]
    for text in ("clients._controller_actions", "actions_kraft._restart_state",
                 "actions_data._receive_fetch_state, _no_such_method", "_orphan",
                 "the leader's log"):
        assert unresolved(replace(rule, model=text)), text
    assert not unresolved(replace(rule, model="actions_data._receive_fetch_state, "
                                              "_truncate_on_diverging_action"))
    assert model_references("clients._produce_with_acks, _advance_hw_with_acks (bounds acks=-1, "
                            "min_isr)") == [
        ("clients", "_produce_with_acks"), ("clients", "_advance_hw_with_acks")]
