"""Kip279.tla: a new follower truncates after the last offset where its log matches the leader's."""

from __future__ import annotations

from spec.reference.base import KafkaReplication, KafkaState, Successors

KIP279_NEXT = (
    "ControllerElectLeader",
    "ControllerShrinkIsr",
    "BecomeLeader",
    "LeaderExpandIsr",
    "LeaderShrinkIsr",
    "LeaderWrite",
    "LeaderIncHighWatermark",
    "BecomeFollowerTruncateKip279",
    "FollowerReplicate",
)


class Kip279(KafkaReplication):
    module = "Kip279"
    next_actions = KIP279_NEXT

    def BecomeFollowerTruncateKip279(self, s: KafkaState) -> Successors:
        """\\E leader, replica : (IsEmpty(replica) /\\ ..(0)) \\/
        ..(FirstNonMatchingOffsetFromTail).

        The disjuncts do not exclude each other: on an empty log both hold, both truncate to 0,
        and TLC generates that successor twice. So do we.
        """
        name = "BecomeFollowerTruncateKip279"
        for leader in self.replicas:
            for replica in self.replicas:
                if not s.replica_log[replica - 1]:
                    yield from self.become_follower_and_truncate_to(s, name, leader, replica, 0)
                offset = self.first_non_matching_offset_from_tail(s, leader, replica)
                yield from self.become_follower_and_truncate_to(s, name, leader, replica, offset)
