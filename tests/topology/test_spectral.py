"""Spectral summary and consensus rounds against closed forms and matrix powers."""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpgossip.errors import ConfigError
from dpgossip.topology import SpectralSummary, spectral_summary
from dpgossip.topology import mixing_matrix as sparse_mixing_matrix
from dpgossip.topology.spectral import consensus_rounds, rounds_for


def mixing_matrix(graph, rule, **opts):
    """The rule's (sparse) mixing matrix as a dense array, for the dense oracles below."""
    return sparse_mixing_matrix(graph, rule, **opts).toarray()


PAPER_W = np.array([[.5, .25, 0, .25], [.25, .5, .25, 0], [0, .25, .5, .25], [.25, 0, .25, .5]])


def test_paper_ring4():
    # W = I/2 + A/4 on C_4: eigenvalues 1/2 + cos(2 pi k/4)/2 = 1, 1/2, 0, 1/2
    s = spectral_summary(PAPER_W)
    assert isinstance(s, SpectralSummary)
    got = (s.lambda_1, s.lambda_2, s.lambda_min, s.slem)
    assert got == pytest.approx((1, .5, 0, .5), abs=1e-15)
    assert s.spectral_gap == pytest.approx(0.5)
    # 2^-10 = 1/1024 <= 1e-3 < 2^-9;  2^-20 = 9.5e-7 <= 1e-6 < 2^-19
    assert s.rounds_for(1e-3) == 10
    assert s.rounds_for(1e-6) == 20 == s.rounds
    row = s.to_row()
    assert row["slem"] == s.slem and row["rounds"] == 20
    assert all(isinstance(v, (int, float, str)) for v in row.values())


@pytest.mark.parametrize("m", [3, 4, 5, 8, 13])
def test_metropolis_ring_closed_form(m):
    # every degree is 2, so W = (I + A)/3 with eigenvalues (1 + 2 cos(2 pi k/m))/3
    lam = np.sort((1 + 2 * np.cos(2 * np.pi * np.arange(m) / m)) / 3)
    s = spectral_summary(mixing_matrix(nx.cycle_graph(m), "metropolis"))
    assert s.lambda_2 == pytest.approx(lam[-2], abs=1e-14)
    assert s.lambda_min == pytest.approx(lam[0], abs=1e-14)
    assert s.slem == pytest.approx(max(abs(lam[0]), abs(lam[-2])), abs=1e-14)


@pytest.mark.parametrize("tol", [1e-1, 1e-3, 1e-6, 1e-9])
@pytest.mark.parametrize("graph", [nx.cycle_graph(9), nx.path_graph(6), nx.petersen_graph()],
                         ids=["ring9", "path6", "petersen"])
def test_consensus_rounds_against_matrix_powers(graph, tol):
    W = mixing_matrix(graph, "metropolis")
    m = W.shape[0]
    c = consensus_rounds(W, tol)
    J = np.full((m, m), 1 / m)

    def gap(k: int) -> float:
        return float(np.linalg.norm(np.linalg.matrix_power(W, k) - J, 2))

    assert gap(c) <= tol * (1 + 1e-9)
    assert gap(c - 1) > tol * (1 - 1e-9)


@given(slem=st.floats(1e-6, 1 - 1e-6), tol=st.floats(1e-12, 1 - 1e-9))
def test_rounds_is_the_smallest_sufficient_count(slem, tol):
    c = rounds_for(slem, tol)
    assert isinstance(c, int) and c >= 1
    assert slem**c <= tol < slem ** (c - 1)


def test_rounds_edge_cases():
    assert rounds_for(0.5, 1.0) == 0
    assert rounds_for(0.5, 2.0) == 0
    assert rounds_for(0.0, 1e-9) == 1  # W = J/m reaches consensus in one round
    assert rounds_for(1.0, 1e-3) == math.inf
    assert spectral_summary(np.full((5, 5), 0.2)).rounds == 1
    with pytest.raises(ConfigError, match=r"tol: 0 is not allowed"):
        rounds_for(0.5, 0)
    with pytest.raises(ConfigError, match=r"tol: -1\.0 is not allowed"):
        rounds_for(0.5, -1.0)


def test_bad_matrices():
    with pytest.raises(ConfigError, match=r"not symmetric"):
        spectral_summary(np.array([[0.5, 0.5], [0.25, 0.75]]))
    with pytest.raises(ConfigError, match=r"square matrix"):
        spectral_summary(np.ones((2, 3)))
