"""Randomized pairwise gossip decays at the rate of its second-moment operator (Boyd et al. 2006).

Oracle: the operator ``Y -> E[W Y W^T]`` built here from the full ``m x m`` pair matrices
(``sum_ij (P_ij / m) W_ij kron W_ij``, restricted by the projector ``Pi = I - J / m`` on both
sides), independent of :func:`second_moment_rate`. Starting from ``x^0 ~ N(0, Y*)`` with ``Y*`` its
leading eigenmatrix (positive semidefinite, trace one), ``E ||x^k - avg||^2 = rho^k`` exactly, so
the mean over repeats of sampled schedules decays at ``rho`` per tick with no transient.
"""

from __future__ import annotations

import networkx as nx
import numpy as np

from dpgossip.topology.schedule_backend import (
    expected_pair_matrix,
    schedule_trajectory,
    second_moment_rate,
)
from dpgossip.topology.schedule_samplers import neighbour_probabilities, pairwise_gossip
from dpgossip.topology.schedules import MixingSchedule


def _operator(P: np.ndarray) -> tuple[float, np.ndarray]:
    """``rho`` and the leading eigenmatrix ``Y*`` (``m x m``, ``Y* 1 = 0``, trace one)."""
    m = P.shape[0]
    Pi = np.eye(m) - np.ones((m, m)) / m
    M = np.zeros((m * m, m * m))
    for i, j in zip(*np.nonzero(P), strict=True):
        W = np.eye(m)
        W[[i, j]] = 0.0
        W[np.ix_([i, j], [i, j])] = 0.5
        M += P[i, j] / m * np.kron(W, W)
    M = np.kron(Pi, Pi) @ M @ np.kron(Pi, Pi)
    w, V = np.linalg.eig(M)
    k = int(np.argmax(w.real))
    Y = V[:, k].real.reshape(m, m)
    Y = (Y + Y.T) / 2
    return float(w[k].real), Y / np.trace(Y)


def test_mean_squared_deviation_decays_at_the_second_moment_rate() -> None:
    g = nx.lollipop_graph(4, 2)
    P = neighbour_probabilities(g).toarray()
    m = P.shape[0]
    rho, Y = _operator(P)
    assert abs(second_moment_rate(P) - rho) < 1e-12
    lam2 = float(np.sort(np.linalg.eigvalsh(expected_pair_matrix(P)))[-2])
    assert rho <= lam2 + 1e-12
    vals, vecs = np.linalg.eigh(Y)
    assert vals.min() > -1e-12                        # Y* is a covariance
    root = vecs * np.sqrt(np.clip(vals, 0, None))
    R, K = 1200, 60
    rng = np.random.default_rng(20260101)
    # one long i.i.d. tick sequence cut into R independent schedules of K ticks
    long = pairwise_gossip(P, rng, ticks=R * K)
    msd = np.zeros(K + 1)
    for r in range(R):
        s = MixingSchedule(m=m, kind="pairwise", pairs=long.pairs[r * K:(r + 1) * K])
        x0 = root @ rng.standard_normal(m)
        traj = schedule_trajectory(s, x0)
        msd += ((traj - traj.mean(axis=1, keepdims=True)) ** 2).sum(axis=1)
    msd /= R
    k = np.arange(K + 1)
    measured = float(np.exp(np.polyfit(k, np.log(msd), 1)[0]))
    # per-tick decay exponent within 10 % of the operator's
    assert abs(np.log(measured) / np.log(rho) - 1) < 0.10
    # never slower than Boyd et al.'s bound lambda_2(E[W])^k, at the fitted rate and every tick
    assert measured < lam2
    assert np.all(msd <= lam2 ** k * (1 + 0.15))


def test_docs_print_the_lollipop_rates() -> None:
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "dynamic-gossip.md").read_text("utf-8")
    P = neighbour_probabilities(nx.lollipop_graph(4, 2)).toarray()
    lam2 = float(np.sort(np.linalg.eigvalsh(expected_pair_matrix(P)))[-2])
    assert f"`rho = {second_moment_rate(P):.4f}` per tick" in doc
    assert f"`lambda_2(E[W]) = {lam2:.4f}`" in doc
