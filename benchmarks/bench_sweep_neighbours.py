"""What the pass that shares neighbours across the points of a sweep costs, beside the sweep itself.

    python benchmarks/bench_sweep_neighbours.py [--agents 8] [--levels 4] [--repeats 2]

A D-DP-PM sweep over ``--levels`` constant noise scales (synthetic 16 rows per agent, d = 4, ring,
T = 3, c = 2, observer view, the standard search, RDP) is run once into a fresh folder (every point
searched, then the pass), then run again into the same folder: every point is resumed, so the second
run is the pass (:mod:`dpgossip.scenario.sweep_neighbours`) and the assembly alone. Printed: both
wall times (best of ``--repeats``), their ratio, and how many pairs the pass raised. One BLAS thread.
"""

from __future__ import annotations

import argparse
import csv
import tempfile
import time
from pathlib import Path

from threadpoolctl import threadpool_limits

from dpgossip.scenario import Scenario, run_scenario
from dpgossip.scenario.schema import validate


def _scenario(agents: int, levels: int) -> Scenario:
    scales = [0.001 * 3 ** k for k in range(levels)]
    raw = {"name": "bench-sweep-neighbours", "seed": 7, "repeats": 1,
           "data": {"source": "synthetic", "standardize": False,
                    "synthetic": {"n": 16 * agents, "d": 4, "spectrum": [1.0, 0.9, 0.8, 0.7]}},
           "network": {"topology": "ring", "agents": agents},
           "protocol": {"iterations": 3, "consensus_steps": 2,
                        "noise": [{"schedule": "constant", "scale": s} for s in scales]},
           "privacy": {"audit": True, "view": "observer", "methods": ["rdp"]},
           "output": {"plots": False}}
    return Scenario(validate(raw), None, raw)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--agents", type=int, default=8)
    ap.add_argument("--levels", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()
    sc = _scenario(args.agents, args.levels)
    first, second, raised = [], [], 0
    with threadpool_limits(1):
        for _ in range(args.repeats):
            with tempfile.TemporaryDirectory() as tmp:
                out = Path(tmp) / "out"
                t0 = time.perf_counter()
                run_scenario(sc, out, quiet=True)
                first.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                run_scenario(sc, out, quiet=True)
                second.append(time.perf_counter() - t0)
                with open(out / "leakage.csv", newline="", encoding="utf-8") as f:
                    rows = list(csv.DictReader(f))
                raised = sum(1 for r in rows if r.get("found_at_point"))
    print(f"{args.levels} points x {args.agents} agents ({len(rows)} pairs); best of {args.repeats}")
    print(f"| run (search + pass) | {min(first):8.2f} s |")
    print(f"| resumed (pass only) | {min(second):8.2f} s |")
    print(f"| pass / run          | {min(second) / min(first):8.3f}   |")
    print(f"pairs raised by the pass: {raised} of {len(rows)}")


if __name__ == "__main__":
    main()
