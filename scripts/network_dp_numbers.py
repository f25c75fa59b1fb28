"""The numbers of docs/network-dp-scenario.md, from a results folder of scenarios/network-dp-gossip.toml.

    dpgossip run scenarios/network-dp-gossip.toml
    python scripts/network_dp_numbers.py results/network-dp-gossip
        # writes docs/numbers/network-dp.csv and docs/img/network-dp.png, prints the doc's table

    python scripts/network_dp_numbers.py --print     # the table of the stored CSV

Per topology, at graph distance 1, 2 and the largest distance audited: the mean exact Renyi divergence
(alpha = 2) over the audited (observer, target) pairs at that distance, the mean of the published bound
that applies (Muffliato's per-message sum, or MFDL's absolute-value bound) and of the per-pair ratio
exact / bound, with the number of pairs whose bound is below the exact value (at that distance and over
all distances).  The means are dpgossip.report.network_dp.distance_summary's, the function behind the
plot.  tests/test_docs_network_dp.py recomputes rows of the CSV and checks the doc's table.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NUMBERS = ROOT / "docs" / "numbers" / "network-dp.csv"
PLOT = ROOT / "docs" / "img" / "network-dp.png"
COLUMNS = ("topology", "rounds", "bound", "at", "distance", "pairs", "exact", "bound_value", "ratio",
           "flagged", "flagged_all", "pairs_all")
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
        for at, d in (("1", 1), ("2", 2), ("max", far)):
            p = next((p for p in mine if p.distance == d), None)
            if p is None or (at != "max" and d == far and far <= 2):
                continue
            out.append({"topology": topology, "rounds": str(rounds[topology]), "bound": p.source,
                        "at": at, "distance": str(d), "pairs": str(p.pairs), "exact": _fmt(p.exact),
                        "bound_value": _fmt(p.bound), "ratio": _fmt(p.ratio),
                        "flagged": str(p.flagged), "flagged_all": str(flagged_all),
                        "pairs_all": str(pairs_all)})
    return out


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


def read_numbers(path: Path = NUMBERS) -> list[dict[str, str]]:
    """The stored summary rows."""
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def write(folder: Path) -> list[dict[str, str]]:
    """Write the CSV and the plot from a results folder; return the rows."""
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
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", nargs="?", type=Path, help="results folder of the scenario")
    parser.add_argument("--print", action="store_true", help="print the table of the stored CSV")
    args = parser.parse_args()
    if args.print or args.folder is None:
        print(table(read_numbers()))
        return
    print(table(write(args.folder)))


if __name__ == "__main__":
    main()
