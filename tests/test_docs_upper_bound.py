"""The numbers of docs/upper-bound.md, Section 8.4, recomputed from the shipped pairwise-leakage scenario:
the certified bound with averaged mean terms against the truncated one, per target (about 3 s)."""

from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def test_the_averaged_gain_printed_in_upper_bound_md():
    from dpgossip.privacy.certified_bound import NoisyPowerIteration, certified_upper_bounds
    from dpgossip.rounding import format_upper
    from dpgossip.scenario import load_scenario
    from dpgossip.scenario.problem import build_structure, resolve_problem
    from tests.test_docs_pairwise_leakage import leakage_by_hops, leakage_pairs

    sc = load_scenario(ROOT / "scenarios" / "pairwise-leakage.toml")
    point = sc.points()[0]
    pb = resolve_problem(point.config, build_structure(point.config, sc.base))
    model = NoisyPowerIteration(X=pb.data.X, offsets=pb.data.offsets, W=pb.network.dense_W(),
                                consensus_steps=pb.params.consensus_steps, alpha=pb.params.alpha[0],
                                sigma_q=pb.params.sigma_q, sigma_p=pb.params.sigma_p[0])
    delta = point.config["privacy"]["delta"]
    best = certified_upper_bounds(model, delta)
    old = certified_upper_bounds(model, delta, mean_terms="truncated")
    ratio = [best[j].epsilon / old[j].epsilon for j in best]
    top = max(best, key=lambda j: best[j].epsilon)
    orders = [b.order for b in best.values()]
    assert all(b.mean_terms == "averaged" for b in best.values())
    assert all(b.epsilon_reverse >= b.epsilon_forward for b in best.values())
    doc = " ".join((ROOT / "docs" / "upper-bound.md").read_text(encoding="utf-8").split())
    stored = leakage_by_hops(leakage_pairs())  # the stored run's values by hop distance, as published
    near = max(float(r["gap_max"]) for r in stored if int(r["hops"]) <= 3)
    every = max(float(r["gap_max"]) for r in stored)
    def up(v: float) -> str:
        return format_upper(v, 4)

    for text in (f"upper / lower is now at most {near:.3g} within `c = 3` hops and at most {every:.3g} over",
                 f"is {min(ratio):.2f} to {max(ratio):.2f} of the truncated one",
                 f"target 0: {up(best[0].epsilon)} against {up(old[0].epsilon)}",  # bounds: rounded up
                 f"target {top}, the largest: {up(best[top].epsilon)} against {up(old[top].epsilon)}",
                 f"at orders {np.min(orders):.2f} to {np.max(orders):.2f}"):
        assert text in doc, text
