"""The RDP conversion of true Renyi curves: golden sections from the whole order range (``unimodal``,
what :mod:`dpgossip.privacy.rdp_batch` uses) against the 96-point grid then golden sections (what an
upper-bound curve with steps needs), side by side, interleaved, best of ``--repeats``.

    python benchmarks/bench_conversions.py [--pairs 400] [--repeats 5]

The pairs are random whitened Gaussian pairs of 1-40 eigenvalues (the sizes of the observer views
of the pairwise-leakage scenario), both conversions at the values the search asks for.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from dpgossip.privacy.conversions import rdp_to_delta_batch, rdp_to_epsilon_batch
from dpgossip.privacy.plrv import WhitenedPair
from dpgossip.privacy.rdp_batch import RenyiCurves


def _pairs(count: int, seed: int = 0) -> list[WhitenedPair]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        k = int(rng.integers(1, 41))
        lam = np.exp(rng.normal(0.0, rng.choice([0.1, 1.0, 3.0]), k))
        b = rng.normal(0.0, rng.choice([0.0, 0.3, 3.0]), k)
        out.append(WhitenedPair(lam, b, float(rng.choice([0.0, 0.5]))))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=400)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    curves = RenyiCurves(_pairs(args.pairs))
    jobs = {
        "epsilon at delta = 1e-5": lambda u: rdp_to_epsilon_batch(
            curves, 1e-5, a_max=curves.a_max, independent=True, unimodal=u),
        "delta at epsilon = 5": lambda u: rdp_to_delta_batch(
            curves, 5.0, a_max=curves.a_max, independent=True, unimodal=u),
    }
    print(f"{args.pairs} pairs, best of {args.repeats}")
    print(f"{'conversion':<26}{'grid (s)':>10}{'unimodal (s)':>14}{'ratio':>8}{'max rel diff':>14}")
    for name, job in jobs.items():
        best = {False: np.inf, True: np.inf}
        out = {}
        for _ in range(args.repeats):
            for u in (False, True):
                t = time.perf_counter()
                out[u] = job(u)
                best[u] = min(best[u], time.perf_counter() - t)
        fin = np.isfinite(out[False]) & (out[False] > 0)
        rel = np.max(np.abs(out[True][fin] - out[False][fin]) / out[False][fin], initial=0.0)
        print(f"{name:<26}{best[False]:>10.3f}{best[True]:>14.3f}{best[False] / best[True]:>8.2f}"
              f"{rel:>14.1e}")


if __name__ == "__main__":
    main()
