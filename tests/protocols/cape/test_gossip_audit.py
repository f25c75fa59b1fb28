"""capepca-gossip's view audits against a dense oracle built from the protocol's own recorded messages over
every upper-triangle entry (no per-entry reduction), at tiny sizes (docs/cape-gossip.md, Section 3)."""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest

from dpgossip.data.partition import PartitionedData
from dpgossip.errors import ConfigError
from dpgossip.protocols.cape.gossip import CapeGossipNoise, CapeGossipParams, run_cape_gossip
from dpgossip.protocols.cape.gossip_audit import audit_cape_gossip
from dpgossip.protocols.ppm.gossip import edge_list
from tests.conftest import net_from_graph

D_SIDE, ROWS = 2, 3
IU = np.triu_indices(D_SIDE)


def _messages(net, params, X, noise, senders):
    data = PartitionedData(X=X, sizes=(ROWS,) * net.m)
    states = run_cape_gossip(data, net, params, 0, noise=noise, record_states=True).states
    return np.concatenate([states[k, l][IU] for k in range(params.consensus_steps) for l in senders])


def _unit(d, a, b):
    M = np.zeros((d, d))
    M[a, b] = M[b, a] = 1.0
    return M


def _dense_mu2(net, params, senders, known_edges, known_sites, target):
    """``Delta^T (B B^T)^+ Delta`` from messages the protocol sends (latent noise one unit at a time)."""
    m, E = net.m, edge_list(net)
    tau_e, tau_g = params.stds(ROWS)
    zeroD, zeroG = np.zeros((len(E), D_SIDE, D_SIDE)), np.zeros((m, D_SIDE, D_SIDE))
    X0 = np.zeros((m * ROWS, D_SIDE))
    cols = []
    for e in range(len(E)):
        if e in known_edges:
            continue
        for a, b in zip(*IU, strict=True):
            D = zeroD.copy()
            D[e] = tau_e * _unit(D_SIDE, a, b)
            cols.append(_messages(net, params, X0, CapeGossipNoise(edges=E, D=D, G=zeroG), senders))
    for s in sorted(set(range(m)) - set(known_sites)):
        for a, b in zip(*IU, strict=True):
            G = zeroG.copy()
            G[s] = tau_g * _unit(D_SIDE, a, b)
            cols.append(_messages(net, params, X0, CapeGossipNoise(edges=E, D=zeroD, G=G), senders))
    B = np.column_stack(cols)
    X, Xn = X0.copy(), X0.copy()
    X[target * ROWS] = [1.0, 0.0]                               # x = e_1 -> x' = e_2: ||triu C|| = sqrt 2
    Xn[target * ROWS] = [0.0, 1.0]
    silent = CapeGossipNoise(edges=E, D=zeroD, G=zeroG)
    shift = _messages(net, params, Xn, silent, senders) - _messages(net, params, X, silent, senders)
    coef = np.linalg.lstsq(B, shift, rcond=None)[0]
    assert np.linalg.norm(B @ coef - shift) <= 1e-9 * max(np.linalg.norm(shift), 1e-300)
    return float(shift @ np.linalg.pinv(B @ B.T, rcond=1e-12, hermitian=True) @ shift)


CASES = [
    (nx.cycle_graph(4), 2, "neighbour", {"agents": [0]}, [1, 2]),
    (nx.path_graph(4), 3, "neighbour", {"agents": [1]}, [0, 3]),
    (nx.cycle_graph(5), 2, "coalition", {"agents": [0, 2]}, [1, 3]),
    (nx.star_graph(3), 1, "eavesdropper", {"edges": [(0, 1)]}, [0, 1, 2]),
]


@pytest.mark.parametrize("graph, c, view, kw, targets", CASES)
def test_kappa_matches_the_dense_view_of_the_protocols_messages(graph, c, view, kw, targets):
    net = net_from_graph(graph)
    params = CapeGossipParams(k=1, consensus_steps=c, edge_multiplier=2.0, own_multiplier=0.7)
    pairs = {p.target: p for p in audit_cape_gossip(net, params, (ROWS,) * net.m, view=view, **kw)}
    own = set(kw.get("agents", ()))
    if view == "eavesdropper":
        senders = sorted({v for e in kw["edges"] for v in e})
    else:
        senders = sorted({l for o in own for l in net.graph.neighbors(o)} - own)
    E = edge_list(net)
    known_edges = {e for e, (i, j) in enumerate(E) if i in own or j in own}
    dense = {t: _dense_mu2(net, params, senders, known_edges, own, t) for t in targets}
    for t in targets:
        assert pairs[t].mu ** 2 == pytest.approx(dense[t], rel=1e-9, abs=1e-12)
    assert max(dense.values()) > 0
    if view == "eavesdropper":
        assert dense[2] == 0.0                  # one round on (0, 1): site 2's data never cross it


def test_a_coalition_holding_every_edge_of_a_site_sees_its_own_noise_only():
    net = net_from_graph(nx.cycle_graph(5))
    params = CapeGossipParams(k=1, consensus_steps=2, edge_multiplier=5.0, own_multiplier=0.5)
    pairs = {p.target: p for p in audit_cape_gossip(net, params, (10,) * 5, view="coalition",
                                                    agents=[0, 2])}
    tau_g = params.stds(10)[1]
    assert pairs[1].kappa == pytest.approx(1 / tau_g**2)            # both of site 1's draws cancel
    assert pairs[1].mu == pytest.approx(math.sqrt(2) / 10 / tau_g)
    lone = {p.target: p for p in audit_cape_gossip(net, params, (10,) * 5, agents=[0])}
    assert lone[1].kappa < pairs[1].kappa


def test_random_row_changes_never_exceed_the_closed_form_worst_case():
    net = net_from_graph(nx.cycle_graph(4))
    params = CapeGossipParams(k=1, consensus_steps=2, edge_multiplier=2.0, own_multiplier=0.7)
    worst = {p.target: p.mu ** 2 for p in audit_cape_gossip(net, params, (ROWS,) * 4, agents=[0])}
    rng = np.random.default_rng(1)
    for _ in range(200):
        x, y = rng.standard_normal((2, D_SIDE))
        x *= rng.uniform(0, 1) / np.linalg.norm(x)
        y *= rng.uniform(0, 1) / np.linalg.norm(y)
        v = (np.outer(y, y) - np.outer(x, x))[IU] / ROWS           # triu(A_s' - A_s)
        assert worst[1] / (2 / ROWS**2) * (v @ v) <= worst[1] * (1 + 1e-12)   # mu^2 = kappa ||v||^2


def test_bad_views_are_refused():
    net = net_from_graph(nx.cycle_graph(4))
    params = CapeGossipParams(k=1, consensus_steps=2, edge_multiplier=1.0, own_multiplier=1.0)
    with pytest.raises(ConfigError) as err:
        audit_cape_gossip(net, params, (3,) * 4, view="eavesdropper", edges=[(0, 2)])
    assert err.value.field == "edges"
    with pytest.raises(ConfigError) as err:
        audit_cape_gossip(net, params, (3,) * 4, view="neighbour", agents=[0, 1])
    assert err.value.field == "agents"
