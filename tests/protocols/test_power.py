import numpy as np

from dpgossip.protocols.power import centralized_power_method, top_singular


def test_centralized_power_method_matches_eigh():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((30, 5)) @ np.diag([4, 2.5, 1.5, 1, 0.5])
    q0 = rng.standard_normal((30, 3))
    Q = centralized_power_method(X, q0, 300)
    ev, vec = np.linalg.eigh(X @ X.T)
    for l in range(3):
        u = vec[:, -1 - l]
        assert abs(abs(u @ Q[:, l]) - 1) < 1e-10


def test_top_singular_is_eigenvectors_of_gram():
    X = np.random.default_rng(2).standard_normal((12, 4))
    sp = top_singular(X, 2)
    A = X @ X.T
    for l in range(2):
        np.testing.assert_allclose(A @ sp.U[:, l], sp.eigenvalues[l] * sp.U[:, l], atol=1e-10)
