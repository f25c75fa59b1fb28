"""The all-pairs observer audit at growing sizes: time, peak memory and the time
per pair of each search stage.

Setting (each size in its own child process, so that its peak memory is its own): a random geometric graph
(``make_network("random_geometric", seed=0)``, Metropolis weights), synthetic data with 32 rows of d = 4 per
agent (flat spectrum 1, 0.9, 0.8, 0.7, not standardised, as ``scenarios/pairwise-leakage.toml``), T = 5,
c = 5, constant noise of scale 1, the observer view, bounded neighbours, delta = 1e-5, the default search
("standard") and the default methods (exact, rdp, chernoff; ``--methods`` changes them, the first ranks).

``--targets K`` audits only the first K targets (every observer of each): the whole audit's time is then
extrapolated linearly in the number of targets (every target's search is the same amount of work up to its
data) and printed as such. Peak memory is the child's maximum resident set size (``ru_maxrss``).

``--probe K`` (for sizes where the whole audit is out of reach) builds the auditor of K observers' views only
and times, per observer, the set-up (the joint whitening: covariance and pivoted Cholesky) and one
candidate's evaluation on its view (the pencil), plus the part of an evaluation shared by all views (the
row space of the change, on the full view), with the memory of the factors held (one BLAS thread, as the
audit); with the evaluations per target of a full run and its exact-stage time per pair this
extrapolates the all-pairs audit (printed as an estimate, not a measurement).

``--conversions N`` also times the RDP epsilon of N random Gaussian pairs at delta = 1e-5, scalar path
(``conversions.rdp_to_epsilon`` on ``WhitenedPair.renyi``, per direction) against the vectorised one
(``rdp_batch.whitened_rdp_epsilons``, all pairs and directions at once), side by side, and their largest
relative difference.

    python benchmarks/bench_scale_audit.py [--agents 16 64] [--targets 1] [--methods exact,rdp,chernoff]
                                           [--conversions 300]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from collections import defaultdict

import numpy as np

STAGES = ("screen", "starts", "ascent", "exact", "polish", "warm")


def problem(m: int, seed: int = 0):
    """The benchmark's data, network and parameters at ``m`` agents (module docstring)."""
    from dpgossip.data import load_dataset
    from dpgossip.protocols.ddppm.params import NoiseSchedule, resolve_params
    from dpgossip.topology import make_network

    net = make_network("random_geometric", agents=m, seed=seed)
    data = load_dataset("synthetic", agents=m, standardize=False,
                        synthetic={"n": 32 * m, "d": 4, "spectrum": [1.0, 0.9, 0.8, 0.7]},
                        rng=np.random.default_rng(seed))
    params = resolve_params(data, net, iterations=5, consensus_steps=5,
                            noise=NoiseSchedule(kind="constant", scale=1.0))
    return data, net, params


def stage_seconds(audit) -> dict[str, float]:
    """Seconds of each search stage summed over targets (from the evidence: every view of a target
    records the same cumulative clock, so one pair per target is read)."""
    out: dict[str, float] = defaultdict(float)
    seen = set()
    for (_o, j), res in sorted(audit.results.items()):
        if j in seen or res.evidence is None:
            continue
        seen.add(j)
        last = 0.0
        for st in res.evidence.stages:
            out[st.stage] += st.seconds - last
            last = st.seconds
    return dict(out)


def one(m: int, targets: int | None, methods: tuple[str, ...], search: str = "standard"
        ) -> dict[str, object]:
    """One size in this process with the search of effort ``search`` (``standard``: the default);
    returns the measured row."""
    from dpgossip.protocols.ddppm.audit import AuditOptions, audit_pairs

    data, net, params = problem(m)
    chosen = None if targets is None else list(range(min(targets, m)))
    t0 = time.perf_counter()
    audit = audit_pairs(data, net, params, delta=1e-5, epsilons=(1.0,), methods=methods, seed=0,
                        search=search, options=AuditOptions(targets=chosen))
    wall = time.perf_counter() - t0
    stages = stage_seconds(audit)
    pairs = len(audit.results)
    done = m if chosen is None else len(chosen)
    finite = [r.epsilon[methods[0]] for r in audit.results.values()]
    return {"agents": m, "targets": done, "pairs": pairs, "wall": wall,
            "wall_all_pairs": wall * m / done,
            "search": sum(stages.values()), "other": wall - sum(stages.values()),
            "per_pair": {s: stages[s] / pairs for s in STAGES if s in stages},
            "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "worst": float(np.max(finite)), "K": int(32 * m - 32)}


def conversions(count: int) -> None:
    """Scalar against vectorised RDP epsilon on ``count`` random whitened pairs (both directions)."""
    import warnings

    from dpgossip.privacy.conversions import rdp_to_epsilon
    from dpgossip.privacy.plrv import WhitenedPair
    from dpgossip.privacy.rdp_batch import whitened_rdp_epsilons

    rng = np.random.default_rng(1)
    pairs = []
    for _ in range(count):
        k = int(rng.integers(1, 12))
        w = WhitenedPair(np.exp(rng.normal(0, rng.choice([0.1, 1, 3]), k)),
                         rng.normal(0, rng.choice([0, 0.3, 3]), k), 0.0)
        pairs += [w, w.swapped()]
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        scalar = np.array([rdp_to_epsilon(w.renyi, 1e-5, a_max=w.a_max).value for w in pairs])
    t1 = time.perf_counter()
    batch = whitened_rdp_epsilons(pairs, 1e-5)
    t2 = time.perf_counter()
    fin = np.isfinite(scalar) & (scalar > 0)
    rel = np.abs(batch[fin] - scalar[fin]) / scalar[fin]
    print(f"RDP epsilon of {count} pairs (both directions): scalar {t1 - t0:.2f} s, vectorised "
          f"{t2 - t1:.3f} s, ratio {(t1 - t0) / (t2 - t1):.1f}x, largest relative difference "
          f"{rel.max():.2e}")


def probe(m: int, observers: int) -> dict[str, object]:
    """Set-up per observer and one evaluation per view at ``m`` agents, ``observers`` views built."""
    from dpgossip.privacy.neighbours import Neighbour
    from dpgossip.protocols.ddppm.auditor import ComponentAuditor
    from dpgossip.protocols.ddppm.lowrank import difference_rowspace, pencil_eigenvalues
    from dpgossip.protocols.ddppm.views import make_view

    data, net, params = problem(m)
    views = {o: make_view("observer", m=m, agents=(o,)) for o in range(1, observers + 1)}
    t0 = time.perf_counter()
    aud = ComponentAuditor(data, net, params, views)
    setup = (time.perf_counter() - t0) / observers
    r = int(data.offsets[0])
    nb = Neighbour(row=r, x_new=-data.X[r])
    X1 = nb.apply(data.X)
    t0 = time.perf_counter()
    C = difference_rowspace(aud.full0, aud._op(X1, aud._full_spec), rng=np.random.default_rng(0))
    shared = time.perf_counter() - t0
    t0 = time.perf_counter()
    for k in views:
        pencil_eigenvalues(aud.white[k], aud.ops0[k], aud._op(X1, aud.specs[k]), C)
    per_view = (time.perf_counter() - t0) / observers
    factor_mb = sum(w.white_u.L.nbytes for w in aud.white.values()) / observers / 2**20
    return {"agents": m, "observers": observers, "setup_per_observer": setup,
            "evaluation_per_view": per_view, "evaluation_shared": shared, "factor_mb_per_observer": factor_mb,
            "K": aud.dimension(1), "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--agents", type=int, nargs="*", default=[16, 64], help="sizes (none: skip)")
    ap.add_argument("--targets", type=int, default=None, help="audit only the first K targets")
    ap.add_argument("--methods", default="exact,rdp,chernoff")
    ap.add_argument("--search", default="standard", choices=("quick", "standard", "thorough"),
                    help="the search's effort (default: standard)")
    ap.add_argument("--probe", type=int, default=0, help="set-up and evaluation of K observers only")
    ap.add_argument("--conversions", type=int, default=0, help="time N RDP conversions (0: skip)")
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    methods = tuple(args.methods.split(","))
    if args.conversions and not args.one:
        conversions(args.conversions)
    if args.one:
        from dpgossip._threads import blas_threads

        with blas_threads(1):
            row = (probe(args.agents[0], args.probe) if args.probe
                   else one(args.agents[0], args.targets, methods, args.search))
        print(json.dumps(row))
        return
    if not args.agents:
        return
    if args.probe:
        print(f"{'agents':>6} {'K':>6} {'set-up s/observer':>18} {'eval ms/view':>13} {'+ ms/candidate':>15} "
              f"{'factor MB/observer':>19} {'peak MB':>8}")
        for m in args.agents:
            cmd = [sys.executable, __file__, "--one", "--agents", str(m), "--probe", str(args.probe)]
            res = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
                             .strip().splitlines()[-1])
            print(f"{m:>6} {res['K']:>6} {res['setup_per_observer']:>18.2f} "
                  f"{1e3 * res['evaluation_per_view']:>13.1f} {1e3 * res['evaluation_shared']:>15.1f} "
                  f"{res['factor_mb_per_observer']:>19.0f} "
                  f"{res['peak_mb']:>8.0f}", flush=True)
        return
    print(f"all-pairs observer audit, {args.search} search, methods {methods}, "
          f"targets {'all' if args.targets is None else args.targets}")
    print(f"{'agents':>6} {'pairs':>6} {'wall s':>9} {'all pairs s':>12} {'other s':>8} {'peak MB':>8}  "
          + " ".join(f"{s + ' ms/pair':>16}" for s in STAGES[:5]))
    for m in args.agents:
        cmd = [sys.executable, __file__, "--one", "--agents", str(m), "--methods", args.methods,
               "--search", args.search]
        if args.targets is not None:
            cmd += ["--targets", str(args.targets)]
        res = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
                         .strip().splitlines()[-1])
        per = res["per_pair"]
        print(f"{m:>6} {res['pairs']:>6} {res['wall']:>9.1f} {res['wall_all_pairs']:>12.1f} "
              f"{res['other']:>8.1f} {res['peak_mb']:>8.0f}  "
              + " ".join(f"{1e3 * per.get(s, 0.0):>16.1f}" for s in STAGES[:5]), flush=True)


if __name__ == "__main__":
    main()
