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
    "kafka": ("invariants.kafka_log_matching", "invariants.kafka_durability",
              "invariants.kafka_sanity", "invariants.kafka_control", "invariants.kafka_clients",
              "invariants.kafka_kraft", "invariants.kafka_progress"),
}
# family-name prefix -> the module whose ``register_family(name)`` registers a family made per
# configuration
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
    registered = _REGISTRY.get(family, {})
    modules = _MODULES.get(family, ())
    # the family's modules in their order, each module's invariants in the order it registers them:
    # the same whichever module a process happened to import first (a test importing
    # ``invariants.kafka_control`` directly, say)
    order = {module: k for k, module in enumerate(modules)}
    return dict(sorted(registered.items(),
                       key=lambda item: order.get(_module_of(item[1]), len(modules))))


def _module_of(invariant: Invariant) -> str:
    """The module that defines an invariant's check (its ``holds``, ``premise`` or
    ``graph_check``)."""
    check = invariant.holds or invariant.premise or invariant.graph_check
    return getattr(check, "__module__", "")
