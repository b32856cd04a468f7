"""Validation of the simulator against closed forms and the seed papers (``mpsched validate``).

Each check runs the packet-level simulator and compares one measured figure with an
independent expectation:

1. DAPS blocking model ([daps] eq. (2), Table I): two paths, blind round-robin,
   the in-order receiver with a 65 kB buffer, L = 1500 B, r_f = 20 ms, queues of one
   bandwidth-delay product. Measured: the largest time a packet waits in the receive
   buffer once the start-up transient is over (after 2 s); expected:
   ``T_maxblock = r_s/2 + 8L/c_s - r_f/2 - 8L/c_f``. Table I's labels give the cases; its
   garbled capacity columns are read from the labels. Each row also plays Fig. 2's
   sequence (one slow-path packet, then the fast path fills the buffer) into an empty
   network, the setting eq. (2) models.
2. NewReno steady state against Mathis et al. (``MSS/RTT * sqrt(3 / (2p))``) on a
   loss-limited path (100 Mbit/s, RTT 100 ms, i.i.d. loss p).
3. Cubic (RFC 9438): after a loss, the window over the congestion-avoidance epoch
   against ``W(t) = C (t - K)^3 + W_max``, with W_max and the reduced window read off the
   trajectory (fast convergence applied as the RFC says).
4. LIA (RFC 6356) and OLIA: goal 1 (a multipath flow does at least as well as a single
   path flow on the best path) with two separate equal bottlenecks, without competition
   (capacity-limited: each subflow) and with random loss (loss-limited: the total); goal 2
   (do no harm) with two subflows sharing one lossy bottleneck with a NewReno flow.
   Random loss on every flow puts the check in the regime RFC 6356 analyses; on a
   drop-tail-only shared bottleneck the deterministic simulator shows phase effects
   (which flow meets a full queue depends on timing alignment, Floyd & Jacobson 1991).
   BALIA (docs/model.md 7.11) meets the same goals; its paper places it between the two
   (friendlier than LIA, more responsive than OLIA): its share against the competing
   NewReno flow of goal 2 must lie between OLIA's and LIA's.
5. wVegas (docs/model.md 7.12; Cao, Xu and Fu, ICNP 2012): two subflows (40 and 60 ms)
   through one 10 Mbit/s bottleneck with a 200 ms drop-tail buffer, 60 s. The delay-based
   controller keeps about ``total_alpha`` = 10 packets queued over its subflows and so
   loses none: no queue drop, and the queueing delay at the end (srtt less the smallest
   RTT, largest over the subflows) within the time 10 packets take at the link.
6. Video playout ([matsufuji18] measures) on a hand-computed five-frame case.
7. Gilbert-Elliott loss: long-run loss rate ``p / (p + r)`` and mean burst length ``1/r``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np

from ..envs import simulate
from ..envs.policy import WAIT, Observation
from ..envs.scenarios import resolve

__all__ = ["Check", "run_validations", "format_table", "exit_code", "DAPS_TABLE_I", "ACCEPTED_DEVIATIONS"]

MS = 1_000_000
# (c_f, c_s in Mbit/s, r_s in ms), from the labels of [daps] Table I
DAPS_TABLE_I: tuple[tuple[float, float, float], ...] = (
    (10, 10, 100), (50, 10, 100), (10, 50, 100), (100, 100, 100), (50, 100, 100), (150, 50, 100),
    (10, 10, 200), (50, 10, 200), (10, 50, 200), (100, 100, 200), (50, 150, 200), (150, 50, 200),
)
MATHIS_LOSS = (0.001, 0.005, 0.01)

# [daps] eq. (2) assumes the slow-path packet meets an empty queue. In this case the
# receive window reopens by ~10 packets at once near the end of each ~100 ms cycle (a
# fast-path acknowledgement reports deliveries whose slow-path acknowledgements are still
# on their way), and round-robin puts 5 of them back to back on the 10 Mbit/s path: the
# blocking packet queues up to 3.76 ms, and the maximum is 43.76 ms against 40.96 ms.
# Behind packets that met an empty queue the maximum is 39.92 ms (a row extra, checked by
# tests/test_validate.py). The burst survives an initial window of 2 or 4 packets, delayed
# acknowledgements, RFC 4960's rule that cwnd grows only while fully used, and a buffer of
# 64,000 to 70,000 B (43.76 to 45.92 ms); ns-2 applies SCTP's Max.Burst only after a fast
# retransmit, so it would not break the burst either. A stand-alone model of ns-2.35's
# CMT-SCTP send and SACK rules (a run per destination up to cwnd, SACK every second packet
# with DAC, growth only while outstanding >= cwnd, initial cwnd 4380 B) misses this case by
# +73 % and four others by more than 5 %; among 864 variants of those rules, every one
# whose windows can grow misses at least one case.
ACCEPTED_DEVIATIONS: dict[str, str] = {
    "DAPS T_maxblock (50;10/100)": "window-opening bursts queue on the slow path (+6.8 %); behind packets that met "
                                   "an empty queue, eq. (2) holds within 5 %",
}
"""Checks known to miss their criterion, with the measured reason (the row still says
NO; ``mpsched validate`` does not fail on them)."""


@dataclass(frozen=True)
class Check:
    """One validation row.

    Attributes
    ----------
    check : str
        What is compared.
    expected, measured : float
        The expectation and the simulator's figure, in ``unit``.
    error_pct : float
        ``100 * (measured / expected - 1)``, or the measured deviation itself for checks
        whose expectation is a curve.
    passed : bool
        Whether the criterion holds.
    accepted : str
        For a row that misses its criterion for a known, measured reason
        (:data:`ACCEPTED_DEVIATIONS`), that reason; otherwise empty.
    criterion : str
        The tolerance, e.g. ``"|error| <= 5 %"`` or ``"measured >= 0.9"``.
    unit : str
    extra : dict of str to float
        Further measured figures that explain the row (in ``unit``); keys of the
        ``--json`` row too.
    """

    check: str
    expected: float
    measured: float
    error_pct: float
    passed: bool
    criterion: str
    unit: str
    extra: dict[str, float] = field(default_factory=dict)
    accepted: str = ""

    def row(self) -> dict[str, Any]:
        """The ``--json`` form: check, expected, measured, error_pct, pass (and extras)."""
        d = asdict(self)
        d["pass"] = d.pop("passed")
        d.update(d.pop("extra"))
        return d


def _within(check: str, expected: float, measured: float, tolerance_pct: float, unit: str) -> Check:
    error = 100.0 * (measured / expected - 1.0)
    return Check(check, expected, measured, error, abs(error) <= tolerance_pct, f"|error| <= {tolerance_pct:g} %",
                 unit)


def _bound(check: str, bound: float, measured: float, at_least: bool) -> Check:
    passed = measured >= bound if at_least else measured <= bound
    return Check(check, bound, measured, 100.0 * (measured / bound - 1.0), passed,
                 f"measured {'>=' if at_least else '<='} {bound:g}", "ratio")


def _bulk(rate_mbps: float) -> dict[str, Any]:
    """A backlogged sender: more data than the paths can carry, in large chunks."""
    return {"type": "bulk", "rate_mbps": rate_mbps, "chunk_bytes": 10_000_000, "deadline_ms": 1000}


# ---------------------------------------------------------------------------------------
# 1. DAPS blocking model
# ---------------------------------------------------------------------------------------


DAPS_PACKET_BYTES = 1500  # L
DAPS_FAST_RTT_MS = 20.0  # r_f
DAPS_RBUF_BYTES = 65_000  # rwnd


def _daps_paths(c_f: float, c_s: float, r_s: float, cc: str) -> list[dict[str, Any]]:
    """The fast and the slow path of Table I, with rule-of-thumb queues q_i = r_i c_i / 8L."""

    def path(name: str, mbps: float, rtt_ms: float) -> dict[str, Any]:
        bdp = int(mbps * 1e6 * rtt_ms / 1e3 / 8)  # the rule of thumb, in bytes
        return {"name": name, "bandwidth": mbps, "rtt_ms": rtt_ms, "queue_bytes": max(DAPS_PACKET_BYTES, bdp),
                "cc": cc}

    return [path("fast", c_f, DAPS_FAST_RTT_MS), path("slow", c_s, r_s)]


class _SlowThenFast:
    """[daps] Fig. 2's sequence: one packet on the slow path (path 1), then the fast
    path (path 0) fills the receive buffer behind it."""

    name = "fig-2-sequence"

    def reset(self, obs: Observation) -> None:
        self.slow_sent = False

    def decide(self, obs: Observation) -> int:
        sendable = obs.sendable()
        if obs.path == 1:
            if self.slow_sent:
                return WAIT
            self.slow_sent = True
            return int(sendable[0])
        return int(sendable[0]) if self.slow_sent else WAIT


def _waits_ns(pieces: Any) -> Any:
    delivered = pieces[pieces["delivery_ns"] >= 0]
    return delivered, delivered["delivery_ns"] - delivered["arrival_ns"]


def figure_2_blocking(c_f: float, c_s: float, r_s: float) -> float:
    """Largest receive-buffer wait, in ms, when Fig. 2's sequence meets an empty network.

    One block fills the 65 kB buffer: its first packet goes on the slow path, the other
    42 on the fast path, on paths with nothing in flight: the setting eq. (2) models, so
    the wait of the first fast packet is ``T_maxblock`` itself.
    """
    packets = DAPS_RBUF_BYTES // DAPS_PACKET_BYTES
    scenario = {
        "name": f"daps-fig-2-{c_f:g};{c_s:g}/{r_s:g}",
        "duration_s": 1.0,
        "transport": {"mss_bytes": DAPS_PACKET_BYTES, "header_bytes": 0},
        "receiver": {"type": "in_order", "rbuf_bytes": DAPS_RBUF_BYTES},
        "paths": _daps_paths(c_f, c_s, r_s, "ideal"),
        "workload": {"type": "explicit", "blocks": [
            {"arrival_ms": 0, "size_bytes": packets * DAPS_PACKET_BYTES, "deadline_ms": 1000}]},
    }
    _, wait_ns = _waits_ns(simulate(scenario, _SlowThenFast(), seed=0).pieces)
    return float(wait_ns.max()) / MS


def daps_blocking(c_f: float, c_s: float, r_s: float, duration_s: float = 10.0, warmup_s: float = 2.0) -> Check:
    """Largest receive-buffer wait against [daps] eq. (2).

    Eq. (2) assumes the packet that holds the others back crossed the slow path without
    queueing ("no packets in flight"): it arrives ``r_s/2 + 8L/c_s`` after it was sent.
    The row's extras split the measurement along that assumption:

    - ``blocker_queueing_ms``: the most any packet that ended a wait arrived later than
      that (its queueing on the way);
    - ``measured_empty_queue_ms``: the largest wait among packets whose blocker met no
      queue, the figure eq. (2) predicts;
    - ``figure_2_sequence_ms``: the wait when Fig. 2's sequence is played into an empty
      network (:func:`figure_2_blocking`), eq. (2)'s own setting.
    """
    scenario = {
        "name": f"daps-{c_f:g};{c_s:g}/{r_s:g}",
        "duration_s": duration_s,
        "horizon_s": duration_s,
        "transport": {"mss_bytes": DAPS_PACKET_BYTES, "header_bytes": 0},
        "receiver": {"type": "in_order", "rbuf_bytes": DAPS_RBUF_BYTES},
        "paths": _daps_paths(c_f, c_s, r_s, "newreno"),
        "workload": _bulk(4 * (c_f + c_s)),
    }
    delivered, wait_ns = _waits_ns(simulate(scenario, "blind-rr", seed=0).pieces)
    # the blocker of the packets delivered at time T is the one that arrived at T
    one_way_ns = (delivered["arrival_ns"] - delivered["first_send_ns"]).groupby(delivered["arrival_ns"]).max()
    slow_one_way_ms = r_s / 2 + 8 * DAPS_PACKET_BYTES / (c_s * 1e3)  # eq. (2)'s t_2 - t_0
    blocker_late_ns = delivered["delivery_ns"].map(one_way_ns) - slow_one_way_ms * MS
    steady = delivered["arrival_ns"] >= warmup_s * 1e9
    unqueued = steady & (blocker_late_ns <= 1000)  # within a microsecond of an empty path
    measured = float(wait_ns[steady].max()) / MS
    model = slow_one_way_ms - DAPS_FAST_RTT_MS / 2 - 8 * DAPS_PACKET_BYTES / (c_f * 1e3)
    row = _within(f"DAPS T_maxblock ({c_f:g};{c_s:g}/{r_s:g})", model, measured, 5.0, "ms")
    extra = {
        "measured_empty_queue_ms": float(wait_ns[unqueued].max()) / MS if unqueued.any() else float("nan"),
        "blocker_queueing_ms": max(float(blocker_late_ns[steady & (wait_ns > 0)].max()), 0.0) / MS,
        "figure_2_sequence_ms": figure_2_blocking(c_f, c_s, r_s),
    }
    return replace(row, extra=extra)


# ---------------------------------------------------------------------------------------
# 2. Mathis et al.
# ---------------------------------------------------------------------------------------


def mathis(p: float, duration_s: float = 600.0) -> Check:
    """NewReno throughput on a loss-limited path against MSS/RTT sqrt(3/(2p))."""
    mss, rtt_s = 1448, 0.1
    scenario = {
        "name": f"mathis-{p:g}",
        "duration_s": duration_s,
        "horizon_s": duration_s,
        "transport": {"mss_bytes": mss},
        "paths": [{"bandwidth": 100, "rtt_ms": rtt_s * 1e3, "loss": p, "cc": "newreno", "queue_ms": 100}],
        "workload": _bulk(200),
    }
    r = simulate(scenario, "minrtt", seed=1)
    measured = float(r.paths["delivered_bytes"][0]) * 8 / duration_s / 1e6
    model = mss * 8 / rtt_s * math.sqrt(3 / (2 * p)) / 1e6
    return _within(f"NewReno vs Mathis, p = {p:g}", model, measured, 20.0, "Mbit/s")


# ---------------------------------------------------------------------------------------
# 3. Cubic
# ---------------------------------------------------------------------------------------


class _WindowRecorder:
    """A FIFO policy that records path 0's window whenever it changes."""

    name = "window-recorder"

    def reset(self, obs: Observation) -> None:
        self.times: list[int] = []
        self.windows: list[int] = []

    def decide(self, obs: Observation) -> int:
        w = int(obs.cwnd_bytes[0])
        if not self.windows or w != self.windows[-1]:
            self.times.append(obs.now_ns)
            self.windows.append(w)
        return int(obs.sendable()[0])


def cubic_trajectory(duration_s: float = 60.0) -> Check:
    """Largest relative distance between the window and RFC 9438's W(t) over an epoch."""
    mss = 1448
    scenario = {
        "name": "cubic-trajectory",
        "duration_s": duration_s,
        "horizon_s": duration_s,
        "transport": {"mss_bytes": mss},
        "paths": [{"bandwidth": 120, "rtt_ms": 100, "cc": "cubic", "queue_packets": 100}],
        "workload": _bulk(300),
    }
    recorder = _WindowRecorder()
    simulate(scenario, recorder, seed=0)
    t = np.asarray(recorder.times) / 1e9
    w = np.asarray(recorder.windows) / mss  # segments, as in the RFC
    cuts = np.flatnonzero(np.diff(w) < -0.1 * w[:-1])  # multiplicative decreases
    # the epoch after the second decrease: the first one is the slow-start overshoot
    before, first, last = cuts[1], cuts[1] + 1, cuts[2] if len(cuts) > 2 else len(w) - 1
    w_max = w[before] * 0.85 if w[before] < w[cuts[0]] else w[before]  # fast convergence (RFC 9438 4.7)
    reduced = w[first]
    k = ((w_max - reduced) / 0.4) ** (1 / 3)
    grows = np.flatnonzero(w[first:last] > reduced)
    epoch_start = t[first + grows[0]]
    elapsed = t[first:last] - epoch_start
    sampled = elapsed > 0.1  # from one RTT into the epoch
    model = 0.4 * (elapsed[sampled] - k) ** 3 + w_max
    deviation = float(np.max(np.abs(w[first:last][sampled] - model) / model)) * 100.0
    return Check("Cubic window vs RFC 9438 W(t), max relative deviation", 0.0, deviation, deviation,
                 deviation <= 5.0, "deviation <= 5 %", "%")


# ---------------------------------------------------------------------------------------
# 4. LIA, OLIA and BALIA; 5. wVegas
# ---------------------------------------------------------------------------------------


def _throughputs(scenario: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    r = simulate(scenario, "minrtt", seed=0)
    cross = r.cross["throughput_bps"].to_numpy() if len(r.cross) else np.zeros(0)
    return r.paths["throughput_bps"].to_numpy(), cross


def _shared_lossy(cc: str, duration_s: float) -> dict[str, Any]:
    """Goal 2's scenario: two subflows of ``cc`` and a NewReno flow on one lossy link."""
    return {
        "duration_s": duration_s, "horizon_s": duration_s, "workload": _bulk(100), "name": f"{cc}-shared",
        "links": [{"name": "shared", "bandwidth": 20, "queue_ms": 50}],
        "paths": [{"link": "shared", "rtt_ms": 50, "cc": cc, "loss": 0.005}] * 2,
        "cross_traffic": [{"name": "newreno", "link": "shared", "rtt_ms": 50, "loss": 0.005}],
    }


def coupled_goals(cc: str, duration_s: float = 600.0) -> list[Check]:
    """RFC 6356 goals 1 and 2 for a coupled controller."""
    base = {"duration_s": duration_s, "horizon_s": duration_s, "workload": _bulk(100)}
    clean = {"bandwidth": 10, "rtt_ms": 50, "queue_ms": 50}
    lossy = {"bandwidth": 20, "rtt_ms": 50, "queue_ms": 50, "loss": 0.005}
    single, _ = _throughputs({**base, "name": "single-clean", "paths": [{**clean, "cc": "newreno"}]})
    pair, _ = _throughputs({**base, "name": f"{cc}-clean", "paths": [{**clean, "cc": cc}, {**clean, "cc": cc}]})
    single_lossy, _ = _throughputs({**base, "name": "single-lossy", "paths": [{**lossy, "cc": "newreno"}]})
    pair_lossy, _ = _throughputs({**base, "name": f"{cc}-lossy",
                                  "paths": [{**lossy, "cc": cc}, {**lossy, "cc": cc}]})
    shared, competitor = _throughputs(_shared_lossy(cc, duration_s))
    name = cc.upper()
    return [
        _bound(f"{name} goal 1, separate bottlenecks: weakest subflow / single NewReno", 0.9,
               float(pair.min() / single[0]), at_least=True),
        _bound(f"{name} goal 1, separate lossy bottlenecks: total / single NewReno", 0.9,
               float(pair_lossy.sum() / single_lossy[0]), at_least=True),
        _bound(f"{name} goal 2, shared lossy bottleneck: total / competing NewReno", 1.1,
               float(shared.sum() / competitor[0]), at_least=False),
    ]


def balia_between() -> Check:
    """BALIA's share against a competing NewReno flow (goal 2's scenario) relative to
    OLIA's (0) and LIA's (1): within [0, 1] (module docstring, 4)."""
    shares = {cc: float(np.divide(*(x.sum() for x in _throughputs(_shared_lossy(cc, 600.0)))))
              for cc in ("olia", "balia", "lia")}
    position = (shares["balia"] - shares["olia"]) / (shares["lia"] - shares["olia"])
    return Check("BALIA goal 2 share between OLIA's (0) and LIA's (1)", 1.0, position, 100.0 * (position - 1.0),
                 0.0 <= position <= 1.0, "0 <= measured <= 1", "position")


WVEGAS_TOTAL_ALPHA_PACKETS = 10
"""Packets a wVegas connection keeps queued over its subflows (docs/model.md 7.12)."""


def wvegas_backlog(duration_s: float = 60.0, cc: str = "wvegas") -> list[Check]:
    """wVegas keeps its backlog and loses nothing (module docstring, 5); ``cc`` runs the
    same checks on another controller (a loss-based one fills the buffer and fails them)."""
    scenario = {
        "name": f"{cc}-shared", "duration_s": duration_s, "horizon_s": duration_s, "workload": _bulk(100),
        "links": [{"name": "shared", "bandwidth": 10, "queue_ms": 200}],
        "paths": [{"link": "shared", "rtt_ms": 40, "cc": cc}, {"link": "shared", "rtt_ms": 60, "cc": cc}],
    }
    transport = resolve(scenario).transport
    paths = simulate(scenario, "minrtt", seed=0).paths
    drops = int(paths["queue_drops"].sum())
    queueing_s = float((paths["srtt_s"] - paths["min_rtt_s"]).max())
    packet_s = (transport.mss_bytes + transport.header_bytes) * 8 / 10e6
    ratio = queueing_s / (WVEGAS_TOTAL_ALPHA_PACKETS * packet_s)
    return [
        Check("wVegas: packets dropped at a shared 200 ms buffer", 0.0, float(drops), 0.0 if drops == 0 else math.inf,
              drops == 0, "measured == 0", "packets"),
        _bound("wVegas: queueing delay at the end / time of 10 packets at the link", 1.0, ratio, at_least=False),
    ]


# ---------------------------------------------------------------------------------------
# 6. Playout
# ---------------------------------------------------------------------------------------


def playout_case() -> list[Check]:
    """Five frames at 10 fps (I P P P P, 5000 and 1250 B) over one 1 Mbit/s ideal path
    with a 10 ms one-way delay and an outage in [200, 250) ms; start-up delay 60 ms.

    Packets of 1250 B take 10 ms. Frame 0 is received at 50 ms, frame 1 at 120, frame 2
    (arriving in the outage) at 270 > its play time 260: one discard. Frames 3 and 4 at 320
    and 420. Playback [60, 460): the buffer holds f0 [50, 60), f1 [120, 160), f3 [320, 360),
    f4 [420, 460); it is empty on [160, 320) while frame 2 is due at 260: one underflow of
    160 ms (the other empty periods have no frame due).
    """
    scenario = {
        "name": "playout-hand",
        "duration_s": 0.5,
        "transport": {"mss_bytes": 1250},
        "paths": [{
            "bandwidth": {"type": "piecewise", "points": [[0, 1.0], [0.2, 0.0], [0.25, 1.0]]},
            "one_way_delay_ms": 10,
            "cc": "ideal",
        }],
        "workload": {"type": "avc", "fps": 10, "bitrate_mbps": 0.16, "gop": "IPPPP",
                     "size_ratio": {"I": 4, "P": 1}, "size_cv": 0.0, "playout_startup_ms": 60},
    }
    s = simulate(scenario, "minrtt", seed=0).summary
    return [
        _within("Playout: picture discards", 1, s["picture_discards"], 0.0, "frames"),
        _within("Playout: buffer underflows", 1, s["buffer_underflows"], 0.0, "events"),
        _within("Playout: underflow recovery time", 0.160, s["underflow_recovery_s"], 1e-6, "s"),
    ]


# ---------------------------------------------------------------------------------------
# 7. Gilbert-Elliott
# ---------------------------------------------------------------------------------------


def gilbert_elliott(p: float = 0.01, r: float = 0.2, duration_s: float = 200.0) -> list[Check]:
    """Long-run loss rate and mean burst length of the two-state loss chain."""
    scenario = {
        "name": "gilbert-elliott",
        "duration_s": duration_s,
        "horizon_s": duration_s,
        "paths": [{"bandwidth": 20, "rtt_ms": 20, "cc": "ideal",
                   "loss": {"model": "gilbert_elliott", "p": p, "r": r, "loss_bad": 1.0, "loss_good": 0.0}}],
        "workload": _bulk(50),
    }
    paths = simulate(scenario, "minrtt", seed=3).paths
    lost, sent, bursts = (int(paths[k][0]) for k in ("random_losses", "packets_sent", "loss_bursts"))
    return [
        _within(f"Gilbert-Elliott loss rate (p = {p:g}, r = {r:g})", p / (p + r), lost / sent, 5.0, "fraction"),
        _within("Gilbert-Elliott mean burst length", 1 / r, lost / bursts, 5.0, "packets"),
    ]


def run_validations(progress: Callable[[str], None] | None = None) -> list[Check]:
    """Every check of the module docstring, in order."""
    steps: list[tuple[str, Callable[[], Check | list[Check]]]] = [
        *((f"DAPS {c}", lambda c=c: daps_blocking(*c)) for c in DAPS_TABLE_I),
        *((f"Mathis p={p}", lambda p=p: mathis(p)) for p in MATHIS_LOSS),
        ("Cubic", cubic_trajectory),
        ("LIA", lambda: coupled_goals("lia")),
        ("OLIA", lambda: coupled_goals("olia")),
        ("BALIA", lambda: [*coupled_goals("balia"), balia_between()]),
        ("wVegas", wvegas_backlog),
        ("playout", playout_case),
        ("Gilbert-Elliott", gilbert_elliott),
    ]
    rows: list[Check] = []
    for label, step in steps:
        if progress:
            progress(label)
        out = step()
        rows.extend(out if isinstance(out, list) else [out])
    return [replace(r, accepted=ACCEPTED_DEVIATIONS.get(r.check, "") if not r.passed else "") for r in rows]


def exit_code(rows: list[Check]) -> int:
    """0 when every row passes or misses for an accepted reason, else 1."""
    return 0 if all(r.passed or r.accepted for r in rows) else 1


def format_table(rows: list[Check]) -> str:
    """The human-readable table of ``mpsched validate``."""
    header = ("check", "expected", "measured", "unit", "error %", "criterion", "pass")
    body = [(r.check, f"{r.expected:.4g}", f"{r.measured:.4g}", r.unit, f"{r.error_pct:+.2f}", r.criterion,
             "yes" if r.passed else "NO (accepted)" if r.accepted else "NO") for r in rows]
    widths = [max(len(str(x[i])) for x in [header, *body]) for i in range(len(header))]
    lines = ["  ".join(str(h).ljust(w) for h, w in zip(header, widths))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(str(c).ljust(w) for c, w in zip(row, widths)) for row in body]
    passed = sum(r.passed for r in rows)
    accepted = [r for r in rows if r.accepted]
    lines.append(f"\n{passed} of {len(rows)} checks pass" + (f"; {len(accepted)} known deviation"
                                                            f"{'s' if len(accepted) > 1 else ''} accepted" if accepted
                                                            else ""))
    lines += [f"{r.check}: accepted: {r.accepted}" for r in accepted]
    for r in rows:
        if not r.passed and "measured_empty_queue_ms" in r.extra:
            lines.append(f"{r.check}: {r.extra['measured_empty_queue_ms']:.4g} ms where the blocking packet met an "
                         f"empty slow path (eq. (2)'s assumption); blocking packets queued up to "
                         f"{r.extra['blocker_queueing_ms']:.4g} ms; Fig. 2's sequence in an empty network: "
                         f"{r.extra['figure_2_sequence_ms']:.4g} ms")
    return "\n".join(lines)
