"""Symmetry over broker ids for the Kafka model (``kmc check kafka --symmetry``).

Brokers are interchangeable: no action or invariant treats one broker id differently from
another (broker 0 leads initially, but the transition relation and the properties commute with
renaming). A broker id occurs in a broker's ``leader``, ``isr`` and ``remote`` (indexed by id),
in the controller's ``leader`` and ``isr``, and in every message's ``src``/``dst`` (and a
LeaderAndIsr's ``leader`` and ``isr``); records, epochs, offsets and the committed ghost carry
none. ``permute`` renames all of them and re-sorts the network; ``canonical`` is the least
renaming (``checker.symmetry.canonicalize``), with brokers first sorted by what they hold apart
from ids (log, HW, epoch cache, epoch, fetcher state, liveness, incarnation, whether they lead).

The id-bearing fields are found by name (``ID_FIELDS``, ``SET_FIELDS``, ``INDEXED_FIELDS``), so new
message types and broker fields are renamed without changes here as long as they follow these
names; the tests check that the model's successor relation commutes with ``permute``, which
catches an id hidden in a field of another name.
"""

from __future__ import annotations

from checker.symmetry import Perm, canonicalize, reindex, rename
from spec.kafka.state import KafkaState

_tuple_new = tuple.__new__
_BROKERS, _CONTROLLER, _NETWORK, _CONSUMERS = (KafkaState._fields.index(name)
                                               for name in ("brokers", "controller", "network", "consumers"))

#: field names that hold a broker id (-1: none), a sorted tuple of broker ids, or a tuple indexed by
#: broker id, in any state, broker, controller or message NamedTuple; every other field is id-free
ID_FIELDS = frozenset({"leader", "src", "dst"})
SET_FIELDS = frozenset({"isr", "committed_isr", "elr"})
INDEXED_FIELDS = frozenset({"remote", "registered", "remote_epochs", "broker_epochs"})
#: tuples whose first item is a broker id (or empty): a follower's pending diverging epoch names the leader
#: that answered
FIRST_ID_FIELDS = frozenset({"pending_diverging"})


_ID, _SET, _INDEXED, _FIRST_ID = 0, 1, 2, 3
#: class -> ((field position, kind), ...) for its id-bearing fields; positions of the id-free fields
_LAYOUT: dict[type, tuple[tuple[tuple[int, int], ...], tuple[int, ...]]] = {}


def _layout(cls: type) -> tuple[tuple[tuple[int, int], ...], tuple[int, ...]]:
    found = _LAYOUT.get(cls)
    if found is None:
        bearing, free = [], []
        for position, name in enumerate(cls._fields):
            if name in ID_FIELDS:
                bearing.append((position, _ID))
            elif name in SET_FIELDS:
                bearing.append((position, _SET))
            elif name in INDEXED_FIELDS:
                bearing.append((position, _INDEXED))
            elif name in FIRST_ID_FIELDS:
                bearing.append((position, _FIRST_ID))
            else:
                free.append(position)
        found = _LAYOUT[cls] = (tuple(bearing), tuple(free))
    return found


def _rename_fields(value: tuple, perm: Perm) -> tuple:
    bearing = _layout(type(value))[0]
    if not bearing:
        return value
    items = list(value)
    for position, kind in bearing:
        old = items[position]
        if kind == _ID:
            if old >= 0:
                items[position] = perm[old]
        elif kind == _SET:
            items[position] = rename(old, perm)
        elif kind == _FIRST_ID:
            if old:
                items[position] = (perm[old[0]],) + old[1:]
        else:
            items[position] = reindex(old, perm)
    return _tuple_new(type(value), items)


def permute(s: KafkaState, perm: Perm) -> KafkaState:
    """Broker i renamed perm[i] everywhere (brokers reordered, ids renamed, the network re-sorted)."""
    brokers = [None] * len(s.brokers)
    for i, b in enumerate(s.brokers):
        brokers[perm[i]] = _rename_fields(b, perm)
    network = tuple(sorted([_rename_fields(m, perm) for m in s.network]))
    items = list(s)
    items[_BROKERS], items[_CONTROLLER], items[_NETWORK] = tuple(brokers), _rename_fields(s.controller, perm), network
    if s.consumers:  # a consumer's leader is a broker id (consumers themselves are not permuted)
        items[_CONSUMERS] = tuple([_rename_fields(c, perm) for c in s.consumers])
    return _tuple_new(KafkaState, items)


def signature(s: KafkaState, i: int) -> tuple:
    """Broker i without its ids: what a renaming carries along with it."""
    b = s.brokers[i]
    free = _layout(type(b))[1]
    return tuple([b[p] for p in free]) + (b.leader == i, s.controller.leader == i)


def canonical(s: KafkaState) -> KafkaState:
    return canonicalize(s, len(s.brokers), permute, signature)
