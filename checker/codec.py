"""A safe binary codec for states and actions (checkpoints, Spark levels, msgpack traces).

msgpack with two extension types: a frozenset, and a NamedTuple named by its class. Decoding
builds only the NamedTuple classes the model declares in ``state_types()``; anything else in a
file is an error, never code to run (no pickle anywhere near user files).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import msgpack

from checker.errors import BadFileError, CorruptDataError

_EXT_FROZENSET = 1
_EXT_NAMEDTUPLE = 2
_EXT_TUPLE = 3


def _to_plain(obj: Any) -> Any:
    # msgpack would turn tuples into lists; keep the distinction so decoding rebuilds equal states
    if isinstance(obj, msgpack.ExtType):
        return obj
    if isinstance(obj, tuple):
        fields = getattr(obj, "_fields", None)
        items = [_to_plain(item) for item in obj]
        if fields is not None:
            return msgpack.ExtType(_EXT_NAMEDTUPLE, packb([type(obj).__name__, items]))
        return msgpack.ExtType(_EXT_TUPLE, packb(items))
    if isinstance(obj, frozenset):
        return msgpack.ExtType(_EXT_FROZENSET, packb(sorted((_to_plain(i) for i in obj), key=_ext_key)))
    if isinstance(obj, list):
        return [_to_plain(item) for item in obj]
    if isinstance(obj, dict):
        return {key: _to_plain(value) for key, value in obj.items()}
    return obj


def _ext_key(item: Any) -> Any:
    if isinstance(item, msgpack.ExtType):
        return (1, item.code, item.data)
    return (0, repr(item))


def packb(obj: Any) -> bytes:
    return msgpack.packb(_to_plain(obj), use_bin_type=True)


#: deepest nesting of extension types (tuples, sets, records) decoded; a state nests a handful
MAX_EXT_DEPTH = 64


class Codec:
    """Encodes and decodes values built from a model's state types."""

    def __init__(self, types: Iterable[type]) -> None:
        self._types = {t.__name__: t for t in types}
        self._depth = 0

    def encode(self, obj: Any) -> bytes:
        return packb(obj)

    def decode(self, data: bytes) -> Any:
        self._depth = 0
        try:
            return self._unpack(data)
        except BadFileError:
            raise
        except Exception as exc:  # msgpack raises many types on corrupt input
            raise CorruptDataError(f"corrupt encoded data ({type(exc).__name__}: {exc})") from None

    def _unpack(self, data: bytes) -> Any:
        # each extension is decoded by a nested unpackb: bound the nesting, or a hostile file
        # nests extensions until the C stack overflows
        if self._depth >= MAX_EXT_DEPTH:
            raise CorruptDataError(f"encoded data nested more than {MAX_EXT_DEPTH} levels deep")
        self._depth += 1
        try:
            size = len(data)
            return msgpack.unpackb(
                data, raw=False, ext_hook=self._ext_hook, strict_map_key=False,
                max_str_len=size, max_bin_len=size, max_array_len=size, max_map_len=size // 2, max_ext_len=size,
            )
        finally:
            self._depth -= 1

    def _ext_hook(self, code: int, data: bytes) -> Any:
        if code == _EXT_FROZENSET:
            return frozenset(_hashable(i) for i in self._unpack(data))
        if code == _EXT_TUPLE:
            return tuple(_hashable(i) for i in self._unpack(data))
        if code == _EXT_NAMEDTUPLE:
            name, items = self._unpack(data)
            cls = self._types.get(name)
            if cls is None:
                raise BadFileError(f"unknown state type {name!r} in encoded data")
            return cls(*[_hashable(i) for i in items])
        raise BadFileError(f"unknown msgpack extension type {code}")


def _hashable(value: Any) -> Any:
    return tuple(_hashable(v) for v in value) if isinstance(value, list) else value
