"""The gossip protocols of network DP on the engine against the linear model, side by side.

Problem: ``--agents`` agents (default 1,000) on a random geometric graph (``make_network``, seed 7,
radius ``sqrt(10 / (pi m))``: average degree about 10), Metropolis weights, scalar inputs, ``T = 10``.
For each protocol (``gossip-noisy`` with fixed inputs, ``gossip-decor``, ``gossip-noisy`` with secure
summation) it times, interleaved and best of ``--repeats``:

* ``engine``: :func:`dpgossip.protocols.gossip.nodes.run_gossip_engine` with ideal links and no
  transcript (set-up of the agents' streams, secrets and masks included);
* ``model``: :func:`~dpgossip.protocols.gossip.decor.draw_gossip_noise` plus
  :func:`~dpgossip.protocols.gossip.linear.simulate_messages` (the same values, vectorised);

and prints the ratio engine / model and ``max |states_engine - states_model|``.

Run: ``OPENBLAS_NUM_THREADS=1 python benchmarks/bench_gossip_engine.py [--agents 1000] [--repeats 2]``.
Not a test.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from dpgossip.protocols.gossip.decor import draw_gossip_noise
from dpgossip.protocols.gossip.linear import LinearGossip, simulate_messages
from dpgossip.protocols.gossip.nodes import run_gossip_engine
from dpgossip.topology import make_network

SPECS = {
    "gossip-noisy": LinearGossip(protocol="gossip-noisy", rounds=10, sigma=1.0),
    "gossip-decor": LinearGossip(protocol="gossip-decor", rounds=10, sigma=1.0, sigma_cor=1.0),
    "noisy+secure-sum": LinearGossip(protocol="gossip-noisy", rounds=10, sigma=1.0,
                                     secure_summation=True),
}


def _model(network, spec, x, seed):
    noise = draw_gossip_noise(network, seed, noise_rounds=spec.noise_rounds,
                              secret_rounds=spec.secret_rounds)
    secrets = noise.secrets[..., 0] if spec.secret_rounds else None
    return simulate_messages(network, spec, x, noise.z[..., 0], secrets)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    m = args.agents
    network = make_network("random_geometric", agents=m, seed=7,
                           params={"radius": math.sqrt(10 / (math.pi * m))})
    x = np.random.default_rng(1).normal(size=m)
    edges = network.graph.number_of_edges()
    print(f"random geometric graph: {m} agents, {edges} edges, mean degree {2 * edges / m:.1f}")
    print("protocol,engine_s,model_s,ratio,max_abs_diff,messages")
    for name, spec in SPECS.items():
        best = {"engine": math.inf, "model": math.inf}
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            res = run_gossip_engine(network, spec, x, 3, record_transcript=False)
            best["engine"] = min(best["engine"], time.perf_counter() - t0)
            t0 = time.perf_counter()
            ref = _model(network, spec, x, 3)
            best["model"] = min(best["model"], time.perf_counter() - t0)
        diff = float(np.max(np.abs(res.states[..., 0] - ref)))
        print(f"{name},{best['engine']:.3f},{best['model']:.3f},"
              f"{best['engine'] / best['model']:.1f},{diff:.1e},{res.traffic['delivered']}")


if __name__ == "__main__":
    main()
