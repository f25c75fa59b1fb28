"""The matrix backend of a mixing schedule: run it, list its messages as linear maps, its rates.

:func:`apply_schedule` runs a :class:`~dpgossip.topology.schedules.MixingSchedule` on initial
values ``x^0`` (``(m,)`` or ``(m, d)``): a ``"rounds"`` schedule computes ``x^{t+1} = W_t x^t``; a
``"pairwise"`` one applies its exchanges in order as sparse updates (outcome ``AVERAGED``:
``x_i, x_j <- (x_i + x_j) / 2``; ``REPLY_LOST`` / ``REPLY_LATE``: ``x_j <- (x_i + x_j) / 2`` only;
``REFUSED``: nothing). :func:`push_sum_ratio` runs a push-sum schedule on the pair ``(s, w)``
(``w^0 = 1``) and returns ``s / w`` (Kempe et al. 2003: with column-stochastic ``A_t`` the sums
``1^T s`` and ``1^T w`` are kept, so the ratio tends to the average of ``s^0`` on a strongly
connected graph).

:func:`schedule_messages` lists every message the schedule delivers as a linear map of the initial
values: the value of a message is ``c * r^T x^0``, ``r`` a row of the product of the steps before
it. ``"rounds"``: at round ``t`` sender ``j`` sends ``x_j^t`` to every ``i`` with
``W_t[i, j] != 0`` (push-sum: ``A_t[i, j] (s_j^t, w_j^t)``, so ``c = A_t[i, j]``), and the late
messages of the schedule likewise; ``"pairwise"``: exchange ``k`` between initiator ``i`` and
responder ``j`` delivers the request ``x_i`` to ``j`` (every outcome) and the reply
``(x_i + x_j) / 2`` to ``i`` (outcomes ``AVERAGED`` and ``REPLY_LATE``), both of the values just
before the exchange.

:func:`expected_pair_matrix` and :func:`second_moment_rate` give the rates of randomized pairwise
gossip (docs/dynamic-gossip.md): ``E[W] = I - (D + D_c) / (2m) + (P + P^T) / (2m)`` per tick, with
``D``, ``D_c`` the diagonals of the row and column sums of ``P``, and the spectral radius of
``Y -> E[W Y W^T]`` on the symmetric matrices with ``Y 1 = 0``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from dpgossip.errors import ConfigError
from dpgossip.resources import Need, check_needs
from dpgossip.topology.schedules import AVERAGED, REFUSED, REPLY_LATE, MixingSchedule

__all__ = ["value_matrix", "apply_schedule", "schedule_trajectory", "push_sum_ratio", "ScheduleMessages",
           "schedule_messages", "expected_pair_matrix", "second_moment_rate"]


def value_matrix(x: object, m: int) -> np.ndarray:
    """``x`` (``(m,)`` or ``(m, d)``, finite) as a new ``(m, d)`` float array."""
    arr = np.array(x, dtype=float, copy=True)
    arr = arr[:, None] if arr.ndim == 1 else arr
    if arr.ndim != 2 or arr.shape[0] != m or not np.all(np.isfinite(arr)):
        raise ConfigError(f"x must be finite of shape ({m},) or ({m}, d), got shape {np.shape(x)}",
                          field="x")
    return arr


def _values(schedule: MixingSchedule, x: object) -> tuple[np.ndarray, bool]:
    return value_matrix(x, schedule.m), np.ndim(x) == 1


def _pair_step(x: np.ndarray, i: int, j: int, outcome: int) -> None:
    if outcome == REFUSED:
        return
    a = 0.5 * (x[i] + x[j])
    x[j] = a
    if outcome == AVERAGED:
        x[i] = a


def schedule_trajectory(schedule: MixingSchedule, x: object, *, stride: int = 1) -> np.ndarray:
    """The values after ``0, stride, 2 stride, ...`` steps (and after the last), ``(n, m, d)``
    (``(n, m)`` for ``(m,)`` input)."""
    cur, flat = _values(schedule, x)
    stride = max(1, int(stride))
    out = [cur.copy()]
    K = schedule.steps
    if schedule.kind == "rounds":
        for t, W in enumerate(schedule.matrices):
            cur = W @ cur
            if (t + 1) % stride == 0 or t + 1 == K:
                out.append(cur.copy())
    else:
        pairs = schedule.pairs.tolist()
        outcomes = schedule.outcomes.tolist()
        for k in range(K):
            i, j = pairs[k]
            _pair_step(cur, i, j, outcomes[k])
            if (k + 1) % stride == 0 or k + 1 == K:
                out.append(cur.copy())
    res = np.stack(out)
    return res[:, :, 0] if flat else res


def apply_schedule(schedule: MixingSchedule, x: object) -> np.ndarray:
    """The values after every step of the schedule (module docstring), same shape as ``x``."""
    cur, flat = _values(schedule, x)
    if schedule.kind == "rounds":
        for W in schedule.matrices:
            cur = W @ cur
    else:
        for (i, j), o in zip(schedule.pairs.tolist(), schedule.outcomes.tolist(), strict=True):
            _pair_step(cur, i, j, o)
    return cur[:, 0] if flat else cur


def push_sum_ratio(schedule: MixingSchedule, s: object, w: object | None = None) -> np.ndarray:
    """Push-sum: run ``(s, w)`` (``w^0 = 1`` by default) and return ``s / w`` (module docstring)."""
    if schedule.kind != "rounds" or schedule.stochastic != "column":
        raise ConfigError(f"schedule: push-sum needs a 'rounds' schedule with stochastic = 'column', "
                          f"got kind {schedule.kind!r}, stochastic {schedule.stochastic!r}",
                          field="schedule")
    sv, flat = _values(schedule, s)
    wv = np.ones(schedule.m) if w is None else np.asarray(w, dtype=float)
    both = apply_schedule(schedule, np.column_stack([sv, wv]))
    ratio = both[:, :-1] / both[:, -1:]
    return ratio[:, 0] if flat else ratio


@dataclass(frozen=True, slots=True, eq=False)
class ScheduleMessages:
    """Every message of a schedule as a linear map of the initial values (module docstring)."""

    coefficients: np.ndarray
    """``(n, m)``: message ``k`` carries ``coefficients[k] @ x^0``."""
    senders: np.ndarray
    """``(n,)`` sender of each message."""
    receivers: np.ndarray
    """``(n,)`` receiver of each message."""
    steps: np.ndarray
    """``(n,)`` round or exchange index of each message."""


def _round_messages(schedule: MixingSchedule) -> list[tuple[np.ndarray, int, int, int]]:
    m = schedule.m
    phi = np.eye(m)
    late = {}
    for t, j, i, w in schedule.late.tolist():
        late.setdefault(int(t), []).append((int(j), int(i), w))
    push = schedule.stochastic == "column"
    out = []
    for t, W in enumerate(schedule.matrices):
        coo = W.tocoo()
        order = np.lexsort((coo.row, coo.col))
        for i, j, w in zip(coo.row[order].tolist(), coo.col[order].tolist(),
                           coo.data[order].tolist(), strict=True):
            if i != j:
                out.append(((w if push else 1.0) * phi[j], j, i, t))
        for j, i, w in late.get(t, ()):
            out.append(((w if push else 1.0) * phi[j], j, i, t))
        phi = W @ phi
    return out


def _pair_messages(schedule: MixingSchedule) -> list[tuple[np.ndarray, int, int, int]]:
    phi = np.eye(schedule.m)
    out = []
    for k, ((i, j), o) in enumerate(zip(schedule.pairs.tolist(), schedule.outcomes.tolist(),
                                        strict=True)):
        out.append((phi[i].copy(), i, j, k))
        if o in (AVERAGED, REPLY_LATE):
            out.append((0.5 * (phi[i] + phi[j]), j, i, k))
        _pair_step(phi, i, j, o)
    return out


def schedule_messages(schedule: MixingSchedule) -> ScheduleMessages:
    """Every delivered message as a row of coefficients on ``x^0`` (module docstring); dense
    ``O(m^2 + n m)`` memory, for the exact release model on small and medium networks."""
    m = schedule.m
    check_needs([Need(f"the exact message map of a schedule on {m} agents", 8 * m * m * 3)],
                advice="use fewer agents", field="m")
    msgs = _round_messages(schedule) if schedule.kind == "rounds" else _pair_messages(schedule)
    if not msgs:
        return ScheduleMessages(np.zeros((0, m)), *(np.zeros(0, dtype=np.int64),) * 3)
    rows, snd, rcv, stp = zip(*msgs, strict=True)
    return ScheduleMessages(np.stack(rows), np.array(snd), np.array(rcv), np.array(stp))


def expected_pair_matrix(P: object) -> np.ndarray:
    """``E[W]`` of one tick of randomized pairwise gossip with neighbour probabilities ``P``
    (dense; the ticking agent is uniform): ``(1/m) sum_ij P_ij W_ij``."""
    Pd = P.toarray() if sp.issparse(P) else np.asarray(P, dtype=float)
    m = Pd.shape[0]
    S = Pd + Pd.T
    return np.eye(m) - (np.diag(S.sum(axis=1)) - S) / (2.0 * m)


def second_moment_rate(P: object) -> float:
    """Spectral radius of ``Y -> E[W Y W^T]`` on ``{Y : Y 1 = 0, 1^T Y = 0}`` (dense, small ``m``).

    With ``U`` an orthonormal basis of ``1^perp`` every ``W_ij`` maps ``1^perp`` to itself, so the
    operator restricted there is ``sum_ij (P_ij / m) (U^T W_ij U) kron (U^T W_ij U)``.
    """
    Pd = P.toarray() if sp.issparse(P) else np.asarray(P, dtype=float)
    m = Pd.shape[0]
    if m > 40:
        raise ConfigError(f"second_moment_rate is dense in (m - 1)^2 = {(m - 1) ** 2} dimensions; "
                          f"allowed m <= 40, got {m}", field="P")
    Q, _ = np.linalg.qr(np.column_stack([np.ones(m), np.eye(m)[:, : m - 1]]))
    U = Q[:, 1:]
    M = np.zeros(((m - 1) ** 2,) * 2)
    for i, j in zip(*np.nonzero(Pd), strict=True):
        v = U[i] - U[j]
        R = np.eye(m - 1) - 0.5 * np.outer(v, v)
        M += (Pd[i, j] / m) * np.kron(R, R)
    return float(np.max(np.abs(np.linalg.eigvals(M))))
