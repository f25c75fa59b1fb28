r"""Per-instance audit of ppm-gossip's views (:mod:`dpgossip.protocols.ppm.gossip`; docs/ppm.md, ppm-gossip).

**One iteration, one coordinate.** At iteration ``l`` agent ``i`` sends, in round ``k + 1``, the state
``S_i^(k) = e_i^T W^k S^(0)`` with ``S^(0)_i = x_i + n_i z_i + tau (E m)_i``: ``x_i = X_i^T X_i V_i`` its
input, ``n_i = Delta_l(V_i) nu`` its noise scale, ``z_i, m_e ~ N(0, 1)`` its noise and the edge masks,
``tau`` the mask scale and ``E`` the ``s x |E|`` incidence matrix (``+1`` at the lower end of an edge,
``-1`` at the higher end). Every entry of the ``d x p`` block follows this scalar model with its own,
independent ``z`` and ``m``. A view is a set of linear combinations ``R S^(0)`` (``R``: ``r x s``):

* ``coalition`` (one agent or several pooling what they know): the states of the senders
  ``N(O) \ O`` in rounds ``1..c``, i.e. the span of ``e_w^T W^k``, ``k < c`` (an orthonormal Krylov
  basis of it, :func:`~dpgossip.protocols.gossip.linear.krylov_basis`). The coalition knows its members'
  inputs and noise and **every mask of an edge with an end in O** (both ends derive ``M_ij`` from the
  edge's stream); it conditions on them (drops those columns). Masks of edges with both ends outside
  remain noise. Its own states are functions of what it receives and knows.
* ``eavesdropper`` on a set of edges: both ends' states on each watched edge; it knows nothing.
* ``sum``: ``1^T S^(0) = sum_i Y^(i)``, what Nicolas et al.'s server sees (masks cancel: ``1^T E = 0``).

The view is ``O = J x + B w`` with ``J = R_U`` (columns of the unknown agents ``U``) and
``B = [R_U diag(n_U), tau R E_F]`` (``F``: unknown masks). Shifting target ``u``'s input by ``1``
moves the mean by ``J e_u``: a Gaussian mechanism with ``g_u = e_u^T J^T (B B^T)^+ J e_u``
(``inf`` when ``J e_u`` leaves ``range(B)``): the view is a
:class:`~dpgossip.privacy.linear_release.LinearGaussianRelease` (:func:`view_release`) and ``g_u`` its
:func:`~dpgossip.privacy.linear_audit.unit_shift_gains`. A change of one row of ``X_u`` shifts the ``d x p``
input by ``D = C V_u``, coordinate by coordinate, so ``mu_l^2 = ||D||_F^2 g_u`` and the worst neighbour
gives ``mu_l^2 = Delta_u^2 g_u`` with ``Delta_u = sup ||C V_u||_F`` (``sqrt(min(p, 2))`` under row
replacement for every ``V_u``: then ``mu_l`` does not depend on the data). Iterations draw fresh
noise and masks, so the ``L`` views compose as Gaussian mechanisms: ``mu^2 = sum_l mu_l^2``.

**What the value means.** It is the exact ``mu`` of the view *conditional on the realised
trajectory*: every agent's iterate ``V_i^(l-1)`` entering iteration ``l`` is held at the value this run
produced, in both neighbouring worlds. The observers' own iterates depend on past messages; conditioning
on the trajectory fixes them, so they add nothing. For the ``sum`` view the iterates are public functions
of the view (the server's QR), and the value is the exact adaptive composition along the realised
transcript, as in :mod:`dpgossip.protocols.ppm.audit`. For other views with finite ``c``, other agents'
iterates are not functions of the view; the value then does not count what the data do to those hidden
iterates, only what each iteration's messages reveal given them.

**Under a schedule** (docs/dynamic-gossip.md, section 8) round ``k + 1`` of iteration ``l`` mixes with
``W_t``, ``t = (l - 1) c + k``, so the coalition's rows are ``e_w^T Phi_k`` with
``Phi_k = W_{t-1} ... W_{(l-1)c}``, from the senders ``w`` outside ``O`` that ``W_t`` links to a member:
one view per iteration (:func:`schedule_coalition_view`), each conditional on the realised schedule.

``tau -> inf`` (:func:`mask_free_gains`) keeps only the combinations of the view that no unknown mask
enters: ``Q^T O`` with ``Q`` an orthonormal basis of the complement of ``range(R E_F)``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from dpgossip.errors import ConfigError, check_choice, check_number
from dpgossip.privacy.linear_audit import unit_shift_gains
from dpgossip.privacy.linear_release import LinearGaussianRelease
from dpgossip.privacy.mechanism import gaussian_mechanism_epsilon
from dpgossip.protocols.gossip.decor import dense_incidence as incidence
from dpgossip.protocols.gossip.linear import (
    check_observers,
    krylov_basis,
    propagated_rows,
    senders_of,
)
from dpgossip.protocols.gossip.round_mixing import RoundMixing
from dpgossip.protocols.ppm.gossip import PpmGossipResult, edge_list
from dpgossip.protocols.ppm.sensitivity import ADJACENCIES, iterate_sensitivity
from dpgossip.topology.network import Network

__all__ = ["VIEW_KINDS", "PpmGossipView", "TargetLeakage", "PpmGossipAudit", "coalition_view",
           "eavesdropper_view", "sum_view", "schedule_coalition_view", "incidence", "view_release",
           "view_gains", "mask_free_gains", "audit_ppm_gossip"]

VIEW_KINDS = ("coalition", "eavesdropper", "sum")
MEANING = ("exact mu of the view conditional on the realised trajectory (every agent's iterate held at "
           "this run's value); the sum view's is the exact adaptive composition along the transcript")


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class PpmGossipView:
    """What a set of observers sees of one iteration, per coordinate: ``R S^(0)`` (module docstring)."""

    kind: str
    """One of :data:`VIEW_KINDS`."""
    label: str
    """``"3"``, ``"1+5"``, ``"edges 0-1,2-3"`` or ``"sum"``."""
    rows: np.ndarray
    """``R`` (``r x s``): the observations as combinations of the round-0 messages ``S^(0)``."""
    known_agents: tuple[int, ...]
    """Agents whose inputs and noise the observers know (the coalition's members)."""
    known_masks: np.ndarray
    """Boolean per edge of :attr:`edges`: the mask is known (an end is in the coalition)."""
    edges: np.ndarray
    """``(E, 2)``: the network's edges ``(i, j)``, ``i < j``."""

    def to_row(self) -> dict[str, object]:
        """Tidy row: kind, label, number of observations, known agents and masks."""
        return {"view": self.kind, "label": self.label, "observations": int(self.rows.shape[0]),
                "known_agents": len(self.known_agents), "known_masks": int(self.known_masks.sum())}


def _rows(network: Network, senders: np.ndarray, rounds: int, basis: str) -> np.ndarray:
    check_choice(basis, "basis", ("krylov", "messages"))
    if basis == "krylov":
        return krylov_basis(network, senders, rounds).T
    return propagated_rows(network, senders, rounds).reshape(-1, network.m)


def coalition_view(network: Network, consensus_steps: int, observers: int | Iterable[int], *,
                   basis: str = "krylov") -> PpmGossipView:
    """The view of one agent or a coalition over the ``c`` rounds of one iteration.

    ``basis="messages"`` gives one row per received message ``(round k, sender w)``, ordered by round
    then sender (``e_w^T W^k``); ``"krylov"`` (default) an orthonormal basis of their span, the same
    information, well conditioned for large ``c``.
    """
    obs = check_observers(network, observers)
    edges = edge_list(network)
    known = np.isin(edges, obs).any(axis=1)
    rows = _rows(network, senders_of(network, obs), consensus_steps, basis)
    return PpmGossipView(kind="coalition", label="+".join(map(str, obs)), rows=rows, known_agents=obs,
                         known_masks=known, edges=edges)


def eavesdropper_view(network: Network, consensus_steps: int, watched: Iterable[tuple[int, int]], *,
                      basis: str = "krylov") -> PpmGossipView:
    """The view of an outsider who reads both directions of the ``watched`` edges for ``c`` rounds."""
    pairs = sorted({(min(int(a), int(b)), max(int(a), int(b))) for a, b in watched})
    if not pairs or any(b not in network.neighbours[a] for a, b in pairs):
        raise ConfigError(f"watched must be a nonempty set of edges of the network, got {pairs}",
                          field="watched")
    senders = np.array(sorted({v for e in pairs for v in e}), dtype=int)
    edges = edge_list(network)
    label = "edges " + ",".join(f"{a}-{b}" for a, b in pairs)
    return PpmGossipView(kind="eavesdropper", label=label,
                         rows=_rows(network, senders, consensus_steps, basis), known_agents=(),
                         known_masks=np.zeros(edges.shape[0], dtype=bool), edges=edges)


def _orthonormal_rows(R: np.ndarray, tol: float = 1e-10) -> np.ndarray:
    """An orthonormal basis of the row space of ``R`` (the same information as ``R``)."""
    if R.shape[0] == 0:
        return R
    _, S, Vt = np.linalg.svd(R, full_matrices=False)
    return Vt[S > tol * S[0]] if S[0] > 0 else Vt[:0]


def schedule_coalition_view(mixing: RoundMixing, start: int, consensus_steps: int,
                            observers: int | Iterable[int], *, basis: str = "krylov") -> PpmGossipView:
    """The view of one agent or a coalition ``O`` of the ``c`` rounds from global round ``start``
    under a schedule: in round ``k + 1`` it receives ``S_w^(k) = e_w^T Phi_k S^(0)`` from every
    ``w`` outside ``O`` with ``W_{start + k}[o, w] != 0`` for some ``o`` in ``O``, where
    ``Phi_k = W_{start + k - 1} ... W_start`` (``Phi_0 = I``). ``basis`` as in :func:`coalition_view`
    (``"krylov"``: an orthonormal basis of the rows' span)."""
    check_choice(basis, "basis", ("krylov", "messages"))
    network = mixing.network
    obs = check_observers(network, observers)
    outside = np.ones(network.m, dtype=bool)
    outside[list(obs)] = False
    phi, rows = np.eye(network.m), []
    for k in range(consensus_steps):
        W = mixing.dense(start + k)
        rows.append(phi[np.flatnonzero((W[list(obs)] != 0).any(axis=0) & outside)])
        phi = W @ phi
    R = np.vstack(rows) if rows else np.zeros((0, network.m))
    edges = edge_list(network)
    return PpmGossipView(kind="coalition", label="+".join(map(str, obs)),
                         rows=_orthonormal_rows(R) if basis == "krylov" else R, known_agents=obs,
                         known_masks=np.isin(edges, obs).any(axis=1), edges=edges)


def sum_view(network: Network) -> PpmGossipView:
    """The network sum ``sum_i Y^(i)`` (Nicolas et al.'s server behind the secure aggregation)."""
    edges = edge_list(network)
    return PpmGossipView(kind="sum", label="sum", rows=np.ones((1, network.m)), known_agents=(),
                         known_masks=np.zeros(edges.shape[0], dtype=bool), edges=edges)


def _unknown(view: PpmGossipView) -> np.ndarray:
    return np.setdiff1d(np.arange(view.rows.shape[1]), view.known_agents)


def _release(view: PpmGossipView, R: np.ndarray, B: np.ndarray) -> LinearGaussianRelease:
    U = _unknown(view)
    return LinearGaussianRelease(J=R[:, U], B=B, targets=U, columns=np.arange(U.size), label=view.label)


def _gains(release: LinearGaussianRelease, agents: int) -> np.ndarray:
    out = np.full(agents, np.nan)
    out[release.targets] = unit_shift_gains(release)
    return out


def view_release(view: PpmGossipView, noise_std: np.ndarray, mask_std: float) -> LinearGaussianRelease:
    """One coordinate of one iteration's view as ``O = J x + B w`` (module docstring): ``J = R_U``,
    ``B = [R_U diag(n_U), tau R E_F]``; targets the agents the view does not know.

    Parameters
    ----------
    view : PpmGossipView
    noise_std : numpy.ndarray
        ``(s,)``: each agent's noise scale ``n_i`` at the iteration audited.
    mask_std : float
        ``tau >= 0``.
    """
    R, U = view.rows, _unknown(view)
    n = np.asarray(noise_std, dtype=float)
    tau = check_number(mask_std, "mask_std", low=0)
    masks = tau * (R @ incidence(view.edges, R.shape[1])[:, ~view.known_masks])
    return _release(view, R, np.hstack([R[:, U] * n[U], masks]))


def view_gains(view: PpmGossipView, noise_std: np.ndarray, mask_std: float) -> np.ndarray:
    """``g_u = e_u^T J^T (B B^T)^+ J e_u`` for every agent (``nan`` for a known one; module docstring):
    :func:`~dpgossip.privacy.linear_audit.unit_shift_gains` of :func:`view_release`."""
    return _gains(view_release(view, noise_std, mask_std), view.rows.shape[1])


def mask_free_gains(view: PpmGossipView, noise_std: np.ndarray) -> np.ndarray:
    """``lim_{tau -> inf}`` of :func:`view_gains`: the combinations ``Q^T R`` that no unknown mask
    enters (``Q`` spans the complement of ``range(R E_F)``) against the noise alone."""
    R, U = view.rows, _unknown(view)
    M = R @ incidence(view.edges, R.shape[1])[:, ~view.known_masks]
    if M.size:
        Uf, S, _ = np.linalg.svd(M, full_matrices=True)
        rank = int(np.sum(S > 1e-10 * S[0])) if S.size and S[0] > 0 else 0
        R = Uf[:, rank:].T @ R
    n = np.asarray(noise_std, dtype=float)
    return _gains(_release(view, R, R[:, U] * n[U]), R.shape[1])


@dataclass(frozen=True, slots=True, kw_only=True)
class TargetLeakage:
    """Leakage of one target to one view over the whole run."""

    view: str
    target: int
    mu: float
    """``sqrt(sum_l Delta_{u,l}^2 g_{u,l})``."""
    epsilon: float
    """Exact epsilon of a Gaussian mechanism with :attr:`mu` at :attr:`delta`."""
    delta: float

    def to_row(self) -> dict[str, object]:
        """Tidy row."""
        return {"view": self.view, "target": self.target, "mu": self.mu, "epsilon": self.epsilon,
                "delta": self.delta}


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class PpmGossipAudit:
    """Every target's leakage to one view of a run (:data:`MEANING`)."""

    view: PpmGossipView
    leakages: tuple[TargetLeakage, ...]
    mu2_per_iteration: np.ndarray
    """``(L, s)``: ``mu_l^2`` of each agent (``nan`` for the observers)."""
    adjacency: str
    meaning: str = MEANING

    @property
    def worst(self) -> TargetLeakage:
        """The target with the largest ``mu``."""
        return max(self.leakages, key=lambda t: t.mu)

    def to_row(self) -> dict[str, object]:
        """Tidy row of the worst target."""
        worst = {k: v for k, v in self.worst.to_row().items() if k != "view"}
        return {**self.view.to_row(), **worst, "adjacency": self.adjacency,
                "meaning": self.meaning}


def audit_ppm_gossip(result: PpmGossipResult, view: PpmGossipView | Sequence[PpmGossipView], *,
                     delta: float = 1e-5, adjacency: str | None = None) -> PpmGossipAudit:
    """Audit ``view`` of a ppm-gossip run along its realised trajectory (module docstring).

    Parameters
    ----------
    result : PpmGossipResult
        The run: its iterates give ``Delta_{u,l}`` and its noise scales ``n_{i,l}``.
    view : PpmGossipView or sequence of PpmGossipView
        Built on the run's network (same agents and edges); under a schedule one per iteration
        (:func:`schedule_coalition_view` of each iteration's rounds), since each reads other ``W_t``.
    delta : float
        ``epsilon`` is reported at this ``delta``.
    adjacency : str, optional
        Neighbouring relation of ``Delta_{u,l} = sup ||C V_u||_F`` (default the run's).

    Returns
    -------
    PpmGossipAudit
        ``mu_u^2 = sum_l Delta_{u,l}^2 g_{u,l}`` for every agent the view does not know.
    """
    if not isinstance(result, PpmGossipResult):
        raise ConfigError(f"result must be a PpmGossipResult, got {type(result).__name__}", field="result")
    views = [view] * result.noise_std.shape[0] if isinstance(view, PpmGossipView) else list(view)
    if len(views) != result.noise_std.shape[0]:
        raise ConfigError(f"view: give one view or one per iteration ({result.noise_std.shape[0]}), got "
                          f"{len(views)}", field="view")
    view = views[0]
    if any(v.rows.shape[1] != result.clients or not np.array_equal(v.edges, result.edges)
           for v in views):
        raise ConfigError("view must be built on the run's network (same agents and edges)", field="view")
    delta = check_number(delta, "delta", low=0, high=1, low_open=True, high_open=True)
    adjacency = result.params.ppm.adjacency if adjacency is None else adjacency
    check_choice(adjacency, "adjacency", ADJACENCIES)
    L, s = result.noise_std.shape
    mu2 = np.empty((L, s))
    for l in range(L):
        g = view_gains(views[l], result.noise_std[l], result.params.mask_std)
        D = np.array([iterate_sensitivity(V, adjacency, "improved") for V in result.iterates[l]])
        mu2[l] = np.where(np.isinf(g), np.inf, D**2 * np.nan_to_num(g, posinf=0.0))
        mu2[l, list(view.known_agents)] = np.nan
    total = mu2.sum(axis=0)
    leak = tuple(TargetLeakage(view=view.label, target=int(u), mu=math.sqrt(total[u]),
                               epsilon=gaussian_mechanism_epsilon(math.sqrt(total[u]), delta), delta=delta)
                 for u in _unknown(view))
    return PpmGossipAudit(view=view, leakages=leak, mu2_per_iteration=mu2, adjacency=adjacency)
