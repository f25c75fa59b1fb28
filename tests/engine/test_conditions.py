"""NetworkConditions: parsing of the [engine] table and its error messages."""

from __future__ import annotations

import math

import pytest

from dpgossip.engine import LatencySpec, NetworkConditions, Straggler
from dpgossip.errors import ConfigError


def test_defaults_are_ideal():
    c = NetworkConditions()
    assert c.is_ideal and c.latency.kind == "constant" and c.latency.value == 0.0
    assert math.isinf(c.bandwidth) and c.loss == 0.0 and c.retransmit and c.on_crash == "stop"
    assert NetworkConditions.from_mapping(None) == c == NetworkConditions.from_mapping({})


def test_full_mapping():
    c = NetworkConditions.from_mapping({
        "latency": {"kind": "uniform", "low": 0.001, "high": 0.002}, "bandwidth": 1e6,
        "loss": 0.1, "retransmit": False, "retransmit_timeout": 0.3, "max_attempts": 5,
        "compute_time": 1e-3, "stragglers": {"3": 2.5, 4: {"delay": 0.1}},
        "crashes": {"2": 0.5}, "on_crash": "reweight", "failure_timeout": 2.0,
        "links": [{"edge": [3, 1], "latency": 0.5, "loss": 0.0, "bandwidth": math.inf}]})
    assert c.latency == LatencySpec(kind="uniform", low=0.001, high=0.002)
    assert c.stragglers == {3: Straggler(factor=2.5), 4: Straggler(delay=0.1)}
    assert c.crashes == {2: 0.5} and c.links[0].edge == (1, 3)
    assert c.links[0].latency.value == 0.5 and not c.is_ideal
    assert c.to_row()["latency"] == "uniform" and c.to_row()["crashes"] == 1
    assert NetworkConditions.from_mapping({"latency": 0.25}).latency.expected == 0.25
    assert LatencySpec(kind="lognormal", mu=0.0, sigma=0.0).is_constant


@pytest.mark.parametrize("mapping, match", [
    ({"latency": -0.1}, r"^latency must be a number >= 0, got -0.1"),
    ({"latency": {"kind": "constant", "value": -1}}, r"^latency.value .* got -1"),
    ({"latency": {"kind": "uniform", "low": 0.2, "high": 0.1}},
     r"low <= high, got low = 0.2, high = 0.1"),
    ({"latency": {"kind": "exponential", "mean": 0}}, r"^latency.mean must be a number > 0"),
    ({"latency": {"kind": "exponentail", "mean": 1}},
     r"^latency.kind must be one of .* got 'exponentail' \(did you mean 'exponential'\?\)"),
    ({"latency": {"kind": "uniform", "low": 0.1}}, r"^latency.high is required"),
    ({"latency": {"kind": "exponential", "mean": 1, "sigma": 2}},
     r"^latency.sigma is not a parameter of latency kind 'exponential'"),
    ({"latency": {"kind": "uniform", "lo": 0, "high": 1}},
     r"^latency: unknown key 'lo' \(did you mean 'low'\?\)"),
    ({"loss": 1.0}, r"^loss must be a probability in \[0, 1\), got 1.0"),
    ({"loss": -0.2}, r"^loss must be a number >= 0, got -0.2"),
    ({"bandwidth": 0}, r"^bandwidth must be a number > 0, got 0"),
    ({"retransmit": "yes"}, r"^retransmit must be true or false, got 'yes'"),
    ({"retransmit_timeout": 0}, r"^retransmit_timeout must be a number > 0, got 0"),
    ({"max_attempts": 0}, r"^max_attempts must be an integer >= 1, got 0"),
    ({"crashes": {"x": 1.0}}, r"^crashes: agent ids must be integers >= 0, got 'x'"),
    ({"crashes": {1: -1.0}}, r"^crashes.1 must be a number >= 0, got -1.0"),
    ({"crashes": [1]}, r"^crashes must be a table agent -> crash time"),
    ({"stragglers": {1: 3.0}}, r"^stragglers.1: a slowdown factor \(3\) multiplies "
                               r"compute_time = 0; set compute_time > 0"),
    ({"stragglers": {1: {"factr": 2}}}, r"^stragglers.1: unknown key 'factr' "
                                        r"\(did you mean 'factor'\?\)"),
    ({"stragglers": {1: -2.0}, "compute_time": 1.0}, r"^stragglers.1.factor .* got -2.0"),
    ({"on_crash": "reweigh"}, r"^on_crash must be one of stop, reweight, got 'reweigh' "
                              r"\(did you mean 'reweight'\?\)"),
    ({"failure_timeout": -1}, r"^failure_timeout must be a number > 0, got -1"),
    ({"links": [{"edge": [1, 1]}]}, r"^links\[0\].edge must join two different agents"),
    ({"links": [{"edge": [0, 1], "loss": 2}]}, r"^links\[0\].loss must be a probability"),
    ({"links": [{"edge": [0, 1], "latency": {"kind": "x"}}]},
     r"^links\[0\].latency.kind must be one of"),
    ({"links": {"edge": [0, 1]}}, r"^links must be a list of tables"),
    ({"latncy": 0.1}, r"^mapping: unknown key 'latncy' \(did you mean 'latency'\?\); allowed keys"),
    ({"crash": {1: 0.1}}, r"^mapping: unknown key 'crash' \(did you mean 'crashes'\?\)"),
])
def test_bad_conditions(mapping, match):
    with pytest.raises(ConfigError, match=match):
        NetworkConditions.from_mapping(mapping)


def test_direct_construction_is_validated_too():
    with pytest.raises(ConfigError, match=r"^loss must be a probability in \[0, 1\), got 1.5"):
        NetworkConditions(loss=1.5)
    with pytest.raises(ConfigError, match=r"^mapping must be a table"):
        NetworkConditions.from_mapping([("loss", 0.1)])
