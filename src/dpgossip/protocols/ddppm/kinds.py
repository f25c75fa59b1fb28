"""The D-DP-PM kinds: ``ddppm`` (001, Algorithm 1; the default kind) and ``ddppm-floorfree`` (the
floor-free variant, rank 1; docs/floorfree.md).

``ddppm`` has no guarantee of its own: it is audited pair by pair with a worst-case neighbour search
as ``[privacy]`` says (:attr:`~dpgossip.protocols.registry.ProtocolKind.pair_audit`), and runs through
the scenario layer's own runner (the section ``[privacy]`` and its hooks belong to the scenario layer).

``ddppm-floorfree`` reads ``[floorfree]`` (:data:`FLOORFREE_FIELDS`): the noise as a multiplier ``s`` or
a budget ``epsilon`` (the ``s`` at which the run, ``T + 1`` composed Gaussian mechanisms of multiplier
``s``, is exactly ``(epsilon, delta)`` as ``sqrt(T + 1)/s``-GDP, by the analytic Gaussian mechanism at
sensitivity ``sqrt(T + 1)``; ``sqrt(T)`` without ``disseminate``); exactly one of the two; ``delta``;
``adjacency`` (``bounded`` | ``replace-one``); ``disseminate``; ``audit``, ``audit_targets`` (how many
agents, from agent 0, the audit takes as targets) and ``audit_rows`` (climb only that many rows, the
best of a closed-form screening of every row). The columns of a run:
:mod:`dpgossip.protocols.ddppm.floorfree_columns`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from dpgossip.errors import ConfigError, renamed_fields
from dpgossip.privacy.mechanism import analytic_gaussian_sigma
from dpgossip.protocols.ddppm.floorfree import FLOORFREE_ADJACENCIES, FloorFreeParams
from dpgossip.protocols.ddppm.floorfree_columns import floorfree_columns
from dpgossip.protocols.ddppm.floorfree_guarantee import floorfree_guarantee
from dpgossip.protocols.ddppm.protocol import DdppmFloorFree
from dpgossip.protocols.ddppm.views import VIEW_KINDS
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

__all__ = ["FLOORFREE_FIELDS", "floorfree_protocol", "check_floorfree_config", "floorfree_preflight"]

FLOORFREE_FIELDS: dict[str, Field] = {
    **noise_fields("s, the multiplier of every release"),
    "adjacency": Field(kind=str, default="bounded", choices=tuple(FLOORFREE_ADJACENCIES),
                       doc="bounded (||x - x'|| <= 1) or replace-one (any row of the unit ball)"),
    "disseminate": Field(kind=bool, default=True, doc="send the noisy q^(T) to everyone"),
    "audit_targets": Field(kind=int, default=None, low=1, sweep=False,
                           doc="audit agents 0..audit_targets-1 as targets (default every agent)"),
    "audit_rows": Field(kind=int, default=None, low=1, sweep=False,
                        doc="screen every row in closed form and climb only the audit_rows best "
                        "(default: climb every row)"),
}
"""The keys of ``[floorfree]``."""

_DOC = ("Settings of the floor-free D-DP-PM for the points whose protocol.kind is ddppm-floorfree "
        "(docs/floorfree.md, docs/protocol-frontier.md).")


def check_floorfree_config(config: Mapping[str, Any]) -> None:
    """Exactly one of ``floorfree.noise_multiplier`` and ``floorfree.epsilon``; ``protocol.rank``
    is 1 (a swept rank is checked per point, by :class:`DdppmFloorFree`)."""
    check_noise_section("floorfree", config)
    rank = config["protocol"]["rank"]
    if not isinstance(rank, list) and rank != 1:
        raise ConfigError(f"protocol.rank must be 1 for protocol.kind = 'ddppm-floorfree' (it "
                          f"estimates the top component only), got {rank!r}", field="protocol.rank")


def floorfree_preflight(inputs: PointInputs) -> None:
    """``floorfree.audit_targets`` at most the number of agents (when the run is audited)."""
    ff = inputs.settings
    if ff["audit"] and ff["audit_targets"] is not None and ff["audit_targets"] > inputs.data.m:
        raise ConfigError(f"floorfree.audit_targets = {ff['audit_targets']} must be <= the number of "
                          f"agents, {inputs.data.m} (it audits agents 0..audit_targets-1)",
                          field="floorfree.audit_targets")


def floorfree_protocol(inputs: PointInputs) -> DdppmFloorFree:
    """The ``ddppm-floorfree`` protocol of a point (``s`` calibrated when ``floorfree.epsilon`` is set:
    ``T + 1`` releases of multiplier ``s`` are ``sqrt(T + 1)/s``-GDP, exact by the analytic Gaussian
    mechanism at sensitivity ``sqrt(T + 1)``)."""
    ff, T = inputs.settings, inputs.iterations
    s = ff["noise_multiplier"]
    if s is None:
        s = analytic_gaussian_sigma(ff["epsilon"], ff["delta"], math.sqrt(T + int(ff["disseminate"])))
    params = FloorFreeParams(iterations=T, consensus_steps=inputs.consensus_steps,
                             noise_multiplier=s, adjacency=ff["adjacency"], disseminate=ff["disseminate"])
    with renamed_fields({"rank": "protocol.rank"}):
        return DdppmFloorFree(params, rank=inputs.rank)


def _build_floorfree(inputs: PointInputs) -> KindPoint:
    protocol = floorfree_protocol(inputs)
    return KindPoint(protocol=protocol,
                     engine=lambda conditions: ViewEngineProtocol(protocol, conditions),
                     columns=lambda result, repeat: floorfree_columns(inputs.data, inputs.network,
                                                                      result, inputs.settings),
                     row=protocol.params.to_row())


def _floorfree_guarantee(inputs: PointInputs) -> float:
    params = floorfree_protocol(inputs).params
    return float(floorfree_guarantee(params, inputs.settings["delta"]).epsilon_pld)


def _floorfree_example() -> PointInputs:
    return small_inputs(with_defaults(FLOORFREE_FIELDS, noise_multiplier=4.0, audit_rows=2,
                                      audit_targets=2), rank=1)


register(ProtocolKind(
    name="ddppm", family="ddppm", estimates="top-r left singular vectors of X (one slice per agent)",
    paper="001, Algorithm 1 (gossip power method with a noise floor)", side="left", views=VIEW_KINDS,
    guarantee="none (audited pair by pair: a lower estimate)", section="privacy", pair_audit=True,
    label="D-DP-PM"))
register(ProtocolKind(
    name="ddppm-floorfree", family="ddppm",
    estimates="top left singular vector of X (rank 1, one slice per agent)",
    paper="the floor-free variant of 001's Algorithm 1 (docs/floorfree.md)", side="left",
    views=("eavesdropper",), guarantee="(eps, delta)-DP, PLD accountant of T + 1 Gaussian releases",
    section="floorfree", fields=FLOORFREE_FIELDS, section_doc=_DOC, requires_section=True,
    check=check_floorfree_config, preflight=floorfree_preflight, build=_build_floorfree,
    calibration=NoiseCalibration(
        multiplier=lambda inputs: float(floorfree_protocol(inputs).params.noise_multiplier),
        guarantee=_floorfree_guarantee,
        calibration="analytic Gaussian mechanism at sensitivity sqrt(releases): T + 1, or T "
                    "without floorfree.disseminate",
        accountant="PLD accountant of the releases"),
    example=_floorfree_example))
