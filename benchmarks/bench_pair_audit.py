"""The D-DP-PM pair audit on a ring: the shared search against the per-view search, side by side.

Setting (each run in its own child process, so that its peak memory is its own): a ring of ``m`` agents,
synthetic data with 32 rows of d = 4 per agent (flat spectrum 1, 0.9, 0.8, 0.7, not standardised, as
``scenarios/pairwise-leakage.toml``), T = 5, c = 3, constant noise of scale 1, the observer view, bounded
neighbours, delta = 1e-5, the RDP conversion (as the shipped scenario), one BLAS thread (the audit sets it).
Each pair's certified upper bound over its lower estimate (``gap_upper_lower``): median and worst pair.

For each size and search (``standard``: every view searched; ``shared``: the lead views searched, their
neighbours given to the others), ``--targets K`` audits the first K targets (every observer of each) and
prints wall and CPU seconds, seconds per (observer, target) pair, the all-pairs time extrapolated linearly
in the number of targets (printed as an estimate), peak memory (``ru_maxrss``) and the load average at
start and end; with both searches, the ratio of their times and of every pair's epsilon.

    python benchmarks/bench_pair_audit.py --agents 16 --targets 1 --searches standard shared
    python benchmarks/bench_pair_audit.py --agents 64 --targets 1 --searches shared
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

import numpy as np


def problem(m: int, seed: int = 0):
    """The benchmark's data, network and parameters at ``m`` agents (module docstring)."""
    from dpgossip.data import load_dataset
    from dpgossip.protocols.ddppm.params import NoiseSchedule, resolve_params
    from dpgossip.topology import make_network

    net = make_network("ring", agents=m)
    data = load_dataset("synthetic", agents=m, standardize=False,
                        synthetic={"n": 32 * m, "d": 4, "spectrum": [1.0, 0.9, 0.8, 0.7]},
                        rng=np.random.default_rng(seed))
    params = resolve_params(data, net, iterations=5, consensus_steps=3,
                            noise=NoiseSchedule(kind="constant", scale=1.0))
    return data, net, params


def one(m: int, targets: int, search: str) -> dict[str, object]:
    """One size and search in this process; the measured row."""
    from dpgossip.protocols.ddppm.audit import AuditOptions, audit_pairs

    data, net, params = problem(m)
    t0, c0 = time.perf_counter(), time.process_time()
    res = audit_pairs(data, net, params, delta=1e-5, epsilons=(1.0,), search=search, seed=0,
                      methods=("rdp",), options=AuditOptions(targets=list(range(targets))))
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    pairs = len(res.results)
    gaps = [float(r["gap_upper_lower"]) for r in res.rows()]
    return {"agents": m, "search": search, "targets": targets, "pairs": pairs, "wall_s": wall,
            "cpu_s": cpu, "s_per_pair": wall / pairs, "all_pairs_s_estimate": wall * m / targets,
            "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "gap_median": float(np.median(gaps)) if gaps else float("nan"),
            "gap_worst": max(gaps, default=float("nan")),
            "epsilon": {f"{o},{j}": r.epsilon["rdp"] for (o, j), r in sorted(res.results.items())}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--agents", type=int, nargs="+", default=[16])
    ap.add_argument("--targets", type=int, default=1)
    ap.add_argument("--searches", nargs="+", default=["standard", "shared"])
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(one(int(args.child[0]), int(args.child[1]), args.child[2])))
        return
    print(f"load average at start: {open('/proc/loadavg').read().split()[:3]}")
    for m in args.agents:
        rows = {}
        for search in args.searches:
            out = subprocess.run([sys.executable, __file__, "--child", str(m), str(args.targets),
                                  search], check=True, capture_output=True, text=True).stdout
            rows[search] = row = json.loads(out.strip().splitlines()[-1])
            print(f"m={m} {search:>8}: {row['pairs']} pairs, wall {row['wall_s']:.1f} s, cpu "
                  f"{row['cpu_s']:.1f} s, {row['s_per_pair']:.2f} s/pair (cpu "
                  f"{row['cpu_s'] / row['pairs']:.2f}), all pairs ~{row['all_pairs_s_estimate']:.0f}"
                  f" s wall, ~{row['cpu_s'] * m / args.targets:.0f} s cpu (estimates), peak "
                  f"{row['peak_mb']:.0f} MB; certified upper / lower per pair: median "
                  f"{row['gap_median']:.3g}, worst {row['gap_worst']:.3g}")
        if "standard" in rows and "shared" in rows:
            a, b = rows["standard"], rows["shared"]
            ratio = [b["epsilon"][k] / a["epsilon"][k] for k in a["epsilon"]]
            print(f"m={m}: shared / standard time: wall {b['wall_s'] / a['wall_s']:.3f}, cpu "
                  f"{b['cpu_s'] / a['cpu_s']:.3f}; epsilon shared / standard over "
                  f"{len(ratio)} pairs: min {min(ratio):.5f}, max {max(ratio):.5f}")
    print(f"load average at end: {open('/proc/loadavg').read().split()[:3]}")


if __name__ == "__main__":
    main()
