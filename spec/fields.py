"""Named fields of a NamedTuple state type read at the cost of an index (CPython).

A model reads its state by field name (``broker.log``, ``state.controller``), as a Kafka engineer
reads the code. On CPython 3.11 a NamedTuple field is a ``_tuplegetter`` descriptor that the
interpreter's attribute specialisation does not know: every ``broker.log`` goes the generic way
(type look-up, then the descriptor's call), about 100 machine instructions, where ``broker[1]``
takes about 15. The Kafka model reads dozens of fields a successor, so names cost it about 9% of its
instructions (bench/NOTES.md, "Named fields at the cost of an index").

``fast_fields(cls)`` replaces each field's descriptor by a read-only *member descriptor* (the kind
``__slots__`` makes) at the offset of that item inside the tuple. The interpreter specialises a
member descriptor (``LOAD_ATTR_SLOT``: one type-version check and one load), and the value read is
the same object ``cls[i]`` returns. Nothing else changes: the class is still a tuple and a
NamedTuple (hash, equality, ``_fields``, ``_replace``, pickling, msgpack), and setting or deleting a
field is still an ``AttributeError``.

The one rule this adds: an instance must have exactly ``len(cls._fields)`` items, because a member
descriptor reads its offset unchecked. A NamedTuple's constructor ensures it; code that builds an
instance with ``tuple.__new__(cls, items)`` from data it did not make (a file, a column) checks the
width first (``checked_new``; the decoders of ``spec.kafka.state`` and ``checker.codec`` do).

It is done only where it is shown to work: CPython, the tuple layout the offsets assume, and a read
back of every field of a probe instance. Anywhere else, or if a check fails, the class keeps its
NamedTuple descriptors and only speed differs.
"""

from __future__ import annotations

import functools
import sys
from typing import Any

try:
    import ctypes
except ImportError:  # a Python built without ctypes: the classes keep their own descriptors
    ctypes = None  # type: ignore[assignment]

#: ``structmember.h``: a PyObject* field that raises AttributeError when NULL; the descriptor
#: refuses writes
_T_OBJECT_EX = 16
_READONLY = 1

#: the member definitions the descriptors point to: they must live as long as the classes (the
#: process)
_DEFINITIONS: list[Any] = []


@functools.lru_cache(maxsize=1)
def _member_api() -> tuple[Any, Any]:
    """(``struct PyMemberDef`` as a ctypes structure, ``PyDescr_NewMember``). The struct (name,
    type, offset, flags, doc) is the same in CPython 3.8 to 3.13."""

    class MemberDef(ctypes.Structure):
        _fields_ = [("name", ctypes.c_char_p), ("type", ctypes.c_int), ("offset", ctypes.c_ssize_t),
                    ("flags", ctypes.c_int), ("doc", ctypes.c_char_p)]

    function = ctypes.pythonapi.PyDescr_NewMember
    function.restype = ctypes.py_object
    function.argtypes = [ctypes.py_object, ctypes.POINTER(MemberDef)]
    return MemberDef, function


def fast_fields(cls: type) -> bool:
    """Give NamedTuple class ``cls`` member descriptors for its fields (see the module). True when
    done; False (``cls`` unchanged) on another interpreter or when the probe does not read back."""
    fields = getattr(cls, "_fields", None)
    if (ctypes is None or sys.implementation.name != "cpython" or not fields
        or not issubclass(cls, tuple)):
        return False
    if (cls.__basicsize__ != tuple.__basicsize__ or cls.__itemsize__ != tuple.__itemsize__
        or not tuple.__itemsize__):
        # a subclass with its own layout (slots, a dict): the items are not where we think
        return False
    try:
        member_def, new_member = _member_api()
    except AttributeError:  # no C API to reach
        return False
    original = {name: cls.__dict__[name] for name in fields if name in cls.__dict__}
    if len(original) != len(fields):
        return False
    header, item = tuple.__basicsize__, tuple.__itemsize__
    definitions = []
    try:
        for position, name in enumerate(fields):
            definition = member_def(name.encode(), _T_OBJECT_EX, header + position * item,
                                    _READONLY, None)
            definitions.append(definition)
            setattr(cls, name, new_member(cls, ctypes.byref(definition)))
        probe = tuple.__new__(cls, [object() for _ in fields])
        if any(getattr(probe, name) is not probe[position] for position, name in enumerate(fields)):
            raise ValueError("a field does not read back its item")
        try:
            setattr(probe, fields[0], None)
        except AttributeError:
            pass
        else:
            raise ValueError("a field can be written")
    except Exception:  # noqa: BLE001 (any failure: keep the NamedTuple's own descriptors)
        for name, descriptor in original.items():
            setattr(cls, name, descriptor)
        return False
    _DEFINITIONS.extend(definitions)
    return True


def checked_new(cls: type, items: Any) -> Any:
    """``tuple.__new__(cls, items)`` for items read from outside (a file, a column): ValueError
    unless a NamedTuple class gets exactly as many as it has fields, which a class given
    ``fast_fields`` requires (a tuple class without fields takes any number)."""
    instance = tuple.__new__(cls, items)
    fields = getattr(cls, "_fields", None)
    if fields is not None and len(instance) != len(fields):
        raise ValueError(f"{len(instance)} items for a {cls.__name__} of {len(fields)} fields")
    return instance
