"""Kafka's published TLA+ replication specifications, checked state for state like TLC.

The models ``tla:KafkaTruncateToHighWatermark``, ``tla:Kip101``, ``tla:Kip279``,
``tla:Kip320FirstTry`` and ``tla:Kip320`` translate the modules of the same names (with the
``KafkaReplication`` module they extend) from the public ``kafka-specification`` repository. Their
constants are the TLA+ ones: ``Replicas=N`` stands for the set of N model values ``r1 .. rN``.
Invariants (``invariants.reference``): TypeOk, WeakIsr, StrongIsr and LogMatching.
"""

from __future__ import annotations

from spec.reference.base import KafkaReplication, KafkaState, LogRecord, QuorumState, ReplicaState
from spec.reference.kip101 import Kip101
from spec.reference.kip279 import Kip279
from spec.reference.kip320 import Kip320
from spec.reference.kip320_first_try import Kip320FirstTry
from spec.reference.truncate_to_hw import KafkaTruncateToHighWatermark
from spec.registry import Constant, ModelInfo, register

VARIANTS: dict[str, type[KafkaReplication]] = {
    cls.module: cls for cls in (KafkaTruncateToHighWatermark, Kip101, Kip279, Kip320FirstTry,
                                Kip320)
}

_DESCRIPTIONS = {
    "KafkaTruncateToHighWatermark": "published TLA+ spec: followers truncate to their high "
                                    "watermark (pre KIP-101)",
    "Kip101": "published TLA+ spec: followers truncate using the leader epoch (KIP-101)",
    "Kip279": "published TLA+ spec: followers truncate to the last matching offset (KIP-279)",
    "Kip320FirstTry": "published TLA+ spec: first attempt at epoch-fenced fetching (KIP-320, "
                      "flawed)",
    "Kip320": "published TLA+ spec: epoch-fenced fetch, high watermark, ISR and truncation "
              "(KIP-320)",
}

CONSTANTS = (
    Constant("Replicas", 2, "number of replicas (the set r1 .. rN)", int, minimum=1, maximum=9),
    Constant("LogSize", 2, "capacity of each replica's log", int, minimum=1, maximum=9),
    Constant("MaxRecords", 2, "how many records producers may write in all", int, minimum=0,
             maximum=9),
    Constant("MaxLeaderEpoch", 2, "the largest leader epoch the controller may use", int, minimum=0,
             maximum=9),
)


def build(module: str, constants: dict) -> KafkaReplication:
    return VARIANTS[module](
        replicas=constants["Replicas"],
        log_size=constants["LogSize"],
        max_records=constants["MaxRecords"],
        max_leader_epoch=constants["MaxLeaderEpoch"],
    )


def _builder(module: str):
    return lambda constants: build(module, constants)


for _module in VARIANTS:
    register(ModelInfo(f"tla:{_module}", _DESCRIPTIONS[_module], CONSTANTS, _builder(_module)))

__all__ = [
    "VARIANTS",
    "KafkaReplication",
    "KafkaState",
    "LogRecord",
    "QuorumState",
    "ReplicaState",
    "build",
]
