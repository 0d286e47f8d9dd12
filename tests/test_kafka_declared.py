"""Each action of the Kafka model is declared once, by its family (``spec.kafka.declared``): every action the model
computes is one of the declared tables' values, and every declared table yields an action on a small reachable space."""

from __future__ import annotations

from collections import deque
from typing import Any

import pytest

from spec.kafka.action_rules import ACTION_FUNCTIONS
from spec.kafka.declared import BROKER, BROKER_OR_NONE, Declared, action_functions, action_table
from spec.kafka.model import ACTIONS, KafkaModel
from spec.registry import build_model

#: (protocol, bounds, features, order, states): small spaces that between them reach every declared table. A
#: breadth-first prefix reaches the faults and the controller's actions; the consumer's validation round trip
#: (a consumed record, a new leader epoch, then the three steps) is deeper, so that space is walked depth first
SPACES = (
    ("2.1.0", ["records=1", "epochs=2", "bumps=1", "shutdowns=1", "bounces=1", "losses=1"],
     ["lossy-crash=on", "unclean=on"], "breadth", 10_000),
    ("3.9.1", ["records=1", "epochs=1", "consumers=1"], ["fetch-from-follower=on"], "breadth", 10_000),
    ("3.9.1", ["records=1", "epochs=2", "consumers=1", "consumer_inflight=1"], [], "breadth", 1_000),
    ("3.9.1", ["records=1", "epochs=2", "consumers=1", "consumer_inflight=1"], [], "depth", 5_000),
    ("kraft-4.1", ["records=1", "epochs=1", "shutdowns=1", "alter_losses=1", "unclean_shutdowns=1",
                   "clean_shutdowns=1", "fences=1", "reassignments=1"], [], "breadth", 10_000),
)


def _flat(table: Any) -> list[Any]:
    return [a for row in table for a in _flat(row)] if isinstance(table, list) else [table]


def _computed(model: KafkaModel, order: str, states: int) -> set[Any]:
    """The actions of the successors of the first ``states`` states reached, breadth or depth first."""
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
    # one name, two tables (the ZooKeeper controller's and the KRaft controller's): both tables' functions
    assert {"_controlled_shutdowns", "_controlled_shutdown_actions"} <= set(ACTION_FUNCTIONS["ProcessControlledShutdown"])


def test_a_table_is_indexed_by_its_parameters_in_order() -> None:
    model = KafkaModel(brokers=3)
    fence = Declared("FenceBroker", "_fence", (("broker", BROKER), ("leader", BROKER_OR_NONE)), ())
    table = action_table(fence, model)
    assert len(table) == 3 and len(table[0]) == 4
    assert table[2][0].params == (("broker", 2), ("leader", -1))
    assert table[1][3].params == (("broker", 1), ("leader", 2))
    with pytest.raises(ValueError, match="no parameter range"):
        action_table(Declared("X", "_x", (("broker", "brokers"),), ()), model)


#: rows of the rule table about the whole model rather than a step (a controller class, the replay of the metadata
#: log, the shape of a record), by the start of their names: no action's functions are named by them
WHOLE_MODEL_RULES = (
    "the KRaft controller: the leader changes the ISR by AlterPartition",
    "brokers replay the metadata log late",
    "one record per batch, one partition",
)


def test_every_rule_of_a_step_is_shown_for_some_declared_action() -> None:
    """The explorer shows a rule on the actions whose declared functions its ``model`` column names
    (``spec.kafka.action_rules``): a rule of a step that no declaration reaches is shown nowhere."""
    from spec.kafka.action_rules import row_functions
    from spec.kafka.rules import RULES

    functions = set().union(*map(set, ACTION_FUNCTIONS.values()))
    shown_nowhere = [rule.name for rule in RULES if not rule.model.startswith("not modelled")
                     and not any({f, f.rsplit(".", 1)[-1]} & functions for f, _ in row_functions(rule.model))]
    assert len(shown_nowhere) == len(WHOLE_MODEL_RULES), shown_nowhere
    assert all(name.startswith(WHOLE_MODEL_RULES) for name in shown_nowhere), shown_nowhere
