"""A safe binary codec for states and actions (checkpoints, Spark levels, msgpack traces).

msgpack with two extension types: a frozenset, and a NamedTuple named by its class. Decoding
builds only the NamedTuple classes the model declares in ``state_types()``; anything else in a
file is an error, never code to run (no pickle anywhere near user files).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import msgpack

from checker.safe_io import MAX_INT, check_int, check_ints
from spec.errors import BadFileError, CorruptDataError
from spec.fields import checked_new

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
        return msgpack.ExtType(_EXT_FROZENSET,
                               packb(sorted((_to_plain(i) for i in obj), key=_ext_key)))
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
            value = self._unpack(data)
        except BadFileError:
            raise
        except Exception as exc:  # msgpack raises many types on corrupt input
            raise CorruptDataError(f"corrupt encoded data ({type(exc).__name__}: {exc})") from None
        # the extensions checked their own items (_hashable)
        if not isinstance(value, tuple | frozenset):
            try:
                check_ints(value, "encoded data")
            except BadFileError as exc:
                raise CorruptDataError(str(exc)) from None
        return value

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
                max_str_len=size, max_bin_len=size, max_array_len=size, max_map_len=size // 2,
                max_ext_len=size,
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
    if isinstance(value, list):
        return tuple([_hashable(v) for v in value])
    # msgpack's integers reach 2^64-1; the files' stop at 2^63-1
    if type(value) is int and value > MAX_INT:
        try:
            check_int(value, "encoded data")
        except BadFileError as exc:
            raise CorruptDataError(str(exc)) from None
    return value


class CompactCodec:
    """A faster msgpack encoding of states for data that one run writes and reads back itself
    (the Spark engine's Arrow columns): no user file is ever read with it.

    Plain tuples are msgpack arrays (decoded as tuples by msgpack's C code), a NamedTuple is a
    one-entry map from its type's number (its place among the model's state types sorted by name)
    to its fields, a frozenset a one-entry map from -1 to its sorted items. Encoding and decoding
    make one Python call per NamedTuple or frozenset, not per value: 10-20x faster than ``Codec``
    on Kafka states, and half the bytes. Decoding builds only the declared types; anything else is
    ``CorruptDataError``.
    """

    def __init__(self, types: Iterable[type]) -> None:
        self._types = tuple(sorted(types, key=lambda t: t.__name__))
        self._numbers = {t: i for i, t in enumerate(self._types)}
        self._packer = msgpack.Packer(default=self._default, strict_types=True, use_bin_type=True,
                                      autoreset=True)

    # a Packer cannot be pickled: Spark ships the types only
    def __getstate__(self) -> dict[str, Any]:
        return {"types": self._types}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["types"])

    def _default(self, obj: Any) -> Any:
        kind = type(obj)
        if kind is tuple:
            return list(obj)
        number = self._numbers.get(kind)
        if number is not None:
            return {number: list(obj)}
        if kind is frozenset:
            return {-1: sorted(obj)}
        if kind is bool or kind is int:  # not reached: msgpack packs them itself
            return obj
        raise TypeError(f"cannot encode a {kind.__name__} in a state")

    def encode(self, obj: Any) -> bytes:
        return self._packer.pack(obj)

    def _pairs(self, pairs: list[tuple[Any, Any]]) -> Any:
        if len(pairs) != 1:
            raise CorruptDataError("a map in compact encoded data holds more than one entry")
        ((number, items),) = pairs
        if number == -1:
            return frozenset(items)
        try:
            cls = self._types[number]
        except (IndexError, TypeError):
            raise CorruptDataError(f"unknown state type number {number!r} in compact encoded "
                                   "data") from None
        try:
            # spec.fields reads a field unchecked: the width is checked
            return checked_new(cls, items)
        except ValueError as exc:
            raise CorruptDataError(f"compact encoded data: {exc}") from None

    def decode(self, data: bytes) -> Any:
        try:
            return msgpack.unpackb(data, raw=False, use_list=False, object_pairs_hook=self._pairs,
                                   strict_map_key=False)
        except CorruptDataError:
            raise
        except Exception as exc:
            raise CorruptDataError(f"corrupt compact encoded data ({type(exc).__name__}: "
                                   f"{exc})") from None


def has_state_form(model: Any) -> bool:
    """True when ``model`` has its own compact plain form of a state (``encode_state`` and
    ``decode_state`` both overridden, see ``spec.model.Model.encode_state``)."""
    from spec.model import Model

    kind = type(model)
    return (kind.encode_state is not Model.encode_state and kind.decode_state
            is not Model.decode_state)


class ModelStateCodec:
    """States as msgpack of the model's own plain form (``Model.encode_state``/``decode_state``),
    for data that one run writes and reads back itself (the Spark engine's Arrow columns), like
    ``CompactCodec`` but cheaper where a model has such a form.

    The plain form is nested tuples of ints and bools (a NamedTuple is one: msgpack packs it as an
    array in its C code, with no Python call per record), so encoding is one C call; decoding is
    msgpack's C code plus the model's ``decode_state`` rebuilding its classes. On 3-broker Kafka
    states about 4 us to encode against ``CompactCodec``'s 9, and 11% fewer bytes
    (bench/NOTES.md). Anything that does not decode to a state is ``CorruptDataError``.
    """

    def __init__(self, model: Any) -> None:
        self._model = model
        self._encode_state = model.encode_state
        self._decode_state = model.decode_state
        self._packer = msgpack.Packer(use_bin_type=True, autoreset=True)

    # a Packer cannot be pickled: Spark ships the model only
    def __getstate__(self) -> dict[str, Any]:
        return {"model": self._model}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["model"])

    def encode(self, state: Any) -> bytes:
        return self._packer.pack(self._encode_state(state))

    def decode(self, data: bytes) -> Any:
        try:
            plain = msgpack.unpackb(data, use_list=False, raw=False)
        except Exception as exc:  # msgpack raises many types on corrupt input
            raise CorruptDataError(f"corrupt encoded state ({type(exc).__name__}: {exc})") from None
        if type(plain) is not tuple:
            raise CorruptDataError(f"corrupt encoded state (a {type(plain).__name__}, not an "
                                   "array)")
        try:
            state = self._decode_state(plain)
        except Exception as exc:  # the model's classes rebuilt from data of the wrong shape
            raise CorruptDataError(f"corrupt encoded state ({type(exc).__name__}: {exc})") from None
        fields = getattr(type(state), "_fields", None)
        if fields is not None and len(state) != len(fields):
            raise CorruptDataError(f"corrupt encoded state ({len(state)} fields for a "
                                   f"{type(state).__name__})")
        return state


def state_column_codec(model: Any) -> ModelStateCodec | CompactCodec:
    """The codec of a column of states written and read back by one run: the model's own plain form
    when it has one (``ModelStateCodec``), else ``CompactCodec`` over its state types."""
    if has_state_form(model):
        return ModelStateCodec(model)
    return CompactCodec(model.state_types())
