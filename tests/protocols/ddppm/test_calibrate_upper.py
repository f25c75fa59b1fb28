"""Calibration against the certified upper bound (``method = "upper"``).

Oracles: the certified bound recomputed directly from the mechanism (``certified_upper_bounds`` on a
``NoisyPowerIteration`` built here at the scale found and just below it), and the audit's lower
estimate at that scale, which must not exceed the bound (the bracket holds).
"""

import math
import warnings

import numpy as np
import pytest

from dpgossip.privacy.certified_bound import NoisyPowerIteration, certified_upper_bounds
from dpgossip.privacy.scale_search import ScaleSearchOptions
from dpgossip.protocols.ddppm.audit import AuditOptions, audit_pairs
from dpgossip.protocols.ddppm.calibrate import AuditSettings, calibrate_noise
from dpgossip.protocols.ddppm.params import NoiseSchedule, resolve_params
from dpgossip.scenario.problem import build_structure
from dpgossip.scenario.schema import validate

T, C, DELTA = 2, 1, 1e-5
UPPER = AuditSettings(method="upper")


@pytest.fixture(scope="module")
def problem():
    raw = {"name": "c", "seed": 0,
           "data": {"source": "synthetic", "standardize": False,
                    "synthetic": {"n": 16, "d": 2, "spectrum": [1.0, 0.8]}},
           "network": {"topology": "ring", "agents": 4},
           "protocol": {"iterations": T, "consensus_steps": C}}
    structure = build_structure(validate(raw))
    return structure.data, structure.network


def largest_bound(data, network, scale):
    params = resolve_params(data, network, iterations=T, consensus_steps=C,
                            noise=NoiseSchedule(kind="constant", scale=scale))
    model = NoisyPowerIteration(X=data.X, offsets=data.offsets, W=network.dense_W(),
                                consensus_steps=C, alpha=params.alpha[0], sigma_q=params.sigma_q,
                                sigma_p=params.sigma_p[0])
    return max(b.epsilon for b in certified_upper_bounds(model, DELTA).values()), params


def test_upper_calibration_meets_the_bound_and_is_the_smallest_scale(problem):
    data, network = problem
    floor, _ = largest_bound(data, network, 64.0)
    target = 1.5 * floor  # reachable: above the bound's floor
    cal = calibrate_noise(data, network, iterations=T, consensus_steps=C, epsilon=target, delta=DELTA,
                          family="constant", audit=UPPER,
                          scale_search=ScaleSearchOptions(rel_tol=0.02))
    assert cal.met and cal.method == "upper" and cal.bound == "certified upper bound"
    at, params = largest_bound(data, network, cal.scale)
    assert at == cal.epsilon <= target  # no tolerance above the target: a guarantee
    below, _ = largest_bound(data, network, cal.scale / 1.02)
    assert below > target  # the smallest scale within rel_tol
    assert "certified upper bound proves epsilon <= the target" in cal.meaning
    assert "not a DP guarantee over all datasets" in cal.meaning
    assert cal.to_row()["calibration_method"] == "upper" and cal.audit is None
    assert cal.epsilon_upper == cal.epsilon and math.isnan(cal.delta_upper)  # delta_upper not asked


def test_a_calibration_carries_the_certified_side_at_its_scale(problem):
    """Every calibration's record holds the certified bound at the target delta at the scale it chose,
    and, when asked, the delta the bound proves at the target epsilon (recomputed here: the bound at
    that delta is at most the target epsilon, and at a slightly smaller delta it is not). One target."""
    data, network = problem
    floor, _ = largest_bound(data, network, 64.0)
    target = 1.5 * floor
    cal = calibrate_noise(data, network, iterations=T, consensus_steps=C, epsilon=target, delta=DELTA,
                          family="constant",
                          audit=AuditSettings(method="upper", delta_upper=True, targets=[1]),
                          scale_search=ScaleSearchOptions(rel_tol=0.05))
    _, params = largest_bound(data, network, cal.scale)
    model = NoisyPowerIteration(X=data.X, offsets=data.offsets, W=network.dense_W(), consensus_steps=C,
                                alpha=params.alpha[0], sigma_q=params.sigma_q, sigma_p=params.sigma_p[0])
    assert cal.epsilon_upper == certified_upper_bounds(model, DELTA, targets=[1])[1].epsilon
    row = cal.to_row()
    assert row["calibrated_epsilon_upper"] == cal.epsilon_upper
    assert row["calibrated_delta_upper"] == cal.delta_upper <= DELTA  # the scale meets (target, DELTA)
    assert certified_upper_bounds(model, cal.delta_upper, targets=[1])[1].epsilon <= target
    assert certified_upper_bounds(model, cal.delta_upper * 0.99, targets=[1])[1].epsilon > target
    # the bracket: the search's lower estimate at that scale is below the bound
    audit = audit_pairs(data, network, params, delta=DELTA, methods=("rdp",), search="quick",
                        options=AuditOptions(targets=[cal.worst["target"]], observers=[0, 2]))
    assert audit.worst("rdp").epsilon["rdp"] <= cal.epsilon


def test_upper_calibration_below_the_floor_is_not_met_and_says_why(problem):
    data, network = problem
    floor, _ = largest_bound(data, network, 64.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        cal = calibrate_noise(data, network, iterations=T, consensus_steps=C, epsilon=0.5 * floor,
                              delta=DELTA, family="constant", audit=UPPER)
    assert not cal.met and cal.limit_epsilon is not None and cal.limit_epsilon > 0.5 * floor
    assert cal.meaning.startswith("not met: the certified upper bound stays above the target")
    assert any("certified upper bound at delta" in n and "levels off" in n for n in cal.notes)
    assert math.isfinite(cal.epsilon) and np.isfinite(cal.scale)


def test_calibrate_command_says_it_met_the_certified_bound(tmp_path, capsys):
    import json

    from dpgossip.cli import main

    scenario = tmp_path / "s.toml"
    scenario.write_text(
        'name = "c"\nseed = 0\n[data]\nsource = "synthetic"\nstandardize = false\n'
        "synthetic = { n = 16, d = 2, spectrum = [1.0, 0.8] }\n[network]\ntopology = \"ring\"\n"
        "agents = 4\n[protocol]\niterations = 2\nconsensus_steps = 1\n")
    out = tmp_path / "cal.json"
    assert main(["calibrate", str(scenario), "--epsilon", "1000", "--delta", "1e-5", "--family",
                 "constant", "--method", "upper", "-q", "--out", str(out)]) == 0
    printed = " ".join(capsys.readouterr().out.split())
    assert "whose certified upper bound (every neighbour of this X, every observer) meets" in printed
    assert "# achieved (certified upper bound, the largest over the targets): epsilon <=" in printed
    assert 'noise = { schedule = "constant", scale = ' in printed
    record = json.loads(out.read_text())
    assert record["calibration_method"] == "upper" and record["calibration_met"] is True
    assert record["calibration_meaning"].startswith("meets the target: the certified upper bound")
    assert record["calibrated_epsilon"] <= 1000
    assert record["audit"].startswith("certified upper bound") and "LOWER" not in record["audit"]
