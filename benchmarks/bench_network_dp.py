"""Exact pairwise network DP of noisy gossip, every observer against every target.

Setting: a random geometric graph (``make_network("random_geometric", seed=0)``, radius
``sqrt(degree / (pi m))`` so that the mean degree is about ``degree``, Metropolis weights),
``gossip-noisy`` with fixed inputs (the same private value every round), noise of scale ``sigma = 1``
on every agent at every round, ``T = 10`` rounds, sensitivity 1, RDP at order 2, epsilon at
``delta = 1e-5``.  Every agent observes alone (it knows its own input and noise); its view is every
message of its neighbours.

Stage ``allpairs`` (default 10,000 agents): :func:`dpgossip.protocols.gossip.allpairs.run_all_pairs` of every
observer, rows written to ``--out`` (a temporary directory by default), with the progress bar; prints the
wall time, the number of pairs in reach (the others have ``mu = 0`` exactly), a summary of ``mu`` by hop
distance and the peak resident memory of the process (``ru_maxrss``) twice: at the end of the audit
(graph build and audit: the stage whose time is reported) and at the end (the rows read back for the
summary as well).  ``--record FILE`` stores these numbers as JSON (the README's all-pairs sentence is
:func:`allpairs_sentence` of docs/numbers/network-dp-allpairs.json, checked by
tests/test_docs_allpairs.py).

Stage ``ratio`` (default 1,000 agents, same rule): side by side in one process, one BLAS thread, the
all-pairs fast path (every observer, rows and epsilon included) against

* a dense implementation: the dense powers ``W^k`` (``k < T``, computed once, timed with it), then per
  observer the message maps ``J`` (rows ``sum_{k <= t} e_w^T W^k``) and ``B`` (block ``s`` of row
  ``(w, t)``: ``e_w^T W^{t-s} D``, the observer's own noise removed) as dense matrices and
  ``mu_u^2 = j_u^T (B B^T)^+ j_u`` by ``numpy.linalg.pinv`` (``mu`` only, no epsilon);
* :func:`dpgossip.protocols.gossip.audit.audit_gossip` per observer (sparse propagation, one SVD of the
  full ``B``; rows with epsilon), on the first ``--audit-observers`` observers.

Times per observer are measured on ``--ratio-observers`` observers each (default all) and the ratios are
per observer; the largest difference of ``mu^2`` between the methods is printed.

Stage ``big-ratio`` (at ``--agents``): per observer on the first ``--big-observers`` observers, side by
side, the fast path against ``linear_audit`` and against ``pinv(B B^T)`` of the explicit view built by
:func:`~dpgossip.protocols.gossip.linear.observe` (the dense powers of ``W`` would need ``8 T m^2`` bytes,
8 GB at 10,000 agents), with the all-observer times they extrapolate to (estimates, not measurements).

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_network_dp.py [--stage all|allpairs|ratio]
        [--agents 10000] [--dense-agents 1000] [--rounds 10] [--degree 10] [--out DIR] [--record FILE]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from dpgossip._threads import single_blas_thread
from dpgossip.privacy.allpairs_run import AllPairsSettings, read_all_pairs
from dpgossip.privacy.linear_audit import LinearAuditSettings
from dpgossip.protocols.gossip.allpairs import chunk_table, run_all_pairs
from dpgossip.protocols.gossip.audit import audit_gossip
from dpgossip.protocols.gossip.linear import LinearGossip, observe
from dpgossip.topology import make_network


def network(m: int, degree: float, seed: int):
    radius = math.sqrt(degree / (math.pi * m))
    return make_network("random_geometric", agents=m, seed=seed,
                        params={"radius": radius, "max_tries": 100})


def settings(chunk: int) -> AllPairsSettings:
    return AllPairsSettings(audit=LinearAuditSettings(orders=(2.0,), delta=1e-5), chunk=chunk)


def _peak_mib() -> int:
    """Peak resident memory of this process so far (``ru_maxrss``, KiB on Linux), in MiB."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)


def allpairs(args: argparse.Namespace) -> dict[str, object]:
    load_before = os.getloadavg()[0]
    t0 = time.perf_counter()
    net = network(args.agents, args.degree, args.seed)
    built = time.perf_counter() - t0
    degree = 2 * net.graph.number_of_edges() / net.m
    spec = LinearGossip(protocol="gossip-noisy", rounds=args.rounds, sigma=1.0, inputs="fixed")
    out = args.out or tempfile.mkdtemp(prefix="allpairs-")
    print(f"allpairs: m = {net.m}, mean degree {degree:.2f}, "
          f"T = {args.rounds}, network built in {built:.1f} s; rows to {out}", flush=True)
    run = run_all_pairs(net, spec, out, settings(args.chunk), progress=True)
    audit_peak = _peak_mib()
    print(f"allpairs: {run.chunks} chunks ({run.skipped} resumed), {run.pairs} pairs in reach written "
          f"in {run.seconds:.1f} s ({net.m} observers x {net.m - 1} targets = "
          f"{net.m * (net.m - 1)} pairs; the others have mu = 0 exactly); peak RSS up to the end of the "
          f"audit {audit_peak} MiB", flush=True)
    table = read_all_pairs(out).columns
    for h in range(1, args.rounds + 1):
        mu = table["mu"][table["hops"] == h]
        eps = table["epsilon"][table["hops"] == h]
        print(f"  hops {h:2d}: {mu.size:8d} pairs, mu mean {mu.mean():.4g} max {mu.max():.4g}, "
              f"epsilon(1e-5) mean {eps.mean():.4g} max {eps.max():.4g}")
    record = {"agents": net.m, "mean_degree": degree, "rounds": args.rounds, "chunks": run.chunks,
              "resumed_chunks": run.skipped, "pairs": run.pairs, "audit_seconds": run.seconds,
              "audit_peak_mib": audit_peak, "total_seconds": time.perf_counter() - t0,
              "total_peak_mib": _peak_mib(), "load_before": load_before,
              "load_after": os.getloadavg()[0]}
    print(f"allpairs: total wall {record['total_seconds']:.1f} s, peak RSS with the rows read back "
          f"{record['total_peak_mib']} MiB", flush=True)
    print(allpairs_sentence(record), flush=True)
    if args.record:
        Path(args.record).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return record


def allpairs_sentence(record: dict[str, object]) -> str:
    """The README's all-pairs numbers: the audit stage's time beside the audit stage's peak memory."""
    return (f"on a {record['agents']:,}-node random geometric graph (mean degree "
            f"{record['mean_degree']:.1f}): {record['pairs'] / 1e6:.1f} million pairs within T hops (every "
            f"other pair has mu = 0 exactly) in {record['audit_seconds']:.1f} s, with a peak resident memory "
            f"of {record['audit_peak_mib']} MiB up to the end of the audit (graph build included; the "
            f"benchmark's process, which then reads the rows back for its summary, peaks at "
            f"{record['total_peak_mib']} MiB), one BLAS thread, 1-minute load average "
            f"{record['load_before']:.2f} at the start and {record['load_after']:.2f} at the end")


def dense_powers(W: np.ndarray, rounds: int) -> list[np.ndarray]:
    powers = [np.eye(W.shape[0])]
    for _ in range(1, rounds):
        powers.append(powers[-1] @ W)
    return powers


def dense_observer(powers: list[np.ndarray], nbrs: list[int], v: int, sigma: np.ndarray) -> np.ndarray:
    """``mu_u^2`` of every agent for observer ``v`` by dense maps and ``pinv`` (module docstring)."""
    T, m = len(powers), powers[0].shape[0]
    scales = sigma.copy()
    scales[v] = 0.0
    cumulative = np.cumsum(np.stack([p[nbrs] for p in powers]), axis=0)
    J = cumulative.reshape(T * len(nbrs), m)
    B = np.zeros((T * len(nbrs), T * m))
    for t in range(T):
        for s in range(t + 1):
            B[t * len(nbrs):(t + 1) * len(nbrs), s * m:(s + 1) * m] = powers[t - s][nbrs] * scales
    J[:, v] = 0.0
    Sp = np.linalg.pinv(B @ B.T, hermitian=True)
    return np.einsum("ij,ij->j", J, Sp @ J)


def ratio(args: argparse.Namespace) -> None:
    net = network(args.dense_agents, args.degree, args.seed)
    m, T = net.m, args.rounds
    spec = LinearGossip(protocol="gossip-noisy", rounds=T, sigma=1.0, inputs="fixed")
    obs = np.arange(min(args.ratio_observers or m, m))
    s = settings(args.chunk)
    print(f"ratio: m = {m}, mean degree {2 * net.graph.number_of_edges() / m:.2f}, T = {T}, "
          f"{obs.size} observers each", flush=True)
    with single_blas_thread():
        t0 = time.perf_counter()
        fast = chunk_table(net, spec, obs, s).columns
        t_fast = time.perf_counter() - t0
        t0 = time.perf_counter()
        powers = dense_powers(net.W.toarray(), T)
        dense = [dense_observer(powers, list(net.neighbours[v]), int(v), np.ones(m)) for v in obs]
        t_dense = time.perf_counter() - t0
        t0 = time.perf_counter()
        n_audit = min(args.audit_observers, obs.size)
        audited = [audit_gossip(net, spec, int(v), s.audit) for v in obs[:n_audit]]
        t_audit = time.perf_counter() - t0
    gap = 0.0
    for i, v in enumerate(obs):
        rows = fast["observer"] == v
        full = np.zeros(m)
        full[fast["target"][rows]] = fast["mu"][rows] ** 2
        full[v] = 0.0
        gap = max(gap, float(np.max(np.abs(full - dense[i]))))
        if i < n_audit:
            ref = np.array([r.mu ** 2 for r in audited[i]])
            gap = max(gap, float(np.max(np.abs(np.delete(full, v) - ref))))
    per = (t_fast / obs.size, t_dense / obs.size, t_audit / max(n_audit, 1))
    print(f"ratio: fast {t_fast:.2f} s ({per[0] * 1e3:.2f} ms/observer), dense {t_dense:.2f} s "
          f"({per[1] * 1e3:.1f} ms/observer), linear_audit {t_audit:.2f} s for {n_audit} observers "
          f"({per[2] * 1e3:.1f} ms/observer)")
    print(f"ratio: dense / fast = {per[1] / per[0]:.0f}x, linear_audit / fast = {per[2] / per[0]:.0f}x "
          f"per observer; largest |mu^2 difference| {gap:.2e}", flush=True)


def big_ratio(args: argparse.Namespace) -> None:
    """At ``--agents``: per observer, the fast path against linear_audit and against ``pinv(B B^T)`` of
    the explicit view (``observe``: sparse propagation; dense powers of ``W`` would need ``T m^2 8``
    bytes, 8 GB at 10,000 agents), on the first ``--big-observers`` observers, side by side."""
    net = network(args.agents, args.degree, args.seed)
    spec = LinearGossip(protocol="gossip-noisy", rounds=args.rounds, sigma=1.0, inputs="fixed")
    obs = np.arange(args.big_observers)
    s = settings(args.chunk)
    with single_blas_thread():
        t0 = time.perf_counter()
        fast = chunk_table(net, spec, obs, s).columns
        t_fast = (time.perf_counter() - t0) / obs.size
        t0 = time.perf_counter()
        audited = [audit_gossip(net, spec, int(v), s.audit) for v in obs]
        t_audit = (time.perf_counter() - t0) / obs.size
        t0 = time.perf_counter()
        pinv = []
        for v in obs:
            view = observe(net, spec, int(v))
            Sp = np.linalg.pinv(view.B @ view.B.T, hermitian=True)
            pinv.append(np.einsum("ij,ij->j", view.J, Sp @ view.J))
        t_pinv = (time.perf_counter() - t0) / obs.size
    gap = 0.0
    for i, v in enumerate(obs):
        full = np.zeros(net.m)
        rows = fast["observer"] == v
        full[fast["target"][rows]] = fast["mu"][rows] ** 2
        ref = np.array([r.mu ** 2 for r in audited[i]])
        gap = max(gap, float(np.max(np.abs(np.delete(full, v) - ref))),
                  float(np.max(np.abs(np.delete(full, v) - pinv[i]))))
    print(f"big ratio: m = {net.m}, {obs.size} observers: fast {t_fast * 1e3:.1f} ms/observer, "
          f"linear_audit {t_audit * 1e3:.0f} ms/observer ({t_audit / t_fast:.0f}x), pinv of the "
          f"explicit view {t_pinv * 1e3:.0f} ms/observer ({t_pinv / t_fast:.0f}x); largest |mu^2 "
          f"difference| {gap:.2e}; all {net.m} observers extrapolated: linear_audit "
          f"{t_audit * net.m / 3600:.1f} h, pinv {t_pinv * net.m / 3600:.1f} h", flush=True)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--stage", choices=("all", "allpairs", "ratio", "big-ratio"), default="all")
    p.add_argument("--big-observers", type=int, default=5)
    p.add_argument("--agents", type=int, default=10_000)
    p.add_argument("--dense-agents", type=int, default=1000)
    p.add_argument("--ratio-observers", type=int, default=0, help="0: every observer")
    p.add_argument("--audit-observers", type=int, default=100)
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--degree", type=float, default=10.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--chunk", type=int, default=64)
    p.add_argument("--out", default=None)
    p.add_argument("--record", default=None, help="store the allpairs stage's numbers as JSON here")
    args = p.parse_args(argv)
    if args.stage in ("all", "ratio"):
        ratio(args)
    if args.stage in ("all", "allpairs"):
        allpairs(args)
    if args.stage in ("all", "big-ratio"):
        big_ratio(args)


if __name__ == "__main__":
    sys.exit(main())
