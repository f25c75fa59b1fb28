"""The auditor against a likelihood-ratio attack on simulated views (docs/model.md, Section 5.3).

"A likelihood-ratio attack that sees simulated views under X and X' yields an empirical epsilon lower bound
(Clopper-Pearson, stated confidence) that never exceeds the auditor's epsilon at the same delta."

First the statistics (:mod:`dpgossip.protocols.ddppm.attack`) on their own: Clopper-Pearson against closed
forms and scipy, exact coverage, the bound's monotonicity and its validity and tightness on randomized
response. Then the validation, on the 4-agent ring (paper's W), a 3 x 3 grid and a random graph: an observer's
views assembled from the engine's transcripts under X and under a neighbour X' of a target agent (on the ring
the observer's neighbour, on the other two graphs two hops away), attacked with the auditor's two Gaussians;
plus a cheaper run of the same attack on the matrix backend's realised noise (ring only).
"""

from __future__ import annotations

import math
from functools import cache

import networkx as nx
import numpy as np
import pytest
from scipy import stats

from dpgossip.errors import ConfigError
from dpgossip.privacy.gaussian_pair import GaussianPair
from dpgossip.protocols.ddppm.attack import (
    AttackResult,
    clopper_pearson,
    clopper_pearson_upper,
    empirical_epsilon_lower_bound,
    error_rate_upper_bounds,
    likelihood_ratio_attack,
    log_likelihood_ratio,
)
from dpgossip.protocols.ddppm.audit import component_model, view_gaussian
from dpgossip.protocols.ddppm.auditor import ComponentAuditor
from dpgossip.protocols.ddppm.matrix import run_matrix
from dpgossip.protocols.ddppm.nodes import run_engine
from dpgossip.protocols.ddppm.params import NoiseSchedule, resolve_params
from dpgossip.protocols.ddppm.views import make_view, receive_basis
from tests.conftest import spiked_data
from tests.protocols.ddppm.test_validation_engine import (
    NETWORKS,
    OBSERVER_TARGET,
    observer_view_from_run,
)

CONFIDENCE = 0.95
DELTA = 1e-3


# --- Clopper-Pearson -------------------------------------------------------------------------------------
def test_clopper_pearson_zero_and_full_counts_closed_form():
    """k = 0: the one-sided upper bound solves (1 - p)^n = 1 - conf; k = n mirrors k = 0."""
    assert clopper_pearson_upper(0, 10, 0.95) == pytest.approx(1 - 0.05 ** (1 / 10), rel=1e-12)
    low, high = clopper_pearson(0, 10, 0.95)
    assert low == 0.0 and high == pytest.approx(1 - 0.025 ** (1 / 10), rel=1e-12)
    low, high = clopper_pearson(10, 10, 0.95)
    assert high == 1.0 and low == pytest.approx(0.025 ** (1 / 10), rel=1e-12)
    assert clopper_pearson_upper(10, 10, 0.95) == 1.0


@pytest.mark.parametrize("n", [1, 7, 50, 1000])
@pytest.mark.parametrize("conf", [0.9, 0.95, 0.999])
def test_clopper_pearson_matches_scipy_and_is_symmetric(n, conf):
    for k in sorted({0, 1, n // 3, n // 2, n - 1, n}):
        low, high = clopper_pearson(k, n, conf)
        ref = stats.binomtest(k, n).proportion_ci(confidence_level=conf, method="exact")
        assert low == pytest.approx(ref.low, rel=1e-9, abs=1e-14)
        assert high == pytest.approx(ref.high, rel=1e-9, abs=1e-14)
        low_m, high_m = clopper_pearson(n - k, n, conf)
        assert low == pytest.approx(1 - high_m, abs=1e-12)
        assert high == pytest.approx(1 - low_m, abs=1e-12)
        # the two-sided upper end is the one-sided bound at level 1 - (1 - conf)/2
        assert high == pytest.approx(clopper_pearson_upper(k, n, 1 - (1 - conf) / 2), rel=1e-12)


@pytest.mark.parametrize("n", [5, 40])
def test_clopper_pearson_upper_has_exact_coverage(n):
    """Pr_p(p <= upper(K)) >= conf for every p, summing the binomial pmf (no Monte Carlo); and the bound is
    not slack: at p = upper(k) itself, Pr(K <= k) = 1 - conf."""
    conf = 0.9
    ups = clopper_pearson_upper(np.arange(n + 1), n, conf)
    assert np.all(np.diff(ups) > 0)
    for p in np.linspace(0.001, 0.999, 199):
        covered = stats.binom.pmf(np.arange(n + 1), n, p)[ups >= p].sum()
        assert covered >= conf - 1e-12
    for k in range(n):
        assert stats.binom.cdf(k, n, ups[k]) == pytest.approx(1 - conf, rel=1e-8)


def test_clopper_pearson_rejects_bad_input():
    for bad in [(-1, 10, 0.95), (11, 10, 0.95), (1, 0, 0.95), (1, 10, 1.0), (1, 10, 0.0),
                (1.5, 10, 0.95)]:
        with pytest.raises(ConfigError):
            clopper_pearson(*bad)


# --- the hypothesis-testing bound ------------------------------------------------------------------------
def test_error_bounds_split_the_error_probability():
    fpr_u, fnr_u = error_rate_upper_bounds(3, 100, 0, 50, 0.9)
    assert fpr_u == pytest.approx(clopper_pearson_upper(3, 100, 0.95))
    assert fnr_u == pytest.approx(1 - 0.05 ** (1 / 50))


def test_bound_closed_form_with_zero_counts():
    """No errors at all: FPR_u = FNR_u = u = 1 - (a/2)^(1/n), eps_lb = ln((1 - delta - u)/u), finite."""
    n, conf, delta = 500, 0.95, 1e-3
    u = 1 - 0.025 ** (1 / n)
    eps = empirical_epsilon_lower_bound(0, n, 0, n, delta, conf)
    assert eps == pytest.approx(math.log((1 - delta - u) / u), rel=1e-12)
    assert math.isfinite(eps)


def test_bound_is_monotone():
    base = dict(fp_count=20, n0=1000, fn_count=300, n1=1000, delta=1e-3, confidence=0.95)
    e0 = empirical_epsilon_lower_bound(**base)
    assert e0 > 0
    # more errors, larger delta or higher confidence: smaller bound
    for key, values in [("fp_count", [21, 40, 100]), ("fn_count", [301, 500, 900]),
                        ("delta", [1e-2, 0.1]), ("confidence", [0.99, 0.999])]:
        prev = e0
        for v in values:
            e = empirical_epsilon_lower_bound(**{**base, key: v})
            assert e <= prev
            prev = e
    # the same rates on more runs: larger bound (tighter Clopper-Pearson)
    prev = e0
    for s in (2, 10):
        e = empirical_epsilon_lower_bound(20 * s, 1000 * s, 300 * s, 1000 * s, 1e-3, 0.95)
        assert e > prev
        prev = e
    # symmetric in the roles of the two error types
    assert empirical_epsilon_lower_bound(300, 1000, 20, 1000, 1e-3, 0.95) == pytest.approx(e0)
    # a test no better than chance certifies nothing
    assert empirical_epsilon_lower_bound(500, 1000, 500, 1000, 0.0, 0.95) == 0.0
    assert empirical_epsilon_lower_bound(1000, 1000, 1000, 1000, 0.0, 0.95) == 0.0


def test_bound_is_valid_and_tight_on_randomized_response():
    """Randomized response with epsilon = 1 (delta = 0) and the test "say X' iff the output is 1" has
    FPR = FNR = 1/(1 + e); eps_lb exceeds 1 in at most ~5 % of repetitions, and tends to 1 with many runs."""
    eps, reps, n = 1.0, 2000, 2000
    rate = 1 / (1 + math.e ** eps)
    rng = np.random.default_rng(11)
    fp = rng.binomial(n, rate, reps)
    fn = rng.binomial(n, rate, reps)
    fpr_u, fnr_u = error_rate_upper_bounds(fp, n, fn, n, CONFIDENCE)
    lbs = np.maximum(np.log((1 - fnr_u) / fpr_u), np.log((1 - fpr_u) / fnr_u))
    violations = int(np.sum(lbs > eps))
    # binomial(reps, <= 0.05): 5 sd above 100 is 149
    assert violations <= 0.05 * reps + 5 * math.sqrt(0.05 * 0.95 * reps)
    assert empirical_epsilon_lower_bound(int(fp[0]), n, int(fn[0]), n, 0.0) == pytest.approx(
        max(lbs[0], 0.0))
    big = 10**7
    tight = empirical_epsilon_lower_bound(round(rate * big), big, round(rate * big), big, 0.0)
    assert 0.99 < tight <= eps


# --- the attack ------------------------------------------------------------------------------------------
def _random_pair(k: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((k, k))
    S0 = A @ A.T + k * np.eye(k)
    S1 = S0 + 0.5 * np.outer(A[0], A[0])
    return rng.standard_normal(k), S0, rng.standard_normal(k) * 0.3, S1


def test_log_likelihood_ratio_matches_scipy():
    m0, S0, m1, S1 = _random_pair(6, 1)
    v = np.random.default_rng(2).standard_normal((50, 6)) * 3
    expect = (stats.multivariate_normal.logpdf(v, m0, S0) - stats.multivariate_normal.logpdf(v, m1, S1))
    np.testing.assert_allclose(log_likelihood_ratio(v, (m0, S0, m1, S1)), expect, rtol=1e-10,
                               atol=1e-10)
    pair = GaussianPair(m0, S0, m1, S1)
    np.testing.assert_allclose(log_likelihood_ratio(v, pair), expect, rtol=1e-10, atol=1e-10)


def test_attack_on_a_gaussian_mechanism():
    """1-D Gaussian mechanism (shift 1.5, sd 1): the attack's bound is below the exact epsilon, clearly
    positive, and the null attack (both sample sets from X) certifies nothing."""
    pair = GaussianPair(np.array([1.5]), np.eye(1), np.zeros(1), np.eye(1))
    eps = pair.epsilon(DELTA, "exact")
    rng = np.random.default_rng(3)
    s0 = rng.normal(1.5, 1, (20000, 1))
    s1 = rng.normal(0.0, 1, (20000, 1))
    res = likelihood_ratio_attack(s0, s1, pair, delta=DELTA, confidence=CONFIDENCE)
    assert isinstance(res, AttackResult)
    assert res.calibration0 == res.calibration1 == 10000 and res.n0 == res.n1 == 10000
    assert 1.0 < res.eps_lb <= eps
    assert res.fpr == res.fp / res.n0 and res.fpr <= res.fpr_upper
    row = res.to_row()
    assert row["eps_lb"] == res.eps_lb and row["confidence"] == CONFIDENCE and row["delta"] == DELTA
    # a fixed threshold uses every run; a grid restricts the candidates
    fixed = likelihood_ratio_attack(s0, s1, pair, delta=DELTA, threshold=2.0)
    assert fixed.n0 == 20000 and fixed.calibration0 == 0 and fixed.threshold == 2.0
    assert 0 < fixed.eps_lb <= eps
    gridded = likelihood_ratio_attack(s0, s1, pair, delta=DELTA, grid=[-3.0, 3.0])
    assert gridded.threshold in (-3.0, 3.0)
    null = likelihood_ratio_attack(s0[:10000], s0[10000:], pair, delta=DELTA)
    assert null.eps_lb == 0.0


def test_attack_rejects_bad_input():
    pair = GaussianPair(np.zeros(2), np.eye(2), np.ones(2), np.eye(2))
    ok = np.zeros((10, 2))
    with pytest.raises(ConfigError, match="samples"):
        likelihood_ratio_attack(np.zeros((10, 3)), ok, pair, delta=DELTA)
    with pytest.raises(ConfigError, match="delta"):
        likelihood_ratio_attack(ok, ok, pair, delta=1.0)
    with pytest.raises(ConfigError, match="calibration"):
        likelihood_ratio_attack(ok[:1], ok, pair, delta=DELTA)
    with pytest.raises(ConfigError, match="dense"):
        likelihood_ratio_attack(ok, ok, GaussianPair.from_whitened([2.0], [1.0]), delta=DELTA)
    with pytest.raises(ConfigError, match="positive definite"):
        log_likelihood_ratio(ok, (np.zeros(2), np.diag([1.0, 0.0]), np.zeros(2), np.eye(2)))


# --- the validation against the simulator ----------------------------------------------------------------
RUNS = 4000  # per dataset; X runs use seeds 0..RUNS-1, X' runs RUNS..2 RUNS-1
# the row of the target agent (OBSERVER_TARGET) that X' halves, on each network
TARGET_ROW = {"paper-ring4": 5, "grid-3x3": 6, "random-10": 1}


def _problem(name: str, T: int, c: int):
    """Network ``name`` (NETWORKS), 4 m x 3 spiked data (n_i = 4 >= d = 3), constant noise 0.3, the observer
    and target of OBSERVER_TARGET, and the neighbour X' that halves row TARGET_ROW[name] of the target:
    x' = x / 2. On the paper's ring the observer is agent 0, the target its neighbour 1 (row 5,
    ||x - x'|| = 0.11); on the 3 x 3 grid agent 3 attacks agent 1 (row 6, 0.14), on random-10 agent 1
    attacks agent 0 (row 1, 0.24), both two hops away.

    The worst candidates of the audit's search on the ring (a full step of a row along the smallest
    singular direction) have audited epsilons in the hundreds, nearly independent of the noise scale (the
    first messages z^(1) = X_i^T q_i^(0) carry no p-noise); against them any attack bound is vacuous. These
    small replacements have epsilons of a few units (about 3.8, 3.5 and 4.1 at T = c = 2), the range an
    attack with a few thousand runs can probe. (They are also rows whose exact epsilon the auditor
    computes in a few seconds: for many other rows of the grid one call takes 15-25 s.)
    """
    net = NETWORKS[name]()
    data = spiked_data(4 * net.m, 3, [2, 1, .5], net.m, seed=1)
    p = resolve_params(data, net, iterations=T, consensus_steps=c,
                       noise=NoiseSchedule(kind="constant", scale=0.3))
    o, j = OBSERVER_TARGET[name]
    row = TARGET_ROW[name]
    assert data.offsets[j] <= row < data.offsets[j + 1]
    assert nx.shortest_path_length(net.graph, o, j) == (1 if name == "paper-ring4" else 2)
    X1 = data.X.copy()
    X1[row] *= 0.5
    return net, data, p, X1, o


def _auditor_pair(net, data, p, X1, o: int) -> GaussianPair:
    view = make_view("observer", m=net.m, agents=(o,))
    m0, S0 = view_gaussian(component_model(data, net, p), view, net)
    m1, S1 = view_gaussian(component_model(data, net, p, X=X1), view, net)
    return GaussianPair(m0, (S0 + S0.T) / 2, m1, (S1 + S1.T) / 2)


@cache
def _engine_views(name: str) -> tuple[GaussianPair, np.ndarray, np.ndarray]:
    """The auditor's pair and the observer's views from RUNS engine runs under X and under X'."""
    net, data, p, X1, o = _problem(name, T=2, c=2)
    data1 = data.with_matrix(X1)
    V0 = np.array([observer_view_from_run(run_engine(data, net, p, s), data, net, p, o)
                   for s in range(RUNS)])
    V1 = np.array([observer_view_from_run(run_engine(data1, net, p, s), data1, net, p, o)
                   for s in range(RUNS, 2 * RUNS)])
    pair = _auditor_pair(net, data, p, X1, o)
    # the dense pair is the production auditor's: the matrix-free ComponentAuditor finds the same
    # nontrivial generalised eigenvalues
    fast = ComponentAuditor(data, net, p, {"o": make_view("observer", m=net.m, agents=(o,))}
                            ).pairs(X1)["o"]
    lam, lam_fast = pair.eigenvalues, fast.eigenvalues
    np.testing.assert_allclose(np.sort(lam[np.abs(lam - 1) > 1e-9]),
                               np.sort(lam_fast[np.abs(lam_fast - 1) > 1e-9]), rtol=1e-7)
    return pair, V0, V1


def _predicted_rates(pair: GaussianPair, tau: float) -> tuple[float, float]:
    """The auditor's error rates of the test "say X' iff L < tau": Pr_P(L < tau) and
    Pr_Q(L >= tau) = Pr_Q(ln q/p <= -tau) (the loss laws are continuous)."""
    return pair.loss_law("PQ").cdf(tau), pair.loss_law("QP").cdf(-tau)


def _check_attack(pair: GaussianPair, V0: np.ndarray, V1: np.ndarray) -> AttackResult:
    eps_auditor = pair.epsilon(DELTA, "exact")
    res = likelihood_ratio_attack(V0, V1, pair, delta=DELTA, confidence=CONFIDENCE)
    # the contract: the attack never certifies more than the auditor reports (at 95 % confidence)
    assert res.eps_lb <= eps_auditor, (res.to_row(), eps_auditor)
    # teeth: the attack does certify substantial leakage
    assert res.eps_lb > 0.5, (res.to_row(), eps_auditor)
    # sharper, two-sided: the auditor predicts the attack's error rates at the chosen threshold
    fpr, fnr = _predicted_rates(pair, res.threshold)
    for k, n, rate in ((res.fp, res.n0, fpr), (res.fn, res.n1, fnr)):
        low, high = clopper_pearson(k, n, 0.999)
        assert low <= rate <= high, (k, n, rate)
    # ... and the test's own epsilon (its exact rates) is below the auditor's (Neyman-Pearson)
    eps_test = max(math.log((1 - DELTA - fnr) / fpr), math.log((1 - DELTA - fpr) / fnr), 0.0)
    assert eps_test <= eps_auditor
    return res


ENGINE_NETWORKS = [pytest.param(name, marks=pytest.mark.slow) for name in NETWORKS]
"""With ``-m slow`` (8,000 engine runs per network, 30-40 s each). The default suite keeps the attack
on the matrix backend's views (:func:`test_attack_on_matrix_backend_views`), the engine's observer
views against the auditor's law on the paper's ring
(tests/protocols/ddppm/test_validation_engine.py) and the engine's runs equal to the matrix
backend's with the same noise (tests/engine)."""


@pytest.mark.parametrize("name", ENGINE_NETWORKS)
def test_attack_on_engine_views_never_exceeds_the_auditor(name):
    """Section 5.3 on the engine, on the paper's ring, a grid and a random graph: N = 4000 runs per dataset,
    threshold on the first half, counts on the second; Clopper-Pearson at 95 % joint confidence (union
    bound), delta = 1e-3."""
    pair, V0, V1 = _engine_views(name)
    assert pair.support_mismatch is None
    _check_attack(pair, V0, V1)
    # null check: both sample sets from X (disjoint runs), the attack certifies nothing
    half = RUNS // 2
    assert likelihood_ratio_attack(V0[:half], V0[half:], pair, delta=DELTA).eps_lb == 0.0


@pytest.mark.parametrize("name", ENGINE_NETWORKS)
def test_attack_score_has_the_auditors_mean(name):
    """E_P[L] = KL(P||Q) and E_Q[L] = -KL(Q||P) for the score L = ln p/q on engine views, within five
    standard errors (sample standard deviation / sqrt(N))."""
    pair, V0, V1 = _engine_views(name)
    for V, expect in ((V0, pair.kl("PQ")), (V1, -pair.kl("QP"))):
        L = log_likelihood_ratio(V, pair)
        se = L.std(ddof=1) / math.sqrt(L.size)
        assert abs(L.mean() - expect) <= 5 * se, (L.mean(), expect, se)
    # teeth: the means are many standard errors apart
    L0, L1 = log_likelihood_ratio(V0, pair), log_likelihood_ratio(V1, pair)
    assert L0.mean() - L1.mean() > 10 * (L0.std() + L1.std()) / math.sqrt(RUNS)


def _observer_view_from_states(res, data, net, p, o: int) -> np.ndarray:
    """Observer ``o``'s joint view from a run's recorded gossip states (``record_states=True``), compressed
    as in :func:`tests.protocols.ddppm.test_validation_engine.observer_view_from_run`: in round ``k`` of
    iteration ``t`` neighbour ``l`` sends ``states[0, t-1, k-1, l]``; then ``q^(T)`` of the others and
    ``o``'s own noise."""
    T, c = p.iterations, p.consensus_steps
    B = receive_basis(net.graph, net.dense_W(), [o], c)
    senders = sorted(net.graph.neighbors(o))
    K = np.vstack([np.linalg.matrix_power(net.dense_W(), k)[senders] for k in range(c)])
    KP = K.copy()
    KP[:, o] = 0.0
    A = B @ np.linalg.pinv(KP)
    parts = []
    for t in range(1, T + 1):
        raw = np.vstack([res.states[0, t - 1, k, senders] for k in range(c)])
        parts.append((A @ raw - np.outer(A @ K[:, o], res.z[0, t - 1, o])).ravel())
    others = np.concatenate([np.arange(data.offsets[j], data.offsets[j + 1])
                             for j in range(net.m) if j != o])
    parts.append(res.q_final[0, others])
    own = np.arange(data.offsets[o], data.offsets[o + 1])
    parts.append(np.concatenate([res.noise[0, s, own] for s in range(T + 1)]))
    return np.concatenate(parts)


def test_attack_on_matrix_backend_views():
    """The same attack on a second configuration (T = 3, c = 1) with the matrix backend (cheaper):
    views assembled from its recorded gossip states, N = 5000 runs per dataset."""
    net, data, p, X1, observer = _problem("paper-ring4", T=3, c=1)
    data1 = data.with_matrix(X1)
    # the helper assembles the same view as the engine's transcript does (same seed, same noise)
    np.testing.assert_allclose(
        _observer_view_from_states(run_matrix(data1, net, p, 7, record_states=True), data1, net, p,
                                   observer),
        observer_view_from_run(run_engine(data1, net, p, 7), data1, net, p, observer),
        rtol=1e-9, atol=1e-12)
    runs = 5000
    V0 = np.array([_observer_view_from_states(run_matrix(data, net, p, s, record_states=True),
                                              data, net, p, observer) for s in range(runs)])
    V1 = np.array([_observer_view_from_states(run_matrix(data1, net, p, s, record_states=True),
                                              data1, net, p, observer)
                   for s in range(runs, 2 * runs)])
    _check_attack(_auditor_pair(net, data, p, X1, observer), V0, V1)
