"""Warm starts across the points of a sweep: the worst neighbours found at one point tried at the others.

A pair audit's value is the exact value of the worst neighbour its search found, a lower estimate of
the worst case over the neighbours of ``X``. A neighbour (row ``r`` of ``X`` replaced by ``x'``) is a
neighbour of the same ``X`` at every point of the sweep, whatever its noise, topology, ``c`` or
``T``; one found at noise 0.003 may be far worse at noise 0.001 than what the search found there. So
after every point of a ``dpgossip run`` is computed, :func:`share_neighbours` (``dpgossip audit``:
:func:`share_audit_neighbours`) evaluates, at each audited D-DP-PM point, the worst neighbours found
at the other points with the same ``X`` and the same neighbour relation (no search: their values by
the point's methods, :func:`~dpgossip.protocols.ddppm.audit.audit_neighbours`), each offered to the
target that holds its row at that point. A pair's rows are replaced when one of them gives a larger
value (epsilon at ``delta``, or delta at the first epsilon when ``privacy.rank_by = "delta"``); their
``found_at_point`` column names the point whose search found it, and an audit's worst pair, matrix
and hop table follow. A value can only rise, and it stays what it was: the value of a neighbour found
(by the exact method, a lower estimate of the worst case).

The pass is deterministic: it uses the neighbours of each point's own search (the stored point files,
never another point's improved rows), sorted, so the tables are the same bits whatever the order in
which the points ran, on any executor, and after a resume. Calibrated points are left as they are (their
noise comes from the calibration, which warm-starts from its own neighbours).
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, Any

import numpy as np

from dpgossip.privacy.neighbours import Neighbour, project
from dpgossip.protocols.ddppm.audit import PairAudit, upper_gap
from dpgossip.scenario.audit_command import AuditTask, _worst_row
from dpgossip.scenario.audit_point import AuditPoint, HopLeakage, WorstPair
from dpgossip.scenario.expand import Point
from dpgossip.scenario.privacy_section import _is_ddppm, audit_config, exact_for_pair, leakage_rows
from dpgossip.scenario.problem import Problem, build_structure, resolve_problem
from dpgossip.scenario.results import PointResult, jsonable

__all__ = ["share_neighbours", "share_audit_neighbours", "say_sweep"]


Found = tuple[int, tuple[float, ...]]
"""A neighbour as a table prints it: ``(row, replacement)``."""


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class _Audited:
    """One audited point: its configuration, problem, leakage rows and the neighbours its search found."""

    index: int
    key: str
    config: Mapping[str, Any]
    problem: Problem
    rows: list[dict[str, Any]]
    found: dict[Found, str]
    """Its own neighbours -> the search's label of each."""


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class _Raised:
    """What the neighbours offered to one point changed: its new leakage rows, the pairs raised and the
    audit of the offered neighbours (with where each was found)."""

    rows: list[dict[str, Any]]
    changed: frozenset[tuple[int, int]]
    audit: PairAudit
    where: dict[Found, tuple[int, str]]


def _neighbour_of(row: Mapping[str, Any]) -> Found:
    return int(row["row"]), tuple(float(v) for v in str(row["replacement"]).split())


def _found(nb: Neighbour) -> Found:
    return nb.row, tuple(float(v) for v in nb.x_new)


def say_sweep(quiet: bool, stream: IO[str] | None = None) -> Callable[[str], None] | None:
    """The progress of the pass: one ``sweep: ...`` line per point on ``stream`` (default
    ``sys.stderr``); None when quiet."""
    if quiet:
        return None
    return lambda text: print(f"sweep: {text}", file=stream or sys.stderr, flush=True)


def _identity(problem: Problem, config: Mapping[str, Any]) -> str:
    """Points whose neighbours are each other's: the same ``X`` (bytes and shape) and relation."""
    X = np.ascontiguousarray(problem.data.X, dtype=float)
    h = hashlib.sha256(repr(X.shape).encode())
    h.update(X.tobytes())
    h.update(str(config["privacy"]["neighbours"]).encode())
    return h.hexdigest()


def _value(row: Mapping[str, Any], by_delta: bool) -> float:
    return float(row["delta_at_epsilon"] if by_delta else row["epsilon"])


def _shared(config: Mapping[str, Any]) -> bool:
    """A D-DP-PM point audited pair by pair whose noise is not calibrated."""
    priv = config.get("privacy") or {}
    return bool(priv) and not priv.get("calibrate") and _is_ddppm(config)


def _audited(chosen: Mapping[str, tuple[int, Mapping[str, Any], list[dict[str, Any]]]],
             base: Path | None, built: Mapping[int, Any]) -> list[_Audited]:
    """The points ``chosen`` (key -> index, configuration, leakage rows) with their problems; none
    when fewer than two (nothing to share: no problem is built)."""
    if len(chosen) < 2:
        return []
    out = []
    for key, (index, config, rows) in chosen.items():
        structure = built.get(index) or build_structure(config, base)
        out.append(_Audited(index=index, key=key, config=config,
                            problem=resolve_problem(config, structure), rows=rows,
                            found={_neighbour_of(r): str(r.get("direction", "")) for r in rows}))
    return out


def _raise_all(audited: Sequence[_Audited], upper: bool,
               say: Callable[[str], None] | None) -> Iterator[tuple[_Audited, _Raised]]:
    """Each point whose pairs the neighbours of the others raise, with what changed."""
    groups: dict[str, list[_Audited]] = {}
    for a in audited:
        groups.setdefault(_identity(a.problem, a.config), []).append(a)
    for group in groups.values():
        for a in group:
            origin: dict[Found, tuple[int, str]] = {}
            for b in sorted(group, key=lambda b: b.index):
                for nb, label in b.found.items():
                    if b is not a and nb not in a.found:
                        origin.setdefault(nb, (b.index, label))
            if not origin:
                continue
            if say is not None:
                say(f"point {a.index}: trying {len(origin)} neighbours found at the other "
                    f"{len(group) - 1} points of the sweep with the same data")
            raised = _raised(a, origin, upper)
            if raised.changed:
                yield a, raised


def _raised(a: _Audited, origin: Mapping[Found, tuple[int, str]], upper: bool) -> _Raised:
    """``a``'s leakage rows, each replaced by the offered neighbour's row where that is larger (with
    ``found_at_point`` and the search's label of it from ``origin``)."""
    offsets = np.asarray(a.problem.data.offsets)
    by_target: dict[int, list[Neighbour]] = {}
    X, kind = a.problem.data.X, str(a.config["privacy"]["neighbours"])
    where: dict[Found, tuple[int, str]] = {}
    for row, x_new in sorted(origin):  # projected: a table of an older version printed 6 digits
        j = int(np.searchsorted(offsets, row, side="right") - 1)
        nb = Neighbour(row=row, x_new=project(X[row], np.array(x_new), kind), label="sweep")
        by_target.setdefault(j, []).append(nb)
        where.setdefault(_found(nb), origin[(row, x_new)])
    audit = audit_config(a.config, a.problem, neighbours=by_target, upper_bound=upper)
    by_delta = audit.rank_by == "delta"
    fresh = {(r["observer"], r["target"]): r for r in jsonable(leakage_rows(audit))}
    rows, changed = [], set()
    for old in a.rows:
        new = fresh.get((old["observer"], old["target"]))
        if new is None or not _value(new, by_delta) > _value(old, by_delta):
            rows.append(old)
            continue
        changed.add((int(old["observer"]), int(old["target"])))
        merged = {k: v for k, v in old.items() if k != "stopped_at_cap"}
        merged.update({k: v for k, v in new.items() if k not in ("view", "delta")})
        merged["found_at_point"], merged["direction"] = where[_neighbour_of(new)]
        if "epsilon_upper" in old and not by_delta:
            merged["gap_upper_lower"] = upper_gap(float(old["epsilon_upper"]), float(new["epsilon"]))
        rows.append(merged)
    return _Raised(rows=rows, changed=frozenset(changed), audit=audit, where=where)


def share_neighbours(points: Sequence[Point], results: Mapping[str, PointResult],
                     keys: Mapping[int, str], base: Path | None = None,
                     built: Mapping[int, Any] | None = None,
                     say: Callable[[str], None] | None = None) -> dict[str, PointResult]:
    """Every point's result of a ``dpgossip run``, with each audited D-DP-PM point's ``leakage`` rows
    raised by the neighbours found at the other points of the sweep (module docstring).

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
    chosen: dict[str, tuple[int, Mapping[str, Any], list[dict[str, Any]]]] = {}
    for p in points:
        rows = results[keys[p.index]].tables.get("leakage")
        if rows and _shared(p.config) and (p.config.get("privacy") or {}).get("audit"):
            chosen.setdefault(keys[p.index], (p.index, p.config, rows))
    out = dict(results)
    for a, raised in _raise_all(_audited(chosen, base, built or {}), False, say):
        res = results[a.key]
        out[a.key] = replace(res, tables={**res.tables, "leakage": raised.rows})
    return out


def share_audit_neighbours(tasks: Sequence[AuditTask], points: Sequence[AuditPoint | Any],
                           base: Path | None = None, say: Callable[[str], None] | None = None
                           ) -> list[AuditPoint | Any]:
    """The points of a ``dpgossip audit`` (in the order of ``tasks``), each pair-audited D-DP-PM
    point raised by the neighbours found at the other points of the sweep (module docstring): its
    pairs, leakage rows, matrix, hop table and worst pair."""
    chosen: dict[str, tuple[int, Mapping[str, Any], list[dict[str, Any]]]] = {}
    for t, p in zip(tasks, points, strict=True):
        if isinstance(p, AuditPoint) and _shared(t.config):
            chosen.setdefault(t.key, (t.index, t.config, p.leakage))
    by_key = {a.key: (a, raised) for a, raised in _raise_all(_audited(chosen, base, {}), True, say)}
    out = []
    for t, p in zip(tasks, points, strict=True):
        hit = by_key.get(t.key) if isinstance(p, AuditPoint) else None
        out.append(p if hit is None else _raised_point(p, *hit))
    return out


def _raised_point(p: AuditPoint, a: _Audited, raised: _Raised) -> AuditPoint:
    """``p`` with the pairs of ``raised`` replaced, and its matrix, hop table and worst pair with them."""
    audit, by_delta = raised.audit, p.rank_by == "delta"
    pairs: list[dict[str, Any]] = []
    done: set[tuple[int, int]] = set()
    for row in p.pairs:
        key = (int(row["observer"]), int(row["target"]))
        if key not in raised.changed:
            pairs.append(row)
        elif key not in done:  # the new rows keep the evidence of the pair's own search
            done.add(key)
            olds = {r["method"]: r for r in p.pairs if (int(r["observer"]), int(r["target"])) == key}
            found = raised.where[_found(audit.results[key].neighbour)]
            pairs.extend({**olds.get(new["method"], {}), **new, "view": audit.view,
                          **audit.upper_columns(key[1], float(new["epsilon"])),
                          **({"stopped_at_cap": False} if "stopped_at_cap" in olds.get(
                              new["method"], {}) else {}),
                          "direction": found[1], "found_at_point": found[0]}
                         for new in jsonable(audit.results[key].rows(audit.epsilons, audit.delta)))
    matrix = [list(r) for r in p.matrix]
    column = (f"delta_{p.matrix_method}_at_eps_{p.rank_epsilon:g}" if by_delta
              else f"epsilon_{p.matrix_method}")
    for row in raised.rows:
        if (int(row["observer"]), int(row["target"])) in raised.changed:
            matrix[int(row["observer"])][int(row["target"])] = float(row[column])
    by_hops = (HopLeakage.table((row["hops"], _value(row, by_delta)) for row in raised.rows)
               if p.per_observer else p.by_hops)
    return replace(p, pairs=pairs, leakage=raised.rows, matrix=matrix, by_hops=by_hops,
                   worst=_worst(p, a, raised))


def _worst(p: AuditPoint, a: _Audited, raised: _Raised) -> WorstPair:
    """The point's worst pair after the raise: the old one unless a raised pair exceeds it."""
    by_delta = p.rank_by == "delta"
    best = max(raised.rows, key=lambda r: _value(r, by_delta))
    key = (int(best["observer"]), int(best["target"]))
    if key not in raised.changed or not _value(best, by_delta) > p.worst_value:
        return p.worst
    audit, problem = raised.audit, a.problem
    w = audit.results[key]
    exact = None if "exact" in audit.methods else jsonable(exact_for_pair(
        problem.data, problem.network, problem.params, audit, w.observer, w.target))
    row = _worst_row(audit, w, problem, a.config)
    origin = raised.where[_found(w.neighbour)]
    row["direction"] = f"{origin[1]} (found at point {origin[0]})"
    row.update({"epsilon_upper": best.get("epsilon_upper"),
                "epsilon_upper_max": p.worst.epsilon_upper_max})
    return WorstPair.from_row(row, exact)
