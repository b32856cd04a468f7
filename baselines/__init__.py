"""Hand-written schedulers: readable Python specifications with native twins.

Each family module holds the schedulers of one line of work; every class names its
paper, section and equations, and (where it has one) the native twin compiled into the
core that makes the same decisions. ``get(name, **params)`` builds one by registry name.

>>> from mpsched import baselines
>>> "minrtt" in baselines.names()
True
>>> policy = baselines.get("minrtt")
"""

from __future__ import annotations

import inspect
from types import ModuleType
from typing import Any

from ..envs.errors import PolicyError
from ..envs.policy import Policy
from . import classic, dams, daps, deadline, mptcp, rtx, srpt

__all__ = ["get", "names", "catalog", "parse_param", "REGISTRY", "FAMILIES"]

FAMILIES: tuple[ModuleType, ...] = (classic, dams, daps, deadline, mptcp, rtx, srpt)


def _collect(families: tuple[ModuleType, ...]) -> dict[str, type[Policy]]:
    registry: dict[str, type[Policy]] = {}
    for module in families:
        for attr in module.__all__:
            cls = getattr(module, attr)
            if isinstance(cls, type) and issubclass(cls, Policy) and cls.name != Policy.name:
                if cls.name in registry:
                    raise RuntimeError(f"two baselines are named {cls.name!r}")
                registry[cls.name] = cls
    return registry


REGISTRY: dict[str, type[Policy]] = _collect(FAMILIES)


def names() -> list[str]:
    """Registry names, sorted."""
    return sorted(REGISTRY)


def _parameters(cls: type[Policy]) -> dict[str, inspect.Parameter]:
    return {k: p for k, p in inspect.signature(cls.__init__).parameters.items() if k != "self"}


def get(name: str, **params: Any) -> Policy:
    """A new policy instance by registry name.

    Raises
    ------
    PolicyError
        For an unknown name, a parameter the policy does not take or a bad value.
    """
    if not isinstance(name, str) or name not in REGISTRY:
        raise PolicyError(f"unknown policy {name!r}; known policies: {', '.join(names())}")
    cls = REGISTRY[name]
    accepted = _parameters(cls)
    for key in params:
        if key not in accepted:
            raise PolicyError(
                f"policy {name!r} takes no parameter {key!r}"
                + (f"; its parameters: {', '.join(accepted)}" if accepted else "; it has no parameters")
            )
    try:
        return cls(**params)
    except (TypeError, ValueError) as exc:
        raise PolicyError(f"policy {name!r}: {exc}") from None


def parse_param(name: str, text: str) -> tuple[str, Any]:
    """``key=value`` from the command line, converted to the type of the parameter's
    default in policy ``name``.

    Raises
    ------
    PolicyError
        For text without ``=``, an unknown policy or parameter, or a value of the wrong type.
    """
    if "=" not in text:
        raise PolicyError(f"--param {text!r}: expected key=value")
    key, value = (x.strip() for x in text.split("=", 1))
    if name not in REGISTRY:
        raise PolicyError(f"unknown policy {name!r}; known policies: {', '.join(names())}")
    accepted = _parameters(REGISTRY[name])
    if key not in accepted:
        raise PolicyError(f"policy {name!r} takes no parameter {key!r}"
                          + (f"; its parameters: {', '.join(accepted)}" if accepted else "; it has no parameters"))
    default = accepted[key].default
    try:
        if isinstance(default, bool):
            if value.lower() not in ("true", "false", "1", "0", "yes", "no"):
                raise ValueError(value)
            return key, value.lower() in ("true", "1", "yes")
        if isinstance(default, int):
            return key, int(value)
        if isinstance(default, float):
            return key, float(value)
    except ValueError:
        raise PolicyError(f"--param {key}={value}: expected a {type(default).__name__}") from None
    return key, value


def catalog() -> list[dict[str, str]]:
    """One row per registered policy: name, class, native twin, paper, parameters and
    the first line of its docstring."""
    rows = []
    for name in names():
        cls = REGISTRY[name]
        doc = inspect.getdoc(cls) or ""
        params = ", ".join(f"{k}={p.default!r}" for k, p in _parameters(cls).items())
        rows.append({
            "name": name,
            "class": cls.__name__,
            "native": cls.native or "-",
            "paper": cls.paper,
            "params": params,
            "summary": doc.splitlines()[0] if doc else "",
        })
    return rows
