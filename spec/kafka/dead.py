"""Dead messages of the Kafka model: answers whose delivery is, in every continuation, a no-op but
its own removal (``kmc check kafka --reduce dead``, ``checker.dead``).

What a dead message is, and why dropping it at once is sound
--------------------------------------------------------------
A message m in flight in a state s is *dead* when every step that delivers it, from s or from any
state reachable from s while m is still in flight, changes nothing but the network (m leaves it).
The reduction stores each state without its dead messages (``DeadMessages.reduce``), as if each had
been delivered the moment it died: a classic dead-variable reduction, the message being the
variable. It keeps every invariant's verdict:

* Every stored state is a reachable state of the unreduced model: s with its dead answers delivered
  (an answer is not queued behind anything: broker-to-broker messages are delivered in any order).
* Every reachable state's reduced form is stored: the presence of a dead answer only *disables*
  other steps (the fetcher sends nothing to a leader while a request to it or its answer is in
  flight, ``actions_data.busy``; the ``inflight`` bound counts it); no step's guard needs it and no
  step's effect reads it; and a dead answer stays dead (below, per kind and release). So each step
  of the unreduced model from s is a step from s without its dead answers, to the successor without
  its dead answers.
* An invariant violated in s is violated in s without its dead answers: the invariants read no
  answer in flight but the stall invariants (``invariants.kafka_control.stalled_followers``), for
  which a message to or from a follower means "not stalled": fewer messages leave a stalled follower
  stalled. A deadlock is never created or hidden: a state with a dead answer has an enabled step
  (its delivery), and the stored form is reachable.

Every answer in flight is the only message of its (follower, leader) pair: the follower sends a
request only when none of the pair is in flight (``busy``), and the leader turns the request into
the answer. A crash or bounce of either end drops it (``_crash_state``, ``_bounce_state``). So while
an answer is in flight its follower neither sends to that leader nor receives from it, and the
follower's in-memory fields (leader epoch, fetcher state) are not reset by a restart: they change
only by the control plane (LeaderAndIsr, StopReplica) and by its exchanges with *another* leader,
which it follows only after a LeaderAndIsr. What is dead, by kind and release:

1. **Answers the follower only retries, every ZooKeeper row.** A FetchResponse or
   OffsetsForLeaderEpoch answer with NOT_LEADER_FOR_PARTITION or UNKNOWN_LEADER_EPOCH is dropped by
   every branch of ``_receive_fetch_state`` / ``_receive_offsets_state`` whatever the follower's
   state (``AbstractFetcherThread.handlePartitionsWithErrors`` 2.1+, ``partitionsWithError``
   0.11/2.0: the partition is retried after the back-off). So is FENCED_LEADER_EPOCH where it does
   not remove the partition: before 2.1.0 (``fenced-removes-partition`` off), and from 2.5.0
   (``kafka-9654``, ``onPartitionFenced(tp, requestEpoch)``) when the request's leader epoch is not
   the fetch state's, which stays so: the follower's leader epoch only grows while the answer is in
   flight (a LeaderAndIsr is applied only if newer, ``ReplicaManager.becomeLeaderOrFollower``).
2. **2.1.0 to 2.7 (KIP-320 fencing, OffsetsForLeaderEpoch truncation, KAFKA-5163's isReadyForFetch;
   not truncate-on-fetch): every FetchResponse whose delivery is a no-op now.** Every applied
   LeaderAndIsr makes the follower truncate first (2.1.0 ``Partition.makeFollower`` returns true on
   every epoch change, and ``ReplicaManager.makeFollowers`` adds the partition to the fetcher in the
   truncating state), and a truncating partition drops a fetch answer
   (``AbstractFetcherThread.processFetchRequest``: ``isReadyForFetch``). To be fetching from the
   answer's leader again it must finish that truncation with an OffsetsForLeaderEpoch round to it,
   or truncate to its HW when it has no epoch; both wait while the answer is in flight (``busy``).
   Until then nothing else changes what the answer is checked against (fetcher state, leader, LEO,
   HW, epoch cache, the reconciled ghost): the follower appends and truncates only through its
   leader's answers and its own truncation steps. So an answer the follower drops, or applies
   without any change (an empty answer at its LEO with the HW it has), does so in every
   continuation.
3. **KAFKA-18991's fix (3.9.1, 4.1.0): every FetchResponse whose request's leader epoch is not the
   follower's** (``AbstractFetcherThread.processFetchRequest``:
   ``currentFetchState.currentLeaderEpoch == requestEpoch``), and every one whose delivery is a
   no-op now: with the epoch unchanged, the follower's fetcher state, leader and log change only by
   a LeaderAndIsr (a new epoch: dead) or a StopReplica (no fetcher until a new epoch), and it holds
   no diverging epoch to apply (it sent the request with none, and records one only from its
   leader's answer).
4. **KAFKA-7786's fix (2.1.1, 2.2.0): every OffsetsForLeaderEpoch answer whose request's leader
   epoch is not the follower's** (``AbstractFetcherThread.maybeTruncate`` ignores it), and every one
   that is a no-op now, by the argument of 3 (the OffsetsForLeaderEpoch answer is read against the
   same fields).
6. **Not dead, on every row (ZooKeeper and KRaft): an error-free fetch answer whose leader still
   leads in the epoch it answered in.** The leader's ExpandIsr is enabled only while the answer of
   the fetch it recorded is on its way (``actions_data._fetch_being_answered``: ``maybeExpandIsr``
   runs in the fetch path), so that answer's presence enables a step and it is kept, whatever 2 and
   3 say of its delivery. Before 2.1.0 the answer carries no leader epoch and the leader's check is
   that it leads.

The KRaft rows (kraft-3.3, kraft-3.5, kraft-4.0, kraft-4.1)
-----------------------------------------------------------
Their fetch path is the ZooKeeper row's of the same release (kraft-3.3 2.8.1's, kraft-3.5 3.4.1's,
kraft-4.0 3.9.0's, kraft-4.1 3.9.1's: truncate-on-fetch and KAFKA-9654 on all four, KAFKA-18991's
fix on kraft-4.1 only); their control plane is the KRaft families'
(``spec.kafka.controllers.KRaftController``): there is no LeaderAndIsr request, a broker learns a
new leader epoch by replaying the partition change the controller wrote to the metadata log (the
model's LeaderAndIsr message stands for that record). What the classes above rely on holds there for
its own reasons:

* An answer's destination keeps running while it is in flight: Crash, UncleanShutdown and
  CleanShutdown drop every message to the broker (``_kraft_crash`` -> ``_crash_state``); a running
  broker the controller fences (``fences``) keeps its fetcher, log and view of the partition.
* The follower's leader epoch and partition epoch only grow: a replayed change of an older leader
  epoch is ignored (``_apply_leader_and_isr``), one of the same leader epoch is taken only with a
  newer partition epoch and then moves the ISR alone (``_kraft_apply_leader_and_isr``). Source: the
  metadata log is replayed in order (3.5.0 ``ReplicaManager.applyDelta`` ->
  ``applyLocalFollowersDelta``), the controller never lowers either epoch
  (``PartitionChangeBuilder.build``), and 3.5.0 ``Partition.makeFollower`` skips an older partition
  epoch.
* The fetcher is restarted only on a new leader epoch (3.5.0 ``applyLocalFollowersDelta``:
  ``isNewLeaderEpoch`` -> ``partitionsToStartFetching``,
  ``InitialFetchState(leader, partition.getLeaderEpoch, initialFetchOffset(log))``): a same-epoch
  change touches neither the fetch state nor the log.

So, on the KRaft rows (and with class 6 kept live there too: 3.3.0 to 4.1 decide an expansion in the
fetch path as the ZooKeeper rows do, ``Partition.updateFollowerFetchState`` -> ``maybeExpandIsr``):

1. **Retried answers** as on every ZooKeeper row: NOT_LEADER_OR_FOLLOWER and UNKNOWN_LEADER_EPOCH
   (3.5.0 ``AbstractFetcherThread.processFetchRequest``: ``partitionsWithError``), and
   FENCED_LEADER_EPOCH whose request epoch is not the fetch state's
   (``onPartitionFenced(tp, requestEpoch)``, KAFKA-9654), which stays so (the epoch only grows). No
   OffsetsForLeaderEpoch round is sent on these rows (truncate-on-fetch).
3. **kraft-4.1 (KAFKA-18991's fix, 4.1.0 ``processFetchRequest``): every FetchResponse of another
   leader epoch, and every one that is a no-op now**: with the leader epoch unchanged, the fetch
   state, leader and log change only by a replayed change of a newer leader epoch (then the answer
   is of another epoch: dead), and the follower records a diverging epoch only from the answer to
   its own request, the one in flight. On kraft-3.3 and kraft-3.5 (3.5.0 ``processFetchRequest``
   checks ``fetchOffset == currentFetchState.fetchOffset && isReadyForFetch``, not the request's
   leader epoch) an answer the follower drops now is taken after it comes back to the same leader,
   in a newer epoch, at the answer's offset: KAFKA-18991's stale append, so those answers are live
   (a mutant calling them dead fails the obligations in ``tests/test_dead.py``).
5. **AlterPartition answers that are no-ops now, every KRaft row.** The leader takes an answer only
   for the change it is still waiting for (``answers_pending``; 3.5.0
   ``Partition.submitAlterPartition``: ``partitionState != proposedIsrState`` is ignored);
   FENCED_LEADER_EPOCH and INVALID_UPDATE_VERSION change nothing, the leader waits for the replayed
   change (``handleAlterPartitionError``); NONE in a leader epoch that is not its own waits the same
   way. It waits for no other change while the answer is in flight: it sends no AlterPartition while
   one of its own or its answer is in flight (``_alter_in_flight``; 3.5.0
   ``AlterPartitionManager.submit`` keeps one item a partition in ``unsentIsrUpdates`` until
   answered, and ``maybeShrinkIsr`` / ``maybeExpandIsr`` need ``!partitionState.isInflight``), and
   every replayed change of its leader or partition epoch clears the pending state; the answer's
   error and epochs are fixed. So an answer it ignores now it ignores in every continuation. (No
   invariant reads an AlterPartition answer; its presence only stops the leader's next ShrinkIsr /
   ExpandIsr.)

What it cannot express: a LeaderAndIsr older than the broker's epoch (none arises without a crash or
bounce in the bounds measured, and a bounce delivers a queued request to a new incarnation: the
stale-control-request story; on the KRaft rows a stale replayed change is dead by the epoch argument
above, but worth at most 4% at the first levels of Last Replica Standing's bounds,
``bench/NOTES.md``, and not declared); a FetchResponse on 2.8.x to 3.4, kraft-3.3 and kraft-3.5 and
an OffsetsForLeaderEpoch answer on 2.0.x and 2.1.0 that the follower drops now but could take after
a LeaderAndIsr that brings it back to the same leader (KAFKA-18991's and KAFKA-7786's stories: those
answers are live); requests (serving one changes the leader's view of the follower); the ZooKeeper
rows' AlterIsr answers (2.8.0 to 3.9.1: STALE_BROKER_EPOCH sends the request again); partition
reassignments on the KRaft rows (a replica taken out of the replicas: not argued, the option is
refused with ``--const reassignments``).

``tests/test_dead.py`` checks, on every row named above (the KRaft ones with their faults: an
unclean shutdown, AlterPartition with lost answers, a running broker fenced, controlled and clean
shutdowns, metadata lag), that every message found dead is a no-op when delivered in the state,
stays dead along sampled continuations, and that the reduced search keeps every verdict of the
unreduced one with counterexamples that replay.
"""

from __future__ import annotations

from typing import Any

from spec.errors import UsageError
from spec.kafka.state import (
    ALTER_PARTITION_RESPONSE,
    FENCED_LEADER_EPOCH,
    FETCH_RESPONSE,
    FETCHING,
    NONE,
    NOT_LEADER,
    OFFSETS_FOR_LEADER_EPOCH_RESPONSE,
    UNKNOWN_LEADER_EPOCH,
    KafkaState,
)

_new = tuple.__new__
#: how many (follower, answer) pairs ``DeadMessages._noop`` remembers before it starts again: the
#: pairs are held alive with the answer, so at 65,536 it was about 15 MB a searching process (each
#: parallel worker its own) on the three-broker goal configuration; 4,096 keep the repeats of
#: siblings (bench/NOTES.md, "Parallel workers' memory at the goal configuration")
_KNOWN_PAIRS = 1 << 12
_NETWORK = KafkaState._fields.index("network")


class DeadMessages:
    """Which answers in flight are dead on one configuration of the model, and the state without
    them."""

    def __init__(self, model: Any) -> None:
        f = model.features
        if f.kraft and model.reassignments:
            raise UsageError("--reduce dead does not cover reassignments (a removed replica's "
                             "fetcher is not argued): drop --const "
                             f"reassignments={model.reassignments} or --reduce dead")
        self.model = model
        self.receive_fetch = model._receive_fetch_state
        self.receive_offsets = model._receive_offsets_state
        self.receive_alter = model._receive_alter_response
        # _noop's answers by (follower, answer)
        self._known: dict[tuple[int, int], tuple[Any, Any, bool]] = {}
        #: FENCED_LEADER_EPOCH drops an answer in every state (1: no removal before 2.1.0) ...
        self.fenced_retried = not (f.leader_epoch_fencing and f.fenced_removes_partition)
        #: ... or once the request's epoch is not the fetch state's (1: kafka-9654)
        self.fenced_by_epoch = (f.leader_epoch_fencing and f.fenced_removes_partition
                                and f.kafka_9654)
        #: 2: every fetch answer that is a no-op now
        self.fetch_noop_dead = (f.leader_epoch_fencing and f.uses_offsets_request and f.kafka_5163
                                and not f.truncate_on_fetch and f.truncation != "hw-truncation")
        #: 3: KAFKA-18991's fix
        self.fetch_epoch_dead = f.kafka_18991
        #: 4: KAFKA-7786's fix (with fencing: a request carries no epoch before it), on the rows
        #: that send OffsetsForLeaderEpoch at all (not truncate-on-fetch's, 2.8.0+)
        self.offsets_epoch_dead = (f.kafka_7786_fix and f.leader_epoch_fencing
                                   and f.uses_offsets_request)
        #: 5: the KRaft rows' AlterPartition answers that are no-ops now
        self.alter_noop_dead = f.kraft
        #: 6: on every row an error-free fetch answer enables the leader's ExpandIsr while it is on
        #: the wire (``actions_data._fetch_being_answered``)
        self.answer_enables_expansion = True
        self._fetch_being_answered = model._fetch_being_answered
        #: the kinds ``reduce`` looks at
        self.kinds = (FETCH_RESPONSE, OFFSETS_FOR_LEADER_EPOCH_RESPONSE,
                      *((ALTER_PARTITION_RESPONSE,) if f.kraft else ()))

    def describe(self) -> list[str]:
        """Which classes of the module's docstring apply on this row (for reports)."""
        out = ["retried answers (1)"]
        if self.fetch_noop_dead:
            out.append("fetch answers that are no-ops (2)")
        if self.fetch_epoch_dead:
            out.append("fetch answers of another leader epoch or no-ops (3)")
        if self.offsets_epoch_dead:
            out.append("OffsetsForLeaderEpoch answers of another leader epoch or no-ops (4)")
        if self.alter_noop_dead:
            out.append("AlterPartition answers that are no-ops (5)")
        return out

    def _noop(self, s: KafkaState, m: Any) -> bool:
        """Whether delivering ``m`` in ``s`` changes nothing but the network (the model's own step,
        run). The step reads the message and its follower only, so the answer is kept by the pair (a
        successor shares the brokers and messages its step did not touch; the pair is held with the
        answer, so neither id is reused)."""
        follower = s.brokers[m.dst]
        key = (id(follower), id(m))
        known = self._known.get(key)
        if known is not None:
            return known[2]
        kind = m.kind
        if kind == ALTER_PARTITION_RESPONSE:
            out: list = []
            # one successor: the leader's ReceiveAlterPartitionResponse
            self.receive_alter(s, m, out.append)
            noop = all(after.brokers == s.brokers for _, after in out)
        else:
            after = (self.receive_fetch if kind == FETCH_RESPONSE else self.receive_offsets)(s, m)
            noop = after.brokers == s.brokers and after.crashes == s.crashes
        if len(self._known) >= _KNOWN_PAIRS:
            self._known.clear()
        self._known[key] = (follower, m, noop)
        return noop

    def _may_expand(self, s: KafkaState, m: Any) -> bool:
        """Whether an error-free fetch answer can still let its leader add its follower to the ISR
        (6): its leader still leads in the epoch it answered in. That stays false once false: a
        running leader's epoch only grows and a crash of either end drops the answer."""
        leader = s.brokers[m.src]
        return (leader.alive and leader.leader == m.src
                and self._fetch_being_answered((m,), m.src, leader, m.dst))

    def dead(self, s: KafkaState, m: Any) -> bool:
        kind = m.kind
        if kind == FETCH_RESPONSE or kind == OFFSETS_FOR_LEADER_EPOCH_RESPONSE:
            error = m.error
            if error == NOT_LEADER or error == UNKNOWN_LEADER_EPOCH:
                return True  # retried after the back-off, whatever the follower's state (1)
            follower = s.brokers[m.dst]
            if error == FENCED_LEADER_EPOCH:
                if self.fenced_retried or (self.fenced_by_epoch and m.epoch != follower.epoch):
                    return True
            if kind == FETCH_RESPONSE:
                if self.answer_enables_expansion and error == NONE and self._may_expand(s, m):
                    return False  # the leader's ExpandIsr needs it on the wire (6)
                if self.fetch_noop_dead:
                    if (follower.fetch != FETCHING or follower.leader != m.src or len(follower.log)
                        != m.offset):
                        return True  # dropped (isReadyForFetch, the fetch offset)
                    # records taken at its LEO are appended
                    return not m.records and self._noop(s, m)
                if self.fetch_epoch_dead:
                    return m.epoch != follower.epoch or self._noop(s, m)
                return False
            if self.offsets_epoch_dead:
                return m.epoch != follower.epoch or self._noop(s, m)
        elif kind == ALTER_PARTITION_RESPONSE and self.alter_noop_dead:
            # ignored by the leader, which sends nothing while it is in flight (5)
            return self._noop(s, m)
        return False

    def reduce(self, s: KafkaState) -> KafkaState:
        """``s`` without its dead messages (``s`` itself when it has none)."""
        network = s[_NETWORK]
        if not network:
            return s
        dead = self.dead
        kinds = self.kinds
        kept = [m for m in network if not (m[0] in kinds and dead(s, m))]
        if len(kept) == len(network):
            return s
        fields = list(s)
        fields[_NETWORK] = tuple(kept)
        return _new(KafkaState, fields)

    def deliveries(self, s: KafkaState) -> list[tuple[Any, KafkaState]]:
        """The model's own steps that deliver the dead messages of ``s``, one after the other,
        ending in ``reduce(s)``: how a trace of the reduced search becomes a behaviour of the
        unreduced model."""
        steps = []
        while True:
            dead = next((m for m in s.network if self.dead(s, m)), None)
            if dead is None:
                return steps
            network = list(s.network)
            network.remove(dead)
            wanted = s.with_(network=tuple(network))
            step = next(((act, t) for act, t in self.model.successors(s) if t == wanted), None)
            if step is None:  # a dead message is delivered as a no-op by definition
                raise RuntimeError(f"no step of the model delivers the dead message {dead} as a "
                                   "no-op")
            steps.append(step)
            s = step[1]
