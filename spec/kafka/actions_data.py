"""The data plane of the Kafka model: what a leader does on its own (produce, advance the high
watermark, shrink and expand the ISR), what a follower sends (Fetch, OffsetsForLeaderEpoch), and how
the leader serves those requests and the follower applies the answers (append, truncate, retry).

``DataPlaneActions`` is one of the action families of ``spec.kafka.model.KafkaModel`` (a base class
that defines its own functions and overrides none of another family's): it reads the bounds, feature
switches (``self.features``) and action tables that ``KafkaModel.__init__`` sets (built from the
``ACTIONS`` at the end of this module). Which controller runs is chosen once, by the control plane
(``spec.kafka.controllers``). Each method names the release source it follows; ``spec.kafka.rules``
is the table of every rule that differs between releases.
"""

from __future__ import annotations

from spec.kafka.clients import leader_min_isr
from spec.kafka.declared import BROKER, Consumes, Declared
from spec.kafka.log import (
    LOOKUP_UNDEFINED,
    UNDEFINED,
    Record,
    assign,
    cache_after_append,
    diverging_epoch,
    end_offset_for,
    end_offset_kip101,
    epoch_start,
    follower_truncation,
    latest_epoch,
)
from spec.kafka.state import (
    DATA_KINDS,
    FENCED_LEADER_EPOCH,
    FETCH,
    FETCH_RESPONSE,
    FETCHING,
    IDLE_FENCED,
    NO_FETCHER,
    NONE,
    NOT_LEADER,
    OFFSET_OUT_OF_RANGE,
    OFFSETS_FOR_LEADER_EPOCH,
    OFFSETS_FOR_LEADER_EPOCH_RESPONSE,
    TRUNCATING,
    TRUNCATING_AGAIN,
    UNKNOWN_LEADER_EPOCH,
    Broker,
    Controller,
    FetchRequest,
    FetchResponse,
    KafkaState,
    OffsetsRequest,
    OffsetsResponse,
    updater,
)
from spec.kafka.updates import (
    add_messages,
    remove_message,
    replace_at,
    truncate_broker,
    with_broker,
    with_fetch_state,
    with_network,
)

# -- the updates of the hot path: each is the copy ``broker.with_(...)`` makes, called with the same
# -- keywords, generated once from the field names (``spec.kafka.state.updater``) because it runs on
# -- most successors
_appended = updater(Broker, "log", "cache")  # Produce
_advanced = updater(Broker, "hw")  # AdvanceHighWatermark
_leader_isr = updater(Broker, "isr")  # ShrinkIsr / ExpandIsr
_controller_isr = updater(Controller, "isr")
_fetched_by = updater(Broker, "remote")  # the leader records a follower's fetch offset
def _recorded(leader: Broker, f: int, offset: int) -> Broker:
    """The leader records follower ``f``'s fetch offset (``Partition.updateFollowerFetchState``); a
    stale HW (KAFKA-13091, ``hw_events``) is recomputed there when the follower's LEO moved (2.8.0:
    ``prevFollowerEndOffset != followerReplica.logEndOffset`` -> ``maybeIncrementLeaderHW``)."""
    moved = leader.remote[f] != offset
    leader = _fetched_by(leader, remote=replace_at(leader.remote, f, offset))
    return leader.with_(hw_stale=False) if moved and leader.hw_stale else leader


_fetched_epoch_by = updater(Broker, "remote_epochs")  # KIP-903: ... and its broker epoch
_appended_fetched = updater(Broker, "log", "hw", "cache", "reconciled")  # ReceiveFetch appends
# 0.11.0 / 1.0.x: an empty answer to a truncating partition (processPartitionData)
_hw_taken = updater(Broker, "hw")
_produced = updater(KafkaState, "brokers", "produced")
_committed = updater(KafkaState, "brokers", "committed")
# FENCED_LEADER_EPOCH removes the partition
_fenced = updater(Broker, fetch=NO_FETCHER, idle_cause=IDLE_FENCED)
# truncate-on-fetch: ReceiveFetch notes a diverging epoch
_diverging_noted = updater(Broker, "pending_diverging")
# the same before KAFKA-14704's fix
_diverging_noted_hw = updater(Broker, "pending_diverging", "hw")
_diverging_done = updater(Broker, "fetch", pending_diverging=())  # TruncateOnDivergingEpoch


class DataPlaneActions:
    """Produce, high watermark and ISR changes by the leader; fetch and OffsetsForLeaderEpoch
    rounds."""

    # -- a leader's own actions --------------------------------------------------------------------
    def _leader_actions(self, s: KafkaState, i: int, leader: Broker, out: list) -> None:
        add = out.append
        self._produce_action(s, i, leader, add)
        self._advance_hw_action(s, i, leader, add)
        controller = s.controller
        if controller.leader != i or controller.epoch != leader.epoch:
            # a deposed leader's ZooKeeper write of the ISR fails (stale zkVersion):
            # Partition.updateIsr
            return
        for f in range(self.brokers):
            if f != i:
                self._isr_change_action(s, i, leader, f, add)

    def _produce_action(self, s: KafkaState, i: int, leader: Broker, add) -> None:
        """Produce: a broker that believes it leads appends a record in its leader epoch
        (``Partition.appendRecordsToLeader``; the epoch cache learns a new epoch on its first
        append, ``Log.append`` -> ``leaderEpochCache.assign``; 0.10.2 keeps no epoch cache). The
        producer policy (``spec.kafka.clients.producer_for``) says whether the leader accepts it
        (acks=all: NOT_ENOUGH_REPLICAS) and what the producer is told."""
        producer = self.producer  # spec.kafka.clients: the producer's acks, chosen once
        if s.produced >= self.records or not producer.accepts(leader):
            return
        ident = s.produced + 1
        leo = len(leader.log)
        epoch = leader.epoch
        cache = (assign(leader.cache, epoch, leo, self.features.kafka_7415)
                 if self.features.epoch_cache else leader.cache)
        record = Record(epoch, ident)
        appended = _appended(leader, log=leader.log + (record,), cache=cache)
        # appendRecordsToLeader -> maybeIncrementLeaderHW (KAFKA-13091, hw_events)
        if appended.hw_stale:
            appended = appended.with_(hw_stale=False)
        t = _produced(s, brokers=replace_at(s.brokers, i, appended), produced=ident)
        add((self._produce[i], producer.appended(t, leo, record)))

    def _advance_hw_action(self, s: KafkaState, i: int, leader: Broker, add) -> None:
        """AdvanceHighWatermark: HW = the least LEO over the leader's ISR (the leader's own
        included), as the fetch offsets of its last fetches tell it
        (``Partition.maybeIncrementLeaderHW``). The records below the new HW become committed (the
        ghost ``committed``), and the producer policy says which waiting produce requests complete
        (acks=all: ``spec.kafka.clients.AllAcks``). With ``kafka-15583`` (3.7.0
        ``maybeIncrementLeaderHW``: ``if (isUnderMinIsr) return false``, ZooKeeper and KRaft mode
        alike) not while the ISR is below ``min_isr``; ``isUnderMinIsr`` reads
        ``partitionState.isr``, the committed ISR while an AlterPartition is pending (the maximal
        ISR counts for the HW itself); with ``effective-min-isr`` (3.7.0, the same commit:
        ``isUnderMinIsr`` compares with ``effectiveMinIsr``) the min ISR capped by the leader's
        replicas."""
        if leader.hw_stale:
            # KAFKA-13091 (2.7 to 3.0, hw_events=1): a committed ISR change left the HW; the next
            # event moves it
            return
        if self.features.kafka_15583:
            committed = leader.committed_isr if leader.alter_pending else leader.isr
            required = (leader_min_isr(self.min_isr, leader, self.brokers)
                        if self.features.effective_min_isr else self.min_isr)
            if len(committed) < required:
                return
        hw = len(leader.log)
        for r in leader.isr:
            if r != i and leader.remote[r] < hw:
                hw = leader.remote[r]
        if hw <= leader.hw:
            return
        committed = set(s.committed)
        for offset in range(hw):
            record = leader.log[offset]
            committed.add((offset, record.epoch, record.ident))
        advanced = _advanced(leader, hw=hw)
        t = _committed(s, brokers=replace_at(s.brokers, i, advanced),
                       committed=tuple(sorted(committed)))
        add((self._advance[i], self.producer.advanced(t, leader, hw)))

    def _isr_change_action(self, s: KafkaState, i: int, leader: Broker, f: int, add) -> None:
        """ShrinkIsr / ExpandIsr of follower ``f`` by the leader of the controller's current epoch.

        Shrink: at any time (``Partition.maybeShrinkIsr`` drops a follower that has not caught up
        for ``replica.lag.time.max.ms``; time is abstracted away), but from 2.1.0 (``kafka-7152``)
        never a follower whose LEO, as the leader last learned it, equals the leader's LEO. Expand
        (``Partition.maybeExpandIsr``): the follower's fetch offset reached the leader's HW; with
        ``kafka-7128`` (2.0.1+) it must also have reached the start offset of the leader's epoch
        (``leaderEpochStartOffsetOpt``)."""
        isr = leader.isr
        if f in isr:
            if self.features.kafka_7152 and leader.remote[f] == len(leader.log):
                # KAFKA-7152 (2.1.0 getOutOfSyncReplicas): r.logEndOffset !=
                # leaderReplica.logEndOffset
                return
            add((self._shrink[i][f],
                 self._with_isr(s, i, leader, tuple([r for r in isr if r != f]))))
            return
        fetched = leader.remote[f]
        if fetched < 0 or fetched < leader.hw:
            return
        if (self.features.kafka_7128 and fetched < epoch_start(leader.cache, leader.epoch,
                                                               len(leader.log))):
            return
        if not self._fetch_being_answered(s.network, i, leader, f):
            return
        add((self._expand[i][f], self._with_isr(s, i, leader, tuple(sorted(isr + (f,))))))

    def _fetch_being_answered(self, network: tuple, i: int, leader: Broker, f: int) -> bool:
        """ExpandIsr happens only as the leader records a fetch it accepted from the follower:
        0.10.2.0 ``Partition.updateReplicaLogReadResult`` -> ``maybeExpandIsr``, 2.8.0 and 3.9.0
        ``updateFollowerFetchState`` -> ``maybeExpandIsr``
        (``ReplicaManager.updateFollowerFetchState`` skips an errored read from 2.4.0; before, an
        errored read records an unknown LEO, which no expansion passes). The model takes the
        expansion as its own step while the answer of that fetch is on its way to the follower (the
        follower sends no other fetch meanwhile: ``busy``): error-free, with records or (before
        KAFKA-13141's fix, which records nothing for it) a diverging epoch, and (KIP-320, 2.1.0+) to
        a request of the leader's current epoch. So a leader re-elected in a new epoch does not add
        a follower from the LEO it recorded in the previous one, nor one that crashed or stopped
        fetching since (a crash drops the answers to it)."""
        fencing = self.features.leader_epoch_fencing
        records_diverging = not self.features.kafka_13141
        for m in network:
            if (m.kind == FETCH_RESPONSE and m.src == i and m.dst == f and m.error == NONE
                    and (records_diverging or m.diverging_epoch == UNDEFINED)
                    and (not fencing or m.epoch == leader.epoch)):
                return True
        return False

    @staticmethod
    def _with_isr(s: KafkaState, i: int, leader: Broker, isr: tuple[int, ...]) -> KafkaState:
        """The leader's ISR change written to ZooKeeper with its epoch (``Partition.updateIsr``)."""
        return with_broker(s, i, _leader_isr(leader, isr=isr),
                           controller=_controller_isr(s.controller, isr=isr))

    # -- a follower's requests ---------------------------------------------------------------------
    def _follower_actions(self, s: KafkaState, i: int, follower: Broker, out: list,
                          broker_epoch: int = UNDEFINED) -> None:
        """SendFetch / SendOffsetsForLeaderEpoch: the fetcher thread sends one request at a time to
        the leader it follows and waits for the answer (``AbstractFetcherThread.doWork``).
        ``broker_epoch`` is the follower's broker epoch its Fetch carries (KIP-903 on KRaft, 3.5.0
        ``RemoteLeaderEndPoint.buildFetch``:
        ``FetchRequest.Builder.forReplica(version, brokerId, brokerEpochSupplier(), ...)``,
        FetchRequest v15 ``ReplicaState.ReplicaEpoch``; the caller, ``KafkaModel._replica_actions``,
        passes it; -1 otherwise)."""
        leader = follower.leader
        network = s.network
        if follower.fetch == NO_FETCHER or follower.pending_diverging or busy(network, i, leader):
            # no partition to fetch, or the thread has a truncation to finish, or waits for an
            # answer
            return
        if self.inflight and in_flight(network) >= self.inflight:
            return
        features = self.features
        # KIP-320: currentLeaderEpoch
        current_epoch = follower.epoch if features.leader_epoch_fencing else UNDEFINED
        if follower.fetch == FETCHING:
            # KAFKA-10554: lastFetchedEpoch
            last_fetched = latest_epoch(follower.cache) if features.truncate_on_fetch else UNDEFINED
            request = FetchRequest.new(src=i, dst=leader, epoch=current_epoch,
                                       offset=len(follower.log),
                                   last_epoch=last_fetched, broker_epoch=broker_epoch)
            out.append((self._send_fetch[i][leader],
                        with_network(s, add_messages(network, request))))
        elif ((follower.fetch == TRUNCATING or follower.fetch == TRUNCATING_AGAIN)
              and follower.cache):
            request = OffsetsRequest.new(src=i, dst=leader, epoch=current_epoch,
                                     requested=latest_epoch(follower.cache))
            out.append((self._send_offsets[i][leader],
                        with_network(s, add_messages(network, request))))

    # -- the leader serves -------------------------------------------------------------------------
    def _error(self, leader: Broker, i: int, request_epoch: int) -> int:
        """The leader's check of a request (2.1+: ``Partition.localReplicaWithEpochOrException``):
        FENCED_LEADER_EPOCH if the request's current leader epoch is older than the leader's,
        UNKNOWN_LEADER_EPOCH if newer, NOT_LEADER if this broker does not lead."""
        if self.features.leader_epoch_fencing:
            if request_epoch < leader.epoch:
                return FENCED_LEADER_EPOCH
            if request_epoch > leader.epoch:
                return UNKNOWN_LEADER_EPOCH
        if leader.leader != i:
            return NOT_LEADER
        return NONE

    def _serve_fetch_state(self, s: KafkaState, m: FetchRequest) -> KafkaState:
        """ServeFetch: the records from the fetch offset and the HW; or an error; or
        (truncate-on-fetch, ``Partition.fetchRecords`` with ``lastFetchedEpoch``) a diverging epoch
        and no records. A fetch at an offset within the leader's log records it as the follower's
        LEO (``Partition.updateFollowerFetchState``); with a diverging epoch it does so only without
        ``kafka-13141`` (the leader took the follower's fetch offset although it had diverged). With
        KIP-903 on KRaft (``fetch_carries_broker_epoch``) a fetch the leader accepts records the
        follower's broker epoch with its fetch offset (3.5.0 ``Partition.updateFollowerFetchState``,
        ``Replica.updateFetchState(brokerEpoch)``)."""
        network = remove_message(s.network, m)
        i, f = m.dst, m.src
        leader = s.brokers[i]
        error = self._error(leader, i, m.epoch)
        if error != NONE:
            response = FetchResponse.new(src=i, dst=f, epoch=m.epoch, offset=m.offset, error=error,
                                         records=(),
                                     hw=UNDEFINED, diverging_epoch=UNDEFINED,
                                         diverging_offset=UNDEFINED)
            if not self.features.kafka_8400 and leader.leader == i and leader.remote[f] != -1:
                # before KAFKA-8400 (2.4.0) the errored read's LogReadResult (UnknownOffsetMetadata)
                # still went through updateFollowerLogReadResults: the leader forgets the follower's
                # LEO
                leader = _fetched_by(leader, remote=replace_at(leader.remote, f, -1))
                return with_broker(s, i, leader, network=add_messages(network, response))
            return with_network(s, add_messages(network, response))
        # a reassignment took the follower out (actions_reassignment)
        if leader.replicas and f not in leader.replicas:
            return self._serve_non_replica(s, m, network)
        leo = len(leader.log)
        diverging = (diverging_epoch(leader.cache, leo, m.offset, m.last_epoch)
                     if self.features.truncate_on_fetch else None)
        if diverging == LOOKUP_UNDEFINED:
            response = FetchResponse.new(src=i, dst=f, epoch=m.epoch, offset=m.offset,
                                     error=OFFSET_OUT_OF_RANGE, records=(), hw=leo,
                                         diverging_epoch=UNDEFINED,
                                     diverging_offset=UNDEFINED)
            return self._answered_out_of_range(s, i, leader, f, network, response)
        if diverging is not None:
            response = FetchResponse.new(src=i, dst=f, epoch=m.epoch, offset=m.offset, error=NONE,
                                         records=(),
                                     hw=leader.hw, diverging_epoch=diverging[0],
                                         diverging_offset=diverging[1])
            if self.features.kafka_13141:
                return with_network(s, add_messages(network, response))
            # before KAFKA-13141's fix the leader took the diverging fetch offset as the follower's
            # LEO, also one beyond its own LEO (2.8.0 Partition.readRecords returns
            # FetchDataInfo(LogOffsetMetadata(fetchOffset)) with the diverging epoch and no check
            # against the LEO; updateFollowerFetchState takes it)
            leader = _recorded(leader, f, m.offset)
            return with_broker(s, i, leader, network=add_messages(network, response))
        if m.offset > leo:
            response = FetchResponse.new(src=i, dst=f, epoch=m.epoch, offset=m.offset,
                                     error=OFFSET_OUT_OF_RANGE, records=(), hw=leo,
                                         diverging_epoch=UNDEFINED,
                                     diverging_offset=UNDEFINED)
            return self._answered_out_of_range(s, i, leader, f, network, response)
        leader = _recorded(leader, f, m.offset)
        if (leader.remote_epochs and leader.remote_epochs[f] != m.broker_epoch
            and self.features.fetch_carries_broker_epoch):
            leader = _fetched_epoch_by(leader,
                                       remote_epochs=replace_at(leader.remote_epochs, f,
                                                                m.broker_epoch))
        response = FetchResponse.new(src=i, dst=f, epoch=m.epoch, offset=m.offset, error=NONE,
                                 records=leader.log[m.offset :], hw=leader.hw,
                                     diverging_epoch=UNDEFINED,
                                 diverging_offset=UNDEFINED)
        return with_broker(s, i, leader, network=add_messages(network, response))

    def _answered_out_of_range(self, s: KafkaState, i: int, leader: Broker, f: int, network: tuple,
                               response: FetchResponse) -> KafkaState:
        """The leader answers OFFSET_OUT_OF_RANGE (the follower fetches beyond the leader's LEO).
        Before KAFKA-8400 (``kafka-8400`` off: 0.10.2 to 2.3.x) the errored read still reset the
        follower's LEO on the leader to unknown: 0.10.2.0 to 2.3.0
        ``ReplicaManager.readFromLocalLog`` maps OffsetOutOfRangeException (with
        NotLeaderForPartition, UnknownTopicOrPartition, ReplicaNotAvailable) to
        ``LogReadResult(FetchDataInfo( LogOffsetMetadata.UnknownOffsetMetadata, ...))``, which
        ``updateFollowerLogReadResults`` hands to ``Partition.updateReplicaLogReadResult``
        (``Replica.updateLogReadResult``: the LEO becomes unknown). 2.4.0
        ``updateFollowerFetchState`` skips a result with an error."""
        if not self.features.kafka_8400 and leader.remote[f] != -1:
            leader = _fetched_by(leader, remote=replace_at(leader.remote, f, -1))
            return with_broker(s, i, leader, network=add_messages(network, response))
        return with_network(s, add_messages(network, response))

    def _serve_offsets_state(self, s: KafkaState, m: OffsetsRequest) -> KafkaState:
        """ServeOffsetsForLeaderEpoch: 0.11 answers an end offset
        (``LeaderEpochFileCache.endOffsetFor``), 2.0+ (KIP-279) the pair (largest epoch <=
        requested, its end offset); an error otherwise."""
        network = remove_message(s.network, m)
        i, f = m.dst, m.src
        leader = s.brokers[i]
        error = self._error(leader, i, m.epoch)
        if error != NONE:
            answer_epoch, end = UNDEFINED, UNDEFINED
        elif self.features.epoch_in_response:
            answer_epoch, end = end_offset_for(leader.cache, len(leader.log), m.requested,
                                               self.features.kafka_7415)
        else:
            answer_epoch, end = UNDEFINED, end_offset_kip101(leader.cache, len(leader.log),
                                                             m.requested)
        response = OffsetsResponse.new(src=i, dst=f, epoch=m.epoch, requested=m.requested,
                                   error=error, answer_epoch=answer_epoch, end_offset=end)
        return with_network(s, add_messages(network, response))

    def _removes_on_fenced(self, request_epoch: int, follower: Broker) -> bool:
        """Whether a FENCED_LEADER_EPOCH answer takes the partition out of the fetcher: 2.1.0+
        (``onPartitionFenced``), and from 2.5.0 (``kafka-9654``) only if the request's epoch is
        still the fetch state's (``onPartitionFenced(tp, requestEpoch)``; otherwise the partition is
        retried)."""
        if not self.features.removes_fenced_partition:
            return False
        return not self.features.kafka_9654 or request_epoch == follower.epoch

    # -- the follower applies the answers ----------------------------------------------------------
    def _receive_fetch_state(self, s: KafkaState, m: FetchResponse) -> KafkaState:
        """ReceiveFetch (``AbstractFetcherThread.processFetchRequest``, under ``partitionMapLock``):
        dropped unless the partition is still fetching from this leader at the request's offset
        (``fetchPartitionData.fetchOffset == currentFetchState.fetchOffset``); then append and take
        HW = min(leader HW, LEO) (``ReplicaFetcherThread.processPartitionData``); truncate on
        OFFSET_OUT_OF_RANGE below our LEO (``handleOffsetOutOfRange``); on FENCED_LEADER_EPOCH drop
        the partition (2.1.0) or retry; other errors: retry after the back-off.

        A diverging epoch (2.8+) is only recorded here (``divergingEndOffsets``) and applied by
        TruncateOnDivergingEpoch once the lock is released. Before KAFKA-14704's fix the empty
        answer still went through ``processPartitionData``, which took the leader's HW over the
        divergent tail. With ``kafka-18991`` a diverging epoch is used only if the request's leader
        epoch is still the fetch state's."""
        features = self.features
        network = remove_message(s.network, m)
        i = m.dst
        follower = s.brokers[i]
        leo = len(follower.log)
        truncating = follower.fetch == TRUNCATING or follower.fetch == TRUNCATING_AGAIN
        if follower.fetch != FETCHING and not (truncating and not features.kafka_5163):
            # the partition left the fetcher or (kafka-5163, 1.1.0: isReadyForFetch) is truncating:
            # dropped. 0.11.0 and 1.0.x check only fetchRequest.offset(tp) ==
            # currentPartitionFetchState.fetchOffset, and a state they re-created (makeFollowers: at
            # the LEO) matches an answer that was in flight
            return with_network(s, network)
        if follower.leader != m.src or leo != m.offset:
            return with_network(s, network)  # the fetcher moved on: the response is dropped
        if features.kafka_18991 and m.epoch != follower.epoch:
            # KAFKA-18991: an answer to a request of an older leader epoch
            return with_network(s, network)
        if m.error == NONE and m.diverging_epoch == UNDEFINED and m.diverging_offset == UNDEFINED:
            log = follower.log + m.records
            cache = (cache_after_append(follower.cache, log, leo, features.kafka_7415)
                     if features.epoch_cache else follower.cache)
            if truncating:
                # 0.11.0 / 1.0.x: processPartitionData appends and takes the HW; with records the
                # state is replaced by PartitionFetchState(newOffset) (truncatingLog = false): the
                # truncation is skipped; an empty answer leaves the state truncating
                # (updateAndMoveToEnd only ``if (validBytes > 0)``)
                if not m.records:
                    return with_broker(s, i, _hw_taken(follower, hw=min(m.hw, leo)),
                                       network=network)
                follower = with_fetch_state(follower, fetch=FETCHING)
            follower = _appended_fetched(follower, log=log, hw=min(m.hw, len(log)), cache=cache,
                                         reconciled=follower.epoch)
        elif m.error == NONE:
            pending = (m.src, m.epoch, m.diverging_epoch, m.diverging_offset)
            if features.kafka_14704:
                follower = _diverging_noted(follower, pending_diverging=pending)
            # before KAFKA-14704's fix: the leader's HW is taken before the divergent tail is
            # truncated
            else:
                follower = _diverging_noted_hw(follower, pending_diverging=pending,
                                               hw=min(m.hw, leo))
        elif m.error == OFFSET_OUT_OF_RANGE and m.hw < leo:
            if not features.kafka_7414 and not features.unclean:
                # before 2.0.1 (KAFKA-7414) a follower ahead of its leader halts the broker unless
                # unclean election is on (0.10.2.2 to 2.0.0
                # ReplicaFetcherThread.handleOffsetOutOfRange: "Exiting because log truncation is
                # not allowed", FatalExitError); 2.0.1 truncates to the leader's end offset
                return self._crash_state(with_network(s, network), i, leo)
            # the leader's log ends before ours: truncate to its end offset (0.11.0 / 1.0.x: a
            # truncating partition then fetches, new PartitionFetchState(newOffset))
            follower = truncate_broker(follower, m.hw, features.kafka_10706_fix,
                                       features.truncation_lowers_hw)
            if truncating:
                follower = with_fetch_state(follower, fetch=FETCHING)
        elif m.error == FENCED_LEADER_EPOCH and self._removes_on_fenced(m.epoch, follower):
            follower = _fenced(follower)  # until the next LeaderAndIsr
        else:
            # NOT_LEADER, UNKNOWN_LEADER_EPOCH, FENCED: retry after the back-off
            return with_network(s, network)
        return with_broker(s, i, follower, network=network)

    def _truncate_on_diverging_action(self, s: KafkaState, i: int, follower: Broker, add) -> None:
        """TruncateOnDivergingEpoch (2.8+ ``AbstractFetcherThread.truncateOnFetchResponse`` ->
        ``maybeTruncateToEpochEndOffsets`` -> ``getOffsetTruncationState``): the fetcher thread,
        having released ``partitionMapLock`` after reading the answer, takes it again and truncates
        to the recorded diverging epoch; a LeaderAndIsr may have been applied in between. Before
        KAFKA-13207's fix it truncated whatever had become of the partition
        (``partition.truncateTo`` truncates a leader's log too); with ``kafka-13207`` a partition
        that left the fetcher is skipped. The state is Fetching afterwards: an intermediate
        truncation lets the next fetch carry the lower epoch."""
        source, _request_epoch, epoch, end = follower.pending_diverging
        in_fetcher = follower.fetch != NO_FETCHER and follower.leader == source
        if self.features.kafka_13207 and not in_fetcher:
            add((self._truncate_diverging[i],
                 with_broker(s, i, follower.with_(pending_diverging=()))))
            return
        offset, _ = follower_truncation(follower.cache, len(follower.log), follower.hw, epoch, end)
        truncated = truncate_broker(follower, offset, self.features.kafka_10706_fix,
                                    self.features.truncation_lowers_hw)
        truncated = _diverging_done(truncated, fetch=FETCHING if in_fetcher else truncated.fetch)
        add((self._truncate_diverging[i], with_broker(s, i, truncated)))

    def _receive_offsets_state(self, s: KafkaState, m: OffsetsResponse) -> KafkaState:
        """ReceiveOffsetsForLeaderEpoch (0.11 ``ReplicaFetcherThread.maybeTruncate``, 2.0+
        ``AbstractFetcherThread.maybeTruncate`` / ``getOffsetTruncationState``).

        An error answer (NOT_LEADER, UNKNOWN_LEADER_EPOCH, ...) leaves the partition truncating, to
        be asked again after the back-off (``partitionsWithError`` in 0.11 and 2.0,
        ``handlePartitionsWithErrors`` in 2.1+); only an error-free UNDEFINED_EPOCH_OFFSET falls
        back to the HW. FENCED_LEADER_EPOCH removes the partition in 2.1.0
        (``fenced-removes-partition``: KAFKA-7786's stall); with ``kafka-7786-fix`` an answer whose
        request epoch is no longer the partition's is ignored."""
        features = self.features
        network = remove_message(s.network, m)
        i = m.dst
        follower = s.brokers[i]
        if ((follower.fetch != TRUNCATING and follower.fetch != TRUNCATING_AGAIN) or follower.leader
            != m.src):
            return with_network(s, network)
        if features.checks_offsets_answer_epoch and m.epoch != follower.epoch:
            # KAFKA-7786's fix: the epoch changed while it was in flight
            return with_network(s, network)
        leo = len(follower.log)
        done = True
        if m.error != NONE:
            if m.error == FENCED_LEADER_EPOCH and self._removes_on_fenced(m.epoch, follower):
                follower = _fenced(follower)  # until the next LeaderAndIsr
                return with_broker(s, i, follower, network=network)
            return with_network(s, network)  # retried: the partition stays truncating
        if features.epoch_in_response:
            # an UNDEFINED answer truncates to the fetch state's offset (2.0.0
            # getOffsetTruncationState: "The initial fetch offset ... will be used for truncation"):
            # the initial fetch offset the state was created at (the HW from kafka-5163, 1.1.0
            # makeFollowers; the LEO before), or, after an intermediate truncation, that offset
            # (updateFetchOffsetAndMaybeMarkTruncationComplete): its LEO
            at_leo = follower.fetch == TRUNCATING_AGAIN or not features.kafka_5163
            fetch_offset = leo if at_leo else follower.hw
            offset, done = follower_truncation(follower.cache, leo, fetch_offset, m.answer_epoch,
                                               m.end_offset, features.kafka_7415)
        elif m.end_offset == UNDEFINED:
            offset = follower.hw  # 0.11: UNDEFINED_EPOCH_OFFSET falls back to the high watermark
        else:
            offset = min(m.end_offset, leo)
        truncated = truncate_broker(follower, offset, features.kafka_10706_fix,
                                    features.truncation_lowers_hw)
        follower = with_fetch_state(truncated, fetch=FETCHING if done else TRUNCATING_AGAIN)
        return with_broker(s, i, follower, network=network)



def busy(network: tuple, follower: int, leader: int) -> bool:
    """A request from ``follower`` to ``leader``, or its response, is in flight."""
    for m in network:
        kind = m.kind
        if kind == FETCH or kind == OFFSETS_FOR_LEADER_EPOCH:
            if m.src == follower and m.dst == leader:
                return True
        elif ((kind == FETCH_RESPONSE or kind == OFFSETS_FOR_LEADER_EPOCH_RESPONSE) and m.src
              == leader and m.dst == follower):
            return True
    return False


def in_flight(network: tuple) -> int:
    """Broker-to-broker requests and responses in flight (what ``inflight`` bounds)."""
    return sum(1 for m in network if m.kind in DATA_KINDS)


#: the data plane's actions (``spec.kafka.declared``): the leader's (ShrinkIsr and ExpandIsr as an
#: AlterIsr or AlterPartition request too: ``actions_alter_partition``), the fetch path and the
#: truncations
ACTIONS: tuple[Declared, ...] = (
    Declared("Produce", "_produce", (("leader", BROKER),),
             ("_leader_actions", "_alter_leader_actions", "_produce_action", "LeaderAcks",
              "AllAcks", "spec.kafka.log"),
             rules=("acks-1", "acks-all", "isr-zookeeper-write", "alter-isr", "effective-min-isr"),
             kraft_rules=("reassignment-deletes-replica",),
             flags=("offsets-for-leader-epoch", "epoch-in-response", "kafka-7415",
                    "truncate-on-fetch"), actor="leader", leader_only=True),
    Declared("AdvanceHighWatermark", "_advance", (("leader", BROKER),),
             ("_advance_hw_action", "AllAcks"), rules=("acks-all", "kafka-13091", "leader-hw",
                                                       "kafka-15583", "effective-min-isr"),
             flags=("kafka-15583", "effective-min-isr"), actor="leader", leader_only=True),
    Declared("TruncateToHighWatermark", "_trunc_hw", (("follower", BROKER),),
             ("_follower_actions", "truncate_broker"),
             rules=("truncation-lowers-hw", "kafka-10706-fix"), kraft_rules=("kip-903",),
             flags=("leader-epoch-fencing", "truncate-on-fetch"), actor="follower"),
    Declared("TruncateOnDivergingEpoch", "_truncate_diverging", (("follower", BROKER),),
             ("_truncate_on_diverging_action", "truncate_broker"),
             rules=("truncation-lowers-hw", "kafka-10706-fix", "truncate-on-fetch", "kafka-13207"),
             flags=("truncation-lowers-hw", "kafka-10706-fix", "kafka-13207"), actor="follower"),
    Declared("SendFetch", "_send_fetch", (("follower", BROKER), ("leader", BROKER)),
             ("_follower_actions",), kraft_rules=("kip-903",),
             flags=("leader-epoch-fencing", "truncate-on-fetch"), actor="follower"),
    Declared("ServeFetch", "_serve_fetch", (("leader", BROKER), ("follower", BROKER)),
             ("_serve_fetch_state", "_error", "_serve_non_replica"),
             rules=("leader-epoch-fencing", "kafka-8400", "truncate-on-fetch", "kafka-13141",
                    "fetch-answer-epoch-bound"),
             kraft_rules=("kip-903", "reassignment-deletes-replica"),
             flags=("leader-epoch-fencing", "kafka-8400", "truncate-on-fetch", "kafka-13141",
                    "kraft", "kip-903"), actor="leader", leader_only=True,
             consumes=Consumes("FetchRequest", "follower", "leader", "Fetch request")),
    Declared("ReceiveFetch", "_receive_fetch", (("follower", BROKER), ("leader", BROKER)),
             ("_receive_fetch_state", "truncate_broker", "follower_truncation"),
             rules=("epoch-in-response", "initial-fetch-offset", "leader-epoch-fencing",
                    "fenced-removes-partition", "kafka-9654", "truncation-lowers-hw",
                    "kafka-10706-fix", "truncate-on-fetch", "kafka-14704", "kafka-18991",
                    "follower-hw", "stale-fetch-answer-dropped", "kafka-5163", "kafka-7414"),
             flags=("offsets-for-leader-epoch", "kafka-5163", "epoch-in-response", "kafka-7415",
                    "kafka-7414", "truncation-lowers-hw", "kafka-10706-fix", "truncate-on-fetch",
                    "kafka-14704", "kafka-18991", "unclean"), actor="follower",
             consumes=Consumes("FetchResponse", "leader", "follower", "Fetch response")),
    Declared("SendOffsetsForLeaderEpoch", "_send_offsets",
             (("follower", BROKER), ("leader", BROKER)), ("_follower_actions",),
             kraft_rules=("kip-903",),
             flags=("leader-epoch-fencing", "truncate-on-fetch"), actor="follower"),
    Declared("ServeOffsetsForLeaderEpoch", "_serve_offsets",
             (("leader", BROKER), ("follower", BROKER)),
             ("_serve_offsets_state", "_error", "end_offset_kip101", "end_offset_for"),
             rules=("offsets-for-leader-epoch", "epoch-in-response", "kafka-7415",
"leader-epoch-fencing"),
             flags=("epoch-in-response", "kafka-7415", "leader-epoch-fencing"), actor="leader",
             leader_only=True,
             consumes=Consumes("OffsetsRequest", "follower", "leader",
                               "OffsetsForLeaderEpoch request")),
    Declared("ReceiveOffsetsForLeaderEpoch", "_receive_offsets",
             (("follower", BROKER), ("leader", BROKER)),
             ("_receive_offsets_state", "follower_truncation", "truncate_broker"),
             rules=("offsets-for-leader-epoch", "offsets-error-retried", "epoch-in-response",
"undefined-answer-fetch-offset", "initial-fetch-offset",
"fenced-removes-partition", "kafka-7786-fix", "truncation-lowers-hw",
"kafka-10706-fix"),
             flags=("kafka-5163", "epoch-in-response", "kafka-7415", "leader-epoch-fencing",
                    "kafka-7786-fix", "truncation-lowers-hw", "kafka-10706-fix"), actor="follower",
             consumes=Consumes("OffsetsResponse", "leader", "follower",
                               "OffsetsForLeaderEpoch response")),
    Declared("ShrinkIsr", "_shrink", (("leader", BROKER), ("follower", BROKER)),
             ("_isr_change_action", "_isr_change_request_action", "_partition_change"),
             rules=("kafka-7128", "alter-isr", "kafka-7152"),
             kraft_rules=("kafka-15021", "kip-966-elr", "unclean-election-clears-elr",
                          "reassignment", "elr-not-filtered-by-replicas",
                          "elr-filtered-by-replicas"),
             flags=("kafka-7128", "kafka-7152", "alter-isr", "kraft", "kip-903", "kafka-15021",
                    "kip-966-elr", "unclean-election-clears-elr", "elr-filtered-by-replicas"),
             actor="leader", leader_only=True),
    Declared("ExpandIsr", "_expand", (("leader", BROKER), ("follower", BROKER)),
             ("_isr_change_action", "_isr_change_request_action", "_fetch_being_answered",
              "_eligible", "_ineligible", "_partition_change"),
             rules=("kafka-7128", "isr-expand-on-fetch", "alter-isr", "kafka-7152"),
             kraft_rules=("kip-841", "kip-903", "kafka-15021", "kip-966-elr",
                          "unclean-election-clears-elr", "reassignment",
                          "elr-not-filtered-by-replicas", "elr-filtered-by-replicas"),
             flags=("kafka-7128", "leader-epoch-fencing", "kafka-7152", "kafka-13141", "alter-isr",
                    "kraft", "kip-841", "kip-903", "kafka-15021", "kip-966-elr",
                    "unclean-election-clears-elr", "elr-filtered-by-replicas"), actor="leader",
             leader_only=True),
)
