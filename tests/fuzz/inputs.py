"""Hypothesis strategies for what a careless or hostile user hands mpsched.

Each strategy builds a plausible input of one kind (a scenario mapping, a trace file, a
workload, a suite, environment actions, policy parameters, command lines) and then
mutates it: a value anywhere in the tree replaced by a hostile one (huge or negative
numbers, NaN, infinities, wrong types, long or odd strings), a key removed or an unknown
key added. Files are carried as text in the input (``FILES`` key, names referenced as
``"@name"``) and written by the worker, so that an input is plain data that pickles.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from hypothesis import strategies as st

FILES = "@files"
"""Key of a scenario-like input that holds ``{name: text}`` to be written before it runs."""

POLICY_IDS = ["minrtt", "rr", "dams", "dams-c", "dams-robust", "daps", "dems", "dtp", "ecf", "edf", "blest", "srpt-ecf",
              "spd", "lpc", "let", "spdx", "lpcx", "letx", "sa-ecf", "srpt-minrtt", "blind-rr", "random", "redundant",
              "xquic-reinject", "xlink", "otias", "peekaboo"]
CCS = ["ideal", "newreno", "cubic", "lia", "olia", "balia", "wvegas", "ccp"]

_EDGE_INTS = [0, -1, 1, 2, 7, 2**31 - 1, 2**31, 2**32, 2**53 + 1, 2**62, 2**63 - 1, 2**63, 2**64, 10**30, -10**30]
_EDGE_FLOATS = [0.0, -0.0, 1e-300, 5e-324, 1e-9, 0.5, 1.0, 1.5, 1e7, 1e9, 1e12, 1e20, 1e300, -1.0, -1e300]

hostile: st.SearchStrategy[Any] = st.one_of(
    st.none(),
    st.booleans(),
    st.sampled_from(_EDGE_INTS),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from(_EDGE_FLOATS),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["", "nan", "inf", "-1", "1e999", "0x10", "..", "../../x", "/etc/passwd", "é", "\x00", "x" * 300]),
    st.text(max_size=12),
    st.lists(st.integers(-3, 3), max_size=3),
    st.dictionaries(st.sampled_from(["type", "a", ""]), st.integers(-3, 3), max_size=2),
)
"""A value of the wrong size, sign or type."""


def _leaves(tree: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Paths of every node of a tree of dicts and lists (the root excluded)."""
    out: list[tuple[Any, ...]] = []
    items = tree.items() if isinstance(tree, dict) else enumerate(tree) if isinstance(tree, list) else ()
    for k, v in items:
        if k == FILES:
            continue
        out.append(path + (k,))
        out.extend(_leaves(v, path + (k,)))
    return out


def _get(tree: Any, path: tuple[Any, ...]) -> Any:
    for k in path:
        tree = tree[k]
    return tree


@st.composite
def mutated(draw: st.DrawFn, base: st.SearchStrategy[Any], max_mutations: int = 3) -> Any:
    """``base`` with up to ``max_mutations`` nodes replaced, removed or joined by unknown keys
    (none a third of the time, so that valid inputs run too)."""
    tree = copy.deepcopy(draw(base))  # a strategy may hand out one object (st.just) again
    count = draw(st.sampled_from([0, 0, 0, 1, 1, 2, max_mutations]))
    for _ in range(count):
        paths = _leaves(tree)
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent = _get(tree, path[:-1])
        how = draw(st.sampled_from(["replace", "replace", "replace", "remove", "unknown"]))
        if how == "replace":
            parent[path[-1]] = draw(hostile)
        elif how == "remove":
            if isinstance(parent, dict):
                del parent[path[-1]]
            else:
                parent.pop(path[-1])
        elif isinstance(parent, dict):
            parent[draw(st.sampled_from(["extra", "Type", "mbps ", "rtt"]))] = draw(hostile)
    return tree


# -- text files -------------------------------------------------------------------------

_junk_line = st.one_of(
    st.text(max_size=30),
    st.sampled_from(["", "#", "% comment", "nan nan", "inf 1", "1e999 5", "-5 3", "0,0", "1 2 3 4 5", "\t", "\r"]),
)


@st.composite
def trace_text(draw: st.DrawFn, fmt: str) -> str:
    """A bandwidth trace in ``fmt`` (mahimahi, cooked or csv), with junk lines mixed in."""
    n = draw(st.integers(1, 40))
    lines: list[str] = []
    if fmt == "csv":
        lines.append(draw(st.sampled_from(["time_s,rate", "time,bps", "t,kbps", "a,b"])))
    t = 0
    for _ in range(n):
        t += draw(st.integers(0, 500))
        if fmt == "mahimahi":
            lines.append(str(t))
        elif fmt == "cooked":
            lines.append(f"{t / 1000:.3f} {draw(st.integers(0, 10**8))}")
        else:
            lines.append(f"{t / 1000},{draw(st.integers(0, 10**8))}")
        if draw(st.integers(0, 9)) == 0:
            lines.append(draw(_junk_line))
    return "\n".join(lines) + draw(st.sampled_from(["\n", "", "\n\n"]))


@st.composite
def frames_text(draw: st.DrawFn) -> str:
    """A per-frame log: time and size (and sometimes a type), with junk lines mixed in."""
    n = draw(st.integers(1, 40))
    lines = []
    t = 0.0
    for _ in range(n):
        t += draw(st.sampled_from([0.0, 1 / 30, 0.04, 1.0]))
        size = draw(st.one_of(st.integers(0, 200_000), st.sampled_from([2**31, 2**40, -3])))
        lines.append(f"{t:.4f} {size}" + draw(st.sampled_from(["", " I", " P", " 1", " 0"])))
        if draw(st.integers(0, 9)) == 0:
            lines.append(draw(_junk_line))
    return "\n".join(lines) + "\n"


@st.composite
def blocks_csv_text(draw: st.DrawFn) -> str:
    n = draw(st.integers(0, 20))
    lines = [draw(st.sampled_from(["arrival_ms,size_bytes,deadline_ms", "arrival_ms,size_bytes,deadline_ms,priority",
                                   "size_bytes,arrival_ms", ""]))]
    for _ in range(n):
        a = draw(st.integers(0, 900))
        lines.append(f"{a},{draw(st.integers(1, 100_000))},{a + draw(st.integers(0, 500))}"
                     + draw(st.sampled_from(["", ",1", ",x"])))
        if draw(st.integers(0, 9)) == 0:
            lines.append(draw(_junk_line))
    return "\n".join(lines) + "\n"


# -- scenario parts ---------------------------------------------------------------------

_mbps = st.floats(0.1, 50.0)


@st.composite
def bandwidth(draw: st.DrawFn, files: dict[str, str]) -> Any:
    kind = draw(st.sampled_from(["number", "constant", "square", "piecewise", "trace"]))
    if kind == "number":
        return draw(_mbps)
    if kind == "constant":
        return {"type": "constant", "mbps": draw(_mbps)}
    if kind == "square":
        return {"type": "square", "high_mbps": draw(_mbps), "low_mbps": draw(st.floats(0.0, 5.0)),
                "period_s": draw(st.floats(0.001, 2.0)), "duty": draw(st.floats(0.05, 0.95))}
    if kind == "piecewise":
        times = sorted(set(draw(st.lists(st.floats(0.001, 3.0), max_size=5))))
        mode = draw(st.sampled_from(["hold", "loop"]))
        out: dict[str, Any] = {"type": "piecewise", "points": [[0, draw(_mbps)]] + [[t, draw(st.floats(0.0, 20.0))]
                                                                                 for t in times], "mode": mode}
        if mode == "loop":
            out["cycle_s"] = (times[-1] if times else 0.0) + draw(st.floats(0.001, 2.0))
        return out
    fmt = draw(st.sampled_from(["mahimahi", "cooked", "csv"]))
    name = f"bw{len(files)}.{'csv' if fmt == 'csv' else 'log'}"
    files[name] = draw(trace_text(fmt))
    extra = {"time_unit": "s", "rate_unit": "bps"} if fmt == "csv" else {}
    return {"type": "trace", "format": fmt, "file": "@" + name, "mode": draw(st.sampled_from(["hold", "loop"])),
            **extra}


@st.composite
def loss(draw: st.DrawFn) -> Any:
    if draw(st.booleans()):
        return draw(st.sampled_from([0.0, 0.001, 0.02, 0.3, 0.9]))
    return {"model": "gilbert_elliott", "p": draw(st.floats(0, 1)), "r": draw(st.floats(0.01, 1)),
            "loss_bad": draw(st.floats(0, 1)), "loss_good": draw(st.floats(0, 0.1))}


@st.composite
def path(draw: st.DrawFn, files: dict[str, str], links: list[str]) -> dict[str, Any]:
    p: dict[str, Any] = {"name": draw(st.sampled_from(["a", "b", "c", "wifi", "lte"]))}
    if links and draw(st.booleans()):
        p["link"] = draw(st.sampled_from(links))
    else:
        p["bandwidth"] = draw(bandwidth(files))
        queue = draw(st.sampled_from(["none", "queue_bytes", "queue_packets", "queue_ms"]))
        if queue != "none":
            p[queue] = {"queue_bytes": draw(st.integers(70_000, 200_000)), "queue_packets": draw(st.integers(1, 100)),
                        "queue_ms": draw(st.floats(0, 500))}[queue]
    delay = draw(st.sampled_from(["rtt_ms", "one_way_delay_ms", "fwd_rev"]))
    if delay == "fwd_rev":
        p["fwd_delay_ms"], p["rev_delay_ms"] = draw(st.floats(0, 200)), draw(st.floats(0, 200))
    else:
        p[delay] = draw(st.floats(0, 300))
    if draw(st.booleans()):
        p["loss"] = draw(loss())
    if draw(st.booleans()):
        p["cc"] = draw(st.sampled_from(CCS))
    if p.get("cc") == "ccp" or draw(st.integers(0, 9)) == 0:  # also on other controllers, where it is refused
        if draw(st.booleans()):
            p["ccp_gain"] = draw(st.one_of(st.floats(-1, 200), st.sampled_from([0, 0.001, 2, 3.5, 100, 2.0005])))
        if draw(st.booleans()):
            p["ccp_storage_packets"] = draw(st.one_of(st.integers(-5, 2**31), st.just(40)))
    if draw(st.integers(0, 3)) == 0:
        p["delay"] = draw(delay_dynamics(files))
    if draw(st.integers(0, 3)) == 0:
        p["outages"] = draw(outages(files))
    if draw(st.integers(0, 5)) == 0:
        p["backup"] = True
    if draw(st.integers(0, 5)) == 0:
        p["ack_loss"] = draw(st.floats(0, 1))
    if draw(st.integers(0, 5)) == 0:
        p["ack_bandwidth"] = draw(st.one_of(st.floats(0, 2e6), st.just(0.01)))
        if draw(st.booleans()):
            p["ack_bytes"] = draw(st.one_of(st.integers(-5, 70_000), st.just(40)))
        if draw(st.booleans()):
            p["ack_queue_bytes"] = draw(st.one_of(st.integers(-5, 10**6), st.just(2**63)))
    if draw(st.integers(0, 5)) == 0:
        p["start_s"] = draw(st.floats(0, 0.3))
        if draw(st.booleans()):
            p["stop_s"] = p["start_s"] + draw(st.floats(0, 0.3))
    return p


@st.composite
def delay_text(draw: st.DrawFn, fmt: str) -> str:
    """A delay trace: ``time,delay_ms`` rows, or ping output (with or without ``-D``), with
    junk lines mixed in."""
    n = draw(st.integers(1, 30))
    stamped = draw(st.booleans())
    lines = ["PING 192.0.2.1 (192.0.2.1) 56(84) bytes of data."] if fmt == "ping" else []
    t = 0.0
    for k in range(n):
        t += draw(st.floats(0.0, 0.5))
        delay = draw(st.floats(0.0, 300.0))
        if fmt == "ping":
            stamp = f"[{1_700_000_000 + t:.6f}] " if stamped else ""
            lines.append(f"{stamp}64 bytes from 192.0.2.1: icmp_seq={k + 1} ttl=57 time={delay:.3f} ms")
        else:
            lines.append(f"{t:.4f},{delay:.3f}")
        if draw(st.integers(0, 9)) == 0:
            lines.append(draw(_junk_line))
    return "\n".join(lines) + "\n"


@st.composite
def delay_dynamics(draw: st.DrawFn, files: dict[str, str]) -> dict[str, Any]:
    """A path's ``delay`` mapping: jitter, delay steps or a delay trace file."""
    out: dict[str, Any] = {"jitter_ms": draw(st.floats(0, 100)), "rev_jitter_ms": draw(st.floats(0, 50))}
    kind = draw(st.sampled_from(["jitter", "steps", "trace"]))
    if kind == "steps":
        times = sorted(set(draw(st.lists(st.floats(0.001, 0.5), min_size=1, max_size=4))))
        out["steps"] = [[t, draw(st.floats(0, 300))] if draw(st.booleans())
                        else [t, draw(st.floats(0, 150)), draw(st.floats(0, 150))] for t in times]
    elif kind == "trace":
        fmt = draw(st.sampled_from(["csv", "ping"]))
        name = f"delay{len(files)}.txt"
        files[name] = draw(delay_text(fmt))
        out["trace"] = {"file": "@" + name, "format": fmt, "offset_s": draw(st.floats(0, 1))}
    return out


@st.composite
def outages(draw: st.DrawFn, files: dict[str, str]) -> Any:
    """A path's ``outages``: a list of [start_s, end_s] or a CSV file of them."""
    edges = sorted(set(draw(st.lists(st.floats(0.0, 0.5), min_size=2, max_size=6))))
    pairs = [[a, b] for a, b in zip(edges[0::2], edges[1::2])]
    if draw(st.booleans()):
        return pairs or [[0.1, 0.2]]
    name = f"outages{len(files)}.csv"
    files[name] = "\n".join(f"{a},{b}" for a, b in pairs) + "\n"
    return {"file": "@" + name}


@st.composite
def workload(draw: st.DrawFn, files: dict[str, str]) -> dict[str, Any]:
    kind = draw(st.sampled_from(["avc", "svc", "web", "bulk", "frames", "explicit", "explicit-file", "explicit-json",
                                 "explicit-har"]))
    deadline = {"deadline_ms": draw(st.floats(1, 2000))} if draw(st.booleans()) else {}
    if kind in ("avc", "svc"):
        w: dict[str, Any] = {"type": kind, "fps": draw(st.floats(1, 120)), "bitrate_mbps": draw(st.floats(0.1, 20))}
        if draw(st.booleans()):
            w["size_cv"] = draw(st.floats(0, 2))
        if kind == "avc" and draw(st.booleans()):
            w["gop"] = draw(st.sampled_from(["I", "IPPP", "IBBPBBPBBPBB", "", "IX"]))
        if draw(st.booleans()):
            w["playout_startup_ms"] = draw(st.floats(1, 2000))
        if draw(st.booleans()):
            w["player"] = draw(st.sampled_from([{"type": "fixed"}, {"type": "catchup"}, "catchup", {"type": "vlc"}]) |
                               st.builds(lambda speed, late: {"type": "catchup", "speed": speed, "max_late_ms": late},
                                         st.floats(0.5, 4.0), st.floats(-10.0, 5000.0)))
        return {**w, **deadline}
    if kind == "web":
        return {"type": "web", "page_interval_s": draw(st.floats(0.01, 2)), **deadline}
    if kind == "bulk":
        return {"type": "bulk", "rate_mbps": draw(st.floats(0.1, 50)),
                "chunk_bytes": draw(st.integers(1, 2_000_000)), **deadline}
    if kind == "frames":
        files["frames.txt"] = draw(frames_text())
        w = {"type": "frames", "file": "@frames.txt"}
        if draw(st.booleans()):
            w.update(time_column=None, fps=draw(st.floats(1, 60)))
        if draw(st.booleans()):
            w.update(type_column=2)
        return {**w, **deadline}
    if kind == "explicit-file":
        files["blocks.csv"] = draw(blocks_csv_text())
        return {"type": "explicit", "file": "@blocks.csv"}
    if kind == "explicit-json":
        files["blocks.json"] = json.dumps(draw(mutated(st.lists(st.fixed_dictionaries({
            "arrival_ms": st.floats(0, 500), "size_bytes": st.integers(1, 100_000), "deadline_ms": st.floats(500, 900),
        }, optional={"priority": st.integers(-3, 3), "weight": st.floats(0, 5), "kind": st.sampled_from(["a", ""])}),
            min_size=1, max_size=8))))
        return {"type": "explicit", "file": "@blocks.json"}
    if kind == "explicit-har":
        files["page.har"] = json.dumps(draw(mutated(st.fixed_dictionaries({"log": st.fixed_dictionaries({
            "entries": st.lists(st.fixed_dictionaries({
                "startedDateTime": st.sampled_from(["2024-05-01T10:00:00.000Z", "2024-05-01T10:00:00.120+02:00",
                                                    "2024-05-01T10:00:01Z", "yesterday", ""]),
                "response": st.fixed_dictionaries({"bodySize": st.integers(-1, 300_000),
                                                   "content": st.fixed_dictionaries({
                                                       "size": st.integers(-1, 300_000),
                                                       "mimeType": st.sampled_from(["text/html", "image/png", ""])})}),
            }), max_size=8)})}))))
        return {"type": "explicit", "file": "@page.har", "deadline_ms": draw(st.floats(10, 3000))}
    blocks = [{"arrival_ms": draw(st.floats(0, 900)), "size_bytes": draw(st.integers(1, 200_000)),
               "deadline_ms": draw(st.floats(0, 2000))} for _ in range(draw(st.integers(1, 6)))]
    for b in blocks:
        b["deadline_ms"] = max(b["deadline_ms"], b["arrival_ms"])
    return {"type": "explicit", "blocks": sorted(blocks, key=lambda b: b["arrival_ms"])}


@st.composite
def scenario_base(draw: st.DrawFn) -> dict[str, Any]:
    """A plausible scenario mapping of at most about a second and 50 Mbit/s."""
    files: dict[str, str] = {}
    d: dict[str, Any] = {"duration_s": draw(st.floats(0.05, 1.5))}
    link_names: list[str] = []
    if draw(st.integers(0, 3)) == 0:
        d["links"] = [{"name": "s", "bandwidth": draw(bandwidth(files))}]
        link_names = ["s"]
        if draw(st.booleans()):
            d["cross_traffic"] = [{"link": "s", "rtt_ms": draw(st.floats(0, 200)),
                                   "cc": draw(st.sampled_from(["newreno", "cubic"])),
                                   "start_s": draw(st.floats(0, 1)), "stop_s": draw(st.none() | st.floats(1, 2))}]
    d["paths"] = [draw(path(files, link_names)) for _ in range(draw(st.integers(1, 3)))]
    for i, p in enumerate(d["paths"]):
        p["name"] = f"{p['name']}{i}"
    d["workload"] = draw(workload(files))
    if draw(st.integers(0, 3)) == 0:
        d["horizon_s"] = d["duration_s"] + draw(st.floats(0, 3))
    if draw(st.integers(0, 3)) == 0:
        d["transport"] = {"mss_bytes": draw(st.sampled_from([1, 100, 536, 1448, 9000, 65535])),
                          "header_bytes": draw(st.sampled_from([0, 40, 1024])),
                          "initial_cwnd_packets": draw(st.integers(1, 100)),
                          "min_rto_ms": draw(st.floats(1, 1000))}
    if draw(st.integers(0, 3)) == 0:
        d["receiver"] = draw(st.sampled_from([{"type": "block"}, {"type": "in_order", "rbuf_bytes": 200_000},
                                              {"type": "in_order", "rbuf_bytes": 70_000, "sequence": "stream"}]))
    if files:
        d[FILES] = files
    return d


scenario = mutated(scenario_base())
"""A scenario mapping, possibly broken."""

run_options = st.fixed_dictionaries({
    # native twins only: the work budget bounds the core's events, while a policy deciding
    # in Python spends its own time per decision (up to a few per event); Python policies
    # meet hostile input in the policy target, on a small scenario
    "policy": st.sampled_from([p for p in POLICY_IDS if p != "random"]),
    "seed": st.one_of(st.integers(0, 2**20), st.sampled_from([2**63 - 1, 2**63, -1, 1.5, "3"])),
    "drop_expired": st.booleans(),
})


@st.composite
def _mostly(draw: st.DrawFn, valid: st.SearchStrategy[Any]) -> Any:
    """A value of ``valid`` seven times in eight, else a hostile value."""
    return draw(hostile if draw(st.integers(0, 7)) == 0 else valid)


# -- the other kinds of input -----------------------------------------------------------

@st.composite
def trace_input(draw: st.DrawFn) -> dict[str, Any]:
    """A trace file and the options ``load_trace_file`` is called with."""
    fmt = draw(st.sampled_from(["mahimahi", "cooked", "csv"]))
    text = draw(st.one_of(trace_text(fmt), st.text(max_size=200)))
    options: dict[str, Any] = {}
    if fmt == "csv":
        options.update(time_unit=draw(_mostly(st.sampled_from(["s", "ms", "us", "ns"]))),
                       rate_unit=draw(_mostly(st.sampled_from(["bps", "kbps", "mbps", "Mbps", "x"]))))
        if draw(st.booleans()):
            options.update(time_column=draw(st.sampled_from([0, 1, "time_s", "t", 5, -1])),
                           rate_column=draw(st.sampled_from([1, 0, "rate", "bps", 9])))
    if draw(st.integers(0, 3)) == 0:
        options[draw(st.sampled_from(["scale", "offset_s", "time_unit", "delimiter", "packet_bytes", "bin_ms"]))] = \
            draw(hostile)
    return {"format": fmt, "text": text, "options": options}


suite = mutated(st.fixed_dictionaries({
    "name": st.sampled_from(["s", "fuzz", "s-2", "a b"]),
    "seeds": st.one_of(st.integers(1, 3), st.lists(st.integers(0, 10**6), min_size=1, max_size=3)),
    "groups": st.lists(st.fixed_dictionaries({
        "name": st.sampled_from(["g", "h"]),
        "scenarios": st.lists(st.one_of(
            st.sampled_from(["dams-rtt-40", "dams-bw-1-1.5", "nope"]),
            st.fixed_dictionaries({"name": st.just("c-{bw}"),
                                   "base": st.just({"duration_s": 0.3, "paths": [{"bandwidth": 2, "rtt_ms": 20}],
                                                    "workload": {"type": "avc"}}),
                                   "grid": st.fixed_dictionaries({"bw": st.lists(st.floats(0.5, 5), min_size=1,
                                                                                 max_size=3)}),
                                   "set": st.just({"paths[*].bandwidth": "{bw}"})})), min_size=1, max_size=2),
        "policies": st.lists(st.sampled_from(["minrtt", "rr", "dams", "edf", "*", "unknown"]), min_size=1,
                             max_size=2),
    }), min_size=1, max_size=2),
}), max_mutations=4)
"""A suite mapping, possibly broken."""

action = st.one_of(st.integers(-3, 20), st.sampled_from([16, 17, 2**31, 2**63, -(2**63), 10**30]), hostile,
                   st.sampled_from(["np.int64", "np.float32", "np.array0d", "np.array2"]))
"""One action of the Gymnasium environment (strings starting ``np.`` become numpy values)."""

_env_kwargs = st.one_of(st.just({}), st.fixed_dictionaries({}, optional={
    "num_slots": _mostly(st.integers(1, 64)),
    "max_paths": _mostly(st.integers(2, 8)),
    "invalid_action": _mostly(st.sampled_from(["wait", "raise"])),
    "copies": _mostly(st.booleans()),
}))

env_input = st.fixed_dictionaries({
    "scenario": st.sampled_from(["short", "lossy", "shared"]),
    # a hostile value goes to render_mode: an unknown keyword is Python's TypeError, not input
    "kwargs": _mostly(_env_kwargs).map(
        lambda k: k if isinstance(k, dict) and set(k) <= {"num_slots", "max_paths", "invalid_action", "copies"}
        else {"render_mode": k}),
    "seed": _mostly(st.integers(0, 100)),
    "actions": st.lists(_mostly(st.integers(0, 33)).flatmap(lambda a: action if a is None else st.just(a)),
                        max_size=60),
})

vector_input = st.fixed_dictionaries({
    "scenario": st.sampled_from(["short", "lossy", "shared"]),
    "num_envs": _mostly(st.integers(1, 4)),
    "kwargs": _env_kwargs,
    "seed": _mostly(st.one_of(st.integers(0, 100), st.lists(st.integers(0, 100), min_size=1, max_size=4))),
    "actions": st.lists(st.one_of(
        st.lists(st.integers(0, 16), min_size=1, max_size=5),
        st.lists(st.integers(0, 16), min_size=1, max_size=5),
        st.lists(st.integers(-2, 20), min_size=1, max_size=5),
        st.sampled_from(["float", "2d", "empty", "huge", "object", "bool"]),
        hostile,
    ), max_size=30),
})

policy_input = st.fixed_dictionaries({
    "id": st.one_of(st.sampled_from(POLICY_IDS + ["optimum", "agent:nope", "os:system", "math:pi",
                                                       "collections:OrderedDict", "nope:Nope", "dams ", "DAMS"]),
                    st.text(max_size=10)),
    "params": st.dictionaries(st.sampled_from(["change_threshold", "alpha", "beta", "lambda_scale", "priority_weight",
                                               "rtt_tolerance", "cwnd_growth_packets", "rate_thresholds",
                                               "num_segments", "cwnd_limited", "srtt_factor", "hard_deadline_ms",
                                               "lower_bound_ms", "low_ms", "high_ms", "x"]), hostile, max_size=2),
})

copies_input = st.fixed_dictionaries({
    "scenario": st.sampled_from(["short", "lossy", "shared"]),
    "actions": st.lists(st.one_of(st.integers(-12, 4), st.integers(-(2**40), -2), hostile), max_size=40),
})
"""Answers of a policy that sends copies (docs/model.md 7.1): mostly copy actions (below
-1), some of pieces that may not be copied or do not exist, and hostile values."""

cli_input = st.one_of(
    st.lists(st.sampled_from(["run", "list", "--scenario", "dams-rtt-40", "--policy", "minrtt", "--seed", "-1",
                              "--param", "alpha=nan", "alpha=1e999", "x=1", "--json", "--show", "nope",
                              "--drop-expired", "99999999999999999999", "--policies", "--scenarios"]),
             max_size=8),
    st.builds(lambda seed, param, policy: ["run", "--scenario", "dams-rtt-40", "--policy", policy, "--seed", seed,
                                           "--param", param],
              st.sampled_from(["0", "-1", "1e3", "18446744073709551616", "x"]),
              st.sampled_from(["alpha=2", "change_threshold=-1", "beta=inf", "lambda_scale=1e400", "=", "a=b=c"]),
              st.sampled_from(["dams-robust", "dams", "ecf", "blest", "optimum", "agent:./nope"])),
)
"""A command line of ``mpsched run`` or ``mpsched list``."""

@st.composite
def yaml_text(draw: st.DrawFn) -> dict[str, Any]:
    """A scenario or suite written as YAML, then damaged as text (cut, lines swapped or
    duplicated, characters inserted)."""
    import yaml

    kind = draw(st.sampled_from(["scenario", "suite"]))
    tree = draw(scenario if kind == "scenario" else suite)
    files = tree.pop(FILES, {}) if isinstance(tree, dict) else {}
    text = yaml.safe_dump(tree, sort_keys=False, allow_unicode=True)
    for _ in range(draw(st.integers(0, 3))):
        lines = text.split("\n")
        i = draw(st.integers(0, max(0, len(lines) - 1)))
        how = draw(st.sampled_from(["cut", "swap", "duplicate", "insert", "indent"]))
        if how == "cut":
            text = text[:draw(st.integers(0, len(text)))]
        elif how == "swap" and len(lines) > 1:
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
            text = "\n".join(lines)
        elif how == "duplicate":
            lines.insert(i, lines[i])
            text = "\n".join(lines)
        elif how == "insert":
            k = draw(st.integers(0, len(text)))
            text = text[:k] + draw(st.sampled_from(["\t", ": ", "- ", "&a", "*a", "!!python/object:os.system", "{",
                                                    "]", "'", "%", "\x00", "<<: *a"])) + text[k:]
        else:
            lines[i] = "   " + lines[i]
            text = "\n".join(lines)
    return {"kind": kind, "text": text, FILES: files}


STRATEGIES: dict[str, st.SearchStrategy[Any]] = {
    "scenario": st.tuples(scenario, run_options),
    "trace": trace_input(),
    "suite": suite,
    "env": env_input,
    "vector": vector_input,
    "policy": policy_input,
    "copies": copies_input,
    "cli": cli_input,
    "yaml": yaml_text(),
}
"""Every kind of input the harness generates, by target name."""
