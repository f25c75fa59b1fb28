"""Scenario sections validated (and run) by their own modules: ``[engine]``, ``[privacy]``, ...

A module of the scenario layer that owns a section registers it once, at import time::

    from dpgossip.scenario.sections import register_section

    def check_privacy(path: str, value: object) -> dict:
        ...  # raise ConfigError naming f"{path}.key"; return the resolved table
    def audit_point(config: dict, problem: Problem) -> dict[str, list[dict]]:
        ...  # extra tidy tables of one point, e.g. {"leakage": [rows]}

    register_section("privacy", check_privacy, sweepable=("epsilon",), run=audit_point)

``validate(path, value)`` receives the raw TOML table and returns the resolved one (defaults filled).
``sweepable`` names the keys of the section whose list values are sweep axes (so they can be zipped).
``prepare(config, structure)``, if given, is called for every point before its parameters are resolved,
with the point's :class:`~dpgossip.scenario.problem.Structure` (network and data, built once), and
returns ``(config, row)``: the configuration the point runs with (e.g. a calibrated noise scale) and
columns added to each of its ``runs.csv`` rows (:func:`prepare_point`). ``run(config, problem)``, if
given, is called for every point after the protocol runs, in the worker that ran the point, with the
point's :class:`~dpgossip.scenario.problem.Problem`; each table it returns is written to ``<name>.csv``
next to ``runs.csv`` (rows in point order, with a ``point`` column) and stored with the point, so
resuming works for it too.

The modules that register sections are imported by the package :mod:`dpgossip.scenario` (its
``__init__``, which Python runs before any module of the package): no section is loaded by name at run
time, and :mod:`~dpgossip.scenario.schema` reads the sections from here without importing their
modules.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from dpgossip.errors import ConfigError
from dpgossip.settings import Field

__all__ = [
    "ExtraSection",
    "EXTRA_SECTIONS",
    "register_section",
    "section_for",
    "free_table",
    "known_sections",
    "prepare_point",
]

SectionValidator = Callable[[str, Any], dict[str, Any]]
SectionRunner = Callable[[Mapping[str, Any], Any], Mapping[str, list[dict[str, Any]]]]
"""``run(point_config, problem) -> {table_name: rows}``."""
SectionPreparer = Callable[[Mapping[str, Any], Any], tuple[Mapping[str, Any], Mapping[str, Any]]]
"""``prepare(point_config, structure) -> (point_config, extra_columns)``."""


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
        Optional ``run(point_config, problem) -> {table_name: rows}`` giving extra tidy tables per point.
    prepare
        Optional ``prepare(point_config, structure) -> (point_config, extra_columns)`` called before the
        point's parameters are resolved.
    fields
        The section's keys as :class:`~dpgossip.settings.Field` (type, default, allowed values,
        meaning), for the key reference; ``validate`` must fill the same defaults.
    doc
        One paragraph on the section, for the key reference.
    """

    name: str
    validate: SectionValidator
    sweepable: tuple[str, ...] = ()
    run: SectionRunner | None = None
    prepare: SectionPreparer | None = None
    fields: Mapping[str, Field] | None = None
    doc: str = ""


EXTRA_SECTIONS: dict[str, ExtraSection] = {}
"""Registered sections, by name."""

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
    fields: Mapping[str, Field] | None = None,
    doc: str = "",
) -> ExtraSection:
    """Register (or replace) the validator, sweep axes and per-point hooks of section ``[name]``.

    Returns
    -------
    ExtraSection
        The registered entry.
    """
    if not name.isidentifier():
        raise ValueError(f"section name must be an identifier, got {name!r}")
    entry = ExtraSection(name=name, validate=validate, sweepable=tuple(sweepable), run=run,
                         prepare=prepare, fields=fields, doc=doc)
    EXTRA_SECTIONS[name] = entry
    return entry


def section_for(name: str) -> ExtraSection | None:
    """The registered entry of ``name``, or ``None``."""
    return EXTRA_SECTIONS.get(name)


def known_sections() -> list[str]:
    """Names of the registered sections (for messages and did-you-mean)."""
    return list(EXTRA_SECTIONS)


def prepare_point(
    config: Mapping[str, Any], structure: Any
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Apply the ``prepare`` hook of every registered section present in ``config``.

    Returns
    -------
    config, row
        The configuration the point runs with and the columns to add to its ``runs.csv`` rows.
    """
    cfg: dict[str, Any] = dict(config)
    row: dict[str, Any] = {}
    for name, entry in list(EXTRA_SECTIONS.items()):
        if name in cfg and entry.prepare is not None:
            new, extra = entry.prepare(cfg, structure)
            cfg = dict(new)
            row.update(extra)
    return cfg, row
