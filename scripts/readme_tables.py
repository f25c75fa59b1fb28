"""The README's tables of the paper's Fig. 2, from the results of the shipped scenarios.

    dpgossip run scenarios/paper-fig2-wine.toml             # (and breast_cancer, diabetes)
    python scripts/readme_tables.py results/paper-fig2-wine [...]
        # writes docs/numbers/paper-fig2-wine.csv and prints the markdown table

    python scripts/upper_numbers.py                          # then: the certified upper bounds
        # beside them (the columns epsilon_upper_at_paper_delta and delta_upper_at_epsilon)

    python scripts/readme_tables.py --print                  # the tables of the stored numbers

paper-fig3's numbers are the stored output of its scenario (docs/results/paper-fig3/,
tests/test_docs_paper_fig3.py).

tests/test_docs_numbers.py checks that the README prints exactly the tables of docs/numbers/*.csv.
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path
from statistics import fmean

from dpgossip.rounding import format_upper

NUMBERS = Path(__file__).resolve().parents[1] / "docs" / "numbers"
COLUMNS = ("epsilon", "paper_delta", "met", "sigma_p", "delta_at_epsilon", "epsilon_at_paper_delta",
           "ddppm_error", "ldp_error", "search")
UPPER_COLUMNS = ("delta_upper_at_epsilon", "epsilon_upper_at_paper_delta")
"""Written by scripts/upper_numbers.py: the certified upper bounds beside the lower estimates."""
TABLE_COLUMNS = ("epsilon", "paper_delta", "met", "sigma_p", "delta_at_epsilon", "delta_upper_at_epsilon",
                 "epsilon_at_paper_delta", "epsilon_upper_at_paper_delta", "ddppm_error", "ldp_error")
HEADER = ("| epsilon | paper's delta | met for every neighbour found | sigma_p "
          "| our delta at epsilon (worst pair found: lower estimate) | certified upper bound on delta "
          "at epsilon | our epsilon at the paper's delta (lower estimate) | certified upper bound on "
          "epsilon at the paper's delta | D-DP-PM error | LDP error |")


def _read(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def from_results(folder: Path) -> list[dict[str, str]]:
    """One row per budget from a paper-fig2 results folder (calibration.csv and runs.csv; errors are
    means over the repeats)."""
    cal = _read(folder / "calibration.csv")
    runs = _read(folder / "runs.csv")
    out = []
    for c in sorted(cal, key=lambda r: float(r["target_epsilon"])):
        mine = [r for r in runs if float(r["target_epsilon"]) == float(c["target_epsilon"])
                and float(r["target_delta"]) == float(c["target_delta"])]
        out.append({
            "epsilon": f"{float(c['target_epsilon']):g}", "paper_delta": f"{float(c['target_delta']):g}",
            "met": "yes" if c["calibration_met"] == "True" else "no",
            "sigma_p": f"{float(c['noise_scale']):.3g}",
            "delta_at_epsilon": f"{float(c['calibrated_delta']):.3g}",
            "epsilon_at_paper_delta": f"{float(c['calibrated_epsilon']):.3g}",
            "ddppm_error": f"{fmean(float(r['error']) for r in mine):.3f}",
            "ldp_error": f"{fmean(float(r['ldp_error']) for r in mine):.3f}",
            "search": c.get("calibration_search", "candidates"),
        })
    return out


def table(rows: list[dict[str, str]]) -> str:
    """The markdown table: each lower estimate next to its certified upper bound (empty until
    scripts/upper_numbers.py has written them)."""
    lines = [HEADER, "|" + "---|" * len(TABLE_COLUMNS)]
    for r in rows:
        lines.append("| " + " | ".join(r.get(k, "") for k in TABLE_COLUMNS) + " |")
    return "\n".join(lines)


FIG2_NAMES = (("paper-fig2-wine", "Wine"), ("paper-fig2-diabetes", "Diabetes"),
              ("paper-fig2-breast_cancer", "Breast Cancer"))


def fig2_upper_sentence(stored_rows: dict[str, list[dict[str, str]]]) -> str:
    """The sentence of docs/paper.md on the certified side of paper-fig2: the range of the bound's
    epsilon at the paper's deltas per dataset, and whether it proves any delta below 1."""
    spans = []
    for name, label in FIG2_NAMES:
        ups = sorted(float(r["epsilon_upper_at_paper_delta"]) for r in stored_rows[name])
        spans.append(f"{format_upper(ups[0], 3)} to {format_upper(ups[-1], 3)} ({label})")
    trivial = all(r["delta_upper_at_epsilon"] == "1" for rows in stored_rows.values() for r in rows)
    return ("The certified upper bound puts the true worst epsilon at the paper's deltas at most "
            + ", ".join(spans[:-1]) + " and " + spans[-1]
            + ("; at the budgets' epsilons it proves no delta below 1" if trivial else ""))


def stored() -> dict[str, list[dict[str, str]]]:
    """The stored numbers by scenario name."""
    return {p.stem: _read(p) for p in sorted(NUMBERS.glob("paper-fig2-*.csv"))}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folders", nargs="*", type=Path, help="results/paper-fig2-<dataset> folders")
    ap.add_argument("--print", action="store_true", help="print the tables of the stored numbers")
    args = ap.parse_args()
    if not args.folders and not args.print:
        ap.error("give results folders or --print")
    for folder in args.folders:
        if not (folder / "calibration.csv").exists():
            print(f"{folder}: no calibration.csv (run the paper-fig2 scenario first)", file=sys.stderr)
            return 1
        rows = from_results(folder)
        NUMBERS.mkdir(parents=True, exist_ok=True)
        name = folder.name.removesuffix("-audit")
        with open(NUMBERS / f"{name}.csv", "w", newline="", encoding="utf-8") as fh:
            w = csv.DictWriter(fh, fieldnames=COLUMNS, lineterminator="\n")
            w.writeheader()
            w.writerows(rows)
        print(f"{name}:\n{table(rows)}\n")
    if args.print:
        for name, rows in stored().items():
            print(f"{name}:\n{table(rows)}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
