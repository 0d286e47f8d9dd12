"""What the reductions of the safety search share: their names, the refusals common to them, and
``--shortest``.

A reduced search stores fewer states than the full one and keeps every invariant's verdict, but its
counterexamples need not be shortest; ``--shortest`` then runs the full search bounded at the
counterexample's depth (``shortest_rerun``). The one reduction is ``--reduce dead``
(``checker.dead``). Partial-order reduction (``--reduce por``) was removed: it reduced no
configuration anyone runs (bench/NOTES.md, "Partial-order reduction removed").
"""

from __future__ import annotations

import dataclasses
from typing import Any

from checker.search import SearchOptions
from spec.errors import UsageError
from spec.model import Model

REDUCTIONS = ("none", "dead")  # dead: checker.dead


def check_supported(options: SearchOptions) -> None:
    """One line (exit 64) where the reduction cannot run (which engines run it is their record's to
    say, ``checker.engines.Engine.reductions``)."""
    if options.reduce not in REDUCTIONS:
        raise UsageError(f"unknown reduction {options.reduce!r}; reductions: "
                         f"{', '.join(REDUCTIONS)}")
    if options.reduce == "none":
        if options.shortest:
            raise UsageError("--shortest goes with --reduce dead (the full search's "
                             "counterexamples are shortest already)")
        return
    from checker.dead import check_supported as dead_supported

    dead_supported(options)


def shortest_rerun(model: Model, options: SearchOptions, result: Any, engine: Any) -> Any:
    """After a reduced search found violations: the full search bounded at the deepest
    counterexample's depth, whose counterexamples are shortest (breadth-first); its violations
    replace the reduced search's, whose counts stay the result's. The bounded search's own counts
    are in ``extra["shortest"]``."""
    if not result.violations:
        return result
    depth = max(len(v.trace.steps) for v in result.violations)
    # the search's depth counts levels, the initial states' included: a state ``depth`` steps away
    # is in level depth + 1
    bounded = engine(model, dataclasses.replace(options, reduce="none", shortest=False,
                                                max_depth=depth + 1))
    if not bounded.violations:  # cannot happen: a violating state lies at that depth
        raise RuntimeError("the full search bounded at a reduced counterexample's depth found no "
                           "violation")
    result.violations = bounded.violations
    result.extra["shortest"] = {"depth_bound": depth, "distinct_states": bounded.distinct_states,
                                "states_generated": bounded.states_generated,
                                "lengths": {v.invariant: len(v.trace.steps)
                                            for v in bounded.violations}}
    return result
