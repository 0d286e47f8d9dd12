"""The frontier store: one BFS level's states, in discovery order, in blocks.

A level is written block by block as the level being built finds its new states, and read back
block by block for expansion, so neither the frontier nor the next level has to be one list of
Python objects. A block is held in one of three forms, chosen as it is written:

* **objects**: the states as they are (no cost), for the store's first ``object_states`` states
  (``checker.bfs.FRONTIER_OBJECT_STATES``) while they stay within its budget (counted at
  ``OBJECT_BYTES`` a state, a measured average for a Kafka state whose substructures are shared
  with its siblings);
* **encoded**: the states packed with the model's compact encoding (``Model.encode_state``, the
  state as msgpack arrays; the generic msgpack codec for a model without one) and compressed with
  zlib: a 3-broker Kafka state takes about 10 bytes this way, against a few hundred as objects;
* **on disk**: encoded blocks past the budget go to an anonymous temporary file (unlinked as it is
  created, so nothing is left behind by an exit, a Ctrl-C, an error or a kill) and are read back
  one block at a time.

The budget is what the engine gives each of its two stores (the frontier and the level being
built): a share of ``--max-memory`` (see ``checker.bfs.FRONTIER_SHARE``). Which form a block takes
changes nothing else: the states read back are equal to those written, in the same order, so the
search's counts, parent log and counterexamples are the same at any budget.
"""

from __future__ import annotations

import tempfile
import zlib
from collections.abc import Callable, Iterator
from typing import IO, Any

import msgpack

from checker.codec import Codec
from spec.model import Model

#: states a block holds (the unit of encoding, compression and reading back)
BLOCK = 512
#: what a state kept as objects is counted at against the budget (bytes; measured, bench/NOTES.md)
OBJECT_BYTES = 600
#: zlib level: 1 packs a block of 3-broker Kafka states 10:1 at about 1 microsecond a state
ZLIB_LEVEL = 1


def state_codec(model: Model) -> tuple[Callable[[list[Any]], bytes], Callable[[bytes], list[Any]]]:
    """(pack a list of states, unpack it) with the model's compact encoding, or the generic codec."""
    kind = type(model)
    own = (kind.encode_state is not Model.encode_state and kind.decode_state is not Model.decode_state) or (
        kind.encode_states is not Model.encode_states and kind.decode_states is not Model.decode_states)
    if own:
        encode, decode = model.encode_states, model.decode_states
        packb, unpackb = msgpack.packb, msgpack.unpackb

        def pack(states: list[Any]) -> bytes:
            return packb(encode(states))

        def unpack(data: bytes) -> list[Any]:
            return decode(unpackb(data, use_list=False))

        return pack, unpack
    codec = Codec(model.state_types())

    def pack_generic(states: list[Any]) -> bytes:
        return msgpack.packb([codec.encode(s) for s in states], use_bin_type=True)

    def unpack_generic(data: bytes) -> list[Any]:
        return [codec.decode(raw) for raw in msgpack.unpackb(data, raw=False)]

    return pack_generic, unpack_generic


class FrontierStore:
    """A level's states in blocks: objects, encoded in memory, or encoded on disk (see the module)."""

    def __init__(self, model: Model, budget: float = float("inf"), directory: str | None = None,
                 keep_objects: bool = True, object_states: float = float("inf")) -> None:
        self._pack, self._unpack = state_codec(model)
        self.budget = budget
        self.keep_objects = keep_objects
        #: at most this many states are kept as objects (the first blocks); the others are encoded
        self.object_states = object_states
        self._objects = 0
        self._directory = directory
        #: (form, payload, count): ("objects", list), ("encoded", bytes), ("disk", (offset, length))
        self._blocks: list[tuple[str, Any, int]] = []
        self._pending: list[Any] = []
        self._size = 0
        self._memory = 0  # bytes of the blocks in memory, objects counted at OBJECT_BYTES
        self._disk = 0
        self._file: IO[bytes] | None = None
        self.encoded_states = 0  # states written encoded (in memory or on disk)

    # -- sizes -------------------------------------------------------------------------------------
    def __len__(self) -> int:
        return self._size

    def __bool__(self) -> bool:
        return self._size > 0

    @property
    def memory_bytes(self) -> int:
        return self._memory + len(self._pending) * OBJECT_BYTES

    @property
    def disk_bytes(self) -> int:
        return self._disk

    @property
    def spilled(self) -> bool:
        return self._disk > 0

    # -- writing -----------------------------------------------------------------------------------
    def extend(self, states: list[Any]) -> None:
        """Append ``states`` (in order) to the level."""
        pending = self._pending
        pending.extend(states)
        self._size += len(states)
        while len(pending) >= BLOCK:
            self._seal(pending[:BLOCK])
            del pending[:BLOCK]

    def finish(self) -> FrontierStore:
        """Seal the last, partial block; the store is then read, not written."""
        if self._pending:
            self._seal(self._pending)
            self._pending = []
        return self

    def _seal(self, states: list[Any]) -> None:
        count = len(states)
        if (self.keep_objects and self._objects + count <= self.object_states
                and self._memory + count * OBJECT_BYTES <= self.budget):
            self._blocks.append(("objects", list(states), count))
            self._memory += count * OBJECT_BYTES
            self._objects += count
            return
        data = zlib.compress(self._pack(states), ZLIB_LEVEL)
        self.encoded_states += count
        if self._memory + len(data) <= self.budget:
            self._blocks.append(("encoded", data, count))
            self._memory += len(data)
            return
        if self._file is None:
            self._file = tempfile.TemporaryFile(prefix="kmc-frontier-", dir=self._directory)
        self._file.seek(0, 2)
        offset = self._file.tell()
        self._file.write(data)
        self._blocks.append(("disk", (offset, len(data)), count))
        self._disk += len(data)

    # -- reading -----------------------------------------------------------------------------------
    def blocks(self) -> Iterator[list[Any]]:
        """The states block by block, in order (a block kept as objects is the store's own list: read it only)."""
        for form, payload, _count in self._blocks:
            yield self._block(form, payload)
        if self._pending:
            yield list(self._pending)

    def __iter__(self) -> Iterator[Any]:
        for block in self.blocks():
            yield from block

    def __getitem__(self, index: slice) -> list[Any]:
        """A slice of the level as a list (the parallel engine cuts the first frontier in parts)."""
        if not isinstance(index, slice):
            raise TypeError("a frontier store is read block by block or sliced, not indexed")
        start, stop, step = index.indices(self._size)
        if step != 1:
            raise ValueError("a frontier store is sliced with step 1")
        out: list[Any] = []
        at = 0
        for form, payload, count in [*self._blocks, ("pending", None, len(self._pending))]:
            if at + count > start and at < stop and count:
                block = self._pending if form == "pending" else self._block(form, payload)
                out.extend(block[max(0, start - at):stop - at])
            at += count
        return out

    def _block(self, form: str, payload: Any) -> list[Any]:
        if form == "objects":
            return payload
        if form == "encoded":
            return self._unpack(zlib.decompress(payload))
        offset, length = payload
        assert self._file is not None
        self._file.seek(offset)
        return self._unpack(zlib.decompress(self._file.read(length)))

    def close(self) -> None:
        """Free the blocks and the temporary file (also done when the store is dropped)."""
        self._blocks, self._pending, self._size, self._memory, self._disk = [], [], 0, 0, 0
        self._objects = 0
        if self._file is not None:
            self._file.close()
            self._file = None

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # interpreter shutdown: the file is unlinked already
            pass


def store_of(model: Model, states: Any, budget: float = float("inf"), directory: str | None = None,
             keep_objects: bool = True, object_states: float = float("inf")) -> FrontierStore:
    """``states`` (a list, e.g. a checkpoint's frontier, or a store) as a finished store."""
    if isinstance(states, FrontierStore):
        return states
    store = FrontierStore(model, budget, directory, keep_objects, object_states)
    store.extend(list(states))
    return store.finish()
