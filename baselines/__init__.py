"""Hand-written schedulers: readable Python specifications with native twins.

Every module of this package is a *family*: the schedulers of one line of work. Each
class names its paper, section and equations, and (where it has one) the native twin
compiled into the core that makes the same decisions. Importing the package registers
every class of every family (those in the family's ``__all__``) under its ``name`` with
:mod:`mpsched.envs.registry`, after checking that its twin in the core takes the same
parameters in the same order (:func:`mpsched.envs.policy.check_twin`): build one with
``registry.make(name, **params)``.

>>> from mpsched import baselines
>>> "minrtt" in baselines.REGISTRY
True
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from types import ModuleType

from ..envs import _core, registry
from ..envs.policy import Policy, check_twin

__all__ = ["REGISTRY", "FAMILIES", "catalog"]


def _families() -> tuple[ModuleType, ...]:
    """Every module of this package, by name."""
    return tuple(importlib.import_module(f"{__name__}.{info.name}")
                 for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name))


def _collect(families: tuple[ModuleType, ...]) -> dict[str, type[Policy]]:
    twins = _core.native_policies()
    found: dict[str, type[Policy]] = {}
    for module in families:
        for attr in module.__all__:
            cls = getattr(module, attr)
            if isinstance(cls, type) and issubclass(cls, Policy) and cls.name != Policy.name:
                if cls.name in found:
                    raise RuntimeError(f"two baselines are named {cls.name!r}: {found[cls.name].__name__} "
                                       f"and {cls.__name__}")
                check_twin(cls, twins)
                found[cls.name] = cls
    return found


FAMILIES: tuple[ModuleType, ...] = _families()
"""The family modules."""

REGISTRY: dict[str, type[Policy]] = dict(sorted(_collect(FAMILIES).items()))
"""Every hand-written scheduler's class by id, sorted by id."""

for _name, _cls in REGISTRY.items():
    registry.register(_name, _cls, kind="baseline")


def catalog() -> list[dict[str, str]]:
    """One row per hand-written scheduler: name, class, native twin, paper, parameters
    and the first line of its docstring."""
    rows = []
    for name, cls in REGISTRY.items():
        doc = inspect.getdoc(cls) or ""
        params = ", ".join(f"{k}={p.default!r}" for k, p in registry.parameters(name).items())
        rows.append({
            "name": name,
            "class": cls.__name__,
            "native": cls.native or "-",
            "paper": cls.paper,
            "params": params,
            "summary": doc.splitlines()[0] if doc else "",
        })
    return rows
