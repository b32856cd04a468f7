"""The fuzz harness in the slow test set: a fixed budget of generated inputs per target.

The long run (``python tests/fuzz/harness.py --long``: 100,000 inputs) is not a test; its
figures are in the issue notes. Here every target gets a fixed number of inputs with a
fixed seed, and the harness's own checks show that it counts a crash, a hang and an error
of a builtin type.
"""

from __future__ import annotations

import pytest
from harness import Pool, Tally, campaign
from inputs import STRATEGIES

INPUTS_PER_TARGET = 150


@pytest.mark.slow
def test_no_input_crashes_hangs_or_raises_a_builtin_error() -> None:
    tally = campaign(list(STRATEGIES), INPUTS_PER_TARGET * len(STRATEGIES), seed=1, workers=2)
    summary = tally.summary()
    assert summary["inputs"] == INPUTS_PER_TARGET * len(STRATEGIES)
    assert summary["distinct_failures"] == []
    assert summary["crashes"] == summary["timeouts"] == summary["builtin_errors"] == 0
    for target, kinds in summary["per_target"].items():  # every target reaches past validation
        assert kinds.get("ran", 0) > 0, (target, kinds)


@pytest.mark.slow
def test_the_harness_counts_crashes_hangs_and_builtin_errors() -> None:
    tally = Tally()
    with Pool(workers=2, bound_s=3.0) as pool:
        pool.run([("self-check-crash", None), ("self-check-hang", None), ("self-check-builtin", "k"),
                  ("scenario", ({"duration_s": 0.2, "paths": [{"bandwidth": 2, "rtt_ms": 20}],
                                 "workload": {"type": "avc"}}, {"policy": "minrtt", "seed": 0, "drop_expired": False})),
                  ("self-check-crash", None)], tally)
    assert tally.counts == {("self-check-crash", "crash"): 2, ("self-check-hang", "timeout"): 1,
                            ("self-check-builtin", "failed"): 1, ("scenario", "ran"): 1}
    assert {key[2] for key in tally.failures} >= {"KeyError"}
