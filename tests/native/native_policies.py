"""Print each native twin with its default parameters, one per line: NAME [PARAM ...]
(the arguments of ``episode_main FILE run``), then the parameter settings that take code
paths the defaults leave alone (the DAMS family's hold)."""

from __future__ import annotations

from mpsched.envs import registry

HOLD = {"hold_gain": 1.5, "rate_window_ms": 200.0}
NON_DEFAULT = [(name, HOLD) for name in ("dems", "dams", "dams-c", "dams-robust")]

seen = set()
for name, params in [(n, {}) for n in registry.ids("baseline")] + NON_DEFAULT:
    policy = registry.make(name, **params)
    if not policy.native:
        continue
    line = " ".join([policy.native, *(repr(x) for x in policy.native_params())])
    if line not in seen:
        seen.add(line)
        print(line)
