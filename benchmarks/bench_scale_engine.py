"""Scale of the engine (full protocol, batched dissemination) and of the matrix backend's noise streams.

Engine rows: ``run_engine`` with ideal links, full protocol (gossip + dissemination of ``q^(T)``), on a
random geometric graph (smallest radius, on a 2 % grid from mean degree 10, that gives a connected graph;
seed 2024) and on a ring, Metropolis weights, ``d = 20``, 5 rows per agent, ``T = 5``, ``c = 5``, rank 1,
fixed ``alpha`` and noise (no parameter rules: they need the spectrum, which is not what is measured).
Each row: messages (gossip, dissemination, blocks carried), the unbatched flood's count
``m (2|E| - m + 1)`` for comparison, wall seconds, peak RSS of a fresh child process.

Noise rows: :func:`dpgossip.rng.draw_run_noise` for ``m`` agents, 5 rows each, ``T = 10``, rank 1 (the
per-agent streams of the matrix backend), against spawning ``m`` ``SeedSequence`` + ``default_rng`` and
drawing per agent (the old path), which gives the same values (checked on the first 1,000 agents).

Dissemination (``--dissemination tree,flood,none``): along the BFS spanning tree (the default,
``2 (m - 1)`` messages per component), by batched flooding, or ``none`` (gossip only, for the split).
Tree rows also give the tree's height and the fraction of the broadcast's blocks that sending each
child only the complement of its subtree would save, ``(sum_v |sub(v)| - m) / ((m - 1) m)``.
``--check`` also runs the matrix backend and reports ``max |Q_engine - Q_matrix|``.

Run: ``python benchmarks/bench_scale_engine.py [--engine 1000,10000] [--ring 1000] [--noise 100000,1000000]
[--old-noise 100000] [--dissemination tree,flood] [--check]``. Each case runs in its own process (peak
memory per case). Not a test.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

import networkx as nx
import numpy as np
import scipy.sparse as sp

SEED = 2024


def metropolis(graph: nx.Graph, m: int) -> sp.csr_array:
    """Sparse Metropolis weights ``W_ij = 1 / (1 + max(d_i, d_j))``, diagonal completing rows to 1."""
    deg = np.array([graph.degree(i) for i in range(m)])
    e = np.array(list(graph.edges()), dtype=np.int64).reshape(-1, 2)
    w = 1.0 / (1 + np.maximum(deg[e[:, 0]], deg[e[:, 1]]))
    W = sp.coo_array((np.concatenate([w, w]), (np.concatenate([e[:, 0], e[:, 1]]),
                                              np.concatenate([e[:, 1], e[:, 0]]))), shape=(m, m))
    W = sp.csr_array(W)
    diag = 1.0 - np.asarray(W.sum(axis=1)).ravel()
    return sp.csr_array(W + sp.diags_array(diag))


def build_graph(kind: str, m: int) -> nx.Graph:
    if kind == "ring":
        return nx.cycle_graph(m)
    r0 = np.sqrt(10.0 / (np.pi * m))
    for k in range(200):
        g = nx.random_geometric_graph(m, r0 * 1.02 ** k, seed=SEED)
        if nx.is_connected(g):
            out = nx.Graph()
            out.add_nodes_from(range(m))
            out.add_edges_from(g.edges())
            return out
    raise RuntimeError("no connected graph")


def make_network(graph: nx.Graph, m: int, name: str):
    """A Network from a sparse W if Network takes one, else from the dense W."""
    from dpgossip.topology.network import Network
    W = metropolis(graph, m)
    try:
        return Network(graph=graph, W=W, name=name, mixing="metropolis")
    except (TypeError, ValueError):
        return Network(graph=graph, W=W.toarray(), name=name, mixing="metropolis")


def engine_case(kind: str, m: int, how: str = "tree", check: bool = False) -> dict:
    from dpgossip.data.partition import PartitionedData
    from dpgossip.protocols.ddppm.nodes import run_engine
    from dpgossip.protocols.ddppm.params import ProtocolParams
    t0 = time.perf_counter()
    graph = build_graph(kind, m)
    net = make_network(graph, m, f"{kind}{m}")
    rng = np.random.default_rng(SEED)
    X = rng.standard_normal((5 * m, 20))
    X /= np.linalg.norm(X, axis=1).max()
    data = PartitionedData(X=X, sizes=(5,) * m, name="bench")
    T, c = 5, 5
    params = ProtocolParams(iterations=T, consensus_steps=c, rank=1, alpha=(1.0,), sigma_q=1.0,
                            sigma_p=np.full((1, T), 0.1))
    setup = time.perf_counter() - t0
    t1 = time.perf_counter()
    res = run_engine(data, net, params, 7, record_transcript=False, disseminate=how != "none",
                     conditions={"dissemination": "auto" if how == "none" else how})
    wall = time.perf_counter() - t1
    s = res.summary
    E = graph.number_of_edges()
    extra = {}
    if check and how != "none":                     # engine = matrix backend (same seed)
        from dpgossip.protocols.ddppm.matrix import run_matrix
        ref = run_matrix(data, net, params, 7)
        extra["max_abs_diff_Q_vs_matrix"] = float(np.max(np.abs(ref.Q - res.Q)))
    if how == "tree":
        from dpgossip.engine.tree import bfs_tree
        tree = bfs_tree(net.neighbours)
        extra["tree_height"] = max(tree.depth)
        extra["down_blocks_saved_by_complements"] = round(
            (sum(tree.subtree_sizes()) - m) / ((m - 1) * m), 5)
    return {"case": f"engine {kind} {res.dissemination}", "m": m, "edges": E, "status": res.status,
            "gossip_messages": s.gossip_messages, "dissemination_messages": s.flood_messages,
            "unbatched_flood_messages": m * (2 * E - m + 1),
            "bytes_delivered": s.bytes_delivered, "setup_s": round(setup, 2),
            "wall_s": round(wall, 2), "msg_per_s": round(s.messages_delivered / wall), **extra}


def noise_case(m: int, old: bool) -> dict:
    from dpgossip.rng import draw_component_noise, draw_run_noise, run_streams
    sizes = (5,) * m
    sig = np.full((1, 10), 0.1)
    t0 = time.perf_counter()
    if old:
        streams = run_streams(3, m)
        out = [draw_component_noise(g, 5, 1.0, sig[0]) for g in streams.agents]
    else:
        out = draw_run_noise(3, sizes, 1.0, sig)
    wall = time.perf_counter() - t0
    if not old:
        k = min(m, 1000)
        st = run_streams(3, m).agents[:k] if m <= 10**5 else None
        if st is not None:
            ref = np.concatenate([draw_component_noise(g, 5, 1.0, sig[0]) for g in st], axis=1)
            assert np.array_equal(out[0][:, :5 * k], ref)
    return {"case": "noise " + ("per-agent spawn (old)" if old else "draw_run_noise"), "m": m,
            "wall_s": round(wall, 2)}


def child(spec: str) -> None:
    kind, m, how, check = (spec.split(":") + ["tree", ""])[:4]
    m = int(m)
    row = (noise_case(m, kind == "noise-old") if kind.startswith("noise")
           else engine_case(kind, m, how, check == "check"))
    row["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    print(json.dumps(row))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--engine", default="1000,10000", help="RGG sizes")
    ap.add_argument("--ring", default="1000", help="ring sizes")
    ap.add_argument("--noise", default="100000,1000000")
    ap.add_argument("--old-noise", default="100000")
    ap.add_argument("--dissemination", default="tree",
                    help="comma-separated: tree, flood, none (gossip only)")
    ap.add_argument("--check", action="store_true", help="also compare Q with run_matrix")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child)
        return
    tail = ":check" if args.check else ""
    hows = [h for h in args.dissemination.split(",") if h]
    specs = ([f"rgg:{m}:{h}{tail}" for m in args.engine.split(",") if m for h in hows]
             + [f"ring:{m}:{h}{tail}" for m in args.ring.split(",") if m for h in hows]
             + [f"noise:{m}" for m in args.noise.split(",") if m]
             + [f"noise-old:{m}" for m in args.old_noise.split(",") if m])
    for spec in specs:
        out = subprocess.run([sys.executable, __file__, "--child", spec], capture_output=True,
                             text=True, check=False)
        if out.returncode:
            print(spec, "failed:", out.stderr[-2000:])
            continue
        print(out.stdout.strip().splitlines()[-1], flush=True)


if __name__ == "__main__":
    main()
