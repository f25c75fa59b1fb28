import networkx as nx
import numpy as np
import pytest

from dpgossip.errors import ConfigError
from dpgossip.protocols.ddppm.matrix import run_matrix
from dpgossip.protocols.ddppm.params import NoiseSchedule, ProtocolParams, resolve_params
from dpgossip.protocols.ddppm.spectrum import xi_matrix
from dpgossip.protocols.metrics import sin_angle, subspace_distance
from dpgossip.protocols.power import centralized_power_method, top_singular
from tests.conftest import net_from_graph, spiked_data

NONE = NoiseSchedule(kind="none")


def test_dpm_with_many_rounds_equals_centralized(paper_ring, small_data):
    """c large: W^c -> 11^T/m, Xi -> X X^T, so D-PM is the centralized power method from the same q^(0)."""
    T = 25
    params = resolve_params(small_data, paper_ring, iterations=T, consensus_steps=80, noise=NONE)
    res = run_matrix(small_data, paper_ring, params, seed=3)
    q_ref = centralized_power_method(small_data.X, res.noise[0, 0], T)[:, 0]
    q = res.Q[:, 0] * np.sign(res.Q[:, 0] @ q_ref)
    np.testing.assert_allclose(q, q_ref, atol=1e-8)


def test_recursion_is_alpha_xi(paper_ring, small_data):
    """q^(t) = alpha Xi q^(t-1) + p^(t), with Xi of Eq. (13) built independently."""
    params = resolve_params(
        small_data,
        paper_ring,
        iterations=4,
        consensus_steps=2,
        noise=NoiseSchedule(kind="constant", scale=0.05),
    )
    res = run_matrix(small_data, paper_ring, params, seed=11)
    m = 4
    Wc = np.linalg.matrix_power(paper_ring.dense_W(), 2)
    D = np.zeros((small_data.n, m * small_data.d))
    for i in range(m):
        D[small_data.offsets[i] : small_data.offsets[i + 1], i * 6 : (i + 1) * 6] = (
            small_data.block(i)
        )
    Xi = D @ (m * np.kron(Wc, np.eye(6))) @ D.T
    np.testing.assert_allclose(Xi, xi_matrix(small_data, paper_ring.dense_W(), 2), atol=1e-12)
    for t in range(1, 5):
        expect = params.alpha[0] * Xi @ res.iterates[0, t - 1] + res.noise[0, t]
        np.testing.assert_allclose(res.iterates[0, t], expect, rtol=1e-10, atol=1e-12)


def test_noise_free_error_decays_at_mu_ratio_down_to_consensus_floor():
    """In the eigenbasis of Xi: tan(u_1, q^(t)) <= (mu_2/mu_1)^t tan(u_1, q^(0)) (exactly), and the error
    to the true v saturates at sin(v, u_1), the consensus floor of Theorem 3 (Davis-Kahan bound)."""
    data = spiked_data(60, 8, [6, 3, 1, 0.5, 0.3, 0.2, 0.1, 0.05], 6, seed=2)
    net = net_from_graph(nx.cycle_graph(6))
    c = 3
    params = resolve_params(data, net, iterations=40, consensus_steps=c, noise=NONE)
    res = run_matrix(data, net, params, seed=5)
    Xi = xi_matrix(data, net.dense_W(), c)
    ev, vec = np.linalg.eigh(Xi)
    order = np.argsort(-np.abs(ev))
    mu1, mu2 = np.abs(ev[order[:2]])
    u1 = vec[:, order[0]]
    tan = np.array([np.linalg.norm(q - u1 * (u1 @ q)) / abs(u1 @ q) for q in res.iterates[0]])
    t = np.arange(tan.size)
    assert np.all(tan <= (mu2 / mu1) ** t * tan[0] * (1 + 1e-9) + 1e-14)
    # the rate is attained, not just bounded: late ratios of successive tangents approach mu_2/mu_1
    ratios = tan[6:16] / tan[5:15]
    np.testing.assert_allclose(ratios[-1], mu2 / mu1, rtol=0.02)
    # floor: error to the true eigenvector v converges to sin(v, u_1) > 0 ...
    v = top_singular(data.X, 1).U[:, 0]
    floor = sin_angle(v, u1)
    assert floor > 1e-6
    assert abs(sin_angle(v, res.iterates[0, -1]) - floor) < 1e-9
    # ... which Davis-Kahan bounds by 2 ||Xi - X X^T|| / (lambda_1 - lambda_2)
    lam = np.sort(np.linalg.eigvalsh(data.X @ data.X.T))[::-1]
    assert floor <= 2 * np.linalg.norm(Xi - data.X @ data.X.T, 2) / (lam[0] - lam[1])


def test_rank_two_deflation_recovers_subspace():
    data = spiked_data(48, 6, [5, 3, 1.5, 0.5, 0.2, 0.1], 4, seed=7)
    net = net_from_graph(nx.cycle_graph(4))
    params = resolve_params(data, net, iterations=60, consensus_steps=100, rank=2, noise=NONE)
    res = run_matrix(data, net, params, seed=0)
    U = top_singular(data.X, 2).U
    assert subspace_distance(U, res.Q) < 1e-8
    for l in range(2):
        assert sin_angle(U[:, l], res.Q[:, l]) < 1e-8


def test_same_seed_same_result_different_seed_differs(paper_ring, small_data):
    params = resolve_params(
        small_data,
        paper_ring,
        iterations=5,
        consensus_steps=2,
        noise=NoiseSchedule(kind="geometric", scale=0.2),
    )
    a = run_matrix(small_data, paper_ring, params, seed=42)
    b = run_matrix(small_data, paper_ring, params, seed=42)
    c = run_matrix(small_data, paper_ring, params, seed=43)
    np.testing.assert_array_equal(a.iterates, b.iterates)
    assert np.max(np.abs(a.iterates - c.iterates)) > 1e-3


def test_agent_noise_comes_from_its_own_stream(paper_ring, small_data):
    """Per-agent streams: agent i's noise does not depend on the other agents' block sizes."""
    from dpgossip.data.partition import PartitionedData

    other = PartitionedData(X=small_data.X, sizes=(10, 12, 8, 10))
    params = resolve_params(
        small_data,
        paper_ring,
        iterations=3,
        consensus_steps=1,
        noise=NoiseSchedule(kind="constant", scale=1.0),
        sigma_q=1.0,
    )
    a = run_matrix(small_data, paper_ring, params, seed=9)
    b = run_matrix(other, paper_ring, params, seed=9)
    np.testing.assert_array_equal(a.noise[0, :, :10], b.noise[0, :, :10])


def test_geometric_schedule_and_alpha_rule(paper_ring, small_data):
    params = resolve_params(
        small_data,
        paper_ring,
        iterations=6,
        consensus_steps=3,
        noise=NoiseSchedule(kind="geometric", scale=0.5),
    )
    mu1, mu2 = params.mu[:2]
    assert 1 / mu1 < params.alpha[0] < 1 / mu2
    np.testing.assert_allclose(params.alpha[0], 1 / np.sqrt(mu1 * mu2))
    np.testing.assert_allclose(params.sigma_p[0], 0.5 * (mu2 / mu1) ** np.arange(1, 7))
    np.testing.assert_allclose(params.sigma_q, 1 / np.sqrt(small_data.n))
    ev = np.sort(np.abs(np.linalg.eigvalsh(xi_matrix(small_data, paper_ring.dense_W(), 3))))[::-1]
    np.testing.assert_allclose([mu1, mu2], ev[:2], rtol=1e-10)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (
            {"iterations": 0, "consensus_steps": 1},
            r"^iterations must be an integer >= 1, got 0",
        ),
        ({"iterations": 3, "consensus_steps": -1}, r"^consensus_steps .* got -1"),
        ({"iterations": 3, "consensus_steps": 1, "rank": 0}, r"^rank .* got 0"),
        (
            {"iterations": 3, "consensus_steps": 1, "noise": None, "sigma_q": -1.0},
            r"^sigma_q must be a positive number, got -1.0",
        ),
        ({"iterations": 3, "consensus_steps": 1, "alpha": -2.0}, r"^alpha .* got -2.0"),
    ],
)
def test_bad_parameters(paper_ring, small_data, kwargs, match):
    with pytest.raises(ConfigError, match=match):
        resolve_params(small_data, paper_ring, **kwargs)


def test_negative_noise_rejected():
    with pytest.raises(ConfigError, match=r"^scale .* got -0.1"):
        NoiseSchedule(kind="constant", scale=-0.1)
    with pytest.raises(ConfigError, match=r"^values\[1\] .* got -1"):
        NoiseSchedule(kind="explicit", values=(0.1, -1.0))
    with pytest.raises(ConfigError, match=r"standard deviations must be >= 0"):
        ProtocolParams(
            iterations=1,
            consensus_steps=0,
            rank=1,
            alpha=(1.0,),
            sigma_q=1.0,
            sigma_p=np.array([[-1.0]]),
        )
    with pytest.raises(ConfigError, match=r"^kind must be one of .* got 'gauss'"):
        NoiseSchedule(kind="gauss")
