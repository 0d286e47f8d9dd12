"""Lamport's two-phase commit (TwoPhase.tla in tlaplus/Examples), with n resource managers.

The cross-tool example: TLC 2.18 reports 288 distinct states for RM=3, 8,832 for RM=5 and
296,448 (2,744,706 generated, depth 23) for RM=7. ``commit_guard=off`` removes the guard
``tmPrepared = RM`` from TMCommit, a seeded bug that breaks TCConsistent in three steps.

Encoding: resource-manager states are small ints; the set of messages is split into the
"Prepared" messages (one flag per RM) and the two broadcast flags, which is the same set.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

from spec.model import Action, Model
from spec.registry import Constant, ModelInfo, register

WORKING, PREPARED, COMMITTED, ABORTED = 0, 1, 2, 3
RM_STATE_NAMES = ("working", "prepared", "committed", "aborted")
TM_INIT, TM_DONE = 0, 1  # TLC's tmState "init" / "done" (the TM never enters another state)


class TwoPhaseState(NamedTuple):
    rm_state: tuple[int, ...]  # rmState[r]: 0 working, 1 prepared, 2 committed, 3 aborted
    tm_state: int  # 0 init, 1 done
    tm_prepared: tuple[bool, ...]  # r \in tmPrepared
    msg_prepared: tuple[bool, ...]  # [type |-> "Prepared", rm |-> r] \in msgs
    msg_commit: bool  # [type |-> "Commit"] \in msgs
    msg_abort: bool  # [type |-> "Abort"] \in msgs


class TwoPhase(Model):
    name = "two-phase"
    family = "two-phase"
    #: resource managers are interchangeable: ``--symmetry`` sorts them (up to RM! fewer states)
    has_symmetry = True

    def __init__(self, rm: int = 3, commit_guard: bool = True) -> None:
        self.rm = rm
        self.commit_guard = commit_guard
        self.constants = {"RM": rm, "commit_guard": commit_guard}
        rms = range(1, rm + 1)
        # Actions are built once: successor generation allocates only the successor states.
        self._tm_commit = Action("TMCommit")
        self._tm_abort = Action("TMAbort")
        self._per_rm = [
            (
                Action("TMRcvPrepared", (("rm", r),)),
                Action("RMPrepare", (("rm", r),)),
                Action("RMChooseToAbort", (("rm", r),)),
                Action("RMRcvCommitMsg", (("rm", r),)),
                Action("RMRcvAbortMsg", (("rm", r),)),
            )
            for r in rms
        ]

    def init_states(self) -> list[TwoPhaseState]:
        n = self.rm
        no = (False,) * n
        return [TwoPhaseState((WORKING,) * n, TM_INIT, no, no, False, False)]

    def state_types(self) -> tuple[type, ...]:
        return (TwoPhaseState,)

    def kernel(self):
        """The compiled kernel (``two_phase_kernel.c``, which follows ``successors`` rule for
        rule)."""
        from spec.two_phase_kernel import kernel

        return kernel(self.rm, self.commit_guard, TwoPhaseState)

    def encode_state(self, state: TwoPhaseState) -> TwoPhaseState:
        return state  # tuples of ints and bools: msgpack packs it as it is

    def decode_state(self, plain: tuple) -> TwoPhaseState:
        return _tuple_new(TwoPhaseState, plain)

    def canonical(self, s: TwoPhaseState) -> TwoPhaseState:
        """Sort the resource managers by (rmState, in tmPrepared, Prepared sent): every RM's whole
        state is its own three attributes, so the sorted form is an exact canonical form."""
        per_rm = sorted(zip(s.rm_state, s.tm_prepared, s.msg_prepared, strict=True))
        rm_state, tm_prepared, msg_prepared = zip(*per_rm, strict=True)
        return _tuple_new(TwoPhaseState, (rm_state, s.tm_state, tm_prepared, msg_prepared,
                                          s.msg_commit, s.msg_abort))

    def permute(self, s: TwoPhaseState, perm: tuple[int, ...]) -> TwoPhaseState:
        """RM i renamed perm[i] (what ``canonical`` picks the least of; used by the tests)."""
        from spec.symmetry import reindex

        return s._replace(rm_state=reindex(s.rm_state, perm),
                          tm_prepared=reindex(s.tm_prepared, perm),
                          msg_prepared=reindex(s.msg_prepared, perm))

    def successors(self, s: TwoPhaseState) -> Iterator[tuple[Action, TwoPhaseState]]:
        # The hot path of every check: tuple.__new__ builds the NamedTuple without the Python-level
        # __new__ wrapper, the per-RM actions are prebuilt and the successors come as one list.
        rm_state, tm_state, tm_prepared, msg_prepared, msg_commit, msg_abort = s
        new, cls = _tuple_new, TwoPhaseState
        out = []
        append = out.append
        tm_init = tm_state == TM_INIT
        if tm_init:
            if not self.commit_guard or False not in tm_prepared:
                append((self._tm_commit,
                        new(cls, (rm_state, TM_DONE, tm_prepared, msg_prepared, True, msg_abort))))
            append((self._tm_abort,
                    new(cls, (rm_state, TM_DONE, tm_prepared, msg_prepared, msg_commit, True))))
        i = 0
        for rcv_prepared, prepare, choose_abort, rcv_commit, rcv_abort in self._per_rm:
            if tm_init and msg_prepared[i]:
                new_prepared = tm_prepared[:i] + _TRUE + tm_prepared[i + 1 :]
                append((rcv_prepared,
                        new(cls, (rm_state, tm_state, new_prepared, msg_prepared, msg_commit,
                                  msg_abort))))
            if rm_state[i] == WORKING:
                head, tail = rm_state[:i], rm_state[i + 1 :]
                msgs = msg_prepared[:i] + _TRUE + msg_prepared[i + 1 :]
                append((prepare, new(cls, (head + _PREPARED + tail, tm_state, tm_prepared, msgs,
                                           msg_commit, msg_abort))))
                append((choose_abort,
                        new(cls, (head + _ABORTED + tail, tm_state, tm_prepared, msg_prepared,
                                  msg_commit, msg_abort))))
            if msg_commit:
                rms = rm_state[:i] + _COMMITTED + rm_state[i + 1 :]
                append((rcv_commit,
                        new(cls, (rms, tm_state, tm_prepared, msg_prepared, msg_commit,
                                  msg_abort))))
            if msg_abort:
                rms = rm_state[:i] + _ABORTED + rm_state[i + 1 :]
                append((rcv_abort,
                        new(cls, (rms, tm_state, tm_prepared, msg_prepared, msg_commit,
                                  msg_abort))))
            i += 1
        return iter(out)


_tuple_new = tuple.__new__
_TRUE, _PREPARED, _COMMITTED, _ABORTED = (True,), (PREPARED,), (COMMITTED,), (ABORTED,)


def _build(constants: dict) -> TwoPhase:
    return TwoPhase(rm=constants["RM"], commit_guard=constants["commit_guard"])


register(
    ModelInfo(
        name="two-phase",
        description="Lamport's two-phase commit (TwoPhase.tla), the cross-tool example",
        constants=(
            Constant("RM", 3, "number of resource managers", int, minimum=1, maximum=12),
            Constant("commit_guard", True, "TMCommit waits for every RM to be prepared (off seeds "
                     "a bug)", bool),
        ),
        build=_build,
    )
)
