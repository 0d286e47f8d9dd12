"""kmc's command-line package: the front ends on top of spec, checker, invariants and traces.

When this process is the ``kmc`` command (the console script, ``python3 -m kmc`` or ``python3 -m
kmc.cli``), a Ctrl-C that arrives while Python is still importing kmc, before ``kmc.cli.main``
can catch it, ends the same way as one after: one line and exit 130, no traceback. This is the first
kmc code either entry point runs (the package is imported before ``kmc.cli`` or ``kmc.__main__``),
and it imports nothing slow before the handling is in place.

A Ctrl-C before it, while the interpreter itself starts (before Python installs its own SIGINT
handler, and while ``site`` runs the environment's ``.pth`` files), is Python's to handle, not
kmc's: the process ends by the signal (a shell reports 130) or Python reports a failed start-up. A
process started with SIGINT blocked gets it unblocked here, once the handling is in place, so a
Ctrl-C that came meanwhile is answered at once (an ignored SIGINT, a background job's, stays
ignored).

While kmc starts, SIGINT is noted before it becomes Python's KeyboardInterrupt: a Ctrl-C that lands
inside a C extension's import (numpy turns it into an ImportError) or in an optional import that
swallows it still ends the command with that one line and 130. ``started()``, the first thing
``kmc.cli.main`` does, puts Python's own handler back.

Imported as a library, this package changes nothing.
"""

import os as _os
import sys as _sys


def _is_kmc_command() -> bool:
    argv = getattr(_sys, "orig_argv", [])
    as_module = any(a == "-m" and b in ("kmc.cli", "kmc")
                    for a, b in zip(argv, argv[1:], strict=False))
    return as_module or _os.path.basename(_sys.argv[0] if _sys.argv else "") == "kmc"


#: a Ctrl-C came while kmc was starting: an import it interrupted inside a C extension may surface
#: as another exception (numpy reports "numpy._core.umath failed to import"), or be swallowed by an
#: optional import
_interrupted_while_starting = False


def _note_interrupt(signum, frame):  # noqa: ANN001, ANN202
    """SIGINT while kmc starts: noted, then Python's own KeyboardInterrupt."""
    global _interrupted_while_starting
    _interrupted_while_starting = True
    raise KeyboardInterrupt


def started() -> None:
    """The command line runs (``kmc.cli.main``): Ctrl-C is Python's default KeyboardInterrupt again
    (the handlers that defer it, ``safe_io.interrupts_deferred``, expect that one), and one that
    came while kmc was starting, whatever became of its KeyboardInterrupt, ends the command as an
    interrupt."""
    import signal

    if signal.getsignal(signal.SIGINT) is _note_interrupt:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if _interrupted_while_starting:
        raise KeyboardInterrupt


def _exit_on_interrupt(kind, value, tb, _previous=_sys.excepthook):  # noqa: ANN001, ANN202
    if issubclass(kind, KeyboardInterrupt) or _interrupted_while_starting:
        _sys.stderr.write("kmc: error: interrupted while starting (nothing was written)\n")
        _sys.stderr.flush()
        _os._exit(130)
    _previous(kind, value, tb)


if _is_kmc_command():
    _sys.excepthook = _exit_on_interrupt
    import signal as _signal  # after the hook: a Ctrl-C during this import is already answered

    # an ignored SIGINT stays ignored
    if _signal.getsignal(_signal.SIGINT) is _signal.default_int_handler:
        _signal.signal(_signal.SIGINT, _note_interrupt)

    if hasattr(_signal, "pthread_sigmask"):
        _signal.pthread_sigmask(_signal.SIG_UNBLOCK, {_signal.SIGINT})
