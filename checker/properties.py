"""User properties: ``--property MODULE:FUNCTION``, checked like a built-in invariant.

The function is the user's own code, imported from a module they name: ``my_props:no_two_leaders``
imports ``my_props`` (from the current directory first, then the usual module path) and
``props/kafka.py:no_two_leaders`` loads that file. It takes a state, or a state and the model,
and returns a truth value; its first docstring line is the property's description.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from checker.invariant import Invariant
from spec.errors import ModelError, NoInputError, UsageError

_FORM = "--property takes MODULE:FUNCTION or FILE.py:FUNCTION (e.g. my_props:no_two_leaders)"


@dataclass(frozen=True)
class UserProperty:
    """A loaded ``--property``: ``bind(model)`` gives the invariant for one configuration."""

    spec: str
    name: str
    description: str
    function: Callable[..., Any]
    wants_model: bool

    def bind(self, model: Any) -> Invariant:
        function, name, spec = self.function, self.name, self.spec

        if self.wants_model:
            def call(state: Any) -> Any:
                return function(state, model)
        else:
            call = function

        def holds(state: Any) -> bool:
            try:
                return bool(call(state))
            except Exception as exc:  # the user's code: one line naming it, not a traceback
                raise ModelError(f"property {spec} raised {type(exc).__name__}: {exc}") from None

        return Invariant(name, self.description, holds,
                         explain=lambda state: f"{name} does not hold: {self.description}")


def load_property(spec: str) -> UserProperty:
    where, sep, attr = spec.rpartition(":")
    if not sep or not where or not attr.isidentifier():
        raise UsageError(f"{_FORM}, not {spec!r}")
    module = _load_module(where, spec)
    function = getattr(module, attr, None)
    if function is None:
        found = sorted(n for n, v in vars(module).items() if inspect.isfunction(v)
                       and not n.startswith("_"))
        raise UsageError(f"--property {spec}: {where} has no function {attr!r}; its functions: "
                         f"{', '.join(found) or 'none'}")
    if not callable(function):
        raise UsageError(f"--property {spec}: {attr} is a {type(function).__name__}, not a "
                         "function")
    wants_model = _arity(function, spec) == 2
    doc = (inspect.getdoc(function) or "").strip().splitlines()
    description = doc[0] if doc else f"user property {spec}"
    return UserProperty(spec, attr, description, function, wants_model)


def load_properties(specs: Sequence[str], taken: Sequence[str] = ()) -> list[UserProperty]:
    out: list[UserProperty] = []
    names = set(taken)
    for spec in specs:
        prop = load_property(spec)
        if prop.name in names:
            raise UsageError(f"--property {spec}: the name {prop.name!r} is already taken (a "
                             "built-in invariant "
                             "or another --property); rename the function")
        names.add(prop.name)
        out.append(prop)
    return out


def _load_module(where: str, spec: str) -> Any:
    try:
        if where.endswith(".py") or os.sep in where or "/" in where:
            if not os.path.isfile(where):
                raise NoInputError(f"--property {spec}: no such file {where}")
            name = "kmc_user_" + "".join(c if c.isalnum() else "_" for c in os.path.abspath(where))
            loader = importlib.util.spec_from_file_location(name, where)
            if loader is None or loader.loader is None:
                raise UsageError(f"--property {spec}: {where} is not a Python file")
            module = importlib.util.module_from_spec(loader)
            loader.loader.exec_module(module)
            return module
        if not all(part.isidentifier() for part in where.split(".")):
            raise UsageError(f"{_FORM}, not {spec!r}")
        cwd = os.getcwd()
        added = cwd not in sys.path
        if added:
            sys.path.insert(0, cwd)
        try:
            return importlib.import_module(where)
        finally:
            if added:
                sys.path.remove(cwd)
    except ModuleNotFoundError as exc:
        if exc.name and where.startswith(exc.name):
            raise UsageError(f"--property {spec}: no module {where!r} (put "
                             f"{where.replace('.', '/')}.py in the current "
                             "directory or on PYTHONPATH, or give FILE.py:FUNCTION)") from None
        raise UsageError(f"--property {spec}: importing {where} failed: {exc}") from None
    except (UsageError, NoInputError):
        raise
    except OSError as exc:
        raise NoInputError(f"--property {spec}: cannot read {where}: "
                           f"{exc.strerror or exc}") from None
    except Exception as exc:  # a syntax error or a failing import in the user's module
        raise UsageError(f"--property {spec}: importing {where} failed: {type(exc).__name__}: "
                         f"{exc}") from None


def _arity(function: Callable[..., Any], spec: str) -> int:
    try:
        params = list(inspect.signature(function).parameters.values())
    except (TypeError, ValueError):
        return 1
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = [p for p in positional if p.default is p.empty]
    if any(p.kind == p.VAR_POSITIONAL for p in params):
        return 2
    if len(required) > 2 or not positional:
        raise UsageError(f"--property {spec}: the function must take (state) or (state, model), "
                         f"not {len(required)} required arguments")
    return 2 if len(positional) >= 2 else 1
