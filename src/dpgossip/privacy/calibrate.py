r"""Noise calibration: the smallest noise scale whose audited worst case meets a target ``(epsilon, delta)``.

docs/model.md, Section 6. For a schedule family

* ``constant``:  ``sigma_p(t) = s``;
* ``geometric``: ``sigma_p(t) = s (mu_2/mu_1)^t`` (Corollary 1 of 001, ``s = 1`` there);
* ``explicit``:  ``sigma_p(t) = s b_t`` for given base values ``b_1..b_T``,

and every other parameter fixed (``T``, ``c``, ``alpha``, and ``sigma_q = 1/sqrt(n)`` unless given), the
audited quantity is

.. math::

    \varepsilon^\star(s) = \max_{(o, j)} \max_{X' \in \mathcal{N}_j} \varepsilon_{\mathrm{method}}
        \bigl(P_{o}(X; s) \,\|\, P_{o}(X'; s)\bigr) \text{ at } \delta,

the worst ``epsilon`` at ``delta`` over every (observer, target) pair of :func:`audit_pairs` and the
neighbours ``N_j`` its search finds (the same seed at every ``s``). The search evaluates the equivalent
criterion ``delta*(s) <= delta``, ``delta*`` the worst delta at the target epsilon (``delta(eps)`` is
non-increasing, so ``eps* <= epsilon`` exactly when ``delta* <= delta``): one hockey-stick value per pair
instead of a root search for epsilon, which is slow where epsilon is large. The scale is found by
bisection on ``log s``: an upper end with ``delta* <= delta`` by doubling, a lower end with ``delta* >
delta`` by halving, then bisection until ``s_hi / s_lo <= 1 + rel_tol``. The answer is the upper end.

**With the optimising search** (default ``standard``), a full search runs at the first scale and seeds a
*pool* of neighbours (every pair's worst); every later scale of the bisection is judged by the exact values
of the pooled neighbours alone (:func:`~dpgossip.privacy.audit.audit_neighbours`, a cheap lower estimate
of ``delta*``). The answer is then checked by a full search warm-started from the pool (its value is the
larger of its own and the pool's; the pool does not steer it). If that check finds the target missed, its
neighbours join the pool and the bisection goes on upwards from there, at most ``escalations + 2``
times. **With the candidate search** (``search = "candidates"``) every scale is audited with
``candidates`` per target and the answer re-audited with ``check_factor`` times as many; if the re-audit
misses the target, the search continues once from there with the larger candidate count.

Either way the value is that of neighbours found: a per-instance lower estimate, so a calibrated scale is
not a DP guarantee (``Calibration.meaning`` says so in every output).

Notes
-----
**Scale invariance.** Every message is linear in the latent Gaussian vector ``w`` and, in the joint views,
has mean zero under both datasets: the view is ``N(0, F(X) Sigma_w F(X)^T)``. Multiplying *all* standard
deviations (``sigma_q`` and ``sigma_p``) by ``k`` multiplies both covariances by ``k^2`` and leaves every
divergence unchanged. So ``eps*(s)`` depends only on the ratios ``sigma_p(t) / sigma_q``: raising ``s``
with ``sigma_q`` fixed moves towards the limit ``sigma_q / s -> 0``, where ``eps*`` levels off at some
``eps_inf > 0`` (the releases ``X_j^T q_j`` and ``q_j^(T) = alpha X_j z_j + p_j`` carry the data through
the covariance of the noise itself). If ``eps_inf`` exceeds the target, **no scale meets it**; the search
detects the plateau (``delta*`` falls by less than ``plateau_tol`` relative over two doublings) and returns
``met = False`` with ``limit_epsilon``.

**Monotonicity.** More noise is not a post-processing of less noise here (the extra noise would enter
through ``F(X)``, which depends on the data), so ``eps*(s)`` need not be monotone. The evaluated points are
checked: a rise of more than ``monotone_tol`` (relative) at a larger ``s`` sets ``monotone_ok = False`` and
warns; the scale found then meets the target but may not be the smallest that does.

The audit is per instance (this ``X``, the neighbours tried). Calibration is for ``rank = 1``: later
components run on data deflated with the realised earlier ones, and their leakage need not fall as the
noise grows (the deflation vectors grow with ``||q^(T)||``), so no single scale is a target for them.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from dpgossip.data.partition import PartitionedData
from dpgossip.errors import ConfigError, did_you_mean
from dpgossip.privacy.audit import (
    PAIR_VIEWS,
    PairAudit,
    audit_neighbours,
    audit_pairs,
    result_pair,
)
from dpgossip.privacy.neighbours import NEIGHBOUR_KINDS, Neighbour
from dpgossip.privacy.search import CANDIDATE_SEARCH, DEFAULT_SEARCH, SearchSettings
from dpgossip.protocol.params import NoiseSchedule, ProtocolParams, resolve_params
from dpgossip.topology.network import Network

__all__ = [
    "Calibration",
    "calibrate_noise",
    "check_target",
    "CALIBRATION_FAMILIES",
    "CALIBRATION_METHODS",
]

CALIBRATION_FAMILIES: tuple[str, ...] = ("geometric", "constant", "explicit")
"""Noise-schedule families whose scale can be calibrated."""

CALIBRATION_METHODS: tuple[str, ...] = ("exact", "rdp")
"""Conversions the calibration can target: the exact hockey-stick ``delta`` or the RDP bound."""


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class Calibration:
    """A calibrated noise scale and what the audit says about it.

    ``noise`` is ready for a scenario (``[protocol] noise = {...}``) and ``params`` for
    :func:`~dpgossip.protocol.run_matrix`; both use ``scale`` (the largest scale tried when ``met`` is
    false).
    """

    family: str
    """``constant``, ``geometric`` or ``explicit``."""
    scale: float
    """``s``: the smallest scale found whose audited worst case meets the target."""
    target_epsilon: float
    target_delta: float
    epsilon: float
    """Worst ``epsilon`` at ``target_delta`` of the re-audit at ``scale`` with ``check_candidates``."""
    delta: float
    """Worst ``delta`` at ``target_epsilon`` of that re-audit (largest over the pairs)."""
    met: bool
    """Whether the re-audit meets the target (``delta <= target_delta (1 + rel_tol)``)."""
    monotone_ok: bool
    """No rise of the worst delta at the target epsilon with ``s`` beyond ``monotone_tol`` among the
    evaluated points."""
    method: str
    view: str
    neighbours: str
    candidates: int
    """Candidate search: candidate neighbours per target in the search (after any escalation).
    Optimising search: the largest number of pooled neighbours of a target at the end."""
    check_candidates: int
    """Candidate search: candidate neighbours per target in the final re-audit (0 with the optimising
    search, whose final audit is a full search)."""
    evaluations: tuple[tuple[float, float], ...]
    """``(s, worst delta at target_epsilon)`` of the bisection's audits, in the order evaluated."""
    history: tuple[tuple[float, float, int | str], ...]
    """Every audit run, ``(s, worst delta at target_epsilon, effort)``, including the re-audits; the
    effort is the number of candidates (candidate search), ``"pool:N"`` (the exact values of N pooled
    neighbours) or ``"search:NAME"`` (a full optimising search)."""
    limit_epsilon: float | None
    """When ``met`` is false because ``eps*`` levels off: its value at the largest scale tried."""
    params: ProtocolParams
    noise: dict[str, object]
    worst: dict[str, object] = field(default_factory=dict)
    """Worst pair of the re-audit: observer, target, hops, row, direction."""
    audit: PairAudit | None = None
    """The final re-audit."""
    notes: tuple[str, ...] = ()
    search: str = CANDIDATE_SEARCH
    """The search of the final audit: a preset name of :mod:`~dpgossip.privacy.search` or
    ``candidates``."""

    @property
    def meaning(self) -> str:
        """What ``met`` means, for every output that prints it."""
        what = ("meets the target for every neighbour the search found" if self.met
                else "not met: the search found a neighbour above the budget at every scale tried"
                if self.limit_epsilon is None else "not met at any scale tried (the floor)")
        return (f"{what} ({self.search} search; a per-instance lower estimate of the worst case over "
                "neighbours of this X, not a DP guarantee)")

    def to_row(self) -> dict[str, object]:
        """Tidy row."""
        return {
            "calibration_family": self.family,
            "calibration_method": self.method,
            "target_epsilon": self.target_epsilon,
            "target_delta": self.target_delta,
            "noise_scale": self.scale,
            "calibrated_epsilon": self.epsilon,
            "calibrated_delta": self.delta,
            "calibration_met": self.met,
            "calibration_meaning": self.meaning,
            "calibration_search": self.search,
            "calibration_monotone_ok": self.monotone_ok,
            "calibration_evaluations": len(self.history),
            "calibration_candidates": self.candidates,
            "calibration_check_candidates": self.check_candidates,
            "limit_epsilon": self.limit_epsilon,
            "sigma_q": self.params.sigma_q,
            "sigma_p_first": float(self.params.sigma_p[0, 0]),
            "sigma_p_last": float(self.params.sigma_p[0, -1]),
            "view": self.view,
            "neighbours": self.neighbours,
        }

    def to_dict(self) -> dict[str, object]:
        """JSON-ready record (the row, the noise table, the worst pair, the evaluations, the notes)."""
        return {
            **self.to_row(),
            "noise": dict(self.noise),
            "worst": dict(self.worst),
            "evaluations": [list(e) for e in self.evaluations],
            "history": [list(h) for h in self.history],
            "notes": list(self.notes),
        }

    def to_toml(self) -> str:
        """The scenario line ``noise = { schedule = "...", scale = ... }`` (with ``values`` for explicit)."""
        parts = [f'schedule = "{self.noise["schedule"]}"', f"scale = {_fmt(self.scale)}"]
        if "values" in self.noise:
            vals = ", ".join(_fmt(float(v)) for v in self.noise["values"])  # type: ignore[attr-defined]
            parts.append(f"values = [{vals}]")
        return "noise = { " + ", ".join(parts) + " }"


def _fmt(x: float) -> str:
    return repr(float(x))


def check_target(epsilon: object, delta: object, *, where: str = "calibrate") -> tuple[float, float]:
    """Validate a target ``(epsilon, delta)``: ``epsilon`` finite and ``> 0``, ``delta`` in ``(0, 1)``.

    Raises
    ------
    ConfigError
        Naming ``<where>.epsilon`` or ``<where>.delta`` and the value.
    """
    for name, value in (("epsilon", epsilon), ("delta", delta)):
        if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
            raise ConfigError(f"{where}.{name} must be a number, got {value!r}")
    eps, dl = float(epsilon), float(delta)  # type: ignore[arg-type]
    if not (math.isfinite(eps) and eps > 0):
        raise ConfigError(f"{where}.epsilon must be a finite number > 0, got {epsilon!r}")
    if not 0 < dl < 1:
        raise ConfigError(f"{where}.delta must be in (0, 1), got {delta!r}")
    return eps, dl


def _check_choice(name: str, value: object, choices: Sequence[str]) -> str:
    if value not in choices:
        raise ConfigError(
            f"calibrate.{name}: {value!r} is not allowed; use one of {', '.join(choices)}"
            f"{did_you_mean(str(value), list(choices))}"
        )
    return str(value)


def _base_values(family: str, base_values: Sequence[float] | None, T: int) -> tuple[float, ...]:
    if family != "explicit":
        if base_values is not None:
            raise ConfigError(
                f"calibrate.values (base values) are only used with family 'explicit', "
                f"got family {family!r}"
            )
        return ()
    if base_values is None:
        raise ConfigError(
            "calibrate: family 'explicit' needs base values, one per iteration "
            "(sigma_p(t) = s * values[t-1])"
        )
    vals = tuple(float(v) for v in base_values)
    if len(vals) != T:
        raise ConfigError(
            f"calibrate.values must have one value per iteration ({T}), got {len(vals)}"
        )
    for t, v in enumerate(vals):
        if not (math.isfinite(v) and v >= 0):
            raise ConfigError(f"calibrate.values[{t}] must be a finite number >= 0, got {v!r}")
    if not any(v > 0 for v in vals):
        raise ConfigError("calibrate.values: at least one base value must be > 0")
    return vals


def _schedule(family: str, s: float, base: tuple[float, ...]) -> NoiseSchedule:
    if family == "explicit":
        return NoiseSchedule(kind="explicit", scale=s, values=tuple(s * b for b in base))
    return NoiseSchedule(kind=family, scale=s)


def _noise_table(family: str, s: float, base: tuple[float, ...]) -> dict[str, object]:
    out: dict[str, object] = {"schedule": family, "scale": float(s)}
    if family == "explicit":
        out["values"] = [float(s * b) for b in base]
    return out


def _monotone(evals: Sequence[tuple[float, float]], tol: float,
              atol: float = 1e-12) -> tuple[bool, str]:
    """Whether the worst delta at the target epsilon is non-increasing in ``s`` (within ``tol``
    relative plus ``atol`` absolute: exact deltas are accurate to about ``1e-14``)."""
    pts = sorted(evals)
    best_s, best = None, math.inf
    for s, e in pts:
        if (best_s is not None and e > best * (1 + tol) + atol
                and not (math.isinf(e) and math.isinf(best))):
            return False, (
                f"the worst delta at the target epsilon is not monotone in the scale: "
                f"delta({s:.6g}) = {e:.6g} > delta({best_s:.6g}) = {best:.6g}; the scale found meets "
                "the target but may not be the smallest that does"
            )
        if e < best or best_s is None:
            best_s, best = s, e
    return True, ""


def calibrate_noise(
    data: PartitionedData,
    network: Network,
    *,
    iterations: int,
    consensus_steps: int,
    epsilon: float,
    delta: float,
    family: str = "geometric",
    base_values: Sequence[float] | None = None,
    view: str = "observer",
    neighbours: str = "bounded",
    method: str = "exact",
    candidates: int = 20,
    search: str | int | SearchSettings | None = DEFAULT_SEARCH,
    refine: int = 2,
    ascent_steps: int = 4,
    targets: Sequence[int] | None = None,
    observers: Sequence[int] | None = None,
    seed: int = 0,
    alpha: float | str | Mapping[str, float] = "geometric_mean",
    sigma_q: float | None = None,
    rank: int = 1,
    s_lo: float | None = None,
    s_hi: float | None = None,
    s_min: float = 1e-6,
    s_max: float = 1e6,
    rel_tol: float = 0.02,
    max_evals: int = 30,
    check_factor: int = 2,
    escalations: int = 1,
    monotone_tol: float = 0.05,
    plateau_tol: float = 1e-3,
) -> Calibration:
    r"""Smallest noise scale ``s`` whose audited worst case meets ``(epsilon, delta)``.

    Parameters
    ----------
    data, network
        The problem (the data's spectrum sets ``alpha`` and the geometric schedule).
    iterations, consensus_steps
        ``T`` and ``c``.
    epsilon, delta
        The target: worst ``epsilon`` at ``delta`` over the audited pairs ``<= epsilon``.
    family
        ``geometric`` (``sigma_p(t) = s (mu_2/mu_1)^t``, Corollary 1 of 001), ``constant``
        (``sigma_p(t) = s``) or ``explicit`` (``sigma_p(t) = s * base_values[t-1]``).
    base_values
        The ``T`` base values of ``explicit``.
    view, neighbours, search, targets, observers, seed
        Passed to :func:`~dpgossip.privacy.audit_pairs` (the same ``seed`` at every scale). With the
        optimising search (default ``standard``) the first audit is a full search; the bisection then
        compares the exact values of the pooled neighbours (those the full searches found, every target's
        worst for every observer) at each scale, a cheap lower estimate; the scale it ends on gets a full
        search warm-started from the pool (the check). If the check finds the target missed, its
        neighbours join the pool and the bisection goes on upwards from there (``escalations``).
    candidates, refine, ascent_steps
        ``search = "candidates"`` only: the candidate search's effort.
    method
        ``exact`` (hockey-stick ``delta`` of the privacy-loss variable) or ``rdp`` (the RDP conversion,
        an upper bound: a conservative, larger scale; much faster).
    alpha, sigma_q, rank
        As in :func:`~dpgossip.protocol.resolve_params`; ``sigma_q`` stays ``1/sqrt(n)`` unless given.
        Only ``rank = 1`` is calibrated (module notes).
    s_lo, s_hi
        Optional starting bracket (checked, and extended when it does not bracket the target).
    s_min, s_max
        Limits of halving and doubling.
    rel_tol
        Stop when ``s_hi / s_lo <= 1 + rel_tol``; also the tolerance of the final check.
    max_evals
        Audits allowed in the search (the re-audits are extra).
    check_factor, escalations
        Candidate search: the re-audit uses ``check_factor`` times the candidates; if it misses the
        target the search goes on from there with that many candidates, at most ``escalations`` times.
        Optimising search: at most ``escalations + 2`` checks (module docstring).
    monotone_tol, plateau_tol
        Relative rise of ``eps*`` flagged as non-monotone; relative fall per doubling below which (twice
        in a row) ``eps*`` is taken to have levelled off.

    Returns
    -------
    Calibration
        With ``met = False`` and a note when the target cannot be met (``eps*`` levels off above it, or
        ``s_max`` or ``max_evals`` was reached).

    Raises
    ------
    ConfigError
        A bad target, family, method, base values, bracket or tolerance; ``rank > 1``.

    Notes
    -----
    See the module docstring: ``eps*(s)`` depends only on ``sigma_p / sigma_q`` (the view is a zero-mean
    Gaussian whose covariance scales with the noise), so it has a floor as ``s -> infinity``.

    Examples
    --------
    >>> cal = calibrate_noise(data, net, iterations=5, consensus_steps=3, epsilon=8.0,
    ...                       delta=1e-5, family="constant", method="rdp")     # doctest: +SKIP
    >>> cal.to_toml()                                                          # doctest: +SKIP
    'noise = { schedule = "constant", scale = 0.41 }'
    """
    epsilon, delta = check_target(epsilon, delta)
    family = _check_choice("family", family, CALIBRATION_FAMILIES)
    method = _check_choice("method", method, CALIBRATION_METHODS)
    view = _check_choice("view", view, PAIR_VIEWS)
    neighbours = _check_choice("neighbours", neighbours, NEIGHBOUR_KINDS)
    if rank != 1:
        raise ConfigError(
            f"calibrate: protocol.rank must be 1, got {rank}; later components run on data deflated "
            "with realised earlier ones and their leakage need not fall with the noise scale, so "
            "calibrate a rank-1 run and audit the rank-r run (divergences compose)"
        )
    base = _base_values(family, base_values, iterations)
    for name, value, low in (("candidates", candidates, 1), ("refine", refine, 1),
                             ("max_evals", max_evals, 3), ("check_factor", check_factor, 1),
                             ("escalations", escalations, 0), ("ascent_steps", ascent_steps, 0)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
            raise ConfigError(f"calibrate.{name} must be an integer >= {low}, got {value!r}")
    if not 0 < rel_tol < 1:
        raise ConfigError(f"calibrate.rel_tol must be in (0, 1), got {rel_tol!r}")
    if not 0 < s_min < s_max:
        raise ConfigError(f"calibrate: need 0 < s_min < s_max, got s_min={s_min!r}, s_max={s_max!r}")
    for name, value in (("s_lo", s_lo), ("s_hi", s_hi)):
        if value is not None and not (math.isfinite(value) and value > 0):
            raise ConfigError(f"calibrate.{name} must be a finite number > 0, got {value!r}")
    if s_lo is not None and s_hi is not None and not s_lo < s_hi:
        raise ConfigError(f"calibrate: need s_lo < s_hi, got s_lo={s_lo!r}, s_hi={s_hi!r}")

    def params_at(s: float) -> ProtocolParams:
        return resolve_params(data, network, iterations=iterations, consensus_steps=consensus_steps,
                              rank=1, alpha=alpha, sigma_q=sigma_q, noise=_schedule(family, s, base))

    optimising = search is not None and search != CANDIDATE_SEARCH
    settings = SearchSettings.of(search) if optimising else None
    search_name = settings.name if settings is not None else CANDIDATE_SEARCH
    history: list[tuple[float, float, int | str]] = []
    done: dict[tuple[float, object], PairAudit] = {}
    pool: dict[int, list[Neighbour]] = {}
    pooled: set[tuple[int, bytes]] = set()

    def worst_delta(res: PairAudit) -> float:
        """The search's quantity: the worst delta at the target epsilon."""
        return float(res.worst(method, by="delta").delta[method][0])

    def audit(s: float, effort: int | str) -> PairAudit:
        """An audit at scale ``s``: ``effort`` candidates, ``"pool"`` (the pooled neighbours' exact
        values) or ``"full"`` (the optimising search, warm-started from the pool, which it grows)."""
        # The search compares the worst delta at the target epsilon with the target delta: the same
        # criterion as "worst epsilon at delta <= target" (delta(eps) is non-increasing), but one
        # hockey-stick value per pair instead of a root search for epsilon (slow where epsilon is large).
        key = (s, (effort, len(pooled)) if effort == "pool" else effort)
        if key in done:  # e.g. the re-audit's point when the search goes on from it
            return done[key]
        common = dict(delta=delta, epsilons=(epsilon,), view=view, methods=(method,),
                      targets=targets, observers=observers, seed=seed, rank_by="delta",
                      delta_resolution=1e-3 * delta)  # far below the target: no refinement
        label: int | str
        if effort == "pool":
            res = audit_neighbours(data, network, params_at(s), pool, **common)
            label = f"pool:{len(pooled)}"
        elif effort == "full":
            res = audit_pairs(data, network, params_at(s), neighbours=neighbours, search=settings,
                              warm=pool, **common)
            for r in res.results.values():
                tag = (r.neighbour.row, r.neighbour.x_new.tobytes())
                if tag not in pooled:
                    pooled.add(tag)
                    pool.setdefault(r.target, []).append(r.neighbour)
            label = f"search:{search_name}"
        else:
            res = audit_pairs(data, network, params_at(s), neighbours=neighbours,
                              search=CANDIDATE_SEARCH, candidates=int(effort), refine=refine,
                              ascent_steps=ascent_steps, **common)
            label = int(effort)
        if not res.results:
            raise ConfigError("calibrate: no (observer, target) pair to audit (check targets/observers)")
        history.append((float(s), worst_delta(res), label))
        done[key] = res
        return res

    notes: list[str] = []
    cands = int(candidates)
    lo: float | None = s_lo  # eps*(lo) > target
    hi: float | None = s_hi  # eps*(hi) <= target
    met_search = True
    evals: list[tuple[float, float]] = []

    def f(s: float) -> float:
        """Worst delta at the target epsilon (compared with the target delta)."""
        e = worst_delta(audit(s, cands if not optimising else "pool" if pool else "full"))
        evals.append((float(s), e))
        return e

    rounds = escalations + 1 + (2 if optimising else 0)
    for _round in range(rounds):
        evals = []
        budget = max_evals
        # bracket: check the given ends (or start at 1)
        starts = [s for s in (lo, hi) if s is not None] or [1.0]
        lo = hi = None
        for s in starts:
            e = f(s)
            budget -= 1
            if e <= delta:
                hi = s if hi is None else min(hi, s)
            else:
                lo = s if lo is None else max(lo, s)
        # upper end by doubling
        while hi is None:
            assert lo is not None
            if 2 * lo > s_max or budget <= 0:
                why = f"s_max = {s_max:g}" if 2 * lo > s_max else f"max_evals = {max_evals}"
                notes.append(f"target not met: the worst delta at epsilon = {epsilon:g} is still "
                             f"{evals[-1][1]:.6g} > {delta:g} at s = {lo:.6g} ({why} reached)")
                met_search = False
                break
            e = f(2 * lo)
            budget -= 1
            if e <= delta:
                hi = 2 * lo
                break
            lo = 2 * lo
            if len(evals) >= 3 and _levelled(evals[-3:], plateau_tol):
                notes.append(
                    f"target not met: the worst delta at epsilon = {epsilon:g} levels off at about "
                    f"{e:.6g} > {delta:g} as s grows (delta({evals[-3][0]:.6g}) = {evals[-3][1]:.6g}, "
                    f"delta({lo:.6g}) = {e:.6g}). The view is a zero-mean Gaussian whose covariance "
                    "scales with the noise, so epsilon depends only on sigma_p / sigma_q and has "
                    "this floor; no noise scale meets the target (the floor is set by the data, T, "
                    "c, the network, the schedule's shape and the view)"
                )
                met_search = False
                break
        if not met_search:
            break
        # lower end by halving
        while lo is None:
            assert hi is not None
            if hi / 2 < s_min or budget <= 0:
                notes.append(f"the target is met even at s = {hi:.6g} (s_min = {s_min:g} or "
                             "max_evals reached while halving)")
                break
            e = f(hi / 2)
            budget -= 1
            if e <= delta:
                hi = hi / 2
            else:
                lo = hi / 2
        # bisection on log s
        while lo is not None and hi / lo > 1 + rel_tol and budget > 0:
            mid = math.sqrt(lo * hi)
            e = f(mid)
            budget -= 1
            if e <= delta:
                hi = mid
            else:
                lo = mid
        if lo is not None and hi / lo > 1 + rel_tol:
            notes.append(f"max_evals = {max_evals} reached: the bracket is [{lo:.6g}, {hi:.6g}], "
                         "the upper end is returned")
        # final check: more candidates, or a full search from the pool
        check = audit(hi, check_factor * cands if not optimising else "full")
        d_check = worst_delta(check)
        if d_check <= delta * (1 + rel_tol) or _round == rounds - 1:
            break
        if optimising:
            notes.append(
                f"the {search_name} search at s = {hi:.6g} found delta {d_check:.6g} > {delta:g} at "
                f"epsilon = {epsilon:g} (the pooled neighbours gave {evals[-1][1]:.6g}); its "
                "neighbours join the pool and the bisection goes on upwards")
        else:
            notes.append(
                f"the re-audit at s = {hi:.6g} with {check_factor * cands} candidates found delta "
                f"{d_check:.6g} > {delta:g} at epsilon = {epsilon:g} (the search used {cands}); "
                "searching on with "
                f"{check_factor * cands} candidates"
            )
            cands *= check_factor
        lo, hi = hi, None

    if not met_search:
        assert lo is not None
        scale = lo
        check = audit(scale, check_factor * cands if not optimising else "full")
        d_check = worst_delta(check)
    else:
        assert hi is not None
        scale = hi
    eps_check = _worst_epsilon(check, data, network, params_at(scale), view, delta, method)
    monotone_ok, msg = _monotone(evals, monotone_tol)
    if not monotone_ok:
        notes.append(msg)
        warnings.warn(f"calibrate_noise: {msg}", RuntimeWarning, stacklevel=2)
    met = bool(met_search and d_check <= delta * (1 + rel_tol))
    if met_search and not met:
        effort = search_name if optimising else f"{check_factor * cands} candidates"
        notes.append(f"the final re-audit ({effort}) gives delta {d_check:.6g} > {delta:g} at "
                     f"epsilon = {epsilon:g}: "
                     + ("a larger search or more escalations" if optimising
                        else "increase the candidates"))
    if not met:
        warnings.warn(f"calibrate_noise: {notes[-1] if notes else 'target not met'}",
                      RuntimeWarning, stacklevel=2)
    dmat = check.matrix(method, "delta", 0)
    worst = check.worst(method)
    return Calibration(
        family=family,
        scale=float(scale),
        target_epsilon=epsilon,
        target_delta=delta,
        epsilon=float(eps_check),
        delta=float(np.nanmax(dmat)) if np.any(np.isfinite(dmat)) else math.nan,
        met=met,
        monotone_ok=monotone_ok,
        method=method,
        view=view,
        neighbours=neighbours,
        candidates=cands if not optimising else max((len(v) for v in pool.values()), default=0),
        check_candidates=check_factor * cands if not optimising else 0,
        evaluations=tuple(evals),
        history=tuple(history),
        limit_epsilon=None if met_search else float(eps_check),
        params=params_at(scale),
        noise=_noise_table(family, scale, base),
        worst={"observer": worst.observer, "target": worst.target, "hops": worst.hops,
               **worst.neighbour.to_row()},
        audit=check,
        notes=tuple(notes),
        search=search_name,
    )


def _worst_epsilon(check: PairAudit, data: PartitionedData, network: Network,
                   params: ProtocolParams, view: str, delta: float, method: str) -> float:
    """The achieved epsilon at ``delta``, for the record: the epsilon solve of the check audit's worst
    pair (by delta) at its worst neighbour only (tiny deltas make every solve slow)."""
    w = check.worst(method, by="delta")
    pair = result_pair(check, data, network, params, w.observer, w.target)
    return float(pair.epsilon(delta, method=method))


def _levelled(last: Sequence[tuple[float, float]], tol: float) -> bool:
    """Two successive doublings each lowered eps* by less than ``tol`` (relative)."""
    (_, e0), (_, e1), (_, e2) = last

    def small(a: float, b: float) -> bool:
        if math.isinf(a) and math.isinf(b):
            return True
        return math.isfinite(a) and a - b <= tol * abs(a)
    return small(e0, e1) and small(e1, e2)
