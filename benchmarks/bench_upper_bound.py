"""The certified upper bound (docs/upper-bound.md) for every target of a ring: time, peak memory, values.

Setting (each size in its own child process, so that its peak memory is its own; one BLAS thread): a ring
(``make_network("ring", agents=m)``), synthetic data with 32 rows of d = 4 per agent (spectrum 1, 0.9,
0.8, 0.7, not standardised, as ``bench_scale_audit.py``), T = 5, c = 3, constant noise of scale 1,
bounded neighbours, delta = 1e-5. The bound covers every observer of each target, so "all pairs" is one
bound per target. Peak memory is the child's maximum resident set size (``ru_maxrss``).

    python benchmarks/bench_upper_bound.py [--agents 64 256] [--delta 1e-5]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

import numpy as np
from bench_pair_audit import (
    problem,  # the same ring, data and parameters (benchmarks/ is on sys.path)
)


def child(m: int, delta: float) -> dict[str, object]:
    """Every target's bound at ``m`` agents, timed (run in a child process)."""
    from dpgossip._threads import blas_threads
    from dpgossip.protocols.ddppm.audit import upper_bounds

    data, net, params = problem(m)
    with blas_threads(1):
        t0 = time.perf_counter()
        bounds = upper_bounds(data, net, params, delta)
        seconds = time.perf_counter() - t0
    eps = np.array([b.epsilon for b in bounds.values()])
    fwd = np.array([b.epsilon_forward for b in bounds.values()])
    return {"agents": m, "seconds": seconds,
            "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "epsilon_median": float(np.median(eps)), "epsilon_max": float(eps.max()),
            "epsilon_min": float(eps.min()), "finite": int(np.isfinite(eps).sum()),
            "forward_binds": int(np.sum(fwd >= eps))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--agents", type=int, nargs="+", default=[64, 256])
    ap.add_argument("--delta", type=float, default=1e-5)
    ap.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child is not None:
        print(json.dumps(child(args.child, args.delta)))
        return
    print(f"load average at start: {open('/proc/loadavg').read().split()[:3]}")
    for m in args.agents:
        out = subprocess.run([sys.executable, __file__, "--child", str(m), "--delta", str(args.delta)],
                             capture_output=True, text=True, check=True)
        row = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"{m:5d} agents: {row['seconds']:8.2f} s, peak {row['peak_mb']:7.1f} MB, epsilon upper "
              f"at delta={args.delta:g}: median {row['epsilon_median']:.4g}, min "
              f"{row['epsilon_min']:.4g}, max {row['epsilon_max']:.4g} ({row['finite']} finite, "
              f"forward direction binding for {row['forward_binds']})")
    print(f"load average at end: {open('/proc/loadavg').read().split()[:3]}")


if __name__ == "__main__":
    main()
