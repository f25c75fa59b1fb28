"""The scenario schema: every key, its type, default and allowed values, and validation at load.

Errors name the path of the bad value (``protocol.consensus_steps[2]``), the value and what is allowed;
unknown keys get a did-you-mean. A list given where the schema expects one value is a sweep axis.

Besides the sections of :data:`SCHEMA`, a scenario may have

* ``[sweep]`` with ``zip = [[path, ...], ...]``: axes that vary together (:mod:`~dpgossip.scenario.sweep`);
* ``[engine]``: network conditions for ``backend = "engine"``, checked by
  :meth:`dpgossip.engine.NetworkConditions.from_mapping`;
* sections registered by modules of this layer (:mod:`~dpgossip.scenario.sections`): ``[privacy]``
  (:mod:`~dpgossip.scenario.privacy_section`) and the sections of the registered protocol kinds
  (``[ppm]``, ``[cape]``, ...: :mod:`~dpgossip.scenario.kind_sections`). The package
  (``dpgossip/scenario/__init__.py``) imports them, so they are registered before any module of the
  layer is used; this module imports none of them.

Combinations of settings that are valid alone but not together are rejected by
:mod:`~dpgossip.scenario.compat`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from dpgossip.data import PARTITIONS
from dpgossip.data.preprocess import SCALES
from dpgossip.errors import ConfigError, did_you_mean, reject_unknown_keys, renamed_fields
from dpgossip.protocols.ldp.baseline import LDP_CALIBRATIONS
from dpgossip.protocols.registry import find_kind, point_kind_names
from dpgossip.protocols.registry import kind as registered_kind
from dpgossip.scenario.compat import check_combinations
from dpgossip.scenario.noise import noise_schedule
from dpgossip.scenario.point import DEFAULT_KIND
from dpgossip.scenario.section_files import plain_name
from dpgossip.scenario.sections import (
    EXTRA_SECTIONS,
    free_table,
    known_sections,
    register_section,
    section_for,
)
from dpgossip.scenario.sweep import check_sweep
from dpgossip.settings import REQUIRED, Field
from dpgossip.topology.schedule_spec import schedule_spec_from_mapping

__all__ = [
    "Field",
    "SCHEMA",
    "EXTRA_SECTIONS",
    "REQUIRED",
    "validate",
    "axis_paths",
    "setting_paths",
    "register_section",
]


def _protocol_kind(path: str, value: str) -> str:
    """``protocol.kind``: a kind of the registry that runs as a scenario point
    (:func:`dpgossip.protocols.registry.kind` refuses any other name, naming ``path`` with a
    did-you-mean and the registered kinds)."""
    spec = registered_kind(value, field_name=path)
    if not spec.runs_points:
        raise ConfigError(f"{path} = {value!r} is not run as a scenario point: a scenario file with a "
                          f"[{spec.section}] table runs it; point kinds: {', '.join(point_kind_names())}",
                          field=path)
    return value


def _noise_table(path: str, value: Any) -> dict[str, Any]:
    """``protocol.noise``: only its keys are checked here;
    :class:`~dpgossip.protocols.ddppm.params.NoiseSchedule` validates the values
    (:func:`~dpgossip.scenario.noise.noise_schedule` names them by this path)."""
    if not isinstance(value, Mapping):
        raise ConfigError(f"{path} must be a table, got {value!r}")
    reject_unknown_keys(f"{path}.", value, ("schedule", "scale", "values"))
    noise_schedule(value, path)
    out = dict(value)
    if isinstance(out.get("scale"), int):
        out["scale"] = float(out["scale"])
    out.setdefault("schedule", "geometric")
    out.setdefault("scale", 1.0)
    return out


def _schedule_table(path: str, value: Any) -> dict[str, Any]:
    """``network.schedule``: a sampled schedule of consensus rounds, checked by
    :func:`~dpgossip.topology.schedule_spec.schedule_spec_from_mapping` (errors name
    ``network.schedule.<key>``)."""
    schedule_spec_from_mapping(value, path)
    return dict(value)


def _alpha_value(path: str, value: Any) -> Any:
    if isinstance(value, bool):
        raise ConfigError(
            f"{path} must be a positive number, 'geometric_mean' or "
            f"{{ position = t }}, got {value!r}"
        )
    if isinstance(value, (int, float)):
        if value <= 0 or not math.isfinite(value):
            raise ConfigError(f"{path} must be a positive number, got {value!r}")
        return float(value)
    if value == "geometric_mean":
        return value
    if isinstance(value, Mapping):
        out = _sub_table(path, value, {"position": float})
        pos = out.get("position", 0.5)
        if not 0 < pos < 1:
            raise ConfigError(f"{path}.position must be in (0, 1), got {pos!r}")
        return out
    raise ConfigError(
        f"{path} must be a positive number, 'geometric_mean' or {{ position = t }}, got {value!r}"
    )


def _out_dir_text(path: str, value: str) -> str:
    """``output.dir`` must name a folder: an empty one used to fall back to results/<name>."""
    from dpgossip.scenario.outdir import check_path_text

    return check_path_text(value, f"{path} =")


def _free_table(path: str, value: Any) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise ConfigError(f"{path} must be a table, got {value!r}")
    return dict(value)


def _sub_table(path: str, value: Any, allowed: Mapping[str, Any]) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise ConfigError(f"{path} must be a table, got {value!r}")
    out: dict[str, Any] = {}
    reject_unknown_keys(f"{path}.", value, allowed)
    for key, v in value.items():
        kind = allowed[key]
        if kind is float and isinstance(v, int) and not isinstance(v, bool):
            v = float(v)
        if kind == "list":
            if not isinstance(v, list):
                raise ConfigError(f"{path}.{key} must be a list, got {v!r}")
        elif not isinstance(v, kind) or isinstance(v, bool) and kind is not bool:
            raise ConfigError(f"{path}.{key} must be {kind.__name__}, got {v!r}")
        out[key] = v
    return out


SCHEMA: dict[str, dict[str, Field]] = {
    "": {
        "name": Field(
            kind=str, default=REQUIRED, sweep=False, check=plain_name, doc="scenario name"
        ),
        "description": Field(kind=str, default="", sweep=False, doc="one line, shown in reports"),
        "seed": Field(kind=int, default=0, low=0, sweep=False, doc="root seed of the scenario"),
        "repeats": Field(kind=int, default=1, low=1, sweep=False, doc="independent runs per point"),
        "backend": Field(
            kind=str,
            default="matrix",
            choices=("matrix", "engine"),
            doc="matrix: the synchronous run in vectorised algebra; engine: the message-level "
            "simulator (simpy) with the conditions of [engine]",
        ),
    },
    "data": {
        "source": Field(
            kind=str,
            default=REQUIRED,
            doc="wine | breast_cancer | diabetes | synthetic | path to .csv/.npy",
        ),
        "partition": Field(
            kind=str,
            default="equal",
            choices=PARTITIONS,
            doc="how rows are split among agents: equal blocks in row order, the given sizes, or "
            "random sizes (at least min_rows each)",
        ),
        "sizes": Field(kind="list", default=None, doc="rows per agent (partition = 'explicit')"),
        "min_rows": Field(
            kind=int,
            default=1,
            low=1,
            doc="fewest rows per agent (partition = 'random')",
        ),
        "center": Field(kind=bool, default=False, doc="subtract the column means"),
        "standardize": Field(
            kind=bool, default=None, doc="z-score columns; default true except for synthetic data"
        ),
        "scale": Field(
            kind=str,
            default="max_norm",
            choices=SCALES,
            doc="rows into the unit ball: divide by the largest row norm, normalise every row, "
            "or check that they already are",
        ),
        "synthetic": Field(
            kind="table",
            default=None,
            check=_free_table,
            doc="{ n, d, spectrum } for source = 'synthetic'",
        ),
    },
    "network": {
        "topology": Field(
            kind=str, default=REQUIRED, doc="builder name, shipped file name or path"
        ),
        "agents": Field(
            kind=int,
            default=None,
            low=2,
            doc="number of agents m (a file's node count by default)",
        ),
        "mixing": Field(
            kind=str,
            default=None,
            doc="mixing rule; default 'metropolis', or the file's W for files that carry one",
        ),
        "params": Field(
            kind="table",
            default=None,
            check=_free_table,
            sweep=False,
            doc="builder parameters, e.g. { p = 0.3 }",
        ),
        "schedule": Field(
            kind="table",
            default=None,
            check=_schedule_table,
            doc="time-varying consensus rounds W_t (docs/dynamic-gossip.md, section 8): { sampler = "
            "fixed | random-matchings | one-peer-exponential | random-regular | files, seed, "
            "degree, files, stochastic }, or a list of such tables (a sweep axis); only kinds that "
            "run under a schedule (ppm-gossip, capepca-gossip, dpals-gossip); default W every round",
        ),
    },
    "protocol": {
        "kind": Field(
            kind=str,
            default=DEFAULT_KIND,
            check=_protocol_kind,
            doc="the protocol: a registered kind (the table below, `dpgossip protocols`); a kind "
            "with its own section reads its settings there",
        ),
        "iterations": Field(kind=int, default=REQUIRED, low=1, doc="power iterations T"),
        "consensus_steps": Field(
            kind=int,
            default=REQUIRED,
            low=0,
            doc="gossip rounds c per iteration",
        ),
        "rank": Field(
            kind=int,
            default=1,
            low=1,
            doc="components estimated, one after another by deflation",
        ),
        "alpha": Field(
            kind="table",
            default="geometric_mean",
            check=_alpha_value,
            doc="step alpha: a number > 0, 'geometric_mean' (1/sqrt(mu_1 mu_2)) or "
            "{ position = t } (t in (0, 1) between 1/mu_1 and 1/mu_2)",
        ),
        "sigma_q": Field(
            kind=float,
            default=None,
            low=0,
            low_open=True,
            doc="standard deviation of q^(0); default 1/sqrt(n)",
        ),
        "noise": Field(
            kind="table",
            default=None,
            check=_noise_table,
            doc="per-iteration noise sigma_p(t): { schedule = none | constant | geometric | "
            "explicit, scale, values }; default geometric, scale 1",
        ),
    },
    "baseline": {
        "ldp": Field(kind=bool, default=False,
                     doc="also run the LDP baseline of Campbell et al., Section IV-A"),
        "epsilon": Field(kind=float, default=None, low=0, low_open=True, doc="LDP budget epsilon"),
        "delta": Field(
            kind=float,
            default=None,
            low=0,
            low_open=True,
            high=1,
            high_open=True,
            doc="LDP budget delta",
        ),
        "calibration": Field(
            kind=str,
            default="analytic",
            choices=LDP_CALIBRATIONS,
            doc="LDP noise: the analytic Gaussian mechanism (Balle-Wang), or the classical bound as "
            "printed in Campbell et al.",
        ),
    },
    "output": {
        "dir": Field(
            kind=str,
            default=None,
            sweep=False,
            check=_out_dir_text,
            doc="results folder; default results/<name>",
        ),
        "plots": Field(kind=bool, default=True, sweep=False, doc="draw the plots after the run"),
    },
}



def _engine_table(path: str, value: Any) -> dict[str, Any]:
    """``[engine]``: the network conditions of :class:`dpgossip.engine.NetworkConditions`, checked at
    load. The older nested form ``[engine] conditions = { ... }`` is accepted and flattened."""
    table = free_table(path, value)
    if "conditions" in table:
        if len(table) > 1:
            raise ConfigError(
                f"{path}: give the network conditions either directly in [{path}] or under "
                f"{path}.conditions, not both"
            )
        table = free_table(f"{path}.conditions", table["conditions"])
    from dpgossip.engine.conditions import NetworkConditions, condition_fields

    with renamed_fields(condition_fields(path)):
        NetworkConditions.from_mapping(table)
    return table


register_section("engine", _engine_table)


def _check_scalar(path: str, f: Field, value: Any) -> Any:
    if f.kind == "table":
        return f.check(path, value) if f.check else value
    if f.kind == "list":
        if not isinstance(value, list):
            raise ConfigError(f"{path} must be a list, got {value!r}")
        return value
    if f.kind is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if not isinstance(value, f.kind) or (isinstance(value, bool) and f.kind is not bool):
        raise ConfigError(
            f"{path} must be {_kind_name(f.kind)}, got {value!r} ({type(value).__name__})"
        )
    if f.check is not None:
        value = f.check(path, value)
    if f.choices is not None and value not in f.choices:
        raise ConfigError(
            f"{path}: {value!r} is not allowed; use one of "
            f"{', '.join(map(str, f.choices))}{did_you_mean(str(value), f.choices)}"
        )
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if f.kind is float and not math.isfinite(value):
            raise ConfigError(f"{path} must be finite, got {value!r}")
        if f.low is not None and (value < f.low or (f.low_open and value == f.low)):
            raise ConfigError(
                f"{path} must be {'>' if f.low_open else '>='} {f.low:g}, got {value!r}"
            )
        if f.high is not None and (value > f.high or (f.high_open and value == f.high)):
            raise ConfigError(
                f"{path} must be {'<' if f.high_open else '<='} {f.high:g}, got {value!r}"
            )
    return value


def _kind_name(kind: Any) -> str:
    return {int: "an integer", float: "a number", str: "a string", bool: "true or false"}.get(
        kind, str(kind)
    )


def check_field(path: str, f: Field, value: Any) -> Any:
    """``value`` of setting ``path`` checked against ``f``: a list is a sweep axis (each element
    checked with its index in the path) when ``f.sweep``; raises ``ConfigError`` naming ``path``."""
    is_axis = (
        isinstance(value, list)
        and f.kind != "list"
        or (f.kind == "list" and isinstance(value, list) and value and isinstance(value[0], list))
    )
    if is_axis:
        if not f.sweep:
            raise ConfigError(f"{path} cannot be swept (a list was given: {value!r})")
        if not value:
            raise ConfigError(f"{path}: an empty list is not a sweep axis; give at least one value")
        return [_check_scalar(f"{path}[{i}]", f, v) for i, v in enumerate(value)]
    return _check_scalar(path, f, value)


def validate(raw: Mapping[str, Any]) -> dict[str, Any]:
    """Validate a parsed scenario and fill defaults; return the resolved configuration.

    The resolved configuration has every key of :data:`SCHEMA` (defaults filled), each registered
    section that was given (see :mod:`dpgossip.scenario.sections`) and ``sweep`` (``{"zip":
    [...]}``). Settings given as lists stay lists: they are the sweep axes.

    Raises
    ------
    ConfigError
        Naming the path, the value and what is allowed.
    """
    if not isinstance(raw, Mapping):
        raise ConfigError(f"a scenario must be a TOML table, got {type(raw).__name__}")
    _reject_non_finite("", raw)
    sections = [s for s in SCHEMA if s] + known_sections() + ["sweep"]
    own_data = _own_data_kinds(raw)
    out: dict[str, Any] = {}
    top = SCHEMA[""]
    for key, value in raw.items():
        if key in top:
            continue
        if key not in sections:
            _refuse_unregistered_kind(raw)
        reject_unknown_keys("", [key], list(top) + sections, "top-level keys")
        if not isinstance(value, Mapping):
            raise ConfigError(f"{key} must be a table ([{key}]), got {value!r}")
    for name, fields in SCHEMA.items():
        given = raw if name == "" else raw.get(name, {})
        target = out if name == "" else out.setdefault(name, {})
        if name:
            reject_unknown_keys(f"{name}.", given, fields, f"in [{name}]")
        for key, f in fields.items():
            path = f"{name}.{key}" if name else key
            if key in given:
                target[key] = check_field(path, f, given[key])
            elif f.default is REQUIRED:
                if name == "data" and own_data:
                    target[key] = None
                elif name == "" or name in raw or _section_required(name):
                    raise ConfigError(f"{path} is required ({f.doc or _kind_name(f.kind)})")
            else:
                target[key] = f.default
    for name in raw:
        if name in top or name in SCHEMA or name == "sweep":
            continue
        entry = section_for(name)
        if entry is not None:
            out[name] = entry.validate(name, raw[name])
    axes = axis_paths(out)
    settings = setting_paths(out)
    out["sweep"] = check_sweep(
        raw.get("sweep"),
        axes,
        settings,
        {p: len(_lookup(out, p)) for p in axes},
        {p: _lookup(out, p) for p in settings},
    )
    check_combinations(raw, out)
    return out


def _reject_non_finite(path: str, value: Any) -> None:
    """No ``inf`` or ``nan`` anywhere in a scenario (TOML allows them; no setting means them)."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ConfigError(
            f"{path} must be a finite number, got {value!r}; inf and nan are not allowed"
        )
    if isinstance(value, Mapping):
        for key, v in value.items():
            _reject_non_finite(f"{path}.{key}" if path else str(key), v)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _reject_non_finite(f"{path}[{i}]", v)


def _lookup(config: Mapping[str, Any], path: str) -> Any:
    node: Any = config
    for part in path.split("."):
        node = node.get(part) if isinstance(node, Mapping) else None
    return node


def _own_data_kinds(raw: Mapping[str, Any]) -> tuple[str, ...]:
    """The values of ``protocol.kind`` when every one of them makes its own data (``own_data``), else
    ``()``; such a scenario has no ``[data]`` and refuses one.

    Raises
    ------
    ConfigError
        ``[data]`` is given although every kind makes its own data.
    """
    proto = raw.get("protocol")
    names = proto.get("kind") if isinstance(proto, Mapping) else None
    names = names if isinstance(names, list) else [names]
    found = [find_kind(n) for n in names]
    if not names or any(k is None or k.own_data is None for k in found):
        return ()
    own = tuple(k.name for k in found)
    if "data" in raw:
        sections = sorted({f"[{k.section}]" for k in found if k.section})
        raise ConfigError(f"data: protocol.kind = {', '.join(own)} draws its own data (from "
                          f"{', '.join(sections) or 'its settings'}), so [data] is not read; remove "
                          "the [data] section", field="data")
    return own


def _refuse_unregistered_kind(raw: Mapping[str, Any]) -> None:
    """Before an unknown section is refused: a ``protocol.kind`` that no built-in home or installed
    plug-in registers is the cause (the section is its kind's), so say that instead.

    Raises
    ------
    ConfigError
        Naming ``protocol.kind``, the value and the registered kinds.
    """
    proto = raw.get("protocol")
    names = proto.get("kind") if isinstance(proto, Mapping) else None
    for i, name in enumerate(names if isinstance(names, list) else [names]):
        if isinstance(name, str) and find_kind(name) is None:
            path = f"protocol.kind[{i}]" if isinstance(names, list) else "protocol.kind"
            registered = ", ".join(point_kind_names())
            raise ConfigError(f"{path} = {name!r} is not installed: no built-in home or installed "
                              "plug-in registers it (install the package that provides it; its "
                              f"section is unknown until then); registered: {registered}", field=path)


def _section_required(name: str) -> bool:
    return name in ("data", "network", "protocol")


def _is_axis(f: Field | None, value: Any) -> bool:
    if not isinstance(value, list):
        return False
    if f is None:
        return True
    return f.kind != "list" or bool(value and isinstance(value[0], list))


def axis_paths(config: Mapping[str, Any]) -> list[str]:
    """Dotted paths of the sweep axes of a validated configuration (values that are lists).

    Order: the sections of :data:`SCHEMA` in order, then the registered sections' sweepable keys.
    """
    paths = []
    for name, fields in SCHEMA.items():
        section = config if name == "" else config.get(name, {})
        for key, f in fields.items():
            if _is_axis(f, section.get(key)):
                paths.append(f"{name}.{key}" if name else key)
    for name, entry in EXTRA_SECTIONS.items():
        section = config.get(name)
        if isinstance(section, Mapping):
            paths.extend(f"{name}.{k}" for k in entry.sweepable
                         if _is_axis(None, _lookup(section, k)))
    return paths


def setting_paths(config: Mapping[str, Any] | None = None) -> dict[str, bool]:
    """Every dotted setting path, mapped to whether it may be swept.

    Registered sections contribute their sweepable keys (only those present in ``config`` when given).
    """
    out = {
        (f"{name}.{key}" if name else key): f.sweep
        for name, fields in SCHEMA.items()
        for key, f in fields.items()
    }
    for name, entry in EXTRA_SECTIONS.items():
        if config is None or name in config:
            out.update({f"{name}.{k}": True for k in entry.sweepable})
    return out
