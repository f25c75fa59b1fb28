"""Benchmarks of the two audits that dominated scenarios/protocol-frontier.toml.

Side by side in one run, on one dataset over the 16-agent ring (the scenario's setting, budget 1,
repeat 0, one BLAS thread):

1. ``audit_ppm`` (row replacement, the scenario's ppm / ppm-federated audit): the vectorised search
   against the same search written start by start with the scalar ``project`` / ``_climb`` (the code
   before the change); both print mu and the row, which must agree.
2. ``audit_floorfree`` (eavesdropper): every row of agents 0-3 climbed by SLSQP (``rows=None``, the
   former scenario setting) against every row of every agent screened in closed form and the 8 best
   climbed (``rows=8``, the scenario's ``audit_rows``); both print the worst epsilon found.

    python benchmarks/bench_frontier_audits.py [--dataset breast_cancer]
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from dpgossip._threads import blas_threads
from dpgossip.data import load_dataset
from dpgossip.privacy.accountant import calibrate_zcdp_noise
from dpgossip.privacy.mechanism import analytic_gaussian_sigma
from dpgossip.privacy.neighbours import project
from dpgossip.protocols.ddppm.floorfree import FloorFreeParams, run_floorfree
from dpgossip.protocols.ddppm.floorfree_audit import audit_floorfree
from dpgossip.protocols.ppm.audit import _climb, audit_ppm, replacement_mu2, trajectory_metric
from dpgossip.protocols.ppm.central import PpmParams, run_ppm
from dpgossip.topology import make_network


def scalar_ppm_search(X: np.ndarray, result, kind: str, rows: int = 16, random: int = 4,
                      steps: int = 60, seed: int = 0) -> tuple[float, int]:
    """audit_ppm's search start by start (the implementation before vectorisation)."""
    P = trajectory_metric(result)
    _, E = np.linalg.eigh(P)
    rng = np.random.default_rng(seed)
    screened = []
    for r, x in enumerate(X):
        raw = (-x, *E.T, *(-E.T), *rng.standard_normal((random, X.shape[1])))
        starts = [project(x, y0, kind) for y0 in raw]
        screened.append((max(replacement_mu2(P, x, y) for y in starts), r, starts))
    best = (-math.inf, 0)
    for _, r, starts in sorted(screened, key=lambda t: -t[0])[:rows]:
        for y0 in starts:
            f, _ = _climb(P, X[r], y0, kind, steps)
            if f > best[0]:
                best = (f, r)
    return math.sqrt(max(best[0], 0.0)), best[1]


def _timed(fn):
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def bench_ppm(data) -> None:
    params = PpmParams(p=1, k=1, iterations=5, noise_multiplier=calibrate_zcdp_noise(1.0, 1e-5, 5))
    res = run_ppm(data, params, np.random.SeedSequence(13, spawn_key=(0,)))
    old, t_old = _timed(lambda: scalar_ppm_search(data.X, res, "replace-one"))
    new, t_new = _timed(lambda: audit_ppm(data, res, neighbours="replace-one"))
    print(f"audit_ppm  scalar: mu {old[0]:.12g} row {old[1]}  {t_old:.2f} s")
    print(f"audit_ppm  batched: mu {new.mu:.12g} row {new.row}  {t_new:.2f} s  ({t_old / t_new:.1f}x)")


def bench_floorfree(data, net) -> None:
    s = analytic_gaussian_sigma(1.0, 1e-5, math.sqrt(6))
    res = run_floorfree(data, net, FloorFreeParams(iterations=5, consensus_steps=10,
                                                   noise_multiplier=s), 0)
    full, t_full = _timed(lambda: audit_floorfree(data, net, res, view="eavesdropper",
                                                  targets=range(4)))
    fast, t_fast = _timed(lambda: audit_floorfree(data, net, res, view="eavesdropper", rows=8))
    print(f"floorfree  4 targets, every row climbed: eps {max(p.epsilon for p in full):.4g}  "
          f"{t_full:.2f} s")
    print(f"floorfree  16 targets, 8 rows climbed:  eps {max(p.epsilon for p in fast):.4g}  "
          f"{t_fast:.2f} s  ({t_full / t_fast:.1f}x)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="breast_cancer")
    args = ap.parse_args()
    data = load_dataset(args.dataset, agents=16)
    net = make_network("ring", agents=16, seed=0)
    with blas_threads(1):
        bench_ppm(data)
        bench_floorfree(data, net)


if __name__ == "__main__":
    main()
