"""The states a ``--symmetry --reduce dead`` breadth-first search expands to a depth, in order: the
sample the Kafka model's cost benchmarks measure (``packed_delivery``, ``delivery_memo --floor``,
``family_reads``)."""

from __future__ import annotations

from typing import Any


def expanded_states(model: Any, depth: int) -> list[Any]:
    """Every canonical state of levels 0 to ``depth`` - 1 of ``model``'s reduced search, level by
    level."""
    from checker.search import SearchOptions, search_canonical

    form = search_canonical(model, SearchOptions(symmetry=True, reduce="dead"))
    level = [form(s) for s in model.init_states()]
    seen = set(level)
    states: list[Any] = []
    for _ in range(depth):
        following = []
        for s in level:
            states.append(s)
            for _, t in model.successors(s):
                image = form(t)
                if image not in seen:
                    seen.add(image)
                    following.append(image)
        level = following
    return states
