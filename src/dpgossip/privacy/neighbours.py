"""Neighbouring datasets (docs/model.md, Section 3) and candidate replacements for the worst-case search.

``bounded`` (default, as in Campbell et al.): ``X'`` equals ``X`` except one row ``x`` of the
target, replaced by ``x'`` with ``||x'|| <= 1`` and ``||x - x'|| <= 1``. ``replace-one``: any ``x'``
in the unit ball.

Candidates ``x' = x + t u`` for unit directions ``u`` (top right singular directions of ``X`` and of ``X_j``,
``-x``, random directions), with ``t`` the largest step the constraints allow.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Neighbour", "NEIGHBOUR_KINDS", "max_step", "is_neighbour"]

NEIGHBOUR_KINDS = ("bounded", "replace-one")


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class Neighbour:
    """Row ``row`` (global index) replaced by ``x_new``."""

    row: int
    x_new: np.ndarray
    label: str = ""

    def apply(self, X: np.ndarray) -> np.ndarray:
        """The neighbouring matrix ``X'``."""
        Xn = np.array(X, dtype=float)
        Xn[self.row] = self.x_new
        return Xn

    def to_row(self) -> dict[str, object]:
        """Tidy row; the replacement at full precision (each value's shortest ``repr``, which reads
        back to the same double), so a neighbour in a table can be evaluated again exactly."""
        return {"row": self.row, "replacement": " ".join(repr(float(v)) for v in self.x_new),
                "direction": self.label}


def max_step(x: np.ndarray, u: np.ndarray, kind: str = "bounded") -> float:
    """Largest ``t >= 0`` with ``||x + t u|| <= 1`` (and ``t <= 1`` for ``bounded``), ``||u|| = 1``.

    From ``||x||^2 + 2 t x.u + t^2 <= 1``: ``t = -x.u + sqrt((x.u)^2 + 1 - ||x||^2)``.
    """
    xu = float(x @ u)
    t = -xu + np.sqrt(max(xu * xu + 1.0 - float(x @ x), 0.0))
    return float(min(t, 1.0)) if kind == "bounded" else float(t)


def project(x: np.ndarray, y: np.ndarray, kind: str = "bounded") -> np.ndarray:
    """Euclidean projection of ``y`` onto the allowed replacements of ``x``.

    ``replace-one``: the unit ball. ``bounded``: the lens ``B(0, 1) ∩ B(x, 1)``. If the projection onto
    one ball lies in the other, it is the answer; otherwise the nearest point of the lens lies on the rim
    where both spheres meet, the ``(d-2)``-sphere of centre ``x/2`` and radius ``sqrt(1 - ||x||^2/4)`` in
    the hyperplane ``z . x = ||x||^2 / 2``: the component of ``y - x/2`` orthogonal to ``x``, rescaled.
    """
    y = np.asarray(y, dtype=float)

    def ball(c: np.ndarray | float, v: np.ndarray) -> np.ndarray:
        r = v - c
        nr = float(np.linalg.norm(r))
        return v if nr <= 1.0 else c + r / nr

    p0 = ball(0.0, y)
    if kind != "bounded" or np.linalg.norm(p0 - x) <= 1.0 + 1e-12:
        return p0
    p1 = ball(x, y)
    if np.linalg.norm(p1) <= 1.0 + 1e-12:
        return p1
    xx = float(x @ x)
    h = y - x / 2
    if xx > 0:
        h = h - (h @ x) / xx * x
    rho = np.sqrt(max(1.0 - xx / 4.0, 0.0))
    nh = float(np.linalg.norm(h))
    if nh == 0.0:  # y on the axis through 0 and x: any rim point is nearest; take one
        e = np.zeros_like(x)
        e[int(np.argmin(np.abs(x)))] = 1.0
        h = e - (e @ x) / xx * x if xx > 0 else e
        nh = float(np.linalg.norm(h))
    return x / 2 + rho * h / nh


def is_neighbour(x: np.ndarray, x_new: np.ndarray, kind: str = "bounded", tol: float = 1e-9) -> bool:
    """Whether replacing ``x`` by ``x_new`` is allowed."""
    ok = np.linalg.norm(x_new) <= 1 + tol
    if kind == "bounded":
        ok = ok and np.linalg.norm(x_new - x) <= 1 + tol
    return bool(ok)
