"""The status of one run and its metrics, measured over the rows that were actually computed.

A run of a sweep point ends in one of :data:`STATUSES`, written to the ``status`` column of
``runs.csv`` with the why in ``status_reason``:

``ok``
    Every agent finished and every number is finite.
``partial``
    Agents crashed (engine, ``[engine] crashes``) and the survivors finished. The metrics are over
    the rows of ``Q`` that were assembled, against the leading singular vectors of those rows.
``stopped``
    The engine halted the run (``on_crash = "stop"``, a lost message without retransmission, a
    stall, ...): final metrics are NaN; ``iterations.csv`` has the errors of the iterations that
    every surviving agent completed.
``diverged``
    The iterates stayed finite but grew beyond :data:`DIVERGENCE_BOUND`, where their squared norms
    overflow: the metrics would be meaningless, so they are NaN from that iteration on.
``non-finite``
    An iterate (or a final metric) became ``inf`` or ``nan``: same treatment.
``underflow``
    The iterates shrank below the smallest normal float64 (:data:`UNDERFLOW_BOUND`), so the estimate
    is zero or rounding noise: same treatment.

The first two of the last three come from a noise scale or ``protocol.alpha`` too large for float64
arithmetic, the last from a ``protocol.alpha`` too small; the iterates are classified by
:func:`dpgossip.protocols.status.iterate_problem` (the status of every
:class:`~dpgossip.protocols.ddppm.result.RunResult`). Nothing here raises: metrics that cannot be computed are
NaN, and the status says why.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dpgossip.data.partition import PartitionedData
from dpgossip.protocols.ddppm.engine_result import EngineResult
from dpgossip.protocols.ddppm.result import RunResult
from dpgossip.protocols.metrics import captured_energy, sin_angle, subspace_distance
from dpgossip.protocols.power import Spectrum, top_singular
from dpgossip.protocols.status import (
    DIVERGENCE_BOUND,
    UNDERFLOW_BOUND,
    iterate_problem,
    problem_reason,
)

__all__ = ["STATUSES", "ARITHMETIC", "DIVERGENCE_BOUND", "UNDERFLOW_BOUND", "RunMeasure", "measure_run",
           "flag_non_finite", "status_counts", "point_warning"]

STATUSES: tuple[str, ...] = ("ok", "partial", "stopped", "diverged", "non-finite", "underflow")
"""Values of the ``status`` column of ``runs.csv`` (see the module docstring)."""

ARITHMETIC: frozenset[str] = frozenset({"diverged", "non-finite", "underflow"})
"""Statuses that mean float64 arithmetic broke down (the command line exits 1 when a run has one)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RunMeasure:
    """Metrics and status of one run.

    Attributes
    ----------
    status, reason
        One of :data:`STATUSES` and a sentence saying why (empty for ``ok``).
    errors
        ``(r, T + 1)``: ``sin(u_l, q_l^(t))`` over the measured rows, NaN where not computed.
    subspace_distance, captured_energy
        Of the final estimate ``Q`` on the measured rows (NaN when it cannot be measured).
    rows
        Number of rows the metrics are over (``n`` unless agents crashed or the run stopped).
    """

    status: str
    reason: str
    errors: np.ndarray
    subspace_distance: float
    captured_energy: float
    rows: int

    def to_row(self) -> dict[str, Any]:
        """Final metrics and status: ``error`` (component 1), ``subspace_distance``,
        ``captured_energy``, ``status``, ``status_reason``."""
        return {
            "error": float(self.errors[0, -1]),
            "subspace_distance": self.subspace_distance,
            "captured_energy": self.captured_energy,
            "status": self.status,
            "status_reason": self.reason,
        }


def _rows(res: RunResult, data: PartitionedData) -> np.ndarray:
    """Rows to measure: all, or for an engine run with failures, the rows assembled in ``Q`` (every
    component), else the surviving agents' rows."""
    if not isinstance(res, EngineResult):
        return np.ones(data.n, dtype=bool)
    kept = np.asarray(res.rows_kept, dtype=bool).all(axis=1)
    if kept.any():
        return kept
    return np.isin(data.agent_of_row(), list(res.outcome.survivors))


def measure_run(res: RunResult, data: PartitionedData, spec: Spectrum) -> RunMeasure:
    """Status and metrics of one run (never raises on NaN, ``inf`` or huge values).

    Parameters
    ----------
    res
        The run (matrix backend or engine).
    data
        The point's data.
    spec
        Leading singular vectors of ``data.X`` (rank ``r`` of the run).

    Returns
    -------
    RunMeasure
        On all rows when the run has no failures, so the numbers equal the plain metrics of
        :mod:`dpgossip.protocols.metrics` bit for bit.
    """
    outcome = res.outcome if isinstance(res, EngineResult) else None
    engine = None if outcome is None else outcome.status
    stopped = engine == "stopped"
    r, T1, _ = res.iterates.shape
    rows = _rows(res, data)
    k = int(rows.sum())
    full = k == data.n
    errors = np.full((r, T1), np.nan)
    sd = ce = float("nan")
    found: tuple[str, int, int, float] | None = None
    with np.errstate(all="ignore"):
        X = data.X if full else data.X[rows]
        iterates = res.iterates if full else res.iterates[:, :, rows]
        U = spec.U if full else (top_singular(X, r).U if k >= r else None)
        for l in range(r):  # in the order computed: a broken iterate spoils all that follow
            for t in range(T1):
                q = iterates[l, t]
                bad = iterate_problem(q, stopped)
                if bad:
                    found = (bad, l, t, float(np.max(np.abs(q))) if bad != "non-finite" else 0.0)
                    break
                if bad is None and U is not None:
                    errors[l, t] = sin_angle(U[:, l], q)
            if found is not None:
                break
        Q = res.Q if full else res.Q[rows]
        if found is None and U is not None and np.isfinite(Q).all():
            sd = subspace_distance(U, Q)
            ce = captured_energy(X, Q)
    status, reason = _status(found, outcome, engine, rows, data, sd, ce, stopped)
    return RunMeasure(status=status, reason=reason, errors=errors, subspace_distance=sd,
                      captured_energy=ce, rows=k)


def _status(found: tuple[str, int, int, float] | None, outcome: Any, engine: str | None,
            rows: np.ndarray, data: PartitionedData, sd: float, ce: float,
            stopped: bool) -> tuple[str, str]:
    if found is not None:
        kind, l, t, size = found
        why = problem_reason(kind, l, t, size, alpha="protocol.alpha")
        tail = f"; the engine also reported: {outcome.reason}" if engine not in (None, "completed") \
            else ""
        return kind, f"{why}; metrics from there on are NaN{tail}"
    if stopped:
        return "stopped", f"{outcome.reason}; final metrics are NaN"
    if engine == "completed_with_crash":
        agents = ", ".join(map(str, np.unique(data.agent_of_row()[rows])))
        what = ("all rows" if rows.all() else
                f"the {int(rows.sum())} of {data.n} rows assembled in Q (agents {agents}), "
                "against the leading singular vectors of those rows")
        return "partial", f"{outcome.reason}; metrics over {what}"
    for name, value in (("subspace_distance", sd), ("captured_energy", ce)):
        if not np.isfinite(value):
            return "non-finite", f"{name} is {value}: the final estimate could not be measured"
    return "ok", ""


def flag_non_finite(row: dict[str, Any], columns: Sequence[str]) -> None:
    """Mark an ``ok`` row ``non-finite`` when one of ``columns`` holds ``inf`` or ``nan`` (e.g. the
    LDP baseline's error, measured apart from the run)."""
    if row.get("status") != "ok":
        return
    for name in columns:
        value = row.get(name)
        if isinstance(value, float) and not np.isfinite(value):
            row["status"] = "non-finite"
            row["status_reason"] = f"{name} is {value}"
            return


def status_counts(rows: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """How many runs ended in each status, in the order of :data:`STATUSES` (rows without a
    ``status`` column, from older results, are not counted)."""
    counts = Counter(str(r["status"]) for r in rows if r.get("status") not in (None, ""))
    return {s: counts[s] for s in (*STATUSES, *sorted(set(counts) - set(STATUSES))) if counts[s]}


def point_warning(runs: Sequence[Mapping[str, Any]]) -> str | None:
    """One line about the runs of a point that are not ``ok`` (``None`` when all are): counts by
    status and the first reason, e.g. ``"2 of 3 repeats diverged; repeat 0: iterates of ..."``."""
    bad = [r for r in runs if r.get("status") not in (None, "", "ok")]
    if not bad:
        return None
    counts = status_counts(bad)
    what = (next(iter(counts)) if len(counts) == 1 else
            "not ok (" + ", ".join(f"{n} {s}" for s, n in counts.items()) + ")")
    first = bad[0]
    return (f"{len(bad)} of {len(runs)} repeat{'s' if len(runs) != 1 else ''} {what}; repeat "
            f"{first.get('repeat')}: {first.get('status_reason')}")
