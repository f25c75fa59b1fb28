"""The scenario section ``[privacy]``: validation with paths and did-you-mean, sweeps, the per-point hooks."""

import copy

import pytest

from dpgossip.errors import ConfigError
from dpgossip.scenario.expand import expand
from dpgossip.scenario.privacy_section import (
    PRIVACY_FIELDS,
    audit_config,
    check_privacy,
    leakage_rows,
    rank_note,
)
from dpgossip.scenario.privacy_section import prepare_point as _prepare_point
from dpgossip.scenario.problem import build_problem, build_structure
from dpgossip.scenario.schema import validate
from dpgossip.scenario.sections import EXTRA_SECTIONS, section_for

BASE = {
    "name": "p",
    "data": {"source": "synthetic", "synthetic": {"n": 16, "d": 2, "spectrum": [1.0, 0.8]},
             "standardize": False},
    "network": {"topology": "ring", "agents": 4},
    "protocol": {"iterations": 2, "consensus_steps": 1,
                 "noise": {"schedule": "constant", "scale": 1.0}},
    "output": {"plots": False},
}


def prepare_point(cfg):
    return _prepare_point(cfg, build_structure(cfg))


def scenario(**privacy):
    raw = copy.deepcopy(BASE)
    raw["privacy"] = privacy
    return raw


def test_defaults_and_registration():
    assert EXTRA_SECTIONS["privacy"].fields is PRIVACY_FIELDS
    assert section_for("privacy").validate is check_privacy
    assert EXTRA_SECTIONS["privacy"].sweepable == ("delta", "calibrate.epsilon", "calibrate.delta")
    c = validate(scenario())
    assert c["privacy"] == {
        "view": "observer", "neighbours": "bounded", "delta": 1e-5, "epsilon": [1.0],
        "methods": ["exact", "rdp", "chernoff"],
        "audit": False, "delta_upper": False, "calibrate": None, "rank_by": "epsilon",
        "search": "standard",
        "epsilon_cap": 1000.0,
    }


def test_delta_is_a_sweep_axis_and_epsilon_is_a_grid():
    c = validate(scenario(delta=[1e-5, 1e-6], epsilon=[1, 2.5], audit=True))
    pts = expand(c)
    assert [p.axes["privacy.delta"] for p in pts] == [1e-5, 1e-6]
    assert all(p.config["privacy"]["epsilon"] == [1.0, 2.5] for p in pts)
    assert "privacy.epsilon" not in pts[0].axes
    c = validate(scenario(epsilon=3))  # a single number is a one-value grid
    assert c["privacy"]["epsilon"] == [3.0] and len(expand(c)) == 1
    raw = scenario(delta=[1e-5, 1e-6])
    raw["protocol"]["consensus_steps"] = [1, 2]
    raw["sweep"] = {"zip": [["protocol.consensus_steps", "privacy.delta"]]}
    assert [p.axes["privacy.delta"] for p in expand(validate(raw))] == [1e-5, 1e-6]


def test_calibrate_table_defaults():
    c = validate(scenario(calibrate={"epsilon": 4}))
    assert c["privacy"]["calibrate"] == {
        "epsilon": 4.0, "delta": None, "family": "geometric", "method": "exact", "values": None,
        "rel_tol": 0.02, "infeasible": "error",
    }


def test_calibrate_budgets_are_sweep_axes_zipped_with_the_baseline():
    raw = scenario(calibrate={"epsilon": [1.0, 5.0], "delta": [0.4, 0.04], "family": "constant"})
    raw["baseline"] = {"ldp": True, "epsilon": [1.0, 5.0], "delta": [0.4, 0.04]}
    raw["sweep"] = {"zip": [["baseline.epsilon", "baseline.delta", "privacy.calibrate.epsilon",
                             "privacy.calibrate.delta"]]}
    pts = expand(validate(raw))
    assert [(p.config["privacy"]["calibrate"]["epsilon"], p.config["privacy"]["calibrate"]["delta"],
             p.config["baseline"]["epsilon"]) for p in pts] == [(1.0, 0.4, 1.0), (5.0, 0.04, 5.0)]


BAD = [
    ({"veiw": "observer"}, r"privacy\.veiw: unknown key \(did you mean 'view'\?\)"),
    ({"view": "obsrver"}, r"privacy\.view: 'obsrver' is not allowed.*did you mean 'observer'"),
    ({"neighbours": "replace"}, r"privacy\.neighbours: 'replace' is not allowed"),
    ({"delta": 0}, r"privacy\.delta must be in \(0, 1\), got 0"),
    ({"delta": 1.5}, r"privacy\.delta must be in \(0, 1\), got 1\.5"),
    ({"delta": [1e-5, 2]}, r"privacy\.delta\[1\] must be in \(0, 1\), got 2"),
    ({"delta": "small"}, r"privacy\.delta must be a number, got 'small'"),
    ({"epsilon": [1, -2]}, r"privacy\.epsilon\[1\] must be a finite number > 0, got -2"),
    ({"epsilon": [[1, 2]]}, r"privacy\.epsilon is the grid at which delta is reported, not a sweep"),
    ({"epsilon": []}, r"privacy\.epsilon must list at least one"),
    # the keys of the removed candidate search: named, with what replaced them
    ({"candidates": 20}, r"privacy\.candidates = 20: this key set the candidate search, which was "
     r"removed; there is one search, whose effort is privacy\.search = quick \| standard \| thorough "
     r"\| 1\.\.8 levels: remove privacy\.candidates$"),
    ({"refine": 2}, r"privacy\.refine = 2: this key set the candidate search, which was removed.*"
     r"remove privacy\.refine$"),
    ({"ascent_steps": 0}, r"privacy\.ascent_steps = 0: this key set the candidate search.*"
     r"remove privacy\.ascent_steps$"),
    ({"search": "candidates", "candidates": 1},
     r"privacy\.candidates = 1: this key set the candidate search, which was removed"),
    ({"calibrate": {"epsilon": 1, "candidates": 3}},
     r"privacy\.calibrate\.candidates = 3: this key set the candidate search, which was removed.*"
     r"remove privacy\.calibrate\.candidates$"),
    # the removed search names
    *[({"search": name}, rf"privacy\.search = '{name}' was removed: there is one search, whose effort "
       r"is one of quick, standard, thorough or an integer number of levels in 1\.\.8")
      for name in ("candidates", "shared", "fast", "network")],
    ({"search": 0}, r"privacy\.search levels must be in 1\.\.8, got 0"),
    ({"search": 9}, r"privacy\.search levels must be in 1\.\.8, got 9"),
    ({"audit": "yes"}, r"privacy\.audit must be true or false, got 'yes'"),
    ({"methods": ["exact", "rpd"]}, r"privacy\.methods\[1\]: 'rpd' is not allowed.*'rdp'"),
    ({"calibrate": 3}, r"privacy\.calibrate must be a table"),
    ({"calibrate": {"delta": 1e-5}}, r"privacy\.calibrate\.epsilon is required"),
    ({"calibrate": {"epsilon": 0}}, r"privacy\.calibrate\.epsilon must be a finite number > 0"),
    ({"calibrate": {"epsilon": [1, -2]}},
     r"privacy\.calibrate\.epsilon\[1\] must be a finite number > 0, got -2"),
    ({"calibrate": {"epsilon": []}}, r"privacy\.calibrate\.epsilon: an empty list is not a sweep axis"),
    ({"calibrate": {"epsilon": 1, "delta": [0.1, 2]}},
     r"privacy\.calibrate\.delta\[1\] must be in \(0, 1\), got 2"),
    ({"calibrate": {"epsilon": 1, "infeasible": "skip"}},
     r"privacy\.calibrate\.infeasible: 'skip' is not allowed; use one of error, floor"),
    ({"calibrate": {"epsilon": 1, "delta": 1}}, r"privacy\.calibrate\.delta must be in \(0, 1\)"),
    ({"calibrate": {"epsilon": 1, "family": "geometrc"}},
     r"privacy\.calibrate\.family: 'geometrc' is not allowed.*did you mean 'geometric'"),
    ({"calibrate": {"epsilon": 1, "famly": "constant"}},
     r"privacy\.calibrate\.famly: unknown key \(did you mean 'family'\?\)"),
    ({"calibrate": {"epsilon": 1, "values": [1, 2]}},
     r"privacy\.calibrate\.values is only used with family = \"explicit\""),
    ({"calibrate": {"epsilon": 1, "family": "explicit", "values": [1, -1]}},
     r"privacy\.calibrate\.values\[1\] must be a finite number >= 0"),
]


@pytest.mark.parametrize("table, message", BAD)
def test_bad_values_name_the_path(table, message):
    with pytest.raises(ConfigError, match=message):
        validate(scenario(**table))


def test_not_a_table():
    raw = copy.deepcopy(BASE)
    raw["privacy"] = [1]
    with pytest.raises(ConfigError, match=r"privacy must be a table"):
        validate(raw)


def test_prepare_without_calibrate_is_the_identity():
    cfg = expand(validate(scenario(audit=True)))[0].config
    new, row = prepare_point(cfg)
    assert new == cfg and row == {}


def test_rank_note():
    assert rank_note(1) is None
    assert "adding" not in (rank_note(2) or "") and "Renyi divergences add" in rank_note(2)


def test_leakage_rows_one_per_pair():
    cfg = expand(validate(scenario(audit=True, search="quick", methods=["rdp"],
                                   epsilon=[1, 10])))[0].config
    audit = audit_config(cfg, build_problem(cfg))
    rows = leakage_rows(audit, {"tag": 1})
    assert len(rows) == 12 == len({(r["observer"], r["target"]) for r in rows})
    r = rows[0]
    assert r["epsilon"] == r["epsilon_rdp"] and r["method"] == "rdp" and r["tag"] == 1
    assert {"delta_rdp_at_eps_1", "delta_rdp_at_eps_10", "hops", "row", "view"} <= set(r)
    assert not any(k.startswith("delta_upper") for k in r)  # only with privacy.delta_upper


def test_prepare_calibrates_and_reports_an_unreachable_target(smallest_search):
    # the preparation's mechanics, with the quickest search (tests/protocols/ddppm/test_calibrate.py
    # covers the calibration itself); the search finds epsilon = 300 at delta = 1e-5 below the floor of
    # this tiny problem (delta levels off near 0.012 at epsilon = 300), so the met target is at 0.05
    fast = {"methods": ["rdp"], "search": "quick"}
    cfg = expand(validate(scenario(**fast, calibrate={"epsilon": 300.0, "delta": 0.05,
                                                       "family": "constant", "method": "rdp"})))[0].config
    new, row = prepare_point(cfg)
    assert new["protocol"]["noise"] == {"schedule": "constant", "scale": row["noise_scale"]}
    assert cfg["protocol"]["noise"]["scale"] == 1.0  # the input is not modified
    assert row["target_delta"] == 0.05 and row["calibrated_epsilon"] <= 300.0 * 1.02
    assert new["privacy"]["calibrated"]["calibration_met"] is True
    cfg = expand(validate(scenario(**fast, calibrate={"epsilon": 1.0, "family": "constant",
                                                       "method": "rdp"})))[0].config
    with pytest.raises(ConfigError, match=r"cannot meet epsilon = 1 at delta = 1e-05.*levels off"):
        prepare_point(cfg)
    # infeasible = "floor": the point runs at the scale where the search stopped, flagged
    cfg = expand(validate(scenario(**fast, calibrate={"epsilon": 1.0, "family": "constant",
                                                       "method": "rdp", "infeasible": "floor"})))[0].config
    new, row = prepare_point(cfg)
    assert row["calibration_met"] is False and row["noise_scale"] > 1.0
    # a runs.csv row never says "met" or "not met" without what it means
    assert "not a DP guarantee" in row["calibration_meaning"]
    assert row["calibration_search"] == "quick"
    assert new["protocol"]["noise"]["scale"] == row["noise_scale"]


def test_search_key_selects_the_optimising_search():
    assert validate(scenario(search="quick"))["privacy"]["search"] == "quick"
    assert validate(scenario(search=2))["privacy"]["search"] == 2
    with pytest.raises(ConfigError, match="privacy.search must be one of quick, standard, thorough"):
        validate(scenario(search="fastest"))


def test_an_epsilon_cap_that_would_be_ignored_is_refused():
    other = {"rank_by": "delta"}
    with pytest.raises(ConfigError, match=r"privacy.epsilon_cap is read by the search when pairs are "
                       r"ranked by epsilon; rank_by = \"delta\" solves no epsilon: leave it out"):
        check_privacy("privacy", {"epsilon_cap": 50.0, **other})
    assert check_privacy("privacy", other)["epsilon_cap"] == 1000.0  # the default is no setting
    assert check_privacy("privacy", {"epsilon_cap": 50.0})["epsilon_cap"] == 50.0


def test_delta_upper_adds_the_proven_delta_beside_the_lower_one(smallest_search):
    """``delta_upper = true``: every leakage row carries the delta its target's certified bound proves
    at each epsilon, the same for every pair of the target, and the bound recomputed there is at most
    that epsilon (without the key the columns are absent: test_leakage_rows_one_per_pair; soundness
    against brute force: tests/privacy/test_delta_from_bound.py)."""
    from dpgossip.protocols.ddppm.audit import upper_bounds
    from dpgossip.scenario.privacy_section import audit_with_store

    cfg = expand(validate(scenario(audit=True, search="quick", methods=["rdp"], epsilon=[4],
                                   delta_upper=True)))[0].config
    problem = build_problem(cfg)
    rows = leakage_rows(audit_with_store(cfg, problem, None))
    proven = {}
    for r in rows:
        assert proven.setdefault(r["target"], r["delta_upper_at_eps_4"]) == r["delta_upper_at_eps_4"]
    assert sorted(proven) == [0, 1, 2, 3] and all(0 < d <= 1 for d in proven.values())
    j, d = min(proven.items(), key=lambda kv: kv[1])
    assert d < 1.0  # this problem's bound proves something at epsilon = 4
    assert upper_bounds(problem.data, problem.network, problem.params, d, "bounded", [j])[j].epsilon <= 4
    with pytest.raises(ConfigError, match=r"privacy\.delta_upper must be true or false, got 'yes'"):
        validate(scenario(delta_upper="yes"))
