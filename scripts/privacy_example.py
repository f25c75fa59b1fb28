"""The worked example of docs/privacy.md, recomputed: Wine, the paper's 4-agent ring, T = 5, c = 5,
observer 0 attacking agent 1, four noise schedules, the default (standard) worst-case search.

    python scripts/privacy_example.py          # prints the table, writes docs/numbers/privacy-example.json
    python scripts/privacy_example.py --check  # recomputes; fails if the stored numbers differ

Every value is the exact quantity of the worst neighbour the search found: a per-instance lower estimate of
the worst case over neighbours of this X. tests/test_docs_numbers.py checks that docs/privacy.md prints
the stored numbers. The table of docs/privacy.md adds a column from another file: agent 1's certified
upper bound (docs/numbers/privacy-example-upper.json, ``python scripts/upper_numbers.py``).
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

from dpgossip.data import load_dataset
from dpgossip.protocols.ddppm.audit import AuditOptions, audit_pairs
from dpgossip.protocols.ddppm.params import NoiseSchedule, resolve_params
from dpgossip.topology import make_network

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling scripts, also when imported
from _numbers import round_up  # noqa: E402

OUT = Path(__file__).resolve().parents[1] / "docs" / "numbers" / "privacy-example.json"
UPPER = OUT.with_name("privacy-example-upper.json")
SCHEDULES = (("geometric", 1.0), ("constant", 0.1), ("constant", 1.0), ("constant", 10.0))
OBSERVER, TARGET = 0, 1
DELTA, EPSILON = 1e-5, 5.0
SEARCH = "standard"


def compute() -> dict[str, object]:
    """The table's rows (one per schedule) and the paper view at constant 1."""
    net = make_network("paper-ring4")
    data = load_dataset("wine", agents=4)
    rows = []
    for view, (kind, scale) in [*(("observer", sch) for sch in SCHEDULES),
                                ("paper", ("constant", 1.0))]:
        params = resolve_params(data, net, iterations=5, consensus_steps=5,
                                noise=NoiseSchedule(kind=kind, scale=scale))
        audit = audit_pairs(data, net, params, delta=DELTA, epsilons=(EPSILON,), view=view,
                            search=SEARCH, methods=("exact", "rdp", "chernoff"),
                            options=AuditOptions(targets=[TARGET], observers=[OBSERVER]))
        r = audit.results[(OBSERVER, TARGET)]
        ev = r.evidence
        rows.append({
            "view": view, "schedule": kind, "scale": scale,
            "sigma_p_first": float(params.sigma_p[0, 0]), "sigma_p_last": float(params.sigma_p[0, -1]),
            "epsilon_exact": r.epsilon["exact"], "epsilon_rdp": r.epsilon["rdp"],
            "epsilon_chernoff": r.epsilon["chernoff"], "delta_exact_at_5": r.delta["exact"][0],
            "row": r.neighbour.row, "direction": r.neighbour.label,
            "value_by_level": list(ev.level_values) if ev else [],
            "first_message_bound": ev.first_message_bound if ev else math.nan,
        })
    return {"dataset": "wine", "topology": "paper-ring4", "T": 5, "c": 5, "observer": OBSERVER,
            "target": TARGET, "delta": DELTA, "epsilon": EPSILON, "search": SEARCH, "rows": rows,
            "alpha": float(params.alpha[0]), "sigma_q": float(params.sigma_q)}


def _by_schedule(numbers: dict | None) -> dict[tuple[str, float], dict]:
    """The observer rows of a stored file by ``(schedule, scale)`` (``{}`` for ``None``)."""
    if numbers is None:
        return {}
    return {(r["schedule"], float(r["scale"])): r for r in numbers["rows"]
            if r.get("view", "observer") == "observer"}


def _upper_text(r: dict | None) -> str:
    if r is None:
        return ""
    eps = float(r["epsilon_upper"])
    return "none (rank > 1)" if math.isnan(eps) else round_up(eps, 4)  # never below the bound


def table(numbers: dict[str, object], upper: dict | None = None) -> str:
    """The markdown table of docs/privacy.md: the lower estimates of the worst neighbour found (ranked by
    exact epsilon) and agent 1's certified upper bound on epsilon at delta = 1e-5 (``upper``)."""
    lines = ["| noise schedule `sigma_p(t)` | exact epsilon at delta = 1e-5 | rdp | chernoff "
             "| exact delta at epsilon = 5 (same neighbour) "
             "| certified upper bound on epsilon at delta = 1e-5 | first-message bound (epsilon) |",
             "|---|---|---|---|---|---|---|"]
    by_upper = _by_schedule(upper)
    for r in numbers["rows"]:  # type: ignore[union-attr]
        if r["view"] != "observer":
            continue
        key = (r["schedule"], float(r["scale"]))
        name = (f"Corollary 1 geometric ({r['sigma_p_first']:.2g} ... {r['sigma_p_last']:.2g})"
                if r["schedule"] == "geometric" else f"constant {r['scale']:g}")
        lines.append(f"| {name} | {r['epsilon_exact']:.4g} | {r['epsilon_rdp']:.4g} | "
                     f"{r['epsilon_chernoff']:.4g} | {r['delta_exact_at_5']:.3g} | "
                     f"{_upper_text(by_upper.get(key))} | {r['first_message_bound']:.4g} |")
    return "\n".join(lines)


def upper_sentence(numbers: dict, upper: dict) -> str:
    """Agent 1's certified upper bound against the lower estimates of the table (docs/privacy.md)."""
    by_upper = _by_schedule(upper)
    rows = [r for r in numbers["rows"] if r["view"] == "observer"]
    ratio = [by_upper[(r["schedule"], float(r["scale"]))]["epsilon_upper"] / r["epsilon_exact"]
             for r in rows]
    ups = [by_upper[(r["schedule"], float(r["scale"]))] for r in rows]
    trivial = all(u["delta_upper_at_5"] >= 1.0 for u in ups)
    return (f"the certified upper bound on epsilon at delta = 1e-5 is {min(ratio):.3g} to "
            f"{max(ratio):.3g} times the lower estimate"
            + ("; at epsilon = 5 it proves no delta below 1 at any schedule" if trivial else ""))


def stored_table() -> str:
    """The table of the two stored files."""
    import json

    def read(path: Path) -> dict:
        return json.loads(path.read_text(encoding="utf-8"))

    return table(read(OUT), read(UPPER))


def main() -> int:
    from _numbers import store_or_check  # scripts/ is on sys.path when a script runs

    rc, numbers = store_or_check(__doc__.splitlines()[0], compute, OUT, table)
    if numbers is not None:
        paper = [r for r in numbers["rows"] if r["view"] == "paper"][0]
        print(f"paper view at constant 1: exact epsilon {paper['epsilon_exact']:.4g}")
    return rc

if __name__ == "__main__":
    raise SystemExit(main())
