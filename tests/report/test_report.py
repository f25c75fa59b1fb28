"""Plots of a results folder: drawn after a run (by `dpgossip run`, or make_report after run_scenario),
redrawn by `dpgossip report`, skipped without matplotlib; the leakage plots on a synthetic table."""

import json
import sys

import networkx as nx
import pytest

from dpgossip.cli import main
from dpgossip.errors import ConfigError
from dpgossip.report import (
    PlotsUnavailable,
    make_report,
    plot_leakage_vs_hops,
    plot_pair_heatmap,
    plot_topology,
)
from dpgossip.scenario import run_scenario
from dpgossip.scenario.sections import EXTRA_SECTIONS, free_table, register_section

from ..scenario.helpers import small

pytest.importorskip("matplotlib")


def is_png(path):
    return path.is_file() and path.stat().st_size > 1000 and path.read_bytes()[:4] == b"\x89PNG"


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    """topology x c with the LDP baseline and rank 2: every error plot but error vs epsilon."""
    out = tmp_path_factory.mktemp("swept")
    sc = small(
        repeats=2,
        network={"topology": ["ring", "grid"]},
        protocol={"consensus_steps": [1, 4], "iterations": 4, "rank": 2},
        baseline={"ldp": True, "epsilon": 5.0, "delta": 0.008},
        output={"plots": True},
    )
    run_scenario(sc, out, quiet=True)
    make_report(out)
    return out


def test_run_draws_the_plots(swept):
    plots = swept / "plots"
    names = json.loads((plots / "plots.json").read_text())
    assert {
        "error_vs_iteration.png",
        "error_vs_iteration_component2.png",
        "error_vs_c.png",
    } <= set(names)
    assert "error_vs_epsilon.png" not in names
    topo = sorted(n for n in names if n.startswith("topology_"))
    assert len(topo) == 2 and topo[0].startswith("topology_grid-") and topo[1].startswith(
        "topology_ring-"
    )
    assert all(is_png(plots / n) for n in names)


def test_report_command_redraws_from_files(swept, capsys):
    plots = swept / "plots"
    before = sorted(p.name for p in plots.glob("*.png"))
    for p in plots.glob("*.png"):
        p.unlink()
    (plots / "stale.png").write_bytes(b"\x89PNG not ours")
    assert main(["report", str(swept)]) == 0
    assert f"{len(before)} plots written" in capsys.readouterr().out
    after = sorted(p.name for p in plots.glob("*.png"))
    assert after == sorted([*before, "stale.png"])  # files we did not write are left alone
    assert all(is_png(plots / n) for n in before)


def test_error_vs_epsilon_with_zipped_noise(tmp_path):
    sc = small(
        repeats=2,
        protocol={"consensus_steps": 3, "iterations": 4,
                  "noise": [{"scale": 0.2}, {"scale": 0.05}, {"scale": 0.01}]},
        baseline={"ldp": True, "epsilon": [1.0, 3.0, 10.0], "delta": 1e-5},
        sweep={"zip": [["protocol.noise", "baseline.epsilon"]]},
    )
    run_scenario(sc, tmp_path, quiet=True)
    make_report(tmp_path)
    assert is_png(tmp_path / "plots" / "error_vs_epsilon.png")
    assert not (tmp_path / "plots" / "error_vs_c.png").exists()


SMALL_TOML = """
name = "small"
seed = 5
[data]
source = "wine"
[network]
topology = "ring"
agents = 4
[protocol]
iterations = 6
consensus_steps = 1
"""


def test_output_plots_false_is_honoured(tmp_path):
    run_scenario(small(), tmp_path, quiet=True)
    assert not (tmp_path / "plots").exists()
    scenario = tmp_path / "s.toml"
    scenario.write_text(SMALL_TOML + "[output]\nplots = false\n")
    assert main(["run", str(scenario), "--out", str(tmp_path / "o"), "-q"]) == 0
    assert (tmp_path / "o" / "runs.csv").is_file() and not (tmp_path / "o" / "plots").exists()


def test_run_scenario_draws_no_plots_the_command_does(tmp_path):
    run_scenario(small(output={"plots": True}), tmp_path / "api", quiet=True)
    assert not (tmp_path / "api" / "plots").exists()
    scenario = tmp_path / "s.toml"
    scenario.write_text(SMALL_TOML)
    assert main(["run", str(scenario), "--out", str(tmp_path / "o"), "-q", "--no-plots"]) == 0
    assert not (tmp_path / "o" / "plots").exists()
    assert main(["run", str(scenario), "--out", str(tmp_path / "o"), "-q"]) == 0
    assert is_png(tmp_path / "o" / "plots" / "error_vs_iteration.png")


def test_without_matplotlib_run_skips_plots_with_a_notice(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    scenario = tmp_path / "s.toml"
    scenario.write_text(SMALL_TOML)
    assert main(["run", str(scenario), "--out", str(tmp_path)]) == 0
    err = capsys.readouterr().err
    assert 'plots skipped: matplotlib is not installed; install it with: pip install "dpgossip[plot]"' in err
    assert (tmp_path / "runs.csv").is_file() and not list(tmp_path.glob("plots/*.png"))
    with pytest.raises(PlotsUnavailable):
        make_report(tmp_path)
    assert main(["report", str(tmp_path)]) == 2
    assert "dpgossip[plot]" in capsys.readouterr().err


def test_report_on_unfinished_or_foreign_folder(tmp_path, capsys):
    assert main(["report", str(tmp_path / "nope")]) == 2
    assert "does not exist" in capsys.readouterr().err
    (tmp_path / "config.resolved.json").write_text("{}")
    with pytest.raises(ConfigError, match="the run did not finish; run the scenario again"):
        make_report(tmp_path)


def ring_leakage(m=6):
    g = nx.cycle_graph(m)
    hops = dict(nx.all_pairs_shortest_path_length(g))
    return [
        {"observer": o, "target": t, "hops": hops[o][t], "value": 2.0 / (1 + hops[o][t])}
        for o in range(m)
        for t in range(m)
        if o != t
    ]


def test_leakage_heatmap_and_hops_on_a_synthetic_table(tmp_path):
    rows = ring_leakage()
    assert is_png(plot_pair_heatmap(rows, tmp_path / "heat.png", title="ring of 6"))
    rows[0] = {**rows[0], "value": float("inf")}
    assert is_png(plot_pair_heatmap(rows, tmp_path / "heat_log.png", log=True))
    two = [{**r, "series": "c=1"} for r in ring_leakage()] + [
        {**r, "series": "c=5", "value": r["value"] / 2} for r in ring_leakage()
    ]
    assert is_png(plot_leakage_vs_hops(two, tmp_path / "hops.png"))
    eps = [{**r, "epsilon": r.pop("value")} for r in ring_leakage()]
    assert is_png(plot_leakage_vs_hops(eps, tmp_path / "hops_eps.png", value_key="epsilon", log=True))


@pytest.mark.parametrize(
    "rows, match",
    [
        ([], "no leakage rows"),
        ([{"observer": 0, "target": 1, "value": 1.0}], "has no 'hops'"),
        ([{"observer": 0, "target": 1, "hops": 1, "value": 1.0}] * 2, "is given twice"),
    ],
)
def test_leakage_input_errors(tmp_path, rows, match):
    with pytest.raises(ValueError, match=match):
        plot_pair_heatmap(rows, tmp_path / "x.png")


def test_topology_drawing_labels_small_graphs_and_widths_large(tmp_path):
    from dpgossip.topology import make_network

    for name, m in (("ring", 6), ("erdos_renyi", 40)):
        net = make_network(name, agents=m, seed=1)
        assert is_png(plot_topology(net.graph, net.dense_W(), tmp_path / f"{name}.png", name=name))


@pytest.fixture
def leakage_section():
    """A stand-in auditor: a [stand_in] section whose run hook writes a leakage table (the report
    plots any section's leakage.csv)."""

    def run(cfg, problem):
        c = cfg["protocol"]["consensus_steps"]
        return {"leakage": [{**r, "epsilon": r["value"] * c} for r in ring_leakage(4)]}

    register_section("stand_in", free_table, run=run)
    yield
    EXTRA_SECTIONS.pop("stand_in", None)


def test_section_run_hook_writes_a_table_that_the_report_plots(tmp_path, leakage_section):
    sc = small(repeats=1, stand_in={"delta": 1e-5}, protocol={"consensus_steps": [1, 2]})
    run_scenario(sc, tmp_path, quiet=True)
    make_report(tmp_path)
    lines = (tmp_path / "leakage.csv").read_text().splitlines()
    assert lines[0] == "observer,target,hops,value,epsilon,point" and len(lines) == 1 + 2 * 12
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert "leakage.csv" in summary["files"]
    for name in ("leakage_heatmap_p0.png", "leakage_heatmap_p1.png", "leakage_vs_hops.png"):
        assert is_png(tmp_path / "plots" / name)


def test_hops_plot_draws_the_certified_upper_bound_above_the_lower_estimates(tmp_path, monkeypatch):
    """Rows with ``epsilon_upper``: the worst and the mean bound per hop distance are drawn (their
    values computed here from the rows), a bound of inf on the inf line, which says it is no finite
    bound (not no privacy); rows without it draw no bound."""
    import dpgossip.report.leakage as leakage

    drawn = []
    real_save = leakage.save
    monkeypatch.setattr(leakage, "save", lambda fig, path: (drawn.append(fig), real_save(fig, path))[1])
    rows = [{**r, "epsilon": r.pop("value"), "epsilon_upper": 10.0 + r["target"]}
            for r in ring_leakage()]
    rows[0]["epsilon_upper"] = float("inf")
    assert is_png(plot_leakage_vs_hops(rows, tmp_path / "upper.png", value_key="epsilon"))
    ax = drawn[-1].axes[0]
    lines = {ln.get_label(): ln for ln in ax.get_lines()}
    worst = lines["certified upper bound, worst pair"]
    mean = lines["certified upper bound, mean"]
    hops = sorted({r["hops"] for r in rows})
    y_inf = [ln for ln in ax.get_lines() if ln.get_label().startswith("inf:")]
    assert [ln.get_label() for ln in y_inf] == ["inf: no finite upper bound proven (1 pairs)"]
    inf_level = y_inf[0].get_ydata()[0]
    for h, w, m in zip(hops, worst.get_ydata(), mean.get_ydata(), strict=True):
        ups = [r["epsilon_upper"] for r in rows if r["hops"] == h]
        want = max(ups)
        assert w == (inf_level if want == float("inf") else want)
        if all(u < float("inf") for u in ups):
            assert m == pytest.approx(sum(ups) / len(ups), rel=1e-12)
    lower = lines["lower estimate, worst pair"].get_ydata()
    assert all(lo < up for lo, up in zip(lower, worst.get_ydata(), strict=True))
    plain = [{k: v for k, v in r.items() if k != "epsilon_upper"} for r in rows]
    plot_leakage_vs_hops(plain, tmp_path / "plain.png", value_key="epsilon")
    assert not any("upper" in ln.get_label() for ln in drawn[-1].axes[0].get_lines())


def test_capped_pairs_are_named_in_the_legend_and_a_wide_bracket_gets_a_log_axis(tmp_path, monkeypatch):
    """Pairs whose search stopped at the epsilon cap are drawn at the cap: the legend says "at least";
    a bracket [1000, 8e9] spans far more than a factor 100, so the axis is logarithmic."""
    import dpgossip.report.leakage as leakage
    from dpgossip.report.audit import _log_scale

    rows = [{"observer": o, "target": j, "hops": 1 + (o + j) % 2, "epsilon": 1000.0,
             "epsilon_upper": 8e9, "stopped_at_cap": True, "method": "exact", "delta": 1e-5}
            for o in range(3) for j in range(3) if o != j]
    assert _log_scale(rows, "epsilon") and not _log_scale([{**r, "epsilon_upper": 2000.0}
                                                           for r in rows], "epsilon")
    figures = []
    real_save = leakage.save
    monkeypatch.setattr(leakage, "save", lambda fig, path: figures.append(fig) or real_save(fig, path))
    leakage.plot_leakage_vs_hops(rows, tmp_path / "h.png", value_key="epsilon", log=True)
    labels = [t.get_text() for t in figures[0].axes[0].get_legend().get_texts()]
    assert "lower estimate (a pair at the epsilon_cap: at least the cap), worst pair" in labels
    assert figures[0].axes[0].get_yscale() == "log"
