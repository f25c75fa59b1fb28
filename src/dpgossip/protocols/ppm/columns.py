"""The guarantee and audit columns of one run of a ``ppm*`` kind (docs/ppm.md).

* ``guaranteed_epsilon``: :func:`dpgossip.protocols.ppm.guarantee.realised_guarantee` (PLD accountant)
  of the run's noise multipliers under ``ppm.adjacency``, at ``ppm.delta``: a DP guarantee;
* ``audited_epsilon``: the per-instance audit of **what the guarantee covers** (the same view and
  adjacency), so ``audit_exceeds_guarantee`` is a check that can fail and must not: for ``ppm`` and
  ``ppm-federated`` :func:`dpgossip.protocols.ppm.audit.audit_ppm` of the server's view at ``ppm.delta``
  with the neighbours of the adjacency (``bounded`` for ``bounded-row-replacement``, ``replace-one``
  for ``row-replacement``: the exact epsilon of the worst neighbour found along the realised
  trajectory, a LOWER ESTIMATE of the per-instance worst case; ``element``: the exact supremum over
  Nicolas et al.'s Eq. (7) ball along the trajectory);
* ``audited_epsilon_beyond`` (with ``audit_beyond`` naming it): the audit of a view or adjacency the
  guarantee does **not** cover, where one matters: for the ``element`` adjacency, replacing a row
  (``replace-one``); for ``ppm-gossip``, the worst single agent. ``beyond_exceeds_guarantee`` flags
  rows where it exceeds the guarantee: a statement about the guarantee's scope, not a contradiction.

The server of ``ppm-federated`` sees only the sums, which are the central releases (Nicolas et al.,
Theorem 5.2), so both kinds have the same audited view.

Every row also carries the guarantee's other accountings of the same multipliers
(:func:`accounting_columns`): ``zcdp_rho`` and ``zcdp_epsilon`` (the exact zCDP conversion),
``rdp_epsilon`` with its ``rdp_order`` (the RDP accountant) and ``gdp_epsilon`` (the exact Gaussian
composition, the tight value the PLD accountant approaches from above).

``ppm-gossip`` has no server. Its ``guaranteed_epsilon`` is Nicolas et al.'s claim for Algorithm 2
(the central guarantee, which covers a party that sees only the sum); ``audited_epsilon`` is the
exact audit of the
sum's view, and ``audited_epsilon_beyond`` the worst single agent's view
(:func:`dpgossip.protocols.ppm.gossip_audit.coalition_view` of every agent, every target). Both are
exact for the row-replacement adjacencies, conditional on the realised trajectory
(:mod:`dpgossip.protocols.ppm.gossip_audit`). An agent knows its own share of the noise, so once the sum
reaches it, it sees more than a server would (docs/ppm.md, ppm-gossip). With the audit its row also
carries the ``mu`` of both views (``audited_mu`` of the sum, ``audited_mu_beyond`` of the worst single
agent): the Gaussian ``mu`` whose exact ``epsilon(delta)`` the two epsilons are.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dpgossip.data.partition import PartitionedData
from dpgossip.privacy.accountant import Guarantee
from dpgossip.protocols.ppm.audit import audit_ppm
from dpgossip.protocols.ppm.central import PpmResult
from dpgossip.protocols.ppm.gossip import PpmGossipParams, PpmGossipResult, ppm_mixing
from dpgossip.protocols.ppm.gossip_audit import (
    audit_ppm_gossip,
    coalition_view,
    schedule_coalition_view,
    sum_view,
)
from dpgossip.protocols.ppm.guarantee import ppm_guarantee, realised_guarantee
from dpgossip.topology.network import Network
from dpgossip.topology.schedules import MixingSchedule

__all__ = ["AUDIT_NEIGHBOURS", "BEYOND", "exceeds", "accounting_columns", "central_columns",
           "GossipAudit"]

AUDIT_NEIGHBOURS: dict[str, str] = {"row-replacement": "replace-one",
                                    "bounded-row-replacement": "bounded", "element": "element"}
"""The auditor's neighbour kind for each adjacency (the one its guarantee covers)."""

BEYOND = {"element": ("replace-one", "row replacement (not covered by the element guarantee)")}
"""Adjacencies whose guarantee leaves out a change worth auditing: the auditor's kind and a label."""


def exceeds(audited: float, guaranteed: float) -> bool:
    """``audited > guaranteed`` beyond a relative ``1e-6`` (rounding of the two computations)."""
    return bool(audited > guaranteed * (1 + 1e-6))


def accounting_columns(guarantee: Guarantee) -> dict[str, Any]:
    """The accountings of ``guarantee`` besides the PLD's ``guaranteed_epsilon`` (module docstring).

    Parameters
    ----------
    guarantee
        The composed guarantee of the run's (or the claim's) noise multipliers.

    Returns
    -------
    dict
        ``zcdp_rho``, ``zcdp_epsilon``, ``rdp_epsilon``, ``rdp_order``, ``gdp_epsilon``.
    """
    return {"zcdp_rho": guarantee.rho, "zcdp_epsilon": guarantee.epsilon_zcdp,
            "rdp_epsilon": guarantee.epsilon_rdp, "rdp_order": guarantee.rdp_order,
            "gdp_epsilon": guarantee.epsilon_gdp}


def central_columns(data: PartitionedData, result: PpmResult, ppm: Mapping[str, Any],
                    repeat: int) -> dict[str, Any]:
    """The columns of a ``ppm`` or ``ppm-federated`` run (module docstring); ``ppm`` is the point's
    ``[ppm]`` section, ``repeat`` seeds the audit's search."""
    delta, adjacency = ppm["delta"], ppm["adjacency"]
    guarantee = realised_guarantee(result, delta, adjacency=adjacency)
    row: dict[str, Any] = {"guarantee_delta": delta, "guaranteed_epsilon": guarantee.epsilon_pld,
                           "guarantee_accountant": "pld", "adjacency": adjacency,
                           **accounting_columns(guarantee)}
    if ppm["audit"]:
        audit = audit_ppm(data, result, delta=delta, neighbours=AUDIT_NEIGHBOURS[adjacency], seed=repeat)
        row["audited_epsilon"] = audit.epsilon
        row["audit_neighbours"] = AUDIT_NEIGHBOURS[adjacency]
        row["audit_exceeds_guarantee"] = exceeds(audit.epsilon, guarantee.epsilon_pld)
        if adjacency in BEYOND:
            kind, label = BEYOND[adjacency]
            beyond = audit_ppm(data, result, delta=delta, neighbours=kind, seed=repeat)
            row.update({"audited_epsilon_beyond": beyond.epsilon, "audit_beyond": label,
                        "beyond_exceeds_guarantee": exceeds(beyond.epsilon, guarantee.epsilon_pld)})
    return row


class GossipAudit:
    """What every repeat of a ppm-gossip point shares: Nicolas et al.'s claim (its noise multipliers do not
    depend on the run) and the views audited (they depend on the network and ``c`` only; under a
    schedule on the schedule too, one view per agent and iteration: the observer knows the
    schedule)."""

    def __init__(self, network: Network, params: PpmGossipParams, ppm: Mapping[str, Any],
                 schedule: MixingSchedule | None = None) -> None:
        self.ppm = ppm
        self.claim = ppm_guarantee(params.ppm, ppm["delta"])
        c, L = params.consensus_steps, params.ppm.iterations
        if not ppm["audit"]:
            self.views = []
        elif schedule is None:
            self.views = [coalition_view(network, c, o) for o in range(network.m)]
        else:
            mixing = ppm_mixing(network, params, schedule)
            self.views = [[schedule_coalition_view(mixing, l * c, c, o) for l in range(L)]
                          for o in range(network.m)]
        self.summed = sum_view(network) if ppm["audit"] else None

    def columns(self, result: PpmGossipResult) -> dict[str, Any]:
        """Nicolas et al.'s claim for ppm-gossip (the central guarantee, against a server that sees only the
        sum) and the audit of every single agent's view and of the sum (exact, conditional on the
        trajectory)."""
        ppm, claim = self.ppm, self.claim
        delta = ppm["delta"]
        row: dict[str, Any] = {"guarantee_delta": delta, "guaranteed_epsilon": claim.epsilon_pld,
                               "guarantee_accountant": "pld (Nicolas et al.'s claim: a server seeing "
                                                       "the sum)",
                               "adjacency": ppm["adjacency"], **accounting_columns(claim)}
        if ppm["audit"]:
            worst = max((audit_ppm_gossip(result, v, delta=delta).worst for v in self.views),
                        key=lambda t: t.mu)
            summed = audit_ppm_gossip(result, self.summed, delta=delta).worst
            row.update({"audited_epsilon": summed.epsilon, "audited_mu": summed.mu,
                        "audit_neighbours": "row-replacement (exact)",
                        "audit_view": "the sum (what Nicolas et al.'s claim covers)",
                        "audit_exceeds_guarantee": exceeds(summed.epsilon, claim.epsilon_pld),
                        "audited_epsilon_beyond": worst.epsilon, "audited_mu_beyond": worst.mu,
                        "audit_beyond": "worst single agent (knows its own noise share)",
                        "beyond_exceeds_guarantee": exceeds(worst.epsilon, claim.epsilon_pld)})
        return row
