"""The invariant type lives in ``checker.invariant`` (the engines check invariants, so the type sits
below them); this module keeps the old import path working for property modules.
"""

from checker.invariant import (  # noqa: F401
    LIVENESS,
    SAFETY,
    Invariant,
)

__all__ = [
    "SAFETY",
    "LIVENESS",
    "Invariant",
]
