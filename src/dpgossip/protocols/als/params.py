"""Parameters of ALS and of private ALS (Chien et al., Algorithm 1; docs/als.md).

Noise convention. A user's contribution to item ``j`` is the pair ``(upper(u u^T), M_ij u)``: the upper
triangle (diagonal included) of its Gram matrix, ``p = r (r + 1) / 2`` numbers, and its right-hand side,
``r`` numbers. With ``||u|| <= Gamma_u`` and ``|M_ij| <= Gamma_M`` their norms are at most ``Gamma_u^2``
and ``Gamma_M Gamma_u``: the two are measured in these *units* (:meth:`DpAlsParams.units`). The noise of
both has standard deviation ``z`` units, ``z = sqrt(2) sigma``, where ``sigma`` is Theorem 1's noise
scale: in units the pair moves by at most ``sqrt(2)`` per item, so each item is a Gaussian mechanism with
``||shift|| / std <= 1 / sigma`` and RDP ``a / (2 sigma^2)``, as Theorem 1 states. With noise of ``sigma``
units on each of the two releases (the literal reading of Algorithm 1) the true cost is twice Theorem 1's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpgossip.errors import ConfigError, check_choice, check_int, check_number

__all__ = ["AlsParams", "DpAlsParams", "GossipParams", "GOSSIP_NOISE", "gram_size"]

GOSSIP_NOISE: tuple[str, ...] = ("shared", "own")
"""``shared``: pairwise zero-sum edge noise plus own noise at ``1/sqrt(n)`` of the central level (the
sum carries exactly the central noise); ``own``: every agent adds the central level itself."""


def gram_size(rank: int) -> int:
    """``p = r (r + 1) / 2``: the entries of a symmetric ``r x r`` matrix's upper triangle."""
    return rank * (rank + 1) // 2


@dataclass(frozen=True, slots=True, kw_only=True)
class AlsParams:
    """Non-private ALS: ``rank`` r, ``steps`` T (user step then item step), ridge ``reg`` lambda."""

    rank: int
    steps: int
    reg: float = 0.1

    def __post_init__(self) -> None:
        """Validate (``ConfigError`` names the field)."""
        object.__setattr__(self, "rank", check_int(self.rank, "rank", 1))
        object.__setattr__(self, "steps", check_int(self.steps, "steps", 1))
        object.__setattr__(self, "reg", check_number(self.reg, "reg", low=0, low_open=True,
                                                     expected="a positive number"))

    def to_row(self) -> dict[str, object]:
        """Tidy row."""
        return {"rank": self.rank, "steps": self.steps, "reg": self.reg}


@dataclass(frozen=True, slots=True, kw_only=True)
class DpAlsParams(AlsParams):
    """Private ALS: target ``(epsilon, delta)`` joint DP, at most ``k`` items per user and step, user
    factors clipped to ``clip_user`` (Gamma_u), ratings to ``clip_rating`` (Gamma_M), and whether each
    noisy Gram matrix is projected onto the positive semi-definite cone before the solve."""

    epsilon: float
    delta: float
    k: int
    clip_user: float = 1.0
    clip_rating: float = 3.0
    psd: bool = True

    def __post_init__(self) -> None:
        """Validate (``ConfigError`` names the field)."""
        super(DpAlsParams, self).__post_init__()
        object.__setattr__(self, "epsilon", check_number(self.epsilon, "epsilon", low=0, low_open=True,
                                                         expected="a positive number"))
        object.__setattr__(self, "delta", check_number(self.delta, "delta", low=0, high=1, low_open=True,
                                                       high_open=True))
        object.__setattr__(self, "k", check_int(self.k, "k", 1))
        for name in ("clip_user", "clip_rating"):
            object.__setattr__(self, name, check_number(getattr(self, name), name, low=0, low_open=True,
                                                        expected="a positive number"))
        if not isinstance(self.psd, bool):
            raise ConfigError(f"psd must be true or false, got {self.psd!r}", field="psd")

    @property
    def sigma(self) -> float:
        """Theorem 1's ``sigma = sqrt(kT/2) / (sqrt(ln(1/delta) + eps) - sqrt(ln(1/delta)))``."""
        from dpgossip.protocols.als.accounting import theorem_sigma

        return theorem_sigma(self.epsilon, self.delta, self.k, self.steps)

    @property
    def multiplier(self) -> float:
        """``z = sqrt(2) sigma``: the noise std of each release in units (module docstring)."""
        return math.sqrt(2.0) * self.sigma

    def units(self) -> np.ndarray:
        """``(p + r,)``: ``Gamma_u^2`` for the Gram entries, ``Gamma_M Gamma_u`` for the right-hand side."""
        p = gram_size(self.rank)
        return np.concatenate([np.full(p, self.clip_user**2),
                               np.full(self.rank, self.clip_rating * self.clip_user)])

    def to_row(self) -> dict[str, object]:
        """Tidy row."""
        return {**AlsParams.to_row(self), "epsilon": self.epsilon, "delta": self.delta, "k": self.k,
                "clip_user": self.clip_user, "clip_rating": self.clip_rating, "sigma": self.sigma}


@dataclass(frozen=True, slots=True, kw_only=True)
class GossipParams:
    """The gossip form: ``rounds`` c of averaging per step, the noise mode (:data:`GOSSIP_NOISE`), and
    ``edge_noise``: the std of each edge draw in multiples of the central ``z`` (``shared`` only)."""

    rounds: int
    noise: str = "shared"
    edge_noise: float = 1.0

    def __post_init__(self) -> None:
        """Validate (``ConfigError`` names the field)."""
        object.__setattr__(self, "rounds", check_int(self.rounds, "rounds", 0))
        check_choice(self.noise, "noise", GOSSIP_NOISE)
        object.__setattr__(self, "edge_noise", check_number(self.edge_noise, "edge_noise", low=0))

    def stds(self, z: float, users: int) -> tuple[float, float]:
        """``(own, edge)`` noise std in units: ``(z / sqrt(n), edge_noise z)`` shared, ``(z, 0)`` own."""
        if self.noise == "own":
            return z, 0.0
        return z / math.sqrt(users), self.edge_noise * z

    def to_row(self) -> dict[str, object]:
        """Tidy row."""
        return {"rounds": self.rounds, "noise": self.noise, "edge_noise": self.edge_noise}
