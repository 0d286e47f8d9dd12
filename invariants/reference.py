"""The invariants of Kafka's published TLA+ specifications (see ``spec.reference``).

TypeOk, WeakIsr and StrongIsr are those of KafkaReplication.tla; LogMatching is Raft's log
matching property over the same state: if two replicas hold records with the same leader epoch at
the same offset, their logs are identical at that offset and at every offset below it.

TypeOk depends on the constants (LogSize, MaxRecords, MaxLeaderEpoch), so the invariants are
registered per configuration: each model's family names its module and constants
(``spec.reference.base.family_for``), and ``register_family``, which the registry calls the first
time it is asked for such a family, binds TypeOk to them. The predicates are module-level functions
(bound with ``functools.partial``) so they pickle for other processes.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial

from checker.invariant import Invariant
from invariants.registry import is_registered, register
from spec.reference.base import FAMILY_CONSTANTS, NIL, NONE, KafkaState, QuorumState, family_for

CONSTANT_NAMES = FAMILY_CONSTANTS


# -- TypeOk ----------------------------------------------------------------------------------------
def _type_ok_problems(bounds: tuple[int, int, int, int], s: KafkaState) -> list[str]:
    replicas, log_size, max_records, max_leader_epoch = bounds
    ids = set(range(1, replicas + 1))
    epochs = set(range(max_leader_epoch + 1))
    problems = []
    if not 0 <= s.next_leader_epoch <= max_leader_epoch + 1:  # LeaderEpochSeq!TypeOk
        problems.append(f"nextLeaderEpoch = {s.next_leader_epoch}")
    if not 0 <= s.next_record_id <= max_records:  # RecordSeq!TypeOk (MaxId = MaxRecords - 1)
        problems.append(f"nextRecordId = {s.next_record_id}")
    if len(s.replica_log) != replicas or len(s.replica_state) != replicas:
        problems.append("replicaLog or replicaState is not a function of Replicas")
        return problems
    for r, log in enumerate(s.replica_log, 1):  # ReplicaLog!TypeOk (entries past endOffset are Nil)
        if len(log) > log_size:
            problems.append(f"r{r}'s endOffset {len(log)} > LogSize")
        for offset, record in enumerate(log):
            if not (0 <= record.id < max_records and record.epoch in epochs):
                problems.append(f"r{r} holds {record} at offset {offset}, not in LogRecords")

    def quorum_ok(q: QuorumState) -> bool:
        return (q.leader_epoch == NIL or q.leader_epoch in epochs) and (q.leader == NONE or q.leader
                                                                        in ids) and (
            q.isr <= ids
        )

    for r, rs in enumerate(s.replica_state, 1):
        if not (0 <= rs.hw <= log_size
                and quorum_ok(QuorumState(rs.leader_epoch, rs.leader, rs.isr))):
            problems.append(f"replicaState[r{r}] = {rs}")
    if not quorum_ok(s.quorum_state):
        problems.append(f"quorumState = {s.quorum_state}")
    for request in s.leader_and_isr_requests:
        if not quorum_ok(request):
            problems.append(f"LeaderAndIsr request {request}")
    return problems


def type_ok(bounds: tuple[int, int, int, int], s: KafkaState) -> bool:
    return not _type_ok_problems(bounds, s)


def _explain_type_ok(bounds: tuple[int, int, int, int], s: KafkaState) -> str:
    return "TypeOk broken: " + "; ".join(_type_ok_problems(bounds, s))


# -- WeakIsr, StrongIsr ----------------------------------------------------------------------------
def _isr_gaps(s: KafkaState, strong: bool) -> list[tuple[int, int, int]]:
    """(leader, replica, offset) below a presumed leader's high watermark that the replica lacks."""
    gaps = []
    logs = s.replica_log
    for r1, mine in enumerate(s.replica_state, 1):
        if mine.leader != r1 or mine.hw == 0:
            continue
        log1 = logs[r1 - 1]
        isr = s.quorum_state.isr if strong else mine.isr
        for r2 in sorted(isr):
            log2 = logs[r2 - 1]
            for offset in range(mine.hw):
                # \E record \in LogRecords : HasEntry(r1, record, offset) /\ HasEntry(r2, record,
                # offset)
                if not (offset < len(log1) and offset < len(log2) and log1[offset] == log2[offset]):
                    gaps.append((r1, r2, offset))
    return gaps


def weak_isr(s: KafkaState) -> bool:
    return not _isr_gaps(s, strong=False)


def strong_isr(s: KafkaState) -> bool:
    return not _isr_gaps(s, strong=True)


def _explain_isr(strong: bool, s: KafkaState) -> str:
    leader, replica, offset = _isr_gaps(s, strong)[0]
    which = "quorum ISR" if strong else "its own ISR"
    hw = s.replica_state[leader - 1].hw
    return (
        f"{'StrongIsr' if strong else 'WeakIsr'} broken: r{leader} presumes leadership with high "
        f"watermark {hw}, but r{replica} (in {which}) does not hold the same record as r{leader} "
        f"at offset {offset}"
    )


# -- LogMatching -----------------------------------------------------------------------------------
def _log_mismatch(s: KafkaState) -> tuple[int, int, int] | None:
    logs = s.replica_log
    for r1 in range(len(logs)):
        for r2 in range(r1 + 1, len(logs)):
            log1, log2 = logs[r1], logs[r2]
            # the highest common offset with equal epochs decides it for every offset below
            for offset in range(min(len(log1), len(log2)) - 1, -1, -1):
                if log1[offset].epoch == log2[offset].epoch:
                    if log1[: offset + 1] != log2[: offset + 1]:
                        return r1 + 1, r2 + 1, offset
                    break
    return None


def log_matching(s: KafkaState) -> bool:
    return _log_mismatch(s) is None


def _explain_log_matching(s: KafkaState) -> str:
    r1, r2, offset = _log_mismatch(s)
    epoch = s.replica_log[r1 - 1][offset].epoch
    return (
        f"LogMatching broken: r{r1} and r{r2} both hold a record of epoch {epoch} at offset "
        f"{offset}, but their logs differ at or below it: r{r1} {list(s.replica_log[r1 - 1])}, "
        f"r{r2} {list(s.replica_log[r2 - 1])}"
    )


# -- registration ----------------------------------------------------------------------------------
def register_family(family: str) -> bool:
    """Register the invariants of a family named by ``family_for`` (``tla:Kip320 Replicas=2 ...``).

    False when the name is not such a family (an unknown module is still a family: the invariants
    read only the state's shape, which every reference module shares).
    """
    head, _, rest = family.partition(" ")
    fields = dict(part.partition("=")[::2] for part in rest.split())
    if (not head.startswith("tla:") or set(fields) != set(CONSTANT_NAMES)
        or not all(v.isdigit() for v in fields.values())):
        return False
    register_configuration(head.removeprefix("tla:"),
                           {name: int(fields[name]) for name in CONSTANT_NAMES})
    return True


def register_configuration(module: str, constants: Mapping[str, int]) -> str:
    """Register the four invariants for one configuration (idempotent) and return its family."""
    family = family_for(module, constants)
    if is_registered(family):
        return family
    bounds = tuple(int(constants[name]) for name in CONSTANT_NAMES)
    register(
        family,
        Invariant(
            "TypeOk",
            "every variable has its TLA+ type (ids, epochs, offsets and high watermarks within the "
            "constants)",
            partial(type_ok, bounds),
            explain=partial(_explain_type_ok, bounds),
        ),
    )
    register(
        family,
        Invariant(
            "WeakIsr",
            "below a presumed leader's high watermark, every member of its own ISR holds the "
            "leader's records",
            weak_isr,
            explain=partial(_explain_isr, False),
        ),
    )
    register(
        family,
        Invariant(
            "StrongIsr",
            "below a presumed leader's high watermark, every member of the quorum's ISR holds the "
            "leader's records",
            strong_isr,
            explain=partial(_explain_isr, True),
        ),
    )
    register(
        family,
        Invariant(
            "LogMatching",
            "two logs with records of the same epoch at an offset are identical up to that offset "
            "(Raft)",
            log_matching,
            explain=_explain_log_matching,
        ),
    )
    return family
