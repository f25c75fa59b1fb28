"""Asynchronous randomized pairwise gossip on the engine against a minimal plain-simpy loop.

Problem: a connected random geometric graph on ``m`` agents (``make_network("random_geometric",
agents=m, seed=2024)``), ``P_ij = 1 / deg(i)``, rate-1 Poisson clocks, horizon ``H`` (about
``m H`` ticks: ``m = 10,000``, ``H = 100`` gives ``10^6`` exchanges), scalar values, ideal links.

Engine row: :func:`dpgossip.engine.dynamic.run_pairwise` (fabric messages, recorded schedule).
Plain row: the same exchanges with nothing else, one simpy process per agent drawing its clock gaps
and peer choices from the same per-agent streams in the same blocks, a request and a reply as two
zero-delay events with a callback, and the initiator's expiry timer; the plain loop ends with the
same values (checked: ``max |x_engine - x_plain|``). Both run side by side in one process, engine
first; ``ratio`` is engine wall / plain wall, ``cpu_ratio`` the same in process CPU seconds (steadier
on a loaded machine). ``--check`` also runs the matrix backend on the
recorded schedule (``max |x_engine - x_backend|``).

Run: ``python benchmarks/bench_async_gossip.py [--agents 10000] [--horizon 100] [--check]``. Not a
test. Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import time
from bisect import bisect_right
from functools import partial

import numpy as np
import simpy

from dpgossip.engine.dynamic import run_pairwise
from dpgossip.rng import run_streams
from dpgossip.topology import make_network
from dpgossip.topology.schedule_backend import apply_schedule
from dpgossip.topology.schedule_samplers import neighbour_probabilities

SEED = 2024


class _Plain:
    """One agent of the plain loop: its value, clock, peers and lock."""

    __slots__ = ("x", "rng", "peers", "cum", "lock", "count", "gaps", "us", "k")

    def __init__(self, x: float, rng: np.random.Generator, peers: list[int], cum: list[float]) -> None:
        self.x, self.rng, self.peers, self.cum = x, rng, peers, cum
        self.lock, self.count, self.k = None, 0, 256


def _plain_run(env: simpy.Environment, agents: list[_Plain], horizon: float, timeout: float) -> int:
    exchanges = [0]

    def expire(a: _Plain, c: int, _e: object) -> None:
        if a.lock == c:
            a.lock = None

    def reply(a: _Plain, c: int, value: float, _e: object) -> None:
        if a.lock == c:
            a.x, a.lock = value, None

    def request(i: int, j: int, c: int, value: float, _e: object) -> None:
        b = agents[j]
        if b.lock is not None:
            return
        b.x = avg = 0.5 * (value + b.x)
        exchanges[0] += 1
        env.timeout(0).callbacks.append(partial(reply, agents[i], c, avg))

    def clock(i: int):  # noqa: ANN202 - a simpy generator
        a = agents[i]
        while True:
            if a.k == 256:
                a.gaps = a.rng.exponential(1.0, 256).tolist()
                a.us, a.k = (a.rng.random(256) * a.cum[-1]).tolist(), 0
            gap, u = a.gaps[a.k], a.us[a.k]
            a.k += 1
            yield env.timeout(gap)
            if env.now >= horizon:
                return
            if a.lock is not None:
                continue
            j = a.peers[min(bisect_right(a.cum, u), len(a.peers) - 1)]
            a.count += 1
            a.lock = c = a.count
            env.timeout(0).callbacks.append(partial(request, i, j, c, a.x))
            env.timeout(timeout).callbacks.append(partial(expire, a, c))

    for i in range(len(agents)):
        env.process(clock(i))
    env.run()
    return exchanges[0]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--agents", type=int, default=10_000)
    ap.add_argument("--horizon", type=float, default=100.0)
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    load0 = open("/proc/loadavg").read().split()[:3]
    t0 = time.perf_counter()
    net = make_network("random_geometric", agents=args.agents, seed=SEED)
    P = neighbour_probabilities(net.graph)
    x = np.random.default_rng(SEED).normal(size=args.agents)
    setup = time.perf_counter() - t0
    t0, c0 = time.perf_counter(), time.process_time()
    run = run_pairwise(net, P, x, SEED, horizon=args.horizon)
    engine, engine_cpu = time.perf_counter() - t0, time.process_time() - c0
    streams = run_streams(SEED, args.agents)
    agents = [_Plain(float(x[i]), streams.agents[i], P.indices[P.indptr[i]:P.indptr[i + 1]].tolist(),
                     np.cumsum(P.data[P.indptr[i]:P.indptr[i + 1]]).tolist())
              for i in range(args.agents)]
    t0, c0 = time.perf_counter(), time.process_time()
    plain_exchanges = _plain_run(simpy.Environment(), agents, args.horizon, 1.0)
    plain, plain_cpu = time.perf_counter() - t0, time.process_time() - c0
    row = {"agents": args.agents, "edges": net.graph.number_of_edges(), "horizon": args.horizon,
           "exchanges": run.schedule.steps, "plain_exchanges": plain_exchanges,
           "messages": run.traffic["messages_sent"], "setup_s": round(setup, 2),
           "engine_s": round(engine, 2), "simulate_s": round(run.wall, 2), "plain_s": round(plain, 2),
           "ratio": round(engine / plain, 2), "engine_cpu_s": round(engine_cpu, 2),
           "plain_cpu_s": round(plain_cpu, 2), "cpu_ratio": round(engine_cpu / plain_cpu, 2),
           "max_diff_plain": float(np.max(np.abs(run.values[:, 0] - [a.x for a in agents]))),
           "load_start": load0, "load_end": open("/proc/loadavg").read().split()[:3]}
    if args.check:
        row["max_diff_backend"] = float(np.max(np.abs(run.values[:, 0] -
                                                      apply_schedule(run.schedule, x))))
    print(json.dumps(row))


if __name__ == "__main__":
    main()
