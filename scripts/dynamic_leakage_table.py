"""The table of docs/dynamic-leakage.md: leakage of noisy gossip averaging over 100 sampled schedules.

    python scripts/dynamic_leakage_table.py           # writes docs/numbers/dynamic-leakage.json, prints
    python scripts/dynamic_leakage_table.py --check   # recompute and compare with the stored numbers

Setting: the 6 x 6 grid, ``gossip-average`` with ``sigma = 1``, ``Delta = 1``, observer agent 14, Renyi
order 2 and ``delta = 1e-5``.  Two samplers (seeded, private to this script): randomized pairwise gossip
(144 ticks, each averaging the ends of one edge drawn uniformly) and random matchings (6 steps, each a
greedy maximal matching of the edges in random order).  For each graph distance from the observer the
row gives the exact known-schedule leakage over every (schedule, target) pair (mean, median, 90 %
quantile, maximum), the Monte Carlo estimate of the schedule-and-messages release (which bounds the
observer that does not know the schedule), and Muffliato's per-message charge along each schedule with
the number of pairs where it falls below the exact value.  Every max and mixture column is over the
SAMPLED schedules: an estimate, not a certified bound over all schedules.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from dpgossip.privacy.linear_audit import LinearAuditSettings
from dpgossip.protocols.gossip.dynamic_release import matching_matrix, pairwise_matrix
from dpgossip.protocols.gossip.linear import LinearGossip
from dpgossip.protocols.gossip.schedule_mixture import SAMPLED_NOTE, sampled_spread
from dpgossip.topology import make_network

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _numbers import store_or_check  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "numbers" / "dynamic-leakage.json"
SCHEDULES, OBSERVER, SIDE = 100, 14, 6
TICKS, MATCHINGS = 4 * SIDE * SIDE, 6
SETTINGS = LinearAuditSettings(sensitivity=1.0, orders=(2.0,), delta=1e-5)


def _edges(graph) -> list[tuple[int, int]]:
    return sorted((min(e), max(e)) for e in graph.edges)


def pairwise_ticks(graph, ticks: int, seed: int) -> list:
    """Randomized pairwise gossip: at each tick one edge drawn uniformly averages its two ends."""
    rng = np.random.default_rng(seed)
    edges, m = _edges(graph), graph.number_of_nodes()
    return [pairwise_matrix(m, *edges[int(k)]) for k in rng.integers(len(edges), size=ticks)]


def random_matchings(graph, steps: int, seed: int) -> list:
    """Each step a greedy maximal matching: edges in random order, kept when both ends are free."""
    rng = np.random.default_rng(seed)
    edges, m = _edges(graph), graph.number_of_nodes()
    out = []
    for _ in range(steps):
        free = np.ones(m, dtype=bool)
        pairs = []
        for k in rng.permutation(len(edges)):
            i, j = edges[k]
            if free[i] and free[j]:
                free[[i, j]] = False
                pairs.append((i, j))
        out.append(matching_matrix(m, pairs))
    return out


def compute() -> dict:
    """Every row of the table (docs/numbers/dynamic-leakage.json)."""
    net = make_network("grid", agents=SIDE * SIDE, params={"rows": SIDE, "cols": SIDE})
    rows = []
    for name, sample, T in (("randomized pairwise gossip", pairwise_ticks, TICKS),
                            ("random matchings", random_matchings, MATCHINGS)):
        spec = LinearGossip(rounds=T, sigma=1.0)
        schedules = [sample(net.graph, T, seed) for seed in range(SCHEDULES)]
        for r in sampled_spread(schedules, spec, OBSERVER, net.graph, SETTINGS):
            rows.append({"schedule": name, "steps": T, **r.to_row()})
    return {"note": SAMPLED_NOTE, "rows": rows}


def _f(v: float) -> str:
    return f"{v:.3g}"


def table(numbers: dict) -> str:
    """The markdown table of docs/dynamic-leakage.md."""
    lines = ["| schedule | d | targets | exact RDP mean | median | q90 | max (sampled) | "
             "mixture RDP (MC) | exact eps mean | eps max (sampled) | mixture eps (MC) | "
             "Muffliato charge mean | charge max | charge < exact |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in numbers["rows"]:
        pairs = r["targets"] * r["schedules"]
        lines.append(f"| {r['schedule']} ({r['steps']} steps) | {r['distance']} | {r['targets']} | "
                     f"{_f(r['exact_rdp_mean'])} | {_f(r['exact_rdp_median'])} | {_f(r['exact_rdp_q90'])} | "
                     f"{_f(r['exact_rdp_max'])} | {_f(r['mixture_rdp'])} | {_f(r['exact_eps_mean'])} | "
                     f"{_f(r['exact_eps_max'])} | {_f(r['mixture_eps'])} | {_f(r['bound_mean'])} | "
                     f"{_f(r['bound_max'])} | {r['below_exact']} / {pairs} |")
    return "\n".join(lines) + f"\n\n({numbers['note']}.)"


if __name__ == "__main__":
    code, _ = store_or_check(__doc__.splitlines()[0], compute, OUT, table)
    sys.exit(code)
