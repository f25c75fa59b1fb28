"""What every topology module shares about matrices: the canonical CSR form (:func:`as_csr`) in which
a network stores its mixing matrix, and the size up to which spectra are computed densely
(:data:`DENSE_MAX_AGENTS`).

It imports no other module of :mod:`dpgossip.topology`, so that the network
(:mod:`~dpgossip.topology.network`), its checks (:mod:`~dpgossip.topology.validate`) and the spectra
(:mod:`~dpgossip.topology.spectral`) can all use it.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = ["DENSE_MAX_AGENTS", "as_csr"]

DENSE_MAX_AGENTS = 1000
"""Largest ``m`` whose spectra are computed densely (``eigvalsh`` of an ``m x m`` matrix)."""


def as_csr(W: object) -> sp.csr_array:
    """``W`` (dense array or any scipy sparse matrix) as a float64 CSR array with sorted, summed indices.

    Explicit zeros are dropped, so the stored pattern is exactly the set of nonzero weights (the pattern a
    dense ``W != 0`` gives). The conversion copies values exactly.
    """
    if sp.issparse(W):
        A = sp.csr_array(W, dtype=float, copy=True)
    else:
        A = sp.csr_array(np.asarray(W, dtype=float))
    A.sum_duplicates()
    A.eliminate_zeros()
    A.sort_indices()
    return A
