"""Random streams: one ``SeedSequence`` per run, spawned per agent in sorted agent order.

The matrix backend and the discrete-event engine both draw an agent's noise from that agent's own
stream, in the same order, so with ideal links their results agree to rounding error.

Convention (relied on by every backend and by the auditor):

* ``root = SeedSequence(seed)``; ``agent_root, network_root = root.spawn(2)``;
  agent ``i`` (in sorted order ``0..m-1``) uses ``default_rng(agent_root.spawn(m)[i])``.
* For each principal component ``l = 1..r`` in turn, agent ``i`` draws one block
  ``g = rng_i.standard_normal((T + 1, n_i))`` at the start of the component; then
  ``q_i^(0) = sigma_q g[0]`` and ``p_i^(t) = sigma_p(t) g[t]`` for ``t = 1..T``.
* Link randomness (latency, loss) comes from ``network_root`` only, so network conditions never change
  the algorithm's noise.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpgossip.errors import ConfigError

__all__ = ["RunStreams", "run_streams", "as_seed_sequence", "draw_component_noise"]


def as_seed_sequence(seed: int | np.random.SeedSequence) -> np.random.SeedSequence:
    """Return ``seed`` as a ``SeedSequence`` (an int must be non-negative)."""
    if isinstance(seed, np.random.SeedSequence):
        return seed
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ConfigError(f"seed must be a non-negative integer, got {seed!r}")
    return np.random.SeedSequence(int(seed))


@dataclass(frozen=True, slots=True, kw_only=True)
class RunStreams:
    """The random generators of one run."""

    agents: tuple[np.random.Generator, ...]
    """One generator per agent, in sorted agent order."""
    network: np.random.Generator
    """Generator for link conditions (latency, loss); never used for the algorithm's noise."""


def run_streams(seed: int | np.random.SeedSequence, m: int) -> RunStreams:
    """Spawn the per-agent streams and the network stream of a run (see the module docstring)."""
    root = as_seed_sequence(seed)
    # spawn from a fresh copy: SeedSequence.spawn advances the caller's object, and the same seed must
    # always give the same streams (e.g. one SeedSequence passed to both backends)
    root = np.random.SeedSequence(root.entropy, spawn_key=root.spawn_key, pool_size=root.pool_size)
    agent_root, network_root = root.spawn(2)
    agents = tuple(np.random.default_rng(s) for s in agent_root.spawn(m))
    return RunStreams(agents=agents, network=np.random.default_rng(network_root))


def draw_component_noise(
    rng: np.random.Generator, n_i: int, sigma_q: float, sigma_p: np.ndarray
) -> np.ndarray:
    """Draw one agent's latent noise for one component.

    Returns an array ``w_i`` of shape ``(T + 1, n_i)`` with ``w_i[0] = q_i^(0) ~ N(0, sigma_q^2 I)`` and
    ``w_i[t] = p_i^(t) ~ N(0, sigma_p(t)^2 I)`` (Algorithm 1 of 001, line 1).
    """
    sigma_p = np.asarray(sigma_p, dtype=float)
    g = rng.standard_normal((sigma_p.size + 1, n_i))
    scale = np.concatenate(([sigma_q], sigma_p))
    return g * scale[:, None]
