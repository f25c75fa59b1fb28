"""What ``dpgossip audit`` found for the points of a run, to say it on the run's error plot.

``dpgossip run S`` writes ``results/<name>`` and ``dpgossip audit S`` writes ``results/<name>-audit``.
The report of a run folder ``F`` looks for ``F-audit`` (:func:`audit_folder`) and takes, for each of
its points, the audited point with the same problem (agents, rows, columns, ``T``, ``c`` and the noise
scales ``sigma_q``, ``sigma_p`` first and last, as ``runs.csv`` and the audit's ``points/*.json``
record them): the error plot then says the worst pair's audited epsilon beside D-DP-PM, so that the LDP
baseline's budget is not read as D-DP-PM's. Without that folder, or without a point of the same
problem, nothing is said about D-DP-PM's privacy but that it is not audited there.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from dpgossip.rounding import format_upper
from dpgossip.scenario.store import read_json

__all__ = ["audit_folder", "audited_worst", "audit_text"]

_PROBLEM = {"agents": "agents", "rows": "n", "columns": "d", "iterations": "T",
            "consensus_steps": "c", "sigma_q": "sigma_q", "sigma_p_first": "sigma_p_first",
            "sigma_p_last": "sigma_p_last"}
"""An audited point's ``problem`` key -> the ``runs.csv`` column that must hold the same value."""

EPS = "\N{GREEK SMALL LETTER EPSILON}"
DELTA = "\N{GREEK SMALL LETTER DELTA}"


def audit_folder(run_folder: Path) -> Path:
    """Where ``dpgossip audit`` writes by default beside ``dpgossip run``'s folder: ``<folder>-audit``."""
    return run_folder.parent / f"{run_folder.name}-audit"


def _audited_points(folder: Path) -> list[dict[str, Any]]:
    """The audited points of ``folder`` that record their problem and worst pair (others, and files
    that cannot be read, are left out: the run's plot does not depend on them)."""
    if not (folder / "worst.json").is_file():
        return []
    found = []
    for path in sorted((folder / "points").glob("*.json")):
        try:
            data = read_json(path)
        except (OSError, ValueError):
            continue
        if (isinstance(data, dict) and isinstance(data.get("problem"), dict)
                and isinstance(data.get("worst"), dict)):
            found.append(data)
    return found


def _same(problem: Mapping[str, Any], run: Mapping[str, Any]) -> bool:
    try:
        return all(math.isclose(float(problem[k]), float(run[col]), rel_tol=1e-12, abs_tol=0.0)
                   for k, col in _PROBLEM.items())
    except (KeyError, TypeError, ValueError):
        return False


def audited_worst(run_folder: Path, runs: Sequence[Mapping[str, Any]]) -> dict[int, dict[str, Any]]:
    """The worst pair found by the audit of each point of the run (``point -> worst``, the ``worst``
    record of the audited point with the same problem; points without one are left out)."""
    audits = _audited_points(audit_folder(run_folder))
    out: dict[int, dict[str, Any]] = {}
    for row in runs:
        point = int(row["point"])
        if point not in out:
            match = next((a["worst"] for a in audits if _same(a["problem"], row)), None)
            if match is not None:
                out[point] = match
    return out


def _rounded_down(value: float, digits: int = 4) -> str:
    """``value`` to ``digits`` significant digits, rounded down (a lower estimate is never printed above
    itself)."""
    text = f"{value:.{digits}g}"
    if not math.isfinite(value) or value <= 0 or float(text) <= value:
        return text
    unit = 10.0 ** (math.floor(math.log10(value)) - digits + 1)
    return f"{math.floor(value / unit) * unit:.{digits}g}"


def audit_text(worst: Mapping[str, Any]) -> str | None:
    """What the audit found, in a few words: the worst pair's exact epsilon (a lower estimate of the
    worst case; ``>=`` it, rounded down) at its delta, "not private" when the search stopped at the
    epsilon cap, and the certified upper bound (rounded up) when it is finite. None without an exact
    value."""
    eps = (worst.get("epsilon") or {}).get("exact") if isinstance(worst.get("epsilon"), dict) else None
    delta = worst.get("delta")
    if not isinstance(eps, int | float) or not isinstance(delta, int | float):
        return None
    text = f"audited worst pair {EPS} \u2265 {_rounded_down(float(eps))} at {DELTA}={delta:g}"
    if worst.get("capped") is True:
        text += ": not private at this noise"
    upper = worst.get("epsilon_upper_max", worst.get("epsilon_upper"))
    if isinstance(upper, int | float) and math.isfinite(upper):
        text += f"\n(certified upper bound {EPS} \u2264 {format_upper(upper, 2)})"
    return text
