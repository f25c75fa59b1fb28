"""protocol.kind capepca, capepca-gossip and ddppm-floorfree through a tiny scenario: each
row against the protocol run directly with the repeat seed, the guarantees against closed forms, the
audits against the guarantee, and bad settings naming the field."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np
import pytest

from dpgossip.errors import ConfigError
from dpgossip.protocols.cape.columns import aggregator_audit, gossip_site_guarantee, site_view_audit
from dpgossip.protocols.cape.gossip import CapeGossipParams
from dpgossip.protocols.cape.guarantee import (
    calibrate_cape_noise,
    gaussian_epsilon,
    view_covariance,
)
from dpgossip.protocols.cape.star import CapeParams, run_cape, second_moment_sensitivity
from dpgossip.protocols.ddppm.floorfree import FloorFreeParams, run_floorfree
from dpgossip.protocols.ddppm.protocol import DdppmFloorFree
from dpgossip.protocols.interface import exact_subspace
from dpgossip.protocols.metrics import subspace_distance
from dpgossip.scenario import run_scenario
from dpgossip.scenario.expand import expand
from dpgossip.scenario.problem import build_structure
from dpgossip.scenario.runner import repeat_seed
from dpgossip.topology import make_network
from tests.scenario.helpers import small

KINDS = {"kind": ["capepca", "capepca-gossip", "ddppm-floorfree"], "iterations": 2,
         "consensus_steps": 2, "rank": 1}
SECTIONS = {"cape": {"epsilon": 2.0}, "floorfree": {"epsilon": 2.0, "audit_targets": 1}}


def _rows(folder: Path) -> dict[str, list[dict[str, str]]]:
    with open(folder / "runs.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    return {k: [r for r in rows if r["protocol_kind"] == k] for k in KINDS["kind"]}


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory) -> Path:
    sc = small(protocol=KINDS, repeats=2, **SECTIONS)
    return run_scenario(sc, tmp_path_factory.mktemp("cape_floorfree") / "out", quiet=True)


def _data_network():
    cfg = expand(small(protocol=KINDS, repeats=2, **SECTIONS).config)[0].config
    structure = build_structure(cfg)
    return structure.data, structure.network


def test_capepca_rows_are_run_cape_and_its_aggregator_view(swept: Path):
    rows = _rows(swept)["capepca"]
    data, _ = _data_network()
    sigma = calibrate_cape_noise(2.0, 1e-5, data.m, view="aggregator")
    truth = exact_subspace(data.X, 1, "right")
    for r in rows:
        res = run_cape(data, CapeParams(k=1, noise_multiplier=sigma), repeat_seed(5, int(r["repeat"])))
        # oracle: the top eigenvector of the aggregate, by a dense eigendecomposition
        w, V = np.linalg.eigh(res.aggregate)
        assert float(r["error"]) == pytest.approx(subspace_distance(truth, V[:, [-1]]), abs=1e-10)
        # the joint view: mu^2 = (2S/(S+1)) (Delta/tau)^2 (closed form), calibrated to the budget
        mu = math.sqrt(2 * data.m / (data.m + 1)) / sigma
        assert float(r["guaranteed_epsilon"]) == pytest.approx(gaussian_epsilon(mu, 1e-5), rel=1e-9)
        assert float(r["guaranteed_epsilon"]) == pytest.approx(2.0, rel=1e-6)
        assert float(r["audited_epsilon"]) == pytest.approx(float(r["guaranteed_epsilon"]), rel=1e-9)
        # Imtiaz and Sarwate's per-site claim and one site alone are both below the joint view
        assert float(r["site_epsilon"]) < 2.0 and float(r["claimed_epsilon"]) < 2.0
        assert r["audit_exceeds_guarantee"] == "False"


def test_capepca_gossip_rows_guarantee_the_site_view_and_audit_neighbours_beyond(swept: Path):
    for r in _rows(swept)["capepca-gossip"]:
        # on a ring with the matched noise a site's first message has std tau: the budget exactly
        assert float(r["guaranteed_epsilon"]) == pytest.approx(2.0, rel=1e-6)
        assert float(r["audited_epsilon"]) == pytest.approx(2.0, rel=1e-6)
        assert float(r["audited_epsilon_beyond"]) > float(r["guaranteed_epsilon"])
        assert r["beyond_exceeds_guarantee"] == "True"
        assert float(r["max_agent_error"]) >= float(r["error"]) - 1e-12


def test_floorfree_rows_are_run_floorfree_with_audit_below_the_gdp_guarantee(swept: Path):
    rows = _rows(swept)["ddppm-floorfree"]
    data, network = _data_network()
    truth = exact_subspace(data.X, 1, "left")
    for r in rows:
        s = float(r["noise_multiplier"])
        assert float(r["gdp_epsilon"]) == pytest.approx(2.0, rel=1e-6)   # exact GDP at the budget
        assert float(r["guaranteed_epsilon"]) == pytest.approx(2.0, rel=1e-3)   # PLD, discretised
        res = run_floorfree(data, network, FloorFreeParams(iterations=2, consensus_steps=2,
                                                           noise_multiplier=s),
                            repeat_seed(5, int(r["repeat"])))
        assert float(r["error"]) == subspace_distance(truth, res.Q)
        assert 0 < float(r["audited_epsilon"]) <= float(r["guaranteed_epsilon"])


def test_the_aggregator_audit_matches_the_closed_form_on_unequal_sites():
    sizes, params = (30, 50, 40), CapeParams(k=1, noise_multiplier=1.7)
    tau = params.noise_std(30)
    # oracle: Mahalanobis norm of the shift e_s (x) Delta(N_s) against the joint covariance, by pinv
    C = view_covariance(3, tau, "aggregator")
    mus = [second_moment_sensitivity(n) * math.sqrt(np.linalg.pinv(C)[s, s]) for s, n in enumerate(sizes)]
    assert aggregator_audit(sizes, params, 1e-5, "row-replacement") == pytest.approx(
        gaussian_epsilon(max(mus), 1e-5), rel=1e-9)
    assert max(mus) == pytest.approx(math.sqrt(2 * 3 / 4) * second_moment_sensitivity(30) / tau)


def test_the_gossip_site_audit_matches_the_closed_form_on_a_grid():
    net = make_network("grid", agents=9)   # degrees 2, 3 and 4
    params = CapeGossipParams(k=1, consensus_steps=2, edge_multiplier=0.8, own_multiplier=0.6)
    sizes = (20,) * 9
    assert site_view_audit(net, params, sizes, 1e-5) == pytest.approx(
        gossip_site_guarantee(net, params, sizes, 1e-5), rel=1e-9)
    # the worst site has the fewest edges: std^2 = 2 tau_e^2 + tau_g^2
    tau_e, tau_g = params.stds(20)
    mu = second_moment_sensitivity(20) / math.sqrt(2 * tau_e**2 + tau_g**2)
    assert site_view_audit(net, params, sizes, 1e-5) == pytest.approx(gaussian_epsilon(mu, 1e-5))


def test_floorfree_refuses_rank_above_one():
    with pytest.raises(ConfigError) as info:
        DdppmFloorFree(FloorFreeParams(iterations=1, consensus_steps=1, noise_multiplier=1.0), rank=2)
    assert info.value.field == "rank"


def test_a_swept_rank_above_one_is_refused_for_floorfree_at_its_point(tmp_path: Path):
    sc = small(protocol={"kind": ["ppm", "ddppm-floorfree"], "rank": [2, 2], "consensus_steps": 1},
               ppm={"noise_multiplier": 1.0}, floorfree={"noise_multiplier": 1.0},
               sweep={"zip": [["protocol.kind", "protocol.rank"]]})
    with pytest.raises(ConfigError) as info:
        run_scenario(sc, tmp_path / "out", quiet=True)
    assert "protocol.rank: must be 1" in str(info.value)


@pytest.mark.parametrize(("sections", "field"), [
    ({"protocol": {"kind": "capepca"}}, "cape"),
    ({"protocol": {"kind": "ddppm-floorfree", "rank": 1}}, "floorfree"),
    ({"cape": {"epsilon": 1.0}}, "cape"),
    ({"protocol": {"kind": "ppm"}, "ppm": {"epsilon": 1.0}, "floorfree": {"epsilon": 1.0}}, "floorfree"),
    ({"protocol": {"kind": "capepca"}, "cape": {}}, "cape.epsilon"),
    ({"protocol": {"kind": "capepca"}, "cape": {"epsilon": 1.0, "noise_multiplier": 2.0}},
     "cape.epsilon"),
    ({"protocol": {"kind": "capepca"}, "cape": {"epsilon": 1.0, "sensitivity": "l1"}},
     "cape.sensitivity"),
    ({"protocol": {"kind": "capepca"}, "cape": {"epsilon": -1.0}}, "cape.epsilon"),
    ({"protocol": {"kind": "capepca"}, "cape": {"epsilon": 1.0, "tau": 1.0}}, "cape.tau"),
    ({"protocol": {"kind": "ddppm-floorfree", "rank": 2}, "floorfree": {"epsilon": 1.0}},
     "protocol.rank"),
    ({"protocol": {"kind": "ddppm-floorfree", "rank": 1},
      "floorfree": {"epsilon": 1.0, "adjacency": "element"}}, "floorfree.adjacency"),
    ({"protocol": {"kind": "ddppm-floorfree", "rank": 1},
      "floorfree": {"noise_multiplier": 1.0, "delta": 2.0}}, "floorfree.delta"),
])
def test_bad_cape_floorfree_settings_name_the_field(sections: dict, field: str):
    with pytest.raises(ConfigError) as info:
        small(**sections)
    assert field in str(info.value)
