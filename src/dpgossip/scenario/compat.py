"""Checks across settings: combinations that are each valid alone but not together.

Run by :func:`dpgossip.scenario.schema.validate` after every section is resolved. A setting that is a
sweep axis is checked for each of its values (a combination is an error when it occurs at any point).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dpgossip.errors import ConfigError

__all__ = ["check_combinations"]


def _values(value: Any, *, list_kind: bool = False) -> list[Any]:
    """The values a setting takes over the sweep: the list of an axis, else the single value."""
    if isinstance(value, list) and (not list_kind or (value and isinstance(value[0], list))):
        return value
    return [value]


def check_combinations(raw: Mapping[str, Any], config: Mapping[str, Any]) -> None:
    """Raise ``ConfigError`` for incompatible settings of a resolved configuration.

    Checked: the LDP baseline and its budget; ``data.sizes`` and ``data.partition``; ``data.synthetic``
    and ``data.source``; ``protocol.kind`` and the sections it reads (``[ppm]``, ``[cape]``,
    ``[floorfree]``, ``[privacy]``: a section no point's kind reads is refused); ``[engine]``
    conditions and ``backend``.
    """
    _check_baseline(config["baseline"])
    _check_data(config["data"])
    _check_kinds(raw, config)
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


_KIND_SECTIONS = {"cape": (("capepca", "capepca-gossip"),
                            "noise_multiplier = tau / Delta, or epsilon = the budget (docs/cape.md)"),
                   "floorfree": (("ddppm-floorfree",),
                                 "noise_multiplier = s, or epsilon = the budget (docs/floorfree.md)")}
"""Sections read by the CAPE and floor-free kinds: the kinds and what the section must give."""


def _check_kinds(raw: Mapping[str, Any], config: Mapping[str, Any]) -> None:
    kinds = _values(config["protocol"]["kind"])
    ppm = [k for k in kinds if k in ("ppm", "ppm-federated", "ppm-gossip")]
    if ppm and "ppm" not in config:
        raise ConfigError(
            f"protocol.kind = {ppm[0]!r} needs a [ppm] section with its noise: noise_multiplier = "
            "sigma, or epsilon = the budget to calibrate to (docs/ppm.md)", field="ppm")
    if "ppm" in raw and not ppm:
        raise ConfigError(
            f"ppm: [ppm] is given but protocol.kind is {kinds[0]!r}, which ignores it; set "
            "protocol.kind (e.g. \"ppm\") or remove [ppm]", field="ppm")
    for name, (readers, noise) in _KIND_SECTIONS.items():
        used = [k for k in kinds if k in readers]
        if used and name not in config:
            raise ConfigError(f"protocol.kind = {used[0]!r} needs a [{name}] section with its noise: "
                              f"{noise}", field=name)
        if name in raw and not used:
            raise ConfigError(f"{name}: [{name}] is given but no protocol.kind reads it (it is read "
                              f"by {', '.join(readers)}); set protocol.kind or remove [{name}]",
                              field=name)
    if "privacy" in raw and "ddppm" not in kinds:
        raise ConfigError(f"privacy: [privacy] is given but protocol.kind is {kinds[0]!r}, which "
                          "ignores it ([privacy] sets the pair audit and calibration of protocol.kind "
                          "= 'ddppm'; this kind's noise, budget and audit are in its own section); "
                          "remove [privacy] or set protocol.kind = \"ddppm\"", field="privacy")
    rank = config["protocol"]["rank"]   # a swept rank is checked per point (DdppmFloorFree)
    if "ddppm-floorfree" in kinds and not isinstance(rank, list) and rank != 1:
        raise ConfigError(f"protocol.rank must be 1 for protocol.kind = 'ddppm-floorfree' (it "
                          f"estimates the top component only), got {rank!r}",
                          field="protocol.rank")
    block = config.get("ppm", {}).get("block_rank")
    for p in _values(block):
        for r in _values(config["protocol"]["rank"]):
            if p is not None and p < r:
                raise ConfigError(f"ppm.block_rank = {p} must be >= protocol.rank = {r} (the "
                                  "target rank k <= the iteration rank p)", field="ppm.block_rank")
