"""Policy ids: the one registry that resolves every name a policy can be given.

Every place that accepts a policy by name (:func:`mpsched.envs.simulate`, ``mpsched run
--policy``, suites, the optimum's candidates, ``mpsched evaluate --baselines``) resolves
it here with :func:`make`, so all of them accept exactly the same ids:

- a registered id: the hand-written schedulers (``minrtt``, ``dams``, ... registered
  by :mod:`mpsched.baselines`), ``optimum`` (the achievable optimum,
  :class:`mpsched.solvers.OfflineOptimum`), and whatever a plugin registers;
- ``PREFIX:ARG`` for a registered prefix: ``agent:NAME`` or ``agent:DIR`` (a learned
  scheduler, :func:`mpsched.agents.load`);
- ``module:Class``: a class importable from the current directory or ``PYTHONPATH`` whose
  instances have ``decide(obs)``. Importing the module runs its code, as Python's import
  does: a suite or command line that names ``module:Class`` is code, to be run only from
  sources you trust. Anything that is not a class (``subprocess:getoutput``) is refused.

Ids map to *entry points* (``"package.module:attr"`` strings, or the factory itself),
imported only when an id is made, the way Gymnasium registers environments: asking for
``minrtt`` never imports PyTorch or OR-Tools. Registrations come from this module's
built-in table, from *providers* (modules that register ids when imported; built in:
:mod:`mpsched.baselines`) and from installed packages that declare an entry point in the
``mpsched.policies`` group (a function called once with no arguments that registers
their ids).

>>> from mpsched.envs import registry
>>> registry.make("dams", change_threshold=0.2)
DAMS(change_threshold=0.2)
>>> registry.kind("agent:default")
'agent'
"""

from __future__ import annotations

import difflib
import importlib
import inspect
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .errors import PolicyError

__all__ = [
    "KINDS",
    "PolicyEntry",
    "add_provider",
    "describe",
    "entry",
    "ids",
    "kind",
    "make",
    "parameters",
    "parse_param",
    "register",
    "register_prefix",
]

KINDS: tuple[str, ...] = ("baseline", "optimum", "agent", "lookahead", "user")
"""What an id names: a hand-written scheduler, the offline optimum, a learned scheduler,
a look-ahead planner over a scheduler (``rollout:BASE``), or a user's ``module:Class``."""

ENTRY_POINT_GROUP = "mpsched.policies"
"""Package metadata group through which installed packages register policies."""


@dataclass(frozen=True)
class PolicyEntry:
    """One registered id (or prefix).

    Attributes
    ----------
    id : str
        The id, or for a prefix the text before ``:``.
    entry_point : str or callable
        ``"module:attr"`` (imported when first made) or the factory itself. A prefix's
        factory takes the text after ``:`` as its first argument.
    kind : str
        One of :data:`KINDS`.
    extra : str
        The optional dependency set (``pip install 'mpsched[EXTRA]'``) it needs, if any.
    prefix : bool
        Whether ``id`` is a prefix (``agent`` for ``agent:NAME``).
    arg : str
        What follows a prefix, in words (``NAME``).
    """

    id: str
    entry_point: str | Callable[..., Any]
    kind: str = "baseline"
    extra: str = ""
    prefix: bool = False
    arg: str = ""

    @property
    def usage(self) -> str:
        """How the id is written: ``minrtt`` or ``agent:NAME``."""
        return f"{self.id}:{self.arg}" if self.prefix else self.id

    def load(self) -> Callable[..., Any]:
        """The factory, importing its module on first use.

        Raises
        ------
        PolicyError
            When the module cannot be imported (naming the extra that provides it) or has
            no such attribute.
        """
        if callable(self.entry_point):
            return self.entry_point
        module, _, attr = self.entry_point.partition(":")
        try:
            target: Any = importlib.import_module(module)
        except ImportError as exc:
            need = f" (pip install 'mpsched[{self.extra}]')" if self.extra else ""
            raise PolicyError(f"policy {self.usage!r} needs {module}{need}; importing it failed: {exc}") from None
        for part in attr.split("."):
            target = getattr(target, part, None)
            if target is None:
                raise PolicyError(f"policy {self.usage!r}: {module} has no {attr} in this installation")
        return target


_ENTRIES: dict[str, PolicyEntry] = {}
_PREFIXES: dict[str, PolicyEntry] = {}
_PROVIDERS: list[str] = []
_LOADED: set[str] = set()
_PROVIDER_FAILURES: dict[str, str] = {}


def register(id: str, entry_point: str | Callable[..., Any], kind: str = "baseline", extra: str = "") -> None:
    """Register a policy id.

    Parameters
    ----------
    id : str
        The name users give (no ``:``; ids are case-sensitive).
    entry_point : str or callable
        ``"module:Class"`` or the class (any callable returning an object with
        ``decide(obs)``, or with ``simulate(scenario, seed=, drop_expired=)``).
    kind : str
        One of :data:`KINDS` except ``user``.
    extra : str
        The optional dependency set it needs.

    Raises
    ------
    ValueError
        For a malformed id, an unknown kind, or an id registered twice with different
        entry points.
    """
    _check_id(id, kind)
    new = PolicyEntry(id, entry_point, kind, extra)
    old = _ENTRIES.get(id)
    if old is not None and old != new:
        raise ValueError(f"policy id {id!r} is already registered to {old.entry_point!r}")
    _ENTRIES[id] = new


def register_prefix(prefix: str, entry_point: str | Callable[..., Any], kind: str, extra: str = "",
                    arg: str = "ARG") -> None:
    """Register ``prefix:ARG`` ids: ``make("prefix:ARG", **params)`` calls the factory
    as ``factory(ARG, **params)``; ``arg`` says what ARG is in listings.

    Raises
    ------
    ValueError
        As :func:`register`.
    """
    _check_id(prefix, kind)
    new = PolicyEntry(prefix, entry_point, kind, extra, prefix=True, arg=arg)
    old = _PREFIXES.get(prefix)
    if old is not None and old != new:
        raise ValueError(f"policy prefix {prefix!r} is already registered to {old.entry_point!r}")
    _PREFIXES[prefix] = new


def add_provider(module: str) -> None:
    """Name a module that registers ids when imported; it is imported the first time an
    id is looked up that is not registered yet, or when every id is listed."""
    if module not in _PROVIDERS:
        _PROVIDERS.append(module)


def _check_id(id: str, kind: str) -> None:
    if not isinstance(id, str) or not id or ":" in id or id != id.strip():
        raise ValueError(f"policy id: got {id!r}; expected a non-empty name without ':' or surrounding spaces")
    if kind not in KINDS or kind == "user":
        raise ValueError(f"policy kind: got {kind!r}; expected one of {', '.join(k for k in KINDS if k != 'user')}")


def _load_providers(plugins: bool = True) -> None:
    """Import every provider not imported yet, then (with ``plugins``) the installed
    plugins; a provider that fails is remembered (and named when an id cannot be found)
    instead of breaking the others."""
    for module in list(_PROVIDERS):
        if module in _LOADED:
            continue
        _LOADED.add(module)
        try:
            importlib.import_module(module)
        except ImportError as exc:
            _PROVIDER_FAILURES[module] = str(exc)
    group = f"entry points {ENTRY_POINT_GROUP}"
    if not plugins:
        return
    if group in _LOADED:
        return
    _LOADED.add(group)
    from importlib.metadata import entry_points

    for ep in entry_points(group=ENTRY_POINT_GROUP):
        try:
            ep.load()()
        except Exception as exc:  # a broken plugin must not hide the built-in policies
            _PROVIDER_FAILURES[f"{ep.name} ({ep.value})"] = f"{type(exc).__name__}: {exc}"


def ids(kind: str | None = None) -> list[str]:
    """The registered ids (prefixes written ``prefix:ARG``), sorted; only those of one
    kind when given."""
    _load_providers()
    found = [e.usage for e in (*_ENTRIES.values(), *_PREFIXES.values()) if kind is None or e.kind == kind]
    return sorted(found)


def _registered(id: str) -> tuple[PolicyEntry | None, str]:
    """The entry behind ``id`` among those registered so far, with a prefix's argument."""
    head, colon, rest = id.partition(":")
    if not colon:
        return _ENTRIES.get(id), ""
    found = _PREFIXES.get(head)
    if found is not None and not rest:
        raise PolicyError(f"policy {id!r}: expected {found.usage}")
    return found, rest


def _lookup(id: str) -> tuple[PolicyEntry | None, str]:
    """The entry behind an id and, for a prefix, the text after ``:``; (None, "") for a
    ``module:Class`` id."""
    if not isinstance(id, str) or not id.strip():
        raise PolicyError(f"policy: got {id!r}; expected a policy id (one of {', '.join(ids())})")
    found, rest = _registered(id)
    if found is None:  # the project's own providers first: the plugin scan reads every package's metadata
        _load_providers(plugins=False)
        found, rest = _registered(id)
    if found is None:
        _load_providers()
        found, rest = _registered(id)
    if found is None and ":" not in id:
        raise PolicyError(_unknown_message(id))
    return found, rest


def _unknown_message(id: str) -> str:
    known = ids()
    parts = [f"unknown policy {id!r}"]
    close = difflib.get_close_matches(id, known, n=3, cutoff=0.6)
    if close:
        parts.append(f"did you mean {' or '.join(repr(c) for c in close)}")
    parts.append(f"known policies: {', '.join(known)}, or module:Class")
    parts += [f"policies from {where} are unavailable: {why}" for where, why in _PROVIDER_FAILURES.items()]
    return "; ".join(parts)


def entry(id: str) -> PolicyEntry | None:
    """The registered entry behind ``id`` (a prefix's for ``prefix:ARG``); None for a
    ``module:Class`` id.

    Raises
    ------
    PolicyError
        For an id that is neither registered nor of the form ``module:Class``.
    """
    return _lookup(id)[0]


def kind(id: str) -> str:
    """What ``id`` names (one of :data:`KINDS`), without importing it.

    Raises
    ------
    PolicyError
        For an unknown id.
    """
    found = entry(id)
    return "user" if found is None else found.kind


def _factory(id: str) -> tuple[Callable[..., Any], tuple[Any, ...]]:
    found, rest = _lookup(id)
    if found is None:
        return _user_factory(id), ()
    return found.load(), ((rest,) if found.prefix else ())


def parameters(id: str) -> dict[str, inspect.Parameter]:
    """The keyword parameters ``make(id, ...)`` takes (imports the entry point).

    Raises
    ------
    PolicyError
        For an unknown id or one that cannot be imported.
    """
    factory, positional = _factory(id)
    return _keyword_parameters(factory, len(positional))


def _keyword_parameters(factory: Callable[..., Any], skip: int) -> dict[str, inspect.Parameter]:
    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError):
        return {}
    params = [p for p in signature.parameters.values() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    return {p.name: p for p in params[skip:]}


def make(id: str, **params: Any) -> Any:
    """A new policy object for ``id`` built with ``params``.

    Parameters
    ----------
    id : str
        A registered id, ``prefix:ARG`` or ``module:Class`` (module docstring).
    **params
        The factory's keyword arguments.

    Returns
    -------
    object
        An object with ``decide(obs)`` (a :class:`~mpsched.envs.Policy` for the
        hand-written schedulers), or with ``simulate(scenario, seed=, drop_expired=)``
        (the optimum).

    Raises
    ------
    PolicyError
        For an unknown id (naming the closest ones), a parameter the policy does not
        take, a bad value, a missing optional dependency, or an object that cannot
        schedule.
    """
    factory, positional = _factory(id)
    accepted = _keyword_parameters(factory, len(positional))
    takes_any = _takes_any_keyword(factory)
    for key in params:
        if key not in accepted and not takes_any:
            raise PolicyError(_no_parameter(id, key, accepted))
    try:
        policy = factory(*positional, **params)
    except PolicyError:
        raise
    except (TypeError, ValueError, OverflowError) as exc:
        raise PolicyError(f"policy {id!r}: {exc}") from None
    if not callable(getattr(policy, "decide", None)) and not callable(getattr(policy, "simulate", None)):
        raise PolicyError(f"policy {id!r}: the object it builds has no decide(obs) method")
    return policy


def _no_parameter(id: str, key: str, accepted: Mapping[str, Any]) -> str:
    return f"policy {id!r} takes no parameter {key!r}" + (
        f"; its parameters: {', '.join(accepted)}" if accepted else "; it has no parameters")


def _takes_any_keyword(factory: Callable[..., Any]) -> bool:
    try:
        return any(p.kind == p.VAR_KEYWORD for p in inspect.signature(factory).parameters.values())
    except (TypeError, ValueError):
        return True


def parse_param(id: str, text: str) -> tuple[str, Any]:
    """``key=value`` from the command line, converted to the type of the parameter's
    default in policy ``id``.

    Raises
    ------
    PolicyError
        For text without ``=``, an unknown policy or parameter, or a value of the wrong type.
    """
    if "=" not in text:
        raise PolicyError(f"--param {text!r}: expected key=value")
    key, value = (x.strip() for x in text.split("=", 1))
    accepted = parameters(id)
    if key not in accepted:
        raise PolicyError(_no_parameter(id, key, accepted))
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


def _user_factory(spec: str) -> Callable[..., Any]:
    """``module:Class`` imported from the current directory or ``PYTHONPATH`` (the
    console script's ``sys.path`` lacks the current directory)."""
    module, _, attr = spec.partition(":")
    if not module or not attr:
        raise PolicyError(f"policy {spec!r}: expected module:Class")
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.append(cwd)
    try:
        target: Any = importlib.import_module(module)
    except ImportError as exc:
        raise PolicyError(f"policy {spec!r}: cannot import module {module!r} from the current directory "
                          f"or PYTHONPATH ({exc})") from None
    for part in attr.split("."):
        target = getattr(target, part, None)
        if target is None:
            raise PolicyError(f"policy {spec!r}: module {module!r} has no attribute {attr!r}")
    if not isinstance(target, type):
        raise PolicyError(f"policy {spec!r}: {attr!r} is not a class (module:Class names a class whose instances "
                          "have decide(obs); a function such as subprocess:getoutput is refused)")
    return target


def describe(id: str) -> Mapping[str, str]:
    """Name, kind, entry point and extra of a registered id (for listings)."""
    found = entry(id)
    if found is None:
        return {"id": id, "kind": "user", "entry_point": id, "extra": ""}
    ep = found.entry_point if isinstance(found.entry_point, str) else \
        f"{found.entry_point.__module__}:{found.entry_point.__qualname__}"
    return {"id": found.usage, "kind": found.kind, "entry_point": ep, "extra": found.extra}


# The built-in policies. The hand-written schedulers register themselves when
# mpsched.baselines is imported; the optimum and the learned agents need optional
# dependencies and are imported only when made.
add_provider("mpsched.baselines")
register("optimum", "mpsched.solvers.replay:OfflineOptimum", kind="optimum", extra="solve")
register_prefix("agent", "mpsched.agents.model:load", kind="agent", extra="rl", arg="NAME")
register_prefix("rollout", "mpsched.solvers.rollout:make_rollout", kind="lookahead", arg="BASE")
