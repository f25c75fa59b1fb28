r"""Per-instance audit of the private power method (:mod:`dpgossip.protocols.ppm.central`), against its
guarantee.

What the curator (or the federated server, which sees the same sums) releases at iteration ``l`` is
``Y_l = A V_{l-1} + G_l`` with ``A = X^T X``, ``V_{l-1}`` the previous orthonormalised iterate (public)
and ``G_l ~ N(0, s_l^2 I)``, ``s_l = Delta_l sigma``. **Given the released trajectory**
``V_0, ..., V_{L-1}``, the releases of ``X`` and of a neighbour ``X'`` (row ``x`` replaced by ``x'``) are
Gaussians with the same covariance and means ``A V_{l-1}`` and ``A' V_{l-1}``: a Gaussian mechanism
with ::

    mu^2(x, x') = sum_l ||C V_{l-1}||_F^2 / s_l^2,        C = x' x'^T - x x^T,
                = ||x'||^2 x'^T P x' + ||x||^2 x^T P x - 2 (x . x') (x'^T P x),
    P = sum_l V_{l-1} V_{l-1}^T / s_l^2

(expand ``C V = x' (V^T x')^T - x (V^T x)^T``). :func:`audit_ppm` maximises ``mu`` over every row of
``X`` and every allowed ``x'`` (``bounded``: ``||x'|| <= 1`` and ``||x' - x|| <= 1``; ``replace-one``:
``||x'|| <= 1``): every row is screened at its starts (``-x``, plus and minus every eigenvector of ``P``,
random directions), and the ``rows`` best are climbed by projected gradient ascent from each start.

**Element adjacency** (Nicolas et al.'s Eq. (7), ``neighbours = "element"``): ``A' = A + C`` for any symmetric
``C`` with ``sqrt(sum_i ||C_i:||_1^2) <= 1``. Then
``mu^2(C) = sum_l ||C V_{l-1}||_F^2 / s_l^2 = sum_i C_i: P C_i:^T``, and the supremum is **exact**:
``mu^2 = max_j P_jj``. Upper bound: for a row ``c`` with ``||c||_1 = a``,
``c P c^T <= a^2 max_j P_jj`` (a convex function on the l1 ball of radius ``a`` peaks at a vertex
``+-a e_j``), and ``sum_i a_i^2 <= 1``. Attained by the symmetric ``C = e_j e_j^T`` (one diagonal entry of
``A`` moved by 1). The guarantee's ``Delta_l = max_j ||(V_{l-1})_j:||`` (improved; the prior
``sqrt(p) max |V|`` is larger) gives ``sum_l Delta_l^2 / s_l^2 >= max_j P_jj``: the audit cannot exceed
it.

**What the value means.** It is the leakage *along the realised trajectory*: the exact ``mu`` of the
releases when the iterates are held at the ones this run produced, maximised by a search over
neighbours, so a per-instance lower estimate. The guarantee (:mod:`dpgossip.privacy.accountant`) bounds
the supremum over every trajectory and neighbour: ``mu <= sqrt(sum_l (Delta_l / s_l)^2) = sqrt(L) /
sigma`` whenever ``Delta_l`` bounds ``||C V_{l-1}||_F`` for the adjacency audited, so the audit can
never exceed it; when it does, one of them is wrong (``tests/protocols/ppm/test_audit.py`` checks it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpgossip.data.partition import PartitionedData
from dpgossip.errors import ConfigError, check_int, check_number
from dpgossip.privacy.mechanism import gaussian_mechanism_epsilon
from dpgossip.privacy.neighbours import NEIGHBOUR_KINDS, project
from dpgossip.protocols.ppm.central import PpmResult

__all__ = ["PpmAudit", "audit_ppm", "trajectory_metric", "replacement_mu2", "MEANING", "ELEMENT_MEANING"]

ELEMENT_MEANING = ("exact per-instance value under Nicolas et al.'s element adjacency: the supremum "
                   "over every change C of A in Eq. (7)'s ball of the releases' mu along this run's "
                   "realised iterates (C = e_j e_j^T, j = row); the guarantee bounds every trajectory")
MEANING = ("per-instance lower estimate: the exact mu of the releases along this run's realised iterates, "
           "maximised over neighbours by a search; the guarantee bounds every trajectory")


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class PpmAudit:
    """The worst neighbour found for one run and its Gaussian-mechanism numbers."""

    mu: float
    """Mahalanobis norm of the worst neighbour found (along the realised trajectory)."""
    epsilon: float
    """Exact epsilon at :attr:`delta` of a Gaussian mechanism with :attr:`mu`."""
    delta: float
    row: int
    """Row of ``X`` replaced."""
    x_new: np.ndarray
    guarantee_mu: float
    """``sqrt(sum_l (Delta_l / s_l)^2)``: the ``mu`` the run's noise guarantees for its adjacency."""
    neighbours: str
    meaning: str = MEANING

    def to_row(self) -> dict[str, object]:
        """Tidy row."""
        return {"mu": self.mu, "epsilon": self.epsilon, "delta": self.delta, "row": self.row,
                "guarantee_mu": self.guarantee_mu, "neighbours": self.neighbours,
                "meaning": self.meaning}


def trajectory_metric(result: PpmResult) -> np.ndarray:
    """``P = sum_l V_{l-1} V_{l-1}^T / s_l^2`` of a run (``d x d``); ``ConfigError`` without noise."""
    s = np.asarray(result.noise_std, dtype=float)
    if np.any(s <= 0):
        raise ConfigError("result: a run without noise (noise_multiplier = 0) has no finite leakage",
                          field="result")
    V = result.iterates[:-1]  # V_0 .. V_{L-1}
    return np.einsum("lip,ljp,l->ij", V, V, 1.0 / s**2)


def replacement_mu2(P: np.ndarray, x: np.ndarray, x_new: np.ndarray) -> float:
    """``mu^2(x, x')`` of the module docstring for the metric ``P``."""
    return float((x_new @ x_new) * (x_new @ P @ x_new) + (x @ x) * (x @ P @ x)
                 - 2.0 * (x @ x_new) * (x_new @ P @ x))


def _gradient(P: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    Py, Px = P @ y, P @ x
    return 2.0 * y * (y @ Py) + 2.0 * (y @ y) * Py - 2.0 * x * (y @ Px) - 2.0 * (x @ y) * Px


def _climb(P: np.ndarray, x: np.ndarray, y: np.ndarray, kind: str, steps: int) -> tuple[float, np.ndarray]:
    """Projected gradient ascent of ``mu^2(x, .)`` from ``y`` with a backtracking step."""
    y = project(x, y, kind)
    f, step = replacement_mu2(P, x, y), 0.5
    for _ in range(steps):
        g = _gradient(P, x, y)
        ng = float(np.linalg.norm(g))
        if ng == 0.0:
            break
        while step > 1e-8:
            z = project(x, y + step * g / ng, kind)
            fz = replacement_mu2(P, x, z)
            if fz > f:
                y, f, step = z, fz, step * 1.5
                break
            step /= 4.0
        else:
            break
    return f, y


def _ball(c: np.ndarray | float, V: np.ndarray) -> np.ndarray:
    """Rows of ``V`` projected onto unit balls centred at the rows of ``c``."""
    R = V - c
    nr = np.linalg.norm(R, axis=-1, keepdims=True)
    return np.where(nr <= 1.0, V, c + R / np.where(nr <= 1.0, 1.0, nr))


def project_batch(X: np.ndarray, Y: np.ndarray, kind: str) -> np.ndarray:
    """:func:`~dpgossip.privacy.neighbours.project` of every row of ``Y`` for the row of ``X`` beside
    it (same formulas, vectorised; the degenerate rim case ``y`` on the axis through ``0`` and ``x``
    falls back to the scalar function)."""
    P0 = _ball(0.0, Y)
    if kind != "bounded":
        return P0
    P1 = _ball(X, Y)
    xx = np.einsum("sd,sd->s", X, X)[:, None]
    H = Y - X / 2
    H = H - np.where(xx > 0, np.einsum("sd,sd->s", H, X)[:, None] / np.where(xx > 0, xx, 1.0), 0.0) * X
    nh = np.linalg.norm(H, axis=1, keepdims=True)
    rim = X / 2 + np.sqrt(np.maximum(1.0 - xx / 4.0, 0.0)) * H / np.where(nh == 0.0, 1.0, nh)
    in0 = np.linalg.norm(P0 - X, axis=1) <= 1.0 + 1e-12
    in1 = np.linalg.norm(P1, axis=1) <= 1.0 + 1e-12
    out = np.where(in0[:, None], P0, np.where(in1[:, None], P1, rim))
    for i in np.flatnonzero(~in0 & ~in1 & (nh[:, 0] == 0.0)):  # y on the axis: measure zero
        out[i] = project(X[i], Y[i], kind)
    return out


def replacement_mu2_batch(P: np.ndarray, X: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """:func:`replacement_mu2` of every pair of rows ``(X[s], Y[s])``."""
    PY, PX = Y @ P, X @ P
    return (np.einsum("sd,sd->s", Y, Y) * np.einsum("sd,sd->s", Y, PY)
            + np.einsum("sd,sd->s", X, X) * np.einsum("sd,sd->s", X, PX)
            - 2.0 * np.einsum("sd,sd->s", X, Y) * np.einsum("sd,sd->s", Y, PX))


def _gradient_batch(P: np.ndarray, X: np.ndarray, Y: np.ndarray) -> np.ndarray:
    PY, PX = Y @ P, X @ P
    dot = lambda A, B: np.einsum("sd,sd->s", A, B)[:, None]  # noqa: E731
    return 2.0 * Y * dot(Y, PY) + 2.0 * dot(Y, Y) * PY - 2.0 * X * dot(Y, PX) - 2.0 * dot(X, Y) * PX


def _climb_batch(P: np.ndarray, X: np.ndarray, Y: np.ndarray, kind: str,
                 steps: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_climb` of every start ``Y[s]`` (for the row ``X[s]``) in lockstep.

    Each start keeps its own state (point, value, step, gradients taken) and follows the scalar
    rule: at most ``steps`` gradients; after a gradient, trial points ``project(y + step g/|g|)``
    with ``step`` divided by 4 until one improves (then ``step *= 1.5`` and a new gradient) or
    ``step <= 1e-8`` (then the start stops); a zero gradient stops it too.
    """
    Y = project_batch(X, Y, kind)
    F = replacement_mu2_batch(P, X, Y)
    n = Y.shape[0]
    step, taken = np.full(n, 0.5), np.zeros(n, dtype=int)
    active, fresh = np.ones(n, dtype=bool), np.ones(n, dtype=bool)
    D = np.zeros_like(Y)
    while active.any():
        g_idx = np.flatnonzero(active & fresh)
        if g_idx.size:
            out = taken[g_idx] >= steps
            G = _gradient_batch(P, X[g_idx], Y[g_idx])
            ng = np.linalg.norm(G, axis=1)
            stop = out | (ng == 0.0)
            active[g_idx[stop]] = False
            keep = g_idx[~stop]
            D[keep] = G[~stop] / ng[~stop, None]
            taken[keep] += 1
            fresh[g_idx] = False
        t_idx = np.flatnonzero(active & (step > 1e-8))
        active[np.flatnonzero(active & (step <= 1e-8))] = False
        if not t_idx.size:
            continue
        Z = project_batch(X[t_idx], Y[t_idx] + step[t_idx, None] * D[t_idx], kind)
        FZ = replacement_mu2_batch(P, X[t_idx], Z)
        up = FZ > F[t_idx]
        win, lose = t_idx[up], t_idx[~up]
        Y[win], F[win], step[win], fresh[win] = Z[up], FZ[up], step[win] * 1.5, True
        step[lose] /= 4.0
    return F, Y


def _element_audit(result: PpmResult, delta: float) -> PpmAudit:
    """The exact worst element neighbour (module docstring): ``mu^2 = max_j P_jj``."""
    P = trajectory_metric(result)
    j = int(np.argmax(np.diag(P)))
    mu = math.sqrt(max(float(P[j, j]), 0.0))
    guarantee = float(math.sqrt(np.sum((result.sensitivities / result.noise_std) ** 2)))
    return PpmAudit(mu=mu, epsilon=gaussian_mechanism_epsilon(mu, delta), delta=delta, row=j,
                    x_new=np.eye(P.shape[0])[j], guarantee_mu=guarantee, neighbours="element",
                    meaning=ELEMENT_MEANING)


def audit_ppm(data_or_X: PartitionedData | np.ndarray, result: PpmResult, *, delta: float = 1e-5,
              neighbours: str = "bounded", rows: int = 16, random: int = 4, steps: int = 60,
              seed: int = 0) -> PpmAudit:
    """The worst neighbour of a run of :func:`~dpgossip.protocols.ppm.central.run_ppm` found by the search of
    the module docstring, and its exact Gaussian-mechanism epsilon.

    Parameters
    ----------
    data_or_X
        The data the run used (rows in the unit ball).
    result
        The run; its realised iterates and noise levels define the audited releases.
    delta
        Epsilon is reported at this delta.
    neighbours
        ``bounded`` (``||x'|| <= 1``, ``||x' - x|| <= 1``), ``replace-one`` (``||x'|| <= 1``), or
        ``element`` (Nicolas et al.'s Eq. (7): exact, no search; ``row`` is then the coordinate
        ``j`` of the worst change ``C = e_j e_j^T`` of ``A`` and ``x_new`` is ``e_j``).
    rows, random, steps, seed
        Rows climbed (those whose best start is highest; every row is screened at its starts), random
        starts per row, ascent steps per start, and the seed of the random starts.

    Returns
    -------
    PpmAudit
        A per-instance lower estimate (:data:`MEANING`); exact for ``element``
        (:data:`ELEMENT_MEANING`).
    """
    X = data_or_X.X if isinstance(data_or_X, PartitionedData) else np.asarray(data_or_X, dtype=float)
    if X.ndim != 2 or X.shape[1] != result.basis.shape[0]:
        raise ConfigError(f"data_or_X must have d = {result.basis.shape[0]} columns (the run's), got "
                          f"shape {X.shape}", field="data_or_X")
    if neighbours not in (*NEIGHBOUR_KINDS, "element"):
        raise ConfigError(f"neighbours must be one of {', '.join(NEIGHBOUR_KINDS)}, element; got "
                          f"{neighbours!r}", field="neighbours")
    delta = check_number(delta, "delta", low=0, high=1, low_open=True, high_open=True)
    if neighbours == "element":
        return _element_audit(result, delta)
    rows, random = check_int(rows, "rows", 1), check_int(random, "random", 0)
    steps = check_int(steps, "steps", 1)
    P = trajectory_metric(result)
    _, E = np.linalg.eigh(P)
    n, d = X.shape
    draws = np.random.default_rng(seed).standard_normal((n, random, d))  # the draws row by row
    raw = np.concatenate([-X[:, None, :], np.broadcast_to(np.concatenate([E.T, -E.T]), (n, 2 * d, d)),
                          draws], axis=1)                      # every row: its starts
    k = raw.shape[1]
    starts = project_batch(np.repeat(X, k, axis=0), raw.reshape(n * k, d), neighbours)
    screen = replacement_mu2_batch(P, np.repeat(X, k, axis=0), starts).reshape(n, k).max(axis=1)
    chosen = np.argsort(-screen, kind="stable")[:rows]         # the rows climbed, best first
    Xc = np.repeat(X[chosen], k, axis=0)
    F, Y = _climb_batch(P, Xc, starts.reshape(n, k, d)[chosen].reshape(-1, d), neighbours, steps)
    i = int(np.argmax(F))                                      # the first of equal maxima, as before
    best = (float(F[i]), int(chosen[i // k]), Y[i])
    mu = math.sqrt(max(best[0], 0.0))
    guarantee = float(math.sqrt(np.sum((result.sensitivities / result.noise_std) ** 2)))
    return PpmAudit(mu=mu, epsilon=gaussian_mechanism_epsilon(mu, delta), delta=delta, row=best[1],
                    x_new=best[2], guarantee_mu=guarantee, neighbours=neighbours)
