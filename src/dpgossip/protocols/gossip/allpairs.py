"""Every observer against every target for noisy gossip, on large sparse graphs (docs/network-dp.md,
Section 6): the observer's view as a linear Gaussian release on its ball, for the generic all-pairs
run of :mod:`dpgossip.privacy.allpairs_run`.

For one observer ``v`` of ``gossip-noisy`` the view is ``O = J x + B z``
(:mod:`dpgossip.protocols.gossip.linear`), with rows the messages ``y_w^t`` of the senders ``w`` in
``N(v)`` at rounds ``t < T``.  A message ``y_w^t`` depends on agent ``u`` only through walks of length
at most ``t`` from ``w`` to ``u``, so every row is supported on the ball ``B_T(v)`` of agents within
``T`` hops of ``v``; restricted to that ball the propagation ``r_{k+1} = W^T r_k`` is exact for
``k < T``.  Writing ``P_k = E^T W^k`` (``E`` the senders' unit vectors, restricted to the ball) and
``D_v`` the noise scales with the observer's own set to zero (it knows its noise),

    G_{ab} = P_a D_v^2 P_b^T,        Sigma_{t t'} = sum_{s <= min(t, t')} G_{t-s, t'-s}
                                                  = G_{t t'} + Sigma_{t-1, t'-1},

so the ``(|N(v)| T)^2`` covariance ``Sigma = B B^T`` costs one Gram matrix of ``T |N(v)|`` rows over
the ball, never the ``|N(v)| T x m T`` matrix ``B``, which the release builds only when the Cholesky
path fails (:func:`~dpgossip.privacy.linear_allpairs.release_leakage`).  A target more than ``T`` hops
away receives no coefficient in any message: ``mu = 0`` exactly.

``gossip-average`` is audited observer by observer with
:func:`~dpgossip.protocols.gossip.audit.audit_gossip` (its Krylov basis; no fast path here).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import numpy as np

from dpgossip.errors import check_number
from dpgossip.privacy import allpairs_run
from dpgossip.privacy.allpairs_run import AllPairsRun, AllPairsSettings, PairTable
from dpgossip.privacy.linear_allpairs import (
    MIN_RCOND,
    Ball,
    ObserverLeakage,
    ball_of,
    release_leakage,
)
from dpgossip.privacy.linear_audit import LinearAuditSettings
from dpgossip.privacy.linear_release import LinearGaussianRelease
from dpgossip.protocols.gossip.audit import audit_gossip
from dpgossip.protocols.gossip.linear import LinearGossip
from dpgossip.topology.network import Network

__all__ = ["GossipReleases", "ball_release", "observer_leakage", "chunk_table", "iter_all_pairs",
           "run_all_pairs"]


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


@dataclass(frozen=True, slots=True)
class _NoiseMap:
    """Explicit ``B`` on the ball (rows ``(t, w)``, columns ``(s, u)``), built when called (the SVD
    fallback)."""

    P: np.ndarray
    scales: np.ndarray

    def __call__(self) -> np.ndarray:
        T, n_s, _ = self.P.shape
        keep = np.flatnonzero(self.scales > 0)
        B = np.zeros((T * n_s, T * keep.size))
        for t in range(T):
            for s in range(t + 1):
                B[t * n_s:(t + 1) * n_s, s * keep.size:(s + 1) * keep.size] = \
                    self.P[t - s][:, keep] * self.scales[keep]
        return B


def ball_release(network: Network, spec: LinearGossip, v: int, ball: Ball) -> LinearGaussianRelease:
    """The ``gossip-noisy`` view of observer ``v`` on its ball (module docstring): ``J`` with the
    observer's own input columns zeroed (it knows them), the covariance by the recursion, ``B`` on
    demand; targets the other agents of the ball, each owning one column (``T`` for per-round
    inputs, ``s``-major)."""
    local_v = int(np.searchsorted(ball.nodes, v))
    senders = np.searchsorted(ball.nodes, network.neighbours[v])
    P = _propagate(ball, senders, spec.rounds)
    scales = spec.noise_scales(network.m)[ball.nodes]
    scales[local_v] = 0.0
    J = _data_map(spec, P)
    n = ball.nodes.size
    own = np.arange(spec.data_rounds) * n + local_v
    J[:, own] = 0.0  # the observer knows its own inputs: conditioning removes their columns
    local = np.flatnonzero(np.arange(n) != local_v)
    columns = local[:, None] + n * np.arange(spec.data_rounds)[None, :]
    return LinearGaussianRelease(J=J, B=_NoiseMap(P, scales), covariance=_covariance(P, scales),
                                 targets=ball.nodes[local], columns=columns, label=str(int(v)))


def observer_leakage(network: Network, spec: LinearGossip, v: int, dist: np.ndarray,
                     settings: LinearAuditSettings, *, min_rcond: float = MIN_RCOND) -> ObserverLeakage:
    """Exact leakage of every target within ``T`` hops to observer ``v`` (module docstring).

    Parameters
    ----------
    network, spec : Network, LinearGossip
        The graph and the protocol (``gossip-noisy`` has the fast path; ``gossip-average`` is audited
        by :func:`~dpgossip.protocols.gossip.audit.audit_gossip`).
    v : int
        The observer (a single agent).
    dist : ndarray
        Hop distances from ``v`` to every agent, exact at least up to ``T``
        (:func:`~dpgossip.privacy.linear_allpairs.hops_within`).
    settings : LinearAuditSettings
        Sensitivity, tolerances and box-maximum settings (``orders`` and ``delta`` are used later).
    min_rcond : float
        Cholesky path when the reciprocal condition estimate of ``Sigma`` is at least this.
    """
    check_number(min_rcond, "min_rcond", low=0.0, high=1.0)
    if spec.protocol != "gossip-noisy":
        return _via_linear_audit(network, spec, v, dist, settings)
    ball = ball_of(network, v, dist, spec.rounds)
    release = ball_release(network, spec, v, ball)
    hops = ball.hops[ball.nodes != v]
    return release_leakage(v, release, hops, settings, min_rcond=min_rcond)


def _via_linear_audit(network: Network, spec: LinearGossip, v: int, dist: np.ndarray,
                      settings: LinearAuditSettings) -> ObserverLeakage:
    reach = np.flatnonzero((dist <= spec.rounds) & (np.arange(network.m) != v))
    rows = audit_gossip(network, spec, v, settings, targets=reach.tolist())
    return ObserverLeakage(observer=int(v), targets=reach, hops=dist[reach].astype(np.int64),
                           mu=np.array([r.mu for r in rows]), mu_upper=np.array([r.mu_upper for r in rows]),
                           exact=np.array([r.exact for r in rows], dtype=bool), method="linear_audit")


@dataclass(frozen=True, slots=True)
class GossipReleases:
    """The observers' releases of a gossip protocol, for :mod:`dpgossip.privacy.allpairs_run`
    (:class:`~dpgossip.privacy.allpairs_run.ObserverReleases`)."""

    spec: LinearGossip

    @property
    def reach(self) -> int:
        """``T``: a message of round ``t < T`` carries data from at most ``t`` hops away."""
        return self.spec.rounds

    def observer_leakage(self, network: Network, v: int, dist: np.ndarray, settings: LinearAuditSettings,
                         min_rcond: float) -> ObserverLeakage:
        """:func:`observer_leakage` of :attr:`spec`."""
        return observer_leakage(network, self.spec, v, dist, settings, min_rcond=min_rcond)

    def to_row(self) -> dict[str, object]:
        """protocol, rounds, sigma (a list when per agent), inputs: the manifest's entry."""
        spec = self.spec
        sigma = list(spec.sigma) if isinstance(spec.sigma, tuple) else spec.sigma
        return {"protocol": spec.protocol, "rounds": spec.rounds, "sigma": sigma, "inputs": spec.inputs}


def chunk_table(network: Network, spec: LinearGossip, observers: np.ndarray,
                settings: AllPairsSettings) -> PairTable:
    """:func:`~dpgossip.privacy.allpairs_run.chunk_table` of the protocol ``spec``."""
    return allpairs_run.chunk_table(network, GossipReleases(spec), observers, settings)


def iter_all_pairs(network: Network, spec: LinearGossip, settings: AllPairsSettings | None = None,
                   observers: Iterable[int] | None = None, *,
                   scheduler: str | None = None) -> Iterator[tuple[int, PairTable]]:
    """:func:`~dpgossip.privacy.allpairs_run.iter_all_pairs` of the protocol ``spec``."""
    return allpairs_run.iter_all_pairs(network, GossipReleases(spec), settings, observers,
                                       scheduler=scheduler)


def run_all_pairs(network: Network, spec: LinearGossip, out: str | Path,
                  settings: AllPairsSettings | None = None, observers: Iterable[int] | None = None, *,
                  scheduler: str | None = None, progress: bool = False,
                  stream: IO[str] | None = None) -> AllPairsRun:
    """:func:`~dpgossip.privacy.allpairs_run.run_all_pairs` of the protocol ``spec``."""
    return allpairs_run.run_all_pairs(network, GossipReleases(spec), out, settings, observers,
                                      scheduler=scheduler, progress=progress, stream=stream)
