"""The kinds of the private ALS home: ``dpals``, ``dpals-federated``, ``dpals-gossip`` (docs/als.md).

Ratings. :class:`~dpgossip.protocols.registry.PointInputs` carries a :class:`PartitionedData` (a dense
matrix, rows in the unit ball) and no mask or held-out split, which matrix completion needs. The kinds
therefore draw their ratings from their own section ``[als]`` (:data:`FIELDS`: the synthetic generator's
settings and seed), with one user per agent of the point's network (``network.m`` users); the point's
``data`` is not read. :func:`ratings_data` gives the ratings as a ``PartitionedData`` (one row per user,
training ratings over their largest row norm, zero where unobserved) for layers that want one.

Point settings: ``protocol.rank`` is the model rank ``r``, ``protocol.iterations`` the number of steps
``T``, ``protocol.consensus_steps`` the gossip rounds ``c`` per step (``dpals-gossip``).

Columns of a run: ``guaranteed_epsilon`` (the largest guarantee over the kind's views; each view's from
its worst user, :mod:`dpgossip.protocols.als.audit`), ``audited_epsilon`` (the largest exact epsilon over
the views, of the run's worst user), ``audit_exceeds_guarantee``, ``theorem_epsilon`` (Theorem 1's target:
the central level, which covers a view only when ``covered_<view>``), ``rmse``, and per view
``guaranteed_epsilon_<view>``, ``audited_epsilon_<view>``, ``covered_<view>``; ``guarantee_proven`` is
false for ``dpals-gossip`` with shared noise and ``T > 1``, whose per-view numbers are the mean-shift
model's values (docs/als.md, Audit).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from dpgossip.data.partition import PartitionedData
from dpgossip.engine.conditions import NetworkConditions
from dpgossip.engine.record import EngineRecord
from dpgossip.errors import ConfigError
from dpgossip.protocols.als.audit import audit_views
from dpgossip.protocols.als.central import AlsResult, run_als, run_dpals
from dpgossip.protocols.als.gossip import run_dpals_gossip
from dpgossip.protocols.als.nodes import (
    AlsEngineResult,
    run_dpals_gossip_engine,
    transcript_residual,
)
from dpgossip.protocols.als.params import GOSSIP_NOISE, AlsParams, DpAlsParams, GossipParams
from dpgossip.protocols.als.ratings import Ratings, synthetic_ratings
from dpgossip.protocols.interface import ProtocolRun
from dpgossip.protocols.registry import KindPoint, PointInputs, ProtocolKind, register
from dpgossip.resources import FLOAT, Need, check_needs
from dpgossip.settings import Field
from dpgossip.topology import make_network
from dpgossip.topology.network import Network
from dpgossip.topology.schedules import MixingSchedule

__all__ = ["DpAls", "DpAlsFederated", "DpAlsGossip", "FIELDS", "SECTION", "ALS_KINDS", "point_parts",
           "ratings_data", "settings_ratings", "own_data", "default_settings", "example"]

SECTION = "als"
ALS_KINDS: tuple[str, ...] = ("dpals", "dpals-federated", "dpals-gossip")

FIELDS: dict[str, Field] = {
    "epsilon": Field(kind=float, default=5.0, low=0, low_open=True, doc="target epsilon (Theorem 1)"),
    "delta": Field(kind=float, default=1e-5, low=0, low_open=True, high=1, high_open=True,
                   doc="target delta"),
    "k": Field(kind=int, default=10, low=1, doc="at most k items per user and step"),
    "reg": Field(kind=float, default=1.0, low=0, low_open=True, doc="ridge lambda of both solves"),
    "clip_user": Field(kind=float, default=1.0, low=0, low_open=True, doc="Gamma_u: user factor norm"),
    "clip_rating": Field(kind=float, default=3.0, low=0, low_open=True, doc="Gamma_M: |rating|"),
    "psd": Field(kind=bool, default=True, doc="project each noisy Gram matrix on the PSD cone"),
    "noise": Field(kind=str, default="shared", choices=GOSSIP_NOISE, read_by=("dpals-gossip",),
                   doc="dpals-gossip: shared zero-sum edge noise, or each agent's own central-level noise"),
    "edge_noise": Field(kind=float, default=1.0, low=0, read_by=("dpals-gossip",),
                        doc="dpals-gossip, shared: edge draw std over z"),
    "items": Field(kind=int, default=30, low=1, doc="synthetic ratings: number of items m"),
    "true_rank": Field(kind=int, default=2, low=1, doc="synthetic ratings: rank of the true matrix"),
    "zipf": Field(kind=float, default=0.8, low=0, doc="synthetic ratings: Zipf exponent of item popularity"),
    "activity_tail": Field(kind=float, default=1.5, low=0, low_open=True,
                           doc="synthetic ratings: Pareto index of user activity"),
    "min_count": Field(kind=int, default=8, low=1, doc="synthetic ratings: fewest ratings per user"),
    "rating_noise": Field(kind=float, default=0.1, low=0, doc="synthetic ratings: observation noise"),
    "test_fraction": Field(kind=float, default=0.2, low=0, high=1, high_open=True,
                           doc="synthetic ratings: held-out fraction per user"),
    "data_seed": Field(kind=int, default=0, low=0, doc="synthetic ratings: generator seed"),
}


def default_settings(**overrides: Any) -> dict[str, Any]:
    """The section's defaults with ``overrides`` (unknown keys raise ``ConfigError``)."""
    unknown = sorted(set(overrides) - set(FIELDS))
    if unknown:
        raise ConfigError(f"[{SECTION}] has no key {unknown[0]!r}; keys: {', '.join(FIELDS)}",
                          field=f"{SECTION}.{unknown[0]}")
    return {**{k: f.default for k, f in FIELDS.items()}, **overrides}


def _ratings(inputs: PointInputs) -> Ratings:
    return settings_ratings(inputs.network, inputs.settings)


def settings_ratings(network: Network, settings: Mapping[str, Any]) -> Ratings:
    """The synthetic ratings ``[als]`` describes, one user per agent of ``network``.

    Raises
    ------
    ConfigError
        ``als.test_fraction`` holds out no rating (every RMSE, which the kinds report, would be NaN).
    """
    s = {**default_settings(), **settings}
    ratings = synthetic_ratings(network.m, s["items"], s["true_rank"], s["data_seed"], zipf=s["zipf"],
                                activity_tail=s["activity_tail"], min_count=s["min_count"],
                                noise=s["rating_noise"], test_fraction=s["test_fraction"])
    if not ratings.test.any():
        raise ConfigError(f"{SECTION}.test_fraction = {s['test_fraction']!r} holds out no rating (a "
                          "user holds out test_fraction of its ratings, rounded down), so the held-out "
                          "RMSE the kinds report would be NaN; allowed: a fraction in (0, 1) that holds "
                          f"out a rating, with min_count = {s['min_count']} at least "
                          f"{1 / s['min_count']:.3g}", field=f"{SECTION}.test_fraction")
    return ratings


def point_parts(inputs: PointInputs) -> tuple[Ratings, DpAlsParams, GossipParams]:
    """The point's ratings, private ALS parameters and gossip parameters (module docstring)."""
    s = {**default_settings(), **inputs.settings}
    params = DpAlsParams(rank=inputs.rank, steps=inputs.iterations, reg=s["reg"], epsilon=s["epsilon"],
                         delta=s["delta"], k=s["k"], clip_user=s["clip_user"], clip_rating=s["clip_rating"],
                         psd=s["psd"])
    return _ratings(inputs), params, GossipParams(rounds=inputs.consensus_steps, noise=s["noise"],
                                                  edge_noise=s["edge_noise"])


def ratings_data(ratings: Ratings) -> PartitionedData:
    """One row per user: training ratings over their largest row norm, zero where unobserved."""
    X = np.where(ratings.train, ratings.values, 0.0)
    scale = float(np.linalg.norm(X, axis=1).max()) or 1.0
    return PartitionedData(X=X / scale, sizes=(1,) * ratings.users, name=ratings.name)


def own_data(network: Network, settings: Mapping[str, Any]) -> PartitionedData:
    """The point's data for the scenario layer: :func:`ratings_data` of :func:`settings_ratings`."""
    return ratings_data(settings_ratings(network, settings))


@contextmanager
def _numerics(params: AlsParams) -> Iterator[None]:
    """Run ALS with its floating-point failures named by the setting that causes them: a singular
    ridge solve (``reg`` too small next to the Gram matrices) and overflow (clipping bounds so large
    that the statistics and their noise leave the floating-point range)."""
    try:
        with np.errstate(over="ignore", invalid="ignore"):
            yield
    except np.linalg.LinAlgError:
        raise ConfigError(f"{SECTION}.reg = {params.reg!r}: a ridge solve of ALS, (V_i^T V_i + reg I) "
                          "or (X_j + reg I), is singular in floating point (reg is too small next to "
                          "the Gram matrices); allowed: a larger reg, e.g. 1e-6 times clip_user^2 or "
                          "more", field=f"{SECTION}.reg") from None


def _finite(result: AlsResult) -> AlsResult:
    """``result`` when its item factors are finite, else the error naming the clipping bounds."""
    if np.isfinite(result.items).all():
        return result
    p = result.params
    bounds = (f"{SECTION}.clip_rating = {p.clip_rating!r} and {SECTION}.clip_user = {p.clip_user!r}"
              if isinstance(p, DpAlsParams) else f"{SECTION}.reg = {p.reg!r}")
    scale = (f" (noise std z x clip_rating x clip_user = {p.multiplier * p.clip_rating * p.clip_user:.3g})"
             if isinstance(p, DpAlsParams) else "")
    raise ConfigError(f"{bounds}: the item factors overflow to inf or NaN in floating point, the "
                      f"statistics and their noise scale with these bounds{scale}; allowed: bounds of "
                      "the real size of the ratings and factors (e.g. clip_rating = 3 for ratings in "
                      "[-3, 3], clip_user = 1)", field=f"{SECTION}.clip_rating")


def _protocol_run(kind: str, res: AlsResult) -> ProtocolRun:
    if res.items.ndim == 4:                     # gossip: every agent's own item factors
        return ProtocolRun(kind=kind, side="ratings", trajectory=res.items[:, 0], agent_finals=res.items[-1],
                           result=res)
    return ProtocolRun(kind=kind, side="ratings", trajectory=res.items, agent_finals=None, result=res)


@dataclass(frozen=True, slots=True, eq=False)
class DpAls:
    """``dpals`` on the matrix backend; ``run`` ignores ``data`` (module docstring)."""

    ratings: Ratings
    params: DpAlsParams
    gossip: GossipParams
    kind: ClassVar[str] = "dpals"
    side: ClassVar[str] = "ratings"

    def run(self, data: PartitionedData, network: Network, seed: int | np.random.SeedSequence) -> ProtocolRun:
        """One run in the common view."""
        with _numerics(self.params):
            res = run_dpals(self.ratings, self.params, seed, form="central")
        return _protocol_run(self.kind, _finite(res))


@dataclass(frozen=True, slots=True, eq=False)
class DpAlsFederated(DpAls):
    """``dpals-federated`` on the matrix backend."""

    kind: ClassVar[str] = "dpals-federated"

    def run(self, data: PartitionedData, network: Network, seed: int | np.random.SeedSequence) -> ProtocolRun:
        """One run in the common view."""
        with _numerics(self.params):
            res = run_dpals(self.ratings, self.params, seed, form="federated")
        return _protocol_run(self.kind, _finite(res))


@dataclass(frozen=True, slots=True, eq=False)
class DpAlsGossip(DpAls):
    """``dpals-gossip`` on the matrix backend (users are the agents of ``network``); ``schedule``:
    time-varying rounds (``None``: ``W`` every round)."""

    schedule: MixingSchedule | None = None
    kind: ClassVar[str] = "dpals-gossip"

    def run(self, data: PartitionedData, network: Network, seed: int | np.random.SeedSequence) -> ProtocolRun:
        """One run in the common view."""
        with _numerics(self.params):
            res = run_dpals_gossip(self.ratings, network, self.params, self.gossip, seed,
                                   schedule=self.schedule)
        return _protocol_run(self.kind, _finite(res))


_PROTOCOLS = {"dpals": DpAls, "dpals-federated": DpAlsFederated, "dpals-gossip": DpAlsGossip}


@dataclass(frozen=True, slots=True, eq=False)
class _AlsEngine:
    ratings: Ratings
    network: Network
    params: DpAlsParams
    gossip: GossipParams
    conditions: NetworkConditions | None
    schedule: MixingSchedule | None = None

    def run_engine(self, data: PartitionedData, network: Network,
                   seed: int | np.random.SeedSequence) -> EngineRecord:
        """One engine run of dpals-gossip."""
        with _numerics(self.params):
            record = run_dpals_gossip_engine(self.ratings, network, self.params, self.gossip, seed,
                                             conditions=self.conditions, schedule=self.schedule)
        if record.result is not None:
            _finite(record.result)
        return record

    def protocol_run(self, record: EngineRecord, data: PartitionedData) -> ProtocolRun:
        """The engine run in the common view."""
        if record.result is None:
            raise ConfigError(f"the engine run stopped ({record.outcome.reason}): no result", field="engine")
        return _protocol_run("dpals-gossip", record.result)


def _columns(network: Network, ratings: Ratings) -> Any:
    """The kind's result columns; ``rmse_nonprivate`` is non-private ALS (same ratings, rank, ridge and
    number of steps, initial items from ``SeedSequence(repeat)``) as the reference."""
    def columns(result: AlsResult, repeat: int) -> Mapping[str, Any]:
        audits = audit_views(result, network)
        p = result.params
        with _numerics(p):
            plain = run_als(ratings, AlsParams(rank=p.rank, steps=p.steps, reg=p.reg), repeat)
        row: dict[str, Any] = {"rmse": result.rmse, "rmse_nonprivate": plain.rmse,
                               "theorem_epsilon": result.params.epsilon,
                               "sigma": result.params.sigma, "guarantee_delta": result.params.delta}
        for a in audits:
            row |= {f"guaranteed_epsilon_{a.view}": a.guarantee.epsilon,
                    f"audited_epsilon_{a.view}": a.audited_epsilon, f"covered_{a.view}": a.covered_by_theorem}
        row["guaranteed_epsilon"] = max(a.guarantee.epsilon for a in audits)
        row["audited_epsilon"] = max(a.audited_epsilon for a in audits)
        row["audit_exceeds_guarantee"] = any(a.audited_epsilon > a.guarantee.epsilon for a in audits)
        shared = result.kind == "dpals-gossip" and result.extra["gossip"].noise == "shared"
        row["guarantee_proven"] = not (shared and result.params.steps > 1)   # docs/als.md, Audit
        if result.kind == "dpals-gossip":
            row["gossip_noise"] = result.extra["gossip"].noise
        return row
    return columns


def _view_residual(network: Network, rounds: int) -> Any:
    def residual(record: EngineRecord, data: PartitionedData) -> float:
        if not isinstance(record, AlsEngineResult) or record.result is None:
            return float("nan")
        return transcript_residual(record, record.result.released, network, rounds)
    return residual


def _builder(name: str) -> Any:
    def build(inputs: PointInputs) -> KindPoint:
        ratings, params, gossip = point_parts(inputs)
        if params.rank > ratings.items:
            raise ConfigError(f"protocol.rank must be <= [als] items = {ratings.items}, got {params.rank}",
                              field="protocol.rank")
        if name != "dpals-gossip":
            protocol = _PROTOCOLS[name](ratings, params, gossip)
            return KindPoint(protocol=protocol, columns=_columns(inputs.network, ratings))
        protocol = DpAlsGossip(ratings, params, gossip, inputs.schedule)
        return KindPoint(protocol=protocol, columns=_columns(inputs.network, ratings),
                         engine=lambda cond: _AlsEngine(ratings, inputs.network, params, gossip, cond,
                                                        inputs.schedule),
                         view_residual=_view_residual(inputs.network, gossip.rounds))
    return build


def example() -> PointInputs:
    """Eight users on a ring, six items, rank 2, two steps, three rounds."""
    net = make_network("ring", agents=8)
    inputs = PointInputs(data=PartitionedData(X=np.zeros((8, 1)), sizes=(1,) * 8), network=net, rank=2,
                         iterations=2, consensus_steps=3,
                         settings=default_settings(items=6, min_count=4, k=4, epsilon=10.0))
    ratings, _, _ = point_parts(inputs)
    return PointInputs(data=ratings_data(ratings), network=net, rank=2, iterations=2, consensus_steps=3,
                       settings=inputs.settings)


def _axis(value: Any) -> list[Any]:
    """The values a setting takes over the sweep (a list is an axis)."""
    return value if isinstance(value, list) else [value]


def _check_ratings(config: Mapping[str, Any]) -> None:
    """``als.true_rank`` and ``als.min_count`` above ``als.items`` are refused naming them (a rank
    above the items ran with a true matrix of lower rank than it said), and ratings that do not fit in
    memory are refused before they are drawn (``als.items = 10**9`` ran out of memory after minutes)."""
    als = config[SECTION]
    items_ = [i for i in _axis(als["items"]) if isinstance(i, int)]
    for items in items_:
        for key, what in (("true_rank", "the rank of a ratings matrix of"), ("min_count",
                                                                             "a user rates at most")):
            for value in _axis(als[key]):
                if isinstance(value, int) and value > items:
                    raise ConfigError(f"{SECTION}.{key} = {value} is more than {SECTION}.items = {items} "
                                      f"({what} {items} items); allowed: 1..{items}",
                                      field=f"{SECTION}.{key}")
    agents = [a for a in _axis((config.get("network") or {}).get("agents")) if isinstance(a, int)]
    if items_ and agents:
        users, items = max(agents), max(items_)
        check_needs([Need(f"{SECTION}.items = {items} with network.agents = {users} users draws "
                          f"dense {users} x {items} rating arrays", users * items * (4 * FLOAT + 2))],
                    advice="use fewer items or agents", field=f"{SECTION}.items")


def check(config: Mapping[str, Any]) -> None:
    """``als.edge_noise`` away from its default is read only by a dpals-gossip point with
    ``als.noise = "shared"``: refused when the scenario has none (``[sweep] zip`` of
    ``protocol.kind`` and ``als.noise`` pairs them point by point). The sizes of the synthetic ratings
    are checked too (:func:`_check_ratings`)."""
    als = config.get(SECTION)
    if als:
        _check_ratings(config)
    if not als or all(e == FIELDS["edge_noise"].default for e in _axis(als["edge_noise"])):
        return
    kinds_, noises = _axis(config["protocol"]["kind"]), _axis(als["noise"])
    zipped = any({"protocol.kind", f"{SECTION}.noise"} <= set(g)
                 for g in (config.get("sweep") or {}).get("zip", []))
    pairs = zip(kinds_, noises, strict=False) if zipped else [(k, n) for k in kinds_ for n in noises]
    if "dpals-gossip" in kinds_ and not any(k == "dpals-gossip" and n == "shared" for k, n in pairs):
        raise ConfigError(f"{SECTION}.edge_noise = {als['edge_noise']!r} is not read: dpals-gossip reads "
                          f"it with {SECTION}.noise = 'shared' only, and its every point has "
                          f"{SECTION}.noise = 'own'; remove it", field=f"{SECTION}.edge_noise")


_COMMON = dict(family="als",
               paper="Chien et al., Private Alternating Least Squares (ICML 2021), Algorithm 1 and "
                     "Theorem 1",
               side="ratings",
               section=SECTION, fields=FIELDS, example=example, reads_data=False, own_data=own_data,
               check=check,
               metric=("rmse", "held-out RMSE of the ratings"),
               section_doc="private ALS: privacy target, sampling, clipping, gossip noise, synthetic ratings")

register(ProtocolKind(name="dpals", estimates="item factors of a rating matrix (joint DP, trusted server)",
                      backends=("matrix",), views=("server",), build=_builder("dpals"),
                      schedule_refusal="it runs no gossip rounds (a trusted server)",
                      guarantee="Theorem 1: (eps, delta)-joint DP of the released item factors", **_COMMON))
register(ProtocolKind(name="dpals-federated",
                      estimates="item factors of a rating matrix (joint DP, secure aggregation)",
                      backends=("matrix",), views=("server", "coalition"), build=_builder("dpals-federated"),
                      schedule_refusal="it runs no gossip rounds (secure aggregation to a server)",
                      guarantee="Theorem 1 for the server; the coalition view audited", **_COMMON))
register(ProtocolKind(name="dpals-gossip",
                      estimates="item factors of a rating matrix (joint DP, over gossip)",
                      backends=("matrix", "engine"), views=("neighbour", "coalition", "eavesdropper"),
                      build=_builder("dpals-gossip"),
                      guarantee="per view: Theorem 1's form at the view's worst noise (shared, T > 1: model)",
                      schedule_rounds=lambda inputs: inputs.iterations * inputs.consensus_steps,
                      label_columns=("gossip_noise",), **_COMMON))
