"""Small pure updates of a Kafka state shared by every action family: put messages in flight or take
one out, replace one broker, truncate a broker's log.

One update idiom: a copy with the named fields changed. Every state, broker and message type has
``with_(**changes)`` (``spec.kafka.state``), so an action reads as
``leader.with_(log=..., hw=...)``. Two layers sit on it and are called the same way, by field name,
for the hot path only:

- ``updater(Broker, "log", "cache")`` (``spec.kafka.state``) is a ``with_`` generated once for a
  fixed set of fields: ``_appended(leader, log=..., cache=...)`` is
  ``leader.with_(log=..., cache=...)``, built without a keyword dictionary (the actions that run on
  most successors use it);
- ``with_broker(s, i, broker, network=..., controller=..., **fields)`` and
  ``with_network(s, network)`` below are ``s.with_(brokers=replace_at(s.brokers, i, broker), ...)``
  and ``s.with_(network=network)``: the two state updates nearly every action makes.

A message is built with its fields named and its kind implied by its class
(``FetchRequest.new(src=i, dst=leader, epoch=..., ...)``, generated once per message type in
``spec.kafka.state``).
"""

from __future__ import annotations

from typing import Any

from spec.kafka.log import truncate_cache
from spec.kafka.state import Broker, Controller, KafkaState, updater


def replace_at(values: tuple, index: int, value: object) -> tuple:
    """``values`` with the item at ``index`` replaced (a broker, a remote LEO, a registered broker
    epoch)."""
    return values[:index] + (value,) + values[index + 1 :]



_new = tuple.__new__
_BROKERS, _CONTROLLER, _NETWORK = (KafkaState._fields.index(name)
                                   for name in ("brokers", "controller", "network"))
# with_broker builds the state's first three fields at once
if (_BROKERS, _CONTROLLER, _NETWORK) != (0, 1, 2):
    raise ImportError("KafkaState must start with brokers, controller, network")
_POSITIONS = {name: position for position, name in enumerate(KafkaState._fields)}


def with_network(s: KafkaState, network: tuple) -> KafkaState:
    """``s`` with another set of messages in flight: what every delivery and every request does, so
    it builds the state directly (``s.with_(network=network)`` without a keyword dictionary)."""
    return _new(KafkaState, (s[_BROKERS], s[_CONTROLLER], network) + s[_NETWORK + 1 :])


def with_broker(s: KafkaState, i: int, broker: Broker, network: tuple | None = None,
                controller: Controller | None = None, **changes: Any) -> KafkaState:
    """``s`` with broker ``i`` replaced (and the network, the controller and any other state fields
    changed). The hot path of every action: it builds the state in one tuple display rather than
    through ``with_``."""
    brokers = list(s[_BROKERS])
    brokers[i] = broker
    if not changes:
        return _new(KafkaState, (tuple(brokers), s[_CONTROLLER] if controller is None
                                 else controller,
                                 s[_NETWORK] if network is None else network) + s[_NETWORK + 1 :])
    values = list(s)
    values[_BROKERS] = tuple(brokers)
    if network is not None:
        values[_NETWORK] = network
    if controller is not None:
        values[_CONTROLLER] = controller
    try:
        for name, value in changes.items():
            values[_POSITIONS[name]] = value
    except KeyError:
        raise TypeError(f"with_broker() got an unexpected keyword argument {name!r}") from None
    return _new(KafkaState, values)


def add_messages(network: tuple, *messages: Any) -> tuple:
    """The network with ``messages`` in flight too (the network is a sorted tuple: a canonical
    set)."""
    return tuple(sorted(network + messages))


def remove_message(network: tuple, message: Any) -> tuple:
    i = network.index(message)
    return network[:i] + network[i + 1 :]


#: the fetcher state after a truncation (Fetching, or still Truncating): generated once
#: (``updater``), the hot path
with_fetch_state = updater(Broker, "fetch")
# Log.truncateTo: generated once (``updater``), the hot path
_truncated = updater(Broker, "log", "hw", "cache")
_truncated_above_hw = updater(Broker, "log", "cache")  # the same before 2.4.0: the HW is left alone
_cache_cleaned = updater(Broker, "cache")
_hw_reset = updater(Broker, "hw")


def truncate_broker(b: Broker, offset: int, clean_cache: bool = False,
                    lowers_hw: bool = True) -> Broker:
    """The broker after ``Log.truncateTo(offset)``: the log cut, later epochs dropped, and
    (``lowers_hw``) the HW clamped to the new LEO.

    At or beyond the LEO the log is left alone, and so is the epoch cache (Kafka's shortcut in
    ``Log.truncateTo``: ``if (targetOffset >= logEndOffset) ... false``) unless ``clean_cache``
    (KAFKA-10706's fix): then epochs starting at or after ``offset`` are dropped too, such as one
    this broker registered as leader but never wrote in.

    ``lowers_hw`` is the ``truncation-lowers-hw`` flag: from 2.4.0 the HW lives in ``Log`` and
    ``Log.updateLogEndOffset`` lowers it
    (``if (highWatermark >= messageOffset) updateHighWatermarkMetadata``, MINOR commit 7a7d4cb5819).
    In 0.10.2 to 2.3.x the HW lives in ``Replica`` and ``Log.truncateTo`` / ``updateLogEndOffset``
    do not touch it (2.3.0 ``ReplicaFetcherThread.truncate`` only warns "Truncating ... below high
    watermark"): the follower's HW stays above its LEO until the next fetch answer sets it to
    min(leader HW, LEO) (``processPartitionData``), a restart reads it back clamped
    (``Partition.getOrCreateReplica``: ``math.min(checkpoint, log.logEndOffset)``), and becoming
    leader resets it (``new_leader_hw``).
    """
    if offset >= len(b.log):
        if clean_cache:
            cache = truncate_cache(b.cache, offset)
            if cache != b.cache:
                return _cache_cleaned(b, cache=cache)
        return b
    if not lowers_hw:
        return _truncated_above_hw(b, log=b.log[:offset], cache=truncate_cache(b.cache, offset))
    return _truncated(b, log=b.log[:offset], hw=min(b.hw, offset),
                      cache=truncate_cache(b.cache, offset))


def new_leader_hw(b: Broker) -> Broker:
    """A follower becoming leader whose HW is above its LEO (possible only without
    ``truncation-lowers-hw``): ``Partition.makeLeader`` (``if (isNewLeader)``) calls
    ``Replica.convertHWToLocalOffsetMetadata``, whose read at the HW fails
    (``OffsetOutOfRangeException``), so the HW becomes the log start offset (1.1.0 to 2.3.x:
    ``convertToOffsetMetadata(logStartOffset)``; 0.10.2 to 1.0.x: ``UnknownOffsetMetadata``, offset
    -1, which no consumer read or HW comparison tells from 0). The model's log starts at 0, so the
    HW becomes 0; the next ``maybeIncrementLeaderHW`` raises it again as the ISR's fetches come
    in."""
    if b.hw > len(b.log):
        return _hw_reset(b, hw=0)
    return b
