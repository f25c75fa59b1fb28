"""Exact audit of the floor-free D-DP-PM, conditionally on the realised directions (docs/floorfree.md, §4).

Given the directions ``u_j^(0..T)`` of a run (functions of earlier releases; on the paper's ring an
observer reconstructs them from its view), every message is the data's mean plus independent Gaussian
noise, so a view is linear-Gaussian with a data-independent covariance. In iteration ``t`` an observer
set ``R`` receives ``(K_R (x) I_d) z~^(t)``; with ``B`` the orthonormal basis of
:func:`dpgossip.protocols.ddppm.views.receive_basis` (receivers' own columns removed: they know their ``e``),
the unknown noise is ``sigma_z (B (x) I_d) e`` with ``B B^T = I``, and target ``j``'s shift enters
through the column ``b_j``. Whitening (``mu^2 = J^T (B B^T)^+ J``, :mod:`dpgossip.privacy.linear_audit`)
gives, for row ``x`` of agent ``j`` replaced by ``x'`` and ``C = x' x'^T - x x^T``,

    mu^2(x, x') = kappa_j sum_{t=1..T} ||C u_j^(t-1)||^2 / sigma_z^2  +  f <x' - x, u_j^(T)>^2 / sigma_p^2,

with the leverage ``kappa_j = ||b_j||^2 <= 1`` (``1`` for the eavesdropper and all-but-one views) and
``f = 1`` when ``q^(T)`` is disseminated (everyone sees it), else ``0``. The iterations and the final
release have independent noise, so the terms add. The pair is a Gaussian mechanism of norm ``mu``:
exact ``epsilon(delta)`` by Balle-Wang.

Exactness: the conditioning is the view's own knowledge when the view recovers every agent's ``z~_i``
(:func:`determines_directions`: eavesdropper, all-but-one, and an observer whose isolated inputs span
every other agent, as on the paper's ring with ``c = 5``). Then, given its past, each iteration's new
observations are Gaussian with a data-dependent mean, and ``mu^2`` is the exact Mahalanobis norm of the
whole view along this run's directions. Otherwise the directions depend on messages the view does not
hold, the figure is that of "messages given the directions" (flagged ``exact = False``), and only the
data-independent guarantee bounds the view.

Worst case over neighbours: for each row of the target, ``mu^2`` is maximised over ``x'`` in the allowed
set (``||x'|| <= 1``, and ``||x' - x|| <= 1`` for ``bounded``) by SLSQP from several starts (``+-u^(t)``,
``-x``, random directions, pulled back into the set along the segment from ``x``): a lower end, attained
by the reported neighbour. The upper end is certified: ``||C u|| <= ||C||_2 <= 1`` and
``|<x' - x, u>| <= Delta_q``, so ``mu^2 <= (kappa_j T + f) / s^2`` for every neighbour of every
dataset (exact views; the others get the guarantee's ``(T + f) / s^2``); with ``kappa_j = 1`` it is
the GDP ``mu`` of :func:`~dpgossip.protocols.ddppm.floorfree_guarantee.floorfree_mu`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize

from dpgossip.data.partition import PartitionedData
from dpgossip.errors import ConfigError, check_choice, check_int
from dpgossip.privacy.mechanism import gaussian_mechanism_epsilon
from dpgossip.protocols.ddppm.floorfree import FloorFreeResult
from dpgossip.protocols.ddppm.views import receive_basis
from dpgossip.topology.network import Network

__all__ = ["FLOORFREE_VIEWS", "FloorFreePair", "leverage", "determines_directions", "conditional_mu2",
           "worst_neighbour", "screen_rows", "audit_floorfree"]

FLOORFREE_VIEWS = ("observer", "coalition", "eavesdropper", "all-but-one")


def _basis(network: Network, c: int, view: str, agents: Iterable[int]) -> np.ndarray | None:
    """Orthonormal basis of the inputs a view isolates; ``None`` when it sees every ``z~`` itself."""
    check_choice(view, "view", FLOORFREE_VIEWS)
    if c == 0:
        return np.zeros((0, network.m))
    if view in ("eavesdropper", "all-but-one"):
        return None
    return receive_basis(network.graph, network.dense_W(), list(agents), c)


def leverage(network: Network, c: int, view: str, target: int, agents: Iterable[int] = ()) -> float:
    """``kappa_j = ||b_j||^2``: the share of target ``j``'s gossip input a view isolates (module docstring).

    ``observer``/``coalition``: column ``j`` of :func:`~dpgossip.protocols.ddppm.views.receive_basis` for the
    receivers ``agents``; ``eavesdropper``/``all-but-one``: ``1`` (they see ``z~_j`` itself); ``0``
    when ``c = 0`` (no gossip message is sent).
    """
    B = _basis(network, c, view, agents)
    if B is None:
        return 1.0
    return float(B[:, target] @ B[:, target]) if B.shape[0] else 0.0


def determines_directions(network: Network, c: int, view: str, agents: Iterable[int] = ()) -> bool:
    """Whether the view recovers every other agent's ``z~_i`` (then every direction ``u_i^(t)``).

    True when the isolated inputs span all agents outside the view (``rank B = m - |agents|``), for the
    eavesdropper and all-but-one views (``c >= 1``); the audit is then exact for the view itself.
    """
    agents = list(agents)
    B = _basis(network, c, view, agents)
    if B is None:
        return True
    return B.shape[0] == network.m - len(set(agents)) and network.m > len(set(agents))


def conditional_mu2(x: np.ndarray, x_new: np.ndarray, directions: np.ndarray, *, kappa: float,
                    sigma_z: float, sigma_p: float | None) -> float:
    """``mu^2(x, x')`` of the module docstring for one target's ``directions`` (``T + 1 x d``).

    ``sigma_p = None``: ``q^(T)`` is not disseminated (no final term).
    """
    U = np.asarray(directions, dtype=float)
    shifts = np.outer(U[:-1] @ x_new, x_new) - np.outer(U[:-1] @ x, x)    # (C u^(t))^T, t < T
    value = kappa * float(np.sum(shifts * shifts)) / sigma_z**2 if kappa > 0 else 0.0
    if sigma_p is not None:
        value += float((x_new - x) @ U[-1]) ** 2 / sigma_p**2
    return value


def _objective(x: np.ndarray, U: np.ndarray, weights: tuple[float, float]):
    a, b = weights

    def f(y: np.ndarray) -> tuple[float, np.ndarray]:
        proj = U[:-1] @ y                                      # <x', u^(t)>
        W = np.outer(proj, y) - np.outer(U[:-1] @ x, x)        # rows C u^(t)
        grad = 2 * a * (proj @ W + U[:-1].T @ (W @ y))
        lin = float((y - x) @ U[-1])
        return -(a * float(np.sum(W * W)) + b * lin * lin), -(grad + 2 * b * lin * U[-1])
    return f


def _pull_in(x: np.ndarray, y: np.ndarray, bounded: bool) -> np.ndarray:
    """The point of the segment ``[x, y]`` farthest from ``x`` inside the allowed set (bisection)."""
    def ok(v: np.ndarray) -> bool:
        return v @ v <= 1 + 1e-12 and (not bounded or (v - x) @ (v - x) <= 1 + 1e-12)
    if ok(y):
        return y
    lo, hi = 0.0, 1.0
    for _ in range(50):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if ok(x + mid * (y - x)) else (lo, mid)
    return x + lo * (y - x)


def worst_neighbour(x: np.ndarray, directions: np.ndarray, *, kappa: float, sigma_z: float,
                    sigma_p: float | None, bounded: bool = True, restarts: int = 4,
                    seed: int = 0) -> tuple[float, np.ndarray]:
    """``max_{x'} mu^2(x, x')`` over the allowed set, by SLSQP from several starts (a lower end).

    Returns the best value and its ``x'``.
    """
    U = np.asarray(directions, dtype=float)
    weights = (kappa / sigma_z**2, 0.0 if sigma_p is None else 1.0 / sigma_p**2)
    fun = _objective(x, U, weights)
    cons = [{"type": "ineq", "fun": lambda y: 1.0 - y @ y, "jac": lambda y: -2 * y}]
    if bounded:
        cons.append({"type": "ineq", "fun": lambda y: 1.0 - (y - x) @ (y - x),
                     "jac": lambda y: -2 * (y - x)})
    rng = np.random.default_rng(seed)
    raw = [s * u for u in U for s in (1.0, -1.0)] + [-x] + list(rng.standard_normal((restarts, x.size)))
    best, best_y = 0.0, x.copy()
    for start in raw:
        y0 = _pull_in(x, start / max(np.linalg.norm(start), 1e-300), bounded)
        res = minimize(fun, y0, jac=True, method="SLSQP", constraints=cons,
                       options={"maxiter": 200, "ftol": 1e-12})
        y = _pull_in(x, res.x, bounded)                      # exact feasibility of the reported x'
        value = conditional_mu2(x, y, U, kappa=kappa, sigma_z=sigma_z, sigma_p=sigma_p)
        if value > best:
            best, best_y = value, y
    return best, best_y


@dataclass(frozen=True, slots=True, kw_only=True)
class FloorFreePair:
    """Leakage of ``target`` to ``observer`` (a label) in one run: ``mu`` in ``[mu, mu_upper]``."""

    observer: str
    target: int
    leverage: float
    row: int
    """Global index of the row whose replacement attains :attr:`mu`."""
    mu: float
    """Attained by the reported neighbour (exact for it, conditionally on the directions)."""
    mu_upper: float
    """Certified over every neighbour of every dataset: ``sqrt((kappa T + f) / s^2)`` when
    :attr:`exact`, else the guarantee's ``sqrt((T + f) / s^2)``."""
    exact: bool
    """The view determines the directions (:func:`determines_directions`): ``mu`` is then the view's own
    Mahalanobis norm for the reported neighbour. Otherwise ``mu`` is that of the messages given the
    directions, which the view does not hold: a figure about a different adversary, not a bound."""
    delta: float
    epsilon: float
    """Exact epsilon at :attr:`mu`."""
    epsilon_upper: float

    def to_row(self) -> dict[str, object]:
        """Tidy row."""
        return {"observer": self.observer, "target": self.target, "leverage": self.leverage,
                "row": self.row, "mu": self.mu, "mu_upper": self.mu_upper, "exact": self.exact,
                "delta": self.delta,
                "epsilon": self.epsilon, "epsilon_upper": self.epsilon_upper}


def _agent(value: object, field: str, m: int) -> int:
    a = check_int(value, field, 0)
    if a >= m:
        raise ConfigError(f"{field} must be agents 0..{m - 1}, got {a}", field=field)
    return a


def _adversaries(view: str, m: int, observers: Iterable[int] | None) -> list[tuple[int, ...]]:
    if view in ("eavesdropper", "all-but-one"):
        return [()]
    if view == "coalition":
        group = tuple(sorted({_agent(o, "observers", m) for o in observers or ()}))
        if not group:
            raise ConfigError("observers: view 'coalition' needs a non-empty list of agents",
                              field="observers")
        return [group]
    chosen = range(m) if observers is None else observers
    return [(_agent(o, "observers", m),) for o in chosen]


def _target_worst(data: PartitionedData, result: FloorFreeResult, j: int, kappa: float,
                  restarts: int) -> tuple[float, int]:
    p = result.params
    sigma_p = p.sigma_p if p.disseminate else None
    bounded = p.adjacency == "bounded"
    U = result.directions[:, j]
    best, row = 0.0, int(data.offsets[j])
    for r in range(int(data.offsets[j]), int(data.offsets[j + 1])):
        value, _ = worst_neighbour(data.X[r], U, kappa=kappa, sigma_z=p.sigma_z, sigma_p=sigma_p,
                                   bounded=bounded, restarts=restarts, seed=r)
        if value > best:
            best, row = value, r
    return best, row


def screen_rows(X: np.ndarray, directions: np.ndarray, *, kappa: float, sigma_z: float,
                sigma_p: float | None, bounded: bool = True) -> np.ndarray:
    """``mu^2`` of every row of ``X`` at its best deterministic start (``+-u^(t)``, ``-x``), vectorised.

    Each start ``y`` (a unit vector) is pulled into the allowed set along the segment from ``x``:
    ``||x + lam (y - x)|| <= 1`` holds on the whole segment (both ends are in the ball), so only the
    bounded constraint ``lam ||y - x|| <= 1`` binds, ``lam = min(1, 1/||y - x||)`` (times
    ``1 - 1e-12``). With ``a = kappa / sigma_z^2`` and ``b = 1/sigma_p^2`` (``0`` without
    dissemination), at ``x'``:

        mu^2 = a sum_{t<T} [(u.x')^2 ||x'||^2 - 2 (u.x')(u.x)(x.x') + (u.x)^2 ||x||^2]
               + b ((x' - x).u^(T))^2,

    the expansion of :func:`conditional_mu2`. Every value is attained by a neighbour in the set: a
    lower end per row, used to pick the rows worth climbing.
    """
    X, U = np.asarray(X, dtype=float), np.asarray(directions, dtype=float)
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    dirs = np.concatenate([U, -U])                                     # (2(T+1), d)
    starts = np.concatenate([np.broadcast_to(dirs, (X.shape[0], *dirs.shape)),
                             (-X / np.maximum(norms, 1e-300))[:, None, :]], axis=1)
    if bounded:
        gap = np.linalg.norm(starts - X[:, None, :], axis=2, keepdims=True)
        lam = np.minimum(1.0, 1.0 / np.maximum(gap, 1e-300)) * (1 - 1e-12)
        starts = X[:, None, :] + lam * (starts - X[:, None, :])
    a = kappa / sigma_z**2
    b = 0.0 if sigma_p is None else 1.0 / sigma_p**2
    uy = starts @ U[:-1].T                                             # (rows, starts, T)
    ux = (X @ U[:-1].T)[:, None, :]
    yy = np.einsum("rsd,rsd->rs", starts, starts)[..., None]
    xy = np.einsum("rsd,rd->rs", starts, X)[..., None]
    xx = (norms**2)[:, None, :]
    term = np.sum(uy**2 * yy - 2 * uy * ux * xy + ux**2 * xx, axis=2)
    lin = (starts - X[:, None, :]) @ U[-1]
    return np.max(a * term + b * lin**2, axis=1)


def _screened_worst(data: PartitionedData, result: FloorFreeResult, kappas: dict[int, float],
                    rows: int, restarts: int) -> dict[int, tuple[float, int]]:
    """Each target's value and row when only the ``rows`` best screened rows are climbed.

    Every row of every target in ``kappas`` is screened (:func:`screen_rows`); the ``rows`` highest
    (over all these targets) are climbed by :func:`worst_neighbour` as in the full search; a target
    keeps the best of its screened and climbed values (each attained by a neighbour in the set).
    """
    p = result.params
    sigma_p = p.sigma_p if p.disseminate else None
    bounded = p.adjacency == "bounded"
    out, found = {}, []
    for j, kappa in kappas.items():
        lo, hi = int(data.offsets[j]), int(data.offsets[j + 1])
        values = screen_rows(data.X[lo:hi], result.directions[:, j], kappa=kappa, sigma_z=p.sigma_z,
                             sigma_p=sigma_p, bounded=bounded)
        best = int(np.argmax(values))
        out[j] = (float(values[best]), lo + best)
        found.extend((float(v), lo + r, j) for r, v in enumerate(values))
    for _, r, j in sorted(found, key=lambda t: (-t[0], t[1]))[:rows]:
        value, _ = worst_neighbour(data.X[r], result.directions[:, j], kappa=kappas[j],
                                   sigma_z=p.sigma_z, sigma_p=sigma_p, bounded=bounded,
                                   restarts=restarts, seed=r)
        if value > out[j][0]:
            out[j] = (value, r)
    return out


def _worst_by_target(data: PartitionedData, result: FloorFreeResult, kappas: dict[int, float],
                     rows: int | None, restarts: int,
                     cache: dict[tuple[int, float], tuple[float, int]]) -> dict[int, tuple[float, int]]:
    """Each target's worst value and row (cached by target and leverage): every row climbed when
    ``rows`` is ``None``, else the screened search of :func:`_screened_worst`."""
    todo = {j: k for j, k in kappas.items() if (j, round(k, 12)) not in cache}
    if rows is None:
        found = {j: _target_worst(data, result, j, k, restarts) for j, k in todo.items()}
    else:
        found = _screened_worst(data, result, todo, rows, restarts) if todo else {}
    cache.update({(j, round(kappas[j], 12)): v for j, v in found.items()})
    return {j: cache[(j, round(k, 12))] for j, k in kappas.items()}


def audit_floorfree(data: PartitionedData, network: Network, result: FloorFreeResult, *,
                    delta: float = 1e-5, view: str = "observer",
                    observers: Iterable[int] | None = None, targets: Iterable[int] | None = None,
                    restarts: int = 4, rows: int | None = None) -> list[FloorFreePair]:
    """Audit every (adversary, target) pair of ``view`` in the run ``result`` (module docstring).

    ``observer``: every agent of ``observers`` (default all) against every other agent;
    ``coalition``: the set ``observers``; ``eavesdropper`` and ``all-but-one``: one adversary.
    ``rows``: ``None`` climbs every row of every target by SLSQP; an integer screens every row of the
    targets in closed form (:func:`screen_rows`) and climbs only the ``rows`` best of each adversary
    (a faster, still attained, lower estimate). Requires ``noise_multiplier > 0``.
    """
    check_choice(view, "view", FLOORFREE_VIEWS)
    if rows is not None:
        rows = check_int(rows, "rows", 0)
    p = result.params
    if p.noise_multiplier <= 0:
        raise ConfigError("params.noise_multiplier must be > 0 to audit (no noise: no privacy)",
                          field="params.noise_multiplier")
    T, c, m = p.iterations, p.consensus_steps, data.m
    f = int(p.disseminate)
    cache: dict[tuple[int, float], tuple[float, int]] = {}
    pairs = []
    for group in _adversaries(view, m, observers):
        chosen = [j for j in (range(m) if targets is None else [_agent(t, "targets", m) for t in targets])
                  if j not in group]
        exact = determines_directions(network, c, view, group)
        kappas = {j: leverage(network, c, view, j, group) for j in chosen}
        worst = _worst_by_target(data, result, kappas, rows, restarts, cache)
        for j in chosen:
            kappa, (value, row) = kappas[j], worst[j]
            upper = ((kappa if exact else 1.0) * T + f) / p.noise_multiplier**2
            mu, mu_up = math.sqrt(value), math.sqrt(max(upper, value))
            pairs.append(FloorFreePair(
                observer="+".join(map(str, group)) or view, target=int(j), leverage=kappa, row=row,
                mu=mu, mu_upper=mu_up, exact=exact, delta=delta,
                epsilon=gaussian_mechanism_epsilon(mu, delta),
                epsilon_upper=gaussian_mechanism_epsilon(mu_up, delta)))
    return pairs
