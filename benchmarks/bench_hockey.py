"""Benchmark of the exact hockey-stick divergence for few-term privacy-loss laws: the conditioned
quadrature (used for two quadratic terms, or one and a Gaussian part) against Imhof's inversion integral
forced on the same laws, side by side in one run, with the largest difference.

    python benchmarks/bench_hockey.py [--laws 20] [--seed 0]

The laws are those of zero-mean Gaussian pairs with two nontrivial generalised eigenvalues
``lam = exp(N(0, 1))`` (the first-message sub-view and many full views of a one-row change have this
shape), or one eigenvalue and a Gaussian part; delta at epsilon 0.5, 2 and 5.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from dpgossip.privacy.plrv import QuadraticFormLaw, privacy_loss_law


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--laws", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    t_new = t_old = 0.0
    worst = 0.0
    count = 0
    for i in range(args.laws):
        if i % 2 == 0:
            lam = np.exp(rng.normal(0.0, 1.0, 2))
            law = privacy_loss_law(lam, np.zeros(2))
        else:
            base = privacy_loss_law(np.exp(rng.normal(0.0, 1.0, 1)), rng.normal(0.0, 0.5, 1))
            law = QuadraticFormLaw(base.alpha, base.beta, 0.3, base.c + 0.045)
        for x in (0.5, 2.0, 5.0):
            t = time.perf_counter()
            new = law.hockey_stick(x).value
            t_new += time.perf_counter() - t
            t = time.perf_counter()
            old = law.inversion_hockey(x).value
            t_old += time.perf_counter() - t
            worst = max(worst, abs(new - old))
            count += 1
    print(f"{count} values: conditioned quadrature {t_new:.3f} s, Imhof {t_old:.3f} s "
          f"(ratio {t_old / t_new:.0f}x); largest difference {worst:.2e}")


if __name__ == "__main__":
    main()
