r"""Noise calibration: the smallest noise scale whose audited worst case meets a target ``(epsilon, delta)``.

docs/model.md, Section 6. For a schedule family

* ``constant``:  ``sigma_p(t) = s``;
* ``geometric``: ``sigma_p(t) = s (mu_2/mu_1)^t`` (Corollary 1 of Campbell et al., ``s = 1`` there);
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
instead of a root search for epsilon, which is slow where epsilon is large. The scale is found by the
generic :func:`~dpgossip.privacy.scale_search.search_scale` (options
:class:`~dpgossip.privacy.scale_search.ScaleSearchOptions`), bisection on ``log s``: an upper end with
``delta* <= delta`` by doubling, a lower end with ``delta* > delta`` by halving, then bisection until
``s_hi / s_lo <= 1 + rel_tol``. The answer is the upper end. This module supplies its evaluators (the
audits below, :class:`AuditSettings`) and turns its events into ``Calibration.notes``.

**The search** (effort ``standard`` unless told otherwise): a full search runs at the first scale and seeds a
*pool* of neighbours (every pair's worst); every later scale of the bisection is judged by the exact values
of the pooled neighbours alone (:func:`~dpgossip.protocols.ddppm.audit.audit_neighbours`, a cheap lower
estimate of ``delta*``). The answer is then checked by a full search warm-started from the pool (its value is
the larger of its own and the pool's; the pool does not steer it). If that check finds the target missed, its
neighbours join the pool and the bisection goes on upwards from there, at most ``escalations + 2``
times.

The value is that of neighbours found: a per-instance lower estimate, so a calibrated scale is
not a DP guarantee (``Calibration.meaning`` says so in every output).

**Against the certified upper bound** (``method = "upper"``): the bisection runs on
``eps_up(s) = max_j eps_j(s)``, the largest certified bound over the targets at ``delta``
(docs/upper-bound.md), which holds for every neighbour of this ``X`` and every view without the target;
no search runs. A scale that meets it is a proven per-instance guarantee for this ``X`` (not a DP
guarantee over all datasets). The bound has a floor as ``s`` grows (its covariance terms do not depend
on the noise), so a small target can be out of reach although the true worst case is below it.

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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from dpgossip.data.partition import PartitionedData
from dpgossip.errors import ConfigError, did_you_mean
from dpgossip.privacy.certified_bound import CertifiedBound
from dpgossip.privacy.neighbours import NEIGHBOUR_KINDS, Neighbour
from dpgossip.privacy.scale_search import (
    Evaluation,
    Floor,
    Plateau,
    Rise,
    ScaleSearch,
    ScaleSearchOptions,
    SearchEvent,
    Unconverged,
    Unreached,
    Worst,
    first_rise,
    search_scale,
)
from dpgossip.protocols.ddppm.audit import (
    PAIR_VIEWS,
    UPPER_MAX_COORDS,
    AuditOptions,
    PairAudit,
    audit_neighbours,
    audit_pairs,
    result_pair,
    upper_bounds,
    upper_deltas,
)
from dpgossip.protocols.ddppm.params import NoiseSchedule, ProtocolParams, resolve_params
from dpgossip.protocols.ddppm.search import DEFAULT_SEARCH, SearchSettings
from dpgossip.topology.network import Network

__all__ = [
    "AuditSettings",
    "LevelEvent",
    "Calibration",
    "FixedProtocol",
    "calibrate_noise",
    "check_target",
    "CALIBRATION_FAMILIES",
    "CALIBRATION_METHODS",
    "UPPER_METHOD",
]

CALIBRATION_FAMILIES: tuple[str, ...] = ("geometric", "constant", "explicit")
"""Noise-schedule families whose scale can be calibrated."""

CALIBRATION_METHODS: tuple[str, ...] = ("exact", "rdp", "upper")
"""What the calibration holds to the target: the worst neighbour the search found, by the exact
hockey-stick ``delta`` or its RDP conversion (a lower estimate of the worst case over neighbours), or
``upper``, the certified upper bound (docs/upper-bound.md: proven for every neighbour of this ``X`` and
every observer)."""

UPPER_METHOD = "upper"
"""The method that calibrates against the certified upper bound (:func:`calibrate_noise`)."""


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class Calibration:
    """A calibrated noise scale and what the audit says about it.

    ``noise`` is ready for a scenario (``[protocol] noise = {...}``) and ``params`` for
    :func:`~dpgossip.protocols.ddppm.matrix.run_matrix`; both use ``scale`` (the largest scale tried when
    ``met`` is false).
    """

    family: str
    """``constant``, ``geometric`` or ``explicit``."""
    scale: float
    """``s``: the smallest scale found whose audited worst case meets the target."""
    target_epsilon: float
    target_delta: float
    epsilon: float
    """Worst ``epsilon`` at ``target_delta`` of the final search at ``scale``."""
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
    pooled: int
    """The largest number of pooled neighbours of a target at the end (0 against the certified
    bound, which pools nothing)."""
    evaluations: tuple[tuple[float, float], ...]
    """``(s, worst delta at target_epsilon)`` of the bisection's audits, in the order evaluated."""
    history: tuple[tuple[float, float, int | str], ...]
    """Every audit run, ``(s, worst delta at target_epsilon, effort)``, including the re-audits; the
    effort is ``"pool:N"`` (the exact values of N pooled neighbours), ``"search:NAME"`` (a full search
    of that effort) or ``"certified"`` (the certified bound)."""
    limit_epsilon: float | None
    """When ``met`` is false because ``eps*`` levels off: its value at the largest scale tried."""
    params: ProtocolParams
    noise: dict[str, object]
    worst: dict[str, object] = field(default_factory=dict)
    """Worst pair of the re-audit: observer, target, hops, row, direction."""
    audit: PairAudit | None = None
    """The final re-audit."""
    notes: tuple[str, ...] = ()
    search: str = DEFAULT_SEARCH
    """The effort of the final search (:mod:`~dpgossip.protocols.ddppm.search`), or ``certified``."""
    epsilon_upper: float = math.nan
    """The certified side at ``scale``: the largest target's upper bound on epsilon at
    ``target_delta`` (docs/upper-bound.md; NaN where no bound is defined)."""
    delta_upper: float = math.nan
    """The largest delta the targets' certified bounds prove at ``target_epsilon`` at ``scale`` (1 where
    nothing below 1 is proven; NaN where no bound is defined or it was not asked for,
    :attr:`AuditSettings.delta_upper`)."""

    @property
    def bound(self) -> str:
        """Which side of the bracket the calibration held to the target: ``"certified upper bound"``
        (``method = "upper"``) or ``"lower estimate"`` (the worst neighbour found)."""
        return "certified upper bound" if self.method == UPPER_METHOD else "lower estimate"

    @property
    def meaning(self) -> str:
        """What ``met`` means, for every output that prints it."""
        if self.method == UPPER_METHOD:
            what = ("meets the target: the certified upper bound proves epsilon <= the target at "
                    "delta for every neighbour of this X and every observer" if self.met
                    else "not met: the certified upper bound stays above the target at every scale "
                    "tried (it is proven, and may be loose: the true worst case can be lower)")
            return (f"{what} (docs/upper-bound.md; per instance: a guarantee for this X, not a DP "
                    "guarantee over all datasets)")
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
            "calibrated_epsilon_upper": self.epsilon_upper,
            "calibrated_delta_upper": self.delta_upper,
            "calibration_met": self.met,
            "calibration_meaning": self.meaning,
            "calibration_search": self.search,
            "calibration_monotone_ok": self.monotone_ok,
            "calibration_evaluations": len(self.history),
            "calibration_pooled": self.pooled,
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


@dataclass(frozen=True, slots=True, kw_only=True)
class AuditSettings:
    """How a calibration audits each noise scale (:func:`~dpgossip.protocols.ddppm.audit.audit_pairs`).

    The same ``seed`` is used at every scale. The first audit is a full search (effort ``search``,
    default ``standard``); the bisection then compares the exact values of the
    pooled neighbours (those the full searches found, every target's worst for every observer), a cheap
    lower estimate, and the answer gets a full search warm-started from the pool (module docstring).
    """

    view: str = "observer"
    """One of :data:`~dpgossip.protocols.ddppm.audit.PAIR_VIEWS`."""
    neighbours: str = "bounded"
    """``bounded`` or ``replace-one``."""
    method: str = "exact"
    """``exact`` (hockey-stick ``delta`` of the privacy-loss variable) or ``rdp`` (the RDP conversion, an
    upper bound: a conservative, larger scale; much faster)."""
    search: str | int | SearchSettings = DEFAULT_SEARCH
    """The search's effort: a preset name, a number of levels or :class:`SearchSettings`."""
    targets: Sequence[int] | None = None
    """Targets audited (default: all)."""
    observers: Sequence[int] | None = None
    """Observers audited (default: all)."""
    seed: int = 0
    """Seed of the search and the range finders, the same at every scale."""
    delta_upper: bool = False
    """Also find the delta the certified bound proves at the target epsilon at the calibrated scale
    (:attr:`Calibration.delta_upper`; about ten bound evaluations per target)."""
    on_level: Callable[[LevelEvent], None] | None = None
    """Progress only (it does not change the result): called when an audit at a noise scale starts,
    after each of its targets, and when it ends (:class:`LevelEvent`)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LevelEvent:
    """Progress of a calibration at one candidate noise scale (:attr:`AuditSettings.on_level`)."""

    level: int
    """Audits started so far (1 for the first scale tried)."""
    scale: float
    """The noise scale ``s`` audited."""
    effort: str
    """What is run at it: ``"search:standard"`` or ``"pool:12"``."""
    done: int
    """Targets finished at this scale."""
    total: int
    """Targets of the audit (0 before the first finishes)."""
    worst_delta: float | None = None
    """The worst delta at the target epsilon once the audit at this scale ended, else ``None``."""
    stage: str = ""
    """A stage inside a target's search (``"target 2: search level 1/2"``), else empty."""


@dataclass(frozen=True, slots=True, kw_only=True)
class FixedProtocol:
    """The protocol parameters a calibration holds fixed besides ``T`` and ``c``
    (:func:`~dpgossip.protocols.ddppm.params.resolve_params`)."""

    alpha: float | str | Mapping[str, float] = "geometric_mean"
    """A number, ``"geometric_mean"`` or ``{"position": t}``."""
    sigma_q: float | None = None
    """Initial-vector standard deviation; ``1/sqrt(n)`` unless given (not calibrated)."""
    rank: int = 1
    """Must be 1: only rank-1 runs are calibrated (module notes)."""


def _rise_note(rise: Rise) -> str:
    return (f"the worst delta at the target epsilon is not monotone in the scale: "
            f"delta({rise.scale:.6g}) = {rise.value:.6g} > delta({rise.low_scale:.6g}) = "
            f"{rise.low_value:.6g}; the scale found meets the target but may not be the smallest that "
            "does")


def _monotone(evals: Sequence[tuple[float, float]], tol: float,
              atol: float = 1e-12) -> tuple[bool, str]:
    """Whether the worst delta at the target epsilon is non-increasing in ``s`` (within ``tol``
    relative plus ``atol`` absolute: exact deltas are accurate to about ``1e-14``), and the note if not."""
    rise = first_rise(evals, tol, atol)
    return (True, "") if rise is None else (False, _rise_note(rise))


@dataclass(frozen=True, slots=True, kw_only=True)
class _Audited:
    """One audit of a calibration: the audit, its cache key and its ``Calibration.history`` label."""

    audit: PairAudit
    key: tuple[float, object]
    label: int | str
    full: bool
    """A full search, whose worst neighbours join the pool."""


def _pool(log: Sequence[Evaluation[_Audited]]) -> dict[int, list[Neighbour]]:
    """The pooled neighbours, by target: every pair's worst of every full search in ``log``, each once,
    in the order found."""
    pool: dict[int, list[Neighbour]] = {}
    pooled: set[tuple[int, bytes]] = set()
    for e in log:
        if e.payload is None or not e.payload.full:
            continue
        for r in e.payload.audit.results.values():
            tag = (r.neighbour.row, r.neighbour.x_new.tobytes())
            if tag not in pooled:
                pooled.add(tag)
                pool.setdefault(r.target, []).append(r.neighbour)
    return pool


def _history(log: Sequence[Evaluation[_Audited]]) -> tuple[tuple[float, float, int | str], ...]:
    """``(s, worst delta at the target epsilon, label)`` of every audit run (a repeated one is cached)."""
    seen: set[tuple[float, object]] = set()
    out = []
    for e in log:
        assert e.payload is not None
        if e.payload.key not in seen:
            seen.add(e.payload.key)
            out.append((e.scale, e.value, e.payload.label))
    return tuple(out)


@dataclass(frozen=True, slots=True, kw_only=True)
class _Calibrator:
    """The privacy side of a calibration: audits at a noise scale, as evaluators for
    :func:`~dpgossip.privacy.scale_search.search_scale` (validated inputs)."""

    data: PartitionedData
    network: Network
    iterations: int
    consensus_steps: int
    epsilon: float
    delta: float
    family: str
    base: tuple[float, ...]
    audit: AuditSettings
    protocol: FixedProtocol
    settings: SearchSettings
    """The search's effort."""
    options: ScaleSearchOptions
    """The scale search's options as given (before the search's extra escalations)."""

    @property
    def search_name(self) -> str:
        return self.settings.name

    def params_at(self, s: float) -> ProtocolParams:
        return resolve_params(self.data, self.network, iterations=self.iterations,
                              consensus_steps=self.consensus_steps, rank=1,
                              alpha=self.protocol.alpha, sigma_q=self.protocol.sigma_q,
                              noise=_schedule(self.family, s, self.base))

    def worst(self, s: float, effort: int, previous: tuple[Evaluation[_Audited], ...]
              ) -> Worst[_Audited]:
        """The search's audit: the pooled neighbours' exact values (a full search while the pool is
        empty)."""
        return self._audit(s, "pool" if _pool(previous) else "full", previous)

    def check(self, s: float, effort: int, previous: tuple[Evaluation[_Audited], ...]
              ) -> Worst[_Audited]:
        """The re-audit: a full search warm-started from the pool."""
        return self._audit(s, "full", previous)

    def _audit(self, s: float, effort: str, previous: tuple[Evaluation[_Audited], ...]
               ) -> Worst[_Audited]:
        """An audit at scale ``s``: ``"pool"`` (the pooled neighbours' exact values) or ``"full"`` (the
        search, warm-started from the pool). The criterion is the
        worst delta at the target epsilon (module docstring); an audit already run is not repeated."""
        pool = _pool(previous)
        key = (s, (effort, sum(len(v) for v in pool.values())) if effort == "pool" else effort)
        for e in previous:  # e.g. the re-audit's point when the search goes on from it
            if e.payload is not None and e.payload.key == key:
                return Worst(value=e.value, payload=e.payload)
        a = self.audit
        common = dict(delta=self.delta, epsilons=(self.epsilon,), view=a.view, methods=(a.method,),
                      seed=a.seed)
        event = LevelEvent(level=len(previous) + 1, scale=float(s), done=0, total=0,
                           effort=(f"search:{self.search_name}" if effort == "full" else
                                   f"pool:{sum(len(v) for v in pool.values())}"))
        on_level = a.on_level if a.on_level is not None else (lambda _event: None)
        on_level(event)
        opts = AuditOptions(targets=a.targets, observers=a.observers, rank_by="delta",
                            delta_resolution=1e-3 * self.delta,  # far below the target: no refinement
                            on_target=lambda _j, done, total: on_level(
                                replace(event, done=done, total=total)),
                            on_stage=lambda j, text: on_level(
                                replace(event, stage=f"target {j}: {text}")),
                            upper_bound=False)  # the bisection judges the lower estimate only
        if effort == "pool":  # cheap: in this process (a pool of processes would pay its start
            # and its factorisations at every scale); full searches use audit_processes' count
            res = audit_neighbours(self.data, self.network, self.params_at(s), pool,
                                   options=replace(opts, workers=1), **common)
            label = f"pool:{sum(len(v) for v in pool.values())}"
        else:
            res = audit_pairs(self.data, self.network, self.params_at(s), neighbours=a.neighbours,
                              search=self.settings, options=replace(opts, warm=pool), **common)
            label = f"search:{self.search_name}"
        if not res.results:
            raise ConfigError("calibrate: no (observer, target) pair to audit (check targets/observers)")
        value = _worst_delta(res, a.method)
        on_level(replace(event, done=event.total, worst_delta=value))
        return Worst(value=value,
                     payload=_Audited(audit=res, key=key, label=label, full=effort == "full"))


def _worst_delta(res: PairAudit, method: str) -> float:
    """The search's quantity: the worst delta at the target epsilon."""
    return float(res.worst(method, by="delta").delta[method][0])


def calibrate_noise(data: PartitionedData, network: Network, *, iterations: int, consensus_steps: int,
                    epsilon: float, delta: float, family: str = "geometric",
                    base_values: Sequence[float] | None = None, audit: AuditSettings | None = None,
                    scale_search: ScaleSearchOptions | None = None,
                    protocol: FixedProtocol | None = None) -> Calibration:
    r"""Smallest noise scale ``s`` whose audited worst case meets ``(epsilon, delta)``.

    The scale is searched by :func:`~dpgossip.privacy.scale_search.search_scale` on
    ``delta*(s) <= delta``, ``delta*(s)`` the worst delta at ``epsilon`` over the audited pairs
    (module docstring).

    Parameters
    ----------
    data, network
        The problem (the data's spectrum sets ``alpha`` and the geometric schedule).
    iterations, consensus_steps
        ``T`` and ``c``.
    epsilon, delta
        The target: worst ``epsilon`` at ``delta`` over the audited pairs ``<= epsilon``.
    family
        ``geometric`` (``sigma_p(t) = s (mu_2/mu_1)^t``, Corollary 1 of Campbell et al.), ``constant``
        (``sigma_p(t) = s``) or ``explicit`` (``sigma_p(t) = s * base_values[t-1]``).
    base_values
        The ``T`` base values of ``explicit``.
    audit
        :class:`AuditSettings`: view, neighbours, conversion method, search and its effort, targets,
        observers, seed (default: its defaults).
    scale_search
        :class:`~dpgossip.privacy.scale_search.ScaleSearchOptions`: bracket, limits, ``rel_tol``,
        ``max_evals``, ``escalations``, ``monotone_tol``, ``plateau_tol``: the search goes on at most
        ``escalations + 2`` times (module docstring).
    protocol
        :class:`FixedProtocol`: ``alpha``, ``sigma_q`` (``1/sqrt(n)`` unless given) and ``rank``, which
        must be 1 (module notes).

    Returns
    -------
    Calibration
        With ``met = False`` and a note when the target cannot be met (``eps*`` levels off above it, or
        ``s_max`` or ``max_evals`` was reached). ``eps*(s)`` depends only on ``sigma_p / sigma_q`` (the
        view is a zero-mean Gaussian whose covariance scales with the noise), so it has a floor as
        ``s -> infinity`` (module notes).

    Raises
    ------
    ConfigError
        A bad target, family, method, base values, bracket or tolerance; ``rank > 1``.

    Examples
    --------
    >>> cal = calibrate_noise(data, net, iterations=5, consensus_steps=3, epsilon=8.0, delta=1e-5,
    ...                       family="constant", audit=AuditSettings(method="rdp"))  # doctest: +SKIP
    >>> cal.to_toml()                                                          # doctest: +SKIP
    'noise = { schedule = "constant", scale = 0.41 }'
    """
    _check_option_types(audit=audit, scale_search=scale_search, protocol=protocol)
    options = scale_search if scale_search is not None else ScaleSearchOptions()
    cal = _calibrator(data, network, iterations=iterations, consensus_steps=consensus_steps,
                      target=(epsilon, delta), family=family, base_values=base_values,
                      audit=audit if audit is not None else AuditSettings(), options=options,
                      protocol=protocol if protocol is not None else FixedProtocol())
    if cal.audit.method == UPPER_METHOD:
        return _with_upper(cal, _calibrate_upper(cal))
    options = replace(options, escalations=options.escalations + 2)  # module docstring
    found = search_scale(cal.worst, cal.check, target=cal.delta, options=options)
    assert found.check.payload is not None
    eps_check = _worst_epsilon(found.check.payload.audit, data, network, cal.params_at(found.scale),
                               cal.audit.view, cal.delta, cal.audit.method)
    notes = _notes(cal, found)
    if found.rise is not None:
        warnings.warn(f"calibrate_noise: {_rise_note(found.rise)}", RuntimeWarning, stacklevel=2)
    if not found.met:
        warnings.warn(f"calibrate_noise: {notes[-1] if notes else 'target not met'}",
                      RuntimeWarning, stacklevel=2)
    return _with_upper(cal, _calibration(cal, found, eps_check, notes))


def _with_upper(cal: _Calibrator, record: Calibration) -> Calibration:
    """``record`` with the certified side at its scale: ``epsilon_upper``, the largest target's bound
    at the target delta, and (with :attr:`AuditSettings.delta_upper`) ``delta_upper``, the largest
    delta the targets' bounds prove at the target epsilon
    (:func:`~dpgossip.protocols.ddppm.audit.upper_deltas`, narrowed by the record's own delta where it
    is a lower estimate). Unchanged where no bound is defined."""
    if record.method == UPPER_METHOD:  # its epsilon is that bound already (no bound: it raised)
        record = replace(record, epsilon_upper=record.epsilon)
        targets = list(range(cal.data.m)) if cal.audit.targets is None else list(cal.audit.targets)
    else:
        bounds = upper_bounds(cal.data, cal.network, record.params, cal.delta, cal.audit.neighbours,
                              cal.audit.targets)
        if not bounds:
            return record
        record = replace(record, epsilon_upper=max(float(b.epsilon) for b in bounds.values()))
        targets = sorted(bounds)
    if not cal.audit.delta_upper:
        return record
    low = record.delta if record.method != UPPER_METHOD and math.isfinite(record.delta) else 0.0
    deltas = upper_deltas(cal.data, cal.network, record.params, [cal.epsilon], cal.audit.neighbours,
                          targets, {j: (low,) for j in targets})
    return replace(record, delta_upper=max(v[0] for v in deltas.values()))


def _upper_at(cal: _Calibrator, s: float) -> Worst[CertifiedBound]:
    """The largest certified upper bound on epsilon at the target delta over the targets, at scale
    ``s`` (:func:`~dpgossip.protocols.ddppm.audit.upper_bounds`)."""
    bounds = upper_bounds(cal.data, cal.network, cal.params_at(s), cal.delta, cal.audit.neighbours,
                          cal.audit.targets)
    if not bounds:
        raise ConfigError("calibrate.method = 'upper': no certified upper bound for this problem (it "
                          "needs rows of norm <= 1 and m d <= "
                          f"{UPPER_MAX_COORDS}); use method 'exact' or 'rdp'", field="calibrate.method")
    worst = max(bounds.values(), key=lambda b: b.epsilon)
    return Worst(value=float(worst.epsilon), payload=worst)


def _calibrate_upper(cal: _Calibrator) -> Calibration:
    """The smallest scale whose certified upper bound (the largest over the targets) is at most the
    target epsilon at the target delta: the bisection of :func:`calibrate_noise` on the bound itself,
    which is deterministic (its check is the same evaluation; no escalation). ``met`` asks for the
    bound at or below the target, without the bisection's ``rel_tol`` (it is a guarantee). The search
    and the views are not used: the bound covers every observer."""
    options = replace(cal.options, escalations=0, check_factor=1)
    found = search_scale(lambda s, _e, _p: _upper_at(cal, s), lambda s, _e, _p: _upper_at(cal, s),
                         target=cal.epsilon, options=options)
    worst = found.check.payload
    assert worst is not None
    met = found.met and found.check.value <= cal.epsilon
    notes = [_upper_note(cal, event) for event in found.events]
    if found.rise is not None:
        notes.append(_rise_note(found.rise).replace("worst delta at the target epsilon",
                                                    "certified upper bound on epsilon"))
    return Calibration(
        family=cal.family, scale=float(found.scale), target_epsilon=cal.epsilon,
        target_delta=cal.delta, epsilon=float(found.check.value), delta=cal.delta, met=met,
        monotone_ok=found.monotone_ok, method=UPPER_METHOD, view="every view without the target",
        neighbours=cal.audit.neighbours, pooled=0,
        evaluations=tuple((e.scale, e.value) for e in found.evaluations),
        history=tuple((e.scale, e.value, "certified") for e in found.log),
        limit_epsilon=None if found.reached else float(found.check.value),
        params=cal.params_at(found.scale), noise=_noise_table(cal.family, found.scale, cal.base),
        worst={"observer": "every", "target": worst.target, "hops": "any", "row": worst.worst_row},
        audit=None, notes=tuple(notes), search="certified")


def _limit_reached(opts: ScaleSearchOptions, event: Unreached) -> str:
    """Which limit of the scale search stopped it (``s_max`` or ``max_evals``), with its value."""
    return f"s_max = {opts.s_max:g}" if event.limit == "s_max" else f"max_evals = {opts.max_evals}"


def _upper_note(cal: _Calibrator, event: SearchEvent) -> str:
    """The note of a search event of a calibration against the certified upper bound."""
    eps, delta = cal.epsilon, cal.delta
    if isinstance(event, Unreached):
        why = _limit_reached(cal.options, event)
        return (f"target not met: the certified upper bound at delta = {delta:g} is still "
                f"{event.value:.6g} > {eps:g} at s = {event.scale:.6g} ({why} reached)")
    if isinstance(event, Plateau):
        return (f"target not met: the certified upper bound at delta = {delta:g} levels off at about "
                f"{event.value:.6g} > {eps:g} as s grows (bound({event.start_scale:.6g}) = "
                f"{event.start_value:.6g}, bound({event.scale:.6g}) = {event.value:.6g}): its terms "
                "from the covariance of the releases do not fall with the noise. The bound is proven "
                "but may be loose; the lower estimate (method exact or rdp) may meet the target")
    return _note(cal, event)


def _check_option_types(**given: object) -> None:
    """Each option object of :func:`calibrate_noise` is of its class or ``None``."""
    kinds = {"audit": AuditSettings, "scale_search": ScaleSearchOptions, "protocol": FixedProtocol}
    for name, value in given.items():
        if value is not None and not isinstance(value, kinds[name]):
            raise ConfigError(f"{name} must be a dpgossip.{kinds[name].__name__} or None, got "
                              f"{value!r}", field=name)


def _calibrator(data: PartitionedData, network: Network, *, iterations: int, consensus_steps: int,
                target: tuple[float, float], family: str, base_values: Sequence[float] | None,
                audit: AuditSettings, options: ScaleSearchOptions,
                protocol: FixedProtocol) -> _Calibrator:
    """Validate the inputs of :func:`calibrate_noise` (each message names the field and the value)."""
    epsilon, delta = check_target(*target)
    family = _check_choice("family", family, CALIBRATION_FAMILIES)
    audit = replace(audit, method=_check_choice("method", audit.method, CALIBRATION_METHODS),
                    view=_check_choice("view", audit.view, PAIR_VIEWS),
                    neighbours=_check_choice("neighbours", audit.neighbours, NEIGHBOUR_KINDS))
    if protocol.rank != 1:
        raise ConfigError(
            f"calibrate: protocol.rank must be 1, got {protocol.rank}; later components run on data "
            "deflated with realised earlier ones and their leakage need not fall with the noise scale, "
            "so calibrate a rank-1 run and audit the rank-r run (divergences compose)"
        )
    base = _base_values(family, base_values, iterations)
    for name, value, low in (("max_evals", options.max_evals, 3),
                             ("check_factor", options.check_factor, 1),
                             ("escalations", options.escalations, 0)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
            raise ConfigError(f"calibrate.{name} must be an integer >= {low}, got {value!r}")
    options.validate("calibrate")
    return _Calibrator(data=data, network=network, iterations=iterations,
                       consensus_steps=consensus_steps, epsilon=epsilon, delta=delta, family=family,
                       base=base, audit=audit, protocol=protocol,
                       settings=SearchSettings.of(audit.search),
                       options=options)


def _note(cal: _Calibrator, event: SearchEvent) -> str:
    """The note of a search event in the calibration's terms (the worst delta at the target epsilon)."""
    eps, delta, opts = cal.epsilon, cal.delta, cal.options
    if isinstance(event, Unreached):
        why = _limit_reached(opts, event)
        return (f"target not met: the worst delta at epsilon = {eps:g} is still "
                f"{event.value:.6g} > {delta:g} at s = {event.scale:.6g} ({why} reached)")
    if isinstance(event, Plateau):
        return (f"target not met: the worst delta at epsilon = {eps:g} levels off at about "
                f"{event.value:.6g} > {delta:g} as s grows (delta({event.start_scale:.6g}) = "
                f"{event.start_value:.6g}, delta({event.scale:.6g}) = {event.value:.6g}). The view is a "
                "zero-mean Gaussian whose covariance scales with the noise, so epsilon depends only on "
                "sigma_p / sigma_q and has this floor; no noise scale meets the target (the floor is "
                "set by the data, T, c, the network, the schedule's shape and the view)")
    if isinstance(event, Floor):
        return (f"the target is met even at s = {event.scale:.6g} (s_min = {opts.s_min:g} or "
                "max_evals reached while halving)")
    if isinstance(event, Unconverged):
        return (f"max_evals = {opts.max_evals} reached: the bracket is [{event.lo:.6g}, "
                f"{event.hi:.6g}], the upper end is returned")
    return (f"the {cal.search_name} search at s = {event.scale:.6g} found delta {event.value:.6g} > "
            f"{delta:g} at epsilon = {eps:g} (the pooled neighbours gave "
            f"{event.search_value:.6g}); its neighbours join the pool and the bisection goes on "
            "upwards")


def _notes(cal: _Calibrator, found: ScaleSearch[_Audited]) -> list[str]:
    """The calibration's notes: the search's events, a rise, a final re-audit that misses the target."""
    notes = [_note(cal, event) for event in found.events]
    if found.rise is not None:
        notes.append(_rise_note(found.rise))
    if found.reached and not found.met:
        notes.append(f"the final re-audit ({cal.search_name}) gives delta {found.check.value:.6g} > "
                     f"{cal.delta:g} at epsilon = {cal.epsilon:g}: a larger search or more "
                     "escalations")
    return notes


def _calibration(cal: _Calibrator, found: ScaleSearch[_Audited], eps_check: float,
                 notes: list[str]) -> Calibration:
    """The record of a finished search (``found``) and its final re-audit."""
    assert found.check.payload is not None
    check = found.check.payload.audit
    method = cal.audit.method
    dmat = check.matrix(method, "delta", 0)
    worst = check.worst(method)
    return Calibration(
        family=cal.family,
        scale=float(found.scale),
        target_epsilon=cal.epsilon,
        target_delta=cal.delta,
        epsilon=float(eps_check),
        delta=float(np.nanmax(dmat)) if np.any(np.isfinite(dmat)) else math.nan,
        met=found.met,
        monotone_ok=found.monotone_ok,
        method=method,
        view=cal.audit.view,
        neighbours=cal.audit.neighbours,
        pooled=max((len(v) for v in _pool(found.log).values()), default=0),
        evaluations=tuple((e.scale, e.value) for e in found.evaluations),
        history=_history(found.log),
        limit_epsilon=None if found.reached else float(eps_check),
        params=cal.params_at(found.scale),
        noise=_noise_table(cal.family, found.scale, cal.base),
        worst={"observer": worst.observer, "target": worst.target, "hops": worst.hops,
               **worst.neighbour.to_row()},
        audit=check,
        notes=tuple(notes),
        search=cal.search_name,
    )


def _worst_epsilon(check: PairAudit, data: PartitionedData, network: Network,
                   params: ProtocolParams, view: str, delta: float, method: str) -> float:
    """The achieved epsilon at ``delta``, for the record: the epsilon solve of the check audit's worst
    pair (by delta) at its worst neighbour only (tiny deltas make every solve slow)."""
    w = check.worst(method, by="delta")
    pair = result_pair(check, data, network, params, w.observer, w.target)
    return float(pair.epsilon(delta, method=method))
