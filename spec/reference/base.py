"""The core of Kafka's published TLA+ replication specification (module KafkaReplication).

This is a Python rendering of ``KafkaReplication.tla`` together with the modules it instantiates
(``FiniteReplicatedLog``, ``IdSequence`` twice, ``Util``), written so that every variant module
(``KafkaTruncateToHighWatermark``, ``Kip101``, ``Kip279``, ``Kip320FirstTry``, ``Kip320``) is a
small subclass that supplies its own next-state relation from the operators defined here.

Parity with TLC is the point, so the encoding is a bijection with the TLA+ state and successor
generation follows how TLC evaluates an action:

* every binding of an ``\\E`` and every true disjunct of a ``\\/`` in action position yields its
  successor separately, so when two disjuncts of an action are true at once (``Kip279``'s
  ``BecomeFollowerTruncateKip279`` on an empty log, ``Kip320``'s ``FencedLeaderShrinkIsr``) the
  same successor is yielded twice, as TLC generates it twice;
* stuttering successors are yielded like any other;
* ``~``, ``\\A`` and operators used inside a ``LET`` or as arguments are evaluated as values.

Encoding (the variables keep their TLA+ names in snake case):

* A replica ``r1 .. rN`` is the int ``1 .. N``; ``None`` (no leader) is ``-1``; ``Nil`` is ``-1``.
  Tuples indexed by replica hold replica ``i`` at position ``i - 1``.
* ``replicaLog[r]`` is the tuple of the records at offsets ``0 .. endOffset - 1``, each a
  ``LogRecord(id, epoch)``. ``FiniteReplicatedLog`` keeps ``records[o] = Nil`` for every offset at
  or past ``endOffset`` (Init, Append and TruncateTo all preserve it), so this tuple determines
  ``[endOffset |-> .., records |-> ..]`` and the other way round.
* ``replicaState[r]`` is a ``ReplicaState(hw, leader_epoch, leader, isr)``; an ISR is a
  frozenset of replica ids.
* ``quorumState`` and each LeaderAndIsr request are ``QuorumState(leader_epoch, leader, isr)``;
  ``leaderAndIsrRequests`` is a frozenset of them.
* ``nextRecordId`` and ``nextLeaderEpoch`` are ints.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import NamedTuple

from spec.model import Action, Model

#: the constants that name a configuration's invariant family (TypeOk depends on them)
FAMILY_CONSTANTS = ("Replicas", "LogSize", "MaxRecords", "MaxLeaderEpoch")


def family_for(module: str, constants: dict[str, int]) -> str:
    """The invariant family of one configuration, e.g. ``tla:Kip320 Replicas=2 LogSize=2 ...``."""
    return f"tla:{module} " + " ".join(f"{name}={constants[name]}" for name in FAMILY_CONSTANTS)

NONE = -1  # the model value None == "NONE": no leader
NIL = -1  # Nil == -1: no leader epoch


class LogRecord(NamedTuple):
    id: int
    epoch: int


class ReplicaState(NamedTuple):
    hw: int
    leader_epoch: int
    leader: int
    isr: frozenset


class QuorumState(NamedTuple):
    """The quorum (ZooKeeper) state; a LeaderAndIsr request is the same record."""

    leader_epoch: int
    leader: int
    isr: frozenset


class KafkaState(NamedTuple):
    replica_log: tuple  # replica -> tuple of LogRecord (offsets 0 .. endOffset - 1)
    replica_state: tuple  # replica -> ReplicaState
    next_record_id: int
    next_leader_epoch: int
    leader_and_isr_requests: frozenset  # of QuorumState
    quorum_state: QuorumState


Successors = Iterator[tuple[Action, KafkaState]]


def replace_at(items: tuple, index: int, value) -> tuple:
    return items[:index] + (value,) + items[index + 1 :]


class KafkaReplication(Model):
    """KafkaReplication.tla: variables, Init, the shared actions and the operators variants use.

    A variant sets ``name`` and ``module`` and lists its ``Next`` disjuncts, in the order of the
    TLA+ text, in ``next_actions`` (names of generator methods taking the state).
    """

    module = "KafkaReplication"
    next_actions: Sequence[str] = ()

    def __init__(
        self,
        replicas: int = 2,
        log_size: int = 2,
        max_records: int = 2,
        max_leader_epoch: int = 2,
        controller_shrink_guard: bool = False,
    ) -> None:
        self.n = replicas
        self.log_size = log_size
        self.max_records = max_records
        self.max_leader_epoch = max_leader_epoch
        #: the published KafkaReplication.tla exists in two revisions that differ in one guard of
        #: ControllerShrinkIsr (see ``controller_shrink_isr``); False is the current revision.
        self.controller_shrink_guard = controller_shrink_guard
        self.name = f"tla:{self.module}"
        self.constants = {
            "Replicas": replicas,
            "LogSize": log_size,
            "MaxRecords": max_records,
            "MaxLeaderEpoch": max_leader_epoch,
        }
        if controller_shrink_guard:
            self.constants["ShrinkGuard"] = True
        # TypeOk depends on the constants, so each configuration has its own invariant family
        # (``invariants.reference`` registers it when the registry is first asked for it)
        self.family = family_for(self.module, self.constants)
        self.replicas = tuple(range(1, replicas + 1))
        self.all_replicas = frozenset(self.replicas)
        self._next: list[Callable[[KafkaState], Successors]] = [getattr(self, a)
                                                                for a in self.next_actions]

    # -- Init and Next -----------------------------------------------------------------------------
    def init_states(self) -> list[KafkaState]:
        n = self.n
        return [
            KafkaState(
                replica_log=((),) * n,
                replica_state=(ReplicaState(0, NIL, NONE, frozenset()),) * n,
                next_record_id=0,
                next_leader_epoch=0,
                leader_and_isr_requests=frozenset(),
                quorum_state=QuorumState(NIL, NONE, self.all_replicas),
            )
        ]

    def successors(self, state: KafkaState) -> Successors:
        for action in self._next:
            yield from action(state)

    def state_types(self) -> tuple[type, ...]:
        return (KafkaState, ReplicaState, QuorumState, LogRecord)

    def describe(self) -> dict:
        return {"model": self.name, "constants": dict(self.constants), "tla_module": self.module}

    def kernel(self):
        """The compiled kernel (``kernel.c``, which follows this module and the variants rule for
        rule), for the modules it compiles (Kip101, Kip279, Kip320); None for the others."""
        from spec.reference.kernel import kernel

        return kernel(self.module, self.n, self.log_size, self.max_records, self.max_leader_epoch,
                      self.controller_shrink_guard,
                      (KafkaState, LogRecord, QuorumState, ReplicaState))

    # -- operators (FiniteReplicatedLog, KafkaReplication) -----------------------------------------
    @staticmethod
    def has_entry(log: tuple, record: LogRecord, offset: int) -> bool:
        return offset < len(log) and log[offset] == record

    @staticmethod
    def presumes_leadership(rs: tuple, replica: int) -> bool:
        return rs[replica - 1].leader == replica

    @staticmethod
    def is_true_leader(s: KafkaState, leader: int) -> bool:
        q = s.quorum_state
        mine = s.replica_state[leader - 1]
        return q.leader == leader and mine.leader == leader and mine.leader_epoch == q.leader_epoch

    def log_records(self) -> Iterator[LogRecord]:
        """LogRecords == [id : RecordSeq!IdSet, epoch : LeaderEpochSeq!IdSet]."""
        for rid in range(self.max_records):
            for epoch in range(self.max_leader_epoch + 1):
                yield LogRecord(rid, epoch)

    def sorted_requests(self, s: KafkaState) -> list[QuorumState]:
        # every request has its own epoch (ControllerUpdateIsr draws a fresh one), so the epoch
        # orders and identifies them
        return sorted(s.leader_and_isr_requests)

    def controller_update_isr(self, s: KafkaState, new_leader: int,
                              new_isr: frozenset) -> KafkaState | None:
        """ControllerUpdateIsr: \\E newLeaderEpoch \\in IdSet : NextId(newLeaderEpoch) /\\ ...

        Exactly one binding (the current nextLeaderEpoch) can satisfy NextId, so at most one
        successor; None when the epochs are used up.
        """
        epoch = s.next_leader_epoch
        if epoch > self.max_leader_epoch:
            return None
        quorum = QuorumState(epoch, new_leader, new_isr)
        return s._replace(
            next_leader_epoch=epoch + 1,
            quorum_state=quorum,
            leader_and_isr_requests=s.leader_and_isr_requests | {quorum},
        )

    def quorum_update_leader_and_isr(self, s: KafkaState, leader: int,
                                     new_isr: frozenset) -> KafkaState | None:
        """QuorumUpdateLeaderAndIsr: only the true leader writes the ISR, to ZK and locally."""
        if not self.is_true_leader(s, leader) or s.quorum_state.leader != leader:
            return None
        rs = s.replica_state
        return s._replace(
            quorum_state=s.quorum_state._replace(isr=new_isr),
            replica_state=replace_at(rs, leader - 1, rs[leader - 1]._replace(isr=new_isr)),
        )

    @staticmethod
    def is_follower_caught_up(s: KafkaState, leader: int, follower: int, end_offset: int) -> bool:
        """IsFollowerCaughtUp(leader, follower, endOffset).

        The ``\\E record`` has at most one witness (HasEntry pins the record), so as a guard it
        contributes at most one binding.
        """
        if s.replica_state[follower - 1].leader != leader:
            return False
        if end_offset == 0:
            return True
        offset = end_offset - 1
        return (end_offset > 0 and offset < len(s.replica_log[leader - 1]) and offset
                < len(s.replica_log[follower - 1]))

    def truncate_to(self, s: KafkaState, replica: int, new_end_offset: int) -> tuple | None:
        """FiniteReplicatedLog!TruncateTo: the new replicaLog, or None if disabled."""
        log = s.replica_log[replica - 1]
        if new_end_offset > len(log):
            return None
        return replace_at(s.replica_log, replica - 1, log[:new_end_offset])

    @staticmethod
    def replicate_to(s: KafkaState, from_replica: int, to_replica: int,
                     log_size: int) -> tuple | None:
        """FiniteReplicatedLog!ReplicateTo: \\E offset, record : HasEntry(from, ..) /\\ Append(to,
        ..).

        Append forces offset = the end offset of ``to_replica`` and HasEntry forces the record, so
        at most one binding: the new replicaLog, or None if disabled.
        """
        logs = s.replica_log
        target = logs[to_replica - 1]
        offset = len(target)
        source = logs[from_replica - 1]
        if offset >= log_size or offset >= len(source):
            return None
        return replace_at(logs, to_replica - 1, target + (source[offset],))

    @staticmethod
    def first_non_matching_offset_from_tail(s: KafkaState, leader: int, follower: int) -> int:
        """Kip279's FirstNonMatchingOffsetFromTail (Max of MatchingOffsets(follower, leader), +
        1)."""
        leader_log = s.replica_log[leader - 1]
        if not leader_log:
            return 0
        follower_log = s.replica_log[follower - 1]
        for offset in range(min(len(follower_log), len(leader_log)) - 1, -1, -1):
            if follower_log[offset] == leader_log[offset]:
                return offset + 1
        return 0

    @staticmethod
    def has_high_watermark_reached_current_epoch(s: KafkaState, leader: int) -> bool:
        """HasHighWatermarkReachedCurrentEpoch (LOCAL to Kip320FirstTry and to Kip320, same
        text)."""
        mine = s.replica_state[leader - 1]
        log = s.replica_log[leader - 1]
        hw = mine.hw
        return hw == len(log) or (hw < len(log) and log[hw].epoch == mine.leader_epoch)

    # -- the actions of KafkaReplication -----------------------------------------------------------
    def ControllerElectLeader(self, s: KafkaState) -> Successors:
        q = s.quorum_state
        for new_leader in sorted(q.isr):
            if q.leader != new_leader:
                nxt = self.controller_update_isr(s, new_leader, q.isr)
                if nxt is not None:
                    yield Action("ControllerElectLeader", (("newLeader", new_leader),)), nxt

    def ControllerShrinkIsr(self, s: KafkaState) -> Successors:
        q = s.quorum_state
        for replica in self.replicas:
            only_replica = q.isr == frozenset((replica,))
            if q.leader == replica and only_replica:
                nxt = self.controller_update_isr(s, NONE, q.isr)
            elif q.leader == replica:
                nxt = self.controller_update_isr(s, NONE, q.isr - {replica})
            elif replica in q.isr and not (self.controller_shrink_guard and only_replica):
                nxt = self.controller_update_isr(s, q.leader, q.isr - {replica})
            else:
                continue
            if nxt is not None:
                yield Action("ControllerShrinkIsr", (("replica", replica),)), nxt

    def BecomeLeader(self, s: KafkaState) -> Successors:
        rs = s.replica_state
        for request in self.sorted_requests(s):
            leader = request.leader
            if leader == NONE or request.leader_epoch <= rs[leader - 1].leader_epoch:
                continue
            mine = ReplicaState(rs[leader - 1].hw, request.leader_epoch, leader, request.isr)
            yield (
                Action("BecomeLeader", (("epoch", request.leader_epoch),)),
                s._replace(replica_state=replace_at(rs, leader - 1, mine)),
            )

    def LeaderWrite(self, s: KafkaState) -> Successors:
        record_id = s.next_record_id
        if record_id >= self.max_records:  # RecordSeq!NextId(id) needs id <= MaxRecords - 1
            return
        rs = s.replica_state
        logs = s.replica_log
        for replica in self.replicas:
            mine = rs[replica - 1]
            log = logs[replica - 1]
            if mine.leader != replica or len(log) >= self.log_size:
                continue
            record = LogRecord(record_id, mine.leader_epoch)
            yield (
                Action("LeaderWrite", (("replica", replica), ("id", record_id),
                                       ("offset", len(log)))),
                s._replace(replica_log=replace_at(logs, replica - 1, log + (record,)),
                           next_record_id=record_id + 1),
            )

    def LeaderShrinkIsr(self, s: KafkaState) -> Successors:
        rs = s.replica_state
        for leader in self.replicas:
            isr = rs[leader - 1].isr
            end_offset = len(s.replica_log[leader - 1])
            for replica in sorted(isr - {leader}):
                if self.is_follower_caught_up(s, leader, replica, end_offset):
                    continue
                nxt = self.quorum_update_leader_and_isr(s, leader, isr - {replica})
                if nxt is not None:
                    yield Action("LeaderShrinkIsr", (("leader", leader), ("replica", replica))), nxt

    def LeaderExpandIsr(self, s: KafkaState) -> Successors:
        rs = s.replica_state
        for leader in self.replicas:
            isr = rs[leader - 1].isr
            leader_hw = rs[leader - 1].hw
            for replica in sorted(self.all_replicas - isr):
                if not self.is_follower_caught_up(s, leader, replica, leader_hw):
                    continue
                nxt = self.quorum_update_leader_and_isr(s, leader, isr | {replica})
                if nxt is not None:
                    yield Action("LeaderExpandIsr", (("leader", leader), ("replica", replica))), nxt

    def LeaderIncHighWatermark(self, s: KafkaState) -> Successors:
        """\\E offset \\in Offsets, leader \\in Replicas: only offset = hw can hold."""
        rs = s.replica_state
        logs = s.replica_log
        for leader in self.replicas:
            mine = rs[leader - 1]
            offset = mine.hw
            if mine.leader != leader or offset >= self.log_size:
                continue
            if all(rs[f - 1].leader == leader and offset < len(logs[f - 1]) for f in mine.isr):
                yield (
                    Action("LeaderIncHighWatermark", (("offset", offset), ("leader", leader))),
                    s._replace(replica_state=replace_at(rs, leader - 1,
                                                        mine._replace(hw=offset + 1))),
                )

    def become_follower_and_truncate_to(
        self, s: KafkaState, name: str, leader: int, replica: int, truncation_offset: int
    ) -> Successors:
        """BecomeFollowerAndTruncateTo(leader, replica, truncationOffset): one successor per
        request.

        ``leader`` is always bound to a member of Replicas by the callers, so the ``leader = None``
        disjunct never holds.
        """
        if leader == replica:
            return
        rs = s.replica_state
        mine = rs[replica - 1]
        logs = None
        for request in self.sorted_requests(s):
            if request.leader != leader or request.leader_epoch <= mine.leader_epoch:
                continue
            if logs is None:
                logs = self.truncate_to(s, replica, truncation_offset)
                if logs is None:
                    return
            new = ReplicaState(min(truncation_offset, mine.hw), request.leader_epoch, leader,
                               request.isr)
            yield (
                Action(name, (("leader", leader), ("replica", replica),
                              ("epoch", request.leader_epoch))),
                s._replace(replica_log=logs, replica_state=replace_at(rs, replica - 1, new)),
            )

    def FollowerReplicate(self, s: KafkaState) -> Successors:
        rs = s.replica_state
        for follower in self.replicas:
            leader = rs[follower - 1].leader  # ReplicaIsFollowing(follower, leader) pins the leader
            if leader == NONE or rs[leader - 1].leader != leader:
                continue
            logs = self.replicate_to(s, leader, follower, self.log_size)
            if logs is None:
                continue
            new_end = len(s.replica_log[follower - 1]) + 1
            new = rs[follower - 1]._replace(hw=min(rs[leader - 1].hw, new_end))
            yield (
                Action("FollowerReplicate", (("follower", follower), ("leader", leader))),
                s._replace(replica_log=logs, replica_state=replace_at(rs, follower - 1, new)),
            )
