"""The all-pairs fast path against linear_audit and an independent dense oracle, its streamed and
on-disk results against the in-memory ones, resume, the Dask path, and the vectorised epsilon."""

from __future__ import annotations

import itertools
import math
import sys

import numpy as np
import pytest

from dpgossip.errors import ConfigError
from dpgossip.privacy.allpairs_run import METHODS, AllPairsSettings, PairTable, read_all_pairs
from dpgossip.privacy.linear_allpairs import gaussian_epsilons, hops_within
from dpgossip.privacy.linear_audit import LinearAuditSettings
from dpgossip.privacy.mechanism import gaussian_mechanism_epsilon
from dpgossip.protocols.gossip.allpairs import iter_all_pairs, observer_leakage, run_all_pairs
from dpgossip.protocols.gossip.audit import audit_gossip
from dpgossip.protocols.gossip.linear import LinearGossip
from dpgossip.topology import make_network

NETWORKS = {
    "path": lambda: make_network("path", agents=6),
    "star": lambda: make_network("star", agents=6),
    "grid": lambda: make_network("grid", agents=16, params={"rows": 4, "cols": 4}),
    "hypercube": lambda: make_network("hypercube", agents=16),
    "rgg": lambda: make_network("random_geometric", agents=20, seed=3, params={"radius": 0.35}),
}
INPUTS = ("once", "fixed", "per-round")


def _dense_oracle(network, spec, v, bound):
    """``mu^2`` of every agent for observer ``v``: dense states ``y^t`` as maps of (data, noise),
    the neighbours' messages as rows, the observer's own columns dropped, ``pinv`` of ``B B^T`` and,
    for per-round inputs, brute force over all sign vectors."""
    m, T = network.m, spec.rounds
    W = network.W.toarray()
    nd = m * spec.data_rounds
    scales = spec.noise_scales(m)
    Yx, Yz = np.zeros((m, nd)), np.zeros((m, m * T))
    rows_x, rows_z = [], []
    for t in range(T):
        Yx, Yz = W @ Yx, W @ Yz
        Yz[:, t * m:(t + 1) * m] += np.diag(scales)
        if t == 0 or spec.inputs != "once":
            s = t if spec.inputs == "per-round" else 0
            Yx[:, s * m:(s + 1) * m] += np.eye(m)
        rows_x.append(Yx[list(network.neighbours[v])])
        rows_z.append(Yz[list(network.neighbours[v])])
    J, B = np.vstack(rows_x), np.vstack(rows_z)
    B[:, [r * m + v for r in range(T)]] = 0.0
    Sigma = B @ B.T
    lam, V = np.linalg.eigh(Sigma)
    P = V[:, lam > 1e-12 * lam[-1]]
    out = np.zeros(m)
    for u in range(m):
        Ju = J[:, [r * m + u for r in range(spec.data_rounds)]]
        if np.max(np.abs(Ju - P @ (P.T @ Ju)), initial=0.0) > 1e-8 * np.max(np.abs(J)):
            out[u] = math.inf
            continue
        M = Ju.T @ np.linalg.pinv(Sigma, rcond=1e-12, hermitian=True) @ Ju
        out[u] = max(float(s @ M @ s) for s in itertools.product([-bound, bound], repeat=M.shape[0]))
    return out


def _mu2_by_pair(table: PairTable) -> dict[tuple[int, int], float]:
    c = table.columns
    return {(int(o), int(t)): float(mu) ** 2 for o, t, mu in zip(c["observer"], c["target"], c["mu"],
                                                                  strict=True)}


@pytest.mark.parametrize("inputs", INPUTS)
@pytest.mark.parametrize("name", list(NETWORKS))
def test_every_pair_equals_linear_audit_and_the_dense_oracle(name, inputs):
    network = NETWORKS[name]()
    spec = LinearGossip(protocol="gossip-noisy", rounds=3, sigma=1.1, inputs=inputs)
    audit = LinearAuditSettings(sensitivity=0.5, orders=(2.0, 8.0))
    settings = AllPairsSettings(audit=audit, chunk=7, all_targets=True)
    table = PairTable.concat([t for _, t in iter_all_pairs(network, spec, settings)], audit.delta)
    assert len(table) == network.m * (network.m - 1)
    got = _mu2_by_pair(table)
    for v in range(network.m):
        oracle = _dense_oracle(network, spec, v, 0.5)
        for row in audit_gossip(network, spec, v, audit):
            assert abs(got[v, row.target] - row.mu ** 2) < 1e-9
            assert abs(got[v, row.target] - oracle[row.target]) < 1e-9
    c = table.columns
    assert np.all(c["method"][c["hops"] > spec.rounds] == METHODS.index("out-of-reach"))
    assert np.all(c["mu"][c["hops"] > spec.rounds] == 0.0)
    np.testing.assert_allclose(c["rdp_8"], 4 * c["mu_upper"] ** 2, rtol=1e-14)


def test_noiseless_agents_take_the_svd_path_and_agree_on_infinite_and_finite_leakage():
    network = make_network("grid", agents=16, params={"rows": 4, "cols": 4})
    sigma = tuple(0.0 if u in (5, 10) else 1.0 + 0.1 * u for u in range(16))
    spec = LinearGossip(protocol="gossip-noisy", rounds=3, sigma=sigma, inputs="fixed")
    audit = LinearAuditSettings()
    table = PairTable.concat([t for _, t in iter_all_pairs(network, spec, AllPairsSettings(
        audit=audit))], audit.delta)
    got = _mu2_by_pair(table)
    assert METHODS.index("svd") in set(table.columns["method"].tolist())
    infinite = 0
    for v in range(16):
        oracle = _dense_oracle(network, spec, v, 1.0)
        for row in audit_gossip(network, spec, v, audit):
            mine = got.get((v, row.target), 0.0)
            if math.isinf(row.mu):
                infinite += 1
                assert math.isinf(mine) and math.isinf(oracle[row.target])
            else:
                assert abs(mine - row.mu ** 2) < 1e-9 and abs(mine - oracle[row.target]) < 1e-9
    assert infinite > 0


def test_gossip_average_goes_through_linear_audit():
    network = make_network("hypercube", agents=16)
    spec = LinearGossip(protocol="gossip-average", rounds=5, sigma=1.0)
    audit = LinearAuditSettings()
    table = PairTable.concat([t for _, t in iter_all_pairs(network, spec, AllPairsSettings(
        audit=audit), observers=[0, 3])], audit.delta)
    got = _mu2_by_pair(table)
    for v in (0, 3):
        for row in audit_gossip(network, spec, v, audit):
            assert got[v, row.target] == pytest.approx(row.mu ** 2, abs=1e-12)


def test_rows_have_linear_audits_columns_and_values():
    network = NETWORKS["grid"]()
    spec = LinearGossip(protocol="gossip-noisy", rounds=4, sigma=0.7)
    audit = LinearAuditSettings(orders=(2.0, 4.5), delta=1e-6)
    rows = PairTable.concat([t for _, t in iter_all_pairs(network, spec, AllPairsSettings(
        audit=audit), observers=[6])], audit.delta).to_rows()
    ref = {r.target: r.to_row() for r in audit_gossip(network, spec, 6, audit)}
    assert len(rows) == len(ref)
    for row in rows:
        want = ref[row["target"]]
        assert list(row) == list(want)
        assert row["method"] == "cholesky" and row["observer"] == "6"
        for key in ("mu", "rdp_2", "rdp_4.5", "epsilon"):
            assert row[key] == pytest.approx(want[key], rel=1e-9, abs=1e-12)
    dist = hops_within(network.W, np.array([6]), spec.rounds)[0]
    leak = observer_leakage(network, spec, 6, dist, audit)
    assert leak.to_row()["targets_in_reach"] == len(ref)
    for pair in leak.pairs(audit):
        want = ref[pair.target]
        assert pair.to_row()["epsilon"] == pytest.approx(want["epsilon"], rel=1e-9, abs=1e-12)
        assert pair.hops == want["hops"]


@pytest.mark.parametrize("mu", [1e-4, 0.05, 0.3, 1.0, 2.5, 7.0, 30.0, 200.0])
@pytest.mark.parametrize("delta", [1e-5, 1e-2])
def test_vectorised_epsilon_equals_the_scalar_one(mu, delta):
    assert gaussian_epsilons(np.array([mu]), delta)[0] == pytest.approx(
        gaussian_mechanism_epsilon(mu, delta), rel=1e-9, abs=1e-12)


def test_vectorised_epsilon_edge_values():
    out = gaussian_epsilons(np.array([0.0, math.inf, 1e-3]), 0.5)
    assert out.tolist() == [0.0, math.inf, 0.0]
    with pytest.raises(ConfigError) as caught:
        gaussian_epsilons(np.array([-1.0]), 1e-5)
    assert caught.value.field == "mu"


def _small():
    network = make_network("random_geometric", agents=40, seed=1, params={"radius": 0.3})
    return network, LinearGossip(protocol="gossip-noisy", rounds=4, sigma=1.0)


def test_written_rows_equal_the_streamed_ones_and_resume_redoes_only_missing_parts(tmp_path):
    network, spec = _small()
    settings = AllPairsSettings(chunk=6)
    memory = PairTable.concat([t for _, t in iter_all_pairs(network, spec, settings)], 1e-5)
    first = run_all_pairs(network, spec, tmp_path / "out", settings)
    assert (first.chunks, first.skipped, first.pairs) == (7, 0, len(memory))
    disk = read_all_pairs(tmp_path / "out")
    assert list(disk.columns) == list(memory.columns)
    for name in memory.columns:
        assert np.array_equal(disk.columns[name], memory.columns[name]), name
    before = (tmp_path / "out" / "part-000003.npz").read_bytes()
    (tmp_path / "out" / "part-000003.npz").unlink()
    with pytest.raises(ConfigError, match="misses 1 of 7 parts"):
        read_all_pairs(tmp_path / "out")
    again = run_all_pairs(network, spec, tmp_path / "out", settings)
    assert (again.skipped, again.pairs) == (6, int(np.sum(memory.columns["observer"] // 6 == 3)))
    assert (tmp_path / "out" / "part-000003.npz").read_bytes() == before
    assert not list((tmp_path / "out").glob("*.tmp"))


def test_another_audit_in_the_same_directory_is_refused(tmp_path):
    network, spec = _small()
    run_all_pairs(network, spec, tmp_path, AllPairsSettings(chunk=20), observers=[0, 1])
    with pytest.raises(ConfigError, match="holds the results of another audit") as caught:
        run_all_pairs(network, spec, tmp_path, AllPairsSettings(chunk=20), observers=[0, 2])
    assert caught.value.field == "out"


def test_progress_without_tqdm_prints_lines(tmp_path, monkeypatch):
    import io

    monkeypatch.setitem(sys.modules, "tqdm", None)
    network, spec = _small()
    stream = io.StringIO()
    run_all_pairs(network, spec, tmp_path, AllPairsSettings(chunk=20), progress=True, stream=stream)
    lines = stream.getvalue().splitlines()
    assert lines[0].startswith("[20/40 observers]") and lines[-1].startswith("[40/40 observers]")


@pytest.mark.parametrize(("kwargs", "field"), [({"chunk": 0}, "chunk"), ({"min_rcond": 2.0}, "min_rcond"),
                                                ({"all_targets": 1}, "all_targets"),
                                                ({"audit": {}}, "audit")])
def test_bad_settings_name_the_field(kwargs, field):
    with pytest.raises(ConfigError) as caught:
        AllPairsSettings(**kwargs)
    assert caught.value.field == field


def test_bad_observers_name_the_field():
    network, spec = _small()
    for bad in ([40], [-1], [True], []):
        with pytest.raises(ConfigError) as caught:
            list(iter_all_pairs(network, spec, observers=bad))
        assert caught.value.field == "observers"


def test_missing_dask_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)
    network, spec = _small()
    with pytest.raises(ConfigError, match=r'pip install "dpgossip\[dask\]"') as caught:
        list(iter_all_pairs(network, spec, scheduler="tcp://127.0.0.1:1"))
    assert caught.value.field == "scheduler"


def test_dask_rows_are_bit_identical_to_local_rows():
    distributed = pytest.importorskip("distributed")
    network, spec = _small()
    settings = AllPairsSettings(chunk=9)
    local = [t for _, t in iter_all_pairs(network, spec, settings)]
    # a worker process: in-process (threaded) workers share this process's BLAS, whose thread count the
    # main thread has already set, and OpenBLAS ignores a limit set from another thread
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=True,
                                  dashboard_address=":0") as cluster:
        remote = list(iter_all_pairs(network, spec, settings, scheduler=cluster.scheduler_address))
    assert [i for i, _ in remote] == list(range(len(local)))
    for a, (_, b) in zip(local, remote, strict=True):
        for name in a.columns:
            assert np.array_equal(a.columns[name], b.columns[name]), name
