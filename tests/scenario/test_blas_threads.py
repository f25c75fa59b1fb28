"""A point's numbers do not depend on the number of BLAS threads of the process that computes it."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import threadpoolctl

import dpgossip
from dpgossip._threads import blas_threads, single_blas_thread
from dpgossip.errors import ConfigError
from dpgossip.scenario import execute, runner

from .helpers import small

SRC = Path(dpgossip.__file__).resolve().parents[1]

SCENARIO = """
name = "threads"
seed = 5
repeats = 3
[data]
source = "wine"
[network]
topology = ["ring", "path"]
agents = 4
[protocol]
iterations = 6
consensus_steps = [1, 4]
rank = 2
[baseline]
ldp = true
epsilon = 1.0
delta = 1e-5
[output]
plots = false
"""


def _blas_threads() -> set[int]:
    return {lib["num_threads"] for lib in threadpoolctl.threadpool_info()
            if lib["user_api"] == "blas"}


def _run(tmp_path: Path, threads: int) -> Path:
    out = tmp_path / f"out{threads}"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]),
           "OPENBLAS_NUM_THREADS": str(threads), "OMP_NUM_THREADS": str(threads),
           "MKL_NUM_THREADS": str(threads)}
    env.pop("DPGOSSIP_BLAS_THREADS", None)
    p = subprocess.run([sys.executable, "-m", "dpgossip.cli", "run", str(tmp_path / "s.toml"),
                        "--out", str(out), "-q"], capture_output=True, text=True, env=env,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    return out


def test_result_files_do_not_depend_on_blas_threads(tmp_path):
    (tmp_path / "s.toml").write_text(SCENARIO)
    one, two = _run(tmp_path, 1), _run(tmp_path, 2)
    for name in ("runs.csv", "iterations.csv"):
        assert (one / name).read_bytes() == (two / name).read_bytes(), name


def test_a_point_is_computed_on_one_blas_thread(monkeypatch):
    seen: list[set[int]] = []
    real = runner.run_point

    def spy(*args, **kwargs):
        seen.append(_blas_threads())
        return real(*args, **kwargs)

    monkeypatch.setattr(runner, "run_point", spy)
    monkeypatch.setenv("DPGOSSIP_BLAS_THREADS", "0")  # ignored: a point is always pinned
    before = _blas_threads()
    with threadpoolctl.threadpool_limits(limits=2, user_api="blas"):
        # a library that was loaded under OPENBLAS_NUM_THREADS=1 (e.g. by an earlier test) cannot grow
        # to 2: compare with what the limit achieved, not with {2}
        outer = _blas_threads()
        p = small().points()[0]
        execute.run_task(execute.PointTask(index=0, key="k", config=p.config, axes=p.axes))
        assert _blas_threads() == outer  # restored afterwards
    assert seen == [{1}]
    assert _blas_threads() == before


def test_the_pin_holds_while_any_thread_is_inside():
    entered, left = threading.Event(), threading.Event()

    def visit():
        with single_blas_thread():
            entered.set()
        left.set()

    with threadpoolctl.threadpool_limits(limits=2, user_api="blas"):
        outer = _blas_threads()  # {2}, or {1, 2} with a library capped at 1 when it was loaded
        with single_blas_thread():
            assert _blas_threads() == {1}
            t = threading.Thread(target=visit)
            t.start()
            t.join(10)
            assert entered.is_set() and left.is_set()
            assert _blas_threads() == {1}  # the other thread left; this one is still inside
            with blas_threads(3):  # a nested limit does not unpin
                assert _blas_threads() == {1}
        assert _blas_threads() == outer


def test_bad_blas_threads_variable_is_a_config_error(monkeypatch):
    monkeypatch.setenv("DPGOSSIP_BLAS_THREADS", "two")
    with pytest.raises(ConfigError, match=r"DPGOSSIP_BLAS_THREADS must be an integer >= 0.*'two'"):
        with blas_threads(1):
            pass
