"""The list of files a report drew (``plots/plots.json``), so that the next report removes them first.

Both reports write it, the plots of a results folder (:func:`~dpgossip.report.build.make_report`) and
those of an audit folder (:func:`~dpgossip.report.audit.make_audit_report`).
"""

from __future__ import annotations

import json
from pathlib import Path

from dpgossip.errors import ConfigError

__all__ = ["MANIFEST", "write_manifest", "clear_previous", "plots_folder"]

MANIFEST = "plots.json"
"""Name of the list of drawn files in ``plots/``."""


def write_manifest(plots: Path, written: list[Path]) -> None:
    """Write ``plots/plots.json``: the names of the files drawn (removed by the next report)."""
    (plots / MANIFEST).write_text(json.dumps([p.name for p in written], indent=1) + "\n",
                                  encoding="utf-8")


def clear_previous(plots: Path) -> None:
    """Remove the PNG files listed in ``plots/plots.json`` (the previous report's)."""
    manifest = plots / MANIFEST
    try:
        names = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    for name in names if isinstance(names, list) else []:
        target = plots / str(name)
        if target.parent == plots and target.suffix == ".png":
            target.unlink(missing_ok=True)


def plots_folder(results: Path) -> Path:
    """``results/plots``, created when missing.

    Raises
    ------
    ConfigError
        ``plots`` exists and is not a folder (a file of that name), naming it.
    """
    plots = Path(results) / "plots"
    if plots.exists() and not plots.is_dir():
        raise ConfigError(f"{plots}: a file is in the place of the plots folder; the report draws its "
                          "plots into a folder of that name: move or rename the file", field=str(plots))
    plots.mkdir(parents=True, exist_ok=True)
    return plots
