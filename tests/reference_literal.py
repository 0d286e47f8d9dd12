"""A second, deliberately literal encoding of the same specifications: the cross-check.

``spec.reference`` is written for speed: it encodes a log as the tuple of its written records, pins
existential witnesses instead of enumerating them and counts TLC's duplicate successors by hand.
This module does none of that. It transcribes the TLA+ text operator by operator: records and
functions are ``Rec`` mappings keyed by field or by replica name (``"r1"``), ``None`` is the string
``"NONE"``, a log is ``[endOffset |-> .., records |-> [Offsets -> LogRecords \\union {Nil}]]``,
every ``\\E`` runs over its whole domain and every disjunct of a ``\\/`` is its own branch, so a
successor comes out twice exactly when TLC's evaluation would produce it twice.

It is slow and only used by the tests: for many configurations they check that both encodings
reach the same states (through ``to_fast``) and generate the same number of successors from each.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from spec.reference.base import NONE as FAST_NONE
from spec.reference.base import KafkaState, LogRecord, QuorumState, ReplicaState

NONE = "NONE"
NIL = -1


class Rec(dict):
    """An immutable-by-convention TLA+ record or function, hashable by its items."""

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(frozenset(self.items()))

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def but(self, **changes: Any) -> Rec:
        """[r EXCEPT !.f = v, ...]"""
        out = Rec(self)
        out.update(changes)
        return out

    def at(self, key: Any, value: Any) -> Rec:
        """[f EXCEPT ![key] = value]"""
        out = Rec(self)
        out[key] = value
        return out


class LiteralSpec:
    """Init and Next of one variant module, straight from its TLA+ text."""

    def __init__(self, module: str, replicas: int, log_size: int, max_records: int,
                 max_leader_epoch: int) -> None:
        self.module = module
        self.Replicas = [f"r{i}" for i in range(1, replicas + 1)]
        self.LogSize = log_size
        self.MaxLeaderEpoch = max_leader_epoch
        # RecordSeq == INSTANCE IdSequence WITH MaxId <- MaxRecords - 1
        self.MaxRecordId = max_records - 1
        self.Offsets = list(range(0, log_size))  # 0 .. MaxOffset
        self.EpochIdSet = list(range(0, max_leader_epoch + 1))
        self.RecordIdSet = list(range(0, max_records))
        self.LogRecords = [Rec(id=i, epoch=e) for i in self.RecordIdSet for e in self.EpochIdSet]
        self.next = {
            "KafkaTruncateToHighWatermark": [
                self.ControllerElectLeader, self.ControllerShrinkIsr, self.BecomeLeader,
                self.LeaderExpandIsr, self.LeaderShrinkIsr, self.LeaderWrite,
                self.LeaderIncHighWatermark, self.BecomeFollowerTruncateToHighWatermark,
                self.FollowerReplicate,
            ],
            "Kip101": [
                self.ControllerElectLeader, self.ControllerShrinkIsr, self.BecomeLeader,
                self.LeaderExpandIsr, self.LeaderShrinkIsr, self.LeaderWrite,
                self.LeaderIncHighWatermark, self.BecomeFollowerTruncateKip101,
                self.FollowerReplicate,
            ],
            "Kip279": [
                self.ControllerElectLeader, self.ControllerShrinkIsr, self.BecomeLeader,
                self.LeaderExpandIsr, self.LeaderShrinkIsr, self.LeaderWrite,
                self.LeaderIncHighWatermark, self.BecomeFollowerTruncateKip279,
                self.FollowerReplicate,
            ],
            "Kip320FirstTry": [
                self.ControllerElectLeader, self.ControllerShrinkIsr, self.BecomeLeader,
                self.LeaderExpandIsrBetterFencing, self.LeaderShrinkIsrBetterFencing,
                self.LeaderWrite, self.ImprovedLeaderIncHighWatermark, self.BecomeFollower,
                self.FollowerFetch, self.FollowerTruncate,
            ],
            "Kip320": [
                self.ControllerElectLeader, self.ControllerShrinkIsr, self.BecomeLeader,
                self.FencedLeaderExpandIsr, self.FencedLeaderShrinkIsr, self.LeaderWrite,
                self.FencedLeaderIncHighWatermark, self.FencedBecomeFollowerAndTruncate,
                self.FencedFollowerFetch,
            ],
        }[module]

    # -- Init / Next -------------------------------------------------------------------------------
    def Init(self) -> list[Rec]:
        empty_log = Rec(endOffset=0, records=Rec({o: NIL for o in self.Offsets}))
        return [
            Rec(
                nextLeaderEpoch=0,
                nextRecordId=0,
                replicaLog=Rec({r: empty_log for r in self.Replicas}),
                replicaState=Rec({r: Rec(hw=0, leaderEpoch=NIL, leader=NONE, isr=frozenset())
                                  for r in self.Replicas}),
                quorumState=Rec(leaderEpoch=NIL, leader=NONE, isr=frozenset(self.Replicas)),
                leaderAndIsrRequests=frozenset(),
            )
        ]

    def Next(self, s: Rec) -> Iterator[Rec]:
        for action in self.next:
            yield from action(s)

    # -- FiniteReplicatedLog (logs <- replicaLog) --------------------------------------------------
    def IsEmpty(self, s, replica):
        return s.replicaLog[replica].endOffset == 0

    def IsFull(self, s, replica):
        return s.replicaLog[replica].endOffset == self.LogSize

    def HasEntry(self, s, replica, record, offset):
        log = s.replicaLog[replica]
        return offset < log.endOffset and log.records[offset] == record

    def IsLatestEntry(self, s, replica, record, offset):
        log = s.replicaLog[replica]
        return ((not self.IsEmpty(s, replica)) and offset == log.endOffset - 1 and record
                == log.records[offset])

    def GetLatestRecord(self, s, replica):
        log = s.replicaLog[replica]
        return NIL if self.IsEmpty(s, replica) else log.records[log.endOffset - 1]

    def GetEndOffset(self, s, replica):
        return s.replicaLog[replica].endOffset

    def GetRecordAtOffset(self, s, replica, offset):
        return s.replicaLog[replica].records[offset]

    def GetAllEntries(self, s, replica):
        log = s.replicaLog[replica]
        if log.endOffset == 0:
            return set()
        return {Rec(offset=o, record=self.GetRecordAtOffset(s, replica, o))
                for o in range(0, log.endOffset)}

    def HasOffset(self, s, replica, offset):
        return offset < s.replicaLog[replica].endOffset

    def Append(self, s, replica, record, offset) -> Iterator[Rec]:
        """Yields the new value of logs (replicaLog') if enabled."""
        log = s.replicaLog[replica]
        if (not self.IsFull(s, replica)) and offset == log.endOffset:
            yield s.replicaLog.at(replica, log.but(records=log.records.at(offset, record),
                                                   endOffset=log.endOffset + 1))

    def TruncateTo(self, s, replica, newEndOffset) -> Iterator[Rec]:
        log = s.replicaLog[replica]
        if newEndOffset <= log.endOffset:
            records = Rec({o: (log.records[o] if o < newEndOffset else NIL) for o in self.Offsets})
            yield s.replicaLog.at(replica, log.but(records=records, endOffset=newEndOffset))

    def ReplicateTo(self, s, fromReplica, toReplica) -> Iterator[Rec]:
        for offset in self.Offsets:
            for record in self.LogRecords:
                if self.HasEntry(s, fromReplica, record, offset):
                    yield from self.Append(s, toReplica, record, offset)

    # -- Util --------------------------------------------------------------------------------------
    @staticmethod
    def Min(values):
        return min(values)

    @staticmethod
    def Max(values):
        return max(values)

    # -- KafkaReplication --------------------------------------------------------------------------
    def ReplicaPresumesLeadership(self, s, replica):
        return s.replicaState[replica].leader == replica

    def ReplicaIsFollowing(self, s, follower, leader):
        return s.replicaState[follower].leader == leader

    def IsTrueLeader(self, s, leader):
        return (
            s.quorumState.leader == leader
            and self.ReplicaPresumesLeadership(s, leader)
            and s.replicaState[leader].leaderEpoch == s.quorumState.leaderEpoch
        )

    def ControllerUpdateIsr(self, s, newLeader, newIsr) -> Iterator[Rec]:
        for newLeaderEpoch in self.EpochIdSet:
            # LeaderEpochSeq!NextId(newLeaderEpoch)
            if newLeaderEpoch <= self.MaxLeaderEpoch and newLeaderEpoch == s.nextLeaderEpoch:
                new = Rec(leader=newLeader, leaderEpoch=newLeaderEpoch, isr=newIsr)
                yield s.but(
                    nextLeaderEpoch=s.nextLeaderEpoch + 1,
                    quorumState=new,
                    leaderAndIsrRequests=s.leaderAndIsrRequests | {new},
                )

    def ControllerShrinkIsr(self, s) -> Iterator[Rec]:
        q = s.quorumState
        for replica in self.Replicas:
            if q.leader == replica and q.isr == frozenset({replica}):
                yield from self.ControllerUpdateIsr(s, NONE, q.isr)
            if q.leader == replica and q.isr != frozenset({replica}):
                yield from self.ControllerUpdateIsr(s, NONE, q.isr - {replica})
            if q.leader != replica and replica in q.isr:
                yield from self.ControllerUpdateIsr(s, q.leader, q.isr - {replica})

    def ControllerElectLeader(self, s) -> Iterator[Rec]:
        for newLeader in s.quorumState.isr:
            if s.quorumState.leader != newLeader:
                yield from self.ControllerUpdateIsr(s, newLeader, s.quorumState.isr)

    def BecomeLeader(self, s) -> Iterator[Rec]:
        for req in s.leaderAndIsrRequests:
            leader = req.leader
            if leader != NONE and req.leaderEpoch > s.replicaState[leader].leaderEpoch:
                old = s.replicaState[leader]
                new = Rec(hw=old.hw, leaderEpoch=req.leaderEpoch, leader=leader, isr=req.isr)
                yield s.but(replicaState=s.replicaState.at(leader, new))

    def LeaderWrite(self, s) -> Iterator[Rec]:
        for replica in self.Replicas:
            for id_ in self.RecordIdSet:
                for offset in self.Offsets:
                    if not self.ReplicaPresumesLeadership(s, replica):
                        continue
                    # RecordSeq!NextId(id)
                    if not (id_ <= self.MaxRecordId and id_ == s.nextRecordId):
                        continue
                    record = Rec(id=id_, epoch=s.replicaState[replica].leaderEpoch)
                    for logs in self.Append(s, replica, record, offset):
                        yield s.but(nextRecordId=s.nextRecordId + 1, replicaLog=logs)

    def QuorumUpdateLeaderAndIsr(self, s, leader, newIsr) -> Iterator[Rec]:
        if self.IsTrueLeader(s, leader) and s.quorumState.leader == leader:
            yield s.but(
                quorumState=s.quorumState.but(isr=newIsr),
                replicaState=s.replicaState.at(leader, s.replicaState[leader].but(isr=newIsr)),
            )

    def IsFollowerCaughtUp(self, s, leader, follower, endOffset) -> Iterator[None]:
        """In action position: one yield per way TLC satisfies it."""
        if not self.ReplicaIsFollowing(s, follower, leader):
            return
        if endOffset == 0:
            yield None
        if endOffset > 0:
            offset = endOffset - 1
            for record in self.LogRecords:
                if self.HasEntry(s, leader, record, offset) and self.HasOffset(s, follower, offset):
                    yield None

    def is_follower_caught_up_value(self, s, leader, follower, endOffset) -> bool:
        """The same operator evaluated as a value (under ~)."""
        return any(True for _ in self.IsFollowerCaughtUp(s, leader, follower, endOffset))

    def LeaderShrinkIsr(self, s) -> Iterator[Rec]:
        for leader in self.Replicas:
            isr = s.replicaState[leader].isr
            endOffset = self.GetEndOffset(s, leader)
            for replica in isr - {leader}:
                if not self.is_follower_caught_up_value(s, leader, replica, endOffset):
                    yield from self.QuorumUpdateLeaderAndIsr(s, leader, isr - {replica})

    def LeaderExpandIsr(self, s) -> Iterator[Rec]:
        for leader in self.Replicas:
            isr = s.replicaState[leader].isr
            leaderHw = s.replicaState[leader].hw
            for replica in set(self.Replicas) - isr:
                for _ in self.IsFollowerCaughtUp(s, leader, replica, leaderHw):
                    yield from self.QuorumUpdateLeaderAndIsr(s, leader, isr | {replica})

    def LeaderIncHighWatermark(self, s) -> Iterator[Rec]:
        for offset in self.Offsets:
            for leader in self.Replicas:
                if (not self.ReplicaPresumesLeadership(s, leader) or offset
                    != s.replicaState[leader].hw):
                    continue
                if all(
                    self.ReplicaIsFollowing(s, f, leader) and self.HasOffset(s, f, offset)
                    for f in s.replicaState[leader].isr
                ):
                    old = s.replicaState[leader]
                    yield s.but(replicaState=s.replicaState.at(leader, old.but(hw=old.hw + 1)))

    def BecomeFollowerAndTruncateTo(self, s, leader, replica, truncationOffset) -> Iterator[Rec]:
        for req in s.leaderAndIsrRequests:
            if leader == replica or req.leader != leader:
                continue
            if not req.leaderEpoch > s.replicaState[replica].leaderEpoch:
                continue
            new_state = Rec(
                leaderEpoch=req.leaderEpoch, leader=leader, isr=req.isr,
                hw=self.Min({truncationOffset, s.replicaState[replica].hw}),
            )
            branches = []
            if leader == NONE:
                branches.append(s.replicaLog)
            if leader != NONE:
                branches.extend(self.TruncateTo(s, replica, truncationOffset))
            for logs in branches:
                yield s.but(replicaLog=logs, replicaState=s.replicaState.at(replica, new_state))

    def FollowerReplicate(self, s) -> Iterator[Rec]:
        for follower in self.Replicas:
            for leader in self.Replicas:
                if not (self.ReplicaPresumesLeadership(s, leader)
                        and self.ReplicaIsFollowing(s, follower, leader)):
                    continue
                for logs in self.ReplicateTo(s, leader, follower):
                    newEndOffset = self.GetEndOffset(s, follower) + 1
                    followerHw = self.Min({s.replicaState[leader].hw, newEndOffset})
                    old = s.replicaState[follower]
                    yield s.but(replicaLog=logs,
                                replicaState=s.replicaState.at(follower, old.but(hw=followerHw)))

    # -- KafkaTruncateToHighWatermark --------------------------------------------------------------
    def BecomeFollowerTruncateToHighWatermark(self, s) -> Iterator[Rec]:
        for leader in self.Replicas:
            for replica in self.Replicas:
                yield from self.BecomeFollowerAndTruncateTo(s, leader, replica,
                                                            s.replicaState[replica].hw)

    # -- Kip101 ------------------------------------------------------------------------------------
    def OffsetsWithLargerEpochs(self, s, replica, epoch):
        return {e.offset for e in self.GetAllEntries(s, replica) if e.record.epoch > epoch}

    def LookupOffsetForEpoch(self, s, leader, follower, epoch):
        if self.IsEmpty(s, leader):
            return s.replicaState[follower].hw
        if self.GetLatestRecord(s, leader).epoch == epoch:
            return self.GetEndOffset(s, leader)
        larger = self.OffsetsWithLargerEpochs(s, leader, epoch)
        return s.replicaState[follower].hw if larger == set() else self.Min(larger)

    def IsLatestRecord(self, s, replica, record) -> Iterator[None]:
        for offset in self.Offsets:
            if self.IsLatestEntry(s, replica, record, offset):
                yield None

    def BecomeFollowerTruncateKip101(self, s) -> Iterator[Rec]:
        for leader in self.Replicas:
            for replica in self.Replicas:
                if self.IsEmpty(s, replica):
                    yield from self.BecomeFollowerAndTruncateTo(s, leader, replica, 0)
                for record in self.LogRecords:
                    for _ in self.IsLatestRecord(s, replica, record):
                        offset = self.LookupOffsetForEpoch(s, leader, replica, record.epoch)
                        yield from self.BecomeFollowerAndTruncateTo(s, leader, replica, offset)

    # -- Kip279 ------------------------------------------------------------------------------------
    def MatchingOffsets(self, s, replica1, replica2):
        return {e.offset for e in self.GetAllEntries(s, replica1)
                if self.HasEntry(s, replica2, e.record, e.offset)}

    def FirstNonMatchingOffsetFromTail(self, s, leader, follower):
        if self.IsEmpty(s, leader):
            return 0
        matching = self.MatchingOffsets(s, follower, leader)
        return 0 if matching == set() else self.Max(matching) + 1

    def BecomeFollowerTruncateKip279(self, s) -> Iterator[Rec]:
        for leader in self.Replicas:
            for replica in self.Replicas:
                if self.IsEmpty(s, replica):
                    yield from self.BecomeFollowerAndTruncateTo(s, leader, replica, 0)
                offset = self.FirstNonMatchingOffsetFromTail(s, leader, replica)
                yield from self.BecomeFollowerAndTruncateTo(s, leader, replica, offset)

    # -- Kip320FirstTry ----------------------------------------------------------------------------
    def IsFollowerCaughtUpToLeaderEpoch(self, s, leader, follower, endOffset) -> Iterator[None]:
        if not (self.ReplicaPresumesLeadership(s, leader)
                and self.ReplicaIsFollowing(s, follower, leader)):
            return
        if endOffset == 0:
            yield None
        if endOffset > 0:
            offset = endOffset - 1
            for record in self.LogRecords:
                if (
                    self.HasEntry(s, leader, record, offset)
                    and self.HasOffset(s, follower, offset)
                    and self.GetRecordAtOffset(s, follower, offset).epoch == record.epoch
                ):
                    yield None

    def caught_up_to_epoch_value(self, s, leader, follower, endOffset) -> bool:
        return any(True for _ in self.IsFollowerCaughtUpToLeaderEpoch(s, leader, follower,
                                                                      endOffset))

    def FollowerNeedsTruncation(self, s, follower, leader) -> Iterator[None]:
        if self.GetEndOffset(s, follower) > self.GetEndOffset(s, leader):
            yield None
        for record in self.LogRecords:
            for offset in self.Offsets:
                if (
                    self.IsLatestEntry(s, follower, record, offset)
                    and self.HasOffset(s, leader, offset)
                    and self.GetRecordAtOffset(s, leader, offset).epoch != record.epoch
                ):
                    yield None

    def FollowerTruncate(self, s) -> Iterator[Rec]:
        for leader in self.Replicas:
            for follower in self.Replicas:
                if not (self.ReplicaPresumesLeadership(s, leader)
                        and self.ReplicaIsFollowing(s, follower, leader)):
                    continue
                for _ in self.FollowerNeedsTruncation(s, follower, leader):
                    t = self.FirstNonMatchingOffsetFromTail(s, leader, follower)
                    for logs in self.TruncateTo(s, follower, t):
                        old = s.replicaState[follower]
                        yield s.but(replicaLog=logs,
                                    replicaState=s.replicaState.at(follower,
                                                                   old.but(hw=min(t, old.hw))))

    def ImprovedLeaderIncHighWatermark(self, s) -> Iterator[Rec]:
        for leader in self.Replicas:
            if not self.ReplicaPresumesLeadership(s, leader):
                continue
            leaderHw = s.replicaState[leader].hw
            for record in self.LogRecords:
                if self.HasEntry(s, leader, record, leaderHw) and all(
                    self.caught_up_to_epoch_value(s, leader, f, leaderHw + 1)
                    for f in s.replicaState[leader].isr
                ):
                    old = s.replicaState[leader]
                    yield s.but(replicaState=s.replicaState.at(leader, old.but(hw=old.hw + 1)))

    def FollowerFetch(self, s) -> Iterator[Rec]:
        for follower in self.Replicas:
            for leader in self.Replicas:
                followerEndOffset = self.GetEndOffset(s, follower)
                for _ in self.IsFollowerCaughtUpToLeaderEpoch(s, leader, follower,
                                                              followerEndOffset):
                    for logs in self.ReplicateTo(s, leader, follower):
                        followerHw = self.Min({s.replicaState[leader].hw, followerEndOffset + 1})
                        old = s.replicaState[follower]
                        yield s.but(replicaLog=logs,
                                    replicaState=s.replicaState.at(follower,
                                                                   old.but(hw=followerHw)))

    def LeaderShrinkIsrBetterFencing(self, s) -> Iterator[Rec]:
        for leader in self.Replicas:
            isr = s.replicaState[leader].isr
            endOffset = self.GetEndOffset(s, leader)
            for replica in isr - {leader}:
                if not self.caught_up_to_epoch_value(s, leader, replica, endOffset):
                    yield from self.QuorumUpdateLeaderAndIsr(s, leader, isr - {replica})

    def HasHighWatermarkReachedCurrentEpoch(self, s, leader) -> Iterator[None]:
        hw = s.replicaState[leader].hw
        if hw == self.GetEndOffset(s, leader):
            yield None
        for record in self.LogRecords:
            if (self.HasEntry(s, leader, record, hw) and record.epoch
                == s.replicaState[leader].leaderEpoch):
                yield None

    def LeaderExpandIsrBetterFencing(self, s) -> Iterator[Rec]:
        for leader in self.Replicas:
            isr = s.replicaState[leader].isr
            leaderHw = s.replicaState[leader].hw
            for replica in set(self.Replicas) - isr:
                for _ in self.IsFollowerCaughtUpToLeaderEpoch(s, leader, replica, leaderHw):
                    for _ in self.HasHighWatermarkReachedCurrentEpoch(s, leader):
                        yield from self.QuorumUpdateLeaderAndIsr(s, leader, isr | {replica})

    def BecomeFollower(self, s) -> Iterator[Rec]:
        for leader in self.Replicas:
            for replica in self.Replicas:
                for req in s.leaderAndIsrRequests:
                    if (leader != replica and req.leader == leader and req.leaderEpoch
                        > s.replicaState[replica].leaderEpoch):
                        old = s.replicaState[replica]
                        new = Rec(leaderEpoch=req.leaderEpoch, leader=leader, isr=req.isr,
                                  hw=old.hw)
                        yield s.but(replicaState=s.replicaState.at(replica, new))

    # -- Kip320 ------------------------------------------------------------------------------------
    def IsFollowingLeaderEpoch(self, s, leader, follower):
        return (
            self.ReplicaPresumesLeadership(s, leader)
            and s.replicaState[follower].leader == leader
            and s.replicaState[follower].leaderEpoch == s.replicaState[leader].leaderEpoch
        )

    def FencedFollowerFetch(self, s) -> Iterator[Rec]:
        for follower in self.Replicas:
            for leader in self.Replicas:
                if not self.IsFollowingLeaderEpoch(s, leader, follower):
                    continue
                for logs in self.ReplicateTo(s, leader, follower):
                    newEndOffset = self.GetEndOffset(s, follower) + 1
                    followerHw = self.Min({s.replicaState[leader].hw, newEndOffset})
                    old = s.replicaState[follower]
                    yield s.but(replicaLog=logs,
                                replicaState=s.replicaState.at(follower, old.but(hw=followerHw)))

    def FencedLeaderIncHighWatermark(self, s) -> Iterator[Rec]:
        for leader in self.Replicas:
            leaderHw = s.replicaState[leader].hw
            if self.HasOffset(s, leader, leaderHw) and all(
                self.IsFollowingLeaderEpoch(s, leader, f) and self.HasOffset(s, f, leaderHw)
                for f in s.replicaState[leader].isr
            ):
                old = s.replicaState[leader]
                yield s.but(replicaState=s.replicaState.at(leader, old.but(hw=old.hw + 1)))

    def FencedLeaderShrinkIsr(self, s) -> Iterator[Rec]:
        for leader in self.Replicas:
            isr = s.replicaState[leader].isr
            leaderEndOffset = self.GetEndOffset(s, leader)
            for follower in isr - {leader}:
                if not self.IsFollowingLeaderEpoch(s, leader, follower):
                    yield from self.QuorumUpdateLeaderAndIsr(s, leader, isr - {follower})
                if self.GetEndOffset(s, follower) < leaderEndOffset:
                    yield from self.QuorumUpdateLeaderAndIsr(s, leader, isr - {follower})

    def HasFollowerReachedHighWatermark(self, s, leader, follower) -> Iterator[None]:
        hw = s.replicaState[leader].hw
        if hw == 0:
            yield None
        if hw > 0 and self.HasOffset(s, follower, hw - 1):
            yield None

    def FencedLeaderExpandIsr(self, s) -> Iterator[Rec]:
        for leader in self.Replicas:
            isr = s.replicaState[leader].isr
            for follower in set(self.Replicas) - isr:
                if not self.IsFollowingLeaderEpoch(s, leader, follower):
                    continue
                for _ in self.HasFollowerReachedHighWatermark(s, leader, follower):
                    for _ in self.HasHighWatermarkReachedCurrentEpoch(s, leader):
                        yield from self.QuorumUpdateLeaderAndIsr(s, leader, isr | {follower})

    def FencedBecomeFollowerAndTruncate(self, s) -> Iterator[Rec]:
        for leader in self.Replicas:
            for replica in self.Replicas:
                for req in s.leaderAndIsrRequests:
                    if not (
                        leader != replica
                        and req.leader == leader
                        and req.leaderEpoch > s.replicaState[replica].leaderEpoch
                    ):
                        continue

                    def become(hw, req=req, replica=replica):
                        return s.replicaState.at(
                            replica, Rec(leaderEpoch=req.leaderEpoch, leader=req.leader,
                                         isr=req.isr, hw=hw)
                        )

                    if leader == NONE:
                        yield s.but(replicaState=become(s.replicaState[replica].hw))
                    if (
                        leader != NONE
                        and self.ReplicaPresumesLeadership(s, leader)
                        and s.replicaState[leader].leaderEpoch == req.leaderEpoch
                    ):
                        t = self.FirstNonMatchingOffsetFromTail(s, leader, replica)
                        for logs in self.TruncateTo(s, replica, t):
                            yield s.but(replicaLog=logs,
                                        replicaState=become(self.Min({t,
                                                                      s.replicaState[replica].hw})))


def to_fast(s: Rec) -> KafkaState:
    """The state of ``spec.reference`` that encodes the same TLA+ state."""

    def rid(name: str) -> int:
        return FAST_NONE if name == NONE else int(name[1:])

    def isr(names) -> frozenset:
        return frozenset(rid(n) for n in names)

    replicas = sorted(s.replicaLog, key=rid)
    logs = []
    for r in replicas:
        log = s.replicaLog[r]
        assert all(log.records[o] == NIL for o in log.records if o >= log.endOffset)
        logs.append(tuple(LogRecord(log.records[o].id, log.records[o].epoch)
                          for o in range(log.endOffset)))
    states = tuple(
        ReplicaState(st.hw, st.leaderEpoch, rid(st.leader), isr(st.isr))
        for st in (s.replicaState[r] for r in replicas)
    )

    def quorum(q) -> QuorumState:
        return QuorumState(q.leaderEpoch, rid(q.leader), isr(q.isr))

    return KafkaState(
        replica_log=tuple(logs),
        replica_state=states,
        next_record_id=s.nextRecordId,
        next_leader_epoch=s.nextLeaderEpoch,
        leader_and_isr_requests=frozenset(quorum(q) for q in s.leaderAndIsrRequests),
        quorum_state=quorum(s.quorumState),
    )


def explore(spec: LiteralSpec) -> tuple[dict[Rec, int], int, int]:
    """Plain breadth-first search: (state -> level, states generated, depth), TLC's conventions."""
    level = {s: 1 for s in spec.Init()}
    generated = len(level)
    frontier = list(level)
    depth = 1
    while frontier:
        new = []
        for s in frontier:
            for t in spec.Next(s):
                generated += 1
                if t not in level:
                    level[t] = depth + 1
                    new.append(t)
        if new:
            depth += 1
        frontier = new
    return level, generated, depth
