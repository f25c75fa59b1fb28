"""The linear model of gossip-average and gossip-noisy equals the protocol run round by round."""

from __future__ import annotations

import numpy as np
import pytest

from dpgossip.errors import ConfigError
from dpgossip.protocols.gossip.linear import (
    LinearGossip,
    observe,
    propagated_rows,
    simulate_messages,
)
from dpgossip.topology import make_network

SPECS = [
    LinearGossip(protocol="gossip-average", rounds=5, sigma=0.7),
    LinearGossip(protocol="gossip-noisy", rounds=4, sigma=1.3, inputs="once"),
    LinearGossip(protocol="gossip-noisy", rounds=4, sigma=1.3, inputs="fixed"),
    LinearGossip(protocol="gossip-noisy", rounds=4, sigma=1.3, inputs="per-round"),
]


def networks():
    return {
        "path": make_network("path", agents=6),
        "star": make_network("star", agents=6),
        "grid": make_network("grid", agents=16, params={"rows": 4, "cols": 4}),
        "hypercube": make_network("hypercube", agents=16),
    }


def _run_protocol(network, spec, x, z):
    """An independent loop over agents and edges: each agent mixes its neighbours' messages."""
    m, T = network.m, spec.rounds
    sig = spec.noise_scales(m)
    y = np.empty((T, m))
    y[0] = x[0] + sig * z[0]
    for t in range(1, T):
        for v in range(m):
            inbox = sum(network.W[v, w] * y[t - 1, w] for w in network.neighbours[v])
            y[t, v] = network.W[v, v] * y[t - 1, v] + inbox
            if spec.protocol == "gossip-noisy":
                y[t, v] += sig[v] * z[t, v] + (0.0 if spec.inputs == "once"
                                               else x[t if spec.inputs == "per-round" else 0, v])
    return y


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: f"{s.protocol}-{s.inputs}")
@pytest.mark.parametrize("name", ["path", "star", "grid", "hypercube"])
@pytest.mark.parametrize("observers", [(2,), (1, 3)])
def test_view_equals_the_simulated_messages(name, spec, observers):
    network = networks()[name]
    rng = np.random.default_rng(7)
    m = network.m
    x = rng.normal(size=(spec.data_rounds, m))
    z = rng.normal(size=(spec.noise_rounds, m))
    x[:, list(observers)] = 0.0  # the view is conditioned on the observers' own data and noise
    z[:, list(observers)] = 0.0
    states = simulate_messages(network, spec, x, z)
    assert np.allclose(states, _run_protocol(network, spec, x, z), atol=1e-12, rtol=0)
    view = observe(network, spec, observers)
    seen = states[view.messages[:, 1], view.messages[:, 0]]
    xs = x[np.maximum(view.data_index[:, 1], 0), view.data_index[:, 0]]
    zs = z[view.noise_index[:, 1] if spec.noise_rounds > 1 else 0, view.noise_index[:, 0]]
    assert np.max(np.abs(view.J @ xs + view.B @ zs - seen)) < 1e-12
    senders = set(view.messages[:, 0].tolist())
    assert senders == {w for v in observers for w in network.neighbours[v]} - set(observers)
    assert not set(view.data_index[:, 0].tolist()) & set(observers)
    assert view.J.shape == (spec.rounds * len(senders), (m - len(observers)) * spec.data_rounds)


def test_propagated_rows_are_rows_of_powers_of_W():
    network = networks()["grid"]
    senders = np.array([0, 5, 15])
    P = propagated_rows(network, senders, 6)
    for k in range(6):
        assert np.allclose(P[k], np.linalg.matrix_power(network.dense_W(), k)[senders], atol=1e-15)


def test_defaults_and_noiseless_agents():
    spec = LinearGossip(protocol="gossip-noisy", rounds=3, sigma=(1.0, 0.0, 2.0))
    assert spec.inputs == "fixed" and spec.data_rounds == 1 and spec.noise_rounds == 3
    assert LinearGossip(rounds=2).inputs == "once"
    network = make_network("path", agents=3)
    view = observe(network, spec, 0)
    # agent 1 is noiseless: no noise column for it; agent 0 (the observer) is conditioned out
    assert sorted(set(view.noise_index[:, 0].tolist())) == [2]


@pytest.mark.parametrize("kwargs, field, text", [
    ({"protocol": "gossip-avg", "rounds": 2}, "protocol", "protocol must be one of gossip-average"),
    ({"rounds": 0}, "rounds", "rounds must be an integer >= 1, got 0"),
    ({"rounds": 2.5}, "rounds", "rounds must be an integer >= 1, got 2.5"),
    ({"rounds": 2, "sigma": -1.0}, "sigma", "sigma must be"),
    ({"rounds": 2, "sigma": (1.0, -2.0)}, "sigma[1]", "sigma[1] must be"),
    ({"rounds": 2, "inputs": "fixed"}, "inputs", "inputs: gossip-average takes its input once"),
    ({"protocol": "gossip-noisy", "rounds": 2, "inputs": "each"}, "inputs",
     "inputs must be one of once, fixed, per-round, got 'each'"),
])
def test_bad_spec_names_the_parameter(kwargs, field, text):
    with pytest.raises(ConfigError) as caught:
        LinearGossip(**kwargs)
    assert caught.value.field == field
    assert str(caught.value).startswith(text)


def test_bad_observers_and_sigma_length():
    network = make_network("path", agents=4)
    with pytest.raises(ConfigError, match=r"^observers must be agents in 0\.\.3, got 4$") as caught:
        observe(network, LinearGossip(rounds=2), 4)
    assert caught.value.field == "observers"
    with pytest.raises(ConfigError, match="^sigma: 2 values for 4 agents") as caught:
        observe(network, LinearGossip(rounds=2, sigma=(1.0, 1.0)), 0)
    assert caught.value.field == "sigma"
