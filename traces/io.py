"""Reading and writing traces in three formats, chosen by the file name when writing and by the
content when reading:

* ``.itf.json``: the Informal Trace Format of Apalache and Quint (ADR-015). The top-level
  ``#meta`` holds ``format: "ITF"`` and our header under ``kmc``; ``vars`` lists the state
  variables; each state is a record of them, with ``#meta: {"index": i, "action": {...}}`` naming
  the action that led to it (``null`` for the initial state), so TLA+ tools still parse the file.
* ``.json``: our own JSON, ``{"format": "kmc-trace", "version": 2, "header", "invariant",
  "violation_index", "explanation", "extra", "initial", "steps": [{"action", "state"}]}`` with
  states in the ITF value encoding (see ``traces.values``). Version 1 files (untagged sets) are
  read too.
* ``.msgpack``: our binary format, the same document packed with ``checker.codec`` (typed, exact).

Reading any of them back gives an equal ``Trace``. Reading is two steps: ``read_document`` parses
the file without knowing the model (errors: ``BadFileError``), and ``decode_trace`` types its
states with a model built from the header (errors: ``WrongModelError``). Nothing here executes
or unpickles file content.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from checker import safe_io
from checker.codec import Codec, packb
from checker.trace import Step, Trace
from spec.errors import BadFileError, CorruptDataError, UsageError, WrongModelError
from spec.model import Action, Model
from traces.itf import itf_action, itf_document, itf_variables
from traces.values import ShapeError, ValueDecoder, encode, json_to_plain, plain_to_json

FORMAT = "kmc-trace"
VERSION = 2
MSGPACK_FORMAT = "kmc-trace-msgpack"
MSGPACK_VERSION = 1
FORMATS = ("json", "itf", "msgpack")
MAX_FILE_BYTES = safe_io.MAX_TRACE_BYTES


# -- writing --------------------------------------------------------------------------------------
def _action_json(action: Action) -> dict[str, Any]:
    return {"name": action.name, "params": {key: encode(value) for key, value in action.params}}


def _meta(trace: Trace) -> dict[str, Any]:
    return {
        "header": plain_to_json(trace.header),
        "invariant": trace.invariant,
        "violation_index": trace.violation_index,
        "explanation": trace.explanation,
        "extra": plain_to_json(trace.extra),
    }


def trace_to_data(trace: Trace) -> dict[str, Any]:
    """Our own JSON document."""
    return {
        "format": FORMAT,
        "version": VERSION,
        **_meta(trace),
        "initial": encode(trace.initial),
        "steps": [{"action": _action_json(step.action), "state": encode(step.state)}
                  for step in trace.steps],
    }


def trace_to_itf(trace: Trace) -> dict[str, Any]:
    """The ITF document, as Apalache and Quint write it (see ``traces.itf``); our header is in
    ``#meta.kmc``."""
    header = trace.header
    meta = {
        "source": str(header.get("model", "model")),
        "status": "violation" if trace.invariant else "ok",
        "description": f"kmc {header.get('checker_version', '')} counterexample"
        + (f": {trace.invariant} violated" if trace.invariant else ""),
        "kmc": _meta(trace),
    }
    return itf_document(trace.states, [step.action for step in trace.steps], meta)


def trace_to_msgpack(trace: Trace) -> bytes:
    meta = {
        "format": MSGPACK_FORMAT,
        "version": MSGPACK_VERSION,
        "header": trace.header,
        "invariant": trace.invariant,
        "violation_index": trace.violation_index,
        "explanation": trace.explanation,
        "extra": trace.extra,
        # states and parameters are packed apart, so the outer document reads without the model
        "initial": packb(trace.initial),
        "steps": [[step.action.name, packb(tuple(step.action.params)), packb(step.state)]
                  for step in trace.steps],
    }
    return packb(meta)


def format_of_path(path: str) -> str:
    lowered = path.lower()
    if lowered.endswith(".itf.json") or lowered.endswith(".itf"):
        return "itf"
    if lowered.endswith(".msgpack") or lowered.endswith(".mpk"):
        return "msgpack"
    return "json"


def save_trace(trace: Trace, path: str, fmt: str | None = None, keep_others: bool = False) -> str:
    """Write ``trace`` to ``path`` (format from ``fmt`` or the file name) and return the path.

    The file appears whole or not at all (temporary file, then rename). With ``keep_others`` an
    existing file with another trace is never replaced: the trace goes to ``NAME-2.json``, ... (two
    runs sharing a trace directory keep both counterexamples), and the path written is returned.
    """
    fmt = fmt or format_of_path(path)
    if fmt not in FORMATS:
        raise UsageError(f"unknown trace format {fmt!r}; known: {', '.join(FORMATS)}")
    if fmt == "msgpack":
        data = trace_to_msgpack(trace)
    else:
        data = (json.dumps(trace_to_itf(trace) if fmt == "itf" else trace_to_data(trace), indent=1)
                + "\n").encode()
    if keep_others:
        return safe_io.write_new(path, data, "trace")
    return safe_io.atomic_write(path, data, "trace")


def default_trace_path(directory: str, trace: Trace, suffix: str = ".json") -> str:
    header = trace.header
    parts = [header.get("model", "model")]
    if header.get("protocol"):
        parts.append(str(header["protocol"]))
    parts.append(trace.invariant or "trace")
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", "-".join(str(p) for p in parts))
    return os.path.join(directory, f"{name}{suffix}")


# -- reading: the document ------------------------------------------------------------------------
@dataclass
class TraceDocument:
    """A parsed trace file whose states are not yet typed (that needs the model)."""

    path: str
    fmt: str
    header: dict[str, Any]
    invariant: str | None
    violation_index: int | None
    explanation: str | None
    extra: dict[str, Any]
    #: (raw action or None for the initial state, raw state) in order
    raw_states: list[tuple[Any, Any]] = field(default_factory=list)
    #: decodes one raw state with a model's decoder; set per format
    decode_state: Callable[[Any, Any, str], Any] | None = None
    decode_action: Callable[[Any, Any, str], Action] | None = None
    #: an ITF trace another tool wrote (no kmc header): its actions are matched to the model's
    foreign: bool = False

    @property
    def model_name(self) -> str:
        return str(self.header.get("model"))

    @property
    def length(self) -> int:
        return len(self.raw_states) - 1


def _bad(path: str, message: str) -> BadFileError:
    return BadFileError(f"{path}: {message}")


def read_bytes(path: str, what: str = "trace", max_bytes: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of a user's file, through the one safe reader (regular files only, size cap)."""
    return safe_io.read_file(path, what, max_bytes)


def parse_json(path: str, data: bytes, what: str = "trace") -> Any:
    """JSON with the depth, integer and constant limits of ``checker.safe_io``."""
    return safe_io.parse_json(path, data, what)


def read_document(path: str) -> TraceDocument:
    """Parse a trace file of any of the formats, without the model."""
    doc = _read_document(path)
    if doc.violation_index is not None and doc.violation_index > doc.length:
        raise _bad(path, f"violation_index {doc.violation_index} is past the trace's last state "
                   f"({doc.length})")
    return doc


def _read_document(path: str) -> TraceDocument:
    data = read_bytes(path)
    if not data.strip():
        raise _bad(path, "empty file")
    if data.lstrip()[:1] in (b"{", b"["):
        doc = parse_json(path, data)
        if isinstance(doc, dict) and "#meta" in doc and "states" in doc:
            return _itf_document(path, doc)
        if isinstance(doc, dict) and doc.get("format") == FORMAT:
            return _json_document(path, doc)
        if isinstance(doc, dict) and "steps" in doc and "format" not in doc:
            raise _bad(path, "this is a scenario, not a trace: use 'kmc trace replay' (see "
                       "traces/scenarios/README.md)")
        raise _bad(path, f"not a kmc trace: expected an ITF trace or {{\"format\": \"{FORMAT}\"}}")
    return _msgpack_document(path, data)


def _check_meta(path: str, meta: Any) -> tuple[dict, str | None, int | None, str | None, dict]:
    if not isinstance(meta, dict):
        raise _bad(path, "the trace metadata is not an object")
    header = json_to_plain(meta.get("header"))
    if (not isinstance(header, dict) or not isinstance(header.get("model"), str)
        or not header["model"].strip()):
        raise _bad(path, "the trace header is missing or names no model")
    protocol = header.get("protocol")
    if protocol is not None and (not isinstance(protocol, str) or not protocol.strip()):
        # an empty protocol would build the model's default release: refused, not defaulted
        raise _bad(path, f"the trace header's protocol {protocol!r} is not a protocol name (see "
                   "'kmc list')")
    if not isinstance(header.get("constants", {}), dict):
        raise _bad(path, "the trace header's constants are not an object")
    invariant = meta.get("invariant")
    index = meta.get("violation_index")
    explanation = meta.get("explanation")
    extra = json_to_plain(meta.get("extra") or {})
    if invariant is not None and (not isinstance(invariant, str) or not invariant.strip()):
        raise _bad(path, "invariant is not an invariant name")
    if index is not None and (not isinstance(index, int) or isinstance(index, bool) or index < 0):
        raise _bad(path, "violation_index is not a non-negative integer")
    if explanation is not None and not isinstance(explanation, str):
        raise _bad(path, "explanation is not a string")
    if not isinstance(extra, dict):
        raise _bad(path, "extra is not an object")
    return header, invariant, index, explanation, extra


def _json_action(decoder: ValueDecoder, raw: Any, where: str) -> Action:
    if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
        raise ShapeError(where, "an action must be an object with a string name")
    params = raw.get("params") or {}
    if not isinstance(params, dict):
        raise ShapeError(where, "action params must be an object")
    return Action(raw["name"], tuple((str(k), decoder.value(v, f"{where}.{k}"))
                                     for k, v in params.items()))


def _json_document(path: str, doc: dict) -> TraceDocument:
    version = doc.get("version")
    if version not in (1, VERSION):
        raise _bad(path, f"unsupported {FORMAT} version {version!r} (this kmc reads 1 and "
                   f"{VERSION})")
    header, invariant, index, explanation, extra = _check_meta(path, doc)
    steps = doc.get("steps")
    if "initial" not in doc or not isinstance(steps, list):
        raise _bad(path, "a trace needs 'initial' and a list of 'steps'")
    raw = [(None, doc["initial"])]
    for i, step in enumerate(steps, start=1):
        if not isinstance(step, dict) or "action" not in step or "state" not in step:
            raise _bad(path, f"step {i} needs 'action' and 'state'")
        raw.append((step["action"], step["state"]))
    return TraceDocument(
        path, "json", header, invariant, index, explanation, extra, raw,
        decode_state=lambda decoder, value, where: decoder.state(value, where),
        decode_action=_json_action,
    )


def _itf_document(path: str, doc: dict) -> TraceDocument:
    meta = doc.get("#meta")
    if not isinstance(meta, dict):
        raise _bad(path, "an ITF trace's #meta is not an object")
    if isinstance(meta.get("kmc"), dict):
        header, invariant, index, explanation, extra = _check_meta(path, meta["kmc"])
    else:  # written by Apalache, Quint or another tool: the model comes from the user (--model)
        header, invariant, index, explanation, extra = {}, None, None, None, {
            "itf_meta": json_to_plain(meta)}
    states = doc.get("states")
    variables = doc.get("vars")
    params = doc.get("params") or []
    if not isinstance(states, list) or not states:
        raise _bad(path, "an ITF trace needs a non-empty list of states")
    if not isinstance(variables, list) or not all(isinstance(v, str) for v in variables):
        raise _bad(path, "an ITF trace needs 'vars', a list of variable names")
    if not isinstance(params, list) or not all(isinstance(p, str) for p in params):
        raise _bad(path, "an ITF trace's 'params' must be a list of names")
    raw = []
    for i, state in enumerate(states):
        if not isinstance(state, dict):
            raise _bad(path, f"ITF state {i} is not an object")
        smeta = state.get("#meta", {})
        if not isinstance(smeta, dict):
            raise _bad(path, f"ITF state {i} has a bad #meta")
        raw.append((None if i == 0 else itf_action(smeta, state), itf_variables(state, params)))
    return TraceDocument(
        path, "itf", header, invariant, index, explanation, extra, raw,
        decode_state=lambda decoder, value, where: decoder.state(value, where),
        decode_action=_itf_decode_action, foreign=not header,
    )


def _itf_decode_action(decoder: ValueDecoder, raw: Any, where: str) -> Action | None:
    return None if raw is None else _json_action(decoder, raw, where)


def _msgpack_document(path: str, data: bytes) -> TraceDocument:
    outer = Codec(())
    try:
        doc = outer.decode(data)
    except BadFileError:
        raise _bad(path, "not a trace: neither JSON nor a complete kmc msgpack document (corrupt "
                   "or truncated?)") from None
    if not isinstance(doc, dict) or doc.get("format") != MSGPACK_FORMAT:
        raise _bad(path, "not a kmc trace (unknown binary format)")
    if doc.get("version") != MSGPACK_VERSION:
        raise _bad(path, f"unsupported {MSGPACK_FORMAT} version {doc.get('version')!r}")
    header, invariant, index, explanation, extra = _check_meta(path, doc)
    steps = doc.get("steps")
    if not isinstance(doc.get("initial"), bytes) or not isinstance(steps, list):
        raise _bad(path, "a msgpack trace needs 'initial' and 'steps'")
    raw: list[tuple[Any, Any]] = [(None, doc["initial"])]
    for i, step in enumerate(steps, start=1):
        if (not isinstance(step, list | tuple) or len(step) != 3 or not isinstance(step[0], str)
                or not isinstance(step[1], bytes) or not isinstance(step[2], bytes)):
            raise _bad(path, f"step {i} is malformed")
        raw.append(((step[0], step[1]), step[2]))
    return TraceDocument(
        path, "msgpack", header, invariant, index, explanation, extra, raw,
        decode_state=_msgpack_state, decode_action=_msgpack_action,
    )


def _msgpack_state(codec: Codec, value: bytes, where: str) -> Any:
    return codec.decode(value)


def _msgpack_action(codec: Codec, raw: tuple[str, bytes], where: str) -> Action:
    name, params = raw
    decoded = codec.decode(params)
    if not isinstance(decoded, tuple) or not all(isinstance(p, tuple) and len(p) == 2
                                                 and isinstance(p[0], str)
                                                 for p in decoded):
        raise ShapeError(where, "action parameters are malformed")
    return Action(name, decoded)


# -- reading: typing the states with the model -----------------------------------------------------
def model_for_header(
    header: dict[str, Any],
    protocol: str | None = None,
    features: list[str] | None = None,
    model_name: str | None = None,
    constants: list[str] | None = None,
) -> Model:
    """Build the model a trace header describes; ``protocol``/``features``/``constants`` override
    the header's.

    ``model_name`` is the model the user asked for: a different one in the header is a
    ``WrongModelError``. Errors in the user's own options stay ``UsageError``.
    """
    from spec.registry import get_model_info, parse_constants, parse_features

    name = header.get("model")
    if model_name is not None and model_name != name:
        raise WrongModelError(f"the trace is of model {name!r}, not {model_name!r}")
    try:
        info = get_model_info(str(name))
    except UsageError as exc:
        raise WrongModelError(f"the trace is of a model this kmc does not know: {exc}") from None
    if protocol is not None:
        if not info.protocols:
            raise UsageError(f"model {info.name} has no protocol versions; drop --protocol")
        if not info.has_protocol(protocol):
            raise UsageError(info.unknown_protocol(protocol))
    user_features = list(features or [])
    parse_features(info, user_features)  # the user's flags: UsageError if bad
    user_constants = list(constants or [])
    parse_constants(info, user_constants)
    header_constants = [f"{k}={_const_text(v)}" for k, v in (header.get("constants") or {}).items()]
    _check_header_constants(info, header_constants)
    header_features: list[str] = []
    if protocol is None and isinstance(header.get("features"), dict):
        header_features = [f"{k}={'on' if v else 'off'}" for k, v in header["features"].items()
                           if k in info.features]
    chosen = protocol if protocol is not None else header.get("protocol")
    if chosen is not None and not info.protocols:
        chosen = None
    from spec.registry import build_model

    if protocol is not None and header.get("protocol") and info.protocols:
        # replayed under another protocol: the switches the trace made against its own protocol's
        # defaults (unclean=on, lossy-crash=on, ...) go with it, unless the user sets them; a
        # release fix that its protocol merely has (kafka-13141=on in a 2.8.1 trace) is the new
        # protocol's to decide
        user_names = {text.split("=", 1)[0] for text in user_features}
        carried = [text for text in _switched_in_trace(info, header, header_constants)
                   if text.split("=", 1)[0] not in user_names]
        if carried:
            try:
                return build_model(info.name, header_constants + user_constants, chosen, carried
                                   + user_features)
            except UsageError as exc:
                raise UsageError(f"the trace switches {', '.join(carried)} against its protocol's "
                                 f"defaults, which protocol {protocol} cannot: {exc}") from None
    try:
        return build_model(info.name, header_constants + user_constants, chosen, header_features
                           + user_features)
    except UsageError as exc:
        raise WrongModelError(f"the trace header does not fit model {info.name}: {exc}") from None


def _check_header_constants(info: Any, header_constants: list[str]) -> None:
    """A constant the model has, with a value no configuration of the model can have
    (``brokers=10^17``, ``records=-1``, ``brokers=yes``), is a corrupt header (``BadFileError``,
    exit 65), not a trace of another configuration (``WrongModelError``, exit 66, kept for a
    constant the model does not have or a valid one that does not go with the rest)."""
    by_name = {c.name.lower(): c for c in info.constants}
    for text in header_constants:
        key, _, raw = text.partition("=")
        const = by_name.get(key.strip().lower())
        if const is None:
            continue
        try:
            const.parse(raw)
        except UsageError as exc:
            raise BadFileError(f"the trace header is corrupt: {exc} (a trace kmc wrote never has "
                               "it)") from None


def _switched_in_trace(info: Any, header: dict[str, Any], header_constants: list[str]) -> list[str]:
    """``FLAG=on|off`` for every flag the trace's header sets differently from its own protocol's
    defaults."""
    from spec.registry import build_model

    recorded = header.get("features")
    if not isinstance(recorded, dict):
        return []
    try:
        # the row the trace ran on: its protocol name as the recorded flags resolve it (a name that
        # has since become a release of another row, 4.1.0, still builds the row a trace recorded
        # with kraft off was made on)
        recorded_flags = [f"{k}={'on' if v else 'off'}" for k, v in recorded.items()
                          if k in info.features]
        own = build_model(info.name, header_constants, str(header["protocol"]),
                          recorded_flags).protocol or str(
            header["protocol"])
        defaults = build_model(info.name, header_constants, own).describe().get("features") or {}
    except UsageError as exc:
        raise WrongModelError(f"the trace header does not fit model {info.name}: {exc}") from None
    return [f"{name}={'on' if value else 'off'}" for name, value in recorded.items()
            if name in info.features and name in defaults and bool(value) != bool(defaults[name])]


def _const_text(value: Any) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value)


def _constants_text(model: Model) -> str:
    return ", ".join(f"{k}={_const_text(v)}" for k, v in model.constants.items()) or "no constants"


def decode_trace(doc: TraceDocument, model: Model, strict_initial: bool = True) -> Trace:
    """Type a parsed document's states and actions with ``model``."""
    initial_sample = model.init_states()[0]
    if doc.fmt == "msgpack":
        decoder: Any = Codec(tuple(ValueDecoder(model.state_types(),
                                                initial_sample).types.values()))
        root = type(initial_sample)
    else:
        decoder = ValueDecoder(model.state_types(), initial_sample)
        root = None
    assert doc.decode_state is not None and doc.decode_action is not None
    states: list[Any] = []
    actions: list[Action] = []
    for i, (raw_action, raw_state) in enumerate(doc.raw_states):
        where = "initial state" if i == 0 else f"state after step {i}"
        try:
            action = (doc.decode_action(decoder, raw_action, f"action of step {i}") if i > 0
                      else None)
            state = doc.decode_state(decoder, raw_state, where)
        except ShapeError as exc:
            raise WrongModelError(f"{doc.path}: the trace does not fit model {model.name}: "
                                  f"{exc}") from None
        except CorruptDataError as exc:
            raise BadFileError(f"{doc.path}: {where}: {exc}") from None
        except BadFileError as exc:
            raise WrongModelError(f"{doc.path}: the trace does not fit model {model.name}: "
                                  f"{where}: {exc}") from None
        except RecursionError:
            raise BadFileError(f"{doc.path}: {where} is nested too deeply") from None
        if root is not None and type(state) is not root:
            raise WrongModelError(f"{doc.path}: the trace does not fit model {model.name}: {where} "
                                  f"is not a {root.__name__}")
        if i > 0:
            if action is None:
                action = _action_between(doc, model, states[-1], state, i)
            elif doc.foreign:
                action = _as_model_action(model, states[-1], action)
            actions.append(action)
        states.append(state)
    if strict_initial and states[0] not in model.init_states():
        raise WrongModelError(f"{doc.path}: the trace does not fit model {model.name}: its initial "
                              "state is not one of the model's (other constants? "
                              f"{_constants_text(model)})")
    return Trace(
        header=doc.header,
        initial=states[0],
        steps=tuple(Step(a, s) for a, s in zip(actions, states[1:], strict=True)),
        invariant=doc.invariant,
        violation_index=doc.violation_index,
        explanation=doc.explanation,
        extra=doc.extra,
    )


def _as_model_action(model: Model, before: Any, action: Action) -> Action:
    """The model's own action equal to ``action`` up to the order of its parameters (another tool
    may write them in any order), or ``action`` itself when ``before`` enables none."""
    wanted = dict(action.params)
    try:
        for act, _ in model.successors(before):
            if (act.name == action.name and len(act.params) == len(wanted) and dict(act.params)
                == wanted):
                return act
    except Exception:  # a state the model cannot expand: keep the file's action; replay reports it
        return action
    return action


def _action_between(doc: TraceDocument, model: Model, before: Any, after: Any, step: int) -> Action:
    """The action that leads from ``before`` to ``after``, for a file that does not name it (an ITF
    trace from Apalache or Quint): the first of the model's enabled actions whose successor is
    ``after``."""
    try:
        for act, successor in model.successors(before):
            if successor == after:
                return act
    except Exception as exc:  # a state that decodes but that the model cannot expand
        raise WrongModelError(f"{doc.path}: the trace does not fit model {model.name}: step "
                              f"{step}: {exc}") from None
    raise WrongModelError(f"{doc.path}: state {step} is not a successor of state {step - 1} under "
                          "model "
                          f"{model.name}{' protocol ' + str(model.protocol) if model.protocol else ''} ({_constants_text(model)}), and the file names no action for it")  # noqa: E501


def load_trace(
    path: str,
    model: Model | None = None,
    *,
    protocol: str | None = None,
    features: list[str] | None = None,
    model_name: str | None = None,
    constants: list[str] | None = None,
) -> tuple[Trace, Model]:
    """Read a trace file of any format and type it with the model of its header (or ``model``)."""
    doc = read_document(path)
    if not doc.header.get("model"):  # an ITF trace written by another tool
        if model is None and model_name is None:
            raise UsageError(f"{path} is an ITF trace without kmc's header: say which model it is "
                             "of with --model NAME "
                             "(and --protocol, --const if not the defaults)")
        doc.header = {"model": model.name if model is not None else model_name}
        if model is None:
            model = model_for_header(doc.header, protocol, features, model_name, constants)
        return decode_trace(doc, model, strict_initial=True), model
    if model is None:
        model = model_for_header(doc.header, protocol, features, model_name, constants)
    elif model_name is not None and doc.model_name != model_name:
        raise WrongModelError(f"the trace is of model {doc.model_name!r}, not {model_name!r}")
    return decode_trace(doc, model, strict_initial=protocol is None and not features
                        and not constants), model
