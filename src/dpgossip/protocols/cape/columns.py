"""The guarantee and audit columns of one run of ``capepca`` or ``capepca-gossip``
(docs/protocol-frontier.md).

* ``capepca``: ``guaranteed_epsilon`` is the **aggregator's joint view** (every release, every
  ``F_s``: ``mu^2 = (2S/(S + 1)) (Delta/tau)^2``, :func:`dpgossip.protocols.cape.guarantee.cape_guarantee`);
  Imtiaz and Sarwate's own per-site claim is ``claimed_epsilon`` (its classical calibration with
  ``Delta = 1/N``) and the exact epsilon of one site's release alone ``site_epsilon``.
  ``audited_epsilon`` is the exact
  audit of the aggregator's view, computed without the closed form: ``mu_s^2 = Delta(N_s)^2 (C^-1)_ss``
  with ``C`` the sites' noise covariance (:func:`~dpgossip.protocols.cape.guarantee.view_covariance`)
  solved numerically, worst site (:func:`aggregator_audit`).
* ``capepca-gossip`` (noise matched to capePCA at site level ``tau``: ``tau_g = tau/sqrt(S)``,
  ``tau_e = tau sqrt((1 - 1/S)/deg)`` with ``deg`` the smallest degree, so the least-connected
  site's first message has capePCA's site variance ``tau^2`` and every other site more):
  ``guaranteed_epsilon`` is the guarantee of the view Imtiaz and Sarwate's theorem covers, one
  site's release (its first message ``Y_s^(0)``) alone, worst site in closed form
  (``std_s^2 = deg_s tau_e^2 +
  tau_g^2``, :func:`gossip_site_guarantee`); ``audited_epsilon`` the exact audit of that view through
  :func:`dpgossip.privacy.linear_audit.whiten` (:func:`site_view_audit`); ``audited_epsilon_beyond`` the
  worst neighbour (every round's messages, its own edge draws known:
  :func:`dpgossip.protocols.cape.gossip_audit.audit_cape_gossip`); with ``[cape] views``, one column
  ``audited_epsilon_<label>`` per named view (:mod:`dpgossip.protocols.cape.named_views`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from dpgossip.privacy.linear_audit import whiten
from dpgossip.protocols.cape.gossip import CapeGossipParams, incidence
from dpgossip.protocols.cape.gossip_audit import audit_cape_gossip
from dpgossip.protocols.cape.guarantee import cape_guarantee, gaussian_epsilon, view_covariance
from dpgossip.protocols.cape.named_views import named_view_epsilons
from dpgossip.protocols.cape.star import CapeParams, second_moment_sensitivity
from dpgossip.protocols.ppm.gossip import edge_list
from dpgossip.topology.network import Network
from dpgossip.topology.schedules import MixingSchedule

__all__ = ["aggregator_audit", "gossip_site_guarantee", "site_view_audit", "cape_columns",
           "cape_gossip_columns"]


def _exceeds(audited: float, guaranteed: float) -> bool:
    return bool(audited > guaranteed * (1 + 1e-6))


def aggregator_audit(sizes: tuple[int, ...], params: CapeParams, delta: float, adjacency: str) -> float:
    """Exact epsilon of capePCA's aggregator view, worst site: ``mu_s^2 = Delta(N_s)^2 (C^-1)_ss``,
    ``C`` = :func:`view_covariance` solved numerically (no closed form used)."""
    S, tau = len(sizes), params.noise_std(min(sizes))
    inv_diag = np.diag(np.linalg.solve(view_covariance(S, tau, "aggregator"), np.eye(S)))
    mu = max(second_moment_sensitivity(n, adjacency) * math.sqrt(v) for n, v in zip(sizes, inv_diag,
                                                                                    strict=True))
    return gaussian_epsilon(mu, delta)


def gossip_site_guarantee(network: Network, params: CapeGossipParams, sizes: tuple[int, ...],
                          delta: float) -> float:
    """Imtiaz and Sarwate's per-site guarantee for capepca-gossip's first messages: ``Y_s^(0)``
    alone is a Gaussian mechanism with per-entry std ``sqrt(deg_s tau_e^2 + tau_g^2)``; worst site,
    closed form."""
    tau_e, tau_g = params.stds(min(sizes))
    deg = [len(network.neighbours[s]) for s in range(network.m)]
    mus = [second_moment_sensitivity(n, params.sensitivity) / math.sqrt(g * tau_e**2 + tau_g**2)
           for n, g in zip(sizes, deg, strict=True)]
    return gaussian_epsilon(max(mus), delta)


def site_view_audit(network: Network, params: CapeGossipParams, sizes: tuple[int, ...],
                    delta: float) -> float:
    """Exact audit of one site's first message alone, worst site: the per-entry view
    ``e_s^T Y^(0) = a_s + e_s^T [tau_e M | tau_g I] zeta`` whitened by
    :func:`~dpgossip.privacy.linear_audit.whiten`."""
    tau_e, tau_g = params.stds(min(sizes))
    m = network.m
    noise = np.hstack([tau_e * incidence(edge_list(network), m), tau_g * np.eye(m)])
    mus = []
    for s in range(m):
        white = whiten(np.eye(m)[[s]], noise[[s]])
        kappa = math.inf if white.outside[s] else float(white.C[:, s] @ white.C[:, s])
        mus.append(math.sqrt(kappa) * second_moment_sensitivity(sizes[s], params.sensitivity))
    return gaussian_epsilon(max(mus), delta)


def cape_columns(params: CapeParams, sizes: tuple[int, ...], cape: Mapping[str, Any]) -> dict[str, Any]:
    """The columns of a ``capepca`` run (module docstring); ``cape`` is the point's ``[cape]``."""
    delta, sensitivity = cape["delta"], cape["sensitivity"]
    g = cape_guarantee(sizes, params, delta, adjacency=sensitivity)
    row: dict[str, Any] = {"guarantee_delta": delta, "guaranteed_epsilon": g.epsilon_aggregator,
                           "guarantee_accountant": "exact Gaussian (aggregator's joint view)",
                           "adjacency": sensitivity, "claimed_epsilon": g.epsilon_paper,
                           "site_epsilon": g.epsilon_site, "aggregator_factor": g.factor}
    if cape["audit"]:
        audited = aggregator_audit(sizes, params, delta, sensitivity)
        row.update({"audited_epsilon": audited, "audit_view": "aggregator (joint, knows every F_s)",
                    "audit_exceeds_guarantee": _exceeds(audited, g.epsilon_aggregator)})
    return row


def cape_gossip_columns(network: Network, params: CapeGossipParams, sizes: tuple[int, ...],
                        cape: Mapping[str, Any], schedule: MixingSchedule | None = None) -> dict[str, Any]:
    """The columns of a ``capepca-gossip`` run (module docstring); under a ``schedule`` the neighbour
    views read its rounds (the first message, hence the guarantee, does not depend on them)."""
    delta = cape["delta"]
    guaranteed = gossip_site_guarantee(network, params, sizes, delta)
    row: dict[str, Any] = {"guarantee_delta": delta, "guaranteed_epsilon": guaranteed,
                           "guarantee_accountant": "exact Gaussian (Imtiaz and Sarwate's claim: one "
                                                   "site's release)",
                           "adjacency": cape["sensitivity"]}
    if cape["audit"]:
        audited = site_view_audit(network, params, sizes, delta)
        worst = max(max(p.epsilon for p in audit_cape_gossip(
            network, params, sizes, view="neighbour", agents=(o,), delta=delta,
            adjacency=cape["sensitivity"], schedule=schedule)) for o in range(network.m))
        row.update({"audited_epsilon": audited, "audit_view": "one site's first message",
                    "audit_exceeds_guarantee": _exceeds(audited, guaranteed),
                    "audited_epsilon_beyond": worst,
                    "audit_beyond": "worst neighbour (every round, its own edge draws known)",
                    "beyond_exceeds_guarantee": _exceeds(worst, guaranteed)})
        if cape.get("views"):
            row.update(named_view_epsilons(network, params, sizes, cape["views"], delta=delta,
                                           adjacency=cape["sensitivity"], schedule=schedule))
    return row
