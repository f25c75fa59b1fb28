"""docs/numbers/network-dp.csv and the table of docs/network-dp-scenario.md are what the code computes.

``scripts/network_dp_numbers.py`` summarises a run of scenarios/network-dp-gossip.toml; these tests check
that the page (and the README) print exactly the stored summary and its readings, and recompute with the
project's code, in the default suite, a representative part of it: the hypercube's row at distance 1,
the Erdos-Renyi graph's rounds, observers and row at its largest distance (the graph whose sampler once
changed under a stored CSV), and MFDL's row at distance 1 (a few seconds; the same code path as the
scenario: ``build_network``, ``choose_observers``, the mixing-time rule, ``audit_gossip`` and the
bounds).  The slow test reruns the whole scenario and compares every row (minutes:
``python -m pytest -m slow tests/test_docs_network_dp.py``).
"""

from __future__ import annotations

import math
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

from dpgossip._threads import single_blas_thread
from dpgossip.privacy.linear_audit import LinearAuditSettings
from dpgossip.protocols.gossip.audit import audit_gossip
from dpgossip.protocols.gossip.bounds import (
    compare_to_bound,
    mfdl_abs_sum,
    muffliato_mixing_rounds,
    muffliato_per_message,
)
from dpgossip.protocols.gossip.linear import LinearGossip
from dpgossip.scenario.network_dp import build_network, choose_observers
from dpgossip.scenario.network_dp_config import load_network_dp
from tests.repo_scripts import load_script

ROOT = Path(__file__).resolve().parents[1]


NUMBERS = load_script("network_dp_numbers")
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


def test_erdos_renyi_rounds_observers_and_far_row_recomputed():
    rows = [r for r in ROWS if r["topology"] == "erdos_renyi"]
    row = _row("erdos_renyi", "max")
    case = next(g for g in CONFIG.graphs if g.label == "erdos_renyi")
    network = build_network(case)
    rounds = muffliato_mixing_rounds(network, case.sigma)
    assert {r["rounds"] for r in rows} == {str(rounds)} == {"30"}
    observers = choose_observers(network, case, "erdos_renyi")
    assert {r["pairs_all"] for r in rows} == {str(len(observers))} == {"45"}
    hops = nx.single_source_shortest_path_length(network.graph, case.target)
    far = [v for v in observers if hops[v] == int(row["distance"])]
    assert max(hops[v] for v in observers) == int(row["distance"]) and int(row["pairs"]) == len(far)
    spec = LinearGossip(protocol="gossip-average", rounds=rounds, sigma=1.0)
    settings = LinearAuditSettings(orders=(2.0,), delta=1e-5)
    with single_blas_thread():  # as the scenario runs
        side = [compare_to_bound(audit_gossip(network, spec, v, settings, targets=[0]),
                                 muffliato_per_message(network, spec, v, order=2.0), order=2.0)[0]
                for v in far]
    assert row["exact"] == NUMBERS._fmt(float(np.mean([c.exact for c in side])))
    assert row["bound_value"] == NUMBERS._fmt(float(np.mean([c.bound for c in side])))
    assert row["ratio"] == NUMBERS._fmt(float(np.mean([c.ratio for c in side])))
    assert row["flagged"] == str(sum(c.bound_below_exact for c in side)) == "5"


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


def test_the_page_prints_its_readings_and_the_stored_run():
    page = _flat((ROOT / "docs" / "network-dp-scenario.md").read_text(encoding="utf-8"))
    assert _flat(NUMBERS.page_counts(ROWS)) in page
    assert _flat(NUMBERS.findings(ROWS)) in page
    assert _flat(NUMBERS.time_sentence(NUMBERS.run_time())) in page
    mf1 = _row("mfdl-erdos_renyi", "1")
    assert f"MFDL's absolute-value bound is sound: {mf1['ratio']} of it is reached at distance 1" in page
    # what the first finding states: the sum falls below the exact value somewhere on every graph
    for r in ROWS:
        assert (r["first_below"] != "") == (r["bound"] == "muffliato"), r
    run = NUMBERS.run_time()
    assert [g["label"] for g in run["graphs"]] == [g.label for g in CONFIG.graphs]
    assert [g["pairs"] for g in run["graphs"]] == [int(_row(g.label, "1")["pairs_all"])
                                                    for g in CONFIG.graphs]


def test_the_readme_quotes_the_stored_run_time():
    (line,) = [x for x in (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
               if x.startswith("| `network-dp-gossip.toml` |")]
    assert line.endswith(f"| {NUMBERS.readme_time(NUMBERS.run_time())} |")


def test_the_page_prints_the_decor_scenario_as_it_runs_now():
    """docs/network-dp-scenario.md, Section 4: the whole DECOR scenario rerun (about a second), and what
    the page says of it: the leakage falls with sigma_cor at every distance."""
    text = NUMBERS.decor_table()
    page = _flat((ROOT / "docs" / "network-dp-scenario.md").read_text(encoding="utf-8"))
    assert _flat(text) in page
    for line in text.splitlines()[2:]:
        noisy, decor1, decor10 = (float(c) for c in line.strip("|").split("|")[2:])
        assert noisy > decor1 > decor10, line


@pytest.mark.slow
def test_the_whole_scenario_is_what_the_code_computes():
    """Reruns scenarios/network-dp-gossip.toml (5 to 16 minutes on a shared 2-core machine) and compares
    every stored row."""
    assert NUMBERS.compute() == ROWS
