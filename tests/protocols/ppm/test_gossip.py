"""ppm-gossip (Nicolas et al.'s Algorithm 2 with the sum replaced by gossip rounds and pairwise
masks), docs/ppm.md."""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest

from dpgossip.errors import ConfigError
from dpgossip.protocols.ppm.central import (
    PpmParams,
    federated_standard_noise,
    orthonormalise,
    run_ppm,
    run_ppm_federated,
)
from dpgossip.protocols.ppm.gossip import (
    PpmGossipParams,
    edge_list,
    edge_masks,
    mask_shares,
    run_ppm_gossip,
)
from tests.protocols.ppm.ppm_gossip_helpers import (
    dense_W,
    metropolis_network,
    partitioned,
    random_graph,
    rounds_for,
    slem,
)

PPM = PpmParams(p=3, k=2, iterations=4, noise_multiplier=0.8)


def _large_c(data, network, ppm, mask_std, seed):
    """``c`` with ``slem^c * scale < 1e-13``, ``scale`` bounding ``s ||S^(0) - mean||`` of a one-round run."""
    probe = run_ppm_gossip(data, network, PpmGossipParams(ppm=ppm, consensus_steps=1, mask_std=mask_std),
                           seed)
    S0 = probe.states[:, 0]
    scale = data.m * math.sqrt(data.m) * float(np.max(np.abs(S0 - S0.mean(axis=1, keepdims=True))))
    return rounds_for(network, scale)


@pytest.mark.parametrize("graph", ["ring", "random"])
@pytest.mark.parametrize("mask_std", [0.0, 3.0])
@pytest.mark.parametrize("adjacency", ["row-replacement", "element"])
def test_large_c_every_agent_equals_the_federated_and_the_central_run(graph, mask_std, adjacency):
    G = nx.cycle_graph(6) if graph == "ring" else random_graph(8, seed=1)
    network, data = metropolis_network(G), partitioned(G.number_of_nodes())
    ppm = PpmParams(p=3, k=2, iterations=4, noise_multiplier=0.8, adjacency=adjacency)
    c = _large_c(data, network, ppm, mask_std, seed=7)
    run = run_ppm_gossip(data, network, PpmGossipParams(ppm=ppm, consensus_steps=c, mask_std=mask_std), 7)
    fed = run_ppm_federated(data, ppm, seed=7)
    central = run_ppm(data, ppm, seed=7,
                      standard_noise=federated_standard_noise(7, data.m, data.d, ppm))
    for ref in (fed, central):
        np.testing.assert_allclose(run.iterates, np.broadcast_to(ref.iterates[:, None], run.iterates.shape),
                                   atol=1e-10, rtol=0)
        np.testing.assert_allclose(run.sensitivities, np.broadcast_to(ref.sensitivities[:, None],
                                                                      run.sensitivities.shape), atol=1e-10)
    # the noise shares are the federated run's own draws: their sum is its total noise
    np.testing.assert_allclose(run.noise.sum(axis=1), fed.noise, atol=1e-12)
    np.testing.assert_allclose(run.components, fed.components, atol=1e-10)


def test_a_complete_graph_with_uniform_weights_agrees_after_one_round():
    G = nx.complete_graph(5)
    W = np.full((5, 5), 0.2)
    from dpgossip.topology.network import Network
    network, data = Network(graph=nx.freeze(G), W=W), partitioned(5)
    run = run_ppm_gossip(data, network, PpmGossipParams(ppm=PPM, consensus_steps=1, mask_std=2.0), 3)
    fed = run_ppm_federated(data, PPM, seed=3)
    np.testing.assert_allclose(run.iterates[-1], np.broadcast_to(fed.basis, run.iterates[-1].shape),
                               atol=1e-10)


def test_masks_cancel_exactly_and_the_network_sum_is_kept_in_every_round():
    network, data = metropolis_network(random_graph(8, seed=2)), partitioned(8)
    masked = run_ppm_gossip(data, network, PpmGossipParams(ppm=PPM, consensus_steps=6, mask_std=50.0), 4)
    plain = run_ppm_gossip(data, network, PpmGossipParams(ppm=PPM, consensus_steps=6, mask_std=0.0), 4)
    shares = mask_shares(masked.masks.swapaxes(0, 1), masked.edges, data.m)  # (s, L, d, p)
    assert np.max(np.abs(shares)) > 10.0
    # +M_ij at i and -M_ij at j: each agent's share is rounded once per edge, so the total over agents
    # is zero up to that rounding, entry by entry
    total = shares.sum(axis=0)
    assert np.all(np.abs(total) <= 8 * np.finfo(float).eps * np.abs(shares).sum(axis=0))
    # 1^T W = 1^T: every round's network sum is sum_i (X_i^T X_i V_i + G_i), masks or not
    for l in range(PPM.iterations):
        V = masked.iterates[l]
        inputs = np.stack([data.block(i).T @ data.block(i) @ V[i] for i in range(data.m)])
        target = (inputs + masked.noise[l]).sum(axis=0)
        for k in range(7):
            np.testing.assert_allclose(masked.states[l, k].sum(axis=0), target, atol=1e-11)
    np.testing.assert_array_equal(masked.iterates[0], plain.iterates[0])
    np.testing.assert_array_equal(masked.noise[0], plain.noise[0])  # the mask streams disturb no draw


def test_edge_masks_follow_the_documented_stream_convention():
    network, data = metropolis_network(nx.cycle_graph(5)), partitioned(5)
    run = run_ppm_gossip(data, network, PpmGossipParams(ppm=PPM, consensus_steps=2, mask_std=1.5), 11)
    edges = edge_list(network)
    assert edges.tolist() == [[0, 1], [0, 4], [1, 2], [2, 3], [3, 4]]
    for e, (i, j) in enumerate(edges):
        seq = np.random.SeedSequence(11, spawn_key=(2, int(i), int(j)))
        draw = 1.5 * np.random.default_rng(seq).standard_normal((PPM.iterations, data.d, PPM.p))
        np.testing.assert_array_equal(run.masks[:, e], draw)
    # agent 0 adds M_01 and M_04 (it is the lower end of both)
    l = 1
    V = run.iterates[l]
    own = data.block(0).T @ data.block(0) @ V[0] + run.noise[l, 0]
    np.testing.assert_allclose(run.states[l, 0, 0], own + run.masks[l, 0] + run.masks[l, 1], atol=1e-13)
    assert edge_masks(11, edges, (2, 2), 0.0).shape == (5, 2, 2)


def test_the_transcript_is_W_to_the_k_and_each_iterate_the_qr_of_s_times_the_last_state():
    network, data = metropolis_network(random_graph(7, seed=3)), partitioned(7)
    run = run_ppm_gossip(data, network, PpmGossipParams(ppm=PPM, consensus_steps=4, mask_std=1.0), 5)
    W = dense_W(network)
    for l in range(PPM.iterations):
        S0 = run.states[l, 0].reshape(data.m, -1)
        for k in range(5):
            np.testing.assert_allclose(run.states[l, k].reshape(data.m, -1),
                                       np.linalg.matrix_power(W, k) @ S0, atol=1e-12)
        for i in range(data.m):
            np.testing.assert_allclose(run.iterates[l + 1, i],
                                       orthonormalise(data.m * run.states[l, 4, i]), atol=1e-12)
    assert run.messages.shape == (PPM.iterations, 4, data.m, data.d, PPM.p)


def test_the_same_seed_gives_bit_identical_runs_and_another_seed_does_not():
    network, data = metropolis_network(nx.cycle_graph(6)), partitioned(6)
    params = PpmGossipParams(ppm=PPM, consensus_steps=5, mask_std=2.0)
    a, b = (run_ppm_gossip(data, network, params, np.random.SeedSequence(9)) for _ in range(2))
    for name in ("iterates", "states", "noise", "masks", "sensitivities"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    c = run_ppm_gossip(data, network, params, 10)
    assert not np.array_equal(a.states, c.states)
    row = a.to_row()
    assert row["consensus_steps"] == 5 and row["mask_std"] == 2.0 and row["clients"] == 6
    assert row["edges"] == 6 and row["seed"] == 9


def test_finite_c_leaves_a_disagreement_of_about_slem_to_the_c():
    network, data = metropolis_network(nx.cycle_graph(8)), partitioned(8)
    gaps = []
    for c in (5, 10, 20, 40):
        run = run_ppm_gossip(data, network, PpmGossipParams(ppm=PPM, consensus_steps=c), 2)
        gaps.append(run.disagreement)
    lam = slem(network)
    # measured: the gap shrinks with c, by roughly slem^c (ratios within a loose factor)
    assert gaps[0] > gaps[1] > gaps[2] > gaps[3]
    assert gaps[3] < 1e3 * lam ** 40


@pytest.mark.parametrize("kwargs, field", [
    ({"consensus_steps": 0}, "consensus_steps"),
    ({"consensus_steps": 2.5}, "consensus_steps"),
    ({"consensus_steps": True}, "consensus_steps"),
    ({"consensus_steps": 2, "mask_std": -1.0}, "mask_std"),
    ({"consensus_steps": 2, "mask_std": float("nan")}, "mask_std"),
    ({"consensus_steps": 2, "mask_std": "big"}, "mask_std"),
])
def test_bad_parameters_name_their_field(kwargs, field):
    with pytest.raises(ConfigError) as caught:
        PpmGossipParams(ppm=PPM, **kwargs)
    assert caught.value.field == field and str(caught.value).startswith(field)


def test_bad_inputs_name_their_field():
    network, data = metropolis_network(nx.cycle_graph(6)), partitioned(6)
    with pytest.raises(ConfigError) as caught:
        PpmGossipParams(ppm={"p": 3}, consensus_steps=2)
    assert caught.value.field == "ppm"
    params = PpmGossipParams(ppm=PPM, consensus_steps=2)
    with pytest.raises(ConfigError, match="network has 5 agents but data has 6") as caught:
        run_ppm_gossip(data, metropolis_network(nx.cycle_graph(5)), params, 0)
    assert caught.value.field == "network"
    with pytest.raises(ConfigError) as caught:
        run_ppm_gossip(data, network, PpmGossipParams(ppm=PpmParams(p=7, k=1, iterations=1,
                                                                    noise_multiplier=1.0),
                                                      consensus_steps=1), 0)
    assert caught.value.field == "params.p"
    with pytest.raises(ConfigError) as caught:
        run_ppm_gossip(data.X, network, params, 0)
    assert caught.value.field == "data"


def test_the_states_are_sized_before_they_are_allocated(monkeypatch):
    monkeypatch.setenv("DPGOSSIP_MEMORY_LIMIT", "1MB")
    network, data = metropolis_network(nx.cycle_graph(6)), partitioned(6)
    with pytest.raises(ConfigError, match="consensus_steps = 100000") as caught:
        run_ppm_gossip(data, network, PpmGossipParams(ppm=PPM, consensus_steps=100_000), 0)
    assert caught.value.field == "consensus_steps"
