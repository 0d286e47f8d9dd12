"""Maps a model family to its named invariants.

Each invariants module registers its properties at import; ``for_family`` imports the modules of
a family lazily so that checking two-phase never imports the Kafka model.
"""

from __future__ import annotations

import importlib

from invariants.base import Invariant

# family -> modules that register its invariants
_MODULES: dict[str, tuple[str, ...]] = {
    "two-phase": ("invariants.two_phase",),
    "kafka": ("invariants.kafka_log_matching", "invariants.kafka_durability", "invariants.kafka_sanity"),
}
_REGISTRY: dict[str, dict[str, Invariant]] = {}


def register(family: str, invariant: Invariant) -> Invariant:
    _REGISTRY.setdefault(family, {})[invariant.name] = invariant
    return invariant


def add_family(family: str, *modules: str) -> None:
    """Declare the modules that register a family's invariants (used by model packages)."""
    _MODULES[family] = tuple(dict.fromkeys(_MODULES.get(family, ()) + modules))


def for_family(family: str) -> dict[str, Invariant]:
    for module in _MODULES.get(family, ()):
        importlib.import_module(module)
    return dict(_REGISTRY.get(family, {}))
