"""What the KRaft rows promise beyond the ZooKeeper ones
(``spec.kafka.controllers.KRaftController``).

- ``elr-safety`` (KIP-966): an eligible leader replica the controller may elect holds every
  committed record. KIP-966, "Eligible Leader Replicas": a replica that leaves an ISR below
  min.insync.replicas keeps every record the HW passed (the HW does not advance under min ISR), so
  it is as safe to elect as an ISR member. Checked when the controller would turn to the ELR: no ISR
  member is alive (the ISR is empty, or every member in it has died and will be fenced), for every
  ELR member it could then elect: alive and unfenced (``Controller.registered`` not DEAD). While an
  ISR member lives, an ELR member is a follower like any other and may briefly truncate and fetch
  again; KIP-966 elects it only once the ISR is gone. An unclean shutdown that loses the tail of
  such a member's log breaks it unless the controller learns of the unclean shutdown and removes the
  member from the ELR (``clean-shutdown-detection``). Vacuous where there is no ELR (every ZooKeeper
  row, and the KRaft rows without ``kip-966-elr``).
"""

from __future__ import annotations

from checker.invariant import Invariant
from invariants.kafka_durability import record_at
from invariants.registry import register

_DEAD = -1  # spec.kafka.state.DEAD: invariants read states, they do not import the model


def _first_unsafe(state) -> tuple[int, tuple[int, int, int]] | None:
    controller = state.controller
    if not controller.elr:
        return None
    for r in controller.isr:
        if state.brokers[r].alive:
            return None  # an ISR member lives: the controller does not elect from the ELR
    # () : every broker (no reassignment ever changed the replica list)
    replicas = controller.replicas
    for b in controller.elr:
        broker = state.brokers[b]
        if (not broker.alive or controller.registered[b] == _DEAD
            or (replicas and b not in replicas)):
            # not electable: down, fenced, or no replica (the elections walk the replica list)
            continue
        log = broker.log
        for entry in state.committed:
            offset, epoch, ident = entry
            if offset >= len(log) or log[offset].epoch != epoch or log[offset].ident != ident:
                return b, entry
    return None


def elr_safety(state) -> bool:
    return _first_unsafe(state) is None


def _explain(state) -> str:
    found = _first_unsafe(state)
    if found is None:
        return "every electable ELR member holds every committed record"
    b, (offset, epoch, ident) = found
    there = record_at(state.brokers[b].log, offset)
    return (f"no ISR member is alive and broker {b} is an eligible leader replica the controller "
            f"may elect, but record {ident} of epoch {epoch} "
            f"was committed at offset {offset} and broker {b} has {there} there: electing it loses "
            "committed data")


ELR_SAFETY = register(
    "kafka",
    Invariant(
        "elr-safety",
        "once no ISR member lives, every eligible leader replica (KIP-966) the controller could "
        "elect (alive, unfenced, a replica) "
        "holds every committed record (vacuous without ELR)",
        elr_safety,
        explain=_explain,
    ),
)
