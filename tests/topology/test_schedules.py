"""Mixing schedules: samplers, validation, the matrix backend and the scheduled release model."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

from dpgossip.errors import ConfigError
from dpgossip.protocols.gossip.scheduled import observe_schedule
from dpgossip.topology.schedule_backend import (
    apply_schedule,
    expected_pair_matrix,
    push_sum_ratio,
    schedule_messages,
    schedule_trajectory,
    second_moment_rate,
)
from dpgossip.topology.schedule_samplers import (
    neighbour_probabilities,
    one_peer_exponential,
    pairwise_gossip,
    push_sum_schedule,
    push_sum_weights,
    random_matchings,
    random_regular_rounds,
    schedule_from_files,
)
from dpgossip.topology.schedules import (
    AVERAGED,
    REFUSED,
    REPLY_LATE,
    REPLY_LOST,
    MixingSchedule,
    schedule_union_edges,
)


def _doubly(W: sp.csr_array) -> bool:
    A = W.toarray()
    return bool(np.allclose(A.sum(0), 1) and np.allclose(A.sum(1), 1) and A.min() >= 0)


def test_matchings_are_disjoint_pairs_on_the_graph_edges() -> None:
    g = nx.random_regular_graph(3, 12, seed=1)
    s = random_matchings(20, 3, graph=g)
    for W in s.matrices:
        A = W.toarray()
        assert _doubly(W) and np.allclose(A, A.T)
        off = np.argwhere((A > 0) & ~np.eye(12, dtype=bool))
        assert all(g.has_edge(int(i), int(j)) for i, j in off)
        assert np.all(np.count_nonzero(A, axis=1) <= 2)       # each agent in at most one pair
    assert {tuple(e) for e in schedule_union_edges(s).tolist()} <= {tuple(sorted(e)) for e in g.edges}


def test_one_peer_exponential_averages_exactly_after_log2_m_rounds() -> None:
    # closed form (Ying et al. 2021): for m = 2^tau the product of tau rounds is J / m
    x = np.random.default_rng(0).normal(size=16)
    s = one_peer_exponential(16, 4)
    assert all(_doubly(W) for W in s.matrices)
    np.testing.assert_allclose(apply_schedule(s, x), np.full(16, x.mean()), atol=1e-14)
    assert not np.allclose(apply_schedule(one_peer_exponential(16, 3), x), x.mean())


def test_random_regular_rounds_are_fresh_metropolis_graphs() -> None:
    s = random_regular_rounds(10, 3, 5, 7)
    assert all(_doubly(W) for W in s.matrices)
    for W in s.matrices:
        A = W.toarray()
        assert np.all(np.count_nonzero(A, axis=1) == 4) and np.allclose(A[A > 0], 0.25)
    assert len({W.toarray().tobytes() for W in s.matrices}) == 5


def test_pairwise_sampler_draws_peers_by_p_and_ticks_at_rate_m() -> None:
    g = nx.path_graph(4)
    P = np.array([[0, 1, 0, 0], [0.25, 0, 0.75, 0], [0, 0.5, 0, 0.5], [0, 0, 1, 0]])
    s = pairwise_gossip(P, 5, ticks=40_000)
    counts = np.zeros((4, 4))
    np.add.at(counts, (s.pairs[:, 0], s.pairs[:, 1]), 1)
    freq = counts / counts.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(freq, P, atol=0.02)
    assert abs(s.times[-1] / 40_000 - 0.25) < 0.01             # mean gap 1 / (m * rate)
    assert pairwise_gossip(neighbour_probabilities(g), 1, horizon=10.0).times.max() < 10.0


def test_pairwise_backend_equals_the_product_of_pair_matrices() -> None:
    # second method: dense W_k = I - (e_i - e_j)(e_i - e_j)^T / 2, or its responder-only row
    rng = np.random.default_rng(3)
    pairs = np.array([[0, 1], [2, 3], [1, 2], [3, 0], [0, 2]])
    outcomes = np.array([AVERAGED, REPLY_LOST, REPLY_LATE, REFUSED, AVERAGED])
    s = MixingSchedule(m=4, kind="pairwise", pairs=pairs, outcomes=outcomes)
    x = rng.normal(size=(4, 2))
    want = x.copy()
    for (i, j), o in zip(pairs, outcomes, strict=True):
        W = np.eye(4)
        if o != REFUSED:
            W[j] = 0
            W[j, i] = W[j, j] = 0.5
        if o == AVERAGED:
            W[i] = W[j]
        want = W @ want
    np.testing.assert_allclose(apply_schedule(s, x), want, atol=1e-15)
    np.testing.assert_allclose(schedule_trajectory(s, x, stride=2)[-1], want, atol=1e-15)


def test_push_sum_converges_to_the_average_on_a_directed_graph() -> None:
    # strongly connected, not balanced: plain averaging with these weights would not give the mean
    g = nx.DiGraph([(0, 1), (1, 2), (2, 3), (3, 4), (4, 0), (0, 2), (0, 3), (1, 4)])
    A = push_sum_weights(g).toarray()
    np.testing.assert_allclose(A.sum(axis=0), 1.0)
    assert not np.allclose(A.sum(axis=1), 1.0)
    x = np.array([3.0, -1.0, 4.0, 1.0, -5.0])
    s = push_sum_schedule(g, 300)
    np.testing.assert_allclose(push_sum_ratio(s, x), np.full(5, x.mean()), atol=1e-12)
    assert not np.allclose(apply_schedule(s, x), x.mean(), atol=1e-3)  # s alone is biased


@pytest.mark.parametrize("edges", [
    [(0, 1), (1, 2), (2, 0), (2, 3)],           # agent 3 receives, never sends back
    [(1, 0), (2, 1), (0, 2), (3, 2)],           # agent 3 sends, never receives
    [(0, 1), (1, 0), (2, 3), (3, 2)],           # two separate pairs
])
def test_push_sum_refuses_a_graph_that_is_not_strongly_connected(edges) -> None:
    # there the ratios s_i / w_i do not tend to the average: refused, naming the property
    g = nx.DiGraph(edges)
    for build in (push_sum_weights, lambda g: push_sum_schedule(g, 50)):
        with pytest.raises(ConfigError, match="graph: push-sum needs a strongly connected directed "
                                              r"graph .* got 2 strongly connected components \(agent "
                                              r"\d cannot reach agent \d\)") as err:
            build(g)
        assert err.value.field == "graph"


def test_files_round_trip(tmp_path) -> None:
    s = random_matchings(3, 0, m=6)
    paths = []
    for t, W in enumerate(s.matrices):
        p = tmp_path / f"w{t}.{('npz', 'npy', 'txt')[t]}"
        (sp.save_npz(p, sp.csr_matrix(W)) if t == 0 else
         np.save(p, W.toarray()) if t == 1 else np.savetxt(p, W.toarray()))
        paths.append(p)
    back = schedule_from_files(paths)
    for a, b in zip(s.matrices, back.matrices, strict=True):
        np.testing.assert_array_equal(a.toarray(), b.toarray())


def test_a_text_matrix_with_a_utf8_bom_is_read(tmp_path) -> None:
    # BOMs are accepted in scenario and data files; before, a schedule's text file with one was refused
    W = np.full((3, 3), 1 / 3)
    plain, bom = tmp_path / "plain.txt", tmp_path / "bom.txt"
    np.savetxt(plain, W)
    bom.write_bytes(b"\xef\xbb\xbf" + plain.read_bytes())
    np.testing.assert_array_equal(schedule_from_files([bom]).matrices[0].toarray(), W)


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"m": 3, "kind": "ring"}, "kind"),
    ({"m": 3, "kind": "rounds", "matrices": (np.ones((3, 3)),)}, "matrices[0]"),
    ({"m": 3, "kind": "rounds", "matrices": (np.eye(2),)}, "matrices[0]"),
    ({"m": 3, "kind": "rounds", "matrices": (-np.eye(3) + 2 * np.eye(3)[[1, 2, 0]],)}, "matrices[0]"),
    ({"m": 3, "kind": "pairwise", "pairs": [[0, 3]]}, "pairs"),
    ({"m": 3, "kind": "pairwise", "pairs": [[1, 1]]}, "pairs[0]"),
    ({"m": 3, "kind": "pairwise", "pairs": [[0, 1]], "outcomes": [7]}, "outcomes"),
    ({"m": 3, "kind": "pairwise", "pairs": [[0, 1], [1, 2]], "times": [1.0, 0.5]}, "times"),
    ({"m": 3, "kind": "pairwise", "absent": [(5, 0.0, 1.0)]}, "absent[0]"),
])
def test_bad_schedules_name_the_field(kwargs: dict, field: str) -> None:
    with pytest.raises(ConfigError) as err:
        MixingSchedule(**kwargs)
    assert err.value.field == field


def test_bad_sampler_inputs_name_the_field(tmp_path) -> None:
    with pytest.raises(ConfigError, match="degree") as err:
        random_regular_rounds(7, 3, 2, 0)
    assert err.value.field == "degree"
    with pytest.raises(ConfigError, match="row 0 sums") as err:
        pairwise_gossip(np.array([[0, 0.5], [1, 0]]), 0, ticks=3)
    with pytest.raises(ConfigError, match="files\\[0\\]: no such file"):
        schedule_from_files([tmp_path / "missing.npy"])
    np.save(tmp_path / "a.npy", np.eye(3))
    np.save(tmp_path / "b.npy", np.eye(4))
    with pytest.raises(ConfigError, match="same square") as err:
        schedule_from_files([tmp_path / "a.npy", tmp_path / "b.npy"])
    assert err.value.field == "files[1]"
    with pytest.raises(ConfigError, match="column 1 sums"):
        MixingSchedule(m=2, kind="rounds", stochastic="column", matrices=(np.array([[1, 1], [0, 1.0]]),))


def _brute_messages(s: MixingSchedule, y0: np.ndarray) -> list[tuple[int, int, float]]:
    """Run the schedule on values and write down what each message carried (sender, receiver)."""
    y = y0.copy()
    out = []
    if s.kind == "pairwise":
        for (i, j), o in zip(s.pairs.tolist(), s.outcomes.tolist(), strict=True):
            out.append((i, j, y[i]))
            a = 0.5 * (y[i] + y[j])
            if o in (AVERAGED, REPLY_LATE):
                out.append((j, i, a))
            if o != REFUSED:
                y[j] = a
                if o == AVERAGED:
                    y[i] = a
        return out
    for W in s.matrices:
        A = W.toarray()
        for j in range(s.m):
            for i in range(s.m):
                if i != j and A[i, j]:
                    out.append((j, i, y[j]))
        y = A @ y
    return out


@pytest.mark.parametrize("which", ["pairwise", "matchings"])
def test_scheduled_view_rows_carry_what_the_messages_carried(which: str) -> None:
    rng = np.random.default_rng(11)
    g = nx.cycle_graph(7)
    s = (pairwise_gossip(neighbour_probabilities(g), 2, ticks=30) if which == "pairwise"
         else random_matchings(6, 2, graph=g))
    x, sigma, z = rng.normal(size=7), rng.uniform(0.5, 2, size=7), rng.normal(size=7)
    obs = (0, 3)
    view = observe_schedule(s, sigma, obs)
    y0 = x + sigma * z
    others = view.data_index[:, 0]
    own = schedule_messages(s)
    keep = np.isin(own.receivers, obs) & ~np.isin(own.senders, obs)
    known = own.coefficients[keep][:, list(obs)] @ y0[list(obs)]
    got = view.J @ x[others] + view.B @ z[view.noise_index[:, 0]] + known
    want = [v for (snd, rcv, v) in _brute_messages(s, y0) if rcv in obs and snd not in obs]
    np.testing.assert_allclose(got, want, atol=1e-12)
    assert view.J.shape[0] == len(want) > 0


def test_rates_of_pairwise_gossip_agree_with_boyd() -> None:
    # E[W] by brute force over the m * deg pair matrices; the second-moment rate is below
    # lambda_2(E[W]) (Boyd et al. 2006: E||x_{k+1} - avg||^2 <= lambda_2(E[W]) E||x_k - avg||^2)
    g = nx.cycle_graph(6)
    P = neighbour_probabilities(g).toarray()
    EW = np.zeros((6, 6))
    for i in range(6):
        for j in range(6):
            if P[i, j]:
                W = np.eye(6)
                W[[i, j]] = 0
                W[np.ix_([i, j], [i, j])] = 0.5
                EW += P[i, j] / 6 * W
    np.testing.assert_allclose(expected_pair_matrix(P), EW, atol=1e-15)
    lam2 = np.sort(np.linalg.eigvalsh(EW))[-2]
    assert second_moment_rate(P) <= lam2 + 1e-12
