"""The privacy auditor: the Gaussian law of what an adversary sees, Renyi divergences and (epsilon, delta).

See ``docs/privacy.md`` (reading the results) and ``docs/model.md`` (the formulas). Main entry points:

* :class:`GaussianPair` -- divergences and conversions of two Gaussians (exact, rdp, chernoff);
* :func:`audit_pairs` -- the (observer, target) matrix of a run with a worst-case neighbour search
  (its less common options in :class:`AuditOptions`);
* :class:`ComponentAuditor` -- the low-rank engine behind it, for custom views and neighbours;
* :func:`ppm_guarantee` -- the accountant of the private power method of 000 (``docs/ppm.md``), and
  :func:`audit_ppm`, its per-instance audit (never above the guarantee for the adjacency it covers);
* :func:`to_pld` -- an audited pair's privacy loss as a dp_accounting PLD, to compose with others;
* :func:`cape_guarantee` -- capePCA's guarantee, per site and for the aggregator's joint view
  (``docs/cape.md``);
* :func:`audit_gossip` -- exact pairwise network DP of gossip averaging, every target at once, beside
  :func:`muffliato_per_message` (``docs/network-dp.md``);
* :func:`run_all_pairs` -- the same for every observer of a large sparse graph, streamed to files,
  optionally on Dask (``docs/network-dp.md``, Section 5).
"""

from dpgossip.privacy.accountant import Guarantee, calibrate_ppm_noise, ppm_guarantee
from dpgossip.privacy.allpairs_run import (
    AllPairsSettings,
    iter_all_pairs,
    read_all_pairs,
    run_all_pairs,
)
from dpgossip.privacy.audit import AuditOptions, PairAudit, PairResult, audit_pairs, view_pair
from dpgossip.privacy.auditor import ComponentAuditor
from dpgossip.privacy.cape_guarantee import CapeGuarantee, cape_guarantee
from dpgossip.privacy.export import to_pld
from dpgossip.privacy.gaussian_pair import GaussianPair, SupportMismatch
from dpgossip.privacy.gossip_bounds import muffliato_per_message
from dpgossip.privacy.linear_audit import LinearAuditSettings, PairLeakage, audit_gossip
from dpgossip.privacy.neighbours import NEIGHBOUR_KINDS, Neighbour, candidate_neighbours
from dpgossip.privacy.ppm_audit import PpmAudit, audit_ppm
from dpgossip.privacy.ppm_gossip_audit import (
    PpmGossipAudit,
    audit_ppm_gossip,
    coalition_view,
    eavesdropper_view,
    sum_view,
)
from dpgossip.privacy.release import ReleaseModel, build_release_model
from dpgossip.privacy.views import VIEW_KINDS, View, make_view
from dpgossip.protocol.mechanism import (
    analytic_gaussian_sigma,
    classical_gaussian_sigma,
    gaussian_mechanism_delta,
)

__all__ = [
    "GaussianPair", "SupportMismatch", "audit_pairs", "AuditOptions", "PairAudit", "PairResult",
    "view_pair",
    "ComponentAuditor", "Neighbour", "candidate_neighbours", "NEIGHBOUR_KINDS", "ReleaseModel",
    "build_release_model", "View", "make_view", "VIEW_KINDS", "analytic_gaussian_sigma",
    "classical_gaussian_sigma", "gaussian_mechanism_delta", "Guarantee", "ppm_guarantee",
    "calibrate_ppm_noise", "to_pld", "CapeGuarantee", "cape_guarantee", "audit_gossip",
    "LinearAuditSettings", "PairLeakage", "muffliato_per_message", "PpmAudit", "audit_ppm",
    "PpmGossipAudit", "audit_ppm_gossip", "coalition_view", "eavesdropper_view", "sum_view",
    "AllPairsSettings", "run_all_pairs", "iter_all_pairs", "read_all_pairs",
]
