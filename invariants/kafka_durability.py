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

#: what ``first_missing_at_leader`` reads besides its entries (``Invariant.reads``)
LEADER_READS = ("controller.leader", "controller.epoch", "brokers.alive", "brokers.leader", "brokers.epoch", "brokers.log")


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
    """(current leader, first entry) of ``entries`` ((offset, epoch, ident) ghosts: committed, acknowledged)
    that is not at its offset in the current leader's log, or None (also when no leader is settled)."""
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
    return f"record {log[offset].ident} of epoch {log[offset].epoch}" if offset < len(log) else "nothing"


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
        f"record {ident} of epoch {epoch} was committed at offset {offset}, but broker {i}, leader in epoch "
        f"{state.controller.epoch}, has {there} there"
    )


COMMITTED_DURABLE = register(
    "kafka",
    Invariant(
        "committed-durable",
        "every record a leader's high watermark passed is at its offset in the current leader's log",
        committed_durable,
        explain=_explain,
        reads=("committed", *LEADER_READS),
    ),
)


# -- no-uncommitted-below-hw ------------------------------------------------------------------------------
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
    return (f"broker {i} has HW {b.hw} over record {record.ident} of epoch {record.epoch} at offset {offset}, which no "
            f"leader's HW ever passed: a reader of broker {i} may see it, and it may still be truncated")


NO_UNCOMMITTED_BELOW_HW = register(
    "kafka",
    Invariant(
        "no-uncommitted-below-hw",
        "every record below a live replica's HW is committed (a leader's HW passed it): what a reader of that replica "
        "may see below its HW is durable (KAFKA-14704)",
        no_uncommitted_below_hw,
        explain=_explain_exposed,
        reads=("committed", "brokers.alive", "brokers.hw", "brokers.log"),
    ),
)
