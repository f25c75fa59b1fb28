"""Exact audit of private ALS's Gaussian releases, view by view (docs/als.md, Audit).

Model. Given every user factor of a step, user ``i``'s statistic ``s_ij`` enters the releases of item ``j``
as a mean shift: removing user ``i`` (its agent still runs, adds noise and forwards) moves them by ``s_ij``
and leaves their covariance unchanged. In units (:mod:`dpgossip.protocols.als.params`) every entry of every
statistic carries the same agent-level noise structure, independent across entries; so for a view that
sees a linear map ``H`` (rows: observed combinations of the agents' values) of the agents' initial values,
and knows part of the noise, the squared Mahalanobis norm of user ``i``'s shift at item ``j`` is

    D_ij^2 = kappa_i ||s_ij / units||^2,       kappa_i = (H e_i)^T (H Sigma H^T)^+ (H e_i),

with ``Sigma`` (``n x n``) the covariance of the noise the view does not know, per entry and in units
(``inf`` when ``H e_i`` leaves the range of ``H Sigma H^T``: the shift is seen without noise). Over the
``T`` steps and the items (independent draws), ``D_i^2 = kappa_i sum_{t,j} ||s_tij / units||^2`` and the
exact epsilon of the composed mean-shift Gaussian is Balle-Wang's (:func:`gaussian_mechanism_epsilon`).

Views. ``server`` (dpals: the noisy sums, noise ``z``; dpals-federated: the sum of the clients' values,
``H = 1^T``); ``coalition`` (dpals-federated: the server with every other client, knowing their noise;
dpals-gossip: all of user ``i``'s neighbours, knowing their own and their edges' draws and seeing every
message they receive); ``neighbour`` (the worst single neighbour of ``i``); ``eavesdropper``
(every message on every link, no draw known). A gossip view's ``H`` holds the rows ``e_b^T W^k``,
``k = 0..c-1``, of every non-member ``b`` that sends to a member (the eavesdropper: every agent with a
neighbour); the members' own values are functions of these and of what they know.

The guarantee of a view (:func:`~dpgossip.protocols.als.accounting.view_guarantee`) uses
``max_i kappa_i``, which does not depend on the data; the audit uses each user's actual contributions.

Under a schedule of rounds (the result's ``extra["schedule"]``, docs/dynamic-gossip.md, section 8) step
``t``'s rows are ``e_b^T Phi_k``, ``Phi_k = W_{g+k-1} ... W_g``, ``g = (t - 1) c``, of every non-member
``b`` that ``W_{g+k}`` links to a member (:func:`schedule_observation_map`), so ``kappa`` is computed per
step: ``D_i^2 = sum_t kappa_ti sum_j ||s_tij / units||^2``, and the guarantee takes ``max_{t,i} kappa_ti``
(an upper bound for every step). A user's neighbours are then its neighbours in the network and every
agent a round of the schedule pairs it with. The observer knows the schedule.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from dpgossip.errors import check_choice
from dpgossip.privacy.mechanism import gaussian_mechanism_epsilon
from dpgossip.protocols.als.accounting import ViewGuarantee, view_guarantee
from dpgossip.protocols.als.central import AlsResult
from dpgossip.protocols.gossip.round_mixing import RoundMixing
from dpgossip.protocols.ppm.gossip import edge_list
from dpgossip.topology.network import Network
from dpgossip.topology.schedules import MixingSchedule, schedule_union_edges

__all__ = ["GOSSIP_VIEWS", "FEDERATED_VIEWS", "CENTRAL_VIEWS", "observation_map", "noise_covariance",
           "kappas", "kappa", "gossip_kappas", "schedule_observation_map", "schedule_kappas", "ViewAudit",
           "audit_views"]

CENTRAL_VIEWS: tuple[str, ...] = ("server",)
FEDERATED_VIEWS: tuple[str, ...] = ("server", "coalition")
GOSSIP_VIEWS: tuple[str, ...] = ("neighbour", "coalition", "eavesdropper")
_RANK_RTOL = 1e-12


def observation_map(network: Network, rounds: int, members: Iterable[int]) -> np.ndarray:
    """``H``: rows ``e_b^T W^k`` (``k < rounds``) of every non-member ``b`` sending to a member; with no
    member, of every agent with a neighbour (the eavesdropper)."""
    members = set(members)
    n = network.m
    if members:
        senders = sorted({b for a in members for b in network.neighbours[a]} - members)
    else:
        senders = [b for b in range(n) if network.neighbours[b]]
    if not members and len(senders) == n:
        rounds = min(rounds, 1)     # every initial value is seen: later rounds add no row to the span
    W = network.dense_W()
    rows, R = [], np.eye(n)[senders]
    for _ in range(rounds):
        rows.append(R)
        R = R @ W                                   # e_b^T W^k = (e_b^T W^(k-1)) W
    return np.concatenate(rows) if rows and senders else np.zeros((0, n))


def schedule_observation_map(mixing: RoundMixing, start: int, rounds: int,
                             members: Iterable[int]) -> np.ndarray:
    """``H`` of one step under a schedule (module docstring): rows ``e_b^T Phi_k`` of every non-member
    ``b`` with ``W_{start + k}[a, b] != 0`` for a member ``a``; with no member, of every ``b`` that sends
    to anyone in round ``k + 1`` (the eavesdropper)."""
    n = mixing.network.m
    members = sorted(set(members))
    outside = np.ones(n, dtype=bool)
    outside[members] = False
    rows, phi = [], np.eye(n)
    for k in range(rounds):
        W = mixing.dense(start + k)
        links = W != 0
        np.fill_diagonal(links, False)
        senders = (links[members].any(axis=0) if members else links.any(axis=0)) & outside
        rows.append(phi[senders])
        phi = W @ phi
    return np.concatenate(rows) if rows else np.zeros((0, n))


def _partners(network: Network, schedule: MixingSchedule | None) -> list[list[int]]:
    """Each agent's neighbours in the network and, under a schedule, every agent a round pairs it with."""
    out = [set(nb) for nb in network.neighbours]
    if schedule is not None:
        for i, j in schedule_union_edges(schedule).tolist():
            out[i].add(j)
            out[j].add(i)
    return [sorted(s) for s in out]


def noise_covariance(network: Network, stds: tuple[float, float], known: Iterable[int]) -> np.ndarray:
    """``Sigma`` (``n x n``, per entry in units): own draws ``g^2 I`` and edge draws
    ``e^2 (e_a - e_b)(e_a - e_b)^T``, without the draws the ``known`` agents hold (own and edges')."""
    own, edge = stds
    known = set(known)
    n = network.m
    unknown = np.array([a not in known for a in range(n)])
    cov = np.diag(np.where(unknown, own**2, 0.0))
    edges = edge_list(network)
    if edge > 0 and len(edges):
        kept = edges[unknown[edges[:, 0]] & unknown[edges[:, 1]]]
        M = np.zeros((n, len(kept)))
        M[kept[:, 0], np.arange(len(kept))] = 1.0
        M[kept[:, 1], np.arange(len(kept))] = -1.0
        cov = cov + edge**2 * (M @ M.T)
    return cov


def kappas(H: np.ndarray, cov: np.ndarray) -> np.ndarray:
    """``(n,)``: ``(H e_i)^T (H Sigma H^T)^+ (H e_i)`` for every ``i`` (module docstring), from one
    factorisation on the row space of ``H``."""
    n = cov.shape[0]
    if H.shape[0] == 0:
        return np.zeros(n)
    _, s, Vt = np.linalg.svd(H, full_matrices=False)
    P = Vt[s > _RANK_RTOL * s[0]]                  # the same information as H, full row rank
    w, Q = np.linalg.eigh(P @ cov @ P.T)
    proj = Q.T @ P                                 # column i: H e_i in the eigenbasis
    zero = w <= _RANK_RTOL * max(w.max(), 1e-300)
    out = np.sum(proj[~zero] ** 2 / w[~zero, None], axis=0)
    seen = np.any(np.abs(proj[zero]) > 1e-9 * np.maximum(1.0, np.linalg.norm(P, axis=0)), axis=0)
    return np.where(seen, math.inf, out)


def kappa(H: np.ndarray, cov: np.ndarray, user: int) -> float:
    """``kappas(H, cov)[user]``."""
    return float(kappas(H, cov)[user])


_CACHE: dict[tuple, tuple[Network, np.ndarray]] = {}
_CACHE_SIZE = 32


def gossip_kappas(network: Network, rounds: int, stds: tuple[float, float], view: str) -> np.ndarray:
    """``(n,)``: ``kappa_i`` of a gossip view for every user ``i``.

    ``kappa`` scales as ``1 / own^2`` at a fixed ratio ``edge / own``, so it is computed once per network,
    rounds, ratio and view at ``own = 1`` and rescaled (a run at another epsilon reuses it).
    """
    check_choice(view, "view", GOSSIP_VIEWS)
    own, edge = stds
    if own <= 0:
        return _gossip_kappas(network, rounds, stds, view)
    key = (id(network), rounds, edge / own, view)
    hit = _CACHE.get(key)
    if hit is None or hit[0] is not network:
        if len(_CACHE) >= _CACHE_SIZE:
            _CACHE.pop(next(iter(_CACHE)))
        hit = _CACHE[key] = (network, _gossip_kappas(network, rounds, (1.0, edge / own), view))
    return hit[1] / own**2


def schedule_kappas(network: Network, schedule: MixingSchedule, steps: int, rounds: int,
                    stds: tuple[float, float], view: str) -> np.ndarray:
    """``(steps, n)``: ``kappa_ti`` of a gossip view under a schedule (module docstring)."""
    check_choice(view, "view", GOSSIP_VIEWS)
    mixing = RoundMixing(network, schedule, steps * rounds)
    partners = _partners(network, schedule)
    n, out = network.m, np.zeros((steps, network.m))
    for t in range(steps):
        start = t * rounds
        if view == "eavesdropper":
            out[t] = kappas(schedule_observation_map(mixing, start, rounds, ()),
                            noise_covariance(network, stds, ()))
        elif view == "coalition":
            for i in range(n):
                if partners[i]:
                    H = schedule_observation_map(mixing, start, rounds, partners[i])
                    out[t, i] = kappas(H, noise_covariance(network, stds, partners[i]))[i]
        else:
            by_agent = [kappas(schedule_observation_map(mixing, start, rounds, (a,)),
                               noise_covariance(network, stds, (a,))) for a in range(n)]
            out[t] = [max((by_agent[a][i] for a in partners[i]), default=0.0) for i in range(n)]
    return out


def _gossip_kappas(network: Network, rounds: int, stds: tuple[float, float], view: str) -> np.ndarray:
    n = network.m
    if view == "eavesdropper":
        return kappas(observation_map(network, rounds, ()), noise_covariance(network, stds, ()))
    if view == "coalition":
        out = np.zeros(n)
        for i in range(n):
            group = network.neighbours[i]
            if group:
                H = observation_map(network, rounds, group)
                out[i] = kappas(H, noise_covariance(network, stds, group))[i]
        return out
    # neighbour: one factorisation per agent a serves every user next to a
    by_agent = [kappas(observation_map(network, rounds, (a,)), noise_covariance(network, stds, (a,)))
                for a in range(n)]
    return np.array([max((by_agent[a][i] for a in network.neighbours[i]), default=0.0) for i in range(n)])


@dataclass(frozen=True, slots=True, kw_only=True)
class ViewAudit:
    """One view: its guarantee (worst user, any data) and the exact epsilon of the run's worst user."""

    view: str
    guarantee: ViewGuarantee
    audited_epsilon: float
    worst_user: int
    covered_by_theorem: bool
    """``max_i kappa_i <= 1 / z^2``: Theorem 1's epsilon (the central level) covers this view."""

    def to_row(self) -> dict[str, object]:
        """Tidy row."""
        return {"view": self.view, "guaranteed_epsilon": self.guarantee.epsilon,
                "guaranteed_epsilon_closed_form": self.guarantee.epsilon_closed_form,
                "audited_epsilon": self.audited_epsilon, "worst_user": self.worst_user,
                "covered_by_theorem": self.covered_by_theorem}


def _kappas(result: AlsResult, network: Network | None, view: str) -> np.ndarray:
    n = result.users.shape[1]
    z = result.params.multiplier
    if result.kind == "dpals":
        check_choice(view, "view", CENTRAL_VIEWS)
        return np.full(n, 1.0 / z**2)
    if result.kind == "dpals-federated":
        check_choice(view, "view", FEDERATED_VIEWS)
        unknown = n if view == "server" else 1      # clients (of noise z^2 / n each) the view does not know
        return np.full(n, n / (unknown * z**2))
    gp = result.extra["gossip"]
    if result.extra.get("schedule") is not None:
        return schedule_kappas(network, result.extra["schedule"], result.params.steps, gp.rounds,
                               result.extra["stds"], view)
    return gossip_kappas(network, gp.rounds, result.extra["stds"], view)


def audit_views(result: AlsResult, network: Network | None = None,
                views: tuple[str, ...] | None = None) -> tuple[ViewAudit, ...]:
    """Audit every view of ``result``'s kind (module docstring)."""
    p = result.params
    if views is None:
        views = {"dpals": CENTRAL_VIEWS, "dpals-federated": FEDERATED_VIEWS}.get(result.kind, GOSSIP_VIEWS)
    totals = result.norms.sum(axis=(0, 2))                       # sum_{t,j} ||s_tij / units||^2
    out = []
    for view in views:
        kap = _kappas(result, network, view)                     # (n,), or (T, n) under a schedule
        d2 = kap * totals if kap.ndim == 1 else (kap * result.norms.sum(axis=2)).sum(axis=0)
        worst = int(np.argmax(d2))
        g = view_guarantee(view, float(kap.max()), p.k, p.steps, p.delta)
        eps = gaussian_mechanism_epsilon(math.sqrt(d2[worst]), p.delta)
        out.append(ViewAudit(view=view, guarantee=g, audited_epsilon=eps, worst_user=worst,
                             covered_by_theorem=bool(kap.max() <= (1 + 1e-12) / p.multiplier**2)))
    return tuple(out)
