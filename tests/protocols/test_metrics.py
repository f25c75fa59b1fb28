import numpy as np

from dpgossip.protocols.metrics import (
    captured_energy,
    error_per_iteration,
    sin_angle,
    subspace_distance,
)


def test_sin_angle_closed_form():
    v = np.array([1.0, 0.0])
    th = 0.3
    assert abs(sin_angle(v, np.array([np.cos(th), np.sin(th)]) * 7) - np.sin(th)) < 1e-15
    assert sin_angle(v, -v) < 1e-15


def test_subspace_distance_principal_angle():
    U = np.eye(4)[:, :2]
    th = 0.2
    Uh = np.stack([[1, 0, 0, 0], [0, np.cos(th), np.sin(th), 0]], axis=1) * 3.0
    assert abs(subspace_distance(U, Uh) - np.sin(th)) < 1e-14


def test_captured_energy_is_one_for_the_true_subspace_and_less_otherwise():
    X = np.random.default_rng(0).standard_normal((10, 4))
    U, s, _ = np.linalg.svd(X, full_matrices=False)
    assert abs(captured_energy(X, U[:, :2]) - 1) < 1e-12
    assert (
        abs(captured_energy(X, U[:, 2:4], r=2) - (s[2] ** 2 + s[3] ** 2) / (s[0] ** 2 + s[1] ** 2))
        < 1e-12
    )


def test_error_per_iteration_shape_and_values():
    U = np.eye(3)[:, :1]
    it = np.array([[[1, 0, 0], [1, 1, 0], [0, 1, 0]]], dtype=float)
    np.testing.assert_allclose(error_per_iteration(it, U), [[0, np.sqrt(0.5), 1]])
