"""The pair audit of the shipped ``scenarios/pairwise-leakage.toml`` on N processes: wall and CPU seconds.

Builds the scenario's problem, then audits every (observer, target) pair as its ``[privacy]`` table says
(the shared search), with the targets searched by ``--processes`` spawned processes
(:func:`~dpgossip.protocols.ddppm.audit.audit_processes`). Prints the wall seconds, the CPU seconds of
this process and of the worker processes (``RUSAGE_CHILDREN``), the worst pair and the load average at
the start and the end. On ``P`` free cores the audit's wall time is about the workers' CPU seconds over
``P`` (the targets are handed out one at a time, so the processes stay busy to the last target).

    python benchmarks/bench_shipped_leakage.py --processes 2
"""

from __future__ import annotations

import argparse
import resource
import time
from pathlib import Path

SCENARIO = Path(__file__).resolve().parents[1] / "scenarios" / "pairwise-leakage.toml"


def main() -> None:
    from dpgossip.protocols.ddppm.audit import audit_processes
    from dpgossip.scenario import load_scenario
    from dpgossip.scenario.privacy_section import audit_config
    from dpgossip.scenario.problem import build_structure, resolve_problem

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--processes", type=int, default=2)
    args = ap.parse_args()
    print(f"load average at start: {open('/proc/loadavg').read().split()[:3]}")
    sc = load_scenario(SCENARIO)
    point = sc.points()[0]
    problem = resolve_problem(point.config, build_structure(point.config, sc.base))
    t0, c0 = time.perf_counter(), time.process_time()
    with audit_processes(args.processes):
        audit = audit_config(point.config, problem)
    wall, own = time.perf_counter() - t0, time.process_time() - c0
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    worst = audit.worst("rdp")
    print(f"{len(audit.results)} pairs on {args.processes} processes: wall {wall:.1f} s, CPU {own:.1f} s "
          f"in this process and {kids.ru_utime + kids.ru_stime:.1f} s in the workers; worst pair "
          f"{worst.epsilon['rdp']:.6g} (observer {worst.observer}, target {worst.target})")
    print(f"load average at end: {open('/proc/loadavg').read().split()[:3]}")


if __name__ == "__main__":
    main()
