"""Hand-written schedulers: readable Python specifications with native twins.

>>> from mpsched import baselines
>>> baselines.names()
['minrtt', 'random', 'rr']
>>> policy = baselines.get("minrtt")
"""

from __future__ import annotations

import inspect
from typing import Any

from ..envs.errors import PolicyError
from ..envs.policy import Policy
from .classic import MinRTT, RandomBlock, RoundRobin

__all__ = ["MinRTT", "RoundRobin", "RandomBlock", "get", "names", "catalog", "REGISTRY"]

REGISTRY: dict[str, type[Policy]] = {cls.name: cls for cls in (MinRTT, RoundRobin, RandomBlock)}


def names() -> list[str]:
    """Registry names, sorted."""
    return sorted(REGISTRY)


def get(name: str, **params: Any) -> Policy:
    """A new policy instance by registry name.

    Raises
    ------
    PolicyError
        For an unknown name or a parameter the policy does not take.
    """
    if not isinstance(name, str) or name not in REGISTRY:
        raise PolicyError(f"unknown policy {name!r}; known policies: {', '.join(names())}")
    cls = REGISTRY[name]
    accepted = inspect.signature(cls.__init__).parameters
    for key in params:
        if key not in accepted or key == "self":
            known = [p for p in accepted if p != "self"]
            raise PolicyError(
                f"policy {name!r} takes no parameter {key!r}"
                + (f"; its parameters: {', '.join(known)}" if known else "; it has no parameters")
            )
    try:
        return cls(**params)
    except (TypeError, ValueError) as exc:
        raise PolicyError(f"policy {name!r}: {exc}") from None


def catalog() -> list[dict[str, str]]:
    """One row per registered policy: name, class, native twin and first docstring line."""
    rows = []
    for name in names():
        cls = REGISTRY[name]
        doc = inspect.getdoc(cls) or ""
        rows.append({
            "name": name,
            "class": cls.__name__,
            "native": cls.native or "-",
            "summary": doc.splitlines()[0] if doc else "",
        })
    return rows
