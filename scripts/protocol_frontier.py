"""The protocol frontier (issue 13), from a results folder of scenarios/protocol-frontier.toml.

    dpgossip run scenarios/protocol-frontier.toml --out /tmp/frontier
    python scripts/protocol_frontier.py /tmp/frontier
        # writes docs/numbers/protocol-frontier.csv, copies plots/privacy_utility.png to
        # docs/img/protocol-frontier.png and prints the table and its reading

    python scripts/protocol_frontier.py --print     # the table and sentences of the stored numbers

Every number is a mean over the scenario's repeats, computed by dpgossip.report.frontier.frontier_table
(the function that draws plots/privacy_utility.png); ``claimed`` is capePCA's claimed_epsilon (004's own
per-site claim) from runs.csv. tests/test_docs_numbers_frontier.py checks the stored CSV and re-runs one
capepca point.
"""

from __future__ import annotations

import argparse
import csv
import math
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NUMBERS = ROOT / "docs" / "numbers" / "protocol-frontier.csv"
IMAGE = ROOT / "docs" / "img" / "protocol-frontier.png"
COLUMNS = ("topology", "series", "budget", "noise_scale", "error", "guaranteed_epsilon", "claimed",
           "audited_epsilon", "audited_beyond")
HEADER = ("| graph | protocol | budget epsilon | error | guaranteed epsilon | audited epsilon (what the "
          "guarantee covers) | audited beyond its scope |\n|---|---|---|---|---|---|---|")


def _fmt(v: float, digits: int = 3) -> str:
    if math.isnan(v):
        return ""
    if math.isinf(v):
        return "inf"
    return f"{v:.{digits}g}"


def _claimed(res, point: int) -> float:
    vals = [float(r["claimed_epsilon"]) for r in res.runs
            if int(r["point"]) == point and r.get("claimed_epsilon") is not None]
    return sum(vals) / len(vals) if vals else math.nan


def frontier_rows(folder: Path) -> list[dict[str, str]]:
    """One row per point (and per LDP budget and graph): the numbers of the privacy-utility plot."""
    from dpgossip.report.frontier import frontier_table
    from dpgossip.report.tables import ResultsFolder

    res = ResultsFolder.load(folder)
    rows = []
    for f in frontier_table(res):
        axes = res.axis_values(f.point) if f.point >= 0 else {}
        noise = axes.get("protocol.noise") or {}
        budget = axes.get("ppm.epsilon") if f.series != "LDP" else f.guaranteed_epsilon
        dd = f.series == "D-DP-PM"
        rows.append({"topology": f.topology, "series": f.series,
                     "budget": "" if dd else _fmt(float(budget)),
                     "noise_scale": _fmt(float(noise.get("scale", math.nan))) if dd else "",
                     "error": _fmt(f.error), "guaranteed_epsilon": _fmt(f.guaranteed_epsilon),
                     "claimed": _fmt(_claimed(res, f.point)) if f.point >= 0 else "",
                     "audited_epsilon": _fmt(f.audited_epsilon),
                     "audited_beyond": _fmt(f.audited_beyond)})
    return rows


def table(rows: list[dict[str, str]]) -> str:
    """The markdown table (D-DP-PM's budget cell names its noise scale; capePCA's guarantee cell adds
    004's own claim)."""
    lines = [HEADER]
    for r in rows:
        budget = r["budget"] or f"(noise scale {r['noise_scale']})"
        guar = r["guaranteed_epsilon"] or "none"
        if r["claimed"]:
            guar += f" (004 claims {r['claimed']})"
        lines.append(f"| {r['topology']} | {r['series']} | {budget} | {r['error']} | {guar} "
                     f"| {r['audited_epsilon'] or 'not audited'} | {r['audited_beyond']} |")
    return "\n".join(lines)


def _pick(rows: list[dict[str, str]], topology: str, series: str, budget: str) -> dict[str, str]:
    (row,) = [r for r in rows if r["topology"] == topology and r["series"] == series
              and r["budget"] == budget]
    return row


def conclusion(rows: list[dict[str, str]], topology: str = "ring") -> str:
    """A reading of the table on one graph, every number taken from ``rows``."""
    hi = [r["budget"] for r in rows if r["series"] == "LDP"][-1]
    lo = [r["budget"] for r in rows if r["series"] == "LDP"][0]
    cape, gos = _pick(rows, topology, "capepca", hi), _pick(rows, topology, "capepca-gossip", hi)
    ff, ppm = _pick(rows, topology, "ddppm-floorfree", hi), _pick(rows, topology, "ppm-federated", hi)
    ldp = _pick(rows, topology, "LDP", hi)
    dd = [r for r in rows if r["topology"] == topology and r["series"] == "D-DP-PM"]
    cape_lo = _pick(rows, topology, "capepca", lo)
    return " ".join([
        f"On the {topology} at budget {hi}, capePCA's one-shot release reaches error {cape['error']} "
        f"and the power methods of 000 {ppm['error']} (ppm-federated), against {ldp['error']} for "
        f"LDP.",
        f"capePCA's guarantee here is the aggregator's joint view: at the same noise 004's own per-site "
        f"claim would print {cape_lo['claimed']} for budget {lo}, but the aggregator, which sees "
        f"every release and knows its own noise, gets {cape_lo['guaranteed_epsilon']} (audited "
        f"{cape_lo['audited_epsilon']}).",
        f"capePCA on the gossip graph keeps 004's per-site guarantee ({gos['guaranteed_epsilon']}; "
        f"agent 0's error {gos['error']}), but a neighbour, which hears every round and knows its "
        f"own edge draws, learns {gos['audited_beyond']}.",
        f"The floor-free D-DP-PM is private by construction (audit {ff['audited_epsilon']} under its "
        f"guarantee {ff['guaranteed_epsilon']}) but its released left vector is drowned: error "
        f"{ff['error']}. D-DP-PM leaks without bound to an eavesdropper on every edge: its audited "
        f"epsilon is {', '.join(sorted({r['audited_epsilon'] for r in dd}))} at every noise scale "
        f"(error {dd[0]['error']} to {dd[-1]['error']}).",
    ])


def stored() -> list[dict[str, str]]:
    """The stored numbers."""
    with open(NUMBERS, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", nargs="?", type=Path, help="a protocol-frontier results folder")
    ap.add_argument("--print", action="store_true", help="print the table of the stored numbers")
    args = ap.parse_args()
    if args.folder is None and not args.print:
        ap.error("give a results folder or --print")
    if args.folder is not None:
        rows = frontier_rows(args.folder)
        NUMBERS.parent.mkdir(parents=True, exist_ok=True)
        with open(NUMBERS, "w", newline="", encoding="utf-8") as fh:
            w = csv.DictWriter(fh, fieldnames=COLUMNS, lineterminator="\n")
            w.writeheader()
            w.writerows(rows)
        plot = args.folder / "plots" / "privacy_utility.png"
        if plot.exists():
            IMAGE.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(plot, IMAGE)
    print(table(stored()) + "\n\n" + conclusion(stored()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
