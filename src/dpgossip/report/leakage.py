"""Pairwise leakage plots: an (observer, target) heatmap and leakage against hop distance.

Input format (what the privacy auditor passes): a sequence of mappings, one per ordered pair,

==================  ====================================================================
``observer``        int, the agent that observes (the adversary's position)
``target``          int, the agent whose data leaks
``hops``            int, shortest-path distance between them in the communication graph
``value``           float, the leakage of the pair, e.g. epsilon at a fixed delta (the key can be
                    renamed with ``value_key``, e.g. ``value_key="epsilon"``)
``series``          optional str, splits :func:`plot_leakage_vs_hops` into one curve per series
``epsilon_upper``   optional float, the certified upper bound of the pair (the auditor's rows carry
                    it; docs/upper-bound.md): :func:`plot_leakage_vs_hops` draws its worst and mean
                    per hop distance above the lower estimates (``[lower, upper]``)
``stopped_at_cap``  optional bool, the pair's search stopped at the epsilon cap (its value is the
                    cap, "at least"): the legend says so
==================  ====================================================================

A pair given twice (in the heatmap), a missing key or a non-finite hop count raises ``ValueError``.
Missing pairs are drawn grey in the heatmap. Infinite leakage (no privacy) is never drawn as a number: in
the heatmap it gets its own saturated colour (:data:`INF_COLOUR`, outside the colour scale) with a legend
entry ``inf``; against hops it is drawn on a separate ``inf`` line above the finite values. When the rows
carry ``method`` and ``delta`` (as the auditor's do), the value label names them
(:func:`leakage_label`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from dpgossip.report.figures import colours, new_figure, require_matplotlib, save

__all__ = ["plot_pair_heatmap", "plot_leakage_vs_hops", "plot_leakage_vs_iterations", "LEAKAGE_KEYS",
           "INF_COLOUR", "leakage_label", "is_finite_number"]

INF_COLOUR = "#0a64ff"
"""Colour of infinite leakage: a saturated blue that the heatmap's colour map (magma) never uses."""

ITERATIONS_AXIS = "protocol.iterations"

LEAKAGE_KEYS: tuple[str, ...] = ("observer", "target", "hops")
"""Keys every row needs besides the value."""


def _check(rows: Sequence[Mapping[str, Any]], value_key: str) -> None:
    if not rows:
        raise ValueError("no leakage rows to plot")
    for k, row in enumerate(rows):
        for key in (*LEAKAGE_KEYS, value_key):
            if key not in row or row[key] is None:
                raise ValueError(f"leakage row {k} has no {key!r}: {dict(row)!r}")


def leakage_label(rows: Sequence[Mapping[str, Any]], value_key: str = "epsilon") -> str:
    """Axis label of a leakage value naming the method and delta the rows carry, e.g.
    ``"$\\varepsilon$ (rdp) at $\\delta$ = 1e-05"``; the plain symbol when they carry neither."""
    base = {"epsilon": r"$\varepsilon$", "delta_at_epsilon": r"$\delta$"}.get(value_key, value_key)
    methods = sorted({str(r["method"]) for r in rows if r.get("method") not in (None, "")})
    deltas = sorted({float(r["delta"]) for r in rows if is_finite_number(r.get("delta"))})
    label = base + (f" ({', '.join(methods)})" if methods else "")
    if value_key == "epsilon" and deltas:
        label += r" at $\delta$ = " + ", ".join(f"{d:g}" for d in deltas)
    return label


def is_finite_number(value: Any) -> bool:
    """``value`` reads as a finite float (a number, or its text in a CSV cell)."""
    try:
        return math.isfinite(float(value))
    except (TypeError, ValueError):
        return False


def _pair_matrix(rows: Sequence[Mapping[str, Any]], value_key: str) -> tuple[list[int], np.ndarray]:
    """The sorted agents and the observer x target matrix of values (NaN where no pair is given)."""
    agents = sorted({int(r["observer"]) for r in rows} | {int(r["target"]) for r in rows})
    index = {a: i for i, a in enumerate(agents)}
    M = np.full((len(agents), len(agents)), np.nan)
    for r in rows:
        i, j = index[int(r["observer"])], index[int(r["target"])]
        if not np.isnan(M[i, j]):
            raise ValueError(
                f"pair (observer {r['observer']}, target {r['target']}) is given twice; give one "
                "value per pair (filter the table, e.g. by point)"
            )
        M[i, j] = float(r[value_key])
    return agents, M


def _annotate(ax: Any, M: np.ndarray, scale: float, log: bool) -> None:
    """Write every cell's value on the heatmap, white on dark cells."""
    n = M.shape[0]
    for i in range(n):
        for j in range(n):
            v = M[i, j]
            if np.isnan(v):
                continue
            text = "inf" if np.isinf(v) else f"{v:.3g}"
            dark = bool(np.isinf(v)) or (v / scale > 0.55 if not log else False)
            ax.text(j, i, text, ha="center", va="center", fontsize=7,
                    color="white" if dark else "black")


def plot_pair_heatmap(
    rows: Sequence[Mapping[str, Any]],
    path: str | Path,
    *,
    value_key: str = "value",
    value_label: str | None = None,
    title: str | None = None,
    log: bool = False,
) -> Path:
    """Heatmap of the leakage of every (observer, target) pair; saved as PNG at ``path``.

    Rows are observers and columns targets, over the sorted union of agents in the table; cells are
    annotated with their values for up to 12 agents.

    Parameters
    ----------
    rows
        The tidy table (see the module docstring).
    path
        PNG file to write.
    value_key
        Key of the leakage value in each row.
    value_label
        Colour bar label (default: :func:`leakage_label` of the rows).
    title
        Figure title.
    log
        Logarithmic colour scale (positive finite values only).
    """
    _check(rows, value_key)
    require_matplotlib()
    agents, M = _pair_matrix(rows, value_key)
    value_label = value_label or leakage_label(rows, value_key)
    finite = M[np.isfinite(M)]
    top = float(finite.max()) if finite.size else 1.0
    infinite = np.isinf(M)
    masked = np.ma.masked_invalid(M)  # finite values only; infinite cells are drawn on top
    from matplotlib import colormaps
    from matplotlib.colors import ListedColormap, LogNorm
    from matplotlib.patches import Patch

    cmap = colormaps["magma_r"].with_extremes(bad="0.85")
    norm = None
    if log:
        pos = finite[finite > 0]
        if pos.size:
            norm = LogNorm(vmin=float(pos.min()), vmax=float(pos.max()))
            masked = np.ma.masked_where(~(M > 0), masked)
    n = len(agents)
    size = min(10.0, max(4.2, 0.45 * n + 2.0))
    fig = new_figure(size + 1.0, size)
    ax = fig.subplots()
    im = ax.imshow(masked, cmap=cmap, norm=norm, origin="upper", interpolation="nearest")
    if finite.size:
        cbar = fig.colorbar(im, ax=ax, shrink=0.8)
        cbar.set_label(value_label)
    if infinite.any():
        ax.imshow(np.ma.masked_where(~infinite, np.ones_like(M)), cmap=ListedColormap([INF_COLOUR]),
                  origin="upper", interpolation="nearest", vmin=0, vmax=2)
        ax.legend(handles=[Patch(color=INF_COLOUR, label=f"inf: no privacy "
                                 f"({int(infinite.sum())} of {int(np.isfinite(M).sum() + infinite.sum())}"
                                 " pairs)")],
                  loc="upper center", bbox_to_anchor=(0.5, -0.12), fontsize="small", frameon=False)
    ticks = range(n) if n <= 40 else range(0, n, max(1, n // 20))
    ax.set_xticks(list(ticks), [str(agents[t]) for t in ticks], fontsize="small")
    ax.set_yticks(list(ticks), [str(agents[t]) for t in ticks], fontsize="small")
    ax.set_xlabel("target agent (whose data)")
    ax.set_ylabel("observer agent")
    if n <= 12:
        _annotate(ax, M, top or 1.0, log)
    ax.set_title(title or f"pairwise leakage: {value_label}", fontsize="medium")
    return save(fig, path)


def _inf_line(ax: Any, y_inf: float, n_inf: int, *, log: bool, any_finite: bool,
              label: str | None = None) -> None:
    """Draw the "inf" line at ``y_inf`` and give it its own tick label, clear of the finite ticks
    (``label``: its legend entry, default the count of pairs without privacy)."""
    ax.axhline(y_inf, color=INF_COLOUR, lw=1.2, ls="--",
               label=label or f"inf: no privacy ({n_inf} pair{'s' if n_inf != 1 else ''})")
    if any_finite:
        lo, _ = ax.get_ylim()
        gap = (y_inf / lo) ** 0.08 if log and lo > 0 else None  # keep ticks clear of "inf"
        ticks = [t for t in ax.get_yticks() if lo <= t and (t > 0 or not log)
                 and (t * gap < y_inf if gap else t < y_inf - 0.08 * (y_inf - lo))]
        ax.set_yticks([*ticks, y_inf], [*(f"{t:g}" for t in ticks), "inf"])
        ax.minorticks_off()  # log minor labels would crowd the "inf" line
    else:
        ax.set_yticks([y_inf], ["inf"])
    for label in ax.get_yticklabels():
        if label.get_text() == "inf":
            label.set_color(INF_COLOUR)


def plot_leakage_vs_hops(
    rows: Sequence[Mapping[str, Any]],
    path: str | Path,
    *,
    value_key: str = "value",
    value_label: str | None = None,
    title: str | None = None,
    log: bool = False,
    upper_key: str = "epsilon_upper",
) -> Path:
    """Leakage of every pair against its hop distance, with the worst case (max) and the mean per hop
    distance as lines; one colour per ``series`` when the rows have that key. Saved as PNG at ``path``.

    When the rows carry a certified upper bound (``upper_key``, a number in every row of a series), its
    worst and mean per hop are drawn too (dashed): each pair is bracketed ``[lower, upper]``, the lower
    estimate a neighbour the search found, the upper bound proven for every neighbour.

    Parameters
    ----------
    rows
        The tidy table (see the module docstring).
    path
        PNG file to write.
    value_key
        Key of the leakage value in each row.
    value_label
        y-axis label (default: :func:`leakage_label` of the rows).
    title
        Figure title.
    log
        Logarithmic y axis.
    upper_key
        Key of the certified upper bound (drawn only with ``value_key = "epsilon"``).
    """
    _check(rows, value_key)
    value_label = value_label or leakage_label(rows, value_key)
    series = _value_series(rows, value_key)
    uppers = _upper_series(rows, upper_key) if value_key == "epsilon" else {}
    fig = new_figure(6.4, 4.4)
    ax = fig.subplots()
    rng = np.random.default_rng(0)  # jitter only; fixed so the figure is reproducible
    finite_all = [v for pts in [*series.values(), *uppers.values()] for _, v in pts
                  if math.isfinite(v)]
    positive = [v for v in finite_all if v > 0]
    top = max(finite_all) if finite_all else 1.0
    # infinite values sit on their own line above the finite ones, labelled "inf"
    y_inf = (max(positive) * 4 if positive else 1.0) if log else (abs(top) * 1.25 if top else 1.0)
    n_inf = n_up_inf = 0
    for (name, pts), c in zip(series.items(), colours(len(series), ordered=False), strict=True):
        h = np.array([p[0] for p in pts], dtype=float)
        v = np.array([p[1] for p in pts], dtype=float)
        inf = np.isposinf(v)
        n_inf += int(inf.sum())
        shown = np.where(inf, y_inf, v)
        jitter = rng.uniform(-0.12, 0.12, size=h.size) if len(series) == 1 else 0.0
        ax.scatter((h + jitter)[~inf], shown[~inf], s=12, color=c, alpha=0.45, lw=0)
        ax.scatter((h + jitter)[inf], shown[inf], s=30, color=c, marker="^", lw=0)
        levels = sorted(set(h.astype(int)))
        worst = np.array([float(np.max(v[h == x])) for x in levels])
        mean = np.array([float(np.mean(v[h == x])) for x in levels])
        prefix = f"{name}: " if name else ""
        side = _lower_side(rows, name, bracketed=bool(uppers.get(name)))
        ax.plot(levels, np.where(np.isposinf(worst), y_inf, worst), "-o", color=c, ms=4,
                label=f"{prefix}{side}worst pair")
        ax.plot(levels, np.where(np.isposinf(mean), y_inf, mean), ":", color=c,
                label=f"{prefix}{side}mean over pairs")
        n_up_inf += _draw_upper(ax, uppers.get(name), c, prefix, y_inf)
    if log and positive:
        ax.set_yscale("log")
    if n_inf or n_up_inf:  # an infinite upper bound is no finite bound proven, not no privacy
        _inf_line(ax, y_inf, n_inf, log=log, any_finite=bool(finite_all),
                  label=None if n_inf else f"inf: no finite upper bound proven ({n_up_inf} pairs)")
    hops_all = sorted({p[0] for pts in series.values() for p in pts})
    ax.set_xticks(hops_all)
    ax.set_xlabel("hop distance between observer and target")
    ax.set_ylabel(value_label)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small")
    ax.set_title(title or f"{value_label} against hop distance", fontsize="medium")
    return save(fig, path)


def _lower_side(rows: Sequence[Mapping[str, Any]], name: str, *, bracketed: bool) -> str:
    """The legend's name of a series' values: the lower side when an upper bound brackets them, and
    "at least the cap" when a pair of the series stopped at the epsilon cap."""
    if any(str(r.get("stopped_at_cap", "")) == "True" for r in rows
           if str(r.get("series", "")) == name):
        return "lower estimate (a pair at the epsilon_cap: at least the cap), "
    return "lower estimate, " if bracketed else ""


def _value_series(rows: Sequence[Mapping[str, Any]], value_key: str
                  ) -> dict[str, list[tuple[int, float]]]:
    """Per series, ``(hops, value)`` of every pair (``ValueError`` for a non-finite hop count)."""
    series: dict[str, list[tuple[int, float]]] = {}
    for k, r in enumerate(rows):
        hops = float(r["hops"])
        if not math.isfinite(hops):
            raise ValueError(f"leakage row {k}: hops must be a finite integer, got {r['hops']!r}")
        series.setdefault(str(r.get("series", "")), []).append((int(hops), float(r[value_key])))
    return series


def _upper_series(rows: Sequence[Mapping[str, Any]], key: str) -> dict[str, list[tuple[int, float]]]:
    """Per series, ``(hops, upper)`` of every pair, for the series whose every row carries a number
    under ``key`` (infinite included); the other series get none."""
    out: dict[str, list[tuple[int, float]]] = {}
    skip: set[str] = set()
    for r in rows:
        name = str(r.get("series", ""))
        try:
            value = float(r.get(key))  # type: ignore[arg-type]
        except (TypeError, ValueError):
            value = math.nan
        if math.isnan(value):
            skip.add(name)
        else:
            out.setdefault(name, []).append((int(float(r["hops"])), value))
    return {k: v for k, v in out.items() if k not in skip}


def _draw_upper(ax: Any, pts: list[tuple[int, float]] | None, colour: Any, prefix: str,
                y_inf: float) -> int:
    """Draw the worst and mean certified upper bound per hop distance; the number of infinite
    bounds (drawn on the ``inf`` line)."""
    if not pts:
        return 0
    h = np.array([p[0] for p in pts], dtype=float)
    v = np.array([p[1] for p in pts], dtype=float)
    levels = sorted(set(h.astype(int)))
    worst = np.array([float(np.max(v[h == x])) for x in levels])
    mean = np.array([float(np.mean(v[h == x])) for x in levels])
    ax.plot(levels, np.where(np.isposinf(worst), y_inf, worst), "--^", color=colour, ms=4,
            label=f"{prefix}certified upper bound, worst pair")
    ax.plot(levels, np.where(np.isposinf(mean), y_inf, mean), "-.", color=colour, alpha=0.6,
            label=f"{prefix}certified upper bound, mean")
    return int(np.isposinf(v).sum())


def plot_leakage_vs_iterations(res: Any, path: str | Path) -> Path | None:
    """Worst delta over the audited pairs at the first epsilon of the grid against the number of power
    iterations ``T`` (Campbell et al., Fig. 3, right), one line per value of the other axes.

    Drawn when the results have a ``leakage`` table and ``protocol.iterations`` is a sweep axis; the
    first method of the audit (its ``delta_<method>_at_eps_<e>`` column) is used. Returns None otherwise.
    """
    rows = res.table("leakage")
    if not rows or ITERATIONS_AXIS not in res.axes:
        return None
    cols = [k for k in rows[0] if k.startswith("delta_") and "_at_eps_" in k]
    method = rows[0].get("method")
    cols = [k for k in cols if k.startswith(f"delta_{method}_")] or cols
    if not cols:
        return None
    col = cols[0]
    eps_text = col.split("_at_eps_")[1]
    worst: dict[int, float] = {}
    for r in rows:
        p, v = int(r["point"]), float(r[col])
        worst[p] = max(worst.get(p, -math.inf), v)
    others = [a for a in res.axes if a != ITERATIONS_AXIS]
    lines: dict[str, list[tuple[int, float]]] = {}
    for p, v in worst.items():
        ax_vals = res.axis_values(p)
        label = res.group_label(p, others) if others else ""
        lines.setdefault(label, []).append((int(ax_vals[ITERATIONS_AXIS]), v))
    require_matplotlib()
    fig = new_figure(6.4, 4.4)
    ax = fig.subplots()
    for (label, pts), c in zip(sorted(lines.items()), colours(len(lines), ordered=False),
                               strict=True):
        pts.sort()
        ax.plot([t for t, _ in pts], [v for _, v in pts], "-o", color=c, ms=4, label=label or None)
    ax.set_xlabel("power iterations $T$")
    ax.set_ylabel(rf"worst $\delta$ at $\varepsilon = {eps_text}$ found ({method}; lower estimate)")
    vals = [v for pts in lines.values() for _, v in pts if v > 0]
    if vals and max(vals) / min(vals) > 100:
        ax.set_yscale("log")
    ax.grid(True, alpha=0.3)
    if any(lines):
        ax.legend(fontsize="small")
    ax.set_title("privacy against iterations (per-instance audit, worst pair found: a lower "
                 "estimate;\ncertified upper bound: epsilon_upper in leakage.csv)", fontsize="medium")
    return save(fig, path)
