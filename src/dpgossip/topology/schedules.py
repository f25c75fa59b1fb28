"""Mixing schedules: the sequence of averaging steps of a dynamic gossip run (docs/dynamic-gossip.md).

A :class:`MixingSchedule` on agents ``0..m-1`` is one of two kinds.

``"rounds"``
    A sequence of sparse ``m x m`` matrices ``W_0, ..., W_{T-1}`` applied in order,
    ``x^{t+1} = W_t x^t``. ``stochastic`` says which sums are one: ``"doubly"`` (averaging with a
    fixed mean: random matchings, the one-peer exponential graph, a random regular graph per round,
    matrices read from files), ``"row"`` (a realised averaging round in which some messages were
    missing and the receiver put their weights on its own value: the mean may drift) or
    ``"column"`` (push-sum, Kempe, Dobra and Gehrke 2003: sender ``j`` keeps ``A_jj`` of its mass
    and pushes ``A_ij`` to ``i``; a lost message loses mass, so a realised push-sum column may sum
    to less than one).
``"pairwise"``
    A sequence of pairwise exchanges ``(time, initiator i, responder j, outcome)`` (randomized
    gossip, Boyd, Ghosh, Prabhakar and Shah 2006), applied in order. Outcome
    :data:`AVERAGED`: both set their value to ``(x_i + x_j) / 2``, i.e.
    ``x <- (I - (e_i - e_j)(e_i - e_j)^T / 2) x``; :data:`REPLY_LOST` and :data:`REPLY_LATE`: the
    responder averaged but the initiator never used the reply (lost, or arrived after its timeout:
    then the initiator saw it but kept its value), so only ``x_j <- (x_i + x_j) / 2``;
    :data:`REFUSED`: the responder saw the request and changed nothing (busy or stale request).

``absent`` lists the realised absences ``(agent, from, to)`` of a run with churn (an absent agent
neither sends nor receives; its value is kept). ``late`` (``"rounds"`` only) lists the messages
``(round, sender, receiver, weight)`` that reached a present receiver after it had mixed the round:
they change no value but were seen, so a release model must count them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from dpgossip.errors import ConfigError, check_int
from dpgossip.topology.edges import graph_from_edges
from dpgossip.topology.network import Network

__all__ = ["MixingSchedule", "SCHEDULE_KINDS", "STOCHASTIC", "AVERAGED", "REPLY_LOST",
           "REPLY_LATE", "REFUSED", "OUTCOMES", "schedule_union_edges", "link_network",
           "matrices_from_entries", "agent_rounds"]

SCHEDULE_KINDS: tuple[str, ...] = ("rounds", "pairwise")
"""The kinds of a :class:`MixingSchedule`."""
STOCHASTIC: tuple[str, ...] = ("doubly", "row", "column")
"""Which sums of a ``"rounds"`` schedule's matrices are one."""
AVERAGED, REPLY_LOST, REPLY_LATE, REFUSED = 0, 1, 2, 3
"""Outcomes of a pairwise exchange (module docstring)."""
OUTCOMES: tuple[int, ...] = (AVERAGED, REPLY_LOST, REPLY_LATE, REFUSED)
_TOL = 1e-9


def _check_matrix(W: object, m: int, t: int, stochastic: str, tol: float) -> sp.csr_array:
    """``W_t`` as a read-only CSR array after checking shape, finiteness, signs and sums."""
    where = f"matrices[{t}]"
    try:
        A = sp.csr_array(W, dtype=float) if sp.issparse(W) else sp.csr_array(np.asarray(W, dtype=float))
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{where} must be a numeric {m} x {m} matrix, got {type(W).__name__} "
                          f"({exc})", field=where) from None
    if A.shape != (m, m):
        raise ConfigError(f"{where} must be {m} x {m}, got shape {A.shape}", field=where)
    A = A.copy()
    A.sum_duplicates()
    A.eliminate_zeros()
    A.sort_indices()
    if not np.all(np.isfinite(A.data)):
        raise ConfigError(f"{where} must be finite, got a non-finite weight", field=where)
    if A.data.size and A.data.min() < -tol:
        raise ConfigError(f"{where} must be nonnegative, got a weight {A.data.min():g}; allowed: "
                          "weights >= 0", field=where)
    rows, cols = A.sum(axis=1), A.sum(axis=0)
    checks = {"doubly": (("row", rows), ("column", cols)), "row": (("row", rows),),
              "column": (("column", cols),)}[stochastic]
    for name, sums in checks:
        # a realised push-sum round may lose mass (a lost message), never create it
        off = sums - 1.0 if stochastic == "column" else np.abs(sums - 1.0)
        bad = int(np.argmax(off))
        if off[bad] > tol:
            allowed = "at most 1" if stochastic == "column" else "equal to 1"
            raise ConfigError(f"{where}: {name} {bad} sums to {sums[bad]:.12g}; a {stochastic}-"
                              f"stochastic schedule needs every {name} sum {allowed} (within "
                              f"{tol:g})", field=where)
    for a in (A.data, A.indices, A.indptr):
        a.setflags(write=False)
    return A


def _frozen(a: object, dtype: type, shape_tail: tuple[int, ...], name: str) -> np.ndarray:
    arr = np.array(a, dtype=dtype, copy=True)
    if arr.size == 0:
        arr = arr.reshape((0, *shape_tail))
    if arr.ndim != 1 + len(shape_tail) or arr.shape[1:] != shape_tail:
        want = f"(k, {', '.join(map(str, shape_tail))})" if shape_tail else "(k,)"
        raise ConfigError(f"{name} must have shape {want}, got shape {arr.shape}", field=name)
    arr.setflags(write=False)
    return arr


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class MixingSchedule:
    """A recorded or sampled sequence of averaging steps (module docstring).

    Parameters
    ----------
    m : int
        Number of agents.
    kind : str
        ``"rounds"`` or ``"pairwise"``.
    matrices : sequence of matrices
        ``"rounds"``: ``W_0..W_{T-1}`` (dense or sparse ``m x m``).
    stochastic : str
        ``"rounds"``: ``"doubly"``, ``"row"`` or ``"column"``.
    times : array_like
        Simulated time of each step (rounds: start of each round; pairwise: each exchange),
        nondecreasing; default ``0, 1, 2, ...``.
    pairs : array_like
        ``"pairwise"``: ``(K, 2)`` initiator and responder of each exchange.
    outcomes : array_like
        ``"pairwise"``: ``(K,)`` outcome codes (default all :data:`AVERAGED`).
    absent : sequence of (agent, from, to)
        Realised absences.
    late : array_like
        ``"rounds"``: ``(n, 4)`` ``(round, sender, receiver, weight)`` of messages seen after mixing.
    label : str
        What produced the schedule (sampler name or ``"engine"``).
    """

    m: int
    kind: str
    matrices: tuple[sp.csr_array, ...] = ()
    stochastic: str = "doubly"
    times: np.ndarray | None = None
    pairs: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), dtype=np.int64))
    outcomes: np.ndarray | None = None
    absent: tuple[tuple[int, float, float], ...] = ()
    late: np.ndarray = field(default_factory=lambda: np.zeros((0, 4)))
    label: str = "custom"

    def __post_init__(self) -> None:
        m = check_int(self.m, "m", 1)
        object.__setattr__(self, "m", m)
        if self.kind not in SCHEDULE_KINDS:
            raise ConfigError(f"kind must be one of {', '.join(map(repr, SCHEDULE_KINDS))}, got "
                              f"{self.kind!r}", field="kind")
        if self.stochastic not in STOCHASTIC:
            raise ConfigError(f"stochastic must be one of {', '.join(map(repr, STOCHASTIC))}, got "
                              f"{self.stochastic!r}", field="stochastic")
        if self.kind == "rounds":
            self._init_rounds(m)
        else:
            self._init_pairwise(m)
        times = np.arange(self.steps, dtype=float) if self.times is None else self.times
        times = _frozen(times, float, (), "times")
        if times.shape != (self.steps,) or not np.all(np.isfinite(times)) or \
                np.any(np.diff(times) < 0):
            raise ConfigError(f"times must be {self.steps} finite nondecreasing numbers (one per "
                              f"step), got shape {times.shape}", field="times")
        object.__setattr__(self, "times", times)
        object.__setattr__(self, "absent", self._check_absent(m))

    def _init_rounds(self, m: int) -> None:
        if len(self.pairs):
            raise ConfigError("pairs: a 'rounds' schedule has matrices, not pairs", field="pairs")
        if not isinstance(self.matrices, Sequence) or isinstance(self.matrices, (str, np.ndarray)):
            raise ConfigError(f"matrices must be a sequence of {m} x {m} matrices, got "
                              f"{type(self.matrices).__name__}", field="matrices")
        mats = tuple(_check_matrix(W, m, t, self.stochastic, _TOL)
                     for t, W in enumerate(self.matrices))
        object.__setattr__(self, "matrices", mats)
        late = _frozen(self.late, float, (4,), "late")
        if late.size and (late[:, :3].min() < 0 or late[:, 1:3].max() >= m or
                          late[:, 0].max() >= len(mats)):
            raise ConfigError(f"late: rounds must be in 0..{len(mats) - 1} and agents in "
                              f"0..{m - 1}, got rows {late[:, :3].min(axis=0).tolist()} (smallest) "
                              f"to {late[:, :3].max(axis=0).tolist()} (largest)", field="late")
        object.__setattr__(self, "late", late)
        object.__setattr__(self, "outcomes", _frozen((), np.int8, (), "outcomes"))

    def _init_pairwise(self, m: int) -> None:
        if self.matrices:
            raise ConfigError("matrices: a 'pairwise' schedule has pairs, not matrices",
                              field="matrices")
        pairs = _frozen(self.pairs, np.int64, (2,), "pairs")
        if pairs.size and (pairs.min() < 0 or pairs.max() >= m):
            raise ConfigError(f"pairs: agents must be in 0..{m - 1}, got {int(pairs.min())}.."
                              f"{int(pairs.max())}", field="pairs")
        if pairs.size and np.any(pairs[:, 0] == pairs[:, 1]):
            k = int(np.flatnonzero(pairs[:, 0] == pairs[:, 1])[0])
            raise ConfigError(f"pairs[{k}]: an agent cannot average with itself, got "
                              f"{pairs[k].tolist()}", field=f"pairs[{k}]")
        out = np.zeros(len(pairs), dtype=np.int8) if self.outcomes is None else self.outcomes
        out = _frozen(out, np.int8, (), "outcomes")
        if out.shape != (len(pairs),) or not np.all(np.isin(out, OUTCOMES)):
            bad = sorted(set(out.tolist()) - set(OUTCOMES))
            raise ConfigError(f"outcomes must be {len(pairs)} codes (one per pair), each one of "
                              f"{list(OUTCOMES)}; got {out.size} code(s), unknown: {bad}",
                              field="outcomes")
        object.__setattr__(self, "pairs", pairs)
        object.__setattr__(self, "outcomes", out)
        object.__setattr__(self, "late", _frozen((), float, (4,), "late"))

    def _check_absent(self, m: int) -> tuple[tuple[int, float, float], ...]:
        out = []
        for k, item in enumerate(self.absent):
            if len(item) != 3 or not 0 <= int(item[0]) < m or not float(item[1]) <= float(item[2]):
                raise ConfigError(f"absent[{k}] must be (agent in 0..{m - 1}, from, to) with "
                                  f"from <= to, got {item!r}", field=f"absent[{k}]")
            out.append((int(item[0]), float(item[1]), float(item[2])))
        return tuple(out)

    @property
    def steps(self) -> int:
        """Number of rounds (``"rounds"``) or exchanges (``"pairwise"``)."""
        return len(self.matrices) if self.kind == "rounds" else len(self.pairs)

    @property
    def averaging(self) -> bool:
        """Whether every step keeps the mean: doubly-stochastic rounds, or every exchange averaged
        on both sides (or refused)."""
        if self.kind == "rounds":
            return self.stochastic == "doubly"
        return bool(np.all((self.outcomes == AVERAGED) | (self.outcomes == REFUSED)))

    def to_row(self) -> dict[str, object]:
        """Tidy summary row."""
        return {"schedule": self.label, "kind": self.kind, "agents": self.m, "steps": self.steps,
                "stochastic": self.stochastic if self.kind == "rounds" else "pairwise",
                "absences": len(self.absent), "duration": float(self.times[-1]) if self.steps else 0.0}


def schedule_union_edges(schedule: MixingSchedule) -> np.ndarray:
    """Undirected edges ``(i, j)``, ``i < j``, used by some step of the schedule, sorted."""
    if schedule.kind == "pairwise":
        e = schedule.pairs
    else:
        parts = [np.column_stack(W.nonzero()) for W in schedule.matrices]
        e = np.concatenate(parts) if parts else np.zeros((0, 2), dtype=np.int64)
    e = np.sort(np.asarray(e, dtype=np.int64), axis=1)
    e = e[e[:, 0] != e[:, 1]]
    return np.unique(e, axis=0) if e.size else e.reshape(0, 2)


def link_network(m: int, edges: np.ndarray) -> Network:
    """A :class:`Network` whose graph holds ``edges`` (the pairs a schedule uses) and the path
    ``0-1-...-(m-1)``, so that it is connected as :class:`Network` requires; ``W = I``. The
    engine's links for a schedule: the path's links carry nothing unless the schedule uses them."""
    path = np.column_stack([np.arange(m - 1), np.arange(1, m)])
    g = graph_from_edges(m, np.concatenate([np.asarray(edges).reshape(-1, 2), path]).astype(np.int64))
    return Network(graph=g, W=sp.eye_array(m, format="csr"), name="links", allow_nonstochastic=True)


def matrices_from_entries(m: int, rounds: int, entries: list[tuple[int, int, int, float]],
                          absent_rows: list[list[int]]) -> tuple[sp.csr_array, ...]:
    """Realised ``W_t`` from recorded entries ``(t, i, j, W_t[i, j])``; the rows of the agents in
    ``absent_rows[t]`` are the identity (an absent agent keeps its value)."""
    e = np.array(entries, dtype=float).reshape(-1, 4)
    out = []
    for t in range(rounds):
        sel = e[e[:, 0] == t]
        absent = np.array(absent_rows[t], dtype=np.int64)
        rows = np.concatenate([sel[:, 1].astype(np.int64), absent])
        cols = np.concatenate([sel[:, 2].astype(np.int64), absent])
        vals = np.concatenate([sel[:, 3], np.ones(absent.size)])
        out.append(sp.csr_array((vals, (rows, cols)), shape=(m, m)))
    return tuple(out)


def agent_rounds(schedule: MixingSchedule, i: int) -> tuple[list, list]:
    """What agent ``i`` needs of each ``W_t``: its column off the diagonal as ``(receivers,
    weights)``, and its row as ``({j: W_t[i, j]}, W_t[i, i])``."""
    cols, rows = [], []
    for W in schedule.matrices:
        c = W[:, [i]].tocoo()
        keep = c.row != i
        cols.append((tuple(c.row[keep].tolist()), c.data[keep].tolist()))
        lo, hi = W.indptr[i], W.indptr[i + 1]
        r = dict(zip(W.indices[lo:hi].tolist(), W.data[lo:hi].tolist(), strict=True))
        rows.append((r, r.pop(i, 0.0)))
    return cols, rows
