"""scenarios/als/run_als_epsilon.py runs the grid of scenarios/als/als-epsilon.toml through the registry."""

import csv
import importlib.util
import tomllib
from pathlib import Path

SCENARIO = Path(__file__).resolve().parents[3] / "scenarios" / "als"


def _script():
    spec = importlib.util.spec_from_file_location("run_als_epsilon", SCENARIO / "run_als_epsilon.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_grid_runs_with_audit_at_most_guarantee(tmp_path):
    cfg = tomllib.loads((SCENARIO / "als-epsilon.toml").read_text())
    assert _script().main(["--out", str(tmp_path), "--repeats", "1", "--agents", "10"]) == 0
    with open(tmp_path / "summary.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    eps, graphs = cfg["als"]["epsilon"], cfg["network"]["topology"]
    per_graph = len(eps) * (2 + len(cfg["als"]["noise"]))           # dpals, federated, gossip x modes
    assert len(rows) == len(graphs) * per_graph + 1                    # + the non-private baseline
    private = [r for r in rows if r["kind"] != "als"]
    assert {r["kind"] for r in private} == set(cfg["protocol"]["kind"])
    assert all(float(r["audited_epsilon"]) <= float(r["guaranteed_epsilon"]) for r in private)
    central = [float(r["guaranteed_epsilon"]) for r in private if r["kind"] == "dpals"]
    assert all(g <= e for g, e in zip(central, eps * len(graphs), strict=True))  # Theorem 1's target
