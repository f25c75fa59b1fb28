"""Memory estimates and the limit they are checked against (dpgossip.resources, scenario.sizes)."""

from pathlib import Path

import pytest

from dpgossip.errors import ConfigError
from dpgossip.resources import Need, check_needs, memory_limit, size_text
from dpgossip.scenario import load_scenario
from dpgossip.scenario.dynamic_gossip_config import is_dynamic_gossip_file
from dpgossip.scenario.network_dp_config import is_network_dp_file
from dpgossip.scenario.sizes import check_point_sizes, check_sweep_size, sweep_point_count

SCENARIOS = sorted(p for p in (Path(__file__).resolve().parents[2] / "scenarios").glob("*.toml")
                   if not is_network_dp_file(p)  # network-DP: tests/scenario/test_network_dp.py
                   and not is_dynamic_gossip_file(p))  # tests/scenario/test_dynamic_gossip.py


@pytest.mark.parametrize("text, expected", [("8GiB", 8 * 2**30), ("500MB", 500 * 10**6),
                                            ("1048576", 2**20), (" 1.5 gib ", int(1.5 * 2**30))])
def test_limit_from_the_environment(monkeypatch, text, expected):
    monkeypatch.setenv("DPGOSSIP_MEMORY_LIMIT", text)
    assert memory_limit() == (expected, "the memory limit DPGOSSIP_MEMORY_LIMIT")


def test_limit_off_default_and_invalid(monkeypatch):
    monkeypatch.setenv("DPGOSSIP_MEMORY_LIMIT", "none")
    assert memory_limit() is None
    check_needs([Need("anything", 10**30)])  # no limit: no error
    monkeypatch.delenv("DPGOSSIP_MEMORY_LIMIT")
    limit = memory_limit()
    assert limit is not None and limit[0] > 2**20 and limit[1] == "this machine's available memory"
    monkeypatch.setenv("DPGOSSIP_MEMORY_LIMIT", "lots")
    with pytest.raises(ConfigError, match="DPGOSSIP_MEMORY_LIMIT must be a size such as 8GiB"):
        memory_limit()


def test_message_names_the_largest_need_and_the_total(monkeypatch):
    monkeypatch.setenv("DPGOSSIP_MEMORY_LIMIT", "1GiB")
    check_needs([Need("a", 2**29), Need("b", 2**29)])  # exactly the limit: fits
    with pytest.raises(ConfigError) as err:
        check_needs([Need("the big one", 3 * 2**30), Need("the small one", 2**30)], advice="shrink")
    assert str(err.value) == ("the big one (3 GiB; about 4 GiB in all), more than the memory limit "
                              "DPGOSSIP_MEMORY_LIMIT (1 GiB); shrink")
    assert size_text(80 * 10**9) == "74.5 GiB" and size_text(512) == "512 bytes"


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
def test_shipped_scenarios_pass_the_size_checks(monkeypatch, path):
    monkeypatch.setenv("DPGOSSIP_MEMORY_LIMIT", "512MiB")
    sc = load_scenario(path)
    check_sweep_size(sc.config)
    points = sc.points()
    assert sweep_point_count(sc.config)[0] == len(points)
    check_point_sizes(points, sc.base, audit=True)


def test_the_pair_audit_s_view_factor_counts_only_for_a_kind_audited_pair_by_pair(monkeypatch):
    """10,000 rows: the dense view factor of the pair audit (about 3 GiB) refuses a ddppm point under
    ``audit``; a capepca point, audited by its own exact guarantee, builds no such factor and passes."""
    from dpgossip.scenario.sizes import point_needs

    monkeypatch.setenv("DPGOSSIP_MEMORY_LIMIT", "512MiB")
    sc = load_scenario(SCENARIOS[0].parent / "cape-classical-calibration.toml")
    point = next(p for p in sc.points() if p.config["network"]["agents"] == 100)
    factor = "the privacy audit"
    assert not any(n.what.startswith(factor) for n in point_needs(point.config, audit=True)[0])
    ddppm = {**point.config, "protocol": {**point.config["protocol"], "kind": "ddppm"}}
    assert any(n.what.startswith(factor) for n in point_needs(ddppm, audit=True)[0])
