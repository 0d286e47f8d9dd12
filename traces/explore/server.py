"""The explorer's web server: the standard library's ``ThreadingHTTPServer``, one static page and a
JSON API.

    GET  /                        the page (``page.html``, vanilla JS and CSS, no build step)
    GET  /api/models              models, protocols, constants, flags; the shipped scenarios; the start position
    GET  /api/view?POSITION       the state, enabled actions, properties and diagram of a position
    GET  /api/compare?POSITION[&switch=FLAG=on|off]   the path replayed under every protocol
    GET  /api/export?POSITION&format=json|itf         the path up to the current step as a trace file
    GET  /api/scenario?name=FILE[&protocol=P]         a shipped scenario replayed: its position
    POST /api/run?POSITION[&max_states=N]             run to completion from the current state
    GET  /api/run                 the run's progress and result;  POST /api/run/cancel  stops it

POSITION is the page's URL fragment (``model=kafka&protocol=2.1.0&path=3.0.7``, see
``traces.explore.session``). A request the explorer cannot answer gets a 4xx status and
``{"error": "one line"}``; an unexpected failure in one request is a 500 with the same shape, and
the server goes on serving. Nothing a request names is read from the disk except the shipped
scenarios, by their listed names.
"""  # noqa: E501

from __future__ import annotations

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib.resources import files
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from spec.errors import KmcError
from spec.registry import all_models
from traces.explore import runner, session
from traces.explore.session import Loaded, Models, RequestError

MAX_BODY = 64 * 1024
EXPORT_FORMATS = ("json", "itf")


def _split(query: str, keys: tuple[str, ...]) -> tuple[str, dict[str, list[str]]]:
    """The query without ``keys`` (a position) and the values of ``keys``."""
    try:
        pairs = parse_qs(query, keep_blank_values=True, max_num_fields=500) if query else {}
    except ValueError as exc:
        raise RequestError(f"cannot read the request: {exc}") from None
    taken = {k: pairs.pop(k) for k in keys if k in pairs}
    return urlencode([(k, v) for k, vs in pairs.items() for v in vs]), taken


def _one(values: dict[str, list[str]], key: str, default: str | None = None) -> str | None:
    got = values.get(key)
    if not got:
        return default
    if len(got) > 1:
        raise RequestError(f"parameter {key!r} is given {len(got)} times; give it once")
    return got[0]


def models_listing() -> list[dict[str, Any]]:
    out = []
    for info in all_models().values():
        out.append({"name": info.name, "description": info.description,
                    "protocols": dict(info.protocols), "default_protocol": info.default_protocol,
                    "features": dict(info.features),
                    "constants": [{"name": c.name, "default": c.default,
                                   "description": c.description}
 for c in info.constants]})
    return out


class ExplorerServer(ThreadingHTTPServer):
    """The server and what its requests share: built models, the start position, the one run of the
    page."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], start: Loaded | None = None,
                 max_states: int = runner.DEFAULT_MAX_STATES, log: bool = False) -> None:
        super().__init__(address, Handler)
        self.models = Models()
        self.start = start
        self.max_states = max_states
        self.log = log
        self.run: runner.Run | None = None
        self.run_lock = threading.Lock()

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        shown = f"[{host}]" if ":" in str(host) else host
        return f"http://{shown}:{port}/"

    def stop_run(self) -> None:
        with self.run_lock:
            if self.run is not None:
                self.run.cancel.set()


class Handler(BaseHTTPRequestHandler):
    server: ExplorerServer
    protocol_version = "HTTP/1.1"

    # -- plumbing ----------------------------------------------------------------------------------
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        if self.server.log:
            super().log_message(format, *args)

    def _send(self, status: int, body: bytes, content_type: str, extra: dict[str, str]
              | None = None) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.send_header("X-Content-Type-Options", "nosniff")
            for key, value in (extra or {}).items():
                self.send_header(key, value)
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):  # the page went away: nothing to answer
            pass

    def _json(self, status: int, data: Any) -> None:
        self._send(status, json.dumps(data).encode(), "application/json; charset=utf-8")

    def _error(self, status: int, message: str) -> None:
        self._json(status, {"error": message})

    def _dispatch(self, method: str) -> None:
        try:
            length = int(self.headers.get("Content-Length") or 0)
            if length < 0 or length > MAX_BODY:
                raise RequestError(f"a request body of {length} bytes; at most {MAX_BODY}",
                                   status=413)
            if length:
                self.rfile.read(length)  # the API reads nothing from a body
            parts = urlsplit(self.path)
            route = ROUTES.get((method, parts.path))
            if route is None:
                known = any(path == parts.path for _, path in ROUTES)
                raise RequestError(f"{method} {parts.path[:80]} is not allowed here" if known
                                   else f"no such page: {parts.path[:80]}", status=405 if known
                                   else 404)
            route(self, parts.query)
        except RequestError as exc:
            self._error(exc.status, str(exc))
        # a user error of the model, a trace or a scenario: one line, as the CLI says it
        except KmcError as exc:
            self._error(400, str(exc))
        except RecursionError:
            self._error(400, "the request nests too deeply")
        except Exception as exc:  # noqa: BLE001 - one request fails, the server goes on
            print(f"kmc explore: internal error on {method} {self.path[:200]}: "
                  f"{type(exc).__name__}: {exc}",
                  file=sys.stderr)
            self._error(500, f"internal error: {type(exc).__name__}: {exc}")

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self._dispatch("GET")

    def do_HEAD(self) -> None:  # noqa: N802
        self._dispatch("GET")

    def do_POST(self) -> None:  # noqa: N802
        self._dispatch("POST")

    def do_PUT(self) -> None:  # noqa: N802
        self._dispatch("PUT")

    def do_DELETE(self) -> None:  # noqa: N802
        self._dispatch("DELETE")

    # -- routes ------------------------------------------------------------------------------------
    def _walk(self, query: str) -> tuple[Any, session.Walk]:
        position = session.parse_position(query)
        info = session.info_of(position.config.model)
        model = self.server.models.get(position.config)
        return info, session.walk(model, position)

    def page(self, query: str) -> None:
        body = (files("traces.explore") / "page.html").read_bytes()
        self._send(200, body, "text/html; charset=utf-8")

    def models(self, query: str) -> None:
        start = self.server.start
        self._json(200, {
            "models": models_listing(),
            "scenarios": session.shipped_scenarios(),
            "start": None if start is None else {"query": start.position.query(),
                                                 "title": start.title, "summary": start.summary,
                                                 "expected": start.expected},
            "max_states": self.server.max_states,
        })

    def view(self, query: str) -> None:
        info, w = self._walk(query)
        self._json(200, session.page_view(info, w))

    def compare(self, query: str) -> None:
        rest, extra = _split(query, ("switch",))
        info, w = self._walk(rest)
        switches = [s for s in extra.get("switch", []) if s]
        self._json(200, {"protocols": session.compare(info, w, switches), "switch": switches})

    def export(self, query: str) -> None:
        from traces.io import trace_to_data, trace_to_itf

        rest, extra = _split(query, ("format",))
        fmt = _one(extra, "format", "json")
        if fmt not in EXPORT_FORMATS:
            raise RequestError(f"format={fmt!r}: export writes {' or '.join(EXPORT_FORMATS)}")
        _, w = self._walk(rest)
        trace = w.trace()
        data = trace_to_itf(trace) if fmt == "itf" else trace_to_data(trace)
        config = w.position.config
        name = "-".join(p for p in (config.model, config.protocol or "", trace.invariant or "path")
                        if p)
        name = "".join(ch if ch.isalnum() or ch in "._-" else "_" for ch in name)
        suffix = ".itf.json" if fmt == "itf" else ".json"
        self._send(200, (json.dumps(data, indent=1) + "\n").encode(),
                   "application/json; charset=utf-8",
                   {"Content-Disposition": f'attachment; filename="{name}{suffix}"'})

    def favicon(self, query: str) -> None:
        self._send(204, b"", "image/x-icon")

    def scenarios(self, query: str) -> None:
        self._json(200, {"scenarios": session.shipped_scenarios()})

    def scenario(self, query: str) -> None:
        _, extra = _split(query, ("name", "protocol"))
        name = _one(extra, "name")
        if not name:
            raise RequestError("give name=FILE, one of GET /api/scenarios")
        loaded = session.load_scenario_file(session.scenario_file(name), _one(extra, "protocol"))
        self._json(200, {"query": loaded.position.query(), "title": loaded.title,
                         "summary": loaded.summary, "expected": loaded.expected})

    def run_start(self, query: str) -> None:
        rest, extra = _split(query, ("max_states",))
        text = _one(extra, "max_states", str(self.server.max_states)) or ""
        if not text.isdigit() or not 0 < int(text) <= 10 * self.server.max_states:
            raise RequestError(f"max_states={text[:20]!r}: give a positive number up to "
                               f"{10 * self.server.max_states}")
        _, w = self._walk(rest)
        position = w.position

        def found(run: runner.Run, trace: Any) -> None:
            _, steps = session.path_of(runner.StartingAt(w.model, w.current), trace)
            path = position.path[: position.at] + steps
            run.found = position.query(path=path, at=len(path))

        with self.server.run_lock:
            if self.server.run is not None:
                self.server.run.cancel.set()
            self.server.run = runner.start(w.model, w.current, position.query(), int(text), found)
            report = self.server.run.report()
        self._json(202, report)

    def run_status(self, query: str) -> None:
        with self.server.run_lock:
            run = self.server.run
        self._json(200, {"running": False, "progress": None} if run is None else run.report())

    def run_cancel(self, query: str) -> None:
        with self.server.run_lock:
            run = self.server.run
            if run is None:
                raise RequestError("no run to cancel", status=409)
            run.cancel.set()
        run.done.wait(timeout=5)
        self._json(200, run.report())


ROUTES = {
    ("GET", "/"): Handler.page,
    ("GET", "/index.html"): Handler.page,
    ("GET", "/favicon.ico"): Handler.favicon,
    ("GET", "/api/models"): Handler.models,
    ("GET", "/api/view"): Handler.view,
    ("GET", "/api/compare"): Handler.compare,
    ("GET", "/api/export"): Handler.export,
    ("GET", "/api/scenarios"): Handler.scenarios,
    ("GET", "/api/scenario"): Handler.scenario,
    ("POST", "/api/run"): Handler.run_start,
    ("GET", "/api/run"): Handler.run_status,
    ("POST", "/api/run/cancel"): Handler.run_cancel,
}
