"""The Kafka replication model (``kmc check kafka``).

(Design summary: see the end of this docstring; filled in as the model settles.)
"""

from __future__ import annotations

from typing import Any

from invariants.registry import add_family
from spec.kafka.model import DEFAULTS, KafkaModel
from spec.kafka.protocols import DEFAULT_PROTOCOL, FLAGS, PROTOCOLS, resolve
from spec.registry import Constant, ModelInfo, register

__all__ = ["KafkaModel", "build", "INFO"]

add_family("kafka", "invariants.kafka_log_matching", "invariants.kafka_durability", "invariants.kafka_sanity")


def build(constants: dict[str, Any], protocol: str = DEFAULT_PROTOCOL, features: dict[str, bool] | None = None):
    return KafkaModel(
        brokers=constants.get("brokers", DEFAULTS["brokers"]),
        records=constants.get("records", DEFAULTS["records"]),
        epochs=constants.get("epochs", DEFAULTS["epochs"]),
        crashes=constants.get("crashes", DEFAULTS["crashes"]),
        inflight=constants.get("inflight", DEFAULTS["inflight"]),
        protocol=protocol,
        features=resolve(protocol, features),
    )


INFO = register(
    ModelInfo(
        name="kafka",
        description="Kafka replication of one partition: produce, fetch, truncation, elections, crashes",
        constants=(
            Constant("brokers", DEFAULTS["brokers"], "brokers, each holding a replica", int, minimum=1, maximum=5),
            Constant("records", DEFAULTS["records"], "records produced, at most", int, minimum=0, maximum=8),
            Constant("epochs", DEFAULTS["epochs"], "highest leader epoch (elections: epoch 0 is the first)", int,
                     minimum=0, maximum=8),
            Constant("crashes", DEFAULTS["crashes"], "broker crashes, at most", int, minimum=0, maximum=8),
            Constant("inflight", DEFAULTS["inflight"], "broker requests and responses in flight, at most (0: no bound)",
                     int, minimum=0, maximum=16),
        ),
        build=build,
        protocols={name: text for name, (text, _) in PROTOCOLS.items()},
        default_protocol=DEFAULT_PROTOCOL,
        features=dict(FLAGS),
    )
)
