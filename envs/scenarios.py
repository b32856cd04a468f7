"""Built-in scenarios, named after the settings of the DAMS paper ([dams], §V-C).

Every built-in streams the paper's live video: AVC at 4.3 Mbit/s, 30 frames/s, one block
per frame, I/P/B frames of high/medium/low priority, a 200 ms deadline, for 60 s; paths
run NewReno. Names:

- ``dams-rtt-{40,80,120,160,200}``: stable RTT combinations (Fig. 7). Path 1 2 Mbit/s with
  a 10 ms RTT, path 2 3 Mbit/s with the named RTT.
- ``dams-bw-{3-3.5,2.5-3,2-2.5,1.5-2,1-1.5,0.5-1}``: bandwidth combinations (Fig. 8), RTTs
  10 and 20 ms, 0.01 % random loss.
- ``dams-dynamic-{1,2}-rtt-{40,80}``: dynamic settings (Figs. 11-13). Each path alternates
  between two bandwidths every second (a 2 s square wave): setting 1 is 2/0.5 and
  2.5/1 Mbit/s, setting 2 is 2.5/0.5 and 3/1 Mbit/s; RTTs 10 ms and the named one.

>>> from mpsched.envs import scenarios
>>> scenarios.get("dams-rtt-40").paths[1].rtt_s
0.04
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from .errors import ScenarioError
from .scenario import Scenario
from .textfiles import exists

__all__ = ["get", "names", "resolve", "DEFAULT"]

DEFAULT = "dams-dynamic-1-rtt-40"
"""The scenario used when none is named (demo, Gymnasium environment)."""

_DURATION_S = 60.0
_VIDEO = {"type": "avc", "fps": 30, "bitrate_mbps": 4.3, "deadline_ms": 200}
_RTT2_MS = (40, 80, 120, 160, 200)
_BW_PAIRS = ((3.0, 3.5), (2.5, 3.0), (2.0, 2.5), (1.5, 2.0), (1.0, 1.5), (0.5, 1.0))
_DYNAMIC = {1: ((2.0, 0.5), (2.5, 1.0)), 2: ((2.5, 0.5), (3.0, 1.0))}


def _fmt(x: float) -> str:
    return f"{x:g}"


def _rtt(rtt2_ms: int) -> dict[str, Any]:
    return {
        "name": f"dams-rtt-{rtt2_ms}",
        "description": f"DAMS Fig. 7: path 1 2 Mbit/s RTT 10 ms, path 2 3 Mbit/s RTT {rtt2_ms} ms, AVC 4.3 Mbit/s",
        "duration_s": _DURATION_S,
        "paths": [
            {"name": "path1", "bandwidth": 2.0, "rtt_ms": 10},
            {"name": "path2", "bandwidth": 3.0, "rtt_ms": rtt2_ms},
        ],
        "workload": dict(_VIDEO),
    }


def _bw(bw1: float, bw2: float) -> dict[str, Any]:
    return {
        "name": f"dams-bw-{_fmt(bw1)}-{_fmt(bw2)}",
        "description": f"DAMS Fig. 8: paths {_fmt(bw1)} and {_fmt(bw2)} Mbit/s, RTT 10/20 ms, 0.01 % loss, "
                       "AVC 4.3 Mbit/s",
        "duration_s": _DURATION_S,
        "paths": [
            {"name": "path1", "bandwidth": bw1, "rtt_ms": 10, "loss": 0.0001},
            {"name": "path2", "bandwidth": bw2, "rtt_ms": 20, "loss": 0.0001},
        ],
        "workload": dict(_VIDEO),
    }


def _dynamic(setting: int, rtt2_ms: int) -> dict[str, Any]:
    (h1, l1), (h2, l2) = _DYNAMIC[setting]

    def wave(high: float, low: float) -> dict[str, Any]:
        return {"type": "square", "high_mbps": high, "low_mbps": low, "period_s": 2.0}

    return {
        "name": f"dams-dynamic-{setting}-rtt-{rtt2_ms}",
        "description": (
            f"DAMS dynamic setting {setting} (Figs. 11-13): path 1 {_fmt(h1)}/{_fmt(l1)} Mbit/s, path 2 "
            f"{_fmt(h2)}/{_fmt(l2)} Mbit/s, 1 s each; RTT 10/{rtt2_ms} ms; AVC 4.3 Mbit/s"
        ),
        "duration_s": _DURATION_S,
        "paths": [
            {"name": "path1", "bandwidth": wave(h1, l1), "rtt_ms": 10},
            {"name": "path2", "bandwidth": wave(h2, l2), "rtt_ms": rtt2_ms},
        ],
        "workload": dict(_VIDEO),
    }


def _builders() -> dict[str, Callable[[], dict[str, Any]]]:
    # Callable[..., ...]: each builder binds its loop values as default arguments.
    table: dict[str, Callable[..., dict[str, Any]]] = {}
    for r in _RTT2_MS:
        table[f"dams-rtt-{r}"] = lambda r=r: _rtt(r)
    for b1, b2 in _BW_PAIRS:
        table[f"dams-bw-{_fmt(b1)}-{_fmt(b2)}"] = lambda b1=b1, b2=b2: _bw(b1, b2)
    for setting in _DYNAMIC:
        for r in (40, 80):
            table[f"dams-dynamic-{setting}-rtt-{r}"] = lambda s=setting, r=r: _dynamic(s, r)
    return table


_BUILDERS = _builders()


def names() -> list[str]:
    """Names of the built-in scenarios, in a stable order."""
    return list(_BUILDERS)


def get(name: str) -> Scenario:
    """A built-in scenario by name.

    Raises
    ------
    ScenarioError
        For an unknown name, listing the known ones.
    """
    if name not in _BUILDERS:
        raise ScenarioError("scenario", name, "a built-in scenario name (" + ", ".join(names()) + ") or a YAML file")
    return Scenario.from_dict(_BUILDERS[name]())


def resolve(spec: Scenario | str | Path | Mapping[str, Any]) -> Scenario:
    """A scenario from a Scenario, a built-in name, a YAML file path or a mapping."""
    if isinstance(spec, Scenario):
        return spec
    if isinstance(spec, Mapping):
        return Scenario.from_dict(spec)
    if isinstance(spec, (str, Path)):
        if str(spec) in _BUILDERS:
            return get(str(spec))
        path = Path(spec)
        if path.suffix in (".yaml", ".yml", ".json") or exists(path):
            return Scenario.from_yaml(path)
        return get(str(spec))
    raise ScenarioError("scenario", spec, "a Scenario, a built-in name, a YAML path or a mapping")
