"""The private power method of Nicolas et al. (Algorithms 1 and 2) and its sensitivities (docs/ppm.md)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpgossip.data.partition import PartitionedData
from dpgossip.errors import ConfigError
from dpgossip.protocols.ppm.central import (
    PpmParams,
    federated_standard_noise,
    orthonormalise,
    run_ppm,
    run_ppm_federated,
)
from dpgossip.protocols.ppm.sensitivity import (
    element_sensitivity,
    iterate_sensitivity,
    replacement_change,
    row_replacement_sensitivity,
)


def _data(n: int = 120, d: int = 8, seed: int = 0) -> np.ndarray:
    """Rows in the unit ball with a clear spectral gap after the second and fourth singular values."""
    rng = np.random.default_rng(seed)
    U = np.linalg.qr(rng.standard_normal((n, d)))[0]
    W = np.linalg.qr(rng.standard_normal((d, d)))[0]
    X = U @ np.diag([10.0, 8.0, 3.0, 2.5, 0.6, 0.4, 0.2, 0.1][:d]) @ W.T
    return X / np.linalg.norm(X, axis=1).max()


def _projector(B: np.ndarray) -> np.ndarray:
    return B @ B.T


def _stiefel(rng: np.random.Generator, d: int, p: int) -> np.ndarray:
    return np.linalg.qr(rng.standard_normal((d, p)))[0]


def _ball(rng: np.random.Generator, d: int) -> np.ndarray:
    x = rng.standard_normal(d)
    radius = rng.choice([1.0, rng.uniform()])  # the boundary often: that is where the supremum lives
    return radius * x / np.linalg.norm(x)


# --- Algorithm 1 without noise: the block power method -------------------------------------------

@pytest.mark.parametrize("p,k", [(2, 2), (4, 2), (4, 4), (3, 1)])
def test_noise_free_run_converges_to_the_top_right_singular_subspace(p, k):
    X = _data()
    res = run_ppm(X, PpmParams(p=p, k=k, iterations=150, noise_multiplier=0.0), seed=5)
    _, _, Wt = np.linalg.svd(X)
    top = Wt[:k].T
    np.testing.assert_allclose(res.basis.T @ res.basis, np.eye(p), atol=1e-12)
    assert np.linalg.norm(_projector(res.components) - _projector(top), 2) < 1e-8
    assert np.all(res.noise == 0)


def test_each_iterate_is_the_qr_of_the_released_product():
    X = _data(d=6)
    res = run_ppm(X, PpmParams(p=3, k=2, iterations=4, noise_multiplier=0.7), seed=1)
    for l in range(1, 5):
        np.testing.assert_allclose(res.Y[l - 1], X.T @ X @ res.iterates[l - 1] + res.noise[l - 1],
                                   atol=1e-12)
        np.testing.assert_array_equal(res.iterates[l], orthonormalise(res.Y[l - 1]))
        Q, R = res.iterates[l], res.iterates[l].T @ res.Y[l - 1]
        np.testing.assert_allclose(Q @ R, res.Y[l - 1], atol=1e-10)
        assert np.all(np.diag(R) >= 0) and np.allclose(np.tril(R, -1), 0, atol=1e-10)


@pytest.mark.parametrize("adjacency,kind", [("element", "prior"), ("element", "improved"),
                                            ("row-replacement", "prior"),
                                            ("row-replacement", "improved"),
                                            ("bounded-row-replacement", "improved")])
def test_noise_scale_is_the_sensitivity_of_the_previous_iterate_times_sigma(adjacency, kind):
    X = _data(d=6)
    params = PpmParams(p=3, k=2, iterations=3, noise_multiplier=0.5, sensitivity=kind,
                       adjacency=adjacency)
    Z = np.random.default_rng(9).standard_normal((3, 6, 3))
    res = run_ppm(X, params, seed=2, standard_noise=Z)
    for l in range(3):
        D = iterate_sensitivity(res.iterates[l], adjacency, kind)
        assert res.sensitivities[l] == D
        np.testing.assert_array_equal(res.noise[l], (D * 0.5) * Z[l])
    np.testing.assert_array_equal(res.noise_std, res.sensitivities * 0.5)


def test_same_seed_gives_bit_identical_runs_and_another_seed_does_not():
    data = PartitionedData(X=_data(), sizes=(40, 40, 40))
    params = PpmParams(p=4, k=2, iterations=5, noise_multiplier=1.3, adjacency="element")
    for run in (run_ppm, run_ppm_federated):
        a, b = run(data, params, 11), run(data, params, np.random.SeedSequence(11))
        for name in ("basis", "iterates", "Y", "noise", "sensitivities", "noise_std"):
            np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
        assert not np.array_equal(a.noise, run(data, params, 12).noise)


# --- Algorithm 2: federated with secure aggregation ----------------------------------------------

@pytest.mark.parametrize("sizes", [(120,), (60, 60), (10, 30, 50, 30), (1,) * 20 + (100,)])
@pytest.mark.parametrize("adjacency", ["element", "row-replacement"])
def test_federated_equals_centralised_with_the_same_total_noise(sizes, adjacency):
    data = PartitionedData(X=_data(), sizes=sizes)
    params = PpmParams(p=4, k=3, iterations=6, noise_multiplier=0.8, adjacency=adjacency)
    fed = run_ppm_federated(data, params, 3)
    Z = federated_standard_noise(3, data.m, data.d, params)
    cen = run_ppm(data, params, 3, standard_noise=Z)
    assert fed.clients == data.m and cen.clients == 1
    for name in ("basis", "iterates", "Y", "noise", "sensitivities"):
        np.testing.assert_allclose(getattr(fed, name), getattr(cen, name), rtol=0, atol=1e-10)


def test_the_sum_of_the_shares_has_the_central_variance():
    params = PpmParams(p=5, k=1, iterations=40, noise_multiplier=1.0)
    Z = federated_standard_noise(0, 7, 50, params)
    # 10,000 standard normal entries: mean 0 +- 0.01, variance 1 +- 0.014 (one standard error)
    assert abs(Z.mean()) < 0.05 and abs(Z.var() - 1) < 0.07


# --- sensitivities ---------------------------------------------------------------------------------

@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), d=st.integers(1, 7), p=st.integers(1, 7))
def test_row_replacement_change_never_exceeds_the_derived_sensitivity(seed, d, p):
    p = min(p, d)
    rng = np.random.default_rng(seed)
    V = _stiefel(rng, d, p)
    bound = row_replacement_sensitivity(p)
    for _ in range(20):
        x, x_new = _ball(rng, d), _ball(rng, d)
        change = replacement_change(x, x_new, V)
        C = np.outer(x_new, x_new) - np.outer(x, x)
        assert change <= bound + 1e-12
        assert change <= np.linalg.norm(C) + 1e-12  # ||C V||_F <= ||C||_F
        fro2 = (x @ x) ** 2 + (x_new @ x_new) ** 2 - 2 * (x @ x_new) ** 2
        assert np.linalg.norm(C) ** 2 == pytest.approx(fro2, abs=1e-12)
        assert change <= row_replacement_sensitivity(p, "prior") + 1e-12


@pytest.mark.parametrize("d,p", [(2, 2), (5, 2), (8, 3), (8, 8), (5, 1), (1, 1)])
def test_row_replacement_sensitivity_is_attained_in_the_column_space_of_v(d, p):
    V = _stiefel(np.random.default_rng(d * 10 + p), d, p)
    if p >= 2:
        x, x_new = V[:, 0], V[:, 1]  # orthonormal, in range(V): C V V^T = C
    else:
        x_new = V[:, 0]
        x = np.zeros(d)  # or any unit vector orthogonal to V
    assert replacement_change(x, x_new, V) == pytest.approx(row_replacement_sensitivity(p), abs=1e-12)
    assert row_replacement_sensitivity(p) == math.sqrt(min(p, 2))


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), d=st.integers(1, 7), p=st.integers(1, 7))
def test_bounded_row_replacement_change_never_exceeds_sqrt_3_over_2(seed, d, p):
    p = min(p, d)
    rng = np.random.default_rng(seed)
    V = _stiefel(rng, d, p)
    bound = row_replacement_sensitivity(p, bounded=True)
    for _ in range(40):
        x, x_new = _ball(rng, d), _ball(rng, d)
        gap = np.linalg.norm(x_new - x)
        if gap > 1:  # pull x' into the lens B(0, 1) ∩ B(x, 1) along the segment towards x
            x_new = x + (x_new - x) / gap
        assert replacement_change(x, x_new, V) <= bound + 1e-12


@pytest.mark.parametrize("d,p", [(2, 2), (6, 3), (4, 1)])
def test_bounded_row_replacement_sensitivity_is_attained(d, p):
    V = _stiefel(np.random.default_rng(d + p), d, p)
    if p >= 2:  # unit vectors at 60 degrees: ||x - x'|| = 1
        x, x_new = V[:, 0], 0.5 * V[:, 0] + math.sqrt(0.75) * V[:, 1]
        assert np.linalg.norm(x - x_new) == pytest.approx(1.0, abs=1e-12)
    else:
        x, x_new = np.zeros(d), V[:, 0]
    assert replacement_change(x, x_new, V) == pytest.approx(
        row_replacement_sensitivity(p, bounded=True), abs=1e-12)
    assert row_replacement_sensitivity(p, bounded=True) == (math.sqrt(1.5) if p >= 2 else 1.0)
    assert iterate_sensitivity(V, "bounded-row-replacement", "improved") \
        == row_replacement_sensitivity(p, bounded=True)


def test_random_search_approaches_but_never_exceeds_sqrt_2():
    rng = np.random.default_rng(4)
    d, p = 6, 3
    V = _stiefel(rng, d, p)
    best = 0.0
    for _ in range(4000):  # unit vectors near the column space of V
        a, b = V @ rng.standard_normal(p), V @ rng.standard_normal(p)
        a = a + 0.05 * rng.standard_normal(d)
        b = b + 0.05 * rng.standard_normal(d)
        best = max(best, replacement_change(a / np.linalg.norm(a), b / np.linalg.norm(b), V))
    assert math.sqrt(2) - 0.02 < best <= math.sqrt(2) + 1e-12


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), d=st.integers(1, 7), p=st.integers(1, 7))
def test_element_change_never_exceeds_the_improved_bound(seed, d, p):
    p = min(p, d)
    rng = np.random.default_rng(seed)
    V = _stiefel(rng, d, p)
    improved, prior = element_sensitivity(V, "improved"), element_sensitivity(V, "prior")
    assert improved <= prior + 1e-12
    for _ in range(10):
        C = rng.standard_normal((d, d)) * (rng.uniform(size=(d, d)) < 0.5)
        C = C + C.T
        scale = math.sqrt(np.sum(np.sum(np.abs(C), axis=1) ** 2))
        if scale > 0:
            C /= scale  # sqrt(sum_i ||C_i:||_1^2) = 1 (Nicolas et al., Eq. (7))
        assert np.linalg.norm(C @ V) <= improved + 1e-12
    j = int(np.argmax(np.linalg.norm(V, axis=1)))
    E = np.zeros((d, d))
    E[j, j] = 1.0
    assert np.linalg.norm(E @ V) == pytest.approx(improved, abs=1e-12)


# --- bad input ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs,field", [
    ({"p": 0}, "p"), ({"p": 2.0}, "p"), ({"k": 5}, "k"), ({"k": 0}, "k"), ({"iterations": 0}, "iterations"),
    ({"noise_multiplier": -1.0}, "noise_multiplier"), ({"noise_multiplier": math.nan}, "noise_multiplier"),
    ({"noise_multiplier": "1"}, "noise_multiplier"), ({"sensitivity": "tight"}, "sensitivity"),
    ({"adjacency": "row"}, "adjacency"),
])
def test_bad_params_name_the_parameter(kwargs, field):
    base = {"p": 4, "k": 2, "iterations": 3, "noise_multiplier": 1.0}
    with pytest.raises(ConfigError) as err:
        PpmParams(**{**base, **kwargs})
    assert err.value.field == field and str(err.value).startswith(field)
    assert repr(kwargs[field]) in str(err.value)


def test_bad_run_input_names_the_parameter():
    params = PpmParams(p=4, k=2, iterations=2, noise_multiplier=1.0)
    cases = [
        (lambda: run_ppm(np.ones((5, 3)) / 2, params, 0), "params.p"),
        (lambda: run_ppm(np.ones((5, 4)), params, 0), "data_or_X"),
        (lambda: run_ppm(np.ones(4), params, 0), "data_or_X"),
        (lambda: run_ppm(_data(), params, 0, standard_noise=np.zeros((2, 8, 3))), "standard_noise"),
        (lambda: run_ppm_federated(_data(), params, 0), "data"),
        (lambda: federated_standard_noise(0, 0, 8, params), "clients"),
        (lambda: row_replacement_sensitivity(0), "p"),
        (lambda: element_sensitivity(np.eye(3), "exact"), "kind"),
    ]
    for call, field in cases:
        with pytest.raises(ConfigError) as err:
            call()
        assert err.value.field == field, (field, str(err.value))
