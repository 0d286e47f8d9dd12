"""Each action of the Kafka model is declared once, by its family (``spec.kafka.declared``): every
action the model computes is one of the declared tables' values, and every declared table yields an
action on a small reachable space."""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections import deque
from dataclasses import replace
from typing import Any

import pytest

from spec.kafka import actions_reassignment, clients, log, updates
from spec.kafka.action_rules import ACTION_FUNCTIONS, row_functions
from spec.kafka.declared import (
    BROKER,
    BROKER_OR_NONE,
    Consumes,
    Declared,
    action_functions,
    action_table,
)
from spec.kafka.families import ACTIONS
from spec.kafka.model import KafkaModel
from spec.kafka.protocols import FLAGS, Features
from spec.kafka.rules import RULES
from spec.registry import build_model

#: (protocol, bounds, features, order, states): small spaces that between them reach every declared
#: table. A breadth-first prefix reaches the faults and the controller's actions; the consumer's
#: validation round trip (a consumed record, a new leader epoch, then the three steps) is deeper, so
#: that space is walked depth first
SPACES = (
    ("2.1.0", ["records=1", "epochs=2", "bumps=1", "shutdowns=1", "bounces=1", "losses=1"],
     ["lossy-crash=on", "unclean=on"], "breadth", 10_000),
    ("3.9.1", ["records=1", "epochs=1", "consumers=1"], ["fetch-from-follower=on"], "breadth",
     10_000),
    ("3.9.1", ["records=1", "epochs=2", "consumers=1", "consumer_inflight=1"], [], "breadth",
     1_000),
    ("3.9.1", ["records=1", "epochs=2", "consumers=1", "consumer_inflight=1"], [], "depth", 5_000),
    ("kraft-4.1", ["records=1", "epochs=1", "shutdowns=1", "alter_losses=1", "unclean_shutdowns=1",
                   "clean_shutdowns=1", "fences=1", "reassignments=1"], [], "breadth", 10_000),
)


#: where a declared function lives when the model does not have it (a module function of a family or
#: a helper)
_FUNCTION_MODULES = (clients, actions_reassignment, log, updates)


def _source(function: str) -> str | None:
    found = getattr(KafkaModel, function, None)
    for module in _FUNCTION_MODULES:
        found = found if found is not None else getattr(module, function, None)
    return textwrap.dedent(inspect.getsource(found)) if callable(found) else None


def _switches_read(source: str) -> set[str]:
    """The ``Features`` members a function reads: ``self.features.x``, ``model.features.x``, or
    ``f.x`` after ``f = self.features``."""
    tree = ast.parse(source)
    aliases = {target.id for node in ast.walk(tree) if isinstance(node, ast.Assign)
               and isinstance(node.value, ast.Attribute) and node.value.attr == "features"
               for target in node.targets if isinstance(target, ast.Name)}
    return {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)
            and ((isinstance(node.value, ast.Attribute) and node.value.attr == "features")
                 or (isinstance(node.value, ast.Name) and node.value.id in aliases))}


def _flags_of(switch: str, seen: frozenset[str] = frozenset()) -> set[str]:
    """The flags behind a ``Features`` member: a field is its flag; a derived switch
    (``alter_by_request``) the flags of the members its body reads."""
    flag = switch.replace("_", "-")
    if flag in FLAGS:
        return {flag}
    member = inspect.getattr_static(Features, switch, None)
    body = getattr(member, "func", getattr(member, "fget", None))
    if body is None or switch in seen:
        return set()
    tree = ast.parse(textwrap.dedent(inspect.getsource(body)))
    read = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)
            and isinstance(n.value, ast.Name)
            and n.value.id == "self"}
    return set().union(set(), *(_flags_of(r, seen | {switch}) for r in read))


def flags_read(functions: tuple[str, ...]) -> tuple[str, ...]:
    """The flags the declared functions read, in the flag table's order."""
    read: set[str] = set()
    for function in functions:
        source = _source(function)
        if source is not None:
            read |= set().union(set(), *(_flags_of(s) for s in _switches_read(source)))
    return tuple(f for f in FLAGS if f in read)


def _flat(table: Any) -> list[Any]:
    return [a for row in table for a in _flat(row)] if isinstance(table, list) else [table]


def _computed(model: KafkaModel, order: str, states: int) -> set[Any]:
    """The actions of the successors of the first ``states`` states reached, breadth or depth
    first."""
    seen = set(model.init_states())
    frontier = deque(seen)
    take = frontier.popleft if order == "breadth" else frontier.pop
    actions: set[Any] = set()
    while frontier and len(seen) < states:
        for action, t in model.successors(take()):
            actions.add(action)
            if t not in seen:
                seen.add(t)
                frontier.append(t)
    return actions


def _reached_tables() -> tuple[set[str], list[str]]:
    reached: set[str] = set()
    undeclared: list[str] = []
    for protocol, bounds, features, order, states in SPACES:
        model = build_model("kafka", bounds, protocol, features)
        tables = {d.table: set(_flat(getattr(model, d.table))) for d in ACTIONS}
        declared = set().union(*tables.values())
        computed = _computed(model, order, states)
        undeclared += [f"{protocol}: {a}" for a in computed - declared]
        reached |= {table for table, actions in tables.items() if actions & computed}
    return reached, undeclared


@pytest.mark.slow  # every line it runs, cheaper fast tests run too (coverage by test)
def test_every_action_computed_is_declared_and_every_declared_table_is_reached() -> None:
    reached, undeclared = _reached_tables()
    assert not undeclared, f"computed but declared by no family: {sorted(undeclared)[:5]}"
    never = [f"{d.name} ({d.table})" for d in ACTIONS if d.table not in reached]
    assert not never, f"declared but never computed on the small spaces: {never}"


def test_each_table_declared_once_and_the_rule_map_derives_from_the_declarations() -> None:
    tables = [d.table for d in ACTIONS]
    assert len(tables) == len(set(tables))
    assert ACTION_FUNCTIONS == action_functions(ACTIONS)
    assert set(ACTION_FUNCTIONS) == {d.name for d in ACTIONS}
    # one name, two tables (the ZooKeeper controller's and the KRaft controller's): both tables'
    # functions
    assert ({"_controlled_shutdowns", "_controlled_shutdown_actions"}
            <= set(ACTION_FUNCTIONS["ProcessControlledShutdown"]))


def test_a_table_is_indexed_by_its_parameters_in_order() -> None:
    model = KafkaModel(brokers=3)
    fence = Declared("FenceBroker", "_fence", (("broker", BROKER), ("leader", BROKER_OR_NONE)), ())
    table = action_table(fence, model)
    assert len(table) == 3 and len(table[0]) == 4
    assert table[2][0].params == (("broker", 2), ("leader", -1))
    assert table[1][3].params == (("broker", 1), ("leader", 2))
    with pytest.raises(ValueError, match="no parameter range"):
        action_table(Declared("X", "_x", (("broker", "brokers"),), ()), model)


#: rows of the rule table about the whole model rather than a step (a controller class, the replay
#: of the metadata log, the shape of a record), by the start of their names: no action's functions
#: are named by them
WHOLE_MODEL_RULES = (
    "the KRaft controller: the leader changes the ISR by AlterPartition",
    "brokers replay the metadata log late",
    "one record per batch, one partition",
)


def test_every_rule_of_a_step_is_named_by_some_declared_action() -> None:
    """The explorer shows a rule on the actions whose declarations name it
    (``spec.kafka.action_rules``): a rule of a step that no declaration names is shown nowhere."""
    named = {rule for d in ACTIONS for rule in d.rules + d.kraft_rules}
    shown_nowhere = [rule.name for rule in RULES if not rule.model.startswith("not modelled")
                     and rule.id not in named]
    assert len(shown_nowhere) == len(WHOLE_MODEL_RULES), shown_nowhere
    assert all(name.startswith(WHOLE_MODEL_RULES) for name in shown_nowhere), shown_nowhere


def _rules_naming(declared: Declared) -> set[str]:
    """The ids of the rules whose ``model`` column names one of the declaration's functions (a
    function named with a parenthesis of action names counts for those actions only)."""
    functions = set(declared.functions)
    found = set()
    for rule in RULES:
        for function, only in row_functions(rule.model):
            if ((not only or declared.name in only) and {function, function.rsplit(".", 1)[-1]}
                & functions):
                found.add(rule.id)
    return found


def test_a_row_names_the_rules_whose_model_column_names_its_functions() -> None:
    """A declaration's rule ids and the rule table's ``model`` column are one account: a rule that
    names a function of the action and is not on its row (or a rule on its row that names none of
    its functions) fails here."""
    wrong = {d.table: (sorted(_rules_naming(d) - set(d.rules + d.kraft_rules)),
                       sorted(set(d.rules + d.kraft_rules) - _rules_naming(d)))
             for d in ACTIONS if _rules_naming(d) != set(d.rules + d.kraft_rules)}
    assert not wrong, (
        "table: (rules naming its functions, not on the row; on the row, naming none of them): "
        f"{wrong}")


def test_a_row_declares_the_flags_its_functions_read() -> None:
    wrong = {d.table: (flags_read(d.functions), d.flags) for d in ACTIONS if flags_read(d.functions)
             != d.flags}
    assert not wrong, f"table: (the flags its functions read, the flags declared): {wrong}"


def test_the_row_checks_fail_on_a_missing_rule_or_flag() -> None:
    """The two checks above, on a row with one rule and one flag taken out."""
    expand = next(d for d in ACTIONS if d.table == "_expand")
    assert "kafka-7128" in expand.rules and "kafka-7128" in expand.flags
    short = replace(expand, rules=tuple(r for r in expand.rules if r != "kafka-7128"),
                    flags=tuple(f for f in expand.flags if f != "kafka-7128"))
    assert _rules_naming(short) - set(short.rules + short.kraft_rules) == {"kafka-7128"}
    assert flags_read(short.functions) != short.flags


def test_a_row_with_an_unknown_rule_flag_or_parameter_is_refused() -> None:
    params = (("leader", BROKER),)
    with pytest.raises(ValueError, match="no rule 'kafka-0000'"):
        Declared("X", "_x", params, (), rules=("kafka-0000",))
    with pytest.raises(ValueError, match="no rule 'kip-0'"):
        Declared("X", "_x", params, (), kraft_rules=("kip-0",))
    with pytest.raises(ValueError, match="no flag 'kip-0'"):
        Declared("X", "_x", params, (), flags=("kip-0",))
    with pytest.raises(ValueError, match="no parameter 'follower'"):
        Declared("X", "_x", params, (), actor="follower")
    with pytest.raises(ValueError, match="no parameter 'broker'"):
        Declared("X", "_x", params, (), consumes=Consumes("FetchRequest", "broker", "leader",
                                                          "Fetch request"))
    assert Declared("X", "_x", params, (), rules=("leader-hw", "kip-966-elr"), flags=("kraft",),
                    actor="leader")


def test_the_replay_reads_who_acts_and_what_is_consumed_from_the_rows() -> None:
    """``spec.kafka.blocked``'s maps are the declarations' ``actor``, ``leader_only`` and
    ``consumes``."""
    from spec.kafka import blocked

    assert blocked._ACTOR["ServeFetch"] == "leader" and blocked._ACTOR["ReceiveFetch"] == "follower"
    assert blocked._LEADER_ONLY == {"Produce", "AdvanceHighWatermark", "ShrinkIsr", "ExpandIsr",
                                    "ServeFetch", "ServeOffsetsForLeaderEpoch"}
    assert (blocked._CONSUMES["ProcessAlterPartition"]
            == ("AlterPartition", "leader", None, "ISR change request"))
    assert set(blocked._CONSUMES) == {d.name for d in ACTIONS if d.consumes is not None}


def test_the_alter_isr_rows_show_the_alter_isr_rules_and_not_kraft_only_ones() -> None:
    """The rule ids on a row say where a rule holds: the ZooKeeper rows with AlterIsr (3.9.1) show
    the AlterIsr rules on its steps (they were hidden when the explorer left out every function of
    the KRaft modules on a ZooKeeper row), and a rule only the KRaft controller has (KIP-903) only
    on the KRaft rows."""
    from spec.kafka.action_rules import rules_for_action
    from spec.registry import get_model_info

    info = get_model_info("kafka")

    def shown(action: str, protocol: str) -> dict[str, str]:
        rows = info.rules(protocol)
        return {row["flag"]: row.get("on", "")
                for row in rules_for_action(action, rows, protocol.startswith("kraft"))}

    assert shown("ProcessAlterPartition", "3.9.1")["kafka-14140"] == "yes"
    assert shown("ReceiveAlterPartitionResponse", "3.9.1")["alter-isr"] == "yes"
    assert "kip-903" not in shown("ProcessAlterPartition", "3.9.1")
    assert shown("ProcessAlterPartition", "kraft-4.1")["kip-903"] == "yes"
