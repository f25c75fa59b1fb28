"""docs/network-dp.md: the worked numbers of the page's derivations, computed here from the library's
public functions (this test is their oracle; no scenario result among them).

* Section 2: on the 8 x 8 grid the literal message matrix of ``gossip-average`` underestimates
  ``mu^2`` (the Krylov basis does not);
* Section 3: the Erdos-Renyi example of per-round inputs (all-equal shift, exact box supremum,
  absolute-value bound, dual certificate) and the 5-cycle Laplacian (box against planar shifts);
* Section 4: the hypercube's closed form ``min(d, C(d, h)) / C(d, h)`` at two points, and the authors'
  per-message sum at the antipode of the 2,048-node hypercube (their rounds ``t = 1..T`` and this
  project's ``t = 0..T-1``).

About five seconds, the 2,048-node hypercube included.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from dpgossip.privacy.linear_audit import box_maximum, dual_certificate, whiten
from dpgossip.protocols.gossip.audit import audit_gossip
from dpgossip.protocols.gossip.bounds import muffliato_per_message
from dpgossip.protocols.gossip.linear import LinearGossip, observe
from dpgossip.topology import Network, build_graph, make_network, mixing_matrix

ROOT = Path(__file__).resolve().parents[1]


def _page() -> str:
    return " ".join((ROOT / "docs" / "network-dp.md").read_text(encoding="utf-8").split())


def test_the_literal_message_matrix_underestimates_on_the_grid():
    """Section 2: observer 0 of the 8 x 8 grid; at T = 20 the literal matrix's mu^2 falls below the
    Krylov basis's, and at T = 40 it reports less than 1 at the far corner, whose input the observer
    holds (mu^2 = 1 by the Krylov basis)."""
    network = make_network("grid", agents=64, params={"rows": 8, "cols": 8})
    spec = LinearGossip(rounds=20, sigma=1.0)
    krylov = {r.target: r.mu ** 2 for r in audit_gossip(network, spec, 0)}
    literal = {r.target: r.mu ** 2 for r in audit_gossip(network, spec, 0, basis="messages")}
    under = max(krylov[u] - literal[u] for u in krylov)
    assert under > 0
    far = LinearGossip(rounds=40, sigma=1.0)
    corner = {r.target: r.mu ** 2 for r in audit_gossip(network, far, 0, basis="messages")}[63]
    exact = {r.target: r.mu ** 2 for r in audit_gossip(network, far, 0)}[63]
    assert exact == pytest.approx(1.0, abs=1e-9) and corner < exact
    assert (f"the literal matrix gives `mu^2` too small by up to `{under:.2f}`, and at `T = 40` it "
            f"reports `{corner:.2f}` at the far corner") in _page()


def test_the_erdos_renyi_example_of_per_round_inputs():
    """Section 3: observer 0 and its neighbour 9 on make_network("erdos_renyi", 100, seed=42),
    gossip-noisy with per-round inputs, T = 10: all-equal shift < exact box supremum < dual certificate
    (T Delta^2 / sigma^2 = 10) < absolute-value bound."""
    network = make_network("erdos_renyi", agents=100, seed=42)
    spec = LinearGossip(protocol="gossip-noisy", rounds=10, sigma=1.0, inputs="per-round")
    view = observe(network, spec, 0)
    cu = whiten(view.J, view.B).C[:, view.columns_of[9]]
    M = cu.T @ cu
    box = box_maximum(M)
    assert box.exact
    equal, absolute = float(np.ones(10) @ M @ np.ones(10)), float(np.abs(M).sum())
    dual = dual_certificate(M)
    assert equal < box.lower <= dual + 1e-9 < absolute
    assert (f"the all-equal shift gives `mu^2 = {equal:.2f}`, the exact supremum over the box "
            f"({2 ** 10:,} vertices up to sign) is `{box.lower:.2f}`, the absolute-value bound "
            f"`{absolute:.2f}` and the dual certificate `{dual:.2f}`") in _page()


def test_the_five_cycle_laplacian_box_against_planar_shifts():
    """Section 3: on the 5-cycle Laplacian the scalar box maximum is below what unit planar shifts
    reach (rank-2 X of trace-diagonal 1)."""
    M = 2 * np.eye(5) - np.roll(np.eye(5), 1, axis=1) - np.roll(np.eye(5), -1, axis=1)
    angles = 4 * np.pi * np.arange(5) / 5
    S = np.stack([np.cos(angles), np.sin(angles)], axis=1)
    planar, box = float(np.trace(M @ S @ S.T)), box_maximum(M).lower
    assert box < planar
    assert f"on the 5-cycle Laplacian the box gives {box:g} and planar shifts {planar:.2f}" in _page()


def test_the_hypercube_closed_form_at_two_points():
    """Section 4: min(d, C(d, h)) / C(d, h) at h = 2 for d = 8 and at h = 5 for d = 11."""
    a, b = math.comb(8, 2), math.comb(11, 5)
    assert (f"`8 / {a} = {8 / a:.3g}` at `h = 2` for `d = 8`, `11 / {b} = {11 / b:.3g}` at `h = 5` "
            f"for `d = 11`") in _page()


def _hypercube(d: int) -> Network:
    graph = build_graph("hypercube", 2 ** d)  # as make_network, without its dense spectral validation
    return Network(graph=graph, W=mixing_matrix(graph, "metropolis"), name="hypercube",
                   mixing="metropolis")


def test_the_authors_sum_at_the_antipode_of_the_2048_node_hypercube():
    """Section 4: the authors' per-message sum at the antipode (d = 11, T = 19), far below the exact
    value 1 (the antipode learns its input up to its own noise), in their rounds t = 1..T and in this
    project's t = 0..T-1."""
    network = _hypercube(11)
    spec = LinearGossip(rounds=19, sigma=1.0)
    theirs = float(muffliato_per_message(network, spec, 2047, order=2.0, rounds=range(1, 20))[0])
    ours = float(muffliato_per_message(network, spec, 2047, order=2.0)[0])
    assert ours < theirs < 1
    assert (f"`{theirs:.3g}` for `d = 11`, `T = 19` (reproduced to eight digits by the tests), "
            f"{round(1 / theirs)} times below the exact value; with this project's rounds `t = 0..T-1` it "
            f"is `{ours:.3g}`.") in _page()
