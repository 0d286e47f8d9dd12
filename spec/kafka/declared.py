"""An action of the Kafka model, declared once, by its family.

Each action family (``spec.kafka.actions_control``, ``actions_data``, ``actions_kraft``,
``actions_alter_partition``, ``actions_alter_isr``, ``actions_broker_lifecycle``,
``actions_reassignment``, ``clients``) ends with ``ACTIONS``, one row an action: its name, the model
attribute holding its ``Action`` values (built once, so a successor allocates no action), its
parameters with the range each takes, and the model functions that compute it as the rule table's
``model`` column names them (``spec.kafka.rules``). ``KafkaModel.__init__`` builds its action tables
from these rows (``build_action_tables``) and ``spec.kafka.action_rules`` its map of an action to
its functions (``action_functions``). Adding an action is its function and one row: a function a
control plane calls (``spec.kafka.controllers``: the row's ``functions``), or one the row names as
its own ``steps``, which the model runs for every state.

A row also says what a reader of the action needs beside its code: the rules of the rule table it
follows, by id (``rules``: on every controller; ``kraft_rules``: on the KRaft rows only,
``spec.kafka.rules.RULE_IDS``), the protocol flags its functions read (``flags``), and for the
replay's "why not" (``spec.kafka.blocked``) the parameter naming the broker that acts (``actor``),
whether only the leader takes it (``leader_only``) and the message it consumes (``consumes``). The
explorer's rules of an action (``spec.kafka.action_rules``) and ``blocked``'s maps are read from
these rows; an unknown rule id, flag or parameter is refused when the row is built.

A table is indexed by its parameters in order, each from the first value of its range:
``model._fence[b][x + 1]`` is ``FenceBroker(broker=b, leader=x)`` (``x`` from -1, no leader).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, NamedTuple

from spec.kafka.protocols import FLAGS
from spec.kafka.rules import RULE_IDS
from spec.model import Action

#: the ranges a parameter takes: a broker id (0 .. brokers - 1), a broker id or -1 (no leader, no
#: replica), a leader epoch (0 .. epochs), a count of records kept (0 .. records), a consumer (0 ..
#: consumers - 1)
BROKER, BROKER_OR_NONE, EPOCH, KEEP, CONSUMER = ("broker", "broker-or-none", "epoch", "keep",
                                                 "consumer")


class Consumes(NamedTuple):
    """The message a step consumes: its type, the parameters naming its sender and its receiver
    (None: the controller), and Kafka's name of it
    (``Consumes("FetchRequest", "follower", "leader", "Fetch request")``)."""

    message: str
    sender: str | None
    receiver: str | None
    words: str


@dataclass(frozen=True)
class Declared:
    """One action of a family:
    ``Declared("ShrinkIsr", "_shrink", (("leader", BROKER), ("follower", BROKER)), ("_isr_change_action", ...), rules=("kafka-7152", ...), flags=(...), actor="leader", leader_only=True)``."""  # noqa: E501

    name: str
    table: str
    params: tuple[tuple[str, str], ...]
    functions: tuple[str, ...]
    rules: tuple[str, ...] = ()
    kraft_rules: tuple[str, ...] = ()
    flags: tuple[str, ...] = ()
    actor: str = ""
    leader_only: bool = False
    consumes: Consumes | None = None
    #: an action no control plane calls (``spec.kafka.controllers``): its own function,
    #: ``steps(model, state, out)``, which appends its enabled ``(action, successor)`` pairs to
    #: ``out``; the model runs it for every state after the planes' actions
    #: (``KafkaModel.successors``). Such an action is its function and this row, nothing else
    steps: Callable[[Any, Any, list], None] | None = None

    def __post_init__(self) -> None:
        unknown = [r for r in self.rules + self.kraft_rules if r not in RULE_IDS]
        if unknown:
            raise ValueError(f"{self.name}: no rule {unknown[0]!r} in spec.kafka.rules (a rule's "
                             f"id is its flag, or the id= it is given there)")
        unknown = [f for f in self.flags if f not in FLAGS]
        if unknown:
            raise ValueError(f"{self.name}: no flag {unknown[0]!r} in spec.kafka.protocols.FLAGS")
        names = [p for p, _ in self.params]
        for param in (self.actor, *(self.consumes[1:3] if self.consumes else ())):
            if param and param not in names:
                raise ValueError(f"{self.name}: no parameter {param!r} (its parameters: "
                                 f"{', '.join(names)})")


def _values(domain: str, model: Any) -> range:
    if domain == BROKER:
        return range(model.brokers)
    if domain == BROKER_OR_NONE:
        return range(-1, model.brokers)
    if domain == EPOCH:
        return range(model.epochs + 1)
    if domain == KEEP:
        return range(model.records + 1)
    if domain == CONSUMER:
        return range(model.consumers)
    raise ValueError(f"no parameter range {domain!r}")


def action_table(declared: Declared, model: Any) -> list[Any]:
    """The nested lists of ``declared``'s actions at ``model``'s bounds, one level a parameter."""
    ranges = [(param, _values(domain, model)) for param, domain in declared.params]

    def level(depth: int, bound: tuple[tuple[str, int], ...]) -> list[Any]:
        param, values = ranges[depth]
        if depth == len(ranges) - 1:
            return [Action(declared.name, bound + ((param, v),)) for v in values]
        return [level(depth + 1, bound + ((param, v),)) for v in values]

    return level(0, ())


def build_action_tables(model: Any, declarations: Iterable[Declared]) -> None:
    """Set each declared table on ``model`` (its bounds set first), in declaration order."""
    for declared in declarations:
        setattr(model, declared.table, action_table(declared, model))


def action_rules(declarations: Iterable[Declared], kraft: bool) -> dict[str, tuple[str, ...]]:
    """Action name -> the ids of the rules it follows on a ZooKeeper row (``kraft`` False) or a
    KRaft row, over every table of that name, in declaration order."""
    out: dict[str, tuple[str, ...]] = {}
    for declared in declarations:
        known = out.get(declared.name, ())
        ids = declared.rules + (declared.kraft_rules if kraft else ())
        out[declared.name] = known + tuple(r for r in ids if r not in known)
    return out


def action_functions(declarations: Iterable[Declared]) -> dict[str, tuple[str, ...]]:
    """Action name -> the functions computing it, over every table of that name
    (``ProcessControlledShutdown`` has the ZooKeeper controller's and the KRaft controller's), in
    declaration order."""
    out: dict[str, tuple[str, ...]] = {}
    for declared in declarations:
        known = out.get(declared.name, ())
        out[declared.name] = known + tuple(f for f in declared.functions if f not in known)
    return out
