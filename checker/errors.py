"""User-facing errors and exit codes live in ``spec.errors`` (the bottom layer, so the model can raise
them); this module keeps the old import path working.
"""

from spec.errors import (  # noqa: F401
    BadFileError,
    CorruptDataError,
    EnvironmentMissingError,
    ExitCode,
    KmcError,
    ModelError,
    NoInputError,
    NotReplayableError,
    OutputError,
    UsageError,
    WrongModelError,
)

__all__ = [
    "ExitCode",
    "KmcError",
    "UsageError",
    "BadFileError",
    "CorruptDataError",
    "WrongModelError",
    "NoInputError",
    "OutputError",
    "NotReplayableError",
    "EnvironmentMissingError",
    "ModelError",
]
