"""Shared fixtures: small networks and data built without the package's builders (independent oracles)."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from hypothesis import settings

from dpgossip.data.partition import PartitionedData
from dpgossip.topology.network import Network

# The property tests draw their examples from a fixed seed, so that the test command passes or fails
# the same way on every run (a random draw that finds a new corner is a bug to fix, never a coin flip
# in CI). Fresh random examples: `python -m pytest --hypothesis-profile=explore`.
settings.register_profile("deterministic", derandomize=True, database=None)
settings.register_profile("explore", max_examples=200)
settings.load_profile("deterministic")


PAPER_W = np.array(
    [[0.5, 0.25, 0, 0.25], [0.25, 0.5, 0.25, 0], [0, 0.25, 0.5, 0.25], [0.25, 0, 0.25, 0.5]]
)


def metropolis(graph: nx.Graph) -> np.ndarray:
    """Metropolis-Hastings weights written out directly: W_ij = 1 / (1 + max(d_i, d_j))."""
    m = graph.number_of_nodes()
    W = np.zeros((m, m))
    for i, j in graph.edges():
        W[i, j] = W[j, i] = 1.0 / (1 + max(graph.degree(i), graph.degree(j)))
    W[np.diag_indices(m)] = 1.0 - W.sum(axis=1)
    return W


def net_from_graph(graph: nx.Graph, name: str = "test") -> Network:
    return Network(graph=graph, W=metropolis(graph), name=name, mixing="metropolis")


@pytest.fixture
def paper_ring() -> Network:
    return Network(graph=nx.cycle_graph(4), W=PAPER_W, name="paper-ring4", mixing="explicit")


def spiked_data(n: int, d: int, spectrum: list[float], m: int, seed: int = 0) -> PartitionedData:
    """Data with prescribed singular values, rows scaled into the unit ball, equal partition."""
    rng = np.random.default_rng(seed)
    k = len(spectrum)
    U, _ = np.linalg.qr(rng.standard_normal((n, k)))
    V, _ = np.linalg.qr(rng.standard_normal((d, k)))
    X = U @ np.diag(spectrum) @ V.T
    X /= np.linalg.norm(X, axis=1).max()
    base, extra = divmod(n, m)
    sizes = tuple(base + (i < extra) for i in range(m))
    return PartitionedData(X=X, sizes=sizes, name="spiked")


@pytest.fixture
def small_data() -> PartitionedData:
    return spiked_data(40, 6, [5, 3, 2, 1, 0.5, 0.2], 4)


SMALLEST_SEARCH = dict(levels=1, rows=1, random=0, steps=1, starts=1, exact=1)
"""The smallest search: one level, one row, one start, one ascent step, one exact value per view."""


@pytest.fixture(scope="module")
def smallest_search():
    """Within a test of the pipeline (scenarios, commands, resume, progress), not of the search
    (tests/protocols/ddppm/test_search.py and test_adversarial_searches.py test that), the ``quick``
    effort is shrunk to the smallest search, in this process. Its stages, evidence and outputs are
    those of any effort; only its cost is smaller."""
    from dpgossip.protocols.ddppm.search import SearchSettings

    of = SearchSettings.of.__func__
    tiny = SearchSettings(name="quick", **SMALLEST_SEARCH)
    with pytest.MonkeyPatch.context() as patch:  # module scope: module fixtures see it too
        patch.setattr(SearchSettings, "of",
                      classmethod(lambda cls, s: tiny if s == "quick" else of(cls, s)))
        yield
