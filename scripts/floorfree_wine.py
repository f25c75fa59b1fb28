"""The floor-free D-DP-PM on Wine: audit, guarantee and error per noise level.

Wine (178 x 13, bundled), the paper's 4-agent ring (``paper-ring4``, its W), T = 5, c = 5, q^(T)
disseminated, bounded neighbours, delta = 1e-5. For each noise multiplier s:

* audited: the largest exact epsilon over the 12 (observer, target) pairs of the observer view, for the
  worst neighbour the search found (every row of the target), conditionally on the realised directions of
  the run with seed 0 (dpgossip.protocols.ddppm.floorfree_audit); ``audit_upper`` is its certified upper end;
  ``exact``: every observer recovers every direction from its view (true on this ring with c = 5);
* guarantee: the data-independent epsilon of the T + 1 composed Gaussian mechanisms (exact GDP, and
  dp_accounting's PLD and RDP; dpgossip.protocols.ddppm.floorfree_guarantee);
* error: mean over seeds 0..19 of sin(u_1, q^(T)) (the left singular vector, D-DP-PM's error) and of the
  largest sin(v_1, u_i^(T)) over agents (the right singular vector every agent holds).

    python scripts/floorfree_wine.py           # prints the table, writes docs/numbers/floorfree-wine.json
    python scripts/floorfree_wine.py --check   # recomputes; fails if the stored numbers differ
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dpgossip.data import load_dataset
from dpgossip.protocols.ddppm.floorfree import FloorFreeParams, run_floorfree
from dpgossip.protocols.ddppm.floorfree_audit import audit_floorfree
from dpgossip.protocols.ddppm.floorfree_guarantee import floorfree_guarantee
from dpgossip.protocols.metrics import sin_angle
from dpgossip.rounding import format_upper
from dpgossip.topology import make_network

OUT = Path(__file__).resolve().parents[1] / "docs" / "numbers" / "floorfree-wine.json"
LEVELS = (0.0, 1.0, 2.0, 3.0, 5.0, 7.0, 10.0, 20.0, 50.0)
DELTA, T, C, SEEDS = 1e-5, 5, 5, 20


def _errors(data, net, params: FloorFreeParams) -> tuple[float, float]:
    _, _, vt = np.linalg.svd(data.X, full_matrices=False)
    u1 = np.linalg.svd(data.X, full_matrices=False)[0][:, 0]
    left, right = [], []
    for seed in range(SEEDS):
        res = run_floorfree(data, net, params, seed)
        left.append(sin_angle(u1, res.Q[:, 0]))
        right.append(max(sin_angle(vt[0], u) for u in res.directions[-1]))
    return float(np.mean(left)), float(np.mean(right))


def compute() -> dict[str, object]:
    """One row per noise level (module docstring)."""
    net = make_network("paper-ring4")
    data = load_dataset("wine", agents=4)
    rows = []
    for s in LEVELS:
        params = FloorFreeParams(iterations=T, consensus_steps=C, noise_multiplier=s)
        err_q, err_u = _errors(data, net, params)
        row = {"noise_multiplier": s, "error_q": err_q, "error_u": err_u}
        if s > 0:
            pairs = audit_floorfree(data, net, run_floorfree(data, net, params, 0), delta=DELTA,
                                    restarts=1)
            worst = max(pairs, key=lambda p: p.epsilon)
            g = floorfree_guarantee(params, DELTA)
            row.update({"audit": worst.epsilon, "audit_upper": max(p.epsilon_upper for p in pairs),
                        "observer": worst.observer, "target": worst.target, "row": worst.row,
                        "exact": all(p.exact for p in pairs),
                        "guarantee_gdp": g.epsilon_gdp, "guarantee_pld": g.epsilon_pld,
                        "guarantee_rdp": g.epsilon_rdp})
        rows.append(row)
    top = float(np.linalg.svd(data.X, compute_uv=False)[0] ** 2)
    return {"dataset": "wine", "topology": "paper-ring4", "T": T, "c": C, "delta": DELTA,
            "seeds": SEEDS, "top_eigenvalue": top, "rows": rows}


def table(numbers: dict[str, object]) -> str:
    """The markdown table of docs/floorfree.md: the audit (a lower estimate) to nearest, the certified
    upper end and the guarantees (upper bounds) rounded up."""
    lines = ["| noise multiplier s | audited epsilon (worst pair) | certified upper end | guarantee (GDP) "
             "| guarantee (PLD) | guarantee (RDP) | error sin(u_1, q^(T)) | error sin(v_1, u^(T)) |",
             "|---|---|---|---|---|---|---|---|"]
    for r in numbers["rows"]:  # type: ignore[union-attr]
        if r["noise_multiplier"] == 0:
            lines.append(f"| 0 (no noise) | inf | inf | inf | inf | inf | {r['error_q']:.3f} | "
                         f"{r['error_u']:.3f} |")
            continue
        up = [format_upper(r[k], 4) for k in ("audit_upper", "guarantee_gdp", "guarantee_pld",
                                              "guarantee_rdp")]  # bounds: rounded up
        lines.append(f"| {r['noise_multiplier']:g} | {r['audit']:.4g} | {' | '.join(up)} | "
                     f"{r['error_q']:.3f} | {r['error_u']:.3f} |")
    return "\n".join(lines)


def main() -> int:
    from _numbers import store_or_check  # scripts/ is on sys.path when a script runs

    return store_or_check(__doc__.splitlines()[0], compute, OUT, table)[0]

if __name__ == "__main__":
    raise SystemExit(main())
