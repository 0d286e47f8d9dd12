"""Replaying a trace or a hand-written scenario against a protocol version.

Replay goes by action, not by state: from the initial state, each step takes the successor whose
action is the recorded one (a trace: name and every parameter; a scenario: the parameters it
names). That is what lets a counterexample found under one version be run under another, whose
states differ: under the fixed version either a step is no longer enabled (*blocked*) or the whole
behaviour runs and the invariants hold. After each step every safety invariant of the model is
checked; the first one broken ends the replay (*violated*).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from checker.invariant import SAFETY, Invariant
from checker.trace import Step, Trace
from invariants.registry import for_family
from spec.errors import ExitCode, NotReplayableError
from spec.model import Action, Model
from traces.explain import explain
from traces.scenario import Expectation, Scenario, StepSpec


@dataclass
class ReplayResult:
    outcome: str  # "holds", "violated", "blocked" or "deadlock"
    model: Model
    trace: Trace  # the behaviour replayed, up to the violation or the blocked step
    total_steps: int
    step: int | None = None  # the violating state's step number (0: initial) or the blocked step
    action: Any = None  # the blocked step (a StepSpec) or the action of the violating step
    invariant: Invariant | None = None
    explanation: str | None = None
    enabled: list[Action] = field(default_factory=list)
    #: first step whose replayed state differs from the recorded one (None: all equal or none
    #: recorded)
    diverged_at: int | None = None
    #: a blocked step: the guard it fails, in the words of the system modelled (None: the model has
    #: no sentence)
    why: str | None = None
    #: a blocked replay's last state (where ``enabled_after`` searches from)
    blocked_state: Any = field(default=None, repr=False)
    _enabled_after: Any = field(default=False, repr=False)

    @property
    def enabled_after(self) -> list[Action] | None:
        """A blocked step: the shortest sequence of steps from the blocked state after which it is
        enabled (None: none within ``enabling_steps``' bounds, or not blocked); searched when first
        asked for (the text and ``--json`` ask, the replay itself does not)."""
        if self._enabled_after is False:
            self._enabled_after = (enabling_steps(self.model, self.blocked_state, self.action)
                                   if self.outcome == "blocked" and self.blocked_state is not None
                                   else None)
        return self._enabled_after

    @property
    def protocol(self) -> str | None:
        return self.model.protocol

    @property
    def exit_code(self) -> ExitCode:
        return {
            "holds": ExitCode.HOLDS,
            "violated": ExitCode.SAFETY_VIOLATED,
            "deadlock": ExitCode.DEADLOCK,
            "blocked": ExitCode.NOT_REPLAYABLE,
        }[self.outcome]

    def under(self) -> str:
        return f"protocol {self.protocol}" if self.protocol else f"model {self.model.name}"

    def summary(self) -> str:
        """One line: what happened."""
        if self.outcome == "blocked":
            shown = ", ".join(str(a) for a in self.enabled[:8]) or "none"
            more = f" and {len(self.enabled) - 8} more" if len(self.enabled) > 8 else ""
            why = f": {self.why}" if self.why else ""
            after = ("; it would be enabled after " + ", ".join(str(a) for a in self.enabled_after)
                     if self.enabled_after else "")
            return (f"step {self.step} of {self.total_steps}, {self.action}, is not enabled under "
                    f"{self.under()}{why}{after} (enabled there: {shown}{more})")
        if self.outcome == "violated":
            assert self.invariant is not None
            return (f"invariant {self.invariant.name} is violated at step {self.step} of "
                    f"{self.total_steps} under {self.under()}")
        if self.outcome == "deadlock":
            return (f"the replay ends in a deadlock after {self.total_steps} steps under "
                    f"{self.under()}")
        return f"all {self.total_steps} steps replay under {self.under()} and every invariant holds"

    def matches(self, expected: Expectation) -> bool:
        if expected.outcome != self.outcome:
            return False
        if expected.step is not None and expected.step != self.step:
            return False
        if (expected.invariant is not None and (self.invariant is None or self.invariant.name
                                                != expected.invariant)):
            return False
        return True


def safety_invariants(model: Model, prefer: str | None = None) -> list[Invariant]:
    found = [inv for inv in for_family(model.family).values() if inv.kind == SAFETY or inv.holds
             is not None]
    found = [inv for inv in found if inv.holds is not None]
    # the recorded invariant first, else registry order
    found.sort(key=lambda inv: inv.name != prefer)
    return found


def _first_broken(invariants: Sequence[Invariant], state: Any) -> Invariant | None:
    for inv in invariants:
        if not inv.holds(state):
            return inv
    return None


def replay(
    model: Model,
    steps: Sequence[StepSpec],
    *,
    initial: Any = None,
    recorded: Sequence[Any] | None = None,
    header: dict[str, Any] | None = None,
    prefer: str | None = None,
    expect_deadlock: bool = False,
    invariants: Sequence[Invariant] | None = None,
    check_from: int = 0,
) -> ReplayResult:
    """Run ``steps`` from ``initial`` (default: the model's first initial state) under ``model``.

    ``recorded`` are the states a trace recorded after each step, to report where the replay
    starts to differ from it. The invariants are checked in the states from step ``check_from`` on
    (0: the initial state and every later one).
    """
    inits = list(model.init_states())
    diverged: int | None = None
    if initial is None:
        current = inits[0]
    elif initial in inits:
        current = initial
    elif len(inits) == 1:
        current, diverged = inits[0], 0
    else:
        raise NotReplayableError("the trace's initial state is not an initial state of model "
                                 f"{model.name} here")
    checks = list(invariants) if invariants is not None else safety_invariants(model, prefer)
    base_header = dict(header or model.describe())
    if model.protocol is not None:
        base_header["protocol"] = model.protocol
    start = current
    taken: list[Step] = []

    def result(outcome: str, **kw: Any) -> ReplayResult:
        inv = kw.get("invariant")
        trace = Trace(base_header, start, tuple(taken), inv.name if inv
                      else ("deadlock" if outcome == "deadlock" else None),
                      len(taken) if outcome in ("violated", "deadlock") else None)
        out = ReplayResult(outcome, model, trace, len(steps), diverged_at=diverged, **kw)
        if outcome in ("violated", "deadlock"):
            out.explanation = explain(trace, inv)
            out.trace = Trace(trace.header, trace.initial, trace.steps, trace.invariant,
                              trace.violation_index, inv.why(taken[-1].state if taken else start)
                              if inv else None)
        return out

    broken = _first_broken(checks, current) if check_from <= 0 else None
    if broken is not None:
        return result("violated", step=0, invariant=broken)
    for number, spec in enumerate(steps, start=1):
        candidates = [(act, succ) for act, succ in model.successors(current) if spec.matches(act)]
        if not candidates:
            enabled = list(dict.fromkeys(act for act, _ in model.successors(current)))
            why = model.why_not(current, spec.name, dict(spec.params),
                                [step.action for step in taken])
            return result("blocked", step=number, action=spec, enabled=enabled, why=why,
                          blocked_state=current)
        distinct = list(dict.fromkeys(succ for _, succ in candidates))
        if len(distinct) > 1:
            options = ", ".join(str(a) for a in dict.fromkeys(act for act, _ in candidates))
            raise NotReplayableError(f"step {number}, {spec}, is ambiguous under {model.name}"
                                     f"{' ' + str(model.protocol) if model.protocol else ''}: "
                                     f"it fits {options}; name more parameters")
        act, current = candidates[0]
        taken.append(Step(act, current))
        if (diverged is None and recorded is not None and number - 1 < len(recorded)
            and recorded[number - 1] != current):
            diverged = number
        broken = _first_broken(checks, current) if number >= check_from else None
        if broken is not None:
            return result("violated", step=number, action=act, invariant=broken)
    if expect_deadlock and next(iter(model.successors(current)), None) is None:
        return result("deadlock", step=len(steps))
    return result("holds")


_HEALING = ("Deliver", "Process", "Receive", "Serve", "Send", "Truncate")
#: how far ``enabling_steps`` looks from a blocked state: steps, and states visited
ENABLING_DEPTH, ENABLING_STATES = 3, 5_000


def enabling_steps(model: Model, state: Any, spec: StepSpec) -> list[Action] | None:
    """The shortest sequence of steps from ``state`` after which ``spec`` is enabled (breadth-first,
    at most ``ENABLING_DEPTH`` steps and ``ENABLING_STATES`` states); None if there is none within
    those bounds."""
    parents: dict[Any, tuple[Any, Action] | None] = {state: None}
    level = [state]
    for _ in range(ENABLING_DEPTH):
        following = []
        for current in level:
            # the requests and answers in flight first (Deliver, Process, Receive, Serve, Send...),
            # then new events (crashes, elections, produce): of the shortest ways, the one that
            # completes what the replay started
            for act, succ in sorted(model.successors(current),
                                    key=lambda pair: not pair[0].name.startswith(_HEALING)):
                if succ in parents:
                    continue
                parents[succ] = (current, act)
                if any(spec.matches(a) for a, _ in model.successors(succ)):
                    path = []
                    at: Any = succ
                    while parents[at] is not None:
                        at, step = parents[at]
                        path.append(step)
                    return path[::-1]
                if len(parents) >= ENABLING_STATES:
                    return None
                following.append(succ)
        level = following
    return None


def replay_trace(model: Model, trace: Trace, invariants: Sequence[str] = ()) -> ReplayResult:
    """Replay a recorded trace by its actions (every parameter must match)."""
    specs = [StepSpec(s.action.name, tuple(s.action.params), exact=True) for s in trace.steps]
    return replay(model, specs, initial=trace.initial, recorded=[s.state for s in trace.steps],
                  header=dict(trace.header), prefer=trace.invariant, expect_deadlock=trace.invariant
                  == "deadlock",
                  invariants=select_invariants(model, invariants))


def select_invariants(model: Model, names: Sequence[str]) -> list[Invariant] | None:
    """The named safety invariants of ``model`` (None: all of them)."""
    if not names:
        return None
    available = {inv.name: inv for inv in safety_invariants(model)}
    missing = [n for n in names if n not in available]
    if missing:
        from spec.errors import UsageError

        raise UsageError(f"model {model.name} has no invariant {missing[0]!r}; its invariants: "
                         f"{', '.join(available)}")
    return [available[n] for n in names]


def replay_scenario(model: Model, scenario: Scenario,
                    invariants: Sequence[str] = ()) -> ReplayResult:
    checks = select_invariants(model, list(invariants) or list(scenario.invariants))
    return replay(model, scenario.steps, header=scenario.header(), invariants=checks,
                  check_from=scenario.check_from)


def scenario_model(
    scenario: Scenario, protocol: str | None = None, features: list[str] | None = None,
    constants: list[str] | None = None
) -> Model:
    """The model a scenario names; ``protocol``, ``features`` and ``constants`` override its own.

    A scenario's feature flags are what its story needs (``lossy-crash``, ``unclean``), so unlike a
    trace header's full set they stay switched under any ``protocol``.
    """
    from traces.io import model_for_header

    header = scenario.header()
    header.pop("features", None)
    flags = [f"{k}={'on' if v else 'off'}" for k, v in scenario.features.items()]
    return model_for_header(header, protocol, flags + list(features or []), constants=constants)
