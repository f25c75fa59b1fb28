"""The pair audit: for every (observer, target), the worst neighbour found and its (epsilon, delta).

docs/model.md, Sections 2-4. The audit is **per instance**: it is about this ``X`` and the neighbours
that were tried, not a worst case over all datasets.

Search (Section 3): the one search of :mod:`dpgossip.protocols.ddppm.search`, whose effort is a level
(``quick``, ``standard``, ``thorough`` or a number of levels): every row of the target screened, starts
from ``-x`` and every singular direction, projected ascent, the asked quantity polished, every view's
neighbours tried on the others; evidence per pair. Where it is exact, the views are evaluated on a
sufficient statistic (:mod:`~dpgossip.protocols.ddppm.reduced`, the same divergences); nothing about
it is chosen by the user but the effort. :func:`audit_neighbours` gives exact values to given neighbours
only (no search).
Every reported worst case is the exact value of an actual neighbour: a lower estimate of the worst case
over all neighbours of this ``X``.

Rank ``r > 1`` (deflation, docs/model.md, Section 1): component ``l + 1`` runs on data deflated with
quantities released for component ``l`` (post-processing).  The audit is conditional on the realised earlier
components of one run (:func:`~dpgossip.protocols.ddppm.matrix.run_matrix` with the audit's seed, or a
given :class:`~dpgossip.protocols.ddppm.result.RunResult`): given them, the deflation subtracted from every
row is the same under ``X`` and ``X'``, so the neighbour of component ``l``'s data ``X_l`` replaces row
``i`` by ``X_l[i] + (x' - x)``.  The views of the components are then independent Gaussians and their
pairs compose (:meth:`GaussianPair.compose`): the Renyi divergences add (adaptive RDP composition) and
the exact and Chernoff values are those of the product of the conditional components.
"""

from __future__ import annotations

import copy
import math
import threading
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from contextlib import closing, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, TypeVar

import networkx as nx
import numpy as np

from dpgossip._parent import die_with_parent, spawning, stop_pool, watched_pool
from dpgossip._threads import blas_threads, single_blas_thread
from dpgossip.data.partition import PartitionedData
from dpgossip.errors import ConfigError, check_choice, check_int, check_number
from dpgossip.privacy.certified_bound import (
    CertifiedBound,
    NoisyPowerIteration,
    certified_delta_upper,
    certified_upper_bounds,
)
from dpgossip.privacy.gaussian_pair import METHODS, GaussianPair, rdp_deltas
from dpgossip.privacy.neighbours import NEIGHBOUR_KINDS, Neighbour
from dpgossip.protocols.checks import check_data, check_network
from dpgossip.protocols.ddppm.auditor import ComponentAuditor
from dpgossip.protocols.ddppm.matrix import run_matrix
from dpgossip.protocols.ddppm.observer_batch import ObserverBatchAuditor
from dpgossip.protocols.ddppm.params import ProtocolParams, check_params
from dpgossip.protocols.ddppm.reduced import ReducedAuditor, reducible
from dpgossip.protocols.ddppm.release import ReleaseModel, build_release_model
from dpgossip.protocols.ddppm.result import RunResult
from dpgossip.protocols.ddppm.search import (
    DEFAULT_SEARCH,
    AskedQuantity,
    SearchEvidence,
    SearchSettings,
    TargetSearch,
)
from dpgossip.protocols.ddppm.subview import FirstMessageView
from dpgossip.protocols.ddppm.views import View, make_view, view_factor
from dpgossip.topology.network import Network

__all__ = ["EPSILON_CAP", "value_kind", "AuditOptions", "PairAudit", "audit_processes", "audit_searches",
           "search_target_cached",
           "received_copy",
           "PairResult", "RunAuditor", "audit_pairs",
           "audit_neighbours",
           "result_pair",
           "view_pair",
           "view_gaussian",
           "component_model", "rank_audit_note", "PAIR_VIEWS", "upper_bounds", "upper_deltas",
           "upper_gap", "with_delta_upper"]

PAIR_VIEWS = ("observer", "paper", "all-but-one", "eavesdropper")
_T = TypeVar("_T")
EPSILON_CAP = 1000.0
"""Default ``epsilon_cap`` of a pair audit: above it a view has no meaningful privacy, and its search
stops at the first neighbour that exceeds it."""
UPPER_MAX_COORDS = 8192
"""Largest ``m d`` for which audits attach the certified upper bound (:func:`upper_bounds`)."""


# --- dense reference path ------------------------------------------------------------------------
def component_model(data: PartitionedData, network: Network, params: ProtocolParams,
                    component: int = 0, X: np.ndarray | None = None) -> ReleaseModel:
    """Release model of one component on ``X`` (default ``data.X``)."""
    return build_release_model(data, network.dense_W(), T=params.iterations, c=params.consensus_steps,
                               alpha=params.alpha[component], sigma_q=params.sigma_q,
                               sigma_p=params.sigma_p[component], X=X)


def view_gaussian(model: ReleaseModel, view: View, network: Network,
                  w_known: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Mean and covariance of a view, by dense matrices (the reference path).

    Joint (default): ``V = [F w ; w_known]`` has law ``N(0, G G^T)``, ``G = [F ; E_known] diag(std)``.
    Conditional (``w_known`` given: a realised latent vector, of which the known part is used; Eq. (29) of
    Campbell et al.): ``F w | w_known ~ N(F_k w_k, F_u diag(std_u^2) F_u^T)``.
    """
    F, known = view_factor(model, view, network.graph)
    std = model.latent_std
    if w_known is None:
        E = np.zeros((known.size, model.N))
        E[np.arange(known.size), known] = 1.0
        G = np.vstack([F, E]) * std
        return np.zeros(G.shape[0]), G @ G.T
    w_known = np.asarray(w_known, dtype=float)
    unknown = np.setdiff1d(np.arange(model.N), known)
    G = F[:, unknown] * std[unknown]
    return F[:, known] @ w_known[known], G @ G.T


def view_pair(model0: ReleaseModel, model1: ReleaseModel, view: View, network: Network,
              w_known: np.ndarray | None = None) -> GaussianPair:
    """Dense :class:`GaussianPair` of a view under ``X`` (``model0``) and ``X'`` (``model1``)."""
    m0, S0 = view_gaussian(model0, view, network, w_known)
    m1, S1 = view_gaussian(model1, view, network, w_known)
    return GaussianPair(m0, (S0 + S0.T) / 2, m1, (S1 + S1.T) / 2)


# --- the pair audit ------------------------------------------------------------------------------
def value_kind(method: str, capped: bool = False) -> str:
    """What a pair's value by ``method`` is: the exact value of the worst neighbour found is a lower
    estimate of the worst case over neighbours; another conversion of that neighbour (RDP, Chernoff)
    lies above its exact value, so it is neither a lower estimate nor a bound of the worst case; a
    capped value is the ``epsilon_cap``, which a neighbour found exceeds."""
    if capped:
        return ("the epsilon_cap, which a neighbour found exceeds: the worst case is at least this "
                "(the search stopped there)")
    if method == "exact":
        return "lower estimate of the worst case over neighbours (per instance)"
    return (f"{method} conversion of the neighbour found: above its exact value, neither a lower "
            "estimate nor a bound of the worst case")


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class PairResult:
    """The worst neighbour found for one (observer, target) pair and its privacy numbers."""

    observer: int
    target: int
    hops: int
    neighbour: Neighbour
    epsilon: dict[str, float]
    """``epsilon`` at the audit's ``delta`` for each method (exact, rdp, chernoff)."""
    delta: dict[str, list[float]]
    """``delta`` at each epsilon of the grid, for each method."""
    renyi2: float
    """The Renyi divergence of order 2 of the worst neighbour in the worse direction,
    ``max(D_2(P || Q), D_2(Q || P))`` (a quick scale of the leakage; either may be infinite)."""
    renyi2_pq: float = math.nan
    """``D_2(P || Q)`` (``P`` the law under ``X``)."""
    renyi2_qp: float = math.nan
    """``D_2(Q || P)``."""
    evidence: SearchEvidence | None = None
    """With ``search``: how the search found it and how the value moved with the effort."""

    @property
    def capped(self) -> bool:
        """The search stopped at the audit's ``epsilon_cap``: the first method's epsilon holds the cap,
        and the worst case over neighbours is at least that (the neighbour exceeds it)."""
        return self.evidence is not None and self.evidence.capped

    def rows(self, epsilons: Sequence[float], delta_target: float) -> list[dict[str, object]]:
        """Tidy rows: one per method, each with ``estimate``, what its value is
        (:func:`value_kind`)."""
        out = []
        first = next(iter(self.epsilon), None)
        for meth, eps in self.epsilon.items():
            row: dict[str, object] = {"observer": self.observer, "target": self.target,
                                      "hops": self.hops, "method": meth, "delta": delta_target,
                                      "epsilon": eps, "renyi2": self.renyi2,
                                      "renyi2_pq": self.renyi2_pq, "renyi2_qp": self.renyi2_qp,
                                      **self.neighbour.to_row(),
                                      **(self.evidence.to_row() if self.evidence else {}),
                                      "estimate": value_kind(meth, self.capped and meth == first)}
            for e, dl in zip(epsilons, self.delta[meth], strict=True):
                row[f"delta_at_eps_{e:g}"] = dl
            out.append(row)
        return out


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class PairAudit:
    """The (observer, target) audit of a run: ``results[(o, j)]`` and search statistics.

    With ``components > 1`` every pair is the composition of the per-component pairs, conditional on
    the realised earlier components of ``run`` (module docstring); ``note`` says so.
    """

    view: str
    delta: float
    epsilons: tuple[float, ...]
    methods: tuple[str, ...]
    results: dict[tuple[int, int], PairResult]
    m: int
    notes: tuple[str, ...] = field(default=())
    components: int = 1
    """Number of components audited (``params.rank``); their pairs are composed when ``> 1``."""
    note: str | None = None
    rank_by: str = "epsilon"
    """``epsilon``: pairs ranked by epsilon at ``delta``; ``delta``: by delta at ``epsilons[0]``, with no
    epsilon solved (``PairResult.epsilon`` holds NaN)."""
    """The composition statement when ``components > 1`` (:func:`rank_audit_note`), else None."""
    run: RunResult | None = field(default=None, repr=False)
    """The run whose realised components the audit is conditional on (``components > 1`` only)."""
    search: SearchSettings | None = None
    """The search's settings, or None for the exact values of given neighbours
    (:func:`audit_neighbours`)."""
    upper: dict[int, CertifiedBound] = field(default_factory=dict)
    """Per target, the certified upper bound on epsilon at ``delta`` (docs/upper-bound.md): every
    neighbour of this ``X``, every observer; empty for rank ``r > 1`` (not derived)."""
    delta_upper: dict[int, tuple[float, ...]] = field(default_factory=dict)
    """Per target, the delta the certified bound proves at each of ``epsilons`` (:func:`with_delta_upper`;
    1 where it proves nothing below 1); empty unless asked for."""

    def bracket(self, observer: int, target: int, method: str = "exact") -> tuple[float, float]:
        """``[lower, upper]`` epsilon at ``delta`` of a pair: the search's value (a lower estimate) and
        the certified bound (``nan`` when none was computed)."""
        up = self.upper.get(target)
        return (self.results[(observer, target)].epsilon[method],
                up.epsilon if up is not None else math.nan)

    def worst_upper(self) -> CertifiedBound | None:
        """The target with the largest certified bound (None when none was computed)."""
        return max(self.upper.values(), key=lambda b: b.epsilon, default=None)

    def matrix(self, method: str = "exact", what: str = "epsilon", index: int = 0) -> np.ndarray:
        """``m x m`` matrix (observer x target) of epsilon at ``delta`` (``what="epsilon"``) or of delta at
        ``epsilons[index]`` (``what="delta"``); ``nan`` where no pair was audited."""
        M = np.full((self.m, self.m), np.nan)
        for (o, j), r in self.results.items():
            M[o, j] = r.epsilon[method] if what == "epsilon" else r.delta[method][index]
        return M

    def worst(self, method: str = "exact", by: str = "epsilon") -> PairResult:
        """The pair with the largest epsilon at ``delta`` (``by="epsilon"``) or the largest delta at
        ``epsilons[0]`` (``by="delta"``)."""
        if by == "delta":
            return max(self.results.values(), key=lambda r: r.delta[method][0])
        return max(self.results.values(), key=lambda r: r.epsilon[method])

    def upper_columns(self, target: int, lower: float) -> dict[str, object]:
        """The certified side of a pair of ``target`` whose lower estimate is ``lower``:
        ``epsilon_upper``, ``upper_reason`` and ``gap_upper_lower`` (``upper / lower``; NaN where the
        lower value is infinite or not solved: no privacy (mutually singular laws), or
        ``rank_by = "delta"``), and ``delta_upper_at_eps_<e>`` where :attr:`delta_upper` holds the
        target; ``{}`` when no bound was computed."""
        up = self.upper.get(target)
        deltas = {f"delta_upper_at_eps_{e:g}": d
                  for e, d in zip(self.epsilons, self.delta_upper.get(target, ()), strict=False)}
        if up is None:
            return deltas
        return {"epsilon_upper": up.epsilon, "upper_reason": up.reason or "",
                "gap_upper_lower": upper_gap(up.epsilon, lower), **deltas}

    def rows(self) -> list[dict[str, object]]:
        """Tidy rows: one per (observer, target, method), with the certified side
        (:meth:`upper_columns`)."""
        return [{**row, "view": self.view,
                 **self.upper_columns(key[1], float(row["epsilon"]))}
                for key in sorted(self.results)
                for row in self.results[key].rows(self.epsilons, self.delta)]


def upper_gap(upper: float, lower: float) -> float:
    """``upper / lower``: how far apart the certified bound and the lower estimate are (NaN where the
    lower value is infinite or not solved, infinite where it is 0)."""
    low = float(lower)
    return math.nan if math.isinf(low) or math.isnan(low) else upper / low if low > 0 else math.inf


def _renyi2(pair: GaussianPair) -> dict[str, float]:
    """``renyi2`` (the worse direction), ``renyi2_pq`` and ``renyi2_qp`` of a pair."""
    pq, qp = float(pair.renyi(2.0, "PQ")), float(pair.renyi(2.0, "QP"))
    return {"renyi2": max(pq, qp), "renyi2_pq": pq, "renyi2_qp": qp}


def rank_audit_note(rank: int, run_seed: object) -> str | None:
    """The statement every report of a rank ``r > 1`` audit carries (None for rank 1)."""
    if rank <= 1:
        return None
    return (f"rank {rank}: audited conditionally on the realised components of run seed {run_seed}; "
            "the per-component Renyi divergences add (adaptive RDP composition); exact and Chernoff "
            "values are those of the product of the conditional components")


class RunAuditor:
    """Pairs of views of a whole run (all ``params.rank`` components) for candidate neighbours.

    Rank 1: one :class:`ComponentAuditor` on ``data.X``.  Rank ``r > 1``: one per component on the
    realised deflated data ``run.data[l]`` (``run`` defaults to :func:`run_matrix` with ``seed``), and the
    per-component pairs of a neighbour composed by :meth:`GaussianPair.compose` (module docstring).

    Parameters
    ----------
    data, network, params, views
        The problem and the views, keyed by any hashable key.
    seed
        Seed of the range finders and, for rank ``r > 1`` without ``run``, of the realised run.
    run
        The realised run (rank ``r > 1`` only); its ``data[0]`` must be ``data.X``.
    """

    def __init__(self, data: PartitionedData, network: Network, params: ProtocolParams,
                 views: dict[Hashable, View], *, seed: int = 0, run: RunResult | None = None) -> None:
        self.data = data
        self.components = int(params.rank)
        if self.components == 1:
            self.run = None
            self.auditors = [ComponentAuditor(data, network, params, views, seed=seed)]
            self.note = None
            return
        if run is None:
            run = run_matrix(data, network, params, seed)
            run_seed: object = seed
        else:
            run_seed = run.seed_entropy if run.seed_entropy is not None else "(given run)"
        if len(run.data) != self.components or run.params.rank != self.components:
            raise ConfigError(f"the run has {len(run.data)} components, params.rank = "
                              f"{self.components}: audit the run made with these params")
        if run.data[0].shape != data.X.shape or not np.array_equal(run.data[0], data.X):
            raise ConfigError("the run's data[0] is not data.X: audit the run made on this data")
        self.run = run
        self.auditors = [ComponentAuditor(data, network, params, views, component=l, X=run.data[l],
                                          seed=seed) for l in range(self.components)]
        self.note = rank_audit_note(self.components, run_seed)

    def reseed(self, entropy: object) -> None:
        """Restart every component's range-finder stream (:meth:`ComponentAuditor.reseed`)."""
        for auditor in self.auditors:
            auditor.reseed(entropy)

    def pairs(self, nb: Neighbour, keys: list[Hashable]) -> dict[Hashable, GaussianPair]:
        """:class:`GaussianPair` of every view in ``keys`` for the neighbour ``nb`` (composed over the
        components when ``r > 1``)."""
        if self.run is None:
            return self.auditors[0].pairs(nb.apply(self.data.X), keys)
        shift = nb.x_new - self.data.X[nb.row]
        parts: dict[Hashable, list[GaussianPair]] = {k: [] for k in keys}
        for Xl, auditor in zip(self.run.data, self.auditors, strict=True):
            X1 = np.array(Xl, dtype=float)
            X1[nb.row] += shift  # the deflation of row nb.row is the same under X and X'
            for k, pair in auditor.pairs(X1, keys).items():
                parts[k].append(pair)
        return {k: GaussianPair.compose(parts[k]) for k in keys}


def result_pair(audit: PairAudit, data: PartitionedData, network: Network, params: ProtocolParams,
                observer: int, target: int) -> GaussianPair:
    """The :class:`GaussianPair` of an audited pair at its stored worst neighbour, rebuilt on that pair's
    view alone (for rank ``r > 1`` on the audit's realised run, composed): for exact values that the
    audit did not compute."""
    if params.rank > 1 and audit.run is None:
        raise ConfigError(f"params.rank = {params.rank}: rebuilding a pair needs the audit's realised "
                          "run (PairAudit.run), which this audit does not carry",
                          field="params.rank")
    _, view = _view_key(audit.view, observer, target, data.m)
    nb = audit.results[(observer, target)].neighbour
    return RunAuditor(data, network, params, {"v": view}, run=audit.run).pairs(nb, ["v"])["v"]


def _bound_model(data: PartitionedData, network: Network, params: ProtocolParams
                 ) -> NoisyPowerIteration | None:
    """The mechanism of the certified bound (docs/upper-bound.md), or None where no bound is computed:
    rank ``r > 1`` (not derived), rows outside the unit ball (the neighbour relation assumes them
    inside) and above ``UPPER_MAX_COORDS`` coordinates ``m d`` (dense ``md x md`` products)."""
    if (params.rank > 1 or data.m * data.d > UPPER_MAX_COORDS
            or np.max(np.linalg.norm(data.X, axis=1), initial=0.0) > 1 + 1e-9):
        return None
    return NoisyPowerIteration(X=data.X, offsets=data.offsets, W=network.dense_W(),
                               consensus_steps=params.consensus_steps, alpha=params.alpha[0],
                               sigma_q=params.sigma_q, sigma_p=params.sigma_p[0])


def upper_bounds(data: PartitionedData, network: Network, params: ProtocolParams, delta: float,
                 neighbours: str = "bounded", targets: Sequence[int] | None = None
                 ) -> dict[int, CertifiedBound]:
    """The certified upper bound of every target (docs/upper-bound.md), rank 1; ``{}`` (not computed)
    where :func:`_bound_model` defines none."""
    model = _bound_model(data, network, params)
    if model is None:
        return {}
    with blas_threads(1):
        return certified_upper_bounds(model, delta, adjacency=neighbours, targets=targets)


def upper_deltas(data: PartitionedData, network: Network, params: ProtocolParams,
                 epsilons: Sequence[float], neighbours: str = "bounded",
                 targets: Sequence[int] | None = None,
                 lowest: Mapping[int, Sequence[float]] | None = None) -> dict[int, tuple[float, ...]]:
    """Per target, the delta the certified bound proves at each of ``epsilons``
    (:func:`~dpgossip.privacy.certified_bound.certified_delta_upper`, ``lowest`` as there); ``{}``
    where :func:`_bound_model` defines no bound."""
    model = _bound_model(data, network, params)
    if model is None:
        return {}
    with blas_threads(1):
        return certified_delta_upper(model, epsilons, adjacency=neighbours, targets=targets,
                                     lowest=lowest)


def with_delta_upper(audit: PairAudit, data: PartitionedData, network: Network,
                     params: ProtocolParams, neighbours: str = "bounded") -> PairAudit:
    """``audit`` with :attr:`PairAudit.delta_upper` (:func:`upper_deltas` at its ``epsilons``). The
    largest exact delta of a target's pairs at each epsilon, a delta its bound cannot prove less than,
    narrows the search."""
    targets = sorted({j for _, j in audit.results})
    lowest = None
    if "exact" in audit.methods:
        found = np.zeros((audit.m, len(audit.epsilons)))
        for (_, j), r in audit.results.items():
            found[j] = np.fmax(found[j], np.nan_to_num(r.delta["exact"], nan=0.0, posinf=0.0))
        lowest = {j: tuple(found[j].tolist()) for j in targets}
    return replace(audit, delta_upper=upper_deltas(data, network, params, audit.epsilons, neighbours,
                                                   targets, lowest))


def _view_key(kind: str, o: int, j: int, m: int) -> tuple[Hashable, View]:
    """Views whose law does not depend on the target share one factorisation."""
    if kind == "observer":
        return ("observer", o), make_view("observer", m=m, agents=(o,))
    if kind == "paper":
        return ("paper", o, j), make_view("paper", m=m, agents=(o,), target=j)
    if kind == "all-but-one":
        return ("all-but-one", j), make_view("all-but-one", m=m, target=j)
    if kind == "eavesdropper":
        return ("eavesdropper",), make_view("eavesdropper", m=m)
    raise ConfigError(f"view {kind!r} is not supported in a pair audit; use one of "
                      f"{', '.join(PAIR_VIEWS)} (coalitions: audit a View directly)", field="view")


def _agents(values: object, m: int, field: str) -> list[int]:
    """``values`` as a list of agent indices in ``0..m-1`` (:class:`ConfigError` names ``field``)."""
    if isinstance(values, (str, bytes)) or not isinstance(values, (Sequence, np.ndarray)):
        raise ConfigError(f"{field} must be a list of agents in 0..{m - 1}, got {values!r}",
                          field=field)
    out = []
    for k, j in enumerate(values):
        if isinstance(j, bool) or not isinstance(j, (int, np.integer)) or not 0 <= j < m:
            raise ConfigError(f"{field}[{k}] = {j!r} is not an agent; agents are 0..{m - 1}",
                              field=f"{field}[{k}]")
        out.append(int(j))
    return out


def _pairs_and_views(data: PartitionedData, view: str, delta: float, epsilons: Sequence[float],
                     rank_by: str, targets: Sequence[int] | None, observers: Sequence[int] | None
                     ) -> tuple[list[int], list[int], dict[tuple[int, int], Hashable],
                                dict[Hashable, View]]:
    """Validated targets and observers, each pair's view key and the views."""
    if rank_by not in ("epsilon", "delta"):
        raise ConfigError(f"rank_by must be 'epsilon' or 'delta', got {rank_by!r}")
    check_number(delta, "delta", low=0, high=1, low_open=True, high_open=True)
    if isinstance(epsilons, (str, bytes)) or not isinstance(epsilons, (Sequence, np.ndarray)) \
            or len(epsilons) == 0:
        raise ConfigError(f"epsilons must be a non-empty list of numbers > 0, got {epsilons!r}",
                          field="epsilons")
    for i, e in enumerate(epsilons):
        check_number(e, f"epsilons[{i}]", low=0, low_open=True, allow_inf=False,
                     expected="a number > 0")
    m = data.m
    targets = list(range(m)) if targets is None else _agents(targets, m, "options.targets")
    observers = list(range(m)) if observers is None else _agents(observers, m, "options.observers")
    keys: dict[tuple[int, int], Hashable] = {}
    views: dict[Hashable, View] = {}
    for j in targets:
        for o in observers:
            if o == j:
                continue
            k, v = _view_key(view, o, j, m)
            keys[(o, j)] = k
            views[k] = v
    return targets, observers, keys, views


def _by_target(data: PartitionedData, targets: list[int], observers: list[int],
               keys: dict[tuple[int, int], Hashable]
               ) -> Iterator[tuple[int, np.ndarray, list[tuple[int, int]], list[Hashable]]]:
    """Each target with its rows, its (observer, target) pairs and the distinct view keys they use."""
    for j in targets:
        pairs_j = [(o, j) for o in observers if o != j]
        if pairs_j:
            yield (j, np.arange(data.offsets[j], data.offsets[j + 1]), pairs_j,
                   sorted({keys[p] for p in pairs_j}, key=str))


@dataclass(frozen=True, slots=True, kw_only=True)
class AuditOptions:
    """The less common options of :func:`audit_pairs` and :func:`audit_neighbours`."""

    targets: Sequence[int] | None = None
    """Targets audited (default: every agent)."""
    observers: Sequence[int] | None = None
    """Observers audited (default: every agent); a pair ``(o, o)`` is never audited."""
    rank_by: str = "epsilon"
    """``epsilon``: pairs ranked by epsilon at ``delta``; ``delta``: by delta at ``epsilons[0]``, with no
    epsilon solved (``PairResult.epsilon`` holds NaN)."""
    delta_resolution: float = 0.0
    """Resolution of the delta values (0: full accuracy)."""
    run: RunResult | None = None
    """The realised run of a rank ``r > 1`` audit (made with ``params`` on ``data``; default:
    :func:`run_matrix` with ``seed``); ignored for rank 1."""
    warm: Mapping[int, Sequence[Neighbour]] | None = None
    """Neighbours found before, by target (``{j: [Neighbour, ...]}``), given
    exact values after the search (:class:`~dpgossip.protocols.ddppm.search.TargetSearch`), so the audit never
    reports less than theirs; they do not steer the search."""
    upper_bound: bool = True
    """Attach the certified upper bound of every target (:func:`upper_bounds`, docs/upper-bound.md)."""
    workers: int | None = None
    """Targets searched in parallel on this many processes (``spawn``; each
    factorises every view once); the result is the same for any number (each target's search reseeds
    its random streams). None: the count set by :func:`audit_processes`, else 1."""
    on_target: Callable[[int, int, int], None] | None = None
    """Called as ``on_target(target, done, total)`` after each target's search (progress only; it
    does not change the result)."""
    on_stage: Callable[[int, str], None] | None = None
    """Searches in this process only: called as ``on_stage(target, text)`` at each stage of
    a target's search (progress only)."""

    def __post_init__(self) -> None:
        """Check the counts, ``rank_by`` and ``delta_resolution`` (:class:`ConfigError` names the
        option); targets and observers are checked against the data by :func:`audit_pairs`."""
        if self.workers is not None:
            check_int(self.workers, "options.workers", 1)
        check_choice(self.rank_by, "options.rank_by", ("epsilon", "delta"))
        check_number(self.delta_resolution, "options.delta_resolution", low=0)
    on_target_results: Callable[[int, dict[tuple[int, int], PairResult]], None] | None = None
    """Called with each target and its pairs' results as soon as its search is
    done, in target order (to store them: :mod:`dpgossip.scenario.pair_targets`)."""


def audit_pairs(data: PartitionedData, network: Network, params: ProtocolParams, *,
                delta: float = 1e-5, epsilons: Sequence[float] = (1.0,), view: str = "observer",
                neighbours: str = "bounded",
                search: str | int | SearchSettings = DEFAULT_SEARCH, seed: int = 0,
                methods: Sequence[str] = ("exact", "rdp", "chernoff"),
                epsilon_cap: float | None = EPSILON_CAP,
                options: AuditOptions | None = None) -> PairAudit:
    """Audit every (observer, target) pair of a run by a worst-case search.

    Rank 1: component 0 on ``data.X``.  Rank ``r > 1``: all components, conditionally on the realised
    earlier components of ``options.run`` (default: :func:`run_matrix` with ``seed``), each candidate's
    pair being the composition of the per-component pairs (module docstring; ``PairAudit.note`` says so).

    Parameters
    ----------
    delta
        ``delta`` at which each pair's ``epsilon`` is reported.
    epsilons
        Grid at which each pair's ``delta`` is reported.
    view
        ``observer`` (default: agent ``o`` attacking agent ``j``), ``paper`` (the target's own releases,
        jointly with the observer's randomness), ``all-but-one`` or ``eavesdropper`` (the observer index
        is then irrelevant and every row of the matrix is equal).
    neighbours
        ``bounded`` or ``replace-one``.
    search
        The effort of the search (:mod:`dpgossip.protocols.ddppm.search`): ``standard`` (default),
        ``quick``, ``thorough``, a number of levels in 1..8 or :class:`SearchSettings` (every row of the
        target, all singular directions, projected ascent, exact selection, every view's neighbours
        tried on the others, first-message bound, evidence per pair).
    seed
        Seed of the search and the range finders, and of the realised run for rank ``r > 1`` when
        ``options.run`` is not given.
    methods
        Conversions reported (``exact``, ``rdp``, ``chernoff``); the first ranks the pairs.
    epsilon_cap
        With ``rank_by = "epsilon"``: a view whose found neighbour has an epsilon (by the
        first method) above the cap stops being searched and reports the cap as an "at least" value
        (:attr:`PairResult.capped`); there is no meaningful privacy left to measure. None: no cap.
    options
        :class:`AuditOptions`: targets and observers, ``rank_by``,
        ``delta_resolution``, ``run``, ``warm`` and ``workers`` (default: its defaults).

    Returns
    -------
    PairAudit
        ``results[(o, j)]``: the worst neighbour found for each pair and its numbers.
    """
    data, network, params = check_data(data), check_network(network, data.m), check_params(params)
    check_int(seed, "seed", 0)
    if options is not None and not isinstance(options, AuditOptions):
        raise ConfigError(f"options must be a dpgossip.AuditOptions or None, got {options!r}",
                          field="options")
    if isinstance(methods, str):
        raise ConfigError(f"methods must be a list of method names (e.g. ['exact']), got "
                          f"{methods!r}", field="methods")
    methods = tuple(methods)
    if not methods:
        raise ConfigError("methods must name at least one of exact, rdp, chernoff, got []",
                          field="methods")
    for i, method in enumerate(methods):  # before the search: an unknown one failed after it
        check_choice(method, f"methods[{i}]", METHODS)
    opts = options if options is not None else AuditOptions()
    cap = None if epsilon_cap is None else check_number(
        epsilon_cap, "epsilon_cap", low=0, low_open=True, expected="a finite number > 0, or None for no cap")
    settings = SearchSettings.of(search)
    with blas_threads(1):  # many small BLAS calls: one thread is several times faster (module _threads)
        return _optimised_audit(data, network, params, delta=delta, epsilons=epsilons, view=view,
                                neighbours=neighbours, settings=settings, methods=methods,
                                seed=seed, options=opts, epsilon_cap=cap)


def _report_target(options: AuditOptions, target: int, done: int, total: int) -> None:
    """Call ``options.on_target`` (progress) when given."""
    if options.on_target is not None:
        options.on_target(int(target), done, total)


def audit_neighbours(data: PartitionedData, network: Network, params: ProtocolParams,
                     neighbours: Mapping[int, Sequence[Neighbour]], *, delta: float = 1e-5,
                     epsilons: Sequence[float] = (1.0,), view: str = "observer",
                     methods: Sequence[str] = ("exact",), seed: int = 0,
                     options: AuditOptions | None = None) -> PairAudit:
    """Exact values of the given neighbours only, no search: each pair's worst is the largest of its
    target's neighbours (``neighbours[j]``; a target without any gets none and no row).

    The cheap lower estimate behind a calibration's bisection: the neighbours found by a full search at one
    noise scale re-evaluated at another. Arguments as in :func:`audit_pairs`; of ``options`` the
    targets, observers, ``rank_by``, ``delta_resolution``, ``run`` and ``workers`` are used (``warm``
    must be None: the neighbours are the argument).
    """
    opts = options if options is not None else AuditOptions()
    if opts.warm is not None:
        raise ConfigError("audit_neighbours: the neighbours to evaluate are its argument; "
                          "options.warm must be None")
    targets = [j for j in (range(data.m) if opts.targets is None else opts.targets)
               if neighbours.get(int(j))]
    with blas_threads(1):
        return _optimised_audit(data, network, params, delta=delta, epsilons=epsilons, view=view,
                                neighbours="bounded", settings=None, methods=methods, seed=seed,
                                options=replace(opts, targets=targets, warm=neighbours))


def _optimised_audit(data: PartitionedData, network: Network, params: ProtocolParams, *,
                     delta: float, epsilons: Sequence[float], view: str, neighbours: str,
                     settings: SearchSettings | None, methods: Sequence[str], seed: int,
                     options: AuditOptions, epsilon_cap: float | None = None) -> PairAudit:
    """The optimising search (``settings``), or with ``settings=None`` the exact values of the
    ``options.warm`` neighbours alone (:func:`audit_neighbours`). Targets run on ``options.workers``
    processes; each target's search reseeds the range finder with ``(seed, target)``, so the result is
    the same for any number of workers."""
    rank_by, delta_resolution, run, workers = (options.rank_by, options.delta_resolution, options.run,
                                               options.workers)
    if neighbours not in NEIGHBOUR_KINDS:
        raise ConfigError(f"neighbours: unknown kind {neighbours!r}; known: "
                          f"{', '.join(NEIGHBOUR_KINDS)}", field="neighbours")
    if workers is None:
        workers = _AMBIENT_PROCESSES.get()
    if isinstance(workers, bool) or not isinstance(workers, int | np.integer) or workers < 1:
        raise ConfigError(f"audit workers must be an integer >= 1, got {workers!r}")
    warm = options.warm or {}
    targets, observers, keys, views = _pairs_and_views(data, view, delta, epsilons, rank_by,
                                                       options.targets, options.observers)
    note = None
    if params.rank > 1:  # one realised run for every target (and worker)
        if run is None:
            run, run_seed = run_matrix(data, network, params, seed), seed
        else:
            run_seed = run.seed_entropy if run.seed_entropy is not None else "(given run)"
        note = rank_audit_note(params.rank, run_seed)
    hops = dict(nx.all_pairs_shortest_path_length(network.graph))
    common = _SearchSpec(delta=delta, epsilons=tuple(float(e) for e in epsilons),
                         neighbours=neighbours, settings=settings, methods=tuple(methods), seed=seed,
                         rank_by=rank_by, resolution=delta_resolution, epsilon_cap=epsilon_cap)
    tasks = [_TargetJob(target=j, rows=rows, pairs=pairs_j, keys=my_keys,
                        views={k: views[k] for k in my_keys}, warm=tuple(warm.get(j, ())))
             for j, rows, pairs_j, my_keys in _by_target(data, targets, observers, keys)]
    results: dict[tuple[int, int], PairResult] = {}
    problem = (data, network, params, run, views, seed)
    searches = _AMBIENT_SEARCHES.get() if len(tasks) > 1 else None
    if searches is None and workers > 1 and len(tasks) > 1:
        searches = partial(_search_in_processes, min(int(workers), len(tasks)))
    if searches is not None:
        with closing(searches(problem, keys, hops, tasks, common)) as found:
            for n_done, (task, done) in enumerate(zip(tasks, found, strict=False), 1):
                results.update(done)
                if options.on_target_results is not None:
                    options.on_target_results(task.target, done)
                _report_target(options, task.target, n_done, len(tasks))
    else:
        auditor = _search_auditor((data, network, params, run, views, seed))
        for n_done, task in enumerate(tasks, 1):
            stage = (None if options.on_stage is None else
                     lambda text, j=task.target: options.on_stage(int(j), text))
            done = _search_target(data, network, params, run, keys, hops, task, common,
                                  auditor=auditor, on_stage=stage)
            results.update(done)
            if options.on_target_results is not None:
                options.on_target_results(task.target, done)
            _report_target(options, task.target, n_done, len(tasks))
    return PairAudit(view=view, delta=delta, epsilons=tuple(float(e) for e in epsilons),
                     methods=tuple(methods), results=results, search=settings, m=data.m,
                     components=int(params.rank), note=note,
                     run=run if params.rank > 1 else None, rank_by=rank_by,
                     upper=(upper_bounds(data, network, params, delta, neighbours, targets)
                            if options.upper_bound else {}))


_AMBIENT_PROCESSES: ContextVar[int] = ContextVar("dpgossip_audit_processes", default=1)
"""Processes of an audit whose ``AuditOptions.workers`` is None (:func:`audit_processes`)."""


@contextmanager
def audit_processes(count: int) -> Iterator[None]:
    """Within the block, an audit whose ``AuditOptions.workers`` is None (the default) searches its
    targets on ``count`` processes: how ``dpgossip run --workers N`` gives its spare processes to the
    audit of a sweep with fewer points than ``N``. Speed only: the result is the same bits for any
    count (each target reseeds its random streams).

    Raises
    ------
    ConfigError
        ``count`` is not an integer >= 1.
    """
    check_int(count, "audit processes", 1)
    token = _AMBIENT_PROCESSES.set(int(count))
    try:
        yield
    finally:
        _AMBIENT_PROCESSES.reset(token)


def received_copy(obj: _T) -> _T:
    """A deep copy of ``obj`` (a problem or a target's job sent to a worker) whose arrays are new,
    aligned allocations of this process.

    A worker may receive arrays that are views into a message buffer at any byte offset (a Dask
    worker deserialises them in place, where the frame happened to put them). For an unaligned
    array numpy computes some products without BLAS (``X_i^T X_i`` among them) and sums in another
    order; the last bits change, the search's course with them, and the result would depend on how
    a message was laid out (docs/audit-scale.md, Section 6). Copied, the arrays are used as those of
    the process that built the problem, so a target gives the same bits wherever it is searched.
    """
    return copy.deepcopy(obj)


TargetSearches = Callable[[tuple, dict, dict, list, Any], Iterator[dict[tuple[int, int], PairResult]]]
"""``searches(problem, keys, hops, jobs, spec)``: each job's results in job order, computed elsewhere
(other processes, a cluster) with :func:`search_target_cached` or the process pool's workers."""

_AMBIENT_SEARCHES: ContextVar[TargetSearches | None] = ContextVar("dpgossip_audit_searches", default=None)


@contextmanager
def audit_searches(searches: TargetSearches | None) -> Iterator[None]:
    """Within the block, an audit of several targets hands its targets' searches to ``searches``
    (e.g. the tasks of a Dask cluster: :mod:`dpgossip.scenario.dask_targets`) instead of searching
    them here or on :func:`audit_processes`. Speed only: each target reseeds its streams and every
    view is factorised on one BLAS thread, so the result is the same bits."""
    token = _AMBIENT_SEARCHES.set(searches)
    try:
        yield
    finally:
        _AMBIENT_SEARCHES.reset(token)


_CACHED: dict[str, tuple] = {}
_CACHED_LOCK = threading.Lock()


def search_target_cached(token: str, problem: tuple, keys: dict, hops: dict, job: Any, spec: Any
                         ) -> dict[tuple[int, int], PairResult]:
    """One target's search on a worker that may serve several targets of one audit (a Dask worker):
    the auditor of every view is built on the first call with a new ``token`` and reused by the later
    ones (the previous audit's is dropped). The problem and the job are realigned copies
    (:func:`received_copy`: a Dask worker deserialises arrays in place, at any offset) and searches in
    one process run one at a time with every BLAS library on one thread
    (:func:`~dpgossip._threads.single_blas_thread`, as a point does), so the bits do not depend on
    where, after which targets or in which order a target ran."""
    with _CACHED_LOCK, single_blas_thread():
        state = _CACHED.get(token)
        if state is None:
            _CACHED.clear()
            problem = received_copy(problem)
            data, network, params, run = problem[:4]
            state = _CACHED[token] = (data, network, params, run, _search_auditor(problem))
        data, network, params, run, auditor = state
        return _search_target(data, network, params, run, keys, hops, received_copy(job), spec,
                              auditor=auditor)


_WORKER_STATE: dict[str, tuple] = {}
"""In a worker process of :func:`_search_in_processes`: the problem and the auditor of every view,
built once by :func:`_start_worker` for all the targets the process searches."""


def _start_worker(problem: tuple, parent: int | None = None) -> None:
    """Initialiser of a worker process: ignore SIGINT (the parent handles Ctrl-C and stops the pool),
    die with the process ``parent`` however it ends (:func:`dpgossip._parent.die_with_parent`; None:
    not watched) and factorise every view once, on one BLAS thread as in the parent (same bits)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if parent is not None:
        die_with_parent(parent)
    problem = received_copy(problem)
    data, network, params, run = problem[:4]
    with blas_threads(1):
        _WORKER_STATE["problem"] = (data, network, params, run, _search_auditor(problem))


def _search_auditor(problem: tuple) -> RunAuditor | ReducedAuditor:
    """The auditor of a search's views: ``problem = (data, network, params, run, views, seed)``; where
    it is exact (:func:`reducible`) the observer views reduced to a sufficient statistic (the same
    divergences), else one factorisation per view (:class:`RunAuditor`)."""
    data, network, params, run, views, seed = problem
    if reducible(data, params, views):
        return ObserverBatchAuditor(data, network, params, views, seed=seed)
    return RunAuditor(data, network, params, views, seed=seed, run=run)


def _search_in_worker(keys: dict, hops: dict, job: _TargetJob, spec: _SearchSpec
                      ) -> dict[tuple[int, int], PairResult]:
    """One target's search in a worker process, on the process's auditor."""
    data, network, params, run, auditor = _WORKER_STATE["problem"]
    return _search_target(data, network, params, run, keys, hops, received_copy(job), spec, auditor=auditor)


def _search_in_processes(count: int, problem: tuple, keys: dict, hops: dict,
                         tasks: list[_TargetJob], spec: _SearchSpec
                         ) -> Iterator[dict[tuple[int, int], PairResult]]:
    """Each target's results, in target order, from ``count`` spawned processes that each factorise
    every view once (:func:`_start_worker`) and search the targets handed to them. On an error or an
    interrupt in the caller the targets not started are cancelled and the processes terminated."""
    import os

    pool = watched_pool(count, f"{__name__}:_start_worker", problem, os.getpid())
    finished = False
    try:
        with spawning():  # a submit may spawn a worker
            futures = [pool.submit(_search_in_worker, keys, hops, task, spec) for task in tasks]
        for fut in futures:
            yield fut.result()
        finished = True
    finally:
        if finished:
            pool.shutdown(wait=True)
        else:
            stop_pool(pool)


@dataclass(frozen=True, slots=True, kw_only=True)
class _SearchSpec:
    """What every target's search of one audit shares (sent to worker processes)."""

    delta: float
    epsilons: tuple[float, ...]
    neighbours: str
    settings: SearchSettings | None
    methods: tuple[str, ...]
    seed: int
    rank_by: str
    resolution: float
    epsilon_cap: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class _TargetJob:
    """One target's search: its rows, its (observer, target) pairs, their view keys and views, and
    the warm-start neighbours."""

    target: int
    rows: np.ndarray
    pairs: list[tuple[int, int]]
    keys: list[Hashable]
    views: dict[Hashable, View]
    warm: tuple[Neighbour, ...]


def _rdp_deltas_at(pairs: list[GaussianPair], epsilons: Sequence[float]
                   ) -> dict[float, np.ndarray]:
    """The RDP delta of every pair at every epsilon, one vectorised conversion per epsilon (the same
    bits as ``pair.delta(e, "rdp")``)."""
    return {e: rdp_deltas(pairs, e) for e in epsilons}


def _save_streams(auditor: RunAuditor | ReducedAuditor) -> Callable[[], None]:
    """Save the range finders' random streams of ``auditor``; the returned function restores them."""
    gens = [a.rng for a in auditor.auditors]
    states = [g.bit_generator.state for g in gens]

    def restore() -> None:
        for g, state in zip(gens, states, strict=True):
            g.bit_generator.state = state
    return restore


def _search_target(data: PartitionedData, network: Network, params: ProtocolParams,
                   run: RunResult | None, keys: dict, hops: dict, job: _TargetJob, spec: _SearchSpec,
                   *, auditor: RunAuditor | ReducedAuditor | None = None,
                   on_stage: Callable[[str], None] | None = None) -> dict[tuple[int, int], PairResult]:
    """The search of one target (all its observers' views) and its pairs' results; in a worker
    process (``auditor=None``) the auditor of the target's views is built here. ``on_stage`` hears of
    the search's stages (progress only)."""
    j, settings, methods = job.target, spec.settings, spec.methods
    with blas_threads(1):
        if auditor is None:
            auditor = _search_auditor((data, network, params, run, job.views, spec.seed))
        auditor.reseed([spec.seed, j])
        specs = auditor.auditors[0].specs
        subviews = ({k: FirstMessageView(data.X, data.offsets, specs[k], j) for k in job.keys}
                    if settings is not None else {})
        method = methods[0]
        asked = AskedQuantity(delta=spec.delta,
                              epsilon=spec.epsilons[0] if spec.rank_by == "delta" else None,
                              method=method, resolution=spec.resolution,
                              epsilon_cap=spec.epsilon_cap)
        ts = TargetSearch(auditor.pairs, data.X, job.rows, job.keys, subviews=subviews,
                          kind=spec.neighbours, asked=asked, seed=spec.seed, target=j,
                          warm=job.warm, save_streams=partial(_save_streams, auditor))
        if settings is None:
            ts.check()
        else:
            ts.run(settings, on_stage)
        out: dict[tuple[int, int], PairResult] = {}
        done = [(o, jj) for o, jj in job.pairs if ts.best[keys[(o, jj)]].pair
                is not None]  # a pair without a neighbour only when checking no neighbours
        rdp_at = _rdp_deltas_at([ts.best[keys[oj]].pair for oj in done],
                                spec.epsilons) if "rdp" in methods else {}
        for i, (o, jj) in enumerate(done):
            k = keys[(o, jj)]
            best = ts.best[k]
            pair = best.pair
            if spec.rank_by == "delta":  # no epsilon solves: delta at the grid only (cheap)
                eps = {meth: math.nan for meth in methods}
            else:
                eps = {meth: (best.value if meth == method
                              else float(pair.epsilon(spec.delta, method=meth))) for meth in methods}
            dl = {meth: ([float(rdp_at[e][i]) for e in spec.epsilons] if meth == "rdp" else
                         [float(pair.delta(e, method=meth, resolution=spec.resolution))
                          for e in spec.epsilons]) for meth in methods}
            out[(o, jj)] = PairResult(observer=o, target=jj, hops=int(hops[o][jj]),
                                      neighbour=best.neighbour, epsilon=eps, delta=dl,
                                      **_renyi2(pair),
                                      evidence=(ts.evidence(k, settings) if settings is not None
                                                else None))
    return out
