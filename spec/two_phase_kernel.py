"""Two-phase commit's compiled kernel (``two_phase_kernel.c``): how a ``TwoPhaseState`` packs into
bytes and back, and the action codes' names. The C file follows ``TwoPhase.successors`` rule for
rule."""

from __future__ import annotations

import os
from functools import partial
from typing import Any

from spec.model import Action, KernelSource

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "two_phase_kernel.c")
#: the action kinds of the C file, in its order (the code is kind << 8 | rm)
KINDS = ("TMCommit", "TMAbort", "TMRcvPrepared", "RMPrepare", "RMChooseToAbort", "RMRcvCommitMsg",
         "RMRcvAbortMsg")
MAX_RM = 12


def pack(s: Any) -> bytes:
    """rm[i] = rmState << 2 | tmPrepared << 1 | msgPrepared, then tmState, the Commit and Abort
    flags."""
    per_rm = (r << 2 | tp << 1 | mp for r, tp, mp in zip(s.rm_state, s.tm_prepared, s.msg_prepared,
                                                         strict=True))
    return bytes((*per_rm, s.tm_state, s.msg_commit, s.msg_abort))


def unpack(data: bytes, state_type: type) -> Any:
    """The ``state_type`` (``spec.two_phase.TwoPhaseState``, passed in: the model imports this
    module) of ``data``."""
    per_rm, (tm_state, commit, abort) = data[:-3], data[-3:]
    return state_type(tuple(b >> 2 for b in per_rm), tm_state, tuple(bool(b & 2) for b in per_rm),
                         tuple(bool(b & 1) for b in per_rm), bool(commit), bool(abort))


def action(code: int) -> Action:
    kind, rm = KINDS[code >> 8], code & 0xFF
    return Action(kind) if rm == 0 else Action(kind, (("rm", rm),))


def kernel(rm: int, commit_guard: bool, state_type: type) -> KernelSource:
    return KernelSource(
        source=SOURCE,
        defines=(("KM_RM", rm), ("KM_COMMIT_GUARD", int(commit_guard))),
        state_bytes=rm + 3,
        pack=pack,
        unpack=partial(unpack, state_type=state_type),
        action=action,
        invariants=("TCConsistent",),
        symmetry=True,
        unsupported=None if 1 <= rm <= MAX_RM else f"RM={rm} is outside the kernel's 1..{MAX_RM}",
    )


