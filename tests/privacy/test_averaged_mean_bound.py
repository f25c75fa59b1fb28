"""The certified bound with mean terms averaged over the Gaussian ``u_t`` (docs/upper-bound.md, Section
8.1) against independent oracles: the all-but-one coalition's whole sequence ``(w_(-j), y_1..y_T,
q_j^(T))`` written here by hand as a linear map of the noise (its exact Renyi divergences over a grid of
neighbours), the change-of-measure identity evaluated with exact matrices, the tilted run's exact
covariance of ``u_t``, direct eigenvalues for the denominator's table, and brute force at the bound."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.linalg import eigh

from dpgossip.errors import ConfigError
from dpgossip.privacy.certified_bound import (
    _EllTable,
    _target_facts,
    _u_covariances,
    averaged_renyi_bound,
    certified_upper_bounds,
)
from dpgossip.privacy.gaussian_pair import GaussianPair
from dpgossip.privacy.neighbours import is_neighbour
from dpgossip.privacy.tilted_mean import _tilted_bounds
from tests.privacy.test_certified_bound import _brute_worst_delta, _model, _problem


def _run_maps(X, offsets, W, c, alpha, sigma_q, sigma_p, j):
    """The coalition's sequence of target ``j`` as linear maps of the standard noise ``xi``: the other
    agents' noise ``w``, ``y_1..y_T``, ``q_j^(T)`` and ``u_1..u_T`` (rows of ``X`` are the blocks)."""
    n, d, m, T = X.shape[0], X.shape[1], len(offsets) - 1, len(sigma_p)
    D = np.zeros((n, m * d))
    for i in range(m):
        D[offsets[i]:offsets[i + 1], i * d:(i + 1) * d] = X[offsets[i]:offsets[i + 1]]
    K = m * np.kron(np.linalg.matrix_power(W, c), np.eye(d))
    std = np.repeat(np.concatenate([[sigma_q], sigma_p]), n)
    q = np.zeros((n, n * (T + 1)))
    q[:, :n] = np.diag(std[:n])
    ys, us = [], []
    for t in range(1, T + 1):
        z = D.T @ q
        ys.append(z[j * d:(j + 1) * d])
        us.append((K @ z)[j * d:(j + 1) * d])
        q = alpha * D @ (K @ z)
        q[:, t * n:(t + 1) * n] += np.diag(std[t * n:(t + 1) * n])
    keep = [s * n + r for s in range(T + 1) for r in range(n) if not offsets[j] <= r < offsets[j + 1]]
    w = np.diag(std)[keep]
    return w, ys, q[offsets[j]:offsets[j + 1]], us


def _sequence_cov(model, X, j):
    w, ys, qj, _ = _run_maps(X, model.offsets, model.W, model.consensus_steps, model.alpha,
                             model.sigma_q, model.sigma_p, j)
    L = np.vstack([w, *ys, qj])
    return L @ L.T


def _zero_mean_renyi(S0, S1, orders, forward):
    """``D_a(N(0, S0) || N(0, S1))`` (or the reverse) from the generalised eigenvalues ``l`` of
    ``(S1, S0)``: ``sum_k (a ln l_k - ln(a l_k + 1 - a)) / (2 (a - 1))``, ``inf`` off the domain."""
    lam = eigh(S1, S0, eigvals_only=True)
    lam = lam if forward else 1.0 / lam
    out = []
    for a in orders:
        s = a * lam + 1 - a
        out.append(math.inf if np.any(s <= 0) else
                   float(np.sum(a * np.log(lam) - np.log(s)) / (2 * (a - 1))))
    return np.array(out)


def _grid(d, rng, n):
    U = rng.standard_normal((n, d))
    U /= np.linalg.norm(U, axis=1)[:, None]
    return [np.zeros(d), *(0.5 * U), *U]


SHAPES = [  # d, seed, rows, T, c, topology, schedule, scale, adjacency
    (2, 1, 6, 2, 1, "path", "constant", 1.0, "bounded"),
    (3, 2, 8, 2, 3, "star", "constant", 0.3, "bounded"),
    (2, 3, 6, 3, 2, "paper-ring4", "geometric", 1.0, "bounded"),
    (3, 4, 8, 1, 0, "paper-ring4", "constant", 2.0, "bounded"),
    (2, 0, 6, 4, 1, "paper-ring4", "constant", 3.0, "bounded"),
    (2, 5, 7, 2, 2, "paper-ring4", "constant", 1.5, "replace-one"),
]


@pytest.mark.parametrize(("d", "seed", "rows", "T", "c", "topology", "schedule", "scale", "adjacency"),
                         SHAPES)
def test_the_renyi_bound_is_above_the_exact_divergence_of_the_whole_sequence(
        d, seed, rows, T, c, topology, schedule, scale, adjacency):
    """At orders across each direction's range, ``D_a`` of the hand-built coalition sequence at every
    grid neighbour of three rows is at most :func:`averaged_renyi_bound`, which is finite at the
    smallest order for at least two (row, direction) (not vacuous)."""
    data, net, params = _problem(d, seed=seed, rows=rows, T=T, c=c, topology=topology,
                                 schedule=schedule, scale=scale)
    model = _model(data, net, params)
    rng = np.random.default_rng(seed)
    j = seed % 4
    tf = _target_facts(model, j)
    S0 = _sequence_cov(model, model.X, j)
    finite = 0
    for k, r in enumerate(tf.rows[:3]):
        for forward in (True, False):
            top = 1.0 / tf.h[k] if forward else 1.0 + tf.lam_min
            orders = 1.0 + (top - 1.0) * np.array([0.005, 0.05, 0.2, 0.5])
            bound = averaged_renyi_bound(model, int(r), orders, adjacency=adjacency, forward=forward)
            worst = np.zeros(orders.size)
            for y in _grid(d, rng, 5):
                if not is_neighbour(model.X[r], y, adjacency):
                    continue
                X1 = model.X.copy()
                X1[r] = y
                worst = np.maximum(worst, _zero_mean_renyi(S0, _sequence_cov(model, X1, j), orders,
                                                           forward))
            assert np.all(worst <= bound * (1 + 1e-9) + 1e-12), (r, forward, worst, bound)
            finite += int(np.isfinite(bound[0]))
    assert finite >= 2


def test_the_change_of_measure_identity_with_exact_matrices():
    """``D_a(P || Q) = T D_a(N(0, A) || N(0, A')) + ln E_R exp(sum_t theta_t u_t^T M_t u_t) / (a - 1)``
    with ``R`` the run whose target block has Gram ``C_a`` (both sides computed exactly, one neighbour,
    both directions: the reverse one swaps the roles of ``X`` and ``X'``)."""
    data, net, params = _problem(2, seed=3, rows=6, T=3, c=1, scale=1.0)
    model = _model(data, net, params)
    j, r = 1, 7
    y = np.array([0.3, -0.5])
    X1 = model.X.copy()
    X1[r] = y
    T, d = model.T, model.d
    S0, S1 = _sequence_cov(model, model.X, j), _sequence_cov(model, X1, j)
    pair = GaussianPair(np.zeros(len(S0)), S0, np.zeros(len(S1)), S1)
    for base, other, direction in ((model.X, X1, "PQ"), (X1, model.X, "QP")):
        A = base[model.offsets[j]:model.offsets[j + 1]].T @ base[model.offsets[j]:model.offsets[j + 1]]
        A1 = other[model.offsets[j]:model.offsets[j + 1]].T @ other[model.offsets[j]:model.offsets[j + 1]]
        dx = (other - base)[r]
        for a in (1.05, 1.3):
            C = np.linalg.inv(a * np.linalg.inv(A) - (a - 1) * np.linalg.inv(A1))
            F = np.linalg.cholesky(C).T                                # F^T F = C
            XR = np.vstack([base[:model.offsets[j]], F, base[model.offsets[j + 1]:]])
            offR = model.offsets.copy()
            offR[j + 1:] += d - (model.offsets[j + 1] - model.offsets[j])
            us = _run_maps(XR, offR, model.W, model.consensus_steps, model.alpha, model.sigma_q,
                           model.sigma_p, j)[3]
            U = np.vstack(us)
            Delta = A1 - A
            blocks = [a * (a - 1) * model.alpha ** 2 / (2 * model.sigma_p[t] ** 2)
                      * (Delta @ np.linalg.solve(A + a * Delta, Delta) if t < T - 1 else np.outer(dx, dx))
                      for t in range(T)]
            Theta = np.zeros((T * d, T * d))
            for t, B in enumerate(blocks):
                Theta[t * d:(t + 1) * d, t * d:(t + 1) * d] = B
            G = U.T @ Theta @ U
            log_mgf = -0.5 * np.linalg.slogdet(np.eye(len(G)) - 2 * G)[1]
            Sa = a * A1 + (1 - a) * A
            cov = -(np.linalg.slogdet(Sa)[1] - (1 - a) * np.linalg.slogdet(A)[1]
                    - a * np.linalg.slogdet(A1)[1]) / (2 * (a - 1))
            assert T * cov + log_mgf / (a - 1) == pytest.approx(pair.renyi(a, direction), rel=1e-8)


def test_the_tilted_covariance_is_inside_its_bound():
    """The exact ``Cov_R(u_t)`` of the tilted run (target block with Gram ``C_a``) of random neighbours
    at several orders: its largest eigenvalue and its top-2 sum are at most :func:`_tilted_bounds`
    with ``e = ||C_a - A||``'s bound, which itself holds."""
    data, net, params = _problem(3, seed=7, rows=6, T=3, c=2)
    model = _model(data, net, params)
    j, d = 2, model.d
    tf = _target_facts(model, j)
    tilt = _u_covariances(model, np.ones(model.m)).tilt(np.array([j]), model.sigma_p)
    rng = np.random.default_rng(1)
    A = tf.A
    checked = 0
    for _ in range(12):
        k = int(rng.integers(tf.rows.size))
        x = model.X[tf.rows[k]]
        y = rng.standard_normal(d)
        y *= rng.uniform(0, 1) / np.linalg.norm(y)
        if not is_neighbour(x, y):
            continue
        Delta = np.outer(y, y) - np.outer(x, x)
        A1 = A + Delta
        for forward in (True, False):
            B, B1 = (A, A1) if forward else (A1, A)
            for a in (1.02, 1.1, 1.3):
                S = a * B1 + (1 - a) * B
                ell = np.linalg.eigvalsh(S)[0]
                if ell <= 0:
                    continue
                C = np.linalg.inv(a * np.linalg.inv(B) - (a - 1) * np.linalg.inv(B1))
                e = (a - 1) * (1 + a / ell) if forward else a * (1 + (a - 1) / ell)
                assert np.linalg.norm(C - A, 2) <= e * (1 + 1e-9)
                F = np.linalg.cholesky(C).T
                off = model.offsets
                XR = np.vstack([model.X[:off[j]], F, model.X[off[j + 1]:]])
                offR = off.copy()
                offR[j + 1:] += d - (off[j + 1] - off[j])
                us = _run_maps(XR, offR, model.W, model.consensus_steps, model.alpha, model.sigma_q,
                               model.sigma_p, j)[3]
                lam, tau = _tilted_bounds(tilt, np.array([[e]]), model.alpha, 2.0)
                for t, u in enumerate(us):
                    ev = np.linalg.eigvalsh(u @ u.T)
                    assert ev[-1] <= lam[t, 0, 0] * (1 + 1e-9)
                    top = ev[-2:].sum() if t < model.T - 1 else ev[-1]
                    assert top <= tau[t, 0, 0] * (1 + 1e-9)
                checked += 1
    assert checked >= 20


def test_the_denominator_table_never_overstates_lambda_min():
    """``_EllTable.lower`` at random orders is at most the directly computed ``lambda_min(A - a x x^T)``
    (forward) and ``lambda_min(A + (a - 1) x x^T) - (a - 1)`` (reverse)."""
    rng = np.random.default_rng(4)
    Xj = rng.standard_normal((7, 3))
    Xj /= np.max(np.linalg.norm(Xj, axis=1))
    A = Xj.T @ Xj
    lam, vec = np.linalg.eigh(A)
    x = Xj[:1]
    for forward in (True, False):
        table = _EllTable.build(lam[None], x @ vec, np.array([lam[0]]), forward)
        a = 1.0 + lam[0] * rng.uniform(0, 1, size=(1, 200)) ** 3
        got = table.lower(a, forward)[0]
        xx = np.outer(x[0], x[0])
        want = np.array([np.linalg.eigvalsh(A - b * xx)[0] if forward
                         else np.linalg.eigvalsh(A + (b - 1) * xx)[0] - (b - 1) for b in a[0]])
        assert np.all(got <= want + 1e-12)
        assert np.all(got >= want - 0.05)  # not vacuous


@pytest.mark.parametrize(("d", "seed", "rows", "T", "c", "topology", "schedule", "scale", "adjacency"),
                         [SHAPES[0], SHAPES[1], SHAPES[3],
                          pytest.param(*SHAPES[2], marks=pytest.mark.slow),
                          pytest.param(*SHAPES[5], marks=pytest.mark.slow)])
def test_no_grid_neighbour_exceeds_the_averaged_bound(d, seed, rows, T, c, topology, schedule,
                                                      scale, adjacency):
    """Brute force at epsilon = the bound with averaged mean terms alone and with the default (the
    smaller per row): every grid neighbour's exact delta of the all-but-one view is at most delta; the
    default is at most both single methods."""
    data, net, params = _problem(d, seed=seed, rows=rows, T=T, c=c, topology=topology,
                                 schedule=schedule, scale=scale)
    model = _model(data, net, params)
    delta, j = 1e-3, 1
    got = {mt: certified_upper_bounds(model, delta, adjacency=adjacency, targets=[j], mean_terms=mt)[j]
           for mt in ("best", "averaged", "truncated")}
    assert got["best"].epsilon <= min(got["averaged"].epsilon, got["truncated"].epsilon) * (1 + 1e-12)
    for mt in ("best", "averaged"):
        if math.isfinite(got[mt].epsilon):
            worst = _brute_worst_delta(data, net, params, j, got[mt].epsilon, delta, n=2, kind=adjacency)
            assert worst <= delta * 1.01, (mt, worst, got[mt].epsilon)
    if got["best"].mean_terms == "averaged":
        assert got["best"].truncation_forward == 0.0 or got["best"].radii_forward


def test_the_averaged_terms_tighten_the_ring_benchmark():
    """On the 16-agent ring of the pairwise-leakage setting (32 rows of d = 4 per agent, T = 5, c = 3),
    the default bound of a target is below 0.6 times the truncated one."""
    from dpgossip.data import load_dataset
    from dpgossip.protocols.ddppm.params import NoiseSchedule, resolve_params
    from dpgossip.topology import make_network

    net = make_network("ring", agents=16)
    data = load_dataset("synthetic", agents=16, standardize=False,
                        synthetic={"n": 512, "d": 4, "spectrum": [1.0, 0.9, 0.8, 0.7]},
                        rng=np.random.default_rng(0))
    params = resolve_params(data, net, iterations=5, consensus_steps=3,
                            noise=NoiseSchedule(kind="constant", scale=1.0))
    model = _model(data, net, params)
    best = certified_upper_bounds(model, 1e-5, targets=[5])
    old = certified_upper_bounds(model, 1e-5, targets=[5], mean_terms="truncated")
    for j in (5,):
        assert best[j].epsilon < 0.6 * old[j].epsilon
        assert best[j].mean_terms == "averaged"


def test_bad_mean_terms_names_the_field():
    data, net, params = _problem(2)
    with pytest.raises(ConfigError, match="mean_terms"):
        certified_upper_bounds(_model(data, net, params), 1e-5, mean_terms="mean")
