"""The rule table: every behaviour of the Kafka model, the release that introduced it, the JIRA or
KIP, and the source it follows (file and method in that release, read from the release tag).

``kmc list --rules [--protocol P]`` prints it. A rule with a ``flag`` is a behaviour that differs
between releases: the flag is on in exactly the releases listed in ``spec.kafka.protocols.RELEASES``
that have it (``releases`` says which, backports included, as ``git tag --contains`` on the fix
commit shows). A rule without a flag is shared by every release the model covers; ``abstraction``
says where the model is coarser than the code, and what it therefore cannot express. Paths are
relative to the Kafka repository; ``core/.../server`` is ``core/src/main/scala/kafka/server``.
"""

from __future__ import annotations

from dataclasses import dataclass

from spec.kafka.protocols import FLAG_ALIASES, FLAGS, RELEASES, Features


@dataclass(frozen=True)
class Rule:
    name: str  # what the rule is about, short
    ticket: str  # KIP or JIRA ("-": no ticket, behaviour since before 0.10.2)
    introduced: str  # first release with it
    releases: str  # the release lines that have it (backports included)
    source: str  # file and method, in the release named
    model: str  # what the model does (the function that does it)
    flag: str = ""  # the feature flag, if it differs between releases
    abstraction: str = ""  # where the model is coarser than the code
    #: the releases whose default configuration has the flag on (``spec.kafka.releases`` computes
    #: every release's flag set from them): the first release of each line that has it, oldest
    #: first; the last one holds for every later line, an earlier one for its own line only (a
    #: backport: ("2.7.2", "2.8.1", "3.0.0")). None: from ``introduced`` on; (): in no release by
    #: default (a configuration, a fault, the controller a row is)
    since: tuple[str, ...] | None = None
    until: str = ""  # the first release without it, where a behaviour was removed
    #: what an action's declaration names the rule by (``spec.kafka.declared``: ``Declared.rules``):
    #: its flag, or, for a rule every release shares, a name of its own
    id: str = ""

    def __post_init__(self) -> None:
        if self.flag and self.id and self.id != self.flag:
            raise ValueError(f"rule {self.name!r}: a flagged rule's id is its flag "
                             f"({self.flag!r}), not {self.id!r}")
        if not self.id:
            if not self.flag:
                raise ValueError(f"rule {self.name!r}: a rule without a flag needs an id")
            object.__setattr__(self, "id", self.flag)


_S = "core/.../server/"
_C = "core/src/main/scala/kafka/cluster/"
_E = "core/.../server/epoch/LeaderEpochFileCache.scala"
_K = "core/src/main/scala/kafka/controller/"

RULES: tuple[Rule, ...] = (
    # -- truncation, version by version ------------------------------------------------------------
    Rule("truncate to the HW on becoming follower", "-", "0.10.2",
         "0.10.2 (removed by KIP-101 in 0.11.0)", f"0.10.2.2 {_S}ReplicaManager.scala "
         "makeFollowers: logManager.truncateTo(... highWatermark)",
         "actions_control._apply_leader_and_isr (hw-truncation branch)",
         id="truncate-to-hw-on-follow"),
    Rule("OffsetsForLeaderEpoch round on becoming follower", "KIP-101", "0.11.0",
         "0.11.0 to 2.7.x (and 2.8+ with an "
         "inter-broker protocol below 2.7-IV1; a 2.8+ follower whose epoch cache is empty sends no "
         "round: it truncates to its HW locally, 2.8.0 AbstractFetcherThread.partitionFetchState "
         "-> Truncating, maybeTruncate -> partitionsWithoutEpochs -> truncateToHighWatermark)",
         f"0.11.0.0 {_S}ReplicaFetcherThread.scala maybeTruncate; {_E} endOffsetFor",
         "actions_data._receive_offsets_state, log.end_offset_kip101",
         flag="offsets-for-leader-epoch", until="2.8.0"),
    Rule("an error answer to OffsetsForLeaderEpoch is retried; only UNDEFINED_EPOCH_OFFSET falls "
         "back to the HW",
         "KIP-101", "0.11.0", "every release with the round",
         f"0.11.0.0 {_S}ReplicaFetcherThread.scala maybeTruncate (partitionsWithError, "
         f"delayPartitions); 2.0.0 same method; 2.1.0 {_S}AbstractFetcherThread.scala "
         "maybeTruncate",
         "actions_data._receive_offsets_state (an error leaves the partition truncating)",
         id="offsets-error-retried"),
    Rule("the answer carries its epoch; truncate to the largest common epoch, in rounds", "KIP-279",
         "2.0.0", "2.0.0 and later",
         f"2.0.0 {_S}AbstractFetcherThread.scala getOffsetTruncationState; {_E} endOffsetFor",
         "log.end_offset_for, log.follower_truncation", flag="epoch-in-response"),
    Rule("an error-free UNDEFINED answer truncates to the fetch state's offset: the HW the state "
         "was created at, or, after an intermediate truncation (an answer with an epoch the "
         "follower did not know), that offset",
         "KIP-279", "2.0.0", "2.0.0 and later (the same branch in 2.8.0's "
         "getOffsetTruncationState); its scenario acts on 2.0.0: from 2.0.1 (kafka-7415) the "
         "lookup answers UNDEFINED only to an epoch above the leader's latest (a leader that has "
         "not yet learned its new epoch)",
         f"2.0.0 {_S}AbstractFetcherThread.scala getOffsetTruncationState (endOffset == "
         "UNDEFINED_EPOCH_OFFSET: "
         "OffsetTruncationState(partitionStates.stateValue(tp).fetchOffset, truncationCompleted = "
         "true)), updateFetchOffsetAndMaybeMarkTruncationComplete (the intermediate offset becomes "
         "the fetch offset, still "
         f"truncating); 2.0.0 {_S}ReplicaManager.scala makeFollowers (the state is created at the "
         "HW)",
         "actions_data._receive_offsets_state (state.TRUNCATING_AGAIN: truncating after an "
         "intermediate truncation)",
         abstraction="a fresh state's offset is taken as min(HW, LEO): before 2.4.0 a follower's "
                     "HW may be above its LEO (truncation-lowers-hw), and a state created there "
                     "fetches at that HW after an UNDEFINED answer (processPartitionData then "
                     "fails on the offset mismatch); the model fetches at the LEO",
         id="undefined-answer-fetch-offset"),
    Rule("the initial fetch offset of a follower's fetch state: 0.10.2 its LEO after truncating to "
         "the HW; 0.11.0 and 1.0.x its LEO; 1.1.0 to 2.7.x its HW (kafka-5163), truncating first; "
         "2.8.0 and later its LEO if its epoch cache has an epoch (fetching at once), else its HW "
         "(truncating to it)", "KAFKA-5163, KAFKA-10554", "0.10.2",
         "every release: LEO -> HW in 1.1.0 (5cc162f30ec), initialFetchOffset in 2.8.0 "
         "(7ecc3a579a4)",
         f"0.10.2.2 and 0.11.0.0 {_S}ReplicaManager.scala makeFollowers "
         "(BrokerAndInitialOffset(..., logEndOffset)); "
         "1.1.0 the same (highWatermark); 2.1.0 and 2.7.0 InitialFetchState(leader, leaderEpoch, "
         "highWatermark); "
         "2.8.0 initialFetchOffset (isTruncationOnFetchSupported && log.latestEpoch.nonEmpty: "
         f"logEndOffset, else highWatermark), {_S}AbstractFetcherThread.scala addPartitions "
         "(Fetching with a last fetched epoch, else "
         "Truncating)",
         "actions_control._apply_leader_and_isr (the state: fetching or truncating), "
         "actions_data._receive_fetch_state (0.11.0: an answer at the LEO matches a re-created "
         "state), actions_data._receive_offsets_state (KIP-279: an UNDEFINED answer truncates to "
         "it)",
         abstraction="the model keeps no fetch offset: a fetching partition fetches at its LEO, "
                     "and where the offset is read (an UNDEFINED answer, a stale fetch answer) it "
                     "is the LEO or the HW as the row's state was created, clamped to the LEO; a "
                     "1.1 to 2.3 state created at a HW above the LEO (truncation-lowers-hw off) "
                     "would fetch there after an UNDEFINED answer, which the model does not",
         id="initial-fetch-offset"),
    Rule("a new leader registers (epoch, LEO) in its epoch cache; a lookup below the first epoch "
         "answers (requested, start of the first epoch); assign truncates later entries",
         "KAFKA-7415", "2.0.1", "2.0.1, 2.1.0 and later "
         "(2.0 branch 18b25773b11a, trunk f2dd6aa26983; the 1.1 backport was never released)",
         f"2.0.1 {_C}Partition.scala makeLeader (epochCache.assign); {_E} assign, "
         "truncateAndAppend, endOffsetFor",
         "actions_control._apply_leader_and_isr, log.assign, log.end_offset_for", flag="kafka-7415",
         abstraction="without kafka-7415 the lookup below the first epoch answers (UNDEFINED, "
                     "UNDEFINED) as 2.0.0 does (2.0.0 endOffsetFor: requestedEpoch < "
                     "epochs.head.epoch; the follower then falls back to its HW)"),
    Rule("a follower joins the ISR only once its fetch offset reached the leader's HW and the "
         "start offset of the leader's epoch", "KAFKA-7128", "2.0.1",
         "2.0.1, 2.1.0 and later (7a352117c20f, 70c51633f2f4)", f"2.0.1 {_C}Partition.scala "
         "maybeExpandIsr (leaderEpochStartOffsetOpt.exists(fetchOffset >= _)); 2.8.0 "
         "isFollowerInSync", "actions_data._isr_change_action", flag="kafka-7128",
         abstraction="the leader epoch's start offset is read from the leader's epoch cache (with "
                     "kafka-7415, the LEO at makeLeader, as Kafka's leaderEpochStartOffsetOpt)"),
    Rule("a follower whose leader is unchanged but which skipped an epoch truncates again",
         "KAFKA-7164", "2.0.1", "2.0.1 only (2.1.0 replaced it: every epoch change, see KIP-320)",
         f"2.0.1 {_C}Partition.scala makeFollower (leaderEpoch == oldLeaderEpoch + 1)",
         "actions_control._restarts_truncation", flag="kafka-7164",
         abstraction="an epoch is skipped only when a LeaderAndIsr is lost (LoseControlRequest, "
                     "bound 'losses')"),
    # -- KIP-320 and its fixes ---------------------------------------------------------------------
    Rule("Fetch and OffsetsForLeaderEpoch carry the current leader epoch; FENCED_LEADER_EPOCH / "
         "UNKNOWN_LEADER_EPOCH / NOT_LEADER; UNKNOWN and NOT_LEADER retried; every epoch change "
         "restarts truncation", "KIP-320", "2.1.0",
         "2.1.0 and later", f"2.1.0 {_C}Partition.scala localReplicaWithEpochOrException, "
         f"makeFollower; {_S}AbstractFetcherThread.scala processFetchRequest, maybeTruncate",
         "actions_data._error, _receive_fetch_state; actions_control._restarts_truncation",
         flag="leader-epoch-fencing"),
    Rule("FENCED_LEADER_EPOCH removes the partition from the fetcher until the next LeaderAndIsr",
         "KIP-320", "2.1.0", "2.1.0 and later (2.3.0+: markPartitionFailed instead of "
         "partitionStates.remove, same effect)",
         f"2.1.0 {_S}AbstractFetcherThread.scala onPartitionFenced",
         "actions_data._receive_fetch_state, "
         "_receive_offsets_state", flag="fenced-removes-partition"),
    Rule("an OffsetsForLeaderEpoch answer is ignored if the partition's epoch changed while it was "
         "in flight",
         "KAFKA-7786", "2.1.1", "2.1.1 (ec1c3c8a272b), 2.2.0 and later (b2b79c4f0ef3)",
         f"2.1.1 {_S}AbstractFetcherThread.scala truncateToEpochEndOffsets (leaderEpochInRequest "
         "== curPartitionState"
         ".currentLeaderEpoch)", "actions_data._receive_offsets_state", flag="kafka-7786-fix"),
    Rule("FENCED_LEADER_EPOCH removes the partition only if the request's epoch is still the fetch "
         "state's; otherwise retry", "KAFKA-9654", "2.5.0",
         "2.5.0 and later (12cfd0e1762b, c27f629e9530; the 2.1-2.4 "
         "backports were never released)",
         f"2.5.0 {_S}AbstractFetcherThread.scala onPartitionFenced(tp, requestEpoch)",
         "actions_data._receive_fetch_state", flag="kafka-9654", abstraction="before 2.8.0 a stale "
                     "fetch answer is dropped earlier (the re-added partition is truncating), so "
                     "the model puts the flag in the 2.8.0+ rows only",
         since=("2.8.0",)),
    # -- KIP-380 -----------------------------------------------------------------------------------
    Rule("a broker rejects a LeaderAndIsr / StopReplica stamped with an older broker epoch "
         "(STALE_BROKER_EPOCH), before it starts the HW checkpoint task", "KIP-380 (KAFKA-7235)",
         "2.2.0", "2.2.0 and later (2155c6d54b08)", f"2.2.0 {_S}KafkaApis.scala isBrokerEpochStale",
         "actions_control._stale_generation", flag="reject-stale-broker-epoch",
         abstraction="the HW checkpoint rewritten by a stale first LeaderAndIsr (KAFKA-7235's "
                     "third motivation) needs a second partition and is not modelled; a newer "
                     "broker epoch is accepted (KAFKA-9839, 2.5.1/2.6.0: before it the request "
                     "failed with IllegalStateException; the model never stamps a newer epoch)"),
    Rule("a follower fetch the leader answers with an error (OFFSET_OUT_OF_RANGE, and from 2.1.0 "
         "FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH) leaves the follower's LEO on the leader "
         "alone; before, the errored read reset it to unknown", "KAFKA-8400", "2.4.0",
         "2.4.0 and later (0e95c9f3a82; the 2.3 branch commit 404fab2641e is in no release tag); "
         "0.10.2 to 2.3.x reset it",
         f"0.10.2.0, 0.11.0.0, 1.1.0, 2.0.0, 2.2.0 and 2.3.0 {_S}ReplicaManager.scala "
         "readFromLocalLog "
         "(OffsetOutOfRangeException, NotLeaderForPartitionException, ... give "
         "LogReadResult(FetchDataInfo(LogOffsetMetadata.UnknownOffsetMetadata, ...)); 2.1.0+ also "
         "the leader epoch errors), updateFollowerLogReadResults (updateReplicaLogReadResult on "
         "any result); 2.4.0 updateFollowerFetchState skips a result with an error",
         "actions_data._serve_fetch_state, _answered_out_of_range", flag="kafka-8400",
         abstraction="an errored read on a broker that does not lead (NOT_LEADER) resets its "
                     "record too, which the model leaves: a broker that leads again is a new "
                     "leader and resets every record itself (makeLeader); the 2.2.0 row stands for "
                     "2.2.x and 2.3.x (2.4.x to 2.7.x: --feature kafka-8400=on)"),
    Rule("a truncation below the HW lowers the HW to the new LEO; before, a follower's HW stayed "
         "above its LEO until its next fetch answer, and a follower becoming leader with such a HW "
         "restarted it from the log start",
         "-", "2.4.0", "2.4.0 and later (MINOR 7a7d4cb5819, which moved the HW into Log); 0.10.2 "
         "to 2.3.x leave it",
         "2.4.0 core/src/main/scala/kafka/log/Log.scala updateLogEndOffset (if (highWatermark >= "
         "messageOffset) updateHighWatermarkMetadata); 2.3.0 Log.scala truncateTo / "
         "updateLogEndOffset (no HW), "
         f"{_S}ReplicaFetcherThread.scala truncate (only warns below the HW), processPartitionData "
         f"(HW = min(leader HW, LEO)); 2.3.0 {_C}Partition.scala makeLeader (isNewLeader: "
         "convertHWToLocalOffsetMetadata; out of range: "
         "the log start offset, 0.10.2 to 1.0.x UnknownOffsetMetadata), getOrCreateReplica "
         "(min(checkpoint, LEO))",
         "updates.truncate_broker, updates.new_leader_hw, actions_control._apply_leader_and_isr",
         flag="truncation-lowers-hw",
         abstraction="0.10.2 to 1.0.x make the HW UnknownOffsetMetadata (-1) where 1.1 to 2.3 take "
                     "the log start; the model's 0 is below every record either way; the 2.2.0 row "
                     "stands for 2.2.x and 2.3.x (2.4.x to 2.7.x: --feature "
                     "truncation-lowers-hw=on); replica-sanity checks HW <= LEO on leaders only"),
    Rule("the controller rejects a ControlledShutdown from an older broker epoch", "KIP-380",
         "2.2.0", "2.2.0 and later", f"2.2.0 {_K}KafkaController.scala doControlledShutdown",
         "actions_control._controlled_shutdowns", flag="reject-stale-shutdown"),
    Rule("the controller detects a bounced broker by its higher broker epoch: failure, then "
         "start-up handling",
         "KIP-380", "2.2.0", "2.2.0 and later",
         f"2.2.0 {_K}KafkaController.scala BrokerChange.process "
         "(bouncedBrokerIds)", "actions_control._broker_change_state", flag="detect-bounced-broker",
         abstraction="the failure handling re-elects the bounced leader itself in a new epoch "
                     "(Kafka first tries another live ISR member)"),
    Rule("truncation at or beyond the LEO still drops epoch cache entries starting there",
         "KAFKA-10706", "2.6.1", "2.6.1 (0b7c490a6cbe), 2.7.0 (f641ecd7edab), 2.8.0 and later "
         "(bc96a8feb5dc); 2.4/2.5 backports unreleased",
         "2.7.0 core/src/main/scala/kafka/log/Log.scala truncateTo "
         "(leaderEpochCache.truncateFromEnd(logEndOffset))",
         "updates.truncate_broker", flag="kafka-10706-fix",
         since=("2.6.1", "2.7.0")),
    # -- truncation on fetch and its fixes ---------------------------------------------------------
    Rule("no OffsetsForLeaderEpoch round: the fetch carries the last fetched epoch and the leader "
         "answers a diverging epoch; a follower with an empty epoch cache truncates to its HW",
         "KAFKA-10554", "2.8.0", "2.8.0 and later, with inter-broker protocol 2.7-IV1 or later "
         "(the leader side is in 2.7.0, but a 2.7 follower never sends lastFetchedEpoch)",
         f"2.8.0 {_C}Partition.scala readRecords; {_S}AbstractFetcherThread"
         ".scala processFetchRequest, truncateOnFetchResponse, partitionFetchState; "
         "ReplicaManager.initialFetchOffset",
         "actions_data._serve_fetch_state, _receive_fetch_state, _truncate_on_diverging_action; "
         "log.diverging_epoch",
         flag="truncate-on-fetch",
         abstraction="the answer is read under partitionMapLock (ReceiveFetch) and applied after "
                     "the lock was released and taken again (TruncateOnDivergingEpoch); a "
                     "LeaderAndIsr may come in between"),
    Rule("the leader does not record a diverging fetch's offset as the follower's LEO",
         "KAFKA-13141", "2.7.2", "2.7.2, 2.8.1, 2.8.2, 3.0.0 and later (c69d5f30f9e, 7e4a315963a, "
         "047608fe5e6)",
         f"2.8.1 {_S}ReplicaManager.scala updateFollowerFetchState (skipped on divergingEpoch); "
         f"before it, 2.8.0 {_C}Partition.readRecords returns "
         "FetchDataInfo(LogOffsetMetadata(fetchOffset)) with the diverging epoch "
         "and no check against the leader's LEO, which updateFollowerFetchState takes (also beyond "
         "the LEO)",
         "actions_data._serve_fetch_state", flag="kafka-13141",
         since=("2.7.2", "2.8.1", "3.0.0")),
    Rule("a diverging-epoch truncation is skipped if the partition left the fetcher meanwhile",
         "KAFKA-13207", "2.8.1", "2.8.1, 2.8.2, 3.0.0 and later (9618c61a248, 4d1efc90af0)",
         f"2.8.1 {_S}AbstractFetcherThread.scala maybeTruncateToEpochEndOffsets "
         "(partitionStates.contains(tp))",
         "actions_data._truncate_on_diverging_action", flag="kafka-13207", since=("2.8.1", "3.0.0"),
         abstraction="membership only, as Kafka: a partition removed and re-added for the same "
                     "leader in the window is still truncated"),
    Rule("a diverging answer's HW is not taken before the truncation (the next fetch brings it)",
         "KAFKA-14704", "3.4.1", "3.4.1, 3.5.0 and later (649d5497442, bd32d98bd7c; the 2.8 and "
         "3.0-3.3 branch commits came after their last releases)",
         f"3.5.0 {_S}AbstractFetcherThread.scala processFetchRequest (isDivergingEpoch)",
         "actions_data._receive_fetch_state", flag="kafka-14704"),
    Rule("a fetch answer is used only if its request's leader epoch is still the fetch state's",
         "KAFKA-18991", "3.9.1", "3.9.1, 4.0.1, 4.1.0 (apache/kafka#19223, merged to trunk for "
         "4.1.0, whose review asks for the 3.9 and 4.0 backports; not 3.9.0 or 4.0.0). The "
         "ZooKeeper row is 3.9.1: 4.0 and 4.1 have no ZooKeeper mode. The 3.9.1/4.0.1 placement is "
         "from the backport request: those release commits were not read in source here",
         "4.1.0 core/.../server/AbstractFetcherThread.scala processFetchRequest "
         "(requested currentLeaderEpoch == currentFetchState.currentLeaderEpoch)",
         "actions_data._receive_fetch_state", flag="kafka-18991",
         since=("3.9.1", "4.0.1", "4.1.0")),
    Rule("a fetch answer appends only the batches whose partition leader epoch is at most the "
         "request's current leader epoch: the answer's bytes are read from the leader's log when "
         "the response is sent, after the serving step, and a broker that stopped leading, "
         "truncated and appended in between sends a later log",
         "KAFKA-18723", "3.9.1", "3.9.1, 4.0.1 (backports), 4.1.0; not modelled (no flag)",
         "4.1.0 core/.../server/AbstractFetcherThread.scala processFetchRequest "
         "(processPartitionData(..., currentFetchState.currentLeaderEpoch, ...)); storage "
         "UnifiedLog analyzeAndValidateRecords (hasHigherPartitionLeaderEpoch: "
         "skipRemainingBatches for the replication origin)",
         "actions_data._serve_fetch_state (the records are copied at the serving step)",
         abstraction="one-step serving: ServeFetch copies the records it answers with in the step "
                     "that checks the request, so the race (a leader deposed, truncated and "
                     "appending in a later epoch before its answer's bytes are read) cannot occur "
                     "and the guard has nothing to act on; the stories it hides: a follower "
                     "appending a batch of a leader epoch above its own from an answer of the old "
                     "epoch (divergent logs below the HW on 3.9.0 and before, 4.0.0)",
         id="fetch-answer-epoch-bound"),
    # -- configuration and faults ------------------------------------------------------------------
    Rule("unclean leader election: a live replica outside the ISR may lead when no ISR member "
         "lives", "KIP-106 "
         "(default off from 0.11.0)", "0.10.2",
         "every release, as configured (unclean.leader.election.enable; the "
         "0.10.2 default was true)", f"0.10.2.2 {_K}PartitionLeaderSelector.scala "
         "OfflinePartitionLeaderSelector",
         "actions_control._controller_actions (UncleanLeaderElection)", flag="unclean",
         since=()),
    Rule("a crash closes the broker's connections: what it had sent and the peer had fully "
         "received is processed (a fetch answer, an OffsetsForLeaderEpoch answer, a Fetch "
         "request); what was cut off is lost", "-", "0.10.2",
         "every release", f"0.10.2.2 and 3.9.0-rc3 {_S}AbstractFetcherThread.scala "
         "processFetchRequest (a response "
         "read in full is processed, a disconnect is an error retried after the back-off); clients "
         "NetworkClient (completed receives before disconnections)",
         "actions_control._crash_state, actions_broker_lifecycle._kraft_crash (every message from "
         "or to the broker is dropped)",
         abstraction="every message from a crashing broker is dropped with its connections: the "
                     "answers and requests a peer had fully received are lost too, so the model "
                     "misses the stories where a follower applies a dead leader's last fetch "
                     "answer, or a leader serves (and, KRaft, records with the old broker epoch: "
                     "KIP-903) a fetch of an incarnation that is gone; it adds no behaviour. "
                     "Keeping them would need a crash that keeps or drops each one (a choice per "
                     "message), multiplying every crash cell",
         id="crash-closes-connections"),
    Rule("a crash loses the unflushed tail of the log", "-", "0.10.2",
         "every release (a fault, not a rule)", "core/src/main/scala/kafka/log/Log.scala recovery "
         "(the unflushed suffix is gone after a power loss)",
         "actions_control._crash_state (CrashLosingTail)", flag="lossy-crash", since=()),
    # -- clients (spec.kafka.clients; off unless the bounds acks, consumers switch them on) --------
    Rule("a consumer after a leader change validates its position with OffsetsForLeaderEpoch (last "
         "consumed epoch); an end offset below it is a truncation, reset to it or "
         "LogTruncationException", "KIP-320 (KAFKA-7747)",
         "2.3.0", "2.3.0 and later (409fabc5610; the 2.1.0 and 2.2.0 consumers have no validation: "
         "their Fetcher.java has no OffsetsForLeaderEpoch or LogTruncationException)",
         "2.3.0 clients/src/main/java/org/apache/kafka/clients/consumer/internals/Fetcher.java "
         "validateOffsetsIfNeeded, validateOffsetsAsync; SubscriptionState.java "
         "maybeValidatePosition, maybeCompleteValidation",
         "clients._metadata_state, _validate_state", flag="consumer-truncation-detection",
         abstraction="the model's rows have it from 2.8.0 (the 2.2.0 row stands for 2.2.x when "
                     "consumers are on); a reset policy is assumed (the position moves to the end "
                     "offset; without one the same state with LogTruncationException raised); the "
                     "consumer's fetch is fenced by its epoch from then on"),
    Rule("producer acks=1: the leader acknowledges on append", "-", "0.10.2", "every release",
         f"2.1.0 {_S}ReplicaManager.scala appendRecords, delayedProduceRequestRequired "
         "(requiredAcks == -1 only)",
         "clients.LeaderAcks (bound acks=1)",
         id="acks-1"),
    Rule("producer acks=all: refused with NOT_ENOUGH_REPLICAS when the ISR is below "
         "min.insync.replicas; acknowledged once the leader's HW passes the record with the ISR "
         "still at min.insync.replicas",
         "-", "0.10.2", "every release", f"0.10.2.2 and 2.1.0 {_C}Partition.scala "
         "appendRecordsToLeader (inSyncSize < minIsr && requiredAcks == -1), "
         f"checkEnoughReplicasReachOffset; {_S}DelayedProduce.scala "
         "tryComplete", "clients.AllAcks (accepts, advanced: bounds acks=-1, min_isr)",
         abstraction="acknowledged at the AdvanceHighWatermark step of the leader of the record's "
                     "epoch; a record appended before a BumpLeaderEpoch that kept its leader is "
                     "never acknowledged (Kafka would)",
         id="acks-all"),
    Rule("a consumer reads from the leader it believes in, only below the HW; beyond the LEO "
         "(OFFSET_OUT_OF_RANGE) it resets to the latest offset (auto.offset.reset)", "-", "0.10.2",
         "every release", f"2.1.0 {_S}ReplicaManager.scala fetchMessages (FetchHighWatermark for a "
         "consumer); 2.2.0 clients/src/main/"
         "java/org/apache/kafka/clients/consumer/internals/Fetcher.java parseCompletedFetch "
         "(OFFSET_OUT_OF_RANGE: requestOffsetReset)",
         "clients._consumer_fetch_state, _metadata_state", abstraction="a fetch and its answer are "
                     "one step unless consumer_inflight=1, and return every record up to the HW; "
                     "metadata is the controller's (leader, epoch); the reset goes to the leader's "
                     "HW (auto.offset.reset=latest)",
         id="consumer-reads-below-hw"),
    Rule("a consumer may fetch from a follower the leader names (preferred read replica), reading "
         "below that follower's HW", "KIP-392 (KAFKA-8443, KAFKA-8365)", "2.4.0",
         "2.4.0 and later, as configured "
         "(replica.selector.class on the broker, client.rack on the consumer; off by default: "
         "23beeea34bf, e2847e8603f)",
         f"2.4.0 {_S}ReplicaManager.scala findPreferredReadReplica, readFromLocalLog "
         f"(fetchOnlyFromLeader is false for a consumer with client metadata); {_C}Partition.scala "
         "readRecords (the local HW bounds a consumer's "
         "read), localLogWithEpochOrException (the request's leader epoch must be the replica's)",
         "clients._fetch_from_follower_actions (ConsumerFetchFromFollower)",
         flag="fetch-from-follower", since=(), abstraction="off in every row (a configuration); "
                     "refused before the 2.8.0 row (the model has no 2.4 to 2.7 rows apart from "
                     "2.2.0's); the selector may pick any live follower of the consumer's leader "
                     "in its epoch whose LEO reaches the position; the consumer asks the leader "
                     "first each time"),
    Rule("an unclean election is remembered by every consumer (ghost read_before_unclean): what it "
         "had read may vanish, what it reads later may not", "KIP-320 (Consumer Handling)",
         "0.10.2", "every release, with "
         "unclean election on", "a ghost, no source: the trade unclean.leader.election.enable "
         "makes "
         f"(0.10.2.2 {_K}PartitionLeaderSelector.scala OfflinePartitionLeaderSelector)",
         "clients.unclean_noted (UncleanLeaderElection), invariants.kafka_clients consumed-stays",
         id="consumer-unclean-ghost"),
    Rule("an empty consumer fetch answer (position between HW and LEO, no error) at a position "
         "past records the consumer never read is a silent skip", "KIP-320", "0.10.2",
         "every release (2.3.0+: the position is "
         "validated first after a leader change, so the skip cannot happen there)",
         f"2.1.0 {_S}ReplicaManager.scala readFromLocalLog (FetchHighWatermark: an empty read, no "
         "error, up to the "
         "LEO; OFFSET_OUT_OF_RANGE beyond)", "clients._consumer_fetch_state (ghost skipped)",
         id="consumer-empty-answer-skip"),
    Rule("a consumer's Fetch and OffsetsForLeaderEpoch go through the network (constant "
         "consumer_inflight=1): one request outstanding; an answer is ignored once the position "
         "moved or awaits validation", "-", "0.10.2",
         "every release (the validation from 2.3.0)",
         "2.3.0 clients/src/main/java/org/apache/kafka/clients/consumer/internals/Fetcher.java "
         "sendFetches (nodesWithPendingFetchRequests), parseCompletedFetch (isFetchable, "
         "\"Discarding stale fetch response\"); SubscriptionState.java maybeCompleteValidation "
         "(the current FetchPosition must equal the request's)",
         "clients._delayed_consumer_actions, _receive_consumer_fetch, _receive_consumer_validate",
         abstraction="off by default (a request and its answer are one step); fetch-from-follower "
                     "stays one step; a request is lost only when its broker dies or bounces "
                     "(ConsumerDisconnect)",
         id="consumer-network"),
    # -- shared by every release, with the model's abstractions ------------------------------------
    Rule("a follower's HW is min(leader HW, its LEO) after each fetch (it may go down)", "-",
         "0.10.2", "every release", f"0.10.2.2 {_S}ReplicaFetcherThread.scala "
         "processPartitionData; 2.8.0 Log.updateHighWatermark",
         "actions_data._receive_fetch_state",
         id="follower-hw"),
    Rule("the leader recomputes its HW when an AlterIsr (AlterPartition) commits an ISR change "
         "(before, 2.7.0 to 3.0.x, only at its next append, a fetch that moves a follower's LEO, "
         "or a LeaderAndIsr: a committed shrink left the HW where it was)", "KAFKA-13091", "3.1.0",
         "3.1.0 and later, ZooKeeper (alter-isr) and KRaft mode (26ee78f3923; 2.7.x, 2.8.x and "
         "3.0.x do not)",
         f"2.8.0 and 3.0.0 {_C}Partition.scala handleAlterIsrResponse (isrState = CommittedIsr, no "
         "maybeIncrementLeaderHW); the callers of maybeIncrementLeaderHW: appendRecordsToLeader, "
         "updateFollowerFetchState (prevFollowerEndOffset != logEndOffset), makeLeader, "
         "maybeShrinkIsr on the ZooKeeper write; 3.1.0 the same method: 'we may need to increment "
         "high watermark since ISR could be down to 1', maybeIncrementLeaderHW",
         "actions_alter_isr._receive_alter_isr_response, "
         "actions_alter_partition._receive_alter_response (hw_stale); "
         "actions_data._advance_hw_action", flag="kafka-13091",
         abstraction="by default (hw_events=0) AdvanceHighWatermark is enabled whenever the ISR "
                     "allows a higher HW, an over-approximation sound for safety: the flag then "
                     "changes nothing. With --const hw_events=1 a release without the fix marks "
                     "its HW stale at a committed ISR change and AdvanceHighWatermark waits for "
                     "the next Produce, a ServeFetch that moves a follower's LEO or a "
                     "LeaderAndIsr; the liveness property hw-advances shows the HW that never "
                     "advances (2.8.0, 2.8.1: no append and the removed follower dead; Kafka's "
                     "acks=all producer times out). The model recomputes at every other event as "
                     "its own step (AdvanceHighWatermark), as before"),
    Rule("the leader's HW is the least LEO over its ISR", "-", "0.10.2", "every release",
         f"0.10.2.2 {_C}Partition.scala maybeIncrementLeaderHW", "actions_data._advance_hw_action",
         abstraction="Kafka also counts followers outside the ISR that caught up within "
                     "replica.lag.time.max.ms; that only lowers the HW, so the model's HW can be "
                     "higher than Kafka's, never lower; 3.7.0's min.insync.replicas condition is "
                     "its own rule (kafka-15583)",
         id="leader-hw"),
    Rule("ISR shrink and expand are ZooKeeper writes only the leader of the current epoch can make",
         "-", "0.10.2", "0.10.2 to 2.6.x, and 2.7+ ZooKeeper releases at an inter-broker protocol "
         "below 2.7-IV2 (from 2.7.0 AlterIsr replaces the write: alter-isr)",
         f"0.10.2.2 {_C}Partition.scala maybeShrinkIsr, updateIsr (zkVersion); 2.7.0 the same file "
         "expandIsrWithZk, "
         "shrinkIsrWithZk (useAlterIsr false)",
         "actions_data._leader_actions", abstraction="time is abstracted: a follower may be shrunk "
         "at any moment (from 2.1.0 one whose LEO is the leader's never is: kafka-7152)",
         id="isr-zookeeper-write"),
    Rule("the leader expands the ISR only as it records a fetch it accepted from the follower "
         "(maybeExpandIsr is called from the fetch path alone; an errored read is skipped from "
         "2.4.0, and before it records an unknown LEO)", "-",
         "0.10.2", "every release, ZooKeeper and KRaft mode",
         f"0.10.2.0 {_C}Partition.scala updateReplicaLogReadResult -> maybeExpandIsr; 2.8.0 and "
         f"3.9.0-rc3 updateFollowerFetchState -> maybeExpandIsr; 2.8.0 {_S}ReplicaManager.scala "
         "updateFollowerFetchState (readResult"
         ".error != Errors.NONE: skipped); KRaft mode the same path: 3.3.0 "
         "Partition.updateFollowerFetchState -> maybeExpandIsr (its only caller), 3.9.0-rc3 "
         "Partition.fetchRecords -> updateFollowerFetchState (not on a diverging epoch, not on an "
         "error: the checks throw before it)",
         "actions_data._fetch_being_answered (ZooKeeper write: _isr_change_action; AlterIsr and "
         "KRaft: actions_alter_partition._isr_change_request_action)",
         abstraction="the expansion is its own step, enabled while the answer of that fetch is on "
                     "its way to the follower (error-free; before 2.1.0 the answer carries no "
                     "leader epoch, so one served before the same leader's re-election in a new "
                     "epoch still counts); an AlterIsr / AlterPartition answered between the fetch "
                     "and the expansion lets it through where Kafka waits for the next fetch; on "
                     "the KRaft rows the leader's eligibility check (KIP-841, KIP-903) is read at "
                     "the expansion step, not at the fetch, which only matters with metadata_lag=1 "
                     "or a running broker fenced in between (the controller checks again either "
                     "way); a fetch of a crashed incarnation served after its restart is not "
                     "modelled (the crash drops it from the wire), so KIP-903's story is told with "
                     "the expansion decided before the crash and checked by the controller after "
                     "the restart",
         id="isr-expand-on-fetch"),
    Rule("ZooKeeper mode: the leader changes the ISR by AlterIsr to the controller instead of "
         "writing ZooKeeper; one in flight, meanwhile the maximal ISR (an expansion counts the new "
         "member at once, a shrink drops the member only once committed) for the HW; the "
         "controller answers STALE_BROKER_EPOCH (top level), FENCED_LEADER_EPOCH for an older "
         "leader epoch, the current state if it is already the proposed one, "
         "INVALID_UPDATE_VERSION for another zkVersion, else writes the ISR (same leader epoch, "
         "new zkVersion) and sends UpdateMetadata, no LeaderAndIsr; the leader commits the "
         "answered ISR, gives up on FENCED_LEADER_EPOCH / INVALID_UPDATE_VERSION (pending until "
         "the next LeaderAndIsr), resends on STALE_BROKER_EPOCH; a LeaderAndIsr drops a pending "
         "AlterIsr and sets the zkVersion it carries", "KIP-497 (KAFKA-10350)", "2.7.0",
         "2.7.0 and later at inter-broker protocol 2.7-IV2 or later (the default), to 3.9.x, the "
         "last ZooKeeper line (renamed AlterPartition in 3.3.0: AlterPartitionManager.scala)",
         f"2.7.0 and 2.8.0 {_C}Partition.scala expandIsr / shrinkIsr (useAlterIsr = "
         "isAlterIsrSupported), "
         "sendAlterIsrRequest (PendingExpandIsr, PendingShrinkIsr), canAddReplicaToIsr / "
         "maybeShrinkIsr (!isrState.isInflight), maybeIncrementLeaderHW (isrState.maximalIsr), "
         "handleAlterIsrResponse, makeLeader / makeFollower (alterIsrManager.clearPending, "
         "CommittedIsr, zkVersion = partitionState.zkVersion); "
         f"{_S}AlterIsrManager.scala (one item per partition until answered; STALE_BROKER_EPOCH: "
         f"retry); {_K}KafkaController.scala processAlterIsr (2.7.0, 2.8.0, 3.0.0: "
         "liveBrokerIdAndEpochs, leaderEpoch <, "
         "equalsIgnoreZk, zkClient.updateLeaderAndIsr badVersionUpdates, "
         "sendUpdateMetadataRequest); 3.3.0 and 3.9.0 tryProcessAlterPartition (the same checks, "
         "the version before the write, equalsAllowStalePartitionEpoch first: KAFKA-14144 keeps "
         "that order in 3.4.0); 3.9.0 Partition.scala submitAlterPartition, "
         "handleAlterPartitionUpdate, handleAlterPartitionError",
         "actions_alter_partition._alter_leader_actions, _isr_change_request_action (the ZooKeeper "
         "request), actions_alter_isr._process_alter_isr, _receive_alter_isr_response, "
         "actions_alter_partition._lose_alter_response; actions_control._elect_state (the zkVersion"
         " moves), _apply_leader_and_isr (clears the pending AlterIsr)", flag="alter-isr",
         abstraction="bounded like the KRaft rows' AlterPartition: at most alters requests (a "
                     "zkVersion is a counter, so the bound keeps the state space finite) and "
                     "alter_losses lost answers; the 2.2.0 row with kafka-8400 and alter-isr on "
                     "stands for 2.7.x; 3.4.0's INELIGIBLE_REPLICA is its own rule (kafka-14140); "
                     "UpdateMetadata is not a message in the model (no broker reads a metadata "
                     "cache on the ZooKeeper rows)"),
    Rule("ZooKeeper mode: the controller answers INELIGIBLE_REPLICA (OPERATION_NOT_ATTEMPTED to "
         "AlterPartition v0/v1) to an AlterIsr whose proposed ISR has a member that is not live "
         "for it (its death processed, or in controlled shutdown), after the version check; the "
         "leader resets to its last committed ISR; the leader itself proposes only a follower its "
         "metadata cache has alive", "KAFKA-14140", "3.4.0",
         "3.4.0 and later ZooKeeper releases, to 3.9.x (163d00b3e61; 3.3.x and before write the "
         "ISR)",
         f"3.4.0 {_K}KafkaController.scala tryProcessAlterPartition (ineligibleReplicas = "
         "newLeaderAndIsr.isr.toSet -- controllerContext.liveBrokerIds), "
         f"{_K}ControllerContext.scala liveBrokerIds (liveBrokerEpochs less "
         "shuttingDownBrokerIds), doControlledShutdown (shuttingDownBrokerIds.add); "
         f"{_C}Partition.scala "
         "isReplicaIsrEligible (ZkMetadataCache: hasAliveBroker), handleAlterPartitionError "
         "(INELIGIBLE_REPLICA: partitionState = lastCommittedState); 3.9.0-rc3 the same",
         "actions_alter_isr._process_alter_isr, _zookeeper_live, _receive_alter_isr_response",
         flag="kafka-14140", abstraction="the leader's check reads its metadata cache, which "
                     "UpdateMetadata fills and the model has no message for: it may lag at any "
                     "step, so the model's leader may propose a dead member (the controller then "
                     "rejects it, as with a lagging cache), never one Kafka's controller accepts; "
                     "the controller's shutting-down set is read from the brokers (a processed "
                     "ControlledShutdown of the live incarnation): a broker that crashed or "
                     "bounced after it, before the controller processed that, counts live in the "
                     "model (Kafka keeps it in shuttingDownBrokerIds until onBrokerFailure), so "
                     "the model accepts an expansion there that 3.4+ rejects"),
    Rule("a follower whose LEO equals the leader's is never out of sync: it is not shrunk out of "
         "the ISR", "KAFKA-7152",
         "2.1.0", "2.1.0 and later (9a7f29c1ede; the 2.0 branch commit b8b83a72df5 is in no "
         "release)",
         f"2.1.0 {_C}Partition.scala getOutOfSyncReplicas (r.logEndOffset != "
         "leaderReplica.logEndOffset && ...); "
         "2.8.0 isFollowerOutOfSync; 3.3.0 and 3.9.0 Replica.scala isCaughtUp (leaderEndOffset == "
         "logEndOffset || ...)",
         "actions_data._isr_change_action, actions_alter_partition._isr_change_request_action",
         flag="kafka-7152", abstraction="the follower's LEO is the fetch offset the leader last "
                     "recorded (remote); the time half (lastCaughtUpTimeMs within "
                     "replica.lag.time.max.ms) is abstracted away as before"),
    Rule("a fetch answer is dropped unless the partition is still in that leader's fetcher at the "
         "request's offset",
         "-", "0.10.2", "every release", f"0.10.2.2 and 2.2.0 {_S}AbstractFetcherThread.scala "
         "processFetchRequest "
         "(fetchRequest.offset(tp) == currentPartitionFetchState.fetchOffset)",
         "actions_data._receive_fetch_state", abstraction="the fetch offset of a fetching "
                                                          "partition is its LEO; the readiness "
                                                          "half is kafka-5163",
         id="stale-fetch-answer-dropped"),
    Rule("a fetch answer is applied only to a partition ready for fetch; before, 0.11.0 and 1.0.x "
         "applied one to a truncating partition whose state (re-created at the LEO by "
         "makeFollowers) had the request's offset: with records it appended them, took the HW and "
         "replaced the state by a fetching one (the truncation skipped); an empty answer only set "
         "the HW; OFFSET_OUT_OF_RANGE truncated and fetched", "KAFKA-5163 (KIP-113)", "1.1.0",
         "1.1.0 and later (5cc162f30ec, which also creates the state at the HW)",
         f"1.1.0 {_S}AbstractFetcherThread.scala processFetchRequest (&& "
         "currentPartitionFetchState.isReadyForFetch); "
         "0.11.0.0 and 1.0.0 the same method (only the offset: updateAndMoveToEnd(tp, new "
         "PartitionFetchState(newOffset)) "
         "if validBytes > 0; OFFSET_OUT_OF_RANGE: new "
         f"PartitionFetchState(handleOffsetOutOfRange(tp))); 0.11.0.0 {_S}ReplicaManager.scala "
         "makeFollowers (BrokerAndInitialOffset(..., logEndOffset))",
         "actions_data._receive_fetch_state", flag="kafka-5163",
         abstraction="the answer is from a request sent before the partition left that leader's "
                     "fetcher thread and came back to it; with one partition the thread would be "
                     "idle meanwhile and shutdownIdleFetcherThreads would stop it: the model's "
                     "partition stands for one of several on the thread. The 0.11.0 row stands for "
                     "0.11.x and 1.0.x; 1.1.x is --feature kafka-5163=on with kafka-5642=on"),
    Rule("a follower ahead of the leader (OFFSET_OUT_OF_RANGE) truncates to the leader's LEO; "
         "before, it halted the broker unless unclean election was on", "KAFKA-7414", "2.0.1",
         "2.0.1 (0ed5b8b2403), 2.1.0 and later "
         "(c5ef614bbf1); 0.10.2 to 2.0.0 halt (the 1.1 branch commits ff1afde8d73, 9fed787141e are "
         "in no release tag)",
         f"2.0.1 {_S}ReplicaFetcherThread.scala handleOffsetOutOfRange "
         "(truncateTo(leaderEndOffset), no unclean check); 0.10.2.2 and 2.0.0 the same method "
         "(\"Exiting because log truncation is not allowed\", "
         "FatalExitError when uncleanLeaderElectionEnable is off)",
         "actions_data._receive_fetch_state (without the flag and with unclean off: the broker "
         "halts, a crash counted against the crash bound)", flag="kafka-7414"),
    Rule("the controller keeps the last ISR member when it dies, unclean election on or off; "
         "before, it kept it only with unclean election off (the ISR emptied, and the broker's "
         "return was an unclean election)",
         "KAFKA-5642", "1.1.0", "1.1.0 and later (b71ee043f89, the controller's move to the async "
         "ZooKeeper client)",
         f"1.1.0 {_K}ReplicaStateMachine.scala doRemoveReplicasFromIsr (if (leaderAndIsr.isr.size "
         f"== 1) leaderAndIsr.isr); 0.10.2.2 and 1.0.2 {_K}KafkaController.scala "
         "removeReplicaFromIsr (newIsr.isEmpty && "
         "!uncleanLeaderElectionEnable)", "actions_control._broker_failure_actions",
         flag="kafka-5642", abstraction="the 0.11.0 row has it off (0.11.0, 1.0.x); 1.1.x is the "
                     "0.11.0 row with --feature kafka-5642=on --feature kafka-5163=on"),
    Rule("a LeaderAndIsr whose leader is -1 (an offline partition) changes nothing on the broker: "
         "no new epoch, no truncation, the fetcher left as it was", "-", "0.10.2",
         "every ZooKeeper release (KRaft brokers call "
         "makeFollower with no leader: applyLocalFollowersDelta)",
         f"0.10.2.2, 2.8.0 and 3.9.0 {_S}ReplicaManager.scala makeFollowers (\"Only change "
         "partition state when the "
         "leader is available\"; else partition.getOrCreateReplica / createLogIfNotExists only)",
         "actions_control._apply_leader_and_isr",
         abstraction="only leader -1 counts as unavailable: a named leader that is dead in the "
                     "broker's metadata cache is followed as if alive (the model keeps no metadata "
                     "cache on ZooKeeper rows)",
         id="offline-leader-and-isr"),
    Rule("a leader re-elected in a new epoch keeps its followers' fetch states (LEO); only a new "
         "leader starts with them unknown", "-", "0.10.2", "every release",
         f"0.10.2.2, 2.0.0 and 2.8.0 {_C}Partition.scala makeLeader (if (isNewLeader) ... "
         "updateLogReadResult / "
         "updateFetchState(UnknownOffsetMetadata)); 3.3.0 Replica.scala "
         "resetReplicaState(isNewLeader)",
         "actions_control._apply_leader_and_isr, actions_kraft._kraft_apply_leader_and_isr",
         id="re-elected-leader-keeps-followers"),
    Rule("the controller elects the leader from the live ISR; a restarted broker is sent the "
         "current LeaderAndIsr",
         "-", "0.10.2", "every ZooKeeper release", f"0.10.2.2 {_K}PartitionLeaderSelector.scala "
         "OfflinePartitionLeaderSelector; KafkaController.onBrokerStartup; 2.1.0 "
         f"{_K}PartitionStateMachine.scala "
         "PartitionLeaderElectionAlgorithms (offline, preferred, controlled shutdown)",
         "actions_control._controller_actions, "
         "_broker_failure_actions, _controlled_shutdowns, _restart_state",
         abstraction="any eligible replica may be elected, in every election (offline, preferred, "
                     "controlled shutdown, unclean): Kafka takes the first in assignment order "
                     "(the preferred election only the first); every choice is some assignment's "
                     "first, and runs that use two different orders are included too. This is what "
                     "makes broker ids interchangeable for --symmetry (spec.kafka.symmetry)",
         id="controller-elects-from-live-isr"),
    Rule("the controller's requests to a broker form one FIFO channel, kept across a bounce it has "
         "not seen",
         "-", "0.10.2", "every ZooKeeper release", f"0.10.2.2 {_K}ControllerChannelManager.scala "
         "RequestSendThread",
         "model._deliveries (channel_order)",
         abstraction="LeaderAndIsr and StopReplica cannot overtake each other (KIP-570's case does "
                     "not arise); a request is lost only by LoseControlRequest (a controller "
                     "failover's dropped queue)",
         id="control-channel-fifo"),
    Rule("the HW checkpoint survives a crash", "-", "0.10.2", "every release",
         f"0.10.2.2 {_S}ReplicaManager.scala checkpointHighWatermarks; {_C}Partition.scala "
         "getOrCreateReplica",
         "actions_control._reborn",
         abstraction="a restarted broker gets its last HW back; Kafka reads the last checkpoint, "
                     "written every 5 s, which can be older (lower)",
         id="hw-checkpoint"),
    # -- KRaft (spec.kafka.actions_kraft) ----------------------------------------------------------
    Rule("the KRaft controller: the leader changes the ISR by AlterPartition (one in flight, "
         "checked by leader and partition epoch: FENCED_LEADER_EPOCH, INVALID_UPDATE_VERSION); "
         "INELIGIBLE_REPLICA reverts the leader to the last committed ISR; brokers register with a "
         "new broker epoch, are fenced when heartbeats stop (leaving the ISR, the last member "
         "kept) and replay partition changes in order", "KIP-500, KIP-631, KIP-497", "2.8.0",
         "kraft-3.3 and later (KRaft mode; production-ready from 3.3)",
         f"3.3.0 {_C}Partition.scala prepareIsrExpand, prepareIsrShrink, submitAlterPartition, "
         "handleAlterPartitionError; metadata/.../controller/ReplicationControlManager.java "
         "alterPartition, validateAlterPartitionData, handleBrokerFenced, "
         "generateLeaderAndIsrUpdates; PartitionChangeBuilder.java build (an empty target ISR is "
         "not written), triggerLeaderEpochBumpIfNeeded; ClusterControlManager.java registerBroker",
         "actions_kraft.KRaftControllerActions (the KRaft controller: _fence_actions; "
         "actions_alter_partition._process_alter_partition; "
         # the controller a row is: kraft-<release>
         "actions_broker_lifecycle._kraft_restart_state)", flag="kraft", since=(),
         abstraction="a restarted broker registers and is unfenced in one step (Kafka unfences it "
                     "once it caught up with the metadata log); a broker's view of fencing is the "
                     "controller's unless metadata_lag (see its rule); a lost AlterPartition "
                     "request is a delayed one (AlterPartitionManager resends it); a lost answer "
                     "is LoseAlterPartitionResponse (bound alter_losses); NEW_LEADER_ELECTED "
                     "arises only with reassignments (see its rule); a partition change "
                     "that keeps the leader epoch reaches the leader only (a follower has no use "
                     "for the ISR until the next leader epoch, which every live broker replays)"),
    Rule("a lost AlterPartition answer: the request is sent again, unchanged, until answered; the "
         "leader keeps its pending maximal ISR until an answer or the partition change it replays",
         "KIP-497 (AlterIsr), KIP-631", "2.7.0", "every KRaft row (3.3.0 and later; the same "
         "resend in 2.7.0+ AlterIsrManager, the ZooKeeper rows with alter-isr, where the ZooKeeper "
         "controller answers the resent request with the state it wrote: alter-isr)",
         "3.3.0 and 3.5.0 core/.../server/AlterPartitionManager.scala submit "
         "(unsentIsrUpdates.putIfAbsent), sendRequest (no timeout: retries until answered), "
         "handleAlterPartitionResponse; BrokerToControllerChannelManager.scala handleResponse "
         "(wasDisconnected: requestQueue.putFirst); "
         f"{_C}Partition.scala submitAlterPartition (an answer to an older partition state is "
         "ignored), "
         "handleAlterPartitionError (INVALID_UPDATE_VERSION, FENCED_LEADER_EPOCH: wait for the "
         "metadata)",
         "actions_alter_partition._lose_alter_response (LoseAlterPartitionResponse), "
         "_receive_alter_response",
         abstraction="only the answer to an accepted change is lost (a lost rejection and its "
                     "resend reach the state they started from); a lost request is a late one (the "
                     "network delivers in any order); a leader's crash drops its request in "
                     "flight, where Kafka's controller may still read one already sent",
         id="lost-alter-partition-answer"),
    Rule("NEW_LEADER_ELECTED: the controller wrote the AlterPartition's change and it moved the "
         "leader; the leader waits for the metadata", "KIP-497, KIP-631", "3.3.0",
         "every KRaft row (AlterPartition v2+)", "3.3.0 and 3.5.0 "
         "metadata/.../controller/ReplicationControlManager.java alterPartition (change.leader() "
         "!= request.brokerId(): NEW_LEADER_ELECTED, FENCED_LEADER_EPOCH before v2); "
         "PartitionChangeBuilder.java build (completeReassignmentIfNeeded, then tryElection: "
         "electAnyLeader keeps a leader that is in the target ISR and active); "
         "validateAlterPartitionData (the new ISR must contain the leader); "
         f"{_C}Partition.scala handleAlterPartitionError (NEW_LEADER_ELECTED: stay pending until "
         "the metadata)",
         "actions_alter_partition._process_alter_partition (ProcessAlterPartition), "
         "_receive_alter_response; actions_reassignment._reassigned (bound reassignments)",
         abstraction="the leader changes on an AlterPartition only when it completes a "
                     "reassignment that removes the leader from the replicas (with reassignments > "
                     "0): the request's ISR must contain the leader and its leader epoch must be "
                     "current, and a fenced or shutting-down leader has already been moved by the "
                     "partition change of its fencing or controlled shutdown. The model has no "
                     "NEW_LEADER_ELECTED code: its answer is NONE with the new leader epoch, which "
                     "the leader handles as Kafka's leader handles NEW_LEADER_ELECTED (it stays "
                     "pending until it replays the change)",
         id="new-leader-elected"),
    Rule("brokers replay the metadata log late: a partition change reaches a broker when it "
         "replays it; a leader's view of the registrations (fenced, in controlled shutdown, broker "
         "epoch) may be older than the controller's",
         "KIP-500, KIP-631", "2.8.0", "every KRaft row",
         "3.3.0 core/.../server/metadata/BrokerMetadataListener.scala (the log replayed in order; "
         "3.5.0: the metadata loader), ReplicaManager.scala applyDelta; "
         "core/.../server/metadata/KRaftMetadataCache.scala isBrokerFenced, isBrokerShuttingDown "
         "(3.3.0+), getAliveBrokerEpoch (3.5.0, KIP-903); "
         f"{_C}Partition.scala isReplicaIsrEligible (reads that cache)",
         "partition changes: a LeaderAndIsr (with the partition epoch) in the broker's FIFO "
         "channel, delivered late (actions_kraft._kraft_apply_leader_and_isr); registrations: "
         "constant metadata_lag=1 (actions_alter_partition._eligible)",
         abstraction="a LeaderAndIsr already stands for the PartitionRecord / "
                     "PartitionChangeRecord a broker replays late, in order; the registration "
                     "records (fencing, controlled shutdown, a new broker epoch) are not messages: "
                     "metadata_lag=0 (default) reads the controller's, metadata_lag=1 lets the "
                     "leader's own eligibility check pass on any older view (the controller's "
                     "ineligibleReplicasForIsr still applies); a newer view only blocks an "
                     "expansion, which the model has anyway",
         id="metadata-replayed-late"),
    Rule("a fenced or shutting-down replica is ineligible to join the ISR: the leader does not "
         "propose it, the controller answers INELIGIBLE_REPLICA", "KIP-841", "3.3.0",
         "3.3.0 and later (KAFKA-13916: f83d95d9a28, "
         "151ca12a56c)", f"3.3.0 {_C}Partition.scala isReplicaIsrEligible, "
         "handleAlterPartitionError; "
         "metadata/.../controller/ReplicationControlManager.java validateAlterPartitionData "
         "(ineligibleReplicasForIsr)",
         "actions_alter_partition._eligible, _ineligible (Broker.stopping: in controlled shutdown)",
         flag="kip-841"),
    Rule("controlled shutdown on KRaft: a leader's heartbeat with wantShutDown puts it in "
         "controlled shutdown; the controller takes it out of the ISR (the last member kept, "
         "unless ELR) and moves leadership to an active ISR member, else leaves the partition "
         "offline; it keeps running and fetching, and is not electable; a broker that leads "
         "nothing is fenced and stops (SHUTDOWN_NOW)", "KIP-631", "2.8.0",
         "every KRaft row (2.8.0's ReplicationControlManager.processBrokerHeartbeat already has "
         "CONTROLLED_SHUTDOWN)",
         "3.3.0 and 3.5.0 metadata/.../controller/BrokerHeartbeatManager.java "
         "calculateNextBrokerState (CONTROLLED_SHUTDOWN while it has leaderships, then "
         "SHUTDOWN_NOW); ReplicationControlManager.java processBrokerHeartbeat, "
         "handleBrokerInControlledShutdown -> generateLeaderAndIsrUpdates (brokerToRemove); "
         "ClusterControlManager.java active (not fenced, not in controlled shutdown)",
         "actions_broker_lifecycle._controlled_shutdown_actions (ProcessControlledShutdown(broker, "
         "leader)), actions_kraft._unfenced; that it stops fetching once out of the ISR: "
         "kraft-shutdown-stops-fetcher",
         abstraction="the heartbeat and its handling are one step, and only the partition's leader "
                     "takes it (a broker that leads nothing goes to SHUTDOWN_NOW at once: fenced "
                     "and stopped, which the model's CleanShutdown is, bound clean_shutdowns, or "
                     "Crash and FenceBroker without the clean shutdown file); the leader's "
                     "SHUTDOWN_NOW that follows is a CleanShutdown or a Crash the same way; bound "
                     "shutdowns (0 by default)",
         id="kraft-controlled-shutdown"),
    Rule("a broker in controlled shutdown stops fetching once a change it replays as a follower "
         "leaves it out of the ISR or the partition without a leader (its log kept)", "KAFKA-13858",
         "3.3.0", "3.3.0 and later (76477ffd2d8), every KRaft row",
         "3.3.0 and 3.9.0-rc3 core/.../server/ReplicaManager.scala applyLocalFollowersDelta "
         "(isInControlledShutdown && (info.partition.leader == NO_LEADER || "
         "!info.partition.isr.contains(config.brokerId)) -> partitionsToStopFetching -> "
         "stopPartitions, deleteLocalLog = false), beginControlledShutdown; "
         "core/.../server/BrokerServer.scala shutdown (replicaManager.beginControlledShutdown "
         "before the heartbeat)",
         "actions_kraft._kraft_apply_leader_and_isr (fetch=NO_FETCHER, IDLE_STOPPED)",
         flag="kraft-shutdown-stops-fetcher",
         abstraction="the broker's own flag is set with the controller's ProcessControlledShutdown "
                     "(one step, as the heartbeat and its handling are), so a change replayed "
                     "between BrokerServer.shutdown's beginControlledShutdown and the heartbeat's "
                     "answer is not seen as in controlled shutdown"),
    Rule("the fetch carries the follower's broker epoch and AlterPartition each proposed member's; "
         "a replica whose fetch state is from an earlier registration is ineligible", "KIP-903",
         "3.5.0", "3.5.0 and later "
         "(KAFKA-14617: 79b5f7f1ce2, 8c88cdb7186, d5e216d6183)",
         f"3.5.0 {_C}Partition.scala isBrokerEpochIsrEligible, addBrokerEpochToIsr, "
         "updateFollowerFetchState; "
         "metadata/.../controller/ReplicationControlManager.java ineligibleReplicasForIsr (broker "
         "epoch mismatch)",
         "actions_alter_partition._eligible, _process_alter_partition; "
         "actions_data._serve_fetch_state, _follower_actions", flag="kip-903"),
    Rule("an ISR shrink keeps the leader epoch; only the partition epoch moves", "KAFKA-15021",
         "3.6.0", "3.6.0 and later (MetadataVersion 3.6-IV0)",
         "3.9.0 metadata/.../controller/PartitionChangeBuilder.java "
         "triggerLeaderEpochBumpForIsrShrinkIfNeeded (isLeaderEpochBumpRequiredOnIsrShrink); 3.5.0 "
         "triggerLeaderEpochBumpIfNeeded bumps on every shrink",
         "actions_kraft._partition_change", flag="kafka-15021"),
    Rule("strict min ISR: the leader's HW does not advance while the (committed) ISR is below "
         "min.insync.replicas",
         "KIP-966 (KAFKA-15583)", "3.7.0", "3.7.0 and later (edc7e10a745), ZooKeeper and KRaft "
         "mode alike (Partition.scala is shared; unconditional, not an ELR feature level): the "
         "3.9.1, kraft-4.0 and kraft-4.1 rows",
         f"3.7.0 and 3.9.0 {_C}Partition.scala maybeIncrementLeaderHW (if (isUnderMinIsr) return "
         "false), "
         "isUnderMinIsr (partitionState.isr.size < effectiveMinIsr)",
         "actions_data._advance_hw_action", flag="kafka-15583",
         abstraction="the cap by the replication factor (effectiveMinIsr, the same commit) is its "
                     "own flag: effective-min-isr"),
    Rule("min.insync.replicas is capped by the replication factor: the leader's effective min ISR "
         "is min(min ISR, its replicas) for the HW, the acks=all refusal and completion; the KRaft "
         "controller's is min(min ISR, the partition's replicas before the change), given to every "
         "partition change (ELR population)",
         "KAFKA-15583 (broker), KAFKA-15581 (controller)", "3.7.0",
         "3.7.0 and later (broker: edc7e10a745; controller: af747fbfed7, with ELR): the 3.9.1 and "
         "kraft-4.1 rows",
         f"3.7.0 and 3.9.0-rc3 {_C}Partition.scala effectiveMinIsr "
         "(leaderLog.config.minInSyncReplicas.min("
         "remoteReplicasMap.size + 1)), isUnderMinIsr, checkEnoughReplicasReachOffset, "
         "appendRecordsToLeader; metadata/.../controller/ReplicationControlManager.java "
         "getTopicEffectiveMinIsr (Math.min(currentMinIsr, replicationFactor), replicationFactor = "
         "topics.get(topicId).parts.get(0).replicas.length), passed to each PartitionChangeBuilder "
         "(alterPartition, handleBrokerFenced / generateLeaderAndIsrUpdates, "
         "changePartitionReassignment, electLeader); PartitionChangeBuilder.java "
         "maybePopulateTargetElr (targetIsr.size() >= minISR: ELR cleared)",
         "clients.leader_min_isr, clients.AllAcks; actions_data._advance_hw_action; "
         "actions_kraft._controller_min_isr (_partition_change, _fence_actions, "
         "actions_broker_lifecycle._controlled_shutdown_actions)", flag="effective-min-isr",
         abstraction="the replication factor is read from the model's one partition (Kafka reads "
                     "partition 0's replica list for the whole topic; the model has one partition, "
                     "so they agree); it differs from min_isr only when min_isr exceeds the "
                     "brokers or a reassignment shrinks the replicas"),
    Rule("eligible leader replicas: replicas leaving an ISR below min ISR become eligible leader "
         "replicas (the ISR may empty), elected when no ISR member is left",
         "KIP-966 (KAFKA-15581, KAFKA-15584)", "3.7.0", "3.7.0 code, off by default until 4.1.0 "
         "(eligible.leader.replicas.version=1 on new clusters)",
         "3.9.0 metadata/.../controller/PartitionChangeBuilder.java maybePopulateTargetElr, "
         "isValidNewLeader, electAnyLeader",
         "actions_kraft._partition_change, _kraft_controller_actions", flag="kip-966-elr",
         since=("4.1.0",), abstraction="no last-known-leader election (KIP-966's balanced "
                                       "recovery)"),
    Rule("an unclean election empties the ELR and the last-known ELR (an ELR election is clean: "
         "the record's ISR is not set by tryElection)", "KIP-966 (KAFKA-15581)", "3.7.0",
         "3.7.0 and later, where ELR is on "
         "(af747fbfed7; 3.9.0-rc3 unchanged): the kraft-4.1 row",
         "3.7.0 and 3.9.0-rc3 metadata/.../controller/PartitionChangeBuilder.java "
         "maybeUpdateRecordElr (isCleanLeaderElection = record.isr() == null; not clean: "
         "targetElr, targetLastKnownElr emptied), tryElection (record.setIsr on an unclean "
         "election), build (maybeUpdateRecordElr after tryElection)",
         "actions_kraft._partition_change (unclean=True), _kraft_controller_actions "
         "(UncleanLeaderElection)",
         flag="unclean-election-clears-elr",
         abstraction="the model has no last-known ELR (no last-known-leader election), so only the "
                     "ELR is cleared"),
    Rule("a broker that registers as a new incarnation is removed from the ISR and the ELR",
         "KIP-966 "
         "(KAFKA-15582, KAFKA-15586; KAFKA-16952)", "3.8.0",
         "3.8.0 and later, where ELR is supported: 3.8.x and (with "
         "kafka-18635) 4.1.x remove a broker whose registration does not carry its registered "
         "broker epoch as its previous one (no clean shutdown file: a crash); 3.9.x (KAFKA-16952, "
         "2fd00ce5367) removes every registration with a new incarnation id, clean shutdown or not "
         "(3.7.x only logs it: a TODO)",
         "3.9.0-rc3 metadata/.../controller/ClusterControlManager.java registerBroker "
         "(!request.incarnationId().equals(prevIncarnationId) -> "
         "brokerUncleanShutdownHandler.addRecordsForShutdown); 3.8.0 the same method (version < 2 "
         "|| existing == null || request.previousBrokerEpoch() != existing.epoch()); "
         "ReplicationControlManager.java handleBrokerUncleanShutdown (isElrSupported); "
         "PartitionChangeBuilder.java maybePopulateTargetElr (uncleanShutdownReplicas)",
         "actions_broker_lifecycle._kraft_restart_state", flag="clean-shutdown-detection",
         abstraction="the rows are kraft-4.0 (4.0.0, ELR off by default: the detection does not "
                     "act) and kraft-4.1 (kafka-18635 on); kraft-3.8.x and kraft-3.9.x are "
                     "kraft-3.5 with the flags of their releases (kmc list --releases), "
                     "kafka-18635=off being 3.9.x's rule"),
    Rule("a registration with the incarnation id already registered amends it and keeps its broker "
         "epoch and fencing state; a new incarnation gets a new broker epoch, and is refused while "
         "the old one's session lives",
         "KIP-631; KAFKA-16952 (2fd00ce5367)", "3.3.0", "every KRaft release; the same-incarnation "
         "case keeps the broker epoch from 3.9.0 (3.7.x and 3.8.x bumped it)",
         "3.9.0-rc3 metadata/.../controller/ClusterControlManager.java registerBroker "
         "(hasValidSession -> DuplicateBrokerRegistrationException; "
         "setBrokerEpoch(existing.epoch()) for the same incarnation id); 3.5.0 the same method",
         "actions_broker_lifecycle._kraft_restart_state (every registration is a new"
                        " incarnation, once fenced)",
         abstraction="a same-incarnation re-registration happens only when a running broker "
                     "re-registers on a metadata version upgrade (KIP-858's directory ids), which "
                     "the model has no step for: every registration in the model is a restarted "
                     "broker's, with a new incarnation id and broker epoch",
         id="same-incarnation-registration"),
    Rule("a clean restart keeps its ISR/ELR membership again: the unclean shutdown check reads the "
         "previous broker epoch again", "KAFKA-18635", "4.0.1",
         "4.0.1 and 4.1.0 and later (apache/kafka PR 18277, reviewed in January "
         "2025, merged to trunk and backported to 4.0 after 4.0.0); 3.8.x already had the check it "
         "restores (3.8.0 ClusterControlManager.registerBroker: previousBrokerEpoch() != "
         "existing.epoch()), 3.9.x and 4.0.0 remove every new incarnation (KAFKA-16952)",
         "3.8.0 metadata/.../controller/ClusterControlManager.java registerBroker (the check it "
         "restores: request.previousBrokerEpoch() != existing.epoch()); 3.8.0 "
         "core/.../log/LogManager.scala shutdown(brokerEpoch) (CleanShutdownFileHandler.write), "
         "readBrokerEpochFromCleanShutdownFiles; BrokerServer.scala shutdown "
         "(logManager.shutdown(lifecycleManager.brokerEpoch)), startup "
         "(lifecycleManager.start(..., previousBrokerEpoch))",
         "actions_broker_lifecycle._kraft_restart_state, _clean_shutdown_actions",
         flag="kafka-18635", since=("3.8.0", "4.0.1")),
    Rule("a broker that leads nothing ends its controlled shutdown: fenced (SHUTDOWN_NOW), it "
         "stops and writes its clean shutdown file", "KIP-631, KIP-966", "3.3.0",
         "every KRaft release (the clean shutdown file from 3.8.0)", "3.8.0 "
         "metadata/.../controller/BrokerHeartbeatManager.java calculateNextBrokerState "
         "(SHUTDOWN_NOW when no leaderships); ReplicationControlManager.java "
         "processBrokerHeartbeat (case SHUTDOWN_NOW: handleBrokerFenced); "
         "core/.../server/BrokerServer.scala shutdown",
         "actions_broker_lifecycle._clean_shutdown_actions (bound clean_shutdowns)",
         abstraction="the controller's wait for the broker's metadata offset to reach the "
                     "controlled shutdown offset is not modelled; a Crash stands for any other "
                     "stop (no clean shutdown file)",
         id="clean-shutdown"),
    Rule("a fenced running broker's shutdown is granted at once (SHUTDOWN_NOW) and it stops "
         "cleanly: its clean shutdown file holds its registration's broker epoch, so its restart "
         "is clean (with kafka-18635 it keeps its ELR membership)", "KIP-631, KIP-966", "3.8.0",
         "the grant in every KRaft release (3.3.0 BrokerHeartbeatManager, case FENCED); the clean "
         "shutdown file, which makes it differ from a crash, from 3.8.0: the kraft-4.1 row",
         "3.9.0-rc3 metadata/.../controller/BrokerHeartbeatManager.java calculateNextBrokerState "
         "(case FENCED: wantShutDown -> SHUTDOWN_NOW, 'has requested and been granted an immediate "
         "shutdown'); ReplicationControlManager.java processBrokerHeartbeat (SHUTDOWN_NOW: "
         "handleBrokerFenced, no partition change for a broker out of every ISR); "
         "core/.../server/BrokerServer.scala shutdown (the future's timeout and errors swallowed, "
         "then logManager.shutdown(lifecycleManager.brokerEpoch))",
         "actions_broker_lifecycle._clean_shutdown_actions (CleanShutdown of a fenced broker, "
         "bounds fences and clean_shutdowns)",
         flag="fenced-broker-clean-shutdown",
         abstraction="on the rows without clean-shutdown-detection a fenced broker's clean stop is "
                     "the model's Crash (nothing reads the file there), so the flag is on "
                     "kraft-4.1 only; the controlled shutdown timeout of a leader "
                     "(BrokerServer.shutdown goes on and writes the file) is not modelled: a "
                     "leader stops cleanly only once its leadership moved"),
    Rule("a running broker whose heartbeats stop is fenced: out of the ISR (the last member kept "
         "unless ELR), a new leader if it led; it keeps running, its log and its fetcher",
         "KIP-631", "3.3.0 (KRaft GA)", "every KRaft release",
         "3.5.0 metadata/.../controller/QuorumController.java rescheduleMaybeFenceStaleBrokers; "
         "ReplicationControlManager.java maybeFenceOneStaleBroker -> handleBrokerFenced; "
         "BrokerHeartbeatManager.java findOneStaleBroker",
         "actions_kraft._fence_running_actions, _fence_actions (bound fences)",
         abstraction="the session timeout is one step; the fenced broker's own view changes only "
                     "as it replays the partition change",
         id="fence-running-broker"),
    Rule("a fenced running broker that heartbeats again is unfenced with its registration's broker "
         "epoch; a partition with no leader gets one from its ISR (KIP-966: ELR) in the same "
         "change", "KIP-631", "3.3.0",
         "every KRaft release", "3.5.0 metadata/.../controller/BrokerHeartbeatManager.java "
         "calculateNextBrokerState (FENCED -> UNFENCED once currentMetadataOffset >= "
         "registerBrokerRecordOffset); ReplicationControlManager.java handleBrokerUnfenced "
         "(generateLeaderAndIsrUpdates over partitionsWithNoLeader); 3.9.0-rc3 the same methods",
         "actions_kraft._unfence_actions",
         abstraction="the metadata-offset condition always holds for a broker that kept running "
                     "(it replayed its registration long ago); the model elects any unfenced ISR "
                     "(ELR) member, Kafka the first in replica order",
         id="unfence-broker"),
    Rule("an uncleanly elected leader's partition is RECOVERING; the controller rejects a "
         "RECOVERING AlterPartition with more than one ISR member and RECOVERED -> RECOVERING",
         "KIP-704 (KAFKA-13587, 52621613fd3)", "3.2.0", "3.2.0 and later, KRaft and (IBP >= "
         "3.2-IV0) ZooKeeper controllers alike; no release's leader waits: it marks the partition "
         "RECOVERED as it becomes leader, so its first AlterPartition (an expansion) is accepted",
         "3.2.0 metadata/.../controller/PartitionChangeBuilder.java electLeader "
         "(setLeaderRecoveryState(RECOVERING) on an unclean election); "
         "ReplicationControlManager.java validateAlterPartitionData; "
         "core/.../controller/Election.scala leaderForOffline (newRecoveringLeaderAndIsr), "
         "KafkaController.scala processAlterPartition; "
         "core/src/main/scala/kafka/cluster/Partition.scala makeLeader ('Leader log recovery is "
         "not implemented. Marking the topic partition as RECOVERED'); the same in 3.9.0-rc3 and "
         "trunk of October 2024",
         "actions_alter_partition._process_alter_partition, actions_kraft._kraft_controller_actions"
         " (UncleanLeaderElection)",
         abstraction="no LeaderRecoveryState in the state: RECOVERING lasts until the new leader "
                     "replays its election, which no step of the model can observe (the leader "
                     "neither waits nor sends RECOVERING)",
         id="leader-recovery-state"),
    Rule("an unclean shutdown loses the unflushed suffix of the log (any suffix: Kafka leaves "
         "flushing to the OS, log.flush.interval.messages is unbounded by default); a disk loss is "
         "one that keeps nothing", "KIP-966", "-",
         "every release (a fault with its own bound, unclean_shutdowns; on the KRaft rows)",
         "KIP-966 Motivation (an unclean shutdown loses unflushed data); 3.5.0 "
         "core/src/main/scala/kafka/log/LogManager.scala loadLogs (recovery after an unclean "
         "shutdown)", "actions_broker_lifecycl"
                                                                           "e._kraft_broker_actions"
                                                                           ", _kraft_crash",
         abstraction="a disk loss (log, epoch cache and HW checkpoint gone) is "
                     "UncleanShutdown(keep=0): with one partition and the HW clamped to the LEO on "
                     "restart the model cannot tell them apart; the ZooKeeper rows have their own "
                     "form of the fault (lossy-crash)",
         id="unclean-shutdown"),
    Rule("a partition reassignment (AlterPartitionReassignments) writes the merged replica list "
         "(target + removing) with the adding and removing replicas; every later partition change "
         "completes it once the ISR less the removing replicas is not empty and holds every adding "
         "replica: replicas = target, ISR = ISR - removing; the leader is kept if still in the "
         "target ISR, else the first valid target replica is elected (with ELR, an active ELR "
         "member when the target ISR is empty, in the reassignment's own change); a replica list "
         "that loses a replica bumps the leader epoch, an addition alone does not",
         "KIP-455 (KRaft: KAFKA-12803)", "3.0.0", "every KRaft release (KAFKA-12803: 6a0efda30ec, "
         "in 3.0.0); the completion condition is KAFKA-15665's from 3.8.0 (flag kafka-15665)",
         "3.5.0 metadata/.../controller/ReplicationControlManager.java alterPartitionReassignments "
         "-> changePartitionReassignment; PartitionReassignmentReplicas.java (constructor, "
         "maybeCompleteReassignment); PartitionChangeBuilder.java build "
         "(completeReassignmentIfNeeded, tryElection -> electAnyLeader, "
         "triggerLeaderEpochBumpIfNeeded); 3.9.0-rc3 the same "
         "(triggerLeaderEpochBumpForReplicaReassignmentIfNeeded)",
         "actions_reassignment._reassign_actions (ReassignPartition(remove, add), bound "
         "reassignments), _reassigned, completed; actions_kraft._partition_change (the ELR "
         "election of a reassignment's change)",
         abstraction="one reassignment at a time: no cancellation or replacement of one in "
                     "progress (cancelPartitionReassignment, PartitionReassignmentRevert); the "
                     "target list is sorted, so the first valid replica is the lowest id; the "
                     "ZooKeeper rows' reassignment (KafkaController.onPartitionReassignment) is "
                     "not modelled: every broker is a replica there",
         id="reassignment"),
    Rule("a reassignment completes only once the ISR holds every target replica (not only the "
         "adding ones)",
         "KAFKA-15665", "3.8.0", "3.8.0 and later (756f44a3e58)",
         "3.8.0 metadata/.../controller/PartitionReassignmentReplicas.java "
         "maybeCompleteReassignment (newTargetIsr.containsAll(newTargetReplicas)); 3.5.0 the same "
         "method checks only the adding replicas",
         "actions_reassignment.completed", flag="kafka-15665"),
    Rule("a broker that replays a partition change whose replicas do not include it deletes its "
         "replica (fetcher removed, log deleted); a broker added creates the partition from an "
         "empty log and follows; the leader tracks only the assigned replicas (a new one with "
         "unknown LEO) and answers a non-replica's fetch UNKNOWN_LEADER_EPOCH", "KAFKA-13198",
         "3.0.0", "every KRaft release (KAFKA-13198: 5f483f13fb8, in 3.0.0)", "3.5.0 "
         "core/.../server/ReplicaManager.scala applyDelta (localChanges.deletes -> stopPartitions "
         "with deleteLocalLog; applyLocalFollowersDelta -> getOrCreatePartition, makeFollower); "
         "metadata/.../image/TopicDelta.java localChanges; "
         "core/src/main/scala/kafka/cluster/Partition.scala updateAssignmentAndIsr "
         "(remoteReplicasMap), fetchRecords -> followerReplicaOrThrow",
         "actions_reassignment._reassigned_apply_leader_and_isr, _serve_non_replica, _replaying; "
         "actions_alter_partition._alter_leader_actions (the leader's replicas)",
         abstraction="a broker that crashed before it replayed its removal keeps its log as a "
                     "stray log on restart (3.5.0 deletes none at start-up; the stray-log deletion "
                     "of later releases is not modelled) and replays nothing while it is not a "
                     "replica",
         id="reassignment-deletes-replica"),
    Rule("the ELR is not filtered by the replica list: a replica removed from an ISR below min ISR "
         "enters the ELR and stays there; the elections walk the replica list, so it is electable "
         "from the ELR again once a reassignment adds it back, with the empty log it starts from, "
         "if the add-back keeps the ELR (the ISR below the min ISR capped by the replicas before "
         "the change: effective-min-isr); the upstream report "
         "docs/reports/kraft-4.1-elr-not-filtered-by-replicas.md, its proposed fix the flag "
         "elr-filtered-by-replicas",
         "KIP-966", "3.7.0",
         "every release with ELR: 3.9.0-rc3, trunk of October 2024 and a post-4.0 trunk "
         "PartitionChangeBuilder (no later fix among the commits read)",
         "3.9.0-rc3 metadata/.../controller/PartitionChangeBuilder.java build "
         "(completeReassignmentIfNeeded before maybePopulateTargetElr), maybePopulateTargetElr "
         "(candidateSet = targetElr + partition.isr, less the target ISR), electAnyLeader "
         "(targetReplicas.stream().filter(this::isValidNewLeader)), isValidNewLeader; "
         "metadata/.../metadata/PartitionRegistration.java merge",
         "actions_kraft._partition_change (ELR), _candidates (ELR members among the replicas); "
         "actions_reassignment._reassigned (the rows with kip-966-elr)",
         id="elr-not-filtered-by-replicas"),
    Rule("proposed fix (in no release): the ELR keeps only the target replicas, so a replica a "
         "reassignment removed leaves the ELR with the replica list", "-", "-",
         "none: a proposed fix (the upstream report "
         "kraft-4.1-elr-not-filtered-by-replicas); on in no row, switch it with --feature",
         "against 3.9.0-rc3 metadata/.../controller/PartitionChangeBuilder.java "
         "maybePopulateTargetElr (candidateSet filtered by targetReplicas as well as by the target "
         "ISR and the unclean shutdown replicas)",
         "actions_kraft._partition_change (ELR)", flag="elr-filtered-by-replicas", since=()),
    Rule("one record per batch, one partition", "-", "-", "-", "-",
         "log.Record (a record is a batch), state.KafkaState "
         "(one partition's replicas)",
         abstraction="KIP-279's scenario 1 with n > 20 relied on truncating to a batch boundary; a "
                     "second partition (KAFKA-7235's checkpoint rewrite) cannot be expressed",
         id="one-record-per-batch"),
)


#: every rule by its id (a flag, or its own name for a rule every release shares)
RULE_IDS: dict[str, Rule] = {r.id: r for r in RULES}
assert len(RULE_IDS) == len(RULES), "every rule has its own id"


def flag_rules() -> dict[str, Rule]:
    return {r.flag: r for r in RULES if r.flag}


def rules_for(features: Features | None = None) -> list[tuple[Rule, bool | None]]:
    """Every rule with whether it is on under ``features`` (None for a rule every release
    shares)."""
    return [(r, features.flag(r.flag) if (features is not None and r.flag) else None)
            for r in RULES]


def releases_with(flag: str) -> list[str]:
    """The protocol rows that have ``flag`` on."""
    return [r.name for r in RELEASES if r.features.flag(flag)]


assert set(flag_rules()) == set(FLAGS), "every feature flag has a rule and every rule's flag exists"
assert not set(FLAG_ALIASES) & set(FLAGS)


def on_by_default(rule: Rule) -> str:
    """Where a flag's rule is on by default, as ``kmc list --rules`` says it
    (``spec.kafka.releases`` computes each release's flags from the same fields)."""
    if rule.since == ():
        return ("in no release by default (a configuration, a fault, or the controller a row is: "
                "--feature, --protocol)")
    since = list(rule.since) if rule.since is not None else [rule.introduced.split()[0]]
    lines = [f"{first} on its line" for first in since[:-1]] + [f"from {since[-1]}"]
    return ", ".join(lines) + (f", until {rule.until}" if rule.until else "")


def rule_rows(features: Features | None = None) -> list[dict[str, str]]:
    """The table as rows for ``kmc list --rules`` (``id`` is what an action's declaration names the
    rule by; ``on`` is "yes"/"no" for a flag under ``features``, a protocol's)."""
    rows = []
    for rule, on in rules_for(features):
        row = {"rule": rule.name, "id": rule.id, "flag": rule.flag or "(every release)",
               "ticket": rule.ticket,
               "release": rule.introduced, "releases": rule.releases, "source": rule.source,
               "model": rule.model, "abstraction": rule.abstraction}
        if rule.flag:
            row["rows"] = ", ".join(releases_with(rule.flag)) or "(none: switch it with --feature)"
            row["default"] = on_by_default(rule)
        if on is not None:
            row["on"] = "yes" if on else "no"
        rows.append(row)
    return rows
