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
    ``epsilon`` or ``value`` (written by the privacy auditor). A view without an observer
    (``all-but-one``, ``eavesdropper``) has one number per target: ``leakage_by_target[_p<point>].png``
    instead, and no hops plot.

The folder of ``dpgossip audit`` gets its own plots (:func:`~dpgossip.report.audit.make_audit_report`)
a network-DP folder its ``network-dp.png`` (:func:`network_dp_report`) and a dynamic-gossip folder its
three plots (:func:`~dpgossip.report.dynamic_gossip.dynamic_gossip_report`). Every file read is checked
(:mod:`dpgossip.report.checked`): a damaged one is an error naming it.

``plots/plots.json`` lists the files drawn; a new report first removes the files of the previous one.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from dpgossip.errors import ConfigError
from dpgossip.report.audit import make_audit_report, plot_by_target
from dpgossip.report.checked import RERUN, read_record, read_table
from dpgossip.report.curves import (
    plot_error_vs_c,
    plot_error_vs_epsilon,
    plot_error_vs_iteration,
)
from dpgossip.report.dynamic_gossip import dynamic_gossip_report
from dpgossip.report.figures import require_matplotlib
from dpgossip.report.frontier import plot_privacy_utility
from dpgossip.report.leakage import (
    leakage_label,
    plot_leakage_vs_hops,
    plot_leakage_vs_iterations,
    plot_pair_heatmap,
)
from dpgossip.report.manifest import clear_previous, plots_folder, write_manifest
from dpgossip.report.network import plot_network_file
from dpgossip.report.network_dp import PLOT_NAME, plot_network_dp
from dpgossip.report.tables import ResultsFolder
from dpgossip.scenario.audit_point import OBSERVER_VIEWS, per_target

__all__ = ["make_report", "folder_kind", "network_dp_report", "also_audited", "MAX_HEATMAPS"]

MAX_HEATMAPS = 12
"""At most this many per-point leakage heatmaps are drawn."""


def folder_kind(path: Path) -> str:
    """What wrote the folder: ``"audit"`` (``dpgossip audit``: ``worst.json``, no ``summary.json``),
    ``"network_dp"`` (a network-DP scenario: ``summary.json`` with ``kind = "network_dp"``),
    ``"dynamic_gossip"`` (a dynamic-gossip scenario, ``kind = "dynamic_gossip"``) or ``"run"``
    (anything else, checked by :meth:`ResultsFolder.load`)."""
    summary = path / "summary.json"
    if not summary.is_file():
        return "audit" if (path / "worst.json").is_file() else "run"
    kind = read_record(summary).get("kind")
    return kind if kind in ("network_dp", "dynamic_gossip") else "run"


_NETWORK_DP_COLUMNS = ("topology", "distance", "rdp", *(f"{b}_{c}" for b in ("muffliato", "mfdl")
                                                        for c in ("bound", "ratio", "below_exact")))


def also_audited(path: Path) -> bool:
    """Whether the run folder ``path`` (``summary.json``) also holds the results of ``dpgossip audit``
    (``worst.json``), which :func:`make_report` of the run does not draw."""
    return (path / "summary.json").is_file() and (path / "worst.json").is_file()


def network_dp_report(path: Path) -> list[Path]:
    """Redraw ``plots/network-dp.png`` of a network-DP folder from ``leakage.csv`` (at the folder's
    Renyi order ``alpha``)."""
    summary = read_record(path / "summary.json", ("alpha",))
    alpha = summary["alpha"]
    if isinstance(alpha, bool) or not isinstance(alpha, int | float) or not alpha > 1:
        raise ConfigError(f"{path / 'summary.json'}: 'alpha' must be a number > 1, got {alpha!r}; "
                          f"{RERUN}")
    leakage = path / "leakage.csv"
    if not leakage.is_file():
        raise ConfigError(f"{path}: leakage.csv is missing; {RERUN}")
    rows = read_table(leakage)
    missing = [c for c in _NETWORK_DP_COLUMNS if rows and c not in rows[0]]
    if missing or not rows:
        what = f"the column {missing[0]!r} is missing" if missing else "it has no rows"
        raise ConfigError(f"{leakage}: {what}; {RERUN}")
    for line, r in enumerate(rows, start=2):
        try:
            int(r["distance"]), float(r["rdp"])
        except ValueError:
            raise ConfigError(f"{leakage}: line {line}: distance {r['distance']!r} and rdp "
                              f"{r['rdp']!r} must be numbers; {RERUN}") from None
    plots = plots_folder(path)
    clear_previous(plots)
    written = [plot_network_dp(rows, plots / PLOT_NAME, alpha=float(alpha))]
    write_manifest(plots, written)
    return written


def make_report(results_dir: str | Path) -> list[Path]:
    """Draw every plot of a finished results folder into ``results_dir/plots``: the folder of
    ``dpgossip run``, of ``dpgossip audit`` (:func:`~dpgossip.report.audit.make_audit_report`) or of a
    network-DP scenario (:func:`network_dp_report`), told apart by :func:`folder_kind`.

    Returns
    -------
    list of Path
        The PNG files written.

    Raises
    ------
    PlotsUnavailable
        Without matplotlib (a ``ConfigError`` naming ``pip install "dpgossip[plot]"``).
    ConfigError
        When ``results_dir`` is not a finished results folder, or one of its files is damaged (naming
        the file and what is wrong: :mod:`dpgossip.report.checked`).
    """
    if not isinstance(results_dir, (str, os.PathLike)):
        raise ConfigError(f"results_dir must be the path of a results folder, got {results_dir!r}",
                          field="results_dir")
    require_matplotlib()
    path = Path(results_dir)
    kind = folder_kind(path) if path.is_dir() else "run"
    if kind == "audit":
        return make_audit_report(path)
    if kind == "network_dp":
        return network_dp_report(path)
    if kind == "dynamic_gossip":
        return dynamic_gossip_report(path)
    res = ResultsFolder.load(results_dir)
    plots = plots_folder(res.path)
    clear_previous(plots)
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
    write_manifest(plots, written)
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
    paired = []
    for p in points:
        suffix = "" if len(by_point) == 1 else f"_p{p}"
        label_p = res.group_label(int(p), res.axes) if p is not None and res.axes else ""
        if str(by_point[p][0].get("view", "observer")) not in OBSERVER_VIEWS:
            # no observer: one number per target, no hop distance
            out.append(plot_by_target(per_target(by_point[p]), plots / f"leakage_by_target{suffix}.png",
                                      value_key=key, title=f"{label}: per target {label_p}".strip()))
            continue
        paired.append(p)
        out.append(plot_pair_heatmap(by_point[p], plots / f"leakage_heatmap{suffix}.png",
                                     value_key=key, value_label=label,
                                     title=f"pairwise leakage {label_p}".strip()))
    series = [
        {**r, "series": res.group_label(int(r["point"]), res.axes) if res.axes else ""}
        for r in rows
        if r.get("point") in paired
    ]
    if series:
        out.append(plot_leakage_vs_hops(series, plots / "leakage_vs_hops.png", value_key=key,
                                        value_label=label))
    return out
