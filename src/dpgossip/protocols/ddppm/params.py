"""Protocol parameters of D-DP-PM and the rules of Corollary 1 of Campbell et al.

* ``sigma_q = 1 / sqrt(n)`` by default (Campbell et al., after Corollary 1: keeps ``||q^(0)||`` near one).
* ``alpha`` inside ``(1/mu_1, 1/mu_2)`` (Corollary 1), the geometric mean ``1/sqrt(mu_1 mu_2)`` by default,
  where ``mu_1 > mu_2`` are the two largest eigenvalue moduli of ``Xi`` (Eq. (13)).
* noise schedules ``sigma_p(t)``: ``none``; ``constant`` (``s``); ``geometric`` (``s (mu_2/mu_1)^t``,
  Corollary 1 with ``s = 1``); ``explicit`` (a list of ``T`` values).

For rank ``r > 1`` component ``l`` uses ``mu_l`` and ``mu_{l+1}`` in place of ``mu_1, mu_2``: after ``l - 1``
deflations the leading eigenvalues of the deflated problem are approximately those.

Note: ``alpha`` and the geometric schedule depend on the spectrum of the data; like Campbell et al.
we treat them as public design parameters. The auditor does not charge for choosing them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from numbers import Real

import numpy as np

from dpgossip.arrays import describe
from dpgossip.data.partition import PartitionedData
from dpgossip.errors import ConfigError, check_number, did_you_mean, renamed_fields
from dpgossip.protocols.checks import check_data, check_network
from dpgossip.protocols.ddppm.spectrum import xi_eigenvalues
from dpgossip.resources import FLOAT, Need, check_needs
from dpgossip.topology.network import Network

__all__ = ["ProtocolParams", "NoiseSchedule", "resolve_params", "check_params", "NOISE_KINDS",
           "ALPHA_RULES"]

NOISE_KINDS = ("none", "constant", "geometric", "explicit")
ALPHA_RULES = ("geometric_mean", "position")


@dataclass(frozen=True, slots=True, kw_only=True)
class NoiseSchedule:
    """How ``sigma_p(t)``, ``t = 1..T``, is set.

    ``kind`` is one of ``none``, ``constant`` (``sigma_p(t) = scale``), ``geometric``
    (``sigma_p(t) = scale (mu_2/mu_1)^t``, Corollary 1 of Campbell et al.) or ``explicit``
    (``values``, one per iteration).
    """

    kind: str = "geometric"
    scale: float = 1.0
    values: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        """The one validation of a noise schedule (the scenario's ``[protocol] noise`` table too, under
        its TOML names: ``schedule`` is ``kind``)."""
        if not isinstance(self.kind, str) or self.kind not in NOISE_KINDS:
            hint = did_you_mean(self.kind, NOISE_KINDS) if isinstance(self.kind, str) else ""
            raise ConfigError(
                f"kind must be one of {', '.join(NOISE_KINDS)}, got {self.kind!r}{hint}",
                field="kind",
            )
        scale = check_number(self.scale, "scale", low=0, expected="a finite number >= 0")
        values = self.values
        if isinstance(values, (str, bytes, Mapping)) or not isinstance(values, (Sequence, np.ndarray)):
            raise ConfigError(f"values must be a list of numbers >= 0, got {values!r}",
                              field="values")
        checked = tuple(check_number(v, f"values[{t}]", low=0, expected="a finite number >= 0")
                        for t, v in enumerate(values))
        if self.kind == "explicit" and not checked:
            raise ConfigError("values: schedule 'explicit' needs values = [one per iteration]",
                              field="values")
        if self.kind != "explicit" and checked:  # were ignored: the run used another schedule
            raise ConfigError(f"values = {list(checked)!r} are read by schedule 'explicit' only, got "
                              f"schedule {self.kind!r}; remove them or set schedule = 'explicit'",
                              field="values")
        object.__setattr__(self, "scale", scale)
        object.__setattr__(self, "values", checked)

    def sigmas(self, T: int, ratio: float) -> np.ndarray:
        """``sigma_p(1..T)`` for a component whose eigenvalue ratio ``mu_{l+1}/mu_l`` is ``ratio``."""
        t = np.arange(1, T + 1)
        if self.kind == "none":
            return np.zeros(T)
        if self.kind == "constant":
            return np.full(T, float(self.scale))
        if self.kind == "geometric":
            return self.scale * ratio**t
        if len(self.values) != T:
            raise ConfigError(
                f"values must have one value per iteration ({T}), got {len(self.values)}",
                field="values",
            )
        return np.asarray(self.values, dtype=float)

    def to_row(self) -> dict[str, object]:
        """Tidy row."""
        return {"noise_schedule": self.kind, "noise_scale": self.scale}


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class ProtocolParams:
    """Resolved parameters of one D-DP-PM run (Algorithm 1 of Campbell et al.)."""

    iterations: int
    """``T``, power iterations per component."""
    consensus_steps: int
    """``c``, gossip rounds per iteration."""
    rank: int
    """``r``, number of components (deflation between components)."""
    alpha: tuple[float, ...]
    """Scaling factor of each component."""
    sigma_q: float
    """Standard deviation of the initial vector ``q^(0)``."""
    sigma_p: np.ndarray
    """``(r, T)`` standard deviations of the per-iteration noise ``p^(t)``."""
    mu: tuple[float, ...] = ()
    """Leading eigenvalue moduli of ``Xi`` used by the rules (``r + 1`` values), for the record."""

    def __post_init__(self) -> None:
        check_counts(self.iterations, self.consensus_steps, self.rank)
        sigma_q = check_number(self.sigma_q, "sigma_q", low=0, low_open=True,
                               expected="a positive number")
        alpha = self.alpha
        if isinstance(alpha, (str, bytes, Mapping)) or not isinstance(alpha, (Sequence, np.ndarray)) \
                or len(alpha) != self.rank:
            raise ConfigError(f"alpha must be a tuple of {self.rank} positive numbers (one per "
                              f"component), got {alpha!r}", field="alpha")
        alpha = tuple(check_number(a, f"alpha[{l}]", low=0, low_open=True,
                                   expected="a positive number") for l, a in enumerate(alpha))
        try:
            sp = np.array(self.sigma_p, dtype=float)
        except (TypeError, ValueError):
            raise ConfigError(f"sigma_p must be an array of numbers of shape (rank, iterations) = "
                              f"{(self.rank, self.iterations)}, got {self.sigma_p!r}",
                              field="sigma_p") from None
        if sp.size != self.rank * self.iterations or sp.ndim > 2:
            raise ConfigError(f"sigma_p must have shape (rank, iterations) = "
                              f"{(self.rank, self.iterations)}, got shape {sp.shape}",
                              field="sigma_p")
        sp = sp.reshape(self.rank, self.iterations)
        object.__setattr__(self, "sigma_q", sigma_q)
        object.__setattr__(self, "alpha", alpha)
        if np.any(~np.isfinite(sp)) or np.any(sp < 0):
            raise ConfigError(
                f"sigma_p: standard deviations must be >= 0, got {sp.tolist()!r}", field="sigma_p"
            )
        sp.setflags(write=False)
        object.__setattr__(self, "sigma_p", sp)

    def to_row(self) -> dict[str, object]:
        """Tidy row (component 1's alpha; the schedule's first and last values)."""
        return {
            "T": self.iterations,
            "c": self.consensus_steps,
            "rank": self.rank,
            "alpha": self.alpha[0],
            "sigma_q": self.sigma_q,
            "sigma_p_first": float(self.sigma_p[0, 0]),
            "sigma_p_last": float(self.sigma_p[0, -1]),
        }


def check_params(params: object, field: str = "params") -> ProtocolParams:
    """``params`` when it is a :class:`ProtocolParams`."""
    if not isinstance(params, ProtocolParams):
        raise ConfigError(f"{field} must be a dpgossip.ProtocolParams (from dpgossip.resolve_params), "
                          f"got {describe(params)}", field=field)
    return params


def check_counts(T: object, c: object, r: object) -> None:
    """Validate ``T >= 1``, ``c >= 0``, ``r >= 1`` (integers)."""
    for name, value, low in (
        ("iterations", T, 1),
        ("consensus_steps", c, 0),
        ("rank", r, 1),
    ):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
            raise ConfigError(f"{name} must be an integer >= {low}, got {value!r}", field=name)


def _alpha(rule: float | str | Mapping[str, float], mu_hi: float, mu_lo: float) -> float:
    if isinstance(rule, Real) and not isinstance(rule, bool):
        return check_number(rule, "alpha", low=0, low_open=True, expected="a positive number")
    pos = 0.5
    if isinstance(rule, Mapping):
        extra = [k for k in rule if k != "position"]
        if extra or "position" not in rule:
            raise ConfigError(f"alpha: a table must be {{'position': t}} with t in (0, 1), got "
                              f"{dict(rule)!r}", field="alpha")
        pos = check_number(rule["position"], "alpha.position", low=0, high=1, low_open=True,
                           high_open=True, expected="a number in (0, 1)")
    elif not isinstance(rule, str) or rule != "geometric_mean":
        raise ConfigError(
            f"alpha must be a positive number, 'geometric_mean' or "
            f"{{position = t}}, got {rule!r}", field="alpha"
        )
    if mu_hi <= 0:
        raise ConfigError("the data give Xi = 0 (all rows zero?): no eigenvector to estimate")
    if mu_lo <= 1e-12 * mu_hi:
        # Corollary 1's interval is (1/mu_1, inf); take twice its lower end.
        return 2.0 / mu_hi
    # log-interpolation between 1/mu_1 and 1/mu_2; pos = 0.5 is the geometric mean 1/sqrt(mu_1 mu_2)
    return float(np.exp(-(1 - pos) * np.log(mu_hi) - pos * np.log(mu_lo)))


def resolve_params(
    data: PartitionedData,
    network: Network,
    *,
    iterations: int,
    consensus_steps: int,
    rank: int = 1,
    alpha: float | str | Mapping[str, float] = "geometric_mean",
    sigma_q: float | None = None,
    noise: NoiseSchedule | None = None,
    sigma_p: Sequence[Sequence[float]] | None = None,
) -> ProtocolParams:
    """Apply the rules of Corollary 1 of Campbell et al. to get concrete parameters.

    Parameters
    ----------
    data, network
        The partitioned data and the network (their spectrum sets ``alpha`` and the geometric schedule).
    iterations, consensus_steps, rank
        ``T >= 1``, ``c >= 0``, ``r >= 1``.
    alpha
        A positive number, ``"geometric_mean"`` (``1/sqrt(mu_l mu_{l+1})``) or ``{"position": t}``
        (``mu_l^{-(1-t)} mu_{l+1}^{-t}``).
    sigma_q
        Initial-vector standard deviation; ``1/sqrt(n)`` by default.
    noise
        Noise schedule (default: geometric with scale 1, Corollary 1).
    sigma_p
        Explicit ``(r, T)`` standard deviations; overrides ``noise``.
    """
    check_counts(iterations, consensus_steps, rank)
    data = check_data(data)
    network = check_network(network, data.m)
    check_needs([Need(f"iterations = {iterations} needs the (rank, iterations + 1, n) = ({rank}, "
                      f"{iterations + 1}, {data.n}) iterates of a run", FLOAT * rank * (iterations + 1)
                      * data.n)], advice="use fewer iterations", field="iterations")
    if rank > min(data.n, data.d):
        raise ConfigError(f"rank must be <= min(n, d) = {min(data.n, data.d)}, got {rank}",
                          field="rank")
    if sigma_q is None:
        sigma_q = 1.0 / np.sqrt(data.n)
    sigma_q = check_number(sigma_q, "sigma_q", low=0, low_open=True, expected="a positive number")
    if noise is not None and not isinstance(noise, NoiseSchedule):
        raise ConfigError(f"noise must be a dpgossip.NoiseSchedule (e.g. NoiseSchedule(kind="
                          f"'constant', scale=0.1)) or None, got {noise!r}", field="noise")
    noise = noise or NoiseSchedule()
    mu = xi_eigenvalues(data, network.W, consensus_steps, k=rank + 1)
    if mu.size < rank + 1:
        mu = np.concatenate((mu, np.zeros(rank + 1 - mu.size)))
    alphas = tuple(_alpha(alpha, mu[l], mu[l + 1]) for l in range(rank))
    if sigma_p is None:
        ratios = [mu[l + 1] / mu[l] if mu[l] > 0 else 0.0 for l in range(rank)]
        with renamed_fields({"values": "noise.values"}):
            sp = np.stack([noise.sigmas(iterations, ratios[l]) for l in range(rank)])
    else:
        try:
            sp = np.asarray(sigma_p, dtype=float)
        except (TypeError, ValueError):
            raise ConfigError(f"sigma_p must be an array of numbers of shape (rank, T) = "
                              f"{(rank, iterations)}, got {sigma_p!r}", field="sigma_p") from None
        if sp.shape != (rank, iterations):
            raise ConfigError(
                f"sigma_p must have shape (rank, T) = {(rank, iterations)}, got {sp.shape}",
                field="sigma_p",
            )
    return ProtocolParams(
        iterations=iterations,
        consensus_steps=consensus_steps,
        rank=rank,
        alpha=alphas,
        sigma_q=float(sigma_q),
        sigma_p=sp,
        mu=tuple(float(x) for x in mu),
    )
