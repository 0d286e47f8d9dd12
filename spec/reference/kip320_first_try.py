"""Kip320FirstTry.tla: followers fetch with an expected epoch and truncate only when told to."""

from __future__ import annotations

from spec.model import Action
from spec.reference.base import KafkaState, ReplicaState, Successors, replace_at
from spec.reference.kip279 import Kip279


class Kip320FirstTry(Kip279):
    module = "Kip320FirstTry"
    next_actions = (
        "ControllerElectLeader",
        "ControllerShrinkIsr",
        "BecomeLeader",
        "LeaderExpandIsrBetterFencing",
        "LeaderShrinkIsrBetterFencing",
        "LeaderWrite",
        "ImprovedLeaderIncHighWatermark",
        "BecomeFollower",
        "FollowerFetch",
        "FollowerTruncate",
    )

    # -- operators ---------------------------------------------------------------------------------
    @staticmethod
    def is_follower_caught_up_to_leader_epoch(s: KafkaState, leader: int, follower: int,
                                              end_offset: int) -> bool:
        """IsFollowerCaughtUpToLeaderEpoch: the record before ``end_offset`` has the leader's epoch.

        Its disjuncts (endOffset = 0, endOffset > 0) exclude each other and its ``\\E record`` has
        at most one witness.
        """
        rs = s.replica_state
        if rs[leader - 1].leader != leader or rs[follower - 1].leader != leader:
            return False
        if end_offset == 0:
            return True
        if end_offset < 0:
            return False
        offset = end_offset - 1
        leader_log = s.replica_log[leader - 1]
        follower_log = s.replica_log[follower - 1]
        return offset < len(leader_log) and offset < len(follower_log) and (
            follower_log[offset].epoch == leader_log[offset].epoch
        )

    @staticmethod
    def follower_needs_truncation(s: KafkaState, follower: int, leader: int) -> bool:
        """FollowerNeedsTruncation. Its two disjuncts exclude each other: the first needs the
        follower's end offset above the leader's, the second needs the leader to hold the
        follower's last offset. So it contributes at most one successor."""
        follower_log = s.replica_log[follower - 1]
        leader_log = s.replica_log[leader - 1]
        if len(follower_log) > len(leader_log):
            return True
        if not follower_log:
            return False
        offset = len(follower_log) - 1
        return offset < len(leader_log) and leader_log[offset].epoch != follower_log[offset].epoch

    # -- actions -----------------------------------------------------------------------------------
    def FollowerTruncate(self, s: KafkaState) -> Successors:
        rs = s.replica_state
        for leader in self.replicas:
            if rs[leader - 1].leader != leader:
                continue
            for follower in self.replicas:
                if (rs[follower - 1].leader != leader
                    or not self.follower_needs_truncation(s, follower, leader)):
                    continue
                offset = self.first_non_matching_offset_from_tail(s, leader, follower)
                logs = self.truncate_to(s, follower, offset)
                if logs is None:
                    continue
                mine = rs[follower - 1]
                yield (
                    Action("FollowerTruncate", (("leader", leader), ("follower", follower))),
                    s._replace(
                        replica_log=logs,
                        replica_state=replace_at(rs, follower - 1,
                                                 mine._replace(hw=min(offset, mine.hw))),
                    ),
                )

    def ImprovedLeaderIncHighWatermark(self, s: KafkaState) -> Successors:
        rs = s.replica_state
        for leader in self.replicas:
            mine = rs[leader - 1]
            if mine.leader != leader:
                continue
            hw = mine.hw
            if hw >= len(s.replica_log[leader - 1]):  # \E record : HasEntry(leader, record, hw)
                continue
            if all(self.is_follower_caught_up_to_leader_epoch(s, leader, f, hw + 1)
                   for f in mine.isr):
                yield (
                    Action("ImprovedLeaderIncHighWatermark", (("leader", leader),)),
                    s._replace(replica_state=replace_at(rs, leader - 1, mine._replace(hw=hw + 1))),
                )

    def FollowerFetch(self, s: KafkaState) -> Successors:
        rs = s.replica_state
        for follower in self.replicas:
            leader = rs[follower - 1].leader  # IsFollowerCaughtUpToLeaderEpoch pins the leader
            if leader < 1:
                continue
            end_offset = len(s.replica_log[follower - 1])
            if not self.is_follower_caught_up_to_leader_epoch(s, leader, follower, end_offset):
                continue
            logs = self.replicate_to(s, leader, follower, self.log_size)
            if logs is None:
                continue
            new = rs[follower - 1]._replace(hw=min(rs[leader - 1].hw, end_offset + 1))
            yield (
                Action("FollowerFetch", (("follower", follower), ("leader", leader))),
                s._replace(replica_log=logs, replica_state=replace_at(rs, follower - 1, new)),
            )

    def LeaderShrinkIsrBetterFencing(self, s: KafkaState) -> Successors:
        rs = s.replica_state
        for leader in self.replicas:
            isr = rs[leader - 1].isr
            end_offset = len(s.replica_log[leader - 1])
            for replica in sorted(isr - {leader}):
                if self.is_follower_caught_up_to_leader_epoch(s, leader, replica, end_offset):
                    continue
                nxt = self.quorum_update_leader_and_isr(s, leader, isr - {replica})
                if nxt is not None:
                    yield Action("LeaderShrinkIsrBetterFencing",
                                 (("leader", leader), ("replica", replica))), nxt

    def LeaderExpandIsrBetterFencing(self, s: KafkaState) -> Successors:
        rs = s.replica_state
        for leader in self.replicas:
            isr = rs[leader - 1].isr
            leader_hw = rs[leader - 1].hw
            for replica in sorted(self.all_replicas - isr):
                if not self.is_follower_caught_up_to_leader_epoch(s, leader, replica, leader_hw):
                    continue
                if not self.has_high_watermark_reached_current_epoch(s, leader):
                    continue
                nxt = self.quorum_update_leader_and_isr(s, leader, isr | {replica})
                if nxt is not None:
                    yield Action("LeaderExpandIsrBetterFencing",
                                 (("leader", leader), ("replica", replica))), nxt

    def BecomeFollower(self, s: KafkaState) -> Successors:
        """\\E leader, replica \\in Replicas, request \\in leaderAndIsrRequests: no truncation."""
        rs = s.replica_state
        requests = self.sorted_requests(s)
        for leader in self.replicas:
            for replica in self.replicas:
                if leader == replica:
                    continue
                mine = rs[replica - 1]
                for request in requests:
                    if request.leader != leader or request.leader_epoch <= mine.leader_epoch:
                        continue
                    new = ReplicaState(mine.hw, request.leader_epoch, leader, request.isr)
                    yield (
                        Action("BecomeFollower", (("leader", leader), ("replica", replica),
                                                  ("epoch", request.leader_epoch))),
                        s._replace(replica_state=replace_at(rs, replica - 1, new)),
                    )
