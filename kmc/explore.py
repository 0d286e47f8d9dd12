"""``kmc explore``: step through a model in the browser, or read a trace or scenario as a story.

    kmc explore MODEL [--protocol V] [--const NAME=VALUE]... [--feature FLAG=on|off]...
    kmc explore --trace FILE              a trace (any format kmc writes) or a hand-written scenario
    kmc explore MODEL --trace FILE [--protocol V] [--const ..]   an ITF trace another tool wrote (as kmc trace show)
        [--host H] [--port N] [--open] [--max-states N] [--log]

Serves one page on 127.0.0.1 and a free port (printed with the URL; ``--host`` changes the address,
with a warning: the page shows the model's states and lets whoever reaches it run searches on this
machine). Ctrl-C stops the server: exit 0. Bad options, an unknown model or a bad trace: one line
and the usual exit codes (64 usage, 65 a corrupt file, 66 a trace of another model, 67 a trace step
not enabled).
"""  # noqa: E501

from __future__ import annotations

import argparse
import sys
from typing import Any

from spec.errors import UsageError


def is_loopback(host: str) -> bool:
    """Whether ``host`` is this machine only (127.0.0.0/8, ::1, localhost): no warning then."""
    import ipaddress

    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:  # a host name: it may resolve to anything
        return False


def add_parser(subparsers: Any) -> None:
    from kmc.options import FILE_COMPLETION
    from traces.explore.runner import DEFAULT_MAX_STATES

    explore = subparsers.add_parser(
        "explore", help="step through a model's protocol in the browser; read a trace or scenario "
                        "as a story",
        description="Start a local web page that shows the current state broker by broker, its "
                    "enabled actions with the rules they follow, every property's status and the "
                    "path as a sequence diagram; the path is in the URL. Ctrl-C stops it (exit 0).")
    explore.add_argument("model", nargs="?", help="model name (see 'kmc list'), e.g. kafka")
    explore.add_argument("--const", action="append", default=[], metavar="NAME=VALUE",
                         help="set a constant (bound)")
    explore.add_argument("--protocol", help="protocol version, for models that have them (see 'kmc "
                                            "list')")
    explore.add_argument("--feature", action="append", default=[], metavar="FLAG=on|off",
                         help="switch one feature flag of the protocol")
    trace = explore.add_argument("--trace", metavar="FILE",
                                 help="open this trace or scenario (its header names the model; "
                                      "MODEL, --protocol and --const for an ITF trace written by "
                                      "another tool, or a scenario under another protocol)")
    trace.complete = FILE_COMPLETION
    explore.add_argument("--host", default="127.0.0.1",
                         help="address to listen on (default 127.0.0.1: this machine only)")
    explore.add_argument("--port", type=int, default=0, help="port (default: a free one, printed)")
    explore.add_argument("--open", action="store_true", help="open the page in the default browser")
    explore.add_argument("--max-states", type=int, default=DEFAULT_MAX_STATES,
                         help="distinct-state budget of 'run to completion' from the page "
                              f"(default {DEFAULT_MAX_STATES})")
    explore.add_argument("--log", action="store_true", help="print every request on stderr")
    explore.set_defaults(func=cmd_explore)


def start_position(args: argparse.Namespace) -> Any:
    """The page's first position: the trace or scenario's, or the model's initial state (errors
    before serving)."""
    from spec.registry import build_model
    from traces.explore.session import Config, Loaded, Position, load_file

    if args.trace:
        if args.feature:
            raise UsageError("--trace opens the path under the configuration the file names; drop "
                             "--feature (the page's 'compare releases' replays it with a flag "
                             "switched)")
        return load_file(args.trace, args.model, args.protocol, args.const)
    if not args.model:
        raise UsageError("give a model (kmc explore kafka --protocol 2.1.0) or a trace (kmc "
                         "explore --trace FILE)")
    model = build_model(args.model, args.const, args.protocol, args.feature)
    config = Config(args.model, model.protocol if args.protocol else None,
                    tuple(args.const), tuple(args.feature))
    return Loaded(Position(config), f"model {args.model}", "")


def cmd_explore(args: argparse.Namespace) -> int:
    from traces.explore.server import ExplorerServer

    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port {args.port}: give a port from 1 to 65535 (or 0, the default, for "
                         "a free one)")
    if args.max_states <= 0:
        raise UsageError(f"--max-states {args.max_states}: give a positive number")
    start = start_position(args)
    try:
        server = ExplorerServer((args.host, args.port), start, max_states=args.max_states,
                                log=args.log)
    except OSError as exc:
        raise UsageError(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}; choose "
                         "another --host "
                         "or --port") from None
    try:  # from here on Ctrl-C stops the server, whenever it comes
        if not is_loopback(args.host):
            print(f"warning: --host {args.host}: anyone who can reach this address sees the "
                  "model's states and traces "
                  "and can run searches on this machine; kmc explore has no authentication",
                  file=sys.stderr)
        url = server.url + "#" + start.position.query()
        print(f"kmc explore: serving {url}", flush=True)
        print("Ctrl-C stops it.", flush=True)
        if args.open:
            import webbrowser

            webbrowser.open(url)
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        print("\nkmc explore: stopped", flush=True)
    finally:
        server.stop_run()
        server.server_close()
    return 0
