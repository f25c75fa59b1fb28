"""Exact pairwise leakage of one observer's linear Gaussian release to every target, at scale
(docs/network-dp.md, Section 6).

A producer (a protocol's home) gives, per observer, its view as a
:class:`~dpgossip.privacy.linear_release.LinearGaussianRelease` ``O = J x + B z`` restricted to the agents
that can reach it (its :class:`Ball`: a target outside has a zero column, ``mu = 0`` exactly), with
the covariance ``Sigma = B B^T`` computed without ``B`` where the producer can, and ``B`` built on
demand.  :func:`release_leakage` then whitens every target at once:

* when LAPACK's reciprocal condition estimate of ``Sigma`` is at least ``min_rcond``,
  ``Sigma = L L^T`` (Cholesky) and ``C = L^{-1} J``: ``mu_u^2 = Delta^2 ||C_u||^2`` for a target with
  one input, ``||C_u s||^2`` maximised over the box ``|s_i| <= Delta`` for several
  (:func:`~dpgossip.privacy.linear_audit.box_maximum`).  ``Sigma`` is then positive definite, so no
  column leaves the support;
* otherwise (noiseless agents, a singular view) :func:`~dpgossip.privacy.linear_audit.whiten` of the
  explicit ``J`` and ``B``: the rank and support rule of :mod:`~dpgossip.privacy.linear_audit`.

:func:`gaussian_epsilons` solves the exact ``epsilon(delta)`` of a Gaussian mechanism for an array of
``mu`` at once.  :mod:`dpgossip.privacy.allpairs_run` streams observers in chunks through a producer.
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
from dpgossip.privacy.linear_audit import LinearAuditSettings, PairLeakage, box_maximum, whiten
from dpgossip.privacy.linear_release import LinearGaussianRelease
from dpgossip.topology.network import Network

__all__ = ["ObserverLeakage", "Ball", "ball_of", "release_leakage", "whiten_covariance",
           "gaussian_epsilons", "hops_within", "MIN_RCOND"]

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
    """``"cholesky"``, ``"svd"`` (ill-conditioned ``Sigma``), or a producer's own (e.g.
    ``"linear_audit"`` for a view audited by :func:`~dpgossip.privacy.linear_audit.audit_release`)."""

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


def whiten_covariance(release: LinearGaussianRelease, settings: LinearAuditSettings,
                      min_rcond: float) -> tuple[np.ndarray, np.ndarray, str]:
    """``C`` with ``mu^2 = ||C s||^2``, the columns outside the support, and the method used
    (module docstring): Cholesky of ``Sigma`` when well conditioned, else the SVD of ``B``."""
    J = release.J
    Sigma = release.noise_covariance()
    L, info = la.lapack.dpotrf(Sigma, lower=1)
    if info == 0:
        anorm = float(np.max(np.sum(np.abs(Sigma), axis=0)))
        rcond, _ = la.lapack.dpocon(L, anorm, uplo="L")
        if rcond >= min_rcond:
            C = la.solve_triangular(L, J, lower=True, check_finite=False)
            return C, np.zeros(J.shape[1], dtype=bool), "cholesky"
    white = whiten(J, release.noise_factor(), rank_rtol=settings.rank_rtol,
                   range_rtol=settings.range_rtol)
    return white.C, white.outside, "svd"


def _per_target(C: np.ndarray, outside: np.ndarray, columns: np.ndarray,
                settings: LinearAuditSettings) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``mu``, ``mu_upper`` and ``exact`` of each target (its ``columns``) from the whitened ``C``:
    ``Delta ||c_u||`` for one column, the box maximum for several."""
    n = columns.shape[0]
    if columns.shape[1] == 1:
        mu2 = settings.sensitivity ** 2 * np.einsum("ij,ij->j", C, C)
        mu2[outside] = np.inf
        mu = np.sqrt(mu2)[columns[:, 0]]
        return mu, mu.copy(), np.ones(n, dtype=bool)
    lo, up, exact = np.empty(n), np.empty(n), np.ones(n, dtype=bool)
    for i in range(n):
        cols = columns[i]
        if np.any(outside[cols]):
            lo[i] = up[i] = np.inf
            continue
        Cu = C[:, cols]
        box = box_maximum(Cu.T @ Cu, settings.sensitivity,
                          exhaustive_up_to=settings.exhaustive_up_to, restarts=settings.restarts,
                          seed=settings.seed)
        lo[i], up[i], exact[i] = box.lower, box.upper, box.exact
    return np.sqrt(np.maximum(lo, 0.0)), np.sqrt(np.maximum(up, 0.0)), exact


def release_leakage(observer: int, release: LinearGaussianRelease, hops: np.ndarray,
                    settings: LinearAuditSettings, *, min_rcond: float = MIN_RCOND) -> ObserverLeakage:
    """Exact leakage of every target of ``release`` to ``observer`` (module docstring).

    Parameters
    ----------
    observer : int
        The observer (a single agent), for the rows.
    release : LinearGaussianRelease
        Its view, restricted to the targets that can leak to it; ``covariance`` given for the Cholesky
        path (without it, the SVD of ``B``).
    hops : ndarray
        Graph distance of each of ``release.targets`` from the observer.
    settings : LinearAuditSettings
        Sensitivity, tolerances and box-maximum settings (``orders`` and ``delta`` are used later).
    min_rcond : float
        Cholesky path when the reciprocal condition estimate of ``Sigma`` is at least this.
    """
    check_number(min_rcond, "min_rcond", low=0.0, high=1.0)
    if release.covariance is None:
        white = whiten(release.J, release.noise_factor(), rank_rtol=settings.rank_rtol,
                       range_rtol=settings.range_rtol)
        C, outside, method = white.C, white.outside, "svd"
    else:
        C, outside, method = whiten_covariance(release, settings, min_rcond)
    mu, up, exact = _per_target(C, outside, release.columns, settings)
    return ObserverLeakage(observer=int(observer), targets=release.targets,
                           hops=np.asarray(hops, dtype=np.int64), mu=mu, mu_upper=up, exact=exact,
                           method=method)


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
