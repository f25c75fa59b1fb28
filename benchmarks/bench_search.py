"""Benchmark of the worst-case search: the full 12-pair observer audit of the paper
setting (Wine, the paper's 4-agent ring, T = 5, c = 5, constant noise), each effort level side by side,
in one run. Reports the wall time, the time per pair of each stage (the stages
run per target for all its observers at once, so a stage's time is divided by the pairs of the target),
and the worst value found.

    python benchmarks/bench_search.py [--scale 1.0] [--epsilon 5] [--searches standard quick]
                                      [--workers 1 2]
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict

from dpgossip.data import load_dataset
from dpgossip.protocols.ddppm.audit import AuditOptions, audit_pairs
from dpgossip.protocols.ddppm.params import NoiseSchedule, resolve_params
from dpgossip.topology import make_network


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=1.0, help="constant sigma_p")
    ap.add_argument("--epsilon", type=float, default=5.0, help="delta is reported at this epsilon")
    ap.add_argument("--searches", nargs="+", default=["standard"],
                    help="presets or numbers of levels (standard is the default search)")
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2],
                    help="processes for the targets (each search runs once per value)")
    args = ap.parse_args()
    net = make_network("paper-ring4")
    data = load_dataset("wine", agents=4)
    params = resolve_params(data, net, iterations=5, consensus_steps=5,
                            noise=NoiseSchedule(kind="constant", scale=args.scale))
    print(f"Wine {data.n} x {data.d}, paper-ring4, T = 5, c = 5, constant sigma_p = {args.scale:g}; "
          f"12 (observer, target) pairs; exact delta at epsilon = {args.epsilon:g}")
    common = dict(delta=1e-5, epsilons=(args.epsilon,), methods=("exact",))
    for name, workers in [(n, w) for n in args.searches for w in args.workers]:
        t = time.perf_counter()
        res = audit_pairs(data, net, params, search=int(name) if name.isdigit() else name,
                          options=AuditOptions(rank_by="delta", workers=workers), **common)
        wall = time.perf_counter() - t
        w = res.worst("exact", by="delta")
        per_stage: dict[str, float] = defaultdict(float)
        for j in range(data.m):  # stage times of one target (shared by its pairs), per pair
            ev = res.results[((j + 1) % data.m, j)].evidence
            prev = 0.0
            for st in ev.stages:
                per_stage[st.stage] += (st.seconds - prev) / (data.m - 1)
                prev = st.seconds
        stages = ", ".join(f"{k} {v / data.m:.2f} s" for k, v in per_stage.items())
        print(f"search {name:9s} ({workers} process{'es' if workers > 1 else ''}): {wall:7.1f} s   "
              f"worst delta {w.delta['exact'][0]:.4g} "
              f"(observer {w.observer} -> target {w.target}, first-message bound "
              f"{w.evidence.first_message_bound:.4g}, values by level "
              f"{[round(v, 4) for v in w.evidence.level_values]}); per pair: {stages}")


if __name__ == "__main__":
    main()
