"""Small pure updates of a Kafka state's tuples, shared by every action family: replace one broker,
put messages in flight or take one out, truncate a broker's log."""

from __future__ import annotations

from typing import Any

from spec.kafka.log import truncate_cache
from spec.kafka.state import Broker


def replace_broker(brokers: tuple[Broker, ...], i: int, broker: Broker) -> tuple[Broker, ...]:
    return brokers[:i] + (broker,) + brokers[i + 1 :]


def add_messages(network: tuple, *messages: Any) -> tuple:
    return tuple(sorted(network + messages))


def remove_message(network: tuple, message: Any) -> tuple:
    i = network.index(message)
    return network[:i] + network[i + 1 :]


def truncate_broker(b: Broker, offset: int, clean_cache: bool = False) -> Broker:
    """The broker after truncating its log to ``offset`` (HW clamped, later epochs dropped).

    At or beyond the LEO the log is left alone, and so is the epoch cache (Kafka's shortcut in
    ``Log.truncateTo``) unless ``clean_cache`` (KAFKA-10706's fix): then epochs starting at or after
    ``offset`` are dropped too, such as one this broker registered as leader but never wrote in.
    """
    if offset >= len(b.log):
        if clean_cache:
            cache = truncate_cache(b.cache, offset)
            if cache != b.cache:
                return b._replace(cache=cache)
        return b
    return b._replace(log=b.log[:offset], cache=truncate_cache(b.cache, offset), hw=min(b.hw, offset))
