"""Typed JSON values: how states, action parameters and headers are written to JSON and read back.

States are written in the value encoding of the Informal Trace Format (ITF, Apalache ADR-015), so
that our own JSON and ``.itf.json`` files share one reader:

=====================  ===============================================
Python value           JSON
=====================  ===============================================
bool                   ``true`` / ``false``
int                    a number, or ``{"#bigint": "123"}`` beyond 2^53
tuple (a sequence)     an array
frozenset              ``{"#set": [...]}`` (items in a canonical order)
NamedTuple             an object (an ITF record) keyed by field name
=====================  ===============================================

Reading a value back needs the model: a record becomes the NamedTuple class among the model's
state types whose fields it has (the field annotation of the enclosing record breaks a tie), and an
array becomes a tuple (or a frozenset where the field is declared ``frozenset``, for files written
before sets were tagged). Nothing is ever evaluated: a value that fits no type of the model is a
``ShapeError``, which callers turn into a one-line error.

Headers (plain dicts of strings, ints, bools, lists) stay plain JSON; a tuple or frozenset inside
one is tagged ``#tup`` / ``#set`` so that it reads back equal.
"""

from __future__ import annotations

import json
import re
import sys
import typing
from collections.abc import Iterable
from typing import Any

from checker.safe_io import int_from_text
from spec.errors import BadFileError, CorruptDataError

_SAFE_INT = 2**53 - 1
_BIGINT = re.compile(r"-?[0-9]+")


class ShapeError(ValueError):
    """A JSON value does not fit the model's state types; ``path`` says where."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path or 'value'}: {message}")
        self.path = path


# -- writing --------------------------------------------------------------------------------------
def encode(value: Any) -> Any:
    """The ITF JSON form of a state value (or of an action parameter)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return value if -_SAFE_INT <= value <= _SAFE_INT else {"#bigint": str(value)}
    if isinstance(value, tuple):
        fields = getattr(value, "_fields", None)
        if fields is not None:
            return {name: encode(item) for name, item in zip(fields, value, strict=True)}
        return [encode(item) for item in value]
    if isinstance(value, frozenset | set):
        items = [encode(item) for item in value]
        return {"#set": sorted(items, key=_canonical)}
    if isinstance(value, list):
        return [encode(item) for item in value]
    if isinstance(value, dict):
        return {"#map": sorted(([encode(k), encode(v)] for k, v in value.items()), key=_canonical)}
    raise TypeError(f"cannot write a {type(value).__name__} into a trace")


def _canonical(item: Any) -> str:
    return json.dumps(item, sort_keys=True, separators=(",", ":"))


def plain_to_json(value: Any) -> Any:
    """A header or ``extra`` value as JSON, tagging tuples and sets so they read back equal."""
    if isinstance(value, dict):
        return {str(k): plain_to_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain_to_json(v) for v in value]
    if isinstance(value, tuple):
        return {"#tup": [plain_to_json(v) for v in value]}
    if isinstance(value, frozenset | set):
        return {"#set": sorted((plain_to_json(v) for v in value), key=_canonical)}
    if isinstance(value, bool | int | str | float) or value is None:
        return value
    return str(value)


def json_to_plain(value: Any) -> Any:
    if isinstance(value, dict):
        if set(value) == {"#tup"} and isinstance(value["#tup"], list):
            return tuple(_hashable(json_to_plain(v)) for v in value["#tup"])
        if set(value) == {"#set"} and isinstance(value["#set"], list):
            return frozenset(_hashable(json_to_plain(v)) for v in value["#set"])
        return {k: json_to_plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [json_to_plain(v) for v in value]
    return value


def _hashable(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_hashable(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _hashable(v)) for k, v in value.items()))
    return value


# -- what a model says about its fields ------------------------------------------------------------
#: a field whose integer values have names: field -> the table of names in the module that defines
#: the record type (for Kafka: error codes in responses, the fetcher state of a broker, the message
#: kind). A table is a tuple (value -> name) or a dict {value: name}.
VALUE_NAME_TABLES = {"error": "ERROR_NAMES", "fetch": "FETCHER_NAMES", "kind": "KIND_NAMES"}


def field_set(cls: type, attribute: str) -> frozenset[str]:
    """The fields a state type lists in one of its class attributes (``GHOST_FIELDS``,
    ``SET_FIELDS``, ...).

    A model declares them on its NamedTuple classes; a class that declares nothing has none. Names
    that are not fields (left over after a model change) are ignored.
    """
    declared = getattr(cls, attribute, ())
    fields = getattr(cls, "_fields", ())
    if isinstance(declared, str) or not isinstance(declared, tuple | list | frozenset | set):
        return frozenset()
    return frozenset(name for name in declared if name in fields)


def hidden_fields(cls: type) -> frozenset[str]:
    """Ghost variables and bound counters: shown by ``kmc trace show --all`` only."""
    return field_set(cls, "GHOST_FIELDS") | field_set(cls, "BOOKKEEPING_FIELDS")


def name_table(record_type: type, field: str) -> dict[int, str] | None:
    """value -> name for ``field`` of ``record_type``, from the module that defines the type (None:
    no names)."""
    table_name = VALUE_NAME_TABLES.get(field)
    if table_name is None:
        return None
    table = getattr(sys.modules.get(record_type.__module__), table_name, None)
    if isinstance(table, tuple | list):
        return {i: str(name) for i, name in enumerate(table)}
    if isinstance(table, dict):
        return {int(k): str(v) for k, v in table.items() if isinstance(k, int)}
    return None


def value_name(record_type: type, field: str, value: Any) -> str | None:
    if type(value) is not int:
        return None
    table = name_table(record_type, field)
    return None if table is None else table.get(value)


def field_hints(cls: type) -> dict[str, Any]:
    """The resolved type annotation of each field (``Cache`` -> ``tuple[tuple[int, int], ...]``).

    The annotations are the model's own source, resolved in its module; one that does not resolve
    is left out (its values are then read by shape alone).
    """
    cached = _HINTS.get(cls)
    if cached is not None:
        return cached
    try:
        hints = typing.get_type_hints(cls)
    except Exception:  # an annotation that does not resolve: read that class by shape alone
        hints = {}
    out = {name: hints[name] for name in getattr(cls, "_fields", ()) if name in hints}
    _HINTS[cls] = out
    return out


_HINTS: dict[type, dict[str, Any]] = {}


def is_sequence_hint(hint: Any) -> bool:
    """``tuple[X, ...]`` (or a bare ``tuple``): a sequence, as opposed to a fixed-length TLA+
    tuple."""
    if hint is tuple:
        return True
    args = typing.get_args(hint)
    return typing.get_origin(hint) is tuple and len(args) == 2 and args[1] is Ellipsis


def item_hint(hint: Any, position: int = 0) -> Any:
    """The hint of one item of a container hint (None if unknown)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return args[0]
        return args[position] if position < len(args) else None
    if origin in (frozenset, set) and args:
        return args[0]
    return None


# -- reading --------------------------------------------------------------------------------------
def collect_types(types: Iterable[type], sample: Any = None) -> dict[str, type]:
    """The NamedTuple classes a model's states are built from, by class name.

    ``types`` is the model's ``state_types()``; ``sample`` (an initial state) adds any class the
    model forgot to declare.
    """
    found: dict[str, type] = {}
    for cls in types:
        if hasattr(cls, "_fields"):
            found.setdefault(cls.__name__, cls)

    def walk(value: Any) -> None:
        if isinstance(value, tuple):
            if hasattr(value, "_fields"):
                found.setdefault(type(value).__name__, type(value))
            for item in value:
                walk(item)
        elif isinstance(value, frozenset):
            for item in value:
                walk(item)

    if sample is not None:
        walk(sample)
    return found


def _record_classes(hint: Any) -> tuple[type, ...]:
    """The record classes a hint allows: the class itself, or the members of a union."""
    if isinstance(hint, type) and hasattr(hint, "_fields"):
        return (hint,)
    return tuple(a for a in typing.get_args(hint) if isinstance(a, type) and hasattr(a, "_fields"))


def _unit(value: Any) -> bool:
    """The payload of an enum-like variant: ``{}``, ``{"#tup": []}``, null or Apalache's
    ``"U_OF_UNIT"``."""
    return (value in ({}, {"#tup": []}, None, [])
            or (isinstance(value, str) and value.upper() == "U_OF_UNIT"))


class ValueDecoder:
    """Reads JSON values (our JSON and ITF as kmc, Apalache or Quint write it) into a model's typed
    values.

    What a value becomes is decided by the field it fills (its annotation in the model) and then by
    its shape: a record is the state type with exactly its fields; ``#set`` fills a ``frozenset``
    field, or a tuple field that stands for a set (sorted, as the model keeps it); ``#map`` with
    keys 0..n-1 fills a tuple indexed by broker id; ``#tup`` and arrays fill tuples; a string fills
    an int field whose values have names (``"fetching"``, ``"FENCED_LEADER_EPOCH"``), and so does a
    Quint variant with no payload (``{"tag": "fetching", "value": {"#tup": []}}``); a variant with a
    record payload is the record type its tag names.
    """

    def __init__(self, types: Iterable[type], sample: Any = None) -> None:
        self.types = collect_types(types, sample)
        self.root: type | None = (type(sample) if sample is not None and hasattr(sample, "_fields")
                                  else None)
        self._in_state = False
        self._by_fields: dict[frozenset[str], list[type]] = {}
        for cls in self.types.values():
            self._by_fields.setdefault(frozenset(cls._fields), []).append(cls)

    def state(self, data: Any, path: str = "state") -> Any:
        """A whole state: a record of the model's root state type."""
        self._in_state = True
        try:
            value = self.value(data, path, self.root)
        finally:
            self._in_state = False
        if self.root is not None and type(value) is not self.root:
            raise ShapeError(path, f"is not a {self.root.__name__} (its variables are "
                             f"{', '.join(self.root._fields)})")
        return value

    def value(self, data: Any, path: str, hint: Any = None, owner: type | None = None, field: str
              | None = None) -> Any:
        if isinstance(data, bool):
            return data
        if isinstance(data, int):
            return data
        if isinstance(data, str):
            return self._name(data, path, owner, field)
        if isinstance(data, float) or data is None:
            raise ShapeError(path, f"{json.dumps(data)} is not a value a state can hold")
        if isinstance(data, list):
            return self._items(data, path, hint, as_set=False)
        if isinstance(data, dict):
            return self._object(data, path, hint, owner, field)
        raise ShapeError(path, f"unexpected JSON value of type {type(data).__name__}")

    def _name(self, text: str, path: str, owner: type | None, field: str | None) -> Any:
        table = name_table(owner, field) if owner is not None and field is not None else None
        if table is None and not self._in_state:
            return text  # an action parameter may be a string
        if table is None:
            raise ShapeError(path, f"the string {text[:40]!r} is not a value a state can hold "
                             "(states hold no "
                                   "strings; named values only in fields that have names)")
        for number, name in table.items():
            if name == text:
                return number
        raise ShapeError(path, f"{text!r} is not a {field} of this model (known: "
                         f"{', '.join(table.values())})")

    def _items(self, items: list, path: str, hint: Any, as_set: bool, fixed: bool = False) -> Any:
        decoded = [self.value(item, f"{path}[{i}]", item_hint(hint, i) if fixed
                              else item_hint(hint))
                   for i, item in enumerate(items)]
        wants_set = typing.get_origin(hint) in (frozenset, set) or hint in (frozenset, set)
        if (wants_set or (as_set and not is_sequence_hint(hint) and typing.get_origin(hint)
                          is not tuple)):
            try:
                return frozenset(decoded)
            except TypeError:
                raise ShapeError(path, "a set of unhashable values") from None
        if as_set:  # a tuple field standing for a set: the model keeps it sorted
            try:
                return tuple(sorted(decoded))
            except TypeError:
                raise ShapeError(path, "a set whose items do not compare") from None
        return tuple(decoded)

    def _object(self, data: dict, path: str, hint: Any, owner: type | None, field: str
                | None) -> Any:
        keys = set(data)
        if keys == {"#bigint"}:
            text = data["#bigint"]
            if not isinstance(text, str) or not _BIGINT.fullmatch(text):
                raise ShapeError(path, "#bigint must hold a decimal integer string")
            try:  # bounded as every integer a file holds (checker.safe_io), before it is converted
                return int_from_text(text, path)
            except BadFileError as exc:
                raise CorruptDataError(str(exc)) from None
        if keys == {"#set"} or keys == {"#tup"}:
            tag = next(iter(keys))
            if not isinstance(data[tag], list):
                raise ShapeError(path, f"{tag} must hold an array")
            if tag == "#tup":
                return self._items(data[tag], path, hint, as_set=False,
                                   fixed=not is_sequence_hint(hint))
            return self._items(data[tag], path, hint, as_set=True)
        if keys == {"#map"}:
            return self._map(data["#map"], path, hint)
        if keys == {"tag", "value"} and isinstance(data["tag"], str):
            return self._variant(data["tag"], data["value"], path, hint, owner, field)
        if any(key.startswith("#") for key in keys):
            raise ShapeError(path, f"unsupported ITF form {sorted(keys)}")
        candidates = self._by_fields.get(frozenset(keys), [])
        if not candidates:
            # a trace written before a state type gained a field with a default (a newer model's
            # inert field): the fields it names are the type's required ones plus some of its
            # defaulted ones
            candidates = [cls for fields, classes in self._by_fields.items() for cls in classes
                          if keys < fields and fields - keys
                          <= set(getattr(cls, "_field_defaults", {}))]
        if len(candidates) > 1:
            allowed = _record_classes(hint)
            candidates = [c for c in candidates if c in allowed] or candidates
        if not candidates:
            raise ShapeError(path, "no state type of this model has exactly the fields "
                             f"{sorted(keys)}")
        if len(candidates) > 1:
            names = ", ".join(c.__name__ for c in candidates)
            raise ShapeError(path, f"the fields {sorted(keys)} fit several state types ({names})")
        return self._record(candidates[0], data, path)

    def _record(self, cls: type, data: dict, path: str) -> Any:
        hints = field_hints(cls)
        defaults = getattr(cls, "_field_defaults", {})
        fields = [self.value(data[name], f"{path}.{name}", hints.get(name), cls, name) if name
                  in data else defaults[name]
                  for name in cls._fields]
        try:
            return cls(*fields)
        except Exception as exc:  # a NamedTuple with checks of its own
            raise ShapeError(path, f"cannot build {cls.__name__}: {exc}") from None

    def _map(self, pairs: Any, path: str, hint: Any) -> Any:
        """A function from broker ids 0..n-1 (``#map``) read into the tuple the model indexes by
        id."""
        if (not isinstance(pairs, list) or not all(isinstance(p, list) and len(p) == 2
                                                   for p in pairs)):
            raise ShapeError(path, "#map must hold an array of [key, value] pairs")
        keys = [self.value(k, f"{path}.key", None) for k, _ in pairs]
        if not all(type(k) is int for k in keys) or sorted(keys) != list(range(len(pairs))):
            raise ShapeError(path, "kmc reads a #map only as a tuple indexed by broker id 0..n-1; "
                             f"the keys are {keys}")
        values = dict(zip(keys, (v for _, v in pairs), strict=True))
        inner = item_hint(hint)
        return tuple(self.value(values[i], f"{path}[{i}]", inner) for i in range(len(pairs)))

    def _variant(self, tag: str, payload: Any, path: str, hint: Any, owner: type | None, field: str
                 | None) -> Any:
        if (_unit(payload) and owner is not None and field is not None and name_table(owner, field)
            is not None):
            return self._name(tag, path, owner, field)
        cls = self.types.get(tag)
        if cls is not None and isinstance(payload, dict) and set(payload) <= set(cls._fields) and \
                set(cls._fields) - set(payload) <= set(getattr(cls, "_field_defaults", {})):
            return self._record(cls, payload, path)
        raise ShapeError(path, f"variant {tag!r} is not a type or a named value of this model")
