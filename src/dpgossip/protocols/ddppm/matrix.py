"""D-DP-PM on the matrix backend: the synchronous run of Algorithm 1 of Campbell et al. in vectorised algebra.

For each component ``l`` and iteration ``t = 1..T`` (docs/model.md, Section 1):

    z_i^(t)      = X_i^T q_i^(t-1)
    s^(t,0)      = z^(t);   s^(t,k) = (W (x) I_d) s^(t,k-1),   k = 1..c
    z_i^(t+1/2)  = m s_i^(t,c)
    q_i^(t)      = alpha X_i z_i^(t+1/2) + p_i^(t)

so ``q^(t) = alpha Xi q^(t-1) + p^(t)`` with ``Xi`` of Eq. (13). Noise comes from the per-agent streams of
:mod:`dpgossip.rng`, drawn for all agents by :func:`dpgossip.rng.draw_run_noise` (the same values, bit for
bit, as each agent's own generator), so the discrete-event engine draws exactly the same values.

Deflation (rank ``r > 1``): after component ``l`` every agent knows ``q_l^(T)`` (disseminated) and its own
``z_i^(T+1/2)``; it replaces its block by ``X_i - q_hat_i b_i^T`` with

    b_i = (||q^(T)|| / alpha) z_i^(T+1/2) / ||z_i^(T+1/2)||^2,

the local estimate of ``X^T q_hat`` (it equals ``sigma_1 v_1 = X^T u_1`` when consensus is exact and the
iterate has converged without noise). This is line 3 of Algorithm 1 with its scale made consistent; it
uses only what the agent already holds after the component, so no new data-dependent message is sent.

Under a schedule of rounds (``schedule``, docs/dynamic-gossip.md, section 8) round ``k`` of iteration
``t`` of component ``l`` mixes with ``W_g``, ``g = (l T + t - 1) c + k - 1`` (:func:`ddppm_mixing`).
The release model and the pair audit of D-DP-PM still assume one fixed ``W``
(:mod:`dpgossip.protocols.ddppm.release`), so the ``ddppm`` kind does not take a schedule from a
scenario; the backends do, for the engine's equality with the matrix backend.
"""

from __future__ import annotations

import numpy as np

from dpgossip.data.blocks import block_products, block_projections
from dpgossip.data.partition import PartitionedData
from dpgossip.errors import ConfigError
from dpgossip.protocols.checks import check_data, check_network, check_seed
from dpgossip.protocols.ddppm.params import ProtocolParams, check_params
from dpgossip.protocols.ddppm.result import RunResult
from dpgossip.protocols.gossip.round_mixing import RoundMixing
from dpgossip.rng import draw_run_noise
from dpgossip.topology.network import Network
from dpgossip.topology.schedules import MixingSchedule

__all__ = ["run_matrix", "deflation_vector", "ddppm_mixing"]


def ddppm_mixing(network: Network, params: ProtocolParams,
                 schedule: MixingSchedule | None = None) -> RoundMixing:
    """The rounds of a run: ``W`` every round, or ``W_g`` of ``schedule`` for the global round
    ``g = (l T + t - 1) c + k - 1`` of round ``k`` of iteration ``t`` of component ``l`` (``r T c``
    rounds)."""
    return RoundMixing(network, schedule, params.rank * params.iterations * params.consensus_steps)


def deflation_vector(q_norm: float, alpha: float, z_half_i: np.ndarray) -> np.ndarray:
    """``b_i = (||q^(T)|| / alpha) z_i^(T+1/2) / ||z_i^(T+1/2)||^2`` (zero when ``z_i^(T+1/2) = 0``)."""
    s = float(z_half_i @ z_half_i)
    if s == 0.0:
        return np.zeros_like(z_half_i)
    return (q_norm / alpha) * z_half_i / s


def run_matrix(data: PartitionedData, network: Network, params: ProtocolParams,
               seed: int | np.random.SeedSequence, *, record_states: bool = False,
               keep_messages: bool = True, schedule: MixingSchedule | None = None) -> RunResult:
    """Run D-DP-PM (Algorithm 1 of Campbell et al.) synchronously with ideal links.

    Parameters
    ----------
    data, network, params
        Partitioned data, network with mixing matrix ``W``, resolved parameters.
    seed
        Seed of the run; per-agent streams are spawned from it (:func:`dpgossip.rng.run_streams`).
    record_states
        Keep every gossip state ``s^(t,k)`` (needed to compare messages with the engine's transcript).
    keep_messages
        Keep ``z`` and ``z_half`` of every iteration (``2 r T m d`` numbers: 3.2 GB at a million agents,
        ``d = 20``, ``T = 10``); when ``False`` (the scenario runner, which only measures ``Q`` and the
        iterates) the result's ``z`` and ``z_half`` are ``None``. The other results are the same.
    schedule
        Time-varying rounds (module docstring, :func:`ddppm_mixing`); ``None``: ``W`` every round.

    Returns
    -------
    RunResult
        ``status`` ``ok``, or ``non-finite``, ``diverged`` or ``underflow`` when the iterates left
        float64 (the numbers are returned as computed).

    Raises
    ------
    ConfigError
        For a wrong argument (:func:`_check_run`), naming it.
    """
    seq = _check_run(data, network, params, seed)
    m, n, d = data.m, data.n, data.d
    T, c, r = params.iterations, params.consensus_steps, params.rank
    mixing = ddppm_mixing(network, params, schedule)
    owner = data.agent_of_row() if r > 1 else None
    offsets = data.offsets

    iterates = np.empty((r, T + 1, n))
    z_all = np.empty((r, T, m, d)) if keep_messages else None
    zh_all = np.empty((r, T, m, d)) if keep_messages else None
    noise = draw_run_noise(seq, data.sizes, params.sigma_q, params.sigma_p)
    deflation = np.zeros((r, m, d))
    states = np.empty((r, T, c + 1, m, d)) if record_states else None
    Q = np.empty((n, r))
    X = data.X                                  # read-only; deflation makes a new matrix
    used: list[np.ndarray] = []

    for l in range(r):
        used.append(X)
        alpha = params.alpha[l]
        q = noise[l, 0].copy()
        iterates[l, 0] = q
        for t in range(1, T + 1):
            Z = block_projections(X, q, offsets)                # z_i = X_i^T q_i
            if states is not None:                              # rounds from (l T + t - 1) c on
                states[l, t - 1] = mixing.states(Z, (l * T + t - 1) * c, c)
                Zh = m * states[l, t - 1, -1]
            else:
                Zh = m * mixing.apply(Z, (l * T + t - 1) * c, c)
            if z_all is not None and zh_all is not None:
                z_all[l, t - 1] = Z
                zh_all[l, t - 1] = Zh
            q = alpha * block_products(X, Zh, offsets) + noise[l, t]   # alpha X_i z_i^(t+1/2) + p_i
            iterates[l, t] = q
        q_norm = float(np.linalg.norm(q))
        Q[:, l] = q / q_norm if q_norm > 0 else q
        if l + 1 < r:
            for i in range(m):                  # z @ z per agent, as the engine's agents compute it
                deflation[l, i] = deflation_vector(q_norm, alpha, Zh[i])
            X = X - Q[:, l, None] * deflation[l][owner]           # X_i - outer(q_hat_i, b_i)

    return RunResult(Q=Q, iterates=iterates, z=z_all, z_half=zh_all, noise=noise, data=tuple(used),
                     deflation=deflation, params=params, backend="matrix",
                     seed_entropy=_entropy(seq), states=states)


def _check_run(data: object, network: object, params: object,
               seed: object) -> np.random.SeedSequence:
    """The boundary checks of :func:`run_matrix`: ``data`` a ``PartitionedData``, ``network`` a
    ``Network`` with a doubly stochastic ``W`` on ``data.m`` agents, ``params`` a ``ProtocolParams``
    with ``rank <= min(n, d)``, ``seed`` a non-negative integer or ``SeedSequence`` (returned as a
    ``SeedSequence``)."""
    data = check_data(data)
    check_network(network, data.m)
    params = check_params(params)
    if params.rank > min(data.n, data.d):
        raise ConfigError(f"params.rank must be <= min(n, d) = {min(data.n, data.d)}, got "
                          f"{params.rank}", field="params.rank")
    return check_seed(seed)


def _entropy(seq: np.random.SeedSequence) -> int | None:
    ent = seq.entropy
    return int(ent) if isinstance(ent, (int, np.integer)) else None
