"""Protocol versions as data: each version is a real Kafka release line, a set of feature flags.

Every behaviour that differs between releases is a flag (``Features``); ``spec.kafka.rules`` says
for each flag which release introduced it, the JIRA or KIP, and the file and method of that
release's source it follows. A version (``RELEASES``) is the set of flags that release has; the
names the project used before it was release-accurate (``hw-truncation``, ``kip-101``, ...,
``truncate-on-fetch``) stay as aliases, so saved traces, scenarios and scripts still replay.

A flag is switched from the command line with ``--feature NAME=on|off`` on top of the chosen
``--protocol``: ``--protocol 2.2.0 --feature kafka-7786-fix=off`` asks "what if 2.2.0 lacked the
fix". The truncation mechanism is picked by the strongest flag that is on: ``truncate-on-fetch`` >
``epoch-in-response`` (KIP-279) > ``offsets-for-leader-epoch`` (KIP-101) > truncation to the HW.

To add a release: add the flags of what it changed as fields of ``Features`` (default off, so older
versions keep their meaning), their rules to ``spec.kafka.rules``, and a row to ``RELEASES``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from functools import cached_property

from spec.errors import UsageError


@dataclass(frozen=True)
class Features:
    """The feature flags of one protocol configuration (field names use ``_``, flags use ``-``).
    Each flag's rule, release and source are in ``spec.kafka.rules``."""

    offsets_for_leader_epoch: bool = False  # KIP-101 (0.11.0)
    # 1.1.0: the controller keeps the last ISR member on its death, unclean election or not
    kafka_5642: bool = False
    # 1.1.0: a fetch answer is applied only to a partition ready for fetch (not truncating)
    kafka_5163: bool = False
    epoch_in_response: bool = False  # KIP-279 (2.0.0)
    # 2.0.1: a new leader registers its epoch; the lookup answers below the first epoch
    kafka_7415: bool = False
    kafka_7128: bool = False  # 2.0.1: ISR expansion also needs the leader epoch's start offset
    # 2.0.1: a follower that missed an epoch of the same leader truncates again
    kafka_7164: bool = False
    # 2.0.1: a follower ahead of its leader truncates (OFFSET_OUT_OF_RANGE) instead of halting
    kafka_7414: bool = False
    leader_epoch_fencing: bool = False  # KIP-320 (2.1.0)
    # 2.1.0: a follower whose LEO is the leader's is never shrunk out of the ISR
    kafka_7152: bool = False
    # 2.1.0: FENCED_LEADER_EPOCH removes the partition from the fetcher
    fenced_removes_partition: bool = False
    kafka_7786_fix: bool = False  # 2.1.1 / 2.2.0
    reject_stale_broker_epoch: bool = False  # KIP-380 (2.2.0)
    # 2.4.0: a fetch the leader answers with an error leaves the follower's recorded LEO alone
    kafka_8400: bool = False
    # 2.4.0: a truncation below the HW lowers the HW to the new LEO
    truncation_lowers_hw: bool = False
    reject_stale_shutdown: bool = False  # KIP-380 (2.2.0)
    detect_bounced_broker: bool = False  # KIP-380 (2.2.0)
    # 2.5.0: FENCED removes the partition only if the request's epoch is the fetch state's
    kafka_9654: bool = False
    kafka_10706_fix: bool = False  # truncation at the LEO still cleans the epoch cache
    truncate_on_fetch: bool = False  # KAFKA-10554 (2.8.0)
    kafka_13141: bool = False  # 2.7.2 / 2.8.1 / 3.0.0
    kafka_13207: bool = False  # 2.8.1 / 3.0.0
    kafka_14704: bool = False  # 3.4.1 / 3.5.0
    # 3.9.1 / 4.0.1 / 4.1.0 (ZooKeeper rows: 3.9.1, the last line with ZooKeeper mode)
    kafka_18991: bool = False
    # 3.4.0, ZooKeeper mode (alter-isr): INELIGIBLE_REPLICA for a dead / shutting-down member
    kafka_14140: bool = False
    # 3.1.0: the leader recomputes its HW when an AlterIsr / AlterPartition commits
    kafka_13091: bool = False
    unclean: bool = False  # configuration: unclean.leader.election.enable
    lossy_crash: bool = False  # fault: a crash loses the unflushed tail of the log
    consumer_truncation_detection: bool = False  # KIP-320 consumer side, KAFKA-7747 (2.3.0)
    # KIP-392 (2.4.0), configuration: replica.selector.class; off in every row
    fetch_from_follower: bool = False
    #: 2.7.0 (KIP-497, IBP >= 2.7-IV2): ZooKeeper-mode ISR changes go through AlterIsr. After the
    #: fixes in table order: a mechanism, not a fix, though switching it on lengthens every trace
    #: with an ISR change by two steps, which a matrix story must not credit as removing a
    #: counterexample (checker.stories tries the flags in this order)
    alter_isr: bool = False
    # KIP-500 / KIP-631: the KRaft controller (AlterPartition, registration, fencing)
    kraft: bool = False
    kip_841: bool = False  # 3.3.0: fenced / shutting-down replicas are ineligible to join the ISR
    # 3.5.0: broker epochs in Fetch and AlterPartition; a stale one is ineligible
    kip_903: bool = False
    kafka_15021: bool = False  # 3.6.0: an ISR shrink no longer bumps the leader epoch
    # 3.7.0: the leader's HW does not advance while the ISR is below min.insync.replicas
    kafka_15583: bool = False
    # 3.7.0 code, on by default in 4.1.0: strict min ISR and eligible leader replicas
    kip_966_elr: bool = False
    # KIP-966 (3.8.0): an unclean restart leaves the ISR and the ELR
    clean_shutdown_detection: bool = False
    # 4.1.0: a clean restart keeps ISR/ELR membership again (3.9.x removes every restart)
    kafka_18635: bool = False
    # 3.8.0: a reassignment completes only once every target replica is in the ISR
    kafka_15665: bool = False
    #: 3.7.0 (KAFKA-15583's broker half, KAFKA-15581's controller half): min.insync.replicas capped
    #: by the replicas
    effective_min_isr: bool = False
    # 3.7.0 (KAFKA-15581): an unclean election empties the ELR
    unclean_election_clears_elr: bool = False
    # 3.3.0 (KAFKA-13858): in controlled shutdown, out of the ISR: no fetch
    kraft_shutdown_stops_fetcher: bool = False
    # 3.8.0: a fenced running broker stops cleanly (SHUTDOWN_NOW, file)
    fenced_broker_clean_shutdown: bool = False
    # a proposed fix, in no release: the ELR keeps only the target replicas
    elr_filtered_by_replicas: bool = False

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

    # -- derived switches: what the model reads where a rule depends on more than one flag. Each is
    # -- computed once per ``Features`` (``cached_property``: the frozen record keeps it beside its
    # -- fields), so the model reads every switch the same way, ``self.features.<name>``, and no
    # -- switch has a second name on the model
    @cached_property
    def uses_offsets_request(self) -> bool:
        """A truncating follower asks OffsetsForLeaderEpoch (KIP-101 / KIP-279, until
        truncate-on-fetch replaced it)."""
        return ((self.offsets_for_leader_epoch or self.epoch_in_response)
                and not self.truncate_on_fetch)

    @cached_property
    def epoch_cache(self) -> bool:
        """The leader epoch cache exists (0.11.0, KIP-101: ``LeaderEpochFileCache``); 0.10.2
        truncates to the HW."""
        return self.truncation != "hw-truncation"

    @cached_property
    def hw_truncation(self) -> bool:
        """A new follower truncates to its own HW (0.10.2, before KIP-101:
        ``ReplicaManager.makeFollowers``)."""
        return self.truncation == "hw-truncation"

    @cached_property
    def removes_fenced_partition(self) -> bool:
        """FENCED_LEADER_EPOCH takes the partition out of the fetcher
        (``fenced-removes-partition``); only where a request carries a leader epoch to be fenced by
        (``leader-epoch-fencing``, KIP-320)."""
        return self.leader_epoch_fencing and self.fenced_removes_partition

    @cached_property
    def checks_offsets_answer_epoch(self) -> bool:
        """KAFKA-7786's fix (``kafka-7786-fix``): an OffsetsForLeaderEpoch answer whose request
        epoch is no longer the partition's is ignored; without ``leader-epoch-fencing`` a request
        carries no epoch to compare."""
        return self.kafka_7786_fix and self.leader_epoch_fencing

    @cached_property
    def zookeeper_alter_isr(self) -> bool:
        """A ZooKeeper row from 2.7.0 (``alter-isr``): the leader's ISR changes are AlterIsr
        requests to the ZooKeeper controller (the KRaft rows' request is ``kraft``'s
        AlterPartition)."""
        return self.alter_isr and not self.kraft

    @cached_property
    def alter_by_request(self) -> bool:
        """The leader changes the ISR by a request to the controller (KRaft's AlterPartition,
        ZooKeeper's AlterIsr), not by writing it itself (0.10.2 to 2.6 ``Partition.updateIsr``)."""
        return self.kraft or self.zookeeper_alter_isr

    @cached_property
    def fetch_carries_broker_epoch(self) -> bool:
        """KIP-903 on KRaft (3.5.0 FetchRequest v15 ``ReplicaState.ReplicaEpoch``): a follower's
        Fetch carries its broker epoch and the leader records it with the fetch offset."""
        return self.kraft and self.kip_903

    @cached_property
    def detects_unclean_shutdown(self) -> bool:
        """KIP-966's detection of an unclean restart (``clean-shutdown-detection``) acts only where
        ELR is supported (``ReplicationControlManager.handleBrokerUncleanShutdown``:
        ``isElrSupported``)."""
        return self.clean_shutdown_detection and self.kip_966_elr


def _field_name(flag: str) -> str:
    return flag.replace("-", "_")


#: flag name -> one-line description (what ``kmc list`` shows; the rule table has release and
#: source)
FLAGS: dict[str, str] = {
    "offsets-for-leader-epoch": "KIP-101: truncate to the leader's end offset of the follower's "
                                "latest epoch",
    "kafka-5642": "1.1.0 (KAFKA-5642's controller rewrite): the last ISR member stays in the ISR "
                  "when it dies, also with unclean election on (0.10.2 to 1.0.x removed it then, "
                  "leaving an empty ISR)",
    "kafka-5163": "1.1.0 (KAFKA-5163, KIP-113): a fetch answer is applied only to a partition "
                  "ready for fetch; 0.11.0 and 1.0.x also apply it to a truncating partition at "
                  "the request's offset (and then skip the truncation if it had records)",
    "epoch-in-response": "KIP-279: the answer names its epoch; truncate to the largest common "
                         "epoch, in rounds",
    "kafka-7415": "KAFKA-7415: a new leader registers its epoch before any append; a lookup below "
                  "the first epoch answers (requested, start of the first epoch)",
    "kafka-7128": "KAFKA-7128: a follower joins the ISR only once it reached the start offset of "
                  "the leader's epoch",
    "kafka-7164": "KAFKA-7164: a follower whose leader is unchanged but which missed an epoch "
                  "truncates again",
    "kafka-7414": "KAFKA-7414: a follower whose leader's log ends below its LEO "
                  "(OFFSET_OUT_OF_RANGE) truncates to the leader's end offset; before, it halted "
                  "the broker unless unclean election was on",
    "leader-epoch-fencing": "KIP-320: requests carry the current leader epoch and are fenced by "
                            "the leader; every epoch change restarts truncation",
    "kafka-7152": "KAFKA-7152: the leader never shrinks a follower whose LEO equals its own out of "
                  "the ISR",
    "fenced-removes-partition": "2.1.0: FENCED_LEADER_EPOCH removes the partition from the fetcher "
                                "until the next LeaderAndIsr",
    "kafka-7786-fix": "KAFKA-7786: ignore an OffsetsForLeaderEpoch answer if the partition's epoch "
                      "changed meanwhile",
    "kafka-8400": "KAFKA-8400: an errored follower fetch (OFFSET_OUT_OF_RANGE, "
                  "FENCED_LEADER_EPOCH) no longer resets the follower's LEO on the leader to "
                  "unknown (0.10.2 to 2.3.x did)",
    "truncation-lowers-hw": "2.4.0 (the HW moved into Log): a truncation below the HW lowers it to "
                            "the new LEO; 0.10.2 to 2.3.x leave a follower's HW above its LEO "
                            "until its next fetch answer",
    "reject-stale-broker-epoch": "KIP-380: a broker rejects control requests for an older broker "
                                 "epoch (STALE_BROKER_EPOCH)",
    "reject-stale-shutdown": "KIP-380: the controller rejects a ControlledShutdown from an older "
                             "broker epoch",
    "detect-bounced-broker": "KIP-380: the controller detects a bounced broker by its higher "
                             "broker epoch",
    "kafka-9654": "KAFKA-9654: FENCED_LEADER_EPOCH removes the partition only if the request's "
                  "epoch is the fetch state's; otherwise retry",
    "kafka-10706-fix": "KAFKA-10706: truncating at the LEO still drops cache epochs that start "
                       "there",
    "truncate-on-fetch": "KAFKA-10554: the fetch carries the last fetched epoch; the leader "
                         "answers a diverging epoch",
    "kafka-13141": "KAFKA-13141: the leader does not take a diverging fetch's offset as the "
                   "follower's LEO",
    "kafka-13207": "KAFKA-13207: a diverging-epoch truncation is skipped if the partition left the "
                   "fetcher meanwhile",
    "kafka-14704": "KAFKA-14704: a diverging answer's HW is not taken before the truncation",
    "kafka-18991": "KAFKA-18991: a fetch answer is used only if its request's leader epoch is the "
                   "fetch state's",
    "kafka-13091": "KAFKA-13091: the leader recomputes its HW when an AlterIsr (AlterPartition) "
                   "commits; without it a committed shrink leaves the HW where it was until the "
                   "next append or follower fetch (acts with --const hw_events=1; liveness: "
                   "hw-advances)",
    "kafka-14140": "KAFKA-14140 (ZooKeeper mode, alter-isr): the controller answers "
                   "INELIGIBLE_REPLICA to an AlterIsr whose ISR has a member that is not live "
                   "(dead or in controlled shutdown); the leader reverts to its committed ISR",
    "unclean": "configuration: unclean leader election from any live replica when no ISR member "
               "lives",
    "lossy-crash": "fault: a crash may lose the unflushed tail of the log (KIP-101's second "
                   "scenario)",
    "consumer-truncation-detection": "KIP-320 (consumer, KAFKA-7747): after a leader change a "
                                     "consumer validates its position with OffsetsForLeaderEpoch "
                                     "and surfaces a truncation",
    "fetch-from-follower": "KIP-392 (configuration replica.selector.class): a consumer may fetch "
                           "from a follower, below the follower's HW",
    "alter-isr": "KIP-497 (2.7.0, IBP >= 2.7-IV2): the leader changes the ISR with an AlterIsr "
                 "request to the controller (one in flight, the maximal ISR meanwhile) instead of "
                 "writing ZooKeeper itself",
    "kraft": "KIP-500/KIP-631: the KRaft controller: ISR changes by AlterPartition with partition "
             "epochs, broker registration with broker epochs, fencing by missed heartbeats",
    "kip-841": "KIP-841: a fenced or shutting-down replica is ineligible to join the ISR "
               "(INELIGIBLE_REPLICA)",
    "kip-903": "KIP-903: the fetch carries the follower's broker epoch; an ISR expansion with a "
               "stale one is ineligible",
    "kafka-15021": "KAFKA-15021: an ISR shrink keeps the leader epoch (only the partition epoch "
                   "moves)",
    "kafka-15583": "KAFKA-15583 (KIP-966 part 1): the leader's HW does not advance while the ISR "
                   "is below min.insync.replicas (strict min ISR), in ZooKeeper and KRaft mode",
    "kip-966-elr": "KIP-966: eligible leader replicas (replicas leaving an ISR below min ISR stay "
                   "electable)",
    "clean-shutdown-detection": "KIP-966: a broker registering after an unclean shutdown is "
                                "removed from the ISR and the ELR",
    "kafka-18635": "KAFKA-18635: only a registration whose previous broker epoch is not the "
                   "registered one (no clean shutdown file) is removed from the ISR and the ELR; "
                   "without it (3.9.x, KAFKA-16952) every new incarnation is, clean shutdown or "
                   "not",
    "kafka-15665": "KAFKA-15665: a reassignment completes only once the ISR holds every target "
                   "replica (before: every adding replica)",
    "effective-min-isr": "3.7.0 (KAFKA-15583, KAFKA-15581): min.insync.replicas is capped by the "
                         "replication factor: the leader's by its replicas (HW, acks=all), the "
                         "KRaft controller's by the partition's replicas before the change (ELR)",
    "unclean-election-clears-elr": "3.7.0 (KAFKA-15581): an unclean election empties the ELR (and "
                                   "the last-known ELR)",
    "kraft-shutdown-stops-fetcher": "3.3.0 (KAFKA-13858): a broker in controlled shutdown that "
                                    "replays a change leaving it out of the ISR, or the partition "
                                    "without a leader, stops fetching",
    "fenced-broker-clean-shutdown": "3.8.0 (KIP-966's clean shutdown file): a fenced running "
                                    "broker's shutdown is granted at once (SHUTDOWN_NOW) and it "
                                    "stops cleanly, writing its broker epoch",
    "elr-filtered-by-replicas": "a proposed fix, in no release (on in no row): "
                                "maybePopulateTargetElr keeps only the target replicas in the ELR, "
                                "so a replica a reassignment removed is not elected from it after "
                                "an add-back",
}
assert set(FLAGS) == {f.name.replace("_", "-") for f in fields(Features)}

#: old flag names -> current ones (saved traces and scripts keep working)
FLAG_ALIASES: dict[str, str] = {
    "epoch-on-become-leader": "kafka-7415",
    "expand-isr-guard": "kafka-7128",
    "stale-response-guard": "kafka-18991",
    "kafka-7235": "reject-stale-broker-epoch",  # KIP-380's JIRA
}

_0_10_2 = Features()
_0_11_0 = replace(_0_10_2, offsets_for_leader_epoch=True)
# 5642, 5163: 1.1.0, between
_2_0_0 = replace(_0_11_0, epoch_in_response=True, kafka_5642=True, kafka_5163=True)
_2_0_1 = replace(_2_0_0, kafka_7415=True, kafka_7128=True, kafka_7164=True, kafka_7414=True)
_2_1_0 = replace(_2_0_1, leader_epoch_fencing=True, fenced_removes_partition=True, kafka_7152=True)
_2_1_1 = replace(_2_1_0, kafka_7786_fix=True)
_2_2_0 = replace(_2_1_1, reject_stale_broker_epoch=True, reject_stale_shutdown=True,
                 detect_bounced_broker=True)
_2_8_0 = replace(_2_2_0, offsets_for_leader_epoch=False, truncate_on_fetch=True, kafka_9654=True,
                 kafka_10706_fix=True, consumer_truncation_detection=True, kafka_8400=True,
                 truncation_lowers_hw=True,
                 alter_isr=True)  # kafka-8400, truncation-lowers-hw: 2.4.0; alter-isr: 2.7.0
_2_8_1 = replace(_2_8_0, kafka_13141=True, kafka_13207=True)
# kafka-14140: 3.4.0; 13091: 3.1.0
_3_4_1 = replace(_2_8_1, kafka_14704=True, kafka_14140=True, kafka_13091=True)
#: the last release line with ZooKeeper mode (4.0 removed it: KafkaController.scala and
#: KafkaServer.scala are gone)
# 15583, effective-min-isr: 3.7.0
_3_9_1 = replace(_3_4_1, kafka_15583=True, kafka_18991=True, effective_min_isr=True)
#: the KRaft lines: the fetch path of the same release (3.3.x ~ 2.8.1's rules, 3.5.x ~ 3.4.1's,
#: 4.1.0 ~ 3.9.1's) with the KRaft controller; the ZooKeeper control-plane flags of KIP-380 stay on
#: (they only touch actions the KRaft rows do not have: ControlledShutdown over ZooKeeper, Bounce,
#: ProcessBrokerChange); alter-isr is the ZooKeeper controller's AlterIsr, off there (the KRaft
#: controller's AlterPartition is ``kraft``'s)
_KRAFT_3_3 = replace(_2_8_1, kraft=True, kip_841=True, alter_isr=False,
                     kraft_shutdown_stops_fetcher=True,
                     kafka_13091=True)  # kafka-13091: 3.1.0
_KRAFT_3_5 = replace(_3_4_1, kraft=True, kip_841=True, kip_903=True, alter_isr=False,
                     kraft_shutdown_stops_fetcher=True,
                     # kafka-14140 is the ZooKeeper controller's; KRaft's check is kip-841
                     kafka_14140=False)
#: 4.0.x: the 3.6 to 3.8 changes on kraft-3.5 (KAFKA-15021, KAFKA-15583, KIP-966's detection and
#: KAFKA-15665), ELR off by default (eligible.leader.replicas.version=1 only on new 4.1.0 clusters),
#: so the detection does not act; KAFKA-18991 and KAFKA-18635 only from 4.0.1 (``--protocol 4.0.1``)
_KRAFT_4_0 = replace(_KRAFT_3_5, kafka_15021=True, kafka_15583=True, clean_shutdown_detection=True,
                     kafka_15665=True, effective_min_isr=True, unclean_election_clears_elr=True,
                     fenced_broker_clean_shutdown=True)
_KRAFT_4_1 = replace(_3_9_1, kraft=True, kip_841=True, kip_903=True, kafka_15021=True,
                     kip_966_elr=True, clean_shutdown_detection=True, kafka_18635=True,
                     kafka_15665=True, alter_isr=False, unclean_election_clears_elr=True,
                     kraft_shutdown_stops_fetcher=True, fenced_broker_clean_shutdown=True,
                     kafka_14140=False)


@dataclass(frozen=True)
class Release:
    name: str
    summary: str
    features: Features
    also: str = ""  # other releases with the same rules (as far as the model can tell them apart)


#: the protocol versions, oldest first: each a release line
RELEASES: tuple[Release, ...] = (
    Release("0.10.2", "before KIP-101: a new follower truncates to its own high watermark", _0_10_2,
            "0.10.x"),
    Release("0.11.0", "KIP-101: OffsetsForLeaderEpoch with the follower's latest epoch; an error "
            "is retried", _0_11_0,
            "1.0.x; 1.1.x with kafka-5642 and kafka-5163 on (the last ISR member kept on its death "
            "also with unclean election; a fetch answer no longer applied to a truncating "
            "partition)"),
    Release("2.0.0", "KIP-279: the answer carries its epoch; truncate to the largest common epoch, "
            "in rounds", _2_0_0),
    Release("2.0.1", "2.0.0 with KAFKA-7415, KAFKA-7128, KAFKA-7164 and KAFKA-7414 backported",
            _2_0_1, "2.0.x after 2.0.1"),
    Release("2.1.0", "KIP-320: requests carry the leader epoch and are fenced; FENCED removes the "
            "partition (KAFKA-7786)", _2_1_0),
    Release("2.1.1", "2.1.0 with KAFKA-7786's fix", _2_1_1),
    Release("2.2.0", "KIP-380: broker epochs in control requests, stale ones rejected; bounced "
            "brokers detected",
            _2_2_0, "2.2.x; 2.3.x with consumer-truncation-detection on; 2.4.x to 2.7.x also with "
            "kafka-8400 and truncation-lowers-hw on (KAFKA-9654 in 2.5.0 matters only from 2.8.0), "
            "2.6.1 to 2.7.x also with kafka-10706-fix, 2.7.x at IBP 2.7-IV2 or later, its default, "
            "also with alter-isr"),
    Release("2.8.0", "KAFKA-10554: truncation on fetch (the fetch carries the last fetched epoch)",
            _2_8_0),
    Release("2.8.1", "2.8.0 with KAFKA-13141 and KAFKA-13207", _2_8_1,
            "2.8.2, 3.0.x; 3.1.x to 3.3.x with kafka-13091 on; 3.4.0 with kafka-13091 and "
            "kafka-14140 on"),
    Release("3.4.1", "KAFKA-14704: a diverging answer's HW is taken only after the truncation",
            _3_4_1, "3.5.x and 3.6.x; 3.7.0 to 3.9.0 with kafka-15583 on (KAFKA-15583 is in "
            "3.7.0)"),
    Release("3.9.1", "KAFKA-18991: a fetch answer to an older leader epoch's request is ignored "
            "(the last ZooKeeper release line; formerly named 4.1.0, an alias still)", _3_9_1,
            "3.9.x from 3.9.1; 4.0.1 and 4.1.0 carry the fix in KRaft mode only (4.0.1, "
            "kraft-4.1)"),
    # -- KRaft (a KRaft controller instead of ZooKeeper; same fetch path as the ZooKeeper row of the
    # -- release) --
    Release("kraft-3.3", "KRaft: AlterPartition, broker epochs and fencing; KIP-841 (fenced "
            "replicas ineligible)",
            _KRAFT_3_3, "3.3.x and 3.4.0 in KRaft mode (3.4.1: with kafka-14704 on, kraft-3.4.1)"),
    Release("kraft-3.5", "KRaft with KIP-903: broker epochs in Fetch and AlterPartition",
            _KRAFT_3_5, "3.5.x in KRaft mode; 3.6.x to 3.9.x with the flags of their release "
            "(kraft-3.6.0 ...: kmc list --releases)"),
    Release("kraft-4.0", "KRaft 4.0: KAFKA-15021, strict min ISR (KAFKA-15583), KAFKA-15665; ELR "
            "off by default",
            _KRAFT_4_0, "4.0.0 (4.0.1 with kafka-18991 and kafka-18635 on)"),
    Release("kraft-4.1", "KRaft with KIP-966: strict min ISR, eligible leader replicas, clean "
            "shutdown detection",
            _KRAFT_4_1, "4.1.x in KRaft mode (ELR on by default for new clusters from 4.1.0)"),
)
RELEASE_BY_NAME: dict[str, Release] = {r.name: r for r in RELEASES}

#: the names used before the rows were release lines -> the release each stands for
PROTOCOL_ALIASES: dict[str, str] = {
    "hw-truncation": "0.10.2",
    "kip-101": "0.11.0",
    "kip-279": "2.0.0",
    "kip-320": "2.1.0",
    "kip-380": "2.2.0",
    "truncate-on-fetch": "3.9.1",
}

#: names that stood for another row before they were release numbers: the newest ZooKeeper row was
#: ``4.1.0`` until it was read that 4.0 and 4.1 have no ZooKeeper mode (KafkaController.scala and
#: KafkaServer.scala are gone at the 4.0.1 and 4.1.0 version bumps). ``--protocol 4.1.0`` is the
#: release now (kraft-4.1); a saved trace or scenario whose recorded flags have kraft off replays on
#: the row it was made on (``spec.kafka.build``)
FORMER_NAMES: dict[str, str] = {"4.1.0": "3.9.1"}

#: why each alias stands for its release (``kmc list`` prints it beside the alias)
ALIAS_NOTES: dict[str, str] = {
    "hw-truncation": "the name before the rows were release lines",
    "kip-101": "the name before the rows were release lines",
    "kip-279": "the name before the rows were release lines",
    "kip-320": "the name before the rows were release lines",
    "kip-380": "the name before the rows were release lines",
    "truncate-on-fetch": "the name before the rows were release lines: the newest ZooKeeper row",
}
assert set(ALIAS_NOTES) == set(PROTOCOL_ALIASES)

#: protocol name -> (description, feature flags): every release and every alias
PROTOCOLS: dict[str, tuple[str, Features]] = {r.name: (f"{r.name}: {r.summary}", r.features)
                                              for r in RELEASES}
PROTOCOLS.update({alias: (f"alias of {target} ({ALIAS_NOTES[alias]}): "
                          f"{RELEASE_BY_NAME[target].summary}",
                          RELEASE_BY_NAME[target].features)
                  for alias, target in PROTOCOL_ALIASES.items()})
DEFAULT_PROTOCOL = "0.11.0"


def release_of(protocol: str) -> str:
    """The release a protocol name stands for (an alias resolved)."""
    return PROTOCOL_ALIASES.get(protocol, protocol)


def canonical_flag(name: str) -> str:
    return FLAG_ALIASES.get(name, name)


def _epoch_cache(f: Features) -> bool:
    return f.epoch_cache


#: flag -> (what it needs, a predicate on the resolved flags): a flag exists in a release line only
#: where the mechanism it changes does (``kafka-13207`` changes truncation on fetch, absent before
#: 2.8.0)
REQUIRES: dict[str, tuple[str, object]] = {
    "epoch-in-response": ("an OffsetsForLeaderEpoch round or truncate-on-fetch",
                          lambda f: f.offsets_for_leader_epoch or f.truncate_on_fetch),
    "kafka-5163": ("a truncating fetch state (KIP-101 or later)", _epoch_cache),
    "kafka-7415": ("a leader epoch cache (KIP-101 or later)", _epoch_cache),
    "kafka-7128": ("a leader epoch cache (KIP-101 or later)", _epoch_cache),
    "kafka-7164": ("a leader epoch cache (KIP-101 or later)", _epoch_cache),
    "leader-epoch-fencing": ("a leader epoch cache (KIP-101 or later)", _epoch_cache),
    "fenced-removes-partition": ("leader-epoch-fencing (KIP-320)",
                                 lambda f: f.leader_epoch_fencing),
    "kafka-7786-fix": ("leader-epoch-fencing (KIP-320)", lambda f: f.leader_epoch_fencing),
    "kafka-9654": ("leader-epoch-fencing (KIP-320)", lambda f: f.leader_epoch_fencing),
    "kafka-10706-fix": ("kafka-7415 (the epoch a new leader registers)", lambda f: f.kafka_7415),
    "truncate-on-fetch": ("leader-epoch-fencing (KIP-320)", lambda f: f.leader_epoch_fencing),
    "alter-isr": ("the ZooKeeper controller and KIP-380's broker epochs (a 2.2.0+ ZooKeeper row; "
                  "AlterIsr is 2.7.0's, the KRaft rows' AlterPartition is kraft's)",
                  lambda f: f.reject_stale_broker_epoch and not f.kraft),
    "kafka-13141": ("truncate-on-fetch (2.8.0+)", lambda f: f.truncate_on_fetch),
    "kafka-13207": ("truncate-on-fetch (2.8.0+)", lambda f: f.truncate_on_fetch),
    "kafka-14704": ("truncate-on-fetch (2.8.0+)", lambda f: f.truncate_on_fetch),
    "kafka-18991": ("truncate-on-fetch (2.8.0+)", lambda f: f.truncate_on_fetch),
    "kafka-13091": ("an ISR change by request: alter-isr (2.7.0+) or the KRaft controller",
                    lambda f: f.alter_by_request),
    "kafka-14140": ("alter-isr (the ZooKeeper controller's AlterIsr, 2.7.0+; the KRaft rows' check "
                    "is kip-841)",
                    lambda f: f.zookeeper_alter_isr),
    "consumer-truncation-detection": ("leader-epoch-fencing (KIP-320)",
                                      lambda f: f.leader_epoch_fencing),
    "fetch-from-follower": ("a 2.4.0+ release line: the model's 2.8.0+ rows (KIP-392 came after "
                            "the 2.3.0 consumer's position validation, "
                            "consumer-truncation-detection)",
                            lambda f: f.consumer_truncation_detection),
    "kip-841": ("the KRaft controller (a kraft-* protocol)", lambda f: f.kraft),
    "kip-903": ("the KRaft controller (a kraft-* protocol)", lambda f: f.kraft),
    "kafka-15021": ("the KRaft controller (a kraft-* protocol)", lambda f: f.kraft),
    "kafka-15665": ("the KRaft controller (a kraft-* protocol)", lambda f: f.kraft),
    "kip-966-elr": ("the KRaft controller (a kraft-* protocol)", lambda f: f.kraft),
    "clean-shutdown-detection": ("kip-966-elr (KIP-966: the detection acts only where ELR is "
                                 "supported)",
                                 lambda f: f.kraft and f.kip_966_elr),
    "kafka-18635": ("clean-shutdown-detection (KAFKA-18635 changes which registrations it removes)",
                    lambda f: f.kraft and f.kip_966_elr and f.clean_shutdown_detection),
    "unclean-election-clears-elr": ("kip-966-elr (the ELR it clears)", lambda f: f.kraft
                                    and f.kip_966_elr),
    "kraft-shutdown-stops-fetcher": ("the KRaft controller (a kraft-* protocol)",
                                     lambda f: f.kraft),
    "fenced-broker-clean-shutdown": ("the KRaft controller (a kraft-* protocol)",
                                     lambda f: f.kraft),
    "elr-filtered-by-replicas": ("kip-966-elr (the ELR it filters)", lambda f: f.kraft
                                 and f.kip_966_elr),
}


def applicable_flags(features: Features) -> tuple[str, ...]:
    """The flags that exist in a release line with these flags."""
    return tuple(name for name in FLAGS if name not in REQUIRES or REQUIRES[name][1](features))


def resolve(protocol: str, overrides: Mapping[str, bool] | None = None, base: Features
            | None = None) -> Features:
    """The flags of the row ``protocol`` (or ``base``, the flags a release number has:
    ``spec.kafka.releases.resolve`` takes any release by its number) with ``overrides`` (flag name
    -> on/off) applied. A flag switched on where it does not exist in the resulting release line
    (its mechanism is absent) is refused."""
    if base is not None:
        features = base
    elif protocol in PROTOCOLS:
        features = PROTOCOLS[protocol][1]
    else:
        raise UsageError(f"unknown protocol {protocol!r}; rows: {', '.join(PROTOCOLS)} (a release "
                         "by its number: "
                         "spec.kafka.releases.resolve)")
    changes = {}
    switched_on = []
    for name, value in (overrides or {}).items():
        flag = canonical_flag(name)
        if flag not in FLAGS:
            raise UsageError(f"no feature flag {name!r}; flags: {', '.join(FLAGS)}")
        if flag == "kraft" and bool(value) != features.kraft:
            # the controller is what a row is (the KRaft rows' mechanisms replace ZooKeeper's), not
            # a fix to switch
            raise UsageError("kraft is the controller of a protocol row, not a switch: use "
                             "--protocol kraft-3.3, kraft-3.5, kraft-4.0 or kraft-4.1, "
                             "kraft-<release> (or a ZooKeeper row) instead of --feature "
                             f"kraft={'on' if value else 'off'}")
        changes[_field_name(flag)] = bool(value)
        # a flag the release has already is not switched (a trace's header)
        if value and not features.flag(flag):
            switched_on.append(flag)
    resolved = replace(features, **changes)
    # a flag switched on where its mechanism is absent is refused (off is what it is there already,
    # and what a saved trace's header says of every flag)
    for flag in switched_on:
        if flag in REQUIRES and not REQUIRES[flag][1](resolved):
            raise UsageError(f"feature flag {flag!r} does not exist in {protocol} as configured: "
                             f"it needs {REQUIRES[flag][0]}; flags of {protocol}: "
                             f"{', '.join(applicable_flags(resolved))}")
    return resolved
