"""The network-DP scenario's plot and summary: leakage against graph distance, exact beside the bound.

Rows are those of ``leakage.csv`` (:class:`~dpgossip.scenario.network_dp.LeakageRow`), read back as
strings or as numbers.  Per topology and graph distance, :func:`distance_summary` averages the exact
Renyi divergence and the published bound that applies (Muffliato's per-message sum for noise once,
MFDL's absolute-value bound for noise every round) and counts the rows where the bound is below the
exact value; :func:`plot_network_dp` draws the means, one colour per topology, the exact value as a
solid line and the bound dashed, both axes on a log scale (distances run from 1 to 88 on the grid).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dpgossip.report.figures import colours, new_figure, save
from dpgossip.scenario.store import read_csv

__all__ = ["DistancePoint", "distance_summary", "plot_network_dp", "plot_results", "PLOT_NAME"]

PLOT_NAME = "network-dp.png"
"""File name of the plot in the results folder's ``plots/``."""
_BOUNDS = ("muffliato", "mfdl")


@dataclass(frozen=True, slots=True, kw_only=True)
class DistancePoint:
    """Means over the (observer, target) pairs of one topology at one graph distance."""

    topology: str
    distance: int
    pairs: int
    exact: float
    """Mean exact Renyi divergence (``inf`` if any pair is infinite)."""
    bound: float
    """Mean of the bound that applies (``nan`` when none does)."""
    source: str
    """``"muffliato"``, ``"mfdl"`` or ``""``."""
    ratio: float
    """Mean of the per-pair ratios exact / bound."""
    flagged: int
    """Pairs whose bound is below the exact value."""

    def to_row(self) -> dict[str, object]:
        """Tidy row of every field."""
        return {"topology": self.topology, "distance": self.distance, "pairs": self.pairs,
                "exact": self.exact, "bound": self.bound, "source": self.source,
                "ratio": self.ratio, "flagged": self.flagged}


def _num(value: Any) -> float:
    return float(value) if value not in (None, "") else math.nan


def _flag(value: Any) -> bool:
    return value is True or value == "True"


def _source(rows: Sequence[Mapping[str, Any]]) -> str:
    for name in _BOUNDS:
        if any(not math.isnan(_num(r[f"{name}_bound"])) for r in rows):
            return name
    return ""


def _mean(rows: Sequence[Mapping[str, Any]], key: str) -> float:
    return sum(_num(r[key]) for r in rows) / len(rows)


def distance_summary(rows: Iterable[Mapping[str, Any]]) -> list[DistancePoint]:
    """One :class:`DistancePoint` per (topology, distance), topologies in first-seen order, distances
    increasing (pairs at distance ``-1``, not connected, are left out)."""
    groups: dict[str, dict[int, list[Mapping[str, Any]]]] = {}
    for r in rows:
        d = int(r["distance"])
        if d >= 0:
            groups.setdefault(str(r["topology"]), {}).setdefault(d, []).append(r)
    out = []
    for topology, by_distance in groups.items():
        source = _source([r for rs in by_distance.values() for r in rs])
        for d in sorted(by_distance):
            rs = by_distance[d]
            out.append(DistancePoint(
                topology=topology, distance=d, pairs=len(rs), exact=_mean(rs, "rdp"),
                bound=_mean(rs, f"{source}_bound") if source else math.nan, source=source,
                ratio=_mean(rs, f"{source}_ratio") if source else math.nan,
                flagged=sum(_flag(r[f"{source}_below_exact"]) for r in rs) if source else 0))
    return out


_LABEL = {"muffliato": "Muffliato per-message sum", "mfdl": "MFDL |M| bound"}


def plot_network_dp(rows: Iterable[Mapping[str, Any]], path: str | Path, *, alpha: float = 2.0,
                    title: str = "") -> Path:
    """Mean leakage (Renyi divergence at ``alpha``) against graph distance, one colour per topology:
    exact (solid, circles) and the published bound (dashed, crosses), log-log; zero and infinite means
    are not drawn."""
    points = distance_summary(rows)
    topologies = list(dict.fromkeys(p.topology for p in points))
    fig = new_figure(7.2, 4.6)
    ax = fig.add_subplot()
    for colour, topology in zip(colours(len(topologies), ordered=False), topologies, strict=True):
        mine = [p for p in points if p.topology == topology]
        _curve(ax, [(p.distance, p.exact) for p in mine], colour, "-", "o", f"{topology}: exact")
        if mine[0].source:
            _curve(ax, [(p.distance, p.bound) for p in mine], colour, "--", "x",
                   f"{topology}: {_LABEL[mine[0].source]}")
    ax.set_yscale("log")
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter("{x:g}")
    ax.set_xlabel("graph distance between observer and target (log scale)")
    ax.set_ylabel(f"Renyi divergence at alpha = {alpha:g} (mean over pairs)")
    ax.set_title(title or "Pairwise leakage of noisy gossip: exact vs published bounds")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    return save(fig, path)


def _curve(ax: Any, xy: list[tuple[int, float]], colour: Any, style: str, marker: str,
           label: str) -> None:
    keep = [(x, y) for x, y in xy if math.isfinite(y) and y > 0]
    if keep:
        ax.plot([x for x, _ in keep], [y for _, y in keep], linestyle=style, marker=marker,
                color=colour, label=label, markersize=4, linewidth=1.2)


def plot_results(out_dir: str | Path, *, alpha: float = 2.0) -> Path:
    """Draw ``plots/network-dp.png`` of a network-DP results folder from its ``leakage.csv``."""
    out_dir = Path(out_dir)
    return plot_network_dp(read_csv(out_dir / "leakage.csv"), out_dir / "plots" / PLOT_NAME,
                           alpha=alpha)
