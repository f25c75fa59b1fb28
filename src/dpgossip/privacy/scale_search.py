r"""The smallest scale whose worst value meets a target: bracketing, bisection, a check, escalation.

A generic search: it knows nothing of what is evaluated. Given ``worst(s)``, the worst value of some
quantity at a scale ``s > 0`` (non-increasing in ``s`` as far as the caller knows) with whatever payload
the caller wants back, and a target ``v``, it finds

.. math::

    s^\star = \min \{ s > 0 : \mathrm{worst}(s) \le v \}

to a relative tolerance. It is laid out like ``dp_accounting.mechanism_calibration`` (a bracket record,
:class:`Bracket`, and a search function, :func:`search_scale`), with the options in
:class:`ScaleSearchOptions`. One *round* is:

1. **Bracket.** The given ends ``s_lo`` and ``s_hi`` are evaluated (``s = 1`` when neither is given).
   While no scale meets the target, the largest scale that misses it is doubled (not beyond ``s_max``);
   while none misses it, the smallest that meets it is halved (not below ``s_min``).
2. **Bisection** on ``log s``: ``s = sqrt(s_lo s_hi)`` until ``s_hi / s_lo <= 1 + rel_tol``, within
   ``max_evals`` evaluations of ``worst`` for steps 1 and 2 together. The answer is the upper end.
3. **Check.** ``check(s_hi)``, a more expensive evaluation (``check_factor`` times the search's effort),
   decides: the target is met when ``check(s_hi) <= v (1 + rel_tol)``.

If the check misses the target, the search **escalates**: its effort is multiplied by ``check_factor`` and
a new round starts from ``s_hi`` (now a known miss), at most ``escalations`` times. The upward search
gives up (``reached = False``; the answer is then the largest scale tried, which the check evaluates too)
at ``s_max``, after ``max_evals`` evaluations, or on a **plateau**: two successive doublings each lowered
the value by less than ``plateau_tol`` (relative). Finally the last round's values are checked for
**monotonicity** (:func:`first_rise`): a rise means the scale found meets the target but may not be the
smallest that does.

Evaluators are called as ``worst(s, effort, previous)`` and ``check(s, effort, previous)`` and return a
:class:`Worst`: ``effort`` is 1 in the first round and is multiplied by ``check_factor`` for a check and
after every escalation; ``previous`` holds every :class:`Evaluation` so far, in order (for a cache or a
warm start), so an evaluator needs no state of its own.

Examples
--------
>>> found = search_scale(lambda s, effort, previous: Worst(value=10.0 / s),
...                      lambda s, effort, previous: Worst(value=10.0 / s), target=4.0)
>>> found.met, 2.5 <= found.scale <= 2.5 * 1.02
(True, True)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Generic, TypeVar

import numpy as np

from dpgossip.errors import ConfigError

__all__ = ["ScaleSearchOptions", "Bracket", "Worst", "Evaluation", "Evaluator", "ScaleSearch",
           "Unreached", "Plateau", "Floor", "Unconverged", "Escalation", "Rise", "SearchEvent",
           "search_scale", "levelled", "first_rise"]

P = TypeVar("P")


@dataclass(frozen=True, slots=True, kw_only=True)
class ScaleSearchOptions:
    r"""Options of :func:`search_scale`; ``v`` is the target, ``worst`` and ``check`` the evaluators.

    Attributes
    ----------
    s_lo, s_hi
        Optional starting bracket, evaluated first; an end that does not bracket the target is extended
        by doubling or halving. Neither given: the search starts at ``s = 1``.
    s_min, s_max
        Limits of halving and doubling: no scale below ``s_min`` or above ``s_max`` is evaluated
        (``0 < s_min < s_max``).
    rel_tol
        Bisection stops when ``s_hi / s_lo <= 1 + rel_tol``; the check meets the target when
        ``check(s_hi) <= v (1 + rel_tol)``.
    max_evals
        Evaluations of ``worst`` per round (bracketing and bisection together; the checks are extra).
    check_factor
        The check runs at ``check_factor`` times the search's effort; an escalation multiplies the
        search's effort by ``check_factor``.
    escalations
        After a check that misses the target, the search goes on upwards from its answer at most this
        many times (``escalations + 1`` rounds).
    monotone_tol, monotone_atol
        A value at a larger scale above ``w (1 + monotone_tol) + monotone_atol``, ``w`` the smallest
        value at a smaller scale, is a rise (:func:`first_rise`).
    plateau_tol
        Doubling stops on a plateau: two successive doublings each lowered the value by at most
        ``plateau_tol`` relative, ``w(s) - w(2s) <= plateau_tol |w(s)|`` (:func:`levelled`).
    """

    s_lo: float | None = None
    s_hi: float | None = None
    s_min: float = 1e-6
    s_max: float = 1e6
    rel_tol: float = 0.02
    max_evals: int = 30
    check_factor: int = 2
    escalations: int = 1
    monotone_tol: float = 0.05
    monotone_atol: float = 1e-12
    plateau_tol: float = 1e-3

    def validate(self, where: str = "scale_search") -> None:
        """Check every option.

        Raises
        ------
        ConfigError
            Naming ``<where>.<option>`` and the value.
        """
        for name, value, low in (("max_evals", self.max_evals, 3),
                                 ("check_factor", self.check_factor, 1),
                                 ("escalations", self.escalations, 0)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
                raise ConfigError(f"{where}.{name} must be an integer >= {low}, got {value!r}")
        if not 0 < self.rel_tol < 1:
            raise ConfigError(f"{where}.rel_tol must be in (0, 1), got {self.rel_tol!r}")
        if not 0 < self.s_min < self.s_max:
            raise ConfigError(f"{where}: need 0 < s_min < s_max, got s_min={self.s_min!r}, "
                              f"s_max={self.s_max!r}")
        for name, end in (("s_lo", self.s_lo), ("s_hi", self.s_hi)):
            if end is not None and not (math.isfinite(end) and end > 0):
                raise ConfigError(f"{where}.{name} must be a finite number > 0, got {end!r}")
        if self.s_lo is not None and self.s_hi is not None and not self.s_lo < self.s_hi:
            raise ConfigError(f"{where}: need s_lo < s_hi, got s_lo={self.s_lo!r}, s_hi={self.s_hi!r}")
        for name, tol in (("monotone_tol", self.monotone_tol), ("monotone_atol", self.monotone_atol),
                          ("plateau_tol", self.plateau_tol)):
            if not (math.isfinite(tol) and tol >= 0):
                raise ConfigError(f"{where}.{name} must be a finite number >= 0, got {tol!r}")


@dataclass(frozen=True, slots=True, kw_only=True)
class Bracket:
    """Where the smallest scale meeting the target lies: ``worst(lo) > v`` and ``worst(hi) <= v``."""

    lo: float | None = None
    """The largest scale known to miss the target (None: none yet)."""
    hi: float | None = None
    """The smallest scale known to meet the target (None: none yet)."""

    def with_value(self, s: float, meets: bool) -> Bracket:
        """The bracket after evaluating ``s``: ``hi = min(hi, s)`` if ``worst(s) <= v``, else
        ``lo = max(lo, s)``."""
        if meets:
            return Bracket(lo=self.lo, hi=s if self.hi is None else min(self.hi, s))
        return Bracket(lo=s if self.lo is None else max(self.lo, s), hi=self.hi)

    @property
    def ratio(self) -> float:
        """``hi / lo``; ``inf`` while an end is missing."""
        if self.lo is None or self.hi is None:
            return math.inf
        return self.hi / self.lo


@dataclass(frozen=True, slots=True, kw_only=True)
class Worst(Generic[P]):
    """What an evaluator returns: the worst value at the scale and the caller's payload."""

    value: float
    payload: P | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Evaluation(Generic[P]):
    """One evaluation made by the search."""

    scale: float
    value: float
    effort: int
    """The effort the evaluator was given."""
    check: bool
    """Whether ``check`` (not ``worst``) was evaluated."""
    payload: P | None = None


Evaluator = Callable[[float, int, tuple[Evaluation[P], ...]], Worst[P]]
"""``f(s, effort, previous) -> Worst``: the worst value at scale ``s`` (module docstring)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Unreached:
    """Doubling stopped without a scale meeting the target: ``limit`` (``"s_max"``: the next doubling
    would pass it; ``"max_evals"``) was reached with ``scale`` the largest scale tried."""

    scale: float
    value: float
    """The value of the round's last evaluation."""
    limit: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Plateau:
    """The value levelled off while doubling (``plateau_tol``): from ``start_value`` at
    ``start_scale`` to ``value`` at ``scale``, two doublings later."""

    start_scale: float
    start_value: float
    scale: float
    value: float


@dataclass(frozen=True, slots=True, kw_only=True)
class Floor:
    """Halving stopped (``s_min`` or ``max_evals``) with the target met even at ``scale``."""

    scale: float


@dataclass(frozen=True, slots=True, kw_only=True)
class Unconverged:
    """``max_evals`` was reached before the bracket ``[lo, hi]`` closed to ``rel_tol``; the answer is
    ``hi``."""

    lo: float
    hi: float


@dataclass(frozen=True, slots=True, kw_only=True)
class Escalation:
    """The check at ``scale`` gave ``value > v``; the round's last evaluation of ``worst`` gave
    ``search_value``. The search goes on from ``scale`` with ``check_effort`` (was ``effort``)."""

    scale: float
    value: float
    search_value: float
    effort: int
    check_effort: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Rise:
    """A value above the smallest one at a smaller scale: ``value`` at ``scale`` against
    ``low_value`` at ``low_scale``."""

    scale: float
    value: float
    low_scale: float
    low_value: float


SearchEvent = Unreached | Plateau | Floor | Unconverged | Escalation
"""What a search can report besides its answer (``ScaleSearch.events``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ScaleSearch(Generic[P]):
    """The result of :func:`search_scale`."""

    scale: float
    """The answer: the upper end of the last bracket, or the largest scale tried when ``reached`` is
    false."""
    reached: bool
    """Whether ``worst`` met the target at some scale (false: the last event says why not)."""
    met: bool
    """``reached`` and ``check(scale) <= v (1 + rel_tol)``."""
    check: Evaluation[P]
    """The last check, at ``scale``."""
    effort: int
    """The search's effort in the last round (``check_factor ** k`` after ``k`` escalations)."""
    evaluations: tuple[Evaluation[P], ...]
    """The last round's evaluations of ``worst``, in order."""
    log: tuple[Evaluation[P], ...]
    """Every evaluation, checks included, in order."""
    events: tuple[SearchEvent, ...]
    """In order: each round's :class:`Floor`, :class:`Unconverged` and :class:`Escalation`, and the
    :class:`Unreached` or :class:`Plateau` that ended the search when ``reached`` is false."""
    rise: Rise | None
    """The first rise among ``evaluations`` (:func:`first_rise`); None when they are monotone."""

    @property
    def monotone_ok(self) -> bool:
        """No rise among the last round's values."""
        return self.rise is None


@dataclass(frozen=True, slots=True, kw_only=True)
class _Problem(Generic[P]):
    worst: Evaluator[P]
    check: Evaluator[P]
    target: float
    options: ScaleSearchOptions


@dataclass(frozen=True, slots=True, kw_only=True)
class _Round(Generic[P]):
    """The state of one round: this round's bracket, budget and evaluations; the log of the search."""

    bracket: Bracket
    budget: int
    effort: int
    log: tuple[Evaluation[P], ...]
    evaluations: tuple[Evaluation[P], ...] = ()
    events: tuple[SearchEvent, ...] = ()
    stop: Unreached | Plateau | None = None


def levelled(values: Sequence[float], tol: float) -> bool:
    """Whether three successive values ``w0, w1, w2`` fell by at most ``tol`` relative at each step:
    ``w0 - w1 <= tol |w0|`` and ``w1 - w2 <= tol |w1|`` (two infinite values count as level, a step
    from an infinite to a finite value does not)."""
    w0, w1, w2 = values
    return _small_fall(w0, w1, tol) and _small_fall(w1, w2, tol)


def _small_fall(a: float, b: float, tol: float) -> bool:
    if math.isinf(a) and math.isinf(b):
        return True
    return math.isfinite(a) and a - b <= tol * abs(a)


def first_rise(points: Iterable[tuple[float, float]], tol: float, atol: float = 0.0) -> Rise | None:
    """The first point, by increasing scale, whose value exceeds ``w (1 + tol) + atol``, ``w`` the
    smallest value at a smaller scale (two infinite values are no rise); None if there is none.

    ``points`` are ``(scale, value)`` pairs in any order.
    """
    low_s: float | None = None
    low = math.inf
    for s, w in sorted(points):
        if (low_s is not None and w > low * (1 + tol) + atol
                and not (math.isinf(w) and math.isinf(low))):
            return Rise(scale=s, value=w, low_scale=low_s, low_value=low)
        if w < low or low_s is None:
            low_s, low = s, w
    return None


def search_scale(worst: Evaluator[P], check: Evaluator[P], *, target: float,
                 options: ScaleSearchOptions | None = None) -> ScaleSearch[P]:
    r"""The smallest scale ``s`` with ``worst(s) <= target``, confirmed by ``check`` (module docstring).

    Parameters
    ----------
    worst
        ``worst(s, effort, previous) -> Worst``: the value the bracketing and bisection compare with the
        target (non-increasing in ``s`` as far as the caller knows).
    check
        The same quantity by a more expensive evaluation, run at the answer of every round.
    target
        ``v``: a scale meets the target when its value is ``<= v``.
    options
        :class:`ScaleSearchOptions` (default: its defaults).

    Returns
    -------
    ScaleSearch
        The answer ``s_hi`` of the last round (``met`` when its check gives ``<= v (1 + rel_tol)``), or,
        when no scale met the target (``reached = False``), the largest scale tried.

    Raises
    ------
    ConfigError
        A bad option (:meth:`ScaleSearchOptions.validate`).
    """
    opts = options if options is not None else ScaleSearchOptions()
    opts.validate()
    problem = _Problem(worst=worst, check=check, target=target, options=opts)
    rounds = opts.escalations + 1
    bracket, effort = Bracket(lo=opts.s_lo, hi=opts.s_hi), 1
    log: tuple[Evaluation[P], ...] = ()
    events: tuple[SearchEvent, ...] = ()
    for k in range(rounds):
        rnd = _round(problem, bracket, effort, log)
        events += rnd.events
        scale = rnd.bracket.hi if rnd.stop is None else rnd.bracket.lo
        assert scale is not None
        checked = _evaluate(problem, scale, effort * opts.check_factor, rnd.log, check=True)
        log = rnd.log + (checked,)
        if rnd.stop is not None or checked.value <= target * (1 + opts.rel_tol) or k == rounds - 1:
            break
        events += (Escalation(scale=scale, value=checked.value, search_value=rnd.evaluations[-1].value,
                              effort=effort, check_effort=effort * opts.check_factor),)
        effort *= opts.check_factor
        bracket = Bracket(lo=scale)
    reached = rnd.stop is None
    return ScaleSearch(
        scale=scale, reached=reached,
        met=bool(reached and checked.value <= target * (1 + opts.rel_tol)),
        check=checked, effort=effort, evaluations=rnd.evaluations, log=log, events=events,
        rise=first_rise(((e.scale, e.value) for e in rnd.evaluations), opts.monotone_tol,
                        opts.monotone_atol),
    )


def _evaluate(problem: _Problem[P], s: float, effort: int, log: tuple[Evaluation[P], ...], *,
              check: bool) -> Evaluation[P]:
    w = (problem.check if check else problem.worst)(s, effort, log)
    return Evaluation(scale=float(s), value=float(w.value), effort=effort, check=check,
                      payload=w.payload)


def _probe(problem: _Problem[P], rnd: _Round[P], s: float) -> _Round[P]:
    """``rnd`` after evaluating ``worst(s)``."""
    e = _evaluate(problem, s, rnd.effort, rnd.log, check=False)
    return replace(rnd, bracket=rnd.bracket.with_value(s, e.value <= problem.target),
                   budget=rnd.budget - 1, evaluations=rnd.evaluations + (e,), log=rnd.log + (e,))


def _round(problem: _Problem[P], start: Bracket, effort: int,
           log: tuple[Evaluation[P], ...]) -> _Round[P]:
    """Bracketing and bisection from the ends of ``start`` (``s = 1`` when it has none)."""
    rnd = _Round(bracket=Bracket(), budget=problem.options.max_evals, effort=effort, log=log)
    for s in [s for s in (start.lo, start.hi) if s is not None] or [1.0]:
        rnd = _probe(problem, rnd, s)
    rnd = _double(problem, rnd)
    if rnd.stop is not None:
        return rnd
    return _bisect(problem, _halve(problem, rnd))


def _stopped(rnd: _Round[P], stop: Unreached | Plateau) -> _Round[P]:
    return replace(rnd, stop=stop, events=rnd.events + (stop,))


def _double(problem: _Problem[P], rnd: _Round[P]) -> _Round[P]:
    """An upper end by doubling the lower one; stops at ``s_max``, ``max_evals`` or a plateau."""
    opts = problem.options
    while rnd.bracket.hi is None:
        lo = rnd.bracket.lo
        assert lo is not None  # every start missed the target
        if 2 * lo > opts.s_max or rnd.budget <= 0:
            return _stopped(rnd, Unreached(scale=lo, value=rnd.evaluations[-1].value,
                                           limit="s_max" if 2 * lo > opts.s_max else "max_evals"))
        rnd = _probe(problem, rnd, 2 * lo)
        last = rnd.evaluations[-3:]
        if (rnd.bracket.hi is None and len(last) == 3
                and levelled([e.value for e in last], opts.plateau_tol)):
            return _stopped(rnd, Plateau(start_scale=last[0].scale, start_value=last[0].value,
                                         scale=2 * lo, value=last[-1].value))
    return rnd


def _halve(problem: _Problem[P], rnd: _Round[P]) -> _Round[P]:
    """A lower end by halving the upper one; stops at ``s_min`` or ``max_evals`` (:class:`Floor`)."""
    while rnd.bracket.lo is None:
        hi = rnd.bracket.hi
        assert hi is not None
        if hi / 2 < problem.options.s_min or rnd.budget <= 0:
            return replace(rnd, events=rnd.events + (Floor(scale=hi),))
        rnd = _probe(problem, rnd, hi / 2)
    return rnd


def _bisect(problem: _Problem[P], rnd: _Round[P]) -> _Round[P]:
    """Bisection on ``log s`` until ``hi / lo <= 1 + rel_tol`` or ``max_evals`` (:class:`Unconverged`)."""
    rel_tol = problem.options.rel_tol
    while rnd.bracket.lo is not None and rnd.bracket.ratio > 1 + rel_tol and rnd.budget > 0:
        rnd = _probe(problem, rnd, math.sqrt(rnd.bracket.lo * rnd.bracket.hi))  # type: ignore[operator]
    b = rnd.bracket
    if b.lo is not None and b.hi is not None and b.ratio > 1 + rel_tol:
        return replace(rnd, events=rnd.events + (Unconverged(lo=b.lo, hi=b.hi),))
    return rnd
