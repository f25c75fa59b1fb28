"""Throughput of the discrete-event engine against a plain simpy implementation and the matrix backend.

Problem: 1,000 agents on a random geometric graph (networkx, fixed seed, smallest radius on a grid
of radii that gives a connected graph), Metropolis weights ``W_ij = 1 / (1 + max(d_i, d_j))``,
``n = 2`` rows per agent, ``d = 30``, rows in the unit ball; ``T = 10`` iterations, ``c = 10``
rounds, rank 1.

Measured side by side, each repeated (default 3 times, interleaved) and the best kept:

* engine, gossip only (``disseminate=False``): delivered messages per second, without and with
  the in-memory transcript;
* plain reference: the same gossip where every message is its own simpy process
  (``yield env.timeout(latency)`` then ``store.put``), agents read their ``simpy.Store``;
* both again with exponential link latency;
* engine, full protocol (gossip + dissemination of ``q^(T)``, along the BFS spanning tree and by
  batched flooding), and ``run_matrix`` on the same problem: the matrix backend's speed-up is
  ``wall(engine) / wall(matrix)``.

Run: ``python benchmarks/bench_engine.py [--repeats 3] [--agents 1000] [--skip-full]``.
Not a test.
"""

from __future__ import annotations

import argparse
import time

import networkx as nx
import numpy as np
import simpy

from dpgossip.data.partition import PartitionedData
from dpgossip.engine import NetworkConditions
from dpgossip.protocols.ddppm.matrix import run_matrix
from dpgossip.protocols.ddppm.nodes import run_engine
from dpgossip.protocols.ddppm.params import ProtocolParams, resolve_params
from dpgossip.rng import draw_component_noise, run_streams
from dpgossip.topology.network import Network

SEED = 2024


def build_problem(m: int, d: int = 30, rows: int = 2, T: int = 10,
                  c: int = 10) -> tuple[PartitionedData, Network, ProtocolParams]:
    """The benchmark's data, network and parameters (see the module docstring)."""
    graph = None
    for radius in np.arange(0.04, 0.5, 0.005):
        g = nx.random_geometric_graph(m, float(radius), seed=SEED)
        if nx.is_connected(g):
            graph = nx.Graph()
            graph.add_nodes_from(range(m))
            graph.add_edges_from(g.edges())
            break
    assert graph is not None
    W = np.zeros((m, m))
    for i, j in graph.edges():
        W[i, j] = W[j, i] = 1.0 / (1 + max(graph.degree(i), graph.degree(j)))
    W[np.diag_indices(m)] = 1.0 - W.sum(axis=1)
    net = Network(graph=graph, W=W, name=f"rgg{m}(r={radius:.3f})", mixing="metropolis")
    rng = np.random.default_rng(SEED)
    v = rng.standard_normal(d)
    X = np.outer(rng.standard_normal(m * rows), v) + 0.5 * rng.standard_normal((m * rows, d))
    X /= np.linalg.norm(X, axis=1).max()
    data = PartitionedData(X=X, sizes=(rows,) * m, name="bench")
    params = resolve_params(data, net, iterations=T, consensus_steps=c)
    return data, net, params


def plain_gossip(data: PartitionedData, network: Network, params: ProtocolParams, seed: int,
                 latency_mean: float = 0.0) -> tuple[int, np.ndarray]:
    """Reference implementation: one simpy process per message; returns (messages, q^(T)).

    Same computation as the engine's gossip (each agent stacks its neighbours' states into a
    buffer and combines them with one product), so the difference is the message machinery.
    """
    env = simpy.Environment()
    m, T, c = data.m, params.iterations, params.consensus_steps
    streams = run_streams(seed, m)
    net_rng = streams.network
    stores = [simpy.Store(env) for _ in range(m)]
    delivered = [0]
    out = np.empty(data.n)
    W = network.W

    def deliver(msg: tuple, dst: int, delay: float):
        yield env.timeout(delay)
        stores[dst].put(msg)
        delivered[0] += 1

    def agent(i: int):
        X = np.array(data.block(i))
        nbrs = network.neighbours[i]
        pos = {j: p for p, j in enumerate(nbrs)}
        w_self, w_nbr = W[i, i], W[i, list(nbrs)]
        noise = draw_component_noise(streams.agents[i], data.sizes[i], params.sigma_q,
                                     params.sigma_p[0])
        q = noise[0]
        pending: dict[tuple, tuple[np.ndarray, list[int]]] = {}
        for t in range(1, T + 1):
            s = X.T @ q
            for k in range(1, c + 1):
                tag = (t, k)
                for j in nbrs:
                    delay = float(net_rng.exponential(latency_mean)) if latency_mean else 0.0
                    env.process(deliver((i, tag, s), j, delay))
                buf, got = pending.pop(tag, None) or (np.zeros((len(nbrs), s.size)), [0])
                while got[0] < len(nbrs):
                    src, mtag, payload = yield stores[i].get()
                    if mtag == tag:
                        buf[pos[src]] = payload
                        got[0] += 1
                    else:
                        other = pending.setdefault(mtag, (np.zeros((len(nbrs), s.size)), [0]))
                        other[0][pos[src]] = payload
                        other[1][0] += 1
                s = w_self * s + w_nbr @ buf
            q = params.alpha[0] * (X @ (m * s)) + noise[t]
        out[data.offsets[i]:data.offsets[i + 1]] = q

    for i in range(m):
        env.process(agent(i))
    env.run()
    return delivered[0], out


def best_of(repeats: int, fn):
    """Run ``fn`` ``repeats`` times; return (best wall seconds, last result)."""
    best, res = np.inf, None
    for _ in range(repeats):
        t0 = time.perf_counter()
        res = fn()
        best = min(best, time.perf_counter() - t0)
    return best, res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--agents", type=int, default=1000)
    ap.add_argument("--skip-full", action="store_true", help="skip the full protocol (dissemination)")
    args = ap.parse_args()
    t0 = time.perf_counter()
    data, net, params = build_problem(args.agents)
    E = net.graph.number_of_edges()
    print(f"problem: {net.name}, m = {net.m}, |E| = {E}, mean degree {2 * E / net.m:.2f}, "
          f"n = {data.n}, d = {data.d}, T = {params.iterations}, c = {params.consensus_steps} "
          f"(set up in {time.perf_counter() - t0:.1f} s)")
    seed = 7
    ref = run_matrix(data, net, params, seed)
    expo = NetworkConditions(latency={"kind": "exponential", "mean": 0.001},
                             retransmit_timeout=1.0, failure_timeout=10.0)
    times: dict[str, float] = {}
    cpu: dict[str, float] = {}
    counts: dict[str, int] = {}
    plan = [
        ("engine", "ideal", lambda: run_engine(data, net, params, seed, disseminate=False,
                                               record_transcript=False)),
        ("engine+transcript", "ideal", lambda: run_engine(data, net, params, seed,
                                                          disseminate=False)),
        ("plain", "ideal", lambda: plain_gossip(data, net, params, seed)),
        ("engine", "exp(1 ms)", lambda: run_engine(data, net, params, seed, conditions=expo,
                                                   disseminate=False, record_transcript=False)),
        ("plain", "exp(1 ms)", lambda: plain_gossip(data, net, params, seed, 0.001)),
    ]
    for rep in range(args.repeats):                         # interleaved: same machine state
        for name, cond, fn in plan:
            t1, c1 = time.perf_counter(), time.process_time()
            res = fn()
            dt, dc = time.perf_counter() - t1, time.process_time() - c1
            key = f"{name}|{cond}"
            times[key] = min(times.get(key, np.inf), dt)
            cpu[key] = min(cpu.get(key, np.inf), dc)
            if name == "plain":
                n_msg, q = res
                np.testing.assert_allclose(q, ref.iterates[0, -1], rtol=1e-9,
                                           atol=1e-9 * np.abs(q).max())
            else:
                n_msg = res.summary.messages_delivered
                np.testing.assert_allclose(res.Q, ref.Q, atol=1e-9)
            counts[key] = n_msg
        print(f"  repeat {rep + 1}/{args.repeats} done")
    print()
    print("messages per second of wall-clock time (and of process CPU time), best of "
          f"{args.repeats}:")
    print(f"{'workload':<38}{'messages':>11}{'engine msg/s':>15}{'plain msg/s':>14}"
          f"{'ratio':>8}{'ratio(cpu)':>12}")
    for cond in ("ideal", "exp(1 ms)"):
        ke, kp = f"engine|{cond}", f"plain|{cond}"
        assert counts[ke] == counts[kp], (counts[ke], counts[kp])
        n_msg = counts[ke]
        print(f"{'gossip only, ' + cond + ' links':<38}{n_msg:>11,}{n_msg / times[ke]:>15,.0f}"
              f"{n_msg / times[kp]:>14,.0f}{times[kp] / times[ke]:>8.2f}"
              f"{cpu[kp] / cpu[ke]:>12.2f}")
    key = "engine+transcript|ideal"
    print(f"{'  engine with in-memory transcript':<38}{counts[key]:>11,}"
          f"{counts[key] / times[key]:>15,.0f}")
    if not args.skip_full:
        t_mat, _ = best_of(args.repeats, lambda: run_matrix(data, net, params, seed))
        t_gos = times["engine|ideal"]
        print()
        for how in ("tree", "flood"):
            t_full, full = best_of(args.repeats, lambda h=how: run_engine(
                data, net, params, seed, record_transcript=False,
                conditions={"dissemination": h}))
            np.testing.assert_allclose(full.Q, ref.Q, atol=1e-9)
            s = full.summary
            if how == "tree":
                assert s.flood_messages == 2 * (net.m - 1)
            assert s.flood_messages <= net.m * (2 * E - net.m + 1)  # the unbatched flood's count
            print(f"full protocol, {how} dissemination (gossip {s.gossip_messages:,} + "
                  f"{s.flood_messages:,} dissemination messages, {s.bytes_delivered / 1e6:,.1f} MB): "
                  f"engine {t_full:.2f} s = {s.messages_delivered / t_full:,.0f} msg/s; matrix "
                  f"backend {t_mat * 1e3:.1f} ms: speed-up {t_full / t_mat:,.0f}x")
        print(f"gossip only: speed-up of the matrix backend {t_gos / t_mat:,.0f}x")

if __name__ == "__main__":
    main()
