"""The table of docs/dynamic-leakage.md: leakage of noisy gossip averaging over 100 sampled schedules.

    python scripts/dynamic_leakage_table.py           # writes docs/numbers/dynamic-leakage.json, prints
    python scripts/dynamic_leakage_table.py --check   # recompute and compare with the stored numbers

Setting: the 6 x 6 grid, ``gossip-average`` with ``sigma = 1``, ``Delta = 1``, observer agent 14, Renyi
order 2 and ``delta = 1e-5``.  Two samplers of :mod:`dpgossip.topology.schedule_samplers`, seeded
``0..99``: randomized pairwise gossip (``pairwise_gossip``, Boyd et al.: 144 clock ticks, each of a
uniformly chosen agent that averages with a uniformly chosen neighbour) and random matchings
(``random_matchings``: 6 rounds, each a greedy maximal matching of the edges in random order).  For
each graph distance from the observer the row gives the exact known-schedule leakage over every
(schedule, target) pair (mean, median, 90 % quantile, maximum), the Monte Carlo estimate of the
schedule-and-messages release (which bounds the observer that does not know the schedule), and
Muffliato's per-message charge along each schedule with the flags: pairs where it falls below the
exact value, and targets where its mean over the schedules falls below the mean exact value and
below the mixture value.  Every column is over the SAMPLED schedules: the max columns are estimates
from below of the maximum over all schedules and the others estimates of expectations, none is a
certified bound.
"""

from __future__ import annotations

import sys
from pathlib import Path

from dpgossip.privacy.linear_audit import LinearAuditSettings
from dpgossip.protocols.gossip.linear import LinearGossip
from dpgossip.protocols.gossip.schedule_mixture import SAMPLED_NOTE, sampled_spread
from dpgossip.topology import make_network
from dpgossip.topology.schedule_samplers import (
    neighbour_probabilities,
    pairwise_gossip,
    random_matchings,
)

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _numbers import store_or_check  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "numbers" / "dynamic-leakage.json"
SCHEDULES, OBSERVER, SIDE = 100, 14, 6
TICKS, MATCHINGS = 4 * SIDE * SIDE, 6
SETTINGS = LinearAuditSettings(sensitivity=1.0, orders=(2.0,), delta=1e-5)


def pairwise_ticks(graph, ticks: int, seed: int):
    """Randomized pairwise gossip of Boyd et al.: ``ticks`` ticks, each of a uniformly chosen agent
    averaging with a uniformly chosen neighbour."""
    return pairwise_gossip(neighbour_probabilities(graph), seed, ticks=ticks)


def matchings(graph, steps: int, seed: int):
    """``steps`` rounds of a random maximal matching of the graph's edges."""
    return random_matchings(steps, seed, graph=graph)


def compute() -> dict:
    """Every row of the table (docs/numbers/dynamic-leakage.json)."""
    net = make_network("grid", agents=SIDE * SIDE, params={"rows": SIDE, "cols": SIDE})
    rows = []
    for name, sample, T in (("randomized pairwise gossip", pairwise_ticks, TICKS),
                            ("random matchings", matchings, MATCHINGS)):
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
             "Muffliato charge mean | charge max | charge < exact (pairs) | "
             "mean charge < mean exact (targets) | mean charge < mixture (targets) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in numbers["rows"]:
        pairs = r["targets"] * r["schedules"]
        lines.append(f"| {r['schedule']} ({r['steps']} steps) | {r['distance']} | {r['targets']} | "
                     f"{_f(r['exact_rdp_mean'])} | {_f(r['exact_rdp_median'])} | {_f(r['exact_rdp_q90'])} | "
                     f"{_f(r['exact_rdp_max'])} | {_f(r['mixture_rdp'])} | {_f(r['exact_eps_mean'])} | "
                     f"{_f(r['exact_eps_max'])} | {_f(r['mixture_eps'])} | {_f(r['bound_mean'])} | "
                     f"{_f(r['bound_max'])} | {r['below_exact']} / {pairs} | "
                     f"{r['mean_below_exact_mean']} / {r['targets']} | "
                     f"{r['mean_below_mixture']} / {r['targets']} |")
    return "\n".join(lines) + f"\n\n({numbers['note']}.)"


if __name__ == "__main__":
    code, _ = store_or_check(__doc__.splitlines()[0], compute, OUT, table)
    sys.exit(code)
