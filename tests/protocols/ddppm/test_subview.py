"""The first-message sub-view against an independent dense computation, data processing against the
full view, and the exact two-eigenvalue hockey-stick and its epsilon against Imhof's inversion."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpgossip.data.partition import PartitionedData
from dpgossip.privacy import plrv
from dpgossip.privacy.gaussian_pair import GaussianPair
from dpgossip.privacy.neighbours import Neighbour
from dpgossip.protocols.ddppm.audit import RunAuditor, _view_key
from dpgossip.protocols.ddppm.params import NoiseSchedule, resolve_params
from dpgossip.protocols.ddppm.subview import FirstMessageView
from dpgossip.topology import make_network


def _setup(seed=0, d=3, rows=4):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((4 * rows, d))
    X /= np.max(np.linalg.norm(X, axis=1))
    data = PartitionedData(X=X, sizes=(rows,) * 4)
    net = make_network("paper-ring4")
    params = resolve_params(data, net, iterations=2, consensus_steps=2,
                            noise=NoiseSchedule(kind="constant", scale=0.4))
    return data, net, params, rng


@pytest.mark.parametrize("view", ["observer", "all-but-one", "eavesdropper", "paper"])
def test_subview_pair_equals_dense_covariances_and_is_below_the_full_view(view):
    data, net, params, rng = _setup()
    o, j = 0, 2
    k, v = _view_key(view, o, j, 4)
    aud = RunAuditor(data, net, params, {k: v})
    spec = aud.auditors[0].specs[k]
    sv = FirstMessageView(data.X, data.offsets, spec, j)
    assert sv.available
    r = int(data.offsets[j]) + 1
    y = rng.standard_normal(data.d)
    y *= 0.8 / np.linalg.norm(y)
    X1 = data.X.copy()
    X1[r] = y
    known_agents = {i for i in range(4)
                    if int(data.offsets[i]) in set(int(q) for q in spec.known)}

    def dense(Xm):  # covariance of (B kron I) z, z_i = X_i^T q_i, unknown agents only
        S = 0
        for i in range(4):
            if i in known_agents:
                continue
            Xi = Xm[data.offsets[i]:data.offsets[i + 1]]
            S = S + np.kron(np.outer(spec.B[:, i], spec.B[:, i]), Xi.T @ Xi)
        return S

    S0, S1 = dense(data.X), dense(X1)
    ref = GaussianPair(np.zeros(len(S0)), S0, np.zeros(len(S0)), S1)
    got = sv.pair(data.X[r], y)
    for a in (1.5, 2.0, 5.0):
        assert got.renyi(a) == pytest.approx(ref.renyi(a), rel=1e-8)
        assert got.renyi(a, "QP") == pytest.approx(ref.renyi(a, "QP"), rel=1e-8)
    full = aud.pairs(Neighbour(row=r, x_new=y), [k])[k]
    for e in (0.5, 2.0):  # data processing: a sub-view leaks no more than the view
        assert got.delta(e) <= full.delta(e) + 1e-10


def _imhof_delta(pair: GaussianPair, e: float) -> float:
    """delta(e), the worse direction, by Imhof's inversion integral forced (the independent oracle)."""
    out = 0.0
    for direction in ("PQ", "QP"):
        law = pair.loss_law(direction)
        integral, _ = plrv._inversion_integral(law.alpha, law.beta, law.sigma, law.c - e, "hockey")
        out = max(out, 0.5 + integral / math.pi)
    return out


@pytest.mark.parametrize("lam", [[3.0, 0.4], [1.5], [10.0, 0.9], [50.0, 0.05], [0.2]])
def test_two_eigenvalue_hockey_stick_matches_imhof(lam):
    pair = GaussianPair.from_whitened(lam, np.zeros(len(lam)))
    for e in (0.1, 1.0, 3.0):
        assert pair.delta(e) == pytest.approx(_imhof_delta(pair, e), rel=1e-8, abs=1e-14)
    eps = pair.epsilon(1e-3)
    assert pair.delta(eps) == pytest.approx(1e-3, rel=1e-6)
    assert _imhof_delta(pair, eps) == pytest.approx(1e-3, rel=1e-6)
