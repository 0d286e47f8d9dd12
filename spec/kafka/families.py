"""Every action of the Kafka model, each declared once by its family (``spec.kafka.declared``).

A family module ends with its ``ACTIONS``; this module puts them in the order the model builds their
tables (``KafkaModel.__init__``; ``kmc check --coverage`` lists the actions that never fired in this
order). The model, the explorer's rules of an action (``spec.kafka.action_rules``) and the replay's
"why not" (``spec.kafka.blocked``) read them here, so none of them imports another to find them.
"""

from __future__ import annotations

from spec.kafka import (
    actions_alter_isr,
    actions_alter_partition,
    actions_broker_lifecycle,
    actions_control,
    actions_data,
    actions_kraft,
    actions_reassignment,
    clients,
)
from spec.kafka.declared import Declared

ACTIONS: tuple[Declared, ...] = (actions_control.ACTIONS + actions_data.ACTIONS + clients.ACTIONS
                                 + actions_kraft.ACTIONS
                                 + actions_alter_partition.ACTIONS + actions_alter_isr.ACTIONS
                                 + actions_broker_lifecycle.ACTIONS + actions_reassignment.ACTIONS)
