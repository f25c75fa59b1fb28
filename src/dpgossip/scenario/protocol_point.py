"""Run the repeats of a point whose ``protocol.kind`` is a ``ppm*`` kind (``[ppm]``, docs/ppm.md) or
one of the CAPE and floor-free kinds (:mod:`dpgossip.scenario.cape_point`).

With ``backend = "engine"`` each repeat runs message by message on the engine under ``[engine]``
(:class:`dpgossip.protocols.ppm.engine_protocol.EngineProtocol`, docs/engine.md): the rows are the matrix
backend's plus the engine's status and traffic columns; a run the engine stopped (a crash, a lost
message) has ``status = "stopped"``, its reason, NaN errors and no guarantee or audit columns; a run
the parties that did not crash completed without the crashed ones (``engine_status =
"completed_with_crash"``) has ``status = "partial"``, the reason, and ``max_agent_error`` over the
agents that hold an estimate. The CAPE and floor-free kinds run on the engine through
:class:`dpgossip.protocols.nodes.view_protocol.ViewEngineProtocol`.

Each repeat ``k`` runs the protocol with ``SeedSequence(seed, spawn_key=(k,))`` (the repeat seed of
every kind, :func:`~dpgossip.scenario.runner.repeat_seed`), measures the subspace distance of its
estimate to the exact top-``k`` right singular subspace of ``X`` after every iteration, and reports the
guarantee of its accountant and (``ppm.audit``) the per-instance audit of the server's view:

* ``guaranteed_epsilon``: :func:`dpgossip.protocols.ppm.guarantee.realised_guarantee` (PLD accountant) of
  the run's noise multipliers under ``ppm.adjacency``, at ``ppm.delta``: a DP guarantee;
* ``audited_epsilon``: the per-instance audit of **what the guarantee covers** (the same view and
  adjacency), so ``audit_exceeds_guarantee`` is a check that can fail and must not: for ``ppm`` and
  ``ppm-federated`` :func:`dpgossip.protocols.ppm.audit.audit_ppm` of the server's view at ``ppm.delta``
  with the neighbours of the adjacency (``bounded`` for ``bounded-row-replacement``, ``replace-one``
  for ``row-replacement``: the exact epsilon of the worst neighbour found along the realised
  trajectory, a LOWER ESTIMATE of the per-instance worst case; ``element``: the exact supremum over
  000's Eq. (7) ball along the trajectory);
* ``audited_epsilon_beyond`` (with ``audit_beyond`` naming it): the audit of a view or adjacency the
  guarantee does **not** cover, where one matters: for the ``element`` adjacency, replacing a row
  (``replace-one``); for ``ppm-gossip``, the worst single agent. ``beyond_exceeds_guarantee`` flags
  rows where it exceeds the guarantee: a statement about the guarantee's scope, not a contradiction.

The server of ``ppm-federated`` sees only the sums, which are the central releases (000, Theorem 5.2),
so both kinds have the same audited view.

``ppm-gossip`` has no server. Its ``guaranteed_epsilon`` is 000's claim for Algorithm 2 (the central
guarantee, which covers a party that sees only the sum); ``audited_epsilon`` is the exact audit of the
sum's view, and ``audited_epsilon_beyond`` the worst single agent's view
(:func:`dpgossip.protocols.ppm.gossip_audit.coalition_view` of every agent, every target). Both are
exact for the row-replacement adjacencies, conditional on the realised trajectory
(:mod:`dpgossip.protocols.ppm.gossip_audit`). An agent knows its own share of the noise, so once the sum
reaches it, it sees more than a server would (docs/ppm.md, ppm-gossip).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from dpgossip.errors import ConfigError, renamed_fields
from dpgossip.privacy.accountant import calibrate_zcdp_noise
from dpgossip.protocols.interface import (
    Ppm,
    PpmFederated,
    PpmGossip,
    PrivateProtocol,
    ProtocolRun,
    exact_subspace,
)
from dpgossip.protocols.metrics import subspace_distance
from dpgossip.protocols.power import top_singular
from dpgossip.protocols.ppm.audit import audit_ppm
from dpgossip.protocols.ppm.central import PpmParams, PpmResult
from dpgossip.protocols.ppm.gossip import PpmGossipParams, PpmGossipResult
from dpgossip.protocols.ppm.gossip_audit import audit_ppm_gossip, coalition_view, sum_view
from dpgossip.protocols.ppm.guarantee import ppm_guarantee, realised_guarantee
from dpgossip.scenario.point import PointSpec
from dpgossip.scenario.ppm_section import PpmSpec
from dpgossip.scenario.problem import Problem

__all__ = ["ppm_params", "make_protocol", "run_protocol_point", "protocol_columns", "AUDIT_NEIGHBOURS"]

CAPE_POINT_KINDS = ("capepca", "capepca-gossip", "ddppm-floorfree")
"""Kinds run by :mod:`dpgossip.scenario.cape_point` (CAPE and floor-free; ``[cape]``, ``[floorfree]``)."""

AUDIT_NEIGHBOURS: dict[str, str] = {"row-replacement": "replace-one",
                                    "bounded-row-replacement": "bounded", "element": "element"}
"""The auditor's neighbour kind for each adjacency (the one its guarantee covers)."""

PARTIAL = {"stopped": "stopped", "completed_with_crash": "partial"}
"""The row ``status`` of an engine run that did not complete cleanly (:mod:`dpgossip.scenario.status`):
halted, or finished by the parties that did not crash."""

BEYOND = {"element": ("replace-one", "row replacement (not covered by the element guarantee)")}
"""Adjacencies whose guarantee leaves out a change worth auditing: the auditor's kind and a label."""


def ppm_params(spec: PointSpec) -> PpmParams:
    """The :class:`PpmParams` of a ``ppm*`` point (the noise calibrated when ``ppm.epsilon`` is set)."""
    ppm = spec.ppm
    if ppm is None:
        raise ConfigError(f"protocol.kind = {spec.protocol.kind!r} needs a [ppm] section", field="ppm")
    k = spec.protocol.rank
    sigma = ppm.noise_multiplier
    if sigma is None:
        sigma = calibrate_zcdp_noise(ppm.epsilon, ppm.delta, spec.protocol.iterations)
    return PpmParams(p=k if ppm.block_rank is None else ppm.block_rank, k=k,
                     iterations=spec.protocol.iterations, noise_multiplier=sigma,
                     sensitivity=ppm.sensitivity, adjacency=ppm.adjacency)


def make_protocol(spec: PointSpec, params: PpmParams) -> PrivateProtocol:
    """The protocol object of a ``ppm*`` point with its :func:`ppm_params`."""
    kind = spec.protocol.kind
    if kind == "ppm":
        return Ppm(params)
    if kind == "ppm-federated":
        return PpmFederated(params)
    if kind == "ppm-gossip":
        return PpmGossip(PpmGossipParams(ppm=params, consensus_steps=spec.protocol.consensus_steps,
                                         mask_std=spec.ppm.mask_std))
    raise ConfigError(f"protocol.kind = {kind!r} has no scenario runner", field="protocol.kind")


class _GossipAudit:
    """What every repeat of a ppm-gossip point shares: 000's claim (its noise multipliers do not
    depend on the run) and the views audited (they depend on the network and ``c`` only)."""

    def __init__(self, problem: Problem, params: PpmGossipParams, ppm: PpmSpec) -> None:
        self.ppm = ppm
        self.claim = ppm_guarantee(params.ppm, ppm.delta)
        network = problem.network
        self.views = ([coalition_view(network, params.consensus_steps, o) for o in range(network.m)]
                      if ppm.audit else [])
        self.summed = sum_view(network) if ppm.audit else None

    def columns(self, result: PpmGossipResult) -> dict[str, Any]:
        """000's claim for ppm-gossip (the central guarantee, against a server that sees only the
        sum) and the audit of every single agent's view and of the sum (exact, conditional on the
        trajectory)."""
        ppm, claim = self.ppm, self.claim
        row: dict[str, Any] = {"guarantee_delta": ppm.delta, "guaranteed_epsilon": claim.epsilon_pld,
                               "guarantee_accountant": "pld (000's claim: a server seeing the sum)",
                               "adjacency": ppm.adjacency}
        if ppm.audit:
            worst = max((audit_ppm_gossip(result, v, delta=ppm.delta).worst for v in self.views),
                        key=lambda t: t.mu)
            summed = audit_ppm_gossip(result, self.summed, delta=ppm.delta).worst
            row.update({"audited_epsilon": summed.epsilon, "audit_neighbours": "row-replacement (exact)",
                        "audit_view": "the sum (what 000's claim covers)",
                        "audit_exceeds_guarantee": _exceeds(summed.epsilon, claim.epsilon_pld),
                        "audited_epsilon_beyond": worst.epsilon,
                        "audit_beyond": "worst single agent (knows its own noise share)",
                        "beyond_exceeds_guarantee": _exceeds(worst.epsilon, claim.epsilon_pld)})
        return row


def _exceeds(audited: float, guaranteed: float) -> bool:
    return bool(audited > guaranteed * (1 + 1e-6))


def _central_columns(problem: Problem, result: PpmResult, ppm: PpmSpec, repeat: int) -> dict[str, Any]:
    guarantee = realised_guarantee(result, ppm.delta, adjacency=ppm.adjacency)
    row: dict[str, Any] = {"guarantee_delta": ppm.delta, "guaranteed_epsilon": guarantee.epsilon_pld,
                           "guarantee_accountant": "pld", "adjacency": ppm.adjacency}
    if ppm.audit:
        audit = audit_ppm(problem.data, result, delta=ppm.delta,
                          neighbours=AUDIT_NEIGHBOURS[ppm.adjacency], seed=repeat)
        row["audited_epsilon"] = audit.epsilon
        row["audit_neighbours"] = AUDIT_NEIGHBOURS[ppm.adjacency]
        row["audit_exceeds_guarantee"] = _exceeds(audit.epsilon, guarantee.epsilon_pld)
        if ppm.adjacency in BEYOND:
            kind, label = BEYOND[ppm.adjacency]
            beyond = audit_ppm(problem.data, result, delta=ppm.delta, neighbours=kind, seed=repeat)
            row.update({"audited_epsilon_beyond": beyond.epsilon, "audit_beyond": label,
                        "beyond_exceeds_guarantee": _exceeds(beyond.epsilon, guarantee.epsilon_pld)})
    return row


def _engine(spec: PointSpec, protocol: PrivateProtocol) -> Any:
    """The protocol on the engine under ``[engine]`` (``backend = "engine"``), else ``None``."""
    if spec.backend != "engine":
        return None
    from dpgossip.engine import NetworkConditions
    from dpgossip.engine.conditions import condition_fields
    from dpgossip.protocols.nodes.view_protocol import ViewEngineProtocol
    from dpgossip.protocols.ppm.engine_protocol import EngineProtocol

    with renamed_fields(condition_fields("engine")):
        conditions = NetworkConditions.from_mapping(dict(spec.engine))
    if spec.protocol.kind in CAPE_POINT_KINDS:
        return ViewEngineProtocol(protocol, conditions)
    return EngineProtocol(protocol, conditions)


def _engine_run(engine: Any, data: Any, network: Any, seed: Any) -> tuple[ProtocolRun, dict[str, Any]]:
    """One engine run in the common view, and its columns: the engine status (a stopped run is
    ``status = "stopped"``), crashed agents and traffic (as D-DP-PM's engine rows, timings left out)."""
    from dpgossip.protocols.nodes.view_protocol import ViewEngineProtocol
    from dpgossip.protocols.ppm.engine_protocol import engine_protocol_run
    from dpgossip.scenario.runner import TIMING_COLUMNS

    with renamed_fields({"conditions": "engine"}):
        res = engine.run_engine(data, network, seed)
    run = (engine.protocol_run(res, data) if isinstance(engine, ViewEngineProtocol)
           else engine_protocol_run(res))
    extra: dict[str, Any] = {"crashed_agents": list(res.outcome.crashed)}
    extra.update({"engine_status" if n == "status" else n: v for n, v in res.summary.to_row().items()
                  if n not in TIMING_COLUMNS})
    if res.status in PARTIAL:
        extra.update({"status": PARTIAL[res.status], "status_reason": res.outcome.reason})
    return run, extra


def _errors(run: ProtocolRun, truth: np.ndarray) -> np.ndarray:
    """Subspace distance of every iterate (NaN for an iterate a stopped engine run did not compute)."""
    return np.array([subspace_distance(truth, V) if np.isfinite(V).all() else math.nan
                     for V in run.trajectory])


def _max_agent_error(run: ProtocolRun, truth: np.ndarray, partial: bool) -> float:
    """Largest subspace distance of an agent's final estimate; in a ``partial`` run (agents crashed,
    the others finished) over the agents that hold one (NaN if none does)."""
    finals = [run.final] if run.agent_finals is None else list(run.agent_finals)
    errors = np.array([subspace_distance(truth, V) if np.isfinite(V).all() else math.nan for V in finals])
    if partial:
        errors = errors[np.isfinite(errors)]
    return float(errors.max()) if errors.size else math.nan


def _protocol(spec: PointSpec, problem: Problem) -> tuple[PrivateProtocol, Any]:
    """The point's protocol and ``columns(result, repeat)``: its guarantee and audit columns."""
    if spec.protocol.kind in CAPE_POINT_KINDS:
        from dpgossip.scenario.cape_point import cape_point_columns, cape_point_protocol

        protocol = cape_point_protocol(spec, problem)
        return protocol, lambda result, k: cape_point_columns(protocol, result, problem, spec)
    params = ppm_params(spec)
    if params.p > problem.data.d:
        raise ConfigError(f"ppm.block_rank = {params.p} must be <= d = {problem.data.d} (the data's "
                          "columns)", field="ppm.block_rank")
    protocol = make_protocol(spec, params)
    if isinstance(protocol, PpmGossip):
        gossip = _GossipAudit(problem, protocol.params, spec.ppm)
        return protocol, lambda result, k: gossip.columns(result)
    return protocol, lambda result, k: _central_columns(problem, result, spec.ppm, k)


def protocol_columns(spec: PointSpec, problem: Problem) -> tuple[PrivateProtocol, Any]:
    """The point's protocol and ``columns(result, repeat)``, its guarantee and audit columns as
    :func:`run_protocol_point` writes them (``dpgossip audit`` of these kinds uses them)."""
    return _protocol(spec, problem)


def run_protocol_point(spec: PointSpec, problem: Problem, axes: Mapping[str, Any]
                       ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Every repeat of a ``ppm*`` point: ``runs`` rows (final error, guarantee, audit) and
    ``iterations`` rows (error after each iteration; ``component`` is ``0``: the ``k``-dimensional
    subspace as a whole).

    Returns
    -------
    runs, iterations
        Tidy rows, as :func:`dpgossip.scenario.runner.run_point`.
    """
    from dpgossip.scenario.runner import (  # the runner dispatches here
        ldp_row,
        repeat_done,
        repeat_seed,
    )

    data, network = problem.data, problem.network
    protocol, columns = _protocol(spec, problem)
    truth = exact_subspace(data.X, spec.protocol.rank, protocol.side)
    ldp_u = top_singular(data.X, problem.params.rank).U if spec.baseline.ldp else None
    base = {**{k.replace(".", "_"): v for k, v in axes.items()}, **network.to_row(),
            **data.to_row(), "kind": protocol.kind, **protocol.params.to_row(),
            "backend": spec.backend}
    engine = _engine(spec, protocol)
    runs, iters = [], []
    for k in range(spec.repeats):
        if engine is None:
            run, extra = protocol.run(data, network, repeat_seed(spec.seed, k)), None
        else:
            run, extra = _engine_run(engine, data, network, repeat_seed(spec.seed, k))
        errors = _errors(run, truth)
        row = {**base, "repeat": k, "error": float(errors[-1]),
               "subspace_distance": float(errors[-1]), "max_agent_error": math.nan,
               "status": "ok" if all(math.isfinite(e) for e in errors) else "non-finite",
               "status_reason": "", **(extra or {})}
        row["max_agent_error"] = _max_agent_error(run, truth, row["status"] == "partial")
        if row["status"] != "stopped":
            row.update(columns(run.result, k))
        if ldp_u is not None:
            row.update(ldp_row(spec, k, data, problem.params, spec_u=ldp_u))
        runs.append(row)
        iters.extend({**base, "repeat": k, "component": 0, "iteration": t, "error": float(e)}
                     for t, e in enumerate(errors))
        repeat_done(k + 1, spec.repeats)
    return runs, iters
