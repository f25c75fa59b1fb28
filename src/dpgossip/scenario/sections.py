"""Scenario sections validated (and run) by other modules: ``[engine]``, ``[privacy]``, ...

A module that owns a section registers it once, at import time::

    from dpgossip.scenario.sections import register_section

    def check_privacy(path: str, value: object) -> dict:
        ...  # raise ConfigError naming f"{path}.key"; return the resolved table
    def audit_point(config: dict, base: Path | None) -> dict[str, list[dict]]:
        ...  # extra tidy tables of one point, e.g. {"leakage": [rows]}

    register_section("privacy", check_privacy, sweepable=("epsilon",), run=audit_point)

``validate(path, value)`` receives the raw TOML table and returns the resolved one (defaults filled).
``sweepable`` names the keys of the section whose list values are sweep axes (so they can be zipped).
``run(config, base)``, if given, is called for every point after the protocol runs, in the worker that
ran the point; each table it returns is written to ``<name>.csv`` next to ``runs.csv`` (rows in point
order, with a ``point`` column) and stored with the point, so resuming works for it too.
``prepare(config, base)``, if given, is called for every point before it runs (in the same worker) and
returns ``(config, row)``: the configuration the point runs with (e.g. a calibrated noise scale) and
columns added to each of its ``runs.csv`` rows (:func:`prepare_point`).

Sections listed in :data:`PLUGIN_MODULES` are imported on demand the first time a scenario uses them, so
their module can register itself without the user importing it. A plugin section that nobody registered
(for instance ``[privacy]`` before the auditor exists) is accepted as a free table and ignored.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dpgossip.errors import ConfigError

__all__ = [
    "ExtraSection",
    "EXTRA_SECTIONS",
    "PLUGIN_MODULES",
    "register_section",
    "section_for",
    "load_plugins",
    "free_table",
    "known_sections",
    "prepare_point",
]

SectionValidator = Callable[[str, Any], dict[str, Any]]
SectionRunner = Callable[[Mapping[str, Any], Path | None], Mapping[str, list[dict[str, Any]]]]
SectionPreparer = Callable[
    [Mapping[str, Any], Path | None], tuple[Mapping[str, Any], Mapping[str, Any]]
]


@dataclass(frozen=True, slots=True, kw_only=True)
class ExtraSection:
    """A registered scenario section.

    Attributes
    ----------
    name
        Section name, the TOML table ``[name]``.
    validate
        ``validate(path, raw_table) -> resolved_table``; raises ``ConfigError`` naming the bad path.
    sweepable
        Keys of the resolved table whose list values are sweep axes.
    run
        Optional ``run(point_config, base_dir) -> {table_name: rows}`` giving extra tidy tables per point.
    prepare
        Optional ``prepare(point_config, base_dir) -> (point_config, extra_columns)`` called before the
        point runs.
    """

    name: str
    validate: SectionValidator
    sweepable: tuple[str, ...] = ()
    run: SectionRunner | None = None
    prepare: SectionPreparer | None = None


EXTRA_SECTIONS: dict[str, ExtraSection] = {}
"""Registered sections, by name."""

PLUGIN_MODULES: dict[str, str] = {"privacy": "dpgossip.privacy.section"}
"""Sections owned by a module that registers them on import; imported when a scenario uses them."""


def free_table(path: str, value: Any) -> dict[str, Any]:
    """Accept any table unchanged (a copy); reject a non-table value."""
    if not isinstance(value, Mapping):
        raise ConfigError(f"{path} must be a table ([{path}]), got {value!r}")
    return dict(value)


def register_section(
    name: str,
    validate: SectionValidator,
    *,
    sweepable: tuple[str, ...] = (),
    run: SectionRunner | None = None,
    prepare: SectionPreparer | None = None,
) -> ExtraSection:
    """Register (or replace) the validator, sweep axes and per-point hooks of section ``[name]``.

    Returns
    -------
    ExtraSection
        The registered entry.
    """
    if not name.isidentifier():
        raise ValueError(f"section name must be an identifier, got {name!r}")
    entry = ExtraSection(
        name=name, validate=validate, sweepable=tuple(sweepable), run=run, prepare=prepare
    )
    EXTRA_SECTIONS[name] = entry
    return entry


def load_plugins(names: object) -> None:
    """Import the owning module of every plugin section among ``names`` not yet registered.

    A module that cannot be imported (not written yet) leaves the section unregistered; errors raised
    while importing an existing module propagate.
    """
    for name in names:  # type: ignore[attr-defined]
        module = PLUGIN_MODULES.get(name)
        if module is None or name in EXTRA_SECTIONS:
            continue
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name is None or not module.startswith(exc.name):
                raise


def section_for(name: str) -> ExtraSection | None:
    """The registered entry of ``name``, importing its plugin module first if needed."""
    load_plugins([name])
    entry = EXTRA_SECTIONS.get(name)
    if entry is None and name in PLUGIN_MODULES:
        return ExtraSection(name=name, validate=free_table)
    return entry


def known_sections() -> list[str]:
    """Names of the registered and plugin sections (for messages and did-you-mean)."""
    return list(EXTRA_SECTIONS) + [n for n in PLUGIN_MODULES if n not in EXTRA_SECTIONS]


def prepare_point(
    config: Mapping[str, Any], base: Path | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Apply the ``prepare`` hook of every registered section present in ``config``.

    Returns
    -------
    config, row
        The configuration the point runs with and the columns to add to its ``runs.csv`` rows.
    """
    load_plugins(config)
    cfg: dict[str, Any] = dict(config)
    row: dict[str, Any] = {}
    for name, entry in list(EXTRA_SECTIONS.items()):
        if name in cfg and entry.prepare is not None:
            new, extra = entry.prepare(cfg, base)
            cfg = dict(new)
            row.update(extra)
    return cfg, row
