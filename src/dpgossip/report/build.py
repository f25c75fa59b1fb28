"""``dpgossip report DIR``: every plot of a results folder, from its files (nothing is recomputed).

Plots (PNG, in ``DIR/plots/``):

``error_vs_iteration.png``
    Error against the iteration, one line per point (``..._component<l>.png`` for ``l > 1``).
``error_vs_c.png``
    Final error against ``c`` when ``protocol.consensus_steps`` is an axis.
``error_vs_epsilon.png``
    D-DP-PM and LDP final error against ``epsilon`` when ``baseline.epsilon`` is an axis.
``privacy_utility.png``
    When the folder has ``ppm*`` points (``protocol.kind``): every protocol's error against its
    guaranteed and its audited epsilon (:mod:`dpgossip.report.frontier`).
``topology_<network>.png``
    Each distinct network with its weights.
``leakage_heatmap[_p<point>].png``, ``leakage_vs_hops.png``
    When the folder has a ``leakage.csv`` with columns ``observer``, ``target``, ``hops`` and
    ``epsilon`` or ``value`` (written by the privacy auditor).

``plots/plots.json`` lists the files drawn; a new report first removes the files of the previous one.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from dpgossip.errors import ConfigError
from dpgossip.report.curves import (
    plot_error_vs_c,
    plot_error_vs_epsilon,
    plot_error_vs_iteration,
)
from dpgossip.report.figures import require_matplotlib
from dpgossip.report.frontier import plot_privacy_utility
from dpgossip.report.leakage import (
    leakage_label,
    plot_leakage_vs_hops,
    plot_leakage_vs_iterations,
    plot_pair_heatmap,
)
from dpgossip.report.network import plot_network_file
from dpgossip.report.tables import ResultsFolder

__all__ = ["make_report", "MANIFEST", "MAX_HEATMAPS"]

MANIFEST = "plots.json"
"""Name of the list of drawn files in ``plots/``."""

MAX_HEATMAPS = 12
"""At most this many per-point leakage heatmaps are drawn."""


def _clear_previous(plots: Path) -> None:
    manifest = plots / MANIFEST
    try:
        names = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    for name in names if isinstance(names, list) else []:
        target = plots / str(name)
        if target.parent == plots and target.suffix == ".png":
            target.unlink(missing_ok=True)


def make_report(results_dir: str | Path) -> list[Path]:
    """Draw every plot of a finished results folder into ``results_dir/plots``.

    Returns
    -------
    list of Path
        The PNG files written.

    Raises
    ------
    PlotsUnavailable
        Without matplotlib (a ``ConfigError`` naming ``pip install "dpgossip[plot]"``).
    ConfigError
        When ``results_dir`` is not a finished results folder.
    """
    if not isinstance(results_dir, (str, os.PathLike)):
        raise ConfigError(f"results_dir must be the path of a results folder, got {results_dir!r}",
                          field="results_dir")
    require_matplotlib()
    res = ResultsFolder.load(results_dir)
    plots = res.path / "plots"
    plots.mkdir(parents=True, exist_ok=True)
    _clear_previous(plots)
    out: list[Path | None] = []
    ranks = {int(r.get("component") or 1) for r in res.iterations}
    for comp in sorted(ranks):
        suffix = "" if comp == 1 else f"_component{comp}"
        out.append(plot_error_vs_iteration(res, plots / f"error_vs_iteration{suffix}.png",
                                           component=comp))
    out.append(plot_error_vs_c(res, plots / "error_vs_c.png"))
    out.append(plot_error_vs_epsilon(res, plots / "error_vs_epsilon.png"))
    out.append(plot_privacy_utility(res, plots / "privacy_utility.png"))
    for f in res.network_files():
        out.append(plot_network_file(f, plots / f"topology_{f.stem}.png"))
    out.extend(_leakage(res, plots))
    out.append(plot_leakage_vs_iterations(res, plots / "delta_vs_iterations.png"))
    written = [p for p in out if p is not None]
    (plots / MANIFEST).write_text(json.dumps([p.name for p in written], indent=1) + "\n",
                                  encoding="utf-8")
    return written


def _leakage(res: ResultsFolder, plots: Path) -> list[Path]:
    rows = res.table("leakage")
    if not rows or not all(k in rows[0] for k in ("observer", "target", "hops")):
        return []
    key = next((k for k in ("epsilon", "delta_at_epsilon", "value") if k in rows[0]), None)
    if key is None:
        return []
    label = {"epsilon": leakage_label(rows, "epsilon"),
             "delta_at_epsilon": leakage_label(rows, "delta_at_epsilon")
             + r" at the first $\varepsilon$ of the grid"}.get(key, "leakage")
    by_point: dict[Any, list[dict[str, Any]]] = {}
    for r in rows:
        by_point.setdefault(r.get("point"), []).append(r)
    out = []
    points = list(by_point)[:MAX_HEATMAPS]
    for p in points:
        name = "leakage_heatmap.png" if len(by_point) == 1 else f"leakage_heatmap_p{p}.png"
        label_p = res.group_label(int(p), res.axes) if p is not None and res.axes else ""
        out.append(plot_pair_heatmap(by_point[p], plots / name, value_key=key, value_label=label,
                                     title=f"pairwise leakage {label_p}".strip()))
    series = [
        {**r, "series": res.group_label(int(r["point"]), res.axes) if res.axes else ""}
        for r in rows
        if r.get("point") in points
    ]
    out.append(plot_leakage_vs_hops(series, plots / "leakage_vs_hops.png", value_key=key,
                                    value_label=label))
    return out
