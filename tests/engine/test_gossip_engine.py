"""The gossip protocols on the engine: transcripts equal the linear model's messages ``J x + B z``
(network DP), under ideal links and faults."""

from __future__ import annotations

import numpy as np
import pytest

from dpgossip.engine.transcript import load_transcript
from dpgossip.errors import ConfigError
from dpgossip.protocols.gossip.decor import draw_gossip_noise, edge_list
from dpgossip.protocols.gossip.linear import LinearGossip, observe, simulate_messages, view_values
from dpgossip.protocols.gossip.nodes import gossip_values, run_gossip_engine
from dpgossip.topology import make_network

NETWORKS = {
    "path": lambda: make_network("path", agents=6),
    "star": lambda: make_network("star", agents=6),
    "grid": lambda: make_network("grid", agents=16, params={"rows": 4, "cols": 4}),
    "hypercube": lambda: make_network("hypercube", agents=16),
}
SPECS = [
    LinearGossip(protocol="gossip-average", rounds=4, sigma=0.7),
    LinearGossip(protocol="gossip-noisy", rounds=3, sigma=1.2, inputs="once"),
    LinearGossip(protocol="gossip-noisy", rounds=3, sigma=1.2, inputs="fixed"),
    LinearGossip(protocol="gossip-noisy", rounds=3, sigma=1.2, inputs="per-round"),
    LinearGossip(protocol="gossip-decor", rounds=3, sigma=0.5, sigma_cor=1.5, inputs="fixed"),
    LinearGossip(protocol="gossip-average", rounds=4, sigma=0.7, secure_summation=True),
    LinearGossip(protocol="gossip-noisy", rounds=3, sigma=1.2, inputs="fixed", secure_summation=True),
    LinearGossip(protocol="gossip-decor", rounds=3, sigma=0.5, sigma_cor=1.5, inputs="per-round",
                 secure_summation=True),
]


def _inputs(spec, m, seed=3):
    return np.random.default_rng(seed).normal(size=(spec.data_rounds, m))


def _model(network, spec, x, seed):
    noise = draw_gossip_noise(network, seed, noise_rounds=spec.noise_rounds,
                              secret_rounds=spec.secret_rounds)
    secrets = noise.secrets[..., 0] if spec.secret_rounds else None
    return simulate_messages(network, spec, x, noise.z[..., 0], secrets), noise


def _received(result, network, observers):
    """Per view row, what the observers got in the transcript: the message ``y_w^t`` of each
    outside sender, or with secure summation, per member ``v``, the sum of everything ``v`` received
    in the round (the masks cancel) minus the members' own terms ``W_vb y_b^t`` (they know them)."""
    view = observe(network, result.spec, observers)
    got = {}
    for rec in result.transcript:
        key = (rec.dst, rec.tag[0])
        if rec.dst in observers and rec.src not in observers:
            if view.summed:
                got[key] = got.get(key, 0.0) + float(rec.payload[0])
            else:
                got[(rec.src, rec.tag[0])] = float(rec.payload[0])
        elif rec.dst in observers and view.summed:  # a member's masked term: unmask, drop
            got[key] = got.get(key, 0.0) + float(rec.payload[0]) - network.W[rec.dst, rec.src] * float(
                result.states[rec.tag[0], rec.src, 0])
    return view, np.array([got[(int(a), int(t))] for a, t in view.messages])


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: f"{s.protocol}-{s.inputs}-ss{s.secure_summation:d}")
@pytest.mark.parametrize("name", list(NETWORKS))
def test_transcript_equals_the_linear_model(name, spec):
    network = NETWORKS[name]()
    m = network.m
    x = _inputs(spec, m)
    result = run_gossip_engine(network, spec, x if spec.inputs == "per-round" else x[0], 5)
    assert result.status == "completed" and result.rounds_done == (spec.rounds,) * m
    states, noise = _model(network, spec, x, 5)
    assert np.array_equal(result.noise.z, noise.z) and np.array_equal(result.noise.secrets,
                                                                      noise.secrets)
    assert np.max(np.abs(result.states[..., 0] - states)) < 1e-10
    sent = len(edge_list(network)) * 2 * spec.rounds
    assert len(result.transcript) == sent == result.traffic["delivered"]
    for rec in result.transcript:
        y = states[rec.tag[0], rec.src]
        if not spec.secure_summation:
            assert abs(rec.payload[0] - y) < 1e-10
    # an observer's (a coalition's) received messages are its view rows J x + B z
    for observers in ((1,), (0, m - 1)):
        view, got = _received(result, network, observers)
        xs = x[np.maximum(view.data_index[:, 1], 0), view.data_index[:, 0]]
        zs = noise.z[view.noise_index[:, 1], view.noise_index[:, 0], 0]
        pos = {tuple(e): k for k, e in enumerate(edge_list(network).tolist())}
        vs = np.array([noise.secrets[t, pos[(a, b)], 0] for a, b, t in view.secret_index])
        known = _known_part(network, spec, x, noise, observers, view)
        model = view.J @ xs + view.B @ np.concatenate([zs, vs]) + known
        assert np.max(np.abs(model - got)) < 1e-10


def _known_part(network, spec, x, noise, observers, view):
    """The mean the observers add back: their own inputs, noise and edge secrets pushed through the
    protocol (the view's columns for them were removed)."""
    keep = np.zeros(network.m, dtype=bool)
    keep[list(observers)] = True
    edges = edge_list(network)
    own_edges = np.isin(edges, observers).any(axis=1)
    secrets = noise.secrets[..., 0] * own_edges if spec.secret_rounds else None
    states = simulate_messages(network, spec, x * keep, noise.z[..., 0] * keep, secrets)
    return view_values(network, view, states)


def test_faults_change_times_and_traffic_never_a_value():
    network = NETWORKS["grid"]()
    spec = LinearGossip(protocol="gossip-decor", rounds=3, sigma=0.5, sigma_cor=1.5,
                        secure_summation=True)
    x = _inputs(spec, 16)[0]
    ideal = run_gossip_engine(network, spec, x, 9)
    faulty = run_gossip_engine(network, spec, x, 9, conditions={
        "latency": {"kind": "exponential", "mean": 0.01}, "loss": 0.3, "bandwidth": 1e5,
        "compute_time": 0.001, "retransmit_timeout": 0.05})
    assert faulty.status == "completed" and faulty.traffic["retransmissions"] > 0
    assert np.array_equal(faulty.states, ideal.states)  # each agent mixes in a fixed order
    assert faulty.finished_at > 0 == ideal.finished_at


def test_crash_and_loss_without_retransmission_stop_the_run(tmp_path):
    network = make_network("path", agents=5)
    spec = LinearGossip(protocol="gossip-noisy", rounds=4)
    crashed = run_gossip_engine(network, spec, np.zeros(5), 1,
                                conditions={"latency": {"kind": "constant", "value": 0.1},
                                            "crashes": {2: 0.15}})
    # agent 2 sent rounds 0 and 1; its neighbours computed round 2 and wait for it for good; the
    # ends had only them to wait for, and finished
    assert crashed.status == "stopped" and crashed.rounds_done == (4, 3, 2, 3, 4)
    assert "did not finish (first: [1, 3]); crashed: [2]" in crashed.reason
    assert np.isnan(crashed.states[3, 2]).all()
    lost = run_gossip_engine(network, spec, np.zeros(5), 1, transcript_path=tmp_path / "t.jsonl",
                             conditions={"loss": 0.5, "retransmit": False})
    assert lost.status == "stopped" and lost.traffic["lost"] > 0
    assert len(load_transcript(tmp_path / "t.jsonl")) == len(lost.transcript)
    with pytest.raises(ConfigError) as caught:
        run_gossip_engine(network, spec, np.zeros(5), 1,
                          conditions={"crashes": {1: 0.5}, "on_crash": "reweight"})
    assert caught.value.field == "conditions.on_crash"


def test_vector_data_is_the_scalar_model_per_coordinate():
    # i.i.d. noise per coordinate: coordinate k of the states is the scalar model run on the k-th
    # coordinate of the inputs and of the draws
    network = NETWORKS["hypercube"]()
    spec = LinearGossip(protocol="gossip-decor", rounds=3, sigma=0.5, sigma_cor=1.0)
    x = np.random.default_rng(2).normal(size=(16, 3))
    result = run_gossip_engine(network, spec, x, 4)
    noise = draw_gossip_noise(network, 4, noise_rounds=3, secret_rounds=3, dim=3)
    assert result.states.shape == (3, 16, 3) and result.to_row()["dim"] == 3
    for k in range(3):
        ref = simulate_messages(network, spec, x[:, k], noise.z[..., k], noise.secrets[..., k])
        assert np.max(np.abs(result.states[..., k] - ref)) < 1e-10


def test_bad_values_and_mask_scale():
    spec = LinearGossip(protocol="gossip-noisy", rounds=2, inputs="per-round")
    assert gossip_values(spec, np.zeros((2, 4)), 4).shape == (2, 4, 1)
    network = make_network("path", agents=4)
    for values in (np.zeros(4), np.zeros((3, 4)), [[np.nan] * 4] * 2):
        with pytest.raises(ConfigError) as caught:
            run_gossip_engine(network, spec, values, 0)
        assert caught.value.field == "values"
    with pytest.raises(ConfigError) as caught:
        run_gossip_engine(network, LinearGossip(rounds=2, secure_summation=True), np.zeros(4), 0,
                          mask_scale=0.0)
    assert caught.value.field == "mask_scale"
