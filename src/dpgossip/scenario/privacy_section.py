"""The scenario section ``[privacy]``: validation, per-point calibration and the per-point audit.

.. code-block:: toml

    [privacy]
    view = "observer"        # observer | paper | all-but-one | eavesdropper
    neighbours = "bounded"   # bounded | replace-one
    delta = 1e-5             # epsilon of every pair is reported at this delta; a list is a sweep axis
    epsilon = [1.0, 4.0]     # grid at which delta of every pair is reported (NOT a sweep axis)
    search = "standard"      # the effort of the worst-case search: quick | standard (default) | thorough
                             # | 1..8 levels (dpgossip.protocols.ddppm.search)
    methods = ["exact", "rdp", "chernoff"]
    audit = true             # `dpgossip run` also audits each point -> leakage.csv, heatmaps
    rank_by = "epsilon"      # or "delta": rank pairs by delta at epsilon[0]; no epsilon solves (fast)
    calibrate = { epsilon = 4.0, delta = 1e-5, family = "geometric", infeasible = "error" }  # optional

``calibrate`` (optional table): before each point runs, the noise scale is set by
:func:`~dpgossip.protocols.ddppm.calibrate.calibrate_noise` to the smallest scale whose audited worst case
meets ``(epsilon, delta)`` (``delta`` defaults to ``privacy.delta``); keys ``epsilon`` (required), ``delta``,
``family`` (``geometric`` | ``constant`` | ``explicit``; default ``geometric``), ``values`` (base values of
``explicit``, default ``protocol.noise.values``), ``method`` (``exact`` | ``rdp``; default ``exact``;
``rdp`` is an upper bound: a conservative scale, much faster), ``rel_tol``
(default 0.02), ``infeasible`` (``error`` | ``floor``, default ``error``). The calibrated noise replaces
``protocol.noise`` for the run and the audit; the scale and the achieved numbers are added to the point's
``runs.csv`` rows and written to ``calibration.csv``. A point whose target cannot be met (the worst epsilon
levels off above it as the scale grows) stops the run with a message, or with ``infeasible = "floor"``
runs at the scale where the search stopped and is flagged ``calibration_met = false``.

``calibrate.epsilon`` and ``calibrate.delta`` may be lists (sweep axes); zip them with
``baseline.epsilon`` / ``baseline.delta`` to calibrate D-DP-PM and the LDP baseline to the same budget at
every point (the paper's Fig. 2: ``scenarios/paper-fig2-*.toml``).

Registered with :func:`dpgossip.scenario.sections.register_section` when this module is imported
(the package :mod:`dpgossip.scenario` imports it). Every key, its type, default and meaning is in
:data:`PRIVACY_FIELDS` (``docs/scenarios.md`` is generated from it, and :func:`check_privacy` fills the
same defaults).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from dpgossip.errors import (
    ConfigError,
    check_number,
    did_you_mean,
    reject_unknown_keys,
    renamed_fields,
)
from dpgossip.privacy.gaussian_pair import METHODS
from dpgossip.privacy.neighbours import NEIGHBOUR_KINDS, Neighbour
from dpgossip.privacy.scale_search import ScaleSearchOptions
from dpgossip.protocols.ddppm.audit import (
    EPSILON_CAP,
    PAIR_VIEWS,
    AuditOptions,
    PairAudit,
    audit_neighbours,
    audit_pairs,
    upper_bounds,
    with_delta_upper,
)
from dpgossip.protocols.ddppm.calibrate import (
    CALIBRATION_FAMILIES,
    CALIBRATION_METHODS,
    AuditSettings,
    Calibration,
    FixedProtocol,
    LevelEvent,
    calibrate_noise,
)
from dpgossip.protocols.ddppm.matrix import run_matrix
from dpgossip.protocols.ddppm.search import DEFAULT_SEARCH, SearchSettings
from dpgossip.scenario.pair_targets import TargetStore
from dpgossip.scenario.point import DEFAULT_KIND, PointSpec
from dpgossip.scenario.problem import Problem, Structure
from dpgossip.scenario.runner import repeat_seed, stage_hook
from dpgossip.scenario.scratch import current_scratch
from dpgossip.scenario.sections import register_section
from dpgossip.scenario.step_progress import LevelProgress, TargetProgress
from dpgossip.settings import REQUIRED, Field

__all__ = [
    "PRIVACY_FIELDS",
    "PRIVACY_KEYS",
    "CALIBRATE_KEYS",
    "AUDIT_METHODS",
    "PER_INSTANCE",
    "check_privacy",
    "prepare_point",
    "audit_point",
    "calibrate_point",
    "audit_config",
    "AUDITED_REPEAT",
    "leakage_rows",
    "rank_note",
    "exact_for_pair",
]

AUDIT_METHODS: tuple[str, ...] = METHODS
"""Conversions a pair audit can report."""

INFEASIBLE_CHOICES: tuple[str, ...] = ("error", "floor")
"""What a point does when no noise scale meets its calibration target: stop the run with the reason
(``error``), or run at the scale where the search stopped (the floor: the most private it found), flag
``calibration_met = false`` in its rows and go on (``floor``)."""

PRIVACY_FIELDS: dict[str, Field] = {
    "view": Field(kind=str, default="observer", choices=PAIR_VIEWS, sweep=False,
                  doc="what the adversary sees: one agent's messages and the final q, the paper's "
                  "literal releases, every agent but the target, or an eavesdropper on every edge"),
    "neighbours": Field(kind=str, default="bounded", choices=NEIGHBOUR_KINDS, sweep=False,
                        doc="adjacency: one row of the target replaced with ||x'|| <= 1 and "
                        "||x' - x|| <= 1 (bounded), or with ||x'|| <= 1 only (replace-one)"),
    "delta": Field(kind=float, default=1e-5, low=0, low_open=True, high=1, high_open=True,
                   doc="epsilon of every pair is reported at this delta"),
    "epsilon": Field(kind="list", default=[1.0], sweep=False,
                     doc="list of numbers > 0: the grid at which delta of every pair is reported "
                     "(not a sweep axis)"),
    "search": Field(kind=str, default=DEFAULT_SEARCH, sweep=False,
                    doc="the effort of the worst-case search: quick | standard | thorough | a "
                    "number of levels 1..8 (dpgossip.protocols.ddppm.search); each level doubles the "
                    "effort of the one before"),
    "methods": Field(kind="list", default=list(AUDIT_METHODS), sweep=False,
                     doc="conversions reported, from exact, rdp, chernoff; the first ranks the pairs"),
    "audit": Field(kind=bool, default=False, sweep=False,
                   doc="audit every point after it runs: leakage.csv and the leakage plots"),
    "epsilon_cap": Field(kind=float, default=EPSILON_CAP, low=0, low_open=True, sweep=False,
                         doc="a pair whose worst neighbour found has an epsilon above this has no "
                         "meaningful privacy: its search stops there and it reports \"at least\" the "
                         "cap, beside its certified upper bound (ranking by epsilon only)"),
    "delta_upper": Field(kind=bool, default=False, sweep=False,
                         doc="also report, per target, the delta the certified upper bound proves at "
                         "each epsilon of `epsilon` (delta_upper_at_eps_<e>; a search over delta, "
                         "about ten bound evaluations per target and epsilon)"),
    "rank_by": Field(kind=str, default="epsilon", choices=("epsilon", "delta"), sweep=False,
                     doc="rank pairs by epsilon at delta, or by delta at epsilon[0] (no epsilon "
                     "is solved: faster)"),
    "calibrate": Field(kind="table", default=None, sweep=False,
                       doc="calibrate the noise scale of every point before it runs (keys below)"),
    "calibrate.epsilon": Field(kind=float, default=REQUIRED, low=0, low_open=True,
                               doc="target epsilon"),
    "calibrate.delta": Field(kind=float, default=None, low=0, low_open=True, high=1,
                             high_open=True, doc="target delta; default privacy.delta"),
    "calibrate.family": Field(kind=str, default="geometric", choices=CALIBRATION_FAMILIES,
                              sweep=False, doc="the noise schedule whose scale is searched"),
    "calibrate.values": Field(kind="list", default=None, sweep=False,
                              doc="base values of family = \"explicit\" (one per iteration, >= 0); "
                              "default protocol.noise.values"),
    "calibrate.method": Field(kind=str, default="exact", choices=CALIBRATION_METHODS, sweep=False,
                              doc="what must meet the target: the worst neighbour found, by its exact "
                              "hockey-stick delta or its RDP bound (larger: a conservative scale, "
                              "much faster), both lower estimates of the worst case; or upper, the "
                              "certified upper bound (proven for every neighbour of this X and every "
                              "observer; no search)"),
    "calibrate.rel_tol": Field(kind=float, default=0.02, low=0, low_open=True, high=1,
                               high_open=True, sweep=False,
                               doc="relative width of the final scale bracket"),
    "calibrate.infeasible": Field(kind=str, default="error", choices=INFEASIBLE_CHOICES,
                                  sweep=False,
                                  doc="when no scale meets the target: stop the run, or run at the "
                                  "scale where the search stopped (the floor) flagged "
                                  "calibration_met = false"),
}
"""Keys of ``[privacy]`` (``calibrate.*``: of its ``calibrate`` table). ``delta``, ``calibrate.epsilon``
and ``calibrate.delta`` may be lists: sweep axes."""

PRIVACY_KEYS: tuple[str, ...] = tuple(k for k in PRIVACY_FIELDS if "." not in k)
"""Keys of ``[privacy]``."""

CALIBRATE_KEYS: tuple[str, ...] = tuple(k.split(".", 1)[1] for k in PRIVACY_FIELDS if "." in k)
"""Keys of ``privacy.calibrate``."""

_D = {k: f.default for k, f in PRIVACY_FIELDS.items()}

PER_INSTANCE = (
    "per-instance audit: about this dataset X and the neighbours tried, not a worst case over all "
    "datasets; the exact value of the worst neighbour found is a LOWER ESTIMATE of the worst case over "
    "neighbours of this X (a noise calibrated on it is not a DP guarantee); an rdp or chernoff value "
    "is that neighbour's conversion, neither a lower estimate nor a bound"
)


def _delta(path: str, value: Any) -> float:
    return check_number(value, path, low=0, high=1, low_open=True, high_open=True)


def _positive(path: str, value: Any) -> float:
    return check_number(value, path, low=0, low_open=True, expected="a finite number > 0")


def _choice(path: str, value: Any, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise ConfigError(
            f"{path}: {value!r} is not allowed; use one of {', '.join(choices)}"
            f"{did_you_mean(str(value), choices)}"
        )
    return str(value)


def _axis(path: str, value: Any, check: Any) -> Any:
    """``check(path, value)`` for one value; for a list (a sweep axis) each element checked with its
    index in the path."""
    if not isinstance(value, list):
        return check(path, value)
    if not value:
        raise ConfigError(f"{path}: an empty list is not a sweep axis; give at least one value")
    return [check(f"{path}[{i}]", v) for i, v in enumerate(value)]


def _calibrate_table(path: str, value: Any) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise ConfigError(
            f"{path} must be a table, e.g. {{ epsilon = 4.0, delta = 1e-5, family = \"geometric\" }}, "
            f"got {value!r}"
        )
    reject_unknown_keys(f"{path}.", value, CALIBRATE_KEYS, f"in {path}")
    if "epsilon" not in value:
        raise ConfigError(f"{path}.epsilon is required (the target epsilon, a number > 0)")
    out: dict[str, Any] = {"epsilon": _axis(f"{path}.epsilon", value["epsilon"], _positive)}
    dl = value.get("delta")
    out["delta"] = _axis(f"{path}.delta", dl, _delta) if dl is not None else None
    out["infeasible"] = _choice(f"{path}.infeasible", value.get("infeasible", _D["calibrate.infeasible"]),
                                INFEASIBLE_CHOICES)
    out["family"] = _choice(f"{path}.family", value.get("family", _D["calibrate.family"]),
                            CALIBRATION_FAMILIES)
    out["method"] = _choice(f"{path}.method", value.get("method", _D["calibrate.method"]),
                            CALIBRATION_METHODS)
    if "values" in value:
        vals = value["values"]
        if not isinstance(vals, list) or not vals:
            raise ConfigError(f"{path}.values must be a non-empty list of numbers >= 0, got {vals!r}")
        out["values"] = [check_number(v, f"{path}.values[{i}]", low=0,
                                      expected="a finite number >= 0") for i, v in enumerate(vals)]
        if out["family"] != "explicit":
            raise ConfigError(f"{path}.values is only used with family = \"explicit\", "
                              f"got family = {out['family']!r}")
    else:
        out["values"] = None
    out["rel_tol"] = check_number(value.get("rel_tol", _D["calibrate.rel_tol"]), f"{path}.rel_tol",
                                  low=0, high=1, low_open=True, high_open=True)
    return out


def check_privacy(path: str, value: Any) -> dict[str, Any]:
    """Validate the raw ``[privacy]`` table and fill defaults.

    The keys of the removed candidate search are refused with a message that says so
    (:func:`reject_removed_keys`).

    Returns
    -------
    dict
        Every key of :data:`PRIVACY_KEYS`; ``delta`` stays a list when it is a sweep axis; ``epsilon`` is
        always a list (the reporting grid); ``calibrate`` is ``None`` or the resolved table.

    Raises
    ------
    ConfigError
        Unknown keys (with a did-you-mean) and bad values, naming the path (``privacy.delta``).
    """
    if not isinstance(value, Mapping):
        raise ConfigError(f"{path} must be a table ([{path}]), got {value!r}")
    reject_removed_keys(path, value)
    reject_unknown_keys(f"{path}.", value, PRIVACY_KEYS, f"in [{path}]")
    out: dict[str, Any] = {}
    out["view"] = _choice(f"{path}.view", value.get("view", _D["view"]), PAIR_VIEWS)
    out["neighbours"] = _choice(f"{path}.neighbours", value.get("neighbours", _D["neighbours"]),
                                NEIGHBOUR_KINDS)
    out["delta"] = _axis(f"{path}.delta", value.get("delta", _D["delta"]), _delta)
    eps = value.get("epsilon", list(_D["epsilon"]))
    if not isinstance(eps, list):
        eps = [eps]
    if not eps:
        raise ConfigError(f"{path}.epsilon must list at least one epsilon > 0 (the reporting grid)")
    for i, e in enumerate(eps):
        if isinstance(e, list):
            raise ConfigError(f"{path}.epsilon is the grid at which delta is reported, not a sweep "
                              f"axis; give a flat list of numbers > 0, got {eps!r}")
        _positive(f"{path}.epsilon[{i}]", e)
    out["epsilon"] = [float(e) for e in eps]
    out["search"] = value.get("search", _D["search"])  # a preset or a number of levels, as written
    with renamed_fields({"search": f"{path}.search"}):
        SearchSettings.of(out["search"])  # validates
    methods = value.get("methods", list(_D["methods"]))
    if not isinstance(methods, list) or not methods:
        raise ConfigError(f"{path}.methods must be a non-empty list of "
                          f"{', '.join(AUDIT_METHODS)}, got {methods!r}")
    out["methods"] = [_choice(f"{path}.methods[{i}]", m, AUDIT_METHODS)
                      for i, m in enumerate(methods)]
    if len(set(out["methods"])) != len(out["methods"]):
        raise ConfigError(f"{path}.methods lists a method twice: {methods!r}")
    audit = value.get("audit", _D["audit"])
    if not isinstance(audit, bool):
        raise ConfigError(f"{path}.audit must be true or false, got {audit!r}")
    out["audit"] = audit
    delta_up = value.get("delta_upper", _D["delta_upper"])
    if not isinstance(delta_up, bool):
        raise ConfigError(f"{path}.delta_upper must be true or false, got {delta_up!r}")
    out["delta_upper"] = delta_up
    out["rank_by"] = _choice(f"{path}.rank_by", value.get("rank_by", _D["rank_by"]), ("epsilon", "delta"))
    out["epsilon_cap"] = check_number(value.get("epsilon_cap", _D["epsilon_cap"]),
                                      f"{path}.epsilon_cap", low=0, low_open=True,
                                      expected="a finite number > 0 (default 1000)")
    if "epsilon_cap" in value and out["rank_by"] == "delta":
        raise ConfigError(f"{path}.epsilon_cap is read by the search when pairs are ranked by "
                          "epsilon; rank_by = \"delta\" solves no epsilon: leave it out")
    cal = value.get("calibrate")
    out["calibrate"] = None if cal is None else _calibrate_table(f"{path}.calibrate", cal)
    return out


REMOVED_KEYS: tuple[str, ...] = ("candidates", "refine", "ascent_steps")
"""Keys of ``[privacy]`` (``candidates`` of ``calibrate`` too) that set the removed candidate search."""


def reject_removed_keys(path: str, value: Mapping[str, Any]) -> None:
    """Refuse a key of the removed candidate search (``candidates``, ``refine``, ``ascent_steps``,
    ``calibrate.candidates``), saying that it was removed and what replaced it.

    Raises
    ------
    ConfigError
        Naming the key and its value.
    """
    given = [(f"{path}.{k}", value[k]) for k in REMOVED_KEYS if k in value]
    cal = value.get("calibrate")
    if isinstance(cal, Mapping) and "candidates" in cal:
        given.append((f"{path}.calibrate.candidates", cal["candidates"]))
    if given:
        key, v = given[0]
        raise ConfigError(f"{key} = {v!r}: this key set the candidate search, which was removed; "
                          f"there is one search, whose effort is {path}.search = quick | standard | "
                          f"thorough | 1..8 levels: remove {key}", field=key)


# --- per point ------------------------------------------------------------------------------------
def rank_note(rank: int) -> str | None:
    """The message for a run of ``rank > 1`` (the pair audit composes all components)."""
    if rank <= 1:
        return None
    return (f"protocol.rank = {rank}: components 2..{rank} run on data deflated with quantities "
            "already released (post-processing); the audit covers all components, conditionally on "
            "the realised earlier components of the point's recorded repeat 0, and the per-component "
            "Renyi divergences add (adaptive RDP composition); exact and Chernoff values are those "
            "of the product of the conditional components")


def calibrate_point(config: Mapping[str, Any], structure: Structure,
                    on_level: Callable[[LevelEvent], None] | None = None) -> Calibration:
    """Calibrate the noise scale of one point from its ``privacy.calibrate`` table, on the point's
    network and data (built once by the caller). The calibration's ``RuntimeWarning`` notes are not
    raised: the returned :class:`~dpgossip.protocols.ddppm.calibrate.Calibration` carries the same text.
    ``on_level`` hears of every candidate noise scale and its targets (progress only)."""
    spec = PointSpec.from_config(config)
    priv, proto = spec.privacy, spec.protocol
    assert priv is not None and priv.calibrate is not None
    cal = priv.calibrate
    if proto.rank != 1:
        raise ConfigError(f"privacy.calibrate needs protocol.rank = 1, got {proto.rank}: "
                          "calibration searches the noise of a rank-1 run (a rank-r audit is "
                          "conditional on one realised run); calibrate rank 1, then audit rank r")
    values = cal.values
    if cal.family == "explicit" and values is None:
        values = proto.noise.values or None
        if values is None:
            raise ConfigError("privacy.calibrate: family \"explicit\" needs base values "
                              "(privacy.calibrate.values or protocol.noise.values)")
    alpha = dict(proto.alpha) if isinstance(proto.alpha, Mapping) else proto.alpha
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the notes carry the same text
        return calibrate_noise(
            structure.data, structure.network,
            iterations=proto.iterations, consensus_steps=proto.consensus_steps,
            epsilon=cal.epsilon, delta=cal.delta, family=cal.family,
            base_values=None if values is None else list(values),
            audit=AuditSettings(view=priv.view, neighbours=priv.neighbours, method=cal.method,
                                seed=spec.seed, search=priv.search, on_level=on_level,
                                delta_upper=priv.delta_upper),
            protocol=FixedProtocol(alpha=alpha, sigma_q=proto.sigma_q),
            scale_search=ScaleSearchOptions(rel_tol=cal.rel_tol),
        )


def _is_ddppm(config: Mapping[str, Any]) -> bool:
    """Whether the point's kind is audited pair by pair (``ProtocolKind.pair_audit``: D-DP-PM), the
    only kind this section audits and calibrates."""
    from dpgossip.protocols.registry import kind

    return kind(config["protocol"].get("kind", DEFAULT_KIND)).pair_audit


def prepare_point(config: Mapping[str, Any], structure: Structure
                  ) -> tuple[dict[str, Any], dict[str, Any]]:
    """Before a point runs: calibrate its noise when ``privacy.calibrate`` is set.

    Returns
    -------
    config, row
        The point's configuration with ``protocol.noise`` replaced by the calibrated table (and the
        calibration stored under ``privacy.calibrated``), and the columns added to its ``runs.csv`` rows
        (``noise_scale``, ``calibrated_epsilon``, ...). Unchanged and ``{}`` without ``calibrate``.

    Raises
    ------
    ConfigError
        When the target cannot be met at any scale tried (the message says why).
    """
    priv = config.get("privacy") or {}
    if not priv.get("calibrate") or not _is_ddppm(config):
        return dict(config), {}
    say = stage_hook()  # a point run in the driver's thread: every candidate scale is said
    target = priv["calibrate"]
    levels = None if say is None else LevelProgress(
        lambda text: say(f"calibration: {text}"), target_epsilon=float(target["epsilon"]),
        target_delta=float(target["delta"]), every=10.0)
    cal = calibrate_point(config, structure, on_level=levels)
    if not cal.met and priv["calibrate"].get("infeasible", "error") != "floor":
        raise ConfigError(
            f"privacy.calibrate: cannot meet epsilon = {cal.target_epsilon:g} at delta = "
            f"{cal.target_delta:g} ({cal.family} schedule, view {cal.view}): "
            + "; ".join(cal.notes)
        )
    new = {k: (dict(v) if isinstance(v, Mapping) else v) for k, v in config.items()}
    new["protocol"]["noise"] = dict(cal.noise)
    record = {k: v for k, v in cal.to_row().items() if k not in ("view", "neighbours")}
    record["calibration_notes"] = " | ".join(cal.notes)
    new["privacy"]["calibrated"] = record
    # calibration_met never travels without what it means (a per-instance lower estimate, not a DP
    # guarantee) and the search it rests on
    row = {k: record[k] for k in ("noise_scale", "calibrated_epsilon", "calibrated_delta",
                                  "target_epsilon", "target_delta", "calibration_family",
                                  "calibration_method", "calibration_met", "calibration_meaning",
                                  "calibration_search")}
    return new, row


_AUDIT_FIELDS: dict[str, str] = {
    **{k: f"privacy.{k}" for k in ("view", "neighbours", "search", "delta", "methods")},
    "epsilons": "privacy.epsilon",
    "options.rank_by": "privacy.rank_by",
    "params": "protocol",
}
"""Parameters of :func:`~dpgossip.protocols.ddppm.audit.audit_pairs` -> the ``[privacy]`` keys they come
from."""

AUDITED_REPEAT = 0
"""The recorded repeat whose run a rank ``r > 1`` audit is conditional on (``runs.csv``, ``repeat = 0``)."""


def audit_config(config: Mapping[str, Any], problem: Problem,
                 on_target: Callable[[int, int, int], None] | None = None,
                 on_stage: Callable[[int, str], None] | None = None, *,
                 neighbours: Mapping[int, Sequence[Neighbour]] | None = None,
                 **options: Any) -> PairAudit:
    """Audit one point's problem as its ``[privacy]`` section says (``on_target(target, done, total)``
    is called after each target and ``on_stage(target, text)`` at each stage of its search:
    progress only; ``options``: more :class:`~dpgossip.protocols.ddppm.audit.AuditOptions`, e.g. the
    targets and ``on_target_results`` of a resumed audit). With ``neighbours`` (by target), no search:
    the exact values of those neighbours only
    (:func:`~dpgossip.protocols.ddppm.audit.audit_neighbours`).

    For rank ``r > 1`` the audit is conditional on the realised earlier components of the point's
    recorded repeat :data:`AUDITED_REPEAT` (its seed ``SeedSequence(seed, spawn_key=(0,))``): the
    matrix backend's run, which the engine reproduces with the same noise.
    """
    spec = PointSpec.from_config(config)
    priv = spec.privacy
    assert priv is not None
    data, network, params = problem.data, problem.network, problem.params
    run = None
    if params.rank > 1:
        run = run_matrix(data, network, params, repeat_seed(spec.seed, AUDITED_REPEAT))
    opts = AuditOptions(run=run, rank_by=priv.rank_by, on_target=on_target, on_stage=on_stage,
                        **options)
    common = {"delta": priv.delta, "epsilons": list(priv.epsilon), "view": priv.view,
              "seed": spec.seed, "methods": priv.methods, "options": opts}
    with renamed_fields(_AUDIT_FIELDS):
        if neighbours is not None:
            return audit_neighbours(data, network, params, neighbours, **common)
        return audit_pairs(data, network, params, neighbours=priv.neighbours, search=priv.search,
                           epsilon_cap=priv.epsilon_cap, **common)


def audit_with_store(config: Mapping[str, Any], problem: Problem, store: TargetStore | None,
                     **progress: Any) -> PairAudit:
    """The point's pair audit (:func:`audit_config`); with a ``store``, the targets it holds are read
    back, the others searched and each stored as soon as it is done, and the certified upper bounds
    computed for every target: the same bits as an audit of every target at once (each target's search
    reseeds its streams with ``(seed, target)``). With ``privacy.delta_upper``, the delta each target's
    bound proves at each epsilon too (:func:`~dpgossip.protocols.ddppm.audit.with_delta_upper`)."""
    if store is None:
        audit = audit_config(config, problem, **progress)
    else:
        audit = _stored_audit(config, problem, store, **progress)
    if not PointSpec.from_config(config).privacy.delta_upper:
        return audit
    return with_delta_upper(audit, problem.data, problem.network, problem.params,
                            config["privacy"]["neighbours"])


def _stored_audit(config: Mapping[str, Any], problem: Problem, store: TargetStore,
                  **progress: Any) -> PairAudit:
    """:func:`audit_with_store` with a store: the targets it holds read back, the others searched."""
    data = problem.data
    done = store.done(range(data.m))
    audit = audit_config(config, problem, targets=[j for j in range(data.m) if j not in done],
                         upper_bound=False, on_target_results=store.save, **progress)
    found: dict[int, dict[tuple[int, int], Any]] = {}
    for key, r in audit.results.items():
        found.setdefault(key[1], {})[key] = r
    results = {k: r for j in range(data.m) for k, r in (done.get(j) or found.get(j, {})).items()}
    return replace(audit, results=results,
                   upper=upper_bounds(data, problem.network, problem.params, audit.delta,
                                      config["privacy"]["neighbours"]))


def exact_for_pair(data: Any, network: Any, params: Any, audit: PairAudit,
                   observer: int, target: int) -> dict[str, Any]:
    """The exact hockey-stick numbers of one audited pair's worst neighbour (when the audit ran only
    the cheaper conversions): ``epsilon`` at the audit's ``delta`` and ``delta`` at its epsilon grid.

    Rebuilds the pair with :func:`~dpgossip.protocols.ddppm.audit.result_pair` (for rank ``r > 1`` on the
    audit's realised run, composing the components) and evaluates it by the exact method.
    """
    from dpgossip.protocols.ddppm.audit import result_pair

    with renamed_fields({"params": "protocol"}):
        pair = result_pair(audit, data, network, params, observer, target)
    return {"epsilon": float(pair.epsilon(audit.delta, method="exact")),
            "delta_at_epsilon": {f"{e:g}": float(pair.delta(e, method="exact"))
                                 for e in audit.epsilons}}


def leakage_rows(audit: PairAudit, extra: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """One row per (observer, target): ``epsilon`` of the first method (the heatmap value),
    ``epsilon_<method>`` and ``delta_<method>_at_eps_<e>`` for every method, the worst neighbour found."""
    first = audit.methods[0]
    out = []
    for (o, j) in sorted(audit.results):
        r = audit.results[(o, j)]
        row: dict[str, Any] = {"observer": o, "target": j, "hops": r.hops}
        solved = audit.rank_by != "delta"  # else no epsilon: the heatmap value is delta at eps[0]
        if solved:
            row["epsilon"] = r.epsilon[first]
        else:
            row["delta_at_epsilon"] = r.delta[first][0]
        row["method"] = first
        for meth in audit.methods:
            if solved:
                row[f"epsilon_{meth}"] = r.epsilon[meth]
            for e, dl in zip(audit.epsilons, r.delta[meth], strict=True):
                row[f"delta_{meth}_at_eps_{e:g}"] = dl
        row.update({"renyi2": r.renyi2, "renyi2_pq": r.renyi2_pq, "renyi2_qp": r.renyi2_qp,
                    "delta": audit.delta, "view": audit.view, **r.neighbour.to_row(), **(extra or {}),
                    **audit.upper_columns(j, r.epsilon[first]),
                    **({"stopped_at_cap": True} if r.capped else {})})
        out.append(row)
    return out


def audit_point(config: Mapping[str, Any], problem: Problem) -> dict[str, list[dict[str, Any]]]:
    """The ``run`` hook: ``leakage`` rows when ``privacy.audit`` is true, ``calibration`` rows when the
    point was calibrated."""
    priv = config["privacy"]
    tables: dict[str, list[dict[str, Any]]] = {}
    if not _is_ddppm(config):  # the ppm* kinds audit their own runs (scenario.protocol_point)
        return tables
    calibrated = priv.get("calibrated")
    if calibrated:
        tables["calibration"] = [dict(calibrated)]
    if priv.get("audit"):
        scratch = current_scratch()
        store = TargetStore(scratch) if scratch is not None else None
        say = stage_hook()  # a point run in the driver's thread: targets said with their ETA
        targets = None if say is None else TargetProgress(say, "pair audit", every=10.0)
        progress = {} if targets is None else {"on_target": targets, "on_stage": targets.stage}
        audit = audit_with_store(config, problem, store, **progress)
        params = problem.params
        extra: dict[str, Any] = {"neighbours": priv["neighbours"],
                                 "sigma_p_first": float(params.sigma_p[0, 0]),
                                 "sigma_p_last": float(params.sigma_p[0, -1]),
                                 "sigma_q": params.sigma_q}
        note = rank_note(params.rank)
        if note:
            extra["note"] = note
            extra["audited_repeat"] = AUDITED_REPEAT
        tables["leakage"] = leakage_rows(audit, extra)
    return tables


register_section("privacy", check_privacy,
                 sweepable=("delta", "calibrate.epsilon", "calibrate.delta"), run=audit_point,
                 prepare=prepare_point, fields=PRIVACY_FIELDS,
                 doc="The per-instance privacy audit of every (observer, target) pair and the noise "
                 "calibration (dpgossip.privacy). Every audited number is a lower estimate of the "
                 "worst case over neighbours of this X: the exact value of a neighbour the search "
                 "found. Keys calibrate.* belong to the inline table calibrate = { ... }. Read by "
                 "protocol.kind = \"ddppm\" only: [privacy] in a scenario without a ddppm point is "
                 "refused (the other kinds audit and calibrate through their own section: [ppm], "
                 "[cape], [floorfree]).")
