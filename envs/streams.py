"""The core's random streams in Python (docs/model.md section 5): xoshiro256** seeded by
splitmix64, stream ``i`` of an episode seed, for code that must draw exactly what the core
draws (the ns-3 comparison replays the core's losses with it, Peekaboo's specification
its policy's draws)."""

from __future__ import annotations

__all__ = ["CoreStream", "POLICY_STREAM"]

POLICY_STREAM = 192
"""The stream of a native policy that draws (docs/model.md section 5)."""

_MASK64 = (1 << 64) - 1
_GOLDEN_GAMMA = 0x9E3779B97F4A7C15


def _rotl64(x: int, k: int) -> int:
    return ((x << k) | (x >> (64 - k))) & _MASK64


class CoreStream:
    """Stream ``stream`` of the episode seed ``seed``: the draws of the core's
    ``mps_rng_seed(s, seed, stream)`` and ``mps_rng_next``."""

    __slots__ = ("_s",)

    def __init__(self, seed: int, stream: int) -> None:
        state = (seed + (stream + 1) * _GOLDEN_GAMMA) & _MASK64
        words = []
        for _ in range(4):
            state = (state + _GOLDEN_GAMMA) & _MASK64
            z = state
            z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
            z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
            words.append(z ^ (z >> 31))
        self._s = words

    def next(self) -> int:
        """The next 64-bit draw."""
        s = self._s
        result = (_rotl64((s[1] * 5) & _MASK64, 7) * 9) & _MASK64
        t = (s[1] << 17) & _MASK64
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = _rotl64(s[3], 45)
        return result

    def uniform(self) -> float:
        """The next draw as a binary64 in [0, 1): its top 53 bits times 2^-53."""
        return (self.next() >> 11) * 2.0**-53
