"""The generic symmetry machinery (permutations of interchangeable ids, canonical forms) lives in
``spec.symmetry``, beside the models that declare their symmetry; this module keeps the old import path working.
"""

from spec.symmetry import (  # noqa: F401
    Perm,
    candidate_permutations,
    canonical_brute_force,
    canonicalize,
    max_reduction,
    reindex,
    rename,
)

__all__ = [
    "candidate_permutations",
    "canonicalize",
    "canonical_brute_force",
    "rename",
    "reindex",
    "max_reduction",
    "Perm",
]
