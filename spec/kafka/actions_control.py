"""The control plane of the Kafka model: the controller's elections and epoch bumps, its handling of a
broker change (KIP-380) and of a ControlledShutdown, the LeaderAndIsr and StopReplica requests as a
broker applies them, and the crash, restart and bounce of a broker.

``ControlPlaneActions`` is a mixin of ``spec.kafka.model.KafkaModel``: it reads the bounds, feature
switches and action tables that ``KafkaModel.__init__`` sets. The rules are in that module's docstring.
"""

from __future__ import annotations

from spec.kafka.log import assign
from spec.kafka.state import (
    CONTROL_KINDS,
    CONTROLLED_SHUTDOWN,
    DATA_KINDS,
    FETCHING,
    LEADER_AND_ISR,
    NO_FETCHER,
    STOP_REPLICA,
    TRUNCATING,
    Broker,
    ControlledShutdown,
    Controller,
    KafkaState,
    LeaderAndIsr,
    StopReplica,
)
from spec.kafka.updates import (
    add_messages,
    remove_message,
    replace_broker,
    truncate_broker,
    with_brokers,
    with_controller,
    with_network,
)

_new = tuple.__new__


class ControlPlaneActions:
    """Controller actions, control requests applied by a broker, crash / restart / bounce."""

    # -- controller ------------------------------------------------------------------------------------
    def _controller_actions(self, s: KafkaState, out: list) -> None:
        add = out.append
        brokers, ctrl = s[0], s[1]
        if ctrl.epoch < self.max_epoch:
            leader = ctrl.leader
            leader_alive = leader >= 0 and brokers[leader].alive
            live_isr = tuple([r for r in ctrl.isr if brokers[r].alive])
            if not leader_alive:
                for b in live_isr:
                    add((self._elect[b], self._elect_state(s, b, live_isr)))
                if self.features.unclean and not live_isr:
                    for b in range(self.n):
                        if brokers[b].alive:
                            add((self._unclean[b], self._elect_state(s, b, (b,))))
            else:
                for b in live_isr:
                    if b != leader:
                        add((self._preferred[b], self._elect_state(s, b, ctrl.isr)))
                if s.bumps < self.max_bumps:
                    # reassignment, or an ISR change by the controller: a new epoch, the same leader
                    bumped = self._elect_state(s, leader, ctrl.isr)
                    add((self._bump[leader], _new(KafkaState, bumped[:5] + (s.bumps + 1,) + bumped[6:])))
        registered = ctrl.registered
        for b in range(self.n):
            broker = brokers[b]
            if broker.alive and registered[b] != broker.broker_epoch:
                add((self._broker_change[b], self._broker_change_state(s, b)))

    def _leader_and_isr(self, s: KafkaState, r: int, epoch: int, leader: int, isr: tuple[int, ...]) -> LeaderAndIsr:
        """A LeaderAndIsr to ``r``, stamped with r's broker epoch as the controller knows it and (ghost)
        the incarnation of r that is up when it is sent."""
        return _new(LeaderAndIsr, (LEADER_AND_ISR, r, epoch, leader, isr, s[1].registered[r], s[0][r].incarnation))

    def _elect_state(self, s: KafkaState, leader: int, isr: tuple[int, ...], skip: int = -1) -> KafkaState:
        brokers, ctrl = s[0], s[1]
        epoch = ctrl.epoch + 1
        registered = ctrl.registered
        sent = tuple([_new(LeaderAndIsr, (LEADER_AND_ISR, r, epoch, leader, isr, registered[r], brokers[r].incarnation))
                      for r in range(self.n) if brokers[r].alive and r != skip])
        return with_controller(s, _new(Controller, (leader, epoch, isr, registered)), add_messages(s[2], *sent))

    def _broker_change_state(self, s: KafkaState, i: int) -> KafkaState:
        """The controller processes the broker change of a broker that re-registered (bounced) while it
        was not looking. Without KIP-380 it sees the broker in the old list and in the new one: nothing
        to do. With KIP-380 its higher broker epoch shows the bounce: failure handling (the queued
        control requests to it are dropped; as its leader, the partition gets a new epoch), then
        start-up handling (it is sent the current LeaderAndIsr)."""
        b = s.brokers[i]
        ctrl = s.controller
        registered = ctrl.registered[:i] + (b.broker_epoch,) + ctrl.registered[i + 1 :]
        if not self.features.detect_bounced_broker:
            return with_controller(s, _new(Controller, ctrl[:3] + (registered,)), s[2])
        network = tuple([m for m in s.network if not (m.kind in CONTROL_KINDS and m.dst == i)])
        s = with_controller(s, _new(Controller, ctrl[:3] + (registered,)), network)
        if ctrl.leader == i and ctrl.epoch < self.max_epoch:
            return self._elect_state(s, i, ctrl.isr)
        return with_network(s, add_messages(network, self._leader_and_isr(s, i, ctrl.epoch, ctrl.leader, ctrl.isr)))

    def _controlled_shutdowns(self, s: KafkaState, m: ControlledShutdown, out: list) -> None:
        """The controller handles a ControlledShutdown: leadership moves to another live ISR member, the
        broker leaves the ISR (a new epoch either way) and is sent a StopReplica. The request is
        rejected if the broker is down, or (KIP-380) comes from an older generation than the one
        the controller has registered."""
        i = m.src
        ctrl = s.controller
        brokers = s.brokers
        rest = with_network(s, remove_message(s.network, m))
        act = self._process_shutdown[i]
        if not brokers[i].alive or (self.features.reject_stale_shutdown and m.broker_epoch < ctrl.registered[i]):
            out.append((act[ctrl.leader], rest))
            return
        isr = tuple(r for r in ctrl.isr if r != i)
        if ctrl.leader == i:
            others = [r for r in isr if brokers[r].alive]
            if not others:  # nowhere to move leadership: Kafka answers "partitions remaining"
                out.append((act[i], rest))
                return
            if ctrl.epoch >= self.max_epoch:
                return
            for leader in others:
                # the LeaderAndIsr goes to the shutting-down broker too (live or shutting down), then the
                # StopReplica for the replica it now follows
                moved = self._elect_state(rest, leader, isr)
                out.append((act[leader], self._send_stop(moved, i, m.incarnation)))
        elif i in ctrl.isr:
            if ctrl.epoch >= self.max_epoch:
                return
            shrunk = self._elect_state(rest, ctrl.leader, isr, skip=i)
            out.append((act[ctrl.leader], self._send_stop(shrunk, i, m.incarnation)))
        else:
            out.append((act[ctrl.leader], self._send_stop(rest, i, m.incarnation)))

    def _send_stop(self, s: KafkaState, i: int, meant: int) -> KafkaState:
        ctrl = s[1]
        msg = _new(StopReplica, (STOP_REPLICA, i, ctrl.epoch, ctrl.registered[i], meant))
        return with_network(s, add_messages(s[2], msg))

    # -- crash, restart and bounce -------------------------------------------------------------------
    def _crash_state(self, s: KafkaState, i: int, keep: int) -> KafkaState:
        """The broker dies and the controller sees it at once: its queued control requests are dropped
        with its connections (a ControlledShutdown it sent is already with the controller)."""
        b = truncate_broker(s.brokers[i], keep)
        nb = _new(Broker, (False, b.log, b.hw, b.cache, -1, -1, (), NO_FETCHER, (), b.broker_epoch, False, b.incarnation,
                           b.stale))
        network = tuple([m for m in s.network if m.kind == CONTROLLED_SHUTDOWN or (m.dst != i and
                                                                                   (m.kind in CONTROL_KINDS or m.src != i))])
        return _new(KafkaState, (replace_broker(s.brokers, i, nb), s[1], network, s[3], s.crashes + 1) + s[5:])

    def _reborn(self, b: Broker) -> Broker:
        """A new incarnation: log, epoch cache and HW checkpoint back; registered with a new broker epoch."""
        return _new(Broker, (True, b.log, min(b.hw, len(b.log)), b.cache, -1, -1, (), NO_FETCHER, (), b.broker_epoch + 1, False,
                             b.incarnation + 1, b.stale))

    def _restart_state(self, s: KafkaState, i: int) -> KafkaState:
        """Back after a crash; the controller processes its registration at once and sends it the
        current LeaderAndIsr."""
        nb = self._reborn(s.brokers[i])
        ctrl = s.controller
        registered = ctrl.registered[:i] + (nb.broker_epoch,) + ctrl.registered[i + 1 :]
        msg = _new(LeaderAndIsr, (LEADER_AND_ISR, i, ctrl.epoch, ctrl.leader, ctrl.isr, nb.broker_epoch, nb.incarnation))
        return _new(KafkaState, (replace_broker(s.brokers, i, nb), _new(Controller, ctrl[:3] + (registered,)),
                                 add_messages(s.network, msg)) + s[3:])

    def _bounce_state(self, s: KafkaState, i: int) -> KafkaState:
        """A crash and a re-registration so fast that the controller has processed neither: it still has
        the old broker epoch registered and keeps its queue of control requests to the broker (its
        sender thread reconnects to the new incarnation). Broker-to-broker messages are lost."""
        nb = self._reborn(s.brokers[i])
        network = tuple([m for m in s.network if m.kind not in DATA_KINDS or (m.dst != i and m.src != i)])
        return _new(KafkaState, (replace_broker(s.brokers, i, nb), s[1], network) + s[3:7] + (s.bounces + 1, s[8]))

    # -- control requests applied by a broker --------------------------------------------------------
    def _stale_generation(self, b: Broker, m: LeaderAndIsr | StopReplica) -> bool:
        """KIP-380: a control request for an older generation is rejected (STALE_BROKER_EPOCH); a newer
        one is accepted (rejecting it stalled the broker: KAFKA-9839)."""
        return self._reject_stale and m.broker_epoch < b.broker_epoch

    def _apply_stop_replica(self, s: KafkaState, m: StopReplica) -> KafkaState:
        network = remove_message(s.network, m)
        i = m.dst
        b = s.brokers[i]
        if self._stale_generation(b, m):
            return with_network(s, network)
        # the replica is removed from the fetcher and stays offline until a LeaderAndIsr with a newer epoch
        nb = _new(Broker, b[:7] + (NO_FETCHER,) + b[8:12] + (b.stale or m.meant != b.incarnation,))
        return with_brokers(s, replace_broker(s.brokers, i, nb), network)

    def _apply_leader_and_isr(self, s: KafkaState, m: LeaderAndIsr) -> KafkaState:
        network = remove_message(s.network, m)
        i = m.dst
        b = s.brokers[i]
        if m.epoch <= b.epoch or self._stale_generation(b, m):
            return with_network(s, network)  # an older epoch than the broker knows, or generation: ignored
        if m.meant != b.incarnation:
            b = _new(Broker, b[:12] + (True,))
        if m.leader == i:
            cache = b.cache
            if self.features.epoch_on_become_leader:
                cache = assign(cache, m.epoch, len(b.log))
            nb = _new(Broker, (b[0], b[1], b[2], cache, i, m.epoch, m.isr, NO_FETCHER, (-1,) * self.n) + b[9:])
        elif b.leader == m.leader and b.fetch != NO_FETCHER and not self._fencing:
            # before KIP-320 a follower whose leader did not change only learns the new epoch
            nb = _new(Broker, b[:5] + (m.epoch, m.isr) + b[7:])
        else:
            if self._hw_truncation:
                b = truncate_broker(b, b.hw, self._fix_10706)
                fetch = FETCHING
            elif self._offsets:
                fetch = TRUNCATING
            else:
                fetch = FETCHING
            nb = _new(Broker, b[:4] + (m.leader, m.epoch, m.isr, fetch, ()) + b[9:])
        return with_brokers(s, replace_broker(s.brokers, i, nb), network)


def channel_order(m: LeaderAndIsr | StopReplica) -> tuple[int, int, int]:
    """Where a control request sits in its FIFO channel: (leader epoch when sent, broker epoch stamped,
    kind). Both epochs only grow along a channel; the one case of a tie is a StopReplica sent for a
    controlled shutdown that needed no new epoch, which follows the LeaderAndIsr of that epoch."""
    return m.epoch, m.broker_epoch, m.kind

