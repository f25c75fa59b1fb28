"""Published pairwise bounds for noisy gossip averaging, beside the exact value (docs/network-dp.md).

Muffliato's per-message sum (Cyffers et al., NeurIPS 2022; the ``contrib`` term of their code)
    For ``gossip-average`` (``y^t = W^t (x + eta)``, ``eta ~ N(0, sigma^2 I)``) the message
    ``y_w^t`` shifts by ``Delta (W^t)_{wu}`` when ``x_u`` moves by ``Delta`` and has variance
    ``sigma^2 ||W^t_w||^2`` (``W^t_w``: row ``w`` of ``W^t``).  Charging each message separately and
    adding the charges gives the Renyi bound of observer ``v`` on target ``u``

        ``alpha Delta^2 / (2 sigma^2) sum_t sum_{w in N(v)} (W^t)_{wu}^2 / ||W^t_w||^2``.

    The authors' code sums the gossip steps ``t = 1..T`` (their ``Wt`` starts at ``W``); here the
    default is this project's message rounds ``t = 0..T-1`` and ``rounds`` selects others.  All
    messages share the same noise ``eta``, so the charges do not compose: the sum can be **below** the
    exact leakage (docs/network-dp.md gives the hypercube example).  Their plots also cap the sum at
    the local-DP level ``alpha Delta^2 / (2 sigma^2)``; :func:`muffliato_per_message` returns the sum
    uncapped.

Muffliato's corrected bound for noisy decentralized GD/SGD (arXiv:2206.05091, Theorem 11)
    The NeurIPS version of Muffliato-GD charges each iteration's noisy gradient only to that iteration's
    gossip; the arXiv version corrects the theorem (as MFDL's ``muffliato_accounting.py`` implements it,
    one gossip step per iteration, noise and a new gradient every round, our ``gossip-noisy`` with
    per-round inputs): the gradient injected at round ``t`` is still seen at every later round ``j``
    through ``W^{j-t}``, so

        ``alpha Delta^2 / (2 sigma^2) min(T, sum_{t<=j<T} sum_{w in N(v)} c(W^{j-t}, w, u))``,
        ``c(P, w, u) = |P_{wu}|^p / ||P_w||^2``,

    i.e. ``sum_{s=0}^{T-1} (T - s) sum_w c(W^s, w, u)`` with ``s = j - t``, clipped at ``T`` (the
    composition of ``T`` local-DP releases, the clip MFDL's code applies).  MFDL's code has the entry
    unsquared (``p = 1``, the default here); the per-message Gaussian charge squares it (``p = 2``, as
    the averaging sum above).  With ``0 <= W_{wu} <= 1`` the ``p = 1`` value is the larger.
    :func:`muffliato_corrected` returns either.

DECOR's closed form (Allouah et al., ICML 2024)
    Each edge draws a secret that one end adds and the other subtracts, and every agent adds
    independent noise: one round releases ``x + n`` with ``n = sigma_cdp xi + sigma_cor E v`` (``E``
    the oriented incidence matrix, ``xi``, ``v`` standard normal), covariance
    ``Sigma = sigma_cdp^2 I + sigma_cor^2 L`` (``L = E E^T`` the Laplacian).  With inputs clipped to
    norm ``C`` (a replacement moves one by at most ``2 C``) the per-round Renyi value is
    ``alpha 2 C^2 max_i (Sigma^{-1})_ii`` (:func:`decor_round_rdp`).  :func:`decor_round_view` gives the
    same round as a linear view (every release seen, no secret known), on which the exact auditor
    reproduces the closed form: in that setting it is exact, not a bound.

MFDL's absolute-value bound (Bellet et al. 2025, matrix-factorisation accounting of decentralized learning)
    For the attacker-view model ``O = A G + B Z`` (here ``gossip-noisy``: noise every round) the
    squared sensitivity of target ``u`` is ``max_s s^T M s`` over per-round shifts
    ``s in [-Delta, Delta]^T``, with ``M = C_u^T C_u`` the target's block of the whitened view; with
    ``sigma = 1`` and no correlation (``C = I``) ``M`` is the ``(u, u)`` block of the projection
    ``B^+ B`` their code forms.  Their code (``compute_cyclic_repetitions_1node``) bounds it by the sum of
    absolute values ``Delta^2 sum_{s,t} |M_st|``, which is a sound upper bound (the diagonally dominant
    dual certificate of :func:`~dpgossip.privacy.linear_audit.dual_certificate`) and equals the
    supremum only when one sign vector aligns every entry; :func:`mfdl_abs_sum` returns
    ``alpha/2`` times it, a Renyi value.  The rounds rule of Muffliato's code is
    :func:`muffliato_mixing_rounds`.

:func:`compare_to_bound` sets each exact value beside a bound: the ratio exact / bound and a flag where
the published bound is below the exact value (then it is not a bound).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from numbers import Integral

import numpy as np

from dpgossip.errors import ConfigError, check_number
from dpgossip.privacy.linear_audit import PairLeakage, whiten_release
from dpgossip.privacy.linear_release import LinearGaussianRelease
from dpgossip.protocols.gossip.decor import dense_incidence, edge_list
from dpgossip.protocols.gossip.linear import (
    LinearGossip,
    check_observers,
    observe,
    propagated_rows,
    senders_of,
)
from dpgossip.topology.network import Network
from dpgossip.topology.spectral import spectral_summary

__all__ = ["BoundComparison", "muffliato_per_message", "muffliato_corrected",
           "muffliato_mixing_rounds",
           "mfdl_abs_sum", "decor_round_view", "decor_round_rdp", "compare_to_bound"]


def _rounds(spec: LinearGossip, rounds: Sequence[int] | None) -> np.ndarray:
    if rounds is None:
        return np.arange(spec.rounds)
    out = list(rounds)
    for t in out:
        if isinstance(t, bool) or not isinstance(t, Integral) or t < 0:
            raise ConfigError(f"rounds must be integers >= 0, got {t!r}", field="rounds")
    if not out:
        raise ConfigError("rounds must name at least one round, got none", field="rounds")
    return np.array(sorted(set(out)), dtype=int)


def muffliato_per_message(network: Network, spec: LinearGossip, observers: int | Iterable[int], *,
                          order: float = 2.0, sensitivity: float = 1.0,
                          rounds: Sequence[int] | None = None) -> np.ndarray:
    """Muffliato's per-message Renyi sum for every target (module docstring).

    Parameters
    ----------
    network : Network
        Graph and ``W``.
    spec : LinearGossip
        A ``gossip-average`` protocol with one ``sigma`` for all agents.
    observers : int or iterable of int
        One observer ``v`` (the paper's setting) or a coalition, whose senders are ``N(S) \\ S``.
    order : float
        Renyi order ``alpha > 1``.
    sensitivity : float
        ``Delta > 0``.
    rounds : sequence of int, optional
        Powers ``t`` of ``W`` summed; default ``0..T-1`` (the messages of ``spec``); the authors'
        code uses ``1..T``.

    Returns
    -------
    ndarray
        Shape ``(m,)``: the sum for each target ``u`` (also filled in for the observers).
    """
    if spec.protocol != "gossip-average" or not isinstance(spec.sigma, float):
        raise ConfigError(f"spec: Muffliato's bound is for gossip-average with one sigma, got "
                          f"protocol {spec.protocol!r}, sigma {spec.sigma!r}", field="spec")
    alpha = check_number(order, "order", low=1.0, low_open=True)
    delta = check_number(sensitivity, "sensitivity", low=0.0, low_open=True)
    obs = check_observers(network, observers)
    ts = _rounds(spec, rounds)
    senders = senders_of(network, obs)
    if spec.sigma == 0:
        return np.full(network.m, math.inf)
    P = propagated_rows(network, senders, int(ts[-1]) + 1)[ts]  # (rounds, senders, m)
    norms2 = np.sum(P * P, axis=2, keepdims=True)
    terms = np.divide(P * P, norms2, out=np.zeros_like(P), where=norms2 > 0)
    return alpha * delta ** 2 / (2 * spec.sigma ** 2) * terms.sum(axis=(0, 1))


def muffliato_corrected(network: Network, spec: LinearGossip, observers: int | Iterable[int], *,
                        order: float = 2.0, sensitivity: float = 1.0, entry_power: int = 1,
                        clip: bool = True) -> np.ndarray:
    """Muffliato's corrected GD/SGD bound (arXiv:2206.05091, Theorem 11) for every target.

    ``alpha Delta^2 / (2 sigma^2) min(T, sum_{s=0}^{T-1} (T - s) sum_{w in N(v)} |(W^s)_{wu}|^p /
    ||(W^s)_w||^2)`` (module docstring): the message of sender ``w`` at round ``j`` carries target
    ``u``'s round-``t`` input with coefficient ``(W^{j-t})_{wu}`` (row ``w`` of ``W^{j-t}``, the
    messages of :mod:`~dpgossip.protocols.gossip.linear`); for a symmetric ``W`` this is MFDL's
    ``W^s[u, w]`` with the column norm of ``w``.

    Parameters
    ----------
    network : Network
        Graph and ``W``.
    spec : LinearGossip
        ``gossip-noisy`` with per-round inputs (a new gradient and fresh noise every round) and one
        ``sigma`` for all agents.
    observers : int or iterable of int
        The observer ``v`` (or a coalition; its senders are ``N(S) \\ S``).
    order, sensitivity : float
        Renyi order ``alpha > 1`` and ``Delta > 0``.
    entry_power : int
        ``p``: 1 as MFDL's code computes it, 2 for the per-message Gaussian charge.
    clip : bool
        Clip the sum at ``T`` (the local-DP level ``T alpha Delta^2 / (2 sigma^2)``), as MFDL's code does.

    Returns
    -------
    ndarray
        Shape ``(m,)``: the bound (a Renyi value) for each target.
    """
    if (spec.protocol != "gossip-noisy" or spec.inputs != "per-round"
            or not isinstance(spec.sigma, float)):
        raise ConfigError(f"spec: Muffliato's corrected bound is for gossip-noisy with per-round inputs "
                          f"and one sigma, got protocol {spec.protocol!r}, inputs {spec.inputs!r}, "
                          f"sigma {spec.sigma!r}", field="spec")
    if entry_power not in (1, 2):
        raise ConfigError(f"entry_power must be 1 or 2, got {entry_power!r}", field="entry_power")
    alpha = check_number(order, "order", low=1.0, low_open=True)
    delta = check_number(sensitivity, "sensitivity", low=0.0, low_open=True)
    obs = check_observers(network, observers)
    if spec.sigma == 0:
        return np.full(network.m, math.inf)
    T = spec.rounds
    P = propagated_rows(network, senders_of(network, obs), T)  # (T, senders, m): rows of W^s
    norms2 = np.sum(P * P, axis=2, keepdims=True)
    terms = np.divide(np.abs(P) ** entry_power, norms2, out=np.zeros_like(P), where=norms2 > 0)
    total = np.tensordot(T - np.arange(T, dtype=float), terms.sum(axis=1), axes=1)
    if clip:
        total = np.minimum(total, float(T))
    return alpha * delta ** 2 / (2 * spec.sigma ** 2) * total


def muffliato_mixing_rounds(network: Network, sigma: float = 1.0) -> int:
    """Rounds ``T`` by the rule of Muffliato's code (``graphutils.T_mix``).

    ``T = ceil(ln(m max(1/4, sigma^2) / sigma^2) / sqrt(1 - lambda_2))``, ``lambda_2`` the second
    largest eigenvalue of the symmetric ``W`` (``1 - lambda_2``: the spectral gap of ``I - W``).  The
    rule is derived for their accelerated (Chebyshev) gossip; it is used here as the number of plain
    gossip rounds (the hypercube of dimension 11 with Metropolis weights gets ``T = 19``).

    Raises
    ------
    ConfigError
        For ``sigma <= 0`` or a graph whose ``lambda_2`` is not below one.
    """
    s = check_number(sigma, "sigma", low=0.0, low_open=True)
    gap = 1.0 - spectral_summary(network.W).lambda_2
    if not gap > 0:
        raise ConfigError(f"rounds: Muffliato's mixing-time rule needs lambda_2 < 1, got spectral gap "
                          f"{gap:.3g}; give rounds as an integer", field="rounds")
    return int(math.ceil(math.log(network.m * max(0.25, s * s) / (s * s)) / math.sqrt(gap)))


def mfdl_abs_sum(network: Network, spec: LinearGossip, observers: int | Iterable[int], *,
                 order: float = 2.0, sensitivity: float = 1.0) -> np.ndarray:
    """MFDL's absolute-value bound for every target: ``alpha Delta^2 / 2 * sum_{s,t} |M_st|``.

    ``M = C_u^T C_u`` is target ``u``'s block of the whitened view ``O = J x + B z`` of ``observers``
    (module docstring); for ``sigma = 1`` it is the ``(u, u)`` block of the projection ``B^+ B`` of
    MFDL's code.  It bounds the exact squared sensitivity ``max_{s in [-Delta, Delta]^T} s^T M s``
    from above, so the value never falls below the exact Renyi divergence.

    Parameters
    ----------
    network : Network
        Graph and ``W`` (any ``W``: MFDL's row-stochastic ``(A + I) / rowsum`` too).
    spec : LinearGossip
        A ``gossip-noisy`` protocol (the attacker-view model; per-round inputs in MFDL's setting).
    observers : int or iterable of int
        The attacker, or a coalition.
    order, sensitivity : float
        Renyi order ``alpha > 1`` and ``Delta > 0``.

    Returns
    -------
    ndarray
        Shape ``(m,)``: the bound for each target; ``inf`` for a target outside the support,
        ``nan`` for the observers.
    """
    if spec.protocol != "gossip-noisy":
        raise ConfigError(f"spec: MFDL's bound is for gossip-noisy (noise every round), got protocol "
                          f"{spec.protocol!r}", field="spec")
    alpha = check_number(order, "order", low=1.0, low_open=True)
    delta = check_number(sensitivity, "sensitivity", low=0.0, low_open=True)
    view = observe(network, spec, observers, basis="messages")
    white = whiten_release(view.release)
    out = np.full(network.m, math.nan)
    for u, cols in view.columns_of.items():
        if bool(np.any(white.outside[cols])):
            out[u] = math.inf
            continue
        Cu = white.C[:, cols]
        out[u] = alpha * delta ** 2 / 2 * float(np.sum(np.abs(Cu.T @ Cu)))
    return out


def decor_round_view(network: Network, *, sigma_cdp: float, sigma_cor: float) -> LinearGaussianRelease:
    """One round of DECOR's correlated noise on ``network``'s edges, seen whole (module docstring): the
    release ``O = J x + B w`` with ``J = I_m`` (every agent's release), ``B = [sigma_cdp I_m, sigma_cor E]``
    (``E``: :func:`~dpgossip.protocols.gossip.decor.dense_incidence` of the sorted edges) and its
    ``covariance = sigma_cdp^2 I + sigma_cor^2 L``; every agent a target with its own column."""
    s_cdp = check_number(sigma_cdp, "sigma_cdp", low=0.0)
    s_cor = check_number(sigma_cor, "sigma_cor", low=0.0)
    m = network.m
    E = dense_incidence(edge_list(network), m)
    B = np.hstack([s_cdp * np.eye(m), s_cor * E])
    agents = np.arange(m)
    return LinearGaussianRelease(J=np.eye(m), B=B, covariance=B @ B.T, targets=agents, columns=agents,
                                 label="eavesdropper")


def decor_round_rdp(network: Network, *, sigma_cdp: float, sigma_cor: float, clip: float,
                    order: float = 2.0) -> float:
    """DECOR's per-round closed form ``alpha 2 C^2 max_i (Sigma^{-1})_ii`` with
    ``Sigma = sigma_cdp^2 I + sigma_cor^2 L`` (needs ``sigma_cdp > 0``)."""
    s_cdp = check_number(sigma_cdp, "sigma_cdp", low=0.0, low_open=True)
    alpha = check_number(order, "order", low=1.0, low_open=True)
    c = check_number(clip, "clip", low=0.0, low_open=True)
    cov = decor_round_view(network, sigma_cdp=s_cdp, sigma_cor=sigma_cor).covariance
    return alpha * 2 * c ** 2 * float(np.max(np.diag(np.linalg.inv(cov))))


@dataclass(frozen=True, slots=True, kw_only=True)
class BoundComparison:
    """An exact Renyi value beside a published bound for one (observer, target) pair."""

    observer: str
    target: int
    hops: int
    order: float
    exact: float
    """Exact RDP ``alpha mu^2 / 2`` (upper end when the exact row is a certified pair)."""
    bound: float
    source: str
    """Whose bound, e.g. ``"muffliato-per-message"``."""
    ratio: float
    """``exact / bound`` (``1`` when both are zero, ``inf`` when only the bound is zero)."""
    bound_below_exact: bool
    """The published value is below the exact leakage (relative tolerance ``1e-9``): not a bound."""

    def to_row(self) -> dict[str, object]:
        """Tidy row of all fields."""
        return {"observer": self.observer, "target": self.target, "hops": self.hops,
                "order": self.order, "exact": self.exact, "bound": self.bound,
                "source": self.source, "ratio": self.ratio,
                "bound_below_exact": self.bound_below_exact}


def _ratio(exact: float, bound: float) -> float:
    if bound == 0:
        return 1.0 if exact == 0 else math.inf
    if math.isinf(bound):
        return 0.0 if math.isfinite(exact) else 1.0
    return exact / bound


def compare_to_bound(rows: Sequence[PairLeakage], bound: np.ndarray, *, order: float,
                     source: str = "muffliato-per-message") -> list[BoundComparison]:
    """Set each exact row beside ``bound[target]`` (a Renyi value at ``order``).

    ``order`` must be one of the rows' orders.
    """
    out = []
    for row in rows:
        if order not in row.orders:
            raise ConfigError(f"order: {order!r} is not among the audited orders {row.orders}",
                              field="order")
        exact = row.rdp[row.orders.index(order)]
        b = float(bound[row.target])
        out.append(BoundComparison(
            observer=row.observer, target=row.target, hops=row.hops, order=float(order),
            exact=exact, bound=b, source=source, ratio=_ratio(exact, b),
            bound_below_exact=bool(b < exact * (1 - 1e-9))))
    return out
