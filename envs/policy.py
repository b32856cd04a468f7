"""The scheduler interface: what a policy sees at a decision point and how it answers.

A decision point happens whenever a path can send a packet and some block has bytes to
send (docs/model.md section 9). The policy answers with the index of a sendable block or
:data:`WAIT`, and may cancel blocks first. A policy with ``copies = True`` may also
answer :meth:`Observation.copy`: a copy, on the deciding path, of a piece in flight on
another path (redundancy, early reinjection; docs/model.md 7.1); its decision points then
go on while any piece is in flight. Everything a policy can read is what a real
sender knows: the blocks handed to it so far, their sent/acknowledged bytes, and each
subflow's congestion-control state. Future blocks and receiver state are hidden.
"""

from __future__ import annotations

import copy
import inspect
import itertools
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from . import _core

__all__ = ["WAIT", "Observation", "Policy", "DecidingPolicy", "TwinMismatch", "check_twin"]

WAIT: int = _core.WAIT
"""The action that leaves the deciding path idle until something changes."""


class Observation:
    """Live, read-only view of the sender at the current decision point.

    Block arrays cover the blocks that have arrived so far (index = block id, in arrival
    order); path arrays have one entry per path. The arrays are views into the
    simulator: read them during :meth:`Policy.decide`, copy them to keep them.

    Attributes
    ----------
    now_ns : int
        Current time.
    path : int
        The deciding path.
    n_paths, mss_bytes : int
    """

    __slots__ = (
        "_sim", "_sendable_buf", "n_paths", "mss_bytes", "path_names",
        "_arrival", "_size", "_deadline", "_priority", "_weight", "_unsent", "_lost", "_acked",
        "_first_send", "_bytes_sent", "_inflight", "_flags", "_piece_off", "_piece_sent", "_piece_paths",
        "_piece_state",
        "srtt_ns", "rttvar_ns", "min_rtt_ns", "rto_ns", "cwnd_bytes", "path_inflight_bytes",
        "delivery_rate_bps", "recovery", "can_send", "last_send_ns", "rate_bps", "link_rate_bps", "rto_streak",
        "backup", "start_ns", "stop_ns", "next_pn", "oldest_pn",
    )

    def __init__(self, sim: _core.Sim, path_names: tuple[str, ...] = ()) -> None:
        self._sim = sim
        self._sendable_buf = np.empty(sim.n_blocks, dtype=np.int32)
        self.n_paths: int = sim.n_paths
        self.mss_bytes: int = sim.mss_bytes
        self.path_names: tuple[str, ...] = path_names or tuple(f"path{j}" for j in range(sim.n_paths))

        def view(name: str) -> np.ndarray:
            return np.asarray(sim.view(name))

        self._arrival = view("arrival_ns")
        self._size = view("size_bytes")
        self._deadline = view("deadline_ns")
        self._priority = view("priority")
        self._weight = view("weight")
        self._unsent = view("unsent_bytes")
        self._lost = view("lost_pending_bytes")
        self._acked = view("acked_bytes")
        self._first_send = view("first_send_ns")
        self._bytes_sent = view("bytes_sent")
        self._inflight = view("inflight_bytes")
        self._piece_off = view("piece_off")
        self._piece_sent = view("piece_sent_ns")
        self._piece_paths = view("piece_paths")
        self._piece_state = view("piece_state")
        self._flags = view("flags")
        self.srtt_ns: np.ndarray = view("srtt_ns")
        """Smoothed RTT per path (RFC 6298)."""
        self.rttvar_ns: np.ndarray = view("rttvar_ns")
        self.min_rtt_ns: np.ndarray = view("min_rtt_ns")
        self.rto_ns: np.ndarray = view("rto_ns")
        self.cwnd_bytes: np.ndarray = view("cwnd_bytes")
        """Congestion window per path (0 for ideal, link-clocked paths)."""
        self.path_inflight_bytes: np.ndarray = view("path_inflight_bytes")
        self.delivery_rate_bps: np.ndarray = view("delivery_rate_bps")
        self.recovery: np.ndarray = view("recovery")
        """0: none, 1: fast recovery, 2: after a retransmission timeout."""
        self.rto_streak: np.ndarray = view("rto_streak")
        """Timeouts since each path's last newly acknowledged packet: above 0 the path is
        "potentially failed" (Linux MPTCP's term), as a path that went down looks."""
        self.backup: np.ndarray = view("backup")
        """Backup paths: the sender asks them only while every other path is potentially
        failed (docs/model.md section 7)."""
        self.start_ns: np.ndarray = view("start_ns")
        self.stop_ns: np.ndarray = view("stop_ns")
        """Each path sends in ``[start_ns, stop_ns)``: one added or removed during the
        episode (docs/model.md section 1), as a sender knows its subflows."""
        self.next_pn: np.ndarray = view("next_pn")
        """Packet number each path gives its next packet (from 0: the packets it sent)."""
        self.oldest_pn: np.ndarray = view("oldest_pn")
        """Each path's oldest packet neither acknowledged nor declared lost (``next_pn``
        when none): QUIC's least unacknowledged packet (docs/model.md section 7)."""
        self.can_send: np.ndarray = view("can_send")
        """Paths that could take a packet now (the deciding path always can)."""
        self.last_send_ns: np.ndarray = view("last_send_ns")
        self.rate_bps: np.ndarray = view("rate_bps")
        """The rate a scheduler assumes for each path (docs/model.md section 10):
        ``cwnd * 8e9 / srtt`` for window-based paths, the link's bandwidth for ideal ones."""
        self.link_rate_bps: np.ndarray = view("link_rate_bps")
        """The bandwidth of each path's link now: knowledge a real sender lacks, for
        models that assume it (and what ``rate_bps`` holds for ideal paths)."""

    @property
    def simulator(self) -> _core.Sim:
        """The simulation behind this view, for look-ahead schedulers that plan on its
        clones (:mod:`mpsched.solvers.rollout`). It holds the future too: a scheduler
        that reads it is a teacher, not something a real sender can run."""
        return self._sim

    # scalars ------------------------------------------------------------------
    @property
    def now_ns(self) -> int:
        return self._sim.now_ns

    @property
    def path(self) -> int:
        return self._sim.pending_path

    @property
    def n_arrived(self) -> int:
        return self._sim.n_arrived

    @property
    def in_order(self) -> bool:
        """Whether the receiver delivers in sequence with a bounded buffer (section 6.2)."""
        return self._sim.receiver == "in_order"

    @property
    def stream_sequence(self) -> bool:
        """Whether the in-order receiver numbers data in the application's byte order
        (``sequence: stream``, section 6.2): block ``b``'s bytes hold their positions
        whenever they are sent, so later blocks may go out first (C: ``s->stream_seq``)."""
        return self._sim.sequence == "stream"

    @property
    def rbuf_bytes(self) -> int:
        """Receive buffer of the in-order receiver (the connection's receive window)."""
        return self._sim.rbuf_bytes

    @property
    def unacked_data_bytes(self) -> int:
        """Bytes sent at least once beyond the receiver's data acknowledgement: the
        connection-level outstanding data that the receive window bounds (section 7)."""
        return self._sim.conn_next_dsn - self._sim.data_acked

    # blocks -------------------------------------------------------------------
    def sendable(self) -> np.ndarray:
        """Indices of blocks with bytes to send now, ascending (a fresh array)."""
        n = self._sim.sendable(self._sendable_buf)
        return self._sendable_buf[:n].copy()

    def copy_piece(self, block: int) -> int:
        """The lowest piece (index within the block) of ``block`` that the deciding path
        may copy, or -1 when there is none: a piece in flight that this path has not sent,
        or sent and declared lost (docs/model.md 7.1)."""
        g = self._sim.copy_piece(block, self._sim.pending_path)
        return -1 if g < 0 else g - int(self._piece_off[block])

    def copy(self, block: int, piece: int | None = None) -> int:
        """The action that sends, on the deciding path, a copy of piece ``piece`` of
        ``block`` (default: :meth:`copy_piece`); only for a policy with ``copies = True``
        (docs/model.md 7.1). The simulator refuses a piece the path may not copy."""
        if not 0 <= block < self.n_arrived:
            raise ValueError(f"copy: block {block} has not arrived or does not exist")
        if piece is None:
            piece = self.copy_piece(block)
            if piece < 0:
                raise ValueError(f"copy: block {block} has no piece that path {self.path} may copy")
        return -2 - (int(self._piece_off[block]) + int(piece))

    @property
    def piece_off(self) -> np.ndarray:
        """Index of each arrived block's first piece among all pieces (its pieces follow)."""
        return self._piece_off[: self.n_arrived]

    @property
    def piece_sent_ns(self) -> np.ndarray:
        """Time of each piece's latest transmission (new, retransmission or copy), -1 if
        never sent; indexed by piece among all pieces. Kept in an episode that takes
        copies (docs/model.md 7.1); -1 throughout one that does not."""
        return self._piece_sent

    @property
    def piece_paths(self) -> np.ndarray:
        """Per piece, bit j set while path j has it in flight (sent and not declared lost)."""
        return self._piece_paths

    @property
    def piece_in_flight(self) -> np.ndarray:
        """Per piece, whether it is in flight and not acknowledged (state OUT)."""
        return self._piece_state == _core.PIECE_OUT

    def copyable(self) -> np.ndarray:
        """Blocks with a piece the deciding path may copy (:meth:`copy`), ascending;
        empty when the episode does not take copies."""
        if not self._sim.copies:
            return np.empty(0, dtype=np.int64)
        j = self._sim.pending_path
        flying = np.flatnonzero(self._inflight[: self.n_arrived].sum(axis=1) > 0)
        return np.array([b for b in flying.tolist() if self._sim.copy_piece(b, j) >= 0], dtype=np.int64)

    def sendable_by_deadline(self) -> np.ndarray:
        """The sendable blocks ordered by (deadline, index)."""
        s = self.sendable()
        return s[np.argsort(self._deadline[s], kind="stable")]

    @property
    def arrival_ns(self) -> np.ndarray:
        return self._arrival[: self.n_arrived]

    @property
    def size_bytes(self) -> np.ndarray:
        return self._size[: self.n_arrived]

    @property
    def deadline_ns(self) -> np.ndarray:
        return self._deadline[: self.n_arrived]

    @property
    def priority(self) -> np.ndarray:
        return self._priority[: self.n_arrived]

    @property
    def weight(self) -> np.ndarray:
        return self._weight[: self.n_arrived]

    @property
    def unsent_bytes(self) -> np.ndarray:
        """Bytes never sent yet."""
        return self._unsent[: self.n_arrived]

    @property
    def lost_bytes(self) -> np.ndarray:
        """Bytes declared lost and waiting for retransmission (on any path)."""
        return self._lost[: self.n_arrived]

    @property
    def remaining_bytes(self) -> np.ndarray:
        """Bytes the sender still has to send: never sent plus waiting retransmission."""
        n = self.n_arrived
        return self._unsent[:n] + self._lost[:n]

    @property
    def acked_bytes(self) -> np.ndarray:
        return self._acked[: self.n_arrived]

    @property
    def first_send_ns(self) -> np.ndarray:
        """Time of the block's first packet, -1 if none yet."""
        return self._first_send[: self.n_arrived]

    @property
    def bytes_sent(self) -> np.ndarray:
        """Bytes sent per block and path (retransmissions included), shape (n, P)."""
        return self._bytes_sent[: self.n_arrived]

    @property
    def inflight_bytes(self) -> np.ndarray:
        """Bytes of each block outstanding on each path, shape (n, P)."""
        return self._inflight[: self.n_arrived]

    @property
    def cancelled(self) -> np.ndarray:
        return (self._flags[: self.n_arrived] & _core.FLAG_CANCELLED) != 0

    @property
    def in_recovery(self) -> np.ndarray:
        """Paths in fast recovery or recovering from a timeout."""
        return self.recovery != 0

    def write_env_observation(self, num_slots: int, max_paths: int, obs: np.ndarray, mask: np.ndarray,
                              slots: np.ndarray) -> None:
        """Write the observation :class:`~mpsched.envs.env.MultipathDeadlineEnv` gives of
        this decision into the caller's buffers (the same routine as the environment's).

        Lets a policy trained on the environment decide inside :func:`~mpsched.envs.simulate`.
        The episode keeps the buffers bound, as the environment binds its own: call it on
        episodes run by ``simulate`` or the step API, not on an environment's episode.

        Parameters
        ----------
        num_slots, max_paths : int
            The environment's K and Pmax (``max_paths`` at least :attr:`n_paths`).
        obs : numpy.ndarray
            float32, shape ``(obs_dim(K, Pmax),)``: the flat observation of the deciding path.
        mask : numpy.ndarray
            bool, shape ``(K + 1,)``: slots holding a block, and WAIT (always valid).
        slots : numpy.ndarray
            int32, shape ``(K,)``: the block index behind each slot, -1 when empty.

        Raises
        ------
        ValueError
            For K or Pmax out of range, or a buffer of the wrong shape.
        TypeError
            For a buffer of the wrong dtype.
        """
        self._sim.bind_obs(num_slots, max_paths, True, obs, mask, slots)

    def cancel(self, block: int) -> None:
        """Drop the block's unsent bytes (docs/model.md section 9); sent packets stay."""
        self._sim.cancel(block)


@runtime_checkable
class DecidingPolicy(Protocol):
    """Anything with ``decide(obs) -> int`` can schedule."""

    def decide(self, obs: Observation) -> int: ...


class Policy:
    """Base class of schedulers.

    Subclasses implement :meth:`decide` (the readable specification) and, when a twin is
    compiled into the core, set :attr:`native` to its registry name. Instances then run
    natively by default; :meth:`python` returns a copy that runs the specification
    through the step API, decision for decision the same.

    Attributes
    ----------
    name : str
        Registry name.
    native : str or None
        Name of the native twin in the core, if any.
    use_native : bool
        Whether :func:`mpsched.envs.simulate` runs the twin.
    """

    name: str = "policy"
    native: str | None = None
    paper: str = ""
    """Where the scheduler comes from (shown by ``mpsched list``)."""
    deadline_aware: bool = False
    """Whether it gives up on blocks that can no longer make their deadline."""
    copies: bool = False
    """Whether it sends copies of pieces in flight (:meth:`Observation.copy`); the episode then
    asks it also while nothing but copies could be sent (docs/model.md 7.1)."""

    def __init__(self) -> None:
        self.use_native: bool = self.native is not None

    def reset(self, obs: Observation) -> None:
        """Called once per episode before the first decision."""

    def decide(self, obs: Observation) -> int:
        raise NotImplementedError

    def python(self) -> Policy:
        """A copy that runs the Python specification instead of the native twin."""
        twin = copy.copy(self)
        twin.use_native = False
        return twin

    def params(self) -> dict[str, Any]:
        """The constructor's parameters and their values, in signature order (each is
        kept in an attribute of the same name)."""
        names = [k for k in inspect.signature(type(self).__init__).parameters if k != "self"]
        return {k: getattr(self, k) for k in names}

    def native_params(self) -> tuple[float, ...]:
        """The parameters as the native twin takes them, in the same order."""
        return tuple(float(v) for v in self.params().values())

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params().items())
        return f"{type(self).__name__}({args})"


class TwinMismatch(RuntimeError):
    """A Python specification and its native twin disagree on their parameters."""


def check_twin(cls: type[Policy], twins: Mapping[str, Sequence[tuple[str, float, float]]] | None = None) -> None:
    """Check that ``cls``'s native twin takes the constructor's parameters, by name and in
    order, and accepts their defaults (the core declares each parameter's name and range;
    :meth:`Policy.native_params` passes them by position).

    Parameters
    ----------
    cls : type
        A :class:`Policy` subclass; nothing to check when it has no twin.
    twins : mapping, optional
        Twin name -> ``((parameter, min, max), ...)``; the core's
        (:func:`mpsched.envs._core.native_policies`) by default.

    Raises
    ------
    TwinMismatch
        Naming the twin, the class and every parameter that differs.
    """
    if cls.native is None:
        return
    table = _core.native_policies() if twins is None else twins
    where = f"{cls.__name__} ({cls.name!r})"
    if cls.native not in table:
        raise TwinMismatch(f"{where} names the native twin {cls.native!r}, which the core does not define; "
                           f"the core's twins: {', '.join(sorted(table))}")
    declared = list(table[cls.native])
    c_names = [p[0] for p in declared]
    signature = inspect.signature(cls.__init__).parameters
    py_names = [k for k in signature if k != "self"]
    if c_names != py_names:
        differ = [f"position {k}: Python {a!r}, C {b!r}"
                  for k, (a, b) in enumerate(itertools.zip_longest(py_names, c_names, fillvalue="(none)")) if a != b]
        raise TwinMismatch(f"{where} takes ({', '.join(py_names)}) but its native twin {cls.native!r} takes "
                           f"({', '.join(c_names)}): " + "; ".join(differ))
    for name, low, high in declared:
        default = signature[name].default
        if isinstance(default, (bool, int, float)) and not low <= float(default) <= high:
            raise TwinMismatch(f"{where}: the default {name} = {default!r} is outside the range [{low:g}, {high:g}] "
                               f"its native twin {cls.native!r} accepts")
