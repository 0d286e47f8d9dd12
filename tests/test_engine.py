"""Engine behaviour on small hand-written models: invariants on initial states, deadlocks, budgets,
bounds, fingerprints and the action parameters in traces."""

import os
import subprocess
import sys
from typing import NamedTuple

import pytest

from checker.bfs import check
from checker.fingerprint import fingerprint, validate_state
from checker.invariant import Invariant
from checker.result import Verdict
from checker.search import SearchOptions
from spec.errors import ModelError
from spec.model import Action, Model, action


class Counter(NamedTuple):
    x: int
    y: int


class Grid(Model):
    """x, y in 0..n; Inc(var) increments one of them; a dead end at (n, n)."""

    name = "grid"

    def __init__(self, n: int, bound: int | None = None) -> None:
        self.n, self.bound = n, bound
        self.constants = {"n": n}

    def init_states(self):
        return [Counter(0, 0)]

    def successors(self, s):
        if s.x < self.n:
            yield action("Inc", var=1), Counter(s.x + 1, s.y)
        if s.y < self.n:
            yield action("Inc", var=2), Counter(s.x, s.y + 1)

    def within_bounds(self, s):
        return self.bound is None or s.x + s.y <= self.bound

    def state_types(self):
        return (Counter,)


def test_counts_depth_and_generated():
    result = check(Grid(3))
    assert (result.distinct_states, result.depth) == (16, 7)
    assert result.states_generated == 1 + 2 * 3 * 4  # initial state + every enabled Inc
    assert result.verdict is Verdict.HOLDS


def test_invariant_checked_on_initial_states():
    never = Invariant("never", "always false", lambda s: False)
    result = check(Grid(3), SearchOptions(invariants=[never]))
    assert result.verdict is Verdict.VIOLATED
    assert result.violations[0].length == 0


def test_shortest_counterexample_names_action_parameters():
    inv = Invariant("small", "x + y < 3", lambda s: s.x + s.y < 3)
    result = check(Grid(3), SearchOptions(invariants=[inv]))
    trace = result.violations[0].trace
    assert trace.length == 3
    assert str(trace.steps[0].action) == "Inc(var=1)"


def test_deadlock_detection():
    result = check(Grid(2), SearchOptions(check_deadlock=True))
    assert result.verdict is Verdict.VIOLATED
    (violation,) = result.violations
    assert violation.kind == "deadlock" and violation.length == 4
    assert int(result.exit_code) == 11
    assert check(Grid(2)).verdict is Verdict.HOLDS


def test_state_constraint_bounds_the_search():
    result = check(Grid(5, bound=2))
    assert result.distinct_states == 6  # x + y <= 2
    # states outside the constraint are generated (as TLC counts them) but not stored
    assert result.states_generated > result.distinct_states


@pytest.mark.parametrize(
    ("budget", "value"), [("max_states", 5), ("max_depth", 3), ("max_seconds", 1e-9)]
)
def test_budget_gives_undetermined_never_holds(budget, value):
    result = check(Grid(30), SearchOptions(**{budget: value}))
    assert result.verdict is Verdict.UNDETERMINED
    assert result.reason
    assert int(result.exit_code) == 20


def test_violation_beats_undetermined():
    inv = Invariant("small", "x < 2", lambda s: s.x < 2)
    result = check(Grid(30), SearchOptions(invariants=[inv], max_depth=10))
    assert result.verdict is Verdict.VIOLATED


def test_validate_state_rejects_unstable_values():
    class Bad(NamedTuple):
        name: str

    with pytest.raises(ModelError, match="str"):
        validate_state(Bad("a"))
    with pytest.raises(ModelError):
        validate_state(Counter(None, 1))
    with pytest.raises(ModelError):
        validate_state(Counter(-2, 1))
    validate_state(Counter(-1, frozenset({(1, 2)})))


def test_action_rendering():
    assert str(Action("Fetch", (("follower", 2), ("leader", 1)))) == "Fetch(follower=2, leader=1)"
    assert str(Action("TMCommit")) == "TMCommit"


@pytest.mark.slow  # every line it runs, cheaper fast tests run too (coverage by test)
def test_fingerprints_are_stable_across_processes():
    state = Counter(3, frozenset({(1, 2), (3, -1)}))
    code = (
        "from tests.test_engine import Counter; from checker.fingerprint import fingerprint;"
        "print(fingerprint(Counter(3, frozenset({(1, 2), (3, -1)}))))"
    )
    seen = set()
    for seed in ("0", "1", "12345", "random"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                             check=True)
        seen.add(int(out.stdout))
    assert seen == {fingerprint(state)}
