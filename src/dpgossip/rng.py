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

Fast path for large ``m`` (:func:`draw_run_noise`, used by the matrix backend): the same values without
creating ``m`` ``SeedSequence`` and ``Generator`` objects. ``default_rng(child)`` seeds a PCG64 with
``child.generate_state(4, uint64)``; :func:`agent_seed_words` computes those words for all ``m`` children at
once, with numpy's ``SeedSequence`` hash (``hashmix``/``mix`` on ``uint32`` words, whose constants depend
only on the word positions) applied to ``m``-vectors. Each agent then sets one reused PCG64 to its seeded
state (``pcg_setseq_128_srandom_r`` in Python integers) and draws its ``r (T + 1) n_i`` normals into a flat
buffer with ``out=``; a gather puts them in place. What remains per agent is a few microseconds of Python
(setting a state, one draw call); see docs/engine.md for the measurements.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpgossip.errors import ConfigError

__all__ = ["RunStreams", "run_streams", "as_seed_sequence", "as_generator", "draw_component_noise",
           "agent_seed_words", "draw_run_noise"]


def as_seed_sequence(seed: int | np.random.SeedSequence) -> np.random.SeedSequence:
    """Return ``seed`` as a ``SeedSequence`` (an int must be non-negative)."""
    if isinstance(seed, np.random.SeedSequence):
        return seed
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ConfigError(f"seed must be a non-negative integer, got {seed!r}")
    return np.random.SeedSequence(int(seed))


def as_generator(rng: object, field: str = "rng") -> np.random.Generator:
    """``rng`` as a ``numpy.random.Generator``: a Generator as is, a non-negative integer or a
    ``SeedSequence`` through ``numpy.random.default_rng`` (so ``rng=1`` and ``rng=default_rng(1)``
    draw the same numbers); anything else raises :class:`ConfigError` naming ``field``."""
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, np.random.SeedSequence) or (
            isinstance(rng, (int, np.integer)) and not isinstance(rng, bool) and rng >= 0):
        return np.random.default_rng(rng)  # type: ignore[arg-type]
    raise ConfigError(f"{field} must be a numpy.random.Generator, a non-negative integer seed or a "
                      f"numpy.random.SeedSequence, got {rng!r} ({type(rng).__name__})", field=field)


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
    ``w_i[t] = p_i^(t) ~ N(0, sigma_p(t)^2 I)`` (Algorithm 1 of Campbell et al., line 1).
    """
    sigma_p = np.asarray(sigma_p, dtype=float)
    g = rng.standard_normal((sigma_p.size + 1, n_i))
    scale = np.concatenate(([sigma_q], sigma_p))
    return g * scale[:, None]


# numpy's SeedSequence constants (numpy/random/bit_generator.pyx)
_INIT_A, _MULT_A = 0x43B0D7E5, 0x931E8875
_INIT_B, _MULT_B = 0x8B51F9DD, 0x58F38DED
_MIX_L, _MIX_R = 0xCA01F9DD, 0x4973F715
_M32 = 0xFFFFFFFF
# PCG64 (pcg_setseq_128) multiplier
_PCG_MULT = 0x2360ED051FC65DA44385DF649FCCF645
_M128 = (1 << 128) - 1


def _words(value: int) -> list[int]:
    """``SeedSequence``'s little-endian split of a non-negative int into 32-bit words (0 -> [0])."""
    out = [value & _M32]
    value >>= 32
    while value:
        out.append(value & _M32)
        value >>= 32
    return out


class _Hash:
    """The running hash constant of ``hashmix``, applied to ``uint32`` vectors."""

    def __init__(self, init: int, mult: int) -> None:
        self.const, self.mult = init, mult

    def __call__(self, value: np.ndarray) -> np.ndarray:
        """``v ^= h; h *= mult; v *= h; v ^= v >> 16`` (all mod 2^32)."""
        value = value ^ np.uint32(self.const)
        self.const = (self.const * self.mult) & _M32
        value = value * np.uint32(self.const)
        return value ^ (value >> np.uint32(16))


def _mix(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    r = np.uint32(_MIX_L) * x - np.uint32(_MIX_R) * y
    return r ^ (r >> np.uint32(16))


def agent_seed_words(seed: int | np.random.SeedSequence, m: int) -> np.ndarray:
    """``(m, 4)`` uint64: ``agent_root.spawn(m)[i].generate_state(4, np.uint64)`` for every agent ``i``.

    Equal to what :func:`run_streams` seeds agent ``i``'s PCG64 with, computed for all agents at once.
    """
    root = as_seed_sequence(seed)
    pool = root.pool_size
    run = [] if root.entropy is None else _words(int(root.entropy))
    key = [w for k in root.spawn_key for w in _words(int(k))] + [0]    # agent_root = child 0
    ids = np.arange(m, dtype=np.int64)
    if m > _M32 + 1:
        raise ConfigError(f"m must be at most 2^32 agents, got {m}", field="m")
    run = run + [0] * max(0, pool - len(run))                   # a spawned sequence pads to pool
    entropy = [np.full(m, w, dtype=np.uint32) for w in run + key] + [ids.astype(np.uint32)]
    with np.errstate(over="ignore"):
        h = _Hash(_INIT_A, _MULT_A)
        zero = np.zeros(m, dtype=np.uint32)
        mixer = [h(entropy[i] if i < len(entropy) else zero) for i in range(pool)]
        for src in range(pool):
            for dst in range(pool):
                if src != dst:
                    mixer[dst] = _mix(mixer[dst], h(mixer[src]))
        for src in range(pool, len(entropy)):
            for dst in range(pool):
                mixer[dst] = _mix(mixer[dst], h(entropy[src]))
        g = _Hash(_INIT_B, _MULT_B)
        state = np.stack([g(mixer[k % pool]) for k in range(8)], axis=1)
    return state.astype("<u4").view("<u8").astype(np.uint64)


def _pcg64_state(w: list[int]) -> tuple[int, int]:
    """PCG64's ``(state, inc)`` after seeding with the 4 words ``w`` (``pcg64_set_seed``; word 0 is
    the high half)."""
    init = (w[0] << 64) | w[1]
    inc = ((((w[2] << 64) | w[3]) << 1) | 1) & _M128
    state = (inc + init) & _M128                                 # state = 0; step; += init
    return (state * _PCG_MULT + inc) & _M128, inc                # step


def _fill_agent_normals(flat: np.ndarray, words: list[list[int]], counts: list[int]) -> None:
    """Fill ``flat`` with agent 0's ``counts[0]`` standard normals, then agent 1's, ...: each agent
    from its own PCG64 stream, seeded with its ``words`` (the one per-agent loop)."""
    gen = np.random.Generator(np.random.PCG64(0))
    bitgen, draw = gen.bit_generator, gen.standard_normal
    template = bitgen.state
    inner = template["state"]
    begin = 0
    for w, k in zip(words, counts, strict=True):
        inner["state"], inner["inc"] = _pcg64_state(w)
        bitgen.state = template
        draw(out=flat[begin:begin + k])
        begin += k


def draw_run_noise(seed: int | np.random.SeedSequence, sizes: tuple[int, ...] | np.ndarray,
                   sigma_q: float, sigma_p: np.ndarray) -> np.ndarray:
    """Every agent's latent noise of every component, ``(r, T + 1, n)``, as the per-agent streams draw it.

    Agent ``i`` draws ``r`` blocks ``(T + 1, n_i)`` in turn from its stream; component ``l`` is
    ``[sigma_q g[0]; sigma_p[l, t - 1] g[t]]``. Equal, bit for bit, to calling
    :func:`draw_component_noise` ``r`` times on ``run_streams(seed, m).agents[i]`` (see the module
    docstring for how).
    """
    sizes = np.asarray(sizes, dtype=np.int64)
    sigma_p = np.atleast_2d(np.asarray(sigma_p, dtype=float))
    r, K = sigma_p.shape[0], sigma_p.shape[1] + 1
    m, n = sizes.size, int(sizes.sum())
    flat = np.empty(r * K * n)
    _fill_agent_normals(flat, agent_seed_words(seed, m).tolist(), (sizes * (r * K)).tolist())
    scale = np.concatenate((np.full((r, 1), sigma_q), sigma_p), axis=1).reshape(r * K, 1)
    if m and (sizes == sizes[0]).all():                         # agent-major -> (r K, n) by a transpose
        out = np.empty((r * K, m, int(sizes[0])))               # scaled as it is transposed: one copy
        np.multiply(flat.reshape(m, r * K, int(sizes[0])).transpose(1, 0, 2), scale[:, :, None],
                    out=out)
        return out.reshape(r, K, n)
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    owner = np.repeat(np.arange(m), sizes)
    pos = np.arange(n) - offsets[owner]
    lt = np.arange(r * K)[:, None]
    index = (r * K) * offsets[owner][None, :] + lt * sizes[owner][None, :] + pos[None, :]
    return (flat[index] * scale).reshape(r, K, n)
