"""The Kafka model is composed once, when it is built: its controller plane and its producer policy
are plain objects chosen by the protocol row and the constants (``spec.kafka.controllers``,
``spec.kafka.clients``), and no method is bound, rebound or looked up through ``super()`` at run
time."""

from __future__ import annotations

import ast
import inspect
import pathlib
import re

import pytest

from spec.kafka.actions_alter_isr import AlterIsrActions
from spec.kafka.actions_alter_partition import AlterPartitionActions
from spec.kafka.actions_broker_lifecycle import BrokerLifecycleActions
from spec.kafka.actions_control import ControlPlaneActions
from spec.kafka.actions_data import DataPlaneActions
from spec.kafka.actions_kraft import KRaftControllerActions
from spec.kafka.actions_reassignment import ReassignmentActions
from spec.kafka.clients import AllAcks, ClientActions, LeaderAcks, NoAcks
from spec.kafka.controllers import (
    PLANES,
    AlterIsrController,
    KRaftController,
    KRaftReassigningController,
    ZooKeeperController,
)
from spec.kafka.model import KafkaModel
from spec.kafka.protocols import RELEASES

SPEC = pathlib.Path(__file__).resolve().parent.parent / "spec"
#: the model's action families: each defines its own functions, none overrides another's
FAMILIES = (ClientActions, ReassignmentActions, KRaftControllerActions, AlterPartitionActions,
            AlterIsrActions, BrokerLifecycleActions, ControlPlaneActions, DataPlaneActions)
#: client configurations: none, acks=1, acks=all with a consumer, delayed consumer requests
CLIENTS = ({}, {"acks": 1}, {"acks": -1, "consumers": 1}, {"consumers": 1, "consumer_inflight": 1})


def _models():
    for release in RELEASES:
        for clients in CLIENTS:
            yield release.name, clients, KafkaModel(protocol=release.name, **clients)


def functions_on(model: KafkaModel) -> list[str]:
    """The attributes of a model, of its control plane and of its producer policy that are callable
    (the plane's reference to its model aside)."""
    return sorted(f"{type(owner).__name__}.{name}"
                  for owner in (model, model.control_plane, model.producer)
                  for name, value in vars(owner).items() if callable(value) and value is not model)


def test_no_instance_attribute_of_the_model_is_a_function():
    """Nothing callable is stored on a model (a bound method put on the instance would shadow the
    class's and decide at run time which rule runs); its planes hold data and the model, not
    functions either."""
    for protocol, clients, model in _models():
        assert not functions_on(model), (
            f"{protocol} {clients}: functions as attributes: {functions_on(model)}")


def test_the_planes_are_chosen_by_the_protocol_row_and_the_constants():
    for release in RELEASES:
        features = release.features
        expected = (KRaftController if features.kraft else AlterIsrController if features.alter_isr
                    else ZooKeeperController)
        assert type(KafkaModel(protocol=release.name).control_plane) is expected, release.name
        reassigning = KafkaModel(protocol=release.name, reassignments=1).control_plane
        assert type(reassigning) is (KRaftReassigningController if features.kraft
                                     else expected), release.name
    assert ([type(KafkaModel(acks=acks).producer) for acks in (0, 1, -1)]
            == [NoAcks, LeaderAcks, AllAcks])


def test_every_plane_names_a_function_of_the_model_for_every_place_the_controllers_differ():
    slots = ("actions", "broker_actions", "leader_actions", "apply_leader_and_isr", "deliveries")
    functions = {value for cls in FAMILIES for value in vars(cls).values()
                 if inspect.isfunction(value)}
    for plane in PLANES:
        for slot in slots:
            function = getattr(plane, slot)
            assert function in functions or function.__module__ == "spec.kafka.controllers", (
                (plane.__name__, slot))


def test_no_family_overrides_another():
    """Each function of the model is defined once among its families and the model class: the method
    resolution order decides nothing (the engine interface ``spec.model.Model`` is what
    ``KafkaModel`` implements)."""
    owners: dict[str, list[str]] = {}
    for cls in (KafkaModel, *FAMILIES):
        for name, value in vars(cls).items():
            if inspect.isfunction(value) or isinstance(value, (staticmethod, classmethod)):
                owners.setdefault(name, []).append(cls.__name__)
    twice = {name: classes for name, classes in owners.items() if len(classes) > 1}
    assert not twice, f"defined in more than one family: {twice}"


def test_no_method_is_bound_at_run_time_in_the_source():
    """No ``setattr(self, ...)`` anywhere in spec/, and no ``super()`` in the Kafka model's modules
    but ``KafkaModel.describe``'s (which extends the engine interface's, not a family's)."""
    for path in SPEC.rglob("*.py"):
        text = path.read_text()
        assert not re.search(r"setattr\(\s*self\b", text), (
            f"{path.relative_to(SPEC)}: setattr(self, ...)")
        if path.parent.name == "kafka":
            calls = re.findall(r"super\(\)\.(\w+)", text)
            allowed = ["describe"] if path.name == "model.py" else []
            assert calls == allowed, f"{path.relative_to(SPEC)}: super() escapes {calls}"


@pytest.mark.parametrize("rebind", [
    "model._leader_actions = model._alter_leader_actions",
    "model.control_plane.actions = model._kraft_controller_actions",
    "model.producer.appended = lambda t, offset, record: t",
])
def test_the_attribute_check_fails_on_a_rebound_method(rebind: str) -> None:
    """The check above catches a model whose method, plane or policy was rebound after it was
    built."""
    model = KafkaModel(protocol="2.8.0", acks=1)
    assert not functions_on(model)
    # a fixed statement: the rebinding the check must catch
    exec(rebind,  # noqa: S102
         {"model": model})
    assert functions_on(model)


def unnamed_messages(text: str) -> list[str]:
    """The calls in ``text`` that build a message of ``spec.kafka.state`` other than
    ``Cls.new(field=...)``: the class called (positional fields, or keywords through
    ``type.__call__``'s dictionary) or ``new`` given a positional."""
    from spec.kafka import state

    kinds = {name for name, value in vars(state).items() if isinstance(value, type)
             and "kind" in getattr(value, "_fields", ())}
    found = []
    for node in ast.walk(ast.parse(text)):
        if not isinstance(node, ast.Call):
            continue
        if isinstance(node.func, ast.Name) and node.func.id in kinds:
            found.append(f"line {node.lineno}: {node.func.id}(...)")
        elif (isinstance(node.func, ast.Attribute) and node.func.attr == "new"
              and isinstance(node.func.value, ast.Name)
              and node.func.value.id in kinds and node.args):
            found.append(f"line {node.lineno}: {node.func.value.id}.new with a positional field")
    return found


def test_messages_are_built_with_named_fields():
    """``FetchResponse.new(src=i, dst=f, ..., hw=leader.hw, diverging_epoch=UNDEFINED, ...)``: every
    message the model builds names its fields (ten positional values do not say which one is the
    HW), through the generated builder (``spec.kafka.state._install_new``: the class called with
    keywords costs twice the instructions)."""
    for path in (SPEC / "kafka").glob("*.py"):
        found = unnamed_messages(path.read_text())
        assert not found, f"{path.name}: messages not built with Cls.new(field=...): {found}"
    assert (unnamed_messages("FetchResponse(3, 0, 1, 0, 0, 0, (), -1, -1, -1)")
            == ["line 1: FetchResponse(...)"])
    assert (unnamed_messages("StopReplica(kind=6, dst=0, epoch=1, broker_epoch=0, meant=0)")
            == ["line 1: StopReplica(...)"])
    assert unnamed_messages("StopReplica.new(0, epoch=1, broker_epoch=0, meant=0)") == [
        "line 1: StopReplica.new with a positional field"]
    assert not unnamed_messages("StopReplica.new(dst=0, epoch=1, broker_epoch=0, meant=0)")


def test_a_message_built_by_name_is_the_message_of_its_kind():
    from spec.kafka.state import _MESSAGE_CLASS

    for kind, cls in _MESSAGE_CLASS.items():
        values = {name: index for index, name in enumerate(cls._fields) if name != "kind"}
        built = cls.new(**values)
        assert type(built) is cls and built == cls(kind, *values.values()), cls.__name__
        with pytest.raises(TypeError):
            cls.new(kind=kind, **values)  # the kind is the class's
