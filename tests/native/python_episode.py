"""A full episode through every Python entry point of the core, for valgrind."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from mpsched.envs import registry, simulate
from mpsched.envs.env import MultipathDeadlineEnv
from mpsched.envs.vector import MultipathDeadlineVectorEnv

LOSSY = {
    "duration_s": 5.0,
    "paths": [{"bandwidth": 1.0, "rtt_ms": 10, "loss": 0.02, "cc": "newreno"},
              {"bandwidth": 1.5, "rtt_ms": 20, "loss": 0.02, "cc": "newreno", "queue_packets": 5}],
    "workload": {"type": "avc", "bitrate_mbps": 3.0},
}

RICH = Path(__file__).with_name("rich.yaml")

simulate(LOSSY, "minrtt", seed=1)
rich = simulate(RICH, "rr", seed=5)
rich.receive_buffer()
simulate(LOSSY, registry.make("rr").python(), seed=2)
env = MultipathDeadlineEnv(LOSSY, num_slots=8)
env.reset(seed=3)
rng = np.random.default_rng(0)
for _ in range(3000):
    _, _, done, _, _ = env.step(int(rng.choice(np.flatnonzero(env.action_masks()))))
    if done:
        env.reset()
rich_env = MultipathDeadlineEnv(str(RICH), num_slots=8)
rich_env.reset(seed=6)
for _ in range(3000):
    _, _, done, _, _ = rich_env.step(int(rng.choice(np.flatnonzero(rich_env.action_masks()))))
    if done:
        rich_env.reset()
# clones of episodes in progress (in-order receiver, cross traffic, loss) run on their own
# and are freed while the originals go on
for name in ("srpt-ecf", "dams"):
    policy = registry.make(name)
    clone = rich_env.sim.clone()
    clone.apply(-1)  # the decision the environment left pending: WAIT, then the policy
    clone.run(policy.native, policy.native_params())
    del clone
    lossy = env.sim.clone()
    lossy.apply(-1)
    lossy.run(policy.native, policy.native_params())
    twice = lossy.clone()
    twice.reset(9)
    twice.run("minrtt")
# the copy actions: slots with blocks in flight, snapshots taken and returned to
copies_env = MultipathDeadlineEnv(str(RICH), num_slots=8, copies=True)
copies_env.reset(seed=7)
snapshot = None
for step in range(3000):
    _, _, done, _, _ = copies_env.step(int(rng.choice(np.flatnonzero(copies_env.action_masks()))))
    if step == 1000:
        snapshot = copies_env.get_state()
    if done:
        copies_env.reset()
if snapshot is not None:
    copies_env.set_state(snapshot)
    copies_env.step(int(np.flatnonzero(copies_env.action_masks())[-1]))
venv = MultipathDeadlineVectorEnv(num_envs=3, scenario={**LOSSY, "duration_s": 0.5}, num_slots=8)
venv.reset(seed=4)
for _ in range(3000):
    masks = venv.action_masks()
    venv.step(np.array([rng.choice(np.flatnonzero(m)) for m in masks], dtype=np.int64))
print("python episode done")
