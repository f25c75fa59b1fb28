"""scenarios/als-epsilon.toml runs through `dpgossip run` with no [data] section: the ALS kinds draw their
own ratings (``ProtocolKind.own_data``), and a [data] section is refused."""

import csv
import math
import tomllib
from pathlib import Path

import pytest

from dpgossip.errors import ConfigError
from dpgossip.protocols.als.central import run_als
from dpgossip.protocols.als.kinds import settings_ratings
from dpgossip.protocols.als.params import AlsParams
from dpgossip.report import make_report
from dpgossip.scenario import load_scenario, run_scenario
from dpgossip.scenario.schema import validate
from dpgossip.topology import make_network

SCENARIO = Path(__file__).resolve().parents[3] / "scenarios" / "als-epsilon.toml"


def _rows(folder):
    with open(folder / "runs.csv", newline="") as fh:
        return list(csv.DictReader(fh))


def test_the_shipped_grid_runs_with_audit_at_most_guarantee(tmp_path):
    cfg = tomllib.loads(SCENARIO.read_text())
    sc = load_scenario(SCENARIO).with_overrides({"repeats": 1, "network.agents": 10,
                                                 "als.epsilon": [1.0, 100.0]})
    run_scenario(sc, tmp_path, quiet=True)
    rows = _rows(tmp_path)
    graphs = cfg["network"]["topology"]
    assert len(rows) == len(graphs) * 2 * len(cfg["protocol"]["kind"])   # kinds zipped with noise
    assert {r["kind"] for r in rows} == set(cfg["protocol"]["kind"])
    assert {r["gossip_noise"] for r in rows if r["kind"] == "dpals-gossip"} == {"shared", "own"}
    assert all(float(r["audited_epsilon"]) <= float(r["guaranteed_epsilon"]) for r in rows)
    central = [r for r in rows if r["kind"] == "dpals"]
    assert all(float(r["guaranteed_epsilon"]) <= float(r["als_epsilon"]) for r in central)
    assert all(r["status"] == "ok" and math.isnan(float(r["subspace_distance"])) for r in rows)
    assert all(r["agents"] == "10" and r["n"] == "10" for r in rows)      # one row of data per user
    # the non-private reference is non-private ALS on the same ratings, recomputed here
    s = cfg["als"]
    ratings = settings_ratings(make_network("ring", agents=10), {**s, "epsilon": 1.0, "noise": "shared"})
    plain = run_als(ratings, AlsParams(rank=cfg["protocol"]["rank"], steps=cfg["protocol"]["iterations"],
                                       reg=s["reg"]), 0)
    ring = [float(r["rmse_nonprivate"]) for r in rows if r["network_topology"] == "ring"]
    assert ring == pytest.approx([plain.rmse] * len(ring), rel=1e-12)
    make_report(tmp_path)
    assert (tmp_path / "plots" / "privacy_utility.png").is_file()
    assert not (tmp_path / "plots" / "error_vs_iteration.png").exists()   # no subspace error to draw


def test_a_data_section_is_refused_when_every_kind_draws_its_own():
    raw = tomllib.loads(SCENARIO.read_text())
    raw["data"] = {"source": "wine"}
    with pytest.raises(ConfigError, match=r"data: protocol.kind = .*draws its own data.*\[als\]") as err:
        validate(raw)
    assert err.value.field == "data"


def test_a_kind_that_reads_data_still_requires_the_data_section():
    raw = tomllib.loads(SCENARIO.read_text())
    raw["protocol"]["kind"] = ["dpals", "ppm-gossip"]
    raw["protocol"].pop("rank")
    raw.pop("sweep")
    raw["als"]["noise"] = "shared"
    with pytest.raises(ConfigError, match="data.source is required"):
        validate(raw)


ALS_TOML = """name = "als-small"
seed = 1
repeats = 1
[network]
topology = "ring"
agents = 6
[protocol]
kind = "{kind}"
iterations = 2
rank = 2
consensus_steps = 2
[als]
{als}
[output]
plots = false
"""


def _als_run(tmp_path, capsys, als: str, kind: str = "dpals") -> tuple[int, str, Path]:
    from dpgossip.cli import main

    path = tmp_path / "als.toml"
    path.write_text(ALS_TOML.format(kind=kind, als=als))
    out = tmp_path / "out"
    code = main(["run", str(path), "--out", str(out), "-q"])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, err, out


@pytest.mark.parametrize("fraction", ["0", "0.01"])
def test_a_test_fraction_that_holds_out_nothing_is_refused(tmp_path, capsys, fraction):
    # before: status ok and every RMSE NaN
    code, err, out = _als_run(tmp_path, capsys, f"test_fraction = {fraction}")
    assert code == 2 and not out.exists()
    assert f"als.test_fraction = {float(fraction)!r} holds out no rating" in err
    assert "with min_count = 8 at least 0.125" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("kind", ["dpals", "dpals-federated"])
@pytest.mark.parametrize("key", ['noise = "own"', "edge_noise = 2.0"])
def test_als_gossip_keys_given_to_a_kind_that_does_not_read_them_are_refused(tmp_path, capsys,
                                                                             kind, key):
    code, err, out = _als_run(tmp_path, capsys, key, kind=kind)
    name = key.split(" ")[0]
    assert code == 2 and not out.exists()
    assert err.strip().endswith(f"als.{name} is given but protocol.kind = {kind} does not read it "
                                "(read by dpals-gossip only); remove it")


def test_protocol_noise_given_to_an_als_kind_is_refused(tmp_path, capsys):
    path = tmp_path / "s.toml"
    path.write_text(ALS_TOML.format(kind="dpals", als="").replace(
        "[protocol]", '[protocol]\nnoise = { schedule = "constant", scale = 1.0 }'))
    raw = tomllib.loads(path.read_text())
    with pytest.raises(ConfigError, match=r"^protocol.noise is given but protocol.kind = dpals does "
                                          r"not read it \(read by ddppm only") as err:
        validate(raw)
    assert err.value.field == "protocol.noise"


@pytest.mark.parametrize("kind", ["dpals", "dpals-gossip"])
@pytest.mark.parametrize("setting, message", [
    ("reg = 1e-300", "als.reg = 1e-300: a ridge solve of ALS, (V_i^T V_i + reg I) or (X_j + reg I), is "
                     "singular in floating point"),
    ("clip_rating = 1e308", "als.clip_rating = 1e+308 and als.clip_user = 1.0: the item factors "
                            "overflow to inf or NaN in floating point"),
])
def test_numerical_failures_name_the_setting(tmp_path, capsys, kind, setting, message):
    # before: a LinAlgError traceback, and "mahalanobis must be a finite number" naming no setting
    code, err, out = _als_run(tmp_path, capsys, setting, kind=kind)
    assert code == 2 and not out.exists()
    assert len(err.strip().splitlines()) == 1 and message in err, err


def test_edge_noise_with_only_own_noise_is_refused(tmp_path, capsys):
    code, err, out = _als_run(tmp_path, capsys, 'noise = "own"\nedge_noise = 2.0', kind="dpals-gossip")
    assert code == 2 and not out.exists()
    assert err.strip().endswith("als.edge_noise = 2.0 is not read: dpals-gossip reads it with als.noise "
                                "= 'shared' only, and its every point has als.noise = 'own'; remove it")
    # with shared noise it is read
    code, err, out = _als_run(tmp_path, capsys, 'noise = "shared"\nedge_noise = 2.0', kind="dpals-gossip")
    assert code == 0, err
