"""The certified upper bound (docs/upper-bound.md) against independent oracles: brute force over the
neighbour ball on the all-but-one view (the package's exact auditor), the release model's covariance of
``u_t``, exact chi-square tails, the package's Renyi divergences of single pairs, and the search's lower
estimates."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dpgossip.data.partition import PartitionedData
from dpgossip.errors import ConfigError
from dpgossip.privacy.certified_bound import (
    NoisyPowerIteration,
    _f,
    _u_covariances,
    certified_upper_bounds,
    chernoff_radius,
)
from dpgossip.privacy.gaussian_pair import GaussianPair
from dpgossip.privacy.neighbours import Neighbour, is_neighbour
from dpgossip.protocols.ddppm.audit import (
    AuditOptions,
    RunAuditor,
    _view_key,
    audit_pairs,
    component_model,
)
from dpgossip.protocols.ddppm.params import NoiseSchedule, resolve_params
from dpgossip.topology import make_network


def _problem(d: int, *, seed: int = 0, rows: int = 6, T: int = 2, c: int = 2,
             topology: str = "paper-ring4", schedule: str = "constant", scale: float = 0.5):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((4 * rows, d)) * np.linspace(1.0, 0.6, d)
    X /= np.max(np.linalg.norm(X, axis=1))
    data = PartitionedData(X=X, sizes=(rows,) * 4)
    net = make_network(topology) if topology == "paper-ring4" else make_network(topology, agents=4)
    params = resolve_params(data, net, iterations=T, consensus_steps=c,
                            noise=NoiseSchedule(kind=schedule, scale=scale))
    return data, net, params


def _model(data, net, params, X=None) -> NoisyPowerIteration:
    return NoisyPowerIteration(X=data.X if X is None else X, offsets=data.offsets, W=net.dense_W(),
                               consensus_steps=params.consensus_steps, alpha=params.alpha[0],
                               sigma_q=params.sigma_q, sigma_p=params.sigma_p[0])


def _ball(d: int, rng: np.random.Generator, n: int) -> np.ndarray:
    """Replacement candidates: 0, and ``n`` random directions at radii 0.5 and 1."""
    U = rng.standard_normal((n, d))
    U /= np.linalg.norm(U, axis=1)[:, None]
    return np.concatenate([np.zeros((1, d)), 0.5 * U, U])


def _cks_delta(pair: GaussianPair, a: float, eps: float) -> float:
    """Canonne-Kamath-Steinke's delta at one order, both directions (an upper bound on the exact one)."""
    d_a = max(pair.renyi(a, "PQ"), pair.renyi(a, "QP"))
    if math.isinf(d_a):
        return 1.0
    return min(1.0, math.exp((a - 1) * (d_a - eps)) / a * (1 - 1 / a) ** (a - 1))


def _brute_worst_delta(data, net, params, j: int, eps: float, delta: float, n: int,
                       kind: str = "bounded") -> float:
    """Largest exact hockey-stick delta(eps) of the all-but-one view over a grid of every row's allowed
    replacements. A point whose RDP delta (an upper bound on the exact one) is already <= delta/10 is
    not refined; the others get the exact value to a resolution of delta/100."""
    k, v = _view_key("all-but-one", 0, j, data.m)
    aud = RunAuditor(data, net, params, {k: v})
    rng = np.random.default_rng(j)
    worst = 0.0
    for r in range(data.offsets[j], data.offsets[j + 1]):
        for y in _ball(data.d, rng, n):
            if not is_neighbour(data.X[r], y, kind):
                continue
            pair = aud.pairs(Neighbour(row=r, x_new=y), [k])[k]
            dl = min(_cks_delta(pair, a, eps) for a in (1.05, 1.2, 1.5, 2.0, 3.0))
            if dl > delta / 10:
                dl = pair.delta(eps, resolution=delta / 100)
            worst = max(worst, dl)
    return worst


CASES = [  # d, seed, rows, T, c, topology, schedule, scale
    (2, 0, 6, 1, 2, "paper-ring4", "constant", 0.5),
    (2, 1, 6, 2, 1, "path", "constant", 1.0),
    (3, 2, 8, 2, 3, "star", "constant", 0.3),
    (2, 3, 6, 3, 2, "paper-ring4", "geometric", 1.0),
    (3, 4, 8, 1, 0, "paper-ring4", "constant", 2.0),
]


@pytest.mark.parametrize(("d", "seed", "rows", "T", "c", "topology", "schedule", "scale"), CASES)
def test_no_neighbour_of_the_grid_exceeds_the_bound(d, seed, rows, T, c, topology, schedule, scale):
    """Brute force on the strongest view: at epsilon = the bound, every grid neighbour's exact delta of the
    all-but-one view is at most delta (so its exact epsilon is at most the bound)."""
    data, net, params = _problem(d, seed=seed, rows=rows, T=T, c=c, topology=topology,
                                 schedule=schedule, scale=scale)
    delta = 1e-3
    j = 1
    bound = certified_upper_bounds(_model(data, net, params), delta, targets=[j])[j]
    assert math.isfinite(bound.epsilon)
    worst = _brute_worst_delta(data, net, params, j, bound.epsilon, delta, n=2)
    assert worst <= delta * 1.01, (worst, bound.epsilon)


@pytest.mark.slow
@pytest.mark.parametrize(("d", "seed", "rows", "T", "c", "topology", "schedule", "scale"), CASES + [
    (2, 0, 2, 2, 2, "paper-ring4", "constant", 0.5),   # the search's slow brute-force grids
    (2, 0, 3, 2, 2, "paper-ring4", "constant", 0.5),
    (2, 3, 3, 2, 2, "path", "constant", 0.5),
    (3, 1, 3, 2, 2, "star", "constant", 0.5)])
def test_no_neighbour_of_a_dense_grid_exceeds_the_bound(d, seed, rows, T, c, topology, schedule,
                                                        scale):
    """The same on denser grids (24 directions at two radii per row), every target."""
    data, net, params = _problem(d, seed=seed, rows=rows, T=T, c=c, topology=topology,
                                 schedule=schedule, scale=scale)
    delta = 1e-3
    bounds = certified_upper_bounds(_model(data, net, params), delta)
    for j, bound in bounds.items():
        if math.isfinite(bound.epsilon):
            assert _brute_worst_delta(data, net, params, j, bound.epsilon, delta, n=24) <= delta * 1.01


def test_replace_one_bound_covers_its_grid_and_is_not_below_bounded():
    data, net, params = _problem(2, seed=5, rows=6, T=2)
    delta, j = 1e-3, 2
    model = _model(data, net, params)
    b1 = certified_upper_bounds(model, delta, adjacency="replace-one", targets=[j])[j]
    b0 = certified_upper_bounds(model, delta, targets=[j])[j]
    assert b1.epsilon >= b0.epsilon * (1 - 1e-9)
    assert _brute_worst_delta(data, net, params, j, b1.epsilon, delta, n=2,
                              kind="replace-one") <= delta * 1.01


@pytest.mark.slow
def test_the_search_lower_estimate_is_below_the_bound_for_every_pair():
    data, net, params = _problem(2, seed=6, rows=6, T=2)
    delta = 1e-3
    bounds = certified_upper_bounds(_model(data, net, params), delta)
    audit = audit_pairs(data, net, params, delta=delta, search="quick", methods=("rdp",))
    for (o, j), res in audit.results.items():
        assert res.epsilon["rdp"] <= bounds[j].epsilon, (o, j)


def test_u_covariance_under_every_neighbour_is_inside_the_uniform_bound():
    """The exact covariance of ``u_t = z_j^(t+1/2)`` from the release model (``D^T P^k`` blocks), under
    ``X`` (equal to the module's) and under random neighbours (inside its uniform bound)."""
    data, net, params = _problem(3, seed=7, rows=5, T=3, c=2)
    model = _model(data, net, params)
    cov = _u_covariances(model, np.ones(data.m))
    rng = np.random.default_rng(0)
    j, d, m = 2, data.d, data.m
    K = m * np.kron(np.linalg.matrix_power(net.dense_W(), params.consensus_steps), np.eye(d))
    std = np.concatenate([[params.sigma_q], params.sigma_p[0][:-1]])

    def exact(X):
        rel = component_model(data, net, params, X=X)
        out = []
        for t in range(1, params.iterations + 1):
            S = sum(std[s] ** 2 * (K @ rel.DtP[t - 1 - s]) @ (K @ rel.DtP[t - 1 - s]).T
                    for s in range(t))
            out.append(S[j * d:(j + 1) * d, j * d:(j + 1) * d])
        return out

    for t, S in enumerate(exact(data.X)):
        assert np.allclose(np.linalg.eigvalsh(S), cov.eigs[j, t], rtol=1e-9, atol=1e-12)
    rows = range(data.offsets[j], data.offsets[j + 1])
    for _ in range(30):
        r = int(rng.choice(list(rows)))
        y = rng.standard_normal(d)
        y *= rng.uniform(0, 1) / np.linalg.norm(y)
        if not is_neighbour(data.X[r], y):
            continue
        X1 = data.X.copy()
        X1[r] = y
        for t, S in enumerate(exact(X1)):
            ev = np.linalg.eigvalsh(S)
            assert ev[-1] <= cov.lam_bar[j, t] * (1 + 1e-9)
            assert ev.sum() <= cov.tau_bar[j, t] * (1 + 1e-9)


@pytest.mark.parametrize("d", [1, 3, 6])
def test_chernoff_radius_against_the_exact_chi_square_tail(d):
    sigma2 = 0.7
    for mass in (1e-2, 1e-6):
        R = float(chernoff_radius(np.full(d, sigma2), np.ones(d), mass))
        tail = stats.chi2.sf(R ** 2 / sigma2, d)
        assert tail <= mass
        assert tail >= mass / 200  # not vacuous
    R1 = float(chernoff_radius(np.array([sigma2]), np.array([float(d)]), 1e-6))
    assert R1 == pytest.approx(float(chernoff_radius(np.full(d, sigma2), np.ones(d), 1e-6)),
                               rel=1e-6)


def test_the_per_eigenvalue_divergence_is_the_gaussian_one():
    """``f_a(l) = D_a(N(0, 1) || N(0, l))`` against the package's GaussianPair, both sides of 1."""
    for lam in (0.3, 0.9, 1.5, 4.0):
        pair = GaussianPair(np.zeros(1), np.eye(1), np.zeros(1), np.array([[lam]]))
        for a in (1.2, 2.0, 3.0):
            want = pair.renyi(a)
            got = float(_f(np.array(a), np.array(lam)))
            assert (math.isinf(want) and math.isinf(got)) or got == pytest.approx(want, rel=1e-10)


def _renyi_zero_mean(S0: np.ndarray, S1: np.ndarray, a: float) -> float:
    """``D_a(N(0, S0) || N(0, S1))`` by determinants (docs/model.md, Section 4)."""
    Sa = a * S1 + (1 - a) * S0
    if np.linalg.eigvalsh(Sa)[0] <= 0:
        return math.inf
    ld = [np.linalg.slogdet(S)[1] for S in (Sa, S0, S1)]
    return -(ld[0] - (1 - a) * ld[1] - a * ld[2]) / (2 * (a - 1))


def test_the_covariance_step_bound_holds_over_the_ball():
    """One step ``N(0, A)`` against ``N(0, A')`` (the first message): the exact Renyi divergence of the
    package at every grid replacement is at most ``f_a(1 + kappa) + f_a(1 - h)``, and the bound is
    attained up to ``f_a(1 + kappa)`` at ``x' = 0``."""
    rng = np.random.default_rng(3)
    Xj = rng.standard_normal((6, 3))
    Xj /= np.max(np.linalg.norm(Xj, axis=1))
    A = Xj.T @ Xj
    kappa = 1 / np.linalg.eigvalsh(A)[0]
    for r in range(6):
        x = Xj[r]
        h = float(x @ np.linalg.solve(A, x))
        for a in (1.1, 1.5):
            if a * h >= 1:
                continue
            bound = float(_f(np.array(a), 1 + kappa) + _f(np.array(a), 1 - h))
            for y in _ball(3, rng, 20):
                if not is_neighbour(x, y):
                    continue
                A1 = A - np.outer(x, x) + np.outer(y, y)
                assert _renyi_zero_mean(A, A1, a) <= bound * (1 + 1e-9) + 1e-12
            at_zero = _renyi_zero_mean(A, A - np.outer(x, x), a)
            assert at_zero >= float(_f(np.array(a), 1 - h)) * (1 - 1e-9)


def test_infinite_when_a_row_has_leverage_one():
    """Two rows in d = 2 span the plane each alone in one direction: replacing one by a multiple of the
    other makes X_j'^T X_j' singular (the exact auditor says the supports differ)."""
    X = np.array([[0.5, 0.0], [0.0, 0.5], [0.3, 0.1], [0.2, -0.4], [0.6, 0.2], [-0.1, 0.7],
                  [0.4, 0.4], [0.1, -0.3]])
    W = np.full((4, 4), 0.25)
    model = NoisyPowerIteration(X=X, offsets=np.arange(0, 9, 2), W=W, consensus_steps=1, alpha=0.5,
                                sigma_q=0.3, sigma_p=np.array([0.5]))
    b = certified_upper_bounds(model, 1e-5)
    assert all(math.isinf(v.epsilon) and v.reason for v in b.values())
    A = X[:2].T @ X[:2]
    A1 = X[1:2].T @ X[1:2]
    with np.errstate(all="ignore"):
        pair = GaussianPair(np.zeros(2), A, np.zeros(2), A1 + np.outer([0, 0.5], [0, 0.5]))
    assert math.isinf(pair.renyi(2.0))


def test_bad_input_names_the_field():
    data, net, params = _problem(2)
    model = _model(data, net, params)
    with pytest.raises(ConfigError, match="adjacency"):
        certified_upper_bounds(model, 1e-5, adjacency="swap")
    with pytest.raises(ConfigError, match="delta"):
        certified_upper_bounds(model, 1.5)
    with pytest.raises(ConfigError, match="targets"):
        certified_upper_bounds(model, 1e-5, targets=[9])
    with pytest.raises(ConfigError, match="norm"):
        _model(data, net, params, X=data.X * 2)


def test_the_audit_carries_the_bound():
    data, net, params = _problem(2, seed=6, rows=6, T=2)
    audit = audit_pairs(data, net, params, delta=1e-3, search="quick", methods=("rdp",),
                        options=AuditOptions(targets=[1], observers=[0, 2]))
    assert set(audit.upper) == {1}
    lower, upper = audit.bracket(0, 1, "rdp")
    assert lower == audit.results[(0, 1)].epsilon["rdp"] <= upper == audit.upper[1].epsilon
    row = audit.rows()[0]
    assert row["epsilon_upper"] == upper
    assert row["gap_upper_lower"] == pytest.approx(upper / row["epsilon"])
    assert audit.worst_upper() is audit.upper[1]


def test_one_agent_one_iteration_against_the_closed_form_view():
    """A single agent, T = 1: the view is ``(y_1, q^(1)) = (X^T q0, alpha X X^T q0 + p)`` (``K = I``),
    a Gaussian written here by hand: ``Cov = [[s_q^2 A, s_q^2 alpha A X^T], [.., s_q^2 alpha^2 X A X^T +
    s_p^2 I]]``. Its exact delta at the bound, over a grid of every row's replacements, is <= delta."""
    rng = np.random.default_rng(11)
    X = rng.standard_normal((5, 2)) * [1.0, 0.7]
    X /= np.max(np.linalg.norm(X, axis=1))
    sq, sp, alpha, delta = 0.4, 0.6, 0.8, 1e-3
    model = NoisyPowerIteration(X=X, offsets=np.array([0, 5]), W=np.ones((1, 1)), consensus_steps=1,
                                alpha=alpha, sigma_q=sq, sigma_p=np.array([sp]))
    bound = certified_upper_bounds(model, delta)[0]
    assert math.isfinite(bound.epsilon)

    def cov(Z):
        A = Z.T @ Z
        top = np.hstack([sq ** 2 * A, sq ** 2 * alpha * A @ Z.T])
        bottom = np.hstack([sq ** 2 * alpha * Z @ A, sq ** 2 * alpha ** 2 * Z @ A @ Z.T
                            + sp ** 2 * np.eye(Z.shape[0])])
        return np.vstack([top, bottom])

    S0 = cov(X)
    worst = 0.0
    for r in range(5):
        for y in _ball(2, rng, 6):
            if not is_neighbour(X[r], y):
                continue
            X1 = X.copy()
            X1[r] = y
            pair = GaussianPair(np.zeros(7), S0, np.zeros(7), cov(X1))
            dl = min(_cks_delta(pair, a, bound.epsilon) for a in (1.05, 1.2, 1.5, 2.0, 3.0))
            if dl > delta / 10:
                dl = pair.delta(bound.epsilon, resolution=delta / 100)
            worst = max(worst, dl)
    assert worst <= delta * 1.01


def test_a_kept_table_gives_the_bound_bit_for_bit(monkeypatch):
    """The delta-independent tables are kept between calls; a reused table changes no bit of the
    bound, at another delta and another noise level of the same data."""
    import dpgossip.privacy.certified_bound as cb

    built = []
    compute = cb._EllTable._compute
    monkeypatch.setattr(cb._EllTable, "_compute",
                        classmethod(lambda cls, *a: built.append(1) or compute(*a)))
    data, net, params = _problem(3, seed=5)
    model = _model(data, net, params)
    louder = _model(data, net, resolve_params(data, net, iterations=2, consensus_steps=2,
                                              noise=NoiseSchedule(kind="constant", scale=3.0)))
    cb._TABLES.clear()
    fresh = {(id(m), delta): certified_upper_bounds(m, delta)
             for m, delta in ((model, 1e-3), (model, 0.2), (louder, 1e-3))}
    assert len(built) == 2                   # one table per direction, for all three calls
    for (key, first), m, delta in zip(fresh.items(), (model, model, louder), (1e-3, 0.2, 1e-3),
                                      strict=True):
        cb._TABLES.clear()
        rebuilt = certified_upper_bounds(m, delta)
        assert [b.epsilon for b in rebuilt.values()] == [b.epsilon for b in first.values()], key
        assert [b.order for b in rebuilt.values()] == [b.order for b in first.values()], key
    assert len(built) == 8
    assert next(iter(cb._TABLES.values())).values.flags.writeable is False
