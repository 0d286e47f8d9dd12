"""Agreement beyond the published constants, where there is no TLC answer to compare with.

* The literal second encoding (``tests.reference_literal``: whole-domain quantifiers, one branch
  per disjunct, TLA+ records) reaches the same states at the same depth and generates the same
  number of successors from every state, at several configurations.
* The reachable states are closed under renaming the replicas (the specs are symmetric in them).
* Raising any constant only adds behaviours: the reachable set grows monotonically.
* The invariants catch hand-built violations.
"""

from __future__ import annotations

from collections import Counter

import pytest

from invariants.reference import log_matching, strong_isr, type_ok, weak_isr
from spec.reference import VARIANTS
from spec.reference.base import KafkaState, LogRecord, QuorumState, ReplicaState
from tests.reference_literal import LiteralSpec, explore, to_fast


def reachable(model) -> dict:
    """state -> BFS level (initial states at level 1)."""
    level = {s: 1 for s in model.init_states()}
    frontier = list(level)
    depth = 1
    while frontier:
        depth += 1
        nxt = []
        for s in frontier:
            for _, t in model.successors(s):
                if t not in level:
                    level[t] = depth
                    nxt.append(t)
        frontier = nxt
    return level


#: three configurations; the third (two leader epochs, about 1 s a variant) is in the fast tier for
#: KIP-320 only
CONFIGS = [(2, 3, 2, 1), (1, 3, 3, 3), (2, 1, 1, 2)]


@pytest.mark.parametrize("module, config", [
    pytest.param(module, config, id=f"{module}-config{i}",
                 marks=[pytest.mark.slow] if i == 2 and module != "Kip320" else [])
    for module in sorted(VARIANTS) for i, config in enumerate(CONFIGS)])
@pytest.mark.slow  # every line it runs, cheaper fast tests run too (coverage by test)
def test_literal_encoding_agrees_state_for_state(module, config):
    literal = LiteralSpec(module, *config)
    lit_level, lit_generated, lit_depth = explore(literal)
    model = VARIANTS[module](*config)
    level = reachable(model)
    assert {to_fast(s): d for s, d in lit_level.items()} == level
    assert lit_depth == max(level.values())
    generated = len(model.init_states())
    for s in lit_level:
        ours = Counter(t for _, t in model.successors(to_fast(s)))
        assert Counter(to_fast(t) for t in literal.Next(s)) == ours
        generated += sum(ours.values())
    assert generated == lit_generated


# 2 to 5 s each; the fast tier compares the encodings state for state at two replicas (above)
@pytest.mark.slow
@pytest.mark.parametrize("module", ["Kip279", "Kip320"])
def test_literal_encoding_agrees_with_three_replicas(module):
    literal = LiteralSpec(module, 3, 1, 1, 1)
    lit_level, lit_generated, lit_depth = explore(literal)
    assert (len(lit_level), lit_generated, lit_depth) == {"Kip279": (9_841, 36_322, 18),
                                                          "Kip320": (6_787, 16_348, 18)}[module]
    assert {to_fast(s) for s in lit_level} == set(reachable(VARIANTS[module](3, 1, 1, 1)))


def rename(s: KafkaState, perm: dict[int, int]) -> KafkaState:
    """Apply a permutation of replica ids to every place a replica appears."""
    def rid(r):
        return perm.get(r, r)

    def isr(members):
        return frozenset(rid(r) for r in members)

    n = len(s.replica_log)
    inverse = {perm[r]: r for r in perm}
    order = [inverse.get(i, i) for i in range(1, n + 1)]
    return KafkaState(
        replica_log=tuple(s.replica_log[r - 1] for r in order),
        replica_state=tuple(
            ReplicaState(st.hw, st.leader_epoch, rid(st.leader), isr(st.isr))
            for st in (s.replica_state[r - 1] for r in order)
        ),
        next_record_id=s.next_record_id,
        next_leader_epoch=s.next_leader_epoch,
        leader_and_isr_requests=frozenset(QuorumState(q.leader_epoch, rid(q.leader), isr(q.isr))
                                          for q in s.leader_and_isr_requests),
        quorum_state=QuorumState(s.quorum_state.leader_epoch, rid(s.quorum_state.leader),
                                 isr(s.quorum_state.isr)),
    )


#: about 1.5 s each at three replicas: the fast tier renames one variant's states, the whole suite
#: every variant's
SYMMETRIC_FAST = {"Kip320"}


@pytest.mark.parametrize("module",
                         [m if m in SYMMETRIC_FAST else pytest.param(m, marks=pytest.mark.slow)
                          for m in sorted(VARIANTS)])
@pytest.mark.slow  # every line it runs, cheaper fast tests run too (coverage by test)
def test_reachable_states_are_symmetric_in_the_replicas(module):
    states = set(reachable(VARIANTS[module](3, 1, 1, 1)))
    # a transposition and a 3-cycle generate them all
    for perm in ({1: 2, 2: 1}, {1: 2, 2: 3, 3: 1}):
        assert {rename(s, perm) for s in states} == states


@pytest.mark.parametrize("module", sorted(VARIANTS))
def test_reachable_states_grow_with_every_constant(module):
    base = (2, 1, 1, 1)
    small = set(reachable(VARIANTS[module](*base)))
    sizes = []
    # LogSize, MaxRecords, MaxLeaderEpoch (Replicas changes the state's shape)
    for i in range(1, 4):
        bigger = list(base)
        bigger[i] += 1
        large = set(reachable(VARIANTS[module](*bigger)))
        assert small <= large
        sizes.append(len(large))
    # a second log slot is useless with a single record; a second record or epoch is not
    assert sizes[0] == len(small) and sizes[1] > len(small) and sizes[2] > len(small)


BOUNDS = (2, 2, 2, 2)


def state(logs, replica_states, quorum, requests=(), next_record_id=0, next_leader_epoch=0):
    return KafkaState(
        tuple(tuple(LogRecord(*r) for r in log) for log in logs),
        tuple(ReplicaState(hw, e, leader, frozenset(isr)) for hw, e, leader, isr in replica_states),
        next_record_id, next_leader_epoch, frozenset(requests), quorum,
    )


def test_invariants_catch_hand_built_violations():
    quorum = QuorumState(1, 1, frozenset({1, 2}))
    fine = state([[(0, 0)], [(0, 0)]], [(1, 1, 1, {1, 2}), (1, 1, 1, {1, 2})], quorum, [quorum], 1,
                 2)
    assert type_ok(BOUNDS, fine) and weak_isr(fine) and strong_isr(fine) and log_matching(fine)
    # r1 leads with HW 1 but r2 lost offset 0: both ISR properties break
    lost = fine._replace(replica_log=(fine.replica_log[0], ()))
    assert not weak_isr(lost) and not strong_isr(lost) and log_matching(lost)
    # only the quorum ISR lacks the record: StrongIsr breaks, WeakIsr (r1's own ISR {1}) holds
    narrow = lost._replace(replica_state=(ReplicaState(1, 1, 1, frozenset({1})),
                                          lost.replica_state[1]))
    assert weak_isr(narrow) and not strong_isr(narrow)
    # same epoch at offset 1, different records below it
    diverged = fine._replace(replica_log=((LogRecord(0, 0), LogRecord(1, 1)),
                                          (LogRecord(1, 0), LogRecord(1, 1))))
    assert not log_matching(diverged)
    # same epoch at offset 0 but different ids
    assert not log_matching(fine._replace(replica_log=((LogRecord(0, 0),), (LogRecord(1, 0),))))
    # different epochs at the last common offset: nothing to match
    assert log_matching(fine._replace(replica_log=((LogRecord(0, 0),), (LogRecord(1, 1),))))
    assert not type_ok(BOUNDS, fine._replace(next_leader_epoch=4))
    assert not type_ok(BOUNDS, fine._replace(replica_log=((LogRecord(2, 0),), ())))
