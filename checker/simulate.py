"""Random simulation: many random walks of bounded depth, for configurations too big to exhaust.

Each walk starts at a random initial state and takes a random enabled action until it reaches
the depth bound, a state with no successor inside the bounds, or a violation. Walks are driven
by one seeded generator, so the same seed gives the same walks. A violation found this way is a
real behaviour but not necessarily the shortest one; the verdict without a violation is
*undetermined* (simulation proves nothing).
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass

from checker.result import CheckResult, Verdict, Violation
from checker.search import SearchOptions, trace_header, uses_bounds, validate_initial
from checker.trace import Step, Trace
from spec.model import Model


@dataclass
class SimulationOptions:
    walks: int = 1000
    depth: int = 50
    seed: int = 0
    max_seconds: float | None = None


def simulate(model: Model, options: SearchOptions, sim: SimulationOptions) -> CheckResult:
    rng = random.Random(sim.seed)
    inits = list(model.init_states())
    validate_initial(model, inits)
    bounded = uses_bounds(model)
    invariants = options.safety_invariants()
    started = time.monotonic()
    generated = 0
    steps_taken = 0
    deepest = 0
    found: dict[str, Trace] = {}
    walks_done = 0
    for _ in range(sim.walks):
        if sim.max_seconds is not None and time.monotonic() - started > sim.max_seconds:
            break
        walks_done += 1
        state = rng.choice(inits)
        initial = state
        steps: list[Step] = []
        for _depth in range(sim.depth + 1):
            broken = [inv for inv in invariants if inv.name not in found and not inv.holds(state)]
            for inv in broken:
                trace = Trace(trace_header(model, options), initial, tuple(steps), inv.name, len(steps), inv.why(state))
                if inv.name not in found or trace.length < found[inv.name].length:
                    found[inv.name] = trace
            if broken and options.stop_at_first:
                break
            if len(steps) == sim.depth:
                break
            choices = list(model.successors(state))
            generated += len(choices)
            if bounded:
                choices = [c for c in choices if model.within_bounds(c[1])]
            if not choices:
                break
            act, state = rng.choice(choices)
            steps.append(Step(act, state))
        steps_taken += len(steps)
        deepest = max(deepest, len(steps) + 1)
        if found and options.stop_at_first:
            break
    violations = [Violation(name, "safety", trace) for name, trace in sorted(found.items())]
    result = CheckResult(
        model=model.name,
        constants=dict(model.constants),
        verdict=Verdict.VIOLATED if violations else Verdict.UNDETERMINED,
        distinct_states=0,
        states_generated=generated,
        depth=deepest,
        seconds=time.monotonic() - started,
        violations=violations,
        invariants=[inv.name for inv in invariants],
        engine="simulate",
        reason=None if violations else f"simulation of {walks_done} walks found no violation (not a proof)",
    )
    result.extra.update({"walks": walks_done, "steps": steps_taken, "seed": sim.seed, "deepest_walk": deepest})
    return result
