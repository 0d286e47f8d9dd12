"""ITF, the Informal Trace Format of Apalache and Quint (Apalache ADR-015), written the way those
tools write it, so that their viewers and libraries read our counterexamples as theirs.

A state is a record of the model's variables; each value is written by what it means, which the
model says through the annotations and class attributes of its NamedTuple state types:

=====================================  ============================================================
value in the model                     ITF
=====================================  ============================================================
bool, int                              ``true``, ``3`` (``{"#bigint": "..."}`` beyond 2^53)
int field with named values            the name: ``"fetching"``, ``"FENCED_LEADER_EPOCH"``,
                                       ``"FetchRequest"`` (``traces.values.VALUE_NAME_TABLES``)
NamedTuple                             a record ``{"field": ...}``
``frozenset``; a field in SET_FIELDS   ``{"#set": [...]}`` (items in a canonical order)
a field in MAP_FIELDS                  ``{"#map": [[0, ...], [1, ...]]}``: a function of broker id
``tuple[X, ...]``                      an array (a TLA+ sequence)
``tuple[A, B]``                        ``{"#tup": [a, b]}``
=====================================  ============================================================

A sorted tuple standing for a set keeps its array form if it holds a duplicate (a bag), so that
it reads back equal. Each state's ``#meta`` holds its ``index`` and, after the initial state, the
``action`` that led to it and that action's ``params``; the top-level ``#meta`` holds our header
under ``kmc`` (model, constants, protocol, features), which other tools ignore. The constants are
not written as ITF ``params``: those would have to appear in every state beside the variables,
and the Kafka model's bounds share names with its counters (``crashes``, ``bumps``).

Reading (``traces.io``) also takes ITF that Apalache or Quint wrote: integers as ``#bigint``,
enums as strings or unit variants, records as variants, Quint's ``mbt::actionTaken`` and
``mbt::nondetPicks``, and no action at all (it is then found by matching the model's successors).
"""

from __future__ import annotations

import json
from typing import Any

from spec.model import Action
from traces.values import (
    _SAFE_INT,
    field_hints,
    field_set,
    is_sequence_hint,
    item_hint,
    value_name,
)

ITF_DESCRIPTION = "https://apalache-mc.org/docs/adr/015adr-trace.html"


def _canonical(item: Any) -> str:
    return json.dumps(item, sort_keys=True, separators=(",", ":"))


def itf_value(value: Any, hint: Any = None, owner: type | None = None, field: str
              | None = None) -> Any:
    """The ITF JSON of one value; ``hint`` is the annotation of the field it fills (None: by
    shape)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        if owner is not None and field is not None:
            name = value_name(owner, field, value)
            if name is not None:
                return name
        return value if -_SAFE_INT <= value <= _SAFE_INT else {"#bigint": str(value)}
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return _record(value)
    if isinstance(value, frozenset | set):
        inner = item_hint(hint)
        return {"#set": sorted((itf_value(v, inner) for v in value), key=_canonical)}
    if isinstance(value, tuple | list):
        if hint is not None and not is_sequence_hint(hint) and isinstance(value, tuple):
            return {"#tup": [itf_value(v, item_hint(hint, i)) for i, v in enumerate(value)]}
        inner = item_hint(hint)
        return [itf_value(v, inner) for v in value]
    if isinstance(value, dict):
        return {"#map": sorted(([itf_value(k), itf_value(v)] for k, v in value.items()),
                               key=_canonical)}
    raise TypeError(f"cannot write a {type(value).__name__} into an ITF trace")


def _record(value: Any) -> dict[str, Any]:
    cls = type(value)
    hints = field_hints(cls)
    sets, maps = field_set(cls, "SET_FIELDS"), field_set(cls, "MAP_FIELDS")
    out: dict[str, Any] = {}
    for name, item in zip(cls._fields, value, strict=True):
        hint = hints.get(name)
        if name in maps and isinstance(item, tuple):
            inner = item_hint(hint)
            out[name] = {"#map": [[i, itf_value(v, inner)] for i, v in enumerate(item)]}
        elif name in sets and isinstance(item, tuple) and len(set(item)) == len(item):
            inner = item_hint(hint)
            out[name] = {"#set": sorted((itf_value(v, inner) for v in item), key=_canonical)}
        else:
            out[name] = itf_value(item, hint, cls, name)
    return out


def action_meta(action: Action) -> dict[str, Any]:
    return {"action": action.name,
            "params": {key: itf_value(value) for key, value in action.params}}


def itf_document(states: list[Any], actions: list[Action], meta: dict[str, Any]) -> dict[str, Any]:
    """The ITF document of a behaviour: ``states[0]`` initial, ``actions[i]`` leads to
    ``states[i + 1]``."""
    variables = list(getattr(states[0], "_fields", ()))
    if not variables:
        raise TypeError("an ITF trace needs states that are records (NamedTuples)")
    out_states = []
    for index, state in enumerate(states):
        state_meta: dict[str, Any] = {"index": index}
        if index > 0:
            state_meta.update(action_meta(actions[index - 1]))
        out_states.append({"#meta": state_meta, **_record(state)})
    return {"#meta": {"format": "ITF", "format-description": ITF_DESCRIPTION, **meta},
            "vars": variables, "states": out_states}


# -- reading: what the ITF layout says beyond the values (the values:
# -- ``traces.values.ValueDecoder``) --
def itf_action(state_meta: dict, state: dict) -> Any:
    """The raw action that led to an ITF state: ours in ``#meta`` (``action`` and ``params``; kmc
    before wrote ``action`` as ``{"name", "params"}``), Quint's ``mbt::actionTaken`` and
    ``mbt::nondetPicks`` (the picks that are ``Some``), or None when the file does not say."""
    action = state_meta.get("action")
    if isinstance(action, dict):
        return action
    if isinstance(action, str):
        return {"name": action, "params": state_meta.get("params") or {}}
    taken = state.get("mbt::actionTaken")
    if isinstance(taken, str):
        picks = state.get("mbt::nondetPicks")
        params = {}
        if isinstance(picks, dict):
            for key, pick in picks.items():
                if isinstance(pick, dict) and pick.get("tag") == "Some" and "value" in pick:
                    params[key] = pick["value"]
        return {"name": taken, "params": params}
    return None


def itf_variables(state: dict, params: list[str]) -> dict[str, Any]:
    """The state's variables: without ``#meta``, the trace's ``params`` and Quint's ``mbt::``
    entries, and with Quint's module qualification dropped (``kafka::brokers`` is ``brokers``)."""
    return {key.rsplit("::", 1)[-1]: value for key, value in state.items()
            if key != "#meta" and key not in params and not key.startswith("mbt::")}
