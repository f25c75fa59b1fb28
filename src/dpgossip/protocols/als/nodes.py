"""dpals-gossip on the discrete-event engine: one node program per user (docs/als.md, Engine).

Agent ``i`` holds only what user ``i`` would: its own ratings, the public initial item factors, the
streams of its own draws (sample ``(0, t, i)``, own noise ``(2, t, i)``) and of its edges' draws
(``(3, t, a, b)``, derived by both ends), and its row of ``W``. Step ``t``: solve its factor from its own
item factors, sample, form its statistic and its initial value ``Y_i^(0)``
(:func:`~dpgossip.protocols.als.gossip.agent_initial`), run ``c`` rounds of mixing under tags
``(t, 1, k)`` (:meth:`~dpgossip.engine.node.Node._mix`), solve its item factors from ``n Y_i^(c)``.
Every value follows :func:`~dpgossip.protocols.als.gossip.run_dpals_gossip` operation by operation, so
with ideal links (and under latency, loss with retransmission, stragglers) the two agree to rounding.
The network conditions draw from key ``4`` (the kernel's network stream), never from the protocol's.
Under a schedule of rounds an agent mixes round ``k`` of step ``t`` with its part of ``W_g``,
``g = (t - 1) c + k - 1`` (:class:`~dpgossip.protocols.nodes.scheduled.ScheduledNode`), and the
result's ``extra["schedule"]`` is the realised schedule.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from dataclasses import dataclass

import numpy as np
from simpy.events import Event

from dpgossip.engine.conditions import NetworkConditions, condition_fields
from dpgossip.engine.kernel import NETWORK_SPAWN_KEY, Simulation, child_seed, resolve_conditions
from dpgossip.engine.node import NodeTrace, Outbox
from dpgossip.engine.record import EngineRecord
from dpgossip.errors import renamed_fields
from dpgossip.protocols.als.central import AlsResult, check_inputs, clipped_values
from dpgossip.protocols.als.gossip import _check_network, agent_initial, als_mixing
from dpgossip.protocols.als.params import DpAlsParams, GossipParams
from dpgossip.protocols.als.ratings import Ratings, rmse
from dpgossip.protocols.als.steps import (
    initial_items,
    normalised_norms,
    solve_items,
    user_factor,
    user_sample,
    user_statistic,
)
from dpgossip.protocols.gossip.round_mixing import NodeRound, RoundMixing, check_schedule_edges
from dpgossip.protocols.nodes.scheduled import ScheduledNode, realised_schedule
from dpgossip.protocols.transcript_views import schedule_residual
from dpgossip.rng import as_seed_sequence
from dpgossip.topology.network import Network
from dpgossip.topology.schedules import MixingSchedule

__all__ = ["AlsAgent", "AlsEngineResult", "run_dpals_gossip_engine"]


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentData:
    """What agent ``i`` holds of the data: its (clipped) ratings row and its training items."""

    ratings: np.ndarray
    rated: np.ndarray


class AlsAgent(ScheduledNode):
    """User ``i`` of dpals-gossip (module docstring); ``plan``: its part of every ``W_t`` of a
    schedule (``None``: its row of ``W`` every round)."""

    def __init__(self, party_id: int, outbox: Outbox, compute_delay: float, *, data: AgentData,
                 initial: np.ndarray, params: DpAlsParams, rounds: int, stds: tuple[float, float],
                 root: np.random.SeedSequence, users: int,
                 weights: tuple[float, Mapping[int, float]],
                 plan: tuple[NodeRound, ...] | None = None) -> None:
        super().__init__(party_id, outbox, NodeTrace(), compute_delay)
        self.data, self.initial, self.params, self.rounds = data, initial, params, rounds
        self.stds, self.root, self.users, self.weights = stds, root, users, weights
        self.plan = plan

    def _step(self, step: int, V: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(u_i, s_i)`` of step ``step`` from the agent's own item factors ``V``."""
        p, d = self.params, self.data
        u = user_factor(d.ratings, d.rated, V, p.reg, p.clip_user)
        sample = user_sample(self.root, step, self.id, d.rated, p.k)
        return u, user_statistic(u, d.ratings, sample, V.shape[0])

    def _protocol(self) -> Generator[Event, object, None]:
        tr, p = self.trace.values, self.params
        units, V = p.units(), self.initial
        users, stats, initial, items = [], [], [], [V]
        for t in range(1, p.steps + 1):
            yield from self._compute()
            u, s = self._step(t, V)
            Y = agent_initial(s, self.root, t, self.id, tuple(self.weights[1]), units, self.stds)
            users.append(u)
            stats.append(s)
            initial.append(Y)
            c = self.rounds
            if self.plan is None:
                Y = yield from self._mix(Y, (t, 1), c, self.weights)
            else:
                Y = yield from self._mix_rounds(Y, (t, 1), self.plan[(t - 1) * c: t * c], (t - 1) * c)
            V = solve_items(self.users * Y, p.rank, p.reg, p.psd)
            items.append(V)
        tr["users"], tr["initial"], tr["items"] = np.stack(users), np.stack(initial), np.stack(items)
        tr["norms"] = normalised_norms(np.stack(stats), units)
        tr["final_user"] = user_factor(self.data.ratings, self.data.rated, V, p.reg, None)


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class AlsEngineResult(EngineRecord):
    """One engine run: the protocol's result (``None`` if the run stopped) and every agent's record."""

    result: AlsResult | None
    values: tuple[Mapping[str, np.ndarray], ...]

    def to_row(self) -> dict[str, object]:
        """Tidy row: the protocol's row (if any), the engine status and the traffic summary."""
        return self.engine_row(self.result.to_row() if self.result is not None else {}, kind="dpals-gossip")


def _result(ratings: Ratings, params: DpAlsParams, gparams: GossipParams,
            agents: list[AlsAgent], scheduled: bool) -> AlsResult:
    """Stack the agents' records (NaN for what a crashed agent never computed) into an :class:`AlsResult`."""
    n, m, r, T = ratings.users, ratings.items, params.rank, params.steps
    q = params.units().size
    shapes = {"users": (T, r), "initial": (T, m, q), "items": (T + 1, m, r), "norms": (T, m),
              "final_user": (r,)}
    v = [{name: a.trace.recorded(name, shape) for name, shape in shapes.items()} for a in agents]
    items = np.stack([x["items"] for x in v], axis=1)
    final = np.stack([x["final_user"] for x in v])
    return AlsResult(kind="dpals-gossip", items=items, users=np.stack([x["users"] for x in v], axis=1),
                     final_users=final, norms=np.stack([x["norms"] for x in v], axis=1),
                     released=np.stack([x["initial"] for x in v], axis=1),
                     rmse=rmse(ratings, final, items[-1]), params=params,
                     extra={"sigma": params.sigma, "multiplier": params.multiplier, "gossip": gparams,
                            "stds": gparams.stds(params.multiplier, n),
                            **({"schedule": realised_schedule(agents, T * gparams.rounds)}
                               if scheduled else {})})


def run_dpals_gossip_engine(ratings: Ratings, network: Network, params: DpAlsParams, gparams: GossipParams,
                            seed: int | np.random.SeedSequence, *,
                            conditions: NetworkConditions | Mapping[str, object] | None = None,
                            record_transcript: bool = True,
                            schedule: MixingSchedule | None = None) -> AlsEngineResult:
    """Simulate dpals-gossip message by message (module docstring); the same draws as the matrix backend;
    under ``schedule`` when one is given (its pairs must be edges of ``network``)."""
    check_inputs(ratings, params)
    _check_network(ratings, network, gparams)
    mixing = als_mixing(network, params, gparams, schedule)
    check_schedule_edges(network, schedule)
    with renamed_fields(condition_fields("conditions")):
        conditions = resolve_conditions(conditions)
        conditions.check_network(network)
    root = as_seed_sequence(seed)
    sim = Simulation(network, conditions, np.random.default_rng(child_seed(root, NETWORK_SPAWN_KEY)),
                     record_transcript=record_transcript)
    values, V0 = clipped_values(ratings, params.clip_rating), initial_items(root, ratings.items, params.rank)
    stds = gparams.stds(params.multiplier, ratings.users)
    agents = [AlsAgent(i, sim.outbox(i), sim.compute_delay(i),
                       data=AgentData(ratings=values[i], rated=ratings.rated(i)), initial=V0, params=params,
                       rounds=gparams.rounds, stds=stds, root=root, users=ratings.users,
                       weights=sim.weight_row(i),
                       plan=tuple(mixing.node_rounds(i, 0, mixing.rounds)) if mixing.scheduled else None)
              for i in range(ratings.users)]
    sim.run(agents)
    outcome = sim.outcome(agents, "dpals-gossip")
    result = (_result(ratings, params, gparams, agents, schedule is not None)
              if outcome.status != "stopped" else None)
    return AlsEngineResult(result=result, values=tuple(a.trace.values for a in agents),
                           **sim.record_fields(outcome, agents))


def transcript_residual(record: AlsEngineResult, released: np.ndarray, network: Network,
                        rounds: int | None = None) -> float:
    """Largest absolute difference between every message of an engine run's transcript and the release
    model's value of it: the message of tag ``(t, 1, k)`` from ``b`` is ``(W^(k-1) Y^(0)_t)_b``, with
    ``released[t - 1] = Y^(0)_t`` (``(n, m, q)``) from the matrix backend. With ``rounds`` (``c``), also
    ``inf`` unless every directed edge carries exactly one message of each round of each step, and
    none is sent on a non-edge (a transcript with a message missing does not rebuild the views)."""
    from dpgossip.protocols.gossip.average import gossip, mixing_operator

    if record.transcript is None:
        return float("nan")
    schedule = record.result.extra.get("schedule") if record.result is not None else None
    if schedule is not None and rounds is not None:
        T = released.shape[0]
        mixing = RoundMixing(network, schedule, T * rounds)
        initial = {(t, 1): released[t - 1] for t in range(1, T + 1)}
        return schedule_residual(record.transcript, mixing, initial,
                                 {(t, 1): (t - 1) * rounds for t in range(1, T + 1)}, rounds)
    Wop, worst = mixing_operator(network.W), 0.0
    states: dict[tuple[int, int], np.ndarray] = {}
    seen = set()
    for rec in record.transcript:
        t, _, k = rec.message.tag
        if rounds is not None and rec.dst not in network.neighbours[rec.src]:
            return float("inf")
        seen.add((t, k, rec.src, rec.dst))
        if (t, k) not in states:
            Y0 = released[t - 1]
            states[(t, k)] = gossip(Wop, Y0.reshape(Y0.shape[0], -1), k - 1).reshape(Y0.shape)
        worst = max(worst, float(np.max(np.abs(rec.message.payload - states[(t, k)][rec.src]))))
    if rounds is not None:
        edges = sum(len(n) for n in network.neighbours)
        if len(seen) != released.shape[0] * rounds * edges:
            return float("inf")
    return worst
