"""Exact pairwise leakage of noisy gossip for every observer at once, on large sparse graphs
(docs/network-dp.md, Section 6).

For one observer ``v`` of ``gossip-noisy`` the view is ``O = J x + B z`` (:mod:`dpgossip.protocols.
gossip.linear`), with rows the messages ``y_w^t`` of the senders ``w`` in ``N(v)`` at rounds
``t < T``.  A message ``y_w^t`` depends on agent ``u`` only through walks of length at most ``t`` from
``w`` to ``u``, so every row is supported on the ball ``B_T(v)`` of agents within ``T`` hops of ``v``;
restricted to that ball the propagation ``r_{k+1} = W^T r_k`` is exact for ``k < T``.  Writing
``P_k = E^T W^k`` (``E`` the senders' unit vectors, restricted to the ball) and ``D_v`` the noise
scales with the observer's own set to zero (it knows its noise),

    G_{ab} = P_a D_v^2 P_b^T,        Sigma_{t t'} = sum_{s <= min(t, t')} G_{t-s, t'-s}
                                                  = G_{t t'} + Sigma_{t-1, t'-1},

so the ``(|N(v)| T)^2`` covariance ``Sigma = B B^T`` costs one Gram matrix of ``T |N(v)|`` rows over
the ball, never the ``|N(v)| T x m T`` matrix ``B``.  When LAPACK's reciprocal condition estimate
of ``Sigma`` is at least ``min_rcond``, ``Sigma = L L^T`` (Cholesky) and ``C = L^{-1} J`` whitens
every target column at once: ``mu_u^2 = Delta^2 ||C_u||^2`` (``||C_u s||^2`` maximised over the box
for per-round inputs, as in :func:`~dpgossip.privacy.linear_audit.box_maximum`).  ``Sigma`` is then
positive definite, so no column leaves the support.  Otherwise (noiseless agents, a singular view)
the observer falls back to :func:`~dpgossip.privacy.linear_audit.whiten` of the explicit ``J`` and
``B`` on the ball: the same rank and support rule as :mod:`~dpgossip.privacy.linear_audit`, which
sees the same nonzero columns.  A target more than ``T`` hops away receives no coefficient in any
message: ``mu = 0`` exactly.

``gossip-average`` is audited observer by observer with
:func:`~dpgossip.privacy.linear_audit.audit_gossip` (its Krylov basis; no fast path here).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.linalg as la
import scipy.sparse as sp
from scipy.sparse.csgraph import dijkstra
from scipy.special import log_ndtr, ndtr

from dpgossip.errors import ConfigError, check_number
from dpgossip.privacy.linear_audit import (
    LinearAuditSettings,
    PairLeakage,
    audit_gossip,
    box_maximum,
    whiten,
)
from dpgossip.protocols.gossip.linear import LinearGossip
from dpgossip.topology.network import Network

__all__ = ["ObserverLeakage", "Ball", "ball_of", "observer_leakage", "gaussian_epsilons",
           "hops_within", "MIN_RCOND"]

MIN_RCOND = 1e-6
"""Smallest reciprocal condition estimate (1-norm, LAPACK ``dpocon``) of ``Sigma`` for the Cholesky
path; below it the observer is whitened by the SVD of ``B`` (``linear_audit.whiten``)."""


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class ObserverLeakage:
    """Leakage of every target to one observer, as arrays over :attr:`targets`.

    Targets not listed (more than ``T`` hops away) have ``mu = 0`` exactly.
    """

    observer: int
    targets: np.ndarray
    """Agents within ``T`` hops of the observer, the observer excluded, increasing (int64)."""
    hops: np.ndarray
    """Graph distance of each target from the observer (int64)."""
    mu: np.ndarray
    """Exact ``mu`` (the attained lower end for per-round inputs beyond exhaustive enumeration);
    ``inf`` where the target leaves the support."""
    mu_upper: np.ndarray
    """Sound upper end (equal to :attr:`mu` where :attr:`exact`)."""
    exact: np.ndarray
    """Boolean per target."""
    method: str
    """``"cholesky"``, ``"svd"`` (ill-conditioned ``Sigma``) or ``"linear_audit"`` (gossip-average)."""

    def to_row(self) -> dict[str, object]:
        """Summary row of the observer: observer, method, targets in reach, largest ``mu``."""
        top = float(np.max(self.mu_upper)) if self.mu_upper.size else 0.0
        return {"observer": self.observer, "method": self.method,
                "targets_in_reach": int(self.targets.size), "max_mu": top}

    def pairs(self, settings: LinearAuditSettings) -> list[PairLeakage]:
        """One :class:`~dpgossip.privacy.linear_audit.PairLeakage` per listed target (RDP and
        ``epsilon`` at :attr:`mu_upper`, as ``linear_audit`` reports them)."""
        eps = gaussian_epsilons(self.mu_upper, settings.delta)
        return [PairLeakage(observer=str(self.observer), target=int(u), hops=int(h), mu=float(mu),
                            mu_upper=float(up), exact=bool(ex), method=self.method,
                            orders=settings.orders,
                            rdp=tuple(a * float(up) ** 2 / 2 for a in settings.orders),
                            delta=settings.delta, epsilon=float(e))
                for u, h, mu, up, ex, e in zip(self.targets, self.hops, self.mu, self.mu_upper,
                                                self.exact, eps, strict=True)]


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class Ball:
    """The agents within ``reach`` hops of an observer and ``W`` restricted to them."""

    observer: int
    nodes: np.ndarray
    """Agents of the ball, increasing (int64)."""
    hops: np.ndarray
    """Their distance from the observer."""
    W: sp.csr_array
    """``W[nodes][:, nodes]``."""


def hops_within(adjacency: sp.csr_array, observers: np.ndarray, reach: float) -> np.ndarray:
    """Hop distances from each observer (rows) to every agent, ``inf`` beyond ``reach`` (breadth-first
    search stopped at ``reach``; ``reach = inf``: the whole graph)."""
    limit = np.inf if math.isinf(reach) else reach + 0.5
    return dijkstra(adjacency, directed=False, unweighted=True, indices=observers, limit=limit)


def ball_of(network: Network, v: int, dist: np.ndarray, reach: int) -> Ball:
    """The :class:`Ball` of observer ``v`` from its distance row ``dist`` (:func:`hops_within`).

    ``W[nodes][:, nodes]`` is cut from the CSR arrays directly (rows of the ball, columns renumbered
    through a position table), keeping each row's column order.
    """
    nodes = np.flatnonzero(dist <= reach)
    W = network.W
    starts, ends = W.indptr[nodes], W.indptr[nodes + 1]
    lengths = ends - starts
    take = np.repeat(starts - np.concatenate([[0], np.cumsum(lengths)[:-1]]), lengths) + \
        np.arange(int(lengths.sum()))
    pos = np.full(network.m, -1, dtype=np.int64)
    pos[nodes] = np.arange(nodes.size)
    cols = pos[W.indices[take]]
    keep = cols >= 0
    row_of = np.repeat(np.arange(nodes.size), lengths)[keep]
    indptr = np.concatenate([[0], np.cumsum(np.bincount(row_of, minlength=nodes.size))])
    sub = sp.csr_array((W.data[take][keep], cols[keep], indptr), shape=(nodes.size, nodes.size))
    return Ball(observer=int(v), nodes=nodes, hops=dist[nodes].astype(np.int64), W=sub)


def _propagate(ball: Ball, senders: np.ndarray, rounds: int) -> np.ndarray:
    """``P[k] = E^T W^k`` on the ball, ``k < rounds``, shape ``(rounds, |senders|, |ball|)``."""
    Wt = ball.W.T
    cur = np.zeros((ball.nodes.size, senders.size))
    cur[senders, np.arange(senders.size)] = 1.0
    out = np.empty((rounds, senders.size, ball.nodes.size))
    for k in range(rounds):
        out[k] = cur.T
        if k + 1 < rounds:
            cur = Wt @ cur
    return out


def _data_map(spec: LinearGossip, P: np.ndarray) -> np.ndarray:
    """``J`` on the ball, rows ``(t, w)``; columns ``(s, u)`` for per-round inputs (``s``-major),
    else ``u``: ``sum_{k <= t} P_k`` (fixed), ``P_t`` (once), ``P_{t-s}`` (per-round)."""
    T, n_s, n = P.shape
    if spec.inputs == "fixed":
        J = P.copy()
        for t in range(1, T):
            J[t] += J[t - 1]
        return J.reshape(T * n_s, n)
    if spec.inputs == "once":
        return P.reshape(T * n_s, n)
    J = np.zeros((T * n_s, T * n))
    for t in range(T):
        for s in range(t + 1):
            J[t * n_s:(t + 1) * n_s, s * n:(s + 1) * n] = P[t - s]
    return J


def _covariance(P: np.ndarray, scales: np.ndarray) -> np.ndarray:
    """``Sigma = B B^T`` by the recursion ``Sigma_{t t'} = G_{t t'} + Sigma_{t-1, t'-1}`` (module
    docstring), ``G = (P D) (P D)^T``."""
    T, n_s, n = P.shape
    R = (P * scales).reshape(T * n_s, n)
    G = (R @ R.T).reshape(T, n_s, T, n_s)
    S = G.copy()
    for t in range(1, T):
        S[t, :, 1:, :] += S[t - 1, :, :-1, :]
    return S.reshape(T * n_s, T * n_s)


def _noise_map(P: np.ndarray, scales: np.ndarray) -> np.ndarray:
    """Explicit ``B`` on the ball (rows ``(t, w)``, columns ``(s, u)``), for the SVD fallback."""
    T, n_s, n = P.shape
    keep = np.flatnonzero(scales > 0)
    B = np.zeros((T * n_s, T * keep.size))
    for t in range(T):
        for s in range(t + 1):
            B[t * n_s:(t + 1) * n_s, s * keep.size:(s + 1) * keep.size] = P[t - s][:, keep] * scales[keep]
    return B


def _whitened(J: np.ndarray, P: np.ndarray, scales: np.ndarray, settings: LinearAuditSettings,
              min_rcond: float) -> tuple[np.ndarray, np.ndarray, str]:
    """``C`` with ``mu^2 = ||C s||^2``, the columns outside the support, and the method used."""
    Sigma = _covariance(P, scales)
    L, info = la.lapack.dpotrf(Sigma, lower=1)
    if info == 0:
        anorm = float(np.max(np.sum(np.abs(Sigma), axis=0)))
        rcond, _ = la.lapack.dpocon(L, anorm, uplo="L")
        if rcond >= min_rcond:
            C = la.solve_triangular(L, J, lower=True, check_finite=False)
            return C, np.zeros(J.shape[1], dtype=bool), "cholesky"
    white = whiten(J, _noise_map(P, scales), rank_rtol=settings.rank_rtol,
                   range_rtol=settings.range_rtol)
    return white.C, white.outside, "svd"


def _per_target(C: np.ndarray, outside: np.ndarray, n: int, spec: LinearGossip,
                settings: LinearAuditSettings) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``mu``, ``mu_upper`` and ``exact`` of the ``n`` agents of the ball from the whitened columns."""
    b2 = settings.sensitivity ** 2
    if spec.inputs != "per-round":
        mu2 = b2 * np.einsum("ij,ij->j", C, C)
        mu2[outside] = np.inf
        mu = np.sqrt(mu2)
        return mu, mu.copy(), np.ones(n, dtype=bool)
    lo, up, exact = np.empty(n), np.empty(n), np.ones(n, dtype=bool)
    for i in range(n):
        cols = np.arange(spec.rounds) * n + i
        if np.any(outside[cols]):
            lo[i] = up[i] = np.inf
            continue
        Cu = C[:, cols]
        box = box_maximum(Cu.T @ Cu, settings.sensitivity,
                          exhaustive_up_to=settings.exhaustive_up_to, restarts=settings.restarts,
                          seed=settings.seed)
        lo[i], up[i], exact[i] = box.lower, box.upper, box.exact
    return np.sqrt(np.maximum(lo, 0.0)), np.sqrt(np.maximum(up, 0.0)), exact


def observer_leakage(network: Network, spec: LinearGossip, v: int, dist: np.ndarray,
                     settings: LinearAuditSettings, *, min_rcond: float = MIN_RCOND) -> ObserverLeakage:
    """Exact leakage of every target within ``T`` hops to observer ``v`` (module docstring).

    Parameters
    ----------
    network, spec : Network, LinearGossip
        The graph and the protocol (``gossip-noisy`` has the fast path; ``gossip-average`` is audited
        by :func:`~dpgossip.privacy.linear_audit.audit_gossip`).
    v : int
        The observer (a single agent).
    dist : ndarray
        Hop distances from ``v`` to every agent, exact at least up to ``T`` (:func:`hops_within`).
    settings : LinearAuditSettings
        Sensitivity, tolerances and box-maximum settings (``orders`` and ``delta`` are used later).
    min_rcond : float
        Cholesky path when the reciprocal condition estimate of ``Sigma`` is at least this.
    """
    check_number(min_rcond, "min_rcond", low=0.0, high=1.0)
    if spec.protocol != "gossip-noisy":
        return _via_linear_audit(network, spec, v, dist, settings)
    ball = ball_of(network, v, dist, spec.rounds)
    local_v = int(np.searchsorted(ball.nodes, v))
    senders = np.searchsorted(ball.nodes, network.neighbours[v])
    P = _propagate(ball, senders, spec.rounds)
    scales = spec.noise_scales(network.m)[ball.nodes]
    scales[local_v] = 0.0
    J = _data_map(spec, P)
    own = np.arange(spec.data_rounds) * ball.nodes.size + local_v
    J[:, own] = 0.0  # the observer knows its own inputs: conditioning removes their columns
    C, outside, method = _whitened(J, P, scales, settings, min_rcond)
    mu, up, exact = _per_target(C, outside, ball.nodes.size, spec, settings)
    keep = np.arange(ball.nodes.size) != local_v
    return ObserverLeakage(observer=int(v), targets=ball.nodes[keep], hops=ball.hops[keep],
                           mu=mu[keep], mu_upper=up[keep], exact=exact[keep], method=method)


def _via_linear_audit(network: Network, spec: LinearGossip, v: int, dist: np.ndarray,
                      settings: LinearAuditSettings) -> ObserverLeakage:
    reach = np.flatnonzero((dist <= spec.rounds) & (np.arange(network.m) != v))
    rows = audit_gossip(network, spec, v, settings, targets=reach.tolist())
    return ObserverLeakage(observer=int(v), targets=reach, hops=dist[reach].astype(np.int64),
                           mu=np.array([r.mu for r in rows]), mu_upper=np.array([r.mu_upper for r in rows]),
                           exact=np.array([r.exact for r in rows], dtype=bool), method="linear_audit")


def gaussian_epsilons(mu: np.ndarray, delta: float, *, iterations: int = 200) -> np.ndarray:
    """Vectorised :func:`~dpgossip.privacy.mechanism.gaussian_mechanism_epsilon`: for each ``mu`` the
    root ``epsilon >= 0`` of ``f(eps) = Phi(mu/2 - eps/mu) - e^eps Phi(-mu/2 - eps/mu) = delta``
    (``0`` when ``mu = 0`` or ``f(0) <= delta``, ``inf`` when ``mu = inf``).

    Safeguarded Newton: ``f`` decreases with ``f'(eps) = -e^eps Phi(-mu/2 - eps/mu)`` (the terms in
    ``phi`` cancel since ``phi(mu/2 - eps/mu) = e^eps phi(-mu/2 - eps/mu)``), a bracket
    ``f(lo) > delta >= f(hi)`` is kept and a step leaving it is replaced by bisection; an entry stops
    when its step or its bracket is at most ``4 eps_mach`` relative (``1e-15`` absolute).
    """
    mu = np.asarray(mu, dtype=float)
    d = check_number(delta, "delta", low=0, high=1, low_open=True, high_open=True)
    if np.any(mu < 0) or np.any(np.isnan(mu)):
        raise ConfigError("mu must be >= 0 (inf allowed)", field="mu")
    out = np.where(np.isinf(mu), np.inf, 0.0)
    todo = np.flatnonzero(np.isfinite(mu) & (mu > 0))
    todo = todo[_delta(np.zeros(todo.size), mu[todo])[0] > d]
    m = mu[todo]
    lo, hi = np.zeros(m.size), np.maximum(1.0, m * m)
    while np.any(high := _delta(hi, m)[0] > d):
        hi[high] *= 2.0
    out[todo] = _newton(m, d, lo, hi, iterations)
    return out


def _newton(m: np.ndarray, d: float, lo: np.ndarray, hi: np.ndarray, iterations: int) -> np.ndarray:
    x = 0.5 * (lo + hi)
    active = np.arange(m.size)
    tiny = 4 * np.finfo(float).eps
    for _ in range(iterations):
        if active.size == 0:
            break
        xa, ma = x[active], m[active]
        f, slope = _delta(xa, ma)
        above = f > d
        lo[active] = np.where(above, xa, lo[active])
        hi[active] = np.where(above, hi[active], xa)
        with np.errstate(over="ignore", divide="ignore"):
            step = (f - d) / slope
        new = xa + step
        outside = ~((new > lo[active]) & (new < hi[active]))
        new = np.where(outside, 0.5 * (lo[active] + hi[active]), new)
        x[active] = new
        tol = np.maximum(1e-15, tiny * new)
        done = (np.abs(new - xa) <= tol) | (hi[active] - lo[active] <= tol)
        active = active[~done]
    return x


def _delta(eps: np.ndarray, mu: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``delta(eps)`` of the Gaussian mechanism, vectorised (as
    :func:`~dpgossip.privacy.mechanism.gaussian_mechanism_delta`), and ``-delta'(eps) =
    e^eps Phi(-mu/2 - eps/mu)``."""
    a, b = mu / 2 - eps / mu, -mu / 2 - eps / mu
    e = np.exp(eps + log_ndtr(b))
    return np.maximum(ndtr(a) - e, 0.0), e
