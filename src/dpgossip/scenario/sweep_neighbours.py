"""Warm starts across the points of a sweep: the worst neighbours found at one point tried at the others.

A pair audit's value is the exact value of the worst neighbour its search found, a lower estimate of
the worst case over the neighbours of ``X``. A neighbour (row ``r`` of ``X`` replaced by ``x'``) is a
neighbour of the same ``X`` at every point of the sweep, whatever its noise, topology, ``c`` or
``T``; one found at noise 0.003 may be far worse at noise 0.001 than what the search found there. So
after every point of a ``dpgossip run`` is computed, :func:`share_neighbours` evaluates, at each
audited D-DP-PM point, the worst neighbours found at the other points with the same ``X`` and the
same neighbour relation (no search: their exact values,
:func:`~dpgossip.protocols.ddppm.audit.audit_neighbours`), each offered to the target that holds its
row at that point. A pair's row is replaced when one of them gives a larger value (epsilon at
``delta``, or delta at the first epsilon when ``privacy.rank_by = "delta"``); its ``found_at_point``
column names the point whose search found it. A value can only rise, and it stays what it was: the
exact value of a neighbour found, a lower estimate.

The pass is deterministic: it uses the neighbours of each point's own search (the stored point files,
never another point's improved rows), sorted, so the tables are the same bits whatever the order in
which the points ran, on any executor, and after a resume. Calibrated points are left as they are (their
noise comes from the calibration, which warm-starts from its own neighbours).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from dpgossip.privacy.neighbours import Neighbour, project
from dpgossip.protocols.ddppm.audit import upper_gap
from dpgossip.scenario.expand import Point
from dpgossip.scenario.privacy_section import _is_ddppm, audit_config, leakage_rows
from dpgossip.scenario.problem import Problem, build_structure, resolve_problem
from dpgossip.scenario.results import PointResult, jsonable

__all__ = ["share_neighbours"]


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class _Audited:
    """One audited point: its configuration, problem, rows and the neighbours its search found."""

    point: Point
    key: str
    problem: Problem
    rows: list[dict[str, Any]]
    found: dict[tuple[int, tuple[float, ...]], str]
    """Its own neighbours, ``(row, replacement)`` -> the search's label of it."""


def _neighbour_of(row: Mapping[str, Any]) -> tuple[int, tuple[float, ...]]:
    return int(row["row"]), tuple(float(v) for v in str(row["replacement"]).split())


def _identity(problem: Problem, config: Mapping[str, Any]) -> str:
    """Points whose neighbours are each other's: the same ``X`` (bytes and shape) and relation."""
    X = np.ascontiguousarray(problem.data.X, dtype=float)
    h = hashlib.sha256(repr(X.shape).encode())
    h.update(X.tobytes())
    h.update(str(config["privacy"]["neighbours"]).encode())
    return h.hexdigest()


def _value(row: Mapping[str, Any], by_delta: bool) -> float:
    return float(row["delta_at_epsilon"] if by_delta else row["epsilon"])


def _audited(points: Sequence[Point], results: Mapping[str, PointResult], keys: Mapping[int, str],
             base: Path | None, built: Mapping[int, Any]) -> list[_Audited]:
    chosen: dict[str, Point] = {}
    for p in points:
        priv = p.config.get("privacy") or {}
        if priv.get("audit") and not priv.get("calibrate") and _is_ddppm(p.config) \
                and results[keys[p.index]].tables.get("leakage"):
            chosen.setdefault(keys[p.index], p)
    if len(chosen) < 2:  # nothing to share: no point's problem is built
        return []
    out = []
    for key, p in chosen.items():
        rows = results[key].tables["leakage"]
        structure = built.get(p.index) or build_structure(p.config, base)
        out.append(_Audited(point=p, key=key, problem=resolve_problem(p.config, structure),
                            rows=rows, found={_neighbour_of(r): str(r.get("direction", ""))
                                              for r in rows}))
    return out


def share_neighbours(points: Sequence[Point], results: Mapping[str, PointResult],
                     keys: Mapping[int, str], base: Path | None = None,
                     built: Mapping[int, Any] | None = None,
                     say: Callable[[str], None] | None = None) -> dict[str, PointResult]:
    """Every point's result, with each audited D-DP-PM point's ``leakage`` rows raised by the
    neighbours found at the other points of the sweep (module docstring).

    Parameters
    ----------
    points, results, keys
        The sweep's points, their results by key and each point's key.
    base
        Folder of the scenario file (relative data paths).
    built
        Point index -> structure already built (else built again).
    say
        Called with one sentence per point evaluated (progress only).

    Returns
    -------
    dict
        Key -> result; a point without better neighbours keeps its own result object.
    """
    audited = _audited(points, results, keys, base, built or {})
    groups: dict[str, list[_Audited]] = {}
    for a in audited:
        groups.setdefault(_identity(a.problem, a.point.config), []).append(a)
    out = dict(results)
    for group in groups.values():
        for a in group:
            origin: dict[tuple[int, tuple[float, ...]], tuple[int, str]] = {}
            for b in sorted(group, key=lambda b: b.point.index):
                for nb, label in b.found.items():
                    if b is not a and nb not in a.found:
                        origin.setdefault(nb, (b.point.index, label))
            offered = sorted(origin)
            if not offered:
                continue
            if say is not None:
                say(f"point {a.point.index}: trying {len(offered)} neighbours found at the other "
                    f"{len(group) - 1} points of the sweep with the same data")
            rows = _raised_rows(a, offered, origin)
            if rows is not a.rows:
                res = results[a.key]
                out[a.key] = replace(res, tables={**res.tables, "leakage": rows})
    return out


def _raised_rows(a: _Audited, offered: Sequence[tuple[int, tuple[float, ...]]],
                 origin: Mapping[tuple[int, tuple[float, ...]], tuple[int, str]]
                 ) -> list[dict[str, Any]]:
    """``a``'s leakage rows, each replaced by the offered neighbour's row where that is larger (with
    ``found_at_point`` and the search's label of it from ``origin``)."""
    offsets = np.asarray(a.problem.data.offsets)
    by_target: dict[int, list[Neighbour]] = {}
    X, kind = a.problem.data.X, str(a.point.config["privacy"]["neighbours"])
    where: dict[tuple[int, tuple[float, ...]], tuple[int, str]] = {}
    for row, x_new in offered:  # projected: a table of an older version printed 6 digits
        j = int(np.searchsorted(offsets, row, side="right") - 1)
        nb = Neighbour(row=row, x_new=project(X[row], np.array(x_new), kind), label="sweep")
        by_target.setdefault(j, []).append(nb)
        where.setdefault((row, tuple(float(v) for v in nb.x_new)), origin[(row, x_new)])
    audit = audit_config(a.point.config, a.problem, neighbours=by_target, upper_bound=False)
    by_delta = audit.rank_by == "delta"
    fresh = {(r["observer"], r["target"]): r for r in jsonable(leakage_rows(audit))}
    rows, changed = [], False
    for old in a.rows:
        new = fresh.get((old["observer"], old["target"]))
        if new is None or not _value(new, by_delta) > _value(old, by_delta):
            rows.append(old)
            continue
        changed = True
        merged = {k: v for k, v in old.items() if k != "stopped_at_cap"}
        merged.update({k: v for k, v in new.items() if k not in ("view", "delta")})
        merged["found_at_point"], merged["direction"] = where[_neighbour_of(new)]
        if "epsilon_upper" in old and not by_delta:
            merged["gap_upper_lower"] = upper_gap(float(old["epsilon_upper"]), float(new["epsilon"]))
        rows.append(merged)
    return rows if changed else a.rows
