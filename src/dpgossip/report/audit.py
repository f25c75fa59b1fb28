"""Plots of ``dpgossip audit``, drawn into the audit folder's ``plots/`` (:func:`make_audit_report`,
also run by ``dpgossip report`` on an audit folder: from its files, nothing recomputed).

From the rows of :meth:`~dpgossip.scenario.audit_command.AuditRun.leakage_rows` (one per ``ddppm``
point and pair, with ``point``, ``series``, ``epsilon``, ``method``, ``delta`` and ``view``):

``leakage_heatmap.png`` (one point) or ``leakage_heatmap_p<point>.png``
    Epsilon of every (observer, target) pair; a log colour scale when the finite values span more
    than a factor 100.
``leakage_vs_hops.png``
    Epsilon of every pair against its hop distance, one series per point.
``leakage_by_target.png`` (one point) or ``leakage_by_target_p<point>.png``
    For a view without an observer (``all-but-one``, ``eavesdropper``), which has one number per target
    and no hop distance: the number of every target (no heatmap, no hops plot).

With ``privacy.rank_by = "delta"`` no epsilon is solved: the rows carry ``delta_at_epsilon`` (delta at
the first epsilon of the grid) instead, and the plots show it.

From the rows of :meth:`~dpgossip.scenario.audit_command.AuditRun.guarantee_rows` (the kinds with
their own accountant and auditor):

``guarantees.png``
    Per point, the guaranteed epsilon beside the audited one (and the audit beyond the guarantee).
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from dpgossip.errors import ConfigError
from dpgossip.report.checked import RERUN, read_record
from dpgossip.report.figures import new_figure, require_matplotlib, save
from dpgossip.report.leakage import is_finite_number, plot_leakage_vs_hops, plot_pair_heatmap
from dpgossip.report.manifest import clear_previous, plots_folder, write_manifest
from dpgossip.report.tables import typed_rows
from dpgossip.scenario.audit_point import OBSERVER_VIEWS, per_target
from dpgossip.scenario.progress import axes_label

__all__ = ["plot_audit", "plot_by_target", "plot_guarantees", "make_audit_report",
           "audit_leakage_rows"]


def _log_scale(rows: Sequence[Mapping[str, Any]], key: str) -> bool:
    """A log scale when the finite positive values span more than a factor 100 (with the certified
    upper bounds, when the plot draws them: a bracket of a factor 1e6 is unreadable on a linear axis)."""
    values = [r[key] for r in rows]
    if key == "epsilon":
        values += [r["epsilon_upper"] for r in rows if is_finite_number(r.get("epsilon_upper"))]
    finite = [float(v) for v in values if math.isfinite(float(v))]
    return bool(finite) and min(finite) > 0 and max(finite) / min(finite) > 100



def _what(rows: Sequence[Mapping[str, Any]], key: str) -> str:
    methods = ", ".join(sorted({str(r["method"]) for r in rows}))
    if key == "epsilon":
        deltas = ", ".join(f"{float(d):g}" for d in sorted({float(r["delta"]) for r in rows}))
        return f"epsilon ({methods}) at delta {deltas}"
    return f"delta ({methods}) at the first epsilon of the grid"


def plot_by_target(rows: Sequence[Mapping[str, Any]], path: str | Path, *, value_key: str,
                   title: str) -> Path:
    """The value of every target (one bar each) of a view without an observer; infinite values are
    drawn at the top of the axis and labelled ``inf``."""
    targets = [int(r["target"]) for r in rows]
    values = [float(r[value_key]) for r in rows]
    finite = [v for v in values if math.isfinite(v)]
    top = max(finite, default=1.0) * 1.15 or 1.0
    fig = new_figure(max(5.5, 0.35 * len(rows) + 2.0), 3.8)
    ax = fig.add_subplot()
    ax.bar(targets, [v if math.isfinite(v) else top for v in values], color="tab:blue")
    for t, v in zip(targets, values, strict=True):
        if not math.isfinite(v):
            ax.annotate("inf", (t, top), ha="center", va="bottom", fontsize=7)
    ax.set_xlabel("target agent")
    ax.set_ylabel(value_key.replace("_", " "))
    ax.set_xticks(targets)
    ax.set_title(textwrap.fill(title, 70), fontsize=9)
    ax.grid(True, axis="y", alpha=0.3)
    return save(fig, path)


def plot_guarantees(rows: Sequence[Mapping[str, Any]], path: str | Path) -> Path:
    """Per point of a kind with its own accountant: guaranteed and audited epsilon side by side (the
    audit beyond the guarantee hatched, where the kind has one)."""
    fig = new_figure(max(5.0, 0.9 * len(rows) + 2.0), 4.0)
    ax = fig.add_subplot()
    xs = list(range(len(rows)))
    series = (("guaranteed_epsilon", "guaranteed", -0.27, ""),
              ("audited_epsilon", "audited (repeat 0)", 0.0, ""),
              ("audited_epsilon_beyond", "audited beyond the guarantee", 0.27, "//"))
    for key, label, shift, hatch in series:
        ys = [float(r[key]) if r.get(key) not in (None, "") else math.nan for r in rows]
        if any(math.isfinite(y) for y in ys):
            ax.bar([x + shift for x in xs], ys, width=0.26, label=label, hatch=hatch)
    ax.set_xlim(-0.6, len(rows) - 0.4)
    ax.set_xticks(xs)
    ax.set_xticklabels([f"p{r['point']}\n{r['kind']}" for r in rows], fontsize=7)
    ax.set_ylabel("epsilon")
    deltas = ", ".join(f"{float(d):g}" for d in sorted({float(r["guarantee_delta"]) for r in rows}))
    ax.set_title(f"guaranteed and audited epsilon at delta {deltas}", fontsize=9)
    ax.legend(fontsize=7)
    ax.grid(True, axis="y", alpha=0.3)
    return save(fig, path)


def plot_audit(out: str | Path, rows: Sequence[Mapping[str, Any]], several: bool,
               guarantees: Sequence[Mapping[str, Any]] = ()) -> list[Path]:
    """Draw the audit plots of ``rows`` and ``guarantees`` into the folder ``out`` (module docstring).

    Parameters
    ----------
    out
        The folder of the plots (an audit folder's ``plots/``).
    rows
        One per ``ddppm`` point and pair (``point``, ``series``, ``observer``, ``target``, ``hops``,
        ``epsilon``, ``method``, ``delta``, ``view``); one per target, without ``observer`` and
        ``hops``, for a view without an observer.
    several
        The audit has several ``ddppm`` points: one heatmap per point, named
        ``leakage_heatmap_p<point>.png``.
    guarantees
        One row per point of a kind with its own accountant (``guarantees.csv``).

    Returns
    -------
    list of Path
        The PNG files written.

    Raises
    ------
    PlotsUnavailable
        Without matplotlib.
    """
    out = Path(out)
    written: list[Path] = []
    if rows:
        key = "epsilon" if all("epsilon" in r for r in rows) else "delta_at_epsilon"
        by_point: dict[int, list[Mapping[str, Any]]] = {}
        for r in rows:
            by_point.setdefault(int(r["point"]), []).append(r)
        for index, rs in by_point.items():
            label = rs[0]["series"]
            title = f"{_what(rs, key)}, view {rs[0]['view']}" + (f" ({label})" if label else "")
            suffix = f"_p{index}" if several else ""
            if str(rs[0]["view"]) in OBSERVER_VIEWS:
                written.append(plot_pair_heatmap(rs, out / f"leakage_heatmap{suffix}.png",
                                                 value_key=key, title=title, log=_log_scale(rs, key)))
            else:
                written.append(plot_by_target(per_target(list(rs)),  # older folders: every pair
                                              out / f"leakage_by_target{suffix}.png",
                                              value_key=key, title=f"{title}: per target"))
        paired = [r for r in rows if str(r["view"]) in OBSERVER_VIEWS]
        if paired:
            written.append(plot_leakage_vs_hops(
                paired, out / "leakage_vs_hops.png", value_key=key, log=_log_scale(paired, key),
                title=f"{_what(paired, key)} per pair against hops (per instance)"))
    if guarantees:
        written.append(plot_guarantees(guarantees, out / "guarantees.png"))
    return written


OLD_ROOT_PLOTS = ("leakage_heatmap.png", "leakage_heatmap_p*.png", "leakage_vs_hops.png")
"""Plots that older versions of ``dpgossip audit`` drew in the folder itself (now in ``plots/``)."""


def _value_key(rows: Sequence[Mapping[str, Any]]) -> str | None:
    """``epsilon`` when the rows carry one (a number, infinite included), else the first
    ``delta_at_eps_*`` column (``privacy.rank_by = "delta"``: no epsilon is solved, NaN)."""
    if any(isinstance(r.get("epsilon"), int | float) and not math.isnan(r["epsilon"]) for r in rows):
        return "epsilon"
    return next((k for k in rows[0] if str(k).startswith("delta_at_eps_")), None) if rows else None


def audit_leakage_rows(pairs: Sequence[Mapping[str, Any]], labels: Mapping[int, str]
                       ) -> list[dict[str, Any]]:
    """The rows of :func:`plot_audit` from ``pairs.csv``: per point, the rows of its first method
    (the one that ranks its pairs), with ``series`` from ``labels`` and the value under ``epsilon``
    or ``delta_at_epsilon``."""
    by_point: dict[int, list[Mapping[str, Any]]] = {}
    for r in pairs:
        by_point.setdefault(int(r["point"]), []).append(r)
    out = []
    for p, rows in by_point.items():
        first = rows[0]["method"]
        mine = [r for r in rows if r["method"] == first]
        key = _value_key(mine)
        if key is None:
            continue
        name = "epsilon" if key == "epsilon" else "delta_at_epsilon"
        for r in mine:
            row = {k: r[k] for k in ("observer", "target", "hops", "epsilon_upper", "stopped_at_cap")
                   if k in r}
            out.append({**row, name: r[key], "method": first, "delta": r["delta"],
                        "view": r["view"], "point": p, "series": labels.get(p, "")})
    return out


def make_audit_report(folder: str | Path) -> list[Path]:
    """Redraw the plots of an audit folder into its ``plots/`` from ``worst.json``, ``pairs.csv`` and
    ``guarantees.csv`` (nothing is recomputed); the plots of the previous report, and those an older
    version drew in the folder itself, are removed first.

    Raises
    ------
    ConfigError
        A damaged file (:mod:`dpgossip.report.checked`), or no table to draw.
    PlotsUnavailable
        Without matplotlib.
    """
    require_matplotlib()
    folder = Path(folder)
    worst = read_record(folder / "worst.json", ("scenario", "points"))
    if not isinstance(worst["points"], list):
        raise ConfigError(f"{folder / 'worst.json'}: 'points' must be a list; {RERUN}")
    labels = {int(p["point"]): axes_label(p.get("axes") or {}) for p in worst["points"]
              if isinstance(p, dict) and "point" in p}
    pairs = typed_rows(folder / "pairs.csv") if (folder / "pairs.csv").is_file() else []
    guarantees = (typed_rows(folder / "guarantees.csv") if (folder / "guarantees.csv").is_file()
                  else [])
    if not pairs and not guarantees:
        raise ConfigError(f"{folder}: an audit folder without pairs.csv or guarantees.csv: the audit "
                          f"did not finish; {RERUN}")
    _require(folder / "pairs.csv", pairs, ("point", "target", "method", "delta", "view"))
    _require(folder / "guarantees.csv", guarantees, ("point", "kind", "guaranteed_epsilon",
                                                     "guarantee_delta"))
    plots = plots_folder(folder)
    clear_previous(plots)
    for pattern in OLD_ROOT_PLOTS:
        for old in folder.glob(pattern):
            old.unlink(missing_ok=True)
    rows = audit_leakage_rows(pairs, labels)
    several = len({r["point"] for r in pairs}) > 1
    written = plot_audit(plots, rows, several, guarantees)
    write_manifest(plots, written)
    return written


def _require(path: Path, rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> None:
    missing = [c for c in columns if rows and c not in rows[0]]
    if missing:
        raise ConfigError(f"{path}: the column {missing[0]!r} is missing; the file was edited or "
                          f"is not an audit table; {RERUN}")
