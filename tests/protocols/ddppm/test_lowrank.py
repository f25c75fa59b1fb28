"""The low-rank pencil against dense generalised eigenvalues, and against itself with the roles swapped."""

import networkx as nx
import numpy as np
import pytest

from dpgossip.privacy.neighbours import Neighbour, max_step
from dpgossip.protocols.ddppm.audit import component_model, view_gaussian
from dpgossip.protocols.ddppm.auditor import ComponentAuditor
from dpgossip.protocols.ddppm.lowrank import JointWhitening, WhitenedCovariance
from dpgossip.protocols.ddppm.operators import view_operator
from dpgossip.protocols.ddppm.params import NoiseSchedule, resolve_params
from dpgossip.protocols.ddppm.views import make_view, view_spec
from tests.conftest import net_from_graph, spiked_data

VIEWS = [("observer", (0,), None), ("eavesdropper", (), None), ("all-but-one", (), 1),
         ("paper", (0,), 1)]


def setup(graph, T, c, noise, seed=1):
    net = net_from_graph(graph)
    data = spiked_data(4 * net.m, 3, [3, 1.5, .5], net.m, seed=seed)
    p = resolve_params(data, net, iterations=T, consensus_steps=c, noise=noise)
    rows = np.arange(data.offsets[1], data.offsets[2])
    return net, data, p, _neighbours(data.X, rows)


def _neighbours(X, rows):
    """Three neighbours of target 1: its three rows of largest leverage (on the top three singular
    vectors of ``X``), each moved towards ``-x`` by the largest step the adjacency allows."""
    U = np.linalg.svd(X, full_matrices=False)[0]
    lev = np.linalg.norm(U[rows, :3], axis=1)
    out = []
    for r in np.asarray(rows)[np.argsort(-lev)][:3]:
        u = -X[r] / np.linalg.norm(X[r])
        out.append(Neighbour(row=int(r), x_new=X[r] + max_step(X[r], u, "bounded") * u, label="-x"))
    return out


def dense_lambdas(data, net, p, view, X1):
    _, S0 = view_gaussian(component_model(data, net, p), view, net)
    _, S1 = view_gaussian(component_model(data, net, p, X=X1), view, net)
    ev, V = np.linalg.eigh(S0)
    keep = ev > ev.max() * 1e-12
    Wt = V[:, keep] / np.sqrt(ev[keep])
    lam = np.linalg.eigvalsh(Wt.T @ S1 @ Wt)
    return np.sort(lam[np.abs(lam - 1) > 1e-9])


@pytest.mark.parametrize("graph, T, c", [(nx.cycle_graph(4), 3, 2), (nx.path_graph(5), 4, 1),
                                         (nx.cycle_graph(6), 3, 4)])
@pytest.mark.parametrize("kind, agents, target", VIEWS)
def test_pencil_matches_dense_generalised_eigenvalues(graph, T, c, kind, agents, target):
    net, data, p, nbs = setup(graph, T, c, NoiseSchedule(kind="constant", scale=0.3))
    view = make_view(kind, m=net.m, agents=agents, target=target)
    aud = ComponentAuditor(data, net, p, {"v": view})
    for nb in nbs[:2]:
        X1 = nb.apply(data.X)
        pen = aud.pencils(X1)["v"]
        assert pen.support_ok
        fast = np.sort(pen.lam[np.abs(pen.lam - 1) > 1e-9])
        dense = dense_lambdas(data, net, p, view, X1)
        assert fast.size == dense.size
        np.testing.assert_allclose(fast, dense, rtol=1e-8)
        # the pair built from the pencil gives the dense pair's divergences
        pair = aud.pairs(X1)["v"]
        for a in (1.2, 2.0):
            d = -0.5 / (a - 1) * np.sum(np.log(a * dense + 1 - a) - a * np.log(dense)) \
                if np.all(a * dense + 1 - a > 0) else np.inf
            assert pair.renyi(a) == pytest.approx(d, rel=1e-8)


def test_swapping_the_datasets_inverts_the_eigenvalues_when_ill_conditioned():
    """sigma_p(T) tiny: the view is nearly deterministic along some directions (condition ~1e12),
    the QR path is taken, and lam(X -> X') = 1 / lam(X' -> X) holds for the smallest eigenvalues too."""
    net, data, p, nbs = setup(nx.cycle_graph(4), 6, 2,
                              NoiseSchedule(kind="geometric", scale=0.02))
    view = make_view("observer", m=4, agents=(0,))
    X1 = nbs[0].apply(data.X)
    a = ComponentAuditor(data, net, p, {"v": view})
    b = ComponentAuditor(data.with_matrix(X1), net, p, {"v": view})
    assert a.white["v"].condition > 1e8
    la = np.sort(a.pencils(X1)["v"].lam)
    lb = np.sort(1.0 / b.pencils(data.X)["v"].lam)
    big = max(la.max(), lb.max())
    assert big > 1e3 and la.min() < 1e-3  # genuinely ill-conditioned
    # eigenvalues span ~25 orders of magnitude here; both sides agree to 1e-4 relative (measured 5e-5
    # at a condition number ~1e12 of the view covariance)
    np.testing.assert_allclose(la, lb, rtol=1e-4)


def test_joint_whitening_equals_plain_whitening():
    net, data, p, _ = setup(nx.cycle_graph(5), 3, 2, NoiseSchedule(kind="constant", scale=0.5))
    std = np.concatenate([np.full(data.n, p.sigma_q)] + [np.full(data.n, s) for s in p.sigma_p[0]])
    spec = view_spec(make_view("observer", m=5, agents=(2,)), net.graph, net.dense_W(), c=2, T=3,
                     offsets=data.offsets, latent_std=std)
    op = view_operator(data.X, data.offsets, net.dense_W(), T=3, c=2, alpha=p.alpha[0], latent_std=std,
                       spec=spec)
    S = op.covariance()
    joint, plain = JointWhitening(op), WhitenedCovariance(S)
    Y = np.random.default_rng(0).standard_normal((op.K, 4))
    aj, _ = joint.whiten(Y)
    ap, _ = plain.whiten(Y)
    # two whitenings of the same covariance differ by an orthogonal map: Gram matrices agree
    np.testing.assert_allclose(aj.T @ aj, ap.T @ ap, rtol=1e-8)
    np.testing.assert_allclose(aj.T @ aj, Y.T @ np.linalg.solve(S, Y), rtol=1e-7)
    # whiten_transpose is the adjoint of whiten
    A = np.random.default_rng(1).standard_normal((joint.rank, 3))
    np.testing.assert_allclose(aj.T @ A, Y.T @ joint.whiten_transpose(A), rtol=1e-9, atol=1e-9)


def test_differing_supports_are_reported_with_the_right_kind():
    """With d > n_j the target's messages z_j = X_j^T q_j live in the row space of X_j; a neighbour that
    leaves that space gives the view a direction it never had: infinite divergence, delta = 1."""
    import networkx as nx

    from dpgossip.privacy.neighbours import Neighbour
    from dpgossip.protocols.ddppm.audit import component_model, view_pair
    from dpgossip.topology.network import Network
    from tests.conftest import PAPER_W

    net = Network(graph=nx.cycle_graph(4), W=PAPER_W)
    data = spiked_data(8, 3, [2, 1, .5], 4, seed=1)  # 2 rows per agent in 3 dimensions
    p = resolve_params(data, net, iterations=2, consensus_steps=1,
                       noise=NoiseSchedule(kind="constant", scale=0.3))
    row = int(data.offsets[1])
    x = data.X[row]
    normal = np.cross(data.X[row], data.X[row + 1])  # orthogonal to agent 1's row space
    nb = Neighbour(row=row, x_new=0.5 * x + 0.4 * normal / np.linalg.norm(normal))
    view = make_view("observer", m=4, agents=(0,))
    pair = ComponentAuditor(data, net, p, {"v": view}).pairs(nb.apply(data.X))["v"]
    assert pair.support_mismatch is not None
    assert pair.support_mismatch.kind == "cov1 outside cov0"
    assert pair.renyi(1.5) == np.inf and pair.delta(5.0, "exact") == 1.0
    assert pair.epsilon(1e-5, "rdp") == np.inf
    dense = view_pair(component_model(data, net, p),
                      component_model(data, net, p, X=nb.apply(data.X)), view, net)
    assert dense.support_mismatch is not None
