"""ALS, and private ALS with a trusted server (``dpals``) or by secure aggregation (``dpals-federated``).

``run_als``: alternating ridge regressions on every training rating, nothing clipped or sampled.

``run_dpals`` (Chien et al., Algorithm 1; :mod:`dpgossip.protocols.als.steps`): ratings clipped to
``[-Gamma_M, Gamma_M]``; for ``t = 1..T`` every user solves and clips its factor from ``V^(t-1)``, samples
at most ``k`` items and forms its statistic; the item factors ``V^(t)`` are solved from

* ``central``: ``sum_i s_i + N`` with ``N`` of ``z`` units per entry (stream ``(1, t)``), added by the
  trusted server;
* ``federated``: ``sum_i (s_i + N_i)`` with each client's ``N_i`` of ``z / sqrt(n)`` units (stream
  ``(2, t, i)``), summed by secure aggregation: the server sees only the sum, whose noise is the central
  level.

After step ``T`` each user computes its test-time factor from ``V^(T)`` unclipped (privileged, never
released) for the held-out RMSE.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpgossip.errors import ConfigError, check_choice
from dpgossip.protocols.als.params import AlsParams, DpAlsParams
from dpgossip.protocols.als.ratings import Ratings, rmse
from dpgossip.protocols.als.steps import (
    initial_items,
    noise_draw,
    normalised_norms,
    solve_items,
    user_factor,
    user_sample,
    user_statistic,
)
from dpgossip.rng import as_seed_sequence

__all__ = ["AlsResult", "CENTRAL_FORMS", "run_als", "run_dpals", "user_factors", "clipped_values",
           "check_inputs", "private_statistics"]

CENTRAL_FORMS: tuple[str, ...] = ("central", "federated")


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class AlsResult:
    """One run of (private) ALS.

    ``items[t]`` are the item factors after step ``t`` (``(m, r)``, or ``(n, m, r)`` when every agent
    holds its own, in the gossip form); ``users[t - 1]`` the (clipped) user factors of step ``t``;
    ``final_users`` the test-time user factors; ``norms[t - 1, i, j] = ||s_ij / units||^2`` of user
    ``i``'s contribution to item ``j`` at step ``t``; ``released[t - 1]`` what the server (or each agent
    before mixing, gossip) holds: the noisy sums ``(m, q)`` or the initial states ``(n, m, q)``.
    """

    kind: str
    items: np.ndarray
    users: np.ndarray
    final_users: np.ndarray
    norms: np.ndarray
    released: np.ndarray
    rmse: float
    params: AlsParams
    extra: dict

    @property
    def schedule(self) -> object:
        """dpals-gossip under a schedule of rounds: ``extra["schedule"]`` (the engine's is the realised
        one); ``None`` otherwise."""
        return self.extra.get("schedule")

    def to_row(self) -> dict[str, object]:
        """Tidy row."""
        return {"protocol": self.kind, **self.params.to_row(), "rmse": self.rmse}


def clipped_values(ratings: Ratings, clip: float | None) -> np.ndarray:
    """Ratings clipped to ``[-clip, clip]`` (unchanged for ``None``)."""
    return ratings.values if clip is None else np.clip(ratings.values, -clip, clip)


def user_factors(values: np.ndarray, ratings: Ratings, V: np.ndarray, reg: float,
                 clip: float | None) -> np.ndarray:
    """``(n, r)``: every user's factor from ``V`` (``(m, r)``, or ``(n, m, r)``: user ``i`` uses ``V[i]``)."""
    return np.stack([user_factor(values[i], ratings.rated(i), V if V.ndim == 2 else V[i], reg, clip)
                     for i in range(ratings.users)])


def run_als(ratings: Ratings, params: AlsParams, seed: int | np.random.SeedSequence) -> AlsResult:
    """Non-private ALS (module docstring)."""
    root = as_seed_sequence(seed)
    m, r = ratings.items, params.rank
    V = initial_items(root, m, r)
    items, users = [V], []
    for _ in range(params.steps):
        U = user_factors(ratings.values, ratings, V, params.reg, None)
        stats = np.stack([user_statistic(U[i], ratings.values[i], ratings.rated(i), m)
                          for i in range(ratings.users)])
        V = solve_items(stats.sum(axis=0), r, params.reg, False)
        items.append(V)
        users.append(U)
    final = user_factors(ratings.values, ratings, V, params.reg, None)
    return AlsResult(kind="als", items=np.stack(items), users=np.stack(users), final_users=final,
                     norms=np.zeros((params.steps, ratings.users, m)), released=np.zeros((0,)),
                     rmse=rmse(ratings, final, V), params=params, extra={})


def private_statistics(ratings: Ratings, values: np.ndarray, V: np.ndarray, params: DpAlsParams,
                       root: np.random.SeedSequence, step: int) -> tuple[np.ndarray, np.ndarray]:
    """``(U, stats)``: the clipped user factors (``(n, r)``) and statistics (``(n, m, q)``) of a step."""
    m = ratings.items
    U = user_factors(values, ratings, V, params.reg, params.clip_user)
    stats = np.stack([user_statistic(U[i], values[i], user_sample(root, step, i, ratings.rated(i),
                                                                  params.k), m)
                      for i in range(ratings.users)])
    return U, stats


def check_inputs(ratings: Ratings, params: object) -> None:
    """``ConfigError`` unless ``ratings`` is a :class:`Ratings` and ``params`` a :class:`DpAlsParams`."""
    if not isinstance(ratings, Ratings):
        raise ConfigError(f"ratings must be a Ratings, got {type(ratings).__name__}", field="ratings")
    if not isinstance(params, DpAlsParams):
        raise ConfigError(f"params must be a DpAlsParams, got {type(params).__name__}", field="params")


def run_dpals(ratings: Ratings, params: DpAlsParams, seed: int | np.random.SeedSequence, *,
              form: str = "central") -> AlsResult:
    """Private ALS, ``central`` or ``federated`` (module docstring)."""
    check_inputs(ratings, params)
    check_choice(form, "form", CENTRAL_FORMS)
    root = as_seed_sequence(seed)
    n, m, r = ratings.users, ratings.items, params.rank
    values, units, z = clipped_values(ratings, params.clip_rating), params.units(), params.multiplier
    V = initial_items(root, m, r)
    items, users, norms, released = [V], [], [], []
    for t in range(1, params.steps + 1):
        U, stats = private_statistics(ratings, values, V, params, root, t)
        if form == "central":
            sums = stats.sum(axis=0) + noise_draw(root, (1, t), units, z, m)
        else:
            sums = sum(stats[i] + noise_draw(root, (2, t, i), units, z / math.sqrt(n), m) for i in range(n))
        V = solve_items(sums, r, params.reg, params.psd)
        items.append(V)
        users.append(U)
        norms.append(normalised_norms(stats, units))
        released.append(sums)
    final = user_factors(values, ratings, V, params.reg, None)
    kind = "dpals" if form == "central" else "dpals-federated"
    return AlsResult(kind=kind, items=np.stack(items), users=np.stack(users), final_users=final,
                     norms=np.stack(norms), released=np.stack(released), rmse=rmse(ratings, final, V),
                     params=params, extra={"sigma": params.sigma, "multiplier": z})
