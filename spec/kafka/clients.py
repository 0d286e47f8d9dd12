"""Clients in the Kafka model: a producer's acknowledgements (acks=1 / acks=all) and consumers.

The producer is a policy chosen once, when the model is built (``producer_for``: ``NoAcks``,
``LeaderAcks``, ``AllAcks``), and passed where it is used: Produce and AdvanceHighWatermark
(``spec.kafka.actions_data``) ask it whether an append is accepted and what the producer is told
(the ghost ``KafkaState.acked``). The consumers' actions are ``ClientActions``'s, a family of
``spec.kafka.model.KafkaModel``; an unclean election notes what they had read (``unclean_noted``,
called by the controllers' UncleanLeaderElection). With the defaults (``acks=0``, ``consumers=0``)
nothing changes: ``acked`` stays empty and there is no consumer, so the replica-only state space is
the one pinned in the tests. Every rule here is in ``spec.kafka.rules`` with its release and source.

Producer (constants ``acks`` and ``min_isr``; the existing Produce action and its bound ``records``)
    acks=0 fire and forget (``acks=0``): no acknowledgement, nothing recorded (the default). acks=1
    the leader acknowledges on append (``ReplicaManager.appendRecords``:
    ``delayedProduceRequestRequired``
             is false unless requiredAcks == -1): the record is in ``acked`` from the Produce step
             on.
    acks=-1  (all) a Produce is refused with NOT_ENOUGH_REPLICAS if the leader's ISR is smaller than
             ``min_isr`` (``Partition.appendRecordsToLeader``:
             ``inSyncSize < minIsr && requiredAcks == -1``); otherwise the record waits in the
             purgatory (``DelayedProduce``) and is acknowledged when its leader's HW passes it while
             the ISR still has ``min_isr`` members (``Partition.checkEnoughReplicasReachOffset``;
             else NOT_ENOUGH_REPLICAS_AFTER_APPEND). A leader that lost its leadership answers
             NOT_LEADER_FOR_PARTITION: the model acknowledges, at the AdvanceHighWatermark step of a
             leader, the records of its own epoch that the new HW passes (a record of an epoch is
             appended only by that epoch's leader). Abstraction: a record appended before a
             BumpLeaderEpoch that kept its leader is never acknowledged (Kafka would still complete
             it): fewer acknowledgements, never more.

Consumers (bound ``consumers``: how many; each a ``Consumer`` in ``KafkaState.consumers``). By
default a consumer's request and its answer are one step (``consumer_inflight=0``); with the
constant ``consumer_inflight=1`` they are a request, an answer and a receipt, each a step of its
own, so an answer can arrive after the leader, the epoch or the consumer's own metadata changed (one
request outstanding per consumer, lost with the broker's connection):

    =============================  ==================  ==========================================
    action                         params              what happens
    =============================  ==================  ==========================================
    ConsumerMetadata               consumer, leader    the consumer learns the controller's (leader,
                                                       epoch); 2.3+
                                                       (``consumer-truncation-detection``) a new
                                                       leader or epoch makes it validate its
                                                       position first, if it has a last consumed
                                                       epoch
    ConsumerFetch                  consumer, leader    the broker it believes leads (and, 2.3+, in
                                                       the epoch it believes) answers: every record
                                                       from its position below the HW;
                                                       OFFSET_OUT_OF_RANGE if the position is beyond
                                                       the LEO: a reset to the HW
                                                       (auto.offset.reset=latest, logged); an empty
                                                       answer at a position past records it never
                                                       read is a silent skip (a step only then)
    ConsumerFetchFromFollower      consumer, replica   (fetch-from-follower, KIP-392, 2.4+) the same
                                                       from a follower of its leader in its epoch,
                                                       below the follower's HW
    ConsumerValidate               consumer, leader    2.3+: OffsetsForLeaderEpoch(last consumed
                                                       epoch) to that leader; an end offset below
                                                       the position is a truncation: reset to it
                                                       (logged; without a reset policy,
                                                       LogTruncationException)
    ConsumerSendFetch,             consumer, broker    (consumer_inflight=1) ConsumerFetch in three
    ServeConsumerFetch,                                steps: the broker answers as it is when it
                                                       serves
    ReceiveConsumerFetch                               (an error if it no longer leads in the
                                                       request's epoch); the consumer ignores an
                                                       answer once its position moved or awaits
                                                       validation
    ConsumerSendValidate,          consumer, broker    (consumer_inflight=1) ConsumerValidate in
                                                       three
    ServeConsumerValidate,                             steps; the answer is used only if the
                                                       position,
    ReceiveConsumerValidate                            its epoch and the leader are unchanged
    ConsumerDisconnect             consumer, broker    (consumer_inflight=1) the broker died or
                                                       bounced: the request or answer is lost
    =============================  ==================  ==========================================

Fetch-from-follower is one step in either mode (the consumer asks its leader, which names the
follower).

Ghosts of a consumer: ``consumed`` (what it read, in order), ``skipped`` (it read on past records it
did not read, with no reset or truncation it surfaced: the record before its position is no longer
the one it consumed there), ``surfaced`` (how many resets and truncations it logged or raised) and
``read_before_unclean`` (how many of ``consumed`` it had read when the last unclean election
happened: set by UncleanLeaderElection when there are consumers; those records may vanish,
consumed-stays says).
"""

from __future__ import annotations

from spec.kafka.declared import BROKER, CONSUMER, Declared
from spec.kafka.log import UNDEFINED, Record, end_offset_for
from spec.kafka.state import Broker, Consumer, KafkaState
from spec.kafka.updates import replace_at

ACKS_NONE = 0
ACKS_LEADER = 1
ACKS_ALL = -1
#: the values of the constant ``acks`` (Kafka's producer config ``acks``: 0, 1, all = -1)
ACKS_VALUES = (ACKS_NONE, ACKS_LEADER, ACKS_ALL)


def new_consumer() -> Consumer:
    """A consumer assigned the partition, starting at offset 0 with broker 0 (the initial leader)
    known."""
    return Consumer(leader=0, epoch=0, position=0, last_epoch=UNDEFINED, validating=False,
                    consumed=(), skipped=False, surfaced=0)


def _add_acked(acked: tuple, entries: list) -> tuple:
    return tuple(sorted(set(acked).union(entries)))


class NoAcks:
    """acks=0: fire and forget. Every append is accepted, nothing is acknowledged (the replica-only
    model)."""

    acks = ACKS_NONE

    def accepts(self, leader: Broker) -> bool:
        """Whether the leader appends the produce request (acks=all: NOT_ENOUGH_REPLICAS below
        ``min_isr``)."""
        return True

    def appended(self, t: KafkaState, offset: int, record: Record) -> KafkaState:
        """The state after the leader appended ``record`` at ``offset``, with what the producer is
        told."""
        return t

    def advanced(self, t: KafkaState, leader: Broker, hw: int) -> KafkaState:
        """The state after ``leader`` (as it was before) advanced its HW to ``hw``, with what the
        producer is told."""
        return t


class LeaderAcks(NoAcks):
    """acks=1: the leader acknowledges on append (2.1.0 ``ReplicaManager.appendRecords``:
    ``delayedProduceRequestRequired`` is false unless requiredAcks == -1): the record is in
    ``acked`` from the Produce step on."""

    acks = ACKS_LEADER

    def appended(self, t: KafkaState, offset: int, record: Record) -> KafkaState:
        return t.with_(acked=_add_acked(t.acked, [(offset, record.epoch, record.ident)]))


class AllAcks(NoAcks):
    """acks=all: a Produce is refused with NOT_ENOUGH_REPLICAS below ``min_isr`` (2.1.0
    ``Partition.appendRecordsToLeader``) and acknowledged later, by AdvanceHighWatermark
    (``DelayedProduce.tryComplete``). On the KRaft rows the check counts the last committed ISR, not
    the maximal one a pending AlterPartition works with (3.5.0 ``Partition.appendRecordsToLeader``:
    ``inSyncSize = partitionState.isr.size``; the acknowledgement's
    ``checkEnoughReplicasReachOffset`` counts ``maximalIsr``). With ``effective-min-isr`` (3.7.0)
    both read the min ISR capped by the leader's replicas (``effectiveMinIsr``:
    ``leaderLog.config.minInSyncReplicas.min(remoteReplicasMap .size + 1)``): ``brokers`` is the
    model's broker count, the replicas of a leader no reassignment changed."""

    acks = ACKS_ALL

    def __init__(self, min_isr: int, capped: bool = False, brokers: int = 0) -> None:
        self.min_isr = min_isr
        self.capped = capped
        self.brokers = brokers

    def required(self, leader: Broker) -> int:
        """The min ISR the leader checks (3.7.0 ``Partition.effectiveMinIsr`` with
        ``effective-min-isr``)."""
        return leader_min_isr(self.min_isr, leader, self.brokers) if self.capped else self.min_isr

    def accepts(self, leader: Broker) -> bool:
        committed_isr = leader.committed_isr if leader.alter_pending else leader.isr
        return len(committed_isr) >= self.required(leader)

    def advanced(self, t: KafkaState, leader: Broker, hw: int) -> KafkaState:
        """The waiting produce requests of the leader's epoch whose offset the new HW passes
        complete, acknowledged if the ISR has ``min_isr`` members (2.1.0
        ``Partition.checkEnoughReplicasReachOffset``: ``minIsr <= curInSyncReplicas.size``; else
        NOT_ENOUGH_REPLICAS_AFTER_APPEND; 3.7.0: ``effectiveMinIsr``)."""
        if len(leader.isr) < self.required(leader):
            return t
        log = leader.log
        entries = [(offset, r.epoch, r.ident)
                   for offset, r in enumerate(log[leader.hw:hw], leader.hw)
                   if r.epoch == leader.epoch]
        return t.with_(acked=_add_acked(t.acked, entries)) if entries else t


def leader_min_isr(min_isr: int, leader: Broker, brokers: int) -> int:
    """3.7.0 ``Partition.effectiveMinIsr`` (KAFKA-15583, edc7e10a745):
    ``minInSyncReplicas.min(remoteReplicasMap.size + 1)``, the leader's replicas as its partition
    state has them (during a reassignment the merged list: target and removing replicas);
    ``leader.replicas`` is () while no reassignment changed them: every one of ``brokers``."""
    replicas = len(leader.replicas) if leader.replicas else brokers
    return min(min_isr, replicas)


def producer_for(acks: int, min_isr: int, capped: bool = False, brokers: int = 0) -> NoAcks:
    """The producer policy of the constant ``acks`` (0, 1 or -1 = all), chosen once
    (``KafkaModel.__init__``); ``capped``: ``effective-min-isr`` (3.7.0), the min ISR capped by the
    leader's replicas among ``brokers``."""
    if acks == ACKS_ALL:
        return AllAcks(min_isr, capped, brokers)
    if acks == ACKS_LEADER:
        return LeaderAcks()
    return NoAcks()


def unclean_noted(s: KafkaState) -> KafkaState:
    """The state an UncleanLeaderElection starts from: each consumer's ghost ``read_before_unclean``
    set to what it has read (those records may now vanish; consumed-stays says which may). Without
    consumers, ``s`` itself."""
    if not s.consumers:
        return s
    return s.with_(consumers=tuple([c.with_(read_before_unclean=len(c.consumed))
                                    for c in s.consumers]))


class ClientActions:
    """The consumers' actions (the producer is a policy: ``producer_for``)."""

    def _init_clients(self, consumers: int, consumer_inflight: int = 0) -> None:
        self.consumers = consumers
        self.consumer_inflight = consumer_inflight

    # -- consumers ---------------------------------------------------------------------------------
    def _consumer_actions(self, s: KafkaState, out: list) -> None:
        add = out.append
        controller = s.controller
        for c, consumer in enumerate(s.consumers):
            known = controller.leader
            if known >= 0 and (known, controller.epoch) != (consumer.leader, consumer.epoch):
                add((self._consumer_metadata[c][known], self._metadata_state(s, c, consumer)))
            if self.consumer_inflight:
                self._delayed_consumer_actions(s, c, consumer, add)
                continue
            b = consumer.leader
            if b < 0 or not s.brokers[b].alive:
                continue
            broker = s.brokers[b]
            if (broker.leader != b or (self.features.consumer_truncation_detection and broker.epoch
                                       != consumer.epoch)):
                # NOT_LEADER / FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH: a metadata update first
                continue
            if consumer.validating:
                add((self._consumer_validate[c][b], self._validate_state(s, c, consumer, broker)))
                continue
            fetched = self._consumer_fetch_state(s, c, consumer, broker)
            if fetched is not None:
                add((self._consumer_fetch[c][b], fetched))
            if self.features.fetch_from_follower:
                self._fetch_from_follower_actions(s, c, consumer, add)

    def _fetch_from_follower_actions(self, s: KafkaState, c: int, consumer: Consumer, add) -> None:
        """KIP-392 (2.4.0, ``replica.selector.class`` set): the leader names a preferred read
        replica and the consumer fetches from that follower, which serves it below its own HW. 2.4.0
        ``ReplicaManager.findPreferredReadReplica`` (any replica whose LEO reaches the fetch offset,
        as the selector chooses), ``ReplicaManager.readFromLocalLog`` (``fetchOnlyFromLeader`` is
        false for a consumer with client metadata) and ``Partition.readRecords`` (the follower's
        ``highWatermark`` bounds the read; ``localLogWithEpochOrException`` fences a request whose
        leader epoch is not the follower's). The model lets the selector pick any live follower of
        the consumer's leader in the consumer's epoch whose LEO reaches the position (the leader's
        view of it may lag; the follower's own LEO is what it serves)."""
        for r in range(self.brokers):
            if r == consumer.leader:
                continue
            replica = s.brokers[r]
            if (not replica.alive or replica.leader != consumer.leader or replica.epoch
                != consumer.epoch
                    or len(replica.log) < consumer.position):
                continue
            fetched = self._consumer_fetch_state(s, c, consumer, replica)
            if fetched is not None:
                add((self._consumer_fetch_follower[c][r], fetched))

    def _metadata_state(self, s: KafkaState, c: int, consumer: Consumer) -> KafkaState:
        """ConsumerMetadata: a metadata response names the controller's leader and epoch (KIP-320
        added the epoch to it, 2.1.0). From 2.3.0
        (``SubscriptionState.maybeValidatePositionForCurrentLeader``) a changed leader or epoch puts
        a position with a known epoch into AWAIT_VALIDATION."""
        controller = s.controller
        validating = (consumer.validating or (self.features.consumer_truncation_detection
                                              and consumer.last_epoch != UNDEFINED))
        updated = consumer.with_(leader=controller.leader, epoch=controller.epoch,
                                 validating=validating)
        return s.with_(consumers=replace_at(s.consumers, c, updated))

    def _consumer_fetch_state(self, s: KafkaState, c: int, consumer: Consumer,
                              broker: Broker) -> KafkaState | None:
        """ConsumerFetch: the answer (``_fetch_answer``) applied at once; None if it changes
        nothing."""
        answer = _fetch_answer(consumer, broker)
        if answer is None:
            return None
        return s.with_(consumers=replace_at(s.consumers, c, _apply_fetch_answer(consumer, answer)))

    def _validate_state(self, s: KafkaState, c: int, consumer: Consumer,
                        broker: Broker) -> KafkaState:
        """ConsumerValidate: the answer (``_validate_answer``) applied at once."""
        answer = self._validate_answer(consumer.last_epoch, broker)
        return s.with_(consumers=replace_at(s.consumers, c,
                                            _apply_validate_answer(consumer, answer)))

    def _validate_answer(self, last_epoch: int, broker: Broker) -> tuple[int, int]:
        """The leader's answer to the consumer's OffsetsForLeaderEpoch(last consumed epoch):
        ``endOffsetFor``, as to a follower (2.3.0
        ``KafkaApis.handleOffsetForLeaderEpochRequest``)."""
        return end_offset_for(broker.cache, len(broker.log), last_epoch, self.features.kafka_7415)

    # -- consumer requests through the network (constant consumer_inflight=1) ----------------------
    def _delayed_consumer_actions(self, s: KafkaState, c: int, consumer: Consumer, add) -> None:
        """With ``consumer_inflight=1`` a consumer's Fetch and OffsetsForLeaderEpoch are a request,
        an answer and a receipt (three steps, each taken whenever enabled: delivered late, after any
        other step), as a follower's are. One request outstanding per consumer (2.3.0
        ``Fetcher.sendFetches`` skips a node with a request in flight,
        ``nodesWithPendingFetchRequests``; a validation is not sent with one pending either). The
        request is lost with its connection when the broker dies or bounces (ConsumerDisconnect)."""
        inflight = consumer.inflight
        if inflight:
            b, kind, incarnation = inflight[0], inflight[1], inflight[2]
            broker = s.brokers[b]
            if not broker.alive or broker.incarnation != incarnation:
                cleared = consumer.with_(inflight=())
                add((self._consumer_disconnect[c][b],
                     s.with_(consumers=replace_at(s.consumers, c, cleared))))
                return
            if kind == CONSUMER_FETCH:
                add((self._consumer_serve_fetch[c][b],
                     self._serve_consumer_fetch(s, c, consumer, broker)))
            elif kind == CONSUMER_FETCH_RESPONSE:
                add((self._consumer_receive_fetch[c][b], _receive_consumer_fetch(s, c, consumer)))
            elif kind == CONSUMER_VALIDATE:
                # NOT_LEADER / FENCED / UNKNOWN_LEADER_EPOCH (the request's epoch is not the
                # broker's): no answer
                epoch, last_epoch = inflight[3], inflight[4]
                fenced = broker.leader != b or broker.epoch != epoch
                answer = None if fenced else self._validate_answer(last_epoch, broker)
                served = consumer.with_(inflight=(b, CONSUMER_VALIDATE_RESPONSE, incarnation, epoch,
                                                  last_epoch, answer))
                add((self._consumer_serve_validate[c][b],
                     s.with_(consumers=replace_at(s.consumers, c, served))))
            else:
                add((self._consumer_receive_validate[c][b],
                     _receive_consumer_validate(s, c, consumer)))
            return
        b = consumer.leader
        if b < 0 or not s.brokers[b].alive:
            return
        broker = s.brokers[b]
        if consumer.validating:
            request = (b, CONSUMER_VALIDATE, broker.incarnation, consumer.epoch,
                       consumer.last_epoch)
            action = self._consumer_send_validate[c][b]
        else:
            request = (b, CONSUMER_FETCH, broker.incarnation, consumer.epoch, consumer.position)
            action = self._consumer_send_fetch[c][b]
        add((action,
             s.with_(consumers=replace_at(s.consumers, c, consumer.with_(inflight=request)))))

    def _serve_consumer_fetch(self, s: KafkaState, c: int, consumer: Consumer,
                              broker: Broker) -> KafkaState:
        """ServeConsumerFetch: the broker answers the fetch as it is now (2.3.0
        ``ReplicaManager.fetchMessages``): NOT_LEADER_FOR_PARTITION if it does not lead, FENCED /
        UNKNOWN_LEADER_EPOCH (2.3+) if the request's epoch is not its own (the consumer drops the
        answer and refreshes its metadata), else the records below its HW (``_fetch_answer``)."""
        b, _, incarnation, epoch, position = consumer.inflight
        if (broker.leader != b or (self.features.consumer_truncation_detection and broker.epoch
                                   != epoch)):
            answer = None
        else:
            answer = _fetch_answer(consumer.with_(position=position), broker)
        response = (b, CONSUMER_FETCH_RESPONSE, incarnation, position, answer)
        return s.with_(consumers=replace_at(s.consumers, c, consumer.with_(inflight=response)))


#: what a consumer's ``inflight`` holds (constant consumer_inflight=1): (broker, kind, the broker's
#: incarnation, ...)
CONSUMER_FETCH = 1  # ..., epoch, position
# ..., position, answer (_fetch_answer, None: an error or an empty answer)
CONSUMER_FETCH_RESPONSE = 2
CONSUMER_VALIDATE = 3  # ..., epoch, last consumed epoch
# ..., epoch, last consumed epoch, answer ((answer epoch, end offset), None: an error)
CONSUMER_VALIDATE_RESPONSE = 4


def _fetch_answer(consumer: Consumer, broker: Broker) -> tuple | None:
    """What a fetch at the consumer's position does to it, as (position, last epoch, records read,
    silent skip, resets surfaced), or None if nothing (an empty answer). The leader:
    ``ReplicaManager.fetchMessages`` with the HW as the bound for a consumer; the consumer:
    ``Fetcher.parseCompletedFetch`` / ``handleFetchResponse``. Beyond the LEO the answer is
    OFFSET_OUT_OF_RANGE and the consumer resets to the latest offset, the HW
    (``requestOffsetReset``, logged: a reset it surfaced). Between HW and LEO the answer is empty,
    no error: a step only when it is a silent skip (the consumer goes on at a position past records
    it never read; KIP-320: it "will just miss" them). Below the HW it reads every record up to the
    HW. The ghost ``skipped``: the record before its position is no longer the one it consumed
    there, and it reads on as if it were."""
    position = consumer.position
    log = broker.log
    if position > len(log):
        return broker.hw, (log[broker.hw - 1].epoch if broker.hw > 0 else UNDEFINED), (), False, 1
    skip = False
    consumed = consumer.consumed
    if consumed and consumed[-1][0] == position - 1:
        offset, epoch, ident = consumed[-1]
        there = log[offset]
        skip = there.epoch != epoch or there.ident != ident
    if position >= broker.hw:
        return ((position, consumer.last_epoch, (), True, 0) if skip and not consumer.skipped
                else None)
    read = tuple((offset, log[offset].epoch, log[offset].ident)
                 for offset in range(position, broker.hw))
    return broker.hw, read[-1][1], read, skip, 0


def _apply_fetch_answer(consumer: Consumer, answer: tuple) -> Consumer:
    position, last_epoch, read, skip, reset = answer
    return consumer.with_(position=position, last_epoch=last_epoch, consumed=consumer.consumed
                          + read,
                          skipped=consumer.skipped or skip, surfaced=consumer.surfaced + reset)


def _apply_validate_answer(consumer: Consumer, answer: tuple[int, int]) -> Consumer:
    """2.3.0 ``Fetcher.validateOffsetsAsync`` -> ``SubscriptionState.maybeCompleteValidation``: an
    end offset below the position is a truncation: with a reset policy the position moves to that
    offset with the answer's epoch ("Truncation detected ... resetting offset to the first offset
    known to diverge"), without one ``LogTruncationException`` is raised; both are surfaced to the
    application. Otherwise the validation completes."""
    answer_epoch, end = answer
    if end != UNDEFINED and end < consumer.position:
        return consumer.with_(position=end, last_epoch=answer_epoch, validating=False,
                              surfaced=consumer.surfaced + 1)
    return consumer.with_(validating=False)


def _receive_consumer_fetch(s: KafkaState, c: int, consumer: Consumer) -> KafkaState:
    """ReceiveConsumerFetch: 2.3.0 ``Fetcher.parseCompletedFetch`` ignores an answer for a partition
    that is not fetchable (awaiting validation: "no longer fetchable") or whose position moved since
    the request ("Discarding stale fetch response"); an error answer is dropped (the metadata
    refresh is ConsumerMetadata); otherwise it is applied."""
    _, _, _, position, answer = consumer.inflight
    done = consumer.with_(inflight=())
    if answer is not None and not consumer.validating and consumer.position == position:
        done = _apply_fetch_answer(done, answer)
    return s.with_(consumers=replace_at(s.consumers, c, done))


def _receive_consumer_validate(s: KafkaState, c: int, consumer: Consumer) -> KafkaState:
    """ReceiveConsumerValidate: 2.3.0 ``SubscriptionState.maybeCompleteValidation`` applies the
    answer only if the partition still awaits validation of the same position (``FetchPosition``:
    its offset, last consumed epoch and current leader and epoch unchanged since the request); an
    error answer leaves it awaiting validation."""
    b, _, _, epoch, last_epoch, answer = consumer.inflight
    done = consumer.with_(inflight=())
    if (answer is not None and consumer.validating and consumer.last_epoch == last_epoch
            and (consumer.leader, consumer.epoch) == (b, epoch)):
        done = _apply_validate_answer(done, answer)
    return s.with_(consumers=replace_at(s.consumers, c, done))


#: the consumers' actions (``spec.kafka.declared``): each with a consumer and the broker it asks;
#: the Send, Serve and Receive steps with ``consumer_inflight``, the one-step ones without
ACTIONS: tuple[Declared, ...] = (
    Declared("ConsumerMetadata", "_consumer_metadata", (("consumer", CONSUMER), ("leader", BROKER)),
             ("_metadata_state",),
             rules=("consumer-truncation-detection", "consumer-reads-below-hw"),
             flags=("consumer-truncation-detection",)),
    Declared("ConsumerFetch", "_consumer_fetch", (("consumer", CONSUMER), ("leader", BROKER)),
             ("_consumer_fetch_state",),
             rules=("consumer-reads-below-hw", "consumer-empty-answer-skip")),
    Declared("ConsumerValidate", "_consumer_validate", (("consumer", CONSUMER), ("leader", BROKER)),
             ("_validate_state",),
             rules=("consumer-truncation-detection",)),
    Declared("ConsumerFetchFromFollower", "_consumer_fetch_follower",
             (("consumer", CONSUMER), ("replica", BROKER)), ("_fetch_from_follower_actions",),
             rules=("fetch-from-follower",)),
    Declared("ConsumerSendFetch", "_consumer_send_fetch",
             (("consumer", CONSUMER), ("broker", BROKER)),
             ("_consumer_fetch_state", "_delayed_consumer_actions"),
             rules=("consumer-reads-below-hw", "consumer-empty-answer-skip", "consumer-network")),
    Declared("ServeConsumerFetch", "_consumer_serve_fetch",
             (("consumer", CONSUMER), ("broker", BROKER)),
             ("_serve_consumer_fetch", "_delayed_consumer_actions"), rules=("consumer-network",),
             flags=("consumer-truncation-detection",)),
    Declared("ReceiveConsumerFetch", "_consumer_receive_fetch",
             (("consumer", CONSUMER), ("broker", BROKER)),
             ("_receive_consumer_fetch", "_delayed_consumer_actions"), rules=("consumer-network",)),
    Declared("ConsumerSendValidate", "_consumer_send_validate",
             (("consumer", CONSUMER), ("broker", BROKER)),
             ("_validate_state", "_delayed_consumer_actions"),
             rules=("consumer-truncation-detection", "consumer-network")),
    Declared("ServeConsumerValidate", "_consumer_serve_validate",
             (("consumer", CONSUMER), ("broker", BROKER)),
             ("_validate_answer", "_delayed_consumer_actions"), rules=("consumer-network",),
             flags=("kafka-7415",)),
    Declared("ReceiveConsumerValidate", "_consumer_receive_validate",
             (("consumer", CONSUMER), ("broker", BROKER)),
             ("_receive_consumer_validate", "_delayed_consumer_actions"),
             rules=("consumer-network",)),
    Declared("ConsumerDisconnect", "_consumer_disconnect",
             (("consumer", CONSUMER), ("broker", BROKER)), ("_consumer_actions",),
             flags=("consumer-truncation-detection", "fetch-from-follower")),
)
