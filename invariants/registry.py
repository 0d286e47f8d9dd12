"""Maps a model family to its named invariants: the one registry that owns every family.

Each invariants module registers its properties at import; ``for_family`` imports the modules of
a family lazily so that checking two-phase never imports the Kafka model. The registry knows every
family's modules itself (a model never registers into it: the arrows point from invariants to spec),
and families made per configuration (the TLA+ reference models' ``tla:<module> Replicas=...``) are
registered by their module's ``register_family`` the first time they are asked for.
"""

from __future__ import annotations

import importlib

from checker.invariant import Invariant

# family -> modules that register its invariants
_MODULES: dict[str, tuple[str, ...]] = {
    "two-phase": ("invariants.two_phase",),
    "kafka": ("invariants.kafka_log_matching", "invariants.kafka_durability", "invariants.kafka_sanity",
              "invariants.kafka_control", "invariants.kafka_clients", "invariants.kafka_kraft",
              "invariants.kafka_progress"),
}
# family-name prefix -> the module whose ``register_family(name)`` registers a family made per configuration
_PER_CONFIGURATION: dict[str, str] = {"tla:": "invariants.reference"}
_REGISTRY: dict[str, dict[str, Invariant]] = {}


def register(family: str, invariant: Invariant) -> Invariant:
    _REGISTRY.setdefault(family, {})[invariant.name] = invariant
    return invariant


def is_registered(family: str) -> bool:
    return bool(_REGISTRY.get(family))


def add_family(family: str, *modules: str) -> None:
    """Declare the modules that register a family's invariants (a user's own model family)."""
    _MODULES[family] = tuple(dict.fromkeys(_MODULES.get(family, ()) + modules))


def for_family(family: str) -> dict[str, Invariant]:
    for module in _MODULES.get(family, ()):
        importlib.import_module(module)
    if family not in _REGISTRY:
        for prefix, module in _PER_CONFIGURATION.items():
            if family.startswith(prefix):
                importlib.import_module(module).register_family(family)
    return dict(_REGISTRY.get(family, {}))
