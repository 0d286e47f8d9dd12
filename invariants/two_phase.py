"""TCConsistent: no resource manager has committed while another has aborted."""

from __future__ import annotations

from checker.invariant import Invariant
from invariants.registry import register
from spec.two_phase import ABORTED, COMMITTED


def tc_consistent(state) -> bool:
    rms = state.rm_state
    return not (ABORTED in rms and COMMITTED in rms)


def _explain(state) -> str:
    aborted = [i + 1 for i, v in enumerate(state.rm_state) if v == ABORTED]
    committed = [i + 1 for i, v in enumerate(state.rm_state) if v == COMMITTED]
    return f"TCConsistent broken: RM {committed} committed while RM {aborted} aborted"


register(
    "two-phase",
    Invariant(
        "TCConsistent",
        "no resource manager has committed while another has aborted",
        tc_consistent,
        explain=_explain,
    ),
)
