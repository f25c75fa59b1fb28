"""The audit of one sweep point as ``dpgossip audit`` keeps it: :class:`AuditPoint`, stored in
``DIR/points/<key>.json``.

A point file is written atomically (:func:`~dpgossip.scenario.store.atomic_write_text`) when the
point's audit finishes, so the folder holds whole points only; a rerun reads every point whose file
exists and carries the point's key (:func:`read_audit_point`) instead of auditing it again. Rows are kept
after a JSON round trip (:func:`~dpgossip.scenario.results.jsonable`), so the tables assembled from a
resumed point equal those of a fresh one. The file's ``format`` (:data:`AUDIT_POINT_FORMAT`) tells it
from a ``dpgossip run`` point file.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from dpgossip.rounding import format_upper
from dpgossip.scenario.assemble import axis_column
from dpgossip.scenario.progress import axes_label
from dpgossip.scenario.results import read_point_json, write_point_json

__all__ = ["AUDIT_POINT_FORMAT", "KIND_POINT_FORMAT", "OBSERVER_VIEWS", "per_target", "ProblemSummary",
           "ExactValue", "WorstPair", "HopLeakage", "AuditPoint", "KindAuditPoint", "write_audit_point",
           "read_audit_point", "read_kind_point"]

AUDIT_POINT_FORMAT = "dpgossip-audit-point/2"
"""Value of the ``format`` key of an audit point file."""

OBSERVER_VIEWS: tuple[str, ...] = ("observer", "paper")
"""Views of one observer: the audit's numbers are per (observer, target) pair, with a hop distance.
The other views (``all-but-one``, ``eavesdropper``) have no observer: their numbers are per target."""


def per_target(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows of a view without an observer, one per target (and method, when rows carry one): the
    first row of each, without ``observer`` and ``hops`` (every observer's row is the same)."""
    seen: set[tuple[Any, Any]] = set()
    out = []
    for row in rows:
        key = (row.get("target"), row.get("method"))
        if key not in seen:
            seen.add(key)
            out.append({k: v for k, v in row.items() if k not in ("observer", "hops")})
    return sorted(out, key=lambda r: (r.get("target") or 0))


KIND_POINT_FORMAT = "dpgossip-kind-audit-point/1"
"""Value of the ``format`` key of the point file of a kind with its own accountant and auditor."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ProblemSummary:
    """Size and noise of an audited point's problem."""

    agents: int
    rows: int
    """``n``, rows of the data."""
    columns: int
    """``d``, columns of the data."""
    iterations: int
    consensus_steps: int
    sigma_p_first: float
    """``sigma_p`` of the first iteration (first component)."""
    sigma_p_last: float
    """``sigma_p`` of the last iteration (first component)."""
    sigma_q: float

    @classmethod
    def of(cls, problem: Any) -> ProblemSummary:
        """The summary of a :class:`~dpgossip.scenario.problem.Problem`."""
        data, params = problem.data, problem.params
        return cls(agents=int(data.m), rows=int(data.n), columns=int(data.d),
                   iterations=int(params.iterations), consensus_steps=int(params.consensus_steps),
                   sigma_p_first=float(params.sigma_p[0, 0]),
                   sigma_p_last=float(params.sigma_p[0, -1]), sigma_q=float(params.sigma_q))

    def to_row(self) -> dict[str, Any]:
        """The fields as a flat row."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True, slots=True, kw_only=True)
class ExactValue:
    """The exact hockey-stick numbers of one neighbour (when the audit ran only cheaper conversions)."""

    epsilon: float
    """Epsilon at the audit's delta."""
    delta_at_epsilon: dict[str, float]
    """Delta at each epsilon of the grid (keys formatted ``f"{e:g}"``)."""

    def to_row(self) -> dict[str, Any]:
        """``{"epsilon": ..., "delta_at_epsilon": {...}}``, as ``worst.json`` writes it."""
        return {"epsilon": self.epsilon, "delta_at_epsilon": dict(self.delta_at_epsilon)}


@dataclass(frozen=True, slots=True, kw_only=True)
class WorstPair:
    """The worst (observer, target) pair of a point, its worst neighbour and its numbers."""

    view: str
    neighbours: str
    delta: float
    """The audit's delta (epsilon is reported at it)."""
    observer: int
    target: int
    hops: int
    row: int
    """Row of the target's data replaced by the neighbour."""
    original: list[float]
    replacement: list[float]
    direction: str
    """How the search found the neighbour (its label)."""
    epsilon: dict[str, float]
    """Epsilon at ``delta`` per method."""
    delta_at_epsilon: dict[str, dict[str, float]]
    """Per method, delta at each epsilon of the grid (keys formatted ``f"{e:g}"``)."""
    renyi2: float
    """The Renyi divergence of order 2 in the worse direction, ``max(D_2(P||Q), D_2(Q||P))``."""
    exact: ExactValue | None = None
    """The exact value of this neighbour when ``exact`` is not among the audit's methods."""
    epsilon_upper: float | None = None
    """The certified upper bound on epsilon at ``delta`` of this pair's target (docs/upper-bound.md);
    None when not computed."""
    epsilon_upper_max: float | None = None
    """The largest certified upper bound over all targets: with ``epsilon``, the worst case lies in
    ``[epsilon, epsilon_upper_max]``; None when not computed."""
    capped: bool = False
    """The search stopped at ``privacy.epsilon_cap``: the ranking method's epsilon holds the cap, and
    the neighbour exceeds it (the worst case is at least the cap)."""

    _PAIR_KEYS = ("view", "neighbours", "delta", "observer", "target", "hops", "row",
                  "original", "replacement", "direction", "epsilon", "delta_at_epsilon", "renyi2")
    _UPPER_KEYS = ("epsilon_upper", "epsilon_upper_max")

    def to_row(self) -> dict[str, Any]:
        """The pair's part of its ``worst.json`` entry (without the exact value), in file order; the
        upper bounds only when computed."""
        row = {k: getattr(self, k) for k in self._PAIR_KEYS}
        row.update({k: getattr(self, k) for k in self._UPPER_KEYS if getattr(self, k) is not None})
        if self.capped:
            row["capped"] = True
        return row

    @classmethod
    def from_row(cls, row: Mapping[str, Any], exact: Mapping[str, Any] | None) -> WorstPair:
        """Inverse of :meth:`to_row`, with the exact value's row if any."""
        value = None if exact is None else ExactValue(
            epsilon=float(exact["epsilon"]), delta_at_epsilon=dict(exact["delta_at_epsilon"]))
        return cls(**{k: row[k] for k in cls._PAIR_KEYS}, exact=value,
                   **{k: row[k] for k in cls._UPPER_KEYS if row.get(k) is not None},
                   capped=bool(row.get("capped", False)))


@dataclass(frozen=True, slots=True, kw_only=True)
class HopLeakage:
    """Worst and mean of the ranked quantity (epsilon at delta, or delta at the first epsilon with
    ``privacy.rank_by = "delta"``) of the pairs at one hop distance."""

    hops: int
    worst: float
    mean: float

    @staticmethod
    def table(values: Iterable[tuple[int, float]]) -> tuple[HopLeakage, ...]:
        """One entry per hop distance of ``(hops, value)`` pairs, by increasing distance."""
        groups: dict[int, list[float]] = {}
        for hops, value in values:
            groups.setdefault(int(hops), []).append(float(value))
        return tuple(HopLeakage(hops=h, worst=max(v), mean=float(sum(v) / len(v)))
                     for h, v in sorted(groups.items()))


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class AuditPoint:
    """The audit of one sweep point: what ``dpgossip audit`` prints and the rows of its files.

    Attributes
    ----------
    index, key, axes
        Position in the sweep, the key of its point file, its axis values (dotted paths).
    problem
        Size and noise of the audited problem.
    calibration
        The calibration columns (``noise_scale``, ``calibrated_epsilon``, ...) when ``privacy.calibrate``
        set the noise; empty otherwise.
    note
        The rank note (:func:`~dpgossip.scenario.privacy_section.rank_note`) or ``None``.
    method
        The first conversion of ``privacy.methods``: it ranks the pairs.
    rank_by, rank_epsilon
        What ranks the pairs and fills ``by_hops`` and ``matrix``: ``"epsilon"`` (epsilon at the
        audit's delta) or ``"delta"`` (delta at ``rank_epsilon``, the first epsilon of the grid; no
        epsilon is solved, ``privacy.rank_by = "delta"``).
    worst
        The worst pair by ``method``.
    by_hops
        Worst and mean of the ranked quantity (by ``method``) per hop distance, by increasing distance.
    matrix_method, matrix
        The ``m x m`` matrix of the ranked quantity (observer x target, NaN on the diagonal) by
        ``matrix_method`` (``exact`` when audited, else ``method``).
    pairs
        The audit's tidy rows (:meth:`~dpgossip.protocols.ddppm.audit.PairAudit.rows`), JSON-native.
    leakage
        One row per pair for the leakage plots (:func:`~dpgossip.scenario.privacy_section.leakage_rows`).
    seconds
        Wall-clock time of the point (timing only).
    resumed
        Read back from its point file rather than audited in this run.
    """

    index: int
    key: str
    axes: dict[str, Any]
    problem: ProblemSummary
    calibration: dict[str, Any] = field(default_factory=dict)
    note: str | None = None
    method: str
    rank_by: str = "epsilon"
    rank_epsilon: float | None = None
    worst: WorstPair
    by_hops: tuple[HopLeakage, ...]
    matrix_method: str
    matrix: list[list[float]]
    pairs: list[dict[str, Any]]
    leakage: list[dict[str, Any]]
    seconds: float = 0.0
    resumed: bool = False

    @property
    def label(self) -> str:
        """The axis values as a short label (``"c=2"``; empty for a single point)."""
        return axes_label(self.axes)

    @property
    def per_observer(self) -> bool:
        """The view has an observer (:data:`OBSERVER_VIEWS`): numbers per pair, with hops; else per
        target."""
        return self.worst.view in OBSERVER_VIEWS

    def pair_rows(self) -> list[dict[str, Any]]:
        """Rows of ``pairs.csv``: ``point``, the axis columns and calibration columns, then the audit's
        (one per target, without ``observer`` and ``hops``, for a view without an observer)."""
        extra = {"point": self.index, **{axis_column(a): v for a, v in self.axes.items()},
                 **self.calibration}
        rows = self.pairs if self.per_observer else per_target(self.pairs)
        return [{**extra, **row} for row in rows]

    def leakage_rows(self) -> list[dict[str, Any]]:
        """Rows for the leakage plots: one per pair (per target for a view without an observer), with
        ``point`` and ``series`` (the label)."""
        rows = self.leakage if self.per_observer else per_target(self.leakage)
        return [{**row, "point": self.index, "series": self.label} for row in rows]

    def target_rows(self) -> list[dict[str, Any]]:
        """Rows of ``epsilon_by_target.csv`` of a view without an observer: ``target``, ``value``
        (the ranked quantity of :attr:`matrix_method`), ``method``, ``quantity``."""
        m = len(self.matrix)
        return [{"target": j, "value": float(next((self.matrix[o][j] for o in range(m) if o != j),
                                                  float("nan"))),
                 "method": self.matrix_method, "quantity": self.quantity} for j in range(m)]

    def worst_record(self) -> dict[str, Any]:
        """The point's entry of ``worst.json`` (no ``observer`` and ``hops`` for a view without an
        observer)."""
        pair = self.worst.to_row()
        if not self.per_observer:
            pair = {k: v for k, v in pair.items() if k not in ("observer", "hops")}
        return {
            "point": self.index, "axes": dict(self.axes), **pair,
            **({"note": self.note} if self.note else {}),
            **({"calibration": dict(self.calibration)} if self.calibration else {}),
            **({"exact_for_worst_neighbour": self.worst.exact.to_row()}
               if self.worst.exact is not None else {}),
        }

    @property
    def quantity(self) -> str:
        """The ranked quantity in words: ``"epsilon at delta 1e-05"`` or ``"delta at epsilon 5"``."""
        if self.rank_by == "delta":
            return f"delta at epsilon {self.rank_epsilon:g}"
        return f"epsilon at delta {self.worst.delta:g}"

    @property
    def worst_value(self) -> float:
        """The worst pair's ranked quantity by ``method``."""
        if self.rank_by == "delta":
            return float(self.worst.delta_at_epsilon[self.method][f"{self.rank_epsilon:g}"])
        return float(self.worst.epsilon[self.method])

    def matrix_rows(self) -> list[dict[str, Any]]:
        """Rows of the point's matrix file: ``observer``, ``target_<j>``, ``method``, ``quantity``."""
        return [{"observer": o, **{f"target_{j}": float(v) for j, v in enumerate(row)},
                 "method": self.matrix_method, "quantity": self.quantity}
                for o, row in enumerate(self.matrix)]

    def to_json(self) -> dict[str, Any]:
        """Content of the point file."""
        return {
            "format": AUDIT_POINT_FORMAT, "hash": self.key, "index": self.index, "axes": self.axes,
            "seconds": self.seconds, "problem": self.problem.to_row(),
            "calibration": self.calibration, "note": self.note, "method": self.method,
            "rank_by": self.rank_by, "rank_epsilon": self.rank_epsilon, "worst": self.worst.to_row(),
            "exact": self.worst.exact.to_row() if self.worst.exact is not None else None,
            "by_hops": [[h.hops, h.worst, h.mean] for h in self.by_hops],
            "matrix_method": self.matrix_method, "matrix": self.matrix,
            "pairs": self.pairs, "leakage": self.leakage,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any], *, index: int, axes: Mapping[str, Any]
                  ) -> AuditPoint:
        """Inverse of :meth:`to_json`, for the point at ``index`` with ``axes`` (``resumed``).

        Raises
        ------
        KeyError, TypeError, ValueError
            A malformed file.
        """
        return cls(
            index=index, key=str(data["hash"]), axes=dict(axes),
            problem=ProblemSummary(**data["problem"]), calibration=dict(data["calibration"]),
            note=data["note"], method=str(data["method"]), rank_by=str(data["rank_by"]),
            rank_epsilon=None if data["rank_epsilon"] is None else float(data["rank_epsilon"]),
            worst=WorstPair.from_row(data["worst"], data["exact"]),
            by_hops=tuple(HopLeakage(hops=int(h), worst=float(w), mean=float(m))
                          for h, w, m in data["by_hops"]),
            matrix_method=str(data["matrix_method"]), matrix=[list(r) for r in data["matrix"]],
            pairs=list(data["pairs"]), leakage=list(data["leakage"]),
            seconds=float(data["seconds"]), resumed=True,
        )


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class KindAuditPoint:
    """The audit of one point of a kind with its own accountant and auditor (``ppm``, ``capepca``,
    ...): its guarantee and audit columns, as ``dpgossip run`` writes them for repeat 0
    (:mod:`dpgossip.scenario.kind_audit`).

    Attributes
    ----------
    index, key, axes
        Position in the sweep, the key of its point file, its axis values (dotted paths).
    kind
        ``protocol.kind`` of the point.
    size
        ``agents``, ``rows``, ``columns``, ``iterations`` of the point's problem.
    columns
        The guarantee and audit columns (``guaranteed_epsilon``, ``guarantee_delta``,
        ``guarantee_accountant``, ``audited_epsilon``, ``audit_view``, ...), JSON-native.
    seconds, resumed
        Wall-clock time; read back from its file rather than audited in this run.
    """

    index: int
    key: str
    axes: dict[str, Any]
    kind: str
    size: dict[str, int]
    columns: dict[str, Any]
    seconds: float = 0.0
    resumed: bool = False

    @property
    def label(self) -> str:
        """The axis values as a short label (``"c=2"``; empty for a single point)."""
        return axes_label(self.axes)

    def summary(self) -> str:
        """What the progress line says of the point."""
        audited = self.columns.get("audited_epsilon")
        tail = "" if audited is None else f", audited {float(audited):.4g}"
        guaranteed = format_upper(float(self.columns["guaranteed_epsilon"]), 4)  # a bound: rounded up
        return f"{self.kind}: guaranteed epsilon {guaranteed}{tail}"

    def table_row(self) -> dict[str, Any]:
        """The point's row of ``guarantees.csv``."""
        return {"point": self.index, **{axis_column(a): v for a, v in self.axes.items()},
                "kind": self.kind, **self.size, **self.columns}

    def worst_record(self) -> dict[str, Any]:
        """The point's entry of ``worst.json``."""
        return {"point": self.index, "axes": dict(self.axes), "kind": self.kind, **self.columns}

    def to_json(self) -> dict[str, Any]:
        """Content of the point file."""
        return {"format": KIND_POINT_FORMAT, "hash": self.key, "index": self.index,
                "axes": self.axes, "seconds": self.seconds, "kind": self.kind, "size": self.size,
                "columns": self.columns}

    @classmethod
    def from_json(cls, data: Mapping[str, Any], *, index: int, axes: Mapping[str, Any]
                  ) -> KindAuditPoint:
        """Inverse of :meth:`to_json` (``resumed``); raises ``KeyError``, ``TypeError`` or
        ``ValueError`` on a malformed file."""
        columns = dict(data["columns"])
        float(columns["guaranteed_epsilon"])
        return cls(index=index, key=str(data["hash"]), axes=dict(axes), kind=str(data["kind"]),
                   size={k: int(v) for k, v in dict(data["size"]).items()}, columns=columns,
                   seconds=float(data["seconds"]), resumed=True)


def read_kind_point(out_dir: Path, key: str, index: int, axes: Mapping[str, Any]
                    ) -> KindAuditPoint | None:
    """The stored kind audit of the point with key ``key``, or ``None`` (as :func:`read_audit_point`)."""
    data = read_point_json(out_dir, key, KIND_POINT_FORMAT)
    if data is None:
        return None
    try:
        return KindAuditPoint.from_json(data, index=index, axes=axes)
    except (KeyError, TypeError, ValueError):
        return None


def write_audit_point(out_dir: Path, point: AuditPoint | KindAuditPoint) -> Path:
    """Write ``out_dir/points/<key>.json`` atomically; returns its path."""
    return write_point_json(out_dir, point.key, point.to_json())


def read_audit_point(out_dir: Path, key: str, index: int, axes: Mapping[str, Any]
                     ) -> AuditPoint | None:
    """The stored audit of the point with key ``key``, or ``None`` when there is no valid file.

    A file that cannot be read or parsed, has another format or carries another key is treated as
    absent (the point is audited again and the file replaced).
    """
    data = read_point_json(out_dir, key, AUDIT_POINT_FORMAT)
    if data is None:
        return None
    try:
        return AuditPoint.from_json(data, index=index, axes=axes)
    except (KeyError, TypeError, ValueError):
        return None
