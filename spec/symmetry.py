"""Symmetry reduction over interchangeable ids (brokers, resource managers).

A model whose ids 0..n-1 are interchangeable (the transition relation and the invariants do not
care which id is which) may store one representative per orbit of the permutation group: the
*canonical* state. ``canonical(s) == canonical(perm(s))`` for every permutation is all the engine
needs (``Model.has_symmetry = True`` and ``Model.canonical``); counterexamples stay real
behaviours because traces are rebuilt by replaying the model and matching canonical fingerprints.

``canonicalize`` builds that representative from two model-provided functions:

* ``permute(state, perm)``: the state with every id ``i`` renamed ``perm[i]``;
* ``signature(state, i)``: what id ``i`` looks like with every id inside blanked out, a value
  that permutations carry along with the id (e.g. broker ``i``'s log, HW and epoch).

Ids are first sorted by signature; only ids with equal signatures can still be told apart by
how they refer to each other, so the minimum is taken over the permutations that keep the
sorted signature order (one permutation when all signatures differ, n! only when all are equal).
The result is the least state of the orbit among those candidates, which is the same for every
member of the orbit: an exact canonical form, not a heuristic.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from itertools import permutations, product
from math import factorial
from typing import Any

Perm = tuple[int, ...]  # perm[old id] = new id
_IDENTITY: dict[int, Perm] = {}


def candidate_permutations(signatures: Sequence[Any]) -> Iterator[Perm]:
    """Every permutation that renames ids so that their signatures come out sorted."""
    n = len(signatures)
    order = sorted(range(n), key=signatures.__getitem__)
    groups: list[list[int]] = []
    for i in order:
        if groups and signatures[groups[-1][0]] == signatures[i]:
            groups[-1].append(i)
        else:
            groups.append([i])
    if all(len(g) == 1 for g in groups):
        perm = [0] * n
        for new, old in enumerate(order):
            perm[old] = new
        yield tuple(perm)
        return
    for choice in product(*(permutations(g) for g in groups)):
        perm = [0] * n
        new = 0
        for group in choice:
            for old in group:
                perm[old] = new
                new += 1
        yield tuple(perm)


def canonicalize(state: Any, n: int, permute: Callable[[Any, Perm], Any],
                 signature: Callable[[Any, int], Any]) -> Any:
    """The least ``permute(state, perm)`` over the candidate permutations (see the module doc)."""
    best = None
    identity = _IDENTITY.get(n) or _IDENTITY.setdefault(n, tuple(range(n)))
    for perm in candidate_permutations([signature(state, i) for i in range(n)]):
        image = state if perm == identity else permute(state, perm)
        if best is None or image < best:
            best = image
    return best


def canonical_brute_force(state: Any, n: int, permute: Callable[[Any, Perm], Any]) -> Any:
    """The least image over all n! permutations (the definition; for tests of ``canonicalize``)."""
    return min(permute(state, perm) for perm in permutations(range(n)))


def rename(ids: tuple[int, ...], perm: Perm) -> tuple[int, ...]:
    """A sorted tuple of ids (a set of ids), renamed."""
    if len(ids) < 2:
        return (perm[ids[0]],) if ids else ids
    return tuple(sorted([perm[i] for i in ids]))


def reindex(values: tuple, perm: Perm) -> tuple:
    """A tuple indexed by id (``values[i]`` belongs to id i), renamed:
    ``out[perm[i]] = values[i]``."""
    if not values:
        return values
    out = list(values)
    for i, value in enumerate(values):
        out[perm[i]] = value
    return tuple(out)


def max_reduction(n: int) -> int:
    """The largest possible reduction factor with n interchangeable ids."""
    return factorial(n)
