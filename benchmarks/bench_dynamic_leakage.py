"""Exact all-pairs leakage of gossip under one sampled time-varying schedule on 10,000 agents.

Setting: a random geometric graph (``make_network("random_geometric", seed=0)``, radius
``sqrt(degree / (pi m))``, mean degree about ``degree``), noise ``sigma = 1`` on every agent,
sensitivity 1, RDP at order 2, epsilon at ``delta = 1e-5``.  Every agent observes alone and knows the
schedule.  Cases (one seeded schedule each, sampled here; the sampler is private to this benchmark):

``matchings-average``
    ``--rounds`` random matchings (each a greedy maximal matching of the edges in random order),
    ``gossip-average``.
``matchings-noisy``
    the same schedule, ``gossip-noisy`` with fixed inputs (noise every step).
``ticks-average``
    randomized pairwise gossip, ``--ticks-per-agent`` times ``m`` ticks (one uniformly drawn edge
    averages its ends), grouped into matching steps by
    :func:`~dpgossip.protocols.gossip.dynamic_allpairs.group_disjoint_ticks` (the same messages),
    ``gossip-average``.

For each case: wall time of :func:`~dpgossip.protocols.gossip.dynamic_allpairs.all_observers` over every
observer (epsilon included), pairs in reach (all others have ``mu = 0`` exactly), largest and mean ``mu``
in reach, peak resident memory (``ru_maxrss``, whole process so far), and side by side on
``--check-observers`` observers (schedule arrays shared) the full-view path
:func:`~dpgossip.protocols.gossip.dynamic_release.dynamic_leakage` (every agent a column): time per
observer of both and the largest difference of ``mu``.  Load average at start and end.

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_dynamic_leakage.py [--agents 10000] [--rounds 10]
        [--ticks-per-agent 5] [--degree 10] [--observers N] [--tick-observers N] [--check-observers 10]
        [--record FILE]

``--tick-observers`` limits the ticks case (its time for all observers is then an extrapolation,
labelled as such in the record).
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from dpgossip._threads import single_blas_thread
from dpgossip.privacy.linear_allpairs import gaussian_epsilons
from dpgossip.privacy.linear_audit import LinearAuditSettings
from dpgossip.protocols.gossip.dynamic_allpairs import (
    all_observers,
    group_disjoint_ticks,
    matching_steps,
    observer_reach_leakage,
)
from dpgossip.protocols.gossip.dynamic_release import dynamic_leakage, matching_matrix
from dpgossip.protocols.gossip.linear import LinearGossip
from dpgossip.topology import make_network

SETTINGS = LinearAuditSettings(sensitivity=1.0, orders=(2.0,), delta=1e-5)


def _network(m: int, degree: float, seed: int = 0):
    radius = math.sqrt(degree / (math.pi * m))
    return make_network("random_geometric", agents=m, seed=seed,
                        params={"radius": radius, "max_tries": 100})


def random_matchings(edges: np.ndarray, m: int, steps: int, rng: np.random.Generator) -> list:
    """Each step a greedy maximal matching: edges in random order, kept when both ends are free."""
    out = []
    for _ in range(steps):
        free = np.ones(m, dtype=bool)
        pairs = []
        for i, j in edges[rng.permutation(len(edges))].tolist():
            if free[i] and free[j]:
                free[i] = free[j] = False
                pairs.append((i, j))
        out.append(matching_matrix(m, pairs))
    return out


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _run_case(schedule: list, spec: LinearGossip, observers: list[int]) -> dict:
    start = time.perf_counter()
    in_reach = messages = 0
    top, total, inf = 0.0, 0.0, 0
    for row in all_observers(schedule, spec, SETTINGS, observers):
        eps = gaussian_epsilons(row.mu_upper, SETTINGS.delta)
        in_reach += row.targets.size
        messages += row.messages
        finite = row.mu_upper[np.isfinite(row.mu_upper)]
        inf += int(row.mu_upper.size - finite.size)
        top = max(top, float(finite.max(initial=0.0)))
        total += float(finite.sum())
        del eps
    wall = time.perf_counter() - start
    return {"observers": len(observers), "wall_s": wall, "per_observer_ms": 1e3 * wall / len(observers),
            "pairs_in_reach": in_reach, "mean_reach": in_reach / len(observers),
            "messages_per_observer": messages / len(observers), "max_mu": top,
            "mean_mu_in_reach": total / max(in_reach - inf, 1), "infinite": inf,
            "peak_rss_mb": _peak_mb()}


def _side_by_side(schedule: list, spec: LinearGossip, observers: list[int]) -> dict:
    """Per observer, the reach path (schedule arrays shared, as in all_observers) against the full view."""
    reach_t = full_t = 0.0
    worst = 0.0
    steps = matching_steps(schedule)
    Wt = None if steps is not None else [sp.csr_array(W.T) for W in schedule]
    for v in observers:
        t0 = time.perf_counter()
        row = observer_reach_leakage(schedule, spec, v, SETTINGS, transposed=Wt, steps=steps)
        t1 = time.perf_counter()
        full = dynamic_leakage(schedule, spec, v, SETTINGS, graph=None)
        t2 = time.perf_counter()
        reach_t, full_t = reach_t + t1 - t0, full_t + t2 - t1
        mu_full = np.array([r.mu for r in full])
        index = {r.target: k for k, r in enumerate(full)}
        got = np.zeros(mu_full.size)
        got[[index[u] for u in row.targets]] = row.mu
        worst = max(worst, float(np.max(np.abs(got - mu_full))))
    n = len(observers)
    return {"check_observers": n, "reach_ms": 1e3 * reach_t / n, "full_view_ms": 1e3 * full_t / n,
            "full_over_reach": full_t / reach_t, "max_abs_mu_difference": worst}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--agents", type=int, default=10_000)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--ticks-per-agent", type=int, default=5)
    ap.add_argument("--degree", type=float, default=10.0)
    ap.add_argument("--observers", type=int, default=None, help="first N observers (default all)")
    ap.add_argument("--tick-observers", type=int, default=None,
                    help="first N observers for ticks-average (default as --observers)")
    ap.add_argument("--check-observers", type=int, default=10)
    ap.add_argument("--record", type=Path, default=None)
    args = ap.parse_args()
    load_start = Path("/proc/loadavg").read_text().split()[:3]
    t0 = time.perf_counter()
    net = _network(args.agents, args.degree)
    m = net.m
    edges = np.array(sorted((min(e), max(e)) for e in net.graph.edges), dtype=np.int64)
    rng = np.random.default_rng(0)
    matchings = random_matchings(edges, m, args.rounds, rng)
    ticks = edges[rng.integers(len(edges), size=args.ticks_per_agent * m)].tolist()
    grouped, _ = group_disjoint_ticks(ticks, m)
    setup = time.perf_counter() - t0
    observers = list(range(m if args.observers is None else min(args.observers, m)))
    check = observers[:args.check_observers]
    cases = {"matchings-average": (matchings, LinearGossip(rounds=len(matchings), sigma=1.0)),
             "matchings-noisy": (matchings, LinearGossip(protocol="gossip-noisy", rounds=len(matchings),
                                                         sigma=1.0, inputs="fixed")),
             "ticks-average": (grouped, LinearGossip(rounds=len(grouped), sigma=1.0))}
    out = {"agents": m, "edges": int(len(edges)), "rounds": args.rounds, "ticks": len(ticks),
           "grouped_steps": len(grouped), "setup_s": setup, "load_start": load_start, "cases": {}}
    tick_obs = observers if args.tick_observers is None else observers[:args.tick_observers]
    with single_blas_thread():
        for name, (sched, spec) in cases.items():
            t1 = time.perf_counter()
            matching_steps(sched)
            prepare = time.perf_counter() - t1
            result = _run_case(sched, spec, tick_obs if name == "ticks-average" else observers)
            result["schedule_arrays_s"] = prepare
            if result["observers"] < m:  # an estimate from the measured observers, not a measurement
                result["extrapolated_all_observers_s"] = result["wall_s"] * m / result["observers"]
            result.update(_side_by_side(sched, spec, check))
            out["cases"][name] = result
            print(name, json.dumps(result), flush=True)
    out["load_end"] = Path("/proc/loadavg").read_text().split()[:3]
    out["peak_rss_mb"] = _peak_mb()
    print(json.dumps({k: v for k, v in out.items() if k != "cases"}))
    if args.record:
        args.record.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()


def summary_sentence(record: dict) -> str:
    """The sentence of docs/dynamic-leakage.md, Section 4, from a ``--record`` file."""
    m = record["cases"]["matchings-average"]
    n = record["cases"]["matchings-noisy"]
    t = record["cases"]["ticks-average"]
    ticks = (f"{t['wall_s']:.0f} s for {t['observers']:,} observers, {t['per_observer_ms']:.0f} ms each"
             + (f" (all {record['agents']:,} extrapolate to {t['extrapolated_all_observers_s']:.0f} s, "
                "an estimate)" if "extrapolated_all_observers_s" in t else ""))
    return (f"On {record['agents']:,} agents ({record['edges']:,} edges) with one sampled schedule, every "
            f"observer against every target: {record['rounds']} random matchings take "
            f"{m['wall_s']:.0f} s for gossip-average and {n['wall_s']:.0f} s for gossip-noisy "
            f"({m['mean_reach']:.0f} agents in reach per observer on average, "
            f"{m['messages_per_observer']:.1f} messages); randomized pairwise gossip with "
            f"{record['ticks']:,} ticks ({record['grouped_steps']} matching steps after grouping) takes "
            f"{ticks}. Peak resident memory {t['peak_rss_mb']:.0f} MB up to the end of the last "
            f"all-observer run, {record['peak_rss_mb']:.0f} MB for the whole process (the full-view "
            f"comparison builds a dense steps x messages x agents array). Side by side on "
            f"{m['check_observers']} observers the full view (every agent a column) takes "
            f"{m['full_over_reach']:.0f} times as long as the reach path on the matchings "
            f"(gossip-average) and {t['full_over_reach']:.0f} times on the grouped ticks, and agrees to "
            f"{max(c['max_abs_mu_difference'] for c in record['cases'].values()):.0e} in mu. Load "
            f"average {record['load_start'][0]} at the start, {record['load_end'][0]} at the end "
            f"(shared machine, one BLAS thread).")
