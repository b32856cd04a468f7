"""Write the synthetic bandwidth traces that the built-in suites drive paths with.

Each trace is a cellular-like bandwidth process in the "cooked" format (one line per
second: ``time_s Mbps``, as the HSDPA traces of Riiser et al. are distributed): the log
of the rate follows a stationary AR(1) process, ``x[t] = phi x[t-1] + sqrt(1 - phi^2)
sigma e[t]``, rescaled so that the trace's mean is exactly the target and floored at
0.05 Mbit/s. phi = 0.85 and sigma = 0.55 match the lag-1 autocorrelation and spread of
log-rate in HSDPA commute logs (0.7-0.9, coefficient of variation 0.5-0.8). The suites
read them with ``random_offset: true``, so each seed starts the trace somewhere else.

Run from the repository root: ``python experiments/suites/traces/generate.py``. The
output is deterministic (fixed seeds, fixed formatting).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
SECONDS = 600

# file name -> (mean Mbit/s, phi, sigma of log-rate, generator seed)
TRACES = {
    "cellular-1.50.txt": (1.50, 0.85, 0.55, 1),   # the DAMS paper's path 1 average (Sec. V-B)
    "cellular-2.36.txt": (2.36, 0.85, 0.55, 2),   # its path 2 average
    "lte-6.0.txt": (6.0, 0.85, 0.45, 3),          # a faster cellular path (leaderboard)
    "wifi-12.0.txt": (12.0, 0.7, 0.35, 4),        # a Wi-Fi-like path with shorter swings (leaderboard)
    # the agents suite's training traces: other files than the paper's test traces
    "cellular-1.20.txt": (1.20, 0.85, 0.55, 5),
    "cellular-1.80.txt": (1.80, 0.85, 0.55, 6),
    "cellular-2.10.txt": (2.10, 0.85, 0.55, 7),
    "cellular-2.80.txt": (2.80, 0.85, 0.55, 8),
}


def trace(mean_mbps: float, phi: float, sigma: float, seed: int, seconds: int = SECONDS) -> np.ndarray:
    """Rates in Mbit/s, one per second."""
    rng = np.random.default_rng(seed)
    x = np.empty(seconds)
    x[0] = rng.normal(0.0, sigma)
    noise = rng.normal(0.0, sigma * np.sqrt(1.0 - phi * phi), seconds)
    for t in range(1, seconds):
        x[t] = phi * x[t - 1] + noise[t]
    rate = np.maximum(np.exp(x), 1e-9)
    rate *= mean_mbps / rate.mean()
    return np.maximum(rate, 0.05)


def main() -> None:
    for name, (mean, phi, sigma, seed) in TRACES.items():
        rates = trace(mean, phi, sigma, seed)
        lines = [f"{t:d}.0 {r:.4f}" for t, r in enumerate(rates)]
        (HERE / name).write_text("\n".join(lines) + "\n")
        print(f"{name}: mean {rates.mean():.3f} Mbit/s, min {rates.min():.3f}, max {rates.max():.3f}")


if __name__ == "__main__":
    main()
