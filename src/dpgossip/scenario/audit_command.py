"""``dpgossip audit``, one point at a time: the pair audit of a ``ddppm`` point (:func:`audit_task`), the
plan's types and the folder's tables (:func:`write_audit_tables`).

:func:`audit_task` builds the point's network and data, calibrates the noise when ``privacy.calibrate``
asks, resolves the parameters and audits every pair; the driver (:mod:`~dpgossip.scenario.audit_run`:
:func:`~dpgossip.scenario.audit_run.plan_audit`, :func:`~dpgossip.scenario.audit_run.run_audit`) audits
each point by its ``protocol.kind``'s own audit
(:func:`~dpgossip.scenario.kind_commands.kind_commands`), stores each
:class:`~dpgossip.scenario.audit_point.AuditPoint` as soon as it is done, then writes the tables here.

Within a point audited by the optimising search, every finished target is stored too
(``points/<key>.targets/<j>.json``, :class:`~dpgossip.scenario.pair_targets.TargetStore`): a rerun
searches only the targets not stored and ends with the same bits; the folder goes once the point's
file is written. ``--workers N`` searches a point's targets on ``N`` processes (the same bits).

Files (each written atomically):

``pairs.csv``
    One row per ``ddppm`` point, pair and method: ``point``, the axis columns, the calibration columns of a
    calibrated point, then the audit's (:meth:`~dpgossip.protocols.ddppm.audit.PairAudit.rows`).
``worst.json``
    Per point, the worst pair, its neighbour (the row replaced and its replacement) and its numbers
    (strict JSON: infinite values as ``"inf"``); its ``scenario`` marks the folder as this scenario's.
``epsilon_matrix.csv`` (one point) or ``epsilon_matrix_p<point>.csv``
    The observer x target epsilon matrix of each point (``exact`` when audited); with
    ``privacy.rank_by = "delta"``, ``delta_matrix*.csv``: delta at the first epsilon of the grid (no
    epsilon is solved then). A view without an observer (``all-but-one``, ``eavesdropper``) has one
    number per target: ``epsilon_by_target*.csv`` (``delta_by_target*.csv``) instead, and its
    ``pairs.csv`` rows and ``worst.json`` entry have no observer and no hops.
``guarantees.csv``
    One row per point of a kind with its own accountant and auditor: ``point``, the axis columns,
    ``kind``, the size, and the guarantee and audit columns of ``runs.csv``.
``plots/``
    The plots (:func:`~dpgossip.report.audit.plot_audit`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dpgossip.protocols.ddppm.audit import value_kind
from dpgossip.rounding import format_upper
from dpgossip.scenario import privacy_section
from dpgossip.scenario.audit_point import (
    OBSERVER_VIEWS,
    AuditPoint,
    HopLeakage,
    KindAuditPoint,
    ProblemSummary,
    WorstPair,
)
from dpgossip.scenario.expand import point_hash
from dpgossip.scenario.pair_targets import TargetStore
from dpgossip.scenario.preflight import input_digests
from dpgossip.scenario.problem import build_structure, resolve_problem
from dpgossip.scenario.progress import axes_label
from dpgossip.scenario.results import jsonable
from dpgossip.scenario.step_progress import TargetProgress
from dpgossip.scenario.store import json_safe, write_csv, write_json

__all__ = ["AuditTask", "AuditPlan", "AuditRun", "audit_key", "audit_task", "write_audit_tables",
           "matrix_names", "audit_summary"]


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class AuditTask:
    """One point to audit: its position, key, axis values and configuration (``[privacy]`` resolved,
    overrides applied)."""

    index: int
    key: str
    axes: dict[str, Any]
    config: dict[str, Any]
    pair_audit: bool = True
    """Audited pair by pair as ``[privacy]`` says (the kind's commands say so: ``ddppm``), else by the
    kind's own auditor."""
    store: Path | None = None
    """Folder of the point's finished targets (:class:`~dpgossip.scenario.pair_targets.TargetStore`,
    ``points/<key>.targets``), from which an interrupted pair audit resumes; None: no store."""

    @property
    def name(self) -> str:
        """``"point 1 (c=2)"``, or ``"point 0"`` without axes."""
        label = axes_label(self.axes)
        return f"point {self.index}" + (f" ({label})" if label else "")

    @property
    def kind(self) -> str:
        """``protocol.kind`` of the point."""
        return str(self.config["protocol"]["kind"])


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class AuditPlan:
    """What :func:`~dpgossip.scenario.audit_run.run_audit` does: the scenario's name, the output folder
    and the points.

    Attributes
    ----------
    scenario
        Name of the scenario (written to ``worst.json``).
    out
        The output folder.
    base
        Folder of the scenario file (relative data and topology paths).
    tasks
        The points, in sweep order (at least one).
    engine
        The scenario sets ``[engine]`` conditions, which the audit does not model.
    """

    scenario: str
    out: Path
    base: Path | None
    tasks: tuple[AuditTask, ...]
    engine: bool

    @property
    def pair_tasks(self) -> tuple[AuditTask, ...]:
        """The points audited pair by pair as ``[privacy]`` says (``protocol.kind = "ddppm"``)."""
        return tuple(t for t in self.tasks if t.pair_audit)

    @property
    def kinds(self) -> tuple[str, ...]:
        """The kinds of the points, in first-seen order."""
        return tuple(dict.fromkeys(t.kind for t in self.tasks))

    @property
    def privacy(self) -> dict[str, Any]:
        """The resolved ``[privacy]`` table of the first point audited pair by pair (the settings the
        audit announces; empty when no point is)."""
        pair = self.pair_tasks
        return pair[0].config["privacy"] if pair else {}

    def effort(self) -> str:
        """The search effort in words: ``"standard worst-case search"``."""
        return f"{self.privacy['search']} worst-case search"


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class AuditRun:
    """A finished audit: its points (in sweep order), the files written and how many points were
    audited in this run or read back from their files."""

    out: Path
    points: tuple[AuditPoint | KindAuditPoint, ...]
    files: tuple[Path, ...]
    computed: int
    resumed: int

    def leakage_rows(self) -> list[dict[str, Any]]:
        """One row per pair-audited point and pair (per target for a view without an observer), for
        the leakage plots (:mod:`dpgossip.report.audit`)."""
        return [row for p in self.points if isinstance(p, AuditPoint) for row in p.leakage_rows()]


def audit_key(config: dict[str, Any], base: Path | None = None,
              digests: dict[Path, str] | None = None) -> str:
    """Key of a point's audit: :func:`~dpgossip.scenario.expand.point_hash` of its configuration (with
    ``[privacy]`` resolved), the SHA-256 of every user file it reads
    (:func:`~dpgossip.scenario.preflight.input_digests`; editing one invalidates the stored audit) and
    a marker that keeps it apart from the key of a ``dpgossip run`` point."""
    inputs = input_digests(config, base, digests)
    return point_hash({**config, "inputs": inputs, "command": "audit"})


def audit_task(task: AuditTask, base: Path | None = None,
               stage: Callable[[str], None] | None = None) -> AuditPoint:
    """Audit one point: build its network and data, calibrate its noise when ``privacy.calibrate`` asks
    (:func:`~dpgossip.scenario.privacy_section.prepare_point`), resolve its parameters and audit every
    pair (:func:`~dpgossip.scenario.privacy_section.audit_config`).

    Parameters
    ----------
    task
        The point.
    base
        Folder of the scenario file.
    stage
        Called with a sentence before each long step (calibration, audit, exact value).

    Returns
    -------
    AuditPoint
        With JSON-native rows (equal to those read back from its file).

    Raises
    ------
    ConfigError
        A point that cannot be built, or whose calibration target cannot be met.
    """
    say = stage if stage is not None else (lambda _text: None)
    t0 = time.perf_counter()
    structure = build_structure(task.config, base)
    if (task.config.get("privacy") or {}).get("calibrate"):
        say(f"{task.name}: calibrating the noise scale (every step audits every pair)")
    cfg, calibrated = privacy_section.prepare_point(task.config, structure)
    problem = resolve_problem(cfg, structure)
    per_observer = cfg["privacy"]["view"] in OBSERVER_VIEWS
    say(f"{task.name}: auditing every " + ("(observer, target) pair" if per_observer else "target")
        + f" of {problem.data.m} agents (view {cfg['privacy']['view']})")
    targets = None if stage is None else TargetProgress(stage, task.name)
    store = TargetStore(task.store) if task.store is not None else None
    audit = privacy_section.audit_with_store(cfg, problem, store, on_target=targets,
                                             on_stage=None if targets is None else targets.stage)
    method = audit.methods[0]
    w = audit.worst(method, by="delta" if audit.rank_by == "delta" else "epsilon")
    exact = None
    if "exact" not in audit.methods:  # the tight value of the worst pair, at least
        say(f"{task.name}: the exact value of the worst pair's neighbour")
        exact = jsonable(privacy_section.exact_for_pair(problem.data, problem.network,
                                                        problem.params, audit, w.observer, w.target))
    by_delta = audit.rank_by == "delta"
    mat_method = "exact" if "exact" in audit.methods else method
    return AuditPoint(
        index=task.index, key=task.key, axes=dict(task.axes), problem=ProblemSummary.of(problem),
        calibration=jsonable(calibrated), note=privacy_section.rank_note(problem.params.rank),
        method=method, rank_by="delta" if by_delta else "epsilon",
        rank_epsilon=float(audit.epsilons[0]) if by_delta else None,
        worst=WorstPair.from_row(_worst_row(audit, w, problem, cfg), exact),
        by_hops=HopLeakage.table(  # hop distances mean nothing without an observer
            (r.hops, r.delta[method][0] if by_delta else r.epsilon[method])
            for r in (audit.results.values() if per_observer else ())),
        matrix_method=mat_method,
        matrix=audit.matrix(mat_method, "delta" if by_delta else "epsilon", 0).tolist(),
        pairs=jsonable(audit.rows()), leakage=jsonable(privacy_section.leakage_rows(audit)),
        seconds=time.perf_counter() - t0,
    )


def _worst_row(audit: Any, w: Any, problem: Any, config: dict[str, Any]) -> dict[str, Any]:
    """The fields of :class:`WorstPair` of the worst pair ``w`` (JSON-native)."""
    return jsonable({
        "view": audit.view, "neighbours": config["privacy"]["neighbours"], "delta": audit.delta,
        "observer": w.observer, "target": w.target, "hops": w.hops,
        "row": w.neighbour.row, "original": [float(v) for v in problem.data.X[w.neighbour.row]],
        "replacement": [float(v) for v in w.neighbour.x_new], "direction": w.neighbour.label,
        "epsilon": dict(w.epsilon),
        "delta_at_epsilon": {m: dict(zip([f"{e:g}" for e in audit.epsilons], dl, strict=True))
                             for m, dl in w.delta.items()},
        "renyi2": w.renyi2,
        **({"capped": True} if w.capped else {}),
        **({"epsilon_upper": audit.upper[w.target].epsilon,
            "epsilon_upper_max": max(b.epsilon for b in audit.upper.values())}
           if audit.upper.get(w.target) is not None else {}),
    })


def matrix_names(points: Sequence[AuditPoint]) -> list[str]:
    """File name of each point's matrix: ``epsilon_matrix.csv`` for a single point, else
    ``epsilon_matrix_p<point>.csv``; ``delta_matrix*`` when the point ranks by delta;
    ``epsilon_by_target*`` (``delta_by_target*``) for a view without an observer."""
    def stem(p: AuditPoint) -> str:
        what = "delta" if p.rank_by == "delta" else "epsilon"
        return f"{what}_matrix" if p.per_observer else f"{what}_by_target"

    if len(points) == 1:
        return [f"{stem(points[0])}.csv"]
    return [f"{stem(p)}_p{p.index}.csv" for p in points]


def write_audit_tables(plan: AuditPlan, points: Sequence[AuditPoint | KindAuditPoint]) -> list[Path]:
    """Write ``pairs.csv``, ``guarantees.csv``, ``worst.json`` and the matrices from the points (module
    docstring); tables of an earlier audit in the folder that this one does not write are removed.

    Returns
    -------
    list of Path
        The files written.
    """
    out = plan.out
    pair_points = [p for p in points if isinstance(p, AuditPoint)]
    kind_points = [p for p in points if isinstance(p, KindAuditPoint)]
    files = [out / "worst.json"]
    for name, rows in (("pairs.csv", [row for p in pair_points for row in p.pair_rows()]),
                       ("guarantees.csv", [p.table_row() for p in kind_points])):
        if rows:
            write_csv(out / name, rows)
            files.append(out / name)
        else:
            (out / name).unlink(missing_ok=True)
    write_json(out / "worst.json", json_safe({
        "scenario": plan.scenario, "audit": privacy_section.PER_INSTANCE,
        "non_finite": 'infinite values are written as "inf" (JSON has no infinity)',
        **({"engine": "not modelled: the audit is of the ideal synchronous protocol"}
           if plan.engine else {}),
        "points": [p.worst_record() for p in points]}))
    names = matrix_names(pair_points) if pair_points else []
    for stale in [*out.glob("epsilon_matrix*.csv"), *out.glob("delta_matrix*.csv"),
                  *out.glob("epsilon_by_target*.csv"), *out.glob("delta_by_target*.csv")]:
        if stale.name not in names:
            stale.unlink(missing_ok=True)
    for p, name in zip(pair_points, names, strict=True):
        write_csv(out / name, p.matrix_rows() if p.per_observer else p.target_rows())
        files.append(out / name)
    return files


def audit_summary(point: AuditPoint | KindAuditPoint) -> str:
    """What the progress line says of a finished point: a pair audit's worst pair found, labelled for
    what it is (:func:`~dpgossip.protocols.ddppm.audit.value_kind`), with the certified upper bound
    over all targets (rounded up) when computed."""
    if isinstance(point, KindAuditPoint):
        return point.summary()
    what = point.quantity if point.rank_by == "delta" else "epsilon"
    upper = point.worst.epsilon_upper_max
    bound = ("" if upper is None or point.rank_by == "delta"
             else f"; certified upper bound {format_upper(upper, 4)}")
    at_least = "at least " if point.worst.capped else ""
    return (f"worst {what} ({point.method}) {at_least}{point.worst_value:.4g} "
            f"({value_kind(point.method, point.worst.capped)}{bound})")
