"""The protocol interface: every kind runs through one call and one common view of its estimate."""

from __future__ import annotations

import numpy as np
import pytest

from dpgossip.data import load_dataset
from dpgossip.errors import ConfigError
from dpgossip.protocols.ddppm.matrix import run_matrix
from dpgossip.protocols.ddppm.params import resolve_params
from dpgossip.protocols.ddppm.protocol import Ddppm
from dpgossip.protocols.interface import PrivateProtocol, exact_subspace
from dpgossip.protocols.metrics import sin_angle
from dpgossip.protocols.ppm.central import PpmParams, run_ppm, run_ppm_federated
from dpgossip.protocols.ppm.protocol import Ppm, PpmFederated
from dpgossip.topology import make_network


@pytest.fixture(scope="module")
def setting():
    net = make_network("ring", agents=4)
    data = load_dataset("wine", agents=4)
    return data, net


def test_every_protocol_satisfies_the_interface(setting):
    data, net = setting
    ppm = PpmParams(p=2, k=2, iterations=3, noise_multiplier=1.0)
    dd = resolve_params(data, net, iterations=3, consensus_steps=2, rank=2)
    for proto in (Ddppm(dd), Ppm(ppm), PpmFederated(ppm)):
        assert isinstance(proto, PrivateProtocol)
        run = proto.run(data, net, 11)
        dim = data.n if proto.side == "left" else data.d
        assert run.trajectory.shape == (4, dim, 2) and run.kind == proto.kind
        gram = run.final.T @ run.final
        np.testing.assert_allclose(np.diag(gram), 1.0, atol=1e-12)  # unit columns
        if proto.side == "right":  # QR iterates; D-DP-PM's deflated components need not be orthogonal
            np.testing.assert_allclose(gram, np.eye(2), atol=1e-12)
        assert run.errors(exact_subspace(data.X, 2, proto.side)).shape == (4,)


def test_the_common_view_is_the_protocols_own_result(setting):
    data, net = setting
    ppm = PpmParams(p=3, k=2, iterations=4, noise_multiplier=0.5)
    run = Ppm(ppm).run(data, net, 5)
    direct = run_ppm(data, ppm, 5)
    assert np.array_equal(run.trajectory, direct.iterates[:, :, :2])
    fed = PpmFederated(ppm).run(data, net, 5)
    assert np.array_equal(fed.final, run_ppm_federated(data, ppm, 5).basis[:, :2])
    dd = resolve_params(data, net, iterations=3, consensus_steps=2, rank=1)
    res = run_matrix(data, net, dd, 5)
    view = Ddppm(dd).run(data, net, 5)
    assert np.array_equal(view.final, res.Q)
    u = exact_subspace(data.X, 1, "left")[:, 0]
    for t in range(4):  # column 0 at t is the normalised q^(t): same angle as the raw iterate
        assert view.errors(u[:, None])[t] == pytest.approx(sin_angle(u, res.iterates[0, t]), abs=1e-12)


def test_exact_subspace_sides_are_the_singular_vectors(setting):
    data, _ = setting
    s = np.linalg.svd(data.X, compute_uv=False)
    V = exact_subspace(data.X, 3, "right")
    np.testing.assert_allclose(data.X @ V, exact_subspace(data.X, 3, "left") * s[:3], atol=1e-10)
    with pytest.raises(ConfigError, match="side"):
        exact_subspace(data.X, 1, "middle")
