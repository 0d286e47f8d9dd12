"""Kip101.tla: a new follower truncates at the offset the leader gives for its last epoch."""

from __future__ import annotations

from spec.reference.base import KafkaReplication, KafkaState, Successors


class Kip101(KafkaReplication):
    module = "Kip101"
    next_actions = (
        "ControllerElectLeader",
        "ControllerShrinkIsr",
        "BecomeLeader",
        "LeaderExpandIsr",
        "LeaderShrinkIsr",
        "LeaderWrite",
        "LeaderIncHighWatermark",
        "BecomeFollowerTruncateKip101",
        "FollowerReplicate",
    )

    @staticmethod
    def lookup_offset_for_epoch(s: KafkaState, leader: int, follower: int, epoch: int) -> int:
        """LookupOffsetForEpoch(leader, follower, epoch), with OffsetsWithLargerEpochs."""
        leader_log = s.replica_log[leader - 1]
        if not leader_log:
            return s.replica_state[follower - 1].hw
        if leader_log[-1].epoch == epoch:
            return len(leader_log)
        larger = [offset for offset, record in enumerate(leader_log) if record.epoch > epoch]
        if not larger:
            return s.replica_state[follower - 1].hw
        return min(larger)

    def BecomeFollowerTruncateKip101(self, s: KafkaState) -> Successors:
        """\\E leader, replica : (IsEmpty(replica) /\\ ..(0)) \\/ (\\E record : IsLatestRecord ..).

        The two disjuncts exclude each other and the latest record is unique, so each
        (leader, replica) pair takes one truncation offset.
        """
        name = "BecomeFollowerTruncateKip101"
        for leader in self.replicas:
            for replica in self.replicas:
                log = s.replica_log[replica - 1]
                if not log:
                    yield from self.become_follower_and_truncate_to(s, name, leader, replica, 0)
                else:
                    offset = self.lookup_offset_for_epoch(s, leader, replica, log[-1].epoch)
                    yield from self.become_follower_and_truncate_to(s, name, leader, replica,
                                                                    offset)
