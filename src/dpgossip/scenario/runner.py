"""Run the repeats of one point on its problem (:mod:`~dpgossip.scenario.problem`) and measure them.

Seeds: repeat ``k`` of every point uses ``SeedSequence(seed, spawn_key=(k,))`` (common random numbers
across points, so comparisons between points are paired); the graph of a random topology and a random
partition use ``SeedSequence(seed, spawn_key=(2**31,))``, the same for every repeat.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from typing import Any

import numpy as np

from dpgossip.errors import renamed_fields
from dpgossip.protocols.ddppm.engine_result import EngineResult
from dpgossip.protocols.ddppm.matrix import run_matrix
from dpgossip.protocols.ldp.baseline import run_ldp
from dpgossip.protocols.metrics import subspace_distance
from dpgossip.protocols.power import top_singular
from dpgossip.protocols.registry import kind as registered_kind
from dpgossip.scenario.point import PointSpec
from dpgossip.scenario.problem import Problem
from dpgossip.scenario.status import flag_non_finite, measure_run

__all__ = [
    "run_point",
    "repeat_progress",
    "repeat_done",
    "stage_progress",
    "stage_hook",
    "run_sections",
    "repeat_seed",
    "TIMING_COLUMNS",
]

TIMING_COLUMNS: frozenset[str] = frozenset({"wall_time"})
"""Columns of a backend's summary left out of the tidy rows: they measure this machine, not the run,
and would make two runs of the same scenario differ (a point's time is in ``timing.json``)."""


_REPEAT_HOOK: ContextVar[Callable[[int, int], None] | None] = ContextVar("dpgossip_repeat_hook",
                                                                       default=None)


@contextlib.contextmanager
def repeat_progress(hook: Callable[[int, int], None] | None) -> Iterator[None]:
    """Call ``hook(done, total)`` after every repeat of the points run in this thread in the block
    (progress inside a long point: :meth:`~dpgossip.scenario.progress.Progress.repeat`)."""
    token = _REPEAT_HOOK.set(hook)
    try:
        yield
    finally:
        _REPEAT_HOOK.reset(token)


_STAGE_HOOK: ContextVar[Callable[[str], None] | None] = ContextVar("dpgossip_stage_hook", default=None)


@contextlib.contextmanager
def stage_progress(hook: Callable[[str], None] | None) -> Iterator[None]:
    """Let a long step inside the points run in this thread in the block say what it is doing with
    ``hook(text)`` (e.g. a pair audit's targets with their ETA:
    :meth:`~dpgossip.scenario.progress.Progress.stage`)."""
    token = _STAGE_HOOK.set(hook)
    try:
        yield
    finally:
        _STAGE_HOOK.reset(token)


def stage_hook() -> Callable[[str], None] | None:
    """The hook of :func:`stage_progress` (``None`` outside one: say nothing)."""
    return _STAGE_HOOK.get()


def repeat_done(done: int, total: int) -> None:
    """Report that ``done`` of a point's ``total`` repeats are finished (to :func:`repeat_progress`'s
    hook, if any)."""
    hook = _REPEAT_HOOK.get()
    if hook is not None:
        hook(done, total)


def repeat_seed(seed: int, repeat: int) -> np.random.SeedSequence:
    """Seed of repeat ``repeat``: ``SeedSequence(seed, spawn_key=(repeat,))``."""
    return np.random.SeedSequence(seed, spawn_key=(repeat,))


def run_point(
    spec: PointSpec, problem: Problem, axes: Mapping[str, Any]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Run every repeat of one point on its problem (built once by the caller).

    This runs the kinds audited pair by pair (``ProtocolKind.pair_audit``: D-DP-PM,
    ``protocol.kind = "ddppm"``); the points of the other kinds (``ProtocolKind.build``) run by
    :func:`dpgossip.scenario.protocol_point.run_protocol_point`, which uses this module's repeat
    seeds, progress and LDP rows (:func:`dpgossip.scenario.execute.run_point_of_kind` chooses).

    Returns
    -------
    runs, iterations
        Tidy rows: one per repeat (final metrics, ``status`` and ``status_reason``: see
        :mod:`dpgossip.scenario.status`), and one per repeat, component and iteration
        (``error = sin(u_l, q_l^(t))``, Eq. (37) of Campbell et al.; NaN where not computed). An engine run's
        ``status`` from its summary is the ``engine_status`` column, its crashed agents
        ``crashed_agents``.
    """
    if not registered_kind(spec.protocol.kind).pair_audit:
        raise ValueError(f"run_point runs the kinds audited pair by pair, not {spec.protocol.kind!r}: "
                         "dpgossip.scenario.execute.run_point_of_kind runs every kind")
    data, network, params = problem.data, problem.network, problem.params
    top = top_singular(data.X, params.rank)
    base_row = {
        **{k.replace(".", "_"): v for k, v in axes.items()},
        **network.to_row(),
        **data.to_row(),
        **params.to_row(),
        "backend": spec.backend,
    }
    conditions = None
    if spec.backend == "engine":
        from dpgossip.engine import NetworkConditions
        from dpgossip.engine.conditions import condition_fields

        with renamed_fields(condition_fields("engine")):  # once, not per repeat
            conditions = NetworkConditions.from_mapping(dict(spec.engine))
    runs, iters = [], []
    for k in range(spec.repeats):
        seq = repeat_seed(spec.seed, k)
        outcome = None
        with np.errstate(all="ignore"):  # overflow and NaN are reported by the run's status
            if conditions is not None:
                from dpgossip.protocols.ddppm.nodes import run_engine

                with renamed_fields({"conditions": "engine"}):
                    res = run_engine(data, network, params, seq, conditions=conditions,
                                     record_transcript=False)
                outcome = res.outcome
            else:
                res = run_matrix(data, network, params, seq, keep_messages=False)
        measured = measure_run(res, data, top)
        err = measured.errors
        row = {**base_row, "repeat": k, **measured.to_row()}
        if outcome is not None:
            row["crashed_agents"] = list(outcome.crashed)
        if isinstance(res, EngineResult):
            for name, value in res.summary.to_row().items():
                if name not in TIMING_COLUMNS:
                    row["engine_status" if name == "status" else name] = value
        if spec.baseline.ldp:
            row.update(ldp_row(spec, k, data, params, spec_u=top.U))
        flag_non_finite(row, ("ldp_error",))
        runs.append(row)
        for l in range(params.rank):
            for t in range(params.iterations + 1):
                iters.append(
                    {
                        **base_row,
                        "repeat": k,
                        "component": l + 1,
                        "iteration": t,
                        "error": float(err[l, t]),
                    }
                )
        repeat_done(k + 1, spec.repeats)
    return runs, iters


def ldp_row(spec: PointSpec, k: int, data: Any, params: Any, *, spec_u: np.ndarray) -> dict[str, Any]:
    """The LDP baseline's columns of repeat ``k`` (its own stream, ``spawn_key=(k, 1)``)."""
    base = spec.baseline
    ldp = run_ldp(data.X, params.rank, base.epsilon, base.delta,
                  np.random.default_rng(np.random.SeedSequence(spec.seed, spawn_key=(k, 1))),
                  base.calibration)
    return {"ldp_error": subspace_distance(spec_u, ldp.U_hat), **ldp.to_row(),
            "epsilon": base.epsilon, "delta": base.delta}


def run_sections(cfg: Mapping[str, Any], problem: Problem) -> dict[str, list[dict[str, Any]]]:
    """Extra tidy tables of one point from the registered sections present in ``cfg`` that have a
    ``run`` hook (see :mod:`dpgossip.scenario.sections`), keyed by table name."""
    from dpgossip.scenario.sections import EXTRA_SECTIONS

    out: dict[str, list[dict[str, Any]]] = {}
    for name, entry in EXTRA_SECTIONS.items():
        if name in cfg and entry.run is not None:
            for table, rows in entry.run(cfg, problem).items():
                if table in ("runs", "iterations", "points"):
                    raise ValueError(f"section {name!r} may not write the {table!r} table")
                out.setdefault(table, []).extend(dict(r) for r in rows)
    return out
