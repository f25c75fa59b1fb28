"""Seeded schedules for the dynamic-leakage tests, drawn by the package samplers
(:mod:`dpgossip.topology.schedule_samplers`) and turned into mixing matrices by
:func:`~dpgossip.protocols.gossip.schedule_mixture.averaging_steps`."""

from __future__ import annotations

import networkx as nx

from dpgossip.protocols.gossip.schedule_mixture import averaging_steps
from dpgossip.topology import schedule_samplers


def pairwise_ticks(graph: nx.Graph, ticks: int, seed: int) -> list:
    """Randomized pairwise gossip (Boyd et al.): at each tick a uniformly chosen agent averages with a
    uniformly chosen neighbour."""
    P = schedule_samplers.neighbour_probabilities(graph)
    return list(averaging_steps(schedule_samplers.pairwise_gossip(P, seed, ticks=ticks)))


def random_matchings(graph: nx.Graph, steps: int, seed: int) -> list:
    """Each step a greedy random maximal matching: edges in random order, kept when both ends are free."""
    return list(averaging_steps(schedule_samplers.random_matchings(steps, seed, graph=graph)))
