"""The auditor against the simulator (docs/model.md, Section 5), never only against itself.

1. Exactness: the release model's matrices, applied to a run's realised noise, reproduce every message of
   the engine's transcript.
2. Distribution: over many engine runs, an observer's view (built from the messages it actually received)
   whitened by the auditor's covariance has mean ~ 0 and covariance ~ I.

Both on the paper's 4-agent ring, a 3 x 3 grid and a random connected graph (NETWORKS). The attack of
Section 5.3 on the same networks is in :mod:`tests.protocols.ddppm.test_attack`.
"""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from scipy import stats

from dpgossip.protocols.ddppm.nodes import run_engine
from dpgossip.protocols.ddppm.operators import view_operator
from dpgossip.protocols.ddppm.params import NoiseSchedule, resolve_params
from dpgossip.protocols.ddppm.release import build_release_model
from dpgossip.protocols.ddppm.transcript_view import ddppm_view_residual
from dpgossip.protocols.ddppm.views import make_view, receive_basis, view_spec
from dpgossip.topology.network import Network
from tests.conftest import PAPER_W, net_from_graph, spiked_data

NETWORKS = {
    "paper-ring4": lambda: Network(graph=nx.cycle_graph(4), W=PAPER_W, name="paper-ring4"),
    "grid-3x3": lambda: net_from_graph(nx.convert_node_labels_to_integers(nx.grid_2d_graph(3, 3))),
    "random-10": lambda: net_from_graph(nx.connected_watts_strogatz_graph(10, 4, 0.3, seed=4)),
}


@pytest.mark.parametrize("name", list(NETWORKS))
@pytest.mark.parametrize("T, c, rank", [(4, 3, 1), (3, 1, 2)])
def test_model_reproduces_engine_transcript(name, T, c, rank):
    net = NETWORKS[name]()
    data = spiked_data(3 * net.m, 4, [3, 2, 1, .4], net.m, seed=5)
    p = resolve_params(data, net, iterations=T, consensus_steps=c, rank=rank,
                       noise=NoiseSchedule(kind="geometric", scale=0.5))
    res = run_engine(data, net, p, 17)
    transcript = res.transcript
    assert transcript, "the engine recorded no messages"
    checked = {"gossip": 0, "final": 0}
    for l in range(rank):
        # component l runs on the data deflated after the earlier components (res.data[l])
        model = build_release_model(data, net.dense_W(), T=T, c=c, alpha=p.alpha[l], sigma_q=p.sigma_q,
                                    sigma_p=p.sigma_p[l], X=res.data[l])
        w = res.noise[l].ravel()
        states = model.predict_states(w)
        final = model.predict_final(w)
        scale = max(np.abs(states).max(), 1e-300)
        for rec in transcript:
            tag = rec.tag
            if tag[0] == "final" and tag[1] == l:
                for o, block in rec.final_blocks().items():
                    expect = final[data.offsets[o]:data.offsets[o + 1]]
                    np.testing.assert_allclose(block, expect, rtol=1e-9,
                                               atol=1e-9 * np.abs(final).max())
                    checked["final"] += 1
            elif isinstance(tag[0], (int, np.integer)) and tag[0] == l:
                _, t, k = tag
                np.testing.assert_allclose(rec.payload, states[t - 1, k - 1, rec.src], rtol=1e-9,
                                           atol=1e-9 * scale)
                checked["gossip"] += 1
    edges = net.graph.number_of_edges()
    assert checked["gossip"] == rank * T * c * 2 * edges  # every gossip message was checked
    assert checked["final"] >= rank * net.m
    # the kind's view_residual (the contract's check) agrees, with the deflation rebuilt from the transcript
    assert ddppm_view_residual(res, data, net) <= 1e-10


def observer_view_from_run(res, data, net, p, o: int) -> np.ndarray:
    """The observer's joint view, assembled only from what agent ``o`` received or holds itself."""
    T, c = p.iterations, p.consensus_steps
    B = receive_basis(net.graph, net.dense_W(), [o], c)
    senders = [l for l in sorted(net.graph.neighbors(o))]
    # raw received rows K_o z with K_o = [e_l^T W^k]; B = A (K_o P), P removing o's own coordinate
    K = np.vstack([np.linalg.matrix_power(net.dense_W(), k)[senders] for k in range(c)])
    KP = K.copy()
    KP[:, o] = 0.0
    A = B @ np.linalg.pinv(KP)
    received = {}
    finals = {}
    for rec in res.transcript:
        if rec.dst != o:
            continue
        if rec.tag[0] == "final":
            finals.update(rec.final_blocks())
        else:
            _, t, k = rec.tag
            received[(t, k, rec.src)] = rec.payload
    parts = []
    for t in range(1, T + 1):
        raw = np.vstack([received[(t, k + 1, l)] for k in range(c) for l in senders])
        z_own = res.z[0, t - 1, o]  # the observer's own z_o^(t), computed by itself
        parts.append((A @ raw - np.outer(A @ K[:, o], z_own)).ravel())
    parts.append(np.concatenate([finals[j] for j in range(net.m) if j != o]))
    own = np.arange(data.offsets[o], data.offsets[o + 1])
    parts.append(np.concatenate([res.noise[0, s, own] for s in range(T + 1)]))
    return np.concatenate(parts)


# observer of the distribution and attack checks, and the agent whose data the attack changes: on the ring
# the paper's pair (neighbours); on the larger graphs a low-degree agent (grid: the edge midpoint 3, degree
# 3; random-10: agent 1, degree 2) that receives only part of the gossip, and a target two hops away (not
# its neighbour)
OBSERVER_TARGET = {"paper-ring4": (0, 1), "grid-3x3": (3, 1), "random-10": (1, 0)}


def distribution_problem(name: str):
    """Network ``name``, 4 m x 3 spiked data (n_i = 4 >= d = 3, so no agent's z is confined), constant
    noise 0.3, T = 3, c = 2."""
    net = NETWORKS[name]()
    data = spiked_data(4 * net.m, 3, [2, 1, .5], net.m, seed=1)
    p = resolve_params(data, net, iterations=3, consensus_steps=2,
                       noise=NoiseSchedule(kind="constant", scale=0.3))
    return net, data, p


@pytest.mark.parametrize("name", [pytest.param(n, marks=() if n == "paper-ring4" else pytest.mark.slow)
                                  for n in NETWORKS])  # the grid and random graph: -m slow
def test_observer_view_distribution_matches_auditor(name):
    """Whitened by the auditor's covariance, simulated views are N(0, I): Hotelling's test on the mean and
    entry-wise bounds on the sample covariance (tolerances from the sample size)."""
    net, data, p = distribution_problem(name)
    T, c = p.iterations, p.consensus_steps
    o, target = OBSERVER_TARGET[name]
    std = np.concatenate([np.full(data.n, p.sigma_q)] + [np.full(data.n, s) for s in p.sigma_p[0]])
    spec = view_spec(make_view("observer", m=net.m, agents=(o,), target=target), net.graph, net.dense_W(),
                     c=c, T=T, offsets=data.offsets, latent_std=std)
    if name != "paper-ring4":
        # a target that is not the observer's neighbour, and an observer that sees part of the gossip:
        # the rank of its received messages is below m - 1 (everything but its own coordinate; on the
        # ring, c = 2 rounds from agents 1 and 3 span all of it)
        assert nx.shortest_path_length(net.graph, o, target) == 2
        assert 0 < spec.B.shape[0] < net.m - 1
    op = view_operator(data.X, data.offsets, net.dense_W(), T=T, c=c, alpha=p.alpha[0], latent_std=std,
                       spec=spec)
    ev, vec = np.linalg.eigh(op.covariance())
    keep = ev > ev.max() * 1e-10
    runs = 3000
    V = np.array([observer_view_from_run(run_engine(data, net, p, s), data, net, p, o)
                  for s in range(runs)])
    assert V.shape[1] == op.K
    # exact linear dependencies of the model (if any) hold in every simulated view
    null = vec[:, ~keep]
    if null.shape[1]:
        assert np.abs(V @ null).max() <= 1e-8 * np.abs(V).max()
    U = (V @ vec[:, keep]) / np.sqrt(ev[keep])
    k = U.shape[1]
    mean = U.mean(axis=0)
    # Hotelling / chi-square: runs * ||mean||^2 ~ chi2(k) when the whitened covariance is I
    p_mean = stats.chi2.sf(runs * float(mean @ mean), k)
    assert p_mean > 1e-4, f"mean test p = {p_mean:.2e}"
    C = np.cov(U.T)
    off = C - np.diag(np.diag(C))
    # off-diagonal entries have sd 1/sqrt(runs), diagonal entries sd sqrt(2/runs)
    assert np.abs(off).max() < 6 / np.sqrt(runs)
    assert np.abs(np.diag(C) - 1).max() < 6 * np.sqrt(2 / runs)
    # the check has teeth: the same statistics reject a model whose noise levels are 10 % too large
    wrong = view_operator(data.X, data.offsets, net.dense_W(), T=T, c=c, alpha=p.alpha[0],
                          latent_std=1.1 * std, spec=spec)
    ev_w, vec_w = np.linalg.eigh(wrong.covariance())
    keep_w = ev_w > ev_w.max() * 1e-10
    Cw = np.cov(((V @ vec_w[:, keep_w]) / np.sqrt(ev_w[keep_w])).T)
    assert np.abs(np.diag(Cw) - 1).max() >= 6 * np.sqrt(2 / runs)
