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
