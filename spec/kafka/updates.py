"""Small pure updates of a Kafka state's tuples, shared by every action family: replace one broker,
put messages in flight or take one out, truncate a broker's log.

These run once or more per successor, so they build the NamedTuples positionally with
``tuple.__new__`` (NamedTuple ``_replace`` builds a keyword dictionary and goes through Python-level
``_make``). The positions are checked against the field names below, at import.
"""

from __future__ import annotations

from typing import Any

from spec.kafka.log import truncate_cache
from spec.kafka.state import Broker, Controller, KafkaState

_new = tuple.__new__

#: the field positions the positional builders of this package rely on (the literal indices in
#: ``b[:7] + (fetch,) + b[8:]`` and the like): a reordered or added field fails here, at import
BROKER_FIELDS = ("alive", "log", "hw", "cache", "leader", "epoch", "isr", "fetch", "remote", "broker_epoch", "stopping",
                 "incarnation", "stale")
STATE_FIELDS = ("brokers", "controller", "network", "produced", "crashes", "bumps", "shutdowns", "bounces", "committed")
if Broker._fields != BROKER_FIELDS or KafkaState._fields != STATE_FIELDS \
        or Controller._fields != ("leader", "epoch", "isr", "registered"):
    raise ImportError("spec.kafka.updates: the positional builders no longer match the state's fields")


def with_network(s: KafkaState, network: tuple) -> KafkaState:
    """``s._replace(network=network)``"""
    return _new(KafkaState, (s[0], s[1], network) + s[3:])


def with_brokers(s: KafkaState, brokers: tuple, network: tuple) -> KafkaState:
    """``s._replace(brokers=brokers, network=network)``"""
    return _new(KafkaState, (brokers, s[1], network) + s[3:])


def with_controller(s: KafkaState, controller: Controller, network: tuple) -> KafkaState:
    """``s._replace(controller=controller, network=network)``"""
    return _new(KafkaState, (s[0], controller, network) + s[3:])


def with_fetch(b: Broker, fetch: int) -> Broker:
    """``b._replace(fetch=fetch)``"""
    return _new(Broker, b[:7] + (fetch,) + b[8:])


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
                return _new(Broker, b[:3] + (cache,) + b[4:])
        return b
    hw = b[2]
    return _new(Broker, (b[0], b[1][:offset], hw if hw < offset else offset, truncate_cache(b[3], offset)) + b[4:])
