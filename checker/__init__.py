"""kmc's checker package.

When this process is the ``kmc`` command (the console script, ``python3 -m checker`` or ``python3 -m
checker.cli``), a Ctrl-C that arrives while Python is still importing kmc, before ``checker.cli.main``
can catch it, ends the same way as one after: one line and exit 130, no traceback. This is the first
kmc code either entry point runs (the package is imported before ``checker.cli`` or ``checker.__main__``),
and it imports nothing slow before the handling is in place.

A Ctrl-C before it, while the interpreter itself starts (before Python installs its own SIGINT handler,
and while ``site`` runs the environment's ``.pth`` files), is Python's to handle, not kmc's: the process
ends by the signal (a shell reports 130) or Python reports a failed start-up. A process started with
SIGINT blocked gets it unblocked here, once the handling is in place, so a Ctrl-C that came meanwhile
is answered at once (an ignored SIGINT, a background job's, stays ignored).

Imported as a library, this package changes nothing.
"""

import os as _os
import sys as _sys


def _is_kmc_command() -> bool:
    argv = getattr(_sys, "orig_argv", [])
    as_module = any(a == "-m" and b in ("checker.cli", "checker") for a, b in zip(argv, argv[1:], strict=False))
    return as_module or _os.path.basename(_sys.argv[0] if _sys.argv else "") == "kmc"


def _exit_on_interrupt(kind, value, tb, _previous=_sys.excepthook):  # noqa: ANN001, ANN202
    if issubclass(kind, KeyboardInterrupt):
        _sys.stderr.write("kmc: error: interrupted while starting (nothing was written)\n")
        _sys.stderr.flush()
        _os._exit(130)
    _previous(kind, value, tb)


if _is_kmc_command():
    _sys.excepthook = _exit_on_interrupt
    import signal as _signal  # after the hook: a Ctrl-C during this import is already answered

    if hasattr(_signal, "pthread_sigmask"):
        _signal.pthread_sigmask(_signal.SIG_UNBLOCK, {_signal.SIGINT})
