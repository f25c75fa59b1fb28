"""Matplotlib, imported lazily and used without pyplot (Agg canvas, no global state, no display).

Every plotting function of :mod:`dpgossip.report` gets its figures from :func:`new_figure` and writes
them with :func:`save`. Without matplotlib (the ``plot`` extra) :func:`new_figure` raises
:class:`PlotsUnavailable`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dpgossip.errors import ConfigError

__all__ = [
    "PlotsUnavailable",
    "require_matplotlib",
    "new_figure",
    "save",
    "colours",
    "short_name",
    "value_text",
]


class PlotsUnavailable(ConfigError):
    """matplotlib is not installed."""


_SHORT = {
    "protocol.consensus_steps": "c",
    "protocol.iterations": "T",
    "protocol.rank": "r",
    "protocol.alpha": "alpha",
    "protocol.noise": "noise",
    "network.topology": "topology",
    "network.agents": "m",
    "network.mixing": "mixing",
    "baseline.epsilon": "\N{GREEK SMALL LETTER EPSILON}",
    "baseline.delta": "\N{GREEK SMALL LETTER DELTA}",
    "data.source": "data",
}


def short_name(path: str) -> str:
    """Short label of a setting path for legends (``protocol.consensus_steps`` -> ``c``)."""
    return _SHORT.get(path, path.split(".")[-1])


def value_text(value: Any) -> str:
    """Compact text of an axis value for legends."""
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, dict):
        return ", ".join(f"{k}={value_text(v)}" for k, v in value.items())
    return str(value)


def require_matplotlib() -> Any:
    """Import matplotlib (Agg only) or raise :class:`PlotsUnavailable`."""
    try:
        import matplotlib
        from matplotlib.figure import Figure  # noqa: F401
    except ImportError:
        raise PlotsUnavailable(
            'matplotlib is not installed; install it with: pip install "dpgossip[plot]"'
        ) from None
    return matplotlib


def new_figure(width: float = 6.4, height: float = 4.4) -> Any:
    """A fresh :class:`matplotlib.figure.Figure` (not registered with pyplot)."""
    require_matplotlib()
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained")


def save(fig: Any, path: str | Path, *, dpi: int = 130) -> Path:
    """Write ``fig`` as PNG to ``path`` (folders created; via a temporary file, so atomically).

    The PNG's ``Title`` and ``Description`` text fields carry the figure's title (else the first axes')
    and the first axes' axis labels, so a plot says what it shows to tools that cannot see it (and to
    tests)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    FigureCanvasAgg(fig)
    tmp = path.with_name(f".{path.stem}.tmp.png")
    meta = {"Software": "dpgossip"}
    if fig.axes:
        ax = fig.axes[0]
        meta["Title"] = fig.get_suptitle() or ax.get_title()
        meta["Description"] = f"x: {ax.get_xlabel()}; y: {ax.get_ylabel()}"
    fig.savefig(tmp, dpi=dpi, format="png", metadata=meta)
    tmp.replace(path)
    return path


def colours(n: int, *, ordered: bool) -> list[Any]:
    """``n`` colours: sequential (viridis, for ordered values such as ``c``) or categorical (tab10)."""
    require_matplotlib()
    from matplotlib import colormaps

    if ordered and n > 1:
        cmap = colormaps["viridis"]
        return [cmap(0.9 * k / (n - 1)) for k in range(n)]
    cmap = colormaps["tab10" if n <= 10 else "tab20"]
    return [cmap(k % cmap.N) for k in range(n)]
