"""KafkaTruncateToHighWatermark.tla: before KIP-101 a new follower truncated to its high
watermark."""

from __future__ import annotations

from spec.reference.base import KafkaReplication, KafkaState, Successors


class KafkaTruncateToHighWatermark(KafkaReplication):
    module = "KafkaTruncateToHighWatermark"
    next_actions = (
        "ControllerElectLeader",
        "ControllerShrinkIsr",
        "BecomeLeader",
        "LeaderExpandIsr",
        "LeaderShrinkIsr",
        "LeaderWrite",
        "LeaderIncHighWatermark",
        "BecomeFollowerTruncateToHighWatermark",
        "FollowerReplicate",
    )

    def BecomeFollowerTruncateToHighWatermark(self, s: KafkaState) -> Successors:
        """\\E leader, replica \\in Replicas : BecomeFollowerAndTruncateTo(leader, replica, hw)."""
        rs = s.replica_state
        for leader in self.replicas:
            for replica in self.replicas:
                yield from self.become_follower_and_truncate_to(
                    s, "BecomeFollowerTruncateToHighWatermark", leader, replica, rs[replica - 1].hw
                )
