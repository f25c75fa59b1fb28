r"""The views of the D-DP-PM kinds rebuilt from an engine run's transcript, against the release model
(the kinds' ``view_residual``; :mod:`dpgossip.protocols.transcript_views`).

**ddppm-floorfree, the eavesdropper** (:mod:`dpgossip.protocols.ddppm.floorfree_audit`; docs/floorfree.md).
In iteration ``t`` agent ``l`` sends in round ``k`` (tag ``(0, t, k)``) ``e_l^T W^(k-1) z~^(t)`` with

    z~_i^(t) = X_i^T X_i u_i^(t-1) + e_i^(t),

and with dissemination every agent floods ``q_o^(T) = X_o u_o^(T) + p_o`` (tag ``(1, T + 1, o)``). An
eavesdropper on every edge holds every message. The residual compares each gossip and flood message
with the model (``e``, ``p`` the run's noise), the directions ``u_i^(t) = m s_i^(t,c) / ||m s_i^(t,c)||``
rebuilt from the round-``c`` messages (kept when zero) with the run's record, and requires the flood's
messages to be exactly those of its rule (the origin sends to every neighbour; every other agent relays
its first copy to every neighbour but the sender).

**ddppm, every observer** (Campbell et al., Algorithm 1; docs/model.md, Section 1,
:mod:`dpgossip.protocols.ddppm.release`). Component ``l``'s messages are linear maps of its latent noise
``w = [q^(0); p^(1); ...; p^(T)]`` on the data deflated after the earlier components: the state
``s^(t,k) = (W^k (x) I_d) z^(t)``, ``z^(t) = D^T A_(t-1) w``, sent in round ``k + 1`` (tag
``(l, t, k + 1)``), and the final ``q^(T) = A_T w`` (``"final"`` batches of tag ``("final", l, ...)``).
Every view the pair audit takes (``VIEW_KINDS``) is a set of these messages; the residual compares each
of them with the model applied to the run's realised ``w``. The model of component ``l + 1`` is built on
the data deflated as the transcript says, ``X_i - q_hat_i b_i^T`` (``q_hat`` the released ``q^(T)``
normalised, ``b_i = (||q^(T)|| / alpha) zh_i / ||zh_i||^2`` with ``zh_i`` rebuilt from the last gossip
round), which is also compared with the data the run's component used.
"""

from __future__ import annotations

import numpy as np

from dpgossip.data.partition import PartitionedData
from dpgossip.protocols.ddppm.engine_result import EngineResult
from dpgossip.protocols.ddppm.floorfree import FloorFreeResult
from dpgossip.protocols.ddppm.floorfree_nodes import FLOOD, FloorFreeEngineResult
from dpgossip.protocols.ddppm.matrix import deflation_vector
from dpgossip.protocols.ddppm.release import build_release_model
from dpgossip.protocols.transcript_views import gossip_residual, largest_difference, mixed_states
from dpgossip.topology.network import Network

__all__ = ["floorfree_view_residual", "ddppm_view_residual"]


def _directions(record: FloorFreeEngineResult, network: Network, res: FloorFreeResult) -> np.ndarray:
    """``(T + 1, m, d)``: ``u^(0)`` (public) then each ``u_i^(t)`` rebuilt from round ``c`` of ``t``."""
    P = res.params
    out = [res.directions[0]]
    for t in range(1, P.iterations + 1):
        zh = network.m * mixed_states(record.transcript, network, (0, t), P.consensus_steps)
        norms = np.linalg.norm(zh, axis=1, keepdims=True)
        out.append(np.where(norms > 0, zh / np.where(norms > 0, norms, 1.0), out[-1]))
    return np.stack(out)


def _flood_residual(record: FloorFreeEngineResult, data: PartitionedData, res: FloorFreeResult,
                    network: Network) -> float:
    """Every flooded block against ``X_o u_o^(T) + p_o``; ``inf`` unless the flood's messages are
    exactly those of its rule: the origin sends its block to every neighbour, and every other agent,
    on its first receipt (the first in the transcript's delivery order), to every neighbour but the
    sender."""
    T, pairs, seen, first = res.params.iterations, [], set(), {}
    for r in record.transcript or ():
        if tuple(r.tag[:2]) == (FLOOD, T + 1):
            o = int(r.tag[2])
            a, b = data.offsets[o], data.offsets[o + 1]
            pairs.append((r.payload, data.block(o) @ res.directions[T, o] + res.noise.p[a:b]))
            seen.add((o, r.src, r.dst))
            first.setdefault((r.dst, o), r.src)
    if len(first.keys() - {(o, o) for o in range(data.m)}) != data.m * (data.m - 1):
        return float("inf")
    expected = {(o, i, j) for o in range(data.m) for i in range(data.m) for j in network.neighbours[i]
                if i == o or j != first.get((i, o))}
    return largest_difference(pairs) if seen == expected else float("inf")


def floorfree_view_residual(record: FloorFreeEngineResult, data: PartitionedData,
                            network: Network) -> float:
    """The floor-free eavesdropper's view rebuilt from the transcript against the release model
    (module docstring); ``inf`` for a stopped run or a missing message."""
    res: FloorFreeResult | None = record.result
    if res is None:
        return float("inf")
    P = res.params
    initial = {(0, t): np.stack([data.block(i).T @ (data.block(i) @ res.directions[t - 1, i])
                                 for i in range(data.m)]) + res.noise.e[t - 1]
               for t in range(1, P.iterations + 1)}
    worst = max(gossip_residual(record.transcript, network, initial, P.consensus_steps),
                largest_difference([(_directions(record, network, res), res.directions)]))
    return max(worst, _flood_residual(record, data, res, network)) if P.disseminate else worst


def _finals(record: EngineResult, data: PartitionedData, l: int) -> tuple[list, np.ndarray | None]:
    """Every final block of component ``l`` as ``(received, origin)`` pairs, and ``q^(T)`` assembled
    from them (``None`` when an agent lacks another's block)."""
    blocks, received = [], set()
    q = np.full(data.n, np.nan)
    for r in record.transcript or ():
        if r.kind == "final" and r.tag[1] == l:
            for o, block in r.final_blocks().items():
                blocks.append((block, o))
                received.add((r.dst, o))
                q[data.offsets[o]:data.offsets[o + 1]] = block
    everyone = {(i, o) for i in range(data.m) for o in range(data.m) if o != i}
    return blocks, (q if received >= everyone else None)


def _deflated(record: EngineResult, data: PartitionedData, X: np.ndarray, network: Network, l: int,
              q: np.ndarray) -> np.ndarray:
    """The data component ``l + 1`` runs on: ``X_i - q_hat_i b_i^T`` with ``q_hat`` the released
    ``q^(T)`` normalised and ``b_i = (||q^(T)|| / alpha) zh_i / ||zh_i||^2``, ``zh = m W^c z^(T)`` rebuilt
    from the last gossip round (``c = 0``: no gossip message, the run's own deflated data)."""
    p = record.params
    if p.consensus_steps == 0:
        return np.asarray(record.data[l + 1], dtype=float)
    zh = data.m * mixed_states(record.transcript, network, (l, p.iterations), p.consensus_steps)
    q_norm = float(np.linalg.norm(q))
    b = np.stack([deflation_vector(q_norm, p.alpha[l], zh[i]) for i in range(data.m)])
    q_hat = q / q_norm if q_norm > 0 else q
    return X - q_hat[:, None] * b[data.agent_of_row()]


def ddppm_view_residual(record: EngineResult, data: PartitionedData, network: Network) -> float:
    """D-DP-PM's messages rebuilt from the transcript against the release model of each component on
    ``data`` (deflated after each component as the transcript says; module docstring); ``inf`` when a
    gossip message or an agent's final block is missing."""
    p, W = record.params, network.dense_W()
    X, pairs, worst = np.asarray(data.X, dtype=float), [], 0.0
    for l in range(p.rank):
        pairs.append((X, record.data[l]))
        model = build_release_model(data, W, T=p.iterations, c=p.consensus_steps, alpha=p.alpha[l],
                                    sigma_q=p.sigma_q, sigma_p=p.sigma_p[l], X=X)
        w = np.asarray(record.noise[l]).ravel()
        z = {(l, t): (model.z_matrix(t) @ w).reshape(model.m, model.d) for t in range(1, p.iterations + 1)}
        worst = max(worst, gossip_residual(record.transcript, network, z, p.consensus_steps))
        blocks, q = _finals(record, data, l)
        if q is None:
            return float("inf")
        final = model.predict_final(w)
        pairs += [(block, final[data.offsets[o]:data.offsets[o + 1]]) for block, o in blocks]
        if l + 1 < p.rank:
            X = _deflated(record, data, X, network, l, q)
    return max(worst, largest_difference(pairs))
