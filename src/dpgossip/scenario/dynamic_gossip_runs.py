"""One mode of a dynamic-gossip scenario: its realised schedules, consensus-error curves and leakage.

A run of a mode is a realised :class:`~dpgossip.topology.schedules.MixingSchedule`:

* without ``conditions`` the schedule sampled by the mode's
  :class:`~dpgossip.topology.schedule_spec.ScheduleSpec` (``floor(horizon / period)`` rounds, or every
  pairwise tick in ``[0, horizon)``), which the engine reproduces exactly on ideal links
  (tests/engine/test_dynamic.py);
* with ``conditions`` the schedule the engine recorded (:func:`~dpgossip.engine.dynamic.run_pairwise`,
  :func:`~dpgossip.engine.dynamic.run_rounds`) under message drop, uniform delays and churn
  (:func:`~dpgossip.topology.churn.sample_presence`).

**Consensus error.** From the common initial values ``x^0`` (i.i.d. standard normal, one per agent),
the matrix backend applies the schedule step by step
(:func:`~dpgossip.topology.schedule_backend.schedule_trajectory`; it equals the engine's values on the
recorded schedule).  After step ``k`` the error is ``||x^k - avg(x^0) 1||_2`` and the disagreement
``||x^k - avg(x^k) 1||_2`` (they differ once lost replies move the mean), where ``x^k`` is every
agent's estimate of the average (:func:`estimates`): its value, or for a push-sum mode
(``sampler = "push-sum"``, a column-stochastic schedule) the ratio ``s_i^k / w_i^k`` of the pair
``(s, w)`` started from ``(x^0, 1)``; a push-sum message lost under ``conditions`` loses mass, and the
ratio's bias that follows is reported as it is.  Step ``k`` ends at its time (a pairwise exchange) or
at ``(t + 1) period`` (round ``t``), and its delivered messages are those of the release model
(:func:`~dpgossip.topology.schedule_backend.schedule_messages`: a round's ``W_t[i, j] != 0``,
``i != j``, and its late messages; an exchange's request, and its reply when the initiator received
it).  A curve at time ``tau`` (at ``M`` messages) takes the values after the last step that ended by
``tau`` (whose cumulative count is at most ``M``).

**Leakage.** Noisy gossip averaging with noise once, ``y^0 = x + sigma z`` then the schedule
(``gossip-average``): each observer's view of the realised schedule
(:func:`~dpgossip.protocols.gossip.scheduled.observe_schedule`, every delivered message, late replies
included) is audited exactly, as :func:`~dpgossip.protocols.gossip.dynamic_release.view_leakage`
does: one whitening of the view (:func:`~dpgossip.privacy.linear_audit.whiten`) and
``mu_u^2 = Delta^2 ||c_u||^2`` for target ``u``'s whitened column
(:func:`~dpgossip.privacy.linear_audit.target_box`; ``inf`` outside the support of the noise), exact
for an observer who knows the schedule. Epsilons are computed later, from ``mu``, in bulk. A push-sum
message carries ``A_t[i, j] (s_j, w_j)``: its ``s`` part is ``A_t[i, j]`` times a linear map of
``y^0`` and its ``w`` part does not depend on the data, so the same view applies. The graph distance of
every audited pair is the undirected distance in ``[dynamic_gossip.graph]``, for every mode (a
push-sum mode's arcs may be fewer: on ``arcs = "cycle"`` a target's mass reaches its observer only
along the ring's direction, but the pairs are grouped by the same distances as the other modes').
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import networkx as nx
import numpy as np

from dpgossip.engine.dynamic import run_pairwise, run_rounds
from dpgossip.errors import ConfigError, renamed_fields
from dpgossip.privacy.linear_audit import LinearAuditSettings, target_box, whiten
from dpgossip.protocols.gossip.linear import LinearGossip
from dpgossip.protocols.gossip.schedule_mixture import averaging_steps, muffliato_schedule_charge
from dpgossip.protocols.gossip.scheduled import observe_schedule
from dpgossip.scenario.dynamic_gossip_config import DynamicGossipConfig, GraphSpec, Mode
from dpgossip.topology import make_network
from dpgossip.topology.churn import sample_presence
from dpgossip.topology.network import Network
from dpgossip.topology.schedule_backend import schedule_messages, schedule_trajectory
from dpgossip.topology.schedule_samplers import neighbour_probabilities
from dpgossip.topology.schedules import MixingSchedule

__all__ = ["Setting", "RunTrace", "build_setting", "mode_runs", "realise", "trace_run", "estimates",
           "deterministic", "rounds_of", "stream", "muffliato_charges"]


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class Setting:
    """What every mode shares: the network, the initial values, the observers and their distances."""

    network: Network
    x0: np.ndarray
    observers: tuple[int, ...]
    pairs: np.ndarray
    """``(n, 3)``: ``(observer, target, graph distance)`` of every audited pair, observer-major."""


def stream(seed: int, *key: int) -> np.random.SeedSequence:
    """The seed sequence of one use of the scenario's seed: ``(0,)`` the initial values,
    ``(1, mode, run)`` a run's sampled schedule, ``(2, mode, run)`` its churn, ``(3, mode, run)`` its
    engine (links, clocks and peer choices)."""
    return np.random.SeedSequence(seed, spawn_key=key)


def _network(graph: GraphSpec) -> Network:
    path = "dynamic_gossip.graph"
    with renamed_fields({k: f"{path}.{k}" for k in ("agents", "params", "topology", "mixing", "seed")}):
        return make_network(graph.topology, agents=graph.agents, mixing=graph.mixing, seed=graph.seed,
                            params=dict(graph.params))


def build_setting(config: DynamicGossipConfig) -> Setting:
    """Build the graph, draw ``x^0`` and list the audited pairs; check every mode against the graph.

    Raises
    ------
    ConfigError
        An observer outside the graph (``dynamic_gossip.observers[k]``), a mode that cannot run here
        (``dynamic_gossip.modes[i].schedule``).
    """
    network = _network(config.graph)
    m = network.m
    observers = tuple(range(m)) if config.observers == "all" else config.observers
    for k, v in enumerate(observers):
        if v >= m:
            raise ConfigError(f"dynamic_gossip.observers[{k}] must be an agent in 0..{m - 1}, got {v}",
                              field=f"dynamic_gossip.observers[{k}]")
    for i, mode in enumerate(config.modes):
        _check_mode(mode, i, network, config)
    pairs = []
    for v in observers:
        dist = nx.single_source_shortest_path_length(network.graph, v)
        pairs.extend((v, u, dist.get(u, -1)) for u in range(m) if u != v)
    x0 = np.random.default_rng(stream(config.seed, 0)).standard_normal(m)
    return Setting(network=network, x0=x0, observers=observers,
                   pairs=np.array(pairs, dtype=np.int64).reshape(-1, 3))


def _check_mode(mode: Mode, i: int, network: Network, config: DynamicGossipConfig) -> None:
    where = f"dynamic_gossip.modes[{i}].schedule"
    spec = mode.schedule
    if spec.horizon is not None:
        raise ConfigError(f"{where}.horizon: every mode runs until dynamic_gossip.horizon = "
                          f"{config.horizon:g}; leave the schedule's horizon out", field=f"{where}.horizon")
    if spec.schedule_kind == "rounds" and rounds_of(config, mode) < 1:
        raise ConfigError(f"dynamic_gossip.modes[{i}].period: a round of {mode.period:g} does not fit "
                          f"in the horizon {config.horizon:g}; allowed: period <= horizon",
                          field=f"dynamic_gossip.modes[{i}].period")
    if spec.sampler == "random-regular" and (spec.degree >= network.m or network.m * spec.degree % 2):
        raise ConfigError(f"{where}.degree must be < {network.m} agents with agents * degree even, got "
                          f"{spec.degree}", field=f"{where}.degree")
    if config.muffliato and (mode.conditions is not None or spec.sampler == "push-sum"):
        raise ConfigError(f"dynamic_gossip.modes[{i}]: Muffliato's charge (dynamic_gossip.muffliato = "
                          f"true) is for averaging schedules on ideal links, got sampler "
                          f"{spec.sampler!r}{' with conditions' if mode.conditions else ''}; allowed: "
                          "no conditions, not push-sum", field=f"dynamic_gossip.modes[{i}]")
    if spec.sampler == "push-sum":  # its arcs against the graph, before anything is written
        with renamed_fields({"arcs": f"{where}.arcs"}):
            spec.digraph(network)
    if spec.sampler == "files":  # read the matrices now: a bad file fails before anything is written
        with renamed_fields({"files": f"{where}.files", "matrices": f"{where}.files",
                             "stochastic": f"{where}.stochastic"}):
            spec.sample(network, 1)


def rounds_of(config: DynamicGossipConfig, mode: Mode) -> int:
    """Rounds of a rounds mode that end by the horizon: ``floor(horizon / period)``."""
    return int(math.floor(config.horizon / mode.period + 1e-9))


def deterministic(mode: Mode) -> bool:
    """Whether every run of the mode is the same (no random sampler or a fixed seed, ideal links):
    then one run stands for all."""
    return mode.conditions is None and (not mode.schedule.random or mode.schedule.seed is not None)


def realise(config: DynamicGossipConfig, setting: Setting, index: int, mode: Mode,
            run: int) -> MixingSchedule:
    """Run ``run`` of mode ``index``: the sampled schedule, or the engine's record under the mode's
    conditions (module docstring)."""
    net, spec, H = setting.network, mode.schedule, config.horizon
    seed = stream(config.seed, 1, index, run)
    if mode.conditions is None:
        if spec.schedule_kind == "pairwise":
            from dpgossip.topology.schedule_samplers import pairwise_gossip

            rng = spec.seed if spec.seed is not None else seed
            return pairwise_gossip(neighbour_probabilities(net.graph), rng, horizon=H, rate=spec.rate)
        return spec.sample(net, rounds_of(config, mode), seed)
    c = mode.conditions
    presence = None
    if c.online is not None:
        presence = sample_presence(net.m, H, c.online, c.offline, stream(config.seed, 2, index, run))
    engine_seed = stream(config.seed, 3, index, run)
    if spec.schedule_kind == "pairwise":
        return run_pairwise(net, neighbour_probabilities(net.graph), setting.x0, engine_seed, horizon=H,
                            rate=spec.rate, timeout=c.pairwise_timeout, conditions=c.engine_table(),
                            presence=presence).schedule
    sched = spec.sample(net, rounds_of(config, mode), seed)
    return run_rounds(sched, setting.x0, engine_seed, period=mode.period, conditions=c.engine_table(),
                      presence=presence).schedule


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class RunTrace:
    """One run: per step its end time, the cumulative delivered messages, and the error and
    disagreement after it (index 0: before any step); the ``mu`` of every audited pair."""

    ends: np.ndarray
    messages: np.ndarray
    error: np.ndarray
    disagreement: np.ndarray
    mu: np.ndarray
    charge: np.ndarray | None = None
    """Muffliato's per-message charge of every audited pair (Renyi at ``alpha``), when the scenario
    asks for it (:func:`muffliato_charges`)."""


def estimates(schedule: MixingSchedule, x0: np.ndarray) -> np.ndarray:
    """``(steps + 1, m)``: every agent's estimate of the average after each step (row 0: ``x^0``).

    An averaging schedule's estimate is the value, ``x^k = W_{k-1} ... W_0 x^0`` (or the pairwise
    updates). Push-sum's (``stochastic == "column"``) is the ratio ``s_i^k / w_i^k`` of
    ``(s^k, w^k) = A_{k-1} ... A_0 (x^0, 1)`` (Kempe et al. 2003): the values ``s`` alone do not reach
    the average. A realised push-sum round that lost a message lost mass from both ``s`` and ``w``, so
    the ratio may then tend to a biased value; it is reported as it is.
    """
    if schedule.kind == "rounds" and schedule.stochastic == "column":
        both = schedule_trajectory(schedule, np.column_stack([x0, np.ones_like(x0)]))
        return both[:, :, 0] / both[:, :, 1]
    return schedule_trajectory(schedule, x0)


def trace_run(schedule: MixingSchedule, setting: Setting, config: DynamicGossipConfig,
              period: float) -> RunTrace:
    """Curves and leakage of one realised schedule (module docstring)."""
    x0 = setting.x0
    traj = estimates(schedule, x0)
    error = np.linalg.norm(traj - x0.mean(), axis=1)
    disagreement = np.linalg.norm(traj - traj.mean(axis=1, keepdims=True), axis=1)
    if schedule.kind == "rounds":
        ends = period * np.arange(1, schedule.steps + 1, dtype=float)
    else:
        ends = np.asarray(schedule.times, dtype=float)
    msgs = schedule_messages(schedule)
    counts = np.bincount(msgs.steps, minlength=schedule.steps)
    settings = LinearAuditSettings(sensitivity=config.sensitivity, orders=(config.alpha,),
                                   delta=config.delta)
    mu = []
    for v in setting.observers:
        view = observe_schedule(schedule, config.sigma, v, messages=msgs)
        white = whiten(view.J, view.B, rank_rtol=settings.rank_rtol, range_rtol=settings.range_rtol)
        for u in setting.pairs[setting.pairs[:, 0] == v, 1].tolist():
            mu.append(math.sqrt(max(target_box(white, view.columns_of[u], settings).upper, 0.0)))
    charge = muffliato_charges(schedule, setting, config) if config.muffliato else None
    return RunTrace(ends=ends, messages=np.cumsum(counts[:schedule.steps]), error=error,
                    disagreement=disagreement, mu=np.array(mu), charge=charge)


def muffliato_charges(schedule: MixingSchedule, setting: Setting,
                      config: DynamicGossipConfig) -> np.ndarray:
    """Muffliato's per-message Renyi charge at ``alpha`` of every audited pair, in the order of
    ``setting.pairs``, along the schedule's averaging steps
    (:func:`~dpgossip.protocols.gossip.schedule_mixture.muffliato_schedule_charge`: every message
    charged as if its noise were fresh, so not a bound; docs/dynamic-leakage.md)."""
    steps = averaging_steps(schedule)
    spec = LinearGossip(rounds=len(steps), sigma=config.sigma)
    out = []
    for v in setting.observers:
        charge = muffliato_schedule_charge(steps, spec, v, order=config.alpha,
                                           sensitivity=config.sensitivity)
        out.extend(charge[setting.pairs[setting.pairs[:, 0] == v, 1]].tolist())
    return np.array(out)


def mode_runs(config: DynamicGossipConfig, setting: Setting, index: int, mode: Mode,
              on_run: Callable[[int, int], None] | None = None) -> list[RunTrace]:
    """Every run of a mode (one when :func:`deterministic`, else ``config.samples``); ``on_run(done,
    runs)`` hears of each finished run (progress only)."""
    runs = 1 if deterministic(mode) else config.samples
    traces = []
    for r in range(runs):
        traces.append(trace_run(realise(config, setting, index, mode, r), setting, config, mode.period))
        if on_run is not None:
            on_run(r + 1, runs)
    return traces
