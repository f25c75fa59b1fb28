"""The Lanczos path of ``xi_eigenvalues`` against dense ``eigvalsh`` of ``xi_matrix`` (small n, forced)."""

from __future__ import annotations

import numpy as np
import pytest

from dpgossip.protocols.ddppm.spectrum import (
    XI_TOL,
    xi_apply,
    xi_eigenvalues,
    xi_matrix,
    xi_operator,
)
from dpgossip.topology import make_network
from tests.conftest import spiked_data


@pytest.mark.parametrize("topology", ["ring", "random_geometric"])
@pytest.mark.parametrize("c", [1, 5])
def test_lanczos_moduli_match_dense(topology: str, c: int) -> None:
    m = 60
    net = make_network(topology, agents=m, seed=3)
    data = spiked_data(5 * m, 8, [3.0, 2.0, 1.5, 1.0], m, seed=1)
    k = 3
    got = xi_eigenvalues(data, net.W, c, k=k, dense_limit=0)
    ev = np.linalg.eigvalsh(xi_matrix(data, net.W, c))
    want = np.sort(np.abs(ev))[::-1][:k]
    assert np.all(np.abs(got - want) <= 2 * XI_TOL * want)
    assert np.array_equal(xi_eigenvalues(data, net.W, c, k=k, dense_limit=0), got)


@pytest.mark.parametrize("topology", ["ring", "random_geometric", "erdos_renyi"])
@pytest.mark.parametrize("equal", [True, False])
def test_xi_operator_equals_xi_apply(topology: str, equal: bool) -> None:
    """The relabelled, batched product equals the plain one (and ``xi_matrix``) to rounding."""
    m = 40
    net = make_network(topology, agents=m, seed=5)
    data = spiked_data(4 * m + (0 if equal else 3), 6, [3.0, 2.0, 1.0], m, seed=2)
    xop = xi_operator(data, net.W, 4)
    assert sorted(xop.mixing.perm.tolist()) == list(range(m))
    q = np.random.default_rng(0).standard_normal(data.n)
    want = xi_matrix(data, net.W, 4) @ q
    assert np.max(np.abs(xop.apply(q) - want)) <= 1e-12 * np.max(np.abs(want))
    assert np.max(np.abs(xi_apply(data, net.W, 4, q) - want)) <= 1e-12 * np.max(np.abs(want))
