"""The certified upper bound beside every published D-DP-PM lower estimate, recomputed in one command.

    python scripts/upper_numbers.py            # recompute every bound, rewrite the upper columns
    python scripts/upper_numbers.py --check    # recompute; exit 1 when a stored value differs

Every published D-DP-PM number of docs/ is the value of the worst neighbour a search found: a lower
estimate of the worst case over the neighbours of this ``X``. This script builds each published point's
model again (the same data, network, schedule, noise and delta) and computes the certified upper bound of
docs/upper-bound.md (``dpgossip.protocols.ddppm.audit.upper_bounds``: one bound per target, for every
neighbour of this ``X`` and every view without the target; rank 1). It needs no search, so it reruns in
minutes. It writes:

* ``docs/numbers/paper-fig2-<dataset>.csv``: ``epsilon_upper_at_paper_delta`` (the largest target bound
  at the paper's delta) and ``delta_upper_at_epsilon`` (a delta the bound proves at the budget's
  epsilon, :func:`delta_upper`), at the calibrated ``sigma_p`` of the row (the calibration doubles the
  scenario's scale 1 until the audited value levels off, so the printed 4 is exact).

paper-fig3's and the protocol frontier's bounds are their runs' own output (tests/test_docs_paper_fig3.py,
tests/test_docs_protocol_frontier.py); a paper-fig2 run now writes its own too
(``calibrated_epsilon_upper``, ``calibrated_delta_upper`` with ``[privacy] delta_upper = true``), and
this script goes when the three paper-fig2 scenarios are run again.

Then it rewrites, in docs/, every table and sentence that prints these numbers (:func:`doc_fragments`:
each is rendered from the stored files before and after, and the old text replaced by the new). A bound
that is infinite says why (``upper_reason``); where no bound is defined (rank ``r > 1``) the value is
empty and the reason says so. Run it after scripts/readme_tables.py, which rewrites those files
without the upper columns. tests/test_docs_upper_numbers.py recomputes a sample and checks that the
docs print the stored values.
"""

from __future__ import annotations

import argparse
import copy
import csv
import json
import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling scripts, also when imported
from _numbers import round_up  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
NUMBERS = ROOT / "docs" / "numbers"
SCENARIOS = ROOT / "scenarios"
FIG2 = ("wine", "diabetes", "breast_cancer")
UNDEFINED = "no bound is derived for rank r > 1 or for views conditioned on the observer's noise"


# --- the bound of one point --------------------------------------------------------------------
def scenario_point(name: str, index: int, noise: dict[str, Any] | None = None):
    """``(config, problem)`` of point ``index`` of ``scenarios/<name>.toml``, its noise replaced by
    ``noise`` when given (a calibrated scenario: the calibration is not rerun)."""
    from dpgossip.scenario import load_scenario
    from dpgossip.scenario.problem import build_structure, resolve_problem

    sc = load_scenario(SCENARIOS / f"{name}.toml")
    cfg = copy.deepcopy(sc.points()[index].config)
    if noise is not None:
        cfg["protocol"]["noise"] = dict(noise)
    return cfg, resolve_problem(cfg, build_structure(cfg, sc.base))


def worst_bound(problem, delta: float, neighbours: str, targets: list[int] | None = None
                ) -> tuple[float, str, int]:
    """The largest certified bound on epsilon at ``delta`` over the targets, why it is infinite
    (``""`` when finite) and its target; ``(nan, UNDEFINED, -1)`` where the audit defines none."""
    from dpgossip.protocols.ddppm.audit import upper_bounds

    bounds = upper_bounds(problem.data, problem.network, problem.params, delta, neighbours, targets)
    if not bounds:
        return math.nan, UNDEFINED, -1
    worst = max(bounds.values(), key=lambda b: b.epsilon)
    return worst.epsilon, (worst.reason or "") if math.isinf(worst.epsilon) else "", worst.target


def bound_function(problem, neighbours: str, targets: list[int] | None = None
                   ) -> Callable[[float], float]:
    """``delta -> `` the largest certified epsilon at ``delta`` over ``targets``."""
    return lambda d: worst_bound(problem, d, neighbours, targets)[0]


def delta_upper(bound_at: Callable[[float], float], epsilon: float, lowest: float,
                screen: Callable[[float], float] | None = None) -> float:
    """A delta the bound proves at ``epsilon``: the product's inversion
    (:func:`dpgossip.privacy.delta_from_bound.delta_upper`, to 1e-9 in ``logit(delta)``), after a
    ``screen``, the bound of one of the targets: when it exceeds ``epsilon`` at ``NEAR_ONE`` so does the
    largest, and the answer is 1 without the other targets."""
    from dpgossip.privacy.delta_from_bound import NEAR_ONE
    from dpgossip.privacy.delta_from_bound import delta_upper as invert

    if screen is not None and not screen(NEAR_ONE) <= epsilon:
        return 1.0
    return invert(bound_at, epsilon, lowest, rel_tol=1e-9)


def fmt(v: float) -> str:
    """Three significant digits."""
    return f"{v:.3g}"


def upper_fmt(v: float) -> str:
    """A bound to three significant digits rounded up, ``inf``, or empty for NaN (no bound)."""
    return "" if math.isnan(v) else round_up(v, 3)


def delta_fmt(v: float) -> str:
    """A proven delta: ``1`` (nothing below 1 proven) or three digits rounded up."""
    return "1" if v >= 1.0 else round_up(v, 3)


# --- paper-fig2 --------------------------------------------------------------------------------
def fig2_row(dataset: str, index: int, row: dict[str, str]) -> dict[str, str]:
    """The upper columns of one budget of ``paper-fig2-<dataset>`` (its calibrated ``sigma_p``)."""
    cfg, problem = scenario_point(f"paper-fig2-{dataset}", index,
                                  {"schedule": "constant", "scale": float(row["sigma_p"])})
    cal, nb = cfg["privacy"]["calibrate"], cfg["privacy"]["neighbours"]
    assert f"{cal['epsilon']:g}" == row["epsilon"] and f"{cal['delta']:g}" == row["paper_delta"]
    eps_up, why, j = worst_bound(problem, float(cal["delta"]), nb)
    d_up = delta_upper(bound_function(problem, nb), float(cal["epsilon"]),
                       float(row["delta_at_epsilon"]), screen=bound_function(problem, nb, [j]))
    return {"epsilon_upper_at_paper_delta": upper_fmt(eps_up), "delta_upper_at_epsilon": delta_fmt(d_up),
            "upper_reason": why}


# --- files ---------------------------------------------------------------------------------------
def read_csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def write_csv(path: Path, rows: list[dict[str, str]]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]), lineterminator="\n")
        w.writeheader()
        w.writerows(rows)


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def fig2_table(dataset: str) -> list[dict[str, str]]:
    """``paper-fig2-<dataset>.csv`` with its upper columns recomputed."""
    rows = []
    for i, r in enumerate(read_csv(NUMBERS / f"paper-fig2-{dataset}.csv")):
        _say(f"paper-fig2-{dataset}: epsilon = {r['epsilon']}")
        rows.append({**r, **fig2_row(dataset, i, r)})
    return rows


PARTS: dict[str, tuple[Path, Callable[[], Any]]] = {
    **{f"fig2-{ds}": (NUMBERS / f"paper-fig2-{ds}.csv", lambda ds=ds: fig2_table(ds)) for ds in FIG2},
}
"""What the script writes: a name, the file and the function that recomputes its contents."""


# --- the docs --------------------------------------------------------------------------------------
DOCS = ROOT / "docs"


def doc_fragments() -> list[tuple[Path, str]]:
    """Every table and sentence of docs/ that prints a stored upper bound, rendered from the stored files
    by the functions the tests check the pages with: ``(page, text)``."""
    import readme_tables as tables

    paper = DOCS / "paper.md"
    out = [(paper, tables.table(rows)) for rows in tables.stored().values()]
    out.append((paper, tables.fig2_upper_sentence(tables.stored())))
    return out


def rewrite_docs(before: list[tuple[Path, str]], after: list[tuple[Path, str]]) -> list[str]:
    """Replace each fragment printed ``before`` the numbers were rewritten by the same fragment
    ``after`` (whitespace-tolerant: the pages wrap long sentences); the fragments not found are
    returned (their page must be edited by hand)."""
    import re

    missing = []
    for (page, old), (_, new) in zip(before, after, strict=True):
        text = page.read_text(encoding="utf-8")
        pattern = re.compile(r"\s+".join(re.escape(w) for w in old.split()))
        if not pattern.search(text):
            missing.append(f"{page.name}: {old[:80]}")
            continue
        if old != new:
            m = pattern.search(text)
            page.write_text(text[:m.start()] + new + text[m.end():], encoding="utf-8")
    return missing


def stored(path: Path) -> Any:
    """A file's stored contents, read as :data:`PARTS` computes them."""
    if path.suffix == ".json":
        return json.loads(path.read_text(encoding="utf-8"))
    return read_csv(path)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare with the stored numbers")
    ap.add_argument("--only", nargs="+", choices=list(PARTS), default=list(PARTS),
                    help="recompute these files only (default: every one)")
    args = ap.parse_args(argv)
    stale = 0
    before = None if args.check else doc_fragments()
    for name in args.only:
        path, compute = PARTS[name]
        value = compute()
        if args.check:
            if stored(path) != value:
                stale += 1
                print(f"docs/numbers/{path.name} is stale: rerun without --check", file=sys.stderr)
            else:
                print(f"docs/numbers/{path.name} matches the code")
            continue
        if path.suffix == ".json":
            path.write_text(json.dumps(value, indent=1) + "\n", encoding="utf-8")
        else:
            write_csv(path, value)
        print(f"wrote docs/numbers/{path.name}", flush=True)
    if before is not None:
        missing = rewrite_docs(before, doc_fragments())
        for m in missing:
            print(f"not found, edit by hand: {m}", file=sys.stderr)
        print("rewrote the tables and sentences of docs/ that print these numbers")
    return 1 if stale else 0


if __name__ == "__main__":
    raise SystemExit(main())
