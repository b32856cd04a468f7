"""Print each native twin with its default parameters, one per line: NAME [PARAM ...]
(the arguments of ``episode_main FILE run``)."""

from __future__ import annotations

from mpsched.envs import registry

seen = set()
for name in registry.ids("baseline"):
    policy = registry.make(name)
    if not policy.native:
        continue
    line = " ".join([policy.native, *(repr(x) for x in policy.native_params())])
    if line not in seen:
        seen.add(line)
        print(line)
