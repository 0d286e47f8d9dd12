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
    NO_INPUT = 66  # a missing or unreadable input file (an alias: the same code as WRONG_MODEL)
    NOT_REPLAYABLE = 67  # a trace step that is not enabled under the chosen protocol
    ENVIRONMENT = 69  # something the engine needs is missing (Java, PySpark)
    INTERRUPTED = 130  # stopped with Ctrl-C (a checkpoint was written when asked for)


class KmcError(Exception):
    """Base of every user-facing error; ``code`` is the process exit code."""

    code: ExitCode = ExitCode.USAGE


class UsageError(KmcError):
    code = ExitCode.USAGE


class BadFileError(KmcError):
    code = ExitCode.BAD_FILE


class WrongModelError(KmcError):
    code = ExitCode.WRONG_MODEL


class NotReplayableError(KmcError):
    code = ExitCode.NOT_REPLAYABLE


class EnvironmentMissingError(KmcError):
    code = ExitCode.ENVIRONMENT


class ModelError(KmcError):
    """A model broke the interface contract (e.g. a string inside a state)."""

    code = ExitCode.USAGE


class NoInputError(KmcError):
    """A file the user named is missing or unreadable (sysexits' EX_NOINPUT)."""

    code = ExitCode.NO_INPUT
