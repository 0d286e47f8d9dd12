"""Building blocks of the seed stories, shared by the Kafka scenario tests: the model of a version
and the request/response round trips, as (action name, params) steps for ``run_scenario``."""

from __future__ import annotations

from spec.registry import build_model


def model(protocol: str, *consts: str, features: tuple[str, ...] = ()):
    return build_model("kafka", list(consts), protocol=protocol, feature_assignments=list(features))


def fetch(follower: int, leader: int) -> list:
    return [
        ("SendFetch", {"follower": follower, "leader": leader}),
        ("ServeFetch", {"leader": leader, "follower": follower}),
        ("ReceiveFetch", {"follower": follower, "leader": leader}),
    ]


def offsets_round(follower: int, leader: int) -> list:
    return [
        ("SendOffsetsForLeaderEpoch", {"follower": follower, "leader": leader}),
        ("ServeOffsetsForLeaderEpoch", {"leader": leader, "follower": follower}),
        ("ReceiveOffsetsForLeaderEpoch", {"follower": follower, "leader": leader}),
    ]


def deliver(broker: int, epoch: int) -> tuple:
    return ("DeliverLeaderAndIsr", {"broker": broker, "epoch": epoch})


#: the leader's ISR changes that are an AlterIsr request on a ZooKeeper row with alter-isr (2.7.0+)
ISR_CHANGES = ("ShrinkIsr", "ExpandIsr")


def _action_text(step) -> str:
    if isinstance(step, str):
        return step
    if isinstance(step, dict):
        params = step.get("params") or {}
        text = step["action"]
        return text + "".join(f" {k}={v}" for k, v in params.items())
    name, params = step
    return name + "".join(f" {k}={v}" for k, v in params.items())


def is_isr_change(step) -> bool:
    return _action_text(step).startswith(ISR_CHANGES)


def alter_isr_round(step) -> list:
    """The AlterIsr round trip that completes an ISR change on a row with alter-isr: the controller
    writes it, the leader takes the answer (``KafkaController.processAlterIsr``,
    ``Partition.handleAlterIsrResponse``)."""
    import re

    leader = int(re.search(r"leader=(\d+)", _action_text(step)).group(1))
    return [f"ProcessAlterPartition(leader={leader})",
            f"ReceiveAlterPartitionResponse(leader={leader})"]


def with_alter_isr(steps: list, protocol: str, features: dict
                   | None = None) -> tuple[list, StepShift]:
    """A story's steps as a row with alter-isr takes them: each ShrinkIsr / ExpandIsr followed at
    once by its AlterIsr round trip, so the ISR changes when the story says it does; other rows get
    the steps unchanged. Returns the steps and the map from the story's step numbers to the new
    ones."""
    from spec.kafka.protocols import resolve

    if not resolve(protocol, features or {}).alter_isr:
        return list(steps), StepShift(())
    out: list = []
    changes = []
    for number, step in enumerate(steps, start=1):
        out.append(step)
        if is_isr_change(step):
            out.extend(alter_isr_round(step))
            changes.append(number)
    return out, StepShift(tuple(changes))


class StepShift:
    """Story step numbers -> the numbers with the AlterIsr round trips inserted (two steps after
    each ISR change)."""

    def __init__(self, changes: tuple[int, ...]) -> None:
        self.changes = changes

    def blocked(self, step: int) -> int:
        """The number of the story's ``step`` (an action taken after every round trip before it)."""
        return step + 2 * sum(1 for c in self.changes if c < step)

    def state(self, step: int) -> int:
        """The state after the story's ``step`` (after its own round trip, if it is an ISR
        change)."""
        return step + 2 * sum(1 for c in self.changes if c <= step)


def alter_isr(leader: int) -> list:
    """The AlterIsr round trip as ``run_scenario`` steps (``alter_isr_round`` gives it as scenario
    text)."""
    return [("ProcessAlterPartition", {"leader": leader}),
            ("ReceiveAlterPartitionResponse", {"leader": leader})]
