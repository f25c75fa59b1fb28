"""Reading a results folder back: typed rows, points and their axes, and mean/CI aggregation.

The report never recomputes a run: it reads ``config.resolved.json``, ``summary.json``, ``points.csv``,
``runs.csv``, ``iterations.csv``, extra tables and ``networks/*.json`` as written by
:func:`dpgossip.scenario.run_scenario`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dpgossip.errors import ConfigError
from dpgossip.report.checked import RERUN, check_complete, read_record, read_table
from dpgossip.scenario.summary import mean_ci
from dpgossip.scenario.sweep import axis_groups

__all__ = ["ResultsFolder", "parse_cell", "typed_rows", "aggregate"]

_INT = re.compile(r"[+-]?\d+")


def parse_cell(text: str | None) -> Any:
    """A CSV cell as written by :func:`dpgossip.scenario.store.write_csv`, back to a Python value.

    ``""`` -> ``None``; ``True``/``False`` -> bool; integers; floats (``nan``/``inf`` too); JSON lists and
    tables; anything else stays a string.

    Examples
    --------
    >>> [parse_cell(x) for x in ["", "3", "0.5", "True", "[1, 2]", "ring"]]
    [None, 3, 0.5, True, [1, 2], 'ring']
    """
    if text is None or text == "":
        return None
    if text in ("True", "False"):
        return text == "True"
    if _INT.fullmatch(text):
        return int(text)
    try:
        return float(text)
    except ValueError:
        pass
    if text[0] in "[{":
        try:
            return json.loads(text)
        except ValueError:
            return text
    return text


def typed_rows(path: Path) -> list[dict[str, Any]]:
    """Rows of a tidy CSV with :func:`parse_cell` applied to every cell, checked by
    :func:`~dpgossip.report.checked.read_table` (a file cut mid-row is an error naming it)."""
    return [{k: parse_cell(v) for k, v in row.items()} for row in read_table(path)]


def aggregate(
    rows: Iterable[Mapping[str, Any]],
    key: Callable[[Mapping[str, Any]], Any],
    metric: str,
) -> dict[Any, dict[str, float]]:
    """``mean_ci`` of ``metric`` over the rows of each ``key(row)``, in first-seen key order."""
    groups: dict[Any, list[float]] = {}
    for r in rows:
        v = r.get(metric)
        if v is None:
            continue
        groups.setdefault(key(r), []).append(float(v))
    return {k: mean_ci(v) for k, v in groups.items()}


def _repeats(config: Mapping[str, Any], where: Path) -> int:
    """``repeats`` of the resolved configuration (an integer >= 1)."""
    value = config.get("repeats", 1)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{where.parent / 'config.resolved.json'}: 'repeats' must be an integer "
                          f">= 1, got {value!r}; the file was edited; {RERUN}")
    return value


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class ResultsFolder:
    """A finished results folder, read back.

    Attributes
    ----------
    path
        The folder.
    config
        Resolved configuration.
    summary
        ``summary.json``.
    points
        Rows of ``points.csv`` (``point``, ``hash``, ``network`` and axis columns).
    runs, iterations
        Typed rows of ``runs.csv`` and ``iterations.csv``.
    axes
        Dotted paths of the sweep axes, in order.
    groups
        Axis groups (zip groups together, other axes alone).
    """

    path: Path
    config: dict[str, Any]
    summary: dict[str, Any]
    points: list[dict[str, Any]]
    runs: list[dict[str, Any]]
    iterations: list[dict[str, Any]]
    axes: list[str]
    groups: list[tuple[str, ...]]

    @classmethod
    def load(cls, path: str | Path) -> ResultsFolder:
        """Read a results folder.

        Raises
        ------
        ConfigError
            When ``path`` is not a finished results folder.
        """
        path = Path(path)
        if path.exists() and not path.is_dir():
            raise ConfigError(f"results folder {str(path)!r} is a file; give the folder written by "
                              "dpgossip run or dpgossip audit")
        if not path.is_dir():
            raise ConfigError(f"results folder {str(path)!r} does not exist")
        summary_path = path / "summary.json"
        if not summary_path.is_file():
            what = (
                "the run did not finish; run the scenario again to finish it (finished points are "
                "kept)"
                if (path / "config.resolved.json").is_file()
                else "not a dpgossip results folder (dpgossip report reads the folder of `dpgossip "
                "run`, `dpgossip audit` or a network-DP scenario)"
            )
            raise ConfigError(f"{path}: no summary.json: {what}")
        for name in ("config.resolved.json", "points.csv", "runs.csv", "iterations.csv"):
            if not (path / name).is_file():
                raise ConfigError(f"{path}: {name} is missing; run the scenario again")
        summary = read_record(summary_path, ("axes",))
        config = read_record(path / "config.resolved.json")
        axes = summary["axes"]
        if not isinstance(axes, list) or not all(isinstance(a, str) for a in axes):
            raise ConfigError(f"{summary_path}: 'axes' must be a list of setting paths, got {axes!r}; "
                              f"the file was edited; {RERUN}")
        points, runs = typed_rows(path / "points.csv"), typed_rows(path / "runs.csv")
        iterations = typed_rows(path / "iterations.csv")
        check_complete(path, points, runs, iterations, _repeats(config, summary_path))
        return cls(
            path=path,
            config=config,
            summary=summary,
            points=points,
            runs=runs,
            iterations=iterations,
            axes=list(axes),
            groups=axis_groups(axes, summary.get("zip", [])),
        )

    def table(self, name: str) -> list[dict[str, Any]] | None:
        """Typed rows of the extra table ``<name>.csv``, or ``None`` if absent."""
        p = self.path / f"{name}.csv"
        return typed_rows(p) if p.is_file() else None

    def axis_values(self, point: int) -> dict[str, Any]:
        """Axis values of a point (dotted paths)."""
        row = self.points[point]
        return {a: row.get(a.replace(".", "_")) for a in self.axes}

    def network_files(self) -> list[Path]:
        """The saved networks, in the order of the points that first use them."""
        seen: list[Path] = []
        for row in self.points:
            p = self.path / "networks" / f"{row.get('network')}.json"
            if row.get("network") and p.is_file() and p not in seen:
                seen.append(p)
        return seen

    @property
    def repeats(self) -> int:
        return int(self.config.get("repeats", 1))

    def metric(self) -> tuple[str, str]:
        """Final-error column and its label: ``error`` (component 1) for rank 1, else the subspace
        distance of the rank-``r`` estimate."""
        if all(int(r.get("rank") or 1) == 1 for r in self.runs):
            return "error", r"final error $\sin\theta(u_1, q^{(T)})$"
        return "subspace_distance", r"subspace distance $\|\sin\Theta(U_r, Q)\|_2$"

    def group_label(self, point: int, group_paths: Sequence[str]) -> str:
        """``"c=5, T=10"`` for the given axis paths of a point."""
        from dpgossip.report.figures import short_name, value_text

        vals = self.axis_values(point)
        return ", ".join(f"{short_name(p)}={value_text(vals[p])}" for p in group_paths)

    def slem(self, points: Iterable[int]) -> float | None:
        """SLEM of the network the given points share (``None`` if they use several or none)."""
        stems = {self.points[p].get("network") for p in points}
        if len(stems) != 1:
            return None
        file = self.path / "networks" / f"{stems.pop()}.json"
        if not file.is_file():
            return None
        from dpgossip.topology.io import load_graph
        from dpgossip.topology.spectral import spectral_summary

        W = load_graph(file).W
        return None if W is None else float(spectral_summary(W).slem)
