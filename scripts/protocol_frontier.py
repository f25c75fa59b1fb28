"""The protocol frontier (every protocol on one privacy-utility plot), from a results folder of
scenarios/protocol-frontier.toml.

    dpgossip run scenarios/protocol-frontier.toml --out /tmp/frontier
    python scripts/protocol_frontier.py /tmp/frontier
        # writes docs/numbers/protocol-frontier.csv, draws docs/img/protocol-frontier.png (the
        # scenario's plots/privacy_utility.png) and prints the tables and the reading

    python scripts/protocol_frontier.py --print     # the tables and the reading of the stored numbers

Every number is a mean over the scenario's repeats, computed by dpgossip.report.frontier.frontier_table
(the function that draws plots/privacy_utility.png); ``claimed`` is capePCA's claimed_epsilon
(Imtiaz and Sarwate's own per-site claim) from runs.csv. The column ``audit`` says what the audited
epsilon is (:data:`AUDIT`):
``lower estimate`` where a search over neighbours finds it (D-DP-PM, its floor-free variant, ppm and
ppm-federated), ``exact`` where the view is a data-independent Gaussian audited in closed form
(capePCA, capePCA-gossip; ppm-gossip given its realised iterates). tests/test_docs_numbers_frontier.py
checks the stored CSV, that README.md and docs/protocol-frontier.md print these tables and this
reading, and re-runs one capepca point.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import re
import tomllib
from pathlib import Path

from dpgossip.rounding import format_upper

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "scenarios" / "protocol-frontier.toml"
NUMBERS = ROOT / "docs" / "numbers" / "protocol-frontier.csv"
IMAGE = ROOT / "docs" / "img" / "protocol-frontier.png"
RUN = ROOT / "docs" / "numbers" / "protocol-frontier-run.json"
COLUMNS = ("dataset", "topology", "series", "budget", "noise_scale", "error", "guaranteed_epsilon",
           "claimed", "audited_epsilon", "audited_beyond", "audit", "audited_upper", "upper_reason")
"""``audited_upper`` (D-DP-PM's certified upper bound, largest over the targets, at delta = 1e-5) and
``upper_reason`` (why it is infinite) are written by scripts/upper_numbers.py; this script leaves them
empty."""
AUDIT = {"D-DP-PM": "RDP conversion of the worst neighbour found (neither a lower estimate nor a bound)",
         "ddppm-floorfree": "lower estimate",
         "ppm (improved, row-replacement)": "lower estimate", "ppm-federated": "lower estimate",
         "ppm-gossip": "exact", "capepca": "exact", "capepca-gossip": "exact", "LDP": "not audited"}
"""What each series' audited epsilon is (docs/protocol-frontier.md, Section 4)."""
AT_LEAST = "at least (the epsilon cap, exceeded by a neighbour found)"
"""The audit of a D-DP-PM point whose worst pair's search stopped at ``privacy.epsilon_cap``."""
ORDER = ("D-DP-PM", "ddppm-floorfree", "ppm (improved, row-replacement)", "ppm-federated", "ppm-gossip",
         "capepca", "capepca-gossip", "LDP")
NAMES = {"wine": "Wine", "breast_cancer": "Breast Cancer", "diabetes": "Diabetes"}
HEADER = ("| data | protocol | budget epsilon (D-DP-PM: noise scale) | error | guaranteed epsilon "
          "| audited epsilon (what the guarantee covers) | audited beyond its scope | audit "
          "| certified upper bound (D-DP-PM) |\n"
          "|---|---|---|---|---|---|---|---|---|")


def _fmt(v: float, digits: int = 3) -> str:
    if math.isnan(v):
        return ""
    if math.isinf(v):
        return "inf"
    return f"{v:.{digits}g}"


def _fmt_upper(v: float, digits: int = 3) -> str:
    """A guarantee (an upper bound on epsilon) to ``digits`` significant digits rounded **up**, so that
    the printed number reads back at or above the computed one (:func:`dpgossip.rounding.format_upper`);
    empty for NaN (no guarantee)."""
    return "" if math.isnan(v) else format_upper(v, digits)


def _claimed(res, point: int) -> float:
    vals = [float(r["claimed_epsilon"]) for r in res.runs
            if int(r["point"]) == point and r.get("claimed_epsilon") is not None]
    return sum(vals) / len(vals) if vals else math.nan


def frontier_rows(folder: Path) -> list[dict[str, str]]:
    """One row per point (and per LDP budget, graph and dataset): the numbers of the plot (each audited
    epsilon the scenario's own); the certified upper columns are carried over from the stored numbers
    (scripts/upper_numbers.py)."""
    from dpgossip.report.frontier import frontier_table
    from dpgossip.report.tables import ResultsFolder

    res = ResultsFolder.load(folder)
    upper = {_key(r): (r["audited_upper"], r["upper_reason"]) for r in stored()} if NUMBERS.exists() else {}
    rows = []
    for f in frontier_table(res):
        axes = res.axis_values(f.point) if f.point >= 0 else {}
        noise = axes.get("protocol.noise") or {}
        budget = axes.get("ppm.epsilon") if f.series != "LDP" else f.guaranteed_epsilon
        dd = f.series == "D-DP-PM"
        rows.append({"dataset": f.dataset, "topology": f.topology, "series": f.series,
                     "budget": "" if dd else _fmt(float(budget)),
                     "noise_scale": _fmt(float(noise.get("scale", math.nan))) if dd else "",
                     "error": _fmt(f.error), "guaranteed_epsilon": _fmt_upper(f.guaranteed_epsilon),
                     "claimed": _fmt(_claimed(res, f.point)) if f.point >= 0 else "",
                     "audited_epsilon": _fmt(f.audited_epsilon),
                     "audited_beyond": _fmt(f.audited_beyond),
                     "audit": AT_LEAST if f.at_least else AUDIT[f.series],
                     "audited_upper": "", "upper_reason": ""})
        rows[-1]["audited_upper"], rows[-1]["upper_reason"] = upper.get(_key(rows[-1]), ("", ""))
    return rows


def _key(r: dict[str, str]) -> tuple[str, ...]:
    return (r["dataset"], r["topology"], r["series"], r["budget"], r["noise_scale"])


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
        for series in ORDER:
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


def _each(rows: list[dict[str, str]], topology: str, series: str, budget: str, key: str) -> str:
    """``a (Wine), b (Breast Cancer) and c (Diabetes)``: one value per dataset (``a on every dataset``
    when they agree)."""
    datasets = list(dict.fromkeys(r["dataset"] for r in rows))
    values = [_pick(rows, d, topology, series, budget)[key] for d in datasets]
    if len(set(values)) == 1 and len(values) > 1:
        return f"{values[0]} on every dataset"
    parts = [f"{v} ({NAMES.get(d, d)})" for v, d in zip(values, datasets, strict=True)]
    return ", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1 else parts[0]


def _dd_floor(rows: list[dict[str, str]], topology: str) -> tuple[str, str, str]:
    """D-DP-PM on one graph: the smallest audited epsilon of each dataset over its noise scales, and
    the range of its errors."""
    dd = [r for r in rows if r["topology"] == topology and r["series"] == "D-DP-PM"]
    parts = []
    for d in dict.fromkeys(r["dataset"] for r in dd):
        low = min((r for r in dd if r["dataset"] == d), key=lambda r: float(r["audited_epsilon"]))
        value = low["audited_epsilon"]
        parts.append(f"{value} on {NAMES.get(d, d)}")
    errs = sorted(float(r["error"]) for r in dd)
    return ", ".join(parts[:-1]) + " and " + parts[-1], _fmt(errs[0]), _fmt(errs[-1])


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
    return ", ".join(parts[:-1]) + " and " + parts[-1]


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


def stored() -> list[dict[str, str]]:
    """The stored numbers."""
    with open(NUMBERS, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def scenario() -> dict:
    """The shipped scenario."""
    return tomllib.loads(SCENARIO.read_text(encoding="utf-8"))


def page(rows: list[dict[str, str]]) -> str:
    """Every graph's table, headed by its name, then the ring's reading."""
    parts = [f"**{t}**\n\n{table(rows, t)}" for t in scenario()["network"]["topology"]]
    return "\n\n".join(parts) + "\n\n" + conclusion(rows)


def read_time_log(path: Path, load_before: str, load_after: str) -> dict[str, object]:
    """Wall time and peak memory from the output of ``/usr/bin/time -v``, with the load averages
    (``uptime``'s 1-minute figure) taken just before and after the run."""
    text = path.read_text(encoding="utf-8")
    clock = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): ([\d:.]+)", text).group(1)
    seconds = sum(float(x) * 60**i for i, x in enumerate(reversed(clock.split(":"))))
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", text).group(1))
    return {"wall_seconds": seconds, "max_rss_mb": round(rss / 1024), "load_before": load_before,
            "load_after": load_after, "command": "dpgossip run scenarios/protocol-frontier.toml --out DIR"}


def run_time() -> dict[str, object]:
    """The stored measurement of the run the numbers come from."""
    return json.loads(RUN.read_text(encoding="utf-8"))


def time_sentence(run: dict[str, object]) -> str:
    """The run time as the README and the page print it (how it was measured, as stored)."""
    minutes, seconds = divmod(round(float(run["wall_seconds"])), 60)
    workers = int(run.get("workers", 1))
    how = ("measured by `/usr/bin/time -v`; peak memory " + f"{run['max_rss_mb']} MB"
           if run.get("max_rss_mb") else f"measured by the shell's `time`; {run['note']}")
    return (f"The whole scenario ran in {minutes} min {seconds} s wall time (`{run['command']}`, "
            f"{workers} worker{'s' if workers != 1 else ''}, {how}) on this shared 2-core machine, "
            f"with a 1-minute load average of {run['load_before']} when it started and "
            f"{run['load_after']} when it ended.")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", nargs="?", type=Path, help="a protocol-frontier results folder")
    ap.add_argument("--print", action="store_true", help="print the tables of the stored numbers")
    ap.add_argument("--time-log", type=Path, help="the run's /usr/bin/time -v output (stored with "
                    "--load-before and --load-after)")
    ap.add_argument("--load-before", default="", help="uptime's 1-minute load average before the run")
    ap.add_argument("--load-after", default="", help="and after it")
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
        from dpgossip.report.frontier import plot_privacy_utility
        from dpgossip.report.tables import ResultsFolder

        IMAGE.parent.mkdir(parents=True, exist_ok=True)
        plot_privacy_utility(ResultsFolder.load(args.folder), IMAGE)
    if args.time_log is not None:
        RUN.write_text(json.dumps(read_time_log(args.time_log, args.load_before, args.load_after),
                                  indent=1) + "\n", encoding="utf-8")
    print(page(stored()) + "\n\n" + time_sentence(run_time()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
