"""The mixing matrix of each consensus round of a gossip kind: one fixed ``W`` or a schedule's ``W_t``.

Every gossip-based kind (``ppm-gossip``, ``capepca-gossip``, ...) runs phases of ``c`` synchronous
rounds ``S^(k) = W S^(k-1)``. Under a ``"rounds"``
:class:`~dpgossip.topology.schedules.MixingSchedule` round ``k`` of phase ``p`` (the ``p``-th block of
``c`` rounds, counted from 0 across the whole run: iteration ``l`` of a kind with one phase per
iteration is phase ``l - 1``) uses the matrix of the *global* round index

    t = p c + (k - 1),        S^(k) = W_t S^(k-1),

so a run of ``P`` phases reads ``W_0 .. W_{P c - 1}`` once each, in order. A :class:`RoundMixing`
without a schedule gives ``W`` for every ``t`` and the products of today's code, bit for bit: its
:meth:`RoundMixing.states` calls :func:`~dpgossip.protocols.gossip.average.gossip_states` on
``mixing_operator(W)``. With a schedule, a run of rounds that use the same matrix object (a ``fixed``
schedule repeats one) goes through that same call, so ``W_t = W`` reproduces the fixed run bit for
bit; other rounds are applied one at a time.

The node side: :meth:`RoundMixing.node_rounds` gives agent ``i``'s part of each round, its row
``(W_t[i, i], {j: W_t[i, j]})`` (whom it waits for and how it weighs them) and the receivers
``{j : W_t[j, i] != 0}`` of its state (whom it sends to). For a non-symmetric ``W_t`` (the one-peer
exponential graph) the two differ.

Which schedules a kind accepts (:meth:`RoundMixing.__init__`): ``"rounds"`` on the network's agents,
row sums one (``"doubly"``, or ``"row"`` for a recorded run in which a receiver put a missing
message's weight on itself), at least the rounds the run needs. A ``"pairwise"`` schedule has no
synchronous rounds and a push-sum (``"column"``) one needs the weight ratio, which the kinds' updates do
not carry: both are refused.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from dpgossip.errors import ConfigError
from dpgossip.protocols.gossip.average import Mixing, gossip, gossip_states, mixing_operator
from dpgossip.topology.network import Network
from dpgossip.topology.schedules import MixingSchedule, agent_rounds, schedule_union_edges

__all__ = ["RoundMixing", "NodeRound", "check_schedule_edges"]

NodeRound = tuple[float, dict[int, float], tuple[int, ...]]
"""Agent ``i``'s part of one round: ``W_t[i, i]``, ``{j: W_t[i, j]}`` (``j != i``, nonzero, increasing
``j``) and the receivers of its state (increasing)."""


@dataclass(frozen=True, slots=True, eq=False)
class RoundMixing:
    """``W_t`` for global round ``t`` (module docstring).

    Parameters
    ----------
    network : Network
        Agents, graph and the fixed ``W``.
    schedule : MixingSchedule, optional
        A ``"rounds"`` schedule on ``network.m`` agents with row sums one; ``None``: ``W`` every round.
    rounds : int
        Rounds the run needs (``P c``); the schedule must have at least as many (later ones unused).
    convert : callable
        How a kind turns a matrix into the operator its products use (default
        :func:`~dpgossip.protocols.gossip.average.mixing_operator`); applied to ``W`` and to every
        ``W_t`` alike, so that ``W_t = W`` gives the same products.
    """

    network: Network
    schedule: MixingSchedule | None = None
    rounds: int = 0
    convert: Callable[[sp.csr_array], Mixing] = mixing_operator
    _ops: dict[int, Mixing] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        s = self.schedule
        if s is None:
            return
        if not isinstance(s, MixingSchedule):
            raise ConfigError(f"schedule must be a MixingSchedule or None, got {type(s).__name__}",
                              field="schedule")
        if s.kind != "rounds":
            raise ConfigError(f"schedule: a {s.kind!r} schedule ({s.label}) has no synchronous rounds; "
                              "a gossip kind's consensus step needs a 'rounds' schedule (sampler fixed, "
                              "random-matchings, one-peer-exponential, random-regular or files)",
                              field="schedule")
        if s.stochastic == "column":
            raise ConfigError(f"schedule: a push-sum ('column' stochastic) schedule ({s.label}) needs "
                              "the weight ratio s/w, which a gossip kind's update does not carry; "
                              "allowed: row-stochastic rounds ('doubly' or 'row')", field="schedule")
        if s.m != self.network.m:
            raise ConfigError(f"schedule has {s.m} agents, the network {self.network.m}",
                              field="schedule")
        if s.steps < self.rounds:
            raise ConfigError(f"schedule has {s.steps} rounds, the run needs {self.rounds} (every "
                              "consensus round of every phase reads the next W_t)", field="schedule")

    @property
    def scheduled(self) -> bool:
        """Whether rounds follow a schedule (else ``W`` every round)."""
        return self.schedule is not None

    def matrix(self, t: int) -> sp.csr_array:
        """``W_t`` (``network.W`` without a schedule)."""
        return self.network.W if self.schedule is None else self.schedule.matrices[t]

    def dense(self, t: int) -> np.ndarray:
        """``W_t`` as a dense array."""
        return self.network.dense_W() if self.schedule is None else self.schedule.matrices[t].toarray()

    def _operator(self, t: int) -> Mixing:
        W = self.matrix(t)
        key = id(W)
        op = self._ops.get(key)
        if op is None:
            op = self._ops[key] = self.convert(W)
        return op

    def states(self, S: np.ndarray, start: int, c: int) -> np.ndarray:
        """``S^(0..c)`` of the ``c`` rounds from global round ``start``, shape ``(c + 1, m, d)``."""
        if self.schedule is None:
            return gossip_states(self._operator(0), S, c)
        out = np.empty((c + 1,) + S.shape)
        out[0] = S
        k = 0
        while k < c:
            W = self.matrix(start + k)
            run = 1
            while k + run < c and self.matrix(start + k + run) is W:
                run += 1
            out[k: k + run + 1] = gossip_states(self._operator(start + k), out[k], run)
            k += run
        return out

    def apply(self, S: np.ndarray, start: int, c: int) -> np.ndarray:
        """``W_{start + c - 1} ... W_start S`` (``W^c S`` without a schedule)."""
        if self.schedule is None:
            return gossip(self._operator(0), S, c)
        return self.states(S, start, c)[-1]

    def product(self, start: int, k: int) -> np.ndarray:
        """``Phi = W_{start + k - 1} ... W_start`` (dense; the identity for ``k = 0``)."""
        out = np.eye(self.network.m)
        for t in range(start, start + k):
            out = self.dense(t) @ out
        return out

    def node_rounds(self, i: int, start: int, c: int) -> list[NodeRound]:
        """Agent ``i``'s row and receivers in rounds ``start .. start + c - 1`` (module docstring)."""
        if self.schedule is None:
            raise ConfigError("node_rounds needs a schedule (without one a node mixes with its row of "
                              "W every round)", field="schedule")
        sub = MixingSchedule(m=self.schedule.m, kind="rounds", stochastic=self.schedule.stochastic,
                             matrices=self.schedule.matrices[start: start + c])
        cols, rows = agent_rounds(sub, i)
        return [(w_ii, dict(sorted(row.items())), tuple(sorted(col[0])))
                for (row, w_ii), col in zip(rows, cols, strict=True)]

    def to_row(self) -> dict[str, object]:
        """``schedule`` (its label, or ``"fixed W"``) and the rounds used."""
        return {"schedule": "fixed W" if self.schedule is None else self.schedule.label,
                "schedule_rounds": self.rounds}


def check_schedule_edges(network: Network, schedule: MixingSchedule | None) -> None:
    """Refuse a schedule that pairs agents who are not neighbours in ``network``: the engine sends only
    along the network's edges (the matrix backend has no such limit)."""
    if schedule is None:
        return
    for i, j in schedule_union_edges(schedule).tolist():
        if j not in network.neighbours[i]:
            raise ConfigError(f"schedule: its rounds ({schedule.label}) pair agents {i} and {j}, "
                              "which are not neighbours in the network; the engine sends only along "
                              "the network's edges (use a complete topology, or a sampler that keeps "
                              "to the edges: fixed or random-matchings)", field="schedule")
