"""Error curves of a results folder: against the iteration, against ``c`` and against ``epsilon``.

Every curve is the mean over the repeats with a two-sided 95 % Student-t confidence interval (band or
error bars), drawn clipped to ``[0, 1]``, the range of the errors (sines of angles). The y axis is
logarithmic when the means span more than two decades, else linear. Repeat ``k`` of every point
shares its seed, so differences between points are paired; the intervals shown are the per-point
ones, not intervals of the differences.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from dpgossip.report.audited import audit_text, audited_worst
from dpgossip.report.figures import colours, new_figure, save, short_name, value_text
from dpgossip.report.tables import ResultsFolder, aggregate
from dpgossip.scenario.summary import mean_ci

__all__ = [
    "plot_error_vs_iteration",
    "plot_error_vs_c",
    "plot_error_vs_epsilon",
    "C_AXIS",
    "EPSILON_AXIS",
]

C_AXIS = "protocol.consensus_steps"
EPSILON_AXIS = "baseline.epsilon"
_FLOOR = 1e-16


def _numeric(values: Sequence[Any]) -> bool:
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)


def _band(lo: float, hi: float, mean: float) -> tuple[float, float]:
    """CI bounds to draw. The errors are sines of angles, in ``[0, 1]``, so the interval is clipped to
    that range (with few repeats the Student-t interval reaches far outside it); its lower end is also
    kept above ``mean / 1000`` so that it can be drawn on a log axis. NaN (one repeat) -> the mean."""
    lo = mean if not math.isfinite(lo) else lo
    hi = mean if not math.isfinite(hi) else hi
    return max(lo, min(mean, hi) * 1e-3, _FLOOR), min(max(hi, _FLOOR), 1.0)


def _yscale(ax: Any, means: Sequence[float]) -> None:
    """Log scale when the means span more than two decades, else linear from 0."""
    pos = [m for m in means if math.isfinite(m) and m > 0]
    if pos and max(pos) / min(pos) > 100:
        ax.set_yscale("log")
    else:
        ax.set_ylim(0, 1.04 if max(pos, default=0) <= 1 else None)


def _line_keys(res: ResultsFolder, paths: Sequence[str]) -> dict[int, tuple[Any, ...]]:
    return {
        int(row["point"]): tuple(json_key(res.axis_values(int(row["point"]))[p]) for p in paths)
        for row in res.points
    }


def json_key(value: Any) -> Any:
    """A hashable stand-in for an axis value (tables and lists become their text)."""
    if isinstance(value, (dict, list)):
        return value_text(value) if isinstance(value, dict) else str(value)
    return value


def _label(paths: Sequence[str], key: tuple[Any, ...]) -> str:
    return ", ".join(f"{short_name(p)}={value_text(v)}" for p, v in zip(paths, key, strict=True))


def _line_label(
    res: ResultsFolder, paths: Sequence[str], key: tuple[Any, ...], points: Sequence[int]
) -> str:
    """Legend text of a line; with the SLEM of its network when a network setting varies."""
    text = _label(paths, key)
    if any(p.startswith("network.") for p in paths):
        slem = res.slem(points)
        if slem is not None:
            text += f" (SLEM {slem:.3f})"
    return text


def _ldp_text(res: ResultsFolder, runs: Sequence[dict[str, Any]], *, own_budget: bool = False) -> str:
    """The LDP line's legend text, with its budget when one; ``own_budget``: said to be the LDP's own
    (beside D-DP-PM, whose privacy is another matter)."""
    eps = {r.get("epsilon") for r in runs}
    delta = {r.get("delta") for r in runs}
    if len(eps) == 1 and len(delta) == 1:
        return (
            f"LDP baseline{' at its own budget' if own_budget else ''} "
            f"(\N{GREEK SMALL LETTER EPSILON}={value_text(eps.pop())}, "
            f"\N{GREEK SMALL LETTER DELTA}={value_text(delta.pop())})"
        )
    return "LDP baseline"


def _privacy_label(label: str, worst: Mapping[str, Any] | None, has_ldp: bool) -> str:
    """A D-DP-PM line's legend text with what ``dpgossip audit`` found for its point
    (:mod:`dpgossip.report.audited`); beside an LDP baseline without an audit, that it is not audited
    (the LDP's budget is only the LDP's)."""
    said = audit_text(worst) if worst is not None else None
    if said is not None:
        return f"{label}; {said}"
    return f"{label} (privacy not audited here)" if has_ldp else label


def _title(res: ResultsFolder, what: str, stats: Iterable[Mapping[str, float]] = ()) -> str:
    """The plot's title, with the repeats its means are over (:func:`repeats_text`)."""
    over = repeats_text(res.repeats, [int(s["n"]) for s in stats])
    return f"{res.config.get('name', '')}: {what} (mean, 95% CI over {over})"


def repeats_text(repeats: int, counts: Sequence[int]) -> str:
    """``"R repeats"``, or when some means are over fewer (a NaN or infinite value of a repeat is left
    out of its mean) how many actually contribute: ``"1 to 2 of 2 repeats; ..."``.

    Parameters
    ----------
    repeats
        The folder's repeats.
    counts
        The number of finite values of every mean drawn.
    """
    plural = "repeat" if repeats == 1 else "repeats"
    if all(n == repeats for n in counts):
        return f"{repeats} {plural}"
    lo, hi = min(counts), max(counts)
    part = str(lo) if lo == hi else f"{lo} to {hi}"
    return f"{part} of {repeats} {plural}; NaN or infinite values left out"


def _legend(ax: Any, n: int, title: str | None = None) -> None:
    if n == 0:
        return
    ax.legend(fontsize="small", ncol=2 if n > 8 else 1, title=title, title_fontsize="small")


def _finite(value: Any) -> bool:
    try:
        return math.isfinite(float(value))
    except (TypeError, ValueError):
        return False


def plot_error_vs_iteration(
    res: ResultsFolder, path: str | Path, *, component: int = 1
) -> Path | None:
    """Error of component ``component`` against the iteration ``t = 0..T``, one line per point.

    With two or more axis groups, one panel per value of the first group and one line per value of the
    others. The LDP baseline (when run, with one budget per panel) is a dashed horizontal line.
    Returns ``None`` when the component has no finite error (a kind that estimates no subspace).
    """
    from matplotlib.ticker import MaxNLocator

    rows = [r for r in res.iterations if int(r.get("component") or 1) == component]
    if not any(_finite(r.get("error")) for r in rows):     # no subspace error (e.g. private ALS)
        return None
    stats = aggregate(rows, lambda r: (int(r["point"]), int(r["iteration"])), "error")
    groups = res.groups
    facet_paths = list(groups[0]) if len(groups) >= 2 else []
    line_paths = [p for g in (groups[1:] if facet_paths else groups) for p in g]
    facet_of = _line_keys(res, facet_paths)
    line_of = _line_keys(res, line_paths)
    facets = list(dict.fromkeys(facet_of.values()))
    line_keys = list(dict.fromkeys(line_of.values()))
    ordered = bool(line_paths) and _numeric([k[0] for k in line_keys])
    cols = colours(len(line_keys), ordered=ordered)
    colour = dict(zip(line_keys, cols, strict=True))
    ncols = min(3, len(facets))
    nrows = math.ceil(len(facets) / ncols)
    has_ldp = any(r.get("ldp_error") is not None for r in res.runs)
    fig = new_figure(4.6 * ncols + (1.2 if ncols == 1 else 0), (3.6 + 1.1 * has_ldp) * nrows + 0.5)
    axs = fig.subplots(nrows, ncols, squeeze=False, sharey=True)
    audited = audited_worst(res.path, res.runs)
    all_means: list[float] = []
    for f, fkey in enumerate(facets):
        ax = axs[f // ncols][f % ncols]
        pts = [p for p, k in facet_of.items() if k == fkey]
        for p in pts:
            series = sorted((t, s) for (q, t), s in stats.items() if q == p)
            if not series:
                continue
            t = [x for x, _ in series]
            mean = [s["mean"] for _, s in series]
            lo, hi = zip(*(_band(s["ci_low"], s["ci_high"], s["mean"]) for _, s in series),
                         strict=True)
            c = colour[line_of[p]]
            label = _privacy_label(_line_label(res, line_paths, line_of[p], [p]) or "D-DP-PM",
                                   audited.get(p), has_ldp)
            ax.plot(t, mean, color=c, lw=1.6, label=label)
            all_means.extend(mean)
            ax.fill_between(t, lo, hi, color=c, alpha=0.2, lw=0)
        if has_ldp and component == 1:
            runs = [r for r in res.runs if int(r["point"]) in pts and r.get("ldp_error") is not None]
            if len({r.get("epsilon") for r in runs}) == 1:
                s = mean_ci([float(r["ldp_error"]) for r in runs])
                ax.axhline(s["mean"], color="0.3", ls="--", lw=1.2,
                           label=_ldp_text(res, runs, own_budget=True))
                if math.isfinite(s["ci_low"]):
                    ax.axhspan(*_band(s["ci_low"], s["ci_high"], s["mean"]), color="0.5", alpha=0.12)
        ax.set_xlabel("iteration $t$")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        if facet_paths:
            ax.set_title(_label(facet_paths, fkey), fontsize="medium")
        if f % ncols == 0:
            ax.set_ylabel(rf"error $\sin\theta(u_{component}, q^{{(t)}})$")
        ax.grid(True, which="major", alpha=0.3)
        if has_ldp:  # the privacy labels are long: below the panel, never over a curve
            ax.legend(fontsize="small", loc="upper center", bbox_to_anchor=(0.5, -0.13))
        else:
            _legend(ax, len(ax.get_legend_handles_labels()[1]))
    _yscale(axs[0][0], all_means)  # the panels share the y axis
    for f in range(len(facets), nrows * ncols):
        axs[f // ncols][f % ncols].set_visible(False)
    fig.suptitle(_title(res, f"error per iteration, component {component}", stats.values()),
                 fontsize="medium")
    return save(fig, path)


def _ldp_hlines(ax: Any, res: ResultsFolder, ldp_lines: list[tuple[Any, dict[str, float], list]],
                colour: dict[Any, Any], line_paths: list[str]) -> None:
    """The LDP baseline as horizontal lines: one grey line when every line's LDP mean is the same."""
    means = [s["mean"] for _, s, _ in ldp_lines]
    if max(means) - min(means) <= 1e-12 * max(1.0, abs(max(means))):
        runs = [r for _, _, rs in ldp_lines for r in rs]
        s = mean_ci([float(r["ldp_error"]) for r in runs])
        ax.axhline(s["mean"], color="0.3", ls="--", lw=1.2, label=_ldp_text(res, runs))
        return
    for key, s, runs in ldp_lines:
        ax.axhline(s["mean"], color=colour[key], ls="--", lw=1.0,
                   label=f"{_ldp_text(res, runs)}, {_label(line_paths, key)}")


def _xscale(ax: Any, xs_all: list[float]) -> None:
    """Log x axis when the values span a decade (symlog when they start at 0)."""
    if xs_all and min(xs_all) > 0 and max(xs_all) / min(xs_all) >= 10:
        ax.set_xscale("log")
        if _numeric(xs_all) and all(float(v).is_integer() for v in xs_all):
            ax.set_xticks(sorted(set(xs_all)), [f"{v:g}" for v in sorted(set(xs_all))])
            ax.minorticks_off()
    elif xs_all and min(xs_all) == 0 and max(xs_all) >= 10:
        ax.set_xscale("symlog", linthresh=1)


def _final_error_plot(
    res: ResultsFolder,
    path: str | Path,
    x_path: str,
    *,
    xlabel: str,
    ldp_as_curve: bool,
    what: str,
) -> Path:
    metric, ylabel = res.metric()
    x_group = next(g for g in res.groups if x_path in g)
    line_paths = [p for g in res.groups if g is not x_group for p in g]
    line_of = _line_keys(res, line_paths)
    x_of = {int(r["point"]): res.axis_values(int(r["point"]))[x_path] for r in res.points}
    line_keys = list(dict.fromkeys(line_of.values()))
    ordered = bool(line_paths) and _numeric([k[0] for k in line_keys])
    colour = dict(zip(line_keys, colours(len(line_keys), ordered=ordered), strict=True))
    fig = new_figure(6.6, 4.6)
    ax = fig.subplots()
    by_point = aggregate(res.runs, lambda r: int(r["point"]), metric)
    ldp_point = aggregate(res.runs, lambda r: int(r["point"]), "ldp_error")
    ldp_lines = []
    all_means: list[float] = []
    unmet_points = {int(r["point"]) for r in res.runs
                    if str(r.get("calibration_met")).lower() in ("false", "0")}
    unmet_labelled = False
    for key in line_keys:
        pts = sorted((p for p, k in line_of.items() if k == key and p in by_point),
                     key=lambda p: x_of[p])
        if not pts:
            continue
        xs = [x_of[p] for p in pts]
        c = colour[key]
        label = _line_label(res, line_paths, key, pts)
        for stats, style, name in (
            (by_point, "-o", "D-DP-PM"),
            *(((ldp_point, "--s", "LDP"),) if ldp_as_curve and ldp_point else ()),
        ):
            s = [stats[p] for p in pts]
            mean = [v["mean"] for v in s]
            band = [_band(v["ci_low"], v["ci_high"], v["mean"]) for v in s]
            yerr = [[m - b[0] for m, b in zip(mean, band, strict=True)],
                    [b[1] - m for m, b in zip(mean, band, strict=True)]]
            text = f"{name}, {label}" if label and ldp_as_curve else (label or name)
            all_means.extend(mean)
            ax.errorbar(xs, mean, yerr=yerr, fmt=style, color=c, ms=4, lw=1.4, capsize=3,
                        label=text, mfc="white" if name == "LDP" else c)
            if name == "D-DP-PM":  # calibrated points whose budget was not met: crosses
                unmet = [(x, m_) for p, x, m_ in zip(pts, xs, mean, strict=True)
                         if p in unmet_points]
                if unmet:
                    ax.plot([u[0] for u in unmet], [u[1] for u in unmet], "x", color="k", ms=9,
                            mew=1.6, zorder=5,
                            label=None if unmet_labelled else
                            "calibration not met (noise at the floor)")
                    unmet_labelled = True
        if not ldp_as_curve and ldp_point:
            runs = [r for r in res.runs if int(r["point"]) in pts and r.get("ldp_error") is not None]
            if runs:
                ldp_lines.append((key, mean_ci([float(r["ldp_error"]) for r in runs]), runs))
    if ldp_lines:
        _ldp_hlines(ax, res, ldp_lines, colour, line_paths)
    _xscale(ax, [v for v in x_of.values() if isinstance(v, (int, float))])
    _yscale(ax, all_means + [s["mean"] for _, s, _ in ldp_lines])
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, which="major", alpha=0.3)
    _legend(ax, len(ax.get_legend_handles_labels()[1]))
    ax.set_title(_title(res, what, [by_point[p] for p in line_of if p in by_point]),
                 fontsize="medium")
    return save(fig, path)


def plot_error_vs_c(res: ResultsFolder, path: str | Path) -> Path | None:
    """Final error against the gossip rounds per iteration ``c`` (when ``protocol.consensus_steps`` is
    an axis), one line per value of the other axes; the LDP baseline as a dashed reference."""
    if C_AXIS not in res.axes:
        return None
    return _final_error_plot(
        res,
        path,
        C_AXIS,
        xlabel="gossip rounds per iteration $c$",
        ldp_as_curve=False,
        what="final error against c",
    )


def plot_error_vs_epsilon(res: ResultsFolder, path: str | Path) -> Path | None:
    """Final error of D-DP-PM and of the LDP baseline against ``epsilon`` (when ``baseline.epsilon`` is
    an axis). D-DP-PM's noise is whatever the scenario sets at each point (zip ``protocol.noise`` with
    ``baseline.epsilon`` to pair calibrated noise with each budget)."""
    if EPSILON_AXIS not in res.axes:
        return None
    return _final_error_plot(
        res,
        path,
        EPSILON_AXIS,
        xlabel=r"privacy budget $\varepsilon$",
        ldp_as_curve=True,
        what="D-DP-PM and LDP against epsilon",
    )
