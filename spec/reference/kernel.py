"""The compiled kernel of Kafka's published TLA+ specifications (``kernel.c``): how a ``KafkaState``
packs into bytes and back, and the action codes' names. The C file follows ``base.py``,
``kip101.py``, ``kip279.py`` and ``kip320.py`` rule for rule, with the invariants of
``invariants/reference.py``."""

from __future__ import annotations

import os
from typing import Any

from spec.model import Action, KernelSource

#: ``spec.reference.base``'s KafkaState, LogRecord, QuorumState and ReplicaState, passed in by the
#: model (which imports this module, so this module does not import it back)
StateTypes = tuple[type, type, type, type]

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernel.c")
#: the modules the kernel compiles, and the value of its KM_VARIANT
VARIANTS = {"Kip101": 101, "Kip279": 279, "Kip320": 320}
#: the C file's action kinds in order (code: kind << 24 | p1 << 16 | p2 << 8 | p3), with the
#: readable parameters
KINDS = (
    ("ControllerElectLeader", ("newLeader",)),
    ("ControllerShrinkIsr", ("replica",)),
    ("BecomeLeader", ("epoch",)),
    ("LeaderWrite", ("replica", "id", "offset")),
    ("LeaderShrinkIsr", ("leader", "replica")),
    ("LeaderExpandIsr", ("leader", "replica")),
    ("LeaderIncHighWatermark", ("offset", "leader")),
    ("BecomeFollowerTruncateKip101", ("leader", "replica", "epoch")),
    ("BecomeFollowerTruncateKip279", ("leader", "replica", "epoch")),
    ("FollowerReplicate", ("follower", "leader")),
    ("FencedFollowerFetch", ("follower", "leader")),
    ("FencedLeaderIncHighWatermark", ("leader",)),
    ("FencedLeaderShrinkIsr", ("leader", "follower")),
    ("FencedLeaderExpandIsr", ("leader", "follower")),
    ("FencedBecomeFollowerAndTruncate", ("leader", "replica", "epoch")),
)
MAX_REPLICAS = 8  # an ISR is one byte


def _mask(isr: frozenset) -> int:
    return sum(1 << (r - 1) for r in isr)


def _members(mask: int, n: int) -> frozenset:
    return frozenset(r for r in range(1, n + 1) if mask >> (r - 1) & 1)


def _signed(b: int) -> int:
    return b - 256 if b > 127 else b


class Packing:
    """The byte layout of ``km_state`` for one configuration (Replicas, LogSize, MaxLeaderEpoch)."""

    def __init__(self, replicas: int, log_size: int, max_leader_epoch: int,
                 types: StateTypes) -> None:
        self.n, self.size, self.epochs = replicas, log_size, max_leader_epoch + 1
        self.types = types
        self.state_bytes = replicas * (5 + 2 * log_size) + 2 + 3 * self.epochs + 3

    def pack(self, s: Any) -> bytes:
        n, size = self.n, self.size
        ids, epochs = [], []
        for log in s.replica_log:
            pad = [0] * (size - len(log))
            ids += [rec.id for rec in log] + pad
            epochs += [rec.epoch & 0xFF for rec in log] + pad
        rs = s.replica_state
        present, leaders, isrs = [0] * self.epochs, [0] * self.epochs, [0] * self.epochs
        for q in s.leader_and_isr_requests:
            present[q.leader_epoch], leaders[q.leader_epoch], isrs[
                q.leader_epoch] = 1, q.leader & 0xFF, _mask(q.isr)
        q = s.quorum_state
        assert len(rs) == n
        return bytes([*(len(log) for log in s.replica_log), *ids, *epochs, *(r.hw for r in rs),
                      *(r.leader_epoch & 0xFF for r in rs), *(r.leader & 0xFF for r in rs),
                      *(_mask(r.isr) for r in rs), s.next_record_id, s.next_leader_epoch, *present,
                      *leaders, *isrs, q.leader_epoch & 0xFF, q.leader & 0xFF, _mask(q.isr)])

    def unpack(self, data: bytes) -> Any:
        n, size, e = self.n, self.size, self.epochs
        KafkaState, LogRecord, QuorumState, ReplicaState = self.types  # noqa: N806 (the classes, by their names)
        lens = data[:n]
        ids = data[n:n + n * size]
        eps = data[n + n * size:n + 2 * n * size]
        at = n + 2 * n * size
        hw, lep, led, isr = (data[at + k * n:at + (k + 1) * n] for k in range(4))
        at += 4 * n
        next_record_id, next_leader_epoch = data[at], data[at + 1]
        at += 2
        present, leaders, isrs = (data[at + k * e:at + (k + 1) * e] for k in range(3))
        at += 3 * e
        logs = tuple(tuple(LogRecord(ids[r * size + o], _signed(eps[r * size + o]))
                           for o in range(lens[r]))
                     for r in range(n))
        states = tuple(ReplicaState(hw[r], _signed(lep[r]), _signed(led[r]), _members(isr[r], n))
                       for r in range(n))
        requests = frozenset(QuorumState(k, _signed(leaders[k]), _members(isrs[k], n))
                             for k in range(e) if present[k])
        quorum = QuorumState(_signed(data[at]), _signed(data[at + 1]), _members(data[at + 2], n))
        return KafkaState(logs, states, next_record_id, next_leader_epoch, requests, quorum)


def action(code: int) -> Action:
    name, params = KINDS[code >> 24]
    values = (code >> 16 & 0xFF, code >> 8 & 0xFF, code & 0xFF)
    return Action(name, tuple(zip(params, values, strict=False)))


def kernel(module: str, replicas: int, log_size: int, max_records: int, max_leader_epoch: int,
           shrink_guard: bool, types: StateTypes) -> KernelSource | None:
    if module not in VARIANTS:
        return None
    packing = Packing(replicas, log_size, max_leader_epoch, types)
    unsupported = None
    if replicas > MAX_REPLICAS:
        unsupported = f"Replicas={replicas} is past the kernel's {MAX_REPLICAS}"
    elif shrink_guard:
        unsupported = ("the kernel compiles the current revision of ControllerShrinkIsr, not the "
                       "guarded one")
    return KernelSource(
        source=SOURCE,
        defines=(("KM_R", replicas), ("KM_L", log_size), ("KM_M", max_records),
                 ("KM_E", max_leader_epoch), ("KM_VARIANT", VARIANTS[module])),
        state_bytes=packing.state_bytes,
        pack=packing.pack,
        unpack=packing.unpack,
        action=action,
        invariants=("TypeOk", "WeakIsr", "StrongIsr", "LogMatching"),
        unsupported=unsupported,
    )
