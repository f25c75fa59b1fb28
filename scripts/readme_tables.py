"""The README's tables of the paper's Fig. 2, from the results of the shipped scenarios.

    dpgossip run scenarios/paper-fig2-wine.toml             # (and breast_cancer, diabetes)
    python scripts/readme_tables.py results/paper-fig2-wine [...]
        # writes docs/numbers/paper-fig2-wine.csv and prints the markdown table

    python scripts/upper_numbers.py                          # then: the certified upper bounds
        # beside them (the columns epsilon_upper_at_paper_delta and delta_upper_at_epsilon)

    python scripts/readme_tables.py --print                  # the tables of the stored numbers

    dpgossip run scenarios/paper-fig3.toml
    python scripts/readme_tables.py --fig3 results/paper-fig3
        # writes docs/numbers/paper-fig3.csv (worst delta at epsilon = 5 and mean error per dataset and T)
        # and prints the README's sentences; then python scripts/upper_numbers.py adds the certified
        # upper bounds (delta_upper_at_5, epsilon_upper_at_delta)

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


FIG3_DATASETS = (("wine", "Wine"), ("breast_cancer", "Breast Cancer"), ("diabetes", "Diabetes"))


def delta_text(v: float) -> str:
    """A delta to three decimals, or as ``1 - x`` when it would print as 1.000 (it is below 1)."""
    return f"{v:.3f}" if v < 0.9995 else f"1 - {1.0 - v:.1e}"


def fig3_rows(folder: Path) -> list[dict[str, str]]:
    """Per dataset and T of a paper-fig3 results folder: the worst pair's exact delta at epsilon = 5
    (max over the 12 pairs) and the mean error of the final estimate over the repeats."""
    points = {r["point"]: (r["data_source"], int(r["protocol_iterations"]))
              for r in _read(folder / "points.csv")}
    delta: dict[tuple[str, int], float] = {}
    for r in _read(folder / "leakage.csv"):
        key = points[r["point"]]
        delta[key] = max(delta.get(key, 0.0), float(r["delta_exact_at_eps_5"]))
    errors: dict[tuple[str, int], list[float]] = {}
    for r in _read(folder / "runs.csv"):
        errors.setdefault(points[r["point"]], []).append(float(r["error"]))
    return [{"dataset": ds, "T": str(T), "worst_delta_at_5": delta_text(delta[(ds, T)]),
             "mean_error": f"{fmean(errors[(ds, T)]):.2f}"}
            for ds, T in sorted(delta, key=lambda k: ([d for d, _ in FIG3_DATASETS].index(k[0]), k[1]))]


def fig3_sentences(rows: list[dict[str, str]]) -> tuple[str, str]:
    """The README's two sentences on paper-fig3: worst delta by T, and the error at T = 5 and 10."""
    def by(ds: str, col: str) -> dict[int, str]:
        return {int(r["T"]): r[col] for r in rows if r["dataset"] == ds}

    deltas = "; ".join(
        f"{name} " + ", ".join(f"{v} (T = {t})" for t, v in sorted(by(ds, "worst_delta_at_5").items()))
        for ds, name in FIG3_DATASETS)
    errors = ", ".join(
        f"{name} {by(ds, 'mean_error')[5]} at T = 5 and {by(ds, 'mean_error')[10]} at T = 10"
        for ds, name in FIG3_DATASETS)
    return deltas, errors


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


def fig3_upper_sentence(rows: list[dict[str, str]]) -> str:
    """The sentence on the certified side of paper-fig3 (columns of scripts/upper_numbers.py): the delta
    the bound proves at epsilon = 5, and its epsilon at each printed lower delta, per dataset."""
    proven = [r for r in rows if r["delta_upper_at_5"] != "1"]
    if proven:
        head = "at epsilon = 5 it proves delta at most " + ", ".join(
            f"{r['delta_upper_at_5']} ({dict(FIG3_DATASETS)[r['dataset']]}, T = {r['T']})"
            for r in proven)
        if len(proven) < len(rows):
            head += f" and no delta below 1 at the other {len(rows) - len(proven)} points"
    else:
        head = (f"at epsilon = 5 it proves no delta below 1 at any of the {len(rows)} points (the "
                "bracket of each delta is [lower estimate, 1])")

    def span(ds: str, name: str) -> str:
        mine = sorted((r for r in rows if r["dataset"] == ds), key=lambda r: int(r["T"]))
        return (f"{mine[0]['epsilon_upper_at_delta']} (T = {mine[0]['T']}) to "
                f"{mine[-1]['epsilon_upper_at_delta']} (T = {mine[-1]['T']}) on {name}")

    spans = [span(ds, name) for ds, name in FIG3_DATASETS if any(r["dataset"] == ds for r in rows)]
    return ("The certified upper bound ([upper-bound.md](upper-bound.md)) says how far above them the "
            f"true worst case may lie: {head}; at the printed lower delta it proves epsilon at most "
            + ", ".join(spans[:-1]) + " and " + spans[-1] + " (where the neighbour found has epsilon "
            "about 5)")


def stored_fig3() -> list[dict[str, str]]:
    """The stored numbers of the paper-fig3 scenario."""
    return _read(NUMBERS / "paper-fig3.csv")


def stored() -> dict[str, list[dict[str, str]]]:
    """The stored numbers by scenario name."""
    return {p.stem: _read(p) for p in sorted(NUMBERS.glob("paper-fig2-*.csv"))}


def _write(path: Path, rows: list[dict[str, str]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]), lineterminator="\n")
        w.writeheader()
        w.writerows(rows)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folders", nargs="*", type=Path, help="results/paper-fig2-<dataset> folders")
    ap.add_argument("--print", action="store_true", help="print the tables of the stored numbers")
    ap.add_argument("--fig3", type=Path, default=None, metavar="FOLDER",
                    help="a results/paper-fig3 folder: store its worst delta and error by T")
    args = ap.parse_args()
    if not args.folders and not args.print and args.fig3 is None:
        ap.error("give results folders, --fig3 FOLDER, or --print")
    if args.fig3 is not None:
        rows = fig3_rows(args.fig3)
        _write(NUMBERS / "paper-fig3.csv", rows)
        print("\n".join(fig3_sentences(rows)))
        print("(run python scripts/upper_numbers.py for the certified upper bounds)")
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
