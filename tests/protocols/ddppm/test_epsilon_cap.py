"""The epsilon cap of the pair audit: a view whose found neighbour exceeds the cap stops searching and
reports "at least the cap"; the neighbour it reports really exceeds the cap (checked on a pair rebuilt
by the dense reference path), and below the cap the audit is the uncapped one, bit for bit."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpgossip.data import load_dataset
from dpgossip.data.partition import PartitionedData
from dpgossip.errors import ConfigError
from dpgossip.protocols.ddppm.audit import (
    EPSILON_CAP,
    AuditOptions,
    audit_pairs,
    component_model,
    view_pair,
)
from dpgossip.protocols.ddppm.params import NoiseSchedule, resolve_params
from dpgossip.protocols.ddppm.views import make_view
from dpgossip.topology import make_network

DELTA = 1e-5


def _dense_pair(data, net, params, o: int, j: int, nb):
    """The observer view's pair for a neighbour, by the dense reference path (not the searched
    auditor)."""
    X1 = data.X.copy()
    X1[nb.row] = nb.x_new
    return view_pair(component_model(data, net, params), component_model(data, net, params, X=X1),
                     make_view("observer", m=data.m, agents=(o,)), net)


def _small(scale: float):
    rng = np.random.default_rng(3)
    X = rng.standard_normal((12, 3)) * np.array([1.0, 0.6, 0.3])
    X /= np.max(np.linalg.norm(X, axis=1))
    data = PartitionedData(X=X, sizes=(3,) * 4)
    net = make_network("paper-ring4")
    params = resolve_params(data, net, iterations=2, consensus_steps=1,
                            noise=NoiseSchedule(kind="constant", scale=scale))
    return data, net, params


def test_quickstart_pairs_stop_at_the_cap_with_a_neighbour_that_exceeds_it():
    """The quickstart's noise: no privacy. The pair reports the cap, flagged, and its neighbour's exact
    delta at the cap (dense path) is above delta, so its exact epsilon is above the cap; the certified
    upper bound is above it too."""
    data = load_dataset("wine", agents=4)
    net = make_network("paper-ring4")
    params = resolve_params(data, net, iterations=10, consensus_steps=5,
                            noise=NoiseSchedule(kind="geometric", scale=0.05))
    audit = audit_pairs(data, net, params, delta=DELTA, methods=("exact",),
                        options=AuditOptions(targets=[0], observers=[1]))
    r = audit.results[(1, 0)]
    assert r.capped and r.epsilon["exact"] == EPSILON_CAP
    assert r.evidence is not None and r.evidence.to_row()["stopped_at_cap"] is True
    pair = _dense_pair(data, net, params, 1, 0, r.neighbour)
    assert pair.delta(EPSILON_CAP, "exact") > DELTA
    assert audit.upper[0].epsilon >= EPSILON_CAP


def test_a_cap_below_the_worst_value_is_reported_as_at_least_the_cap():
    """Ranked by the RDP conversion (fast): the cap applies to the ranking method."""
    data, net, params = _small(0.3)
    free = audit_pairs(data, net, params, delta=DELTA, methods=("rdp",), search="quick",
                       epsilon_cap=None, options=AuditOptions(targets=[0], observers=[1]))
    value = free.results[(1, 0)].epsilon["rdp"]
    assert math.isfinite(value) and not free.results[(1, 0)].capped
    cap = value / 3
    capped = audit_pairs(data, net, params, delta=DELTA, methods=("rdp",), search="quick",
                         epsilon_cap=cap, options=AuditOptions(targets=[0], observers=[1]))
    r = capped.results[(1, 0)]
    assert r.capped and r.epsilon["rdp"] == cap
    assert _dense_pair(data, net, params, 1, 0, r.neighbour).epsilon(DELTA, "rdp") > cap


def test_a_cap_that_no_view_reaches_leaves_the_audit_as_it_was_bit_for_bit():
    data, net, params = _small(2.0)
    opts = AuditOptions(targets=[0])
    free = audit_pairs(data, net, params, delta=DELTA, methods=("rdp",), search="quick",
                       epsilon_cap=None, options=opts)
    cap = 2 * max(r.epsilon["rdp"] for r in free.results.values())
    capped = audit_pairs(data, net, params, delta=DELTA, methods=("rdp",), search="quick",
                         epsilon_cap=cap, options=opts)
    assert free.results.keys() == capped.results.keys()
    for key, r in free.results.items():
        c = capped.results[key]
        assert not c.capped
        assert c.epsilon == r.epsilon and c.delta == r.delta
        assert np.array_equal(c.neighbour.x_new, r.neighbour.x_new)


def test_below_the_cap_a_view_keeps_its_uncapped_value():
    """Some views of these targets leak far above the cap (the first message's floor: no noise level
    removes it), others far below: the capped views report the cap; the others keep the uncapped
    audit's neighbour and value (to 1e-9 relative: the range finder's random draws follow the views
    still searched, which moves the last bits)."""
    data, net, params = _small(2.0)
    opts = AuditOptions(targets=[0, 2])
    free = audit_pairs(data, net, params, delta=DELTA, methods=("rdp",), search="quick",
                       epsilon_cap=None, options=opts)
    capped = audit_pairs(data, net, params, delta=DELTA, methods=("rdp",), search="quick",
                         options=opts)
    assert free.results.keys() == capped.results.keys()
    below = [k for k, r in free.results.items() if r.epsilon["rdp"] < EPSILON_CAP]
    assert 0 < len(below) < len(free.results)
    for key, r in free.results.items():
        c = capped.results[key]
        if key in below:
            assert not c.capped and c.neighbour.row == r.neighbour.row
            assert c.epsilon["rdp"] == pytest.approx(r.epsilon["rdp"], rel=1e-9)
        else:
            assert c.capped and c.epsilon["rdp"] == EPSILON_CAP


@pytest.mark.parametrize("bad", [0, -1.0, math.inf, math.nan, "1000", True])
def test_a_bad_cap_is_refused_naming_it(bad):
    data, net, params = _small(1.0)
    with pytest.raises(ConfigError, match="epsilon_cap"):
        audit_pairs(data, net, params, epsilon_cap=bad)


def test_an_infinite_divergence_is_reported_infinite_not_capped():
    """The tiny ring of the search's infinite-divergence test (target 2's ring neighbours see its first
    message with a covariance of another support): with the cap those pairs still report inf, the exact
    value, and are not flagged capped."""
    from tests.protocols.ddppm.test_search import tiny_ring_with_infinite_pairs

    pb = tiny_ring_with_infinite_pairs()
    audit = audit_pairs(pb.data, pb.network, pb.params, delta=DELTA, epsilons=(50.0,), search=1,
                        seed=1, methods=("rdp",), options=AuditOptions(targets=[2]))
    infinite = {k for k, r in audit.results.items() if math.isinf(r.epsilon["rdp"])}
    assert infinite == {(1, 2), (3, 2)}
    assert not any(audit.results[k].capped for k in infinite)
