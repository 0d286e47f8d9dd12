"""The models ``kmc`` knows, by name, with their constants (parameters) and how to build them.

Model packages register a ``ModelInfo`` here; ``build_model`` parses ``--const NAME=VALUE``
strings, checks the bounds and returns a ready model, raising ``UsageError`` with a fix otherwise.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from spec.errors import UsageError
from spec.model import Model


@dataclass(frozen=True)
class Constant:
    """A model parameter: ``--const name=value``."""

    name: str
    default: Any
    description: str
    kind: type = int  # int or bool
    minimum: int | None = None
    maximum: int | None = None

    def parse(self, text: str) -> Any:
        if self.kind is bool:
            lowered = text.strip().lower()
            if lowered in ("1", "true", "on", "yes"):
                return True
            if lowered in ("0", "false", "off", "no"):
                return False
            raise UsageError(f"constant {self.name} takes on/off, not {text!r}")
        try:
            value = int(text)
        except ValueError:
            raise UsageError(f"constant {self.name} takes an integer, not {text!r}") from None
        return self.check(value)

    def check(self, value: Any) -> Any:
        if self.kind is int:
            if self.minimum is not None and value < self.minimum:
                raise UsageError(f"constant {self.name}={value} is below its minimum "
                                 f"{self.minimum}")
            if self.maximum is not None and value > self.maximum:
                raise UsageError(f"constant {self.name}={value} is above its maximum "
                                 f"{self.maximum}")
        return value


@dataclass(frozen=True)
class ModelInfo:
    name: str
    description: str
    constants: tuple[Constant, ...]
    build: Callable[..., Model]
    #: named protocol versions (empty if the model has none) and the default one
    protocols: Mapping[str, str] = field(default_factory=dict)
    default_protocol: str | None = None
    #: feature flags that ``--feature NAME=on|off`` may switch, with descriptions
    features: Mapping[str, str] = field(default_factory=dict)
    #: the rule table (``kmc list --rules``): ``rules(protocol or None)`` -> rows of column -> text,
    #: each row with at least "rule", "release", "ticket", "source"; "on" says whether the protocol
    #: has it
    rules: Callable[[str | None], list[dict[str, str]]] | None = None
    #: the rows of that table an action of ``model`` follows, in table order:
    #: ``action_rules(action name, model)``
    action_rules: Callable[[str, Model], list[dict[str, str]]] | None = None
    #: other names a protocol version answers to (older names kept so saved traces still replay) ->
    #: version
    protocol_aliases: Mapping[str, str] = field(default_factory=dict)

    #: protocol names beyond ``protocols`` and ``protocol_aliases`` (a release by its number,
    #: ``3.7.1``): whether a name is one, and the one-line reason a name is not (the nearest
    #: releases; "" for a name of no such shape)
    protocol_numbers: Callable[[str], bool] | None = None
    protocol_hint: Callable[[str], str] | None = None
    #: every release by its number (``kmc list --releases``): rows of "protocol" (the name to give),
    #: "release", "mode", "row" and "differs" (flag -> on/off where the release's flags are not the
    #: row's)
    release_table: Callable[[], list[dict[str, Any]]] | None = None
    #: the row a protocol name runs unchanged (a release number whose flags are its row's: 3.5.1 is
    #: 3.4.1), else None; a scenario's expectation for the row is the release's
    protocol_row: Callable[[str], str | None] | None = None

    def has_protocol(self, name: str) -> bool:
        return (name in self.protocols or name in self.protocol_aliases
                or (self.protocol_numbers is not None and self.protocol_numbers(name)))

    def protocol_names(self) -> str:
        """The known protocol names, for an error message."""
        aliases = ", ".join(f"{a} (= {t})" for a, t in self.protocol_aliases.items())
        numbers = ("; or a release by its number (kmc list --releases)" if self.protocol_numbers
                   is not None else "")
        return ", ".join(self.protocols) + (f"; aliases: {aliases}" if aliases else "") + numbers

    def unknown_protocol(self, name: str) -> str:
        """The one line for a protocol name the model does not know: the releases nearest to a
        number, else the names it knows."""
        hint = self.protocol_hint(name) if self.protocol_hint is not None else ""
        if hint:
            return f"unknown protocol {name!r} for model {self.name}: {hint}"
        return f"unknown protocol {name!r} for model {self.name}; known: {self.protocol_names()}"


_MODELS: dict[str, ModelInfo] = {}
# modules that register models, imported lazily on first lookup
_MODULES = ("spec.two_phase", "spec.kafka", "spec.reference")


def register(info: ModelInfo) -> ModelInfo:
    _MODELS[info.name] = info
    return info


def _load_all() -> None:
    for module in _MODULES:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:  # a model package not written yet
            if exc.name != module:
                raise


def all_models() -> dict[str, ModelInfo]:
    _load_all()
    return dict(sorted(_MODELS.items()))


def get_model_info(name: str) -> ModelInfo:
    models = all_models()
    if name not in models:
        known = ", ".join(models) or "none"
        raise UsageError(f"unknown model {name!r}; known models: {known} (see 'kmc list')")
    return models[name]


def parse_constants(info: ModelInfo, assignments: list[str]) -> dict[str, Any]:
    values = {c.name: c.default for c in info.constants}
    by_name = {c.name.lower(): c for c in info.constants}
    for text in assignments:
        if "=" not in text:
            raise UsageError(f"--const takes NAME=VALUE, not {text!r}")
        key, _, raw = text.partition("=")
        const = by_name.get(key.strip().lower())
        if const is None:
            names = ", ".join(c.name for c in info.constants) or "none"
            raise UsageError(f"model {info.name} has no constant {key.strip()!r}; its constants: "
                             f"{names}")
        values[const.name] = const.parse(raw)
    return values


def parse_features(info: ModelInfo, assignments: list[str]) -> dict[str, bool]:
    out: dict[str, bool] = {}
    for text in assignments:
        key, sep, raw = text.partition("=")
        key = key.strip()
        if key not in info.features:
            names = ", ".join(info.features) or "none"
            raise UsageError(f"model {info.name} has no feature flag {key!r}; its flags: {names}")
        lowered = raw.strip().lower() if sep else "on"
        if lowered not in ("on", "off", "true", "false", "1", "0"):
            raise UsageError(f"--feature {key} takes on or off, not {raw!r}")
        out[key] = lowered in ("on", "true", "1")
    return out


def build_model(
    name: str,
    const_assignments: list[str] | None = None,
    protocol: str | None = None,
    feature_assignments: list[str] | None = None,
) -> Model:
    info = get_model_info(name)
    constants = parse_constants(info, const_assignments or [])
    features = parse_features(info, feature_assignments or [])
    if protocol is not None and not info.protocols:
        raise UsageError(f"model {info.name} has no protocol versions; drop --protocol")
    if info.protocols:
        protocol = protocol or info.default_protocol
        if not info.has_protocol(protocol):
            raise UsageError(info.unknown_protocol(protocol))
        return info.build(constants, protocol=protocol, features=features)
    return info.build(constants)
