"""Kip320.tla: fetches, high watermark, ISR changes and truncation all fenced by the leader
epoch."""

from __future__ import annotations

from spec.model import Action
from spec.reference.base import KafkaState, ReplicaState, Successors, replace_at
from spec.reference.kip279 import Kip279


class Kip320(Kip279):
    module = "Kip320"
    next_actions = (
        "ControllerElectLeader",
        "ControllerShrinkIsr",
        "BecomeLeader",
        "FencedLeaderExpandIsr",
        "FencedLeaderShrinkIsr",
        "LeaderWrite",
        "FencedLeaderIncHighWatermark",
        "FencedBecomeFollowerAndTruncate",
        "FencedFollowerFetch",
    )

    @staticmethod
    def is_following_leader_epoch(rs: tuple, leader: int, follower: int) -> bool:
        mine = rs[leader - 1]
        theirs = rs[follower - 1]
        return (mine.leader == leader and theirs.leader == leader and theirs.leader_epoch
                == mine.leader_epoch)

    def FencedFollowerFetch(self, s: KafkaState) -> Successors:
        rs = s.replica_state
        for follower in self.replicas:
            leader = rs[follower - 1].leader  # IsFollowingLeaderEpoch pins the leader
            if leader < 1 or not self.is_following_leader_epoch(rs, leader, follower):
                continue
            logs = self.replicate_to(s, leader, follower, self.log_size)
            if logs is None:
                continue
            new_end = len(s.replica_log[follower - 1]) + 1
            new = rs[follower - 1]._replace(hw=min(rs[leader - 1].hw, new_end))
            yield (
                Action("FencedFollowerFetch", (("follower", follower), ("leader", leader))),
                s._replace(replica_log=logs, replica_state=replace_at(rs, follower - 1, new)),
            )

    def FencedLeaderIncHighWatermark(self, s: KafkaState) -> Successors:
        """No ReplicaPresumesLeadership conjunct here: with an empty ISR any replica holding the
        offset at its high watermark may advance it, exactly as in the TLA+ text."""
        rs = s.replica_state
        logs = s.replica_log
        for leader in self.replicas:
            mine = rs[leader - 1]
            hw = mine.hw
            if hw >= len(logs[leader - 1]):
                continue
            if all(self.is_following_leader_epoch(rs, leader, f) and hw < len(logs[f - 1])
                   for f in mine.isr):
                yield (
                    Action("FencedLeaderIncHighWatermark", (("leader", leader),)),
                    s._replace(replica_state=replace_at(rs, leader - 1, mine._replace(hw=hw + 1))),
                )

    def FencedLeaderShrinkIsr(self, s: KafkaState) -> Successors:
        """``\\/ ~ IsFollowingLeaderEpoch \\/ end offset behind``: when both hold, TLC takes each
        disjunct and generates the successor twice; so do we."""
        rs = s.replica_state
        for leader in self.replicas:
            isr = rs[leader - 1].isr
            leader_end = len(s.replica_log[leader - 1])
            for follower in sorted(isr - {leader}):
                copies = (not self.is_following_leader_epoch(rs, leader, follower)) + (
                    len(s.replica_log[follower - 1]) < leader_end
                )
                if not copies:
                    continue
                nxt = self.quorum_update_leader_and_isr(s, leader, isr - {follower})
                if nxt is None:
                    continue
                act = Action("FencedLeaderShrinkIsr", (("leader", leader), ("follower", follower)))
                for _ in range(copies):
                    yield act, nxt

    def FencedLeaderExpandIsr(self, s: KafkaState) -> Successors:
        rs = s.replica_state
        for leader in self.replicas:
            isr = rs[leader - 1].isr
            hw = rs[leader - 1].hw
            for follower in sorted(self.all_replicas - isr):
                if not self.is_following_leader_epoch(rs, leader, follower):
                    continue
                # HasFollowerReachedHighWatermark
                if hw > 0 and hw - 1 >= len(s.replica_log[follower - 1]):
                    continue
                if not self.has_high_watermark_reached_current_epoch(s, leader):
                    continue
                nxt = self.quorum_update_leader_and_isr(s, leader, isr | {follower})
                if nxt is not None:
                    yield Action("FencedLeaderExpandIsr",
                                 (("leader", leader), ("follower", follower))), nxt

    def FencedBecomeFollowerAndTruncate(self, s: KafkaState) -> Successors:
        """\\E leader, replica \\in Replicas, request: the leader must already be in the request's
        epoch (its log is the one truncated against). ``leader`` ranges over Replicas, so the
        ``leader = None`` disjunct never holds."""
        rs = s.replica_state
        requests = self.sorted_requests(s)
        for leader in self.replicas:
            leader_state = rs[leader - 1]
            if leader_state.leader != leader:  # ReplicaPresumesLeadership(leader)
                continue
            for replica in self.replicas:
                if leader == replica:
                    continue
                mine = rs[replica - 1]
                for request in requests:
                    if request.leader != leader or request.leader_epoch <= mine.leader_epoch:
                        continue
                    if leader_state.leader_epoch != request.leader_epoch:
                        continue
                    offset = self.first_non_matching_offset_from_tail(s, leader, replica)
                    logs = self.truncate_to(s, replica, offset)
                    if logs is None:
                        continue
                    new = ReplicaState(min(offset, mine.hw), request.leader_epoch, leader,
                                       request.isr)
                    yield (
                        Action("FencedBecomeFollowerAndTruncate",
                               (("leader", leader), ("replica", replica),
                                ("epoch", request.leader_epoch))),
                        s._replace(replica_log=logs,
                                   replica_state=replace_at(rs, replica - 1, new)),
                    )
