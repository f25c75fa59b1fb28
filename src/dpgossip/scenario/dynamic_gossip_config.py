"""A dynamic-gossip scenario file: ``[dynamic_gossip]``, its graph and its modes (docs/dynamic-scenarios.md).

A scenario file whose top level has a ``[dynamic_gossip]`` table compares modes of gossip averaging (a
fixed ``W`` in synchronous rounds, randomized pairwise gossip, time-varying rounds, push-sum on directed
arcs of the graph), optionally under message drop, delays and churn, on one graph with one noise level:
the consensus error against simulated time and against messages, and the exact leakage of noisy gossip
averaging (noise once, ``gossip-average``) to an observer who knows the realised schedule, over sampled
schedules. Top-level keys: ``name``, ``description``, ``[output]`` (``dir``, ``plots``) and
``[dynamic_gossip]``, whose keys are :data:`SECTION_KEYS`; ``[dynamic_gossip.graph]`` holds
:data:`GRAPH_KEYS` and each ``[[dynamic_gossip.modes]]`` :data:`MODE_KEYS`. A mode's ``schedule`` table
is read by :func:`~dpgossip.topology.schedule_spec.schedule_spec_from_mapping` (the same table as the
protocol scenarios' schedules); its ``conditions`` table (:data:`CONDITION_KEYS`) says how the engine
runs it. Every error is a :class:`~dpgossip.errors.ConfigError` naming the path
(``dynamic_gossip.modes[1].conditions.drop``), the value and what is allowed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dpgossip.errors import ConfigError, check_choice, check_int, check_number, reject_unknown_keys
from dpgossip.scenario.section_files import file_has_section, load_section_file, plain_name
from dpgossip.topology.builders import TOPOLOGIES
from dpgossip.topology.churn import SESSION_KINDS, SessionLength
from dpgossip.topology.mixing import MIXING_RULES
from dpgossip.topology.schedule_spec import ScheduleSpec, schedule_spec_from_mapping

__all__ = ["SECTION", "SECTION_KEYS", "GRAPH_KEYS", "MODE_KEYS", "CONDITION_KEYS", "SESSION_KEYS",
           "GraphSpec", "Conditions", "Mode", "DynamicGossipConfig", "parse_dynamic_gossip",
           "is_dynamic_gossip", "is_dynamic_gossip_file", "load_dynamic_gossip"]

SECTION = "dynamic_gossip"
"""The TOML table that makes a scenario file a dynamic-gossip scenario."""
SECTION_KEYS: tuple[str, ...] = ("alpha", "delta", "sensitivity", "sigma", "horizon", "period",
                                 "samples", "seed", "points", "observers", "muffliato", "graph",
                                 "modes")
GRAPH_KEYS: tuple[str, ...] = ("topology", "agents", "seed", "params", "mixing")
MODE_KEYS: tuple[str, ...] = ("label", "schedule", "conditions", "period")
CONDITION_KEYS: tuple[str, ...] = ("drop", "delay", "sessions", "offline", "timeout")
SESSION_KEYS: dict[str, tuple[str, ...]] = {"lognormal": ("law", "mu", "sigma"),
                                            "exponential": ("law", "mean")}
"""The keys of a session-length table, by ``law``."""
TOP_KEYS: tuple[str, ...] = ("name", "description", "output", SECTION)


def is_dynamic_gossip(raw: Mapping[str, Any]) -> bool:
    """Whether a parsed TOML document is a dynamic-gossip scenario (has a ``[dynamic_gossip]`` table)."""
    return SECTION in raw


def is_dynamic_gossip_file(path: str | Path) -> bool:
    """Whether ``path`` is a readable TOML file with a ``[dynamic_gossip]`` table (``False`` for anything
    else: the ordinary scenario loader then reports what is wrong with it)."""
    return file_has_section(path, SECTION)


def load_dynamic_gossip(path: str | Path) -> DynamicGossipConfig:
    """Read and validate a dynamic-gossip scenario file; errors name the file and the TOML path."""
    path = Path(path)
    return load_section_file(path, lambda raw: parse_dynamic_gossip(raw, base_dir=path.parent))


@dataclass(frozen=True, slots=True, kw_only=True)
class GraphSpec:
    """The one graph every mode runs on (any generated topology of :mod:`dpgossip.topology`)."""

    topology: str
    agents: int
    seed: int = 0
    params: tuple[tuple[str, Any], ...] = ()
    mixing: str = "metropolis"

    def to_row(self) -> dict[str, object]:
        """Every setting (JSON-able)."""
        return {"topology": self.topology, "agents": self.agents, "seed": self.seed,
                "params": dict(self.params), "mixing": self.mixing}


@dataclass(frozen=True, slots=True, kw_only=True)
class Conditions:
    """How the engine runs a mode: message drop, uniform delays, churn, the pairwise timeout.

    ``delay = (low, high)``: every message takes a delay drawn uniformly from ``[low, high]`` (simulated
    time; one unit is one synchronous round at ``period = 1`` and the mean gap of an agent's clock).
    ``online`` / ``offline``: session-length laws of :func:`~dpgossip.topology.churn.sample_presence`
    (``None``: nobody leaves).  ``timeout``: how long a pairwise initiator waits for the reply
    (``None``: ``2 high + 1``, so every request can be answered in time).
    """

    drop: float = 0.0
    delay: tuple[float, float] = (0.0, 0.0)
    online: SessionLength | None = None
    offline: SessionLength | None = None
    timeout: float | None = None

    @property
    def pairwise_timeout(self) -> float:
        """The timeout a pairwise initiator uses (:attr:`timeout`, else ``2 high + 1``)."""
        return self.timeout if self.timeout is not None else 2.0 * self.delay[1] + 1.0

    def engine_table(self) -> dict[str, object]:
        """The engine's conditions (:class:`~dpgossip.engine.conditions.NetworkConditions` table):
        uniform latency, plain loss without retransmission."""
        low, high = self.delay
        latency: object = {"kind": "uniform", "low": low, "high": high} if high > low else low
        return {"latency": latency, "loss": self.drop, "retransmit": False}

    def to_row(self) -> dict[str, object]:
        """Every setting (JSON-able)."""
        return {"drop": self.drop, "delay": list(self.delay), "online": _law_row(self.online),
                "offline": _law_row(self.offline), "timeout": self.pairwise_timeout}


def _law_row(law: SessionLength | None) -> dict[str, object] | None:
    if law is None:
        return None
    if law.kind == "lognormal":
        return {"law": "lognormal", "mu": law.a, "sigma": law.b}
    return {"law": "exponential", "mean": law.a}


@dataclass(frozen=True, slots=True, kw_only=True)
class Mode:
    """One mode: a schedule sampler, and the engine's conditions (``None``: ideal links, the sampled
    schedule is applied as it is)."""

    label: str
    schedule: ScheduleSpec
    conditions: Conditions | None = None
    period: float = 1.0
    """Simulated duration of one synchronous round."""
    raw_schedule: tuple[tuple[str, Any], ...] = ()
    """The schedule table as given (part of the stored record's key)."""

    def to_row(self) -> dict[str, object]:
        """Every setting (JSON-able)."""
        return {"label": self.label, "schedule": dict(self.raw_schedule),
                "conditions": None if self.conditions is None else self.conditions.to_row(),
                "period": self.period}


@dataclass(frozen=True, slots=True, kw_only=True)
class DynamicGossipConfig:
    """A parsed dynamic-gossip scenario."""

    name: str
    description: str = ""
    alpha: float = 2.0
    delta: float = 1e-5
    sensitivity: float = 1.0
    sigma: float = 1.0
    horizon: float = 30.0
    samples: int = 100
    seed: int = 0
    points: int = 61
    observers: tuple[int, ...] | str = (0,)
    muffliato: bool = False
    """Also charge every run's schedule with Muffliato's per-message accounting (modes on ideal links
    whose schedules average: not push-sum, no ``conditions``)."""
    graph: GraphSpec
    modes: tuple[Mode, ...] = ()
    out_dir: str | None = None
    plots: bool = True

    def to_row(self) -> dict[str, object]:
        """The resolved scenario (JSON-able), as written to ``config.resolved.json``."""
        return {"name": self.name, "description": self.description, "alpha": self.alpha,
                "delta": self.delta, "sensitivity": self.sensitivity, "sigma": self.sigma,
                "horizon": self.horizon, "samples": self.samples, "seed": self.seed,
                "points": self.points,
                "observers": self.observers if isinstance(self.observers, str) else list(self.observers),
                "muffliato": self.muffliato, "graph": self.graph.to_row(),
                "modes": [m.to_row() for m in self.modes],
                "output": {"dir": self.out_dir, "plots": self.plots}}


def parse_dynamic_gossip(raw: Mapping[str, Any], *,
                         base_dir: str | Path | None = None) -> DynamicGossipConfig:
    """Validate a dynamic-gossip scenario document (module docstring); errors name the TOML path.
    ``base_dir``: the folder that a ``files`` schedule's relative paths are read from (the scenario
    file's)."""
    reject_unknown_keys("", raw, TOP_KEYS, "at the top level of a dynamic-gossip scenario")
    name = plain_name("name", raw.get("name"))
    section = _table(raw[SECTION], SECTION)
    reject_unknown_keys(f"{SECTION}.", section, SECTION_KEYS, f"in [{SECTION}]")
    if "graph" not in section:
        raise ConfigError(f"{SECTION}.graph is required: the table [{SECTION}.graph] with topology "
                          "and agents", field=f"{SECTION}.graph")
    period = _positive(section.get("period", 1.0), f"{SECTION}.period")
    modes = section.get("modes")
    if not isinstance(modes, list) or not modes:
        raise ConfigError(f"{SECTION}.modes must be a nonempty array of tables ([[{SECTION}.modes]]), "
                          f"got {modes!r}", field=f"{SECTION}.modes")
    parsed = tuple(_mode(f"{SECTION}.modes[{i}]", m, period, base_dir) for i, m in enumerate(modes))
    labels = [m.label for m in parsed]
    for i, label in enumerate(labels):
        if labels.index(label) != i:
            raise ConfigError(f"{SECTION}.modes[{i}].label: {label!r} is used twice; labels must be "
                              "distinct", field=f"{SECTION}.modes[{i}].label")
    out = _table(raw.get("output", {}), "output")
    reject_unknown_keys("output.", out, ("dir", "plots"), "in [output] of a dynamic-gossip scenario")
    plots = out.get("plots", True)
    if not isinstance(plots, bool):
        raise ConfigError(f"output.plots must be true or false, got {plots!r}", field="output.plots")
    muffliato = section.get("muffliato", False)
    if not isinstance(muffliato, bool):
        raise ConfigError(f"{SECTION}.muffliato must be true or false, got {muffliato!r}",
                          field=f"{SECTION}.muffliato")
    config = DynamicGossipConfig(
        name=name, description=str(raw.get("description", "")),
        alpha=check_number(section.get("alpha", 2.0), f"{SECTION}.alpha", low=1.0, low_open=True),
        delta=check_number(section.get("delta", 1e-5), f"{SECTION}.delta", low=0.0, high=1.0,
                           low_open=True, high_open=True),
        sensitivity=_positive(section.get("sensitivity", 1.0), f"{SECTION}.sensitivity"),
        sigma=_positive(section.get("sigma", 1.0), f"{SECTION}.sigma"),
        horizon=_positive(section.get("horizon", 30.0), f"{SECTION}.horizon"),
        samples=check_int(section.get("samples", 100), f"{SECTION}.samples", 1),
        seed=check_int(section.get("seed", 0), f"{SECTION}.seed", 0),
        points=check_int(section.get("points", 61), f"{SECTION}.points", 2),
        observers=_observers(f"{SECTION}.observers", section.get("observers", [0])),
        muffliato=muffliato, graph=_graph(f"{SECTION}.graph", section["graph"]), modes=parsed,
        out_dir=_out_dir(out.get("dir")), plots=plots)
    check_sizes(config)
    return config


def check_sizes(config: DynamicGossipConfig) -> None:
    """Refuse, before anything runs, a horizon whose rounds or clock ticks, or a number of curve
    points, that do not fit in memory (``horizon = 1e12`` and ``points = 1e9`` ran into 'out of
    memory' or a machine out of swap). One run of a mode holds its ``m`` values at every round or tick;
    every curve point is a row of two tables per mode."""
    from dpgossip.resources import FLOAT, Need, check_needs
    from dpgossip.scenario.sizes import ROW_BYTES

    m = config.graph.agents
    for i, mode in enumerate(config.modes):
        pairwise = mode.schedule.sampler == "pairwise"
        steps = config.horizon * (mode.schedule.rate * m if pairwise else 1.0 / mode.period)
        what = "clock ticks" if pairwise else "rounds"
        check_needs([Need(f"{SECTION}.horizon = {config.horizon:g} gives mode {mode.label!r} (modes[{i}]) "
                          f"{steps:.3g} {what}, each holding the {m} agents' values",
                          int(min(steps, 1e18)) * 4 * FLOAT * m)],
                    advice=f"use a shorter {SECTION}.horizon", field=f"{SECTION}.horizon")
    rows = config.points * len(config.modes) * 2
    check_needs([Need(f"{SECTION}.points = {config.points} gives {rows} rows of curves",
                      rows * ROW_BYTES)], advice=f"use fewer {SECTION}.points", field=f"{SECTION}.points")


def _positive(value: Any, path: str) -> float:
    return check_number(value, path, low=0.0, low_open=True)


def _out_dir(value: Any) -> str | None:
    if value is not None and (not isinstance(value, str) or not value):
        raise ConfigError(f"output.dir must be a folder path, got {value!r}", field="output.dir")
    return value


def _table(value: Any, path: str) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise ConfigError(f"{path} must be a table, got {value!r}", field=path)
    return dict(value)


def _observers(path: str, value: Any) -> tuple[int, ...] | str:
    if value == "all":
        return "all"
    if isinstance(value, int) and not isinstance(value, bool):
        value = [value]
    if not isinstance(value, list) or not value:
        raise ConfigError(f"{path} must be 'all', an agent or a nonempty list of agents, got {value!r}",
                          field=path)
    return tuple(sorted({check_int(v, f"{path}[{i}]", 0) for i, v in enumerate(value)}))


def _graph(path: str, raw: Any) -> GraphSpec:
    table = _table(raw, path)
    reject_unknown_keys(f"{path}.", table, GRAPH_KEYS, f"in [{path}]")
    return GraphSpec(
        topology=check_choice(table.get("topology"), f"{path}.topology", tuple(TOPOLOGIES)),
        agents=check_int(table.get("agents"), f"{path}.agents", 2),
        seed=check_int(table.get("seed", 0), f"{path}.seed", 0),
        params=tuple(sorted(_table(table.get("params", {}), f"{path}.params").items())),
        mixing=check_choice(table.get("mixing", "metropolis"), f"{path}.mixing", tuple(MIXING_RULES)))


def _label(path: str, value: Any) -> str:
    if not isinstance(value, str) or not value or not all(c.isalnum() or c in "-_." for c in value):
        raise ConfigError(f"{path} must be a nonempty name of letters, digits, '-', '_' and '.', got "
                          f"{value!r}", field=path)
    return value


def _mode(path: str, raw: Any, period: float, base_dir: str | Path | None) -> Mode:
    table = _table(raw, path)
    reject_unknown_keys(f"{path}.", table, MODE_KEYS, f"in [[{SECTION}.modes]]")
    if "schedule" not in table:
        raise ConfigError(f"{path}.schedule is required: a table such as {{ sampler = \"pairwise\" }}",
                          field=f"{path}.schedule")
    schedule = _table(table["schedule"], f"{path}.schedule")
    spec = schedule_spec_from_mapping(schedule, f"{path}.schedule", base_dir=base_dir)
    conditions = (None if "conditions" not in table
                  else _conditions(f"{path}.conditions", table["conditions"]))
    if spec.schedule_kind == "pairwise" and "period" in table:
        raise ConfigError(f"{path}.period: a pairwise mode has no rounds (its clocks tick at "
                          f"schedule.rate); leave period out, got {table['period']!r}",
                          field=f"{path}.period")
    if spec.schedule_kind == "rounds" and conditions is not None and conditions.timeout is not None:
        raise ConfigError(f"{path}.conditions.timeout: only a pairwise initiator waits for a reply; a "
                          f"rounds mode ({spec.sampler!r}) has none, got {conditions.timeout:g}",
                          field=f"{path}.conditions.timeout")
    return Mode(label=_label(f"{path}.label", table.get("label", spec.sampler)), schedule=spec,
                conditions=conditions,
                period=_positive(table.get("period", period), f"{path}.period"),
                raw_schedule=tuple(sorted(schedule.items())))


def _conditions(path: str, raw: Any) -> Conditions:
    table = _table(raw, path)
    reject_unknown_keys(f"{path}.", table, CONDITION_KEYS, f"in {path}")
    online = None if "sessions" not in table else _session(f"{path}.sessions", table["sessions"])
    if "offline" in table and online is None:
        raise ConfigError(f"{path}.offline: offline sessions need online ones; give {path}.sessions "
                          "too", field=f"{path}.offline")
    offline = online if "offline" not in table else _session(f"{path}.offline", table["offline"])
    timeout = table.get("timeout")
    return Conditions(
        drop=check_number(table.get("drop", 0.0), f"{path}.drop", low=0.0, high=1.0, high_open=True),
        delay=_delay(f"{path}.delay", table.get("delay", 0.0)), online=online, offline=offline,
        timeout=None if timeout is None else _positive(timeout, f"{path}.timeout"))


def _delay(path: str, value: Any) -> tuple[float, float]:
    if isinstance(value, list):
        if len(value) != 2:
            raise ConfigError(f"{path} must be a number or [low, high], got {value!r}", field=path)
        low = check_number(value[0], f"{path}[0]", low=0.0)
        high = check_number(value[1], f"{path}[1]", low=low, expected=f"a number >= low = {low:g}")
        return low, high
    d = check_number(value, path, low=0.0, expected="a number >= 0 or [low, high]")
    return d, d


def _session(path: str, raw: Any) -> SessionLength:
    table = _table(raw, path)
    law = check_choice(table.get("law"), f"{path}.law", SESSION_KINDS)
    reject_unknown_keys(f"{path}.", table, SESSION_KEYS[law], f"in {path} with law = {law!r}")
    if law == "lognormal":
        return SessionLength("lognormal", check_number(table.get("mu"), f"{path}.mu"),
                             check_number(table.get("sigma"), f"{path}.sigma", low=0.0))
    return SessionLength("exponential", _positive(table.get("mean"), f"{path}.mean"))
