"""Time of the block products ``D^T q`` and ``D Z`` (:mod:`dpgossip.data.blocks`) against the plain numpy
expressions, and of one application of ``Xi`` (``protocol/spectrum.py::xi_apply``) against the same
formula written with the block products, on a ring (5 rows per agent, ``d = 20``, ``c = 10``).

Usage::

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=src python benchmarks/bench_blocks.py --agents 1000000

Prints the median of ``--repeats`` runs of each, side by side, and whether the results are equal bit for bit.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np

from dpgossip.data import PartitionedData
from dpgossip.data.blocks import block_products, block_projections
from dpgossip.protocol.spectrum import xi_apply
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


if __name__ == "__main__":
    main()
