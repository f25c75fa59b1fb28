"""The shipped scenarios: every one validates; the sweeps run end to end (fewer repeats here)."""

import csv
from pathlib import Path

import pytest

from dpgossip.scenario import load_scenario, run_scenario

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


@pytest.mark.parametrize("path", sorted(SCENARIOS.glob("*.toml")), ids=lambda p: p.stem)
def test_shipped_scenario_validates(path):
    sc = load_scenario(path)
    assert sc.name == path.stem
    assert sc.points()


def rows(folder):
    with open(folder / "runs.csv", newline="") as fh:
        return list(csv.DictReader(fh))


def mean_error(rs, **where):
    sel = [float(r["error"]) for r in rs if all(r[k] == v for k, v in where.items())]
    return sum(sel) / len(sel)


def test_consensus_sweep_runs_and_error_falls_with_c(tmp_path):
    sc = load_scenario(SCENARIOS / "consensus-sweep.toml").with_overrides({"repeats": 3})
    assert len(sc.points()) == 9
    run_scenario(sc, tmp_path, quiet=True, plots=False)
    rs = rows(tmp_path)
    assert len(rs) == 9 * 3
    errs = [mean_error(rs, protocol_consensus_steps=str(c)) for c in (1, 5, 20, 50)]
    assert errs == sorted(errs, reverse=True) and errs[-1] < 0.1
    # D-DP-PM with enough rounds beats the LDP baseline at the same budget label
    ldp = sum(float(r["ldp_error"]) for r in rs) / len(rs)
    assert errs[-1] < ldp


def test_topology_comparison_runs_and_the_grid_mixes_faster_than_the_ring(tmp_path):
    sc = load_scenario(SCENARIOS / "topology-comparison.toml").with_overrides({"repeats": 2})
    run_scenario(sc, tmp_path, quiet=True, plots=False)
    rs = rows(tmp_path)
    assert {r["network_topology"] for r in rs} == {"ring", "grid", "random_geometric"}
    assert {r["agents"] for r in rs} == {"16"}
    assert mean_error(rs, network_topology="grid", protocol_consensus_steps="50") < mean_error(
        rs, network_topology="ring", protocol_consensus_steps="50"
    )
    assert len(list((tmp_path / "networks").glob("*.json"))) == 3
