"""The options the subcommands share, in one place: the boundary rules of every parser
(``KmcParser``), the model, search, property and engine options of ``kmc check`` (``kmc matrix``,
``kmc trace`` and ``kmc explore`` take theirs from here), the argument types, and what a parsed
command line builds: the model, the invariants, the search options and the chosen engine with its
options."""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from collections.abc import Sequence
from typing import Any

from checker import engines
from checker.invariant import SAFETY, Invariant
from checker.search import SearchOptions
from invariants.registry import for_family
from spec.errors import NoInputError, UsageError
from spec.model import Model
from spec.registry import build_model

DEFAULT_TRACE_DIR = "kmc-traces"


#: shell completion of a file argument (what ``shtab.FILE`` is, without importing shtab to build the
#: parser)
FILE_COMPLETION = {"bash": "_shtab_compgen_files", "zsh": "_files", "tcsh": "f"}


#: options (by option string, e.g. ``"--foo"``) whose empty value means something; every other
#: option and positional argument of every subcommand refuses an empty or blank value (exit 64).
#: None does today.
EMPTY_VALUE_ALLOWED: frozenset[str] = frozenset()


class KmcParser(argparse.ArgumentParser):
    """argparse with kmc's boundary rules, for the top level and every subcommand (subparsers are
    built with this class, so an option added later gets them too): an error is one line and exit
    64, and a value given on the command line that is empty or only blanks is refused, never taken
    as the default (``--protocol ""`` is not the default protocol)."""

    def error(self, message: str) -> None:  # one line and the usage exit code, not argparse's 2
        raise UsageError(f"{message} (see '{self.prog} --help')")

    def _get_values(self, action: argparse.Action, arg_strings: list[str]) -> Any:
        # argparse calls this for the strings the command line gave an argument (never for its
        # default)
        if (action.nargs not in (argparse.PARSER, argparse.REMAINDER) and not EMPTY_VALUE_ALLOWED
            & set(action.option_strings)):
            if any(not text.strip() for text in arg_strings):
                raise argparse.ArgumentError(action, "an empty value means nothing here; give a "
                                                     "value or leave the argument out")
        return super()._get_values(action, arg_strings)


# -- options shared by the subcommands ------------------------------------------------------------
def add_model_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", help="model name (see 'kmc list'), e.g. two-phase, kafka, "
                                      "tla:Kip320")
    parser.add_argument("--const", action="append", default=[], metavar="NAME=VALUE",
                        help="set a constant (bound)")
    parser.add_argument("--protocol", help="protocol version, for models that have them (see 'kmc "
                                           "list')")
    parser.add_argument(
        "--feature", action="append", default=[], metavar="FLAG=on|off",
        help="switch one feature flag of the protocol"
    )


def add_search_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--invariant", action="append", default=[], metavar="NAME",
                        help="check only these (default all)")
    add_property_option(parser)
    parser.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    parser.add_argument("--continue", dest="keep_going", action="store_true",
                        help="do not stop at the first violation: report the shortest trace of "
                             "every violated invariant")
    parser.add_argument("-deadlock", "--no-deadlock", dest="deadlock", action="store_false",
                        default=None, help="do not check for deadlock (as TLC's -deadlock): by "
                             "default a reachable state with no successor is reported (exit 11), "
                             "unless the model says its bounds end in such states")
    parser.add_argument("--deadlock", dest="deadlock_flag", action="store_true",
                        help="check for deadlock even for a model whose bounds end in states with "
                             "nothing to do (kafka)")
    parser.add_argument("--coverage", action="store_true",
                        help="count the successors each action (with its parameters) generated and "
                             "list the actions that never fired (local engine)")
    parser.add_argument("--max-states", type=positive_int, help="distinct-state budget (then: "
                                                                "undetermined)")
    parser.add_argument("--max-seconds", type=positive_float, help="time budget in seconds (then: "
                                                                   "undetermined)")
    parser.add_argument("--max-depth", type=positive_int, help="depth bound (then: undetermined if "
                                                               "states remain)")
    parser.add_argument("--max-memory", type=positive_float, metavar="MB",
                        help="memory budget in MB (default 80%% of RAM; then: undetermined and a "
                             "checkpoint)")
    parser.add_argument("--symmetry", action="store_true", help="reduce by symmetry over "
                                                                "interchangeable ids")
    parser.add_argument("--reduce", choices=reduce_choices(), default="none",
                        help="reduce the safety search: dead, drop messages whose delivery "
                             f"can only be a no-op ({reductions_help()}); default none")
    parser.add_argument("--shortest", action="store_true",
                        help="with --reduce dead: after a violation, search fully up to its depth "
                             "for a shortest trace")
    add_engine_options(parser, default=None,
                       engine_help=" (default local; parallel with --workers N; bfs: the local "
                                   "engine's former name)")
    parser.add_argument("--checkpoint", metavar="FILE", help="write a checkpoint here "
                                                             "(periodically, on Ctrl-C, on budget)")
    parser.add_argument("--checkpoint-every", type=positive_float, default=300.0, metavar="SECONDS",
                        help="seconds between checkpoints (spark: between writes of the levels run "
                             "on the driver; the executors' levels are written as they end)")
    parser.add_argument("--resume", metavar="FILE",
                        help="continue the run saved in this checkpoint").complete = FILE_COMPLETION
    parser.add_argument("--trace-dir", default=DEFAULT_TRACE_DIR, help="where counterexample "
                                                                       "traces are saved")
    parser.add_argument("--quiet", action="store_true", help="no live progress display")


def add_property_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--property", action="append", default=[], metavar="MODULE:FUNCTION",
                        help="check this function of a state (or of a state and the model) like an "
                             "invariant, e.g. my_props:no_two_leaders; with --property and no "
                             "--invariant only the properties are checked")


def worker_count(text: str) -> int:
    """``--workers N`` or ``--workers auto`` (one a core). A count above the cores this process may
    use is capped to them, with one warning line: more processes than cores make no search faster
    (each level waits for its slowest worker), and a typo (``--workers 1000``) would otherwise fork
    a thousand interpreters and take the machine. Every engine gives the same states, verdicts and
    traces at any worker count, so the cap changes only the time; ``kmc check``, ``kmc matrix`` and
    ``kmc simulate`` all parse ``--workers`` here."""
    from checker.parallel import available_cores

    # the CPU affinity, not os.cpu_count(): a container or taskset may allow fewer
    cores = available_cores()
    if text.strip().lower() == "auto":
        return cores
    try:
        count = positive_int(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError("expected a positive integer or auto, not "
                                         f"{text!r}") from None
    if count > cores:
        print(f"kmc: warning: --workers {count} is more than the {cores} "
              f"core{'s' if cores != 1 else ''} this process may use; running {cores}",
              file=sys.stderr)
        return cores
    return count


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, not {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, not {text!r}")
    return value


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, not {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number, not {text!r}")
    return value


def model_from_args(args: argparse.Namespace) -> Model:
    return build_model(args.model, args.const, args.protocol, args.feature)


def select_invariants(model: Model, names: Sequence[str],
                      properties: Sequence[str] = ()) -> list[Invariant]:
    """The invariants named (default: every safety invariant of the model) and the ``--property``
    functions; with properties and no names, only the properties."""
    from checker.properties import load_properties

    available = for_family(model.family)
    user = [prop.bind(model) for prop in load_properties(properties, taken=available)]
    if not names:  # liveness properties build the whole state graph: only when asked for by name
        return user or [inv for inv in available.values() if inv.kind == SAFETY and inv.default]
    chosen = []
    for name in names:
        if name not in available:
            known = ", ".join(available) or "none"
            raise UsageError(f"model {model.name} has no invariant {name!r}; its invariants: "
                             f"{known}")
        chosen.append(available[name])
    return chosen + user


def steerable_defaults(invariants: list[Invariant]) -> tuple[list[Invariant], str | None]:
    """``--engine directed`` without ``--invariant``: the default invariants that declare a
    distance to steer by (``Invariant.distance``) and one line naming them and the ones left out;
    all of them and no line when none declares one (the engine then refuses, naming one) or every
    one does."""
    steerable = [inv for inv in invariants if inv.distance is not None]
    left_out = [inv.name for inv in invariants if inv.distance is None]
    if not steerable or not left_out:
        return invariants, None
    return steerable, (f"note: --engine directed checks the {len(steerable)} default invariants "
                       f"that declare a distance to steer by "
                       f"({', '.join(inv.name for inv in steerable)}), not the {len(left_out)} "
                       f"that declare none ({', '.join(left_out)}): check those with the "
                       "breadth-first engine")


def steered_options(args: argparse.Namespace,
                    options: SearchOptions) -> tuple[SearchOptions, str | None]:
    """``options`` for the engine ``args`` chose: on the directed engine without ``--invariant`` or
    ``--property``, the default invariants that declare a distance (``steerable_defaults``), and
    the line that says so, to print once the search has run (a refusal stays one line)."""
    if args.invariant or args.property or not engines.get_engine(args.engine).directed:
        return options, None
    invariants, note = steerable_defaults(options.invariants)
    return dataclasses.replace(options, invariants=invariants), note


def search_options(args: argparse.Namespace, model: Model, progress: Any = None) -> SearchOptions:
    checkpoint = args.checkpoint or args.resume
    if args.deadlock_flag and args.deadlock is False:
        raise UsageError("--deadlock and -deadlock contradict each other; -deadlock (or "
                         "--no-deadlock) turns the deadlock check off, --deadlock turns it on")
    # TLC checks deadlock unless -deadlock; a model whose bounded runs end in states with nothing
    # left to do (every record produced, a broker down past the crash bound) says so with
    # deadlock_by_default = False
    check_deadlock = True if args.deadlock_flag else args.deadlock
    if check_deadlock is None:
        check_deadlock = model.deadlock_by_default
    if args.resume:
        require_input(args.resume, "checkpoint", "--resume")
    if args.coverage and args.resume:
        raise UsageError("--coverage counts a whole run; it cannot continue a checkpoint's counts, "
                         "drop --resume")
    return SearchOptions(
        invariants=select_invariants(model, args.invariant, args.property),
        stop_at_first=not args.keep_going,
        check_deadlock=check_deadlock,
        coverage=args.coverage,
        max_states=args.max_states,
        max_seconds=args.max_seconds,
        max_depth=args.max_depth,
        max_memory_mb=args.max_memory,
        symmetry=args.symmetry,
        reduce=getattr(args, "reduce", "none"),
        shortest=getattr(args, "shortest", False),
        kernel=getattr(args, "kernel", "off"),
        checkpoint_path=checkpoint,
        checkpoint_every=args.checkpoint_every,
        resume_from=args.resume,
        progress=progress,
    )


def require_input(path: str, what: str, option: str) -> None:
    """A missing or unreadable input file: one line and exit 66."""
    if "://" in path:  # a URL (hdfs://, s3a://, file://) is the engine's to open
        return
    if not os.path.exists(path):
        raise NoInputError(f"{what} {path} does not exist; check the path given to {option}")
    if not os.access(path, os.R_OK):
        raise NoInputError(f"{what} {path} cannot be read (permission denied)")


#: the argument type of each kind of engine option (``checker.engines.EngineFlag.kind``)
_ENGINE_FLAG_TYPES = {"workers": worker_count, "int": int, "str": str}


def engine_flag_dests() -> dict[str, str]:
    """The command line's engine options, from the engines' records (``checker.engines.ENGINES``):
    flag -> its argparse destination. Each engine's record says which of them it reads; the others
    are refused for it."""
    return {flag: flag[2:].replace("-", "_") for flag in engines.engine_flags()}


def reduce_choices() -> tuple[str, ...]:
    """``--reduce``'s values: none and every reduction an engine's record says it runs."""
    return ("none",
            *sorted({method for engine in engines.ENGINES.values() for method in engine.reductions},
                    reverse=True))


def reductions_help() -> str:
    """Which engines run each reduction, from their records: ``dead: local, parallel``."""
    return "; ".join(f"{method}: " + ", ".join(e.name for e in engines.ENGINES.values()
                                               if method in e.reductions)
                     for method in reduce_choices()[1:])


def add_engine_options(parser: argparse.ArgumentParser, default: str | None, engine_help: str = "",
                       workers_help: str | None = None) -> None:
    """``--engine`` and every engine's own options, from the engines' records (``kmc check`` and
    ``kmc matrix``); ``workers_help`` is the matrix's own meaning of ``--workers``."""
    parser.add_argument("--engine", default=default, help="search engine: "
                        + ", ".join(engines.ENGINES) + engine_help)
    for flag in engines.engine_flags().values():
        parser.add_argument(flag.flag, type=_ENGINE_FLAG_TYPES[flag.kind], default=None,
                            metavar=flag.metavar, choices=flag.choices,
                            help=workers_help if flag.flag == "--workers" and workers_help
                            else flag.help)


#: ``--engine bfs``: the local engine's name until December 2026, in the tutorials and in the
#: command ``kmc check`` printed for a shortest counterexample; still accepted on the command line,
#: as the local engine
FORMER_ENGINE_NAMES = {"bfs": "local"}


def chosen_engine(args: argparse.Namespace, workers_for_engine: bool = True) -> tuple[str, Any]:
    """The engine asked for and its options, built from the engine options given; one line (exit 64)
    for an option the engine cannot honour. Without ``--engine``: ``--workers N`` (N > 1, or auto on
    more than one core) is the parallel engine, else the local one. ``workers_for_engine`` False:
    ``--workers`` is the caller's own (``kmc matrix --engine local``: searches at once) and is not
    an engine option."""
    given = {flag: getattr(args, dest) for flag, dest in engine_flag_dests().items()
             if getattr(args, dest, None) is not None}
    if not workers_for_engine:
        given.pop("--workers", None)
    name = FORMER_ENGINE_NAMES.get(args.engine, args.engine)
    if name is None:
        name = "parallel" if given.get("--workers", 1) != 1 else "local"
    if name == "local" and given.get("--workers") == 1:
        del given["--workers"]  # one process: what the local engine is
    return name, engines.engine_options(name, given)
