"""docs/network-dp-scenario.md, docs/results.md and the README print the stored results of the two
shipped network-DP scenarios.

docs/results/network-dp-gossip/ and docs/results/network-dp-decor/ hold the small files of

    dpgossip run scenarios/network-dp-gossip.toml --out docs/results/network-dp-gossip
    dpgossip run scenarios/network-dp-decor.toml --out docs/results/network-dp-decor --no-plots

(``leakage.csv``, one row per audited (observer, target) pair, ``summary.json`` and
``config.resolved.json`` of both, and the first one's ``plots/network-dp.png``, which the pages show).
These tests render the pages' tables, readings and run-time sentences from those files and check that
the pages print them; the means per distance are the product's
:func:`~dpgossip.report.network_dp.distance_summary` of the stored ``leakage.csv`` (the function
behind the plot).  The default suite recomputes a sampled part with the product's code
(:func:`~dpgossip.scenario.network_dp.audit_case`, a few seconds): the whole MFDL graph, the hypercube's
observers at distance 1 and at the antipode, the Erdos-Renyi graph's at its largest distance, and every
graph of the DECOR scenario.  The slow test reruns both commands and compares the stored tables byte for
byte (``python -m pytest -m slow tests/test_docs_network_dp.py``, about 2 minutes on the machine that
stored the results).
"""

from __future__ import annotations

import csv
import dataclasses
import json
import math
from pathlib import Path

import networkx as nx
import pytest

from dpgossip._threads import single_blas_thread
from dpgossip.report.network_dp import DistancePoint, distance_summary
from dpgossip.scenario.network_dp import audit_case, prepare_case
from dpgossip.scenario.network_dp_config import NetworkDpConfig, load_network_dp
from tests.stored_results import assert_rows_match

ROOT = Path(__file__).resolve().parents[1]
GOSSIP = ROOT / "docs" / "results" / "network-dp-gossip"
DECOR = ROOT / "docs" / "results" / "network-dp-decor"
PAGE = ROOT / "docs" / "network-dp-scenario.md"
RESULTS_PAGE = ROOT / "docs" / "results.md"
STORED_TABLES = ("leakage.csv", "config.resolved.json")
"""The stored files a rerun must write byte for byte (``summary.json`` holds timings)."""
TABLE_HEAD = ("| topology | T | bound | distance | pairs | exact | bound value | exact / bound | "
              "bound < exact |\n|---|---|---|---|---|---|---|---|---|")


def read_rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def read_json(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def scenario(folder: Path) -> NetworkDpConfig:
    return load_network_dp(ROOT / "scenarios" / f"{folder.name}.toml")


def _flat(text: str) -> str:
    return " ".join(text.split())


def _g(v: float) -> str:
    """Four significant digits, as the pages print them."""
    if math.isnan(v):
        return ""
    return "inf" if math.isinf(v) else f"{v:.4g}"


def _words(label: str) -> str:
    return label.replace("_", " ")


# ------------------------------------------------------------------ what the pages print, rendered


def table_points(folder: Path = GOSSIP) -> list[tuple[DistancePoint, dict]]:
    """The rows of the pages' table: per topology, the :class:`DistancePoint` at distance 1, 2 and the
    largest distance audited (each once), with the topology's totals over every audited pair."""
    rows = read_rows(folder / "leakage.csv")
    points = distance_summary(rows)
    out = []
    for topology in dict.fromkeys(p.topology for p in points):
        mine = [p for p in points if p.topology == topology]
        exact = [float(r["rdp"]) for r in rows if r["topology"] == topology and int(r["distance"]) >= 0]
        below = [p.distance for p in mine if p.flagged]
        totals = {"flagged": sum(p.flagged for p in mine), "pairs": sum(p.pairs for p in mine),
                  "first_below": min(below) if below else None, "exact_min": min(exact),
                  "exact_max": max(exact), "far": mine[-1]}
        for p in mine:
            if p.distance in (1, 2) or p is mine[-1]:
                out.append((p, totals))
    return out


def distance_table(folder: Path = GOSSIP) -> str:
    """The table of both pages, the rounds ``T`` from the stored ``summary.json``."""
    rounds = {g["label"]: g["rounds"] for g in read_json(folder / "summary.json")["graphs"]}
    lines = [TABLE_HEAD]
    for p, _ in table_points(folder):
        lines.append(f"| {p.topology} | {rounds[p.topology]} | {p.source} | {p.distance} | {p.pairs} | "
                     f"{_g(p.exact)} | {_g(p.bound)} | {_g(p.ratio)} | {p.flagged} of {p.pairs} |")
    return "\n".join(lines)


def _at(topology: str, distance: int | str) -> tuple[DistancePoint, dict]:
    """The table's point of ``topology`` at ``distance`` (``"far"``: its largest distance audited)."""
    def wanted(p: DistancePoint, totals: dict) -> bool:
        return p is totals["far"] if distance == "far" else p.distance == distance

    return next((p, t) for p, t in table_points() if p.topology == topology and wanted(p, t))


def _muffliato_topologies() -> list[str]:
    return list(dict.fromkeys(p.topology for p, _ in table_points() if p.source == "muffliato"))


def results_reading() -> str:
    """docs/results.md: the reading under the table, every number from the stored results."""
    counts = ", ".join(f"{_at(t, 1)[1]['flagged']} of {_at(t, 1)[1]['pairs']} on {_words(t)}"
                       for t in _muffliato_topologies())
    (hc, _), (grid, _), (rgg, _) = _at("hypercube", "far"), _at("grid", "far"), _at("random_geometric", "far")
    (mf1, _), (mf2, _) = _at("mfdl-erdos_renyi", 1), _at("mfdl-erdos_renyi", 2)
    return " ".join([
        f"Muffliato's per-message sum is an upper bound only near the target: a few hops away it falls "
        f"below the exact leakage on every topology (audited pairs where it does: {counts}).",
        f"At the antipode of the hypercube it is {_g(hc.ratio)} times too small ({_g(hc.bound)} "
        f"against {_g(hc.exact)}), and at distance {grid.distance} on the grid it reports "
        f"{_g(grid.bound)} where the exact value is {_g(grid.exact)}.",
        f"With one noisy value per agent and T as large as their rule asks, distance protects little: "
        f"every message is a function of the same noisy vector, and the farthest observers audited on "
        f"the random geometric graph and the grid still have {_g(rgg.exact)} and {_g(grid.exact)} "
        f"(local DP, the agent's own noisy value, is 1).",
        f"MFDL's absolute-value bound is sound on its setting: next to the attacker the exact "
        f"supremum is {_g(mf1.exact)} against their {_g(mf1.bound)} (exact / bound = "
        f"{_g(mf1.ratio)}), and from distance 2 on the two agree ({_g(mf2.exact)} and {_g(mf2.bound)}).",
    ])


def page_counts() -> str:
    """docs/network-dp-scenario.md: the pairs below the bound over every audited distance."""
    totals = {p.topology: (p.source, t) for p, t in table_points()}
    counts = ", ".join(f"{t['flagged']} of the {t['pairs']} {_words(name)} pairs"
                       for name, (source, t) in totals.items() if source == "muffliato")
    never = all(t["flagged"] == 0 for source, t in totals.values() if source == "mfdl")
    return (f"Over every audited distance the Muffliato sum is below the exact value for {counts} "
            f"(`muffliato_below_exact` in `leakage.csv`); MFDL's bound is "
            f"{'never' if never else 'sometimes'} below.")


def findings() -> str:
    """docs/network-dp-scenario.md, "What it finds": the first bullet, every number from the results."""
    first = ", ".join(f"{_at(t, 1)[1]['first_below']} on {_words(t)}" for t in _muffliato_topologies())
    (hc, _), (er, _) = _at("hypercube", "far"), _at("erdos_renyi", "far")
    (rgg, _), (grid, totals) = _at("random_geometric", "far"), _at("grid", "far")
    return (f"Muffliato's per-message sum is an upper bound near the target only. On every topology it "
            f"falls below the exact leakage a few hops away (from distance {first}), and the gap grows "
            f"with the distance: {hc.ratio:.3g} times at the hypercube's antipode, {er.ratio:.3g} times "
            f"at distance {er.distance} of the Erdos-Renyi graph, and at the far end of the random "
            f"geometric graph and of the grid it reports {_g(rgg.bound)} and {_g(grid.bound)} where the "
            f"exact value is {_g(rgg.exact)} and {_g(grid.exact)}. The exact leakage stays between "
            f"{_g(totals['exact_min'])} and {_g(totals['exact_max'])} over the grid's audited observers.")


def compute_seconds(folder: Path = GOSSIP) -> float:
    """The sum of the graphs' ``seconds`` in the stored ``summary.json``."""
    return sum(g["seconds"] for g in read_json(folder / "summary.json")["graphs"])


def _minutes(seconds: float) -> str:
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest} s" if minutes else f"{rest} s"


def run_time_sentence(folder: Path = GOSSIP) -> str:
    """docs/network-dp-scenario.md: the stored run's time, per graph, from ``summary.json``."""
    graphs = read_json(folder / "summary.json")["graphs"]
    per = ", ".join(f"{g['seconds']:.1f} s for {g['label']} ({g['observers']} observer"
                    f"{'s' if g['observers'] != 1 else ''}, {g['pairs']} pairs)" for g in graphs)
    return (f"The graphs' computing time, the sum of their `seconds` in the stored `summary.json`, "
            f"measured on the machine that stored the results (a shared 2-core machine, one process), "
            f"is {_minutes(compute_seconds(folder))}: {per}.")


def readme_time() -> str:
    """The README's cell of the shipped-scenario table."""
    return (f"{_minutes(compute_seconds())} of computing (the graphs' seconds in the stored summary.json, "
            f"1 worker, on the shared machine that stored the results)")


def per_observer_cost(folder: Path = GOSSIP) -> str:
    """docs/network-dp-scenario.md, Section 2: seconds per observer of each fixed-target graph (its
    ``seconds`` in the stored ``summary.json`` over its observers)."""
    per = {g["label"]: g["seconds"] / g["observers"] for g in read_json(folder / "summary.json")["graphs"]}
    return (f"in the stored run {per['grid']:.1f} s on the grid and {per['random_geometric']:.1f} s on "
            f"the random geometric graph, against {per['hypercube']:.2f} s and {per['erdos_renyi']:.2f} s "
            f"on the hypercube and the Erdos-Renyi graph: the graphs' `seconds` in `summary.json` over "
            f"their observers, Section 3")


def decor_time(folder: Path = DECOR) -> str:
    """docs/network-dp-scenario.md, Section 4: the DECOR run's computing time."""
    return (f"the graphs' computing time, the sum of their `seconds` in the stored `summary.json`, is "
            f"{compute_seconds(folder):.2f} s")


def decor_table(folder: Path = DECOR) -> str:
    """docs/network-dp-scenario.md, Section 4: the DECOR scenario's mean exact Renyi value by distance
    from the observer, one column per graph."""
    graphs = read_json(folder / "config.resolved.json")["graphs"]
    points = distance_summary(read_rows(folder / "leakage.csv"))
    labels = [g["label"] for g in graphs]
    head = " | ".join(f"{g['label']} (`sigma_cor = {g['sigma_cor']:g}`)" for g in graphs)
    lines = [f"| distance | pairs | {head} |", "|---:|---:|" + "---|" * len(labels)]
    for d in sorted({p.distance for p in points}):
        at = {p.topology: p for p in points if p.distance == d}
        lines.append(f"| {d} | {at[labels[0]].pairs} | "
                     + " | ".join(_g(at[label].exact) for label in labels) + " |")
    return "\n".join(lines)


# ------------------------------------------------------------------------ the pages print them


def test_both_pages_print_the_stored_table():
    table = _flat(distance_table())
    for page in (PAGE, RESULTS_PAGE):
        assert table in _flat(page.read_text(encoding="utf-8")), page.name


def test_the_pages_print_their_readings_of_the_stored_results():
    page = _flat(PAGE.read_text(encoding="utf-8"))
    assert _flat(page_counts()) in page
    assert _flat(findings()) in page
    (mf1, _) = _at("mfdl-erdos_renyi", 1)
    assert f"MFDL's absolute-value bound is sound: {_g(mf1.ratio)} of it is reached at distance 1" in page
    assert _flat(results_reading()) in _flat(RESULTS_PAGE.read_text(encoding="utf-8"))
    # what the readings state: Muffliato's sum falls below the exact value somewhere on every graph it
    # applies to, and MFDL's bound never does (its ratio is at most 1 at every distance)
    for p, totals in table_points():
        if p.source == "muffliato":
            assert totals["flagged"] > 0 and totals["first_below"] is not None, p
        else:
            assert p.source == "mfdl" and totals["flagged"] == 0 and p.ratio <= 1.0 + 1e-9, p


def test_the_stored_results_are_the_shipped_scenarios():
    for folder in (GOSSIP, DECOR):
        config = read_json(folder / "config.resolved.json")
        labels = [g.label for g in scenario(folder).graphs]
        assert config["name"] == folder.name and [g["label"] for g in config["graphs"]] == labels
        assert list(dict.fromkeys(r["topology"] for r in read_rows(folder / "leakage.csv"))) == labels
    summary = read_json(GOSSIP / "summary.json")
    assert summary["scenario"] == GOSSIP.name and summary["statuses"] == {"ok": 5}
    assert not any(g["resumed"] for g in summary["graphs"])  # every graph computed by this run
    stored = read_rows(GOSSIP / "leakage.csv")
    assert [g["pairs"] for g in summary["graphs"]] == [
        sum(r["topology"] == g["label"] for r in stored) for g in summary["graphs"]]
    assert config["alpha"] == 2.0 and summary["alpha"] == 2.0  # the pages: Renyi divergences at alpha = 2


def test_the_pages_show_the_products_plot_and_name_the_commands():
    plot = GOSSIP / "plots" / "network-dp.png"
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and plot.stat().st_size < 300_000
    page, results = PAGE.read_text(encoding="utf-8"), RESULTS_PAGE.read_text(encoding="utf-8")
    assert "](results/network-dp-gossip/plots/network-dp.png)" in page
    assert "](results/network-dp-gossip/plots/network-dp.png)" in results
    assert "dpgossip run scenarios/network-dp-gossip.toml --out docs/results/network-dp-gossip" in page
    assert ("dpgossip run scenarios/network-dp-decor.toml --out docs/results/network-dp-decor "
            "--no-plots") in page


def test_the_page_and_the_readme_quote_the_stored_run_times():
    page = _flat(PAGE.read_text(encoding="utf-8"))
    for sentence in (run_time_sentence(), per_observer_cost(), decor_time()):
        assert _flat(sentence) in page
    (line,) = [x for x in (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
               if x.startswith("| `network-dp-gossip.toml` |")]
    assert line.endswith(f"| {readme_time()} |")


def test_the_page_prints_the_stored_decor_table_and_secrets_protect():
    text = decor_table()
    assert _flat(text) in _flat(PAGE.read_text(encoding="utf-8"))
    for line in text.splitlines()[2:]:  # what the page says: leakage falls with sigma_cor everywhere
        noisy, decor1, decor10 = (float(c) for c in line.strip("|").split("|")[2:])
        assert noisy > decor1 > decor10, line


# ------------------------------------------------------------------- recomputed with the product


def _recompute(folder: Path, label: str,
               distances: set[int] | None = None) -> tuple[list[dict[str, object]], dict[str, object]]:
    """The rows and facts of graph ``label`` by the product's :func:`audit_case`, with only the
    observers at ``distances`` from the target (every observer: ``None``), as the run computes them;
    the facts' ``observers`` counts every observer the scenario samples."""
    config = scenario(folder)
    (index,) = [i for i, g in enumerate(config.graphs) if g.label == label]
    case, path = config.graphs[index], f"network_dp.graphs[{index}]"
    with single_blas_thread():
        prepared = prepare_case(case, path)
        sampled = len(prepared.observers)
        if distances is not None:
            hops = nx.single_source_shortest_path_length(prepared.network.graph, case.target)
            prepared = dataclasses.replace(
                prepared, observers=tuple(v for v in prepared.observers if hops[v] in distances))
        rows, info = audit_case(case, alpha=config.alpha, delta=config.delta,
                                sensitivity=config.sensitivity, path=path, prepared=prepared)
    return [r.to_row() for r in rows], {**info, "observers": sampled}


@pytest.mark.parametrize(("label", "distances"), [
    ("mfdl-erdos_renyi", None),   # MFDL's attacker 0 and all 99 targets (0.1 s)
    ("hypercube", {1, 11}),       # the neighbours and the antipode (about a second)
    ("erdos_renyi", {6}),         # the largest distance audited (a sampler change would move it)
])
def test_sampled_graphs_recomputed(label, distances):
    stored = read_rows(GOSSIP / "leakage.csv")
    fresh, info = _recompute(GOSSIP, label, distances)
    (graph,) = [g for g in read_json(GOSSIP / "summary.json")["graphs"] if g["label"] == label]
    assert (info["rounds"], info["edges"], info["observers"]) == \
        (graph["rounds"], graph["edges"], graph["observers"])
    mine = [r for r in stored if r["topology"] == label
            and (distances is None or int(r["distance"]) in distances)]
    assert_rows_match(mine, fresh)  # every stored row of the graph (at those distances), in the stored order
    if distances:
        assert {int(r["distance"]) for r in mine} == distances


def test_the_hypercube_rounds_and_mfdl_supremum_are_the_documented_ones():
    """The page's worked values: ``T = ceil(ln 2048 / sqrt(2/12)) = 19`` on the hypercube, and MFDL's
    mean exact supremum 9.136 next to the attacker (docs/network-dp-scenario.md, Section 2)."""
    rounds = {g["label"]: g["rounds"] for g in read_json(GOSSIP / "summary.json")["graphs"]}
    assert rounds["hypercube"] == math.ceil(math.log(2048) / math.sqrt(2 / 12)) == 19
    (mf1, _) = _at("mfdl-erdos_renyi", 1)
    assert mf1.exact == pytest.approx(9.136, abs=1e-3) and mf1.pairs == 4


def test_the_whole_decor_scenario_recomputed():
    """Every graph of the DECOR scenario (about a second): every stored row."""
    stored = read_rows(DECOR / "leakage.csv")
    for graph in scenario(DECOR).graphs:
        assert_rows_match([r for r in stored if r["topology"] == graph.label],
                          _recompute(DECOR, graph.label)[0])


@pytest.mark.slow
def test_both_commands_rerun_write_the_stored_tables(tmp_path):
    """Both scenarios again with the product's command (about 2 minutes): the stored tables byte for
    byte, and the same graphs, rounds, observers and pairs in ``summary.json``."""
    from dpgossip.cli import main

    for folder in (GOSSIP, DECOR):
        out = tmp_path / folder.name
        assert main(["run", str(ROOT / "scenarios" / f"{folder.name}.toml"), "--out", str(out), "-q",
                     "--no-plots"]) == 0
        for table in STORED_TABLES:
            assert (out / table).read_bytes() == (folder / table).read_bytes(), (folder.name, table)
    fresh, stored = read_json(tmp_path / GOSSIP.name / "summary.json"), read_json(GOSSIP / "summary.json")
    timing = ("seconds", "resumed")
    assert [{k: v for k, v in g.items() if k not in timing} for g in fresh["graphs"]] == \
        [{k: v for k, v in g.items() if k not in timing} for g in stored["graphs"]]
