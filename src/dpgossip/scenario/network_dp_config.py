"""A network-DP scenario file: ``[network_dp]`` and ``[[network_dp.graphs]]`` (docs/network-dp-scenario.md).

A scenario file whose top level has a ``[network_dp]`` table is a network-DP scenario: it audits the
pairwise leakage of noisy gossip averaging (:mod:`dpgossip.protocols.gossip.linear`) exactly, on a
list of graphs, beside the published bounds, and has no data, protocol or sweep of the D-DP-PM
scenarios.  Top-level keys: ``name``, ``description``, ``[output]`` (``dir``, ``plots``) and
``[network_dp]``.  The keys of ``[network_dp]`` (:data:`CASE_KEYS`) are defaults that each graph
may override; the graph's own keys are :data:`GRAPH_KEYS`.  Every error is a
:class:`~dpgossip.errors.ConfigError` naming the path (``network_dp.graphs[2].agents``), the value
and what is allowed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dpgossip.errors import ConfigError, check_choice, check_int, check_number, reject_unknown_keys
from dpgossip.protocols.gossip.kinds import default_inputs, draws_edge_secrets
from dpgossip.protocols.gossip.linear import INPUTS
from dpgossip.protocols.registry import kinds
from dpgossip.scenario.section_files import file_has_section, load_section_file, plain_name
from dpgossip.topology.builders import TOPOLOGIES
from dpgossip.topology.mixing import MIXING_RULES

__all__ = ["SECTION", "network_dp_kinds", "CASE_KEYS", "GRAPH_KEYS", "SETTINGS", "MIXING_TIME",
           "MUFFLIATO_ROUNDS",
           "ObserverChoice", "GraphCase", "NetworkDpConfig", "parse_network_dp", "is_network_dp",
           "is_network_dp_file", "load_network_dp"]

SECTION = "network_dp"
"""The TOML table that makes a scenario file a network-DP scenario."""
MIXING_TIME = "mixing-time"
"""``rounds = "mixing-time"``: Muffliato's rule
(:func:`~dpgossip.protocols.gossip.bounds.muffliato_mixing_rounds`)."""
MUFFLIATO_ROUNDS: tuple[str, ...] = ("messages", "steps")
"""The powers ``W^t`` summed by Muffliato's per-message bound (``muffliato_rounds``): ``"messages"``,
this project's message rounds ``t = 0..T-1`` (the messages the exact audit sees); ``"steps"``, the
gossip steps ``t = 1..T`` that the authors' code sums."""
SETTINGS: tuple[str, ...] = ("dpgossip", "mfdl")
"""How a graph is built: by the project's builders, or as MFDL's code builds it."""
CASE_KEYS: tuple[str, ...] = ("protocol", "inputs", "sigma", "sigma_cor", "rounds", "target",
                              "observer", "observers", "muffliato_rounds")
"""Keys of ``[network_dp]`` that a graph may override."""
GRAPH_KEYS: tuple[str, ...] = ("label", "topology", "agents", "seed", "params", "mixing",
                               "setting") + CASE_KEYS
SECTION_KEYS: tuple[str, ...] = ("alpha", "delta", "sensitivity", "graphs") + CASE_KEYS
TOP_KEYS: tuple[str, ...] = ("name", "description", "output", SECTION)


def network_dp_kinds() -> tuple[str, ...]:
    """The values of a graph's ``protocol``: the registered kinds run by this section
    (``ProtocolKind.section == "network_dp"``; :mod:`dpgossip.protocols.gossip.kinds`)."""
    return tuple(k.name for k in kinds() if k.section == SECTION and not k.runs_points)


def is_network_dp(raw: Mapping[str, Any]) -> bool:
    """Whether a parsed TOML document is a network-DP scenario (has a ``[network_dp]`` table)."""
    return SECTION in raw


def is_network_dp_file(path: str | Path) -> bool:
    """Whether ``path`` is a readable TOML file with a ``[network_dp]`` table (``False`` for anything
    else: the ordinary scenario loader then reports what is wrong with it)."""
    return file_has_section(path, SECTION)


def load_network_dp(path: str | Path) -> NetworkDpConfig:
    """Read and validate a network-DP scenario file; errors name the file and the TOML path."""
    path = Path(path)
    return load_section_file(path, parse_network_dp)


@dataclass(frozen=True, slots=True, kw_only=True)
class ObserverChoice:
    """Which observers audit a fixed target.

    ``kind = "all"``: every other agent; ``"list"``: :attr:`agents`; ``"sample"``: at most
    :attr:`per_distance` agents at each graph distance from the target (all when the shell is smaller),
    drawn without replacement by ``numpy.random.default_rng(seed)``, at :attr:`distances` distances
    spread evenly over ``1..max`` (rounded; every distance when ``None``).
    """

    kind: str = "all"
    agents: tuple[int, ...] = ()
    per_distance: int = 1
    distances: int | None = None
    seed: int = 0

    def to_row(self) -> dict[str, object]:
        """The choice as a JSON-able table."""
        return {"kind": self.kind, "agents": list(self.agents), "per_distance": self.per_distance,
                "distances": self.distances, "seed": self.seed}


@dataclass(frozen=True, slots=True, kw_only=True)
class GraphCase:
    """One graph of the scenario and what is audited on it (defaults of ``[network_dp]`` filled in).

    Exactly one of :attr:`target` (one target, the observers of :attr:`observers`) and
    :attr:`observer` (one observer, every other agent as target) is set.
    """

    label: str
    topology: str
    agents: int
    seed: int = 0
    params: tuple[tuple[str, Any], ...] = ()
    mixing: str = "metropolis"
    setting: str = "dpgossip"
    protocol: str = "gossip-average"
    inputs: str = "once"
    sigma: float = 1.0
    sigma_cor: float = 0.0
    """DECOR's edge-secret standard deviation (``gossip-decor`` only)."""
    rounds: int | str = MIXING_TIME
    target: int | None = 0
    observer: int | None = None
    observers: ObserverChoice = ObserverChoice()
    muffliato_rounds: str = "messages"
    """Which rounds Muffliato's per-message sum adds (:data:`MUFFLIATO_ROUNDS`; ``gossip-average``
    only)."""

    def to_row(self) -> dict[str, object]:
        """Every setting of the case (JSON-able)."""
        return {"label": self.label, "topology": self.topology, "agents": self.agents,
                "seed": self.seed, "params": dict(self.params), "mixing": self.mixing,
                "setting": self.setting, "protocol": self.protocol, "inputs": self.inputs,
                "sigma": self.sigma, "sigma_cor": self.sigma_cor, "rounds": self.rounds,
                "target": self.target, "observer": self.observer, "observers": self.observers.to_row(),
                "muffliato_rounds": self.muffliato_rounds}


@dataclass(frozen=True, slots=True, kw_only=True)
class NetworkDpConfig:
    """A parsed network-DP scenario."""

    name: str
    description: str = ""
    alpha: float = 2.0
    delta: float = 1e-5
    sensitivity: float = 1.0
    graphs: tuple[GraphCase, ...] = ()
    out_dir: str | None = None
    plots: bool = True

    def to_row(self) -> dict[str, object]:
        """The resolved scenario (JSON-able), as written to ``config.resolved.json``."""
        return {"name": self.name, "description": self.description, "alpha": self.alpha,
                "delta": self.delta, "sensitivity": self.sensitivity,
                "graphs": [g.to_row() for g in self.graphs],
                "output": {"dir": self.out_dir, "plots": self.plots}}


def parse_network_dp(raw: Mapping[str, Any]) -> NetworkDpConfig:
    """Validate a network-DP scenario document (module docstring); errors name the TOML path."""
    reject_unknown_keys("", raw, TOP_KEYS, "at the top level of a network-DP scenario")
    name = plain_name("name", raw.get("name"))
    section = _table(raw[SECTION], SECTION)
    reject_unknown_keys(f"{SECTION}.", section, SECTION_KEYS, f"in [{SECTION}]")
    graphs = section.get("graphs")
    if not isinstance(graphs, list) or not graphs:
        raise ConfigError(f"{SECTION}.graphs must be a nonempty array of tables "
                          f"([[{SECTION}.graphs]]), got {graphs!r}", field=f"{SECTION}.graphs")
    defaults = {k: section[k] for k in CASE_KEYS if k in section}
    cases = tuple(_graph(f"{SECTION}.graphs[{i}]", g, defaults) for i, g in enumerate(graphs))
    labels = [c.label for c in cases]
    for i, label in enumerate(labels):
        if labels.index(label) != i:
            raise ConfigError(f"{SECTION}.graphs[{i}].label: {label!r} is used twice; labels must "
                              "be distinct", field=f"{SECTION}.graphs[{i}].label")
    out = _table(raw.get("output", {}), "output")
    reject_unknown_keys("output.", out, ("dir", "plots"), "in [output] of a network-DP scenario")
    plots = out.get("plots", True)
    if not isinstance(plots, bool):
        raise ConfigError(f"output.plots must be true or false, got {plots!r}", field="output.plots")
    return NetworkDpConfig(
        name=name, description=str(raw.get("description", "")),
        alpha=check_number(section.get("alpha", 2.0), f"{SECTION}.alpha", low=1.0, low_open=True),
        delta=check_number(section.get("delta", 1e-5), f"{SECTION}.delta", low=0.0, high=1.0,
                           low_open=True, high_open=True),
        sensitivity=check_number(section.get("sensitivity", 1.0), f"{SECTION}.sensitivity", low=0.0,
                                 low_open=True),
        graphs=cases, out_dir=_out_dir(out.get("dir")), plots=plots)


def _out_dir(value: Any) -> str | None:
    if value is not None and (not isinstance(value, str) or not value):
        raise ConfigError(f"output.dir must be a folder path, got {value!r}", field="output.dir")
    return value


def _table(value: Any, path: str) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise ConfigError(f"{path} must be a table, got {value!r}", field=path)
    return dict(value)


def _graph(path: str, raw: Any, defaults: Mapping[str, Any]) -> GraphCase:
    table = _table(raw, path)
    reject_unknown_keys(f"{path}.", table, GRAPH_KEYS, f"in [[{SECTION}.graphs]]")
    own = set(table)
    merged = {**defaults, **table}
    if "observer" in own and "target" in own:
        raise ConfigError(f"{path}.observer: give either target (one target, many observers) or observer "
                          "(one observer, every target), not both", field=f"{path}.observer")
    if "observer" in own or ("observer" in merged and "target" not in own):
        merged.pop("target", None)
    topology = check_choice(merged.get("topology"), f"{path}.topology", tuple(TOPOLOGIES))
    setting = check_choice(merged.get("setting", "dpgossip"), f"{path}.setting", SETTINGS)
    if setting == "mfdl" and topology != "erdos_renyi":
        raise ConfigError(f"{path}.setting: 'mfdl' builds MFDL's Erdos-Renyi graph; it needs "
                          f"topology 'erdos_renyi', got {topology!r}", field=f"{path}.setting")
    protocol = check_choice(merged.get("protocol", "gossip-average"), f"{path}.protocol",
                            network_dp_kinds())
    inputs = check_choice(merged.get("inputs", default_inputs(protocol)), f"{path}.inputs", INPUTS)
    if default_inputs(protocol) == "once" and inputs != "once":
        raise ConfigError(f"{path}.inputs: {protocol} takes its input once, got {inputs!r}; use "
                          "protocol 'gossip-noisy' for inputs every round", field=f"{path}.inputs")
    sigma_cor = check_number(merged.get("sigma_cor", 0.0), f"{path}.sigma_cor", low=0.0)
    if sigma_cor and not draws_edge_secrets(protocol):
        raise ConfigError(f"{path}.sigma_cor: only protocol 'gossip-decor' draws edge secrets, got "
                          f"sigma_cor = {sigma_cor:g} with protocol {protocol!r}", field=f"{path}.sigma_cor")
    return GraphCase(
        label=_label(path, merged.get("label", topology)), topology=topology,
        agents=check_int(merged.get("agents"), f"{path}.agents", 2),
        seed=check_int(merged.get("seed", 0), f"{path}.seed", 0),
        params=tuple(sorted(_table(merged.get("params", {}), f"{path}.params").items())),
        mixing=check_choice(merged.get("mixing", "metropolis"), f"{path}.mixing", tuple(MIXING_RULES)),
        setting=setting, protocol=protocol, inputs=inputs,
        sigma=check_number(merged.get("sigma", 1.0), f"{path}.sigma", low=0.0, low_open=True),
        sigma_cor=sigma_cor,
        rounds=_rounds(f"{path}.rounds", merged.get("rounds", MIXING_TIME)),
        target=_agent(f"{path}.target", merged.get("target", 0)) if "observer" not in merged else None,
        observer=_agent(f"{path}.observer", merged["observer"]) if "observer" in merged else None,
        observers=_observers(f"{path}.observers", merged.get("observers", "all")),
        muffliato_rounds=_muffliato_rounds(f"{path}.muffliato_rounds", merged, protocol))


def _muffliato_rounds(path: str, merged: Mapping[str, Any], protocol: str) -> str:
    """``muffliato_rounds``: one of :data:`MUFFLIATO_ROUNDS`, other than the default only where
    Muffliato's per-message sum applies (``gossip-average``)."""
    value = check_choice(merged.get("muffliato_rounds", "messages"), path, MUFFLIATO_ROUNDS)
    if value != "messages" and protocol != "gossip-average":
        raise ConfigError(f"{path}: Muffliato's per-message sum applies to protocol 'gossip-average' "
                          f"only, got muffliato_rounds = {value!r} with protocol {protocol!r}",
                          field=path)
    return value


def _label(path: str, value: Any) -> str:
    if not isinstance(value, str) or not value or not all(c.isalnum() or c in "-_." for c in value):
        raise ConfigError(f"{path}.label must be a nonempty name of letters, digits, '-', '_' and "
                          f"'.', got {value!r}", field=f"{path}.label")
    return value


def _rounds(path: str, value: Any) -> int | str:
    if value == MIXING_TIME:
        return MIXING_TIME
    if isinstance(value, str):
        raise ConfigError(f"{path} must be an integer >= 1 or {MIXING_TIME!r}, got {value!r}",
                          field=path)
    return check_int(value, path, 1)


def _agent(path: str, value: Any) -> int:
    return check_int(value, path, 0)


def _observers(path: str, value: Any) -> ObserverChoice:
    if value == "all":
        return ObserverChoice(kind="all")
    if isinstance(value, list):
        agents = tuple(_agent(f"{path}[{i}]", v) for i, v in enumerate(value))
        if not agents:
            raise ConfigError(f"{path} must name at least one agent, got []", field=path)
        return ObserverChoice(kind="list", agents=tuple(sorted(set(agents))))
    if not isinstance(value, Mapping):
        raise ConfigError(f"{path} must be 'all', a list of agents or a table {{ per_distance = k, "
                          f"distances = d, seed = s }}, got {value!r}", field=path)
    reject_unknown_keys(f"{path}.", value, ("per_distance", "distances", "seed"), f"in {path}")
    distances = value.get("distances")
    return ObserverChoice(
        kind="sample", per_distance=check_int(value.get("per_distance", 1), f"{path}.per_distance", 1),
        distances=None if distances is None else check_int(distances, f"{path}.distances", 1),
        seed=check_int(value.get("seed", 0), f"{path}.seed", 0))

