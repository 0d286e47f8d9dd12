"""Per-broker views of a state: each replica's log (epoch and record of every offset), HW, LEO,
leader epoch and role, so that rendering and explanations can show divergence.

A view is found by the shape of the state, not by importing a model package (``traces`` sits
downhill of ``spec`` and must work for any model): each adapter below recognises the variables of
one family of models and returns ``None`` for any other state.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from traces.values import value_name


class Named(int):
    """An integer state value shown by its name (``FENCED_LEADER_EPOCH``, ``truncating``); equal to
    the int."""

    name: str

    def __new__(cls, value: int, name: str) -> Named:
        out = super().__new__(cls, value)
        out.name = name
        return out

    def __str__(self) -> str:
        return self.name

    __repr__ = __str__


def named(record_type: type, field: str, value: Any) -> Any:
    """``value`` with its name if the module defining ``record_type`` has a table of names for
    ``field``."""
    name = value_name(record_type, field, value)
    return value if name is None else Named(value, name)


@dataclass(frozen=True)
class Entry:
    """One log record: its leader epoch and, when the model has one, the record's identity."""

    epoch: int
    record: Any = None

    def label(self) -> str:
        return f"e{self.epoch}" if self.record is None else f"e{self.epoch}:{self.record}"


@dataclass(frozen=True)
class BrokerView:
    broker: int
    log: tuple[Entry, ...]
    hw: int
    leader_epoch: int | None = None
    role: str = ""  # "leader", "follower", "offline", ...
    #: the epoch cache, (epoch, start offset) pairs, when the model keeps one
    epoch_cache: tuple[tuple[int, int], ...] = ()
    #: position of this broker in the state's per-broker tuples
    index: int = 0
    #: the fetcher's state for the partition by name ("none", "truncating", "fetching"), when the
    #: model has one
    fetcher: str = ""
    #: the broker epoch (KIP-380 generation) of its current registration, when the model has one
    broker_epoch: int | None = None

    @property
    def leo(self) -> int:
        return len(self.log)


@dataclass(frozen=True)
class Divergence:
    """Two replicas whose logs differ at ``offset`` (the first such offset)."""

    a: BrokerView
    b: BrokerView
    offset: int

    @property
    def below_both_hws(self) -> bool:
        return self.offset < min(self.a.hw, self.b.hw)

    def describe(self) -> str:
        def at(view: BrokerView) -> str:
            return view.log[self.offset].label() if self.offset < view.leo else "nothing"

        return (f"brokers {self.a.broker} and {self.b.broker} differ at offset {self.offset} "
                f"(broker {self.a.broker} has {at(self.a)}, broker {self.b.broker} has "
                f"{at(self.b)}; HW {self.a.hw} and {self.b.hw}, LEO {self.a.leo} and {self.b.leo})")


def _field(value: Any, *names: str) -> Any:
    for name in names:
        if hasattr(value, name):
            return getattr(value, name)
    return None


def _entry(record: Any) -> Entry:
    if isinstance(record, int):
        return Entry(record)
    epoch = _field(record, "epoch", "leader_epoch")
    ident = _field(record, "ident", "id", "value", "record", "data")
    return Entry(int(epoch) if epoch is not None else -1, ident)


def _reference_views(state: Any) -> list[BrokerView] | None:
    """Kafka's published TLA+ (spec.reference): replica_log and replica_state per replica."""
    logs = getattr(state, "replica_log", None)
    replicas = getattr(state, "replica_state", None)
    if not isinstance(logs, tuple) or not isinstance(replicas, tuple) or len(logs) != len(replicas):
        return None
    views = []
    for i, (log, rs) in enumerate(zip(logs, replicas, strict=True), start=1):
        leader = _field(rs, "leader")
        role = ("leader" if leader == i else ("follower" if leader is not None and leader >= 1
                                              else ""))
        views.append(BrokerView(i, tuple(_entry(r) for r in log), int(_field(rs, "hw") or 0),
                                _field(rs, "leader_epoch"), role, index=i - 1))
    return views


def _broker_tuple_views(state: Any) -> list[BrokerView] | None:
    """Models with a tuple of broker records, each holding its own log and hw (e.g. ``brokers``)."""
    for name in ("brokers", "replicas", "broker"):
        brokers = getattr(state, name, None)
        if isinstance(brokers, tuple) and brokers and all(hasattr(b, "_fields") for b in brokers):
            break
    else:
        return None
    views = []
    # brokers numbered from 0 (spec.kafka) unless the model says otherwise
    first = int(getattr(state, "first_broker", 0))
    for i, b in enumerate(brokers, start=first):
        log = _field(b, "log", "records")
        if not isinstance(log, tuple):
            return None
        if hasattr(log, "_fields"):  # a log record type of its own: records and an epoch cache
            records = _field(log, "records", "entries") or ()
            cache = _field(log, "epoch_cache", "cache", "epochs") or ()
        else:
            records, cache = log, _field(b, "epoch_cache", "cache", "epochs") or ()
        alive = _field(b, "alive", "up", "online")
        leader = _field(b, "leader")
        role = ("offline" if alive is False else ("leader" if leader == i else "follower"
                                                  if (leader or 0) >= 0 else "no leader"))
        if alive is not False and _field(b, "stopping") is True:
            role += ", stopping"
        hw = _field(b, "hw", "high_watermark")
        epoch = _field(b, "leader_epoch", "epoch")
        fetch = _field(b, "fetch", "fetcher")
        fetcher = "" if fetch is None else str(named(type(b), "fetch", fetch))
        generation = _field(b, "broker_epoch")
        views.append(BrokerView(i, tuple(_entry(r) for r in records), int(hw or 0), epoch, role,
                                tuple(tuple(c) for c in cache if isinstance(c, tuple)), index=i
                                - first,
                                fetcher=fetcher if alive is not False and leader != i else "",
                                broker_epoch=generation))
    return views


#: tried in order; the first that recognises the state wins
ADAPTERS: list[Callable[[Any], list[BrokerView] | None]] = [_reference_views, _broker_tuple_views]


def broker_views(state: Any) -> list[BrokerView] | None:
    for adapter in ADAPTERS:
        try:
            views = adapter(state)
        except (TypeError, ValueError, AttributeError):
            views = None
        if views is not None:
            return views
    return None


def first_divergence(a: BrokerView, b: BrokerView) -> int | None:
    for offset in range(min(a.leo, b.leo)):
        if a.log[offset] != b.log[offset]:
            return offset
    return None


def divergences(views: Sequence[BrokerView]) -> list[Divergence]:
    """Every pair of replicas whose logs differ at a common offset, at the first such offset."""
    out = []
    for i, a in enumerate(views):
        for b in views[i + 1 :]:
            offset = first_divergence(a, b)
            if offset is not None:
                out.append(Divergence(a, b, offset))
    return out


def diverging_offsets(views: Sequence[BrokerView]) -> dict[int, set[int]]:
    """broker -> offsets at which its log differs from another replica's log."""
    out: dict[int, set[int]] = {v.broker: set() for v in views}
    for i, a in enumerate(views):
        for b in views[i + 1 :]:
            for offset in range(min(a.leo, b.leo)):
                if a.log[offset] != b.log[offset]:
                    out[a.broker].add(offset)
                    out[b.broker].add(offset)
    return out
