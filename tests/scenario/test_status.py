"""Run statuses: metrics over the rows that were computed, failures and overflow flagged, never raised;
end to end through `dpgossip run`."""

from __future__ import annotations

import csv
import dataclasses
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from dpgossip.cli import main
from dpgossip.protocols.ddppm.matrix import run_matrix
from dpgossip.protocols.ddppm.nodes import run_engine
from dpgossip.protocols.metrics import captured_energy, error_per_iteration, subspace_distance
from dpgossip.protocols.power import top_singular
from dpgossip.scenario.status import measure_run, point_warning, status_counts
from tests.engine.conftest import data_for, params_for, ws12
from tests.engine.test_simulator import _survivor_oracle


# ------------------------------------------------------------------------------- measure_run
def test_a_clean_run_is_ok_and_measured_exactly_as_before(paper_ring, small_data):
    params = params_for(small_data, paper_ring, T=5, c=2, r=2)
    res = run_matrix(small_data, paper_ring, params, seed=3)
    spec = top_singular(small_data.X, 2)
    m = measure_run(res, small_data, spec)
    assert (m.status, m.reason, m.rows) == ("ok", "", small_data.n)
    np.testing.assert_array_equal(m.errors, error_per_iteration(res.iterates, spec.U))
    assert m.subspace_distance == subspace_distance(spec.U, res.Q)
    assert m.captured_energy == captured_energy(small_data.X, res.Q)


def test_crashed_agents_are_measured_on_the_survivors():
    net, data = ws12(), data_for(12)
    params = params_for(data, net, T=4, c=3, r=2)
    res = run_engine(data, net, params, seed=5, record_transcript=False,
                     conditions={"crashes": {11: 0.0}, "on_crash": "reweight",
                                 "failure_timeout": 0.5})
    m = measure_run(res, data, top_singular(data.X, 2))
    oracle, n_surv = _survivor_oracle(data, net, params, 5, {11})
    assert m.status == "partial" and m.rows == n_surv
    assert "agent(s) [11] crashed" in m.reason and f"{n_surv} of {data.n} rows" in m.reason
    # the survivors ran the matrix backend on their own rows: measured against those rows' spectrum
    U = top_singular(data.X[:n_surv], 2).U
    np.testing.assert_allclose(m.errors, error_per_iteration(oracle.iterates, U), atol=1e-9)
    assert m.subspace_distance == pytest.approx(subspace_distance(U, oracle.Q), abs=1e-9)
    assert m.captured_energy == pytest.approx(captured_energy(data.X[:n_surv], oracle.Q), abs=1e-9)
    assert 0 <= m.subspace_distance < 1


def _with_iterates(res, iterates):
    Q = iterates[:, -1].T / np.linalg.norm(iterates[:, -1], axis=1)
    return dataclasses.replace(res, iterates=iterates, Q=Q)


@pytest.mark.parametrize("value, status", [(1e200, "diverged"), (np.inf, "non-finite"),
                                           (np.nan, "non-finite")])
def test_a_second_component_that_breaks_is_flagged(paper_ring, small_data, value, status):
    params = params_for(small_data, paper_ring, T=5, c=2, r=2)
    res = run_matrix(small_data, paper_ring, params, seed=3)
    it = res.iterates.copy()
    it[1, 3:, 0] = value  # component 2 from iteration 3 on
    spec = top_singular(small_data.X, 2)
    with np.errstate(all="ignore"):
        m = measure_run(_with_iterates(res, it), small_data, spec)
    assert m.status == status
    assert "component 2" in m.reason and "iteration 3" in m.reason
    assert "too large for float64" in m.reason
    clean = error_per_iteration(res.iterates, spec.U)
    np.testing.assert_array_equal(m.errors[0], clean[0])  # component 1 is fine
    np.testing.assert_array_equal(m.errors[1, :3], clean[1, :3])
    assert np.isnan(m.errors[1, 3:]).all()
    assert math.isnan(m.subspace_distance) and math.isnan(m.captured_energy)


def test_statuses_are_counted_and_summarised_once():
    runs = [{"repeat": 0, "status": "ok", "status_reason": ""},
            {"repeat": 1, "status": "diverged", "status_reason": "iterates of component 1 ..."},
            {"repeat": 2, "status": "stopped", "status_reason": "crash detected"}]
    assert status_counts(runs) == {"ok": 1, "stopped": 1, "diverged": 1}
    assert point_warning(runs) == ("2 of 3 repeats not ok (1 stopped, 1 diverged); repeat 1: "
                                   "iterates of component 1 ...")
    assert point_warning(runs[:1]) is None
    assert point_warning(runs[1:2]) == "1 of 1 repeat diverged; repeat 1: iterates of component 1 ..."


# ------------------------------------------------------------------------------- end to end
BASE = """
name = "failures"
seed = 1
repeats = 2
backend = "engine"
[data]
source = "wine"
[network]
topology = "ring"
agents = 6
[protocol]
iterations = 6
consensus_steps = 2
[output]
plots = false
"""

CRASH = '\n[engine]\ncrashes = {{ 2 = 0.0005 }}\ncompute_time = 1e-4\non_crash = "{}"\n' \
        'failure_timeout = 0.01\n'
LOSS = "\n[engine]\nloss = 0.2\nretransmit = false\nlatency = 0.001\nfailure_timeout = 0.01\n"


def _run(tmp_path: Path, text: str, capsys) -> tuple[int, list[dict], list[dict], dict, str]:
    sc = tmp_path / "s.toml"
    sc.write_text(text)
    out = tmp_path / "out"
    code = main(["run", str(sc), "--out", str(out), "-q"])
    err = capsys.readouterr().err
    runs = list(csv.DictReader(open(out / "runs.csv")))
    iters = list(csv.DictReader(open(out / "iterations.csv")))
    return code, runs, iters, json.loads((out / "summary.json").read_text()), err


def test_cli_crash_with_stop(tmp_path, capsys):
    code, runs, iters, summary, err = _run(tmp_path, BASE + CRASH.format("stop"), capsys)
    assert code == 0 and "Traceback" not in err
    assert [r["status"] for r in runs] == ["stopped", "stopped"]
    assert all("crash detected" in r["status_reason"] and "on_crash = 'stop'" in r["status_reason"]
               for r in runs)
    assert all(r["engine_status"] == "stopped" and r["crashed_agents"] == "[2]" for r in runs)
    assert all(math.isnan(float(r[m])) for r in runs for m in ("error", "subspace_distance"))
    first = [float(r["error"]) for r in iters if r["repeat"] == "0"]
    assert math.isfinite(first[0]) and math.isnan(first[-1])  # computed until the stop
    assert summary["statuses"] == {"stopped": 2} and summary["results"][0]["status"] == {"stopped": 2}
    assert err.count("warning: point 0:") == 1 and "2 of 2 repeats stopped" in err


def test_cli_crash_with_reweight(tmp_path, capsys):
    code, runs, iters, summary, err = _run(tmp_path, BASE + CRASH.format("reweight"), capsys)
    assert code == 0 and "Traceback" not in err
    assert [r["status"] for r in runs] == ["partial", "partial"]
    assert all("re-weighted" in r["status_reason"] and "148 of 178 rows" in r["status_reason"]
               for r in runs)
    assert all(0 < float(r[m]) < 1 for r in runs for m in ("error", "subspace_distance",
                                                           "captured_energy"))
    assert all(math.isfinite(float(r["error"])) for r in iters)
    assert summary["statuses"] == {"partial": 2}
    assert err.count("warning: point 0:") == 1


def test_cli_loss_without_retransmission(tmp_path, capsys):
    code, runs, _, summary, err = _run(tmp_path, BASE + LOSS, capsys)
    assert code == 0 and "Traceback" not in err
    assert [r["status"] for r in runs] == ["stopped", "stopped"]
    assert all(r["status_reason"].startswith("message lost") for r in runs)
    assert all(math.isnan(float(r["subspace_distance"])) for r in runs)
    assert summary["statuses"] == {"stopped": 2}


@pytest.mark.parametrize("backend", ["matrix", "engine"])
@pytest.mark.parametrize("setting", ["noise = { scale = 1e300 }", "alpha = 1e308",
                                     "alpha = 1e308\nrank = 2"])
def test_cli_overflow_is_a_status_and_exit_1(tmp_path, capsys, backend, setting):
    text = BASE.replace('backend = "engine"', f'backend = "{backend}"').replace(
        "consensus_steps = 2", f"consensus_steps = 2\n{setting}")
    code, runs, iters, summary, err = _run(tmp_path, text, capsys)
    assert code == 1 and "Traceback" not in err
    status = "diverged"  # finite iterates beyond 1e150 (non-finite ones: unit tests above)
    assert [r["status"] for r in runs] == [status, status]
    assert all("too large for float64" in r["status_reason"] for r in runs)
    assert all(math.isnan(float(r[m])) for r in runs for m in ("error", "subspace_distance",
                                                               "captured_energy"))
    assert math.isfinite(float(iters[0]["error"]))  # q^(0) is fine
    assert summary["statuses"] == {status: 2}
    assert err.count("warning: point 0:") == 1 and "2 of 2 runs are not ok" in err


def test_console_overflow_has_no_traceback(tmp_path):
    sc = tmp_path / "s.toml"
    sc.write_text(BASE.replace('backend = "engine"', "").replace(
        "consensus_steps = 2", "consensus_steps = 2\nnoise = { scale = 1e300 }"))
    p = subprocess.run([sys.executable, "-m", "dpgossip.cli", "run", str(sc), "--out",
                        str(tmp_path / "out")], capture_output=True, text=True, timeout=60)
    assert p.returncode == 1, p.stderr
    assert "Traceback" not in p.stderr and "RuntimeWarning" not in p.stderr
    assert "repeats diverged" in p.stderr


def test_cli_underflow_is_a_status_and_exit_1(tmp_path, capsys):
    # alpha far below 1/mu_1 and no noise: the iterates shrink to zero, so Q = 0 (checked below
    # against the matrix backend on the same problem); the run says so instead of measuring Q = 0
    text = BASE.replace('backend = "engine"', "").replace(
        "consensus_steps = 2", 'consensus_steps = 2\nalpha = 1e-300\nnoise = { schedule = "none" }')
    code, runs, _, summary, err = _run(tmp_path, text, capsys)
    assert code == 1 and "Traceback" not in err
    assert [r["status"] for r in runs] == ["underflow", "underflow"]
    assert all("too small for float64" in r["status_reason"] for r in runs)
    assert all(math.isnan(float(r["subspace_distance"])) for r in runs)
    assert summary["statuses"] == {"underflow": 2}
    from dpgossip import NoiseSchedule, load_dataset, make_network, resolve_params

    data, net = load_dataset("wine", agents=6), make_network("ring", agents=6)
    params = resolve_params(data, net, iterations=6, consensus_steps=2, alpha=1e-300,
                            noise=NoiseSchedule(kind="none"))
    res = run_matrix(data, net, params, seed=0)
    assert not np.any(res.Q) and res.status == "underflow"
