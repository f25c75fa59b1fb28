"""Synthetic low-rank ratings with long-tailed sparsity, and the held-out error (docs/als.md, Data).

Generator (:func:`synthetic_ratings`), all draws from ``SeedSequence(seed)``:

* factors ``U* (n x r)`` and ``V* (m x r)`` with i.i.d. ``N(0, 1/sqrt(r))`` entries, so that a true
  rating ``(U* V*^T)_ij`` has variance one;
* item popularity ``p_j`` proportional to ``(j + 1)^(-zipf)`` (Zipf; ``zipf = 0`` is uniform);
* user activity ``n_i = min(m, floor(min_count * Pareto))`` with Pareto tail index ``activity_tail``
  (``n_i >= min_count``; a smaller index means a longer tail of heavy raters);
* user ``i`` rates ``n_i`` distinct items drawn without replacement with probabilities ``p``;
* each observed rating is ``(U* V*^T)_ij + N(0, noise^2)``: the noise floor of the held-out RMSE is
  ``noise``;
* of each user's ratings a fraction ``test_fraction`` (rounded down, keeping at least one for
  training) is held out for testing.

No real ratings set is bundled: MovieLens's licence forbids redistribution without permission, and
Netflix Prize data are withdrawn.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpgossip.errors import ConfigError, check_int, check_number
from dpgossip.rng import as_seed_sequence

__all__ = ["Ratings", "synthetic_ratings", "rmse"]


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class Ratings:
    """A partly observed ratings matrix (``n`` users by ``m`` items) with a held-out split.

    ``values`` holds every observed rating (``0`` where none); ``train`` and ``test`` are disjoint
    boolean masks of observed entries. ``truth`` is the noiseless low-rank matrix of a synthetic set
    (``None`` otherwise) and ``noise`` its observation noise (the RMSE floor).
    """

    values: np.ndarray
    train: np.ndarray
    test: np.ndarray
    truth: np.ndarray | None = None
    noise: float = math.nan
    name: str = "custom"

    def __post_init__(self) -> None:
        values = np.asarray(self.values, dtype=float)
        if values.ndim != 2 or not np.isfinite(values).all():
            raise ConfigError(f"ratings.values must be a finite 2-D array, got shape {values.shape}",
                              field="ratings.values")
        for name in ("train", "test"):
            mask = np.asarray(getattr(self, name), dtype=bool)
            if mask.shape != values.shape:
                raise ConfigError(f"ratings.{name} must have the shape of values {values.shape}, got "
                                  f"{mask.shape}", field=f"ratings.{name}")
            object.__setattr__(self, name, mask)
        if np.any(self.train & self.test):
            raise ConfigError("ratings.train and ratings.test overlap", field="ratings.test")
        if not self.train.any(axis=1).all():
            i = int(np.argmin(self.train.any(axis=1)))
            raise ConfigError(f"ratings.train: user {i} has no training rating", field="ratings.train")
        object.__setattr__(self, "values", values)

    @property
    def users(self) -> int:
        """``n``."""
        return int(self.values.shape[0])

    @property
    def items(self) -> int:
        """``m``."""
        return int(self.values.shape[1])

    def rated(self, i: int) -> np.ndarray:
        """User ``i``'s training items, increasing."""
        return np.flatnonzero(self.train[i])

    def to_row(self) -> dict[str, object]:
        """Tidy row."""
        return {"ratings": self.name, "users": self.users, "items": self.items,
                "train_ratings": int(self.train.sum()), "test_ratings": int(self.test.sum()),
                "noise_floor": self.noise}


def _check_generator(users: int, items: int, rank: int, values: dict[str, float]) -> None:
    check_int(users, "users", 1)
    check_int(items, "items", 1)
    check_int(rank, "rank", 1)
    check_number(values["zipf"], "zipf", low=0)
    check_number(values["activity_tail"], "activity_tail", low=0, low_open=True)
    check_number(values["noise"], "noise", low=0)
    check_number(values["test_fraction"], "test_fraction", low=0, high=1, high_open=True)
    check_int(values["min_count"], "min_count", 1)
    if values["min_count"] > items:
        raise ConfigError(f"min_count must be <= items = {items}, got {values['min_count']}",
                          field="min_count")


def synthetic_ratings(users: int, items: int, rank: int, seed: int | np.random.SeedSequence, *,
                      zipf: float = 0.8, activity_tail: float = 1.5, min_count: int = 8,
                      noise: float = 0.1, test_fraction: float = 0.2) -> Ratings:
    """Draw a synthetic ratings set (module docstring)."""
    _check_generator(users, items, rank, {"zipf": zipf, "activity_tail": activity_tail, "noise": noise,
                                          "test_fraction": test_fraction, "min_count": min_count})
    factors, sparsity, observe = (np.random.default_rng(s) for s in as_seed_sequence(seed).spawn(3))
    scale = rank ** -0.25
    U = factors.normal(0.0, scale, size=(users, rank))
    V = factors.normal(0.0, scale, size=(items, rank))
    truth = U @ V.T
    pop = (np.arange(items) + 1.0) ** -zipf
    pop /= pop.sum()
    counts = np.minimum(items, np.floor(min_count * (1.0 + sparsity.pareto(activity_tail, users))))
    train = np.zeros((users, items), dtype=bool)
    test = np.zeros((users, items), dtype=bool)
    for i, n_i in enumerate(counts.astype(int)):
        rated = sparsity.choice(items, size=n_i, replace=False, p=pop)
        held = min(int(test_fraction * n_i), n_i - 1)
        test[i, rated[:held]] = True
        train[i, rated[held:]] = True
    values = np.where(train | test, truth + observe.normal(0.0, noise, size=truth.shape), 0.0)
    return Ratings(values=values, train=train, test=test, truth=truth, noise=float(noise),
                   name=f"synthetic-{users}x{items}-r{rank}")


def rmse(ratings: Ratings, user_factors: np.ndarray, item_factors: np.ndarray) -> float:
    """Held-out root mean square error ``sqrt(mean_{(i,j) in test} (M_ij - u_i . v_j)^2)``.

    ``item_factors`` is ``(m, r)`` (one model) or ``(n, m, r)`` (user ``i`` predicts with its own
    ``item_factors[i]``, as in the gossip form).
    """
    U = np.asarray(user_factors, dtype=float)
    V = np.asarray(item_factors, dtype=float)
    pred = U @ V.T if V.ndim == 2 else np.einsum("ir,ijr->ij", U, V)
    err = (ratings.values - pred)[ratings.test]
    return float(np.sqrt(np.mean(err**2))) if err.size else math.nan
