"""Per-iteration l2 sensitivity of the private power method (Nicolas et al., Section 3; derivation
in docs/ppm.md).

Iteration ``l`` releases ``Y_l = A V + G_l`` with ``A = X^T X`` (``d x d``) and ``V = X^(l-1)`` the
released iterate (``d x p``, orthonormal columns). Its sensitivity is

    Delta_l = sup_{A ~ A'} ||(A' - A) V||_F,

and depends on what counts as adjacent (``adjacency``) and on how it is bounded (``kind``):

``"element"`` (Nicolas et al., Eq. (7); the protected unit is a symmetric change ``C = A' - A`` of ``A`` with
``sqrt(sum_i ||C_i:||_1^2) <= 1``):

* ``"prior"``:    ``Delta_l = sqrt(p) ||V||_max``            (Nicolas et al., Eq. (3); Hardt-Price,
  Balcan et al.)
* ``"improved"``: ``Delta_l = max_i ||V_i:||_2``              (Nicolas et al., Theorem 3.1, Eq. (8))

``"row-replacement"`` (this project: one row ``x`` of ``X`` becomes ``x'``, ``||x||, ||x'|| <= 1``,
so ``C = x' x'^T - x x^T``):

* ``"prior"``:    ``Delta_l = sqrt(p)``       (each column: ``||C v||_2 <= ||C||_2 <= 1``; columns summed)
* ``"improved"``: ``Delta_l = sqrt(min(p, 2))`` (exact supremum: ``||C V||_F <= ||C||_F`` with ``C`` of
  rank 2, ``||C||_F^2 = ||x||^4 + ||x'||^4 - 2 <x, x'>^2 <= 2``; ``||C||_2 <= 1`` when ``p = 1``)

``"bounded-row-replacement"`` (the project's default neighbour kind ``"bounded"``: in addition
``||x - x'|| <= 1``):

* ``"prior"``:    ``Delta_l = sqrt(p)``
* ``"improved"``: ``Delta_l = 1`` for ``p = 1``, ``sqrt(3/2)`` for ``p >= 2`` (``||C||_F^2 <= 3/2``,
  attained by two unit vectors at 60 degrees)

The row-replacement bounds do not depend on ``V``: for every ``V`` the supremum is attained by two
vectors of its column space. ``"row-replacement"`` is the neighbour kind ``"replace-one"`` of
:mod:`dpgossip.privacy.neighbours`.
"""

from __future__ import annotations

import math

import numpy as np

from dpgossip.errors import ConfigError, check_choice

__all__ = ["ADJACENCIES", "SENSITIVITY_KINDS", "iterate_sensitivity", "element_sensitivity",
           "row_replacement_sensitivity", "replacement_change"]

ADJACENCIES = ("element", "row-replacement", "bounded-row-replacement")
"""``"element"``: Nicolas et al.'s Eq. (7) on ``A``; ``"row-replacement"``: one row of ``X``
replaced within the unit ball; ``"bounded-row-replacement"``: the same with ``||x - x'|| <= 1``."""
SENSITIVITY_KINDS = ("prior", "improved")
"""``"prior"``: the bound extrapolated column by column (``sqrt(p)``); ``"improved"``: the joint bound."""


def element_sensitivity(V: np.ndarray, kind: str = "improved") -> float:
    """Sensitivity of ``A V`` under Nicolas et al.'s element adjacency (Eq. (7)).

    Parameters
    ----------
    V : numpy.ndarray
        The iterate multiplied by ``A`` (``d x p``; any matrix, orthonormality is not used).
    kind : {"prior", "improved"}
        ``"prior"``: ``sqrt(p) ||V||_max`` (Nicolas et al., Eq. (3)); ``"improved"``: ``max_i ||V_i:||_2``
        (Nicolas et al., Theorem 3.1).

    Returns
    -------
    float
        ``Delta``; ``improved <= prior`` always (``||V_i:||_2 <= sqrt(p) max_j |V_ij|``).

    Notes
    -----
    For ``C`` symmetric with ``sqrt(sum_i ||C_i:||_1^2) <= 1``:
    ``||C V||_F^2 = sum_i ||sum_j C_ij V_j:||^2 <= sum_i (||C_i:||_1 max_j ||V_j:||)^2 <= max_j ||V_j:||^2``.
    ``C = e_j e_j^T`` attains it, so the improved bound is the exact supremum.
    """
    check_choice(kind, "kind", SENSITIVITY_KINDS)
    V = np.asarray(V, dtype=float)
    if kind == "prior":
        return math.sqrt(V.shape[1]) * float(np.max(np.abs(V)))
    return float(np.max(np.linalg.norm(V, axis=1)))


def row_replacement_sensitivity(p: int, kind: str = "improved", *, bounded: bool = False) -> float:
    """Sensitivity of ``X^T X V`` when one row of ``X`` is replaced, both rows in the unit ball.

    Parameters
    ----------
    p : int
        Number of columns of ``V`` (orthonormal).
    kind : {"prior", "improved"}
        ``"prior"``: ``sqrt(p)`` (one-column bound ``||C v|| <= ||C||_2 <= 1`` summed over columns);
        ``"improved"``: the exact supremum over ``x, x'`` and ``V``: ``sqrt(min(p, 2))``, or with
        ``bounded`` ``1`` (``p = 1``) and ``sqrt(3/2)`` (``p >= 2``).
    bounded : bool
        Also require ``||x - x'|| <= 1`` (the project's ``"bounded"`` neighbours).

    Returns
    -------
    float

    Notes
    -----
    ``C = x' x'^T - x x^T`` has rank <= 2 and eigenvalues ``lam_+ >= 0 >= lam_-`` with
    ``lam_+ + lam_- = ||x'||^2 - ||x||^2`` and ``lam_+ lam_- = <x, x'>^2 - ||x||^2 ||x'||^2``, so
    ``||C V||_F^2 = tr(V^T C^2 V) <= lam_+^2 + lam_-^2 = ||C||_F^2 = ||x||^4 + ||x'||^4 - 2 <x, x'>^2``,
    at most ``2``, or ``3/2`` when ``||x - x'|| <= 1`` forces ``<x, x'> >= (||x||^2 + ||x'||^2 - 1)/2``;
    when ``p = 1``, ``||C v|| <= max(lam_+, -lam_-) <= max(||x'||^2, ||x||^2) <= 1``. Equality: ``x, x'``
    in the column space of ``V`` (orthonormal; unit at 60 degrees when bounded; ``x = 0`` when
    ``p = 1``). Derivation in docs/ppm.md.
    """
    if isinstance(p, bool) or not isinstance(p, (int, np.integer)) or p < 1:
        raise ConfigError(f"p must be an integer >= 1, got {p!r}", field="p")
    check_choice(kind, "kind", SENSITIVITY_KINDS)
    if kind == "prior":
        return math.sqrt(p)
    if p == 1:
        return 1.0
    return math.sqrt(1.5) if bounded else math.sqrt(2.0)


def iterate_sensitivity(V: np.ndarray, adjacency: str, kind: str) -> float:
    """``Delta_l`` for the iterate ``V = X^(l-1)`` under ``adjacency`` with the bound ``kind``."""
    check_choice(adjacency, "adjacency", ADJACENCIES)
    if adjacency == "element":
        return element_sensitivity(V, kind)
    return row_replacement_sensitivity(int(np.shape(V)[1]), kind,
                                       bounded=adjacency == "bounded-row-replacement")


def replacement_change(x: np.ndarray, x_new: np.ndarray, V: np.ndarray) -> float:
    """The change ``||(x' x'^T - x x^T) V||_F`` of ``X^T X V`` when row ``x`` becomes ``x' = x_new``.

    Computed as ``||x' (V^T x')^T - x (V^T x)^T||_F`` without forming ``d x d`` matrices.
    """
    x = np.asarray(x, dtype=float)
    x_new = np.asarray(x_new, dtype=float)
    V = np.asarray(V, dtype=float)
    return float(np.linalg.norm(np.outer(x_new, V.T @ x_new) - np.outer(x, V.T @ x)))
