"""The D-DP-PM kinds: ``ddppm`` (Campbell et al., Algorithm 1; the default kind) and ``ddppm-floorfree`` (the
floor-free variant, rank 1; docs/floorfree.md).

``ddppm`` has no guarantee of its own: it is audited pair by pair with a worst-case neighbour search
as ``[privacy]`` says (:attr:`~dpgossip.protocols.registry.ProtocolKind.pair_audit`), and a scenario runs
it through the scenario layer's own runner (the section ``[privacy]`` and its hooks belong to the
scenario layer). Its ``build`` (:func:`ddppm_protocol`, the engine form of
:mod:`dpgossip.protocols.ddppm.engine_protocol`, no columns) and ``example`` make it inherit the contract
test of every kind; its ``view_residual`` compares every message of an engine run with the release model
(:mod:`dpgossip.protocols.ddppm.transcript_view`).

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
from dpgossip.protocols.ddppm.engine_protocol import DdppmEngineProtocol
from dpgossip.protocols.ddppm.floorfree import FLOORFREE_ADJACENCIES, FloorFreeParams
from dpgossip.protocols.ddppm.floorfree_columns import floorfree_columns
from dpgossip.protocols.ddppm.floorfree_guarantee import floorfree_guarantee
from dpgossip.protocols.ddppm.params import resolve_params
from dpgossip.protocols.ddppm.protocol import Ddppm, DdppmFloorFree
from dpgossip.protocols.ddppm.transcript_view import ddppm_view_residual, floorfree_view_residual
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

__all__ = ["FLOORFREE_FIELDS", "floorfree_protocol", "check_floorfree_config", "floorfree_preflight",
           "ddppm_protocol"]

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
                     engine=lambda conditions: ViewEngineProtocol(protocol, conditions,
                                                                  record_transcript=True),
                     columns=lambda result, repeat: floorfree_columns(inputs.data, inputs.network,
                                                                      result, inputs.settings),
                     view_residual=lambda record, data: floorfree_view_residual(record, data,
                                                                                inputs.network),
                     row=protocol.params.to_row())


def _floorfree_guarantee(inputs: PointInputs) -> float:
    params = floorfree_protocol(inputs).params
    return float(floorfree_guarantee(params, inputs.settings["delta"]).epsilon_pld)


def _floorfree_example() -> PointInputs:
    return small_inputs(with_defaults(FLOORFREE_FIELDS, noise_multiplier=4.0, audit_rows=2,
                                      audit_targets=2), rank=1)


def ddppm_protocol(inputs: PointInputs) -> Ddppm:
    """The ``ddppm`` protocol of a point, its parameters by the rules of Corollary 1 of Campbell et al.
    (:func:`~dpgossip.protocols.ddppm.params.resolve_params`): ``alpha``, ``sigma_q`` and ``noise`` (a
    :class:`~dpgossip.protocols.ddppm.params.NoiseSchedule`) from ``inputs.settings`` when given
    (``[protocol]`` keys in a scenario, which runs ``ddppm`` through its own runner), else the rules'
    defaults."""
    given = inputs.settings
    with renamed_fields({"rank": "protocol.rank", "iterations": "protocol.iterations",
                         "consensus_steps": "protocol.consensus_steps"}):
        return Ddppm(resolve_params(inputs.data, inputs.network, iterations=inputs.iterations,
                                    consensus_steps=inputs.consensus_steps, rank=inputs.rank,
                                    alpha=given.get("alpha", "geometric_mean"),
                                    sigma_q=given.get("sigma_q"), noise=given.get("noise")))


def _build_ddppm(inputs: PointInputs) -> KindPoint:
    """D-DP-PM on the matrix backend and on the engine (its transcript kept); no columns: it has no
    closed-form guarantee (the scenario audits it pair by pair, :attr:`ProtocolKind.pair_audit`)."""
    protocol = ddppm_protocol(inputs)
    return KindPoint(protocol=protocol,
                     engine=lambda conditions: DdppmEngineProtocol(protocol, conditions,
                                                                   record_transcript=True),
                     view_residual=lambda record, data: ddppm_view_residual(record, data, inputs.network),
                     row=protocol.params.to_row())


def _ddppm_example() -> PointInputs:
    return small_inputs({}, rank=2, iterations=3, consensus_steps=3)


register(ProtocolKind(
    name="ddppm", family="ddppm", estimates="top-r left singular vectors of X (one slice per agent)",
    paper="Campbell et al., Algorithm 1 (gossip power method with a noise floor)", side="left",
    views=VIEW_KINDS,
    guarantee="none (audited pair by pair: a lower estimate)", section="privacy", pair_audit=True,
    build=_build_ddppm, example=_ddppm_example, label="D-DP-PM",
    schedule_refusal="its pair audit searches the worst neighbouring dataset under the release model "
                     "W^c of one fixed W, and the product of a schedule's rounds is not modelled there"))
register(ProtocolKind(
    name="ddppm-floorfree", family="ddppm",
    estimates="top left singular vector of X (rank 1, one slice per agent)",
    paper="the floor-free variant of Campbell et al.'s Algorithm 1 (docs/floorfree.md)", side="left",
    views=("eavesdropper",), guarantee="(eps, delta)-DP, PLD accountant of T + 1 Gaussian releases",
    section="floorfree", fields=FLOORFREE_FIELDS, section_doc=_DOC, requires_section=True,
    check=check_floorfree_config, preflight=floorfree_preflight, build=_build_floorfree,
    calibration=NoiseCalibration(
        multiplier=lambda inputs: float(floorfree_protocol(inputs).params.noise_multiplier),
        guarantee=_floorfree_guarantee,
        calibration="analytic Gaussian mechanism at sensitivity sqrt(releases): T + 1, or T "
                    "without floorfree.disseminate",
        accountant="PLD accountant of the releases"),
    example=_floorfree_example,
    schedule_refusal="its eavesdropper audit and its engine program mix with one fixed W"))
