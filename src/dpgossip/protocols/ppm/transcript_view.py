r"""The views of the ``ppm*`` kinds rebuilt from an engine run's transcript, against the release model
(the kinds' ``view_residual``; :mod:`dpgossip.protocols.transcript_views`).

**Curator and server** (``ppm``, ``ppm-federated``; docs/ppm.md). The release of iteration ``l`` is

    Y_l = A X^(l-1) + G_l,    A = X^T X,    G_l = Delta_l sigma Z_l,    Delta_l = Delta(X^(l-1)),

and the public iterate is ``X^l = QR(Y_l)``. From the transcript: ``X^(l-1)`` is the server's broadcast
(tag ``(0, l - 1, 2)``), and the sum of the uploads (tag ``(0, l, 1)``) is ``A X^(l-1)`` for the curator's
noiseless clients, to which the curator adds its own ``G_l``, or directly ``A X^(l-1) + G_l`` for the
federated server (the clients' noise shares sum to ``G_l``, their secure-aggregation masks cancel). The
residual compares that rebuilt ``Y_l`` with the model's (``A`` from the data, ``G_l`` the run's noise),
the broadcast ``X^l`` with ``QR`` of the model's ``Y_l``, and the recorded ``Delta_l`` with
``Delta(X^(l-1))`` of the broadcast iterate.

**ppm-gossip** (:mod:`dpgossip.protocols.ppm.gossip_audit`). At iteration ``l`` agent ``i`` sends, in
round ``k``, ``S_i^(k-1) = e_i^T W^(k-1) S^(0)`` with

    S^(0)_i = X_i^T X_i V_i^(l-1) + Delta_l(V_i^(l-1)) nu z_i + sum_{j in N(i)} sign(i, j) M_ij,

which covers every single agent's and coalition's view (the messages it receives). The ``sum`` view is
``1^T S^(0) = sum_i (X_i^T X_i V_i^(l-1) + n_i z_i)`` (the masks cancel), rebuilt as the sum of the
round-1 messages. The iterates ``V_i^(l) = QR(s S_i^(c))`` entering the model are rebuilt from the
round-``c`` messages (:func:`~dpgossip.protocols.transcript_views.mixed_states`), starting from the public
``V^(0)``, and compared with the run's record, as are the recorded ``Delta_l(V_i^(l-1))``.

Under a schedule (the run's ``schedule``, docs/dynamic-gossip.md, section 8) the messages are checked
against ``e_j^T Phi S^(0)`` of the recorded ``W_t`` and the states are rebuilt forward
(:func:`~dpgossip.protocols.transcript_views.schedule_residual`,
:func:`~dpgossip.protocols.transcript_views.schedule_states`).
"""

from __future__ import annotations

import numpy as np

from dpgossip.data.partition import PartitionedData
from dpgossip.protocols.gossip.round_mixing import RoundMixing
from dpgossip.protocols.ppm.central import PpmResult, orthonormalise
from dpgossip.protocols.ppm.gossip import PpmGossipResult, ppm_mixing
from dpgossip.protocols.ppm.nodes import PpmEngineResult
from dpgossip.protocols.ppm.parties import DOWNLOAD, UPLOAD
from dpgossip.protocols.ppm.sensitivity import iterate_sensitivity
from dpgossip.protocols.transcript_views import (
    gossip_residual,
    largest_difference,
    messages_of,
    mixed_states,
    schedule_residual,
    schedule_states,
)
from dpgossip.topology.network import Network

__all__ = ["star_view_residual", "gossip_view_residual"]


def _broadcast(record: PpmEngineResult, l: int) -> np.ndarray | None:
    """The server's ``X^l``, the same to every client (``None`` when a client lacks it or they differ)."""
    got = messages_of(record.transcript, (0, l, DOWNLOAD))
    if sorted(dst for _, dst in got) != list(range(record.server)):
        return None
    first = next(iter(got.values()))
    return first if all(np.array_equal(v, first) for v in got.values()) else None


def star_view_residual(record: PpmEngineResult, data: PartitionedData) -> float:
    """The curator's (``ppm``) or the server's (``ppm-federated``) view rebuilt from the transcript
    against the release model (module docstring); ``inf`` when a message is missing."""
    res: PpmResult = record.result
    P, X = res.params, np.asarray(data.X, dtype=float)
    pairs = []
    for l in range(1, P.iterations + 1):
        V, after = _broadcast(record, l - 1), _broadcast(record, l)
        uploads = messages_of(record.transcript, (0, l, UPLOAD))
        if V is None or after is None or sorted(src for src, _ in uploads) != list(range(data.m)):
            return float("inf")
        summed = np.sum(np.stack([uploads[(i, record.server)] for i in range(data.m)]), axis=0)
        view = summed if record.kind == "ppm-federated" else summed + res.noise[l - 1]
        model = X.T @ (X @ V) + res.noise[l - 1]
        delta = iterate_sensitivity(V, P.adjacency, P.sensitivity)
        pairs += [(view, model), (res.Y[l - 1], model), (after, orthonormalise(model)),
                  (np.array([res.sensitivities[l - 1]]), np.array([delta]))]
    return largest_difference(pairs)


def _signed_masks(res: PpmGossipResult, l: int, m: int) -> np.ndarray:
    """``(m, d, p)``: ``sum_{j in N(i)} sign(i, j) M_ij`` of iteration ``l`` (``+`` at an edge's lower
    end)."""
    out = np.zeros((m, *res.masks.shape[2:]))
    for e, (i, j) in enumerate(res.edges):
        out[i] += res.masks[l - 1, e]
        out[j] -= res.masks[l - 1, e]
    return out


def gossip_view_residual(record: PpmEngineResult, data: PartitionedData, network: Network) -> float:
    """ppm-gossip's views rebuilt from the transcript against the release model (module docstring)."""
    res: PpmGossipResult = record.result
    if res.schedule is not None:
        return _schedule_view_residual(record, data, ppm_mixing(network, res.params, res.schedule))
    P, c, m = res.params.ppm, res.params.consensus_steps, data.m
    V = res.iterates[0]
    pairs, initial = [], {}
    for l in range(1, P.iterations + 1):
        inputs = np.stack([data.block(i).T @ (data.block(i) @ V[i]) for i in range(m)])
        initial[(0, l)] = inputs + res.noise[l - 1] + _signed_masks(res, l, m)
        round_one = messages_of(record.transcript, (0, l, 1))
        sent = {src: payload for (src, _), payload in round_one.items()}
        if sorted(sent) != list(range(m)):
            return float("inf")
        pairs.append((np.sum(np.stack([sent[i] for i in range(m)]), axis=0),
                      np.sum(inputs + res.noise[l - 1], axis=0)))
        pairs.append((res.sensitivities[l - 1],
                      [iterate_sensitivity(V[i], P.adjacency, P.sensitivity) for i in range(m)]))
        V = np.stack([orthonormalise(m * S) for S in mixed_states(record.transcript, network, (0, l), c)])
        pairs.append((V, res.iterates[l]))
    return max(largest_difference(pairs), gossip_residual(record.transcript, network, initial, c))


def _schedule_view_residual(record: PpmEngineResult, data: PartitionedData, mixing: RoundMixing) -> float:
    """Under a schedule (module docstring): the messages against ``e_j^T Phi S^(0)`` of the recorded
    schedule, the sum view from the rebuilt ``S^(0)`` and the iterates from the rebuilt ``S^(c)``;
    an agent whose state the transcript does not determine keeps the run's iterate (it sent nothing
    in the phase, so no view holds it) and the sum view of a phase with such an agent is not rebuilt."""
    res: PpmGossipResult = record.result
    P, c, m = res.params.ppm, res.params.consensus_steps, data.m
    V = res.iterates[0]
    pairs, initial, starts = [], {}, {}
    for l in range(1, P.iterations + 1):
        inputs = np.stack([data.block(i).T @ (data.block(i) @ V[i]) for i in range(m)])
        initial[(0, l)], starts[(0, l)] = inputs + res.noise[l - 1] + _signed_masks(res, l, m), (l - 1) * c
        states = schedule_states(record.transcript, mixing, (0, l), (l - 1) * c, c)
        if not np.isnan(states[0]).any():
            pairs.append((states[0].sum(axis=0), np.sum(inputs + res.noise[l - 1], axis=0)))
        pairs.append((res.sensitivities[l - 1],
                      [iterate_sensitivity(V[i], P.adjacency, P.sensitivity) for i in range(m)]))
        V = np.stack([res.iterates[l, i] if np.isnan(S).any() else orthonormalise(m * S)
                      for i, S in enumerate(states[-1])])
        pairs.append((V, res.iterates[l]))
    return max(largest_difference(pairs),
               schedule_residual(record.transcript, mixing, initial, starts, c))
