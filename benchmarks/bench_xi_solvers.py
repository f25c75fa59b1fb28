"""Applications of ``Xi`` needed by eigensolvers for the leading moduli (docs/scale.md).

Counts calls of the ``Xi`` product made by ``eigsh`` at several tolerances, Krylov sizes, start vectors
and numbers of wanted moduli, and by ``lobpcg`` with a start block from the data; then times one product
both ways side by side: the plain :func:`dpgossip.protocols.ddppm.spectrum.xi_apply` and the prepared
:class:`~dpgossip.protocols.ddppm.spectrum.XiOperator` (gossip relabelled for locality, batched block
products).
Synthetic data ``d = 20``, 5 rows per agent (geometric spectrum, ratio 0.8, rows scaled into the unit
ball), ``c = 10``, ``k = 2`` moduli used by the rules. Usage::

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=src python benchmarks/bench_xi_solvers.py --agents 10000
    OPENBLAS_NUM_THREADS=1 PYTHONPATH=src python benchmarks/bench_xi_solvers.py --agents 100000 \
        --products-only
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import scipy.sparse.linalg as spla

from dpgossip.data.partition import PartitionedData
from dpgossip.data.synthetic import synthetic_data
from dpgossip.protocols.ddppm.spectrum import xi_apply, xi_operator, xi_start_vector
from dpgossip.topology import make_network
from dpgossip.topology.spectral import start_vector

C, D, K = 10, 20, 2


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--agents", type=int, default=10000)
    ap.add_argument("--topology", default="random_geometric")
    ap.add_argument("--products-only", action="store_true", help="only time the two products")
    args = ap.parse_args()
    m = args.agents
    raw = synthetic_data(5 * m, D, {"kind": "geometric", "ratio": 0.8}, rng=np.random.default_rng(1))
    X = raw.X / np.linalg.norm(raw.X, axis=1).max()
    data = PartitionedData(X=X, sizes=(5,) * m, name="synthetic")
    W = make_network(args.topology, agents=m, seed=1).W
    xop = xi_operator(data, W, C)
    if not args.products_only:
        count_solvers(data, xop)
    time_products(data, W, xop)


def time_products(data: PartitionedData, W: object, xop: object) -> None:
    """Seconds per product of ``xi_apply`` and of ``XiOperator.apply``, interleaved, and their ratio."""
    q = np.random.default_rng(0).standard_normal(data.n)
    plain, prepared = [], []
    for _ in range(5):
        t = time.perf_counter()
        a = xi_apply(data, W, C, q)
        plain.append(time.perf_counter() - t)
        t = time.perf_counter()
        b = xop.apply(q)
        prepared.append(time.perf_counter() - t)
    diff = float(np.max(np.abs(a - b)) / np.max(np.abs(a)))
    p, r = float(np.median(plain)), float(np.median(prepared))
    print(f"one product of Xi (median of 5): xi_apply {p:.4f} s, XiOperator {r:.4f} s, "
          f"ratio {p / r:.1f}x, largest relative difference {diff:.1e}")


def count_solvers(data: PartitionedData, xop: object) -> None:
    """Applications of ``Xi`` per solver setting (a wrapper counts them)."""
    X = data.X
    count = [0]

    def apply(v: np.ndarray) -> np.ndarray:
        count[0] += 1
        return xop.apply(np.ravel(v))

    def matmat(V: np.ndarray) -> np.ndarray:
        return np.column_stack([apply(V[:, j]) for j in range(V.shape[1])])

    op = spla.LinearOperator((data.n, data.n), matvec=apply, matmat=matmat, dtype=float)
    s1 = np.linalg.norm(X, 2)
    cases = [("eigsh 4 wanted, tol 1e-10, 32 vectors, random start", 4, 1e-10, 32, start_vector(data.n)),
             ("eigsh 4 wanted, tol 1e-6, 12 vectors, random start", 4, 1e-6, 12, start_vector(data.n)),
             ("eigsh 4 wanted, tol 1e-6, 32 vectors, random start", 4, 1e-6, 32, start_vector(data.n)),
             ("eigsh 4 wanted, tol 1e-6, 32 vectors, start X(v1+..+v4)", 4, 1e-6, 32,
              xi_start_vector(data, 4)),
             ("eigsh 3 wanted, tol 1e-6, 20 vectors, start X(v1+..+v3)", 3, 1e-6, 20,
              xi_start_vector(data, 3))]
    print(f"{'solver':<56} {'applications':>12} {'time s':>7}  moduli")
    for name, want, tol, ncv, v0 in cases:
        count[0], t = 0, time.perf_counter()
        th = spla.eigsh(op, k=want, which="LM", v0=v0, tol=tol, ncv=ncv)[0]
        mu = np.sort(np.abs(th))[::-1][:K + 1]
        print(f"{name:<56} {count[0]:>12} {time.perf_counter() - t:>7.2f}  {np.round(mu, 2)}")
    for b in (3, 5):
        _, _, Vt = np.linalg.svd(X, full_matrices=False)
        count[0], t = 0, time.perf_counter()
        th = spla.lobpcg(op, X @ Vt[:b].T, tol=1e-6 * s1**2, maxiter=500, largest=True)[0]
        mu = np.sort(np.abs(th))[::-1][:K + 1]
        print(f"{f'lobpcg block {b} from X v_j, residual 1e-6 s1^2':<56} {count[0]:>12} "
              f"{time.perf_counter() - t:>7.2f}  {np.round(mu, 2)}")


if __name__ == "__main__":
    main()
