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
from collections.abc import Iterable
from typing import Any

_SAFE_INT = 2**53 - 1
_BIGINT = re.compile(r"-?[0-9]{1,4000}")


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


class ValueDecoder:
    """Reads ITF JSON values back into a model's typed values."""

    def __init__(self, types: Iterable[type], sample: Any = None) -> None:
        self.types = collect_types(types, sample)
        self.root: type | None = type(sample) if sample is not None and hasattr(sample, "_fields") else None
        self._by_fields: dict[frozenset[str], list[type]] = {}
        for cls in self.types.values():
            self._by_fields.setdefault(frozenset(cls._fields), []).append(cls)

    def state(self, data: Any, path: str = "state") -> Any:
        """A whole state: a record of the model's root state type."""
        value = self.value(data, path, self.root.__name__ if self.root else None)
        if self.root is not None and type(value) is not self.root:
            raise ShapeError(path, f"is not a {self.root.__name__} (its variables are {', '.join(self.root._fields)})")
        return value

    def value(self, data: Any, path: str, hint: str | None = None) -> Any:
        if isinstance(data, bool) or isinstance(data, str):
            return data
        if isinstance(data, int):
            return data
        if isinstance(data, float) or data is None:
            raise ShapeError(path, f"{json.dumps(data)} is not a value a state can hold")
        if isinstance(data, list):
            items = [self.value(item, f"{path}[{i}]", _item_hint(hint)) for i, item in enumerate(data)]
            if hint is not None and hint.startswith("frozenset"):
                return frozenset(items)
            return tuple(items)
        if isinstance(data, dict):
            return self._object(data, path, hint)
        raise ShapeError(path, f"unexpected JSON value of type {type(data).__name__}")

    def _object(self, data: dict, path: str, hint: str | None) -> Any:
        keys = set(data)
        if keys == {"#bigint"}:
            text = data["#bigint"]
            if not isinstance(text, str) or not _BIGINT.fullmatch(text):
                raise ShapeError(path, "#bigint must hold a decimal integer string")
            return int(text)
        if keys == {"#set"} or keys == {"#tup"}:
            items = data["#set"] if "#set" in keys else data["#tup"]
            if not isinstance(items, list):
                raise ShapeError(path, f"{next(iter(keys))} must hold an array")
            decoded = [self.value(item, f"{path}[{i}]", _item_hint(hint)) for i, item in enumerate(items)]
            return frozenset(decoded) if "#set" in keys else tuple(decoded)
        if any(key.startswith("#") for key in keys):
            raise ShapeError(path, f"unsupported ITF form {sorted(keys)} (kmc states hold no maps or variants)")
        candidates = self._by_fields.get(frozenset(keys), [])
        if len(candidates) > 1 and hint is not None:
            candidates = [c for c in candidates if c.__name__ == hint] or candidates
        if not candidates:
            raise ShapeError(path, f"no state type of this model has exactly the fields {sorted(keys)}")
        if len(candidates) > 1:
            names = ", ".join(c.__name__ for c in candidates)
            raise ShapeError(path, f"the fields {sorted(keys)} fit several state types ({names})")
        cls = candidates[0]
        hints = getattr(cls, "__annotations__", {})
        fields = []
        for name in cls._fields:
            annotation = hints.get(name)
            fields.append(self.value(data[name], f"{path}.{name}", _hint_name(annotation)))
        try:
            return cls(*fields)
        except Exception as exc:  # a NamedTuple with checks of its own
            raise ShapeError(path, f"cannot build {cls.__name__}: {exc}") from None


def _hint_name(annotation: Any) -> str | None:
    if annotation is None:
        return None
    if isinstance(annotation, str):
        return annotation.strip().strip("'\"")
    return getattr(annotation, "__name__", None) or str(annotation)


def _item_hint(hint: str | None) -> str | None:
    """``tuple[QuorumState, ...]`` -> ``QuorumState``; ``frozenset[tuple[int, int]]`` -> ``tuple[int, int]``."""
    if hint is None or "[" not in hint or not hint.endswith("]"):
        return None
    inner = hint[hint.index("[") + 1 : -1]
    depth = 0
    for i, char in enumerate(inner):
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
        elif char == "," and depth == 0:
            return inner[:i].strip() or None
    return inner.strip() or None
