"""Run the repeats of a point of the CAPE and floor-free kinds (``capepca``, ``capepca-gossip``,
``ddppm-floorfree``).

Rows as :mod:`dpgossip.scenario.protocol_point`'s (the error of the final estimate against the exact
subspace of the protocol's side; ``iterations`` rows per iterate), with the guarantee and audit columns
of each kind (docs/protocol-frontier.md):

* ``capepca``: ``guaranteed_epsilon`` is the **aggregator's joint view** (every release, every
  ``F_s``: ``mu^2 = (2S/(S + 1)) (Delta/tau)^2``, :func:`dpgossip.protocols.cape.guarantee.cape_guarantee`);
  004's own per-site claim is ``claimed_epsilon`` (its classical calibration with ``Delta = 1/N``) and
  the exact epsilon of one site's release alone ``site_epsilon``. ``audited_epsilon`` is the exact
  audit of the aggregator's view, computed without the closed form: ``mu_s^2 = Delta(N_s)^2 (C^-1)_ss``
  with ``C`` the sites' noise covariance (:func:`~dpgossip.protocols.cape.guarantee.view_covariance`)
  solved numerically, worst site.
* ``capepca-gossip`` (noise matched to capePCA at site level ``tau``: ``tau_g = tau/sqrt(S)``,
  ``tau_e = tau sqrt((1 - 1/S)/deg)`` with ``deg`` the smallest degree, so the least-connected
  site's first message has capePCA's site variance ``tau^2`` and every other site more):
  ``guaranteed_epsilon`` is the guarantee of the view 004's theorem covers, one site's release (its
  first message ``Y_s^(0)``) alone, worst site in closed form (``std_s^2 = deg_s tau_e^2 +
  tau_g^2``); ``audited_epsilon`` the exact audit of that view through
  :func:`dpgossip.privacy.linear_audit.whiten`; ``audited_epsilon_beyond`` the worst neighbour
  (every round's messages, its own edge draws known:
  :func:`dpgossip.protocols.cape.gossip_audit.audit_cape_gossip`).
* ``ddppm-floorfree``: ``guaranteed_epsilon`` is the PLD accountant's epsilon of ``T + 1`` composed
  Gaussian mechanisms of multiplier ``s``
  (:func:`dpgossip.protocols.ddppm.floorfree_guarantee.floorfree_guarantee`;
  ``gdp_epsilon`` is the exact ``mu``-GDP figure); ``audited_epsilon`` the audit of the eavesdropper,
  who sees every release the guarantee covers
  (:func:`dpgossip.protocols.ddppm.floorfree_audit.audit_floorfree`:
  exact for the neighbour it reports, a lower estimate of the per-instance worst case).

Noise given by a budget is calibrated to the kind's own guarantee: capePCA's aggregator view, the site
view for capepca-gossip, the GDP composition for the floor-free variant.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpgossip.errors import ConfigError, renamed_fields
from dpgossip.privacy.linear_audit import whiten
from dpgossip.privacy.mechanism import analytic_gaussian_sigma
from dpgossip.protocols.cape.gossip import CapeGossipParams, incidence
from dpgossip.protocols.cape.gossip_audit import audit_cape_gossip
from dpgossip.protocols.cape.guarantee import (
    calibrate_cape_noise,
    cape_guarantee,
    gaussian_epsilon,
    view_covariance,
)
from dpgossip.protocols.cape.star import CapeParams, second_moment_sensitivity
from dpgossip.protocols.ddppm.floorfree import FloorFreeParams
from dpgossip.protocols.ddppm.floorfree_audit import audit_floorfree
from dpgossip.protocols.ddppm.floorfree_guarantee import floorfree_guarantee
from dpgossip.protocols.interface import CapePca, CapePcaGossip, DdppmFloorFree, PrivateProtocol
from dpgossip.protocols.ppm.gossip import edge_list
from dpgossip.scenario.point import PointSpec
from dpgossip.scenario.problem import Problem

__all__ = ["cape_protocol", "floorfree_protocol", "aggregator_audit", "site_view_audit",
           "gossip_site_guarantee", "cape_point_protocol", "cape_point_columns"]


def _exceeds(audited: float, guaranteed: float) -> bool:
    return bool(audited > guaranteed * (1 + 1e-6))


def _cape_spec(spec: PointSpec) -> Any:
    if spec.cape is None:
        raise ConfigError(f"protocol.kind = {spec.protocol.kind!r} needs a [cape] section", field="cape")
    return spec.cape


def cape_protocol(spec: PointSpec, problem: Problem) -> PrivateProtocol:
    """The ``capepca`` or ``capepca-gossip`` protocol of a point (noise calibrated when ``cape.epsilon``
    is set: aggregator view for ``capepca``, site view for ``capepca-gossip``)."""
    cape, S = _cape_spec(spec), problem.data.m
    gossip = spec.protocol.kind == "capepca-gossip"
    nm = cape.noise_multiplier
    if nm is None:
        nm = calibrate_cape_noise(cape.epsilon, cape.delta, S, view="site" if gossip else "aggregator")
    if not gossip:
        return CapePca(CapeParams(k=spec.protocol.rank, noise_multiplier=nm,
                                  sensitivity=cape.sensitivity))
    min_degree = max(min(len(n) for n in problem.network.neighbours), 1)
    return CapePcaGossip(CapeGossipParams(
        k=spec.protocol.rank, consensus_steps=spec.protocol.consensus_steps,
        edge_multiplier=nm * math.sqrt((1 - 1 / S) / min_degree), own_multiplier=nm / math.sqrt(S),
        sensitivity=cape.sensitivity))


def floorfree_protocol(spec: PointSpec) -> PrivateProtocol:
    """The ``ddppm-floorfree`` protocol of a point (``s`` calibrated when ``floorfree.epsilon`` is set:
    ``T + 1`` releases of multiplier ``s`` are ``sqrt(T + 1)/s``-GDP, exact by the analytic Gaussian
    mechanism at sensitivity ``sqrt(T + 1)``)."""
    ff = spec.floorfree
    if ff is None:
        raise ConfigError("protocol.kind = 'ddppm-floorfree' needs a [floorfree] section",
                          field="floorfree")
    T = spec.protocol.iterations
    s = ff.noise_multiplier
    if s is None:
        s = analytic_gaussian_sigma(ff.epsilon, ff.delta, math.sqrt(T + int(ff.disseminate)))
    params = FloorFreeParams(iterations=T, consensus_steps=spec.protocol.consensus_steps,
                             noise_multiplier=s, adjacency=ff.adjacency, disseminate=ff.disseminate)
    with renamed_fields({"rank": "protocol.rank"}):
        return DdppmFloorFree(params, rank=spec.protocol.rank)


def cape_point_protocol(spec: PointSpec, problem: Problem) -> PrivateProtocol:
    """The protocol object of a point of the CAPE and floor-free kinds (either backend: with
    ``backend = "engine"``
    :mod:`dpgossip.scenario.protocol_point` runs it through
    :class:`~dpgossip.protocols.nodes.view_protocol.ViewEngineProtocol`)."""
    if spec.protocol.kind == "ddppm-floorfree":
        return floorfree_protocol(spec)
    return cape_protocol(spec, problem)


def aggregator_audit(sizes: tuple[int, ...], params: CapeParams, delta: float, adjacency: str) -> float:
    """Exact epsilon of capePCA's aggregator view, worst site: ``mu_s^2 = Delta(N_s)^2 (C^-1)_ss``,
    ``C`` = :func:`view_covariance` solved numerically (no closed form used)."""
    S, tau = len(sizes), params.noise_std(min(sizes))
    inv_diag = np.diag(np.linalg.solve(view_covariance(S, tau, "aggregator"), np.eye(S)))
    mu = max(second_moment_sensitivity(n, adjacency) * math.sqrt(v) for n, v in zip(sizes, inv_diag,
                                                                                    strict=True))
    return gaussian_epsilon(mu, delta)


def gossip_site_guarantee(network: Any, params: CapeGossipParams, sizes: tuple[int, ...],
                          delta: float) -> float:
    """004's per-site guarantee for capepca-gossip's first messages: ``Y_s^(0)`` alone is a Gaussian
    mechanism with per-entry std ``sqrt(deg_s tau_e^2 + tau_g^2)``; worst site, closed form."""
    tau_e, tau_g = params.stds(min(sizes))
    deg = [len(network.neighbours[s]) for s in range(network.m)]
    mus = [second_moment_sensitivity(n, params.sensitivity) / math.sqrt(g * tau_e**2 + tau_g**2)
           for n, g in zip(sizes, deg, strict=True)]
    return gaussian_epsilon(max(mus), delta)


def site_view_audit(network: Any, params: CapeGossipParams, sizes: tuple[int, ...],
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


def _cape_columns(protocol: CapePca, problem: Problem, spec: PointSpec) -> dict[str, Any]:
    cape, sizes = spec.cape, problem.data.sizes
    g = cape_guarantee(sizes, protocol.params, cape.delta, adjacency=cape.sensitivity)
    row: dict[str, Any] = {"guarantee_delta": cape.delta, "guaranteed_epsilon": g.epsilon_aggregator,
                           "guarantee_accountant": "exact Gaussian (aggregator's joint view)",
                           "adjacency": cape.sensitivity, "claimed_epsilon": g.epsilon_paper,
                           "site_epsilon": g.epsilon_site, "aggregator_factor": g.factor}
    if cape.audit:
        audited = aggregator_audit(sizes, protocol.params, cape.delta, cape.sensitivity)
        row.update({"audited_epsilon": audited, "audit_view": "aggregator (joint, knows every F_s)",
                    "audit_exceeds_guarantee": _exceeds(audited, g.epsilon_aggregator)})
    return row


def _gossip_columns(protocol: CapePcaGossip, problem: Problem, spec: PointSpec) -> dict[str, Any]:
    cape, sizes, network = spec.cape, problem.data.sizes, problem.network
    guaranteed = gossip_site_guarantee(network, protocol.params, sizes, cape.delta)
    row: dict[str, Any] = {"guarantee_delta": cape.delta, "guaranteed_epsilon": guaranteed,
                           "guarantee_accountant": "exact Gaussian (004's claim: one site's release)",
                           "adjacency": cape.sensitivity}
    if cape.audit:
        audited = site_view_audit(network, protocol.params, sizes, cape.delta)
        worst = max(max(p.epsilon for p in audit_cape_gossip(
            network, protocol.params, sizes, view="neighbour", agents=(o,), delta=cape.delta,
            adjacency=cape.sensitivity)) for o in range(network.m))
        row.update({"audited_epsilon": audited, "audit_view": "one site's first message",
                    "audit_exceeds_guarantee": _exceeds(audited, guaranteed),
                    "audited_epsilon_beyond": worst,
                    "audit_beyond": "worst neighbour (every round, its own edge draws known)",
                    "beyond_exceeds_guarantee": _exceeds(worst, guaranteed)})
    return row


def _floorfree_columns(result: Any, problem: Problem, spec: PointSpec) -> dict[str, Any]:
    ff = spec.floorfree
    g = floorfree_guarantee(result.params, ff.delta)
    row: dict[str, Any] = {"guarantee_delta": ff.delta, "guaranteed_epsilon": g.epsilon_pld,
                           "gdp_epsilon": g.epsilon_gdp, "guarantee_accountant": "pld",
                           "adjacency": ff.adjacency}
    if ff.audit:
        targets = None if ff.audit_targets is None else range(min(ff.audit_targets, problem.data.m))
        pairs = audit_floorfree(problem.data, problem.network, result, delta=ff.delta,
                                view="eavesdropper", targets=targets, rows=ff.audit_rows)
        audited = max(p.epsilon for p in pairs)
        row.update({"audited_epsilon": audited, "audit_view": "eavesdropper (every release)",
                    "audit_exceeds_guarantee": _exceeds(audited, g.epsilon_pld)})
    return row


def cape_point_columns(protocol: PrivateProtocol, result: Any, problem: Problem,
                    spec: PointSpec) -> dict[str, Any]:
    """Guarantee and audit columns of one repeat (module docstring)."""
    if isinstance(protocol, CapePca):
        return _cape_columns(protocol, problem, spec)
    if isinstance(protocol, CapePcaGossip):
        return _gossip_columns(protocol, problem, spec)
    return _floorfree_columns(result, problem, spec)

