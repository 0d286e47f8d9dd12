"""The model interface every checked system implements.

In the spirit of Stateright and TLA+: a model gives its initial states, the enabled actions of a
state (each a named action *with parameters*) with their successor states, an optional state
constraint (the bounds) and an optional symmetry (a canonical form of a state). It knows nothing
about search.

States are immutable, hashable values with named variables: ``typing.NamedTuple`` instances whose
fields hold ints, bools, tuples, frozensets and further NamedTuples. Strings, floats and ``None``
are not allowed inside a state because their hashes are not stable across processes (see
``checker.fingerprint``); encode "no leader" as -1, an enumeration as a small int.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple, Protocol

State = Any  # a NamedTuple; kept as Any so models can use their own NamedTuple classes


class Action(NamedTuple):
    """A named action with its parameters, e.g. ``Fetch(follower=2, leader=1)``.

    Models should build their actions once (they are small immutable values) and reuse them, so
    that successor generation allocates nothing per action.
    """

    name: str
    params: tuple[tuple[str, Any], ...] = ()

    def __str__(self) -> str:
        if not self.params:
            return self.name
        inner = ", ".join(f"{key}={value}" for key, value in self.params)
        return f"{self.name}({inner})"

    def param(self, key: str, default: Any = None) -> Any:
        for name, value in self.params:
            if name == key:
                return value
        return default

    def to_data(self) -> dict[str, Any]:
        return {"name": self.name, "params": {k: v for k, v in self.params}}

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> Action:
        params = data.get("params", {}) or {}
        return cls(str(data["name"]), tuple((str(k), v) for k, v in params.items()))


def action(name: str, **params: Any) -> Action:
    """Build an action: ``action("Fetch", follower=2, leader=1)``."""
    return Action(name, tuple(params.items()))


class StateParts(NamedTuple):
    """A state as a fixed number of parts (``Model.state_parts``): ``split(state)`` gives them and
    ``join(*parts)`` rebuilds an equal state. ``kinds`` says how each position is stored: ``INLINE``
    (a value msgpack gives back as it was: an int such as a bound's counter, a bool, None; never a
    NamedTuple, which would come back a plain tuple) goes into the state's row as it is; any other
    kind names a pool, and the part (a hashable value that states of a level share: a broker a step
    left unchanged, the controller, the network) is stored once in it and named by its index.
    Positions of one kind share one pool (the brokers); values of two kinds are never compared with
    each other (a plain tuple equals a NamedTuple with the same items)."""

    kinds: tuple[int, ...]
    split: Callable[[Any], Sequence[Any]]
    join: Callable[..., Any]


#: ``StateParts.kinds``: the part is an int kept in the row itself
INLINE = -1


class KernelSource(NamedTuple):
    """A model's compiled successor kernel (``Model.kernel``; ``checker.kernel`` compiles, loads and
    searches with it). The C file lives beside the readable model it mirrors, rule for rule, and
    includes the engine's search (``checker/kernel_search.h``, which documents what the file
    defines). A state crosses between the two as ``state_bytes`` bytes: ``pack`` and ``unpack`` are
    exact inverses on the reachable states, and the kernel's successors come in the readable model's
    order with action codes that ``action`` names as the readable model does. Bit i of the kernel's
    violation mask is invariant ``invariants[i]`` of the model's family; ``symmetry`` says the
    kernel's canonical form is the model's ``canonical``."""

    source: str  # the C file's path
    #: compile-time constants: the configuration's that shape the state (part of the library's
    #: cache key)
    defines: tuple[tuple[str, int], ...]
    state_bytes: int
    pack: Callable[[Any], bytes]
    unpack: Callable[[bytes], Any]
    action: Callable[[int], Action]
    invariants: tuple[str, ...]
    symmetry: bool = False
    #: why this configuration is out of the kernel's reach (then the readable model runs), or None
    unsupported: str | None = None
    #: the ``--reduce`` methods the C file compiles (``km_reduce``: the state the search stores, as
    #: the model's ``dead_messages().reduce``), applied where the local engine applies them
    reductions: tuple[str, ...] = ()
    #: run-time constants: the configuration's bounds and flags that only guard rules, in the order
    #: of the C file's ``KM_CONFIG`` (``checker/kernel_search.h``); not in the cache key, one
    #: compiled library serves every value of them
    config: tuple[tuple[str, int], ...] = ()


class DeadMessages(Protocol):
    """What a model that declares dead messages gives ``--reduce dead`` (``Model.dead_messages``;
    ``checker.dead`` documents the reduction, ``spec.kafka.dead`` is the Kafka model's)."""

    def reduce(self, state: Any) -> Any:
        """The state without its dead messages (the form the search stores)."""

    def dead(self, state: Any, message: Any) -> bool:
        """Whether ``message``, in flight in ``state``, is dead."""

    def deliveries(self, state: Any) -> list[tuple[Action, Any]]:
        """The model's own steps that deliver the dead messages of ``state`` (a reduced trace's
        replay)."""

    def describe(self) -> list[str]:
        """The kinds of dead message it declares, in words (``--json``'s ``reduction``)."""


class Model(ABC):
    """A finite transition system to check.

    Subclasses set ``name`` (the registry name, e.g. ``"two-phase"``), ``family`` (which set of
    invariants applies, see ``invariants.registry``) and ``constants`` (the parameters, as TLA+
    calls them), and implement ``init_states`` and ``successors``.
    """

    name: str = "model"
    family: str = "model"
    constants: Mapping[str, Any] = {}
    #: True when ``canonical`` implements a real symmetry reduction.
    has_symmetry: bool = False
    #: the protocol version this instance models, for a model that has versions
    #: (``ModelInfo.protocols``); written into trace headers and checked when a trace is replayed.
    #: None: the model has no versions
    protocol: str | None = None
    #: TLC checks deadlock unless told not to; False for a model whose bounded runs end in states
    #: with nothing left to do (every record produced, a broker down past the crash bound), where
    #: ``--deadlock`` turns the check on
    deadlock_by_default: bool = True

    # -- what ``kmc matrix`` reads (``kmc.matrix.run``); each is optional --------------------------
    #: extra rows of the matrix: (protocol, (FLAG=on|off, ...)) pairs, e.g.
    #: ``("3.9.1", ("unclean=on",))``
    matrix_variants: Sequence[tuple[str, Sequence[str]]] = ()
    #: invariant -> NAME=VALUE assignments (or a dict of constants) applied before ``--const``, for
    #: properties whose counterexamples need actions the default bounds leave out
    matrix_bounds: Mapping[str, Any] = {}
    #: invariants left out of the matrix's default columns (``--invariant`` still checks them)
    matrix_excluded: Sequence[str] = ()

    def matrix_bound_sets(self) -> Mapping[str, Mapping[str, Any]]:
        """Named sets of matrix bounds (``kmc matrix --bounds NAME``): invariant -> assignments, as
        ``matrix_bounds``; the set ``default`` is ``matrix_bounds`` unless given here."""
        return {}

    def matrix_story(self, protocol: str, invariant: str, trace: Any) -> str | None:
        """A one-line name of the KIP or JIRA story a violated cell's counterexample is an instance
        of, for a model without a rule table (a model with one has its stories computed,
        ``checker.stories``); None: no story."""
        return None

    def all_actions(self) -> Sequence[Action] | None:
        """Every action the model can take, for ``--coverage``'s list of actions that never fired;
        None: the actions found among the model's attributes (models build their actions once)."""
        return None

    @abstractmethod
    def init_states(self) -> Sequence[State]:
        """The initial states, in a fixed order."""

    @abstractmethod
    def successors(self, state: State) -> Iterable[tuple[Action, State]]:
        """Every enabled action of ``state`` with its successor, in a fixed order.

        Like TLC, a successor equal to ``state`` (a stuttering step) is still yielded: it counts
        as a generated state. The order must be deterministic: traces are rebuilt by replay.
        """

    def within_bounds(self, state: State) -> bool:
        """The state constraint: states outside it are generated but neither stored nor expanded."""
        return True

    def canonical(self, state: State) -> State:
        """A canonical representative of ``state`` under the model's symmetry (identity if none)."""
        return state

    def symmetry_reduces_nothing(self) -> str | None:
        """Why ``--symmetry`` cannot reduce this configuration (its group of valid renamings is
        trivial), decided from the model before a search; None when it may reduce."""
        return None

    def dead_messages(self) -> DeadMessages | None:
        """What drops the messages of a state that are dead (``DeadMessages``), for
        ``--reduce dead`` (``checker.dead``, which documents the reduction); None: the model
        declares none and the option is refused."""
        return None

    def kernel(self) -> KernelSource | None:
        """The compiled successor kernel of this configuration (``KernelSource``), or None: the
        model has none and every search runs the readable model. The readable model stays the
        reference: the kernel follows it and the equivalence tests prove the two agree."""
        return None

    def state_types(self) -> tuple[type, ...]:
        """The NamedTuple classes a state is built from (used to decode checkpoints safely)."""
        return ()

    def encode_state(self, state: State) -> Any:
        """A compact plain form of ``state`` for the search's frontier store: nested tuples (or
        lists) of ints and bools that msgpack packs as they are, with no class names. A NamedTuple
        is already such a form (msgpack packs it as an array), so a model whose states hold no
        frozenset returns ``state`` itself. Optional: without it (and ``decode_state``) the search
        stores its frontier with the generic codec, which names every record's class (bigger,
        slower).
        """
        raise NotImplementedError

    def decode_state(self, plain: Any) -> State:
        """The state ``encode_state`` gave ``plain`` for, rebuilt with the model's classes
        (``plain`` comes back from msgpack with tuples for arrays). Equal to the encoded state, so
        same hash."""
        raise NotImplementedError

    def encode_states(self, states: Sequence[State]) -> Any:
        """A block of states in plain form (see ``encode_state``); a model overrides it to share
        what the states of a block share (e.g. a broker unchanged between siblings) once."""
        return [self.encode_state(s) for s in states]

    def decode_states(self, plain: Any) -> list[State]:
        """The states ``encode_states`` gave ``plain`` for, in order."""
        return [self.decode_state(p) for p in plain]

    def state_parts(self) -> StateParts | None:
        """How a state splits into parts that many states of a level share (``StateParts``), for the
        frontier store's pooled encoding: each distinct part is kept once and a state is a row of
        small integers. Optional: None (the default) keeps the msgpack encoding above."""
        return None

    def describe(self) -> dict[str, Any]:
        """What identifies this configuration in a checkpoint or a trace header."""
        return {"model": self.name, "constants": dict(self.constants)}

    def why_not(self, state: Any, name: str, params: dict[str, Any],
                history: Sequence[Any] = ()) -> str | None:
        """Why step ``name`` with ``params`` is not enabled in ``state`` after the steps ``history``
        (actions), in the words of the system modelled (a replay that blocks says it); None when the
        model has no sentence for it."""
        return None

    def what_runs(self) -> dict[str, Any]:
        """What a run of this configuration checks beyond ``describe``, for ``--json``, the text
        header and a saved trace's header (not a checkpoint's identity): a versioned model's
        release, row and flags; {} by default."""
        return {}

    def enabled(self, state: State) -> Iterator[Action]:
        for act, _ in self.successors(state):
            yield act


def state_to_data(value: Any) -> Any:
    """A JSON-friendly view of a state: NamedTuples become dicts keyed by field name."""
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return {field: state_to_data(getattr(value, field)) for field in value._fields}
    if isinstance(value, tuple):
        return [state_to_data(item) for item in value]
    if isinstance(value, frozenset):
        return sorted((state_to_data(item) for item in value), key=repr)
    return value
