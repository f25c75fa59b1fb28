"""Time of the block products ``D^T q`` and ``D Z`` (:mod:`dpgossip.data.blocks`) against the plain numpy
expressions, and of one application of ``Xi`` (``protocols/ddppm/spectrum.py::xi_apply``) against the same
formula written with the block products, on a ring (5 rows per agent, ``d = 20``, ``c = 10``); and of
the blocked QR factorisations of :mod:`dpgossip.data.tall` against LAPACK's on the same ``n x d`` data
(``top_singular`` against the full SVD it replaces from 131,072 rows, ``tall_qr`` against ``np.linalg.qr``).

Usage::

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=src python benchmarks/bench_blocks.py --agents 1000000

Prints the median of ``--repeats`` runs of each, side by side, and whether the results are equal bit for
bit (the block products) or their largest difference (the factorisations, equal only to rounding).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np

from dpgossip.data import PartitionedData
from dpgossip.data.blocks import block_products, block_projections
from dpgossip.data.tall import tall_qr
from dpgossip.protocols.ddppm.spectrum import xi_apply
from dpgossip.protocols.power import top_singular
from dpgossip.topology import make_network

ROWS, D, C = 5, 20, 10


def xi_apply_blocks(data: PartitionedData, W: object, c: int, q: np.ndarray) -> np.ndarray:
    """``xi_apply`` with the block products: ``m D (W^c (D^T q))``."""
    Z = block_projections(data.X, q, data.offsets)
    for _ in range(c):
        Z = W @ Z
    return data.m * block_products(data.X, Z, data.offsets)


def median_time(fn: Callable[[], np.ndarray], repeats: int) -> tuple[float, np.ndarray]:
    """Median wall time of ``fn()`` and its last result."""
    times, out = [], None
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return float(np.median(times)), out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--agents", type=int, default=100_000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    m = args.agents
    rng = np.random.default_rng(0)
    X = rng.standard_normal((ROWS * m, D))
    X /= np.linalg.norm(X, axis=1).max()
    data = PartitionedData(X=X, sizes=(ROWS,) * m)
    W = make_network("ring", agents=m, seed=rng).W
    q = rng.standard_normal(data.n)
    owner = data.agent_of_row()
    Z = rng.standard_normal((m, D))
    cases = [
        ("D^T q", lambda: np.add.reduceat(data.X * q[:, None], data.offsets[:-1], axis=0),
         lambda: block_projections(data.X, q, data.offsets)),
        ("D Z", lambda: np.einsum("nd,nd->n", data.X, Z[owner]),
         lambda: block_products(data.X, Z, data.offsets)),
        ("Xi q", lambda: xi_apply(data, W, C, q), lambda: xi_apply_blocks(data, W, C, q)),
    ]
    print(f"{m} agents, n = {data.n}, d = {D}, c = {C}; median of {args.repeats}")
    print(f"{'product':<8} {'plain s':>8} {'blocks s':>9} {'ratio':>6}  equal bits")
    for name, plain, fast in cases:
        t0, a = median_time(plain, args.repeats)
        t1, b = median_time(fast, args.repeats)
        print(f"{name:<8} {t0:>8.2f} {t1:>9.2f} {t0 / t1:>6.1f}  {a.tobytes() == b.tobytes()}")
    tall_cases(data.X, args.repeats)


def tall_cases(X: np.ndarray, repeats: int) -> None:
    """LAPACK's factorisations of the tall ``X`` against the blocked ones (largest difference)."""

    def lapack_u() -> np.ndarray:
        U = np.linalg.svd(X, full_matrices=False)[0][:, :1]
        return U * np.sign(U[np.argmax(np.abs(U[:, 0])), 0])

    def signed_q(f: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
        Q, R = f(X)
        return Q * np.sign(np.diag(R))

    cases = [("U_1 (svd)", lapack_u, lambda: top_singular(X, 1).U),
             ("Q (qr)", lambda: signed_q(np.linalg.qr), lambda: signed_q(tall_qr))]
    print(f"\n{'factor':<10} {'LAPACK s':>9} {'blocked s':>10} {'ratio':>6}  max difference")
    for name, plain, fast in cases:
        t0, a = median_time(plain, repeats)
        t1, b = median_time(fast, repeats)
        print(f"{name:<10} {t0:>9.2f} {t1:>10.2f} {t0 / t1:>6.1f}  {np.abs(a - b).max():.2g}")


if __name__ == "__main__":
    main()
