"""Run the repeats of a point whose kind builds its own protocol (``ProtocolKind.build``: ``ppm*``,
``capepca*``, ``ddppm-floorfree``, and any kind a home or an installed package registers), except the
kinds audited pair by pair (``ProtocolKind.pair_audit``: ``ddppm``), which run through
:func:`dpgossip.scenario.runner.run_point`.

The point's kind (:func:`dpgossip.protocols.registry.kind`) is built once on the point's data and
network (:func:`build_point`: :class:`~dpgossip.protocols.registry.PointInputs` with the kind's own
section as ``settings``), which gives the protocol, its engine form and its guarantee and audit columns
(:class:`~dpgossip.protocols.registry.KindPoint`). Nothing here names a kind.

Each repeat ``k`` runs the protocol with ``SeedSequence(seed, spawn_key=(k,))`` (the repeat seed of
every kind, :func:`~dpgossip.scenario.runner.repeat_seed`), measures the subspace distance of its
estimate to the exact top-``k`` singular subspace of ``X`` on the protocol's side after every iteration,
and adds the kind's columns of the run's own result (``guaranteed_epsilon``, ``audited_epsilon``, ...;
the kinds' docs: docs/ppm.md, docs/protocol-frontier.md).

With ``backend = "engine"`` each repeat runs message by message on the engine under ``[engine]``
(the kind's engine form, docs/engine.md): the rows are the matrix backend's plus the engine's status and
traffic columns; a run the engine stopped (a crash, a lost message) has ``status = "stopped"``, its
reason, NaN errors and no guarantee or audit columns; a run the parties that did not crash completed
without the crashed ones (``engine_status = "completed_with_crash"``) has ``status = "partial"``, the
reason, and ``max_agent_error`` over the agents that hold an estimate.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from dpgossip.errors import ConfigError, renamed_fields
from dpgossip.protocols.interface import SIDES, ProtocolRun, exact_subspace
from dpgossip.protocols.metrics import subspace_distance
from dpgossip.protocols.power import top_singular
from dpgossip.protocols.registry import EngineForm, KindPoint, PointInputs, kind
from dpgossip.scenario.point import PointSpec
from dpgossip.scenario.problem import Problem
from dpgossip.topology.schedule_spec import schedule_spec_from_mapping
from dpgossip.topology.schedules import MixingSchedule

__all__ = ["point_inputs", "point_schedule", "build_point", "run_protocol_point", "PARTIAL",
           "SCHEDULE_SPAWN_KEY"]

PARTIAL = {"stopped": "stopped", "completed_with_crash": "partial"}
"""The row ``status`` of an engine run that did not complete cleanly (:mod:`dpgossip.scenario.status`):
halted, or finished by the parties that did not crash."""


SCHEDULE_SPAWN_KEY = 2**32 - 1
"""Spawn key ``(SCHEDULE_SPAWN_KEY,)`` of a point's schedule stream (a ``network.schedule`` without its
own ``seed``): ``SeedSequence(seed, spawn_key=(2**32 - 1,))``, apart from every repeat's ``(k,)``."""


def point_schedule(spec: PointSpec, inputs: PointInputs) -> MixingSchedule | None:
    """The point's schedule of consensus rounds (``network.schedule``), sampled once on its network for
    the rounds its kind reads (``ProtocolKind.schedule_rounds``), from the spec's ``seed`` or else the
    point's schedule stream (:data:`SCHEDULE_SPAWN_KEY`); ``None`` without ``network.schedule``.

    Raises
    ------
    ConfigError
        The kind does not run under a schedule, or the sampler refuses the network (names
        ``network.schedule.<key>``).
    """
    table = spec.network.schedule
    if table is None:
        return None
    found = kind(spec.protocol.kind)
    if found.schedule_rounds is None:
        raise ConfigError(f"network.schedule: protocol.kind = {found.name!r} does not run under a "
                          f"schedule: {found.schedule_refusal}", field="network.schedule")
    where = "network.schedule"
    sampler = schedule_spec_from_mapping(table, where)
    with renamed_fields({k: f"{where}.{k}" for k in ("seed", "degree", "files", "steps", "arcs")}):
        return sampler.sample(inputs.network, found.schedule_rounds(inputs),
                              seed=np.random.SeedSequence(spec.seed, spawn_key=(SCHEDULE_SPAWN_KEY,)))


def point_inputs(spec: PointSpec, data: Any, network: Any) -> PointInputs:
    """What the point's kind is built from: its data, network, ``[protocol]`` settings, own section and
    schedule of rounds (:func:`point_schedule`)."""
    proto = spec.protocol
    inputs = PointInputs(data=data, network=network, rank=proto.rank, iterations=proto.iterations,
                         consensus_steps=proto.consensus_steps, settings=spec.settings)
    schedule = point_schedule(spec, inputs)
    return inputs if schedule is None else dataclasses.replace(inputs, schedule=schedule)


def build_point(spec: PointSpec, problem: Problem) -> KindPoint:
    """The point's kind built on its problem.

    Raises
    ------
    ConfigError
        The kind has no builder (it is run by its own runner), or a setting the build refuses.
    """
    found = kind(spec.protocol.kind)
    if found.build is None or found.pair_audit:
        raise ConfigError(f"protocol.kind = {found.name!r} runs through its own runner, not a point "
                          "builder", field="protocol.kind")
    return found.build(point_inputs(spec, problem.data, problem.network))


def _engine(spec: PointSpec, point: KindPoint) -> EngineForm | None:
    """The protocol on the engine under ``[engine]`` (``backend = "engine"``), else ``None``."""
    if spec.backend != "engine":
        return None
    if point.engine is None:
        raise ConfigError(f"backend: protocol.kind = {spec.protocol.kind!r} has no engine form; use "
                          "backend = \"matrix\"", field="backend")
    from dpgossip.engine import NetworkConditions
    from dpgossip.engine.conditions import condition_fields

    with renamed_fields(condition_fields("engine")):
        conditions = NetworkConditions.from_mapping(dict(spec.engine))
    return point.engine(conditions)


def _engine_run(engine: EngineForm, data: Any, network: Any, seed: Any
                ) -> tuple[ProtocolRun, dict[str, Any]]:
    """One engine run in the common view, and its columns: the engine status (a stopped run is
    ``status = "stopped"``), crashed agents and traffic (as D-DP-PM's engine rows, timings left out)."""
    from dpgossip.scenario.runner import TIMING_COLUMNS

    with renamed_fields({"conditions": "engine", "schedule": "network.schedule"}):
        res = engine.run_engine(data, network, seed)
    run = engine.protocol_run(res, data)
    extra: dict[str, Any] = {"crashed_agents": list(res.outcome.crashed)}
    extra.update({"engine_status" if n == "status" else n: v for n, v in res.summary.to_row().items()
                  if n not in TIMING_COLUMNS})
    if res.status in PARTIAL:
        extra.update({"status": PARTIAL[res.status], "status_reason": res.outcome.reason})
    return run, extra


def _errors(run: ProtocolRun, truth: np.ndarray | None) -> np.ndarray:
    """Subspace distance of every iterate (NaN for an iterate a stopped engine run did not compute);
    for a kind that estimates no singular subspace (``truth`` is ``None``), ``0`` for a finite iterate
    and NaN otherwise, so that the row's status still says whether the run's numbers are finite."""
    if truth is None:
        return np.array([0.0 if np.isfinite(V).all() else math.nan for V in run.trajectory])
    return np.array([subspace_distance(truth, V) if np.isfinite(V).all() else math.nan
                     for V in run.trajectory])


def _max_agent_error(run: ProtocolRun, truth: np.ndarray | None, partial: bool) -> float:
    """Largest subspace distance of an agent's final estimate; in a ``partial`` run (agents crashed,
    the others finished) over the agents that hold one (NaN if none does)."""
    if truth is None:
        return math.nan
    finals = [run.final] if run.agent_finals is None else list(run.agent_finals)
    errors = np.array([subspace_distance(truth, V) if np.isfinite(V).all() else math.nan for V in finals])
    if partial:
        errors = errors[np.isfinite(errors)]
    return float(errors.max()) if errors.size else math.nan


def run_protocol_point(spec: PointSpec, problem: Problem, axes: Mapping[str, Any]
                       ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Every repeat of the point: ``runs`` rows (final error, guarantee, audit) and ``iterations`` rows
    (error after each iteration; ``component`` is ``0``: the ``k``-dimensional subspace as a whole).

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
    point = build_point(spec, problem)
    protocol = point.protocol
    subspace = protocol.side in SIDES  # else the kind estimates something other than a subspace
    truth = exact_subspace(data.X, spec.protocol.rank, protocol.side) if subspace else None
    ldp_u = top_singular(data.X, problem.params.rank).U if spec.baseline.ldp else None
    base = {**{k.replace(".", "_"): v for k, v in axes.items()}, **network.to_row(),
            **data.to_row(), "kind": protocol.kind, **point.row, "backend": spec.backend}
    if spec.network.schedule is not None:
        base.update(schedule_spec_from_mapping(spec.network.schedule, "network.schedule").to_row())
    engine = _engine(spec, point)
    runs, iters = [], []
    for k in range(spec.repeats):
        if engine is None:
            run, extra = protocol.run(data, network, repeat_seed(spec.seed, k)), None
        else:
            run, extra = _engine_run(engine, data, network, repeat_seed(spec.seed, k))
        errors = _errors(run, truth)
        final = float(errors[-1]) if subspace else math.nan
        row = {**base, "repeat": k, "error": final, "subspace_distance": final, "max_agent_error": math.nan,
               "status": "ok" if all(math.isfinite(e) for e in errors) else "non-finite",
               "status_reason": "", **(extra or {})}
        row["max_agent_error"] = _max_agent_error(run, truth, row["status"] == "partial")
        if row["status"] != "stopped":
            row.update(point.columns(run.result, k))
        if ldp_u is not None:
            row.update(ldp_row(spec, k, data, problem.params, spec_u=ldp_u))
        runs.append(row)
        iters.extend({**base, "repeat": k, "component": 0, "iteration": t,
                      "error": float(e) if subspace else math.nan} for t, e in enumerate(errors))
        repeat_done(k + 1, spec.repeats)
    return runs, iters
