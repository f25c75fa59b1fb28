"""The capePCA kinds: ``capepca`` (Imtiaz and Sarwate, Algorithm 2 on a star, every agent a site;
docs/cape.md) and ``capepca-gossip`` (its gossip form, no trusted generator and no aggregator;
docs/cape-gossip.md).

Both read ``[cape]`` (:data:`CAPE_FIELDS`): the noise as a multiplier ``tau / Delta(N_min)`` (Imtiaz
and Sarwate's site level) or a budget ``epsilon`` (the multiplier at which the kind's guarantee is
exactly
``(epsilon, delta)``: capePCA's aggregator, who sees every release and knows every ``F_s``, for
``capepca``; one site's release for ``capepca-gossip``,
:func:`dpgossip.protocols.cape.guarantee.calibrate_cape_noise`); exactly one of the two; ``delta``;
``sensitivity`` (``row-replacement``: ``sqrt(2)/N``, exact for a row replaced in the unit ball;
``paper``: Imtiaz and Sarwate's ``1/N``); ``audit``; ``views`` (capepca-gossip only: named views
audited at every point, :mod:`dpgossip.protocols.cape.named_views`). The columns of a run:
:mod:`dpgossip.protocols.cape.columns`.

``capepca-gossip``'s noise is matched to capePCA at site level ``tau``: ``tau_g = tau/sqrt(S)``,
``tau_e = tau sqrt((1 - 1/S)/deg)`` with ``deg`` the smallest degree (at least 1).
"""

from __future__ import annotations

import math
from typing import Any

from dpgossip.protocols.cape.columns import cape_columns, cape_gossip_columns, gossip_site_guarantee
from dpgossip.protocols.cape.gossip import CapeGossipParams
from dpgossip.protocols.cape.guarantee import calibrate_cape_noise, cape_guarantee
from dpgossip.protocols.cape.named_views import check_views_table
from dpgossip.protocols.cape.nodes import cape_star_network
from dpgossip.protocols.cape.protocol import CapePca, CapePcaGossip
from dpgossip.protocols.cape.star import SENSITIVITIES, CapeParams
from dpgossip.protocols.cape.transcript_view import aggregator_view_residual, gossip_view_residual
from dpgossip.protocols.examples import small_inputs, with_defaults
from dpgossip.protocols.nodes.view_protocol import ViewEngineProtocol
from dpgossip.protocols.noise_settings import check_noise_section, noise_fields
from dpgossip.protocols.registry import (
    KindPoint,
    NoiseCalibration,
    PointInputs,
    ProtocolKind,
    register,
)
from dpgossip.settings import Field

__all__ = ["CAPE_FIELDS", "cape_protocol", "cape_gossip_protocol"]


CAPE_FIELDS: dict[str, Field] = {
    **noise_fields("tau / Delta(N_min), Imtiaz and Sarwate's site noise level"),
    "sensitivity": Field(kind=str, default="row-replacement", choices=tuple(SENSITIVITIES),
                         doc="row-replacement (sqrt(2)/N, a row replaced in the unit ball) or paper "
                         "(Imtiaz and Sarwate's 1/N)"),
    "views": Field(kind="table", default=None, sweep=False, check=check_views_table,
                   read_by=("capepca-gossip",),
                   doc="named views audited at every capepca-gossip point, label = { view = neighbour "
                   "| coalition, agents = [...] } or { view = \"eavesdropper\", edges = [[i, j], ...] | "
                   "\"all\" }: the column audited_epsilon_<label>, worst site's exact epsilon "
                   "(docs/cape-gossip.md); when audit is on"),
}
"""The keys of ``[cape]``."""

_DOC = ("Settings of capePCA (Imtiaz and Sarwate) for the points whose protocol.kind is capepca or "
        "capepca-gossip "
        "(docs/cape.md, docs/cape-gossip.md, docs/protocol-frontier.md).")


def _multiplier(inputs: PointInputs, view: str) -> float:
    cape = inputs.settings
    nm = cape["noise_multiplier"]
    if nm is None:
        nm = calibrate_cape_noise(cape["epsilon"], cape["delta"], inputs.data.m, view=view)
    return nm


def cape_protocol(inputs: PointInputs) -> CapePca:
    """The ``capepca`` protocol of a point (noise calibrated to the aggregator's view when
    ``cape.epsilon`` is set)."""
    return CapePca(CapeParams(k=inputs.rank, noise_multiplier=_multiplier(inputs, "aggregator"),
                              sensitivity=inputs.settings["sensitivity"]))


def cape_gossip_protocol(inputs: PointInputs) -> CapePcaGossip:
    """The ``capepca-gossip`` protocol of a point (noise calibrated to one site's view when
    ``cape.epsilon`` is set; module docstring)."""
    S, nm = inputs.data.m, _multiplier(inputs, "site")
    min_degree = max(min(len(n) for n in inputs.network.neighbours), 1)
    return CapePcaGossip(CapeGossipParams(
        k=inputs.rank, consensus_steps=inputs.consensus_steps,
        edge_multiplier=nm * math.sqrt((1 - 1 / S) / min_degree), own_multiplier=nm / math.sqrt(S),
        sensitivity=inputs.settings["sensitivity"]), schedule=inputs.schedule)


def _point(protocol: Any, columns: Any, view_residual: Any) -> KindPoint:
    """The kind's point; its engine form keeps the transcript (for ``view_residual``)."""
    return KindPoint(protocol=protocol,
                     engine=lambda conditions: ViewEngineProtocol(protocol, conditions,
                                                                  record_transcript=True),
                     columns=columns, view_residual=view_residual, row=protocol.params.to_row())


def _build_cape(inputs: PointInputs) -> KindPoint:
    protocol, sizes = cape_protocol(inputs), inputs.data.sizes
    return _point(protocol, lambda result, repeat: cape_columns(protocol.params, sizes, inputs.settings),
                  aggregator_view_residual)


def _build_gossip(inputs: PointInputs) -> KindPoint:
    protocol, sizes = cape_gossip_protocol(inputs), inputs.data.sizes
    return _point(protocol, lambda result, repeat: cape_gossip_columns(
        inputs.network, protocol.params, sizes, inputs.settings, inputs.schedule),
        lambda record, data: gossip_view_residual(record, data, inputs.network))


def _cape_guarantee(inputs: PointInputs) -> float:
    cape = inputs.settings
    return float(cape_guarantee(inputs.data.sizes, cape_protocol(inputs).params, cape["delta"],
                                adjacency=cape["sensitivity"]).epsilon_aggregator)


def _gossip_guarantee(inputs: PointInputs) -> float:
    return float(gossip_site_guarantee(inputs.network, cape_gossip_protocol(inputs).params,
                                       inputs.data.sizes, inputs.settings["delta"]))


def _example() -> PointInputs:
    return small_inputs(with_defaults(CAPE_FIELDS, noise_multiplier=3.0), rank=2)


_COMMON: dict[str, Any] = dict(family="cape", side="right", section="cape", fields=CAPE_FIELDS,
                               section_doc=_DOC, requires_section=True,
                               check=lambda config: check_noise_section("cape", config),
                               example=_example)

register(ProtocolKind(
    name="capepca", estimates="top-k eigenvectors of the sites' mean second moment X_s^T X_s / N_s",
    paper="Imtiaz and Sarwate, Algorithm 2 (a star: trusted noise generator, aggregator)",
    views=("aggregator",),
    guarantee="exact Gaussian (eps, delta)-DP of the aggregator's joint view",
    build=_build_cape,
    calibration=NoiseCalibration(multiplier=lambda inputs: float(_multiplier(inputs, "aggregator")),
                                 guarantee=_cape_guarantee,
                                 calibration="exact Gaussian, aggregator's joint view",
                                 accountant="exact Gaussian (aggregator's joint view)"),
    engine_network=lambda network, parties: cape_star_network(parties),
    schedule_refusal="it runs no gossip rounds (a star to an aggregator)", **_COMMON))
register(ProtocolKind(
    name="capepca-gossip",
    estimates="top-k eigenvectors of the sites' mean second moment X_s^T X_s / N_s",
    paper="Imtiaz and Sarwate, Algorithm 2 in gossip form (no generator, no aggregator)",
    views=("site", "neighbour"),
    guarantee="Imtiaz and Sarwate's claim: exact Gaussian (eps, delta)-DP of one site's release",
    build=_build_gossip,
    calibration=NoiseCalibration(multiplier=lambda inputs: float(_multiplier(inputs, "site")),
                                 guarantee=_gossip_guarantee,
                                 calibration="exact Gaussian, one site's release",
                                 accountant="exact Gaussian (Imtiaz and Sarwate's claim: one site's "
                                            "release)"),
    schedule_rounds=lambda inputs: inputs.consensus_steps,
    **_COMMON))
