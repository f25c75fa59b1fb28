"""The pieces of one ALS step, per user, shared by the matrix backend and the engine's node programs.

User step (Chien et al., Algorithm 1, ``A_user``; privileged: user ``i`` computes it from its own ratings and
never releases it):

    u_i = (V_i^T V_i + lambda I)^-1 V_i^T m_i,       then u_i <- u_i min(1, Gamma_u / ||u_i||),

``V_i`` the rows of the item factors at user ``i``'s training items, ``m_i`` its (clipped) ratings.

Item statistic (``A_item``): user ``i`` samples ``k`` of its training items uniformly without
replacement (all when it has at most ``k``) and contributes, to each sampled item ``j``, the vector
``s_ij = (upper(u_i u_i^T), M_ij u_i)`` of length ``q = p + r`` (:func:`user_statistic`, ``(m, q)``,
zero rows for the other items). Item solve: with ``S_j`` the noisy sum of the ``s_ij``,

    X_j = sym(S_j[:p]),   X_j <- its projection on the PSD cone (optional),
    v_j = (X_j + lambda I)^-1 S_j[p:].

Random streams, from the run's ``root = SeedSequence(seed)`` (:func:`stream`): the initial item
factors ``(5,)``; user ``i``'s sample at step ``t`` ``(0, t, i)``; the central noise of step ``t``
``(1, t)``; agent ``i``'s own noise ``(2, t, i)``; the draw of edge ``(a, b)``, ``a < b``, ``(3, t, a, b)``.
Key ``4`` is the engine's network stream.
"""

from __future__ import annotations

import numpy as np

from dpgossip.engine.kernel import child_seed

__all__ = ["stream", "initial_items", "user_factor", "user_sample", "user_statistic", "solve_items",
           "noise_draw", "normalised_norms"]


def stream(root: np.random.SeedSequence, *key: int) -> np.random.Generator:
    """The generator of spawn key ``key`` under ``root`` (module docstring)."""
    return np.random.default_rng(child_seed(root, *key))


def initial_items(root: np.random.SeedSequence, items: int, rank: int) -> np.ndarray:
    """``V^0``: i.i.d. ``N(0, 1/sqrt(r))`` entries, independent of the data (public)."""
    return stream(root, 5).normal(0.0, rank ** -0.25, size=(items, rank))


def user_factor(ratings_i: np.ndarray, rated: np.ndarray, V: np.ndarray, reg: float,
                clip: float | None) -> np.ndarray:
    """User ``i``'s factor (module docstring); ``clip=None`` leaves it unclipped."""
    Vi = V[rated]
    r = V.shape[1]
    u = np.linalg.solve(Vi.T @ Vi + reg * np.eye(r), Vi.T @ ratings_i[rated])
    if clip is not None:
        norm = float(np.linalg.norm(u))
        if norm > clip:
            u = u * (clip / norm)
    return u


def user_sample(root: np.random.SeedSequence, step: int, user: int, rated: np.ndarray,
                k: int | None) -> np.ndarray:
    """The items user ``user`` contributes to at step ``step`` (increasing)."""
    if k is None or rated.size <= k:
        return rated
    return np.sort(stream(root, 0, step, user).choice(rated, size=k, replace=False))


def user_statistic(u: np.ndarray, ratings_i: np.ndarray, sample: np.ndarray, items: int) -> np.ndarray:
    """``(m, q)``: ``s_ij = (upper(u u^T), M_ij u)`` on the sampled items, zero elsewhere."""
    r = u.size
    iu = np.triu_indices(r)
    out = np.zeros((items, iu[0].size + r))
    out[sample, : iu[0].size] = np.outer(u, u)[iu]
    out[sample, iu[0].size:] = ratings_i[sample, None] * u[None, :]
    return out


def solve_items(sums: np.ndarray, rank: int, reg: float, psd: bool) -> np.ndarray:
    """``(..., m, r)`` item factors from ``(..., m, q)`` noisy sums (module docstring)."""
    iu = np.triu_indices(rank)
    p = iu[0].size
    X = np.zeros(sums.shape[:-1] + (rank, rank))
    X[..., iu[0], iu[1]] = sums[..., :p]
    X = X + np.swapaxes(X, -1, -2)
    X[..., np.arange(rank), np.arange(rank)] /= 2.0
    if psd:
        w, Q = np.linalg.eigh(X)
        X = (Q * np.maximum(w, 0.0)[..., None, :]) @ np.swapaxes(Q, -1, -2)
    return np.linalg.solve(X + reg * np.eye(rank), sums[..., p:, None])[..., 0]


def noise_draw(root: np.random.SeedSequence, key: tuple[int, ...], units: np.ndarray, std: float,
               items: int) -> np.ndarray:
    """``(m, q)`` Gaussian noise of ``std`` units per entry from stream ``key``."""
    return stream(root, *key).standard_normal((items, units.size)) * (std * units)


def normalised_norms(statistic: np.ndarray, units: np.ndarray) -> np.ndarray:
    """``(..., m)``: ``||s_ij / units||^2`` per item (at most 2 under clipping)."""
    return np.sum((statistic / units) ** 2, axis=-1)
