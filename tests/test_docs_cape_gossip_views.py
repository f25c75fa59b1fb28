"""docs/cape-gossip.md, Section 3, prints the stored results of the shipped scenario cape-gossip-views.

docs/results/cape-gossip-views/ holds ``runs.csv`` and ``config.resolved.json`` of

    dpgossip run scenarios/cape-gossip-views.toml --out docs/results/cape-gossip-views --no-plots

These tests render the page's table (every epsilon rounded up by :func:`dpgossip.rounding.format_upper`)
and the numbers of its reading from the stored rows, check what the reading states (and the closed forms
of Section 3's items 1 and 3) on them, run the point of the 16-ring with ``c = 10`` again (about a
second) and compare its row with the stored one character for character. The slow test reruns the
command and compares the stored files byte for byte.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest

from dpgossip.privacy.mechanism import gaussian_mechanism_epsilon
from dpgossip.protocols.cape.guarantee import calibrate_cape_noise
from dpgossip.rounding import format_upper
from tests.stored_results import assert_run_writes_stored

ROOT = Path(__file__).resolve().parents[1]
NAME = "cape-gossip-views"
SCENARIO = ROOT / "scenarios" / f"{NAME}.toml"
RESULTS = ROOT / "docs" / "results" / NAME
STORED = ("runs.csv", "config.resolved.json")
COMMAND = f"dpgossip run scenarios/{NAME}.toml --out docs/results/{NAME} --no-plots"
NETWORK_NAMES = {"paper-ring4": "paper ring", "ring": "ring"}
"""The page's name of each network."""
GOSSIP_COLUMNS = ("audited_epsilon_beyond", "audited_epsilon_coalition_0_2", "audited_epsilon_edge_0_1",
                  "audited_epsilon_every_edge")
"""capepca-gossip's columns of the table, in its order: the worst neighbour, then the named views."""
CAPE_COLUMNS = ("site_epsilon", "guaranteed_epsilon")
"""capepca's columns of the table: one site's release, the aggregator's joint view."""
DELTA, ROWS_PER_SITE = 1e-5, 100


def _flat(text: str) -> str:
    return " ".join(text.split())


def read_rows(folder: Path = RESULTS) -> list[dict[str, str]]:
    with open(folder / "runs.csv", newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def settings(rows: list[dict[str, str]]) -> dict[tuple[str, int, int], dict[str, dict[str, str]]]:
    """``{(topology, sites, c): {"capepca-gossip": row, "capepca": row}}``, in the rows' order (capepca's
    ``c`` is its point's ``protocol_consensus_steps``: it runs no rounds)."""
    out: dict[tuple[str, int, int], dict[str, dict[str, str]]] = {}
    for r in rows:
        key = (r["topology"], int(r["agents"]), int(r["protocol_consensus_steps"]))
        out.setdefault(key, {})[r["kind"]] = r
    return out


def _eps(row: dict[str, str], column: str) -> float:
    return float(row[column])


def table(rows: list[dict[str, str]]) -> str:
    """The markdown table of docs/cape-gossip.md, Section 3."""
    lines = ["| network | c | worst neighbour | coalition {0, 2} | eavesdropper on edge (0, 1) "
             "| eavesdropper on every edge | capePCA site | capePCA aggregator |",
             "|---|---|---|---|---|---|---|---|"]
    for (topology, sites, c), pair in settings(rows).items():
        cells = [format_upper(_eps(pair["capepca-gossip"], k), 3) for k in GOSSIP_COLUMNS]
        cells += [format_upper(_eps(pair["capepca"], k), 3) for k in CAPE_COLUMNS]
        lines.append(f"| {NETWORK_NAMES[topology]} ({sites}) | {c} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _gossip(rows, topology: str, sites: int, c: int, column: str) -> float:
    return _eps(settings(rows)[(topology, sites, c)]["capepca-gossip"], column)


def reading(rows: list[dict[str, str]]) -> list[str]:
    """The numbers of items 2-4 of the page's reading, in their sentences."""
    up = lambda v: format_upper(v, 3)  # noqa: E731
    return [
        f"On the 16-ring a neighbour goes from "
        f"{up(_gossip(rows, 'ring', 16, 1, 'audited_epsilon_beyond'))} (`c = 1`) to "
        f"{up(_gossip(rows, 'ring', 16, 10, 'audited_epsilon_beyond'))} (`c = 10`), beyond capePCA's "
        "aggregator",
        f"whatever `c` is: {up(_gossip(rows, 'paper-ring4', 4, 1, 'audited_epsilon_coalition_0_2'))} for 4 "
        f"sites and {up(_gossip(rows, 'ring', 16, 1, 'audited_epsilon_coalition_0_2'))} for 16",
        f"{up(_gossip(rows, 'paper-ring4', 4, 5, 'audited_epsilon_every_edge'))} on the paper ring, "
        f"{up(_gossip(rows, 'ring', 16, 10, 'audited_epsilon_every_edge'))} on the 16-ring",
    ]


def test_the_page_prints_the_stored_table_and_names_the_command():
    page = (ROOT / "docs" / "cape-gossip.md").read_text(encoding="utf-8")
    rows = read_rows()
    assert table(rows) in page
    for sentence in reading(rows):
        assert sentence in _flat(page), sentence
    assert COMMAND in _flat(page)
    multiplier = json.loads((RESULTS / "config.resolved.json").read_text(encoding="utf-8"))["cape"]
    assert f"the multiplier {multiplier['noise_multiplier']!r} for every `S`" in _flat(page)
    assert f"`{NAME}/`: `{COMMAND}`" in (ROOT / "docs" / "results" / "README.md").read_text(encoding="utf-8")


def test_the_stored_results_are_the_shipped_scenario_s():
    """The configuration as the scenario file resolves now, every point ok, 100 rows per site, and the
    noise matched to capePCA at the multiplier where one capePCA site release is exactly (1, 1e-5)-DP."""
    from dpgossip.scenario import load_scenario

    scenario = load_scenario(SCENARIO)
    stored = json.loads((RESULTS / "config.resolved.json").read_text(encoding="utf-8"))
    assert stored == json.loads(json.dumps(scenario.config))
    rows = read_rows()
    assert len(rows) == len(scenario.points()) == 10 and {r["status"] for r in rows} == {"ok"}
    multiplier = stored["cape"]["noise_multiplier"]
    for r in rows:
        S = int(r["agents"])
        assert int(r["n"]) == ROWS_PER_SITE * S and float(r["guarantee_delta"]) == DELTA
        assert multiplier == pytest.approx(calibrate_cape_noise(1.0, DELTA, S, view="site"), rel=1e-12)
        if r["kind"] == "capepca-gossip":       # Section 1's matching on a ring (degree 2)
            assert float(r["own_multiplier"]) == pytest.approx(multiplier / math.sqrt(S), rel=1e-12)
            assert float(r["edge_multiplier"]) == pytest.approx(multiplier * math.sqrt((1 - 1 / S) / 2),
                                                                rel=1e-12)
        else:
            assert float(r["noise_multiplier"]) == multiplier
    assert [(t, S, c) for t, S, c in settings(rows)] == [
        ("paper-ring4", 4, 1), ("paper-ring4", 4, 5), ("ring", 16, 1), ("ring", 16, 3), ("ring", 16, 10)]


def test_the_reading_holds_in_the_stored_rows():
    """Items 1-4: with one round a neighbour is capePCA's aggregator (mu^2 = (2S/(S + 1)) (Delta/tau)^2);
    more rounds leak more to a neighbour, past the aggregator on the 16-ring; the coalition of site 1's
    neighbours sees A_1 + G_1 whatever c is (mu^2 = S (Delta/tau)^2); one edge sees less than a neighbour
    and, with enough rounds, as much as every edge."""
    rows = read_rows()
    by = settings(rows)
    for (topology, S, c), pair in by.items():
        gossip, cape = pair["capepca-gossip"], pair["capepca"]
        first = by[(topology, S, 1)]["capepca-gossip"]
        ratio = 1 / float(cape["noise_multiplier"])   # Delta / tau: every site has 100 rows
        assert _eps(cape, "site_epsilon") == pytest.approx(1.0, rel=1e-9)
        assert _eps(cape, "guaranteed_epsilon") == pytest.approx(
            gaussian_mechanism_epsilon(math.sqrt(2 * S / (S + 1)) * ratio, DELTA), rel=1e-9)
        assert _eps(gossip, "audited_epsilon_coalition_0_2") == pytest.approx(
            gaussian_mechanism_epsilon(math.sqrt(S) * ratio, DELTA), rel=1e-9)
        neighbour = _eps(gossip, "audited_epsilon_beyond")
        if c == 1:
            assert neighbour == pytest.approx(_eps(cape, "guaranteed_epsilon"), rel=1e-9)
        assert neighbour >= _eps(first, "audited_epsilon_beyond") - 1e-12
        edge, every = _eps(gossip, "audited_epsilon_edge_0_1"), _eps(gossip, "audited_epsilon_every_edge")
        assert edge <= every + 1e-12 and edge <= neighbour + 1e-12
        assert every == pytest.approx(_eps(first, "audited_epsilon_every_edge"), rel=1e-9)
    last = by[("ring", 16, 10)]
    assert _eps(last["capepca-gossip"], "audited_epsilon_beyond") > \
        _eps(last["capepca"], "guaranteed_epsilon")
    for key in (("paper-ring4", 4, 5), ("ring", 16, 10)):
        gossip = by[key]["capepca-gossip"]
        assert _eps(gossip, "audited_epsilon_edge_0_1") == pytest.approx(
            _eps(gossip, "audited_epsilon_every_edge"), rel=1e-9)


def test_the_16_ring_point_with_ten_rounds_is_what_the_run_computes(tmp_path):
    """That point run alone (repeat 0 has the same seed at every point, synthetic data one seed for all):
    its row is the stored one, every column the run writes but the point's index, character for
    character."""
    from dpgossip.scenario import load_scenario, run_scenario

    data = json.loads((RESULTS / "config.resolved.json").read_text(encoding="utf-8"))["data"]["synthetic"][-1]
    scenario = load_scenario(SCENARIO).with_overrides({
        "data.synthetic": data, "network.topology": "ring", "network.agents": 16,
        "protocol.consensus_steps": 10, "protocol.kind": "capepca-gossip", "sweep.zip": []})
    assert len(scenario.points()) == 1
    (fresh,) = read_rows(run_scenario(scenario, tmp_path / "point", quiet=True))
    (stored,) = [r for r in read_rows() if (r["kind"], r["agents"], r["c"]) == ("capepca-gossip", "16", "10")]
    columns = [k for k in fresh if k != "point"]
    assert set(GOSSIP_COLUMNS) <= set(columns) <= set(stored)
    assert {k: fresh[k] for k in columns} == {k: stored[k] for k in columns}


@pytest.mark.slow
def test_the_scenario_rerun_writes_the_stored_files(tmp_path):
    """The whole scenario again with the command the page names (seconds): the stored files byte for
    byte."""
    assert_run_writes_stored(SCENARIO, tmp_path / NAME, RESULTS, STORED)
