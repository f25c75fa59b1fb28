"""The D-DP-PM pair audit on a ring: the search's effort levels side by side.

Setting (each run in its own child process, so that its peak memory is its own): a ring of ``m`` agents,
synthetic data with 32 rows of d = 4 per agent (flat spectrum 1, 0.9, 0.8, 0.7, not standardised, as
``scenarios/pairwise-leakage.toml``), T = 5, c = 3, constant noise of scale 1, the observer view, bounded
neighbours, delta = 1e-5, the RDP conversion (as the shipped scenario), one BLAS thread (the audit sets it).
Each pair's certified upper bound over its lower estimate (``gap_upper_lower``): median and worst pair.

For each size and effort (``quick``, ``standard``, ``thorough``), ``--targets K`` audits the first K
targets (every observer of each; ``--targets 0``: all of them) on ``--workers`` processes and prints
wall and CPU seconds (the child's and its worker processes'), seconds per (observer, target) pair, the
all-pairs time extrapolated linearly in the number of targets (printed as an estimate when not every
target ran), peak memory (``ru_maxrss`` of the child and of its largest worker) and the load average at
start and end; with several efforts, the ratio of each one's times to the first one's and of every
pair's epsilon.

    python benchmarks/bench_pair_audit.py --agents 16 --targets 1 --searches quick standard
    python benchmarks/bench_pair_audit.py --agents 64 --targets 0 --searches standard --workers 2
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


def one(m: int, targets: int, search: str, workers: int = 1) -> dict[str, object]:
    """One size and search in this process; the measured row (``targets = 0``: every target)."""
    from dpgossip.protocols.ddppm.audit import AuditOptions, audit_pairs

    data, net, params = problem(m)
    targets = targets or m
    t0, c0 = time.perf_counter(), time.process_time()
    res = audit_pairs(data, net, params, delta=1e-5, epsilons=(1.0,), search=search, seed=0,
                      methods=("rdp",), options=AuditOptions(targets=list(range(targets)),
                                                             workers=workers))
    wall = time.perf_counter() - t0
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = time.process_time() - c0 + kids.ru_utime + kids.ru_stime
    pairs = len(res.results)
    gaps = [float(r["gap_upper_lower"]) for r in res.rows()]
    return {"agents": m, "search": search, "targets": targets, "pairs": pairs, "wall_s": wall,
            "cpu_s": cpu, "s_per_pair": wall / pairs, "all_pairs_s_estimate": wall * m / targets,
            "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "worker_peak_mb": kids.ru_maxrss / 1024,
            "gap_median": float(np.median(gaps)) if gaps else float("nan"),
            "gap_worst": max(gaps, default=float("nan")),
            "epsilon": {f"{o},{j}": r.epsilon["rdp"] for (o, j), r in sorted(res.results.items())}}


def report(m: int, rows: dict[str, dict], targets: int, workers: int) -> None:
    """Print each search's row and, against the first search, the ratios of times and epsilons."""
    for search, row in rows.items():
        est = "" if row["targets"] == m else " (estimates)"
        print(f"m={m} {search:>8} ({workers} process{'es' if workers > 1 else ''}): {row['pairs']} "
              f"pairs, wall {row['wall_s']:.1f} s, cpu {row['cpu_s']:.1f} s, {row['s_per_pair']:.3f} "
              f"s/pair (cpu {row['cpu_s'] / row['pairs']:.3f}), all pairs ~"
              f"{row['all_pairs_s_estimate']:.0f} s wall, ~{row['cpu_s'] * m / row['targets']:.0f} s "
              f"cpu{est}, peak {row['peak_mb']:.0f} MB (largest worker {row['worker_peak_mb']:.0f} "
              f"MB); certified upper / lower per pair: median {row['gap_median']:.3g}, worst "
              f"{row['gap_worst']:.3g}")
    names = list(rows)
    for other in names[1:]:
        a, b = rows[names[0]], rows[other]
        ratio = [b["epsilon"][k] / a["epsilon"][k] for k in a["epsilon"]]
        print(f"m={m}: {other} / {names[0]} time: wall {b['wall_s'] / a['wall_s']:.3f}, cpu "
              f"{b['cpu_s'] / a['cpu_s']:.3f}; epsilon {other} / {names[0]} over {len(ratio)} pairs: "
              f"min {min(ratio):.12f}, max {max(ratio):.12f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--agents", type=int, nargs="+", default=[16])
    ap.add_argument("--targets", type=int, default=1)
    ap.add_argument("--searches", nargs="+", default=["quick", "standard"])
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--json", help="write every row (with each pair's epsilon) to this file")
    ap.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(one(*(int(a) if i != 2 else a for i, a in enumerate(args.child)))))
        return
    print(f"load average at start: {open('/proc/loadavg').read().split()[:3]}")
    out = []
    for m in args.agents:
        rows = {}
        for search in args.searches:
            text = subprocess.run([sys.executable, __file__, "--child", str(m), str(args.targets),
                                   search, str(args.workers)], check=True, capture_output=True,
                                  text=True).stdout
            rows[search] = json.loads(text.strip().splitlines()[-1])
            print(f"  (m={m} {search} done; load average {open('/proc/loadavg').read().split()[:3]})",
                  flush=True)
        report(m, rows, args.targets, args.workers)
        out.extend(rows.values())
    print(f"load average at end: {open('/proc/loadavg').read().split()[:3]}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh)


if __name__ == "__main__":
    main()
