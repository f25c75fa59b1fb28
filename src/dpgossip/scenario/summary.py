"""Summaries of tidy rows: means with Student-t confidence intervals per point."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from scipy import stats

__all__ = ["mean_ci", "summarise", "library_versions"]


def mean_ci(values: Sequence[float], level: float = 0.95) -> dict[str, float]:
    """Mean, sample standard deviation and the two-sided Student-t interval ``mean +- t s / sqrt(k)``."""
    x = np.asarray([v for v in values if v is not None and math.isfinite(v)], dtype=float)
    k = x.size
    if k == 0:
        return {
            "mean": float("nan"),
            "std": float("nan"),
            "ci_low": float("nan"),
            "ci_high": float("nan"),
            "n": 0,
        }
    mean = float(x.mean())
    if k == 1:
        return {
            "mean": mean,
            "std": float("nan"),
            "ci_low": float("nan"),
            "ci_high": float("nan"),
            "n": 1,
        }
    s = float(x.std(ddof=1))
    half = float(stats.t.ppf(0.5 + level / 2, k - 1)) * s / math.sqrt(k)
    return {"mean": mean, "std": s, "ci_low": mean - half, "ci_high": mean + half, "n": int(k)}


def summarise(
    rows: Iterable[Mapping[str, Any]], by: Sequence[str], metrics: Sequence[str]
) -> list[dict[str, Any]]:
    """Group rows by the columns ``by`` and give ``mean_ci`` of each metric present (groups in
    first-seen order; table- or list-valued columns group by their content)."""
    groups: dict[tuple[Any, ...], list[Mapping[str, Any]]] = {}
    for r in rows:
        groups.setdefault(tuple(_hashable(r.get(b)) for b in by), []).append(r)
    out = []
    for rs in groups.values():
        entry: dict[str, Any] = {b: rs[0].get(b) for b in by}
        for mname in metrics:
            vals = [float(r[mname]) for r in rs if r.get(mname) not in (None, "")]
            if vals:
                entry[mname] = mean_ci(vals)
        out.append(entry)
    return out


def _hashable(value: Any) -> Any:
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True, default=str)
    return value


def library_versions() -> dict[str, str]:
    """Versions of Python and the libraries that shape the numbers."""
    import platform
    from importlib import metadata

    out = {"python": platform.python_version()}
    for name in ("dpgossip", "numpy", "scipy", "networkx", "simpy"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out
