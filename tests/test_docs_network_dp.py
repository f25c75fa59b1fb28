"""docs/numbers/network-dp.csv and the table of docs/network-dp-scenario.md are what the code computes.

``scripts/network_dp_numbers.py`` summarises a run of scenarios/network-dp-gossip.toml; these tests check
that the page prints exactly the stored summary, and recompute rows of it (the hypercube's at distance
1 and MFDL's at distance 1) with the project's code: a few seconds, not the whole scenario.
"""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest

from dpgossip._threads import single_blas_thread
from dpgossip.privacy.gossip_bounds import mfdl_abs_sum, muffliato_per_message
from dpgossip.privacy.linear_audit import LinearAuditSettings, audit_gossip
from dpgossip.protocol.linear_gossip import LinearGossip
from dpgossip.scenario.network_dp import build_network, choose_observers
from dpgossip.scenario.network_dp_config import load_network_dp

ROOT = Path(__file__).resolve().parents[1]


def _script():
    spec = importlib.util.spec_from_file_location("network_dp_numbers",
                                                  ROOT / "scripts" / "network_dp_numbers.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


NUMBERS = _script()
ROWS = NUMBERS.read_numbers()
CONFIG = load_network_dp(ROOT / "scenarios" / "network-dp-gossip.toml")


def _row(topology: str, at: str) -> dict[str, str]:
    return next(r for r in ROWS if r["topology"] == topology and r["at"] == at)


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_the_page_prints_the_stored_table():
    page = _flat((ROOT / "docs" / "network-dp-scenario.md").read_text(encoding="utf-8"))
    assert _flat(NUMBERS.table(ROWS)) in page


def test_every_graph_of_the_scenario_is_summarised():
    assert list(dict.fromkeys(r["topology"] for r in ROWS)) == [g.label for g in CONFIG.graphs]


def test_hypercube_distance_one_recomputed():
    row = _row("hypercube", "1")
    case = next(g for g in CONFIG.graphs if g.label == "hypercube")
    assert int(row["rounds"]) == math.ceil(math.log(2048) / math.sqrt(2 / 12)) == 19
    network = build_network(case)
    spec = LinearGossip(protocol="gossip-average", rounds=19, sigma=1.0)
    near = [v for v in choose_observers(network, case, "hypercube") if v in network.neighbours[0]]
    settings = LinearAuditSettings(orders=(2.0,), delta=1e-5)
    with single_blas_thread():  # as the scenario runs (many mid-sized products)
        exact = [audit_gossip(network, spec, v, settings, targets=[0])[0].rdp[0] for v in near]
        bound = [muffliato_per_message(network, spec, v, order=2.0)[0] for v in near]
    assert int(row["pairs"]) == len(near) == 8
    assert row["exact"] == NUMBERS._fmt(float(np.mean(exact)))
    assert row["bound_value"] == NUMBERS._fmt(float(np.mean(bound)))
    assert row["bound"] == "muffliato"


def test_mfdl_distance_one_recomputed():
    row = _row("mfdl-erdos_renyi", "1")
    case = next(g for g in CONFIG.graphs if g.label == "mfdl-erdos_renyi")
    network = build_network(case)
    spec = LinearGossip(protocol="gossip-noisy", rounds=10, sigma=1.0, inputs="per-round")
    near = list(network.neighbours[0])
    rows = audit_gossip(network, spec, 0, LinearAuditSettings(orders=(2.0,)), targets=near)
    bound = mfdl_abs_sum(network, spec, 0, order=2.0)[near]
    assert int(row["pairs"]) == 4 and row["bound"] == "mfdl" and row["flagged"] == "0"
    assert row["exact"] == NUMBERS._fmt(float(np.mean([r.rdp[0] for r in rows])))
    assert row["bound_value"] == NUMBERS._fmt(float(np.mean(bound)))
    assert float(row["exact"]) == pytest.approx(9.136, abs=1e-3)  # docs: the exact supremum


def test_the_readme_prints_the_stored_table_and_its_reading():
    readme = _flat((ROOT / "docs" / "results.md").read_text(encoding="utf-8"))
    assert _flat(NUMBERS.table(ROWS)) in readme
    assert _flat(NUMBERS.reading(ROWS)) in readme
    # what the reading states: Muffliato's sum falls below the exact value somewhere on every topology
    # it applies to, and MFDL's bound never does
    for r in ROWS:
        if r["bound"] == "muffliato":
            assert int(r["flagged_all"]) > 0, r
        else:
            assert int(r["flagged"]) == 0 and float(r["ratio"]) <= 1.0 + 1e-9, r
