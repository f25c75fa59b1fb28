"""The power method of Nicolas et al. on the engine against the matrix backend: equality and wall
time side by side.

Problem: ``s`` agents (default 16) on a ring and on a connected Watts-Strogatz graph (``k = 4``,
``p = 0.3``, seed 5), Metropolis weights, 4 rows per agent of synthetic data with ``d = 10`` (rows in the
unit ball); ``p = 3``, ``k = 2``, ``L = 5`` iterations, ``sigma = 1``, ppm-gossip with ``c = 5`` and
``mask_std = 2``. For each kind (``ppm``, ``ppm-federated``, ``ppm-gossip``) and graph it prints

* the largest absolute difference between the engine's and the matrix backend's arrays (iterates,
  releases or states, noise, sensitivities) with ideal links and with lossy links (exponential latency
  of mean 0.01 s, 30 % loss with retransmission);
* the wall time of the engine over the matrix backend's (best of ``--repeats``, interleaved).

Run: ``OPENBLAS_NUM_THREADS=1 python benchmarks/bench_ppm_engine.py [--agents 16] [--repeats 3]``.
Not a test.
"""

from __future__ import annotations

import argparse
import time

import networkx as nx
import numpy as np

from dpgossip.data.partition import PartitionedData
from dpgossip.protocols.ppm.central import PpmParams, run_ppm, run_ppm_federated
from dpgossip.protocols.ppm.gossip import PpmGossipParams, run_ppm_gossip
from dpgossip.protocols.ppm.nodes import run_ppm_engine
from dpgossip.topology.mixing import metropolis_weights
from dpgossip.topology.network import Network

SEED = 7
LOSSY = {"latency": {"kind": "exponential", "mean": 0.01}, "loss": 0.3, "retransmit_timeout": 0.05}
FIELDS = {"ppm": ("iterates", "Y", "noise", "sensitivities"),
          "ppm-federated": ("iterates", "Y", "noise", "sensitivities"),
          "ppm-gossip": ("iterates", "states", "noise", "masks", "sensitivities")}


def _data(s: int) -> PartitionedData:
    rng = np.random.default_rng(1)
    X = rng.standard_normal((4 * s, 10)) * np.linspace(2.0, 0.2, 10)
    X /= np.linalg.norm(X, axis=1).max()
    return PartitionedData(X=X, sizes=(4,) * s, name="synthetic")


def _networks(s: int) -> dict[str, Network]:
    ring = nx.cycle_graph(s)
    ws = nx.convert_node_labels_to_integers(nx.connected_watts_strogatz_graph(s, 4, 0.3, seed=5))
    return {name: Network(graph=g, W=metropolis_weights(g), name=name)
            for name, g in (("ring", ring), ("ws", ws))}


def _matrix(kind, data, net, params):
    if kind == "ppm":
        return run_ppm(data, params, SEED)
    if kind == "ppm-federated":
        return run_ppm_federated(data, params, SEED)
    return run_ppm_gossip(data, net, params, SEED)


def _best(fn, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--agents", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    data = _data(args.agents)
    ppm = PpmParams(p=3, k=2, iterations=5, noise_multiplier=1.0)
    gossip = PpmGossipParams(ppm=ppm, consensus_steps=5, mask_std=2.0)
    print("kind           graph  max|diff| ideal  max|diff| lossy  wall engine/matrix")
    for name, net in _networks(args.agents).items():
        for kind in ("ppm", "ppm-federated", "ppm-gossip"):
            params = gossip if kind == "ppm-gossip" else ppm
            ref = _matrix(kind, data, net, params)
            diffs = []
            for cond in (None, LOSSY):
                res = run_ppm_engine(kind, data, net, params, SEED, conditions=cond, record_transcript=False)
                assert res.status == "completed", res.outcome.reason
                diffs.append(max(float(np.max(np.abs(getattr(res.result, f) - getattr(ref, f))))
                                 for f in FIELDS[kind]))
            engine = _best(lambda: run_ppm_engine(kind, data, net, params, SEED,  # noqa: B023
                                                  record_transcript=False), args.repeats)
            matrix = _best(lambda: _matrix(kind, data, net, params), args.repeats)  # noqa: B023
            print(f"{kind:14s} {name:5s}  {diffs[0]:16.3g}  {diffs[1]:16.3g}  {engine / matrix:18.1f}")


if __name__ == "__main__":
    main()
