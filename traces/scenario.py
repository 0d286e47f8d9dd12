"""Hand-written scenarios: an interleaving from a KIP or a JIRA ticket, written as steps, that
``kmc trace replay`` runs against any protocol version.

A scenario is a JSON file (see ``traces/scenarios/README.md`` for the full description)::

    {
      "scenario": "KIP-101 scenario 1: committed data lost",
      "source": "KIP-101",
      "model": "tla:Kip101",
      "protocol": null,
      "constants": {"Replicas": 2},
      "features": {},
      "invariants": ["LogMatching"],
      "steps": [
        "ControllerElectLeader(newLeader=1)",
        {"action": "LeaderWrite", "params": {"replica": 1}, "note": "the leader appends m1"}
      ],
      "expect": {"kip-101": {"outcome": "violated", "invariant": "LogMatching", "step": 9},
                 "kip-279": {"outcome": "blocked", "step": 7}}
    }

A step is an action name with parameters, either as a string ``Name(key=value, ...)`` (values are
integers, ``true``/``false`` or bare words) or as an object. Only the parameters written must
match: the others are free, as long as one successor state fits (two different ones are an
ambiguity to resolve by naming more parameters). ``expect`` maps a protocol (or ``"*"`` for
models without versions, or any protocol not listed) to an outcome: ``violated`` (with the
invariant and the step number, 0 being the initial state), ``blocked`` (the step number whose
action is not enabled) or ``holds``. ``invariants`` (optional) limits the check to the named ones;
``check_from`` (optional, default 0) checks them only in the states from that step on, for a story
whose claim is about where the replicas end up rather than about every state on the way.
Nothing in the file is evaluated.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from checker.safe_io import MAX_SCENARIO_BYTES, int_from_text
from spec.errors import BadFileError, UsageError
from traces.io import parse_json, read_bytes
from traces.values import json_to_plain

SCENARIO_KEYS = {"scenario", "description", "source", "model", "protocol", "constants", "features",
                 "steps", "expect", "notes", "invariants", "check_from"}
OUTCOMES = ("violated", "blocked", "holds", "deadlock")
_NAME = r"[A-Za-z_][A-Za-z0-9_:.-]*"
# anchored patterns over pieces without spaces: no two parts can match the same text, so no
# backtracking
_NAME_RE = re.compile(_NAME)
_INT_RE = re.compile(r"-?[0-9]+")
_VALUE_RE = re.compile(rf"-?[0-9]+|{_NAME}")
MAX_STEP_CHARS = 10_000


@dataclass(frozen=True)
class StepSpec:
    """An action to take: its name and the parameters that must match (all of them if ``exact``)."""

    name: str
    params: tuple[tuple[str, Any], ...] = ()
    exact: bool = False
    note: str | None = None

    def matches(self, action: Any) -> bool:
        if action.name != self.name:
            return False
        if self.exact:
            return tuple(action.params) == self.params
        return all(action.param(key, _MISSING) == value for key, value in self.params)

    def __str__(self) -> str:
        if not self.params:
            return self.name
        return f"{self.name}({', '.join(f'{k}={_text(v)}' for k, v in self.params)})"


_MISSING = object()


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


@dataclass(frozen=True)
class Expectation:
    outcome: str
    invariant: str | None = None
    step: int | None = None

    def describe(self) -> str:
        if self.outcome == "violated":
            return f"{self.invariant or 'an invariant'} violated at step {self.step}"
        if self.outcome == "blocked":
            return f"blocked at step {self.step}"
        return self.outcome


@dataclass(frozen=True)
class Scenario:
    path: str
    name: str
    model: str
    protocol: str | None
    constants: dict[str, Any]
    features: dict[str, bool]
    steps: tuple[StepSpec, ...]
    expect: dict[str, Expectation] = field(default_factory=dict)
    description: str = ""
    source: str = ""
    #: the invariants to check (empty: all of the model's)
    invariants: tuple[str, ...] = ()
    #: check the invariants only in the states from this step on (0: every state)
    check_from: int = 0

    def header(self) -> dict[str, Any]:
        header: dict[str, Any] = {"model": self.model, "constants": dict(self.constants)}
        if self.protocol is not None:
            header["protocol"] = self.protocol
        if self.features:
            header["features"] = dict(self.features)
        return header

    def expectation(self, protocol: str | None) -> Expectation | None:
        """The expected outcome under ``protocol``: its own entry, else an entry under another name
        of the same version (an alias such as ``kip-101`` for ``0.11.0``, or the reverse; a release
        number whose flags are its row's, ``3.5.1`` for ``3.4.1``), else ``"*"``."""
        if protocol is not None and protocol in self.expect:
            return self.expect[protocol]
        if protocol is not None:
            from spec.registry import get_model_info

            info = get_model_info(self.model)
            aliases = info.protocol_aliases
            row = info.protocol_row(protocol) if info.protocol_row is not None else None
            target = aliases.get(protocol, row or protocol)
            for key, expected in self.expect.items():
                if aliases.get(key, key) == target:
                    return expected
        return self.expect.get("*")


def parse_action(text: str, where: str = "step") -> StepSpec:
    """``Name(key=value, ...)`` -> a ``StepSpec``; values are ints, true/false or bare words.

    Parsed by hand in linear time (the text is the user's: no regular expression here may
    backtrack over it), each piece checked with an anchored pattern that cannot backtrack.
    """
    if len(text) > MAX_STEP_CHARS:
        raise BadFileError(f"{where}: an action of {len(text):,} characters (the limit is "
                           f"{MAX_STEP_CHARS:,})")
    body = text.strip()
    name, paren, rest = body.partition("(")
    name = name.strip()
    inner = None
    if paren:
        rest = rest.rstrip()
        if not rest.endswith(")"):
            raise BadFileError(f"{where}: cannot read the action {_short(text)} (write "
                               "Name(key=value, ...))")
        inner = rest[:-1]
    if not _NAME_RE.fullmatch(name):
        raise BadFileError(f"{where}: cannot read the action {_short(text)} (write Name(key=value, "
                           "...))")
    params: list[tuple[str, Any]] = []
    if inner and inner.strip():
        for part in inner.split(","):
            key, eq, value = part.partition("=")
            key, value = key.strip(), value.strip()
            if not eq or not _NAME_RE.fullmatch(key) or not _VALUE_RE.fullmatch(value):
                raise BadFileError(f"{where}: cannot read the parameter {_short(part.strip())} of "
                                   f"{name} (write key=value)")
            params.append((key, _value(value, where)))
    return StepSpec(name, tuple(params))


def _short(text: str) -> str:
    return repr(text if len(text) <= 80 else text[:77] + "...")


def _value(text: str, where: str = "step") -> Any:
    if text == "true":
        return True
    if text == "false":
        return False
    if _INT_RE.fullmatch(text):
        return int_from_text(text, where)
    return text


def _param_value(value: Any, where: str) -> Any:
    value = json_to_plain(value)
    if isinstance(value, float) or value is None or isinstance(value, dict):
        raise BadFileError(f"{where}: a parameter must be an integer, a boolean, a word or a list "
                           "of them")
    if isinstance(value, list):
        return tuple(_param_value(v, where) for v in value)
    return value


def parse_step(raw: Any, where: str) -> StepSpec:
    if isinstance(raw, str):
        return parse_action(raw, where)
    if not isinstance(raw, dict) or not isinstance(raw.get("action"), str):
        raise BadFileError(f"{where}: a step is \"Name(key=value)\" or {{\"action\": NAME, "
                           "\"params\": {...}}")
    unknown = set(raw) - {"action", "params", "note", "exact"}
    if unknown:
        raise BadFileError(f"{where}: unknown keys {sorted(unknown)} (a step has action, params, "
                           "note, exact)")
    params = raw.get("params") or {}
    if not isinstance(params, dict):
        raise BadFileError(f"{where}: params must be an object")
    spec = parse_action(raw["action"], where)
    merged = spec.params + tuple((str(k), _param_value(v, f"{where}.{k}"))
                                 for k, v in params.items())
    note = raw.get("note")
    if note is not None and not isinstance(note, str):
        raise BadFileError(f"{where}: note must be a string")
    return StepSpec(spec.name, merged, bool(raw.get("exact", False)), note)


def _expectation(raw: Any, where: str) -> Expectation:
    if isinstance(raw, str):
        raw = {"outcome": raw}
    if not isinstance(raw, dict) or raw.get("outcome") not in OUTCOMES:
        raise BadFileError(f"{where}: an expectation is {{\"outcome\": one of "
                           f"{', '.join(OUTCOMES)}, ...}}")
    step = raw.get("step")
    if step is not None and (not isinstance(step, int) or isinstance(step, bool) or step < 0):
        raise BadFileError(f"{where}: step must be a non-negative integer")
    invariant = raw.get("invariant")
    if invariant is not None and not isinstance(invariant, str):
        raise BadFileError(f"{where}: invariant must be a string")
    return Expectation(raw["outcome"], invariant, step)


def is_scenario(doc: Any) -> bool:
    return isinstance(doc, dict) and "steps" in doc and "format" not in doc and "#meta" not in doc


def scenario_from_data(doc: Any, path: str) -> Scenario:
    if not isinstance(doc, dict):
        raise BadFileError(f"{path}: a scenario is a JSON object")
    unknown = set(doc) - SCENARIO_KEYS
    if unknown:
        raise BadFileError(f"{path}: unknown scenario keys {sorted(unknown)} (known: "
                           f"{', '.join(sorted(SCENARIO_KEYS))})")
    model = doc.get("model")
    if not isinstance(model, str):
        raise BadFileError(f"{path}: a scenario names its model, e.g. \"model\": \"kafka\"")
    protocol = doc.get("protocol")
    if protocol is not None and not isinstance(protocol, str):
        raise BadFileError(f"{path}: protocol must be a string")
    constants = doc.get("constants") or {}
    features = doc.get("features") or {}
    if not isinstance(constants, dict) or not all(isinstance(v, int) for v in constants.values()):
        raise BadFileError(f"{path}: constants must be an object of integers and booleans")
    if not isinstance(features, dict) or not all(isinstance(v, bool) for v in features.values()):
        raise BadFileError(f"{path}: features must be an object of true/false")
    raw_steps = doc.get("steps")
    if not isinstance(raw_steps, list):
        raise BadFileError(f"{path}: steps must be a list")
    steps = tuple(parse_step(raw, f"{path}: step {i}") for i, raw in enumerate(raw_steps, start=1))
    expect_raw = doc.get("expect") or {}
    if not isinstance(expect_raw, dict):
        raise BadFileError(f"{path}: expect must be an object")
    if "outcome" in expect_raw:
        expect = {"*": _expectation(expect_raw, f"{path}: expect")}
    else:
        # an expectation for no protocol would never be checked
        if any(not str(k).strip() for k in expect_raw):
            raise BadFileError(f"{path}: expect has an entry with an empty protocol name; name the "
                               "protocol, or \"*\" "
                               "for every protocol")
        expect = {str(k): _expectation(v, f"{path}: expect.{k}") for k, v in expect_raw.items()}
    # a name that is empty names nothing: refused, not defaulted
    for key in ("scenario", "model", "protocol"):
        if isinstance(doc.get(key), str) and not doc[key].strip():
            fix = "give it a value" if key == "model" else "give it a value or leave the key out"
            raise BadFileError(f"{path}: \"{key}\" is empty; {fix}")
    text = doc.get("description") or ""
    invariants = doc.get("invariants") or []
    if not isinstance(invariants, list) or not all(isinstance(i, str) for i in invariants):
        raise BadFileError(f"{path}: invariants must be a list of invariant names")
    check_from = doc.get("check_from", 0)
    if (not isinstance(check_from, int) or isinstance(check_from, bool) or not 0 <= check_from
        <= len(steps)):
        raise BadFileError(f"{path}: check_from must be a step number between 0 and the number of "
                           f"steps ({len(steps)})")
    return Scenario(path, str(doc.get("scenario") or path), model, protocol, dict(constants),
                    dict(features), steps, expect, text if isinstance(text, str) else "",
                    str(doc.get("source") or ""), tuple(invariants), check_from)


def load_scenario(path: str) -> Scenario:
    doc = parse_json(path, read_bytes(path, "scenario", MAX_SCENARIO_BYTES), "scenario")
    scenario = scenario_from_data(doc, path)
    check_names(scenario)
    return scenario


def check_names(scenario: Scenario) -> None:
    """The model, protocol, constants, feature flags and invariants a scenario names exist: a name
    the model does not know is an error in the file (exit 65), not in the command line."""
    from invariants.registry import for_family
    from spec.registry import build_model, get_model_info, parse_constants, parse_features

    path = scenario.path
    try:
        info = get_model_info(scenario.model)
        # a row, one of its aliases (an older name such as kip-279) or a release by its number, as
        # --protocol takes them
        if scenario.protocol is not None and not info.has_protocol(scenario.protocol):
            raise UsageError(info.unknown_protocol(scenario.protocol))
        constants = [f"{k}={'on' if v is True else 'off' if v is False else v}"
                     for k, v in scenario.constants.items()]
        parse_constants(info, constants)
        flags = [f"{k}={'on' if v else 'off'}" for k, v in scenario.features.items()]
        parse_features(info, flags)
        family = build_model(info.name, constants, scenario.protocol or info.default_protocol,
                             flags).family
    except UsageError as exc:
        raise BadFileError(f"{path}: {exc}; fix the scenario file") from None
    available = for_family(family)
    for name in scenario.invariants:
        if name not in available:
            raise BadFileError(f"{path}: the scenario names invariant {name!r}, which model "
                               f"{scenario.model} does not have (its invariants: "
                               f"{', '.join(available) or 'none'}); fix the scenario file")
