"""The ``[sweep]`` table: axes that vary together (``zip``) instead of forming a product.

.. code-block:: toml

    [protocol]
    consensus_steps = [1, 5, 20]
    iterations = [40, 20, 10]

    [sweep]
    zip = [["protocol.consensus_steps", "protocol.iterations"]]

gives three points, ``(c, T) = (1, 40), (5, 20), (20, 10)``, instead of nine. Every path of a group must
be a sweep axis (a setting given as a list) and all lists of a group must have the same length; a path
may appear in one group only. Axes not named in any group still form a cartesian product with the
groups.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from dpgossip.errors import ConfigError, did_you_mean, reject_unknown_keys

__all__ = ["SWEEP_KEYS", "check_sweep", "axis_groups"]

SWEEP_KEYS: tuple[str, ...] = ("zip",)
"""Keys allowed in ``[sweep]``."""


def check_sweep(
    raw: Any,
    axes: Sequence[str],
    settings: Mapping[str, bool],
    lengths: Mapping[str, int],
    values: Mapping[str, Any],
) -> dict[str, Any]:
    """Validate the raw ``[sweep]`` table against the resolved configuration.

    Parameters
    ----------
    raw
        The ``[sweep]`` table as parsed (``None`` when absent).
    axes
        Dotted paths of the configuration's sweep axes (settings given as lists).
    settings
        Every known dotted setting path, mapped to whether it may be swept.
    lengths
        Number of values of each axis.
    values
        Current value of each known setting (for the message when a path is not an axis).

    Returns
    -------
    dict
        ``{"zip": [[path, ...], ...]}``.

    Raises
    ------
    ConfigError
        Unknown key or path (with a did-you-mean), a path that is not a list, a path in two groups,
        a group of fewer than two paths, or lists of unequal length in a group.
    """
    if raw is None:
        return {"zip": []}
    if not isinstance(raw, Mapping):
        raise ConfigError(f"sweep must be a table ([sweep]), got {raw!r}")
    reject_unknown_keys("sweep.", raw, SWEEP_KEYS, "in [sweep]")
    groups = raw.get("zip", [])
    if not isinstance(groups, list) or not all(isinstance(g, list) for g in groups):
        raise ConfigError(
            f"sweep.zip must be a list of lists of setting paths, e.g. "
            f'[["protocol.consensus_steps", "protocol.iterations"]], got {groups!r}'
        )
    seen: dict[str, str] = {}
    out: list[list[str]] = []
    for g, group in enumerate(groups):
        where = f"sweep.zip[{g}]"
        if len(group) < 2:
            raise ConfigError(
                f"{where}: a zip group lists two or more axes that vary together, got {group!r}"
            )
        for i, path in enumerate(group):
            at = f"{where}[{i}]"
            if not isinstance(path, str):
                raise ConfigError(f"{at} must be a dotted setting path (a string), got {path!r}")
            if path not in settings:
                raise ConfigError(
                    f"{at}: unknown setting {path!r}{did_you_mean(path, list(settings))}; "
                    "give a dotted path such as 'protocol.consensus_steps'"
                )
            if not settings[path]:
                raise ConfigError(f"{at}: {path} cannot be swept, so it cannot be zipped")
            if path not in axes:
                raise ConfigError(
                    f"{at}: {path} is not a sweep axis (it has the single value "
                    f"{values.get(path)!r}); give it a list of values to vary it together with "
                    f"{', '.join(p for p in group if p != path)}"
                )
            if path in seen:
                raise ConfigError(f"{at}: {path} is already zipped in {seen[path]}")
            seen[path] = where
        sizes = {p: lengths[p] for p in group}
        if len(set(sizes.values())) > 1:
            detail = ", ".join(f"{p} has {n}" for p, n in sizes.items())
            raise ConfigError(
                f"{where}: the lists of a zip group must have equal lengths; {detail} values"
            )
        out.append(list(group))
    return {"zip": out}


def axis_groups(axes: Sequence[str], zipped: Sequence[Sequence[str]]) -> list[tuple[str, ...]]:
    """Group the axes: each zip group once, at the position of its first axis; others alone.

    Examples
    --------
    >>> axis_groups(["network.topology", "protocol.iterations", "protocol.consensus_steps"],
    ...             [["protocol.consensus_steps", "protocol.iterations"]])
    [('network.topology',), ('protocol.consensus_steps', 'protocol.iterations')]
    """
    member = {p: tuple(g) for g in zipped for p in g}
    out: list[tuple[str, ...]] = []
    for p in axes:
        group = member.get(p, (p,))
        if group not in out:
            out.append(group)
    return out
