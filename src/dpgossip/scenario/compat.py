"""Checks across settings: combinations that are each valid alone but not together.

Run by :func:`dpgossip.scenario.schema.validate` after every section is resolved. A setting that is a
sweep axis is checked for each of its values (a combination is an error when it occurs at any point).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dpgossip.errors import ConfigError
from dpgossip.protocols.registry import kind, kinds, kinds_by_section

__all__ = ["check_combinations"]


def _values(value: Any, *, list_kind: bool = False) -> list[Any]:
    """The values a setting takes over the sweep: the list of an axis, else the single value."""
    if isinstance(value, list) and (not list_kind or (value and isinstance(value[0], list))):
        return value
    return [value]


def check_combinations(raw: Mapping[str, Any], config: Mapping[str, Any]) -> None:
    """Raise ``ConfigError`` for incompatible settings of a resolved configuration.

    Checked: the LDP baseline and its budget; ``data.sizes`` and ``data.partition``; ``data.synthetic``
    and ``data.source``; ``protocol.kind`` and the sections it reads (each kind's ``section`` in the
    registry, e.g. ``[ppm]`` or ``[privacy]``: a section no point's kind reads is refused, a section a
    kind requires must be given) and each kind's ``check``; ``[engine]`` conditions and ``backend``.
    """
    _check_baseline(config["baseline"])
    _check_data(config["data"])
    _check_kinds(raw, config)
    _check_backends(config)
    _check_schedule(config)
    backends = _values(config["backend"])
    if "engine" in raw and "engine" not in backends:
        raise ConfigError(
            "engine: engine conditions are given ([engine]) but backend is 'matrix', which "
            "ignores them; set backend = \"engine\" to simulate them, or remove [engine]"
        )


def _check_baseline(base: Mapping[str, Any]) -> None:
    on = any(_values(base["ldp"]))
    for key, example in (("epsilon", "5.0"), ("delta", "1e-5")):
        if on and base[key] is None:
            raise ConfigError(
                f"baseline.{key} is required when baseline.ldp = true (the LDP baseline needs its "
                f"(epsilon, delta) budget), e.g. {key} = {example}"
            )
        if not on and base[key] is not None:
            raise ConfigError(
                f"baseline.{key} = {base[key]!r} is given but baseline.ldp = false, so no baseline "
                "is run; set baseline.ldp = true or remove it"
            )


def _check_data(data: Mapping[str, Any]) -> None:
    partitions = _values(data["partition"])
    sizes = data["sizes"]
    if sizes is not None:
        other = [p for p in partitions if p != "explicit"]
        if other:
            raise ConfigError(
                f"data.sizes is only used with data.partition = 'explicit', got partition "
                f"{other[0]!r}; set partition = \"explicit\" or remove data.sizes"
            )
    elif "explicit" in partitions:
        raise ConfigError(
            "data.partition = 'explicit' needs data.sizes = [rows of agent 0, rows of agent 1, ...]"
        )
    sources = _values(data["source"])
    if data["synthetic"] is not None:
        other = [s for s in sources if s != "synthetic"]
        if other:
            raise ConfigError(
                f"data.synthetic is only used with data.source = 'synthetic', got source "
                f"{other[0]!r}"
            )
    elif "synthetic" in sources:
        raise ConfigError(
            "data.source = 'synthetic' needs data.synthetic = { n = rows, d = cols, spectrum = ... }"
        )


def _check_backends(config: Mapping[str, Any]) -> None:
    """``backend`` among the kind's backends (``ProtocolKind.backends``), at every point: pairwise
    when ``backend`` and ``protocol.kind`` advance together in a ``[sweep] zip`` group, else every
    combination."""
    kinds_, backends = _values(config["protocol"]["kind"]), _values(config["backend"])
    zipped = any({"backend", "protocol.kind"} <= set(g) for g in (config.get("sweep") or {}).get("zip", []))
    pairs = (zip(kinds_, backends, strict=False) if zipped
             else ((k, b) for k in dict.fromkeys(kinds_) for b in dict.fromkeys(backends)))
    for name, backend in pairs:
        found = kind(name)
        if backend not in found.backends:
            raise ConfigError(f"backend = {backend!r}: protocol.kind = {name!r} runs on "
                              f"{', '.join(found.backends)} only (its declared backends); use backend "
                              f"= {found.backends[0]!r}", field="backend")


def _check_schedule(config: Mapping[str, Any]) -> None:
    """``network.schedule`` only with kinds that run under a schedule
    (``ProtocolKind.schedule_rounds``; the refusal says why a kind does not)."""
    if config["network"].get("schedule") is None:
        return
    used = [kind(n) for n in dict.fromkeys(_values(config["protocol"]["kind"]))]
    able = ", ".join(sorted(k.name for k in kinds() if k.schedule_rounds is not None))
    for k in used:
        if k.schedule_rounds is None:
            raise ConfigError(f"network.schedule: protocol.kind = {k.name!r} does not run under a "
                              f"schedule: {k.schedule_refusal}; kinds that do: {able}",
                              field="network.schedule")


def _check_kinds(raw: Mapping[str, Any], config: Mapping[str, Any]) -> None:
    """The sections the point kinds read (from the registry: ``ProtocolKind.section``,
    ``requires_section``), and each kind's own cross-field rules (``ProtocolKind.check``)."""
    names = _values(config["protocol"]["kind"])
    used = [kind(n) for n in dict.fromkeys(names)]
    for section, readers in kinds_by_section().items():
        users = [k for k in used if k.section == section]
        needs = [k for k in users if k.requires_section]
        if needs and section not in config:
            keys = ", ".join(needs[0].fields or ())
            raise ConfigError(f"protocol.kind = {needs[0].name!r} needs a [{section}] section (keys: "
                              f"{keys}; docs/scenarios.md): {needs[0].section_doc}", field=section)
        if section in raw and not users:
            raise ConfigError(
                f"{section}: [{section}] is given but protocol.kind is {names[0]!r}, which ignores "
                f"it (it is read by {', '.join(k.name for k in readers)}; the noise, budget and "
                f"audit of a kind are in its own section); set protocol.kind or remove [{section}]",
                field=section)
    _check_keys_read(raw, names, used)
    for k in used:
        if k.check is not None:
            k.check(config)


PAIR_AUDIT_KEYS: tuple[str, ...] = ("alpha", "sigma_q", "noise")
"""The ``[protocol]`` keys only the pair-audited kinds (``ProtocolKind.pair_audit``: D-DP-PM) read;
the other kinds take their noise from their own section."""


def _check_keys_read(raw: Mapping[str, Any], names: list[Any], used: list[Any]) -> None:
    """A key given while no kind of the scenario reads it is refused: a ``[protocol]`` key of
    :data:`PAIR_AUDIT_KEYS`, or a key of a kind's section whose field says which kinds read it
    (``Field.read_by``)."""
    given = ", ".join(dict.fromkeys(str(n) for n in names))
    proto = raw.get("protocol") or {}
    audited = [k.name for k in kinds() if k.pair_audit]
    for key in PAIR_AUDIT_KEYS:
        if key in proto and not any(k.pair_audit for k in used):
            raise ConfigError(f"protocol.{key} is given but protocol.kind = {given} does not read it "
                              f"(read by {', '.join(audited)} only; the noise of another kind is in "
                              "its own section); remove it", field=f"protocol.{key}")
    for k in used:
        table = raw.get(k.section) if k.section else None
        for key, f in (k.fields or {}).items():
            if isinstance(table, Mapping) and key in table and f.read_by is not None \
                    and not any(u.name in f.read_by for u in used):
                raise ConfigError(f"{k.section}.{key} is given but protocol.kind = {given} does not "
                                  f"read it (read by {', '.join(f.read_by)} only); remove it",
                                  field=f"{k.section}.{key}")
