"""Run scenarios/als/als-epsilon.toml through the registry of kinds (the scenario layer cannot yet).

Every point of the grid (topology x kind x epsilon x gossip noise mode) is built by the kind's
``build(PointInputs)`` and run ``repeats`` times with seeds ``seed + repeat``; the columns are the kind's
own (:mod:`dpgossip.protocols.als.kinds`). Non-private ALS runs once per repeat on the same ratings.
Writes ``runs.csv`` (one row per run) and ``summary.csv`` (means over repeats) to ``--out``.

    python scenarios/als/run_als_epsilon.py --out results/als-epsilon [--repeats 1] [--agents 100]
"""

from __future__ import annotations

import argparse
import csv
import itertools
import tomllib
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from dpgossip.data.partition import PartitionedData
from dpgossip.protocols.als.central import run_als
from dpgossip.protocols.als.kinds import default_settings, point_parts
from dpgossip.protocols.als.params import AlsParams
from dpgossip.protocols.registry import PointInputs, kind
from dpgossip.topology import make_network

HERE = Path(__file__).resolve().parent


def _as_list(value):
    return value if isinstance(value, list) else [value]


def _network(cfg, topology, agents):
    params = cfg["network"].get("params") if topology == "random_regular" else None
    return make_network(topology, agents=agents, seed=cfg["seed"], params=params,
                        mixing=cfg["network"].get("mixing"))


def _points(cfg, agents):
    als = cfg["als"]
    fixed = {k: v for k, v in als.items() if k not in ("epsilon", "noise")}
    for topology, name, eps in itertools.product(_as_list(cfg["network"]["topology"]),
                                                 _as_list(cfg["protocol"]["kind"]), _as_list(als["epsilon"])):
        modes = _as_list(als["noise"]) if name == "dpals-gossip" else [_as_list(als["noise"])[0]]
        for mode in modes:
            yield topology, name, default_settings(**fixed, epsilon=float(eps), noise=mode)


def run(cfg, out, repeats, agents):
    """Run the grid; return the rows."""
    proto, rows, nets = cfg["protocol"], [], {}
    for topology, name, settings in _points(cfg, agents):
        net = nets.setdefault(topology, _network(cfg, topology, agents))
        inputs = PointInputs(data=PartitionedData(X=np.zeros((agents, 1)), sizes=(1,) * agents), network=net,
                             rank=proto["rank"], iterations=proto["iterations"],
                             consensus_steps=proto["consensus_steps"], settings=settings)
        point = kind(name).build(inputs)
        for rep in range(repeats):
            res = point.protocol.run(inputs.data, net, cfg["seed"] + rep)
            noise = settings["noise"] if name == "dpals-gossip" else ""
            rows.append({"topology": topology, "kind": name, "noise": noise, "epsilon": settings["epsilon"],
                         "repeat": rep, **point.columns(res.result, rep)})
    if cfg.get("baseline", {}).get("als"):
        ratings, _, _ = point_parts(inputs)
        for rep in range(repeats):
            base = run_als(ratings, AlsParams(rank=proto["rank"], steps=10, reg=cfg["als"]["reg"]),
                           cfg["seed"] + rep)
            rows.append({"topology": "", "kind": "als", "noise": "", "epsilon": float("inf"), "repeat": rep,
                         "rmse": base.rmse})
    return rows


def _write(rows, path):
    keys = list(dict.fromkeys(k for r in rows for k in r))
    with open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=keys)
        writer.writeheader()
        writer.writerows(rows)


def summarise(rows):
    """Means over repeats of rmse, guaranteed and audited epsilon per (topology, kind, noise, epsilon)."""
    groups = {}
    for r in rows:
        groups.setdefault((r["topology"], r["kind"], r["noise"], r["epsilon"]), []).append(r)
    out = []
    for (topology, name, noise, eps), rs in groups.items():
        row = {"topology": topology, "kind": name, "noise": noise, "epsilon": eps,
               "rmse": float(np.mean([r["rmse"] for r in rs]))}
        for col in ("guaranteed_epsilon", "audited_epsilon"):
            if col in rs[0]:
                row[col] = float(np.mean([r[col] for r in rs]))
        out.append(row)
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--agents", type=int, default=None)
    parser.add_argument("--scenario", type=Path, default=HERE / "als-epsilon.toml")
    args = parser.parse_args(argv)
    cfg = tomllib.loads(args.scenario.read_text())
    repeats = args.repeats or cfg["repeats"]
    agents = args.agents or cfg["network"]["agents"]
    with threadpool_limits(1):            # small dense algebra: one BLAS thread is fastest here
        rows = run(cfg, args.out, repeats, agents)
    args.out.mkdir(parents=True, exist_ok=True)
    _write(rows, args.out / "runs.csv")
    summary = summarise(rows)
    _write(summary, args.out / "summary.csv")
    for r in summary:
        print("  ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in r.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
