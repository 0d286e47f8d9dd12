"""``kmc trace``: show, export, replay, draw and explain counterexample traces.

    kmc trace show FILE [--all] [--full] [--broker N] [--no-logs] [--no-legend]
    kmc trace export FILE --to itf|json|msgpack [-o OUT]
    kmc trace replay FILE [--protocol V] [--feature FLAG=on|off] [--const NAME=VALUE] [--all-protocols] [--json]
    kmc trace diagram FILE [--format mermaid|dot|svg] [-o OUT]
    kmc trace graph MODEL [--const ..] [--protocol V] [--feature ..] [--max-states N] [--trace FILE] [--format dot|svg]
                          [-o OUT]
    kmc trace explain FILE

FILE is a trace in any format kmc writes (``.json``, ``.itf.json``, ``.msgpack``); ``replay`` also
takes a hand-written scenario (see ``traces/scenarios/README.md``). Exit codes: 0 fine (replay: the
whole behaviour runs and every invariant holds), 12 replay breaks an invariant, 65 corrupt or
hostile file, 66 a trace of another model or configuration, 67 a step not enabled under the chosen
protocol, 64 bad options.
"""  # noqa: E501

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from rich.console import Console

from checker.trace import Trace
from spec.errors import NotReplayableError, UsageError, WrongModelError
from traces.io import FORMATS, load_trace, parse_json, read_bytes, save_trace

_SUFFIX = {"json": ".json", "itf": ".itf.json", "msgpack": ".msgpack"}


def _add_file_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", help="a trace file (.json, .itf.json, .msgpack)")
    parser.add_argument("--model", dest="expect_model", metavar="NAME",
                        help="fail (exit 66) unless the trace is of this model; for an ITF trace "
                             "written by Apalache or Quint, the model it is of")
    parser.add_argument("--protocol", help="for an ITF trace written by another tool: the protocol "
                                           "version (default: the model's default)")
    parser.add_argument("--const", action="append", default=[], metavar="NAME=VALUE",
                        help="for an ITF trace written by another tool: a constant of the model")


def add_parser(subparsers: Any) -> None:
    from kmc.options import add_model_options

    trace = subparsers.add_parser("trace", help="show, export, replay, draw and explain "
                                                "counterexample traces")
    sub = trace.add_subparsers(dest="trace_command", parser_class=type(trace))
    trace.set_defaults(func=lambda args: _usage(trace))

    show = sub.add_parser("show", help="step by step: each action and what it changed, with the "
                                       "broker logs")
    _add_file_options(show)
    show.add_argument("--full", action="store_true", help="every variable of every state, changes "
                                                          "highlighted")
    show.add_argument("--broker", type=int, metavar="N", help="only what concerns broker N")
    show.add_argument("--no-logs", action="store_true", help="do not draw the per-broker logs")
    show.add_argument("--all", action="store_true",
                      help="also show ghost variables and bound counters (hidden by default; the "
                           "legend names them)")
    show.add_argument("--no-legend", action="store_true", help="do not print the legend of "
                                                               "abbreviations")
    show.set_defaults(func=cmd_show)

    export = sub.add_parser("export", help="write the trace in another format (ITF JSON, our JSON, "
                                           "msgpack)")
    _add_file_options(export)
    export.add_argument("--to", choices=FORMATS, default="itf", help="output format (default itf)")
    export.add_argument("-o", "--output", metavar="OUT", help="output file (default: FILE with the "
                                                              "format's suffix)")
    export.set_defaults(func=cmd_export)

    replay = sub.add_parser("replay", help="check a trace or scenario step by step against a "
                                           "protocol version")
    replay.add_argument("file", help="a trace file or a hand-written scenario (.json)")
    replay.add_argument("--model", dest="expect_model", metavar="NAME",
                        help="fail (exit 66) unless it is of this model")
    replay.add_argument("--protocol", help="replay under this protocol version (default: the "
                                           "file's)")
    replay.add_argument("--feature", action="append", default=[], metavar="FLAG=on|off",
                        help="switch a feature flag")
    replay.add_argument("--const", action="append", default=[], metavar="NAME=VALUE",
                        help="override a constant")
    replay.add_argument("--invariant", action="append", default=[], metavar="NAME",
                        help="check only these (default all)")
    replay.add_argument("--all-protocols", action="store_true", help="replay under every protocol "
                                                                     "version of the model")
    replay.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    replay.add_argument("--quiet", action="store_true", help="print only the outcome")
    replay.set_defaults(func=cmd_replay)

    diagram = sub.add_parser("diagram", help="a sequence diagram of the messages (Mermaid, DOT or "
                                             "SVG)")
    _add_file_options(diagram)
    diagram.add_argument("--format", choices=("mermaid", "dot", "svg"), default="mermaid")
    diagram.add_argument("-o", "--output", metavar="OUT", help="write to a file instead of stdout")
    diagram.set_defaults(func=cmd_diagram)

    graph = sub.add_parser("graph", help="the explored state graph of a small run (DOT or SVG): "
                                         "each state with the action that reached it and a short "
                                         "summary")
    add_model_options(graph)
    graph.add_argument("--max-states", type=int, default=2000, help="refuse runs with more "
                                                                    "distinct states (default "
                                                                    "2000)")
    graph.add_argument("--trace", metavar="FILE", help="highlight this trace's path")
    graph.add_argument("--format", choices=("dot", "svg"), default="dot",
                       help="DOT source (default), or SVG laid out by Graphviz's dot program (exit "
                            "69 without it)")
    graph.add_argument("-o", "--output", metavar="OUT", help="write to a file instead of stdout")
    graph.set_defaults(func=cmd_graph)

    explain = sub.add_parser("explain", help="one paragraph: which invariant broke, where, between "
                                             "which brokers")
    _add_file_options(explain)
    explain.set_defaults(func=cmd_explain)


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 64


def _load(args: argparse.Namespace) -> tuple[Trace, Any]:
    from traces.io import read_document

    if args.protocol or args.const:
        if read_document(args.file).header.get("model"):
            raise UsageError("--protocol and --const are for ITF traces written by another tool; "
                             "this trace names its own configuration (use 'kmc trace replay "
                             "--protocol' to replay it under another)")
        return load_trace(args.file, model_name=args.expect_model, protocol=args.protocol,
                          constants=args.const)
    return load_trace(args.file, model_name=args.expect_model)


def _write(text: str, output: str | None) -> None:
    if output:
        from checker.safe_io import atomic_write

        atomic_write(output, text.encode(), "output")  # whole or not at all
        print(f"written to {output}")
    else:
        sys.stdout.write(text)


# -- show / export / diagram / explain -------------------------------------------------------------
def cmd_show(args: argparse.Namespace) -> int:
    from traces.render import print_trace
    from traces.views import broker_views

    trace, _ = _load(args)
    if args.broker is not None:
        views = broker_views(trace.initial)
        known = [v.broker for v in views] if views else None
        if known is not None and args.broker not in known:
            raise UsageError(f"no broker {args.broker} in this trace; brokers: "
                             f"{', '.join(map(str, known))}")
    print_trace(Console(), trace, full=args.full, broker=args.broker, logs=not args.no_logs,
                show_hidden=args.all, show_legend=not args.no_legend)
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    trace, _ = _load(args)
    output = args.output
    if not output:
        base = args.file
        for suffix in (".itf.json", ".json", ".msgpack"):
            if base.lower().endswith(suffix):
                base = base[: -len(suffix)]
                break
        output = base + _SUFFIX[args.to]
    if os.path.abspath(output) == os.path.abspath(args.file):
        raise UsageError(f"{output} is the input file; choose another with -o")
    save_trace(trace, output, args.to)
    print(f"written to {output}")
    return 0


def cmd_diagram(args: argparse.Namespace) -> int:
    from traces.diagram import DIAGRAM_FORMATS

    trace, _ = _load(args)
    _write(DIAGRAM_FORMATS[args.format](trace), args.output)
    return 0


def cmd_explain(args: argparse.Namespace) -> int:
    from invariants.registry import for_family
    from traces.explain import explain

    trace, model = _load(args)
    invariant = for_family(model.family).get(trace.invariant or "")
    print(explain(trace, invariant))
    return 0


# -- graph -----------------------------------------------------------------------------------------
def cmd_graph(args: argparse.Namespace) -> int:
    from invariants.registry import for_family
    from kmc.options import model_from_args
    from traces.diagram import render_svg_with_graphviz
    from traces.graph import explore, highlight_path, label_states, state_graph, to_dot

    model = model_from_args(args)
    result = explore(model, for_family(model.family).values(), max_states=args.max_states)
    if result.reason:
        raise UsageError(f"the run is too big to draw ({result.reason}); use smaller constants or "
                         "--max-states")
    graph = state_graph(result)
    if args.trace:
        trace, _ = load_trace(args.trace, model=model, model_name=model.name)
        highlight_path(graph, [hash(s) for s in trace.states])
    label_states(graph, model)
    source = to_dot(graph, model.name)
    _write(render_svg_with_graphviz(source) if args.format == "svg" else source, args.output)
    return 0


# -- replay ----------------------------------------------------------------------------------------
def _is_scenario_file(path: str) -> bool:
    data = read_bytes(path)
    if data.lstrip()[:1] != b"{":
        return False
    from traces.scenario import is_scenario

    return is_scenario(parse_json(path, data))


def _protocols(model_name: str) -> list[str | None]:
    from spec.registry import get_model_info

    info = get_model_info(model_name)
    return list(info.protocols) or [None]


def _run(args: argparse.Namespace, protocol: str | None) -> tuple[Any, Any]:
    """(result, expectation or None) of one replay."""
    from traces.replay import replay_scenario, replay_trace, scenario_model
    from traces.scenario import load_scenario

    if _is_scenario_file(args.file):
        scenario = load_scenario(args.file)
        if args.expect_model and scenario.model != args.expect_model:
            from spec.errors import WrongModelError

            raise WrongModelError(f"the scenario is of model {scenario.model!r}, not "
                                  f"{args.expect_model!r}")
        model = scenario_model(scenario, protocol, args.feature, args.const)
        result = replay_scenario(model, scenario, args.invariant)
        return result, scenario.expectation(model.protocol)
    trace, model = load_trace(args.file, protocol=protocol, features=args.feature,
                              model_name=args.expect_model, constants=args.const)
    return replay_trace(model, trace, args.invariant), None


def _result_json(result: Any, expected: Any) -> dict[str, Any]:
    return {
        "outcome": result.outcome,
        "model": result.model.name,
        "protocol": result.protocol,
        "steps": result.total_steps,
        "step": result.step,
        "action": None if result.action is None else str(result.action),
        "invariant": result.invariant.name if result.invariant else None,
        "explanation": result.explanation,
        "diverged_at": result.diverged_at,
        "why": result.why,
        "enabled_after": None if result.enabled_after is None
        else [str(a) for a in result.enabled_after],
        "expected": None if expected is None else expected.describe(),
        "as_expected": None if expected is None else result.matches(expected),
        "exit_code": int(result.exit_code),
    }


def cmd_replay(args: argparse.Namespace) -> int:
    from traces.render import print_trace

    console = Console(stderr=args.json)
    if args.all_protocols:
        if args.protocol:
            raise UsageError("--all-protocols and --protocol exclude each other")
        return _replay_all(args, console)
    result, expected = _run(args, args.protocol)
    if args.json:
        # one JSON object, the result (a blocked replay's "exit_code" says 67): the error line goes
        # to stderr only, not as a second object on stdout
        print(json.dumps(_result_json(result, expected)))
        if result.outcome == "blocked":
            console.print(f"kmc: error: {result.summary()}", markup=False, highlight=False,
                          soft_wrap=True)
        return int(result.exit_code)
    if not args.quiet:
        print_trace(console, result.trace)
    _print_outcome(console, result, expected)
    if result.outcome == "blocked":
        raise NotReplayableError(result.summary())
    return int(result.exit_code)


def _print_outcome(console: Console, result: Any, expected: Any) -> None:
    style = {"holds": "bold green", "violated": "bold red", "deadlock": "bold red",
             "blocked": "bold yellow"}[result.outcome]
    console.print(f"Replay: {result.summary()}.", style=style, markup=False, highlight=False)
    if result.explanation:
        console.print(result.explanation, markup=False, highlight=False)
    if result.diverged_at is not None:
        console.print(f"(From step {result.diverged_at} on, the states differ from the ones the "
                      "trace recorded.)",
                      markup=False)
    if expected is not None:
        verdict = "as expected" if result.matches(expected) else "NOT as expected"
        console.print(f"The scenario expects: {expected.describe()} -- {verdict}.", markup=False,
                      highlight=False, style="green" if result.matches(expected) else "bold red")


def _replay_all(args: argparse.Namespace, console: Console) -> int:
    from rich.table import Table

    if _is_scenario_file(args.file):
        from traces.scenario import load_scenario

        model_name = load_scenario(args.file).model
    else:
        from traces.io import read_document

        model_name = read_document(args.file).model_name
    rows = []
    for protocol in _protocols(model_name):
        try:
            result, expected = _run(args, protocol)
        except NotReplayableError as exc:  # an ambiguous scenario step under this version
            rows.append({"protocol": protocol, "outcome": "error", "detail": str(exc)})
            continue
        # the trace's own switches (or a scenario's flags) do not
        except (UsageError, WrongModelError) as exc:
            # exist in this version
            rows.append({"protocol": protocol, "outcome": "n/a", "detail": str(exc)})
            continue
        row = _result_json(result, expected)
        row["detail"] = result.summary()
        rows.append(row)
    if args.json:
        print(json.dumps({"model": model_name, "replays": rows}))
        return 0
    table = Table(title=f"{args.file} under every protocol of {model_name}")
    for column in ("protocol", "outcome", "step", "invariant", "expected"):
        table.add_column(column)
    for row in rows:
        expected = row.get("expected") or ""
        if row.get("as_expected") is not None:
            expected += " (ok)" if row["as_expected"] else " (NOT as expected)"
        table.add_row(str(row["protocol"]), row["outcome"],
                      str(row.get("step") if row.get("step") is not None else ""),
                      str(row.get("invariant") or ""), expected)
    console.print(table)
    return 0
