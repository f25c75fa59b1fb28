"""Typed settings of one scenario point: :class:`PointSpec` and its parts.

Validation (:mod:`~dpgossip.scenario.schema`) resolves a scenario file into a configuration whose sweep
axes are lists; expansion (:mod:`~dpgossip.scenario.expand`) gives each point a fully scalar one. The
dictionary stays the stored, hashed form of a point (``config.resolved.json``, the point keys of the
results store); :meth:`PointSpec.from_config` turns it into the frozen specs below (a cheap
conversion of a few dictionary lookups), and everything that computes a point
(:mod:`~dpgossip.scenario.problem`, :mod:`~dpgossip.scenario.runner`,
:mod:`~dpgossip.scenario.privacy_section`) reads these, not the dictionary. The section hooks receive
the configuration (a calibration replaces its noise) and convert it where they need it. Defaults are
filled by validation; a spec holds what the point runs with.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from dpgossip.protocols.ddppm.audit import EPSILON_CAP
from dpgossip.protocols.ddppm.params import NoiseSchedule
from dpgossip.protocols.registry import kind
from dpgossip.scenario.noise import noise_fields, noise_schedule

DEFAULT_KIND = "ddppm"
"""``protocol.kind`` when a scenario does not set it (D-DP-PM, the package's first protocol)."""

__all__ = [
    "DEFAULT_KIND", "DataSpec", "NetworkSpec", "ProtocolSpec", "BaselineSpec", "CalibrateSpec", "PrivacySpec",
    "PointSpec", "kind_settings", "DATA_FIELDS", "NETWORK_FIELDS", "PROTOCOL_FIELDS", "noise_fields",
    "noise_schedule",
]

# The library names its parameters in its errors; a scenario user reads the TOML path of the same
# setting (dpgossip.errors.renamed_fields).
NETWORK_FIELDS: dict[str, str] = {k: f"network.{k}" for k in ("topology", "agents", "mixing", "params")}
"""Parameters of :func:`dpgossip.topology.make_network` -> their ``[network]`` paths."""

DATA_FIELDS: dict[str, str] = {
    **{k: f"data.{k}" for k in ("source", "partition", "sizes", "min_rows", "center", "standardize",
                                "scale", "synthetic")},
    "agents": "network.agents",
}
"""Parameters of :func:`dpgossip.data.load_dataset` -> their ``[data]`` (and ``[network]``) paths."""

PROTOCOL_FIELDS: dict[str, str] = {k: f"protocol.{k}" for k in ("iterations", "consensus_steps",
                                                                 "rank", "alpha", "sigma_q", "noise")}
"""Parameters of :func:`dpgossip.protocols.ddppm.params.resolve_params` -> their ``[protocol]`` paths."""


def _frozen(value: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    return None if value is None else MappingProxyType(dict(value))


@dataclass(frozen=True, slots=True, kw_only=True)
class DataSpec:
    """``[data]``: the dataset and how its rows are split (:func:`dpgossip.data.load_dataset`);
    ``source`` is ``None`` when the point's kind draws its own data (``ProtocolKind.own_data``)."""

    source: str | None
    partition: str
    sizes: tuple[int, ...] | None
    min_rows: int
    center: bool
    standardize: bool
    scale: str
    synthetic: Mapping[str, Any] | None

    @classmethod
    def from_config(cls, table: Mapping[str, Any]) -> DataSpec:
        """From the validated ``[data]`` table; ``standardize`` unset means true except for synthetic
        data."""
        std = table["standardize"]
        return cls(source=table["source"], partition=table["partition"],
                   sizes=None if table.get("sizes") is None else tuple(table["sizes"]),
                   min_rows=int(table["min_rows"]), center=bool(table["center"]),
                   standardize=table["source"] != "synthetic" if std is None else bool(std),
                   scale=table["scale"], synthetic=_frozen(table.get("synthetic")))


@dataclass(frozen=True, slots=True, kw_only=True)
class NetworkSpec:
    """``[network]``: the graph and its mixing rule (:func:`dpgossip.topology.make_network`)."""

    topology: str
    agents: int | None
    mixing: str | None
    params: Mapping[str, Any] | None
    schedule: Mapping[str, Any] | None = None
    """``network.schedule``: the table of a sampled schedule of consensus rounds, or ``None``."""

    @classmethod
    def from_config(cls, table: Mapping[str, Any]) -> NetworkSpec:
        """From the validated ``[network]`` table."""
        return cls(topology=table["topology"], agents=table.get("agents"),
                   mixing=table.get("mixing"), params=_frozen(table.get("params")),
                   schedule=_frozen(table.get("schedule")))


@dataclass(frozen=True, slots=True, kw_only=True)
class ProtocolSpec:
    """``[protocol]``: the protocol's kind and D-DP-PM's settings
    (:func:`dpgossip.protocols.ddppm.params.resolve_params`; the ``ppm*`` kinds read ``iterations``,
    ``rank`` and ``consensus_steps`` and the ``[ppm]`` section)."""

    iterations: int
    consensus_steps: int
    rank: int
    alpha: float | str | Mapping[str, float]
    sigma_q: float | None
    noise: NoiseSchedule
    kind: str = DEFAULT_KIND

    @classmethod
    def from_config(cls, table: Mapping[str, Any]) -> ProtocolSpec:
        """From the validated ``[protocol]`` table (no ``noise`` table: the geometric schedule,
        scale 1)."""
        alpha = table["alpha"]
        return cls(iterations=int(table["iterations"]),
                   consensus_steps=int(table["consensus_steps"]), rank=int(table["rank"]),
                   alpha=_frozen(alpha) if isinstance(alpha, Mapping) else alpha,
                   sigma_q=table.get("sigma_q"),
                   noise=noise_schedule(table.get("noise")), kind=table.get("kind", DEFAULT_KIND))


@dataclass(frozen=True, slots=True, kw_only=True)
class BaselineSpec:
    """``[baseline]``: the LDP baseline of Campbell et al., Section IV-A
    (:func:`dpgossip.protocols.ldp.baseline.run_ldp`)."""

    ldp: bool
    epsilon: float | None
    delta: float | None
    calibration: str

    @classmethod
    def from_config(cls, table: Mapping[str, Any] | None) -> BaselineSpec:
        """From the validated ``[baseline]`` table (absent: no baseline)."""
        table = table or {}
        return cls(ldp=bool(table.get("ldp", False)), epsilon=table.get("epsilon"),
                   delta=table.get("delta"), calibration=table.get("calibration", "analytic"))


@dataclass(frozen=True, slots=True, kw_only=True)
class CalibrateSpec:
    """``privacy.calibrate``: the noise calibration of a point (``delta`` already defaulted to
    ``privacy.delta``)."""

    epsilon: float
    delta: float
    family: str
    values: tuple[float, ...] | None
    method: str
    rel_tol: float
    infeasible: str


@dataclass(frozen=True, slots=True, kw_only=True)
class PrivacySpec:
    """``[privacy]``: the per-point audit and calibration (:mod:`dpgossip.privacy`)."""

    view: str
    neighbours: str
    delta: float
    epsilon: tuple[float, ...]
    search: str | int
    methods: tuple[str, ...]
    audit: bool
    rank_by: str
    calibrate: CalibrateSpec | None
    epsilon_cap: float = EPSILON_CAP
    delta_upper: bool = False

    @classmethod
    def from_config(cls, table: Mapping[str, Any]) -> PrivacySpec:
        """From the validated ``[privacy]`` table of one point (scalar ``delta``)."""
        cal = table.get("calibrate")
        calibrate = None
        if cal:
            calibrate = CalibrateSpec(
                epsilon=float(cal["epsilon"]),
                delta=float(cal["delta"] if cal["delta"] is not None else table["delta"]),
                family=cal["family"],
                values=None if cal.get("values") is None else tuple(cal["values"]),
                method=cal["method"],
                rel_tol=float(cal["rel_tol"]), infeasible=cal.get("infeasible", "error"))
        return cls(view=table["view"], neighbours=table["neighbours"], delta=float(table["delta"]),
                   epsilon=tuple(float(e) for e in table["epsilon"]), search=table["search"],
                   methods=tuple(table["methods"]),
                   audit=bool(table["audit"]), rank_by=table.get("rank_by", "epsilon"),
                   calibrate=calibrate, epsilon_cap=float(table.get("epsilon_cap", EPSILON_CAP)),
                   delta_upper=bool(table.get("delta_upper", False)))


def kind_settings(config: Mapping[str, Any]) -> dict[str, Any]:
    """The point's own kind section (validated, defaults filled; every default when the scenario
    does not give it), or ``{}`` for a kind without one
    (:attr:`dpgossip.protocols.registry.ProtocolKind.fields`)."""
    spec = kind(config["protocol"]["kind"])
    if spec.section is None or spec.fields is None:
        return {}
    given = config.get(spec.section)
    return dict(given) if given else {k: f.default for k, f in spec.fields.items()}


@dataclass(frozen=True, slots=True, kw_only=True)
class PointSpec:
    """Everything one point runs with.

    Attributes
    ----------
    seed, repeats, backend
        Root seed, repeats, ``"matrix"`` or ``"engine"``.
    data, network, protocol, baseline
        The sections' specs.
    privacy
        ``None`` when the scenario has no ``[privacy]``.
    settings
        The point's kind's own section (e.g. ``[ppm]``), validated and scalar; empty for a kind without
        one (:func:`kind_settings`).
    engine
        The ``[engine]`` table (network conditions; :meth:`dpgossip.engine.NetworkConditions.from_mapping`
        checks it), empty when absent.
    """

    seed: int
    repeats: int
    backend: str
    data: DataSpec
    network: NetworkSpec
    protocol: ProtocolSpec
    baseline: BaselineSpec
    privacy: PrivacySpec | None
    engine: Mapping[str, Any]
    settings: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> PointSpec:
        """The spec of one point's validated, fully scalar configuration."""
        priv = config.get("privacy")
        return cls(seed=int(config["seed"]), repeats=int(config["repeats"]),
                   backend=config["backend"], data=DataSpec.from_config(config["data"]),
                   network=NetworkSpec.from_config(config["network"]),
                   protocol=ProtocolSpec.from_config(config["protocol"]),
                   baseline=BaselineSpec.from_config(config.get("baseline")),
                   privacy=PrivacySpec.from_config(priv) if priv else None,
                   engine=MappingProxyType(dict(config.get("engine") or {})),
                   settings=MappingProxyType(kind_settings(config)))
