"""One agent of D-DP-PM as a simpy process (Algorithm 1 of Campbell et al., one row block).

An :class:`Agent` holds only what a real participant would: its id, a private copy of its block
``X_i``, its own random stream, its neighbour ids, its row of ``W`` restricted to itself and its
neighbours (``W_ii``, ``W_ij``), ``n_i``, the public parameters (``m``, ``T``, ``c``, ``alpha``,
noise levels, timeouts), the messages it has received, a record of its own computations
(:class:`AgentTrace`, read by the simulator after the run) and an :class:`Outbox`, its handle to the
simulated world (send on its own edges, read the clock, wait). It never sees the global data, the
full ``W`` or another agent.

For each component ``l`` the process runs, for ``t = 1..T``::

    z_i^(t) = X_i^T q_i^(t-1);  s_i^(t,0) = z_i^(t)
    round k = 1..c:  send s_i^(t,k-1) to every live neighbour; once round-k messages from all live
                     neighbours are held:  s_i^(t,k) = W_ii s_i^(t,k-1) + sum_j W_ij s_j^(t,k-1)
    z_i^(t+1/2) = m s_i^(t,c);   q_i^(t) = alpha_l X_i z_i^(t+1/2) + p_i^(t)

then disseminates ``q_i^(T)`` (batches tagged ``("final", l, b)``), waits until it holds every
agent's block (or knows that agent crashed), computes ``||q^(T)||`` and, if another component
follows, deflates its own block ``X_i <- X_i - q_hat_i b_i^T`` with
``b_i = deflation_vector(||q^(T)||, alpha_l, z_i^(T+1/2))``.
Noise: at the start of each component, ``draw_component_noise(rng_i, n_i, sigma_q, sigma_p[l])``
(:mod:`dpgossip.rng`), so the values equal the matrix backend's.

Everything else is :class:`~dpgossip.protocols.nodes.mixing.MixingNode`: the gossip rounds with
failure detection and re-weighting (a crash learned from a notice ``("crash", j)`` or by detection:
``W_ii += W_ij`` from the round it is in), and the dissemination of ``q_i^(T)`` along the BFS spanning
tree or by batched flooding. In ``z_i^(t+1/2) = m s_i^(t,c)`` the agent uses for ``m`` the number of
agents it does not know to have crashed (the survivors' count).
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass

import numpy as np
from simpy.events import Event

from dpgossip.engine.node import Outbox
from dpgossip.protocols.ddppm.matrix import deflation_vector
from dpgossip.protocols.ddppm.params import ProtocolParams
from dpgossip.protocols.nodes.mixing import MixingNode, MixingSettings, MixingTrace, member_bytes
from dpgossip.rng import draw_component_noise

__all__ = ["Agent", "AgentSettings", "AgentTrace", "member_bytes"]


@dataclass(frozen=True, slots=True)
class AgentSettings(MixingSettings):
    """How an :class:`Agent` behaves beyond the protocol:
    :class:`~dpgossip.protocols.nodes.mixing.MixingSettings` (computation delay, failure timeout,
    dissemination of ``q^(T)``, place in the spanning tree) and ``record_states``, keep
    ``s_i^(t,k)`` in the trace."""

    record_states: bool = False


class AgentTrace(MixingTrace):
    """What one agent computed, in its own arrays (NaN where it never got), besides what
    :class:`~dpgossip.protocols.nodes.mixing.MixingTrace` records (``||q^(T)||``, its contributors,
    detections, progress).

    Shapes use ``r`` components, ``T`` iterations, ``c`` rounds, ``n_i`` rows, ``d`` columns.
    """

    __slots__ = ("blocks", "noise", "q", "z", "z_half", "states", "deflation")

    def __init__(self, r: int, T: int, c: int, n_i: int, d: int, record_states: bool) -> None:
        super().__init__(r)
        nan = np.nan
        self.blocks: list[np.ndarray | None] = [None] * r
        """``X_i`` at the start of each component (after the earlier deflations)."""
        self.noise = np.full((r, T + 1, n_i), nan)
        """``[q_i^(0); p_i^(1..T)]`` of each component."""
        self.q = np.full((r, T + 1, n_i), nan)
        """``q_i^(t)``, ``t = 0..T``."""
        self.z = np.full((r, T, d), nan)
        """``z_i^(t)``, ``t = 1..T``."""
        self.z_half = np.full((r, T, d), nan)
        """``z_i^(t+1/2)``."""
        self.states = np.full((r, T, c + 1, d), nan) if record_states else None
        """``s_i^(t,k)``, ``k = 0..c`` (when recorded)."""
        self.deflation = np.full((r, d), nan)
        """``b_i`` of each component (zero for the last one)."""


class Agent(MixingNode):
    """Agent ``i`` of D-DP-PM (see the module docstring).

    Parameters
    ----------
    agent_id
        ``i``.
    block
        ``X_i`` (copied: the agent owns a private, writable copy).
    rng
        The agent's own stream (:attr:`dpgossip.rng.RunStreams.agents` ``[i]``).
    neighbours
        Sorted neighbour ids.
    w_self, w_neighbours
        ``W_ii`` and ``W_ij`` for ``j`` in ``neighbours``.
    m
        Number of agents (public).
    params
        Protocol parameters.
    outbox
        Handle to the simulated world.
    settings
        Computation delay, failure timeout, dissemination and state recording
        (:class:`AgentSettings`).
    """

    __slots__ = ("X", "rng", "n_i", "params")

    def __init__(self, agent_id: int, block: np.ndarray, rng: np.random.Generator,
                 neighbours: tuple[int, ...], w_self: float, w_neighbours: np.ndarray, m: int,
                 params: ProtocolParams, outbox: Outbox,
                 settings: AgentSettings = AgentSettings()) -> None:
        X = np.array(block, dtype=float, copy=True)
        n_i, d = X.shape
        super().__init__(agent_id, outbox,
                         AgentTrace(params.rank, params.iterations, params.consensus_steps, n_i, d,
                                    settings.record_states),
                         neighbours, w_self, w_neighbours, m, d, settings)
        self.X = X
        self.rng = rng
        self.n_i = n_i
        self.params = params

    def _protocol(self) -> Generator[Event, object, None]:
        P = self.params
        T, c, r = P.iterations, P.consensus_steps, P.rank
        out, tr = self.outbox, self.trace
        states = tr.states
        delay = self._delay
        for l in range(r):
            tr.blocks[l] = self.X.copy()
            w = draw_component_noise(self.rng, self.n_i, P.sigma_q, P.sigma_p[l])
            tr.noise[l] = w
            alpha = P.alpha[l]
            q = w[0]
            tr.q[l, 0] = q
            zh = q[:0]
            for t in range(1, T + 1):
                if delay:
                    yield out.sleep(delay)
                s = self.X.T @ q                                        # z_i^(t) = X_i^T q_i^(t-1)
                tr.z[l, t - 1] = s
                for k in range(1, c + 1):
                    if states is not None:
                        states[l, t - 1, k - 1] = s
                    tag = (l, t, k)
                    g = ((l * T) + t - 1) * c + k - 1                   # global round (a schedule's W_g)
                    if self._send_round(tag, s, g):                     # send s_i^(t,k-1)
                        yield from self._wait(tag)
                    s = self._mix_round(tag, s, g)                      # W_ii s_i + sum W_ij s_j
                    if delay:
                        yield out.sleep(delay)
                if states is not None:
                    states[l, t - 1, c] = s
                zh = self.live_count * s                     # z_i^(t+1/2) = m s^(t,c)
                tr.z_half[l, t - 1] = zh
                q = alpha * (self.X @ zh) + w[t]                        # q_i^(t)
                tr.q[l, t] = q
                tr.steps += 1
                if delay:
                    yield out.sleep(delay)
            if not self._disseminate:
                tr.deflation[l] = 0.0
                tr.components_done = l + 1
                continue
            yield from self._disseminate_block(l, q)
            q_norm = tr.q_norm[l]
            if l + 1 < r:
                b = deflation_vector(q_norm, alpha, zh)
                q_hat = q / q_norm if q_norm > 0 else q
                self.X -= np.outer(q_hat, b)                            # X_i <- X_i - q_hat_i b_i^T
                tr.deflation[l] = b
            else:
                tr.deflation[l] = 0.0
            tr.components_done = l + 1
