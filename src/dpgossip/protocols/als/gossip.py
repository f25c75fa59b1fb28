"""dpals-gossip: private ALS with users as agents of a graph and no server (docs/als.md, Gossip form).

Agent ``i`` is user ``i``. At step ``t`` it solves its factor from its own item factors ``V_i^(t-1)``
(all agents start from the public ``V^(0)``), samples, forms its statistic ``s_i`` (``(m, q)``,
:mod:`dpgossip.protocols.als.steps`) and starts averaging from

    Y_i^(0) = s_i + sum_{j in N(i)} sign(i, j) D_ij + G_i,
    Y^(k)   = (W (x) I) Y^(k-1),   k = 1..c,         (agent i sends Y_i^(k-1) to its neighbours in round k)
    V_i^(t) = item solve of n Y_i^(c),

``D_ij`` one draw per edge (``+`` at the lower end), ``G_i`` the agent's own draw, both of ``(m, q)``
entries with the stds of :meth:`~dpgossip.protocols.als.params.GossipParams.stds`:

* ``shared``: ``G_i`` of ``z / sqrt(n)`` units and ``D_ij`` of ``edge_noise z`` units. The edge draws
  cancel in the sum and ``1^T W = 1^T`` keeps the sum, so ``n Y_i^(c) -> sum_i s_i + sum_i G_i`` as ``c``
  grows, whose noise is exactly the central level ``z``;
* ``own``: ``G_i`` of ``z`` units and no edge draws: every message is protected at the central level on
  its own; the sum carries ``n`` times the central variance.

With finite ``c`` the agents end with different item factors; user ``i`` predicts with its own. Under a
schedule of rounds round ``k`` of step ``t`` mixes with ``W_g``, ``g = (t - 1) c + k - 1``, instead of
``W`` (docs/dynamic-gossip.md, section 8); the result's ``extra["schedule"]`` holds it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dpgossip.errors import ConfigError
from dpgossip.protocols.als.central import (
    AlsResult,
    check_inputs,
    clipped_values,
    private_statistics,
    user_factors,
)
from dpgossip.protocols.als.params import DpAlsParams, GossipParams
from dpgossip.protocols.als.ratings import Ratings, rmse
from dpgossip.protocols.als.steps import initial_items, noise_draw, normalised_norms, solve_items
from dpgossip.protocols.gossip.round_mixing import RoundMixing
from dpgossip.rng import as_seed_sequence
from dpgossip.topology.network import Network
from dpgossip.topology.schedules import MixingSchedule

__all__ = ["run_dpals_gossip", "agent_initial", "als_mixing"]


def agent_initial(statistic: np.ndarray, root: np.random.SeedSequence, step: int, agent: int,
                  neighbours: Sequence[int], units: np.ndarray, stds: tuple[float, float]) -> np.ndarray:
    """``Y_i^(0) = s_i + sum_j sign(i, j) D_ij + G_i`` (module docstring), neighbours in increasing order."""
    own, edge = stds
    m = statistic.shape[0]
    Y = statistic.copy()
    if edge > 0:
        E = np.zeros_like(statistic)
        for j in sorted(neighbours):
            lo, hi = min(agent, j), max(agent, j)
            draw = noise_draw(root, (3, step, lo, hi), units, edge, m)
            E += draw if agent == lo else -draw
        Y = Y + E
    return Y + noise_draw(root, (2, step, agent), units, own, m)


def _check_network(ratings: Ratings, network: Network, gparams: GossipParams) -> None:
    if not isinstance(network, Network) or network.m != ratings.users:
        raise ConfigError(f"network must be a Network with one agent per user ({ratings.users}), got "
                          f"{getattr(network, 'm', network)!r}", field="network")
    if not isinstance(gparams, GossipParams):
        raise ConfigError(f"gossip must be a GossipParams, got {type(gparams).__name__}", field="gossip")


def als_mixing(network: Network, params: DpAlsParams, gparams: GossipParams,
               schedule: MixingSchedule | None = None) -> RoundMixing:
    """The rounds of a run: ``W`` every round, or ``W_g`` of ``schedule``, ``g = (t - 1) c + k - 1``
    for round ``k`` of step ``t`` (``T c`` rounds)."""
    return RoundMixing(network, schedule, params.steps * gparams.rounds)


def run_dpals_gossip(ratings: Ratings, network: Network, params: DpAlsParams, gparams: GossipParams,
                     seed: int | np.random.SeedSequence, *,
                     schedule: MixingSchedule | None = None) -> AlsResult:
    """dpals-gossip on the matrix backend (module docstring), under ``schedule`` when one is given."""
    check_inputs(ratings, params)
    _check_network(ratings, network, gparams)
    mixing = als_mixing(network, params, gparams, schedule)
    root = as_seed_sequence(seed)
    n, m, r = ratings.users, ratings.items, params.rank
    values, units = clipped_values(ratings, params.clip_rating), params.units()
    stds = gparams.stds(params.multiplier, n)
    V = np.broadcast_to(initial_items(root, m, r), (n, m, r)).copy()
    items, users, norms, released = [V], [], [], []
    for t in range(1, params.steps + 1):
        U, stats = private_statistics(ratings, values, V, params, root, t)
        Y0 = np.stack([agent_initial(stats[i], root, t, i, network.neighbours[i], units, stds)
                       for i in range(n)])
        c = gparams.rounds
        Yc = mixing.apply(Y0.reshape(n, -1), (t - 1) * c, c).reshape(Y0.shape)
        V = solve_items(n * Yc, r, params.reg, params.psd)
        items.append(V)
        users.append(U)
        norms.append(normalised_norms(stats, units))
        released.append(Y0)
    final = user_factors(values, ratings, V, params.reg, None)
    return AlsResult(kind="dpals-gossip", items=np.stack(items), users=np.stack(users), final_users=final,
                     norms=np.stack(norms), released=np.stack(released), rmse=rmse(ratings, final, V),
                     params=params, extra={"sigma": params.sigma, "multiplier": params.multiplier,
                                           "gossip": gparams, "stds": stds,
                                           **({} if schedule is None else {"schedule": schedule})})
