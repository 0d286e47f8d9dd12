"""Random simulation: many random walks of bounded depth, for configurations too big to exhaust.

Each walk starts at a random initial state and takes a random enabled action until it reaches the
depth bound, a state with no successor inside the bounds, or a violation. Walk ``i`` is driven by
its own generator, seeded from the user's ``--seed`` and ``i`` (``walk_seed``), so a walk is the
same whichever process runs it: ``--workers N`` runs the walks in batches of ``WALKS_A_BATCH`` on N
cores (``checker.pool``), or, with ``--engine spark``, on Spark's executors
(``checker.spark.swarm``), and the same seed gives the same walks, the same counts, the same
distinct states covered and the same counterexample at any N and on Spark (with no
``--max-seconds``: a time budget ends the run wherever the clock says). Stopping at the first
violation means: after the batch of the first walk that finds one, with every earlier batch done, so
the walks counted do not depend on N either.

A violation found this way is a real behaviour but not necessarily a shortest one; it is shortened
(``shorten``: loops dropped, then each step removed while the violation persists, every candidate
replayed action by action from the initial state), so the trace reported replays. Without a
violation the verdict is *undetermined* (simulation proves nothing). The distinct states the walks
covered are counted by fingerprint.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from checker.invariant import Invariant
from checker.pool import run_jobs
from checker.result import CheckResult, Verdict, Violation
from checker.search import SearchOptions, SuccessorView, trace_header, uses_bounds, validate_initial
from checker.trace import Step, Trace
from spec.model import Model

#: walks a worker takes at a time (the unit of the work handed out, and of stopping at a violation)
WALKS_A_BATCH = 64


@dataclass
class SimulationOptions:
    walks: int = 1000
    depth: int = 50
    seed: int = 0
    max_seconds: float | None = None
    #: processes the walks run in (one batch of ``WALKS_A_BATCH`` walks at a time each)
    workers: int = 1
    #: shorten a violating walk before it is reported
    shorten: bool = True
    #: "local" (``workers`` processes here) or "spark" (the batches on Spark's executors,
    #: ``checker.spark.swarm``)
    engine: str = "local"
    master: str | None = None  # None: Spark's default (``checker.spark.session.DEFAULT_MASTER``)
    #: the compiled kernel (``checker.kernel``): "auto" where the model has one and the options
    #: allow it (the command line's default), "on" (else ``KernelUnavailable``), "off" (the readable
    #: model; the API's default)
    kernel: str = "off"


def walk_seed(seed: int, walk: int) -> int:
    """The seed of walk ``walk`` of a run seeded ``seed`` (64 bits of BLAKE2b: walks of nearby seeds
    share none)."""
    return int.from_bytes(hashlib.blake2b(f"{seed}/{walk}".encode(), digest_size=8).digest(), "big")


@dataclass
class _Batch:
    first: int  # the index of its first walk
    count: int
    # time.monotonic() past which no walk starts (the clock is the machine's, shared)
    deadline: float | None


@dataclass
class _Done:
    """What a batch of walks found."""

    walks: int = 0
    steps: int = 0
    generated: int = 0
    deepest: int = 0
    # the distinct fingerprints of the states its walks visited (int64, sorted)
    fingerprints: Any = None
    #: invariant -> (walk length, walk index, the walk's trace): the shortest violating walk, the
    #: first on a tie
    found: dict[str, tuple[int, int, Trace]] = field(default_factory=dict)
    out_of_time: bool = False


class _Walker:
    def __init__(self, model: Model, options: SearchOptions, sim: SimulationOptions) -> None:
        self.model, self.options, self.sim = model, options, sim
        self.inits = list(model.init_states())
        validate_initial(model, self.inits)
        # walks go through concrete states
        self.successors_of = SuccessorView(model, symmetry=False).of
        self.invariants = options.safety_invariants()
        self.header = trace_header(model, options)

    def batch(self, batch: _Batch) -> _Done:
        done = _Done()
        fingerprints: set[int] = set()
        for walk in range(batch.first, batch.first + batch.count):
            if batch.deadline is not None and time.monotonic() > batch.deadline:
                done.out_of_time = True
                break
            self._walk(walk, done, fingerprints)
            if done.found and self.options.stop_at_first:
                break
        done.fingerprints = np.fromiter(sorted(fingerprints), np.int64, len(fingerprints))
        return done

    def _walk(self, walk: int, done: _Done, fingerprints: set[int]) -> None:
        depth, stop = self.sim.depth, self.options.stop_at_first
        rng = random.Random(walk_seed(self.sim.seed, walk))
        state = initial = rng.choice(self.inits)
        steps: list[Step] = []
        seen: set[str] = set()  # invariants this walk broke already
        while True:
            fingerprints.add(hash(state))
            broken = [inv for inv in self.invariants if inv.name not in seen
                      and not inv.holds(state)]
            for inv in broken:
                seen.add(inv.name)
                trace = Trace(self.header, initial, tuple(steps), inv.name, len(steps),
                              inv.why(state))
                best = done.found.get(inv.name)
                if best is None or (len(steps), walk) < best[:2]:
                    done.found[inv.name] = (len(steps), walk, trace)
            if (broken and stop) or len(steps) == depth:
                break
            generated, kept = self.successors_of(state)
            done.generated += generated
            choices = [(act, succ) for _pos, act, succ in kept]
            if not choices:
                break
            act, state = rng.choice(choices)
            steps.append(Step(act, state))
        done.walks += 1
        done.steps += len(steps)
        done.deepest = max(done.deepest, len(steps) + 1)


class _KernelWalker(_Walker):
    """The same walks on the model's compiled kernel (``checker.kernel``): a walk's state is packed
    bytes, its successors come from ``km_successors_of`` in the readable model's order (the kernel's
    contract, checked state for state by tests/test_kernel.py) and its compiled invariants from
    ``km_violations_of``; a walk's states are unpacked only for a violation's trace. Each step draws
    ``rng.choice`` over as many successors as the readable walk draws over, so a seed gives the same
    walks, counts and counterexamples; distinct states are counted by the packed bytes' hash (one
    packed form a state: the same count)."""

    def __init__(self, model: Model, options: SearchOptions, sim: SimulationOptions,
                 kernel: Any) -> None:
        super().__init__(model, options, sim)
        self.kernel, self.spec = kernel, kernel.spec
        self.bits = [(inv, 1 << self.spec.invariants.index(inv.name)) for inv in self.invariants]
        self.packed_inits = [self.spec.pack(state) for state in self.inits]
        self._actions = (ctypes.c_uint32 * kernel.max_successors)()
        self._out = ctypes.create_string_buffer(kernel.max_successors * kernel.state_bytes)

    def _walk(self, walk: int, done: _Done, fingerprints: set[int]) -> None:
        depth, stop = self.sim.depth, self.options.stop_at_first
        lib, size, actions, out = self.kernel.lib, self.kernel.state_bytes, self._actions, self._out
        base = ctypes.addressof(out)
        rng = random.Random(walk_seed(self.sim.seed, walk))
        # the readable walk's rng.choice(inits): the same draw
        first = rng.choice(range(len(self.inits)))
        initial, packed = self.inits[first], self.packed_inits[first]
        packs: list[bytes] = []
        codes: list[int] = []
        seen: set[str] = set()  # invariants this walk broke already
        while True:
            fingerprints.add(hash(packed))
            mask = lib.km_violations_of(packed) if self.bits else 0
            broken = [inv for inv, bit in self.bits if mask & bit and inv.name not in seen]
            if broken:
                steps = tuple(Step(self.spec.action(code), self.spec.unpack(p))
                              for code, p in zip(codes, packs, strict=True))
                state = steps[-1].state if steps else initial
                for inv in broken:
                    seen.add(inv.name)
                    trace = Trace(self.header, initial, steps, inv.name, len(steps), inv.why(state))
                    best = done.found.get(inv.name)
                    if best is None or (len(steps), walk) < best[:2]:
                        done.found[inv.name] = (len(steps), walk, trace)
            if (broken and stop) or len(packs) == depth:
                break
            count = lib.km_successors_of(packed, actions, out)
            done.generated += count
            if not count:
                break
            # the readable walk's rng.choice(choices): as many, in its order
            chosen = rng.choice(range(count))
            packed = ctypes.string_at(base + chosen * size, size)
            packs.append(packed)
            codes.append(actions[chosen])
        done.walks += 1
        done.steps += len(packs)
        done.deepest = max(done.deepest, len(packs) + 1)


def _walker(model: Model, options: SearchOptions,
            sim: SimulationOptions) -> tuple[_Walker, dict[str, Any] | None]:
    """The walker ``sim.kernel`` asks for, and which path it runs (None: ``--kernel off``, not
    reported)."""
    if sim.kernel == "off":
        return _Walker(model, options, sim), None
    from checker import kernel as km

    kernel = None
    if sim.engine == "spark":
        reason = ("the walks on Spark's executors run the readable model (the kernel runs with "
                  "--engine local)")
    else:
        reason = km.why_not(model, options, engine="simulate")
    if reason is None:
        try:
            kernel = km.load(model.kernel())
        except km.KernelUnavailable as exc:
            reason = str(exc)
    if kernel is None:
        if sim.kernel == "on":
            raise km.KernelUnavailable(f"--kernel on: {reason}")
        return _Walker(model, options, sim), {"path": "readable", "reason": reason}
    return _KernelWalker(model, options, sim, kernel), {
        "path": "kernel", "engine": "simulate", "kernel": os.path.basename(kernel.spec.source),
        "library": os.path.basename(kernel.library), "state_bytes": kernel.state_bytes}


def simulate(model: Model, options: SearchOptions, sim: SimulationOptions) -> CheckResult:
    walker, path = _walker(model, options, sim)
    started = time.monotonic()
    deadline = None if sim.max_seconds is None else started + sim.max_seconds
    batches = [_Batch(first, min(WALKS_A_BATCH, sim.walks - first), deadline)
               for first in range(0, sim.walks, WALKS_A_BATCH)]

    def enough(_index: int, done: _Done) -> bool:
        return done.out_of_time or bool(done.found and options.stop_at_first)

    if sim.engine == "spark":
        from checker.spark.swarm import run_batches

        results, cores = run_batches(walker.batch, batches, sim.master, enough, deadline)
    else:
        results = run_jobs(walker.batch, batches, sim.workers, finished=enough)
        cores = min(sim.workers, len(batches)) if sim.workers > 1 else 1
    found: dict[str, tuple[int, int, Trace]] = {}
    for done in results:
        for name, best in done.found.items():
            if name not in found or best[:2] < found[name][:2]:
                found[name] = best
    fingerprints = (np.unique(np.concatenate([d.fingerprints for d in results])) if results
                    else np.zeros(0, np.int64))
    by_name = {inv.name: inv for inv in walker.invariants}
    violations = []
    for name, (length, walk, trace) in sorted(found.items()):
        short = shorten(model, trace, by_name[name]) if sim.shorten else trace
        extra = {"walk": walk, "walk_seed": walk_seed(sim.seed, walk), "length_as_walked": length}
        violations.append(Violation(name, "safety",
                                    Trace(short.header, short.initial, short.steps, name,
                                          short.length, short.explanation, extra)))
    walks = sum(d.walks for d in results)
    deepest = max((d.deepest for d in results), default=0)
    result = CheckResult(
        model=model.name,
        constants=dict(model.constants),
        verdict=Verdict.VIOLATED if violations else Verdict.UNDETERMINED,
        distinct_states=len(fingerprints),
        states_generated=sum(d.generated for d in results),
        depth=deepest,
        seconds=time.monotonic() - started,
        violations=violations,
        invariants=[inv.name for inv in walker.invariants],
        engine="simulate",
        reason=None if violations else f"simulation of {walks} walks found no violation (not a "
                                       "proof)",
    )
    result.workers = cores
    result.extra.update({"walks": walks, "steps": sum(d.steps for d in results), "seed": sim.seed,
                         "swarm": sim.engine, "deepest_walk": deepest,
                         "distinct_states_covered": len(fingerprints),
                         "walks_a_batch": WALKS_A_BATCH})
    if path is not None:
        result.extra["path"] = path
    return result


# -- shortening a violating walk -------------------------------------------------------------------
def shorten(model: Model, trace: Trace, invariant: Invariant) -> Trace:
    """A trace from the same initial state to a state violating ``invariant``, no longer than
    ``trace``: its loops dropped (a state met twice: the steps between go), then each step removed
    in turn while the rest, replayed action by action from the initial state (each action must be
    enabled, and the bounds hold), still reaches a violation (the trace then ends at the first
    violating state). Every candidate is replayed, so the result is a behaviour of the model."""
    bounded = uses_bounds(model)
    steps = _without_loops(trace.initial, list(trace.steps))
    actions = [step.action for step in steps]
    i = 0
    while i < len(actions):
        replayed = _replay(model, trace.initial, actions[:i] + actions[i + 1:], invariant, bounded)
        if replayed is None:
            i += 1
            continue
        steps = _without_loops(trace.initial, replayed)
        actions = [step.action for step in steps]
    last = steps[-1].state if steps else trace.initial
    return Trace(trace.header, trace.initial, tuple(steps), invariant.name, len(steps),
                 invariant.why(last), trace.extra)


def _without_loops(initial: Any, steps: Sequence[Step]) -> list[Step]:
    """``steps`` with every cycle cut out: where a state recurs, the steps since its first visit
    go."""
    at = {initial: 0}
    out: list[Step] = []
    for step in steps:
        earlier = at.get(step.state)
        if earlier is not None:
            for dropped in out[earlier:]:
                at.pop(dropped.state, None)
            del out[earlier:]
            at[step.state] = earlier
            continue
        out.append(step)
        at[step.state] = len(out)
    return out


def _replay(model: Model, initial: Any, actions: Sequence[Any], invariant: Invariant,
            bounded: bool) -> list[Step] | None:
    """The steps of ``actions`` from ``initial`` up to the first state violating ``invariant``; None
    when an action is not enabled, a state leaves the bounds, or no state violates it."""
    if not invariant.holds(initial):
        return []
    current = initial
    steps: list[Step] = []
    for wanted in actions:
        succ = next((s for a, s in model.successors(current) if a == wanted), None)
        if succ is None or (bounded and not model.within_bounds(succ)):
            return None
        steps.append(Step(wanted, succ))
        current = succ
        if not invariant.holds(current):
            return steps
    return None
