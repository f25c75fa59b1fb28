"""Whether the iterates of a run are numbers: the arithmetic status of a result.

A power-method run multiplies its iterate by ``alpha Xi`` every iteration (``q^(t) = alpha Xi q^(t-1) +
p^(t)``, Eq. (13) of Campbell et al.), so with ``alpha`` or the noise scale far from Corollary 1's
range the iterates leave float64: they overflow to ``inf`` (or ``nan`` after ``inf - inf``), grow past
:data:`DIVERGENCE_BOUND` where their squared norms overflow, or shrink below the smallest normal
float (:data:`UNDERFLOW_BOUND`) and become zero, so that the normalised estimate ``q / ||q||`` is
``0`` or rounding noise. :func:`arithmetic_status` names the first iterate where that happens.

The scenario layer reuses this classification for the ``status`` column of ``runs.csv``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["ARITHMETIC_STATUSES", "DIVERGENCE_BOUND", "UNDERFLOW_BOUND", "ArithmeticStatus",
           "arithmetic_status", "iterate_problem", "problem_reason"]

ARITHMETIC_STATUSES: tuple[str, ...] = ("ok", "non-finite", "diverged", "underflow")
"""Values of :attr:`ArithmeticStatus.status`."""

DIVERGENCE_BOUND = 1e150
"""Largest iterate magnitude taken as a number: beyond it ``||q||^2`` overflows float64 (about
``1.8e308``) for any ``n`` below ``1e8``, so norms, angles and captured energy are meaningless."""

UNDERFLOW_BOUND = float(np.finfo(np.float64).tiny)
"""Smallest normal float64 (about ``2.2e-308``): an iterate whose entries are all below it in
magnitude is zero or subnormal (fewer than 53 significant bits), so its direction is lost."""



@dataclass(frozen=True, slots=True, kw_only=True)
class ArithmeticStatus:
    """The arithmetic status of a run's iterates.

    Attributes
    ----------
    status
        One of :data:`ARITHMETIC_STATUSES`.
    reason
        Why (empty for ``ok``): which component, which iteration, what value.
    component, iteration
        Where the first problem is (0-based component ``l``, iteration ``t``); ``None`` for ``ok``.
    """

    status: str
    reason: str = ""
    component: int | None = None
    iteration: int | None = None

    @property
    def ok(self) -> bool:
        """Whether every iterate is a usable number."""
        return self.status == "ok"

    def to_row(self) -> dict[str, object]:
        """``status`` and ``status_reason``."""
        return {"status": self.status, "status_reason": self.reason}


def iterate_problem(q: np.ndarray, not_computed_is_nan: bool = False) -> str | None:
    """What is wrong with one iterate ``q``.

    Returns
    -------
    str or None
        ``None`` if ``q`` is a usable vector; ``"non-finite"`` if it holds ``inf`` (or ``nan`` when
        ``not_computed_is_nan`` is false); ``""`` when it holds only ``nan`` marking iterations a
        stopped run did not compute; ``"diverged"`` if ``max |q_i| > DIVERGENCE_BOUND``;
        ``"underflow"`` if ``max |q_i| < UNDERFLOW_BOUND`` (all zero or subnormal).
    """
    finite = np.isfinite(q)
    if not finite.all():
        if np.isinf(q).any() or not not_computed_is_nan:
            return "non-finite"
        return ""
    if q.size:
        top = float(np.max(np.abs(q)))
        if top > DIVERGENCE_BOUND:
            return "diverged"
        if top < UNDERFLOW_BOUND:
            return "underflow"
    return None


def problem_reason(kind: str, component: int, iteration: int, size: float, *,
                   alpha: str = "alpha") -> str:
    """The sentence :func:`arithmetic_status` gives for a problem ``kind`` at ``(component,
    iteration)`` (``size``: the largest magnitude of that iterate; ``alpha``: the name the caller's
    user knows the scaling factor by, e.g. ``protocol.alpha``)."""
    where = f"iterates of component {component + 1}"
    if kind == "diverged":
        return (f"{where} reached {size:.3g} at iteration {iteration} (above {DIVERGENCE_BOUND:g}, "
                f"where their norms overflow): the noise scale or {alpha} is too large for float64 "
                "arithmetic")
    if kind == "underflow":
        return (f"{where} fell to {size:.3g} at iteration {iteration} (below {UNDERFLOW_BOUND:.3g}, "
                "the smallest normal float64, so the estimate is zero or rounding noise): "
                f"{alpha} is too small for float64 arithmetic (the iterates shrink by about "
                f"{alpha} mu_1 per iteration; Corollary 1 of Campbell et al. asks {alpha} > 1/mu_1)")
    return (f"{where} became inf or nan at iteration {iteration}: the noise scale or {alpha} is too "
            "large for float64 arithmetic")


def arithmetic_status(iterates: np.ndarray, *, not_computed_is_nan: bool = False) -> ArithmeticStatus:
    """The first iterate, in the order computed, that is not a usable number.

    Parameters
    ----------
    iterates : numpy.ndarray
        ``(r, T + 1, n)``: ``q_l^(t)`` of every component ``l`` and iteration ``t``.

    Returns
    -------
    ArithmeticStatus
        ``ok``, or the status of the first bad iterate (components in order, then iterations: a
        broken iterate spoils all that follow) with a reason naming it. With
        ``not_computed_is_nan`` (a stopped engine run) an all-``nan`` iterate is an iteration that
        was not computed and is skipped.
    """
    with np.errstate(all="ignore"):
        for l in range(iterates.shape[0]):
            for t in range(iterates.shape[1]):
                q = iterates[l, t]
                kind = iterate_problem(q, not_computed_is_nan)
                if kind:
                    size = float(np.max(np.abs(q))) if kind != "non-finite" else float("nan")
                    return ArithmeticStatus(status=kind, reason=problem_reason(kind, l, t, size),
                                            component=l, iteration=t)
    return ArithmeticStatus(status="ok")
