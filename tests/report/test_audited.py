"""The run's error plot says what ``dpgossip audit`` found for D-DP-PM: the worst pair's
audited epsilon from the sibling ``<folder>-audit`` when a point there has the same problem, else that
D-DP-PM is not audited; the LDP baseline's budget is labelled as its own."""

import json

from dpgossip.report.audited import audit_folder, audit_text, audited_worst
from dpgossip.report.curves import _privacy_label

RUN = {"point": "0", "agents": "4", "n": "178", "d": "13", "T": "10", "c": "5",
       "sigma_q": "0.07495316889958614", "sigma_p_first": "0.026720403870828642",
       "sigma_p_last": "9.499486760524645e-05"}
PROBLEM = {"agents": 4, "rows": 178, "columns": 13, "iterations": 10, "consensus_steps": 5,
           "sigma_p_first": 0.026720403870828642, "sigma_p_last": 9.499486760524645e-05,
           "sigma_q": 0.07495316889958614}
WORST = {"delta": 1e-05, "epsilon": {"exact": 1000.0, "rdp": 1.5e8}, "capped": True,
         "epsilon_upper": 8498650248.861746, "epsilon_upper_max": 8498650248.861746}


def _audit(tmp_path, problem):
    folder = audit_folder(tmp_path / "quickstart")
    (folder / "points").mkdir(parents=True)
    (folder / "worst.json").write_text("{}")
    (folder / "points" / "53dad9b1553c33d9.json").write_text(
        json.dumps({"problem": problem, "worst": WORST}))
    return folder


def test_the_sibling_audit_of_the_same_problem_is_said(tmp_path):
    assert _audit(tmp_path, PROBLEM) == tmp_path / "quickstart-audit"
    worst = audited_worst(tmp_path / "quickstart", [RUN, dict(RUN, repeat="1")])
    assert worst == {0: WORST}
    label = _privacy_label("D-DP-PM", worst[0], True)
    assert label == ("D-DP-PM; audited worst pair \u03b5 \u2265 1000 at \u03b4=1e-05: not private at "
                     "this noise\n(certified upper bound \u03b5 \u2264 8.5e+09)")


def test_an_audit_of_another_problem_is_not_said(tmp_path):
    _audit(tmp_path, dict(PROBLEM, sigma_q=0.5))  # another noise
    assert audited_worst(tmp_path / "quickstart", [RUN]) == {}
    assert _privacy_label("D-DP-PM", None, True) == "D-DP-PM (privacy not audited here)"
    assert _privacy_label("D-DP-PM", None, False) == "D-DP-PM"


def test_no_audit_folder_and_damaged_files_are_no_audit(tmp_path):
    assert audited_worst(tmp_path / "quickstart", [RUN]) == {}
    folder = _audit(tmp_path, PROBLEM)
    (folder / "points" / "53dad9b1553c33d9.json").write_text("{not json")
    assert audited_worst(tmp_path / "quickstart", [RUN]) == {}


def test_audit_text_without_an_exact_value_or_cap():
    assert audit_text({"delta": 1e-5, "epsilon": {"rdp": 3.0}}) is None
    text = audit_text({"delta": 1e-5, "epsilon": {"exact": 2.5}, "capped": False,
                       "epsilon_upper_max": float("inf")})
    assert text == "audited worst pair \u03b5 \u2265 2.5 at \u03b4=1e-05"
