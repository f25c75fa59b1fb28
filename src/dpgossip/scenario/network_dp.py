"""Run a network-DP scenario: the exact pairwise leakage of noisy gossip beside the published bounds.

For each graph of the scenario (:mod:`~dpgossip.scenario.network_dp_config`) the exact auditor
(:func:`~dpgossip.privacy.linear_audit.audit_gossip`) gives, for every (observer, target) pair asked,
``mu^2`` (the Gaussian mechanism's squared Mahalanobis norm), the Renyi divergence ``alpha mu^2 / 2``
and ``epsilon`` at ``delta``.  Beside it, where they apply:

* Muffliato's per-message sum (:func:`~dpgossip.protocols.gossip.bounds.muffliato_per_message`) for
  ``gossip-average``, summed over the same messages the exact audit sees (rounds ``0..T-1``);
  or over the authors' gossip steps ``1..T`` (``muffliato_rounds = "steps"``);
* MFDL's absolute-value bound (:func:`~dpgossip.protocols.gossip.bounds.mfdl_abs_sum`) for
  ``gossip-noisy``;
* Muffliato's corrected form for noisy decentralized GD (arXiv:2206.05091, Theorem 11;
  :func:`~dpgossip.protocols.gossip.bounds.muffliato_corrected`) for ``gossip-noisy`` with per-round
  inputs: ``p = 1`` clipped at ``T`` (``corrected_*``, as MFDL's code computes it), ``p = 2`` clipped
  (``corrected_p2_*``) and ``p = 1`` unclipped (``corrected_unclipped_bound``);

each with the ratio exact / bound and a flag where the published value is below the exact one
(:func:`~dpgossip.protocols.gossip.bounds.compare_to_bound`).

A fixed target needs one view per observer (one SVD each); a fixed observer gives every target from one
view.  Files in the results folder (all written atomically): ``config.resolved.json``,
``graphs/<index>-<label>.json`` (one graph's rows, written when the graph is done: a rerun skips the
graphs whose stored settings match, so an interrupted run resumes per graph), ``leakage.csv`` (every
row) and ``summary.json``.  Each graph runs with one BLAS thread
(:func:`~dpgossip._threads.single_blas_thread`: faster for the many mid-sized products of the Krylov
bases, and bit-identical results).  The plot is drawn by :mod:`dpgossip.report.network_dp`.

Every graph is built and checked (:func:`prepare_case`: a target or observer outside the graph, a view
too large) before anything is written; the run writes into a staging folder swapped in only when it
succeeds, under the folder's lock (:mod:`~dpgossip.scenario.staging`; ``graphs/`` is its resume
store), so a failed or interrupted run leaves earlier results as they were.
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np

from dpgossip._threads import single_blas_thread
from dpgossip.errors import ConfigError, renamed_fields
from dpgossip.privacy.linear_audit import LinearAuditSettings, PairLeakage
from dpgossip.protocols.gossip.audit import audit_gossip
from dpgossip.protocols.gossip.bounds import compare_to_bound, muffliato_mixing_rounds
from dpgossip.protocols.gossip.kinds import published_bounds, view_size
from dpgossip.protocols.gossip.linear import LinearGossip
from dpgossip.resources import FLOAT, Need, check_needs
from dpgossip.scenario.network_dp_config import MIXING_TIME, GraphCase, NetworkDpConfig
from dpgossip.scenario.outdir import check_out_dir
from dpgossip.scenario.staging import foreign, staged_folder
from dpgossip.scenario.store import json_safe, read_json, read_keyed, write_csv, write_json
from dpgossip.topology import make_network
from dpgossip.topology.network import Network
from dpgossip.topology.published import mfdl_erdos_renyi

__all__ = ["LeakageRow", "PreparedCase", "build_network", "choose_observers", "prepare_case",
           "audit_case", "run_network_dp",
           "graph_file", "FORMAT"]

FORMAT = 2
"""Version of the stored per-graph files (part of their key: a new format recomputes them)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LeakageRow:
    """One (observer, target) pair of one graph: the exact leakage beside the published bounds.

    Bounds and ratios are Renyi values at order ``alpha``; ``nan`` (and flag ``None``) where the bound
    does not apply to the protocol.
    """

    topology: str
    """The graph's label in the scenario."""
    observer: int
    target: int
    distance: int
    """Graph distance between observer and target (``-1``: not connected)."""
    mu2: float
    """``mu^2`` (the upper end when not exact; ``inf``: the supports differ)."""
    exact: bool
    rdp: float
    """``alpha mu^2 / 2``."""
    epsilon: float
    """Exact ``epsilon`` of the Gaussian mechanism at ``delta``."""
    muffliato_bound: float
    muffliato_ratio: float
    muffliato_below_exact: bool | None
    mfdl_bound: float
    mfdl_ratio: float
    mfdl_below_exact: bool | None
    corrected_bound: float
    """Muffliato's corrected form, ``p = 1``, clipped at ``T``."""
    corrected_ratio: float
    corrected_below_exact: bool | None
    corrected_p2_bound: float
    """The corrected form with the entry squared (``p = 2``), clipped at ``T``."""
    corrected_p2_ratio: float
    corrected_p2_below_exact: bool | None
    corrected_unclipped_bound: float
    """The corrected form, ``p = 1``, without the clip."""

    def to_row(self) -> dict[str, object]:
        """Tidy row of every field."""
        return {name: getattr(self, name) for name in self.__slots__}  # type: ignore[attr-defined]


def build_network(case: GraphCase, path: str = "network_dp.graphs[0]") -> Network:
    """The graph and ``W`` of a case: :func:`~dpgossip.topology.make_network`, or MFDL's network
    (:func:`~dpgossip.topology.published.mfdl_erdos_renyi`) for ``setting = "mfdl"``; errors name
    ``path``."""
    names = {k: f"{path}.{k}" for k in ("agents", "params", "topology", "mixing", "seed")}
    with renamed_fields(names):
        if case.setting == "mfdl":
            return mfdl_erdos_renyi(case.agents, case.seed)
        return make_network(case.topology, agents=case.agents, mixing=case.mixing, seed=case.seed,
                            params=dict(case.params))


def choose_observers(network: Network, case: GraphCase, path: str) -> list[int]:
    """The observers of a fixed-target case (:class:`~dpgossip.scenario.network_dp_config.ObserverChoice`)."""
    target = _check_agent(network, case.target, f"{path}.target")
    choice = case.observers
    if choice.kind == "list":
        for i, v in enumerate(choice.agents):
            _check_agent(network, v, f"{path}.observers[{i}]")
        if target in choice.agents:
            raise ConfigError(f"{path}.observers: the target {target} cannot observe itself",
                              field=f"{path}.observers")
        return list(choice.agents)
    if choice.kind == "all":
        return [v for v in range(network.m) if v != target]
    dist = nx.single_source_shortest_path_length(network.graph, target)
    far = max(dist.values())
    shells = range(1, far + 1)
    if choice.distances is not None and choice.distances < far:
        shells = sorted({int(h) for h in np.rint(np.linspace(1, far, choice.distances))})
    rng = np.random.default_rng(choice.seed)
    out: list[int] = []
    for h in shells:
        shell = sorted(v for v, d in dist.items() if d == h)
        pick = shell if len(shell) <= choice.per_distance else rng.choice(
            shell, size=choice.per_distance, replace=False).tolist()
        out.extend(sorted(int(v) for v in pick))
    return out


def _check_agent(network: Network, v: int | None, path: str) -> int:
    if v is None or not 0 <= v < network.m:
        raise ConfigError(f"{path} must be an agent in 0..{network.m - 1}, got {v!r}", field=path)
    return v


_FULL_BOUNDS = ("muffliato", "mfdl", "corrected", "corrected_p2")
"""Bounds written with their ratio and flag; ``corrected_unclipped`` is written as its value only."""


def _rows(pairs: list[PairLeakage], bounds: dict[str, np.ndarray], label: str,
          alpha: float) -> list[LeakageRow]:
    nan = math.nan
    side = {name: compare_to_bound(pairs, b, order=alpha, source=name) for name, b in bounds.items()}
    out = []
    for k, p in enumerate(pairs):
        cols: dict[str, Any] = {}
        for name in _FULL_BOUNDS:
            c = side[name][k] if name in side else None
            cols[f"{name}_bound"] = c.bound if c else nan
            cols[f"{name}_ratio"] = c.ratio if c else nan
            cols[f"{name}_below_exact"] = c.bound_below_exact if c else None
        unclipped = side.get("corrected_unclipped")
        cols["corrected_unclipped_bound"] = unclipped[k].bound if unclipped else nan
        out.append(LeakageRow(topology=label, observer=int(p.observer), target=p.target,
                              distance=p.hops, mu2=p.mu_upper ** 2, exact=p.exact, rdp=p.rdp[0],
                              epsilon=p.epsilon, **cols))
    return out


def _bounds(prepared: PreparedCase, case: GraphCase, observer: int, alpha: float,
            sensitivity: float) -> dict[str, np.ndarray]:
    """The published bounds of ``observer``'s view
    (:func:`~dpgossip.protocols.gossip.kinds.published_bounds`), Muffliato's sum over the
    rounds of ``case.muffliato_rounds``."""
    T = prepared.spec.rounds
    rounds = range(1, T + 1) if case.muffliato_rounds == "steps" else None
    return published_bounds(prepared.network, prepared.spec, observer, alpha, sensitivity,
                            muffliato_rounds=rounds)


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class PreparedCase:
    """A graph of the scenario built and checked: its network, the gossip it runs and the observers
    audited (:func:`prepare_case`)."""

    network: Network
    spec: LinearGossip
    observers: tuple[int, ...]


def prepare_case(case: GraphCase, path: str = "network_dp.graphs[0]") -> PreparedCase:
    """Build a graph and check everything its audit needs (rounds, the size of its views, the target
    and observers are agents of the graph), without auditing.

    Raises
    ------
    ConfigError
        Naming ``path`` and the key (``network_dp.graphs[1].target``).
    """
    network = build_network(case, path)
    with renamed_fields({"sigma": f"{path}.sigma", "rounds": f"{path}.rounds"}):
        rounds = (muffliato_mixing_rounds(network, case.sigma) if case.rounds == MIXING_TIME
                  else int(case.rounds))
    spec = LinearGossip(protocol=case.protocol, rounds=rounds, sigma=case.sigma, inputs=case.inputs,
                        sigma_cor=case.sigma_cor)
    _check_view_size(network, spec, path)
    if case.observer is not None:
        observers = [_check_agent(network, case.observer, f"{path}.observer")]
    else:
        observers = choose_observers(network, case, path)
    return PreparedCase(network=network, spec=spec, observers=tuple(observers))


def audit_case(case: GraphCase, *, alpha: float, delta: float, sensitivity: float,
               path: str = "network_dp.graphs[0]", prepared: PreparedCase | None = None
               ) -> tuple[list[LeakageRow], dict[str, object]]:
    """Audit one graph of the scenario (``prepared``: by :func:`prepare_case`, else built here).

    Returns
    -------
    rows, info
        One :class:`LeakageRow` per (observer, target) pair, and the graph's facts (agents, edges,
        rounds used, observers audited, mixing).
    """
    prepared = prepared if prepared is not None else prepare_case(case, path)
    network, spec, observers = prepared.network, prepared.spec, list(prepared.observers)
    settings = LinearAuditSettings(sensitivity=sensitivity, orders=(alpha,), delta=delta)
    rows: list[LeakageRow] = []
    if case.observer is not None:
        v = observers[0]
        pairs = audit_gossip(network, spec, v, settings)
        rows = _rows(pairs, _bounds(prepared, case, v, alpha, sensitivity), case.label, alpha)
    else:
        for v in observers:
            pairs = audit_gossip(network, spec, v, settings, targets=[case.target])
            bounds = _bounds(prepared, case, v, alpha, sensitivity)
            rows.extend(_rows(pairs, bounds, case.label, alpha))
    info = {**network.to_row(), "label": case.label, "rounds": spec.rounds,
            "observers": len(observers), "pairs": len(rows), "protocol": case.protocol,
            "inputs": case.inputs, "sigma_cor": case.sigma_cor}
    return rows, info


def _check_view_size(network: Network, spec: LinearGossip, path: str) -> None:
    """Refuse a graph whose largest view would not fit (its size by the kind:
    :func:`~dpgossip.protocols.gossip.kinds.view_size`)."""
    m, T = network.m, spec.rounds
    degree = max(len(n) for n in network.neighbours)
    rows, cols, copies = view_size(network, spec)
    check_needs([Need(f"{path}.agents = {m} with rounds T = {T} and largest degree {degree} needs "
                      f"views of {rows} x {cols}", copies * FLOAT * rows * cols)],
                advice="use fewer agents or rounds", field=f"{path}.agents")
    # the view is reduced from the messages of every round (rounds = 1e9 on a ring of 6 ran 30 s into
    # 'out of memory' although its reduced view is 6 x 6)
    check_needs([Need(f"{path}.rounds: T = {T} rounds of messages from up to {degree + 1} agents, each a "
                      f"combination of the {m} agents' noise", FLOAT * T * (degree + 1) * m)],
                advice="use fewer rounds", field=f"{path}.rounds")


def graph_file(out_dir: Path, index: int, case: GraphCase) -> Path:
    """Where graph ``index``'s rows are stored."""
    return Path(out_dir) / "graphs" / f"{index}-{case.label}.json"


def _key(config: NetworkDpConfig, case: GraphCase) -> str:
    text = json.dumps({"format": FORMAT, "alpha": config.alpha, "delta": config.delta,
                       "sensitivity": config.sensitivity, "case": case.to_row()}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def run_network_dp(config: NetworkDpConfig, out: str | Path | None = None, *, quiet: bool = False,
                   force: bool = False) -> Path:
    """Audit every graph of a network-DP scenario and write its results folder (module docstring).

    Parameters
    ----------
    config : NetworkDpConfig
        The parsed scenario.
    out : str or Path, optional
        Results folder (default ``[output] dir``, else ``results/<name>``).
    quiet : bool
        No progress on stderr.
    force : bool
        Write into a folder that holds another scenario's results.

    Returns
    -------
    Path
        The results folder.
    """
    out_dir = Path(out or config.out_dir or Path("results") / config.name)
    flag = "--out" if out else "the results folder"
    check_out_dir(out_dir, config.name, flag=flag, force=force)
    prepared = []  # every graph built and checked before anything is written
    for i, case in enumerate(config.graphs):
        with single_blas_thread():
            prepared.append(prepare_case(case, f"network_dp.graphs[{i}]"))
    stale = foreign(out_dir, config.name)  # --force: another scenario's results are replaced whole
    with staged_folder(out_dir, flag=flag, keep=("graphs",)) as stage:
        _write_results(config, stage.work, prepared, quiet)
        stage.commit(lambda rel: stale)
    return out_dir


def _write_results(config: NetworkDpConfig, out_dir: Path, prepared: list[PreparedCase],
                   quiet: bool) -> None:
    write_json(out_dir / "config.resolved.json", json_safe(config.to_row()))
    rows: list[dict[str, object]] = []
    graphs: list[dict[str, object]] = []
    for i, case in enumerate(config.graphs):
        record = _run_graph(config, out_dir, i, case, quiet, prepared[i])
        rows.extend(record["rows"])
        graphs.append({**record["info"], "seconds": record["seconds"], "resumed": record["resumed"]})
    write_csv(out_dir / "leakage.csv", rows)
    write_json(out_dir / "summary.json", json_safe({
        "scenario": config.name, "kind": "network_dp", "alpha": config.alpha,
        "delta": config.delta, "pairs": len(rows), "graphs": graphs,
        "statuses": {"ok": len(config.graphs)}}))


def _run_graph(config: NetworkDpConfig, out_dir: Path, i: int, case: GraphCase,
               quiet: bool, prepared: PreparedCase) -> dict[str, Any]:
    path, key = graph_file(out_dir, i, case), _key(config, case)
    stored = read_keyed(path, key)
    if stored is not None:
        if not quiet:
            print(f"[{i + 1}/{len(config.graphs)}] {case.label}: stored, skipped", file=sys.stderr)
        return {**stored, "resumed": True}
    start = time.perf_counter()
    with single_blas_thread():  # many mid-sized products: faster, and the same bits everywhere
        found, info = audit_case(case, alpha=config.alpha, delta=config.delta,
                                 sensitivity=config.sensitivity, path=f"network_dp.graphs[{i}]",
                                 prepared=prepared)
    seconds = time.perf_counter() - start
    record = {"key": key, "info": info, "seconds": seconds, "rows": [r.to_row() for r in found]}
    write_json(path, json_safe(record))
    if not quiet:
        print(f"[{i + 1}/{len(config.graphs)}] {case.label}: {info['agents']} agents, T = "
              f"{info['rounds']}, {info['observers']} observers, {len(found)} pairs, "
              f"{seconds:.1f} s", file=sys.stderr)
    return {**read_json(path), "resumed": False}
