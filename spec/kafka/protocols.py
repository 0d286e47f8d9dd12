"""Protocol versions as data: each named version is a set of feature flags.

A flag is switched from the command line with ``--feature NAME=on|off`` on top of the chosen
``--protocol``. The truncation mechanism is picked by the strongest flag that is on:
``truncate-on-fetch`` > ``epoch-in-response`` (KIP-279) > ``offsets-for-leader-epoch`` (KIP-101) >
truncation to the high watermark.

To add a version: add its flags as fields of ``Features`` (default off, so older versions keep
their meaning), describe them in ``FLAGS`` and add a row to ``PROTOCOLS``. Every flag switches
alone: ``--protocol kip-380 --feature kafka-7786-fix=off`` asks "what if KIP-380 without the fix".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace

from checker.errors import UsageError


@dataclass(frozen=True)
class Features:
    """The feature flags of one protocol configuration (field names use ``_``, flags use ``-``)."""

    #: KIP-101: a new follower sends OffsetsForLeaderEpoch(latest epoch) and truncates to the answer
    offsets_for_leader_epoch: bool = False
    #: KIP-279: the answer carries its epoch; truncate to the largest common (epoch, offset), in rounds
    epoch_in_response: bool = False
    #: KAFKA-10554: no OffsetsForLeaderEpoch round; the leader answers a diverging epoch in the fetch
    truncate_on_fetch: bool = False
    #: KAFKA-7415: a new leader registers (epoch, LEO) in its epoch cache before appending anything
    epoch_on_become_leader: bool = False
    #: KIP-320: Fetch and OffsetsForLeaderEpoch carry the current leader epoch; the leader answers
    #: FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH / NOT_LEADER and the follower retries; every epoch
    #: bump (not only a leader change) restarts truncation
    leader_epoch_fencing: bool = False
    #: KAFKA-7128: the ISR expands only once the leader's HW reached the start of its epoch
    expand_isr_guard: bool = False
    #: KAFKA-13207: ignore a fetch response when the follower's epoch changed while it was in flight
    stale_response_guard: bool = False
    #: 2.1.0 (KIP-320): a FENCED_LEADER_EPOCH answer removes the partition from the fetcher until the
    #: next LeaderAndIsr (instead of a retry); with an outdated OffsetsForLeaderEpoch answer that is KAFKA-7786
    fenced_removes_partition: bool = False
    #: KAFKA-7786's fix (2.1.1/2.2): ignore an OffsetsForLeaderEpoch answer when the partition's leader
    #: epoch changed while the request was in flight
    kafka_7786_fix: bool = False
    #: KIP-380: a broker rejects a LeaderAndIsr/StopReplica stamped with an older broker epoch than its own
    reject_stale_broker_epoch: bool = False
    #: KIP-380: the controller rejects a ControlledShutdown from an older generation than it registered
    reject_stale_shutdown: bool = False
    #: KIP-380: the controller sees a bounced broker by its higher broker epoch: failure, then start-up handling
    detect_bounced_broker: bool = False
    #: KAFKA-10706's fix (late 2020): a follower's truncation at or beyond its LEO still drops the epochs
    #: starting there from its cache (one it registered as leader but never wrote in)
    kafka_10706_fix: bool = False
    #: configuration: the controller may elect a live replica outside the ISR when no ISR member lives
    unclean: bool = False
    #: a crash may lose the unflushed tail of the log (KIP-101's second scenario)
    lossy_crash: bool = False

    def flag(self, name: str) -> bool:
        return bool(getattr(self, _field_name(name)))

    def on(self) -> tuple[str, ...]:
        """The names of the flags that are on, in table order."""
        return tuple(name for name in FLAGS if self.flag(name))

    def as_dict(self) -> dict[str, bool]:
        return {name: self.flag(name) for name in FLAGS}

    @property
    def truncation(self) -> str:
        """The truncation mechanism these flags select."""
        if self.truncate_on_fetch:
            return "truncate-on-fetch"
        if self.epoch_in_response:
            return "kip-279"
        if self.offsets_for_leader_epoch:
            return "kip-101"
        return "hw-truncation"

    @property
    def uses_offsets_request(self) -> bool:
        return (self.offsets_for_leader_epoch or self.epoch_in_response) and not self.truncate_on_fetch


def _field_name(flag: str) -> str:
    return flag.replace("-", "_")


#: flag name -> one-line description (what ``kmc list`` shows)
FLAGS: dict[str, str] = {
    "offsets-for-leader-epoch": "KIP-101: truncate to the leader's end offset of the follower's latest epoch",
    "epoch-in-response": "KIP-279: the answer names its epoch; truncate to the largest common epoch, in rounds",
    "truncate-on-fetch": "KAFKA-10554: the fetch carries the last fetched epoch; the leader answers a diverging epoch",
    "epoch-on-become-leader": "KAFKA-7415: a new leader registers its epoch in the cache before any append",
    "leader-epoch-fencing": "KIP-320: requests carry the current leader epoch and are fenced by the leader",
    "expand-isr-guard": "KAFKA-7128: expand the ISR only once the HW reached the start of the leader's epoch",
    "stale-response-guard": "KAFKA-13207: ignore a fetch response whose epoch is no longer the follower's",
    "fenced-removes-partition": "2.1.0: FENCED_LEADER_EPOCH removes the partition from the fetcher until the next LeaderAndIsr",
    "kafka-7786-fix": "KAFKA-7786: ignore an OffsetsForLeaderEpoch answer if the partition's epoch changed meanwhile",
    "reject-stale-broker-epoch": "KIP-380: a broker rejects control requests for an older broker epoch (STALE_BROKER_EPOCH)",
    "reject-stale-shutdown": "KIP-380: the controller rejects a ControlledShutdown from an older broker epoch",
    "detect-bounced-broker": "KIP-380: the controller detects a bounced broker by its higher broker epoch",
    "kafka-10706-fix": "KAFKA-10706: truncating at the LEO still drops cache epochs that start there",
    "unclean": "configuration: unclean leader election from any live replica when no ISR member lives",
    "lossy-crash": "a crash may lose the unflushed tail of the log (KIP-101's second scenario)",
}
assert set(FLAGS) == {f.name.replace("_", "-") for f in fields(Features)}

_HW = Features()
_KIP101 = replace(_HW, offsets_for_leader_epoch=True)
_KIP279 = replace(_KIP101, epoch_in_response=True)
_KIP320 = replace(_KIP279, epoch_on_become_leader=True, leader_epoch_fencing=True, expand_isr_guard=True,
                  fenced_removes_partition=True)
_KIP380 = replace(_KIP320, kafka_7786_fix=True, reject_stale_broker_epoch=True, reject_stale_shutdown=True,
                  detect_bounced_broker=True)
_TRUNCATE_ON_FETCH = replace(_KIP380, offsets_for_leader_epoch=False, truncate_on_fetch=True, stale_response_guard=True,
                             kafka_10706_fix=True)

#: protocol name -> (description, feature flags)
PROTOCOLS: dict[str, tuple[str, Features]] = {
    "hw-truncation": ("before KIP-101 (0.10): a new follower truncates to its own high watermark", _HW),
    "kip-101": ("0.11: OffsetsForLeaderEpoch with the follower's latest epoch, HW as the fallback", _KIP101),
    "kip-279": ("2.0: the answer carries its epoch; truncate to the largest common epoch and offset", _KIP279),
    "kip-320": (
        "2.1.0: requests carry the leader epoch and are fenced; FENCED removes the partition (KAFKA-7786)",
        _KIP320,
    ),
    "kip-380": (
        "2.2: KIP-320 with KAFKA-7786's fix, and broker epochs in control requests (stale ones rejected)",
        _KIP380,
    ),
    "truncate-on-fetch": (
        "2.7+: no OffsetsForLeaderEpoch round; the fetch detects the diverging epoch (KIP-320 and KIP-380 on)",
        _TRUNCATE_ON_FETCH,
    ),
}
DEFAULT_PROTOCOL = "kip-101"


def resolve(protocol: str, overrides: Mapping[str, bool] | None = None) -> Features:
    """The flags of ``protocol`` with ``overrides`` (flag name -> on/off) applied."""
    if protocol not in PROTOCOLS:
        raise UsageError(f"unknown protocol {protocol!r}; known: {', '.join(PROTOCOLS)}")
    features = PROTOCOLS[protocol][1]
    changes = {}
    for name, value in (overrides or {}).items():
        if name not in FLAGS:
            raise UsageError(f"no feature flag {name!r}; flags: {', '.join(FLAGS)}")
        changes[_field_name(name)] = bool(value)
    return replace(features, **changes)
