"""Partial-order reduction for safety properties (invariants, deadlock): ``--reduce por``.

In a state, many enabled actions are independent (a follower's fetch and another follower's, a leader's produce and
a follower's request): every order of them reaches the same states, and a search need not try every order. The
search expands, in each state, an *ample set* of its enabled actions instead of all of them (Peled's conditions,
as in Clarke, Grumberg and Peled, *Model Checking*, ch. 10; the sets are computed as Valmari's stubborn sets, from
footprints):

- **C0**: the ample set is empty only if no action is enabled (a deadlock is never hidden: a state with no enabled
  action is reported as it is without the reduction).
- **C1**: every action in the ample set is independent of every action outside it that can run before an ample
  action does. The model declares each action's *footprint* (``Model.reduction``: what it may read and write); two
  actions are dependent when one writes what the other reads or writes, which also covers one disabling the other
  (the guard reads what it reads). One may still enable an independent other (a send on a FIFO channel, its
  delivery): only by writing what a necessary condition of the other reads, which the closure follows. The set is
  closed from one enabled action: an enabled member adds
  every action (enabled or not) dependent on it; a disabled member adds every action that could enable it: the
  writers of what one of its false necessary conditions reads (a delivery is enabled only by its send, a bounded
  action whose bound is reached by nothing), or of everything it reads when no declared condition is false. The
  ample set is the enabled part of the closure: a strong stubborn set, hence persistent (Godefroid, *Partial-Order
  Methods for the Verification of Concurrent Systems*, LNCS 1032, 1996, ch. 4).
- **C2** (invisibility): unless the ample set is every enabled action, none of its actions writes anything an
  invariant being checked reads (``Invariant.reads``; an invariant that declares nothing reads everything, which
  turns the reduction off while it is checked). An invariant that holds wherever a predicate does
  (``Invariant.vacuous_while``) whose reads no action writes, true in every initial state, is constant on the model
  and reads nothing (elr-safety on a row without an ELR).
- **State-dependent footprints** (``model.reduction().narrower(key, state)``, optional): in a state where an
  enabled action touches less than its footprint of every state (an answer the follower only retries), its
  dependency and visibility are taken from the narrower footprint there. Sound because a dependency relation may
  be taken per state when, used in s, it over-approximates dependency in every state reachable from s by actions
  outside the stubborn set (Valmari; Godefroid ch. 4): the narrower footprint holds under a condition whose reads
  are among its reads, so the actions that could falsify the condition are dependent on it and inside the set, and
  the condition, with the narrower footprint, holds along every path of actions outside it
  (``spec.kafka.footprints``, "state-dependent footprints").
- **C3** (the cycle proviso, for breadth-first search): Bošnački, Leue and Lluch Lafuente, "Partial-Order Reduction
  for General State Exploring Algorithms", SPIN 2006 (LNCS 3925) and STTT 11(1), 2009: an ample set one of whose
  successors was already visited, at the level being expanded or an earlier one, is replaced by every enabled
  action. In a level-by-level search every cycle of the reduced graph has an edge that does not go down a level,
  and the state it leaves is then expanded fully, so no action is ignored for ever along a cycle.

With the reduction, every invariant gets the verdict of the full search, but a counterexample is in general not a
shortest one (the search went deeper along an order it chose). ``--shortest`` then runs the full search bounded
at the counterexample's depth and reports the shortest counterexample it finds (``shortest_rerun``). Symmetry
(``--symmetry``) combines with it: the footprints are declared by broker parameter, so a renaming of brokers maps
an action's footprint to the renamed action's, and the invariants are symmetric (Emerson, Jha and Peled,
"Combining Partial Order and Symmetry Reductions", TACAS 1997).

The local breadth-first engine (``checker.bfs``) applies it; the parallel and Spark engines refuse the option.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from checker.search import SearchOptions, uses_bounds
from spec.errors import UsageError
from spec.model import Model

REDUCTIONS = ("none", "por", "dead")  # dead: checker.dead


def _bits(mask: int) -> list[int]:
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


class Reduction:
    """Ample sets for one model and one set of invariants, and the counts of what the search did with them.

    ``model.reduction()`` gives the footprints: ``keys`` (every action of the configuration, by name and actors),
    ``key(action)``, ``reads(key)``, ``writes(key)`` (sets of resources), ``derived(resource)`` (a resource computed
    from others, such as "some message to this broker is in flight": it counts for invisibility, not for
    dependency, which the resources it is computed from already carry), ``necessary(key, state)`` (for a
    disabled action: the resources whose writers may enable it) and ``resources(tags)`` (what an invariant's read
    tags stand for)."""

    def __init__(self, model: Model, invariants: list[Any]) -> None:
        spec = model.reduction()
        if spec is None:
            raise UsageError(f"model {model.name} declares no action footprints; drop --reduce por")
        if uses_bounds(model):
            raise UsageError(f"model {model.name} has a state constraint, which partial-order reduction does not take "
                             "into account; drop --reduce por")
        self.spec = spec
        self.keys = list(spec.keys)
        self.index = {key: i for i, key in enumerate(self.keys)}
        writers: dict[Any, int] = {}
        readers: dict[Any, int] = {}
        for i, key in enumerate(self.keys):  # a derived resource (spec.derived) counts for invisibility only
            for r in spec.writes(key):
                if not spec.derived(r):
                    writers[r] = writers.get(r, 0) | 1 << i
            for r in spec.reads(key):
                if not spec.derived(r):
                    readers[r] = readers.get(r, 0) | 1 << i
        self._writers = writers
        #: key -> every key dependent on it (it writes what the other reads or writes, or the other writes what it reads)
        self.dependent = []
        for key in self.keys:
            mask = 0
            for r in spec.reads(key) | spec.writes(key):
                mask |= writers.get(r, 0)
            for r in spec.writes(key):
                mask |= readers.get(r, 0)
            self.dependent.append(mask)
        #: the keys that write something an invariant being checked reads
        self.visible = 0
        read: set = set()
        everything = False
        self.constant: list[str] = []  # invariants the model's actions cannot change (``Invariant.vacuous_while``)
        for inv in invariants:
            tags = getattr(inv, "reads", None)
            if tags is None:
                everything = True
                break
            if self._constant(model, inv, writers):
                self.constant.append(inv.name)
                continue
            read |= spec.resources(tags)
        for i, key in enumerate(self.keys):
            if everything or spec.writes(key) & read:
                self.visible |= 1 << i
        # state-dependent footprints (``spec.narrower(key, state)``, optional): in a state where one applies, an
        # enabled action's dependency and visibility are taken from it (see ``dependent_in``)
        self._narrower = getattr(spec, "narrower", None)
        entries = getattr(spec, "narrowed", {}) if self._narrower is not None else {}
        self.narrowable = 0
        for i, key in enumerate(self.keys):
            if entries.get(key):
                self.narrowable |= 1 << i
        self._readers = readers
        self._read = frozenset() if everything else frozenset(read)
        self._everything = everything
        self._narrow_masks: dict[int, tuple[int, bool]] = {}  # id(footprint entry) -> (dependent mask, visible)
        #: the keys a state-dependent footprint may make invisible (visible by the table, not by one of its narrower ones)
        self.may_hide = 0
        if not everything:
            for i, key in enumerate(self.keys):
                if self.visible >> i & 1 and any(not (entry[3] & read) for entry in entries.get(key, ())):
                    self.may_hide |= 1 << i
        self.narrowed_uses = 0  # enabled actions whose state-dependent footprint the search used
        self._action_index: dict[Any, int] = {}
        self._nes: dict[int, int] = {}  # id(resources) -> writers of them (the sets are the footprints' own objects)
        self._nes_keep: list[Any] = []
        # what the search did: states expanded with a smaller ample set, states whose ample set the cycle proviso
        # replaced by every enabled action, states with more than one enabled action that had no smaller ample set
        self.reduced = 0
        self.proviso = 0
        self.full = 0

    def _constant(self, model: Model, inv: Any, writers: dict) -> bool:
        """Whether an invariant holds in every reachable state for a reason the footprints show: it holds wherever its
        ``vacuous_while`` predicate does, no action writes what the predicate reads (so it keeps its initial value in
        every reachable state), and every initial state satisfies it. Such an invariant sees no action."""
        vacuous = getattr(inv, "vacuous_while", None)
        if vacuous is None:
            return False
        tags, predicate = vacuous
        if any(writers.get(r) for r in self.spec.resources(tags)):
            return False
        return all(predicate(s) for s in model.init_states())

    def _index_of(self, action: Any) -> int:
        i = self._action_index.get(action)
        if i is None:
            try:
                i = self._action_index[action] = self.index[self.spec.key(action)]
            except KeyError as exc:
                raise UsageError(f"--reduce por: {exc.args[0]}; the model's footprint table must declare every action"
                                 ) from None
        return i

    def _enablers(self, i: int, state: Any) -> int:
        resources = self.spec.necessary(self.keys[i], state)
        mask = self._nes.get(id(resources))
        if mask is None:
            mask = 0
            for r in resources:
                mask |= self._writers.get(r, 0)
            self._nes[id(resources)] = mask
            self._nes_keep.append(resources)  # keeps the id valid
        return mask

    def _narrow(self, k: int, state: Any) -> tuple[int, bool] | None:
        """For an enabled key: (the keys dependent on it, whether it is visible) from its state-dependent footprint
        in ``state``, or None where none applies. Its narrower reads and writes against every other key's footprint
        of every state: sound because the narrower footprint's condition holds along every path of actions outside
        a stubborn set that holds it (``spec.kafka.footprints``, "state-dependent footprints")."""
        found = self._narrower(self.keys[k], state)
        if found is None:
            return None
        self.narrowed_uses += 1
        _, _, reads, writes, keeps, only_condition = found
        tag = id(found)  # the footprint table's own entry: alive as long as the table
        cached = self._narrow_masks.get(tag)
        if cached is None:
            mask = 0
            kept = 0  # the keys that write what only the condition reads without ever falsifying it
            for i, key in enumerate(self.keys):
                if key[0] in keeps:
                    kept |= 1 << i
            for r in reads | writes:
                mask |= self._writers.get(r, 0) & ~kept if r in only_condition else self._writers.get(r, 0)
            for r in writes:
                mask |= self._readers.get(r, 0)
            cached = self._narrow_masks[tag] = (mask, self._everything or bool(writes & self._read))
        return cached

    def dependent_in(self, k: int, state: Any) -> int:
        """The keys dependent on enabled key ``k`` in ``state`` (its state-dependent footprint where one applies)."""
        if self.narrowable >> k & 1:
            narrow = self._narrow(k, state)
            if narrow is not None:
                return narrow[0]
        return self.dependent[k]

    def ample_keys(self, state: Any, enabled: int) -> int | None:
        """The smallest ample set (a mask of keys) found from one invisible enabled action, or None (expand fully)."""
        best = None
        best_size = 0
        dependent, visible = self.dependent, self.visible
        # state-dependent footprints, evaluated only where needed: up front for the enabled keys that one could make
        # invisible (a narrower footprint writes no more than the table's, so it never makes a key visible), the
        # others when a closure reaches them
        narrowed: dict[int, int] = {}
        for k in _bits(enabled & self.may_hide):
            narrow = self._narrow(k, state)
            narrowed[k] = self.dependent[k] if narrow is None else narrow[0]
            if narrow is not None and not narrow[1]:
                visible &= ~(1 << k)
        pending = enabled & self.narrowable
        enablers: dict[int, int] = {}
        for seed in _bits(enabled & ~visible):
            closure = 1 << seed
            stack = [seed]
            ok = True
            while stack:
                k = stack.pop()
                if enabled >> k & 1:
                    if pending >> k & 1:
                        mask = narrowed.get(k)
                        if mask is None:
                            narrow = self._narrow(k, state)
                            mask = narrowed[k] = dependent[k] if narrow is None else narrow[0]
                        new = mask & ~closure
                    else:
                        new = dependent[k] & ~closure
                else:  # a disabled key's enablers, once per state (every seed's closure may reach it)
                    mask = enablers.get(k)
                    if mask is None:
                        mask = enablers[k] = self._enablers(k, state)
                    new = mask & ~closure
                if not new:
                    continue
                closure |= new
                inside = closure & enabled
                if inside & visible or inside == enabled:
                    ok = False
                    break
                stack.extend(_bits(new))
            if ok:
                size = (closure & enabled).bit_count()
                if best is None or size < best_size:
                    best, best_size = closure & enabled, size
                    if size == 1:
                        break
        return best

    def successors(self, state: Any, succs: list, visited: Any, canonical: Any) -> list:
        """The successors to expand: those of an ample set, or all of ``succs`` when there is none or when one of its
        successors was visited already at this level or an earlier one (C3; ``visited`` holds every fingerprint of
        the levels up to the one being expanded)."""
        if len(succs) < 2:
            return succs
        index_of = self._index_of
        keys = [index_of(act) for act, _ in succs]
        enabled = 0
        for k in keys:
            enabled |= 1 << k
        if enabled & (enabled - 1) == 0:  # one action
            return succs
        ample = self.ample_keys(state, enabled)
        if ample is None:
            self.full += 1
            return succs
        chosen = [pair for pair, k in zip(succs, keys, strict=True) if ample >> k & 1]
        fps = [hash(canonical(t) if canonical is not None else t) for _, t in chosen]
        if visited.contains(np.array(fps, dtype=np.int64)).any():
            self.proviso += 1
            return succs
        self.reduced += 1
        return chosen

    def report(self) -> dict[str, Any]:
        return {"method": "por", "reduced_states": self.reduced, "proviso_full": self.proviso,
                "no_smaller_ample_set": self.full, "state_dependent_footprints_used": self.narrowed_uses,
                "constant_invariants": self.constant}


def for_search(model: Model, options: SearchOptions, invariants: list[Any]) -> Reduction | None:
    """The reduction a local search applies to a state's successors (None without ``--reduce por``; ``--reduce dead``
    acts on the states themselves, ``checker.search.search_canonical``)."""
    if options.reduce != "por":
        return None
    return Reduction(model, invariants)


def check_supported(options: SearchOptions) -> None:
    """One line (exit 64) where the reduction cannot run (which engines run it is their record's to say,
    ``checker.engines.Engine.reductions``)."""
    if options.reduce not in REDUCTIONS:
        raise UsageError(f"unknown reduction {options.reduce!r}; reductions: {', '.join(REDUCTIONS)}")
    if options.reduce == "none":
        if options.shortest:
            raise UsageError("--shortest goes with --reduce por or dead (the full search's counterexamples are shortest "
                             "already)")
        return
    if options.reduce == "dead":
        from checker.dead import check_supported as dead_supported

        dead_supported(options)
        return
    if options.liveness_properties() or options.keep_graph:
        raise UsageError("--reduce por preserves safety properties only; check liveness properties without it")
    if options.checkpoint_path or options.resume_from:
        raise UsageError("--reduce por does not write or resume checkpoints yet; drop --checkpoint / --resume")


def shortest_rerun(model: Model, options: SearchOptions, result: Any, engine: Any) -> Any:
    """After a reduced search found violations: the full search bounded at the deepest counterexample's depth,
    whose counterexamples are shortest (breadth-first); its violations replace the reduced search's, whose counts
    stay the result's. The bounded search's own counts are in ``extra["shortest"]``."""
    if not result.violations:
        return result
    depth = max(len(v.trace.steps) for v in result.violations)
    # the search's depth counts levels, the initial states' included: a state ``depth`` steps away is in level depth + 1
    bounded = engine(model, dataclasses.replace(options, reduce="none", shortest=False, max_depth=depth + 1))
    if not bounded.violations:  # cannot happen: a violating state lies at that depth
        raise RuntimeError("the full search bounded at a reduced counterexample's depth found no violation")
    result.violations = bounded.violations
    result.extra["shortest"] = {"depth_bound": depth, "distinct_states": bounded.distinct_states,
                                "states_generated": bounded.states_generated,
                                "lengths": {v.invariant: len(v.trace.steps) for v in bounded.violations}}
    return result
