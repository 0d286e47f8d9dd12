"""What every engine shares: search options, progress reports, the budgets checked between levels,
the successors a search keeps (``SuccessorView``), the search state a checkpoint holds and the
rebuilding of a shortest counterexample from parent pointers by replay. The level loop itself is
``checker.levels``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from checker.fingerprint import validate_state
from checker.invariant import SAFETY, Invariant
from checker.result import CheckResult, Verdict, Violation
from checker.trace import Step, Trace
from checker.visited import FingerprintSet, ParentLog
from spec.errors import BadFileError, KmcError, ModelError, UsageError
from spec.model import Action, Model

CHECKER_VERSION = "0.1.0"


class Progress(NamedTuple):
    depth: int
    states_generated: int
    distinct_states: int
    queue: int
    seconds: float


class SearchObserver:
    """Hooks into a search, for progress displays, benchmarks and tests, instead of replacing an
    engine's methods: a subclass overrides what it needs (each does nothing here). ``st`` is the
    engine's search state: a ``SearchState`` (local and parallel engines: the parent log, the
    visited set, the action table), or the Spark driver's counters. ``SearchOptions.observer`` hands
    one to a search."""

    def level(self, st: Any) -> None:
        """After each level is committed (``checker.levels.run_levels``)."""

    def finished(self, st: Any) -> None:
        """Once, when the search is over and its result is about to be built from ``st`` (the
        parallel engine's parent log gathered)."""


class RecordParentLog(SearchObserver):
    """Keeps what the tests compare between engines and storage modes at the end of a search: the
    parent log's columns as lists (``log``), the action table (``actions``) and whether the log went
    to disk (``spilled``)."""

    def __init__(self) -> None:
        self.log: list[list[int]] | None = None
        self.actions: list[Any] | None = None
        self.spilled = False
        self.state: Any = None

    def finished(self, st: Any) -> None:
        self.state = st
        self.log = [column.tolist() for column in st.log.arrays()]
        self.actions = list(st.actions.actions)
        self.spilled = bool(st.log.spilled)


@dataclass
class SearchOptions:
    invariants: Sequence[Invariant] = ()
    stop_at_first: bool = True
    check_deadlock: bool = False
    max_states: int | None = None
    max_seconds: float | None = None
    max_depth: int | None = None
    max_memory_mb: float | None = None
    symmetry: bool = False
    checkpoint_path: str | None = None
    checkpoint_every: float = 300.0
    resume_from: str | None = None
    progress: Callable[[Progress], None] | None = None
    progress_every: float = 0.5
    keep_graph: bool = False
    #: count the successors each action generated (``--coverage``; local engine)
    coverage: bool = False
    #: without stop_at_first: stop once every safety invariant is violated (``kmc matrix``; local
    #: and parallel engines; counts then differ from a search that goes on to the end)
    stop_when_all_found: bool = False
    #: written into every trace header (protocol, features, ...)
    header: dict[str, Any] = field(default_factory=dict)
    #: "none" or "dead" (``checker.dead``: messages whose delivery can only be a no-op dropped);
    #: ``shortest``: after a reduced search found a violation, the full search bounded at its depth
    #: gives a shortest counterexample
    reduce: str = "none"
    shortest: bool = False
    #: hooks into the search (``SearchObserver``): for progress displays, benchmarks and tests
    observer: SearchObserver | None = None
    #: the compiled kernel (``checker.kernel``, local engine): "auto" where the model has one and
    #: the options allow it, "on" (or a one-line error), "off" (the readable model; the default of a
    #: search started from Python)
    kernel: str = "off"

    def safety_invariants(self) -> list[Invariant]:
        return [inv for inv in self.invariants if inv.kind == SAFETY and inv.holds is not None]

    def liveness_properties(self) -> list[Invariant]:
        return [inv for inv in self.invariants if inv.kind != SAFETY]


def budget_reason(options: SearchOptions, depth: int, distinct: int, queue: int,
                  elapsed: float) -> str | None:
    """Why a search must stop before its next level (the budgets every engine checks between
    levels), or None. Running out of a budget gives *undetermined*, never a pass."""
    if options.max_depth is not None and depth >= options.max_depth:
        return f"depth bound {options.max_depth} reached with {queue} states unexplored"
    if options.max_seconds is not None and elapsed > options.max_seconds:
        return f"time budget of {options.max_seconds:g} s ran out at depth {depth}"
    if options.max_states is not None and distinct >= options.max_states:
        return f"state budget {options.max_states} reached with {queue} states unexplored"
    return None


def verdict_of(violations: Sequence[Any], reason: str | None) -> Verdict:
    """A violation found is a verdict even if a budget ran out; otherwise a budget makes it
    undetermined."""
    if violations:
        return Verdict.VIOLATED
    return Verdict.UNDETERMINED if reason else Verdict.HOLDS


def _deadlock_why(state: Any) -> str:
    return "deadlock: no action is enabled in the last state"


def search_result(model: Model, invariants: Sequence[Invariant], *, found: dict[str, Any],
                  deadlock: Any, trace_of: Callable[[Any, str, Callable[[Any], str] | None], Trace],
                  distinct_states: int, states_generated: int, depth: int, seconds: float,
                  reason: str | None, engine: str, discovered: dict[str, Any] | None = None,
                  **fields: Any) -> CheckResult:
    """The result of a search, built here for every engine (local, parallel, Spark, directed): a
    violation per invariant found (``found``: name -> the engine's handle on the violating state, in
    the order they were found, ties by name), the deadlock after them, each trace from the engine's
    ``trace_of(handle, name, why)``; the verdict (``verdict_of``), and the budget's reason only when
    the verdict is undetermined. ``fields`` are the engine's own figures (``workers``, ``queue``,
    ``symmetry``, ``checkpoint_file``, ``collision``, ``extra``)."""
    by_name = {inv.name: inv for inv in invariants}
    violations = [Violation(name, "safety", trace_of(at, name, by_name[name].why),
                            discovered=(discovered or {}).get(name))
                  for name, at in sorted(found.items(), key=lambda item: (item[1], item[0]))]
    if deadlock is not None:
        violations.append(Violation("deadlock", "deadlock",
                                    trace_of(deadlock, "deadlock", _deadlock_why)))
    verdict = verdict_of(violations, reason)
    return CheckResult(model=model.name, constants=dict(model.constants), verdict=verdict,
                       distinct_states=distinct_states, states_generated=states_generated,
                       depth=depth, seconds=seconds, violations=violations,
                       invariants=[inv.name for inv in invariants], engine=engine, reason=reason
                       if verdict is Verdict.UNDETERMINED else None, **fields)


def uses_bounds(model: Model) -> bool:
    return type(model).within_bounds is not Model.within_bounds


def uses_symmetry(model: Model, options: SearchOptions) -> bool:
    if options.symmetry and not model.has_symmetry:
        raise ModelError(f"model {model.name} has no symmetry to reduce by; drop --symmetry")
    liveness = options.liveness_properties() if options.symmetry else []
    if liveness:
        # the liveness check walks the whole state graph, not the reduced one: refused rather than
        # run unreduced behind the option's back (whether a property is symmetric is not known
        # either)
        raise UsageError("--symmetry reduces the safety search only; liveness property "
                         f"{liveness[0].name} needs the "
                         "whole state graph: drop --symmetry or check it on its own")
    return options.symmetry


def search_canonical(model: Model, options: SearchOptions) -> Callable[[Any], Any] | None:
    """The form a search stores each state in, or None to store it as it is: the model's canonical
    form under ``--symmetry``; under ``--reduce dead`` the state without its dead messages first
    (``Model.dead_messages``, ``checker.dead``), renamed after. Every engine that keeps states calls
    this once a successor."""
    symmetric = uses_symmetry(model, options)
    if options.reduce != "dead":
        return model.canonical if symmetric else None
    reducer = model.dead_messages()
    if reducer is None:
        raise UsageError(f"model {model.name} declares no dead messages; drop --reduce dead")
    reduce = reducer.reduce
    if not symmetric:
        return reduce
    canonical = model.canonical

    def reduced_canonical(state: Any) -> Any:
        return canonical(reduce(state))

    return reduced_canonical


class SuccessorView:
    """The successors of a state as every search sees them (the one successor loop's rule): the
    model's successors in its order, those outside its bounds (``within_bounds``) dropped, each in
    its canonical form under ``--symmetry``. Each kept successor carries its position among all the
    model's successors (the Spark engines' order key, and how a trace is replayed), and the count
    generated is of all of them (a successor out of bounds was generated; a state with none is a
    deadlock).

    The local engine (``checker.bfs.LocalBFS._expand``, the parallel engine's workers too) calls
    ``kept``, which hands back the model's own list when there are no bounds and no symmetry
    (Kafka's default: 0.4-0.9% more instructions a state than the loop written inline, callgrind).
    Under ``--symmetry`` without bounds its loop is its own: it skips ``canonical`` for a successor
    whose fingerprint the level has found already (a canonical state), which going through ``kept``
    would cost 10% more instructions a state (Kafka truncate-on-fetch records=2 epochs=1 crashes=1
    --symmetry: 53,557 against 59,092). The Spark expansions, the liveness graph and the simulator
    call ``of``."""

    def __init__(self, model: Model, symmetry: bool, canonical: Callable[[Any], Any]
                 | None = None) -> None:
        self.successors = model.successors
        self.within = model.within_bounds if uses_bounds(model) else None
        #: ``search_canonical``'s form when given (``--reduce dead``), else the model's under
        #: ``--symmetry``
        self.canonical = (canonical if canonical is not None else model.canonical if symmetry
                          else None)

    def of(self, state: Any) -> tuple[int, list[tuple[int, Action, Any]]]:
        """(successors the model generated, the kept ones as (position, action, successor))."""
        succs = self.successors(state)
        if type(succs) is not list:
            succs = list(succs)
        return len(succs), self.positioned(succs)

    def kept(self, succs: list[tuple[Action, Any]]) -> list[tuple[Action, Any]]:
        """The (action, successor) pairs of ``succs`` (the model's, of one state) a search keeps:
        ``succs`` itself when the model has no bounds and there is no symmetry (nothing to drop,
        nothing to rename)."""
        within, canonical = self.within, self.canonical
        if within is None and canonical is None:
            return succs
        return [(act, succ if canonical is None else canonical(succ))
                for act, succ in succs if within is None or within(succ)]

    def positioned(self, succs: list[tuple[Action, Any]]) -> list[tuple[int, Action, Any]]:
        """``kept``, each with its position among all of ``succs`` (the Spark engines' order
        key)."""
        within, canonical = self.within, self.canonical
        return [(pos, act, succ if canonical is None else canonical(succ))
                for pos, (act, succ) in enumerate(succs) if within is None or within(succ)]


def trace_header(model: Model, options: SearchOptions) -> dict[str, Any]:
    header = {"checker": "kmc", "checker_version": CHECKER_VERSION, **model.describe()}
    # the release and row the protocol name stood for (a header without them, an older trace's,
    # reads the same)
    header.update({k: v for k, v in model.what_runs().items() if k in ("release", "row") and v
                   is not None})
    header.update(options.header)
    header["symmetry"] = bool(options.symmetry)
    return header


def rebuild_trace(
    model: Model,
    path: Sequence[tuple[int, int]],
    actions: Sequence[Action],
    options: SearchOptions,
    invariant: str | None,
    explanation: Callable[[Any], str] | None = None,
) -> Trace:
    """Replay the recorded (fingerprint, action id) path from its initial state.

    Each step takes the successor with the recorded action whose fingerprint matches. Under
    symmetry the recorded action was taken in a canonical state, so the step takes whichever
    successor of the real state has the recorded canonical fingerprint: the trace stays a real
    behaviour of the model.
    """
    canonical = search_canonical(model, options) or (lambda s: s)

    def cannot(why: str, in_file: str) -> KmcError:
        # a resumed run's parent log came from its checkpoint: a path the model cannot take is the
        # file's fault (its loader replays only a sample of the paths), not the model's
        if options.resume_from:
            return BadFileError(f"checkpoint {options.resume_from} records a path the model cannot "
                                f"take ({in_file}): the "
                                "file is corrupt or was edited; run the search again without "
                                "--resume")
        return ModelError(f"cannot rebuild a trace: {why}")

    root_fp = path[0][0]
    current = next((s for s in model.init_states() if hash(canonical(s)) == root_fp), None)
    if current is None:
        raise cannot("no initial state has the recorded fingerprint",
                     "no initial state has its first fingerprint")
    initial = current
    steps: list[Step] = []
    dead = options.reduce == "dead"
    for fp, action_id in path[1:]:
        wanted = actions[action_id]
        chosen = _recorded_step(model, current, fp, wanted, canonical, options.symmetry)
        if chosen is None and dead:
            # the search took this step in the stored state, which lacks the dead messages of
            # ``current``; their presence only disables steps (a follower waits for the answer it is
            # owed, the inflight bound), so they are delivered first (``deliver_dead``), and the
            # step is then one of the stored state's
            for step in deliver_dead(model, current):
                steps.append(step)
                current = step.state
            chosen = _recorded_step(model, current, fp, wanted, canonical, options.symmetry)
        if chosen is None:
            raise cannot(f"{wanted} is not deterministic in this model",
                         f"no {wanted} step reaches the state it records at step {len(steps) + 1}")
        steps.append(Step(*chosen))
        current = chosen[1]
    if dead:  # the dead messages the stored state lacks, delivered
        for step in deliver_dead(model, current):
            steps.append(step)
            current = step.state
    if invariant:
        recheck_concrete(model, options, invariant, current)
    why = explanation(current) if explanation and invariant else None
    return Trace(
        header=trace_header(model, options),
        initial=initial,
        steps=tuple(steps),
        invariant=invariant,
        violation_index=len(steps) if invariant else None,
        explanation=why,
    )


def deliver_dead(model: Model, state: Any) -> list[Step]:
    """The steps that deliver the dead messages of ``state`` (each a no-op but its own removal): how
    a trace of ``--reduce dead`` (``checker.dead``) is replayed on the unreduced model."""
    return [Step(act, succ) for act, succ in model.dead_messages().deliveries(state)]


def _recorded_step(model: Model, current: Any, fp: int, wanted: Action,
                   canonical: Callable[[Any], Any], symmetry: bool) -> tuple[Action, Any] | None:
    """The successor of ``current`` the search recorded: the one with its fingerprint (and, without
    symmetry, its action), or None."""
    for act, succ in model.successors(current):
        if hash(canonical(succ)) == fp and (symmetry or act == wanted):
            return act, succ
    return None


def recheck_concrete(model: Model, options: SearchOptions, invariant: str, state: Any) -> None:
    """The last state of a rebuilt counterexample is checked again: every report is a state that
    really violates (or a real deadlock). Under symmetry the violation was found on canonical states
    and the trace ends in a concrete renaming of one: a failure means the model's canonical form is
    not a symmetry. Without symmetry the search itself checked that state, so a failure means the
    recorded violation came from a checkpoint or Spark run directory changed since it was written
    (or an invariant that is not a function of the state): refused as bad data (exit 65), never
    reported."""
    if invariant == "deadlock":
        holds = bool(list(model.successors(state)))
    else:
        inv = next((i for i in options.safety_invariants() if i.name == invariant), None)
        if inv is None:
            return
        holds = inv.holds(state)
    if not holds:
        return
    if options.reduce == "dead":
        raise ModelError(f"the trace found under --reduce dead ends in a state where {invariant} "
                         "holds once replayed: "
                         "a message the model declares dead is not; check without --reduce dead")
    if options.symmetry:
        raise ModelError(f"the trace found under --symmetry ends in a state where {invariant} "
                         "holds once replayed: "
                         "the model's canonical form is not a symmetry of it; check without "
                         "--symmetry")
    raise BadFileError(f"the recorded {invariant} violation does not replay: the state it names "
                       "satisfies it (a "
                       "checkpoint or run directory changed since it was written?); start the run "
                       "again without --resume")


def validate_initial(model: Model, states: Sequence[Any]) -> None:
    if not states:
        raise ModelError(f"model {model.name} has no initial state")
    for state in states:
        validate_state(state, "initial state")


class ActionTable:
    """Interns actions to small ids for the parent log."""

    def __init__(self, actions: Sequence[Action] = ()) -> None:
        self.actions: list[Action] = list(actions)
        self._ids = {a: i for i, a in enumerate(self.actions)}

    def id(self, action: Action) -> int:
        found = self._ids.get(action)
        if found is None:
            found = self._ids[action] = len(self.actions)
            self.actions.append(action)
        return found

    def lookup(self) -> Callable[[Action], int | None]:
        """The id of an action interned already, None for one that is not (``dict.get``: a caller
        maps it over many actions in C, and interns the others with ``id`` in their order)."""
        return self._ids.get

    def truncate(self, size: int) -> None:
        """Forget the actions interned after the first ``size`` (an abandoned level's)."""
        for act in self.actions[size:]:
            del self._ids[act]
        del self.actions[size:]


@dataclass
class SearchState:
    """Everything needed to continue a search from a level boundary (what a checkpoint holds)."""

    visited: FingerprintSet = field(default_factory=FingerprintSet)
    log: ParentLog = field(default_factory=ParentLog)
    actions: ActionTable = field(default_factory=ActionTable)
    #: the last level's states: a list, or (local engine) a ``checker.frontier.FrontierStore``,
    #: which has a length and is iterated in order the same way
    frontier: Any = field(default_factory=list)
    frontier_base: int = 0  # global index of frontier[0]
    depth: int = 0
    generated: int = 0
    elapsed: float = 0.0
    #: invariant name -> global index of its first (shortest) violating state
    found: dict[str, int] = field(default_factory=dict)
    deadlock: int | None = None
    edges: list[tuple[int, int, int]] | None = None
