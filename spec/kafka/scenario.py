"""Run an explicit sequence of actions: the seeds' scenarios as steps, for tests and examples.

    from spec.kafka.scenario import run_scenario states = run_scenario(model, [("Produce",
    {"leader": 0}), ("SendFetch", {"follower": 1, "leader": 0})])

Each step names an action of the table in ``spec.kafka.model`` and its parameters; the step takes
the successor with exactly that action. A step that is not enabled raises ``ScenarioError`` naming
the actions that were enabled, so a scenario that drifts from the model fails loudly.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from spec.errors import NotReplayableError
from spec.model import Action, Model

Step = tuple[str, Mapping[str, Any]] | tuple[str]


class ScenarioError(NotReplayableError):
    """A scenario step is not enabled in the state it is applied to."""


def take(model: Model, state: Any, name: str, params: Mapping[str, Any]
         | None = None) -> tuple[Action, Any]:
    """The successor of ``state`` by the action ``name(params)``; ScenarioError if not enabled."""
    wanted = dict(params or {})
    enabled = []
    for act, succ in model.successors(state):
        if act.name == name and dict(act.params) == wanted:
            return act, succ
        enabled.append(str(act))
    shown = Action(name, tuple(wanted.items()))
    raise ScenarioError(f"{shown} is not enabled; enabled: {', '.join(enabled) or 'nothing'}")


def run_scenario(model: Model, steps: Sequence[Step], state: Any = None) -> list[Any]:
    """The states visited by ``steps`` from ``state`` (default: the model's first initial state),
    starting with that state."""
    current = model.init_states()[0] if state is None else state
    states = [current]
    for step in steps:
        name = step[0]
        params = step[1] if len(step) > 1 else {}
        _, current = take(model, current, name, params)
        states.append(current)
    return states
