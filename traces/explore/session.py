"""What the explorer page shows, computed from the model: the state a path leads to, its enabled
actions with the rules they follow, every safety property's status, the path as a sequence diagram,
the path replayed under every release, and the path as a trace file.

A request names a configuration and a path the way the page's URL does
(``model=kafka&protocol=2.1.0& const=records=1&feature=unclean=on&path=3.0.7&at=2``): ``path``
lists, step by step, the index of the action taken among the enabled actions of the state before it,
in the model's own deterministic order (``Model.successors``); ``at`` is how many of those steps are
taken (back and forward move it; the steps after it stay, as a browser's forward history). Nothing
is kept between requests but built models: a reload or a shared link gives the same page.
"""

from __future__ import annotations

import re
import threading
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlencode

from checker.invariant import Invariant
from checker.search import CHECKER_VERSION
from checker.trace import Step, Trace
from spec.errors import KmcError, NotReplayableError, UsageError, WrongModelError
from spec.model import Action, Model
from spec.registry import ModelInfo, build_model, get_model_info
from traces.diagram import _message_label, to_mermaid, to_svg
from traces.render import flat_state, fmt, is_message
from traces.replay import replay_trace, safety_invariants
from traces.views import broker_views, diverging_offsets

#: the longest path a request may name (a counterexample of the matrix is under 40 steps)
MAX_PATH = 2000
MAX_QUERY_CHARS = 20_000
QUERY_KEYS = frozenset({"model", "protocol", "const", "feature", "init", "path", "at"})
#: Kafka's words for the fields of a broker record (``spec.kafka.state.Broker``); other models keep
#: their names
KAFKA_WORDS = {
    "hw": "HW", "epoch": "leader epoch", "cache": "epoch cache", "isr": "ISR",
    "broker_epoch": "broker epoch", "fetch": "fetcher", "leader": "leader", "log": "log",
    "alive": "alive", "remote": "followers' fetch offsets", "stopping": "in controlled shutdown",
    "pending_diverging": "diverging epoch to apply", "partition_epoch": "partition epoch",
    "alter_pending": "AlterPartition in flight", "committed_isr": "committed ISR",
    "remote_epochs": "followers' broker epochs", "registered": "registered broker epochs",
    "elr": "ELR", "leader_epoch": "leader epoch", "replica_log": "log",
}


class RequestError(KmcError):
    """A request the explorer cannot answer: HTTP ``status`` (400 a bad request, 404 unknown) and
    one line."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Config:
    """A model configuration as ``kmc check`` takes it:
    ``MODEL --protocol P --const N=V --feature F=on``."""

    model: str
    protocol: str | None = None
    consts: tuple[str, ...] = ()
    features: tuple[str, ...] = ()

    def query(self) -> list[tuple[str, str]]:
        out = [("model", self.model)]
        if self.protocol:
            out.append(("protocol", self.protocol))
        out += [("const", c) for c in self.consts] + [("feature", f) for f in self.features]
        return out

    def command(self) -> str:
        """The ``kmc check`` options of this configuration."""
        words = [self.model] + ([f"--protocol {self.protocol}"] if self.protocol else [])
        words += [f"--const {c}" for c in self.consts] + [f"--feature {f}" for f in self.features]
        return " ".join(words)


@dataclass(frozen=True)
class Position:
    """A configuration, an initial state (by index), a path (action indices) and how much of it is
    taken."""

    config: Config
    init: int = 0
    path: tuple[int, ...] = ()
    at: int = 0

    def query(self, path: Sequence[int] | None = None, at: int | None = None) -> str:
        steps = self.path if path is None else tuple(path)
        taken = self.at if at is None else at
        pairs = self.config.query()
        if self.init:
            pairs.append(("init", str(self.init)))
        if steps:
            pairs.append(("path", ".".join(map(str, steps))))
        if taken != len(steps):
            pairs.append(("at", str(taken)))
        return urlencode(pairs, safe="=.:,")


def _int(text: str, what: str, low: int = 0) -> int:
    if not re.fullmatch(r"[0-9]{1,9}", text):
        raise RequestError(f"{what} must be a number, not {text[:40]!r}")
    value = int(text)
    if value < low:
        raise RequestError(f"{what} must be at least {low}, not {value}")
    return value


def parse_position(query: str) -> Position:
    """A ``Position`` from a query string (the page's URL fragment); RequestError naming what is
    wrong."""
    if len(query) > MAX_QUERY_CHARS:
        raise RequestError(f"the request is {len(query)} characters long; at most "
                           f"{MAX_QUERY_CHARS}")
    try:
        fields = parse_qs(query, keep_blank_values=True, strict_parsing=False, max_num_fields=500)
    except ValueError as exc:
        raise RequestError(f"cannot read the request: {exc}") from None
    unknown = sorted(set(fields) - QUERY_KEYS)
    if unknown:
        raise RequestError(f"unknown parameter {unknown[0]!r}; known: "
                           f"{', '.join(sorted(QUERY_KEYS))}")
    for key in ("model", "protocol", "init", "path", "at"):
        if len(fields.get(key, [])) > 1:
            raise RequestError(f"parameter {key!r} is given {len(fields[key])} times; give it once")
    model = (fields.get("model") or [""])[0]
    if not model:
        raise RequestError("no model: give model=NAME (see 'kmc list')")
    protocol = (fields.get("protocol") or [""])[0] or None
    path_text = (fields.get("path") or [""])[0]
    steps = (tuple(_int(p, f"step {n} of the path")
                   for n, p in enumerate(path_text.split("."), start=1)) if path_text else ())
    if len(steps) > MAX_PATH:
        raise RequestError(f"the path has {len(steps)} steps; at most {MAX_PATH}")
    at = _int(fields["at"][0], "at") if "at" in fields else len(steps)
    if at > len(steps):
        raise RequestError(f"at={at} is past the end of the path ({len(steps)} steps)")
    init = _int(fields["init"][0], "init") if "init" in fields else 0
    config = Config(model, protocol, tuple(fields.get("const", [])),
                    tuple(fields.get("feature", [])))
    return Position(config, init, steps, at)


# -- models ----------------------------------------------------------------------------------------
class Models:
    """Built models by configuration (building one parses its options and checks its bounds)."""

    def __init__(self, limit: int = 32) -> None:
        self._built: dict[Config, Model] = {}
        self._lock = threading.Lock()
        self._limit = limit

    def get(self, config: Config) -> Model:
        with self._lock:
            found = self._built.get(config)
        if found is not None:
            return found
        try:
            model = build_model(config.model, list(config.consts), config.protocol,
                                list(config.features))
        except KmcError as exc:
            raise RequestError(str(exc)) from None
        with self._lock:
            if len(self._built) >= self._limit:
                self._built.pop(next(iter(self._built)))
            self._built[config] = model
        return model


def config_of(model: Model) -> Config:
    """The configuration that builds ``model`` again: the constants that differ from their defaults,
    the protocol, and the flags that differ from the protocol's own (a trace or a scenario names its
    model by its header)."""
    defaults = {c.name: c.default for c in get_model_info(model.name).constants}
    consts = tuple(f"{k}={_const_text(v)}" for k, v in model.constants.items() if k not in defaults
                   or defaults[k] != v)
    protocol = model.protocol
    described = model.describe().get("features")
    features: tuple[str, ...] = ()
    if isinstance(described, dict):
        base = build_model(model.name, list(consts), protocol).describe().get("features") or {}
        features = tuple(f"{k}={'on' if v else 'off'}" for k, v in described.items()
                         if bool(base.get(k)) != bool(v))
    config = Config(model.name, protocol, consts, features)
    again = build_model(config.model, list(config.consts), config.protocol, list(config.features))
    if again.describe() != model.describe():
        raise UsageError(f"cannot name this configuration of model {model.name} by its options "
                         f"({config.command()})")
    return config


def _const_text(value: Any) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value)


# -- the path --------------------------------------------------------------------------------------
@dataclass
class Walk:
    """The states a position's path goes through (all of the path, not only up to ``at``)."""

    model: Model
    position: Position
    states: list[Any]
    actions: list[Action]

    @property
    def current(self) -> Any:
        return self.states[self.position.at]

    def trace(self, upto: int | None = None) -> Trace:
        """The path up to step ``upto`` (default: ``at``) as a trace, naming the first property it
        breaks and the step where it does (the steps after it stay: a reader who walked past a
        violation sees where they went)."""
        end = self.position.at if upto is None else upto
        header = {"checker": "kmc", "checker_version": CHECKER_VERSION, **self.model.describe()}
        steps = tuple(Step(a, s) for a, s in zip(self.actions[:end], self.states[1:end + 1],
                                                 strict=True))
        trace = Trace(header, self.states[0], steps)
        first = first_violation(self.model, self.states[: end + 1])
        if first is None:
            return trace
        step, inv = first
        return Trace(header, trace.initial, trace.steps, inv.name, step, inv.why(self.states[step]))


def walk(model: Model, position: Position) -> Walk:
    inits = list(model.init_states())
    if position.init >= len(inits):
        raise RequestError(f"init={position.init}: model {model.name} has {len(inits)} initial "
                           "state(s)")
    states, actions = [inits[position.init]], []
    for number, index in enumerate(position.path, start=1):
        successors = list(model.successors(states[-1]))
        if index >= len(successors):
            raise RequestError(f"step {number} of the path takes action {index}, but the state "
                               f"before it has {len(successors)} enabled action(s) (0 to "
                               f"{len(successors) - 1})"
                               if successors else f"step {number} of the path: no action is "
                                                  "enabled in the state "
                                                   "before it (a deadlock)")
        act, state = successors[index]
        actions.append(act)
        states.append(state)
    return Walk(model, position, states, actions)


def path_of(model: Model, trace: Trace) -> tuple[int, tuple[int, ...]]:
    """(initial-state index, action indices) of a trace of ``model``: each step is the enabled
    action equal to the recorded one whose successor is the recorded state."""
    inits = list(model.init_states())
    if trace.initial not in inits:
        raise WrongModelError("the trace's initial state is not an initial state of model "
                              f"{model.name}")
    current, path = trace.initial, []
    for number, step in enumerate(trace.steps, start=1):
        found = next((i for i, (act, succ) in enumerate(model.successors(current))
                      if act == step.action and succ == step.state), None)
        if found is None:
            raise NotReplayableError(f"step {number}, {step.action}, is not a step of model "
                                     f"{model.name} here")
        path.append(found)
        current = step.state
    return inits.index(trace.initial), tuple(path)


def first_violation(model: Model, states: Sequence[Any]) -> tuple[int, Invariant] | None:
    """(step, invariant) of the first state on ``states`` that breaks a safety invariant (registry
    order)."""
    checks = safety_invariants(model)
    for step, state in enumerate(states):
        for inv in checks:
            if not inv.holds(state):
                return step, inv
    return None


# -- the page's data -------------------------------------------------------------------------------
def _row(key: str, value: Any, changed: set[str], visible: set[str], word: str
         | None = None) -> dict[str, Any]:
    return {"key": key, "word": word or "", "value": fmt(value, show_hidden=True), "changed": key
            in changed,
            "hidden": key not in visible}


#: the per-broker variables the broker views read (``traces.views``): Kafka's ``brokers``, the TLA+
#: ``replica_*``; another indexed variable (``consumers[0]``) is not a broker's even when its index
#: is a broker id
BROKER_VARIABLES = frozenset({"brokers", "replicas", "broker"})
#: ``brokers[0].hw`` (a field of a broker record) or ``replica_log[1]`` (a per-replica variable)
_PER_BROKER = re.compile(r"^(\w+)\[(-?\d+)\](?:\.(.+))?$")


def state_view(state: Any, before: Any | None) -> dict[str, Any]:
    """The state broker by broker (role, leader epoch, LEO, HW, epoch cache, log cells and every
    field), the messages in flight and the other variables; what the step into it changed is marked,
    and the ghost variables and bound counters are marked hidden (the page shows them behind a
    toggle)."""
    flat = flat_state(state, show_hidden=True)
    visible = set(flat_state(state, show_hidden=False))
    old = flat_state(before, show_hidden=True) if before is not None else {}
    changed = {k for k, v in flat.items() if before is not None and old.get(k) != v}
    views = broker_views(state) or []
    diverging = diverging_offsets(views) if views else {}
    ids = {str(v.broker) for v in views}
    fields: dict[str, list[dict[str, Any]]] = {i: [] for i in ids}
    others, network = [], []
    for key, value in flat.items():
        match = _PER_BROKER.match(key)
        if (match and match.group(2) in ids and (match.group(1) in BROKER_VARIABLES
                                                 or match.group(1).startswith("replica_"))):
            field = match.group(3) or match.group(1)
            fields[match.group(2)].append(_row(key, value, changed, visible,
                                               KAFKA_WORDS.get(field)))
        elif (isinstance(value, tuple) and value and all(is_message(m) for m in value) or key
              == "network"):
            network.append(key)
            others.append(_row(key, value, changed, visible))
        else:
            last = key.rsplit(".", 1)[-1]
            others.append(_row(key, value, changed, visible, KAFKA_WORDS.get(last) if "." in key
                               else None))
    messages = []
    for key in network:
        now = Counter(flat[key] or ())
        new = now - Counter(old.get(key) or ()) if before is not None else Counter()
        for message in flat[key] or ():
            fresh = new[message] > 0
            if fresh:
                new[message] -= 1
            messages.append({"variable": key, "kind": type(message).__name__,
                             "src": getattr(message, "src", None),
                             "dst": getattr(message, "dst", None), "text": _message_label(message),
                             "new": fresh})
    brokers = []
    for view in views:
        brokers.append({
            "id": view.broker, "role": view.role, "leader_epoch": view.leader_epoch,
            "leo": view.leo, "hw": view.hw,
            "epoch_cache": " ".join(f"e{e}@{o}" for e, o in view.epoch_cache),
            "fetcher": view.fetcher, "broker_epoch": view.broker_epoch,
            "log": [{"offset": off, "label": entry.label(), "committed": off < view.hw,
"diverging": off in diverging.get(view.broker, set())} for off, entry in enumerate(view.log)],
            "fields": fields[str(view.broker)],
        })
    return {"brokers": brokers, "messages": messages, "others": others, "changed": sorted(changed)}


def _rules(info: ModelInfo, model: Model, action: Action) -> list[dict[str, str]]:
    if info.action_rules is None:
        return []
    keys = ("rule", "ticket", "release", "source", "flag", "on")
    return [{k: str(row.get(k, "")) for k in keys} for row in info.action_rules(action.name, model)]


def actions_view(info: ModelInfo, w: Walk) -> list[dict[str, Any]]:
    """The enabled actions of the current state in the model's order, each with its parameters, the
    rules it follows, whether its successor is already on the path (up to the current step), is the
    state itself (a stuttering step), lies outside the bounds, and which properties it breaks."""
    current = w.current
    on_path = {state: step
               for step, state in reversed(list(enumerate(w.states[: w.position.at + 1])))}
    checks = safety_invariants(w.model)
    broken_now = {inv.name for inv in checks if not inv.holds(current)}
    out = []
    for index, (act, succ) in enumerate(w.model.successors(current)):
        out.append({
            "index": index, "label": str(act), "name": act.name,
            "params": {k: fmt(v) for k, v in act.params}, "rules": _rules(info, w.model, act),
            "seen": on_path.get(succ), "stutter": succ == current,
            "beyond_bounds": not w.model.within_bounds(succ),
            "breaks": [inv.name for inv in checks if inv.name not in broken_now
                       and not inv.holds(succ)],
        })
    return out


def properties_view(w: Walk) -> list[dict[str, Any]]:
    """Every safety property: whether it holds in the current state (with the invariant's own
    explanation when not) and the first step of the whole path where it breaks."""
    out = []
    for inv in safety_invariants(w.model):
        first = next((step for step, state in enumerate(w.states) if not inv.holds(state)), None)
        holds = inv.holds(w.current)
        out.append({"name": inv.name, "description": inv.description, "holds": holds,
                    "why": None if holds else inv.why(w.current), "first_violated_at": first})
    return out


def page_view(info: ModelInfo, w: Walk) -> dict[str, Any]:
    """Everything the page draws for one position."""
    position = w.position
    trace = w.trace()
    return {
        "query": position.query(),
        "config": {"model": position.config.model, "protocol": position.config.protocol,
                   "consts": list(position.config.consts),
                   "features": list(position.config.features),
                   "command": position.config.command()},
        "header": w.model.describe(),
        "init": position.init,
        "at": position.at,
        "path": [{"step": n, "index": i, "label": str(a)}
                 for n, (i, a) in enumerate(zip(position.path, w.actions, strict=True), start=1)],
        "state": state_view(w.current, w.states[position.at - 1] if position.at else None),
        "actions": actions_view(info, w),
        "properties": properties_view(w),
        "violation": None if trace.invariant is None
        else {"invariant": trace.invariant, "step": trace.violation_index,
              "why": trace.explanation},
        "diagram_svg": to_svg(trace),
        "mermaid": to_mermaid(trace),
    }


# -- compare releases ------------------------------------------------------------------------------
def compare(info: ModelInfo, w: Walk, features: Sequence[str] = ()) -> list[dict[str, Any]]:
    """The path up to the current step replayed under every protocol of the model (as
    ``kmc trace replay --all-protocols``), with ``features`` switched in each: where it is blocked,
    where it breaks an invariant, where its states start to differ from the ones seen here."""
    from traces.io import model_for_header

    trace = w.trace(upto=w.position.at)
    plain = Trace(trace.header, trace.initial, trace.steps)
    rows = []
    for protocol in list(info.protocols) or [None]:
        row: dict[str, Any] = {"protocol": protocol, "current": protocol == w.model.protocol}
        try:
            model = model_for_header(dict(trace.header), protocol, list(features))
            result = replay_trace(model, plain)
        except NotReplayableError as exc:
            rows.append({**row, "outcome": "error", "detail": str(exc)})
            continue
        except (UsageError, WrongModelError) as exc:
            rows.append({**row, "outcome": "n/a", "detail": str(exc)})
            continue
        rows.append({**row, "outcome": result.outcome, "step": result.step,
                     "action": None if result.action is None else str(result.action),
                     "invariant": result.invariant.name if result.invariant else None,
                     "diverged_at": result.diverged_at, "detail": result.summary()})
    return rows


def info_of(name: str) -> ModelInfo:
    try:
        return get_model_info(name)
    except KmcError as exc:
        raise RequestError(str(exc)) from None


# -- traces and scenarios --------------------------------------------------------------------------
@dataclass(frozen=True)
class Loaded:
    """A trace or a scenario opened in the explorer: where its path starts the page, and what it
    says."""

    position: Position
    title: str
    #: the replay's one line (a scenario) or the trace's own violation
    summary: str
    expected: str | None = None


def shipped_scenarios() -> list[str]:
    """The file names of the scenarios that ship with kmc (``traces/scenarios/*.json``), sorted."""
    from importlib.resources import files

    folder = files("traces") / "scenarios"
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".json"))


def scenario_file(name: str) -> str:
    """The path of a shipped scenario by its file name (only names from the listing: never a user's
    path)."""
    from importlib.resources import files

    if name not in shipped_scenarios():
        raise RequestError(f"no shipped scenario {name[:80]!r}; see GET /api/scenarios", status=404)
    return str(files("traces") / "scenarios" / name)


def load_scenario_file(path: str, protocol: str | None = None) -> Loaded:
    """A scenario replayed under its own configuration (or ``protocol``): the steps it takes up to
    the end, the violation or the blocked step."""
    from traces.replay import replay_scenario, scenario_model
    from traces.scenario import load_scenario

    scenario = load_scenario(path)
    model = scenario_model(scenario, protocol)
    result = replay_scenario(model, scenario)
    init, steps = path_of(model, result.trace)
    config = config_of(model)
    expected = scenario.expectation(model.protocol)
    return Loaded(Position(config, init, steps, len(steps)), scenario.name,
                  f"Replay: {result.summary()}.", None if expected is None else expected.describe())


def load_trace_file(path: str, model_name: str | None = None, protocol: str | None = None,
                    constants: Sequence[str] = ()) -> Loaded:
    """A trace file of any format kmc reads, under the configuration its header names
    (``model_name``, ``protocol`` and ``constants`` for an ITF trace another tool wrote, as
    ``kmc trace show`` takes them)."""
    from traces.io import load_trace, read_document

    if (protocol or constants) and read_document(path).header.get("model"):
        raise UsageError("--protocol and --const are for ITF traces written by another tool; this "
                         "trace names its own configuration (the page's 'compare releases' replays "
                         "it under the others)")
    trace, model = load_trace(path, model_name=model_name, protocol=protocol,
                              constants=list(constants))
    init, steps = path_of(model, trace)
    where = trace.violation_index if trace.violation_index is not None else trace.length
    summary = (f"{trace.invariant} violated at step {where}" if trace.invariant
               else f"a behaviour of {trace.length} steps")
    return Loaded(Position(config_of(model), init, steps, len(steps)), path, summary)


def load_file(path: str, model_name: str | None = None, protocol: str | None = None,
              constants: Sequence[str] = ()) -> Loaded:
    """``kmc explore --trace FILE``: a trace or a hand-written scenario (``protocol``: replayed
    under another)."""
    from traces.io import parse_json, read_bytes
    from traces.scenario import is_scenario, load_scenario

    data = read_bytes(path)
    if data.lstrip()[:1] == b"{" and is_scenario(parse_json(path, data)):
        if constants:
            raise UsageError("a scenario names its own constants; drop --const")
        if model_name is not None and load_scenario(path).model != model_name:
            raise WrongModelError(f"the scenario is of model {load_scenario(path).model!r}, not "
                                  f"{model_name!r}")
        return load_scenario_file(path, protocol)
    return load_trace_file(path, model_name, protocol, constants)
