"""capepca-gossip's views against capePCA's (docs/cape-gossip.md): exact epsilon per view and network.

Noise matched to capePCA at site level tau (Imtiaz and Sarwate's Eq. (2)): own draws tau_g = tau /
sqrt(S), and every edge draw tau_e = tau sqrt((1 - 1/S) / deg) on a ring (deg = 2), so each site's
zero-sum part E_s has capePCA's
variance (1 - 1/S) tau^2 and the gossip limit has capePCA's aggregate noise tau^2 / S^2. tau is
calibrate_cape_noise(1, 1e-5, S, view="site"): capePCA's single release is exactly (1, 1e-5)-DP under row
replacement. For each network and c, the worst site (largest exact epsilon at delta = 1e-5) of: a
neighbour (site 0), the coalition of site 1's two neighbours (0 and 2, which share both of site 1's edge
draws), an eavesdropper on one edge (0, 1), an eavesdropper on every edge; capePCA's aggregator view
beside them.

    PYTHONPATH=src python scripts/cape_gossip_views.py   # prints; writes docs/numbers/cape-gossip-views.json
    PYTHONPATH=src python scripts/cape_gossip_views.py --check
"""

from __future__ import annotations

import math
from pathlib import Path

from dpgossip.protocols.cape.gossip import CapeGossipParams
from dpgossip.protocols.cape.gossip_audit import audit_cape_gossip
from dpgossip.protocols.cape.guarantee import calibrate_cape_noise, cape_guarantee
from dpgossip.protocols.cape.star import CapeParams
from dpgossip.rounding import format_upper
from dpgossip.topology import make_network

OUT = Path(__file__).resolve().parents[1] / "docs" / "numbers" / "cape-gossip-views.json"
DELTA, ROWS = 1e-5, 100
SETTINGS = (("paper-ring4", 4, 1), ("paper-ring4", 4, 5), ("ring", 16, 1), ("ring", 16, 3),
            ("ring", 16, 10))


def _worst(net, params, **view) -> float:
    return max(p.epsilon for p in audit_cape_gossip(net, params, (ROWS,) * net.m, delta=DELTA, **view))


def compute() -> dict[str, object]:
    """One row per (network, c)."""
    rows = []
    for topology, m, c in SETTINGS:
        net = make_network(topology, agents=None if topology == "paper-ring4" else m)
        mult = calibrate_cape_noise(1.0, DELTA, m, view="site")
        params = CapeGossipParams(k=1, consensus_steps=c, edge_multiplier=mult * math.sqrt((1 - 1 / m) / 2),
                                  own_multiplier=mult / math.sqrt(m))
        rows.append({
            "topology": topology, "sites": m, "c": c, "noise_multiplier": mult,
            "neighbour": _worst(net, params, view="neighbour", agents=[0]),
            "coalition": _worst(net, params, view="coalition", agents=[0, 2]),
            "edge": _worst(net, params, view="eavesdropper", edges=[(0, 1)]),
            "all_edges": _worst(net, params, view="eavesdropper", edges=list(net.graph.edges)),
            "cape_site": 1.0,
            "cape_aggregator": cape_guarantee((ROWS,) * m, CapeParams(k=1, noise_multiplier=mult),
                                              DELTA).epsilon_aggregator,
        })
    return {"delta": DELTA, "rows_per_site": ROWS, "rows": rows}


def table(numbers: dict[str, object]) -> str:
    """The markdown table of docs/cape-gossip.md."""
    lines = ["| network | c | neighbour (site 0) | coalition {0, 2} | eavesdropper on edge (0, 1) "
             "| eavesdropper on every edge | capePCA site | capePCA aggregator |",
             "|---|---|---|---|---|---|---|---|"]
    for r in numbers["rows"]:  # type: ignore[union-attr]
        name = "paper ring (4)" if r["topology"] == "paper-ring4" else f"ring ({r['sites']})"
        lines.append(f"| {name} | {r['c']} | {r['neighbour']:.3g} | {r['coalition']:.3g} | "
                     f"{r['edge']:.3g} | {r['all_edges']:.3g} | {format_upper(r['cape_site'], 3)} | "
                     f"{format_upper(r['cape_aggregator'], 3)} |")  # guarantees: rounded up
    return "\n".join(lines)


def main() -> int:
    from _numbers import store_or_check  # scripts/ is on sys.path when a script runs

    return store_or_check(__doc__.splitlines()[0], compute, OUT, table)[0]

if __name__ == "__main__":
    raise SystemExit(main())
