"""The frontier store: one BFS level's states, in discovery order, in blocks.

A level is written block by block as the level being built finds its new states, and read back
block by block for expansion, so neither the frontier nor the next level has to be one list of
Python objects. A block is held in one of three forms, chosen as it is written:

* **objects**: the states as they are (no cost), for the store's first ``object_states`` states (the
  engine's share of its memory budget, ``checker.bfs.FRONTIER_OBJECT_SHARE``) while they stay within
  its budget (counted at ``OBJECT_BYTES`` a state, a measured average for a Kafka state whose
  substructures are shared with its siblings): a run whose levels fit pays nothing for the forms
  below;
* **pooled**: for a model that splits its states into shared parts (``Model.state_parts``: a Kafka
  state's brokers, controller, network and the rest), each distinct part is kept once in the
  store's pools and a state is a row of pool indices (``StatePools``), compressed with zlib. A
  level's states share few parts (one step changes one broker and the network), so this costs
  about 5 bytes a 3-broker Kafka state and a quarter of a pooled part, and reading a state back is
  one look-up a part, sharing the parts as the written states did;
* **encoded**: the states packed with the model's compact encoding (``Model.encode_state``, the
  state as msgpack arrays; the generic msgpack codec for a model without one) and compressed with
  zlib: a 3-broker Kafka state takes about 16 bytes this way, against a few hundred as objects, but
  packing and rebuilding it costs about 8 microseconds (pooled: about 2). A model without parts, or
  a store whose pools grew past ``POOL_LIMIT`` (its states share little), uses it;
* **on disk**: encoded blocks past the budget go to an anonymous temporary file (unlinked as it is
  created, so nothing is left behind by an exit, a Ctrl-C, an error or a kill) and are read back
  one block at a time.

The budget is what the engine gives each of its two stores (the frontier and the level being
built): a share of ``--max-memory`` (see ``checker.bfs.FRONTIER_SHARE``). Which form a block takes
changes nothing else: the states read back are equal to those written, in the same order, so the
search's counts, parent log and counterexamples are the same at any budget.
"""

from __future__ import annotations

import functools
import tempfile
import zlib
from collections.abc import Callable, Iterator
from typing import IO, Any

import msgpack

from checker.codec import Codec, has_state_form
from spec.model import INLINE, Model, StateParts

#: states a block holds (the unit of encoding, compression and reading back)
BLOCK = 512
#: what a state kept as objects is counted at against the budget (bytes; measured, bench/NOTES.md)
OBJECT_BYTES = 600
#: zlib level: 1 packs a block of 3-broker Kafka states 10:1 at about 1 microsecond a state
ZLIB_LEVEL = 1
_packb, _unpackb = msgpack.packb, msgpack.unpackb
#: pooled rows are compressed too (a 3-broker Kafka state: about 5 bytes instead of about 25, for
#: well under a microsecond a state)
POOLED_ZLIB = True
#: what a part kept in a store's pools is counted at against the budget (bytes; a broker with its
#: log is the largest part of a Kafka state)
POOL_ENTRY_BYTES = 400
#: a store stops pooling (its later blocks are encoded) once its pools hold more parts than this
#: many plus half its states: the states share too little for pools to save memory
POOL_LIMIT = 65536


class StatePools:
    """The pooled encoding of one store's states (see the module): each distinct part of a state (by
    value) once in the pool of its kind, a state a row of ``width`` values in one msgpack array per
    block: pool indices (one byte each below 128), and the ``INLINE`` parts as they are.

    A part is looked up by identity first (the parts the pools hold are kept alive, so their ids
    stay theirs): the brokers a step left unchanged are the same objects in its successors, and
    hashing a broker costs more than a dictionary look-up by id. A part equal to a pooled one but
    another object is found by value and not remembered by id (it may be freed and its id reused),
    unless it is a part of ``previous``, the pools of the level being expanded: a successor shares
    the parts its step left unchanged with its parent, which was read back from those pools, so it
    is kept alive here too and then found by id (at most one reference a part of ``previous``).
    ``finish()`` lets go of ``previous``.

    The loops over a block are generated from ``kinds`` (one unrolled statement a position), as
    ``spec.kafka.state.updater`` does for updates."""

    def __init__(self, parts: StateParts, previous: StatePools | None = None) -> None:
        kinds = parts.kinds
        self.width = len(kinds)
        pooled = sorted({k for k in kinds if k != INLINE})
        self._values: dict[int, list[Any]] = {k: [] for k in pooled}
        self._by_value: dict[int, dict[Any, int]] = {k: {} for k in pooled}
        self._by_id: dict[int, dict[int, int]] = {k: {} for k in pooled}
        # parts of ``previous`` equal to pooled ones, kept alive to be found by id
        self._kept: list[Any] = []
        self._releases: list[Callable[[], None]] = []
        namespace: dict[str, Any] = {"split": parts.split, "join": parts.join, "_id": id,
                                     "_unset": object()}
        for k in pooled:
            namespace[f"by_id_{k}"] = self._by_id[k]
            namespace[f"values_{k}"] = self._values[k]
            namespace[f"add_{k}"] = self._adder(k, previous._by_id.get(k, {}) if previous
                                                is not None else {})
        names = [f"p{i}" for i in range(self.width)]
        pooled_at = [i for i, k in enumerate(kinds) if k != INLINE]
        # the part at each pooled position in the block's previous state, and its index: states next
        # to each other are often siblings (successors of one parent), which share every part their
        # steps left unchanged, and ``is`` on a part held here (so alive: its identity is its own)
        # costs less than a dictionary look-up
        encode = [f"    {' = '.join([f'last{i}' for i in pooled_at] + ['_unset'])}",
                  "    for state in states:", f"        {', '.join(names)}, = split(state)"]
        row = []
        for i, k in enumerate(kinds):
            if k == INLINE:
                row.append(names[i])
                continue
            encode += [f"        if p{i} is not last{i}:",
                       f"            index{i} = by_id_{k}.get(_id(p{i}))",
                       f"            if index{i} is None:",
                       f"                index{i} = add_{k}(p{i})",
                       f"            last{i} = p{i}"]
            row.append(f"index{i}")
        source = ("def encode(states):\n    row = []\n    extend = row.extend\n" + "\n".join(encode)
                  + f"\n        extend(({', '.join(row)},))\n    return row\n")
        parts_of = [names[i] if k == INLINE else f"values_{k}[{names[i]}]"
                    for i, k in enumerate(kinds)]
        # the flat row, ``width`` ints at a time
        rows = f"zip({', '.join(['indices'] * self.width)})"
        source += ("def decode(row):\n    indices = iter(row)\n"
                   f"    return [join({', '.join(parts_of)}) for {', '.join(names)}, in {rows}]\n")
        # generated from the model's part kinds, no outside input
        exec(_compiled(source), namespace)  # noqa: S102
        # popped: a function in its own globals is a reference cycle, and the search runs with the
        # collector off
        self._encode, self._decode = namespace.pop("encode"), namespace.pop("decode")

    def _adder(self, kind: int, previous_ids: dict[int, int]) -> Callable[[Any], int]:
        # no reference to ``self`` in the closures: the search runs with the garbage collector off,
        # so a cycle through the generated functions would keep every level's pools alive
        values, by_value, by_id, kept = self._values[kind], self._by_value[kind], self._by_id[
            kind], self._kept

        def add(part: Any) -> int:
            index = by_value.get(part)
            if index is None:
                index = by_value[part] = by_id[id(part)] = len(values)
                values.append(part)
            elif id(part) in previous_ids:  # alive, so it is that part of ``previous``
                by_id[id(part)] = index
                kept.append(part)
            return index

        def release() -> None:
            nonlocal previous_ids
            previous_ids = {}

        self._releases.append(release)
        return add

    @property
    def entries(self) -> int:
        """Distinct parts held, all kinds."""
        return sum(len(values) for values in self._values.values())

    def finish(self) -> None:
        """No more states are written: let go of the previous level's pools."""
        for release in self._releases:
            release()

    def encode(self, states: list[Any]) -> bytes:
        """The block's rows as one msgpack array (most values take one byte: counters, the indices
        of small pools). An inline part msgpack cannot pack raises TypeError, an int past 64 bits
        OverflowError."""
        return _packb(self._encode(states))

    def decode(self, data: bytes) -> list[Any]:
        return self._decode(_unpackb(data, use_list=False))


@functools.lru_cache(maxsize=16)
def _compiled(source: str) -> Any:
    """The generated loops compiled once per model shape (a store is made every level)."""
    return compile(source, "<kmc frontier pools>", "exec")


def state_codec(model: Model) -> tuple[Callable[[list[Any]], bytes], Callable[[bytes], list[Any]]]:
    """(pack a list of states, unpack it) with the model's compact encoding, or the generic
    codec."""
    kind = type(model)
    own_block = (kind.encode_states is not Model.encode_states and kind.decode_states
                 is not Model.decode_states)
    if has_state_form(model) or own_block:
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
    """A level's states in blocks: objects, encoded in memory, or encoded on disk (see the
    module)."""

    def __init__(self, model: Model, budget: float = float("inf"), directory: str | None = None,
                 keep_objects: bool = True, object_states: float = float("inf"),
                 previous: FrontierStore | None = None) -> None:
        """``previous``: the store of the level being expanded (its pools are looked in, see
        ``StatePools``)."""
        self._pack, self._unpack = state_codec(model)
        #: the pooled encoding, made when the first block is encoded (most levels of a small search
        #: never are)
        self._parts = model.state_parts()
        self._previous = previous
        self._pools: StatePools | None = None
        self.budget = budget
        self.keep_objects = keep_objects
        #: at most this many states are kept as objects (the first blocks); the others are encoded
        self.object_states = object_states
        self._objects = 0
        self._directory = directory
        #: (form, payload, count): ("objects", list), ("pooled" or "encoded", bytes), ("disk",
        #: (offset, length, form))
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
        """Append ``states`` (in order) to the level (the list is read, not kept).

        Each state is copied once, into its block (a slice of ``states``, or the pending block
        completed from its first states), not also into the pending list and out of it again."""
        pending = self._pending
        self._size += len(states)
        if len(pending) + len(states) < BLOCK:
            pending.extend(states)
            return
        at = 0
        if pending:  # the pending states and the first of these make a block
            at = BLOCK - len(pending)
            pending += states[:at]
            self._seal(pending)
        end = at + (len(states) - at) // BLOCK * BLOCK
        for start in range(at, end, BLOCK):
            self._seal(states[start:start + BLOCK])
        self._pending = states[end:]

    def finish(self) -> FrontierStore:
        """Seal the last, partial block; the store is then read, not written."""
        if self._pending:
            self._seal(self._pending)
            self._pending = []
        if self._pools is not None:
            self._pools.finish()
        self._previous = None
        return self

    def _seal(self, states: list[Any]) -> None:
        """Write one block (``states``: a list the store takes, as it is when kept as objects)."""
        count = len(states)
        if (self.keep_objects and self._objects + count <= self.object_states
                and self._memory + count * OBJECT_BYTES <= self.budget):
            self._blocks.append(("objects", states, count))
            self._memory += count * OBJECT_BYTES
            self._objects += count
            return
        pools = self._pools
        if pools is None and self._parts is not None:
            previous = self._previous._pools if self._previous is not None else None
            pools = self._pools = StatePools(self._parts, previous)
        data = None
        if pools is not None and pools.entries <= POOL_LIMIT + (self.encoded_states >> 1):
            held = pools.entries
            try:
                data, form = pools.encode(states), "pooled"
                if POOLED_ZLIB:
                    data = zlib.compress(data, ZLIB_LEVEL)
            # an inline part that is not a small int: this block is encoded
            except (OverflowError, TypeError):
                pass
            self._memory += (pools.entries - held) * POOL_ENTRY_BYTES  # the pools stay in memory
        if data is None:
            data, form = zlib.compress(self._pack(states), ZLIB_LEVEL), "encoded"
        self.encoded_states += count
        if self._memory + len(data) <= self.budget:
            self._blocks.append((form, data, count))
            self._memory += len(data)
            return
        if self._file is None:
            self._file = tempfile.TemporaryFile(prefix="kmc-frontier-", dir=self._directory)
        self._file.seek(0, 2)
        offset = self._file.tell()
        self._file.write(data)
        self._blocks.append(("disk", (offset, len(data), form), count))
        self._disk += len(data)

    # -- reading -----------------------------------------------------------------------------------
    def blocks(self) -> Iterator[list[Any]]:
        """The states block by block, in order (a block kept as objects is the store's own list:
        read it only)."""
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

    # -- cutting a finished store at either end (the parallel engine's parts move between workers)
    def take_head(self, k: int) -> list[Any]:
        """Remove the first ``k`` states and return them; only the blocks they are in are read."""
        return self._take(k, head=True)

    def take_tail(self, k: int) -> list[Any]:
        """Remove the last ``k`` states and return them; only the blocks they are in are read."""
        return self._take(k, head=False)

    def _take(self, k: int, head: bool) -> list[Any]:
        assert not self._pending, "a store is cut once finished"
        k = max(0, min(k, self._size))
        taken: list[list[Any]] = []
        left = k
        while left:
            form, payload, count = self._blocks.pop(0 if head else -1)
            states = list(self._block(form, payload))
            self._forget(form, payload, count)
            if count > left:  # the block is split: the part that stays goes back as objects
                stay, states = ((states[left:], states[:left]) if head
                                else (states[:-left], states[-left:]))
                self._put(stay, head)
            taken.append(states)
            left -= len(states)
        if not head:
            taken.reverse()
        return [state for states in taken for state in states]

    def put_head(self, states: list[Any]) -> None:
        """Add ``states`` (in order) before the first state, as objects."""
        self._put(states, head=True)

    def put_tail(self, states: list[Any]) -> None:
        """Add ``states`` (in order) after the last state, as objects."""
        self._put(states, head=False)

    def _put(self, states: list[Any], head: bool) -> None:
        if not states:
            return
        block = ("objects", list(states), len(states))
        if head:
            self._blocks.insert(0, block)
        else:
            self._blocks.append(block)
        self._size += len(states)
        self._memory += len(states) * OBJECT_BYTES
        self._objects += len(states)

    def _forget(self, form: str, payload: Any, count: int) -> None:
        self._size -= count
        if form == "objects":
            self._memory -= count * OBJECT_BYTES
            self._objects -= count
        elif form == "disk":
            self._disk -= payload[1]
        else:
            self._memory -= len(payload)

    def _block(self, form: str, payload: Any) -> list[Any]:
        if form == "objects":
            return payload
        if form == "disk":
            offset, length, form = payload
            assert self._file is not None
            self._file.seek(offset)
            payload = self._file.read(length)
        if form == "pooled":
            assert self._pools is not None
            return self._pools.decode(zlib.decompress(payload) if POOLED_ZLIB else payload)
        return self._unpack(zlib.decompress(payload))

    def close(self) -> None:
        """Free the blocks and the temporary file (also done when the store is dropped)."""
        self._blocks, self._pending, self._size, self._memory, self._disk = [], [], 0, 0, 0
        self._objects = 0
        # the pools die with the blocks; not written again
        self._pools = self._parts = self._previous = None
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
