"""The exact linear auditor against an independent dense oracle, its support rule, the box maximum
against brute force, the Gaussian mechanism's epsilon against dp_accounting, and the vector case."""

from __future__ import annotations

import itertools
import math

import dp_accounting
import numpy as np
import pytest

from dpgossip.errors import ConfigError
from dpgossip.privacy.gaussian_pair import GaussianPair
from dpgossip.privacy.linear_audit import (
    LinearAuditSettings,
    box_maximum,
    dual_certificate,
    gaussian_epsilon,
    whiten,
)
from dpgossip.protocols.gossip.audit import audit_gossip
from dpgossip.protocols.gossip.linear import LinearGossip, observe
from dpgossip.topology import make_network

SPECS = [
    LinearGossip(protocol="gossip-average", rounds=4, sigma=0.8),
    LinearGossip(protocol="gossip-noisy", rounds=3, sigma=1.1, inputs="once"),
    LinearGossip(protocol="gossip-noisy", rounds=3, sigma=1.1, inputs="fixed"),
    LinearGossip(protocol="gossip-noisy", rounds=3, sigma=1.1, inputs="per-round"),
]
NETWORKS = {
    "path": lambda: make_network("path", agents=6),
    "star": lambda: make_network("star", agents=6),
    "grid": lambda: make_network("grid", agents=16, params={"rows": 4, "cols": 4}),
    "hypercube": lambda: make_network("hypercube", agents=16),
}


def _dense_maps(network, spec):
    """Coefficient matrices of every state ``y^t`` on (all data, all noise), by dense recursion."""
    m, T = network.m, spec.rounds
    nd, nz = m * spec.data_rounds, m * spec.noise_rounds
    D = np.diag(spec.noise_scales(m))
    Yx, Yz = np.zeros((m, nd)), np.zeros((m, nz))
    states = []
    for t in range(T):
        Yx, Yz = network.dense_W() @ Yx if t else Yx, network.dense_W() @ Yz if t else Yz
        if t == 0 or spec.protocol == "gossip-noisy":
            Yz[:, (t if spec.noise_rounds > 1 else 0) * m:][:, :m] += D
        if t == 0 or spec.inputs in ("fixed", "per-round"):
            Yx[:, (t if spec.inputs == "per-round" else 0) * m:][:, :m] += np.eye(m)
        states.append((Yx.copy(), Yz.copy()))
    return states


def _oracle(network, spec, observers, target, bound=1.0):
    """``mu^2`` from the full joint covariance of everything the observers hold: every neighbour's
    message, their own states at every round and their own noise draws (observed exactly)."""
    m = network.m
    senders = sorted({w for v in observers for w in network.neighbours[v]} | set(observers))
    rows_x, rows_z = [], []
    for Yx, Yz in _dense_maps(network, spec):
        rows_x.append(Yx[senders])
        rows_z.append(Yz[senders])
    own = [r * m + v for r in range(spec.noise_rounds) for v in observers]
    rows_z.append(np.eye(m * spec.noise_rounds)[own])
    rows_x.append(np.zeros((len(own), m * spec.data_rounds)))
    Ax, Az = np.vstack(rows_x), np.vstack(rows_z)
    Sigma = Az @ Az.T
    cols = [r * m + target for r in range(spec.data_rounds)]
    Ju = Ax[:, cols]
    lam, V = np.linalg.eigh(Sigma)
    keep = lam > 1e-12 * lam[-1]
    resid = Ju - V[:, keep] @ (V[:, keep].T @ Ju)
    if np.max(np.abs(resid), initial=0.0) > 1e-8 * max(np.max(np.abs(Ax)), 1e-300):
        return math.inf
    M = Ju.T @ np.linalg.pinv(Sigma, rcond=1e-12, hermitian=True) @ Ju
    return max(float(np.dot(s, M @ s)) for s in itertools.product([-bound, bound], repeat=len(cols)))


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: f"{s.protocol}-{s.inputs}")
@pytest.mark.parametrize("name", list(NETWORKS))
@pytest.mark.parametrize("coalition", [False, True])
@pytest.mark.parametrize("basis", [None, "messages"])
def test_exact_mu_equals_the_dense_oracle(name, spec, coalition, basis):
    network = NETWORKS[name]()
    observers = (0, network.m - 1) if coalition else (1,)
    settings = LinearAuditSettings(sensitivity=0.5, orders=(2.0, 8.0))
    rows = audit_gossip(network, spec, observers, settings, basis=basis)
    assert [r.target for r in rows] == [u for u in range(network.m) if u not in observers]
    for row in rows:
        mu2 = _oracle(network, spec, observers, row.target, bound=0.5)
        assert row.exact and abs(row.mu ** 2 - mu2) < 1e-9, (row, mu2)
        assert row.rdp == pytest.approx((row.mu ** 2, 4 * row.mu ** 2), rel=1e-14)


def test_seeing_the_noisy_value_is_finite_and_a_noiseless_one_infinite():
    network = make_network("path", agents=5)
    s = LinearAuditSettings(orders=(2.0,))
    # observer 1 receives y_0^0 = x_0 + eta_0 at round 0 and, for gossip-average, every later message
    # is a function of y^0: the view holds x_0 + eta_0 exactly, i.e. local DP, mu = Delta / sigma
    for T in (1, 3, 30):
        row = audit_gossip(network, LinearGossip(rounds=T, sigma=2.0), 1, s, targets=[0])[0]
        assert row.mu == pytest.approx(0.5, abs=1e-12) and row.method == "closed-form"
    # the antipodal end of a long run also determines x_0 + eta_0 (5 agents, T = 30)
    far = audit_gossip(network, LinearGossip(rounds=30, sigma=2.0), 4, s, targets=[0])[0]
    assert far.mu == pytest.approx(0.5, abs=1e-9)
    # a noiseless target seen by its neighbour: the mean leaves the support, every divergence is inf
    noiseless = LinearGossip(rounds=3, sigma=(0.0, 1.0, 1.0, 1.0, 1.0))
    row = audit_gossip(network, noiseless, 1, s, targets=[0])[0]
    assert math.isinf(row.mu) and math.isinf(row.epsilon) and row.method == "support"
    assert math.isinf(row.rdp[0]) and row.exact
    # ... but one that no message reaches leaks nothing, noise or not (T = 1: round 0 only)
    row = audit_gossip(network, LinearGossip(rounds=1, sigma=0.0), 3, s, targets=[0])[0]
    assert row.mu == 0.0 and row.epsilon == 0.0 and row.hops == 3
    # gossip-noisy with a noiseless target: inf for its neighbour, which receives y_0^0 = x_0; finite
    # two hops away, where x_0 reaches the observer only through agent 1's fresh noise every round
    noisy = LinearGossip(protocol="gossip-noisy", rounds=3, sigma=(0.0, 1.0, 1.0, 1.0, 1.0))
    assert math.isinf(audit_gossip(network, noisy, 1, s, targets=[0])[0].mu)
    row = audit_gossip(network, noisy, 2, s, targets=[0])[0]
    assert math.isfinite(row.mu) and row.mu ** 2 == pytest.approx(_oracle(network, noisy, (2,), 0),
                                                                  abs=1e-9)
    assert math.isinf(_oracle(network, noisy, (1,), 0))


@pytest.mark.parametrize("T", [2, 3, 5, 8, 11])
def test_box_maximum_equals_brute_force(T):
    rng = np.random.default_rng(T)
    A = rng.normal(size=(T, T + 2))
    A[:, 0] *= 5.0  # an anisotropic M with mixed signs
    M = A @ A.T
    brute = max(float(np.dot(s, M @ s)) for s in itertools.product([-1.5, 1.5], repeat=T))
    box = box_maximum(M, 1.5)
    assert box.exact and box.lower == pytest.approx(brute, rel=1e-12) and box.upper == box.lower
    assert float(np.dot(box.vertex, M @ np.array(box.vertex))) == pytest.approx(brute, rel=1e-12)
    # forced to the certified pair: lower is a vertex value, upper a sound bound, bracketing brute
    pair = box_maximum(M, 1.5, exhaustive_up_to=1, restarts=4, seed=1)
    assert not pair.exact and pair.lower <= brute * (1 + 1e-12) <= pair.upper * (1 + 1e-12)
    assert pair.lower == pytest.approx(brute, rel=1e-12)  # local search finds it on these
    assert pair.upper <= 1.5 ** 2 * min(T * np.linalg.eigvalsh(M)[-1], np.abs(M).sum()) * (1 + 1e-12)


@pytest.mark.parametrize("T", [6, 12, 20])
def test_dual_certificate_is_sound_and_reaches_the_sdp_relaxation(T):
    cp = pytest.importorskip("cvxpy")
    rng = np.random.default_rng(100 + T)
    A = rng.normal(size=(T, T + 1))
    A[:, 0] *= 4.0
    M = A @ A.T
    X = cp.Variable((T, T), PSD=True)
    sdp = cp.Problem(cp.Maximize(cp.trace(M @ X)), [cp.diag(X) <= 1])
    sdp.solve()
    cert = dual_certificate(M)
    # sound: above the SDP optimum (up to the solver's tolerance) and hence above the box maximum
    assert cert >= sdp.value * (1 - 1e-6)
    assert cert <= sdp.value * (1 + 1e-4)  # and nearly as tight as the relaxation
    assert cert <= min(T * np.linalg.eigvalsh(M)[-1], np.abs(M).sum()) * (1 + 1e-12)
    if T <= 12:
        assert cert >= box_maximum(M).lower * (1 - 1e-12)


def test_per_round_rows_above_16_rounds_are_certified_pairs():
    network = make_network("path", agents=4)
    spec = LinearGossip(protocol="gossip-noisy", rounds=18, sigma=1.0, inputs="per-round")
    rows = audit_gossip(network, spec, 0, LinearAuditSettings(restarts=2))
    for row in rows:
        assert not row.exact and row.mu <= row.mu_upper and row.method == "local-search+bound"
        assert row.rdp[0] == pytest.approx(row.mu_upper ** 2, rel=1e-14)
    # all-equal shift gives a vertex value; the lower end is at least that
    view = observe(network, spec, 0)
    w = whiten(view.J, view.B)
    cu = w.C[:, view.columns_of[1]]
    assert rows[0].mu ** 2 >= float(np.sum((cu @ np.ones(18)) ** 2)) * (1 - 1e-12)


@pytest.mark.parametrize("mu", [0.05, 0.3, 1.0, 2.5, 6.0])
@pytest.mark.parametrize("delta", [1e-3, 1e-5, 1e-8])
def test_epsilon_matches_dp_accounting_and_gaussian_pair(mu, delta):
    eps = gaussian_epsilon(mu, delta)
    ref = dp_accounting.get_epsilon_gaussian(1.0 / mu, delta)
    assert eps == pytest.approx(ref, rel=1e-6, abs=1e-9)
    pair = GaussianPair.from_whitened([1.0], [mu])
    assert eps == pytest.approx(pair.epsilon(delta), rel=1e-8, abs=1e-10)
    assert gaussian_epsilon(0.0, delta) == 0.0 and math.isinf(gaussian_epsilon(math.inf, delta))


def test_vector_data_with_iid_noise_reduces_to_the_scalar_case():
    network = make_network("grid", agents=9, params={"rows": 3, "cols": 3})
    view = observe(network, LinearGossip(protocol="gossip-noisy", rounds=3, sigma=0.9), 4)
    d = 3
    Jv, Bv = np.kron(view.J, np.eye(d)), np.kron(view.B, np.eye(d))
    scalar = whiten(view.J, view.B)
    vector = whiten(Jv, Bv)
    shift = np.array([0.6, -0.8, 0.0])  # norm 1
    for u, cols in view.columns_of.items():
        cu = scalar.C[:, cols[0]]
        vcols = [cols[0] * d + k for k in range(d)]
        assert float(np.sum((vector.C[:, vcols] @ shift) ** 2)) == pytest.approx(
            float(cu @ cu), rel=1e-10, abs=1e-14), u


def test_rows_are_tidy():
    network = make_network("star", agents=5)
    rows = audit_gossip(network, LinearGossip(rounds=2), (1, 2), LinearAuditSettings(orders=(2, 4.5)))
    row = rows[0].to_row()
    assert list(row) == ["observer", "target", "hops", "mu", "mu_upper", "exact", "method", "rdp_2",
                         "rdp_4.5", "delta", "epsilon"]
    assert row["observer"] == "1+2" and row["target"] == 0 and row["hops"] == 1


@pytest.mark.parametrize("kwargs, field", [
    ({"sensitivity": 0.0}, "sensitivity"),
    ({"orders": (2.0, 1.0)}, "orders[1]"),
    ({"delta": 1.0}, "delta"),
    ({"rank_rtol": 0.0}, "rank_rtol"),
    ({"exhaustive_up_to": 30}, "exhaustive_up_to"),
    ({"restarts": -1}, "restarts"),
])
def test_bad_settings_name_the_parameter(kwargs, field):
    with pytest.raises(ConfigError) as caught:
        LinearAuditSettings(**kwargs)
    assert caught.value.field == field and str(caught.value).startswith(field)


def test_bad_targets_name_the_parameter():
    network = make_network("path", agents=4)
    with pytest.raises(ConfigError, match=r"^targets must be agents that are not observers \(1\)") \
            as caught:
        audit_gossip(network, LinearGossip(rounds=2), 1, targets=[1])
    assert caught.value.field == "targets"


def test_per_round_inputs_of_a_neighbour_on_erdos_renyi():
    # docs/network-dp.md, Section 3: Erdos-Renyi n = 100 (seed 42), Metropolis W, sigma = 1, T = 10,
    # observer 0 and its neighbour 9: the supremum over the box lies between the all-equal shift and
    # the absolute-value bound; the SDP certificate is T (each round's input carries its own noise)
    network = make_network("erdos_renyi", agents=100, seed=42)
    spec = LinearGossip(protocol="gossip-noisy", rounds=10, sigma=1.0, inputs="per-round")
    view = observe(network, spec, 0)
    cu = whiten(view.J, view.B).C[:, view.columns_of[9]]
    M = cu.T @ cu
    sup = box_maximum(M).lower
    assert float(np.ones(10) @ M @ np.ones(10)) == pytest.approx(8.5876, abs=1e-4)
    assert sup == pytest.approx(9.5399, abs=1e-4)
    assert float(np.abs(M).sum()) == pytest.approx(10.0695, abs=1e-4)
    assert dual_certificate(M) == pytest.approx(10.0, abs=1e-9)
    row = audit_gossip(network, spec, 0, targets=[9])[0]
    assert row.exact and row.method == "vertices" and row.mu ** 2 == pytest.approx(sup, rel=1e-12)


# mu^2 of targets 4, 9, 27, 36, 63 for observer 0 on the 8 x 8 grid (Metropolis, gossip-average,
# sigma = 1, T = 20), from an 80-digit mpmath Gram-Schmidt of the exact rational message rows
GRID8_T20 = {4: 0.4323306636690806, 9: 0.580062600804413, 27: 0.5311506701383233,
             36: 0.5785756941017012, 63: 0.831012826612839}


def test_krylov_basis_is_exact_where_the_message_rows_are_ill_conditioned():
    network = make_network("grid", agents=64, params={"rows": 8, "cols": 8})
    spec = LinearGossip(rounds=20, sigma=1.0)
    rows = {r.target: r.mu ** 2 for r in audit_gossip(network, spec, 0)}  # krylov by default
    for u, ref in GRID8_T20.items():
        assert rows[u] == pytest.approx(ref, abs=1e-12), u
    literal = {r.target: r.mu ** 2 for r in audit_gossip(network, spec, 0, basis="messages")}
    assert max(abs(literal[u] - ref) for u, ref in GRID8_T20.items()) > 0.05  # the failure it avoids
    # after enough rounds the observer holds every y_u^0 (80 digits: rank 63, mu^2 = 1 everywhere)
    long = audit_gossip(network, LinearGossip(rounds=40, sigma=1.0), 0)
    assert max(abs(r.mu ** 2 - 1.0) for r in long) < 1e-9
    view = observe(network, LinearGossip(rounds=40, sigma=1.0), 0, basis="krylov")
    assert view.J.shape[0] == 64 and np.all(view.messages == -1)


def test_krylov_basis_needs_gossip_average():
    network = make_network("path", agents=4)
    with pytest.raises(ConfigError, match="^basis must be") as caught:
        observe(network, LinearGossip(protocol="gossip-noisy", rounds=2), 0, basis="krylov")
    assert caught.value.field == "basis"


def test_vector_per_round_shifts_can_exceed_the_scalar_box():
    # docs/network-dp.md, Section 3: with per-round norm bounds on d = 2 coordinates the worst shift
    # is max tr(M X) over rank-2 X with X_tt <= 1, above the scalar box; the certificate covers both
    M = 2 * np.eye(5) - np.roll(np.eye(5), 1, axis=1) - np.roll(np.eye(5), -1, axis=1)  # cycle C5
    box = box_maximum(M)
    assert box.exact and box.lower == pytest.approx(16.0)  # 4 x (max cut of C5 = 4)
    angles = 4 * np.pi * np.arange(5) / 5
    S = np.stack([np.cos(angles), np.sin(angles)], axis=1)  # unit vector per round
    planar = float(np.trace(M @ S @ S.T))
    assert planar == pytest.approx(10 - 10 * np.cos(4 * np.pi / 5)) and planar > 18.0
    assert dual_certificate(M) >= planar * (1 - 1e-9)
