"""The protocol frontier's tables, reading and plot (docs/protocol-frontier.md, docs/results.md, README.md)
are the stored output of the shipped scenario protocol-frontier.

docs/results/protocol-frontier/ holds what ``dpgossip run scenarios/protocol-frontier.toml --out
docs/results/protocol-frontier`` writes, kept to runs.csv (every point's repeats: errors, guarantees,
audits), leakage.csv (every D-DP-PM point's pair audit: the RDP conversion of the worst neighbour found for
each pair, the point that found it, and each target's certified upper bound ``epsilon_upper``),
timing.json (the run's seconds), config.resolved.json, summary.json and plots/privacy_utility.png (the
pages show it). The tables and sentences are rendered here from the stored files, with
:func:`dpgossip.report.frontier.frontier_table` (the function that draws the plot), and compared with the
pages (whitespace normalised): every number is a mean over the scenario's repeats; guarantees and
certified bounds are printed rounded up (:func:`dpgossip.rounding.format_upper`). The column ``audit``
says what each audited epsilon is (:data:`AUDIT`). The default suite recomputes one capepca point and the
certified bounds of one D-DP-PM point; the slow test reruns the whole command and compares runs.csv and
leakage.csv byte for byte.
"""

from __future__ import annotations

import csv
import json
import math
import tomllib
from pathlib import Path

import numpy as np
import pytest

from tests.stored_results import assert_run_writes_stored, fmt, fmt_upper

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "scenarios" / "protocol-frontier.toml"
RESULTS = ROOT / "docs" / "results" / "protocol-frontier"
COMMAND = "dpgossip run scenarios/protocol-frontier.toml --out docs/results/protocol-frontier"
KEPT = ("config.resolved.json", "leakage.csv", "plots/privacy_utility.png", "runs.csv", "summary.json",
        "timing.json")
MEASURED = {"wall": "25 min 33 s", "cpu": "16 min 8 s", "cpu_percent": 63, "max_rss_mb": 1518,
            "load_before": "0.10", "load_after": "2.67"}
"""The stored run as ``/usr/bin/time -v`` measured it (wall clock, user + system CPU time, the share of
a core it got, peak memory) with ``uptime``'s 1-minute load average just before and after it;
timing.json's ``seconds`` (the run's own clock, without the interpreter's start) lies just below the
wall time."""
SERIES = ("D-DP-PM", "ddppm-floorfree", "ppm (improved, row-replacement)", "ppm-federated", "ppm-gossip",
          "capepca", "capepca-gossip", "LDP")
"""The series in the order of the tables."""
AUDIT = {"D-DP-PM": "RDP conversion of the worst neighbour found (neither a lower estimate nor a bound)",
         "ddppm-floorfree": "lower estimate",
         "ppm (improved, row-replacement)": "lower estimate", "ppm-federated": "lower estimate",
         "ppm-gossip": "exact", "capepca": "exact", "capepca-gossip": "exact", "LDP": "not audited"}
"""What each series' audited epsilon is (docs/protocol-frontier.md, Section 4)."""
AT_LEAST = "at least (the epsilon cap, exceeded by a neighbour found)"
"""The audit of a D-DP-PM point whose worst pair's search stopped at ``privacy.epsilon_cap``."""
NAMES = {"wine": "Wine", "breast_cancer": "Breast Cancer", "diabetes": "Diabetes"}
HEADER = ("| data | protocol | budget epsilon (D-DP-PM: noise scale) | error | guaranteed epsilon "
          "| audited epsilon (what the guarantee covers) | audited beyond its scope | audit "
          "| certified upper bound (D-DP-PM) |\n"
          "|---|---|---|---|---|---|---|---|---|")


def _flat(text: str) -> str:
    return " ".join(text.split())


# --- the stored files ------------------------------------------------------------------------------
def scenario() -> dict:
    """The shipped scenario."""
    return tomllib.loads(SCENARIO.read_text(encoding="utf-8"))


def results_folder(folder: Path = RESULTS):
    """The stored folder as :mod:`dpgossip.report` reads it, from the kept files (runs.csv and
    leakage.csv; each point's axis values from its first run, whose columns carry them)."""
    from dpgossip.report.tables import ResultsFolder, typed_rows

    runs = typed_rows(folder / "runs.csv")
    first: dict[int, dict] = {}
    for r in runs:
        first.setdefault(int(r["point"]), r)
    summary = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
    config = json.loads((folder / "config.resolved.json").read_text(encoding="utf-8"))
    return ResultsFolder(path=folder, config=config, summary=summary,
                         points=[first[p] for p in range(len(first))], runs=runs, iterations=[],
                         axes=list(summary["axes"]), groups=[])


def epsilon_cap(folder: Path = RESULTS) -> float:
    """The run's ``privacy.epsilon_cap`` (config.resolved.json)."""
    config = json.loads((folder / "config.resolved.json").read_text(encoding="utf-8"))
    return float(config["privacy"]["epsilon_cap"])


def leakage_rows(folder: Path = RESULTS) -> list[dict[str, str]]:
    """The stored leakage.csv: one row per (observer, target) of each D-DP-PM point."""
    with open(folder / "leakage.csv", newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def certified_upper(rows: list[dict[str, str]]) -> dict[int, tuple[float, str]]:
    """Per D-DP-PM point: the largest of its targets' certified bounds (``epsilon_upper`` of leakage.csv,
    at the audit's delta, for every neighbour and every view without the target: it covers the
    eavesdropper) and, when it is infinite, the reason of the first target that attains it."""
    by_point: dict[int, dict[int, tuple[float, str]]] = {}
    for r in rows:
        by_point.setdefault(int(r["point"]), {})[int(r["target"])] = (float(r["epsilon_upper"]),
                                                                      r["upper_reason"])
    out = {}
    for p, targets in by_point.items():
        j = max(sorted(targets), key=lambda t: targets[t][0])
        value, reason = targets[j]
        out[p] = (value, reason if math.isinf(value) else "")
    return out


# --- the rows of the tables ------------------------------------------------------------------------
def _claimed(res, point: int) -> float:
    vals = [float(r["claimed_epsilon"]) for r in res.runs
            if int(r["point"]) == point and r.get("claimed_epsilon") is not None]
    return sum(vals) / len(vals) if vals else math.nan


def frontier_rows(folder: Path = RESULTS) -> list[dict[str, str]]:
    """One row per point (and per LDP budget, graph and dataset): the numbers of the plot, and for
    D-DP-PM the certified bound (:func:`certified_upper`), every cell as the tables print it."""
    from dpgossip.report.frontier import frontier_table

    res = results_folder(folder)
    upper = certified_upper(leakage_rows(folder))
    rows = []
    for f in frontier_table(res):
        axes = res.axis_values(f.point) if f.point >= 0 else {}
        noise = axes.get("protocol.noise") or {}
        dd = f.series == "D-DP-PM"
        budget = axes.get("ppm.epsilon") if f.series != "LDP" else f.guaranteed_epsilon
        bound, reason = upper[f.point] if dd else (math.nan, "")
        rows.append({"dataset": f.dataset, "topology": f.topology, "series": f.series,
                     "budget": "" if dd else fmt(float(budget)),
                     "noise_scale": fmt(float(noise.get("scale", math.nan))) if dd else "",
                     "error": fmt(f.error), "guaranteed_epsilon": fmt_upper(f.guaranteed_epsilon),
                     "claimed": fmt(_claimed(res, f.point)) if f.point >= 0 else "",
                     "audited_epsilon": fmt(f.audited_epsilon),
                     "audited_beyond": fmt(f.audited_beyond),
                     "audit": AT_LEAST if f.at_least else AUDIT[f.series],
                     "audited_upper": fmt_upper(bound), "upper_reason": reason})
    return rows


# --- the tables and the reading --------------------------------------------------------------------
def _cells(rows: list[dict[str, str]], key: str) -> str:
    vals = [r[key] for r in rows]
    return " / ".join(vals) if any(vals) else ""


def _line(data: str, series: str, pts: list[dict[str, str]]) -> str:
    budget = (f"({_cells(pts, 'noise_scale')})" if series == "D-DP-PM" else _cells(pts, "budget"))
    guar = _cells(pts, "guaranteed_epsilon") or "none"
    if any(r["claimed"] for r in pts):
        guar += f" (Imtiaz and Sarwate claim {_cells(pts, 'claimed')})"
    return (f"| {NAMES.get(data, data)} | {series} | {budget} | {_cells(pts, 'error')} | {guar} "
            f"| {_cells(pts, 'audited_epsilon') or 'not audited'} | {_cells(pts, 'audited_beyond')} "
            f"| {pts[0]['audit']} | {_cells(pts, 'audited_upper')} |")


def table(rows: list[dict[str, str]], topology: str = "ring") -> str:
    """The markdown table of one graph: a line per dataset and protocol, its four budgets (D-DP-PM: its
    four noise scales) as ``a / b / c / d`` in each cell; capePCA's guarantee cell adds Imtiaz and
    Sarwate's claim."""
    lines = [HEADER]
    for data in dict.fromkeys(r["dataset"] for r in rows):
        for series in SERIES:
            pts = [r for r in rows if r["dataset"] == data and r["topology"] == topology
                   and r["series"] == series]
            if pts:
                lines.append(_line(data, series, pts))
    return "\n".join(lines)


def _pick(rows: list[dict[str, str]], data: str, topology: str, series: str,
          budget: str) -> dict[str, str]:
    (row,) = [r for r in rows if r["dataset"] == data and r["topology"] == topology
              and r["series"] == series and r["budget"] == budget]
    return row


def _and(parts: list[str]) -> str:
    return ", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1 else parts[0]


def _each(rows: list[dict[str, str]], topology: str, series: str, budget: str, key: str) -> str:
    """``a (Wine), b (Breast Cancer) and c (Diabetes)``: one value per dataset (``a on every dataset``
    when they agree)."""
    datasets = list(dict.fromkeys(r["dataset"] for r in rows))
    values = [_pick(rows, d, topology, series, budget)[key] for d in datasets]
    if len(set(values)) == 1 and len(values) > 1:
        return f"{values[0]} on every dataset"
    return _and([f"{v} ({NAMES.get(d, d)})" for v, d in zip(values, datasets, strict=True)])


def _dd_floor(rows: list[dict[str, str]], topology: str) -> tuple[str, str, str]:
    """D-DP-PM on one graph: the smallest audited epsilon of each dataset over its noise scales, and
    the range of its errors."""
    dd = [r for r in rows if r["topology"] == topology and r["series"] == "D-DP-PM"]
    parts = []
    for d in dict.fromkeys(r["dataset"] for r in dd):
        low = min((r for r in dd if r["dataset"] == d), key=lambda r: float(r["audited_epsilon"]))
        parts.append(f"{low['audited_epsilon']} on {NAMES.get(d, d)}")
    errs = sorted(float(r["error"]) for r in dd)
    return _and(parts), fmt(errs[0]), fmt(errs[-1])


def _dd_upper(rows: list[dict[str, str]], topology: str) -> str:
    """D-DP-PM on one graph: per dataset, the smallest certified upper bound over its noise scales
    (``inf`` with the reason's first clause when it is infinite at every scale)."""
    dd = [r for r in rows if r["topology"] == topology and r["series"] == "D-DP-PM"]
    parts = []
    for d in dict.fromkeys(r["dataset"] for r in dd):
        low = min((r for r in dd if r["dataset"] == d), key=lambda r: float(r["audited_upper"]))
        why = low["upper_reason"].split(":")[0]
        parts.append(f"inf on {NAMES.get(d, d)} ({why})" if low["audited_upper"] == "inf"
                     else f"{low['audited_upper']} on {NAMES.get(d, d)}")
    return _and(parts)


def conclusion(rows: list[dict[str, str]], topology: str = "ring") -> str:
    """A reading of the table on one graph, every number taken from ``rows``."""
    budgets = [r["budget"] for r in rows if r["series"] == "LDP"]
    lo, hi = budgets[0], max(budgets, key=float)
    first = rows[0]["dataset"]
    cape_lo = _pick(rows, first, topology, "capepca", lo)
    floors, e_lo, e_hi = _dd_floor(rows, topology)
    return " ".join([
        f"On the {topology} at budget {hi}, capePCA's one-shot release reaches error "
        f"{_each(rows, topology, 'capepca', hi, 'error')}; the power method of Nicolas et al. "
        f"(ppm-federated) "
        f"{_each(rows, topology, 'ppm-federated', hi, 'error')}; LDP "
        f"{_each(rows, topology, 'LDP', hi, 'error')}.",
        f"capePCA's guarantee here is the aggregator's joint view: at budget {lo} Imtiaz and "
        f"Sarwate's own per-site "
        f"claim would print {cape_lo['claimed']} on {NAMES.get(first, first)}, but the aggregator, "
        f"which sees every release and knows its own noise, gets {cape_lo['guaranteed_epsilon']} "
        f"(audited {cape_lo['audited_epsilon']}).",
        f"capePCA on the gossip graph keeps Imtiaz and Sarwate's per-site guarantee "
        f"({_pick(rows, first, topology, 'capepca-gossip', hi)['guaranteed_epsilon']} at budget "
        f"{hi}; agent 0's error {_each(rows, topology, 'capepca-gossip', hi, 'error')}), but a "
        f"neighbour, which hears every round and knows its own edge draws, learns "
        f"{_each(rows, topology, 'capepca-gossip', hi, 'audited_beyond')}.",
        f"The floor-free D-DP-PM stays under its guarantee "
        f"{_pick(rows, first, topology, 'ddppm-floorfree', hi)['guaranteed_epsilon']} (audited "
        f"{_each(rows, topology, 'ddppm-floorfree', hi, 'audited_epsilon')}, lower estimates) but "
        f"its released left vector is drowned: error "
        f"{_each(rows, topology, 'ddppm-floorfree', hi, 'error')}.",
        f"D-DP-PM, with no guarantee, leaks to an eavesdropper on every edge far beyond every budget "
        f"here at all four noise scales: its audited epsilon (the RDP conversion of the worst neighbour "
        f"found at the point or at another point of the sweep, above that neighbour's exact epsilon: "
        f"neither a lower estimate nor a bound) is at its smallest {floors} (error "
        f"{e_lo} to {e_hi}); its certified upper bound (every neighbour, every view without the "
        f"target; [upper-bound.md](upper-bound.md)) is at its smallest {_dd_upper(rows, topology)}.",
    ])


def page(rows: list[dict[str, str]]) -> str:
    """Every graph's table, headed by its name, then the ring's reading."""
    parts = [f"**{t}**\n\n{table(rows, t)}" for t in scenario()["network"]["topology"]]
    return "\n\n".join(parts) + "\n\n" + conclusion(rows)


def timing(folder: Path = RESULTS) -> dict:
    """The stored timing.json."""
    return json.loads((folder / "timing.json").read_text(encoding="utf-8"))


def _clock(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    return f"{minutes} min {secs} s"


def time_sentence(measured: dict, run: dict) -> str:
    """The run time as the README and the page print it: ``/usr/bin/time -v``'s wall clock and peak
    memory, the load before and after, and the run's own ``seconds`` (timing.json)."""
    workers = int(run["workers"])
    return (f"The whole scenario ran in {measured['wall']} wall time (`{COMMAND}`, {workers} "
            f"worker{'s' if workers != 1 else ''}, measured by `/usr/bin/time -v`: {measured['cpu']} of "
            f"CPU, {measured['cpu_percent']} % of a core, peak memory {measured['max_rss_mb']} MB; the "
            f"run's own clock, `seconds` in the stored timing.json: {_clock(float(run['seconds']))}) on "
            f"this shared 2-core machine, with a 1-minute load average of {measured['load_before']} "
            f"when it started and {measured['load_after']} when it ended (other jobs ran beside it).")


def readme_time_cell(measured: dict, run: dict) -> str:
    """The time cell of the README's table of shipped scenarios."""
    workers = int(run["workers"])
    return (f"| {measured['wall']} ({workers} worker{'s' if workers != 1 else ''}, load average "
            f"{measured['load_before']} when it started, {measured['load_after']} when it ended) |")


def _ddppm_worst(rows: list[dict[str, str]]) -> dict[int, dict[str, str]]:
    """Per D-DP-PM point: its worst pair's row of leakage.csv (the first of the largest epsilon)."""
    worst: dict[int, dict[str, str]] = {}
    for r in rows:
        p = int(r["point"])
        if p not in worst or float(r["epsilon"]) > float(worst[p]["epsilon"]):
            worst[p] = r
    return worst


def _moved(rows: list[dict[str, str]]) -> list[float]:
    """The values of the finite D-DP-PM points whose worst neighbour was found at another point, sorted."""
    return sorted(float(r["epsilon"]) for r in _ddppm_worst(rows).values()
                  if math.isfinite(float(r["epsilon"])) and r["found_at_point"])


def sweep_sentence(rows: list[dict[str, str]], cap: float) -> str:
    """docs/protocol-frontier.md, Section 4: what the pass over the sweep's neighbours changed at the
    finite D-DP-PM points (every number from leakage.csv): at how many the worst neighbour was found at
    another point (``found_at_point``) and the range of the values printed there; at how many some pairs
    kept their own search's value and how many of those all stopped at the cap; at how many the pass
    raised every pair."""
    by_point: dict[int, list[dict[str, str]]] = {}
    for r in rows:
        by_point.setdefault(int(r["point"]), []).append(r)
    worst = _ddppm_worst(rows)
    finite = [p for p in by_point if math.isfinite(float(worst[p]["epsilon"]))]
    moved = _moved(rows)
    own = {p: [r for r in by_point[p] if not r["found_at_point"]] for p in finite}
    kept = [p for p in finite if own[p]]
    capped = [p for p in kept if all(r.get("stopped_at_cap") == "True" and float(r["epsilon"]) == cap
                                     for r in own[p])]
    at_least = sum(worst[p].get("stopped_at_cap") == "True" for p in finite)
    return (f"at {len(moved)} of the {len(finite)} finite points the worst neighbour was found at another "
            f"point, so the table prints its value ({fmt(moved[0])} to {fmt(moved[-1])}; the column "
            f"`found_at_point` of `leakage.csv` names where each was found), and {at_least} print \"at "
            f"least {cap:g}\". At {len(capped)} of the {len(kept)} points where some pairs kept their own "
            f"search's value every such pair stopped at the cap (without the pass the table would print "
            f"\"at least {cap:g}\" there); at the other {len(finite) - len(kept)} the pass raised every pair")


# --- the tests ---------------------------------------------------------------------------------------
def test_the_stored_results_are_the_scenario_s_and_only_the_kept_files():
    config = json.loads((RESULTS / "config.resolved.json").read_text(encoding="utf-8"))
    assert config["name"] == "protocol-frontier" and config["repeats"] == scenario()["repeats"]
    assert config["privacy"]["view"] == "eavesdropper" and config["privacy"]["methods"] == ["rdp"]
    assert config["privacy"]["delta"] == 1e-5
    assert sorted(p.relative_to(RESULTS).as_posix() for p in RESULTS.rglob("*") if p.is_file()) == list(KEPT)
    assert {r["method"] for r in leakage_rows()} == {"rdp"}
    assert {r["view"] for r in leakage_rows()} == {"eavesdropper"}


def test_the_stored_frontier_has_every_protocol_dataset_graph_and_budget():
    sc, rows = scenario(), frontier_rows()
    assert {r["series"] for r in rows} == set(SERIES)
    assert [*dict.fromkeys(r["dataset"] for r in rows)] == sc["data"]["source"]
    budgets = [f"{e:.3g}" for e in sc["ppm"]["epsilon"]]
    scales = [f"{n['scale']:.3g}" for n in sc["protocol"]["noise"]]
    for data in sc["data"]["source"]:
        for topo in sc["network"]["topology"]:
            here = [r for r in rows if r["dataset"] == data and r["topology"] == topo]
            for name in set(SERIES) - {"D-DP-PM"}:
                assert [r["budget"] for r in here if r["series"] == name] == budgets, (data, topo, name)
            assert [r["noise_scale"] for r in here if r["series"] == "D-DP-PM"] == scales
    for topo in sc["network"]["topology"]:  # a line per dataset and protocol
        assert table(rows, topo).count("\n") == 1 + len(sc["data"]["source"]) * len(SERIES)


def test_the_stored_audits_respect_the_guarantees_they_audit_and_say_what_they_are():
    cap = epsilon_cap()
    for r in frontier_rows():
        if r["audit"] == AT_LEAST:  # a D-DP-PM point whose search stopped at the cap
            assert r["series"] == "D-DP-PM" and float(r["audited_epsilon"]) == cap, r
        else:
            assert r["audit"] == AUDIT[r["series"]], r
        if r["series"] in ("D-DP-PM", "LDP"):
            assert r["guaranteed_epsilon"] == "" if r["series"] == "D-DP-PM" else r["audited_epsilon"] == ""
            continue
        assert r["audited_upper"] == "" and r["upper_reason"] == ""  # only D-DP-PM carries a bound
        assert float(r["audited_epsilon"]) <= float(r["guaranteed_epsilon"]) * (1 + 1e-2), r
        if r["series"] in ("capepca-gossip", "ppm-gossip"):  # a neighbour / one agent sees more
            assert float(r["audited_beyond"]) > float(r["guaranteed_epsilon"]), r
        if r["series"] == "capepca":  # Imtiaz and Sarwate's per-site claim understates the aggregator's view
            assert float(r["claimed"]) < float(r["guaranteed_epsilon"]), r
    searched = {s for s, kind in AUDIT.items() if kind == "lower estimate"}
    assert searched == {"ddppm-floorfree", "ppm (improved, row-replacement)", "ppm-federated"}
    # D-DP-PM's audit uses the RDP conversion: above the exact value of the neighbour found, so it is
    # neither a lower estimate nor a bound, and the table says so
    assert "neither a lower estimate nor a bound" in AUDIT["D-DP-PM"]


def test_every_ddppm_point_lies_below_its_certified_bound():
    """Each target's bound is one number whatever the observer; a point's printed bound is the largest
    over its targets, at or above its audited epsilon (the RDP conversion of a neighbour's exact value,
    itself below the bound), infinite exactly where a reason says why."""
    rows = leakage_rows()
    per_target: dict[tuple[str, str], set[str]] = {}
    for r in rows:
        per_target.setdefault((r["point"], r["target"]), set()).add(r["epsilon_upper"])
    assert all(len(v) == 1 for v in per_target.values())
    points = results_folder().points
    assert {int(r["point"]) for r in rows} == {
        p for p, first in enumerate(points) if first["protocol_kind"] == "ddppm"}
    for r in frontier_rows():
        if r["series"] == "D-DP-PM":
            assert r["audited_upper"] and float(r["audited_epsilon"]) <= float(r["audited_upper"]), r
            assert (r["audited_upper"] == "inf") == bool(r["upper_reason"]), r


def test_frontier_rounds_a_guarantee_up():
    assert fmt_upper(0.74163701) == "0.742" and fmt_upper(0.742) == "0.742"
    assert fmt_upper(8.5600001) == "8.57"
    assert fmt_upper(math.nan) == "" and fmt_upper(math.inf) == "inf"


def test_the_stored_capepca_row_is_what_the_code_computes():
    """Recompute capepca on the ring at budget 1 for the first dataset (3 repeats, under a second)."""
    from dpgossip.data import load_dataset
    from dpgossip.protocols.cape.guarantee import calibrate_cape_noise, cape_guarantee
    from dpgossip.protocols.cape.star import CapeParams, run_cape
    from dpgossip.protocols.interface import exact_subspace
    from dpgossip.protocols.metrics import subspace_distance

    sc = scenario()
    source = sc["data"]["source"][0]
    (row,) = [r for r in frontier_rows() if r["series"] == "capepca" and r["budget"] == "1"
              and r["topology"] == "ring" and r["dataset"] == source]
    m = sc["network"]["agents"]
    data = load_dataset(source, agents=m)
    params = CapeParams(k=1, noise_multiplier=calibrate_cape_noise(1.0, 1e-5, m, view="aggregator"))
    truth = exact_subspace(data.X, 1, "right")
    err = [subspace_distance(truth, run_cape(data, params, np.random.SeedSequence(
        sc["seed"], spawn_key=(k,))).components) for k in range(sc["repeats"])]
    g = cape_guarantee(data, params, 1e-5)
    assert (row["error"], row["guaranteed_epsilon"], row["claimed"]) == (
        fmt(float(np.mean(err))), fmt_upper(g.epsilon_aggregator), fmt(g.epsilon_paper))
    assert float(row["guaranteed_epsilon"]) >= g.epsilon_aggregator  # a guarantee printed rounded up


def test_the_stored_bounds_of_one_ddppm_point_are_what_the_code_certifies():
    """Every target's certified bound of the first D-DP-PM point (Wine, the ring, the smallest noise),
    recomputed from the shipped scenario (about a second)."""
    from dpgossip.protocols.ddppm.audit import upper_bounds
    from dpgossip.scenario import load_scenario
    from dpgossip.scenario.problem import build_structure, resolve_problem

    sc = load_scenario(SCENARIO)
    point = next(p for p in sc.points() if p.config["protocol"]["kind"] == "ddppm")
    problem = resolve_problem(point.config, build_structure(point.config, sc.base))
    priv = point.config["privacy"]
    bounds = upper_bounds(problem.data, problem.network, problem.params, priv["delta"], priv["neighbours"])
    stored = {int(r["target"]): (float(r["epsilon_upper"]), r["upper_reason"]) for r in leakage_rows()
              if int(r["point"]) == point.index}
    assert stored.keys() == bounds.keys()
    for j, b in bounds.items():
        assert stored[j][0] == pytest.approx(b.epsilon, rel=1e-12, abs=0) and stored[j][1] == (b.reason or "")


def test_the_pages_print_the_stored_tables_and_reading():
    rows = frontier_rows()
    results = _flat((ROOT / "docs" / "results.md").read_text(encoding="utf-8"))
    assert _flat(table(rows, "ring")) in results
    assert _flat(conclusion(rows, "ring")) in results
    assert COMMAND in results
    text = _flat((ROOT / "docs" / "protocol-frontier.md").read_text(encoding="utf-8"))
    assert _flat(page(rows)) in text
    cap = epsilon_cap()
    assert _flat(sweep_sentence(leakage_rows(), cap)) in text
    for where in (results, text):  # both show the stored plot
        assert "results/protocol-frontier/plots/privacy_utility.png" in where


def test_the_readme_and_audit_search_quote_the_stored_range_of_the_raised_points():
    """README.md and docs/audit-search.md: the range of the values the sweep's neighbours gave the finite
    D-DP-PM points (every one of them: Breast Cancer and Diabetes)."""
    rows = leakage_rows()
    moved = _moved(rows)
    span = f"{fmt(moved[0])} to {fmt(moved[-1])}"
    finite = [r for r in _ddppm_worst(rows).values() if math.isfinite(float(r["epsilon"]))]
    assert len(moved) == len(finite) == 24
    assert f"now print {span}" in _flat((ROOT / "README.md").read_text(encoding="utf-8"))
    assert f"now prints a value found at another noise scale or graph ({span})" in _flat(
        (ROOT / "docs" / "audit-search.md").read_text(encoding="utf-8"))


@pytest.mark.parametrize("where", ["README.md", "docs/protocol-frontier.md", "docs/results.md"])
def test_the_run_time_quoted_is_the_stored_one(where):
    """The run's time as measured (:data:`MEASURED`) and its own seconds (the stored timing.json)."""
    run = timing()
    text = (ROOT / where).read_text(encoding="utf-8")
    assert _flat(time_sentence(MEASURED, run)) in _flat(text)
    if where == "README.md":  # the table of shipped scenarios
        (line,) = [x for x in text.splitlines() if x.startswith("| `protocol-frontier.toml` |")]
        assert line.endswith(readme_time_cell(MEASURED, run))
    minutes, seconds = (int(x) for x in MEASURED["wall"].replace(" min ", " ").rstrip(" s").split())
    assert float(run["seconds"]) <= 60 * minutes + seconds + 1 and run["computed"] == 252


@pytest.mark.slow
def test_the_stored_tables_are_what_the_command_writes(tmp_path):
    """The whole run again (no plots): runs.csv and leakage.csv byte for byte (18 min 33 s on one
    process, load average about 4)."""
    assert_run_writes_stored(SCENARIO, tmp_path / "out", RESULTS, ("runs.csv", "leakage.csv"))
