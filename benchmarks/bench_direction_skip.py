"""Benchmark of the exact direction skip in ``GaussianPair.delta``: one target's quick search where epsilon
is large (Wine, the paper ring, T = 5, c = 5, constant sigma_p = 4, delta at epsilon = 100), with the skip
and with it disabled (every direction's exact value computed), interleaved, best of ``--repeats``.

    python benchmarks/bench_direction_skip.py [--repeats 2]

``delta`` is the larger of the two directions' hockey-stick values; a direction whose Chernoff tail bound
(an upper bound of its value) is at most the other's exact value cannot be the larger, so it is skipped.
The two runs must report the same worst delta.
"""

from __future__ import annotations

import argparse
import contextlib
import time
from unittest import mock

from dpgossip.data import load_dataset
from dpgossip.privacy import plrv
from dpgossip.protocols.ddppm.audit import AuditOptions, audit_pairs
from dpgossip.protocols.ddppm.params import NoiseSchedule, resolve_params
from dpgossip.topology import make_network


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()
    net = make_network("paper-ring4")
    data = load_dataset("wine", agents=4)
    params = resolve_params(data, net, iterations=5, consensus_steps=5,
                            noise=NoiseSchedule(kind="constant", scale=4.0))
    kw = dict(delta=0.002, epsilons=(100.0,), methods=("exact",), search="quick",
              options=AuditOptions(rank_by="delta", delta_resolution=2e-6, targets=[0]))
    best = {"skip": float("inf"), "no skip": float("inf")}
    value = {}
    for _ in range(args.repeats):
        for name in best:
            patch = (mock.patch.object(plrv.QuadraticFormLaw, "tail_bound", lambda self, x: 1.0)
                     if name == "no skip" else contextlib.nullcontext())
            with patch:
                t = time.perf_counter()
                res = audit_pairs(data, net, params, **kw)
                best[name] = min(best[name], time.perf_counter() - t)
            value[name] = res.worst("exact", by="delta").delta["exact"][0]
    for name, wall in best.items():
        print(f"{name:8s}: {wall:6.1f} s   worst delta(100) {value[name]:.12g}")
    print(f"ratio no skip / skip: {best['no skip'] / best['skip']:.2f}")


if __name__ == "__main__":
    main()
