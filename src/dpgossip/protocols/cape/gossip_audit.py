"""Exact audits of capepca-gossip's views: neighbour, coalition, eavesdropper on edges (docs/cape-gossip.md).

Every noise matrix is symmetric with i.i.d. upper-triangle entries and the gossip acts entry by entry, so
for each upper-triangle entry ``(a, b)`` the same linear model holds (:mod:`dpgossip.protocols.cape.gossip`):

    Y^(0) = a + M (tau_e zeta_D) + tau_g zeta_G,        message of site l in round k:  e_l^T W^k Y^(0),

with ``a`` the sites' entries ``(A_s)_ab``, ``M`` the signed incidence and ``zeta`` standard normal. A view
is a set of messages ``K Y^(0)`` (rows ``e_l^T W^k``, ``k < c``) and the noise it knows (the draws of the
edges at its own sites and their ``G``, for a neighbour or coalition; nothing for an eavesdropper).
Conditioning on known independent noise removes its columns, and the adversary's own sites' data are
the same under both datasets, so per entry the view is ``O = J a_U + B zeta_unknown`` with
``J = K[:, U]`` (``U`` the other sites) and ``B = K [tau_e M | tau_g I][:, unknown]``: the linear-Gaussian
form of :class:`~dpgossip.privacy.linear_release.LinearGaussianRelease` (:attr:`EntryView.release`),
whitened by :func:`~dpgossip.privacy.linear_audit.whiten_release`. Over all entries the covariance is
``(B B^T) (x) I_p`` and a row replaced at site ``s`` shifts the view by ``J_s (x) v``,
``v = triu(A_s' - A_s)``, so

    mu^2 = kappa_s ||v||^2,    kappa_s = j_s^T (B B^T)^+ j_s      (``inf`` if ``j_s`` leaves range(B)).

The worst case over row replacements is therefore exact and in closed form: ``||v|| <= Delta(N_s)``
(:func:`~dpgossip.protocols.cape.star.second_moment_sensitivity`: ``sqrt(2)/N_s`` for a row replaced
within the unit ball, attained at ``x = e_1``, ``x' = e_2``), so ``mu_s = sqrt(kappa_s) Delta(N_s)`` for
every dataset, and the pair is a Gaussian mechanism with exact ``epsilon(delta)`` (Balle-Wang).

Under a schedule of rounds (docs/dynamic-gossip.md, section 8) the rows are ``e_l^T Phi_k``,
``Phi_k = W_{k-1} ... W_0``, of the messages the view holds in round ``k + 1``; the rest is unchanged.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from dpgossip.errors import ConfigError, check_choice, check_int
from dpgossip.privacy.linear_audit import whiten_release
from dpgossip.privacy.linear_release import LinearGaussianRelease
from dpgossip.privacy.mechanism import gaussian_mechanism_epsilon
from dpgossip.protocols.cape.gossip import CapeGossipParams
from dpgossip.protocols.cape.star import SENSITIVITIES, second_moment_sensitivity
from dpgossip.protocols.gossip.round_mixing import RoundMixing
from dpgossip.protocols.ppm.gossip import edge_list
from dpgossip.topology.network import Network
from dpgossip.topology.schedules import MixingSchedule

__all__ = ["CAPE_GOSSIP_VIEWS", "EntryView", "entry_view", "CapeGossipPair", "audit_cape_gossip"]

CAPE_GOSSIP_VIEWS = ("neighbour", "coalition", "eavesdropper")


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class EntryView:
    """The per-entry view ``O = J a_U + B zeta``: ``J`` (messages x sites, zero columns for the
    adversary's own sites) and ``B`` (messages x unknown noise coordinates, stds included)."""

    J: np.ndarray
    B: np.ndarray
    own: tuple[int, ...]
    """The adversary's sites (empty for an eavesdropper)."""
    label: str

    @property
    def release(self) -> LinearGaussianRelease:
        """The view as a linear Gaussian release: targets the sites outside :attr:`own`, each owning
        its column of ``J``."""
        sites = np.setdiff1d(np.arange(self.J.shape[1]), self.own)
        return LinearGaussianRelease(J=self.J, B=self.B, targets=sites, columns=sites, label=self.label)


def _message_rows(W: np.ndarray, senders: list[int], c: int) -> np.ndarray:
    """Rows ``e_l^T W^k`` for the senders ``l`` and ``k < c``, stacked by round: ``R_0 = I[senders]``,
    ``R_{k+1} = R_k W`` (``O(c |senders| m^2)``, not the ``O(c m^3)`` of the powers of ``W``)."""
    rows, R = [], np.eye(W.shape[0])[senders]
    for _ in range(c):
        rows.append(R)
        R = R @ W
    return np.vstack(rows) if rows else np.zeros((0, W.shape[0]))


def _schedule_message_rows(mixing: RoundMixing, view: str, agents: tuple[int, ...], edges: tuple,
                           c: int) -> np.ndarray:
    """Under a schedule: the rows ``e_l^T Phi_k`` (``Phi_k = W_{k-1} ... W_0``) of every message the
    view holds in round ``k + 1``: from ``l`` outside ``agents`` with ``W_k[o, l] != 0`` for a member
    ``o`` (neighbour, coalition), or crossing a watched edge in either direction
    (``W_k[j, i] != 0``: eavesdropper); stacked by round, senders increasing."""
    m = mixing.network.m
    if view == "eavesdropper":
        _senders(mixing.network, view, agents, edges)                   # checks the edges
        pairs = {(int(a), int(b)) for e in edges for a, b in (tuple(e), tuple(e)[::-1])}
    rows, phi = [], np.eye(m)
    for k in range(c):
        W = mixing.dense(k)
        if view == "eavesdropper":
            send = sorted({i for i, j in pairs if W[j, i] != 0})
        else:
            outside = np.ones(m, dtype=bool)
            outside[list(agents)] = False
            send = np.flatnonzero((W[list(agents)] != 0).any(axis=0) & outside).tolist()
        rows.append(phi[send])
        phi = W @ phi
    return np.vstack(rows) if rows else np.zeros((0, m))


def _senders(network: Network, view: str, agents: tuple[int, ...], edges: tuple) -> list[int]:
    if view == "eavesdropper":
        ends = set()
        for e in edges:
            i, j = (int(v) for v in e)
            if not network.graph.has_edge(i, j):
                raise ConfigError(f"edges: ({i}, {j}) is not an edge of the network", field="edges")
            ends |= {i, j}
        return sorted(ends)
    return sorted({int(l) for o in agents for l in network.graph.neighbors(o)} - set(agents))


def entry_view(network: Network, params: CapeGossipParams, min_rows: int, *, view: str = "neighbour",
               agents: Iterable[int] = (), edges: Iterable[tuple[int, int]] = (),
               schedule: MixingSchedule | None = None) -> EntryView:
    """The per-entry linear view (module docstring).

    ``neighbour``: one site ``agents = (o,)`` receiving every message its neighbours send; ``coalition``:
    the sites ``agents``, pooling their knowledge (edge draws they share cancel); ``eavesdropper``: every
    message on the listed ``edges`` (both directions), knowing no noise. ``min_rows`` sets the noise
    stds (``params.stds``). Under a ``schedule`` round ``k`` mixes with ``W_{k-1}`` and the view holds
    the messages of :func:`_schedule_message_rows` (the observer knows the schedule).
    """
    check_choice(view, "view", CAPE_GOSSIP_VIEWS)
    m = network.m
    own = tuple(sorted({check_int(a, "agents", 0) for a in agents})) if view != "eavesdropper" else ()
    if any(a >= m for a in own) or (view == "neighbour" and len(own) != 1) or \
            (view == "coalition" and not own):
        raise ConfigError(f"agents: view {view!r} needs {'one site' if view == 'neighbour' else 'sites'}"
                          f" among 0..{m - 1}, got {list(own)}", field="agents")
    E = edge_list(network)
    if schedule is None:
        K = _message_rows(network.dense_W(), _senders(network, view, own, tuple(edges)),
                          params.consensus_steps)
    else:
        K = _schedule_message_rows(RoundMixing(network, schedule, params.consensus_steps), view, own,
                                   tuple(edges), params.consensus_steps)
    tau_e, tau_g = params.stds(min_rows)
    owned = np.isin(E, own).any(axis=1) if own else np.zeros(len(E), dtype=bool)
    free_edges, free_sites = E[~owned], np.setdiff1d(np.arange(m), own)
    # K [tau_e M | tau_g I] on the unknown columns, without the m x (|E| + m) noise matrix: the column of
    # edge (i, j) is tau_e (K e_i - K e_j), the column of site s is tau_g K e_s
    B = np.hstack([K[:, free_edges[:, 0]] * tau_e - K[:, free_edges[:, 1]] * tau_e,
                   K[:, free_sites] * tau_g])
    J = K.copy()
    J[:, list(own)] = 0.0
    return EntryView(J=J, B=B, own=own, label=view if view == "eavesdropper" else
                     "+".join(map(str, own)))


@dataclass(frozen=True, slots=True, kw_only=True)
class CapeGossipPair:
    """Exact leakage of site ``target`` to a view: ``mu = sqrt(kappa) Delta(N_target)``."""

    observer: str
    target: int
    kappa: float
    """``j_s^T (B B^T)^+ j_s``, per unit shift of one entry (``inf``: outside the noise's range)."""
    mu: float
    delta: float
    epsilon: float

    def to_row(self) -> dict[str, object]:
        """Tidy row."""
        return {"observer": self.observer, "target": self.target, "kappa": self.kappa, "mu": self.mu,
                "delta": self.delta, "epsilon": self.epsilon}


def audit_cape_gossip(network: Network, params: CapeGossipParams, sizes: tuple[int, ...], *,
                      view: str = "neighbour", agents: Iterable[int] = (),
                      edges: Iterable[tuple[int, int]] = (), delta: float = 1e-5,
                      adjacency: str = "row-replacement",
                      schedule: MixingSchedule | None = None) -> list[CapeGossipPair]:
    """Exact ``(mu, epsilon)`` of every site outside the view (module docstring).

    ``sizes`` are the sites' row counts (``N_s``; the smallest sets the noise); ``adjacency`` selects the
    sensitivity ``Delta(N_s)`` protected (:data:`~dpgossip.protocols.cape.star.SENSITIVITIES`);
    ``schedule`` as in :func:`entry_view`.
    """
    check_choice(adjacency, "adjacency", tuple(SENSITIVITIES))
    if len(sizes) != network.m:
        raise ConfigError(f"sizes must list one row count per site ({network.m}), got {len(sizes)}",
                          field="sizes")
    ev = entry_view(network, params, min(sizes), view=view, agents=agents, edges=edges, schedule=schedule)
    if ev.J.shape[0] == 0:                                  # the view holds no message
        return [CapeGossipPair(observer=ev.label, target=int(s), kappa=0.0, mu=0.0, delta=delta,
                               epsilon=0.0) for s in np.setdiff1d(np.arange(network.m), ev.own)]
    release = ev.release
    white = whiten_release(release)
    pairs = []
    for s, cols in zip(release.targets.tolist(), release.columns, strict=True):
        c = white.C[:, cols[0]]
        kappa = math.inf if white.outside[cols[0]] else float(c @ c)
        mu = math.sqrt(kappa) * second_moment_sensitivity(sizes[s], adjacency)
        pairs.append(CapeGossipPair(observer=release.label, target=s, kappa=kappa, mu=mu, delta=delta,
                                    epsilon=gaussian_mechanism_epsilon(mu, delta)))
    return pairs
