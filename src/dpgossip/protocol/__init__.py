"""The algorithms as pure maths: centralized power method, D-PM and D-DP-PM, LDP baseline, the private
power method of 000 (central and federated), capePCA of 004, the linear models of gossip averaging,
metrics."""

from dpgossip.protocol.cape import CapeParams, CapeResult, run_cape, run_conventional, run_pooled
from dpgossip.protocol.ddppm import deflation_vector, run_matrix
from dpgossip.protocol.gossip import gossip, gossip_states
from dpgossip.protocol.ldp import LdpResult, ldp_sigma, run_ldp
from dpgossip.protocol.linear_gossip import (
    GOSSIP_KINDS,
    GossipView,
    LinearGossip,
    eavesdrop,
    observe,
)
from dpgossip.protocol.metrics import (
    captured_energy,
    error_per_iteration,
    sin_angle,
    subspace_distance,
)
from dpgossip.protocol.params import NoiseSchedule, ProtocolParams, resolve_params
from dpgossip.protocol.power import Spectrum, centralized_power_method, top_singular
from dpgossip.protocol.ppm import PpmParams, PpmResult, run_ppm, run_ppm_federated
from dpgossip.protocol.ppm_gossip import PpmGossipParams, PpmGossipResult, run_ppm_gossip
from dpgossip.protocol.result import RunResult
from dpgossip.protocol.spectrum import xi_eigenvalues, xi_matrix

__all__ = [
    "run_matrix",
    "deflation_vector",
    "gossip",
    "gossip_states",
    "LdpResult",
    "ldp_sigma",
    "run_ldp",
    "captured_energy",
    "error_per_iteration",
    "sin_angle",
    "subspace_distance",
    "NoiseSchedule",
    "ProtocolParams",
    "resolve_params",
    "Spectrum",
    "centralized_power_method",
    "top_singular",
    "RunResult",
    "xi_eigenvalues",
    "xi_matrix",
    "PpmParams",
    "PpmResult",
    "run_ppm",
    "run_ppm_federated",
    "CapeParams",
    "CapeResult",
    "run_cape",
    "run_conventional",
    "run_pooled",
    "LinearGossip",
    "GossipView",
    "observe",
    "eavesdrop",
    "GOSSIP_KINDS",
    "PpmGossipParams",
    "PpmGossipResult",
    "run_ppm_gossip",
]
