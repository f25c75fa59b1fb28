r"""The worst-case neighbour search of a pair audit: an optimisation over (row, replacement).

For a target ``j`` the audit wants, for every view ``k`` of it,

.. math::

    \sup_{r \in \text{rows}(j)} \ \sup_{x' \in C(x_r)} \ \phi_k(r, x'),

``phi_k`` the asked quantity (exact epsilon at ``delta``, or exact delta at ``epsilon``) of the view's
Gaussian pair when row ``r`` is replaced by ``x'``, and ``C`` the allowed set (``bounded``: ``||x'|| <= 1``
and ``||x' - x|| <= 1``; ``replace-one``: ``||x'|| <= 1``). The search runs in levels; level ``l + 1``
doubles the effort of level ``l`` and continues from everything level ``l`` found, so a larger budget
never reports less (the reported value is the maximum over every candidate ever given an exact value).

1. **Screen** (once): every row of the target. For each view the first-message sub-view
   (:mod:`~dpgossip.protocols.ddppm.subview`, closed form) is maximised over many directions for every row;
   then the full view is evaluated at ``-x`` and at the sub-view's best replacement of every row. Rows
   are ranked by the largest surrogate over views.
2. **Starts** (level ``l``: the best ``rows * 2^l`` rows): ``x' = x + t u`` at the largest allowed step for
   ``u`` in ``-x``, plus and minus every right singular vector of ``X_j`` and of ``X``, and
   ``random * 2^l`` random unit directions (a stream per row, so a higher level extends a lower one).
3. **Ascent** (per view, from its ``starts`` best candidates): projected gradient ascent of the surrogate
   on ``C`` (forward-difference gradient in all ``d`` coordinates, Euclidean projection onto ``C``,
   step halved on failure), ``steps * 2^l`` steps.
4. **Exact** (per view): the asked quantity for its ``exact`` best candidates by surrogate. In epsilon
   mode a candidate is better than the best so far exactly when its delta at the best epsilon exceeds
   ``delta`` (``delta(eps)`` is non-increasing), so an epsilon is solved only for improvements.
5. **Polish** (per view): projected ascent of the asked quantity itself (forward differences of the
   exact delta) from the best neighbours of its ``starts`` best rows, ``steps + l`` steps or until a step
   gains less than ``1e-6`` relative.

6. **Exchange** (once, after the last level): the best neighbours of every view are tried on every
   other view of the target (one evaluation of all views per neighbour), given exact values where the
   surrogate says they can beat a view's best, and a view that improved is polished again.

Warm start: neighbours found before (a calibration's search at another noise scale) are given exact
values after the last level; the reported value is the larger of theirs and the search's, and the search's
own course does not depend on them.

The surrogate is the RDP epsilon at ``delta`` on a fixed grid of orders, both directions, vectorised (in
both modes: the RDP delta at an epsilon saturates at 1 where the leakage is large, leaving nothing to
climb): an upper bound of the exact epsilon that ranks candidates and is smooth enough to climb.

Every value is the exact quantity of an actual neighbour, hence a **lower estimate** of the true worst
case over all neighbours of this ``X``; the evidence (value after every stage and level, evaluations) says
how it moved as the effort grew, and the first-message bound is a lower bound that does not depend on the
search.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field

import numpy as np

from dpgossip.errors import ConfigError, check_int, did_you_mean
from dpgossip.privacy.gaussian_pair import GaussianPair, rdp_deltas
from dpgossip.privacy.neighbours import Neighbour, max_step, project
from dpgossip.protocols.ddppm.subview import FirstMessageView

__all__ = ["SearchSettings", "SearchStage", "SearchEvidence", "SEARCH_PRESETS", "DEFAULT_SEARCH",
           "REMOVED_SEARCHES", "AskedQuantity", "TargetSearch", "surrogate"]

SEARCH_PRESETS = {"quick": 1, "standard": 2, "thorough": 4}
"""Number of effort levels of each named search; each level doubles the effort of the one before."""

DEFAULT_SEARCH = "standard"
"""The search every audit and calibration uses unless told otherwise: two levels, so that the evidence
says how much the last doubling of effort changed the worst value."""

REMOVED_SEARCHES = ("candidates", "shared", "fast", "network")
"""Names of searches that the one search replaced (refused with a message that says so): the candidate
search missed far worse neighbours, and the shared modes searched a few lead views only."""

_ORDERS = np.geomspace(1.0 + 1e-3, 1e6, 72)
_SUB_RANDOM = 128  # random directions per row for the closed-form sub-view


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchSettings:
    """Effort of the worst-case search (module docstring): level ``l`` searches ``rows * 2^l`` rows with
    ``random * 2^l`` random directions each and ``steps * 2^l`` ascent steps from ``starts`` starts per
    view, and gives exact values to ``exact`` candidates per view."""

    name: str = "standard"
    levels: int = 2
    rows: int = 2
    random: int = 4
    steps: int = 4
    starts: int = 2
    exact: int = 2

    def __post_init__(self) -> None:
        """Every effort is a positive integer (``random`` and ``steps`` may be 0): a search with no
        level, row, start or exact value would report a lower bound as the worst case."""
        if not isinstance(self.name, str):
            raise ConfigError(f"search.name must be a string, got {self.name!r}", field="search.name")
        for key, low in (("levels", 1), ("rows", 1), ("random", 0), ("steps", 0), ("starts", 1),
                         ("exact", 1)):
            check_int(getattr(self, key), f"search.{key}", low)

    @classmethod
    def of(cls, search: str | int | SearchSettings) -> SearchSettings:
        """Settings from an effort level: a preset name (``quick``, ``standard``, ``thorough``) or a
        number of levels in 1..8."""
        if isinstance(search, SearchSettings):
            return search
        allowed = f"one of {', '.join(SEARCH_PRESETS)} or an integer number of levels in 1..8"
        if isinstance(search, bool):
            raise ConfigError(f"search must be {allowed}, got {search!r}", field="search")
        if isinstance(search, int | np.integer):
            if not 1 <= int(search) <= 8:
                raise ConfigError(f"search levels must be in 1..8, got {search!r}", field="search")
            return cls(name=f"levels={int(search)}", levels=int(search))
        if search in REMOVED_SEARCHES:
            raise ConfigError(f"search = {search!r} was removed: there is one search, whose effort is "
                              f"{allowed} (reductions and sharing across views are applied where "
                              "they are exact)", field="search")
        if search not in SEARCH_PRESETS:
            raise ConfigError(f"search must be {allowed}, got {search!r}"
                              f"{did_you_mean(str(search), list(SEARCH_PRESETS))}", field="search")
        return cls(name=str(search), levels=SEARCH_PRESETS[str(search)])


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchStage:
    """The best values of one view after a stage of the search."""

    level: int
    stage: str
    evaluations: int
    """Full-view evaluations for the target so far (all its views together)."""
    surrogate: float
    value: float
    """Best exact value so far (NaN before the first exact stage)."""
    seconds: float


@dataclass(frozen=True, slots=True, kw_only=True)
class SearchEvidence:
    """How a pair's worst value was found and how it moved with the effort."""

    settings: SearchSettings
    stages: tuple[SearchStage, ...]
    rows_screened: int
    rows_searched: int
    first_message_bound: float
    """The asked quantity of the first-message sub-view at its best neighbour (a lower bound of the true
    worst case that does not depend on the search); NaN when the view has no first message of the target."""
    level_values: tuple[float, ...] = field(default=())
    """The search's own best value after each level (without the warm neighbours)."""
    warm: int = 0
    """Neighbours found before (another noise scale) that were given exact values after the search."""
    capped: bool = False
    """The view's search stopped at ``epsilon_cap``: a neighbour's epsilon exceeds the cap, and the
    reported value is the cap (the true worst case is at least that)."""

    @property
    def evaluations(self) -> int:
        return self.stages[-1].evaluations if self.stages else 0

    @property
    def last_doubling_change(self) -> float:
        """Relative change of the worst value over the last level (0 = the last doubling of effort found
        nothing better; NaN with a single level)."""
        v = self.level_values
        if len(v) < 2:
            return math.nan
        if v[-1] == v[-2]:
            return 0.0
        if not math.isfinite(v[-1]):
            return math.inf
        return float((v[-1] - v[-2]) / abs(v[-1])) if v[-1] != 0 else math.nan

    def to_row(self) -> dict[str, object]:
        """Tidy columns."""
        return {"search": self.settings.name, "search_levels": self.settings.levels,
                "evaluations": self.evaluations, "rows_searched": self.rows_searched,
                "rows_screened": self.rows_screened,
                "value_by_level": " ".join(f"{v:.6g}" for v in self.level_values),
                "warm_neighbours": self.warm,
                "last_doubling_change": self.last_doubling_change,
                "first_message_bound": self.first_message_bound,
                "stopped_at_cap": self.capped}


def _log_delta_terms(a: np.ndarray) -> np.ndarray:
    return (a - 1) * np.log1p(-1 / a) - np.log(a)


def surrogate(lam: np.ndarray, mismatch: bool | np.ndarray, *, delta: float) -> np.ndarray:
    """RDP epsilon at ``delta`` of zero-mean pairs given their nontrivial eigenvalues ``lam`` (``M x p``).

    ``D_a(P||Q) = -1/(2(a-1)) sum[ln(a lam + 1 - a) - a ln lam]`` and the same for ``1/lam`` (``Q||P``),
    on a grid of orders, converted by Canonne, Kamath & Steinke (2020), Prop. 12:
    ``eps = min_a D_a + (ln(1/delta) + (a-1) ln(1 - 1/a) - ln a) / (a - 1)``; the worse direction.
    ``inf`` for a support mismatch or an eigenvalue 0.
    """
    lam = np.atleast_2d(np.asarray(lam, dtype=float))
    mismatch = np.broadcast_to(np.asarray(mismatch, dtype=bool), (lam.shape[0],))
    a = _ORDERS[None, :, None]
    ao = _ORDERS[None, :]
    out = np.full(lam.shape[0], -np.inf)
    bad = mismatch | np.any(lam <= 0, axis=1)
    L = np.where(lam[:, None, :] > 0, lam[:, None, :], 1.0)
    conversion = (math.log(1 / delta) + _log_delta_terms(ao)) / (ao - 1)
    for ll in (L, 1.0 / L):
        arg = a * ll + 1 - a
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = np.where(arg > 0, np.log(np.where(arg > 0, arg, 1.0)) - a * np.log(ll), -np.inf)
        D = -terms.sum(axis=2) / (2 * (ao - 1))  # M x orders; +inf where arg <= 0
        val = D + conversion
        out = np.maximum(out, np.nanmin(val, axis=1))
    out[bad] = np.inf
    return out


def _ascent_step(x: np.ndarray, y: np.ndarray, g: np.ndarray, fy: float, step: float, floor: float,
                 kind: str, value: Callable[[np.ndarray], float]
                 ) -> tuple[np.ndarray, float, float] | None:
    """One projected ascent step from the replacement ``y`` of row ``x`` along the gradient ``g``:
    ``z = project(y + step g / ||g||)``, the step divided by 4 until ``value(z) > fy``; returns
    ``(z, value(z), 1.5 step)``, or None when ``g`` is zero or not finite or the step falls below
    ``floor``."""
    ng = float(np.linalg.norm(g))
    if not np.isfinite(ng) or ng == 0:
        return None
    while step >= floor:
        z = project(x, y + step * g / ng, kind)
        fz = value(z)
        if fz > fy:
            return z, fz, step * 1.5
        step /= 4
    return None


def _pair_surrogate(pair: GaussianPair, delta: float) -> float:
    return float(_pair_surrogates([pair], delta)[0])


def _pair_surrogates(pairs: list[GaussianPair], delta: float) -> np.ndarray:
    """The surrogate of every pair (``inf`` for a support mismatch, 0 without eigenvalues), those with
    as many eigenvalues in one call each (a row's value does not depend on the others)."""
    out = np.zeros(len(pairs))
    groups: dict[int, list[int]] = {}
    for i, pair in enumerate(pairs):
        if pair.support_mismatch is not None:
            out[i] = math.inf
        elif pair.eigenvalues.size:
            groups.setdefault(pair.eigenvalues.size, []).append(i)
    for idx in groups.values():
        out[idx] = surrogate(np.stack([pairs[i].eigenvalues for i in idx]), False, delta=delta)
    return out


@dataclass(frozen=True, slots=True, kw_only=True)
class AskedQuantity:
    """The quantity ``phi_k`` a :class:`TargetSearch` maximises (module docstring).

    Epsilon mode (``epsilon=None``): ``epsilon`` at ``delta``; delta mode: ``delta`` at ``epsilon``. The
    surrogate is the RDP epsilon at ``delta`` in both modes.
    """

    delta: float
    epsilon: float | None = None
    method: str = "exact"
    """Conversion: ``exact``, ``rdp`` or ``chernoff``."""
    resolution: float = 0.0
    """Resolution of the delta values (0: full accuracy)."""
    epsilon_cap: float | None = None
    """Epsilon mode only: a view whose found neighbour has an asked epsilon above the cap stops being
    searched (there is no meaningful privacy to measure) and reports the cap as an "at least" value;
    None: no cap."""


@dataclass(slots=True)
class _Best:
    value: float = -math.inf
    neighbour: Neighbour | None = None
    pair: GaussianPair | None = None


class TargetSearch:
    """The search for one target over all its views (module docstring).

    Parameters
    ----------
    evaluate
        ``evaluate(neighbour, keys) -> {key: GaussianPair}``: the full-view pairs (a
        :meth:`RunAuditor.pairs <dpgossip.protocols.ddppm.audit.RunAuditor.pairs>`).
    X, rows, kind
        Data, the target's (global) row indices, neighbour kind.
    subviews
        The first-message sub-view of each view key (:class:`FirstMessageView`).
    asked
        The asked quantity (:class:`AskedQuantity`): ``epsilon`` at ``delta`` or ``delta`` at
        ``epsilon``, its conversion and delta resolution.
    seed
        Seed of the random directions (one stream per row).
    save_streams
        Saves the state of the random streams of ``evaluate`` (the range finders) and returns what
        restores it: the evaluations of the epsilon cap's checks leave the streams as they were, so
        that a search the cap does not stop runs as without it.
    warm
        Neighbours of this target found before (for example by a search at another noise scale): each
        gets its exact value after the last level, so the search reports the larger of its own best and
        theirs. They do not steer the search, whose course is that of the search without them (so a
        warm start never reports less than a cold one).
    """

    def __init__(self, evaluate: Callable[[Neighbour, list[Hashable]], dict[Hashable, GaussianPair]],
                 X: np.ndarray, rows: Sequence[int], keys: Sequence[Hashable], *,
                 subviews: dict[Hashable, FirstMessageView], kind: str, asked: AskedQuantity,
                 seed: int = 0, target: int = 0, warm: Sequence[Neighbour] = (),
                 save_streams: Callable[[], Callable[[], None]] | None = None) -> None:
        self.evaluate_pairs = evaluate
        self.save_streams = save_streams
        self.rows = [int(r) for r in rows]
        mine = set(self.rows)
        self.warm = [nb for nb in warm if nb.row in mine]
        self.X = np.asarray(X, dtype=float)
        self.keys = list(keys)
        self.kind, self.delta, self.epsilon = kind, float(asked.delta), asked.epsilon
        self.method, self.resolution = asked.method, asked.resolution
        self.cap = asked.epsilon_cap if asked.epsilon is None else None
        self.capped: set[Hashable] = set()
        self.seed, self.target = int(seed), int(target)
        self.subviews = subviews
        self.evals = 0
        self.t0 = time.perf_counter()
        self.pool: dict[Hashable, list[tuple[float, Neighbour]]] = {k: [] for k in self.keys}
        self.seen: set[tuple[int, bytes]] = set()
        self.exact_done: dict[Hashable, set[tuple[int, bytes]]] = {k: set() for k in self.keys}
        self.best = {k: _Best() for k in self.keys}
        self.row_exact: dict[Hashable, dict[int, tuple[float, Neighbour, GaussianPair]]] = {
            k: {} for k in self.keys}
        self.stages: dict[Hashable, list[SearchStage]] = {k: [] for k in self.keys}
        self.level_values: dict[Hashable, list[float]] = {k: [] for k in self.keys}
        Xj = self.X[self.rows]
        self.V_j = np.linalg.svd(Xj, full_matrices=False)[2] if Xj.size else np.zeros((0, X.shape[1]))
        self.V = np.linalg.svd(self.X, full_matrices=False)[2]
        self.bound = {k: math.nan for k in self.keys}
        self.bound_nb: dict[Hashable, Neighbour] = {}
        self.order: list[int] = []
        self.covered = 0
        self.random_done: dict[int, int] = {}

    # ------------------------------------------------------------------ evaluation
    def _sur(self, pair: GaussianPair) -> float:
        # the RDP epsilon at delta in both modes: the RDP delta at epsilon saturates at 1 where the
        # leakage is large and then has no gradient to climb
        return _pair_surrogate(pair, self.delta)

    def _add(self, nb: Neighbour, keys: list[Hashable] | None = None) -> dict[Hashable, float]:
        """Evaluate ``nb`` on ``keys`` (default all) and add it to their pools."""
        keys = self.keys if keys is None else keys
        tag = (nb.row, np.round(nb.x_new, 12).tobytes())
        if tag in self.seen and keys is self.keys:
            return {}
        if keys is self.keys:
            self.seen.add(tag)
        self.evals += 1
        out = {}
        for k, pair in self.evaluate_pairs(nb, keys).items():
            s = self._sur(pair)
            self.pool[k].append((s, nb))
            out[k] = s
        return out

    def _direction(self, r: int, u: np.ndarray, label: str) -> Neighbour | None:
        nu = float(np.linalg.norm(u))
        if nu == 0:
            return None
        u = u / nu
        x = self.X[r]
        t = max_step(x, u, self.kind)
        if t <= 0:
            return None
        return Neighbour(row=r, x_new=x + t * u, label=label)

    # ------------------------------------------------------------------ stages
    def screen(self) -> None:
        """Stage 1: every row, sub-view maximised in closed form, full view at two replacements."""
        rng_sub = np.random.default_rng([self.seed, self.target, 7])
        d = self.X.shape[1]
        score: dict[int, float] = {}
        sub_best: dict[Hashable, tuple[float, Neighbour | None]] = {k: (-math.inf, None)
                                                                   for k in self.keys}
        U_rand = rng_sub.standard_normal((_SUB_RANDOM, d))
        U_rand /= np.linalg.norm(U_rand, axis=1, keepdims=True)
        sub = {k: self._subview_bests(sv, self.rows, U_rand)
               for k, sv in self.subviews.items() if sv.available and k in self.keys}
        for r in self.rows:
            x = self.X[r]
            cands: list[Neighbour] = []
            nb = self._direction(r, -x, "-x")
            if nb is not None:
                cands.append(nb)
            for k in sub:
                s, nbk = sub[k][r]
                if s > sub_best[k][0]:
                    sub_best[k] = (s, nbk)
                if not any(np.allclose(nbk.x_new, c.x_new) for c in cands):
                    cands.append(nbk)
            row_score = -math.inf
            for nb in cands:
                row_score = max([row_score, *self._add(nb).values()])
            score[r] = row_score
        self.order = sorted(self.rows, key=lambda r: (-score[r], r))
        for k, (_, nb) in sub_best.items():
            if nb is not None:
                self.bound[k] = self._exact_value(self.subviews[k].pair(self.X[nb.row], nb.x_new))
                self.bound_nb[k] = nb
        self._record(0, "screen")

    def _start_directions(self, sv: FirstMessageView, U_rand: np.ndarray) -> list[np.ndarray]:
        """The sub-view ascent's structured and random start directions, shared by every row: the
        eigenvectors of ``sv.P``, the top singular directions of ``X_j`` and ``X`` (both signs) and
        ``U_rand``."""
        _, evecs = np.linalg.eigh(sv.P)
        return [evecs.T, -evecs.T, self.V_j, -self.V_j, self.V, -self.V, U_rand]

    def _row_starts(self, x: np.ndarray, base: list[np.ndarray]) -> np.ndarray:
        """Replacements of row ``x`` along ``base`` and ``-x``, each at the largest step the
        adjacency allows (``||x + t u|| = 1``, and ``t <= 1`` for ``bounded``)."""
        U = np.vstack(base + ([-x[None, :]] if np.linalg.norm(x) > 0 else []))
        U = U[np.linalg.norm(U, axis=1) > 0]
        U /= np.linalg.norm(U, axis=1, keepdims=True)
        xu = U @ x
        t = -xu + np.sqrt(np.maximum(xu * xu + 1.0 - x @ x, 0.0))
        if self.kind == "bounded":
            t = np.minimum(t, 1.0)
        return x + t[:, None] * U

    def _subview_bests(self, sv: FirstMessageView, rows: Sequence[int], U_rand: np.ndarray
                       ) -> dict[int, tuple[float, Neighbour]]:
        """The best replacement of every row of ``rows`` for the closed-form sub-view: structured and
        random directions at the largest step, then projected ascent of the closed form (forward
        differences), one surrogate evaluation per ascent step for all rows at once."""
        base = self._start_directions(sv, U_rand)
        starts = [self._row_starts(self.X[r], base) for r in rows]
        f = self._sub_values_rows(sv, list(rows), starts)
        state: dict[int, list] = {}  # row -> [y, fy, step]
        for r, Xn, fr in zip(rows, starts, f, strict=True):
            i = int(np.argmax(fr))
            state[r] = [Xn[i], fr[i], 0.25]
        active = [r for r in rows if math.isfinite(state[r][1])]
        h, d = 1e-6, self.X.shape[1]
        for _ in range(20):  # projected ascent of the closed form, every active row at once
            if not active:
                break
            fg = dict(zip(active, self._sub_values_rows(sv, active, [state[r][0] + h * np.eye(d)
                                                                     for r in active]), strict=True))
            moving, targets = [], []
            for r in active:
                g = (fg[r] - state[r][1]) / h
                ng = float(np.linalg.norm(g))
                if not np.isfinite(ng) or ng == 0:
                    continue
                moving.append(r)
                targets.append(project(self.X[r], state[r][0] + state[r][2] * g / ng,
                                       self.kind))
            fz = self._sub_values_rows(sv, moving, [z[None, :] for z in targets])
            active = []
            for r, z, fzr in zip(moving, targets, fz, strict=True):
                st = state[r]
                if float(fzr[0]) > st[1]:
                    st[0], st[1], st[2] = z, float(fzr[0]), st[2] * 1.5
                    if math.isinf(st[1]):  # an infinite-divergence neighbour: kept as the best, and
                        continue           # no finite difference from it (inf - inf)
                else:
                    st[2] /= 4
                    if st[2] < 1e-6:
                        continue
                active.append(r)
        return {r: (state[r][1], Neighbour(row=r, x_new=state[r][0], label="first-message"))
                for r in rows}

    def _sub_values_rows(self, sv: FirstMessageView, rows: list[int], points: list[np.ndarray]
                         ) -> list[np.ndarray]:
        """The sub-view's surrogate at ``points[i]`` (replacements of row ``rows[i]``) for every ``i``,
        by one surrogate evaluation."""
        if not rows:
            return []
        parts = [sv.eigenvalues(self.X[r], P) for r, P in zip(rows, points, strict=True)]
        vals = surrogate(np.vstack([p[0] for p in parts]), np.concatenate([p[1] for p in parts]),
                         delta=self.delta)
        return np.split(vals, np.cumsum([p[0].shape[0] for p in parts])[:-1])

    def starts(self, level: int, settings: SearchSettings) -> None:
        """Stage 2: structured and random directions for the rows covered at this level."""
        n_rows = min(len(self.order), settings.rows * 2 ** level)
        n_rand = settings.random * 2 ** level
        for idx, r in enumerate(self.order[:n_rows]):
            x = self.X[r]
            if idx >= self.covered:
                for label, V in (("vj", self.V_j), ("v", self.V)):
                    for i, v in enumerate(V):
                        for sgn in (1, -1):
                            nb = self._direction(r, sgn * v, f"{'+' if sgn > 0 else '-'}{label}{i}")
                            if nb is not None:
                                self._add(nb)
            done = self.random_done.get(r, 0)
            if n_rand > done:
                rng = np.random.default_rng([self.seed, self.target, r])
                U = rng.standard_normal((n_rand, x.size))[done:]
                for u in U:
                    nb = self._direction(r, u, "random")
                    if nb is not None:
                        self._add(nb)
                self.random_done[r] = n_rand
        self.covered = max(self.covered, n_rows)
        self._record(level, "starts")

    def ascent(self, level: int, settings: SearchSettings) -> None:
        """Stage 3: projected gradient ascent of the surrogate, per view."""
        steps = settings.steps * 2 ** level
        for k in self.keys:
            for s0, nb0 in self._top(k, settings.starts):
                if not math.isfinite(s0):
                    continue
                self._climb(k, nb0, s0, steps)
        self._record(level, "ascent")

    def _climb(self, k: Hashable, nb: Neighbour, s: float, steps: int) -> None:
        x = self.X[nb.row]
        y = nb.x_new.copy()
        h, step = 1e-5, 0.2
        label = nb.label.split("+")[0] + "+ascent"

        def value(z: np.ndarray) -> float:
            return self._add(Neighbour(row=nb.row, x_new=z, label=label), [k])[k]

        for _ in range(steps):
            g = np.empty(x.size)
            for i in range(x.size):
                e = y.copy()
                e[i] += h
                self.evals += 1
                g[i] = (self._sur(self.evaluate_pairs(Neighbour(row=nb.row, x_new=e), [k])[k]) - s) / h
            moved = _ascent_step(x, y, g, s, step, 1e-4, self.kind, value)
            if moved is None:
                return
            y, s, step = moved

    def _top(self, k: Hashable, count: int) -> list[tuple[float, Neighbour]]:
        """The ``count`` best distinct candidates of view ``k`` by surrogate (ties: first found)."""
        out: list[tuple[float, Neighbour]] = []
        seen: set[bytes] = set()
        for s, nb in sorted(self.pool[k], key=lambda t: -t[0]):
            tag = np.round(nb.x_new, 9).tobytes() + nb.row.to_bytes(8, "little")
            if tag in seen:
                continue
            seen.add(tag)
            out.append((s, nb))
            if len(out) >= count:
                break
        return out

    def _exact_value(self, pair: GaussianPair) -> float:
        if self.epsilon is None:
            return float(pair.epsilon(self.delta, self.method))
        return float(pair.delta(self.epsilon, self.method, resolution=self.resolution))

    def exact(self, level: int, settings: SearchSettings) -> None:
        """Stage 4: the asked quantity for the best candidates of every view (its ``exact`` best by
        surrogate, the best of every searched row, the sub-view's best); stage 5: polish from the
        ``starts`` rows whose exact values are best."""
        for k in self.keys:
            todo = [nb for _, nb in self._top(k, settings.exact)]
            todo += [nb for nb in (self._row_top(k, r) for r in self.order[:self.covered])
                     if nb is not None]
            if k in self.bound_nb:  # the full view at the sub-view's best is at least the bound
                todo.append(self.bound_nb[k])
            for nb in todo:
                tag = (nb.row, np.round(nb.x_new, 12).tobytes())
                if tag in self.exact_done[k]:
                    continue
                self.exact_done[k].add(tag)
                self.evals += 1
                self._offer(k, nb, self.evaluate_pairs(nb, [k])[k])
        self._record(level, "exact")
        for k in self.keys:
            ranked = sorted(self.row_exact[k].values(), key=lambda t: -t[0])[:settings.starts]
            for _, nb, pair in ranked:
                self._polish(k, nb, pair, settings.steps + level)
            self.level_values[k].append(self.best[k].value)
        self._record(level, "polish")

    def _row_top(self, k: Hashable, r: int) -> Neighbour | None:
        cands = [(s, nb) for s, nb in self.pool[k] if nb.row == r]
        return max(cands, key=lambda t: t[0])[1] if cands else None

    def _offer(self, k: Hashable, nb: Neighbour, pair: GaussianPair, *, rank_rows: bool = True
               ) -> float:
        """Compare a neighbour with the best of view ``k`` on the asked quantity; returns its score (the
        delta at the asked epsilon, or at the best epsilon so far in epsilon mode)."""
        best = self.best[k]
        if self.epsilon is not None:
            score = float(pair.delta(self.epsilon, self.method, resolution=self.resolution))
            value = score
        elif best.neighbour is None:
            value = self._exact_value(pair)
            score = float(pair.delta(value, self.method)) if math.isfinite(value) else 1.0
        elif not math.isfinite(best.value):
            score, value = (1.0, math.inf) if pair.support_mismatch is not None else (0.0, -math.inf)
        else:  # better iff delta(best epsilon) > delta: an epsilon is solved only for improvements
            score = float(pair.delta(best.value, self.method))
            value = self._exact_value(pair) if score > self.delta else -math.inf
        if value > best.value:
            best.value, best.neighbour, best.pair = value, nb, pair
        old = self.row_exact[k].get(nb.row)
        if rank_rows and (old is None or score > old[0]):
            self.row_exact[k][nb.row] = (score, nb, pair)
        return score

    def _polish(self, k: Hashable, nb: Neighbour, pair: GaussianPair, steps: int) -> None:
        """Projected ascent of the asked quantity itself from ``nb`` for view ``k``: the delta at the
        asked epsilon, or in epsilon mode the delta at the best epsilon so far (a neighbour beats the
        best exactly when that delta exceeds ``delta``; its epsilon is then solved)."""
        best = self.best[k]
        if not math.isfinite(best.value) or pair.support_mismatch is not None:
            return
        eps0 = self.epsilon if self.epsilon is not None else best.value
        x = self.X[nb.row]

        def f(y: np.ndarray) -> tuple[float, GaussianPair]:
            self.evals += 1
            p = self.evaluate_pairs(Neighbour(row=nb.row, x_new=y), [k])[k]
            return float(p.delta(eps0, self.method, resolution=self.resolution)), p

        y, (fy, pair_y) = nb.x_new.copy(), f(nb.x_new)
        h, step, moved = 1e-5, 0.05, False
        for _ in range(steps):
            g = (self._values_at(nb.row, [y + h * e for e in np.eye(x.size)], k, eps0) - fy) / h
            ng = float(np.linalg.norm(g))
            if not np.isfinite(ng) or ng == 0:
                break
            while step >= 1e-5:
                z = project(x, y + step * g / ng, self.kind)
                fz, pz = f(z)
                if fz > fy:
                    gain = (fz - fy) / max(abs(fy), 1e-300)
                    y, fy, pair_y, step, moved = z, fz, pz, step * 1.5, True
                    break
                step /= 4
            else:
                break
            if gain < 1e-6:  # stalled
                break
        if moved:
            self._offer(k, Neighbour(row=nb.row, x_new=y, label=nb.label.split("+")[0] + "+polish"),
                        pair_y)

    def _values_at(self, row: int, points: list[np.ndarray], k: Hashable, eps0: float) -> np.ndarray:
        """The asked delta at ``eps0`` of view ``k`` for the replacements ``points`` of ``row``; with
        the RDP conversion all in one vectorised conversion (the same bits as one by one)."""
        self.evals += len(points)
        pairs = [self.evaluate_pairs(Neighbour(row=row, x_new=y), [k])[k] for y in points]
        if self.method == "rdp":
            return rdp_deltas(pairs, eps0)
        return np.array([p.delta(eps0, self.method, resolution=self.resolution) for p in pairs])

    def _record(self, level: int, stage: str) -> None:
        now = time.perf_counter() - self.t0
        for k in self.best:  # every view, those stopped at the cap too
            s = max((t[0] for t in self.pool[k]), default=math.nan)
            v = self.best[k].value if self.best[k].neighbour is not None else math.nan
            self.stages[k].append(SearchStage(level=level, stage=stage, evaluations=self.evals,
                                              surrogate=float(s), value=float(v), seconds=now))

    def check(self) -> None:
        """Only the ``warm`` neighbours, each given the exact asked quantity on every view (no search):
        the cheap lower estimate of a calibration's bisection (:mod:`~dpgossip.protocols.ddppm.calibrate`)."""
        self._warm(0)
        for k in self.keys:
            self.level_values[k].append(self.best[k].value)

    def _warm(self, level: int) -> None:
        for nb in self.warm:
            self.evals += 1
            for k, pair in self.evaluate_pairs(nb, self.keys).items():
                self._offer(k, nb, pair, rank_rows=False)
        if self.warm:
            self._record(level, "warm")

    def found(self, per_view: int) -> list[Neighbour]:
        """Distinct neighbours worth giving to other views (:meth:`exchange`): of every view, its best,
        the best of each of its ``per_view`` best rows (by exact score), up to ``per_view`` other local
        optima of each of those rows (its best candidates by surrogate more than 0.5 away from those
        already taken: another view may rank a row's optima the other way round), and its
        ``per_view`` best candidates by surrogate."""
        out: list[Neighbour] = []
        tags: set[tuple[int, bytes]] = set()
        for k in self.keys:
            ranked = sorted(self.row_exact[k].values(), key=lambda t: -t[0])[:per_view]
            optima: list[Neighbour] = []
            for row_best in (t[1] for t in ranked):
                taken = [row_best.x_new]
                for _, nb in sorted((t for t in self.pool[k] if t[1].row == row_best.row),
                                    key=lambda t: -t[0]):
                    if len(taken) > per_view:
                        break
                    if min(float(np.linalg.norm(nb.x_new - x)) for x in taken) > 0.5:
                        taken.append(nb.x_new)
                        optima.append(nb)
            for nb in [self.best[k].neighbour, *(t[1] for t in ranked), *optima,
                       *(t[1] for t in self._top(k, per_view))]:
                if nb is None:
                    continue
                tag = (nb.row, np.round(nb.x_new, 12).tobytes())
                if tag not in tags:
                    tags.add(tag)
                    out.append(nb)
        return out

    def exchange(self, settings: SearchSettings) -> None:
        """Stage 6, after the last level: the neighbours each view found (:meth:`found`) are tried on
        every other view, one evaluation of all of them per neighbour (a neighbour that is the worst for
        one observer is often near the worst for another). A view gives the asked quantity to each whose
        surrogate is above its best value (with ``exact`` or ``rdp``, in epsilon mode, the surrogate is
        not below the asked epsilon: no other can beat the best); in delta mode to every one. A view that
        improved is polished from its new best (stage 5)."""
        if len(self.keys) < 2:
            return
        before = {k: self.best[k].value for k in self.keys}
        prune = self.epsilon is None and self.method in ("exact", "rdp")
        for nb in self.found(settings.starts):
            tag = (nb.row, np.round(nb.x_new, 12).tobytes())
            keys = [k for k in self.keys if tag not in self.exact_done[k]]
            if not keys:
                continue
            self.evals += 1
            for k, pair in self.evaluate_pairs(nb, keys).items():
                s = self._sur(pair)
                self.pool[k].append((s, nb))
                if prune and not s > self.best[k].value:
                    continue
                self.exact_done[k].add(tag)
                self._offer(k, nb, pair)
        level = settings.levels - 1
        self._record(level, "exchange")
        for k in self.keys:
            best = self.best[k]
            if best.value > before[k] and best.neighbour is not None and best.pair is not None:
                self._polish(k, best.neighbour, best.pair, settings.steps + level)
        self._record(level, "polish")

    def run(self, settings: SearchSettings, on_stage: Callable[[str], None] | None = None) -> None:
        """All stages at every level of ``settings``; ``on_stage`` hears of each (progress only).
        With an epsilon cap, a view stops being searched once a neighbour exceeds it
        (:meth:`stop_at_cap`), and the search ends when every view has."""
        say = on_stage if on_stage is not None else (lambda _text: None)
        if self.cap is not None and self.rows:  # one neighbour first: often enough to stop at the cap
            r = max(self.rows, key=lambda i: (float(np.linalg.norm(self.X[i])), -i))
            nb = self._direction(r, -self.X[r], "-x")
            if nb is not None and self.stop_at_cap(0, first=nb):
                return
        say(f"screening {len(self.rows)} rows")
        self.screen()
        if self.stop_at_cap(0, screened=True):
            return
        for level in range(settings.levels):
            say(f"search level {level + 1}/{settings.levels}")
            self.starts(level, settings)
            self.ascent(level, settings)
            self.exact(level, settings)
            if self.stop_at_cap(level):
                return
        say("trying every view's neighbours on the others")
        self.exchange(settings)
        self._warm(settings.levels - 1)

    def stop_at_cap(self, level: int, *, screened: bool = False, first: Neighbour | None = None
                    ) -> bool:
        """Stop searching every view whose best neighbour exceeds the epsilon cap; True when no view is
        left to search.

        A view is above the cap exactly when the asked delta of a neighbour at ``epsilon_cap`` exceeds
        ``delta`` (``delta(eps)`` is non-increasing), so no epsilon is solved for it. After the screen
        (``screened``) the neighbour tried is the view's best by surrogate; after a level, its best
        exact value; before the screen, the neighbour ``first`` on every view. A capped view reports
        the cap as its value (an "at least" value: the true worst case over neighbours is above it)
        with the neighbour that exceeded it; a neighbour whose laws have different supports (an
        infinite divergence) is reported as it is, infinite. The neighbours tried here join no pool,
        so the course of the views that go on is that of the uncapped search.
        """
        if self.cap is None:
            return False
        restore = self.save_streams() if self.save_streams is not None else None
        if first is not None:
            self.evals += 1
            tried = self.evaluate_pairs(first, list(self.keys))
        for k in list(self.keys):
            best = self.best[k]
            if first is not None:
                nb, pair = first, tried[k]
            elif screened and self.pool[k]:
                nb = self._top(k, 1)[0][1]
                self.evals += 1
                pair = self.evaluate_pairs(nb, [k])[k]
            else:  # after a level: the best exact value is known
                if best.neighbour is not None and math.isfinite(best.value) and best.value > self.cap:
                    self._stop(k, best.neighbour, best.pair, self.cap)
                continue
            if pair.support_mismatch is not None:  # infinite, exactly: nothing beats it
                self._stop(k, nb, pair, math.inf)
            elif self._above_cap(pair):
                self._stop(k, nb, pair, self.cap)
        if restore is not None:
            restore()
        self._record(level, "cap")
        return not self.keys

    def _above_cap(self, pair: GaussianPair) -> bool:
        """Whether the asked epsilon of ``pair`` is above the cap: its delta at the cap above ``delta``.
        With the exact method the RDP delta at the cap, an upper bound of the exact one and cheap,
        decides first when it is at most ``delta``: the exact delta of a pair far below the cap is
        astronomically small, and its integral slow."""
        if self.method == "exact" and float(pair.delta(self.cap, "rdp")) <= self.delta:
            return False
        return float(pair.delta(self.cap, self.method, resolution=self.resolution)) > self.delta

    def _stop(self, k: Hashable, nb: Neighbour, pair: GaussianPair | None, value: float) -> None:
        """View ``k`` is searched no more: its value is ``value`` (the cap, or inf)."""
        best = self.best[k]
        best.value, best.neighbour, best.pair = float(value), nb, pair
        if math.isfinite(value):
            self.capped.add(k)
        self.keys.remove(k)
        self.level_values[k].append(best.value)

    def evidence(self, k: Hashable, settings: SearchSettings) -> SearchEvidence:
        """The evidence of view ``k``."""
        return SearchEvidence(settings=settings, stages=tuple(self.stages[k]),
                              rows_screened=len(self.rows), rows_searched=self.covered,
                              first_message_bound=float(self.bound[k]),
                              level_values=tuple(self.level_values[k]), warm=len(self.warm),
                              capped=k in self.capped)
