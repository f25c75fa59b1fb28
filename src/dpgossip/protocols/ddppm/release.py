"""The release model: every message of a D-DP-PM component as a linear map of the latent noise.

docs/model.md, Section 1. With ``w = [q^(0); p^(1); ...; p^(T)]`` (``N = n (T + 1)`` coordinates, all
independent, ``w ~ N(0, diag(std^2))``) and ``P = alpha Xi`` (Eq. (13) of Campbell et al.):

    q^(t)   = A_t w,        A_t = [P^t, P^(t-1), ..., P^0, 0, ..., 0]           (Eq. (18))
    z^(t)   = D^T A_(t-1) w                                                     (Eq. (17))
    s^(t,k) = (W^k (x) I_d) z^(t)        (agent i sends s_i^(t,k-1) in gossip round k)

so every message of a run is ``F(X) w`` for a matrix ``F(X)`` built here. The exactness contract: applying
these matrices to a run's realised ``w`` reproduces every message of that run's transcript.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from dpgossip.data.partition import PartitionedData
from dpgossip.protocols.ddppm.spectrum import xi_matrix

__all__ = ["ReleaseModel", "build_release_model", "latent_indices"]


def latent_indices(offsets: np.ndarray, T: int, agents) -> np.ndarray:
    """Indices into ``w = [q^(0); p^(1); ...; p^(T)]`` of the given agents' own latent coordinates."""
    n = int(offsets[-1])
    agents = list(agents)
    if not agents:
        return np.zeros(0, dtype=int)
    rows = np.concatenate([np.arange(offsets[i], offsets[i + 1]) for i in agents])
    return np.concatenate([s * n + rows for s in range(T + 1)])


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class ReleaseModel:
    """Linear maps from the latent noise of one component to everything it releases.

    Built by :func:`build_release_model`. Shapes use ``n`` rows, ``m`` agents, ``d`` columns,
    ``T`` iterations, ``c`` gossip rounds and ``N = n (T + 1)`` latent coordinates.
    """

    n: int
    m: int
    d: int
    T: int
    c: int
    offsets: np.ndarray
    """Row offsets of the agents' blocks (``m + 1``)."""
    W: np.ndarray
    latent_std: np.ndarray
    """``(N,)`` standard deviation of each latent coordinate: ``sigma_q`` then ``sigma_p(t)``."""
    DtP: np.ndarray
    """``(T, m d, n)``: ``D^T P^k`` for ``k = 0..T-1`` (agent ``i``'s rows are ``i d .. (i+1) d``)."""
    powers: np.ndarray
    """``(T + 1, n, n)``: ``P^k`` for ``k = 0..T``."""
    W_powers: np.ndarray = field(init=False)
    """``(c, m, m)``: ``W^k`` for ``k = 0..c-1``."""

    def __post_init__(self) -> None:
        Wp = np.empty((max(self.c, 1), self.m, self.m))
        Wp[0] = np.eye(self.m)
        for k in range(1, self.c):
            Wp[k] = Wp[k - 1] @ self.W
        object.__setattr__(self, "W_powers", Wp[: self.c])

    @property
    def N(self) -> int:
        """Number of latent coordinates."""
        return self.n * (self.T + 1)

    def z_matrix(self, t: int) -> np.ndarray:
        """``(m d, N)`` matrix of ``z^(t) = D^T A_(t-1) w``, ``t = 1..T``.

        Latent block ``s`` (``q^(0)`` for ``s = 0``, ``p^(s)`` otherwise) enters through
        ``D^T P^(t-1-s)`` for ``s <= t - 1``.
        """
        out = np.zeros((self.m * self.d, self.N))
        for s in range(t):
            out[:, s * self.n : (s + 1) * self.n] = self.DtP[t - 1 - s]
        return out

    def final_matrix(self) -> np.ndarray:
        """``(n, N)`` matrix of ``q^(T) = A_T w`` (Eq. (18))."""
        out = np.empty((self.n, self.N))
        for s in range(self.T + 1):
            out[:, s * self.n : (s + 1) * self.n] = self.powers[self.T - s]
        return out

    def latent_slice(self, agents: list[int] | np.ndarray) -> np.ndarray:
        """Indices into ``w`` of the given agents' own randomness (their ``q_i^(0)`` and ``p_i^(t)``)."""
        return latent_indices(self.offsets, self.T, agents)

    def predict_states(self, w: np.ndarray) -> np.ndarray:
        """Every gossip state ``s^(t,k)``, ``(T, c, m, d)``, for a realised latent vector ``w``."""
        out = np.empty((self.T, self.c, self.m, self.d))
        for t in range(1, self.T + 1):
            z = (self.z_matrix(t) @ w).reshape(self.m, self.d)
            for k in range(self.c):
                out[t - 1, k] = self.W_powers[k] @ z
        return out

    def predict_final(self, w: np.ndarray) -> np.ndarray:
        """``q^(T)`` for a realised latent vector ``w``."""
        return self.final_matrix() @ w


def build_release_model(data: PartitionedData, W: np.ndarray, *, T: int, c: int, alpha: float,
                        sigma_q: float, sigma_p: np.ndarray, X: np.ndarray | None = None
                        ) -> ReleaseModel:
    """Build the release model of one component run on ``X`` (default ``data.X``) with ``data``'s
    partition.

    Cost: ``T`` products of ``n x n`` matrices for the powers of ``P = alpha Xi``, and ``T`` products
    ``D^T P^k`` (``m d x n``).
    """
    X = np.asarray(data.X if X is None else X, dtype=float)
    n, d, m = X.shape[0], X.shape[1], data.m
    P = alpha * xi_matrix(data, W, c, X)
    powers = np.empty((T + 1, n, n))
    powers[0] = np.eye(n)
    for k in range(1, T + 1):
        powers[k] = P @ powers[k - 1]
    DtP = np.empty((T, m * d, n))
    for i in range(m):
        sl = slice(data.offsets[i], data.offsets[i + 1])
        Xi_ = X[sl]
        for k in range(T):
            DtP[k, i * d : (i + 1) * d] = Xi_.T @ powers[k][sl]
    std = np.concatenate([np.full(n, float(sigma_q))]
                         + [np.full(n, float(s)) for s in np.asarray(sigma_p, dtype=float)])
    return ReleaseModel(n=n, m=m, d=d, T=T, c=c, offsets=np.asarray(data.offsets),
                        W=np.asarray(W, dtype=float), latent_std=std, DtP=DtP, powers=powers)
