"""The kinds of the private power method of Nicolas et al.: ``ppm`` (Algorithm 1, a trusted curator),
``ppm-federated`` (Algorithm 2, every agent a client of a server behind a secure aggregation) and
``ppm-gossip`` (Algorithm 2 on the point's graph: ``protocol.consensus_steps`` rounds of gossip
averaging, pairwise edge masks); docs/ppm.md.

All three read ``[ppm]`` (:data:`PPM_FIELDS`): ``protocol.iterations`` is ``L``, ``protocol.rank`` the
target rank ``k``, and the section gives the iteration rank ``p``, the sensitivity, the adjacency and the
noise, as a multiplier ``sigma`` or a budget ``epsilon`` (the smallest ``sigma`` whose composed guarantee,
by the exact zCDP conversion, is ``epsilon`` at ``delta``:
:func:`dpgossip.privacy.accountant.calibrate_zcdp_noise`); exactly one of the two.

Each run's row carries (:mod:`dpgossip.protocols.ppm.columns`) ``guaranteed_epsilon`` (the PLD
accountant's epsilon at ``delta`` for the run's realised noise multipliers under ``adjacency``: a DP
guarantee; for ppm-gossip Nicolas et al.'s claim, the central guarantee) and, with ``audit``,
``audited_epsilon`` (the per-instance audit of the view the guarantee covers: a LOWER ESTIMATE of
the worst case, flagged
``audit_exceeds_guarantee`` when it exceeds the guarantee, which must not happen).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dpgossip.errors import ConfigError
from dpgossip.privacy.accountant import calibrate_zcdp_noise
from dpgossip.protocols.examples import small_inputs, with_defaults
from dpgossip.protocols.interface import PrivateProtocol
from dpgossip.protocols.ppm.central import PpmParams
from dpgossip.protocols.ppm.columns import GossipAudit, central_columns
from dpgossip.protocols.ppm.engine_protocol import EngineProtocol
from dpgossip.protocols.ppm.gossip import PpmGossipParams
from dpgossip.protocols.ppm.guarantee import ppm_guarantee
from dpgossip.protocols.ppm.nodes import star_network
from dpgossip.protocols.ppm.protocol import Ppm, PpmFederated, PpmGossip
from dpgossip.protocols.ppm.sensitivity import ADJACENCIES, SENSITIVITY_KINDS
from dpgossip.protocols.ppm.transcript_view import gossip_view_residual, star_view_residual
from dpgossip.protocols.registry import (
    KindPoint,
    NoiseCalibration,
    PointInputs,
    ProtocolKind,
    register,
)
from dpgossip.settings import Field

__all__ = ["PPM_FIELDS", "ppm_params", "check_ppm_config", "ppm_preflight"]

PPM_FIELDS: dict[str, Field] = {
    "block_rank": Field(kind=int, default=None, low=1,
                        doc="iteration rank p >= protocol.rank (default protocol.rank)"),
    "noise_multiplier": Field(kind=float, default=None, low=0,
                              doc="sigma: noise std over sensitivity (give this or epsilon)"),
    "epsilon": Field(kind=float, default=None, low=0, low_open=True,
                     doc="budget the noise is calibrated to by the accountant (give this or "
                     "noise_multiplier)"),
    "delta": Field(kind=float, default=1e-5, low=0, low_open=True, high=1, high_open=True,
                   doc="delta of the calibration and of the reported epsilons"),
    "sensitivity": Field(kind=str, default="improved", choices=SENSITIVITY_KINDS,
                         doc="improved (max row norm of the iterate, Nicolas et al., Thm 3.1) or prior "
                         "(sqrt(p) max entry); only the element adjacency distinguishes them"),
    "adjacency": Field(kind=str, default="row-replacement", choices=ADJACENCIES,
                       doc="which neighbouring datasets the guarantee covers (docs/ppm.md)"),
    "audit": Field(kind=bool, default=True, sweep=False,
                   doc="audit each run (per-instance lower estimate of the worst case)"),
    "mask_std": Field(kind=float, default=1.0, low=0,
                      doc="standard deviation of the pairwise edge masks of ppm-gossip"),
}
"""The keys of ``[ppm]``."""

_DOC = ("Settings of the private power method of Nicolas et al. for the points whose protocol.kind is ppm, "
        "ppm-federated or ppm-gossip (docs/ppm.md).")


def _values(value: Any) -> list[Any]:
    """The values a setting takes over a sweep: the list of an axis, else the single value."""
    return value if isinstance(value, list) else [value]


def check_ppm_config(config: Mapping[str, Any]) -> None:
    """Cross-field rules of ``[ppm]``: exactly one of ``noise_multiplier`` and ``epsilon``;
    ``block_rank >= protocol.rank`` (every swept value of either)."""
    ppm = config["ppm"]
    if (ppm["noise_multiplier"] is None) == (ppm["epsilon"] is None):
        raise ConfigError(f"ppm: give exactly one of noise_multiplier and epsilon, got "
                          f"noise_multiplier = {ppm['noise_multiplier']!r}, epsilon = "
                          f"{ppm['epsilon']!r}", field="ppm.epsilon")
    for p in _values(ppm["block_rank"]):
        for r in _values(config["protocol"]["rank"]):
            if p is not None and p < r:
                raise ConfigError(f"ppm.block_rank = {p} must be >= protocol.rank = {r} (the "
                                  "target rank k <= the iteration rank p)", field="ppm.block_rank")


def ppm_params(inputs: PointInputs) -> PpmParams:
    """The :class:`PpmParams` of a point (the noise calibrated when ``ppm.epsilon`` is set)."""
    ppm, k = inputs.settings, inputs.rank
    sigma = ppm["noise_multiplier"]
    if sigma is None:
        sigma = calibrate_zcdp_noise(ppm["epsilon"], ppm["delta"], inputs.iterations)
    return PpmParams(p=k if ppm["block_rank"] is None else ppm["block_rank"], k=k,
                     iterations=inputs.iterations, noise_multiplier=sigma,
                     sensitivity=ppm["sensitivity"], adjacency=ppm["adjacency"])


def ppm_preflight(inputs: PointInputs) -> None:
    """``ppm.block_rank`` (``p``) at most the data's columns ``d``."""
    ppm = inputs.settings
    p = inputs.rank if ppm["block_rank"] is None else ppm["block_rank"]
    if p > inputs.data.d:
        raise ConfigError(f"ppm.block_rank = {p} must be <= d = {inputs.data.d} (the data's "
                          "columns)", field="ppm.block_rank")


def _point(protocol: PrivateProtocol, columns: Any, view_residual: Any) -> KindPoint:
    """The kind's point; its engine form keeps the transcript (for ``view_residual``)."""
    return KindPoint(protocol=protocol,
                     engine=lambda conditions: EngineProtocol(protocol, conditions, record_transcript=True),
                     columns=columns, view_residual=view_residual, row=protocol.params.to_row())


def _build_central(cls: type) -> Any:
    def build(inputs: PointInputs) -> KindPoint:
        ppm_preflight(inputs)
        protocol, ppm = cls(ppm_params(inputs)), inputs.settings
        return _point(protocol, lambda result, repeat: central_columns(inputs.data, result, ppm, repeat),
                      star_view_residual)
    return build


def _build_gossip(inputs: PointInputs) -> KindPoint:
    ppm_preflight(inputs)
    protocol = PpmGossip(PpmGossipParams(ppm=ppm_params(inputs), consensus_steps=inputs.consensus_steps,
                                         mask_std=inputs.settings["mask_std"]), schedule=inputs.schedule)
    gossip = GossipAudit(inputs.network, protocol.params, inputs.settings, inputs.schedule)
    return _point(protocol, lambda result, repeat: gossip.columns(result),
                  lambda record, data: gossip_view_residual(record, data, inputs.network))


def _guarantee(inputs: PointInputs) -> float:
    return float(ppm_guarantee(ppm_params(inputs), inputs.settings["delta"]).epsilon_pld)


def _calibration(accountant: str) -> NoiseCalibration:
    return NoiseCalibration(multiplier=lambda inputs: ppm_params(inputs).noise_multiplier,
                            guarantee=_guarantee,
                            calibration="zCDP inversion (calibrate_zcdp_noise), T releases",
                            accountant=accountant)


def _example() -> PointInputs:
    return small_inputs(with_defaults(PPM_FIELDS, noise_multiplier=2.0, block_rank=2), rank=1,
                        iterations=3, consensus_steps=4)


_COMMON: dict[str, Any] = dict(family="ppm", side="right", section="ppm", fields=PPM_FIELDS,
                               section_doc=_DOC, requires_section=True, check=check_ppm_config,
                               preflight=ppm_preflight, example=_example)
_CENTRAL_ACCOUNTANT = "PLD accountant of the T releases"

register(ProtocolKind(
    name="ppm", estimates="top-k right singular subspace of X (A = X^T X)",
    paper="Nicolas et al., Algorithm 1 (trusted curator)", views=("curator",),
    guarantee="(eps, delta)-DP, PLD accountant of the L releases", build=_build_central(Ppm),
    calibration=_calibration(_CENTRAL_ACCOUNTANT), label_columns=("sensitivity", "adjacency"),
    engine_network=lambda network, parties: star_network(parties),
    schedule_refusal="it runs no gossip rounds (a star to a server)", **_COMMON))
register(ProtocolKind(
    name="ppm-federated", estimates="top-k right singular subspace of X (A = X^T X)",
    paper="Nicolas et al., Algorithm 2 (server, secure aggregation)", views=("server",),
    guarantee="(eps, delta)-DP, PLD accountant of the L releases", build=_build_central(PpmFederated),
    calibration=_calibration(_CENTRAL_ACCOUNTANT),
    engine_network=lambda network, parties: star_network(parties),
    schedule_refusal="it runs no gossip rounds (a star to a server)", **_COMMON))
register(ProtocolKind(
    name="ppm-gossip", estimates="top-k right singular subspace of X (A = X^T X)",
    paper="Nicolas et al., Algorithm 2 on a gossip graph (pairwise edge masks)",
    views=("sum", "single agent"),
    guarantee="Nicolas et al.'s claim: the central guarantee (a party that sees only the sum)",
    build=_build_gossip,
    calibration=_calibration(_CENTRAL_ACCOUNTANT
                             + " (Nicolas et al.'s claim: a party that sees only the sum)"),
    schedule_rounds=lambda inputs: inputs.iterations * inputs.consensus_steps,
    **_COMMON))
