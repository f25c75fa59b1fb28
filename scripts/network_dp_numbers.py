"""The numbers of docs/network-dp-scenario.md, from a results folder of scenarios/network-dp-gossip.toml.

    dpgossip run scenarios/network-dp-gossip.toml
    python scripts/network_dp_numbers.py results/network-dp-gossip
        # writes docs/numbers/network-dp.csv and docs/img/network-dp.png, prints the doc's table

    python scripts/network_dp_numbers.py --print     # the table of the stored CSV
    python scripts/network_dp_numbers.py --check     # rerun the scenario (minutes) and compare with the CSV

With ``--time-log`` (the run's ``/usr/bin/time -v`` output), ``--load-before`` and ``--load-after`` the
run's measurement is stored too (docs/numbers/network-dp-run.json, printed by the page and the README).

Per topology, at graph distance 1, 2 and the largest distance audited: the mean exact Renyi divergence
(alpha = 2) over the audited (observer, target) pairs at that distance, the mean of the published bound
that applies (Muffliato's per-message sum, or MFDL's absolute-value bound) and of the per-pair ratio
exact / bound, with the number of pairs whose bound is below the exact value (at that distance and over
all distances); per topology also the smallest distance with such a pair and the range of the exact
values over every audited pair.  The means are dpgossip.report.network_dp.distance_summary's, the
function behind the plot.  tests/test_docs_network_dp.py recomputes rows of the CSV and checks the
doc's table.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NUMBERS = ROOT / "docs" / "numbers" / "network-dp.csv"
RUN = ROOT / "docs" / "numbers" / "network-dp-run.json"
SCENARIO = ROOT / "scenarios" / "network-dp-gossip.toml"
PLOT = ROOT / "docs" / "img" / "network-dp.png"
COLUMNS = ("topology", "rounds", "bound", "at", "distance", "pairs", "exact", "bound_value", "ratio",
           "flagged", "flagged_all", "pairs_all", "first_below", "exact_min", "exact_max")
HEADER = ("| topology | T | bound | distance | pairs | exact | bound value | exact / bound | "
          "bound < exact |\n|---|---|---|---|---|---|---|---|---|")


def _fmt(v: float) -> str:
    if math.isnan(v):
        return ""
    if math.isinf(v):
        return "inf"
    return f"{v:.4g}"


def summary_rows(leakage: list[dict[str, str]], graphs: list[dict]) -> list[dict[str, str]]:
    """Rows of docs/numbers/network-dp.csv (module docstring) from ``leakage.csv`` and the
    ``graphs`` of ``summary.json``."""
    from dpgossip.report.network_dp import distance_summary

    points = distance_summary(leakage)
    rounds = {g["label"]: g["rounds"] for g in graphs}
    out = []
    for topology in dict.fromkeys(p.topology for p in points):
        mine = [p for p in points if p.topology == topology]
        far = max(p.distance for p in mine)
        flagged_all, pairs_all = sum(p.flagged for p in mine), sum(p.pairs for p in mine)
        whole = _whole(leakage, topology, mine[0].source)
        for at, d in (("1", 1), ("2", 2), ("max", far)):
            p = next((p for p in mine if p.distance == d), None)
            if p is None or (at != "max" and d == far and far <= 2):
                continue
            out.append({"topology": topology, "rounds": str(rounds[topology]), "bound": p.source,
                        "at": at, "distance": str(d), "pairs": str(p.pairs), "exact": _fmt(p.exact),
                        "bound_value": _fmt(p.bound), "ratio": _fmt(p.ratio),
                        "flagged": str(p.flagged), "flagged_all": str(flagged_all),
                        "pairs_all": str(pairs_all), **whole})
    return out


def _whole(leakage: list[dict[str, str]], topology: str, source: str) -> dict[str, str]:
    """Over every audited pair of a topology: the smallest distance where the bound is below the exact
    value (empty if none) and the smallest and largest exact value."""
    mine = [r for r in leakage if str(r["topology"]) == topology and int(r["distance"]) >= 0]
    below = [int(r["distance"]) for r in mine if str(r.get(f"{source}_below_exact")) == "True"]
    exact = [float(r["rdp"]) for r in mine]
    return {"first_below": str(min(below)) if below else "", "exact_min": _fmt(min(exact)),
            "exact_max": _fmt(max(exact))}


def compute(scenario: Path = SCENARIO) -> list[dict[str, str]]:
    """Run the scenario with the current code (into a temporary folder; minutes) and summarise it."""
    import tempfile

    from dpgossip.scenario.network_dp import run_network_dp
    from dpgossip.scenario.network_dp_config import load_network_dp
    from dpgossip.scenario.store import read_csv

    with tempfile.TemporaryDirectory(prefix="network-dp-") as tmp:
        folder = run_network_dp(load_network_dp(scenario), Path(tmp) / "run", quiet=True)
        summary = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
        return summary_rows(read_csv(folder / "leakage.csv"), summary["graphs"])


def table(rows: list[dict[str, str]]) -> str:
    """The doc's markdown table of the summary rows."""
    lines = [HEADER]
    for r in rows:
        lines.append(f"| {r['topology']} | {r['rounds']} | {r['bound']} | {r['distance']} | "
                     f"{r['pairs']} | {r['exact']} | {r['bound_value']} | {r['ratio']} | "
                     f"{r['flagged']} of {r['pairs']} |")
    return "\n".join(lines)


def _at(rows: list[dict[str, str]], topology: str, at: str) -> dict[str, str]:
    return next(r for r in rows if r["topology"] == topology and r["at"] == at)


def reading(rows: list[dict[str, str]]) -> str:
    """The README's reading of the summary, every number taken from ``rows``."""
    muff = [t for t in dict.fromkeys(r["topology"] for r in rows)
            if _at(rows, t, "1")["bound"] == "muffliato"]
    counts = ", ".join(f"{_at(rows, t, '1')['flagged_all']} of {_at(rows, t, '1')['pairs_all']} on "
                       f"{t.replace('_', ' ')}" for t in muff)
    hc, grid, rgg = _at(rows, "hypercube", "max"), _at(rows, "grid", "max"), \
        _at(rows, "random_geometric", "max")
    mf1, mf2 = _at(rows, "mfdl-erdos_renyi", "1"), _at(rows, "mfdl-erdos_renyi", "2")
    return " ".join([
        f"Muffliato's per-message sum is an upper bound only near the target: a few hops away it falls "
        f"below the exact leakage on every topology (audited pairs where it does: {counts}).",
        f"At the antipode of the hypercube it is {hc['ratio']} times too small ({hc['bound_value']} "
        f"against {hc['exact']}), and at distance {grid['distance']} on the grid it reports "
        f"{grid['bound_value']} where the exact value is {grid['exact']}.",
        f"With one noisy value per agent and T as large as their rule asks, distance protects little: "
        f"every message is a function of the same noisy vector, and the farthest observers audited on "
        f"the random geometric graph and the grid still have {rgg['exact']} and {grid['exact']} "
        f"(local DP, the agent's own noisy value, is 1).",
        f"MFDL's absolute-value bound is sound on its setting: next to the attacker the exact "
        f"supremum is {mf1['exact']} against their {mf1['bound_value']} (exact / bound = "
        f"{mf1['ratio']}), and from distance 2 on the two agree ({mf2['exact']} and "
        f"{mf2['bound_value']}).",
    ])


def page_counts(rows: list[dict[str, str]]) -> str:
    """docs/network-dp-scenario.md: the pairs below the bound over every audited distance."""
    per = {r["topology"]: r for r in rows if r["at"] == "1"}
    muff = [r for r in per.values() if r["bound"] == "muffliato"]
    counts = ", ".join(f"{r['flagged_all']} of the {r['pairs_all']} {r['topology'].replace('_', ' ')} pairs"
                       for r in muff)
    mfdl = [r for r in per.values() if r["bound"] == "mfdl"]
    never = all(r["flagged_all"] == "0" for r in mfdl)
    return (f"Over every audited distance the Muffliato sum is below the exact value for {counts} (the "
            f"column `flagged_all` of the CSV); MFDL's bound is {'never' if never else 'sometimes'} below.")


def findings(rows: list[dict[str, str]]) -> str:
    """docs/network-dp-scenario.md, "What it finds": the first bullet, every number from ``rows``."""
    muff = [t for t in dict.fromkeys(r["topology"] for r in rows)
            if _at(rows, t, "1")["bound"] == "muffliato"]
    first = ", ".join(f"{_at(rows, t, '1')['first_below']} on {t.replace('_', ' ')}" for t in muff)
    hc, er = _at(rows, "hypercube", "max"), _at(rows, "erdos_renyi", "max")
    rgg, grid = _at(rows, "random_geometric", "max"), _at(rows, "grid", "max")
    return (f"Muffliato's per-message sum is an upper bound near the target only. On every topology it "
            f"falls below the exact leakage a few hops away (from distance {first}), and the gap grows "
            f"with the distance: {float(hc['ratio']):.3g} times at the hypercube's antipode, "
            f"{float(er['ratio']):.3g} times at distance {er['distance']} of the Erdos-Renyi graph, and at "
            f"the far end of the random geometric graph and of the grid it reports {rgg['bound_value']} "
            f"and {grid['bound_value']} where the exact value is {rgg['exact']} and {grid['exact']}. The "
            f"exact leakage stays between {_at(rows, 'grid', '1')['exact_min']} and "
            f"{_at(rows, 'grid', '1')['exact_max']} over the grid's audited observers.")


DECOR = ROOT / "scenarios" / "network-dp-decor.toml"


def decor_table(scenario: Path = DECOR) -> str:
    """docs/network-dp-scenario.md, Section 4: the DECOR scenario's mean exact Renyi value by distance
    from the observer, one column per graph (runs the scenario, about a second)."""
    import tempfile

    from dpgossip.report.network_dp import distance_summary
    from dpgossip.scenario.network_dp import run_network_dp
    from dpgossip.scenario.network_dp_config import load_network_dp
    from dpgossip.scenario.store import read_csv

    config = load_network_dp(scenario)
    with tempfile.TemporaryDirectory(prefix="network-dp-decor-") as tmp:
        folder = run_network_dp(config, Path(tmp) / "run", quiet=True)
        points = distance_summary(read_csv(folder / "leakage.csv"))
    labels = [g.label for g in config.graphs]
    head = " | ".join(f"{g.label} (`sigma_cor = {g.sigma_cor:g}`)" for g in config.graphs)
    lines = [f"| distance | pairs | {head} |", "|---:|---:|" + "---|" * len(labels)]
    for d in sorted({p.distance for p in points}):
        at = {p.topology: p for p in points if p.distance == d}
        lines.append(f"| {d} | {at[labels[0]].pairs} | "
                     + " | ".join(_fmt(at[label].exact) for label in labels) + " |")
    return "\n".join(lines)


def run_time(path: Path = RUN) -> dict[str, object]:
    """The stored measurement of the run the numbers come from."""
    return json.loads(path.read_text(encoding="utf-8"))


def _minutes(seconds: float) -> str:
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest} s"


def time_sentence(run: dict[str, object]) -> str:
    """docs/network-dp-scenario.md: the measured run, from the stored measurement."""
    graphs = run["graphs"]
    per = ", ".join(f"{g['seconds']:.1f} s for {g['label']} ({g['observers']} observer"
                    f"{'s' if g['observers'] != 1 else ''}, {g['pairs']} pairs)" for g in graphs)
    return (f"The run took {_minutes(float(run['wall_seconds']))} of wall time ({run['cpu_seconds']:.0f} s "
            f"of CPU; peak memory {run['max_rss_mb']} MB; 1-minute load average {run['load_before']} when "
            f"it started and {run['load_after']} when it ended): per graph (`summary.json`) {per}.")


def readme_time(run: dict[str, object]) -> str:
    """The README's cell of the shipped-scenario table."""
    return (f"{_minutes(float(run['wall_seconds']))} (1 worker, load average {run['load_before']} to "
            f"{run['load_after']})")


def read_numbers(path: Path = NUMBERS) -> list[dict[str, str]]:
    """The stored summary rows."""
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _time_log(path: Path) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds and peak memory (MB) from a ``/usr/bin/time -v`` log."""
    text = path.read_text(encoding="utf-8")

    def field(name: str) -> str:
        return next(line.split(": ", 1)[1].strip() for line in text.splitlines()
                    if line.strip().startswith(name))

    parts = [float(x) for x in field("Elapsed (wall clock) time").split(":")]
    wall = sum(v * 60 ** i for i, v in enumerate(reversed(parts)))
    cpu = float(field("User time (seconds)")) + float(field("System time (seconds)"))
    return wall, cpu, round(int(field("Maximum resident set size (kbytes)")) / 1000)


def write(folder: Path, time_log: Path | None = None, load_before: str = "",
          load_after: str = "") -> list[dict[str, str]]:
    """Write the CSV and the plot (and the run's measurement, with ``time_log``) from a results folder;
    return the rows."""
    from dpgossip.report.network_dp import plot_network_dp
    from dpgossip.scenario.store import read_csv

    leakage = read_csv(folder / "leakage.csv")
    summary = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
    rows = summary_rows(leakage, summary["graphs"])
    NUMBERS.parent.mkdir(parents=True, exist_ok=True)
    with open(NUMBERS, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=COLUMNS, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    plot_network_dp(leakage, PLOT, alpha=float(summary["alpha"]))
    if time_log is not None:
        wall, cpu, peak = _time_log(time_log)
        graphs = [{k: g[k] for k in ("label", "observers", "pairs", "seconds")} for g in summary["graphs"]]
        RUN.write_text(json.dumps({
            "command": "dpgossip run scenarios/network-dp-gossip.toml --out DIR", "wall_seconds": wall,
            "cpu_seconds": cpu, "max_rss_mb": peak, "load_before": load_before, "load_after": load_after,
            "graphs": graphs}, indent=1) + "\n", encoding="utf-8")
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", nargs="?", type=Path, help="results folder of the scenario")
    parser.add_argument("--print", action="store_true", help="print the table of the stored CSV")
    parser.add_argument("--check", action="store_true",
                        help="rerun the scenario with the current code (minutes) and compare with the CSV")
    parser.add_argument("--decor", action="store_true",
                        help="run scenarios/network-dp-decor.toml (a second) and print its table")
    parser.add_argument("--time-log", type=Path, help="the run's /usr/bin/time -v output")
    parser.add_argument("--load-before", default="", help="1-minute load average when the run started")
    parser.add_argument("--load-after", default="", help="1-minute load average when the run ended")
    args = parser.parse_args()
    if args.decor:
        print(decor_table())
        return 0
    if args.check:
        if compute() != read_numbers():
            print("docs/numbers/network-dp.csv is stale: rerun the scenario and this script",
                  file=sys.stderr)
            return 1
        print("docs/numbers/network-dp.csv matches the code")
        return 0
    if args.print or args.folder is None:
        print(table(read_numbers()))
        return 0
    print(table(write(args.folder, args.time_log, args.load_before, args.load_after)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
