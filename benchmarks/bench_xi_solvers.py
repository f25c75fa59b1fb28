"""Applications of ``Xi`` needed by eigensolvers for the leading moduli (docs/scale.md, issue 15).

Counts calls of :func:`dpgossip.protocol.spectrum.xi_apply` made by ``eigsh`` at several tolerances,
Krylov sizes and start vectors, and by ``lobpcg`` with a start block from the data. Synthetic data
``d = 20``, 5 rows per agent (geometric spectrum, ratio 0.8, rows scaled into the unit ball), ``c = 10``,
the ``k + 2 = 4`` largest moduli (``k = 2``). Usage::

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=src python benchmarks/bench_xi_solvers.py --agents 10000
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import scipy.sparse.linalg as spla

from dpgossip.data.partition import PartitionedData
from dpgossip.data.synthetic import synthetic_data
from dpgossip.protocol.spectrum import xi_apply, xi_start_vector
from dpgossip.topology import make_network
from dpgossip.topology.spectral import start_vector

C, D, K = 10, 20, 2


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--agents", type=int, default=10000)
    ap.add_argument("--topology", default="random_geometric")
    args = ap.parse_args()
    m = args.agents
    raw = synthetic_data(5 * m, D, {"kind": "geometric", "ratio": 0.8}, rng=np.random.default_rng(1))
    X = raw.X / np.linalg.norm(raw.X, axis=1).max()
    data = PartitionedData(X=X, sizes=(5,) * m, name="synthetic")
    W = make_network(args.topology, agents=m, seed=1).W
    count = [0]

    def apply(v: np.ndarray) -> np.ndarray:
        count[0] += 1
        return xi_apply(data, W, C, np.ravel(v))

    def matmat(V: np.ndarray) -> np.ndarray:
        return np.column_stack([apply(V[:, j]) for j in range(V.shape[1])])

    op = spla.LinearOperator((data.n, data.n), matvec=apply, matmat=matmat, dtype=float)
    s1 = np.linalg.norm(X, 2)
    cases = [("eigsh tol 1e-10, 32 vectors, random start", 1e-10, 32, start_vector(data.n)),
             ("eigsh tol 1e-6, 12 vectors, random start", 1e-6, 12, start_vector(data.n)),
             ("eigsh tol 1e-6, 32 vectors, random start", 1e-6, 32, start_vector(data.n)),
             ("eigsh tol 1e-6, 32 vectors, start X(v1+..+v4)", 1e-6, 32,
              xi_start_vector(data, K + 2))]
    print(f"{'solver':<48} {'applications':>12} {'time s':>7}  moduli")
    for name, tol, ncv, v0 in cases:
        count[0], t = 0, time.perf_counter()
        th = spla.eigsh(op, k=K + 2, which="LM", v0=v0, tol=tol, ncv=ncv)[0]
        mu = np.sort(np.abs(th))[::-1][:K + 1]
        print(f"{name:<48} {count[0]:>12} {time.perf_counter() - t:>7.2f}  {np.round(mu, 2)}")
    for b in (3, 5):
        _, _, Vt = np.linalg.svd(X, full_matrices=False)
        count[0], t = 0, time.perf_counter()
        th = spla.lobpcg(op, X @ Vt[:b].T, tol=1e-6 * s1**2, maxiter=500, largest=True)[0]
        mu = np.sort(np.abs(th))[::-1][:K + 1]
        print(f"{f'lobpcg block {b} from X v_j, residual 1e-6 s1^2':<48} {count[0]:>12} "
              f"{time.perf_counter() - t:>7.2f}  {np.round(mu, 2)}")


if __name__ == "__main__":
    main()
