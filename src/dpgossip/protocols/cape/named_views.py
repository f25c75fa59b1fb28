"""Named views of capepca-gossip audited in every run: the key ``[cape] views`` (docs/cape-gossip.md).

Besides the worst neighbour (``audited_epsilon_beyond``, :mod:`dpgossip.protocols.cape.columns`), a
scenario may name views of :func:`~dpgossip.protocols.cape.gossip_audit.audit_cape_gossip` to audit at
every ``capepca-gossip`` point, one inline table per view under a label::

    [cape.views]
    coalition_0_2 = { view = "coalition", agents = [0, 2] }
    edge_0_1 = { view = "eavesdropper", edges = [[0, 1]] }
    every_edge = { view = "eavesdropper", edges = "all" }

``view`` is ``neighbour`` (``agents``: one site), ``coalition`` (``agents``: its sites) or
``eavesdropper`` (``edges``: a list of ``[i, j]`` edges of the network, or ``"all"``). Each view adds
the column ``audited_epsilon_<label>`` to the run's row: the exact epsilon at ``[cape] delta`` of the
worst site outside the view (every site the view holds messages of; ``0`` when it holds none), under
the point's ``sensitivity`` and schedule. The labels are lower-case letters, digits and ``_``. The sites
and edges are checked against the network when the point runs (``ConfigError`` naming ``agents`` or
``edges``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from dpgossip.errors import ConfigError
from dpgossip.protocols.cape.gossip import CapeGossipParams
from dpgossip.protocols.cape.gossip_audit import CAPE_GOSSIP_VIEWS, audit_cape_gossip
from dpgossip.topology.network import Network
from dpgossip.topology.schedules import MixingSchedule

__all__ = ["check_views_table", "named_view_epsilons"]

_LABEL = re.compile(r"[a-z0-9_]+")


def _sites(path: str, value: Any) -> list[int]:
    if not isinstance(value, list) or not value or \
            not all(isinstance(a, int) and not isinstance(a, bool) and a >= 0 for a in value):
        raise ConfigError(f"{path} must be a non-empty list of site indices >= 0, got {value!r}",
                          field=path)
    return list(value)


def _edges(path: str, value: Any) -> str | list[list[int]]:
    if value == "all":
        return value
    if not isinstance(value, list) or not value or not all(
            isinstance(e, list) and len(e) == 2 and all(isinstance(v, int) and not isinstance(v, bool)
                                                         and v >= 0 for v in e) for e in value):
        raise ConfigError(f"{path} must be \"all\" or a non-empty list of edges [i, j], got {value!r}",
                          field=path)
    return [list(e) for e in value]


def check_views_table(path: str, value: Any) -> dict[str, dict[str, Any]]:
    """``[cape] views`` checked (module docstring): a table of labelled views.

    Parameters
    ----------
    path : str
        The key's path in the scenario (``cape.views``), named by every error.
    value : Any
        The table as parsed.

    Returns
    -------
    dict
        ``{label: {"view": ..., "agents": [...]} or {"view": "eavesdropper", "edges": ...}}``.

    Raises
    ------
    ConfigError
        A label that is not lower-case letters, digits and ``_``, an unknown view, a missing or
        unexpected ``agents`` or ``edges``, or a malformed list.
    """
    if not isinstance(value, Mapping) or not value:
        raise ConfigError(f"{path} must be a non-empty table of labelled views, got {value!r}", field=path)
    out: dict[str, dict[str, Any]] = {}
    for label, spec in value.items():
        where = f"{path}.{label}"
        if not _LABEL.fullmatch(label):
            raise ConfigError(f"{where}: a label is lower-case letters, digits and _", field=where)
        if not isinstance(spec, Mapping) or spec.get("view") not in CAPE_GOSSIP_VIEWS:
            raise ConfigError(f"{where} must be a table with view = one of {', '.join(CAPE_GOSSIP_VIEWS)}, "
                              f"got {spec!r}", field=where)
        key = "edges" if spec["view"] == "eavesdropper" else "agents"
        if set(spec) != {"view", key}:
            raise ConfigError(f"{where}: view {spec['view']!r} takes exactly the keys view and {key}, got "
                              f"{sorted(spec)}", field=where)
        check = _edges if key == "edges" else _sites
        out[label] = {"view": spec["view"], key: check(f"{where}.{key}", spec[key])}
    return out


def named_view_epsilons(network: Network, params: CapeGossipParams, sizes: tuple[int, ...],
                        views: Mapping[str, Mapping[str, Any]], *, delta: float, adjacency: str,
                        schedule: MixingSchedule | None = None) -> dict[str, float]:
    """The columns ``audited_epsilon_<label>`` of the named views (module docstring).

    Parameters
    ----------
    network, params, sizes
        The point's network, capepca-gossip parameters and the sites' row counts.
    views : Mapping
        The checked ``[cape] views`` (:func:`check_views_table`).
    delta : float
        The delta of every epsilon.
    adjacency : str
        The sensitivity protected (``[cape] sensitivity``).
    schedule : MixingSchedule or None
        The point's rounds, if any.

    Returns
    -------
    dict
        ``{"audited_epsilon_<label>": worst site's exact epsilon}``, in the table's order.
    """
    out = {}
    for label, spec in views.items():
        edges = spec.get("edges", ())
        if edges == "all":
            edges = [tuple(e) for e in network.graph.edges]
        pairs = audit_cape_gossip(network, params, sizes, view=spec["view"], agents=spec.get("agents", ()),
                                  edges=edges, delta=delta, adjacency=adjacency, schedule=schedule)
        out[f"audited_epsilon_{label}"] = max((p.epsilon for p in pairs), default=0.0)
    return out
