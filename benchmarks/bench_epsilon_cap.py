"""The epsilon cap of the pair audit, side by side with the uncapped search, on the quickstart.

Setting: ``scenarios/quickstart.toml`` (the paper's 4-agent ring, Wine, T = 10, c = 5, Corollary 1's
geometric noise at scale 0.05), the observer view, bounded neighbours, delta = 1e-5, the standard
search ranked by the exact epsilon, one BLAS thread (the audit sets it). The uncapped search takes
minutes per target, so ``--pairs`` audits the first K (observer, target) pairs of target 0 (observers
1, 2, 3), with the default cap of 1000 and with no cap, interleaved, ``--repeats`` times; it prints the
wall seconds of each (best of the repeats), their ratio, and each run's value: the capped value is the
cap ("at least"), the uncapped one the exact epsilon of the worst neighbour found (a lower estimate of
the worst case, far above the cap).

    python benchmarks/bench_epsilon_cap.py --pairs 1 --repeats 1
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _quickstart():
    from dpgossip.scenario import load_scenario
    from dpgossip.scenario.problem import build_structure, resolve_problem

    sc = load_scenario(ROOT / "scenarios" / "quickstart.toml")
    point = sc.points()[0]
    return resolve_problem(point.config, build_structure(point.config, sc.base))


def _audit(problem, observers: list[int], cap: float | None) -> tuple[float, float]:
    from dpgossip.protocols.ddppm.audit import AuditOptions, audit_pairs

    t0 = time.perf_counter()
    audit = audit_pairs(problem.data, problem.network, problem.params, delta=1e-5, methods=("exact",),
                        epsilon_cap=cap,
                        options=AuditOptions(targets=[0], observers=observers, upper_bound=False))
    seconds = time.perf_counter() - t0
    return seconds, max(r.epsilon["exact"] for r in audit.results.values())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=1, help="pairs of target 0 audited (1..3)")
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    problem = _quickstart()
    observers = [1, 2, 3][: max(1, min(3, args.pairs))]
    best: dict[str, float] = {}
    values: dict[str, float] = {}
    for _ in range(args.repeats):
        for name, cap in (("cap 1000", 1000.0), ("no cap", None)):
            seconds, value = _audit(problem, observers, cap)
            best[name] = min(best.get(name, float("inf")), seconds)
            values[name] = value
    print(f"quickstart, target 0, observers {observers}, standard search, exact epsilon at 1e-5")
    for name in best:
        print(f"  {name:9s} {best[name]:9.2f} s   worst value {values[name]:.4g}")
    print(f"  ratio (no cap / cap 1000): {best['no cap'] / best['cap 1000']:.1f}")


if __name__ == "__main__":
    main()
