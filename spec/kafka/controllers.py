"""Which controller a protocol row runs: the model's control plane, chosen once when the model is built.

A Kafka cluster of one release runs one controller, and the model says which at construction
(``KafkaModel.__init__``: ``control_plane(model)``), not at every step: each plane below is a small object
that names the model's functions it runs where the controllers differ. The shared code calls the plane
(``model.control_plane.actions(s, out)``, ``.broker_actions``, ``.leader_actions``, ``.apply_leader_and_isr``,
``.deliveries``) and never asks which controller it has; a function reads a feature flag only for a rule of a
release, never to pick a controller.

==================  ===============================  ===========================================================
plane               rows                             where it differs
==================  ===============================  ===========================================================
ZooKeeperController 0.10.2 to 2.2.0 (``alter-isr``   the ZooKeeper controller (``actions_control``); the leader
                    off)                             writes its ISR changes itself (``Partition.updateIsr``)
AlterIsrController  2.8.0 to 3.9.1 (``alter-isr``,   the ZooKeeper controller, and the leader changes the ISR
                    2.7.0+)                          with an AlterIsr request (``actions_kraft``: the
                                                     AlterPartition families with the ZooKeeper controller's
                                                     ``_process_alter_isr`` and ``_receive_alter_isr_response``)
KRaftController     kraft-3.3, kraft-3.5, kraft-4.1  the KRaft quorum controller (``actions_kraft``): fencing,
                                                     registration, AlterPartition, partition epochs replayed
==================  ===============================  ===========================================================

The client behaviour is chosen the same way (``spec.kafka.clients.producer_for``: the producer's acks).

To add an action family (a reassignment, say): write its actions as model functions in their own module, guard
then effect, and call them from the plane(s) whose controller has them: the controller's own actions from
``actions``, a broker's own actions from ``broker_actions``, a request's delivery from ``deliveries`` (the
messages of the shared planes are delivered by ``KafkaModel._deliveries``). A plane that lacks the family does
not call it; nothing is rebound on the model.
"""

from __future__ import annotations

from typing import Any

from spec.kafka.state import ALTER_PARTITION, ALTER_PARTITION_RESPONSE, Broker, KafkaState, LeaderAndIsr


class ZooKeeperController:
    """The ZooKeeper controller (0.10.2 to 3.9): elections on a broker's death, controlled shutdown, bounces noticed
    by broker epoch (KIP-380); the leader writes its own ISR changes to ZooKeeper."""

    name = "zookeeper"

    def __init__(self, model: Any) -> None:
        self.model = model

    def actions(self, s: KafkaState, out: list) -> None:
        """The controller's own actions (``actions_control._controller_actions``)."""
        self.model._controller_actions(s, out)

    def broker_actions(self, s: KafkaState, i: int, out: list) -> None:
        """A broker's own actions (``KafkaModel._zookeeper_broker_actions``: restart, controlled shutdown, crash,
        bounce)."""
        self.model._zookeeper_broker_actions(s, i, out)

    def leader_actions(self, s: KafkaState, i: int, leader: Broker, out: list) -> None:
        """A leader's own actions (``actions_data._leader_actions``: the ISR written by the leader)."""
        self.model._leader_actions(s, i, leader, out)

    def apply_leader_and_isr(self, s: KafkaState, m: LeaderAndIsr) -> KafkaState:
        """DeliverLeaderAndIsr (``actions_control._apply_leader_and_isr``)."""
        return self.model._apply_leader_and_isr(s, m)

    def deliveries(self, s: KafkaState, out: list) -> None:
        """No request of the leader to the controller: the ISR is written to ZooKeeper by the leader."""


class AlterIsrController(ZooKeeperController):
    """The ZooKeeper controller with AlterIsr (2.7.0+, ``alter-isr``): the leader's ISR change is a request."""

    name = "zookeeper-alter-isr"

    def leader_actions(self, s: KafkaState, i: int, leader: Broker, out: list) -> None:
        """A leader's own actions with its ISR change sent as an AlterIsr (``actions_kraft._alter_leader_actions``)."""
        self.model._alter_leader_actions(s, i, leader, out)

    def deliveries(self, s: KafkaState, out: list) -> None:
        """The ZooKeeper controller processes an AlterIsr; the leader receives the answer (``actions_kraft
        ._process_alter_isr``, ``_receive_alter_isr_response``)."""
        model = self.model
        add = out.append
        for m in s.network:
            if m.kind == ALTER_PARTITION:
                model._process_alter_isr(s, m, add)
            elif m.kind == ALTER_PARTITION_RESPONSE:
                model._receive_alter_isr_response(s, m, add)


class KRaftController:
    """The KRaft quorum controller (``kraft``): fencing by missed heartbeats, registration with broker epochs,
    AlterPartition, partition changes replayed by the brokers."""

    name = "kraft"

    def __init__(self, model: Any) -> None:
        self.model = model

    def actions(self, s: KafkaState, out: list) -> None:
        """The controller's own actions (``actions_kraft._kraft_controller_actions``)."""
        self.model._kraft_controller_actions(s, out)

    def broker_actions(self, s: KafkaState, i: int, out: list) -> None:
        """A broker's own actions (``actions_kraft._kraft_broker_actions``)."""
        self.model._kraft_broker_actions(s, i, out)

    def leader_actions(self, s: KafkaState, i: int, leader: Broker, out: list) -> None:
        """A leader's own actions with its ISR change sent as an AlterPartition (``actions_kraft._alter_leader_actions``)."""
        self.model._alter_leader_actions(s, i, leader, out)

    def apply_leader_and_isr(self, s: KafkaState, m: LeaderAndIsr) -> KafkaState:
        """A partition change replayed (``actions_kraft._kraft_apply_leader_and_isr``)."""
        return self.model._kraft_apply_leader_and_isr(s, m)

    def deliveries(self, s: KafkaState, out: list) -> None:
        """The controller processes an AlterPartition; a leader receives the answer (``actions_kraft
        ._process_alter_partition``, ``_receive_alter_response``)."""
        model = self.model
        add = out.append
        for m in s.network:
            if m.kind == ALTER_PARTITION:
                model._process_alter_partition(s, m, add)
            elif m.kind == ALTER_PARTITION_RESPONSE:
                model._receive_alter_response(s, m, add)


def control_plane(model: Any) -> ZooKeeperController | KRaftController:
    """The controller of the model's protocol row, chosen once (``KafkaModel.__init__``)."""
    features = model.features
    if features.kraft:
        return KRaftController(model)
    if features.zookeeper_alter_isr:
        return AlterIsrController(model)
    return ZooKeeperController(model)
