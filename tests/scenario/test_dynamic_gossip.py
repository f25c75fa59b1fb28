"""Dynamic-gossip scenarios ([dynamic_gossip]): small versions of the shipped ones end to end, the
leakage column against a dense forward oracle (GaussianPair on the whole view, the observer's own
noise kept as an observed coordinate) on engine-recorded schedules with lost, late and refused
messages, the fixed-W curve against ||W^t x - avg|| and its leakage against the fixed-W auditor, resume,
and the errors of bad keys."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np
import pytest

from dpgossip.cli import main
from dpgossip.privacy.gaussian_pair import GaussianPair
from dpgossip.privacy.linear_audit import LinearAuditSettings
from dpgossip.protocols.gossip.audit import audit_gossip
from dpgossip.protocols.gossip.linear import LinearGossip
from dpgossip.scenario.dynamic_gossip import run_dynamic_gossip
from dpgossip.scenario.dynamic_gossip_config import (
    is_dynamic_gossip_file,
    load_dynamic_gossip,
    parse_dynamic_gossip,
)
from dpgossip.scenario.dynamic_gossip_runs import build_setting, realise
from dpgossip.topology import make_network
from dpgossip.topology.schedules import AVERAGED, REFUSED, REPLY_LATE, REPLY_LOST

SHIPPED = Path(__file__).resolve().parents[2] / "scenarios"
GRID = {"topology": "grid", "agents": 9, "params": {"rows": 3, "cols": 3}}


def _csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def _small(path: Path, tmp: Path, edits: dict[str, str]) -> Path:
    """The shipped scenario with ``edits`` (each old text must occur exactly once)."""
    text = path.read_text(encoding="utf-8")
    for old, new in edits.items():
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    out = tmp / path.name
    out.write_text(text, encoding="utf-8")
    return out


def _config(modes, **section):
    base = {"sigma": 0.8, "sensitivity": 0.7, "horizon": 4.0, "samples": 2, "seed": 3, "points": 9,
            "observers": [4], "graph": GRID, "modes": modes}
    return parse_dynamic_gossip({"name": "small-dyn", "dynamic_gossip": {**base, **section}})


def test_the_shipped_modes_scenario_runs_small_end_to_end(tmp_path):
    path = _small(SHIPPED / "dynamic-gossip-modes.toml", tmp_path, {
        "samples = 100": "samples = 3", "horizon = 10.0": "horizon = 4.0", "agents = 36": "agents = 9",
        "{ rows = 6, cols = 6 }": "{ rows = 3, cols = 3 }", "observers = [14]": "observers = [4]",
        "degree = 4": "degree = 2"})
    assert is_dynamic_gossip_file(path)
    assert main(["run", str(path), "--out", str(tmp_path / "res"), "--quiet"]) == 0
    res = tmp_path / "res"
    modes = ["synchronous", "pairwise", "random-matchings", "random-regular"]
    time_rows = _csv(res / "consensus_time.csv")
    assert [r["mode"] for r in time_rows] == [m for m in modes for _ in range(61)]
    assert {r["runs"] for r in time_rows if r["mode"] != "synchronous"} == {"3"}
    leak = _csv(res / "leakage.csv")
    # observer 4 is the centre of the 3 x 3 grid: distances 1 and 2
    assert [(r["mode"], r["distance"]) for r in leak] == [(m, str(d)) for m in modes for d in (1, 2)]
    assert all(r["schedules"] == ("1" if r["mode"] == "synchronous" else "3") for r in leak)
    assert all("estimate, not a bound" in r["note"] for r in leak if r["mode"] != "synchronous")
    assert len(_csv(res / "pairs.csv")) == 4 * 8
    for name in ("consensus-time.png", "consensus-messages.png", "leakage-distance.png"):
        assert (res / "plots" / name).stat().st_size > 0


def test_the_shipped_churn_scenario_runs_small_end_to_end(tmp_path):
    path = _small(SHIPPED / "dynamic-gossip-churn.toml", tmp_path, {
        "samples = 20": "samples = 2", "horizon = 300.0": "horizon = 40.0", "agents = 36": "agents = 9",
        "{ rows = 6, cols = 6 }": "{ rows = 3, cols = 3 }"})
    assert main(["run", str(path), "--out", str(tmp_path / "res"), "--quiet", "--no-plots"]) == 0
    pairs = _csv(tmp_path / "res" / "pairs.csv")
    assert len(pairs) == 4 * 9 * 8  # every (observer, target) of every mode
    summary = (tmp_path / "res" / "summary.json").read_text()
    assert '"engine": true' in summary and '"engine": false' in summary


def _oracle_rdp(schedule, v: int, u: int, sigma: float, sens: float, alpha: float) -> float:
    """Dense forward oracle: every state a map of y^0 = x + sigma z, the messages ``v`` received, its
    own noise draw as an observed coordinate, and the Renyi divergence of the two Gaussian views."""
    m = schedule.m
    A = np.eye(m)
    rows = []
    if schedule.kind == "pairwise":
        for (i, j), o in zip(schedule.pairs.tolist(), schedule.outcomes.tolist(), strict=True):
            new = (A[i] + A[j]) / 2
            if j == v:
                rows.append(A[i].copy())          # the request
            if i == v and o in (AVERAGED, REPLY_LATE):
                rows.append(new.copy())           # the reply the initiator saw
            if o != REFUSED:
                A[j] = new
            if o == AVERAGED:
                A[i] = new.copy()
    else:
        for t, W in enumerate(schedule.matrices):
            D = W.toarray()
            rows.extend(A[w].copy() for w in range(m) if w != v and D[v, w] != 0)
            rows.extend(A[int(s)].copy() for tt, s, r, _ in schedule.late.tolist()
                        if int(tt) == t and int(r) == v and int(s) != v)
            A = D @ A
    own = np.zeros(m)
    own[v] = 1.0
    N = np.vstack([sigma * np.array(rows).reshape(-1, m), own])
    shift = np.concatenate([sens * np.array(rows).reshape(-1, m)[:, u], [0.0]])
    cov = N @ N.T
    return GaussianPair(np.zeros(len(shift)), cov, shift, cov).renyi(alpha)


def test_leakage_columns_equal_a_dense_oracle_on_engine_recorded_schedules(tmp_path):
    lossy = {"drop": 0.3, "delay": [0.1, 0.9], "timeout": 1.2,
             "sessions": {"law": "exponential", "mean": 15.0}}
    config = _config([
        {"label": "pairwise-lossy", "schedule": {"sampler": "pairwise", "rate": 1.0}, "conditions": lossy},
        {"label": "matchings-lossy", "schedule": {"sampler": "random-matchings"},
         "conditions": {"drop": 0.3, "delay": [0.2, 1.5], "sessions": lossy["sessions"]}}],
        samples=1, horizon=20.0, observers="all")
    run_dynamic_gossip(config, tmp_path / "res", quiet=True)
    rows = _csv(tmp_path / "res" / "pairs.csv")
    setting = build_setting(config)
    seen_outcomes, late = set(), 0
    for index, mode in enumerate(config.modes):
        schedule = realise(config, setting, index, mode, 0)
        if schedule.kind == "pairwise":
            seen_outcomes |= set(schedule.outcomes.tolist())
        else:
            late += len(schedule.late)
        mine = [r for r in rows if r["mode"] == mode.label]
        assert len(mine) == 9 * 8
        for r in (r for r in mine if r["observer"] in ("0", "4", "5")):  # a corner, the centre, a side
            want = _oracle_rdp(schedule, int(r["observer"]), int(r["target"]), 0.8, 0.7, 2.0)
            assert float(r["rdp_mean"]) == pytest.approx(want, rel=1e-9, abs=1e-12)
            assert r["schedules"] == "1"
    assert seen_outcomes == {AVERAGED, REPLY_LOST, REPLY_LATE, REFUSED} and late > 0
    values = np.array([float(r["rdp_mean"]) for r in rows])
    local = 2.0 * 0.7 ** 2 / (2 * 0.8 ** 2)  # alpha Delta^2 / (2 sigma^2): the observer learns y_u^0
    assert values.min() == 0.0 and values.max() <= local * (1 + 1e-9)
    assert np.any((values > 0) & (values < 0.99 * local))


def test_the_fixed_w_curve_is_the_norm_of_w_power_t_x_and_its_leakage_the_fixed_auditor(tmp_path):
    config = _config([{"label": "sync", "schedule": {"sampler": "fixed"}}], horizon=6.0, points=7)
    run_dynamic_gossip(config, tmp_path / "res", quiet=True)
    W = make_network("grid", agents=9, params={"rows": 3, "cols": 3}).W.toarray()
    x = build_setting(config).x0
    direct = [np.linalg.norm(np.linalg.matrix_power(W, t) @ x - x.mean()) for t in range(7)]
    by_time = _csv(tmp_path / "res" / "consensus_time.csv")
    assert [float(r["time"]) for r in by_time] == list(range(7))
    np.testing.assert_allclose([float(r["error_mean"]) for r in by_time], direct, rtol=1e-12)
    by_messages = _csv(tmp_path / "res" / "consensus_messages.csv")   # 24 messages a round
    assert [float(r["messages"]) for r in by_messages] == [24.0 * t for t in range(7)]
    np.testing.assert_allclose([float(r["error_mean"]) for r in by_messages], direct, rtol=1e-12)
    network = make_network("grid", agents=9, params={"rows": 3, "cols": 3})
    settings = LinearAuditSettings(sensitivity=0.7, orders=(2.0,), delta=1e-5)
    fixed = audit_gossip(network, LinearGossip(protocol="gossip-average", rounds=6, sigma=0.8), 4, settings)
    pairs = _csv(tmp_path / "res" / "pairs.csv")
    assert [int(r["target"]) for r in pairs] == [p.target for p in fixed]
    for r, p in zip(pairs, fixed, strict=True):
        assert float(r["rdp_max"]) == pytest.approx(p.rdp[0], rel=1e-9)
        assert float(r["epsilon_max"]) == pytest.approx(p.epsilon, rel=1e-7)
        assert r["note"].startswith("one schedule")


def test_a_rerun_resumes_every_mode_and_an_edited_mode_alone_is_recomputed(tmp_path, capsys):
    modes = [{"label": "a", "schedule": {"sampler": "pairwise"}},
             {"label": "b", "schedule": {"sampler": "random-matchings"}}]
    run_dynamic_gossip(_config(modes), tmp_path / "res")
    first = (tmp_path / "res" / "leakage.csv").read_bytes()
    capsys.readouterr()
    run_dynamic_gossip(_config(modes), tmp_path / "res")
    assert capsys.readouterr().err.count("stored, skipped") == 2
    assert (tmp_path / "res" / "leakage.csv").read_bytes() == first
    modes[1]["period"] = 2.0
    run_dynamic_gossip(_config(modes), tmp_path / "res")
    err = capsys.readouterr().err
    assert "a: stored, skipped" in err and "b: stored" not in err


def test_runs_are_reproducible_and_modes_draw_independent_schedules():
    config = _config([{"label": "a", "schedule": {"sampler": "pairwise"}},
                      {"label": "b", "schedule": {"sampler": "pairwise"}}])
    setting = build_setting(config)
    one = realise(config, setting, 0, config.modes[0], 1)
    again = realise(config, setting, 0, config.modes[0], 1)
    assert np.array_equal(one.pairs, again.pairs) and np.array_equal(one.times, again.times)
    other = realise(config, setting, 1, config.modes[1], 1)
    assert not np.array_equal(one.times[:5], other.times[:5])


GOOD = """name = "bad"
[dynamic_gossip]
horizon = 4.0
samples = 2
observers = [4]
[dynamic_gossip.graph]
topology = "grid"
agents = 9
params = { rows = 3, cols = 3 }
[[dynamic_gossip.modes]]
schedule = { sampler = "pairwise" }
[[dynamic_gossip.modes]]
label = "lossy"
schedule = { sampler = "random-matchings" }
conditions = { drop = 0.5, delay = [1.0, 5.0], sessions = { law = "lognormal", mu = 5.0, sigma = 0.5 } }
"""


@pytest.mark.parametrize("old,new,message", [
    ("samples = 2", "sampels = 2", "dynamic_gossip.sampels: unknown key (did you mean 'samples'?)"),
    ("drop = 0.5", "drop = 1.5", "dynamic_gossip.modes[1].conditions.drop must be in [0, 1), got 1.5"),
    ('law = "lognormal"', 'law = "weibull"', "dynamic_gossip.modes[1].conditions.sessions.law must be one "
                                            "of 'lognormal', 'exponential', got 'weibull'"),
    ("mu = 5.0, ", "", "dynamic_gossip.modes[1].conditions.sessions.mu must be a number, got None"),
    ("delay = [1.0, 5.0]", "delay = [5.0, 1.0]",
     "dynamic_gossip.modes[1].conditions.delay[1] must be a number >= low = 5, got 1.0"),
    ('sampler = "pairwise" }', 'sampler = "pairwize" }', "dynamic_gossip.modes[0].schedule.sampler must be "
                                                         "one of"),
    ('sampler = "pairwise" }', 'sampler = "push-sum", arcs = "cycle" }',
     "dynamic_gossip.modes[0].schedule.arcs: 'cycle' orients the ring 0 -> 1 -> ... -> 8 -> 0 along the "
     "graph's edges, but (2, 3) is not an edge of the graph"),
    ('sampler = "pairwise" }', 'sampler = "pairwise", horizon = 3.0 }',
     "dynamic_gossip.modes[0].schedule.horizon: every mode runs until dynamic_gossip.horizon = 4"),
    ("observers = [4]", "observers = [99]", "dynamic_gossip.observers[0] must be an agent in 0..8, got 99"),
    ('label = "lossy"', 'label = "lossy"\nperiod = 5.0',
     "dynamic_gossip.modes[1].period: a round of 5 does not fit in the horizon 4"),
    ('label = "lossy"', 'label = "pairwise"', "dynamic_gossip.modes[1].label: 'pairwise' is used twice"),
    ("[dynamic_gossip.graph]\n", "[dynamic_gossip.grap]\n", "dynamic_gossip.grap: unknown key"),
    ("conditions = {", "conditions = { retransmit = true,",
     "dynamic_gossip.modes[1].conditions.retransmit: unknown key"),
    ("conditions = {", "conditions = { timeout = 3.0,",
     "dynamic_gossip.modes[1].conditions.timeout: only a pairwise initiator waits for a reply"),
    ("[[dynamic_gossip.modes]]\nschedule", "[[dynamic_gossip.modes]]\nperiod = 2.0\nschedule",
     "dynamic_gossip.modes[0].period: a pairwise mode has no rounds"),
])
def test_bad_keys_exit_2_naming_the_key_the_value_and_what_is_allowed(tmp_path, capsys, old, new, message):
    assert GOOD.count(old) == 1
    path = tmp_path / "bad.toml"
    path.write_text(GOOD.replace(old, new), encoding="utf-8")
    assert main(["run", str(path), "--out", str(tmp_path / "res"), "--quiet"]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "res").exists()


def test_the_good_file_runs_and_other_commands_refuse_it(tmp_path, capsys):
    path = tmp_path / "good.toml"
    path.write_text(GOOD, encoding="utf-8")
    assert load_dynamic_gossip(path).modes[0].label == "pairwise"
    assert main(["run", str(path), "--out", str(tmp_path / "res"), "--quiet", "--no-plots"]) == 0
    assert main(["audit", str(path)]) == 2
    assert "dynamic-gossip scenario" in capsys.readouterr().err
    assert main(["run", str(path), "--out", str(tmp_path / "r2"), "--workers", "2"]) == 2
    assert main(["report", str(tmp_path / "res")]) == 0   # the plots from the tables alone
    assert sorted(p.name for p in (tmp_path / "res" / "plots").glob("*.png")) == [
        "consensus-messages.png", "consensus-time.png", "leakage-distance.png"]
    leakage = tmp_path / "res" / "leakage.csv"
    leakage.write_text(leakage.read_text().replace("rdp_max", "rdp_top"))
    capsys.readouterr()
    assert main(["report", str(tmp_path / "res")]) == 2
    assert "leakage.csv: the column 'rdp_max' is missing" in capsys.readouterr().err


def test_the_offline_law_defaults_to_the_online_one_and_needs_it():
    config = _config([{"schedule": {"sampler": "pairwise"},
                       "conditions": {"sessions": {"law": "exponential", "mean": 3.0}}}])
    c = config.modes[0].conditions
    assert c.offline == c.online and c.pairwise_timeout == 1.0 and math.isclose(c.drop, 0.0)
    with pytest.raises(Exception, match="offline sessions need online ones"):
        _config([{"schedule": {"sampler": "pairwise"},
                  "conditions": {"offline": {"law": "exponential", "mean": 3.0}}}])


def test_a_files_schedule_of_w_is_the_fixed_mode_and_a_missing_file_names_its_key(tmp_path, capsys):
    W = make_network("grid", agents=9, params={"rows": 3, "cols": 3}).W.toarray()
    np.savetxt(tmp_path / "w.txt", W)
    files = {"sampler": "files", "files": [str(tmp_path / "w.txt")]}
    config = _config([{"label": "fixed", "schedule": {"sampler": "fixed"}},
                      {"label": "files", "schedule": files}])
    run_dynamic_gossip(config, tmp_path / "res", quiet=True)
    rows = _csv(tmp_path / "res" / "consensus_time.csv")
    by = {m: [float(r["error_mean"]) for r in rows if r["mode"] == m] for m in ("fixed", "files")}
    np.testing.assert_allclose(by["files"], by["fixed"], rtol=1e-12)
    path = tmp_path / "bad.toml"
    path.write_text(GOOD.replace('sampler = "random-matchings" }', 'sampler = "files", files = ["no.txt"] }'))
    assert main(["run", str(path), "--out", str(tmp_path / "r2"), "--quiet"]) == 2
    assert "dynamic_gossip.modes[1].schedule.files[0]: no such file" in capsys.readouterr().err


def test_editing_a_files_modes_matrix_recomputes_the_mode(tmp_path):
    """The matrices of a ``files`` mode enter its stored record's key: after an edit, a rerun into the
    same folder computes the mode again instead of keeping the old rows."""
    grid = make_network("grid", agents=9, params={"rows": 3, "cols": 3}).W.toarray()
    matrix = tmp_path / "w.txt"
    np.savetxt(matrix, grid)
    config = _config([{"label": "files", "schedule": {"sampler": "files", "files": [str(matrix)]}}])
    run_dynamic_gossip(config, tmp_path / "res", quiet=True)
    before = (tmp_path / "res" / "consensus_time.csv").read_text()
    np.savetxt(matrix, (np.eye(9) + grid) / 2)
    run_dynamic_gossip(config, tmp_path / "res", quiet=True)
    run_dynamic_gossip(config, tmp_path / "fresh", quiet=True)
    after = (tmp_path / "res" / "consensus_time.csv").read_text()
    assert after == (tmp_path / "fresh" / "consensus_time.csv").read_text() != before


def test_a_mode_of_many_runs_prints_progress_lines(tmp_path, capsys, monkeypatch):
    """Before, a mode of many samples printed nothing until it finished (over a minute)."""
    from dpgossip.scenario import dynamic_gossip

    monkeypatch.setattr(dynamic_gossip, "PROGRESS_EVERY", 0.0)
    config = _config([{"label": "rm", "schedule": {"sampler": "random-matchings"}}], samples=3)
    run_dynamic_gossip(config, tmp_path / "res")
    lines = capsys.readouterr().err.splitlines()
    progress = [x for x in lines if x.startswith("[1/1] rm: run ")]
    assert [x.split(" (")[0] for x in progress] == ["[1/1] rm: run 1/3", "[1/1] rm: run 2/3"]
    assert all(" s, ETA " in x for x in progress)
    run_dynamic_gossip(config, tmp_path / "quiet", quiet=True)
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("runs, text", [(1, "fixed (1 run)"), (3, "fixed (3 runs)")])
def test_the_consensus_legend_says_run_or_runs(tmp_path, monkeypatch, runs, text):
    pytest.importorskip("matplotlib")
    from dpgossip.report import dynamic_gossip as report

    drawn = []
    monkeypatch.setattr(report, "save", lambda fig, path: drawn.append(fig) or Path(path))
    rows = [{"mode": "fixed", "time": t, "runs": runs, "error_mean": 1.0 / (t + 1),
             "error_q10": 0.5 / (t + 1), "error_q90": 2.0 / (t + 1)} for t in range(3)]
    report.plot_consensus(rows, tmp_path / "c.png")
    labels = drawn[0].axes[0].get_legend_handles_labels()[1]
    assert labels == [text]


def test_sampled_modes_leak_as_the_backward_sweep_of_dynamic_release_says():
    """A second method: the release model of ``dynamic_release`` (messages ``y_w^r`` of each step's
    matrix, rows by a backward sweep) on the same sampled schedules, as mixing matrices."""
    from dpgossip.protocols.gossip.dynamic_release import dynamic_leakage, pairwise_matrix
    from dpgossip.scenario.dynamic_gossip_runs import trace_run

    config = _config([{"label": "p", "schedule": {"sampler": "pairwise"}},
                      {"label": "m", "schedule": {"sampler": "random-matchings"}},
                      {"label": "r", "schedule": {"sampler": "random-regular", "degree": 2}}],
                     observers=[0, 4])
    setting = build_setting(config)
    settings = LinearAuditSettings(sensitivity=0.7, orders=(2.0,), delta=1e-5)
    seen = []
    for index, mode in enumerate(config.modes):
        for run in range(2):
            sched = realise(config, setting, index, mode, run)
            steps = (sched.matrices if sched.kind == "rounds" else
                     [pairwise_matrix(9, i, j) for i, j in sched.pairs.tolist()])
            spec = LinearGossip(protocol="gossip-average", rounds=len(steps), sigma=0.8)
            mu = trace_run(sched, setting, config, mode.period).mu
            want = [r.mu_upper for v in (0, 4) for r in dynamic_leakage(steps, spec, v, settings,
                                                                         graph=setting.network.graph)]
            np.testing.assert_allclose(mu, want, rtol=1e-9, atol=1e-12)
            seen.extend(mu)
    local = 0.7 / 0.8  # mu of an observer that recovers y_u^0 = x_u + 0.8 z_u
    assert np.any((np.array(seen) > 0.01) & (np.array(seen) < 0.99 * local))


def test_a_leakage_curve_under_another_is_drawn_visible_and_says_so(tmp_path, monkeypatch):
    """A mode whose mean lies exactly under a later curve (the synchronous mean under random-regular's in
    dynamic-gossip-modes) is drawn with larger hollow markers, larger the more curves cover it, and its
    legend says which curve it coincides with; the others are drawn as before."""
    pytest.importorskip("matplotlib")
    from dpgossip.report import dynamic_gossip as report

    drawn = []
    monkeypatch.setattr(report, "save", lambda fig, path: drawn.append(fig) or Path(path))
    rows = [{"mode": mode, "distance": d, "schedules": n, "rdp_mean": mean / d ** (mode == "pairwise"),
             "rdp_max": top} for mode, n, mean, top in [("synchronous", 1, 1.0, 1.0),
                                                        ("pairwise", 10, 0.5, 0.8),
                                                        ("random-regular", 10, 1.0, 1.0)]
            for d in (1, 2, 3)]
    report.plot_leakage(rows, tmp_path / "l.png")
    lines, labels = drawn[0].axes[0].get_legend_handles_labels()
    assert labels == ["synchronous: mean (coincides with random-regular: mean)", "pairwise: mean",
                      "pairwise: max over 10 sampled (estimate)",
                      "random-regular: mean (coincides with random-regular: max)",
                      "random-regular: max over 10 sampled (estimate)"]
    sizes = [line.get_markersize() for line in lines]
    assert sizes == [14, 4, 4, 9, 4]  # synchronous: under two curves; random-regular's mean: one
    assert lines[0].get_markerfacecolor() == "none" and lines[3].get_markerfacecolor() == "none"
