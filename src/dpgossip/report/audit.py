"""Plots of ``dpgossip audit``: a leakage heatmap per point and epsilon against hop distance.

Drawn into the audit folder from the rows of
:meth:`~dpgossip.scenario.audit_command.AuditRun.leakage_rows` (one per point and pair, with ``point``,
``series``, ``epsilon``, ``method``, ``delta`` and ``view``):

``leakage_heatmap.png`` (one point) or ``leakage_heatmap_p<point>.png``
    Epsilon of every (observer, target) pair; a log colour scale when the finite values span more
    than a factor 100.
``leakage_vs_hops.png``
    Epsilon of every pair against its hop distance, one series per point.

With ``privacy.rank_by = "delta"`` no epsilon is solved: the rows carry ``delta_at_epsilon`` (delta at
the first epsilon of the grid) instead, and the plots show it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from dpgossip.report.leakage import plot_leakage_vs_hops, plot_pair_heatmap

__all__ = ["plot_audit"]


def _log_scale(rows: Sequence[Mapping[str, Any]], key: str) -> bool:
    """A log scale when the finite positive values span more than a factor 100."""
    finite = [float(r[key]) for r in rows if math.isfinite(float(r[key]))]
    return bool(finite) and min(finite) > 0 and max(finite) / min(finite) > 100


def plot_audit(out: str | Path, rows: Sequence[Mapping[str, Any]], several: bool) -> list[Path]:
    """Draw the audit plots of ``rows`` into the folder ``out`` (module docstring).

    Parameters
    ----------
    out
        The audit folder.
    rows
        One per point and pair (``point``, ``series``, ``observer``, ``target``, ``hops``,
        ``epsilon``, ``method``, ``delta``, ``view``).
    several
        The audit has several points: one heatmap per point, named ``leakage_heatmap_p<point>.png``.

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
    key = "epsilon" if all("epsilon" in r for r in rows) else "delta_at_epsilon"
    written: list[Path] = []
    by_point: dict[int, list[Mapping[str, Any]]] = {}
    for r in rows:
        by_point.setdefault(int(r["point"]), []).append(r)
    for index, rs in by_point.items():
        name = f"leakage_heatmap_p{index}.png" if several else "leakage_heatmap.png"
        label = rs[0]["series"]
        what = (f"epsilon ({rs[0]['method']}) at delta {rs[0]['delta']:g}" if key == "epsilon"
                else f"delta ({rs[0]['method']}) at the first epsilon of the grid")
        title = f"{what}, view {rs[0]['view']}" + (f" ({label})" if label else "")
        written.append(plot_pair_heatmap(rs, out / name, value_key=key, title=title,
                                         log=_log_scale(rs, key)))
    methods = ", ".join(sorted({str(r["method"]) for r in rows}))
    deltas = ", ".join(f"{d:g}" for d in sorted({float(r["delta"]) for r in rows}))
    what = (f"epsilon ({methods}) at delta {deltas}" if key == "epsilon"
            else f"delta ({methods}) at the first epsilon of the grid")
    written.append(plot_leakage_vs_hops(rows, out / "leakage_vs_hops.png", value_key=key,
                                        log=_log_scale(rows, key),
                                        title=f"{what} per pair against hops (per instance)"))
    return written
