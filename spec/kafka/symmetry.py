"""Symmetry over broker ids for the Kafka model (``kmc check kafka --symmetry``).

Which permutations are valid
----------------------------
Every renaming of broker ids (the whole group S_n) maps a step of the model to a step of the model
and keeps every invariant's verdict: no action or property tells one broker id from another. Where
Kafka itself does, the model over-approximates, and that is what makes the ids interchangeable:

* Elections. Kafka's controller elects the first live ISR member *in assignment order*: 0.10.2
  ``OfflinePartitionLeaderSelector``
  (``liveAssignedReplicas.filter(liveBrokersInIsr.contains).head``), 2.x
  ``PartitionLeaderElectionAlgorithms.offlinePartitionLeaderElection``
  (``assignment.find(id => liveReplicas.contains(id) && isr.contains(id))``),
  ``controlledShutdownPartitionLeaderElection`` (the same, skipping the shutting-down brokers) and
  ``preferredReplicaPartitionLeaderElection`` (``assignment.headOption``), all in
  ``core/src/main/scala/kafka/controller/PartitionStateMachine.scala``. The model elects *any*
  eligible replica (ElectLeader, PreferredLeaderElection, UncleanLeaderElection,
  ProcessControlledShutdown): every choice is the first one of some assignment order, so the model's
  behaviours include those of every assignment (it also includes runs that change their mind about
  the order between two elections, which no single assignment gives: an over-approximation, listed
  in the rule table). A model that followed one fixed assignment order would leave only the identity
  valid.
* The ISR and every set of ids are sorted tuples (Kafka keeps an ordered list; the model reads it as
  a set), the network is a sorted tuple (a set of messages), and successors are computed for every
  broker alike, so no order of ids reaches the transition relation.
* The initial state is not symmetric: broker 0 leads epoch 0. That does not restrict the valid
  permutations (a reduction needs the transition relation and the properties to commute with the
  renaming, not the initial state); it is why the search meets fewer renamings than n! (broker 0's
  history stays apart until a crash, a bump or a second election mixes it with the others').

``tests/test_symmetry.py`` checks the commutation on sampled reachable states of several releases
(which also catches a broker id kept in a field that is not renamed here).

What three brokers reduce by (``bench/orbit_sizes.py``)
-------------------------------------------------------
The unreduced search keeps about 2 states an orbit on three brokers (2.03 on 2.1.0 records=1
epochs=1 crashes=1), not 6, and the cause is the unreduced search, not the reduction. The orbits are
whole: 99.8% of those met have 6 states (the others 3: two brokers alike), and the reduced search
stores exactly one state an orbit (no orbit is left in pieces: the canonical form is the same for
every renaming). But the one initial state names broker 0 the first leader, and the states remember
it (who leads, whose cache holds which epoch, who is in the ISR), so of each orbit the unreduced
search meets only the 2 states that the renamings fixing broker 0 give (2.1.0 records=1 epochs=0
crashes=1: every one of the 15,795 orbits of 6; with epochs=1 crashes=1, 0.6% of the orbits met hold
4 or 6, where a crash and an election mixed the histories). Nothing here is inessential: a symmetric
start (any broker the first leader) would triple the unreduced count and leave the orbits, the
reduced search's count, as they are. Fewer states than one an orbit need another reduction (partial
order).

When it reduces nothing
----------------------
With one broker the group is trivial: ``reduces_nothing`` says so before a search, and
``kmc check --symmetry`` prints one warning line. With two brokers the group has two elements and
the reduction depends on the bounds: broker 0 led epoch 0 and broker 1 did not, and the state keeps
that (who leads which epoch, who reconciled in it, which epochs each cache holds) until crashes mix
their histories. Measured (2.1.0, records=1, epochs=2, crashes=1): 29,254 -> 27,646 distinct states;
4.1.0, epochs=3, crashes=2: 221,135 -> 185,291; but 2.1.0, epochs=3, crashes=0, bumps=1: 93,791
both. Whether a bound reduces is only known after the search, so two brokers get no warning.

How a state is renamed and canonicalised
----------------------------------------
A broker id occurs in a broker's ``leader``, ``isr``, ``remote`` (indexed by id) and
``pending_diverging`` (its first item), in the controller's ``leader``, ``isr`` and ``registered``
(indexed by id), in every message's ``src``/``dst`` (and a LeaderAndIsr's ``leader`` and ``isr``),
and in a consumer's ``leader``; records, epochs, offsets and the ghosts carry none. The fields are
found by name (``ID_FIELDS``, ``SET_FIELDS``, ``INDEXED_FIELDS``, ``FIRST_ID_FIELDS``) and one
renaming function is generated per class, so a new message type or field is renamed without a change
here as long as it follows these names.

``canonical`` sorts the brokers by a signature computed from the state's own fields (the broker's
id-free fields, whether it leads in its own view and in the controller's, its registration and its
ISR membership at the controller: what a renaming carries along with the broker). Distinct
signatures already sorted (the common case: the engine expands canonical states, so most successors
keep the order) return the state itself with no renaming; otherwise the least image among the
renamings that sort the signatures is the canonical form (one renaming when all signatures differ).
That is the exact canonical form of ``spec.symmetry``; ``bench/symmetry_bench.py`` measures its cost
a successor.
"""

from __future__ import annotations

from itertools import islice
from operator import itemgetter
from operator import lt as _less
from typing import Any

from spec.kafka.state import STATE_TYPES, Broker, Controller, KafkaState
from spec.symmetry import Perm, candidate_permutations

_new = tuple.__new__

#: field names that hold a broker id (-1: none), a sorted tuple of broker ids, or a tuple indexed by
#: broker id, in any state, broker, controller or message NamedTuple; every other field is id-free
ID_FIELDS = frozenset({"leader", "src", "dst"})
# replicas: () is every broker
SET_FIELDS = frozenset({"isr", "committed_isr", "elr", "replicas", "adding", "removing"})
INDEXED_FIELDS = frozenset({"remote", "registered", "remote_epochs", "broker_epochs"})
#: tuples whose first item is a broker id (or empty): a follower's pending diverging epoch names the
#: leader that answered
# and a consumer's request or answer in flight
FIRST_ID_FIELDS = frozenset({"pending_diverging", "inflight"})


def _id_set(ids: tuple[int, ...], p: tuple[int, ...]) -> tuple[int, ...]:
    """A sorted tuple of ids, renamed (``p`` is the permutation)."""
    if len(ids) < 2:
        return (p[ids[0]],) if ids else ids
    return tuple(sorted([p[i] for i in ids]))


def _renamer(cls: type) -> Any:
    """``rename(value, p, inv)`` for instances of ``cls``: every id i becomes p[i]. ``p`` carries -1
    as its last item so that ``p[-1] == -1`` (no broker stays no broker) without a test; ``inv`` is
    the inverse permutation, which reorders a tuple indexed by id in one comprehension. None if
    ``cls`` has no id."""
    parts, bearing = [], False
    for position, name in enumerate(cls._fields):
        v = f"v[{position}]"
        if name in ID_FIELDS:
            parts.append(f"p[{v}]")
        elif name in SET_FIELDS:
            parts.append(f"_id_set({v}, p)")
        elif name in INDEXED_FIELDS:
            parts.append(f"(tuple([{v}[k] for k in inv]) if {v} else {v})")
        elif name in FIRST_ID_FIELDS:
            parts.append(f"(((p[{v}[0]],) + {v}[1:]) if {v} else {v})")
        else:
            parts.append(v)
            continue
        bearing = True
    if not bearing:
        return None
    namespace = {"_new": _new, "cls": cls, "_id_set": _id_set}
    exec(f"def rename(v, p, inv):\n    return _new(cls, ({', '.join(parts)},))\n",  # noqa: S102
         namespace)
    return namespace["rename"]


_RENAME: dict[type, Any] = {cls: _renamer(cls) for cls in STATE_TYPES if cls is not KafkaState}
_RENAME_BROKER = _RENAME[Broker]
_RENAME_CONTROLLER = _RENAME[Controller]
_BROKERS, _CONTROLLER, _NETWORK, _CONSUMERS = (KafkaState._fields.index(name)
                                               for name in ("brokers", "controller", "network",
                                                            "consumers"))
# permute rebuilds the state as (these three) + the rest
assert (_BROKERS, _CONTROLLER, _NETWORK) == (0, 1, 2)
#: a broker's id-free fields, in one C call
_FREE = itemgetter(*[i for i, name in enumerate(Broker._fields)
                     if name not in ID_FIELDS | SET_FIELDS | INDEXED_FIELDS | FIRST_ID_FIELDS])
_LEADER = Broker._fields.index("leader")
_C_LEADER, _C_REGISTERED, _C_ISR = (Controller._fields.index(name)
                                    for name in ("leader", "registered", "isr"))
_IDENTITY = {n: tuple(range(n)) for n in range(1, 9)}


#: renamed brokers and networks, by (value, inverse permutation): a successor shares all but one
#: broker and most messages with its parent, so the same renamings recur (99% hits measured on three
#: brokers); cleared when it reaches ``_CACHE_LIMIT`` entries, so it stays small. Its entries hold
#: their networks and brokers alive in every process that searches (each parallel worker its own):
#: at 65,536 entries it was about 25 MB a process on the three-broker goal configuration; 4,096 keep
#: the hits of siblings, which is where they come from (bench/NOTES.md, "Parallel workers' memory at
#: the goal configuration")
_RENAMED: dict[tuple, Any] = {}
_CACHE_LIMIT = 1 << 12


def _permute(s: KafkaState, p: tuple[int, ...], inv: tuple[int, ...]) -> KafkaState:
    cache = _RENAMED
    if len(cache) >= _CACHE_LIMIT:
        cache.clear()
    brokers = []
    for k in inv:
        b = s[0][k]
        key = (b, inv)
        renamed = cache.get(key)
        if renamed is None:
            renamed = cache[key] = _RENAME_BROKER(b, p, inv)
        brokers.append(renamed)
    network = s[2]
    if network:
        key = (network, inv)
        renamed = cache.get(key)
        if renamed is None:
            rename = _RENAME
            renamed = cache[key] = tuple(sorted([rename[type(m)](m, p, inv) for m in network]))
        network = renamed
    controller = s[1]
    head = (tuple(brokers), _RENAME_CONTROLLER(controller, p, inv), network)
    renamed = _new(KafkaState, head + s[3:])
    consumers = s[_CONSUMERS]
    if consumers:  # a consumer's leader is a broker id (consumers themselves are not permuted)
        rename_consumer = _RENAME[type(consumers[0])]
        renamed = renamed.with_(consumers=tuple([rename_consumer(c, p, inv) for c in consumers]))
    return renamed


def _inverse(perm: Perm) -> tuple[int, ...]:
    inv = [0] * len(perm)
    for old, new in enumerate(perm):
        inv[new] = old
    return tuple(inv)


def permute(s: KafkaState, perm: Perm) -> KafkaState:
    """Broker i renamed perm[i] everywhere (brokers reordered, ids renamed, the network
    re-sorted)."""
    return _permute(s, tuple(perm) + (-1,), _inverse(perm))


def signatures(s: KafkaState) -> list[tuple]:
    """Each broker without its ids: what a renaming carries along with it (``signature`` of every
    broker)."""
    controller = s[_CONTROLLER]
    leader, registered, isr = controller[_C_LEADER], controller[_C_REGISTERED], controller[_C_ISR]
    return [(_FREE(b), b[_LEADER] == i, leader == i, registered[i], i in isr)
            for i, b in enumerate(s[_BROKERS])]


def signature(s: KafkaState, i: int) -> tuple:
    """Broker i without its ids (``signatures(s)[i]``)."""
    return signatures(s)[i]


def canonical(s: KafkaState) -> KafkaState:
    """The least renaming of ``s`` among those that sort the broker signatures (``s`` itself,
    unrenamed, when its signatures are distinct and already sorted)."""
    sigs = signatures(s)
    n = len(sigs)
    # strictly increasing: distinct and sorted, one comparison a pair (the common case, no renaming)
    if n == 3:
        if sigs[0] < sigs[1] < sigs[2]:
            return s
    elif all(map(_less, sigs, islice(sigs, 1, None))):
        return s
    ordered = True
    tied = False
    for i in range(n - 1):
        a, b = sigs[i], sigs[i + 1]
        if a == b:
            tied = True
        elif b < a:
            ordered = False
    order = sorted(range(n), key=sigs.__getitem__)  # order[new position] = old id
    if not ordered:  # equal signatures need not have been neighbours before the sort
        tied = any(sigs[order[i]] == sigs[order[i + 1]] for i in range(n - 1))
    if not tied:
        return _permute(s, _inverse(tuple(order)) + (-1,), tuple(order))
    # equal signatures (rare: 1.5% of successors on three brokers): the least of their renamings
    best = None
    for perm in candidate_permutations(sigs):
        image = s if perm == _IDENTITY[n] else _permute(s, perm + (-1,), _inverse(perm))
        if best is None or image < best:
            best = image
    return best


def reduces_nothing(brokers: int) -> str | None:
    """Why ``--symmetry`` cannot reduce this configuration, decided from the model before any search
    (see the module doc), or None."""
    if brokers < 2:
        return "one broker has no other id to rename it to"
    return None
