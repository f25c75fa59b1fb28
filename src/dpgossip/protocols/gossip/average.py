"""Synchronous gossip averaging with a mixing matrix.

One round replaces every agent's vector by the ``W``-weighted average of its own and its neighbours'
vectors: ``s^(k) = (W (x) I_d) s^(k-1)`` (docs/model.md, Section 1). After ``c`` rounds,
``||s^(c) - 1 s_bar^T|| <= SLEM(W)^c ||s^(0) - 1 s_bar^T||`` (Appendix A1 of Campbell et al.).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from dpgossip.topology.locality import LocalMixing, local_mixing

__all__ = ["LOCAL_FROM", "gossip", "gossip_states", "mixing_operator"]

_SPARSE_FROM = 64
LOCAL_FROM = 1000
"""Above this many agents a sparse ``W`` is relabelled for locality (:mod:`dpgossip.topology.locality`);
at or below it the products are the plain ones, so every result at those sizes keeps its bits."""

Mixing = np.ndarray | sp.csr_matrix | sp.csr_array | LocalMixing


def mixing_operator(W: np.ndarray | sp.sparray) -> Mixing:
    """``W`` as a CSR matrix when it is large and sparse, else as a dense array.

    A sparse ``W`` (a :class:`~dpgossip.topology.Network`'s) is kept as it is when large and sparse, with
    no ``m^2`` scan; the sizes that were dense before still get a dense array, so results do not change.
    Above :data:`LOCAL_FROM` agents a sparse ``W`` comes back relabelled for locality
    (:class:`~dpgossip.topology.locality.LocalMixing`; the same products up to rounding).
    """
    if sp.issparse(W):
        if W.shape[0] > LOCAL_FROM and W.nnz < 0.25 * W.shape[0] * W.shape[1]:
            return local_mixing(W)
        if W.shape[0] >= _SPARSE_FROM and W.nnz < 0.25 * W.shape[0] * W.shape[1]:
            return W
        return W.toarray()
    W = np.asarray(W, dtype=float)
    if W.shape[0] >= _SPARSE_FROM and np.count_nonzero(W) < 0.25 * W.size:
        return sp.csr_matrix(W)
    return W


def gossip(W: Mixing, S: np.ndarray, c: int) -> np.ndarray:
    """Apply ``c`` rounds: return ``W^c S`` for ``S`` of shape ``(m, d)``."""
    if isinstance(W, LocalMixing):
        return W.power(S, c)
    for _ in range(c):
        S = W @ S
    return np.asarray(S)


def gossip_states(W: Mixing, S: np.ndarray, c: int) -> np.ndarray:
    """All states ``s^(0..c)``, shape ``(c + 1, m, d)``; ``s^(k-1)`` is what is sent in round ``k``."""
    out = np.empty((c + 1,) + S.shape)
    out[0] = S
    if isinstance(W, LocalMixing):
        Sp = np.asarray(S)[W.perm]
        for k in range(1, c + 1):
            Sp = W.relabelled_product(Sp)
            out[k] = Sp[W.inverse]
        return out
    for k in range(1, c + 1):
        out[k] = W @ out[k - 1]
    return out
