"""What schedule to sample for a network: a :class:`ScheduleSpec`, read from a TOML table.

A spec names one of the samplers of :mod:`dpgossip.topology.schedule_samplers` (or ``"fixed"``) and
its parameters; :meth:`ScheduleSpec.sample` draws a
:class:`~dpgossip.topology.schedules.MixingSchedule` of ``steps`` steps on a network. The samplers,
what step ``t`` is, and the keys each reads besides ``sampler``:

* ``fixed``: ``W_t = W``, the network's mixing matrix (no key);
* ``random-matchings``: a random maximal matching of the network's edges, matched pairs average
  (``seed``);
* ``one-peer-exponential``: ``W_t = (I + S_t) / 2``, ``S_t`` the cyclic shift by ``2^(t mod tau)``
  (no key);
* ``random-regular``: a fresh random ``degree``-regular graph, weights ``1 / (degree + 1)``
  (``seed``, ``degree``);
* ``files``: the matrix of file ``t mod n`` (``n`` files, cycled) (``files``, ``stochastic``);
* ``pairwise``: exchange ``t`` of randomized pairwise gossip on the network's edges (``seed``,
  ``rate``, ``horizon``);
* ``push-sum``: the push-sum weights ``A_ij = 1 / (outdeg(j) + 1)`` for ``i = j`` or ``j -> i`` on a
  directed graph of the network's agents (``arcs``, :meth:`ScheduleSpec.digraph`).

``arcs`` (push-sum only) says which directed links ``j -> i`` carry messages: ``"both"`` (default) every
edge of the network in both directions; ``"cycle"`` the ring ``i -> i + 1 mod m`` (each ``(i, i + 1 mod
m)`` must be an edge of the network); or a list of ``[sender, receiver]`` pairs of agents, each an edge
of the network (messages travel over its links), without duplicates or self-loops. The directed graph
must be strongly connected (every agent's mass reaches every other), else the ratios ``s_i / w_i`` do
not tend to the average.

``one-peer-exponential`` and ``random-regular`` ignore the network's edges (their pairs need not be
edges of it). A spec without ``seed`` draws from the seed :meth:`ScheduleSpec.sample` is given (the
point's stream); with one it draws from that seed alone, so the same schedule comes back whatever
else changes. ``"pairwise"`` gives a ``"pairwise"`` schedule of ``steps`` exchanges (or every tick in
``[0, horizon)``); ``"push-sum"`` a column-stochastic one; every other sampler a doubly-stochastic
``"rounds"`` schedule (``fixed`` on a network whose ``W`` is only row stochastic: a row-stochastic one).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np
import scipy.sparse as sp

from dpgossip.errors import (
    ConfigError,
    check_choice,
    check_int,
    check_number,
    did_you_mean,
    renamed_fields,
)
from dpgossip.topology.network import Network
from dpgossip.topology.schedule_samplers import (
    check_strongly_connected,
    neighbour_probabilities,
    one_peer_exponential,
    pairwise_gossip,
    push_sum_schedule,
    random_matchings,
    random_regular_rounds,
    schedule_from_files,
)
from dpgossip.topology.schedules import MixingSchedule

__all__ = ["ScheduleSpec", "SCHEDULE_SAMPLERS", "SAMPLER_KEYS", "ARC_WORDS",
           "schedule_spec_from_mapping", "fixed_schedule"]

SAMPLER_KEYS: dict[str, tuple[str, ...]] = {
    "fixed": (),
    "random-matchings": ("seed",),
    "one-peer-exponential": (),
    "random-regular": ("seed", "degree"),
    "files": ("files", "stochastic"),
    "pairwise": ("seed", "rate", "horizon"),
    "push-sum": ("arcs",),
}
"""Each sampler and the keys it reads besides ``sampler``."""
SCHEDULE_SAMPLERS: tuple[str, ...] = tuple(SAMPLER_KEYS)
"""The values of ``sampler``."""
_ALL_KEYS: tuple[str, ...] = ("sampler", "seed", "degree", "files", "stochastic", "rate", "horizon",
                              "arcs")
_DEFAULTS: dict[str, Any] = {"seed": None, "degree": None, "files": (), "stochastic": "doubly",
                             "rate": 1.0, "horizon": None, "arcs": "both"}
ARC_WORDS: tuple[str, ...] = ("both", "cycle")
"""The named values of ``arcs`` (a push-sum schedule's directed links; module docstring)."""
_ARCS_ALLOWED = ('allowed: "both" (every edge both ways), "cycle" (i -> i + 1 mod m) or a nonempty list '
                 "of [sender, receiver] pairs of distinct agents, each an edge of the graph")
_TOL = 1e-9

Seed = int | np.random.SeedSequence | np.random.Generator


def _users(key: str) -> str:
    return ", ".join(repr(s) for s, keys in SAMPLER_KEYS.items() if key in keys)


@dataclass(frozen=True, slots=True, kw_only=True)
class ScheduleSpec:
    """A sampled schedule's recipe (module docstring).

    Parameters
    ----------
    sampler : str
        One of :data:`SCHEDULE_SAMPLERS`.
    seed : int, optional
        Seed of a random sampler; ``None``: the seed :meth:`sample` is given.
    degree : int, optional
        ``random-regular``: the degree of every round's graph (required).
    files : tuple of str
        ``files``: one matrix per file (``.npy``, ``.npz`` or text), used in order and cycled.
    stochastic : str
        ``files``: ``"doubly"`` (default) or ``"row"``, which sums of the matrices are one.
    rate : float
        ``pairwise``: the rate of every agent's Poisson clock.
    horizon : float, optional
        ``pairwise``: every tick in ``[0, horizon)`` instead of ``steps`` ticks.
    arcs : str or tuple of (int, int)
        ``push-sum``: its directed links, ``"both"`` (default), ``"cycle"`` or ``(sender, receiver)``
        pairs (module docstring; checked against a network by :meth:`digraph`).
    """

    sampler: str
    seed: int | None = None
    degree: int | None = None
    files: tuple[str, ...] = ()
    stochastic: str = "doubly"
    rate: float = 1.0
    horizon: float | None = None
    arcs: str | tuple[tuple[int, int], ...] = "both"

    def __post_init__(self) -> None:
        check_choice(self.sampler, "sampler", SCHEDULE_SAMPLERS)
        allowed = SAMPLER_KEYS[self.sampler]
        for key in _ALL_KEYS[1:]:
            if key not in allowed and getattr(self, key) != _DEFAULTS[key]:
                raise ConfigError(f"{key}: sampler {self.sampler!r} does not read it (it is read by "
                                  f"{_users(key)}); keys of {self.sampler!r}: "
                                  f"{', '.join(allowed) or 'none'}", field=key)
        if self.seed is not None:
            object.__setattr__(self, "seed", check_int(self.seed, "seed", 0))
        if self.sampler == "random-regular":
            if self.degree is None:
                raise ConfigError("degree: sampler 'random-regular' needs the degree of its graphs, "
                                  "an integer >= 1 (e.g. degree = 3)", field="degree")
            object.__setattr__(self, "degree", check_int(self.degree, "degree", 1))
        self._check_files()
        object.__setattr__(self, "arcs", _checked_arcs(self.arcs))
        object.__setattr__(self, "rate", check_number(self.rate, "rate", low=0.0, low_open=True))
        if self.horizon is not None:
            object.__setattr__(self, "horizon", check_number(self.horizon, "horizon", low=0.0,
                                                             low_open=True))

    def _check_files(self) -> None:
        if self.sampler != "files":
            return
        files = self.files
        if isinstance(files, (str, Path)) or not isinstance(files, (list, tuple)) or not files \
                or not all(isinstance(f, (str, Path)) and str(f) for f in files):
            raise ConfigError(f"files must be a nonempty list of file names (one matrix per round), "
                              f"got {files!r}", field="files")
        object.__setattr__(self, "files", tuple(str(f) for f in files))
        check_choice(self.stochastic, "stochastic", ("doubly", "row"))

    @property
    def schedule_kind(self) -> str:
        """``"pairwise"`` for the pairwise sampler, ``"rounds"`` for every other."""
        return "pairwise" if self.sampler == "pairwise" else "rounds"

    @property
    def random(self) -> bool:
        """Whether the sampler draws random numbers (reads a seed)."""
        return "seed" in SAMPLER_KEYS[self.sampler]

    def sample(self, network: Network, steps: int, seed: Seed | None = None) -> MixingSchedule:
        """A schedule of ``steps`` steps on ``network`` (module docstring).

        Parameters
        ----------
        network : Network
            Agents, graph and ``W``.
        steps : int
            Rounds, or exchanges for ``pairwise`` (unless :attr:`horizon` is set).
        seed : int, SeedSequence or Generator, optional
            The stream of a random sampler when the spec has no :attr:`seed`.

        Raises
        ------
        ConfigError
            ``seed`` missing for a random sampler without its own; a file's matrix of another size
            than the network; a sampler's own checks (e.g. ``degree >= m``).
        """
        T = check_int(steps, "steps", 0)
        m = network.m
        if self.random and self.seed is None and seed is None:
            raise ConfigError(f"seed: sampler {self.sampler!r} is random and the spec has no seed; "
                              "give one to the spec or to sample()", field="seed")
        rng = self.seed if self.seed is not None else seed
        if self.sampler == "pairwise":
            P = neighbour_probabilities(network.graph)
            if self.horizon is not None:
                return pairwise_gossip(P, rng, horizon=self.horizon, rate=self.rate)
            return pairwise_gossip(P, rng, ticks=T, rate=self.rate)
        if T == 0:
            stochastic = "column" if self.sampler == "push-sum" else "doubly"
            return MixingSchedule(m=m, kind="rounds", stochastic=stochastic, label=self.sampler)
        if self.sampler == "fixed":
            return fixed_schedule(network, T)
        if self.sampler == "random-matchings":
            return random_matchings(T, rng, graph=network.graph)
        if self.sampler == "one-peer-exponential":
            return one_peer_exponential(m, T)
        if self.sampler == "random-regular":
            return random_regular_rounds(m, self.degree, T, rng)
        if self.sampler == "push-sum":
            return push_sum_schedule(self.digraph(network), T)
        return self._from_files(m, T)

    def digraph(self, network: Network) -> nx.DiGraph:
        """The directed graph of a push-sum schedule on ``network``: its agents and :attr:`arcs`.

        Raises
        ------
        ConfigError
            (field ``arcs`` or ``arcs[k]``) an arc whose agents are not in ``0..m-1`` or that is not an
            edge of the network; ``"cycle"`` on a network without every edge ``(i, i + 1 mod m)``; a
            directed graph that is not strongly connected.
        """
        m, graph = network.m, network.graph
        if self.arcs == "both":
            arcs = [(j, i) for a, b in graph.edges() if a != b for j, i in ((a, b), (b, a))]
        elif self.arcs == "cycle":
            arcs = [(i, (i + 1) % m) for i in range(m)]
            missing = [a for a in arcs if not graph.has_edge(*a)]
            if missing:
                raise ConfigError(f"arcs: 'cycle' orients the ring 0 -> 1 -> ... -> {m - 1} -> 0 along "
                                  f"the graph's edges, but ({missing[0][0]}, {missing[0][1]}) is not an "
                                  f"edge of the graph ({len(missing)} of the {m} ring edges are missing); "
                                  f"{_ARCS_ALLOWED}", field="arcs")
        else:
            arcs = list(self.arcs)
            _check_arcs_on(arcs, m, graph)
        digraph = nx.DiGraph()
        digraph.add_nodes_from(range(m))
        digraph.add_edges_from(arcs)
        what = "push-sum" if isinstance(self.arcs, str) else f"push-sum on arcs = {_arcs_text(self.arcs)}"
        check_strongly_connected(digraph, "arcs", what)
        return digraph

    def _from_files(self, m: int, steps: int) -> MixingSchedule:
        base = schedule_from_files(self.files, stochastic=self.stochastic)
        if base.m != m:
            raise ConfigError(f"files: the matrices are {base.m} x {base.m}, the network has {m} "
                              "agents", field="files")
        n = len(base.matrices)
        return MixingSchedule(m=m, kind="rounds", stochastic=self.stochastic, label="files",
                              matrices=tuple(base.matrices[t % n] for t in range(steps)))

    def to_row(self) -> dict[str, object]:
        """The spec as tidy columns (``schedule_sampler``, ``schedule_seed``, ...)."""
        row: dict[str, object] = {"schedule_sampler": self.sampler}
        for key in SAMPLER_KEYS[self.sampler]:
            value = getattr(self, key)
            if key == "files":
                value = ", ".join(value)
            elif key == "arcs" and not isinstance(value, str):
                value = ", ".join(f"{j}->{i}" for j, i in value)
            row[f"schedule_{key}"] = value
        return row


def _arcs_text(arcs: object) -> str:
    """``arcs`` as written in TOML (``[[0, 1], [1, 2]]``), for messages."""
    if isinstance(arcs, (list, tuple)):
        return "[" + ", ".join(_arcs_text(a) for a in arcs) + "]"
    return repr(arcs)


def _checked_arcs(arcs: object) -> str | tuple[tuple[int, int], ...]:
    """``arcs`` checked without a graph: one of :data:`ARC_WORDS`, or a nonempty list of distinct
    ``[sender, receiver]`` pairs of two different agent numbers (as a tuple of tuples).

    Raises
    ------
    ConfigError
        Field ``arcs`` (not a word or a list, empty) or ``arcs[k]`` (not a pair of agents, a self-loop,
        a duplicate), naming the value and what is allowed.
    """
    if isinstance(arcs, str):
        if arcs in ARC_WORDS:
            return arcs
        raise ConfigError(f"arcs: {arcs!r} is not a value of arcs{did_you_mean(arcs, ARC_WORDS)}; "
                          f"{_ARCS_ALLOWED}", field="arcs")
    if not isinstance(arcs, (list, tuple)) or not arcs:
        raise ConfigError(f"arcs must be a string or a list of arcs, got {_arcs_text(arcs)}; "
                          f"{_ARCS_ALLOWED}", field="arcs")
    seen: dict[tuple[int, int], int] = {}
    for k, arc in enumerate(arcs):
        where = f"arcs[{k}]"
        if not isinstance(arc, (list, tuple)) or len(arc) != 2 or not all(
                isinstance(a, (int, np.integer)) and not isinstance(a, bool) and a >= 0 for a in arc):
            raise ConfigError(f"{where} must be a pair [sender, receiver] of agents (integers >= 0), "
                              f"got {_arcs_text(arc)}; {_ARCS_ALLOWED}", field=where)
        pair = (int(arc[0]), int(arc[1]))
        if pair[0] == pair[1]:
            raise ConfigError(f"{where} = {_arcs_text(arc)} is a self-loop (agent {pair[0]} to "
                              f"itself: push-sum keeps its own share without a message); "
                              f"{_ARCS_ALLOWED}", field=where)
        if pair in seen:
            raise ConfigError(f"{where} = {_arcs_text(arc)} repeats arcs[{seen[pair]}]; every arc "
                              f"once; {_ARCS_ALLOWED}", field=where)
        seen[pair] = k
    return tuple(seen)


def _check_arcs_on(arcs: list[tuple[int, int]], m: int, graph: nx.Graph) -> None:
    """Every arc joins two agents of ``0..m-1`` along an edge of ``graph`` (field ``arcs[k]``)."""
    for k, (j, i) in enumerate(arcs):
        where = f"arcs[{k}]"
        if j >= m or i >= m:
            raise ConfigError(f"{where} = [{j}, {i}] names an agent outside 0..{m - 1} (the graph has "
                              f"{m} agents); {_ARCS_ALLOWED}", field=where)
        if not graph.has_edge(j, i):
            raise ConfigError(f"{where} = [{j}, {i}] is not an edge of the graph (messages travel over "
                              f"its links); {_ARCS_ALLOWED}", field=where)


def fixed_schedule(network: Network, steps: int) -> MixingSchedule:
    """``W_t = W`` for ``steps`` rounds: ``"doubly"`` stochastic when the columns of ``W`` sum to
    one too, else ``"row"``."""
    W = sp.csr_array(network.W)
    cols = np.asarray(W.sum(axis=0)).ravel()
    stochastic = "doubly" if np.all(np.abs(cols - 1.0) <= _TOL) else "row"
    return MixingSchedule(m=network.m, kind="rounds", matrices=(W,) * steps, stochastic=stochastic,
                          label="fixed")


def schedule_spec_from_mapping(mapping: object, where: str, *,
                               base_dir: str | Path | None = None) -> ScheduleSpec:
    """A :class:`ScheduleSpec` from a TOML table such as ``{ sampler = "random-matchings", seed = 3 }``.

    Parameters
    ----------
    mapping : mapping
        The table.
    where : str
        Its TOML path (``"network.schedule"``): every error names ``<where>.<key>``.
    base_dir : path, optional
        Folder that relative ``files`` are read from (the scenario file's); default the working
        folder.

    Raises
    ------
    ConfigError
        Not a table; ``sampler`` missing or unknown (did-you-mean); a key the sampler does not read
        or an unknown key (did-you-mean); a bad value (the key, the value and what is allowed).
    """
    if not isinstance(mapping, Mapping):
        raise ConfigError(f"{where} must be a table such as {{ sampler = \"random-matchings\", "
                          f"seed = 3 }}, got {mapping!r}", field=where)
    if "sampler" not in mapping:
        raise ConfigError(f"{where}.sampler is missing; allowed: "
                          f"{', '.join(map(repr, SCHEDULE_SAMPLERS))}", field=f"{where}.sampler")
    sampler = mapping["sampler"]
    with renamed_fields({"sampler": f"{where}.sampler"}):
        check_choice(sampler, "sampler", SCHEDULE_SAMPLERS)
    allowed = ("sampler", *SAMPLER_KEYS[sampler])
    for key in mapping:
        if key in allowed:
            continue
        path = f"{where}.{key}"
        if key in _ALL_KEYS:
            raise ConfigError(f"{path}: sampler {sampler!r} does not read {key!r} (read by "
                              f"{_users(key)}); keys of {sampler!r}: {', '.join(allowed)}", field=path)
        raise ConfigError(f"{path}: unknown key{did_you_mean(str(key), _ALL_KEYS)}; keys of "
                          f"{sampler!r}: {', '.join(allowed)}", field=path)
    values = dict(mapping)
    if "files" in values and isinstance(values["files"], (list, tuple)) and base_dir is not None:
        values["files"] = [str(Path(base_dir) / f) if isinstance(f, str) and f else f
                           for f in values["files"]]
    with renamed_fields({k: f"{where}.{k}" for k in _ALL_KEYS}):
        return ScheduleSpec(**values)

