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
