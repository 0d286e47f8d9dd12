"""Committed records are durable: every record a leader's high watermark passed is at its offset
in the log of the current leader (the broker that leads in the controller's current epoch).

The model keeps the ghost ``committed``: (offset, epoch, ident) of every record some leader's HW
has passed. Expected to break under unclean leader election (``--feature unclean=on``): a replica
outside the ISR may become leader without the committed records; that is the trade unclean
election makes.
"""

from __future__ import annotations

from checker.invariant import Invariant
from invariants.registry import register


def current_leader(state) -> int:
    """The broker that has applied the controller's current epoch as its leader, or -1."""
    ctrl = state.controller
    i = ctrl.leader
    if i < 0:
        return -1
    b = state.brokers[i]
    if b.alive and b.leader == i and b.epoch == ctrl.epoch:
        return i
    return -1


def first_missing_at_leader(state, entries) -> tuple[int, tuple[int, int, int]] | None:
    """(current leader, first entry) of ``entries`` ((offset, epoch, ident) ghosts: committed,
    acknowledged) that is not at its offset in the current leader's log, or None (also when no
    leader is settled)."""
    i = current_leader(state)
    if i < 0:
        return None
    log = state.brokers[i].log
    for entry in entries:
        offset, epoch, ident = entry
        if offset >= len(log) or log[offset].epoch != epoch or log[offset].ident != ident:
            return i, entry
    return None


def record_at(log, offset: int) -> str:
    """What a log holds at ``offset``, in words."""
    return (f"record {log[offset].ident} of epoch {log[offset].epoch}" if offset < len(log)
            else "nothing")


#: ``loss_distance``'s weights: a member of the controller's ISR that holds the record (the replicas
#: a clean election may pick) counts more than the controller's leader holding it (one election away
#: from a leader without it)
ISR_HOLDER = 3
LEADER_HOLDS = 2
#: the estimate of a state with no entry yet is above every estimate of a state with one (3 ISR
#: holders on three brokers, a holding leader and the one step to settle: 3 * 3 + 2 + 1), plus how
#: far a first entry is
NO_ENTRY = 13


def holds_entry(broker, entry) -> bool:
    """Whether ``broker``'s log has ``entry`` ((offset, epoch, ident)) at its offset (its log
    survives a crash)."""
    offset, epoch, ident = entry
    log = broker.log
    return offset < len(log) and log[offset].epoch == epoch and log[offset].ident == ident


def loss_distance(state, entries) -> int:
    """An estimate of the steps to a state where one of ``entries`` (committed or acknowledged
    ghosts) is missing from the current leader's log (``first_missing_at_leader``), for the directed
    search (``Invariant.distance``): 0 there, at least 1 elsewhere. Read from what the loss takes:
    the current leader is a broker without the entry. A clean election picks a member of the
    controller's ISR, so for each entry every ISR member that still holds it must lose it (an
    unclean shutdown, a truncation) or leave the ISR first (``ISR_HOLDER`` each); a controller's
    leader that holds it must be replaced (``LEADER_HOLDS``); and a leader must settle in the
    controller's epoch (1). The estimate is the smallest over the entries. With no entry yet:
    ``NO_ENTRY`` plus the distance to a first one (a record in the controller's leader's log, then
    each ISR member without it, then its HW passing it). Every estimate adds the bounds spent so far
    (``spent_bounds``): of two states equally close, the one with more of the leader epochs, faults
    and requests the loss needs left goes first."""
    ctrl = state.controller
    brokers = state.brokers
    spent = spent_bounds(state)
    if not entries:
        leader = brokers[ctrl.leader] if ctrl.leader >= 0 else None
        if leader is None or not leader.log:
            return NO_ENTRY + len(ctrl.isr) + 2 + spent
        first = (0, leader.log[0].epoch, leader.log[0].ident)
        lagging = sum(1 for i in ctrl.isr if not holds_entry(brokers[i], first))
        return NO_ENTRY + lagging + (1 if leader.hw == 0 else 0) + spent
    if first_missing_at_leader(state, entries) is not None:
        return 0
    best = None
    for entry in entries:
        estimate = 1 + ISR_HOLDER * sum(1 for i in ctrl.isr if holds_entry(brokers[i], entry))
        if ctrl.leader >= 0 and holds_entry(brokers[ctrl.leader], entry):
            estimate += LEADER_HOLDS
        best = estimate if best is None else min(best, estimate)
    return best + spent


def spent_bounds(state) -> int:
    """The bounded steps a state has spent: the leader epochs (``controller.epoch``) and every fault
    and request counter the model bounds (``KafkaState.BOOKKEEPING_FIELDS`` but ``produced``). The
    loss needs leader elections and a fault that takes a record from a replica; every one spent is
    one fewer left for it."""
    fields = type(state).BOOKKEEPING_FIELDS
    return state.controller.epoch + sum(getattr(state, name) for name in fields if name
                                        != "produced")


def _first_lost(state) -> tuple[int, tuple[int, int, int]] | None:
    return first_missing_at_leader(state, state.committed)


def committed_durable(state) -> bool:
    return _first_lost(state) is None


def _explain(state) -> str:
    found = _first_lost(state)
    if found is None:
        return "every committed record is in the current leader's log"
    i, (offset, epoch, ident) = found
    there = record_at(state.brokers[i].log, offset)
    return (
        f"record {ident} of epoch {epoch} was committed at offset {offset}, but broker {i}, leader "
        f"in epoch {state.controller.epoch}, has {there} there"
    )


COMMITTED_DURABLE = register(
    "kafka",
    Invariant(
        "committed-durable",
        "every record a leader's high watermark passed is at its offset in the current leader's "
        "log",
        committed_durable,
        explain=_explain,
        distance=lambda state: loss_distance(state, state.committed),
    ),
)


# -- no-uncommitted-below-hw -----------------------------------------------------------------------
def _first_exposed(state) -> tuple[int, int] | None:
    committed = set(state.committed)
    for i, b in enumerate(state.brokers):
        if not b.alive:
            continue
        for offset in range(min(b.hw, len(b.log))):
            record = b.log[offset]
            if (offset, record.epoch, record.ident) not in committed:
                return i, offset
    return None


def no_uncommitted_below_hw(state) -> bool:
    return _first_exposed(state) is None


def _explain_exposed(state) -> str:
    found = _first_exposed(state)
    if found is None:
        return "every record below a live replica's HW is committed"
    i, offset = found
    b = state.brokers[i]
    record = b.log[offset]
    return (f"broker {i} has HW {b.hw} over record {record.ident} of epoch {record.epoch} at "
            f"offset {offset}, which no leader's HW ever passed: a reader of broker {i} may see "
            "it, and it may still be truncated")


NO_UNCOMMITTED_BELOW_HW = register(
    "kafka",
    Invariant(
        "no-uncommitted-below-hw",
        "every record below a live replica's HW is committed (a leader's HW passed it): what a "
        "reader of that replica may see below its HW is durable (KAFKA-14704)",
        no_uncommitted_below_hw,
        explain=_explain_exposed,
    ),
)
