"""Mixing rules against hand-computed matrices and closed-form spectra."""

from __future__ import annotations

import sys

import networkx as nx
import numpy as np
import pytest

from dpgossip.errors import ConfigError
from dpgossip.topology import MIXING_RULES, build_graph, validate_mixing
from dpgossip.topology import mixing_matrix as sparse_mixing_matrix

pytest.importorskip("cvxpy")  # rule "fastest" is tested here; the extra is in dpgossip[test]


def mixing_matrix(graph, rule, **opts):
    """The rule's (sparse) mixing matrix as a dense array, for the dense oracles below."""
    return sparse_mixing_matrix(graph, rule, **opts).toarray()


def slem(W: np.ndarray) -> float:
    """Independent SLEM: the largest |eigenvalue| after deflating the eigenvalue 1 of 1/sqrt(m)."""
    m = W.shape[0]
    lam = np.sort(np.linalg.eigvalsh(W))
    assert lam[-1] == pytest.approx(1.0, abs=1e-9)
    return max(abs(lam[0]), abs(lam[-2])) if m > 1 else 0.0


PATH3 = nx.path_graph(3)  # 0 - 1 - 2, degrees (1, 2, 1)
STAR4 = nx.star_graph(3)  # hub 0, leaves 1, 2, 3; degrees (3, 1, 1, 1)
PAW = nx.Graph([(0, 1), (0, 2), (1, 2), (0, 3)])  # triangle 0-1-2 + pendant 3; degrees (3, 2, 2, 1)


def test_metropolis_by_hand():
    # path 0-1-2: W_01 = W_12 = 1/(1 + max(1, 2)) = 1/3; diagonal 1 - 1/3, 1 - 2/3, 1 - 1/3
    expected = np.array([[2 / 3, 1 / 3, 0], [1 / 3, 1 / 3, 1 / 3], [0, 1 / 3, 2 / 3]])
    np.testing.assert_allclose(mixing_matrix(PATH3, "metropolis"), expected, rtol=0, atol=1e-15)
    # star hub 0: every edge 1/(1 + 3) = 1/4; hub diagonal 1 - 3/4 = 1/4, leaves 1 - 1/4 = 3/4
    expected = np.array([[1 / 4, 1 / 4, 1 / 4, 1 / 4], [1 / 4, 3 / 4, 0, 0],
                         [1 / 4, 0, 3 / 4, 0], [1 / 4, 0, 0, 3 / 4]])
    np.testing.assert_allclose(mixing_matrix(STAR4, "metropolis"), expected, rtol=0, atol=1e-15)
    # paw: edges at the hub 1/(1+3) = 1/4, edge 1-2 is 1/(1+2) = 1/3;
    # diagonal: hub 1 - 3/4 = 1/4, nodes 1, 2: 1 - 1/4 - 1/3 = 5/12, pendant 1 - 1/4 = 3/4
    expected = np.array([[1 / 4, 1 / 4, 1 / 4, 1 / 4], [1 / 4, 5 / 12, 1 / 3, 0],
                         [1 / 4, 1 / 3, 5 / 12, 0], [1 / 4, 0, 0, 3 / 4]])
    np.testing.assert_allclose(mixing_matrix(PAW, "metropolis"), expected, rtol=0, atol=1e-15)


def test_lazy_metropolis_and_max_degree_by_hand():
    # lazy path: (I + W_MH)/2 = [[5/6, 1/6, 0], [1/6, 2/3, 1/6], [0, 1/6, 5/6]]
    expected = np.array([[5 / 6, 1 / 6, 0], [1 / 6, 2 / 3, 1 / 6], [0, 1 / 6, 5 / 6]])
    np.testing.assert_allclose(mixing_matrix(PATH3, "lazy_metropolis"), expected, atol=1e-15)
    # paw, d_max = 3: every edge 1/4; diagonal 1 - 3/4, 1 - 2/4, 1 - 2/4, 1 - 1/4
    expected = np.array([[1 / 4, 1 / 4, 1 / 4, 1 / 4], [1 / 4, 1 / 2, 1 / 4, 0],
                         [1 / 4, 1 / 4, 1 / 2, 0], [1 / 4, 0, 0, 3 / 4]])
    np.testing.assert_allclose(mixing_matrix(PAW, "max_degree"), expected, rtol=0, atol=1e-15)


def test_best_constant_by_hand():
    # path: Laplacian eigenvalues 0, 1, 3 -> a = 2/(3 + 1) = 1/2; W = I - L/2
    expected = np.array([[1 / 2, 1 / 2, 0], [1 / 2, 0, 1 / 2], [0, 1 / 2, 1 / 2]])
    np.testing.assert_allclose(mixing_matrix(PATH3, "best_constant"), expected, atol=1e-15)
    # star K_{1,3}: Laplacian eigenvalues 0, 1, 1, 4 -> a = 2/(4 + 1) = 2/5;
    # hub diagonal 1 - 3(2/5) = -1/5 (negative!), leaves 1 - 2/5 = 3/5
    expected = np.array([[-1 / 5, 2 / 5, 2 / 5, 2 / 5], [2 / 5, 3 / 5, 0, 0],
                         [2 / 5, 0, 3 / 5, 0], [2 / 5, 0, 0, 3 / 5]])
    W = mixing_matrix(STAR4, "best_constant")
    np.testing.assert_allclose(W, expected, atol=1e-15)
    # SLEM = (4 - 1)/(4 + 1) = 3/5, but W is rejected because it is not nonnegative
    assert slem(W) == pytest.approx(3 / 5, abs=1e-14)
    with pytest.raises(ConfigError, match=r"negative entry W\[0, 0\] = -0\.2"):
        validate_mixing(STAR4, W)


def test_best_constant_on_complete_graph_is_exact_averaging():
    # K_m: L = mI - J has eigenvalues m (m-1 times) and 0 -> a = 1/m, W = I - (mI - J)/m = J/m
    np.testing.assert_allclose(mixing_matrix(nx.complete_graph(6), "best_constant"),
                               np.full((6, 6), 1 / 6), atol=1e-15)


@pytest.mark.parametrize("seed", range(5))
def test_best_constant_slem_matches_laplacian_closed_form(seed):
    g = build_graph("erdos_renyi", 12, seed=seed)
    lam = np.sort(np.linalg.eigvalsh(nx.laplacian_matrix(g).toarray().astype(float)))
    lam1, lam_m1 = lam[-1], lam[1]  # largest and second smallest Laplacian eigenvalue
    closed = (lam1 - lam_m1) / (lam1 + lam_m1)
    assert slem(mixing_matrix(g, "best_constant")) == pytest.approx(closed, abs=1e-12)


@pytest.mark.parametrize("m", [4, 6, 10])
def test_max_degree_plus_one_avoids_periodicity_on_even_ring(m):
    g = nx.cycle_graph(m)
    # I - L/d_max = A/2 on the ring: eigenvalue cos(2 pi (m/2) / m) = -1, SLEM 1
    naive = np.eye(m) - nx.laplacian_matrix(g).toarray() / 2
    assert slem(naive) == pytest.approx(1.0, abs=1e-12)
    # I - L/3: eigenvalues 1 - (2/3)(1 - cos(2 pi k/m)); SLEM = max(lambda_2, |1 - 4/3|)
    k = np.arange(1, m)
    closed = np.max(np.abs(1 - (2 / 3) * (1 - np.cos(2 * np.pi * k / m))))
    assert slem(mixing_matrix(g, "max_degree")) == pytest.approx(closed, abs=1e-12)
    assert closed < 1


@pytest.mark.parametrize("rule", MIXING_RULES)
@pytest.mark.parametrize("graph", [PATH3, PAW, nx.cycle_graph(7), nx.petersen_graph()],
                         ids=["path3", "paw", "ring7", "petersen"])
def test_rules_are_symmetric_stochastic_and_supported_on_edges(rule, graph):
    W = mixing_matrix(graph, rule)
    m = graph.number_of_nodes()
    np.testing.assert_array_equal(W, W.T)
    np.testing.assert_allclose(W.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    A = nx.to_numpy_array(graph, nodelist=range(m)) + np.eye(m)
    assert np.all(W[A == 0] == 0)


@pytest.mark.parametrize("m", [2, 3, 4, 5, 6, 8, 11])
def test_fastest_on_path_is_cos_pi_over_m(m):
    # Boyd, Diaconis, Sun & Xiao (2006): FMMC on P_m has weight 1/2 on every edge, SLEM cos(pi/m)
    W = mixing_matrix(nx.path_graph(m), "fastest")
    assert slem(W) == pytest.approx(np.cos(np.pi / m), abs=1e-6)
    validate_mixing(nx.path_graph(m), W)


def ring_fmmc_closed_form(m: int) -> tuple[float, float]:
    """Optimal uniform weight w and SLEM of the FMMC on the cycle C_m (m >= 3).

    By symmetry the optimum has one weight w on every edge; W = I - w L has eigenvalues
    1 - 2w(1 - cos(2 pi k/m)).  lambda_2 = 1 - 2w(1 - c), c = cos(2 pi/m).
    Even m: lambda_min = 1 - 4w (k = m/2); 1 - 2w(1 - c) = 4w - 1 gives w = 1/(3 - c),
            SLEM = (1 + c)/(3 - c).
    Odd m: lambda_min = 1 - 2w(1 + c'), c' = cos(pi/m) (k = (m-1)/2);
           1 - 2w(1 - c) = 2w(1 + c') - 1 gives w = 1/(2 - c + c'), SLEM = (c + c')/(2 - c + c').
    Both have w <= 1/2, so the diagonal 1 - 2w is nonnegative.
    """
    c = np.cos(2 * np.pi / m)
    if m % 2 == 0:
        return 1 / (3 - c), (1 + c) / (3 - c)
    cp_ = np.cos(np.pi / m)
    return 1 / (2 - c + cp_), (c + cp_) / (2 - c + cp_)


def test_ring_closed_form_spot_values():
    assert ring_fmmc_closed_form(4) == pytest.approx((1 / 3, 1 / 3))  # C_4: w = 1/3, SLEM 1/3
    assert ring_fmmc_closed_form(3) == pytest.approx((1 / 3, 0.0), abs=1e-15)  # K_3: J/3
    w5, s5 = ring_fmmc_closed_form(5)
    assert w5 == pytest.approx(0.4)  # 2 - cos 72 + cos 36 = 2 + 1/2 (golden-ratio identity)


@pytest.mark.parametrize("m", [3, 4, 5, 6, 7, 8, 9, 12])
def test_fastest_on_ring_matches_closed_form(m):
    w, closed = ring_fmmc_closed_form(m)
    W = mixing_matrix(nx.cycle_graph(m), "fastest")
    assert slem(W) == pytest.approx(closed, abs=1e-6)
    # a brute-force check of the closed form: the uniform-weight SLEM is minimised at w
    grid = np.linspace(0, 0.5, 20001)
    k = np.arange(1, m)[:, None]
    uniform = np.max(np.abs(1 - 2 * grid * (1 - np.cos(2 * np.pi * k / m))), axis=0)
    assert uniform.min() == pytest.approx(closed, abs=1e-4)
    assert grid[np.argmin(uniform)] == pytest.approx(w, abs=1e-4)


@pytest.mark.parametrize("n_leaves", [3, 4, 7])
def test_fastest_on_star_pays_for_nonnegativity(n_leaves):
    # Star K_{1,n}: symmetric optimum has weight w on every edge; W = I - w L with Laplacian
    # eigenvalues 0, 1 (n-1 times), n+1. The hub diagonal 1 - n w >= 0 forces w <= 1/n, and the
    # balance point 2/(n+2) exceeds 1/n for n > 2, so w = 1/n and
    # SLEM = max(1 - 1/n, 1/n) = 1 - 1/n.
    # best_constant (a = 2/(n+2), negative hub diagonal) reaches n/(n+2), which is smaller.
    g = nx.star_graph(n_leaves)
    W = mixing_matrix(g, "fastest")
    assert slem(W) == pytest.approx(1 - 1 / n_leaves, abs=1e-6)
    assert slem(mixing_matrix(g, "best_constant")) == pytest.approx(n_leaves / (n_leaves + 2))
    np.testing.assert_allclose(W[0, 1:], 1 / n_leaves, atol=1e-6)


@pytest.mark.parametrize("seed", range(4))
def test_fastest_never_worse_than_nonnegative_rules(seed):
    g = build_graph("erdos_renyi", 14, seed=seed)
    W = mixing_matrix(g, "fastest")
    validate_mixing(g, W)
    best = slem(W)
    for rule in ("metropolis", "lazy_metropolis", "max_degree", "best_constant"):
        other = mixing_matrix(g, rule)
        if other.min() >= 0:  # only nonnegative matrices are feasible for the FMMC problem
            assert best <= slem(other) + 1e-7, rule


def test_fastest_output_is_clean():
    g = build_graph("random_geometric", 12, seed=4)
    W = mixing_matrix(g, "fastest")
    assert W.min() >= 0
    np.testing.assert_array_equal(W, W.T)
    np.testing.assert_allclose(W.sum(axis=1), 1.0, rtol=0, atol=1e-14)
    assert slem(mixing_matrix(nx.complete_graph(5), "fastest")) == pytest.approx(0, abs=1e-6)


def test_fastest_without_cvxpy_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "cvxpy", None)  # makes "import cvxpy" raise ImportError
    with pytest.raises(ConfigError, match=r'pip install "dpgossip\[fmmc\]"'):
        mixing_matrix(PATH3, "fastest")


def test_bad_rule_option_and_graph():
    with pytest.raises(ConfigError, match=r"^mixing: unknown mixing rule 'metropolsi' "
                                          r"\(did you mean 'metropolis'\?\); known: metropolis"):
        mixing_matrix(PATH3, "metropolsi")
    with pytest.raises(ConfigError, match=r"unknown option 'solver' for rule 'metropolis'"):
        mixing_matrix(PATH3, "metropolis", solver="SCS")
    with pytest.raises(ConfigError, match=r"solver 'NOPE' .*not installed"):
        mixing_matrix(PATH3, "fastest", solver="NOPE")
    with pytest.raises(ConfigError, match=r"disconnected: 2 components"):
        mixing_matrix(nx.Graph([(0, 1), (2, 3)]), "metropolis")
