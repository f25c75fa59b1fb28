"""Views: which linear functions of the latent noise an adversary observes, and which noise it knows.

docs/model.md, Section 2. A view is ``V = [F w ; w_known]``: message rows ``F`` (compressed exactly) and
the adversary's own randomness. Its law is ``N(0, S)`` under every dataset (``w`` has mean zero), so the
data move only the covariance ``S(X) = G(X) G(X)^T`` with ``G = [F ; E_known] diag(std)``.

Exact compression: everything an observer set ``R`` receives in iteration ``t`` is ``(K_R (x) I_d) z^(t)``
where the rows of ``K_R`` are ``e_l^T W^k`` for senders ``l`` adjacent to ``R`` and ``k < c``. Replacing them
by an orthonormal basis ``B_R`` of that row space is an invertible, data-independent map of the view (plus
dropping exact duplicates), so no divergence changes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import networkx as nx
import numpy as np

from dpgossip.errors import ConfigError, did_you_mean
from dpgossip.protocols.ddppm.release import ReleaseModel, latent_indices

__all__ = ["View", "ViewSpec", "VIEW_KINDS", "make_view", "view_spec", "view_factor", "receive_basis"]

VIEW_KINDS = ("observer", "coalition", "all-but-one", "eavesdropper", "paper")


@dataclass(frozen=True, slots=True, kw_only=True)
class View:
    """An adversary: what it receives and which latent randomness it knows.

    ``kind`` is one of :data:`VIEW_KINDS`; ``agents`` the observer (``observer``, ``paper``), the coalition
    (``coalition``), or empty; ``target`` the agent whose data are attacked (needed by ``all-but-one`` and
    ``paper``).
    """

    kind: str
    agents: tuple[int, ...] = ()
    target: int | None = None

    def to_row(self) -> dict[str, object]:
        """Tidy row."""
        return {"view": self.kind, "observers": " ".join(map(str, self.agents)), "target": self.target}


def make_view(kind: str, *, m: int, agents: Sequence[int] = (), target: int | None = None) -> View:
    """Validated :class:`View` for a network of ``m`` agents."""
    if kind not in VIEW_KINDS:
        raise ConfigError(f"kind: unknown view {kind!r}{did_you_mean(kind, VIEW_KINDS)}; "
                          f"known: {', '.join(VIEW_KINDS)}", field="kind")
    agents = tuple(int(a) for a in agents)
    for a in agents + ((target,) if target is not None else ()):
        if not 0 <= a < m:
            name = "agents" if a in agents else "target"
            raise ConfigError(f"{name}: agent {a} does not exist (agents are 0..{m - 1})",
                              field=name)
    if kind in ("observer", "paper") and len(agents) != 1:
        raise ConfigError(f"agents: view {kind!r} needs exactly one observer, got {list(agents)}",
                          field="agents")
    if kind == "coalition" and not agents:
        raise ConfigError("agents: view 'coalition' needs a non-empty list of agents",
                          field="agents")
    if kind in ("all-but-one", "paper") and target is None:
        raise ConfigError(f"target: view {kind!r} needs a target agent", field="target")
    if target is not None and target in agents:
        raise ConfigError(f"privacy: the target {target} is one of the observers {list(agents)}")
    return View(kind=kind, agents=agents, target=target)


def receive_basis(graph: nx.Graph, W: np.ndarray, receivers: Sequence[int], c: int) -> np.ndarray:
    """Orthonormal basis ``B`` (``r x m``) of ``span{e_l^T W^k P : l adjacent to receivers, k < c}``.

    ``P = I - sum_{i in receivers} e_i e_i^T`` removes the receivers' own coordinates: a receiver can compute
    its own ``z_i^(t)`` from the rest of its view (with coefficients that depend only on its own data), so
    that part of a message is an exact duplicate under both datasets (docs/model.md, Section 2).
    """
    m = W.shape[0]
    senders = sorted({int(l) for o in receivers for l in graph.neighbors(o)} - set(receivers))
    if c == 0 or not senders:
        return np.zeros((0, m))
    rows = []
    Wk = np.eye(m)
    for _ in range(c):
        rows.append(Wk[senders])
        Wk = Wk @ W
    K = np.vstack(rows)
    K[:, list(receivers)] = 0.0
    _, s, vt = np.linalg.svd(K, full_matrices=False)
    rank = int(np.sum(s > s[0] * 1e-12)) if s.size and s[0] > 0 else 0
    return vt[:rank]


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class ViewSpec:
    """What a view contains, independent of the data: compression basis ``B`` (``r x m``) of the received
    gossip messages, the rows of ``q^(T)`` observed, and the known latent coordinates."""

    B: np.ndarray
    final_rows: np.ndarray
    known: np.ndarray


def view_spec(view: View, graph: nx.Graph, W: np.ndarray, *, c: int, T: int,
              offsets: np.ndarray, latent_std: np.ndarray) -> ViewSpec:
    """The :class:`ViewSpec` of a view (docs/model.md, Section 2).

    Rows of ``q^(T)`` that the adversary can compute exactly from the rest of its view (its own agents'
    ``q_i^(T)``, and for ``all-but-one`` every agent's but the target's) are left out: they are exact
    duplicates under both datasets.
    """
    m = W.shape[0]
    n = int(offsets[-1])

    def rows_of(agents: list[int]) -> np.ndarray:
        if not agents:
            return np.zeros(0, dtype=int)
        return np.concatenate([np.arange(offsets[i], offsets[i + 1]) for i in agents])

    everything = np.eye(m) if c > 0 else np.zeros((0, m))
    if view.kind in ("observer", "coalition"):
        R = list(view.agents)
        B = receive_basis(graph, W, R, c)
        final_rows = np.setdiff1d(np.arange(n), rows_of(R))
        known = latent_indices(offsets, T, R)
    elif view.kind == "eavesdropper":
        B, final_rows, known = everything, np.arange(n), np.zeros(0, dtype=int)
    elif view.kind == "all-but-one":
        # everything is seen and every z_i^(t), i != target, is computable from it: keep the target's
        rest = [i for i in range(m) if i != view.target]
        B = np.eye(m)[[view.target]] if c > 0 else np.zeros((0, m))
        final_rows, known = rows_of([view.target]), latent_indices(offsets, T, rest)
    else:  # paper: the target's own releases y_j = [z_j^(1..T); q_j^(T)] (Eqs. (25)-(29) of Campbell et al.)
        j = view.target
        B = np.eye(m)[[j]]
        final_rows = rows_of([j])
        known = latent_indices(offsets, T, list(view.agents))
    known = known[np.asarray(latent_std)[known] > 0]
    return ViewSpec(B=B, final_rows=final_rows, known=known)


def view_factor(model: ReleaseModel, view: View, graph: nx.Graph
                ) -> tuple[np.ndarray, np.ndarray]:
    """Message rows and known latent indices of a view, as dense matrices (the reference path).

    Returns
    -------
    F, known
        ``F`` (``K x N``): the observed linear functions of ``w`` (compressed); ``known``: indices of ``w``
        the adversary knows. The joint view is ``[F w ; w[known]]``.
    """
    spec = view_spec(view, graph, model.W, c=model.c, T=model.T, offsets=model.offsets,
                     latent_std=model.latent_std)
    parts = []
    if spec.B.shape[0]:
        for t in range(1, model.T + 1):
            Z = model.z_matrix(t).reshape(model.m, model.d, model.N)
            parts.append(np.einsum("ra,adn->rdn", spec.B, Z).reshape(-1, model.N))
    parts.append(model.final_matrix()[spec.final_rows])
    return np.vstack(parts), spec.known
