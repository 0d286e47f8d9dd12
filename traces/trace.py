"""The trace type lives in ``checker.trace``, beside the search result that carries it; this module
keeps the old import path working.
"""

from checker.trace import (  # noqa: F401
    Step,
    Trace,
)

__all__ = [
    "Step",
    "Trace",
]
