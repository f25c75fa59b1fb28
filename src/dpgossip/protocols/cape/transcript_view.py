r"""The views of the capePCA kinds rebuilt from an engine run's transcript, against the release model
(the kinds' ``view_residual``; :mod:`dpgossip.protocols.transcript_views`).

**capepca, the aggregator** (Imtiaz and Sarwate, Alg. 2; docs/cape.md). Site ``s`` uploads (tag ``(0, 1, 1)``)

    Ahat_s = A_s + E_s + F_s + G_s,        A_s = X_s^T X_s / N_s,

the aggregator knows its own ``F`` and forms ``Ahat = (1/S) sum_s (Ahat_s - F_s)``, whose top-``k``
eigenvectors it releases (tag ``(0, 1, 2)``). The residual compares every upload with ``A_s`` of the data
plus the run's ``E_s + F_s + G_s``, the aggregate rebuilt from the uploads with the model's
``(1/S) sum_s (A_s + E_s + G_s)``, and the release with the model aggregate's top eigenvectors; the
shares ``E_s`` (generator to site, tag ``(0, 0, 1)``) and ``F_s`` (aggregator to site, ``(0, 0, 2)``),
outside the aggregator's view, are compared with the run's draws too, so every message is checked.

**capepca-gossip, a site and its neighbours** (:mod:`dpgossip.protocols.cape.gossip_audit`). Site ``l``
sends in round ``k`` (tag ``(0, 1, k)``) ``e_l^T W^(k-1) Y^(0)`` with

    Y^(0)_s = A_s + sum_{j in N(s)} sign(s, j) D_sj + G_s        (``+`` at an edge's lower end),

which is one site's release (round 1) and every neighbour's or coalition's view (the messages it
receives). Each site's estimate ``Y_s^(c)``, rebuilt from the round-``c`` messages, is compared with the
run's record. Under a schedule the messages are checked against ``e_l^T Phi_{k-1} Y^(0)`` of the recorded
``W_t`` and the estimates rebuilt forward (docs/dynamic-gossip.md, section 8).
"""

from __future__ import annotations

import numpy as np

from dpgossip.data.partition import PartitionedData
from dpgossip.protocols.cape.gossip import CapeGossipResult, second_moments
from dpgossip.protocols.cape.nodes import CapeEngineResult
from dpgossip.protocols.cape.parties import E_SHARE, F_SHARE, RELEASE, UPLOAD
from dpgossip.protocols.cape.star import CapeResult, top_eigenvectors
from dpgossip.protocols.gossip.round_mixing import RoundMixing
from dpgossip.protocols.transcript_views import (
    gossip_residual,
    largest_difference,
    messages_of,
    mixed_states,
    schedule_residual,
    schedule_states,
)
from dpgossip.topology.network import Network

__all__ = ["aggregator_view_residual", "gossip_view_residual"]


def aggregator_view_residual(record: CapeEngineResult, data: PartitionedData) -> float:
    """capePCA's aggregator view rebuilt from the transcript against the release model (module
    docstring); ``inf`` for a stopped run or a missing message."""
    res: CapeResult | None = record.result
    S = data.m
    sent = {tag: messages_of(record.transcript, tag) for tag in (E_SHARE, F_SHARE, UPLOAD, RELEASE)}
    links = {E_SHARE: [(S + 1, s) for s in range(S)], F_SHARE: [(S, s) for s in range(S)],
             UPLOAD: [(s, S) for s in range(S)], RELEASE: [(S, s) for s in range(S)]}
    if res is None or any(sorted(sent[tag]) != links[tag] for tag in links):
        return float("inf")
    noise = res.noise
    model = second_moments(data) + noise.E + noise.F + noise.G
    got = np.stack([sent[UPLOAD][(s, S)] for s in range(S)])
    aggregate = np.mean(got - noise.F, axis=0)
    model_aggregate = np.mean(model - noise.F, axis=0)
    top = top_eigenvectors(model_aggregate)[1][:, : res.params.k]
    shares = [(sent[E_SHARE][(S + 1, s)], noise.E[s]) for s in range(S)]
    shares += [(sent[F_SHARE][(S, s)], noise.F[s]) for s in range(S)]
    return largest_difference([(got, model), (aggregate, model_aggregate), (res.aggregate, model_aggregate),
                               *((r, top) for r in sent[RELEASE].values()), *shares])


def gossip_view_residual(record: CapeEngineResult, data: PartitionedData, network: Network) -> float:
    """capepca-gossip's site and neighbour views rebuilt from the transcript against the release model
    (module docstring); ``inf`` for a stopped run or a missing message."""
    res: CapeGossipResult | None = record.result
    if res is None:
        return float("inf")
    Y0 = second_moments(data) + res.noise.G
    for e, (i, j) in enumerate(res.noise.edges):
        Y0[i] += res.noise.D[e]
        Y0[j] -= res.noise.D[e]
    c = res.params.consensus_steps
    if res.schedule is not None:
        mixing = RoundMixing(network, res.schedule, c)
        rebuilt = schedule_states(record.transcript, mixing, (0, 1), 0, c)[-1]
        known = ~np.isnan(rebuilt).reshape(rebuilt.shape[0], -1).any(axis=1)
        pairs = [(res.initial, Y0)] + ([(rebuilt[known], res.estimates[known])] if known.any() else [])
        return max(schedule_residual(record.transcript, mixing, {(0, 1): Y0}, {(0, 1): 0}, c),
                   largest_difference(pairs))
    return max(gossip_residual(record.transcript, network, {(0, 1): Y0}, c),
               largest_difference([(res.initial, Y0),
                                   (mixed_states(record.transcript, network, (0, 1), c), res.estimates)]))
