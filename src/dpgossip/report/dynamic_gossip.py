"""The plots of a dynamic-gossip scenario: consensus error against time and messages, leakage against
graph distance.

Rows are those of the results folder's tables (:mod:`~dpgossip.scenario.dynamic_gossip_tables`), read
back as strings or given as numbers.  :func:`plot_consensus` draws, per mode, the mean error with the
10 %-90 % band of the runs against simulated time or delivered messages (log scale);
:func:`plot_leakage` the mean exact known-schedule Renyi divergence against graph distance (solid) and
the largest over the sampled schedules (dashed: an estimate of the worst schedule, not a bound).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dpgossip.errors import ConfigError
from dpgossip.report.checked import RERUN, read_record, read_table
from dpgossip.report.figures import colours, new_figure, save
from dpgossip.report.manifest import clear_previous, plots_folder, write_manifest
from dpgossip.scenario.store import read_csv

__all__ = ["plot_consensus", "plot_leakage", "plot_results", "dynamic_gossip_report", "PLOT_NAMES"]

PLOT_NAMES = {"time": "consensus-time.png", "messages": "consensus-messages.png",
              "leakage": "leakage-distance.png"}
"""File names of the plots in the results folder's ``plots/``."""
_AXIS_LABEL = {"time": "simulated time (1 = one synchronous round at period 1)",
               "messages": "messages delivered"}


def _num(value: Any) -> float:
    return float(value) if value not in (None, "") else math.nan


def _by_mode(rows: Iterable[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
    out: dict[str, list[Mapping[str, Any]]] = {}
    for r in rows:
        out.setdefault(str(r["mode"]), []).append(r)
    return out


def plot_consensus(rows: Iterable[Mapping[str, Any]], path: str | Path, *, axis: str = "time",
                   title: str = "") -> Path:
    """Mean consensus error ``||x - avg(x^0) 1||`` per mode against ``axis`` (``"time"`` or
    ``"messages"``), with the band between the 10 % and 90 % quantiles over the runs; log y."""
    modes = _by_mode(rows)
    fig = new_figure(7.2, 4.6)
    ax = fig.add_subplot()
    for colour, (mode, rs) in zip(colours(len(modes), ordered=False), modes.items(), strict=True):
        keep = [r for r in rs if _num(r["error_mean"]) > 0]
        x = [_num(r[axis]) for r in keep]
        runs = int(keep[0]["runs"]) if keep else 0
        ax.plot(x, [_num(r["error_mean"]) for r in keep], color=colour, linewidth=1.4,
                label=f"{mode} ({runs} run{'' if runs == 1 else 's'})")
        if runs > 1:
            ax.fill_between(x, [max(_num(r["error_q10"]), 1e-300) for r in keep],
                            [_num(r["error_q90"]) for r in keep], color=colour, alpha=0.15, linewidth=0)
    ax.set_yscale("log")
    ax.set_xlabel(_AXIS_LABEL[axis])
    ax.set_ylabel("consensus error ||x - avg(x0) 1|| (mean; band 10-90 %)")
    ax.set_title(title or f"Consensus error against {axis}")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=7)
    return save(fig, path)


def plot_leakage(rows: Iterable[Mapping[str, Any]], path: str | Path, *, alpha: float = 2.0,
                 title: str = "") -> Path:
    """Mean exact known-schedule leakage (Renyi divergence at ``alpha``) against graph distance per
    mode (solid, circles), and the largest over the sampled schedules (dashed, crosses: an estimate
    from below of the worst schedule, not a bound); log y, zero values not drawn."""
    modes = _by_mode(rows)
    fig = new_figure(7.2, 5.6)
    ax = fig.add_subplot()
    curves = []
    for colour, (mode, rs) in zip(colours(len(modes), ordered=False), modes.items(), strict=True):
        d = [int(r["distance"]) for r in rs]
        curves.append(_Curve(d, [_num(r["rdp_mean"]) for r in rs], colour, "-", "o", f"{mode}: mean"))
        if int(rs[0]["schedules"]) > 1:
            curves.append(_Curve(d, [_num(r["rdp_max"]) for r in rs], colour, "--", "x",
                                 f"{mode}: max over {rs[0]['schedules']} sampled (estimate)"))
    for k, curve in enumerate(curves):
        _curve(ax, curve, [c for c in curves[k + 1:] if _coincide(c, curve)])
    ax.set_yscale("log")
    ax.set_xlabel("graph distance between observer and target")
    ax.set_ylabel(f"exact Renyi divergence at alpha = {alpha:g}")
    ax.set_title(title or "Leakage to an observer who knows the schedule")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2)
    return save(fig, path)


@dataclass(frozen=True)
class _Curve:
    """One line of the leakage plot: distances, values, colour, line style, marker, legend text."""

    x: list[int]
    y: list[float]
    colour: Any
    style: str
    marker: str
    label: str

    def points(self) -> list[tuple[int, float]]:
        """The points drawn: distance >= 0 and a finite value > 0 (a log axis)."""
        return [(a, b) for a, b in zip(self.x, self.y, strict=True) if a >= 0 and math.isfinite(b) and b > 0]


def _coincide(a: _Curve, b: _Curve) -> bool:
    """Whether the two curves are drawn at the same points (values within 0.1 %: one line on the log
    axis)."""
    pa, pb = a.points(), b.points()
    return bool(pa) and len(pa) == len(pb) and all(
        xa == xb and math.isclose(ya, yb, rel_tol=1e-3) for (xa, ya), (xb, yb) in zip(pa, pb, strict=True))


def _curve(ax: Any, curve: _Curve, hidden_by: Sequence[_Curve] = ()) -> None:
    """Draw ``curve``. One that later curves ``hidden_by`` would cover exactly is drawn with hollow
    markers, larger the more curves lie over it (each ring shows around the next), and its legend says
    which curve it coincides with."""
    keep = curve.points()
    if not keep:
        return
    style: dict[str, Any] = {"markersize": 4, "linewidth": 1.2}
    label = curve.label
    if hidden_by:
        style = {"markersize": 4 + 5 * len(hidden_by), "markerfacecolor": "none",
                 "markeredgewidth": 1.5, "linewidth": 1.2}
        label += f" (coincides with {hidden_by[0].label.split(' over ')[0]})"
    ax.plot([a for a, _ in keep], [b for _, b in keep], linestyle=curve.style, marker=curve.marker,
            color=curve.colour, label=label, **style)


def plot_results(out_dir: str | Path, *, alpha: float = 2.0) -> list[Path]:
    """Draw the three plots of a dynamic-gossip results folder from its tables (:data:`PLOT_NAMES`)."""
    out_dir = Path(out_dir)
    plots = out_dir / "plots"
    return [plot_consensus(read_csv(out_dir / "consensus_time.csv"), plots / PLOT_NAMES["time"],
                           axis="time"),
            plot_consensus(read_csv(out_dir / "consensus_messages.csv"),
                           plots / PLOT_NAMES["messages"], axis="messages"),
            plot_leakage(read_csv(out_dir / "leakage.csv"), plots / PLOT_NAMES["leakage"], alpha=alpha)]


_COLUMNS = {"consensus_time.csv": ("mode", "time", "runs", "error_mean", "error_q10", "error_q90"),
            "consensus_messages.csv": ("mode", "messages", "runs", "error_mean", "error_q10",
                                       "error_q90"),
            "leakage.csv": ("mode", "distance", "schedules", "rdp_mean", "rdp_max")}


def dynamic_gossip_report(path: Path) -> list[Path]:
    """``dpgossip report`` of a dynamic-gossip folder: redraw its three plots from its tables (every
    file checked first: a missing or damaged one is an error naming it)."""
    alpha = read_record(path / "summary.json", ("alpha",))["alpha"]
    if isinstance(alpha, bool) or not isinstance(alpha, int | float) or not alpha > 1:
        raise ConfigError(f"{path / 'summary.json'}: 'alpha' must be a number > 1, got {alpha!r}; "
                          f"{RERUN}")
    for name, columns in _COLUMNS.items():
        table = path / name
        if not table.is_file():
            raise ConfigError(f"{path}: {name} is missing; {RERUN}")
        rows = read_table(table)
        missing = [c for c in columns if rows and c not in rows[0]]
        if missing or not rows:
            what = f"the column {missing[0]!r} is missing" if missing else "it has no rows"
            raise ConfigError(f"{table}: {what}; {RERUN}")
    plots = plots_folder(path)
    clear_previous(plots)
    written = plot_results(path, alpha=float(alpha))
    write_manifest(plots, written)
    return written
