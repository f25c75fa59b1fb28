"""Utility against privacy for every protocol of a results folder: ``privacy_utility.png``.

One series per protocol variant (``protocol.kind``, and for the ``ppm*`` kinds the sensitivity and
adjacency), the final subspace distance (mean over repeats) against epsilon on a log axis, at the
delta of the rows:

* filled marker at the **guaranteed** epsilon (``guaranteed_epsilon``: the accountant's DP guarantee
  of the ``ppm*`` kinds; the LDP baseline's budget ``epsilon``, which its calibration guarantees);
* hollow marker at the **audited** epsilon (``audited_epsilon`` of the ``ppm*`` rows: the view and
  adjacency the guarantee covers; for D-DP-PM the worst pair of ``leakage.csv``): a per-instance value
  (a lower estimate of the worst case where a search finds it, exact for the element adjacency and the
  views of ``ppm-gossip``), never a guarantee;
* cross at the epsilon audited **beyond the guarantee's scope** (``audited_epsilon_beyond``: a row
  replacement under the element adjacency, a single agent of ``ppm-gossip``), where there is one;
* a thin line joins the two markers of one point; D-DP-PM has no guarantee, only audited markers, and
  an infinite audited epsilon is drawn as a right-pointing triangle at the right edge.

:func:`frontier_table` returns the numbers the plot draws (one :class:`FrontierPoint` per point), so
that a README table and the figure come from the same function.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dpgossip.protocols.registry import ProtocolKind, find_kind
from dpgossip.report.figures import colours, new_figure, save
from dpgossip.report.tables import ResultsFolder
from dpgossip.scenario.point import DEFAULT_KIND
from dpgossip.scenario.summary import mean_ci

__all__ = ["FrontierPoint", "frontier_table", "plot_privacy_utility"]


@dataclass(frozen=True, slots=True, kw_only=True)
class FrontierPoint:
    """One point of the privacy-utility plot (means over its repeats)."""

    series: str
    """``ppm (improved, element)``, ``ppm-gossip``, ``D-DP-PM``, ``LDP``, ..."""
    point: int
    error: float
    guaranteed_epsilon: float
    """``nan`` where the protocol has no guarantee (D-DP-PM)."""
    audited_epsilon: float
    """``nan`` where not audited (LDP)."""
    delta: float
    audited_beyond: float = math.nan
    """Audit of a change or view the guarantee does not cover (``nan`` where there is none)."""
    topology: str = ""
    """The point's network (``topology`` column); the plot has one panel per topology."""
    dataset: str = ""
    """The point's data (``dataset`` column); the plot has one row of panels per dataset."""
    at_least: bool = False
    """The audited epsilon is the audit's ``epsilon_cap``, which a neighbour found exceeds (its search
    stopped there): the worst case is at least this."""
    conversion: str = ""
    """A pair audit's method when it is a conversion other than ``exact`` (``rdp``, ``chernoff``): the
    audited epsilon is then that conversion of the neighbour found (the legend says so)."""

    def to_row(self) -> dict[str, object]:
        """Tidy row."""
        return {"series": self.series, "point": self.point, "error": self.error,
                "guaranteed_epsilon": self.guaranteed_epsilon,
                "audited_epsilon": self.audited_epsilon, "delta": self.delta,
                "audited_beyond": self.audited_beyond, "topology": self.topology,
                "dataset": self.dataset, "audited_at_least": self.at_least}


def _kind(row: Mapping[str, Any]) -> tuple[str, ProtocolKind | None]:
    """The row's ``protocol.kind`` (the default kind when the column is absent) and its registered
    kind (``None`` for a kind no longer installed)."""
    name = str(row.get("protocol_kind") or DEFAULT_KIND)
    return name, find_kind(name)


def _series(row: Mapping[str, Any]) -> str:
    """The row's series: its kind's label (``ProtocolKind.series``), else the kind's name."""
    name, spec = _kind(row)
    return name if spec is None else spec.series(row)


def _metric(row: Mapping[str, Any]) -> tuple[str, str]:
    """The row's utility column and its label: its kind's ``metric``, else the subspace distance."""
    spec = _kind(row)[1]
    if spec is not None and spec.metric is not None:
        return spec.metric
    return "subspace_distance", r"subspace distance $\|\sin\Theta\|_2$"


def _pair_audited(row: Mapping[str, Any]) -> bool:
    """The row's kind is audited pair by pair (its audited epsilon is in ``leakage.csv``)."""
    spec = _kind(row)[1]
    return spec is not None and spec.pair_audit


def _mean(values: Sequence[float]) -> float:
    vals = [float(v) for v in values if v is not None]
    if not vals:
        return math.nan
    if any(math.isinf(v) for v in vals):
        return math.inf
    return float(sum(vals) / len(vals))


def _ddppm_audit(res: ResultsFolder) -> tuple[dict[int, float], float, set[int], str]:
    """Worst pair's epsilon of each D-DP-PM point from ``leakage.csv``, the delta it is at, the
    points whose worst pair stopped at the epsilon cap (an "at least" value) and the audit's method
    when it is a conversion other than ``exact``."""
    rows = res.table("leakage") or []
    worst: dict[int, float] = {}
    capped: set[int] = set()
    delta = math.nan
    methods = {str(r.get("method") or "exact") for r in rows}
    conversion = "" if methods <= {"exact"} else "/".join(sorted(methods - {"exact"}))
    for r in rows:
        eps = r.get("epsilon")
        if eps is None:
            continue
        p = int(r["point"])
        if float(eps) > worst.get(p, -math.inf):
            worst[p] = float(eps)
            capped.discard(p)
            if str(r.get("stopped_at_cap", "")).lower() == "true":
                capped.add(p)
        delta = float(r.get("delta", delta) or delta)
    return worst, delta, capped, conversion


def frontier_table(res: ResultsFolder) -> list[FrontierPoint]:
    """The points of :func:`plot_privacy_utility`: every ``ppm*`` point, every D-DP-PM point that was
    audited, and the LDP baseline of each budget (module docstring)."""
    metric = "subspace_distance"
    by_point: dict[int, list[dict[str, Any]]] = {}
    for r in res.runs:
        by_point.setdefault(int(r["point"]), []).append(r)
    ddppm, dd_delta, capped, conversion = _ddppm_audit(res)
    out: list[FrontierPoint] = []
    ldp: dict[tuple[str, str, float], list[float]] = {}
    ldp_delta = math.nan
    order: dict[str, int] = {}                                 # datasets in the order of the points
    for p, rows in sorted(by_point.items()):
        first = rows[0]
        series, topo = _series(first), str(first.get("topology") or "")
        data = str(first.get("dataset") or "")
        order.setdefault(data, len(order))
        column = _metric(first)[0]
        err = _mean([r.get(column, r.get("error")) if column == metric else r.get(column) for r in rows])
        if _pair_audited(first):
            if p in ddppm:
                out.append(FrontierPoint(series=series, point=p, error=err,
                                         guaranteed_epsilon=math.nan, audited_epsilon=ddppm[p],
                                         delta=dd_delta, topology=topo, dataset=data,
                                         at_least=p in capped, conversion=conversion))
        else:
            out.append(FrontierPoint(
                series=series, point=p, error=err,
                guaranteed_epsilon=_mean([r.get("guaranteed_epsilon") for r in rows]),
                audited_epsilon=_mean([r.get("audited_epsilon") for r in rows]),
                delta=float(first.get("guarantee_delta") or math.nan),
                audited_beyond=_mean([r.get("audited_epsilon_beyond") for r in rows]), topology=topo,
                dataset=data))
        if first.get("ldp_error") is not None and first.get("epsilon") is not None:
            ldp.setdefault((data, topo, float(first["epsilon"])), []).extend(
                float(r["ldp_error"]) for r in rows)
            ldp_delta = float(first.get("delta") or math.nan)
    for (data, topo, eps), errs in sorted(ldp.items(), key=lambda kv: (order[kv[0][0]], kv[0][1:])):
        out.append(FrontierPoint(series="LDP", point=-1, error=mean_ci(errs)["mean"],
                                 guaranteed_epsilon=eps, audited_epsilon=math.nan, delta=ldp_delta,
                                 topology=topo, dataset=data))
    return out


def _draw_series(ax: Any, pts: list[FrontierPoint], colour: Any, label: str, right: float) -> None:
    pts = sorted(pts, key=lambda f: (f.guaranteed_epsilon if math.isfinite(f.guaranteed_epsilon)
                                     else f.audited_epsilon))
    g = [f for f in pts if math.isfinite(f.guaranteed_epsilon)]
    if g:
        ax.plot([f.guaranteed_epsilon for f in g], [f.error for f in g], "-o", color=colour, ms=5,
                lw=1.2, label=f"{label}: guaranteed")
    a = [f for f in pts if not math.isnan(f.audited_epsilon)]
    finite = [f for f in a if math.isfinite(f.audited_epsilon) and not f.at_least]
    if finite:
        how = (f" ({finite[0].conversion.upper()} conversion of the worst neighbour found)"
               if finite[0].conversion else "")
        ax.plot([f.audited_epsilon for f in finite], [f.error for f in finite], "o", color=colour,
                mfc="white", ms=6, mew=1.3, label=f"{label}: audited{how}")
    capped = [f for f in a if f.at_least]
    if capped:  # the search stopped at the cap: the worst case lies to the right of the marker
        ax.plot([f.audited_epsilon for f in capped], [f.error for f in capped], ">", color=colour,
                mfc="white", ms=7, mew=1.3, label=f"{label}: audited, at least the epsilon cap")
    inf = [f for f in a if math.isinf(f.audited_epsilon)]
    if inf:
        ax.plot([right] * len(inf), [f.error for f in inf], ">", color=colour, mfc="white", ms=8,
                mew=1.3, label=f"{label}: audited epsilon infinite")
    beyond = [f for f in pts if math.isfinite(f.audited_beyond)]
    if beyond:
        ax.plot([f.audited_beyond for f in beyond], [f.error for f in beyond], "x", color=colour,
                ms=6, mew=1.3, label=f"{label}: audited beyond the guarantee's scope")
    for f in a:
        if math.isfinite(f.guaranteed_epsilon):
            x2 = f.audited_epsilon if math.isfinite(f.audited_epsilon) else right
            ax.plot([f.guaranteed_epsilon, x2], [f.error, f.error], ":", color=colour, lw=0.8)


def plot_privacy_utility(res: ResultsFolder, path: str | Path) -> Path | None:
    """Error against epsilon for every protocol variant (module docstring); ``None`` when the folder
    has no ``ppm*`` point."""
    if all(_pair_audited(r) for r in res.runs):
        return None
    table = frontier_table(res)
    finite = [x for f in table for x in (f.guaranteed_epsilon, f.audited_epsilon, f.audited_beyond)
              if math.isfinite(x) and x > 0]
    right = max(finite) * 3 if finite else 10.0
    names = list(dict.fromkeys(f.series for f in table))
    colour = dict(zip(names, colours(len(names), ordered=False), strict=True))
    topologies = list(dict.fromkeys(f.topology for f in table))
    datasets = list(dict.fromkeys(f.dataset for f in table))
    fig = new_figure(12.5 + 4.5 * (len(topologies) - 1), 5.5 * len(datasets))
    grid = fig.subplots(len(datasets), len(topologies), sharey=True, squeeze=False)
    for row, data in zip(grid, datasets, strict=True):
        for ax, topo in zip(row, topologies, strict=True):
            for name in names:
                pts = [f for f in table if f.series == name and f.topology == topo and f.dataset == data]
                if pts:
                    _draw_series(ax, pts, colour[name], name, right)
            label = ", ".join(x for x in (data if len(datasets) > 1 else "",
                                          topo if len(topologies) > 1 else "") if x)
            _style(ax, table, f"{label}: " if label else "")
        row[0].set_ylabel(f"{_y_label(res)} (mean over repeats)")
    axes = grid.ravel()
    handles = {lab: h for ax in axes for h, lab in zip(*ax.get_legend_handles_labels(), strict=True)}
    grid[0, -1].legend(list(handles.values()), list(handles), fontsize="x-small", loc="upper left",
                       bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    axes[0].set_title(f"{res.config.get('name', '')}: utility against privacy; filled = guarantee, "
                      "hollow = audit, cross = audit beyond its scope", fontsize="small")
    return save(fig, path)


def _y_label(res: ResultsFolder) -> str:
    """The utility measure's name, or each kind's measure when the kinds differ."""
    labels = dict.fromkeys(_metric(r)[1] for r in res.runs)
    if len(labels) == 1:
        return next(iter(labels))
    return "error (" + "; ".join(labels) + ")"


def _style(ax: Any, table: list[FrontierPoint], prefix: str) -> None:
    ax.set_xscale("log")
    ax.set_xlabel(prefix + r"$\varepsilon$ at $\delta$ = " + ", ".join(
        sorted({f"{f.delta:g}" for f in table if math.isfinite(f.delta)})))
    ax.grid(True, which="major", alpha=0.3)
