"""Which controller a protocol row runs: the model's control plane, chosen once when the model is
built.

A Kafka cluster of one release runs one controller, and the model says which at construction
(``KafkaModel.__init__``: ``control_plane(features)``), not at every step: each plane below is a
table that names the model's functions it runs where the controllers differ (plain functions of the
model, called with it: ``plane.actions(model, s, out)``, ``.broker_actions(model, s, i, out)``,
``.leader_actions(model, s, i, leader, out)``, ``.apply_leader_and_isr(model, s, m)``,
``.deliveries(model, s, out)``). The shared code calls the plane and never asks which controller it
has; a function reads a feature flag only for a rule of a release, never to pick a controller.

==================  ===============================  ===============================================
plane               rows                             where it differs
==================  ===============================  ===============================================
ZooKeeperController 0.10.2 to 2.2.0 (``alter-isr``   the ZooKeeper controller (``actions_control``); the leader
                    off)                             writes its ISR changes itself (``Partition.updateIsr``)
AlterIsrController  2.8.0 to 3.9.1 (``alter-isr``,   the ZooKeeper controller, and the leader changes the ISR
                    2.7.0+)                          with an AlterIsr request (``actions_alter_partition``, with
                                                     the ZooKeeper controller's
                                                     ``_process_alter_isr`` and
                                                     ``_receive_alter_isr_response``:
                                                     ``actions_alter_isr``)
KRaftController     kraft-3.3 to kraft-4.1 (kraft-*) the KRaft quorum controller: fencing and
                                                     partition changes replayed (``actions_kraft``),
                                                     AlterPartition (``actions_alter_partition``),
                                                     registration and shutdown
                                                     (``actions_broker_lifecycle``)
==================  ===============================  ===============================================

The client behaviour is chosen the same way (``spec.kafka.clients.producer_for``: the producer's
acks).

To add an action family (a reassignment, say): write its actions as model functions in a family
class of their own module (a base of ``KafkaModel``; names no other family uses), guard then effect,
declare them in the module's ``ACTIONS`` (``spec.kafka.declared``: one row an action, added to
``spec.kafka.families.ACTIONS``), and call them from the plane(s) whose controller has them: from
the function a plane names for the controller's actions, a broker's actions or the requests to the
controller, or name a new function of the family in the table. A plane that lacks the family does
not call it; nothing is rebound on the model. A single action that needs no plane's place in the
order (its guard reads the flags it needs) is its function and its row alone: the row names it as
``steps`` (``spec.kafka.declared``), and the model runs it after the planes' actions.
"""  # noqa: E501

from __future__ import annotations

from spec.kafka.actions_alter_isr import AlterIsrActions
from spec.kafka.actions_alter_partition import AlterPartitionActions
from spec.kafka.actions_broker_lifecycle import BrokerLifecycleActions
from spec.kafka.actions_control import ControlPlaneActions
from spec.kafka.actions_data import DataPlaneActions
from spec.kafka.actions_kraft import KRaftControllerActions
from spec.kafka.actions_reassignment import ReassignmentActions
from spec.kafka.protocols import Features


def _no_deliveries(model, s, out) -> None:
    """No request of a leader to the controller: the leader writes the ISR to ZooKeeper itself."""


class ZooKeeperController:
    """The ZooKeeper controller (0.10.2 to 3.9): elections on a broker's death, controlled shutdown,
    bounces noticed by broker epoch (KIP-380); the leader writes its own ISR changes to ZooKeeper
    (``Partition.updateIsr``)."""

    name = "zookeeper"
    actions = staticmethod(ControlPlaneActions._controller_actions)
    broker_actions = staticmethod(ControlPlaneActions._zookeeper_broker_actions)
    leader_actions = staticmethod(DataPlaneActions._leader_actions)
    apply_leader_and_isr = staticmethod(ControlPlaneActions._apply_leader_and_isr)
    deliveries = staticmethod(_no_deliveries)


class AlterIsrController(ZooKeeperController):
    """The ZooKeeper controller with AlterIsr (2.7.0+, ``alter-isr``): the leader's ISR change is a
    request, which the ZooKeeper controller processes (``actions_alter_isr._process_alter_isr``,
    ``_receive_alter_isr_response``)."""

    name = "zookeeper-alter-isr"
    leader_actions = staticmethod(AlterPartitionActions._alter_leader_actions)
    deliveries = staticmethod(AlterIsrActions._alter_isr_deliveries)


class KRaftController:
    """The KRaft quorum controller (``kraft``): fencing by missed heartbeats, registration with
    broker epochs, AlterPartition, partition changes replayed by the brokers."""

    name = "kraft"
    actions = staticmethod(KRaftControllerActions._kraft_controller_actions)
    broker_actions = staticmethod(BrokerLifecycleActions._kraft_broker_actions)
    leader_actions = staticmethod(AlterPartitionActions._alter_leader_actions)
    apply_leader_and_isr = staticmethod(KRaftControllerActions._kraft_apply_leader_and_isr)
    deliveries = staticmethod(AlterPartitionActions._alter_partition_deliveries)


class KRaftReassigningController(KRaftController):
    """The KRaft quorum controller with partition reassignments (bound ``reassignments`` > 0,
    ``spec.kafka.actions_reassignment``): its actions include ReassignPartition, and a broker
    applies a partition change with a replica list (deleting its replica when it is not in it)."""

    name = "kraft-reassigning"
    actions = staticmethod(ReassignmentActions._reassigning_controller_actions)
    apply_leader_and_isr = staticmethod(ReassignmentActions._reassigned_apply_leader_and_isr)


#: every plane: what ``control_plane`` chooses from
PLANES = (ZooKeeperController, AlterIsrController, KRaftController, KRaftReassigningController)


def control_plane(features: Features,
                  reassignments: int = 0) -> ZooKeeperController | KRaftController:
    """The controller of a protocol row, chosen once (``KafkaModel.__init__``); on a KRaft row with
    the bound ``reassignments`` the one that reassigns."""
    if features.kraft:
        return KRaftReassigningController() if reassignments else KRaftController()
    if features.zookeeper_alter_isr:
        return AlterIsrController()
    return ZooKeeperController()
