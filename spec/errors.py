"""User-facing errors and the exit codes of ``kmc``.

Every error a user can cause has its own exception type; the command line turns each into one
line on stderr and its exit code, never a traceback. Codes 11-13 follow TLC.
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    HOLDS = 0  # every checked property holds (the search was exhaustive)
    DEADLOCK = 11  # a reachable state has no successor (only with --deadlock)
    SAFETY_VIOLATED = 12  # an invariant is violated
    LIVENESS_VIOLATED = 13  # a liveness property is violated
    UNDETERMINED = 20  # a budget (states, time, depth, memory) ran out first: not a pass
    USAGE = 64  # bad option, unknown model / protocol / invariant, nonsense bounds
    BAD_FILE = 65  # a corrupt, truncated or hostile trace, scenario or checkpoint file
    WRONG_MODEL = 66  # a trace or checkpoint made for a different model or configuration
    NO_INPUT = 66  # an input file that does not exist or cannot be read (sysexits' EX_NOINPUT)
    NOT_REPLAYABLE = 67  # a trace step that is not enabled under the chosen protocol
    ENVIRONMENT = 69  # something the engine needs is missing (Java, PySpark)
    CANNOT_CREATE = 73  # an output file (trace, export, checkpoint) cannot be created there
    IO_ERROR = 74  # writing an output file failed (disk full, I/O error)
    INTERRUPTED = 130  # stopped with Ctrl-C (a checkpoint was written when asked for)


class KmcError(Exception):
    """Base of every user-facing error; ``code`` is the process exit code."""

    code: ExitCode = ExitCode.USAGE


class UsageError(KmcError):
    code = ExitCode.USAGE


class BadFileError(KmcError):
    code = ExitCode.BAD_FILE


class CorruptDataError(BadFileError):
    """Encoded data that is not even well-formed (truncated, nested without end): never "another
    model"."""


class WrongModelError(KmcError):
    code = ExitCode.WRONG_MODEL


class NoInputError(KmcError):
    """An input file is missing or unreadable (as opposed to readable but wrong:
    ``BadFileError``)."""

    code = ExitCode.NO_INPUT


class OutputError(KmcError):
    """An output file cannot be created (73) or written (74); no partial file is left behind."""

    def __init__(self, message: str, cannot_create: bool = True) -> None:
        super().__init__(message)
        self.code = ExitCode.CANNOT_CREATE if cannot_create else ExitCode.IO_ERROR


class NotReplayableError(KmcError):
    code = ExitCode.NOT_REPLAYABLE


class EnvironmentMissingError(KmcError):
    code = ExitCode.ENVIRONMENT


class ModelError(KmcError):
    """A model broke the interface contract (e.g. a string inside a state)."""

    code = ExitCode.USAGE
