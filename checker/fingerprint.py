"""64-bit state fingerprints that are the same in every process and on every machine.

A state is a NamedTuple of ints, bools, tuples, frozensets and nested NamedTuples. CPython's hash
of exactly those types is a fixed function (integers modulo 2**61 - 1, tuples by an xxHash-style
combination, frozensets by a symmetric mix) that does not depend on PYTHONHASHSEED, so it is
deterministic across processes, Spark executors and 64-bit machines, and it is computed in C,
which keeps fingerprinting off the hot path's budget. What is randomised per process is the hash
of str and bytes (and, before Python 3.12, of None): ``validate_state`` rejects those inside a
state, with a message naming the fix. The test suite checks stability across interpreters started
with different PYTHONHASHSEED values.

One caveat of CPython's int hash: hash(-1) == hash(-2). ``validate_state`` therefore rejects
negative ints below -1 (use -1 for "none"), so two states can never collide that way.
"""

from __future__ import annotations

from typing import Any

from spec.errors import ModelError

_MASK = (1 << 64) - 1


def fingerprint(state: Any) -> int:
    """The 64-bit fingerprint of a (validated) state, as a signed int64."""
    return hash(state)


def fingerprint_unsigned(state: Any) -> int:
    return hash(state) & _MASK


def validate_state(state: Any, where: str = "state") -> None:
    """Raise ``ModelError`` if ``state`` holds a value whose hash is not stable across processes."""
    if isinstance(state, bool):
        return
    if isinstance(state, int):
        if state < -1:
            raise ModelError(f"{where} holds the int {state}; use ints >= -1 in states (-1 for "
                             "none)")
        return
    if isinstance(state, tuple):
        fields = getattr(state, "_fields", None)
        for i, item in enumerate(state):
            name = fields[i] if fields else f"[{i}]"
            validate_state(item, f"{where}.{name}" if fields else f"{where}{name}")
        return
    if isinstance(state, frozenset):
        for item in state:
            validate_state(item, f"{where}{{}}")
        return
    kind = type(state).__name__
    raise ModelError(
        f"{where} holds a {kind}; states may hold only ints, bools, tuples, frozensets and "
        "NamedTuples (encode names and enumerations as small ints)"
    )
