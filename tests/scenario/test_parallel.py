"""The same rows from every executor: in-process, a local process pool and a Dask cluster."""

import sys

import pytest

from dpgossip.errors import ConfigError
from dpgossip.scenario import run_scenario

from .helpers import read_bytes, small

TABLES = ("runs.csv", "iterations.csv", "points.csv", "summary.json")


def sweep():
    # 2 x 3 points, so a pool of two has work to share
    return small(network={"topology": ["ring", "path"]})


@pytest.fixture(scope="module")
def inline(tmp_path_factory):
    out = tmp_path_factory.mktemp("inline")
    run_scenario(sweep(), out, quiet=True)
    return out


def test_process_pool_gives_the_same_files(tmp_path, inline):
    run_scenario(sweep(), tmp_path, quiet=True, workers=2)
    assert read_bytes(tmp_path, *TABLES) == read_bytes(inline, *TABLES)


def test_dask_cluster_gives_the_same_files(tmp_path, inline):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster:
        run_scenario(sweep(), tmp_path, quiet=True, scheduler=cluster.scheduler_address)
    assert read_bytes(tmp_path, *TABLES) == read_bytes(inline, *TABLES)


def test_unreachable_scheduler_is_a_clear_error(tmp_path):
    pytest.importorskip("distributed")
    with pytest.raises(ConfigError, match=r"--scheduler tcp://127.0.0.1:9: cannot reach the Dask "
                                          r"scheduler within 0.5 s"):
        run_scenario(small(), tmp_path, quiet=True, scheduler="tcp://127.0.0.1:9",
                     scheduler_timeout=0.5)


def test_missing_dask_names_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed -> ImportError
    with pytest.raises(ConfigError, match=r'pip install "dpgossip\[dask\]"'):
        run_scenario(small(), tmp_path, quiet=True, scheduler="tcp://127.0.0.1:9")


@pytest.mark.parametrize("workers, match", [(-1, "--workers must be an integer >= 0")])
def test_bad_workers(tmp_path, workers, match):
    with pytest.raises(ConfigError, match=match):
        run_scenario(small(), tmp_path, quiet=True, workers=workers)


def test_workers_and_scheduler_are_exclusive(tmp_path):
    with pytest.raises(ConfigError, match="cannot be combined"):
        run_scenario(small(), tmp_path, quiet=True, workers=2, scheduler="tcp://127.0.0.1:9")


def test_inline_run_builds_each_structure_once(tmp_path, inline, monkeypatch):
    """The preflight's network and data are reused by the in-process run (same bytes as before)."""
    import dpgossip.scenario.problem as problem

    calls = []
    real = problem.make_structure

    def counting(spec, base=None):
        calls.append(spec.seed)
        return real(spec, base)

    monkeypatch.setattr(problem, "make_structure", counting)
    run_scenario(sweep(), tmp_path, quiet=True)
    assert len(calls) == 2  # two networks (ring, path), three points each
    assert read_bytes(tmp_path, *TABLES) == read_bytes(inline, *TABLES)
    calls.clear()
    # nothing kept: built per point (the package exports a function of the module's name)
    monkeypatch.setattr(sys.modules["dpgossip.scenario.preflight"], "KEEP_BYTES", 0)
    run_scenario(sweep(), tmp_path / "again", quiet=True)
    assert len(calls) == 2 + 6
    assert read_bytes(tmp_path / "again", *TABLES) == read_bytes(inline, *TABLES)



SPREAD = {"data": {"source": "synthetic", "synthetic": {"n": 20, "d": 4,
                                                          "spectrum": [1.0, 0.7, 0.4, 0.2]}},
          "protocol": {"consensus_steps": 1, "iterations": 1}, "repeats": 1,
          "privacy": {"audit": True, "search": 1, "methods": ["rdp"], "epsilon": [50.0]}}
"""One audited point of 4 agents with 5 rows of 4 columns (the wiring of ``--scheduler``; the bits of
misaligned arrays are :func:`test_dask_targets_handed_out_in_any_order_give_the_bits_of_one_process`'s)."""


@pytest.fixture(scope="module")
def cluster():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as local:
        yield local


def test_dask_cluster_spreads_one_points_pair_audit_over_its_workers(tmp_path, cluster):
    """A sweep of one audited point on a 2-worker cluster: its targets are searched by tasks on the
    cluster (each worker factorises the views once), and ``leakage.csv`` and ``runs.csv`` are the
    same bytes as a run on one process."""
    import distributed

    sc = small(**SPREAD)
    run_scenario(sc, tmp_path / "one", quiet=True)
    run_scenario(sc, tmp_path / "dask", quiet=True, scheduler=cluster.scheduler_address)
    with distributed.Client(cluster.scheduler_address) as client:
        ran = [name for names in client.run(_task_names).values() for name in names]
    assert sum(name.startswith("search_target_cached") for name in ran) >= 4  # every target a task
    assert read_bytes(tmp_path / "dask", "leakage.csv", "runs.csv") == read_bytes(
        tmp_path / "one", "leakage.csv", "runs.csv")


def _task_names(dask_worker):
    """The keys of the tasks a worker knew (its transition log)."""
    return sorted({str(key[0] if isinstance(key, tuple) else key) for key, *_ in dask_worker.state.log
                   if isinstance(key, (str, tuple))})


def _spread_audit(order):
    """In a Dask task: the pair audit of :func:`_audit_of_spread`, its targets submitted to the
    cluster in ``order`` (positions of the targets)."""
    from functools import partial

    from dpgossip.protocols.ddppm.audit import audit_searches
    from dpgossip.scenario.dask_targets import dask_target_searches

    with audit_searches(partial(dask_target_searches, order=order)):
        return _audit_of_spread()


def _audit_of_spread():
    """Every pair of 4 agents, 13 rows of 12 columns each, by a one-level search of one row per
    target (cheap; every stage of the search runs)."""
    import numpy as np

    from dpgossip.data.partition import PartitionedData
    from dpgossip.protocols.ddppm.audit import audit_pairs
    from dpgossip.protocols.ddppm.params import NoiseSchedule, resolve_params
    from dpgossip.protocols.ddppm.search import SearchSettings
    from dpgossip.topology import make_network

    rng = np.random.default_rng(7)
    X = rng.standard_normal((52, 12)) * np.linspace(1.0, 0.3, 12)
    data = PartitionedData(X=X / np.max(np.linalg.norm(X, axis=1)), sizes=(13,) * 4)
    net = make_network("ring", agents=4)
    params = resolve_params(data, net, iterations=1, consensus_steps=1,
                            noise=NoiseSchedule(kind="constant", scale=1.0))
    tiny = SearchSettings(name="tiny", levels=1, rows=1, random=0, steps=1, starts=1, exact=1)
    return audit_pairs(data, net, params, delta=1e-5, epsilons=(50.0,), search=tiny,
                       methods=("rdp",), seed=3)


def test_dask_targets_handed_out_in_any_order_give_the_bits_of_one_process(cluster):
    """The targets of one audit (13 rows of 12 columns per agent: large enough that numpy's
    ``X_i^T X_i`` takes another path on unaligned arrays) submitted to a 2-worker cluster in a
    shuffled order (each worker's auditor searches other targets in another order, from arrays
    deserialised wherever the frames put them): every field of every pair and the certified bounds
    equal the audit in this process, bit for bit."""
    import distributed

    from tests.protocols.ddppm.test_target_bits import bits

    one = _audit_of_spread()
    with distributed.Client(cluster.scheduler_address) as client:
        spread = client.submit(_spread_audit, [2, 0, 3, 1], pure=False).result()
    assert list(spread.results) == list(one.results)
    assert bits(spread.results) == bits(one.results)
    assert bits(spread.upper) == bits(one.upper)


def test_dask_cluster_searches_an_audits_targets(tmp_path, cluster):
    """``dpgossip audit --scheduler`` (:func:`run_audit` with ``scheduler``): every target of the point
    is a task on the cluster, and the audit's tables are the same bytes as on one process; with
    ``workers`` too it is refused."""
    import distributed

    from dpgossip.scenario.audit_run import plan_audit, run_audit

    sc = small(**SPREAD)
    with distributed.Client(cluster.scheduler_address) as client:
        before = sum(name.startswith("search_target_cached")
                     for names in client.run(_task_names).values() for name in names)
    one = run_audit(plan_audit(sc, tmp_path / "one", force=True), quiet=True)
    dask = run_audit(plan_audit(sc, tmp_path / "dask", force=True), quiet=True,
                     scheduler=cluster.scheduler_address)
    with distributed.Client(cluster.scheduler_address) as client:
        after = sum(name.startswith("search_target_cached")
                    for names in client.run(_task_names).values() for name in names)
    assert after - before >= 4  # every target a task
    names = sorted(f.name for f in one.files if f.suffix in (".csv", ".json"))
    assert names and names == sorted(f.name for f in dask.files if f.suffix in (".csv", ".json"))
    assert read_bytes(tmp_path / "dask", *names) == read_bytes(tmp_path / "one", *names)
    with pytest.raises(ConfigError, match="cannot be combined"):
        run_audit(plan_audit(sc, tmp_path / "both", force=True), quiet=True, workers=2,
                  scheduler=cluster.scheduler_address)
