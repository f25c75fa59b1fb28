"""The stronger search's check of the published paper-fig2 and paper-fig3 worst pairs, point by point.

Reads the JSON lines stored by ``scripts/stronger_search.py`` (:data:`COMMANDS`) and the published
tables (``docs/numbers/paper-fig3.csv``, ``paper-fig2-*.csv``) and prints the markdown table of
docs/audit-scale.md, Section 5: for every point the published lower estimate, the stronger search's
value (its worst pair) and their relative difference. The rule: where the stronger search beats a
published number by more than 1 %, the published number must be the stronger one's
(:func:`beaten` lists such points; ``tests/test_docs_strong_check.py`` fails while any is left).

A point whose published delta is at least ``1 / 1.01`` cannot be beaten by more than 1 % (a delta is
at most 1), so it is not searched again (:func:`searched_points`).

    python scripts/strong_check_table.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling scripts, also when imported
from _numbers import read_jsonl  # noqa: E402
from readme_tables import _read, delta_value  # noqa: E402

NUMBERS = Path(__file__).resolve().parents[1] / "docs" / "numbers"
FIG2_DATASETS = (("wine", "Wine"), ("diabetes", "Diabetes"), ("breast_cancer", "Breast Cancer"))
FIG3_DATASETS = (("wine", "Wine"), ("breast_cancer", "Breast Cancer"), ("diabetes", "Diabetes"))
MARGIN = 0.01
"""A published number beaten by more than this (relative) must be replaced by the stronger one."""


def can_be_beaten(published: str) -> bool:
    """Whether a delta could exceed the printed ``published`` by more than :data:`MARGIN` (it is at
    most 1)."""
    return delta_value(published) * (1 + MARGIN) < 1.0


def searched_points(name: str) -> list[int]:
    """The points of a scenario (indices of its audited sweep, the order of its published table) that
    are searched again: those whose published delta :func:`can_be_beaten`."""
    if name == "paper-fig3":
        rows = _read(NUMBERS / "paper-fig3.csv")
        return [i for i, r in enumerate(rows) if can_be_beaten(_own3(r))]
    return [i for i, r in enumerate(_read(NUMBERS / f"{name}.csv")) if can_be_beaten(r["delta_at_epsilon"])]


def _own3(r: dict[str, str]) -> str:
    """A paper-fig3 row's value of the scenario's own search."""
    return r.get("scenario_delta_at_5") or r["worst_delta_at_5"]


def command(name: str) -> str:
    """How ``docs/numbers/<name>-strong.jsonl`` is written."""
    scale = "" if name == "paper-fig3" else " --noise-scale 4"
    points = ",".join(map(str, searched_points(name)))
    return (f"python scripts/stronger_search.py scenarios/{name}.toml --all{scale} --points {points} "
            f"--workers 2 --json docs/numbers/{name}-strong.jsonl")


def stored(name: str) -> dict[int, dict]:
    """The stored lines of ``docs/numbers/<name>-strong.jsonl`` by point index."""
    return {int(r["point"]): r for r in read_jsonl(NUMBERS / f"{name}-strong.jsonl")}


def fig3_rows() -> list[dict[str, object]]:
    """Every paper-fig3 point: published worst delta at epsilon = 5 against the stronger search's."""
    strong = {(r["axes"]["data.source"], int(r["axes"]["protocol.iterations"])): r
              for r in stored("paper-fig3").values()}
    out = []
    for r in _read(NUMBERS / "paper-fig3.csv"):
        key = (r["dataset"], int(r["T"]))
        row = _row("paper-fig3", dict(FIG3_DATASETS)[r["dataset"]], f"T = {r['T']}",
                   _own3(r), r["worst_delta_at_5"], strong.get(key))
        row["skipped"] = not can_be_beaten(_own3(r))
        out.append(row)
    return out


def fig2_rows() -> list[dict[str, object]]:
    """Every paper-fig2 point: published delta at the budget's epsilon against the stronger search's at
    the same noise (the floor, ``sigma_p = 4``), and the epsilon at the paper's delta of each worst
    neighbour."""
    out = []
    for ds, label in FIG2_DATASETS:
        strong = {float(r["axes"]["privacy.calibrate.epsilon"]): r
                  for r in stored(f"paper-fig2-{ds}").values()}
        for r in _read(NUMBERS / f"paper-fig2-{ds}.csv"):
            row = _row(f"paper-fig2-{ds}", label, f"epsilon = {r['epsilon']}", r["delta_at_epsilon"],
                       r["delta_at_epsilon"], strong.get(float(r["epsilon"])))
            row["skipped"] = not can_be_beaten(r["delta_at_epsilon"])
            row["published_epsilon"] = r["epsilon_at_paper_delta"]
            s = strong.get(float(r["epsilon"]))
            row["strong_epsilon"] = s["strong"].get("epsilon_of_worst") if s else None
            out.append(row)
    return out


def _row(scenario: str, dataset: str, point: str, own: str, published: str, line: dict | None
         ) -> dict[str, object]:
    """``own``: the scenario's search's value as printed; ``published``: the published one (the larger
    of it and the stronger search's)."""
    value = delta_value(own)
    row: dict[str, object] = {"scenario": scenario, "dataset": dataset, "point": point, "own": own,
                              "own_value": value, "published": published,
                              "published_value": delta_value(published), "strong": None}
    if line is not None:
        s = line["strong"]
        row.update(strong=float(s["value"]), relative=(float(s["value"]) - value) / value,
                   pair=f"{s['observer']} -> {s['target']}", row=s["row"], seconds=float(line["seconds"]))
    return row


def beaten(rows: list[dict[str, object]]) -> list[dict[str, object]]:
    """The points whose published number the stronger search beats by more than :data:`MARGIN`."""
    return [r for r in rows if r["strong"] is not None
            and float(r["strong"]) > float(r["published_value"]) * (1 + MARGIN)]


def replaced(rows: list[dict[str, object]]) -> list[dict[str, object]]:
    """The points whose published number is the stronger search's (it beat the scenario's by more
    than the printed precision)."""
    return [r for r in rows if r["published"] != r["own"]]


def _delta(v: float) -> str:
    return f"{v:.6f}" if v < 0.9999995 else f"1 - {1.0 - v:.2e}"


def table(rows: list[dict[str, object]]) -> str:
    """The markdown table of docs/audit-scale.md, Section 5."""
    lines = ["| scenario | dataset | point | the scenario's search | stronger search | relative "
             "difference | its worst pair (observer -> target, row) | wall time (s) | published (the "
             "larger; lower estimate) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if r.get("skipped"):
            cells = ["not searched: a delta cannot exceed 1 = 1.01 x (1 / 1.01)", "", "", ""]
        elif r["strong"] is None:
            cells = ["not run", "", "", ""]
        else:
            cells = [_delta(float(r["strong"])), f"{100 * float(r['relative']):+.3f} %",
                     f"{r['pair']}, {r['row']}", f"{float(r['seconds']):.0f}"]
        lines.append(f"| {r['scenario']} | {r['dataset']} | {r['point']} | {r['own']} | "
                     + " | ".join(cells) + f" | {r['published']} |")
    return "\n".join(lines)


def summary(rows: list[dict[str, object]]) -> str:
    """One sentence: how many points were checked, the largest relative difference, how many beaten."""
    done = [r for r in rows if r["strong"] is not None]
    if not done:
        return "no point searched again yet"
    top = max(done, key=lambda r: float(r["relative"]))
    new = replaced(rows)
    return (f"{len(done)} points searched again; the largest difference is "
            f"{100 * float(top['relative']):+.3f} % ({top['scenario']}, {top['dataset']}, {top['point']}); "
            f"{sum(float(r['relative']) > MARGIN for r in done)} of the scenarios' values beaten by more "
            f"than 1 %, and {len(new)} published values now the stronger search's"
            + (" (" + "; ".join(f"{r['dataset']} {r['point']}: {r['own']} -> {r['published']}"
                                for r in new) + ")" if new else ""))


def fig3_sentence(rows: list[dict[str, object]]) -> str:
    """docs/paper.md's sentence on the paper-fig3 points the stronger search raised."""
    new = [r for r in replaced(rows) if r["scenario"] == "paper-fig3"]
    if not new:
        return "the stronger search raised none of them"
    what = "; ".join(f"{r['dataset']} {r['point']} from {r['own']} to {r['published']}" for r in new)
    return (f"the stronger search raised {len(new)} of them ({what}; the plot, drawn from the "
            f"scenario's run, still shows the scenario's value there)")


def main() -> None:
    for name in ("paper-fig3", *(f"paper-fig2-{ds}" for ds, _ in FIG2_DATASETS)):
        if searched_points(name):
            print(command(name))
    rows = fig2_rows() + fig3_rows()
    print(table(rows))
    print()
    print(summary(rows))


if __name__ == "__main__":
    main()
