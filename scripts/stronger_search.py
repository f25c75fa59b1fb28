"""A stronger worst-case search than the default, as a check of published D-DP-PM worst pairs.

For one point of a scenario (``--point``, its index in the audited sweep) this audits every (observer,
target) pair twice with the same seed: with the scenario's own search, and with a much stronger one (more
levels, more random starts per row, more rows and ascent steps, more candidates given exact values;
:data:`STRONG`). Both report values of actual neighbours, so each is a lower estimate of the worst case
over neighbours of this ``X``; the stronger one's worst pair is printed next to the default's with their
relative difference. Where the stronger search beats a published number by more than 1 %, the published
number should be the stronger one's (docs/audit-scale.md).

    python scripts/stronger_search.py scenarios/paper-fig3.toml --point 0 [--json out.json]
    python scripts/stronger_search.py scenarios/paper-fig3.toml --all --json out.jsonl   # every point,
        # the checking search only, one JSON line per point appended (a rerun skips the points done)
    python scripts/stronger_search.py scenarios/paper-fig2-wine.toml --all --noise-scale 4 --json out.jsonl
        # every calibrated point audited at the scale its calibration ended at (no calibration run)
    python scripts/stronger_search.py --example geometric 1 delta   # the docs/privacy.md example
    python scripts/stronger_search.py --examples    # every schedule of that example, ranked by delta:
        # writes docs/numbers/privacy-example-strong.json (docs/privacy.md prints its worst deltas)

Slow (minutes to hours): a checking tool, not part of the test suite.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from dpgossip.protocols.ddppm.audit import AuditOptions, audit_pairs, result_pair
from dpgossip.protocols.ddppm.search import SearchSettings
from dpgossip.scenario import load_scenario, privacy_section
from dpgossip.scenario.audit_run import plan_audit
from dpgossip.scenario.problem import build_structure, resolve_problem

EXAMPLES_OUT = Path(__file__).resolve().parents[1] / "docs" / "numbers" / "privacy-example-strong.json"
EXAMPLE_SCHEDULES = (("geometric", 1.0), ("constant", 0.1), ("constant", 1.0), ("constant", 10.0))
"""The schedules of the docs/privacy.md example (scripts/privacy_example.py)."""
STRONG = SearchSettings(name="strong-check", levels=4, rows=4, random=16, steps=6, starts=4, exact=6,
                        reduced=True)
"""The checking search: four levels (each doubling the one before) from 4 rows, 16 random directions
and 6 ascent steps per start at level 0, 4 starts per view, 6 candidates per view given exact values;
every view searched on its own. Where they apply (rank 1, observer views, more than ``d`` rows per
agent) the views are evaluated reduced (the same divergences, docs/audit-scale.md Sections 7 to 9)."""


def audited_points(path: Path):
    """The scenario and its audited points (the audit's plan; nothing is written)."""
    sc = load_scenario(path)
    with tempfile.TemporaryDirectory() as tmp:  # the plan checks an output folder
        return sc, plan_audit(sc, out=Path(tmp) / "plan", force=True).tasks


def at_scale(config: dict, scale: float) -> dict:
    """A calibrated point's configuration audited at the noise ``scale`` instead of being calibrated:
    the calibration's schedule at that scale, ranked as the calibration's final audit ranks (the exact
    delta at its target epsilon, the surrogate at its target delta). paper-fig2 publishes, for every
    point, the final audit at the scale its calibration ended at (the floor, ``sigma_p = 4``)."""
    cfg = {k: (dict(v) if isinstance(v, dict) else v) for k, v in config.items()}
    cal = cfg["privacy"].pop("calibrate", None)
    if not cal:
        raise SystemExit("--noise-scale applies to points with privacy.calibrate only")
    cfg["protocol"]["noise"] = {"schedule": cal["family"], "scale": float(scale)}
    cfg["privacy"].update(epsilon=[float(cal["epsilon"])], delta=float(cal["delta"]),
                          rank_by="delta", methods=[cal["method"]])
    return cfg


def point_problem(path: Path, index: int, points=None, scale: float | None = None):
    """The configuration, problem and axes of one audited point of a scenario (``points``: its
    :func:`audited_points`, when already planned); with ``scale``, a calibrated point audited at that
    noise scale (:func:`at_scale`) instead of calibrated."""
    sc, tasks = points if points is not None else audited_points(path)
    task = tasks[index]
    structure = build_structure(task.config, sc.base)
    if scale is not None:
        cfg = at_scale(task.config, scale)
    else:
        cfg, _ = privacy_section.prepare_point(task.config, structure)
    return cfg, resolve_problem(cfg, structure), dict(task.axes)


def _ranking(cfg: dict) -> tuple[str, str]:
    """The conversion and the quantity (``delta`` or ``epsilon``) a point's audit ranks pairs by."""
    priv = cfg["privacy"]
    return priv["methods"][0], "delta" if priv["rank_by"] == "delta" else "epsilon"


def _value(result, meth: str, by: str) -> float:
    """A pair result's ranked quantity."""
    return result.delta[meth][0] if by == "delta" else result.epsilon[meth]


def _checking_audit(cfg: dict, problem, search, workers: int = 1, targets: list[int] | None = None):
    """The point's pairs (of ``targets``, default all) audited with ``search``, ranked as the point
    ranks them, without the certified bound (not what is checked)."""
    priv = cfg["privacy"]
    return audit_pairs(problem.data, problem.network, problem.params, delta=priv["delta"],
                       epsilons=list(priv["epsilon"]), view=priv["view"],
                       neighbours=priv["neighbours"], search=search, seed=cfg["seed"],
                       methods=priv["methods"],
                       options=AuditOptions(rank_by=priv["rank_by"], workers=workers, targets=targets,
                                            upper_bound=False))


def _worst_record(res, meth: str, by: str) -> dict[str, object]:
    """The worst pair of an audit: its quantity, value, pair and neighbour."""
    w = res.worst(meth, by=by)
    what = f"delta at epsilon {res.epsilons[0]:g}" if by == "delta" else "epsilon"
    return {"quantity": f"{meth} {what}", "value": _value(w, meth, by), "observer": w.observer,
            "target": w.target, "row": w.neighbour.row,
            "replacement": [float(v) for v in w.neighbour.x_new], "label": w.neighbour.label}


def audit(cfg: dict, problem, search, workers: int = 1, epsilon_of_worst: bool = False
          ) -> tuple[dict[str, object], float]:
    """Every pair with ``search``; the worst pair's numbers (ranked as the scenario ranks) and seconds.
    ``epsilon_of_worst`` (ranked by delta): also the exact epsilon at ``privacy.delta`` of the worst
    pair's neighbour, as a calibration records it (``epsilon_of_worst``)."""
    meth, by = _ranking(cfg)
    t0 = time.perf_counter()
    res = _checking_audit(cfg, problem, search, workers)
    out = {**_worst_record(res, meth, by),
           "pairs": {f"{o},{j}": _value(r, meth, by) for (o, j), r in sorted(res.results.items())}}
    if epsilon_of_worst and by == "delta":
        pair = result_pair(res, problem.data, problem.network, problem.params, out["observer"],
                           out["target"])
        out["epsilon_of_worst"] = float(pair.epsilon(cfg["privacy"]["delta"], meth))
    return out, time.perf_counter() - t0


def example(schedule: str, scale: float, rank_by: str) -> dict[str, object]:
    """The worked example of docs/privacy.md (scripts/privacy_example.py: Wine, paper ring, T = 5,
    c = 5, observer 0 against agent 1, the observer view) at one noise schedule, audited by
    :data:`STRONG`; ``rank_by = "delta"`` maximises the exact delta at epsilon = 5 (no epsilon solved
    during the search), ``"epsilon"`` the exact epsilon at delta = 1e-5."""
    from dpgossip.data import load_dataset
    from dpgossip.protocols.ddppm.params import NoiseSchedule, resolve_params
    from dpgossip.topology import make_network

    net = make_network("paper-ring4")
    data = load_dataset("wine", agents=4)
    params = resolve_params(data, net, iterations=5, consensus_steps=5,
                            noise=NoiseSchedule(kind=schedule, scale=scale))
    t0 = time.perf_counter()
    res = audit_pairs(data, net, params, delta=1e-5, epsilons=(5.0,), search=STRONG,
                      methods=("exact",), options=AuditOptions(targets=[1], observers=[0],
                                                               rank_by=rank_by))
    r = res.results[(0, 1)]
    pair = None
    if rank_by == "delta":  # the epsilon of the neighbour found, solved once
        pair = result_pair(res, data, net, params, 0, 1)
    return {"schedule": schedule, "scale": scale, "rank_by": rank_by,
            "delta_exact_at_5": r.delta["exact"][0],
            "epsilon_exact": (r.epsilon["exact"] if pair is None
                              else float(pair.epsilon(1e-5, "exact"))),
            "row": r.neighbour.row, "replacement": [float(v) for v in r.neighbour.x_new],
            "label": r.neighbour.label, "seconds": time.perf_counter() - t0}


def worst_target_check(cfg: dict, problem, workers: int = 1) -> tuple[dict[str, object], float]:
    """The scenario's own audit of every pair (as its ``[privacy]`` section says, the search's options
    included), then :data:`STRONG` on the target of its worst pair only (for scenarios whose every pair
    is too slow to search with :data:`STRONG`): both worst values, ranked as the scenario ranks."""
    meth, by = _ranking(cfg)
    t0 = time.perf_counter()
    base = _worst_record(privacy_section.audit_config(cfg, problem, workers=workers, upper_bound=False),
                         meth, by)
    t1 = time.perf_counter()
    strong = _worst_record(_checking_audit(cfg, problem, STRONG, targets=[int(base["target"])]), meth, by)
    default = {"search": str(cfg["privacy"]["search"]),
               **{k: base[k] for k in ("value", "observer", "target", "row", "label")},
               "seconds": t1 - t0}
    return {"quantity": strong["quantity"], "default": default,
            **{k: v for k, v in strong.items() if k != "quantity"},
            "targets_searched": [base["target"]]}, time.perf_counter() - t1


def every_point(path: Path, out: Path | None, workers: int, scale: float | None = None,
                only: list[int] | None = None, worst_target: bool = False) -> None:
    """:data:`STRONG` on every audited point of a scenario, one JSON line per point appended to ``out``
    as it finishes (points already in ``out`` are skipped, so an interrupted run resumes); with
    ``scale``, every (calibrated) point at that noise scale (:func:`at_scale`); ``only``: these points
    (indices) instead of all; ``worst_target``: :func:`worst_target_check` instead of every pair."""
    points = audited_points(path)
    done = set()
    if out is not None and out.exists():
        done = {json.loads(line)["point"] for line in out.read_text(encoding="utf-8").splitlines()
                if line.strip()}
    for index in range(len(points[1])):
        if index in done or (only is not None and index not in only):
            continue
        cfg, problem, axes = point_problem(path, index, points, scale)
        if worst_target:
            strong, sec = worst_target_check(cfg, problem, workers)
        else:
            strong, sec = audit(cfg, problem, STRONG, workers, epsilon_of_worst=scale is not None)
            strong.pop("pairs")
        record = {"point": index, "axes": axes, "strong": strong, "seconds": sec}
        if scale is not None:
            record["noise_scale"] = scale
        line = json.dumps(record, default=str)
        print(line, flush=True)
        if out is not None:
            with out.open("a", encoding="utf-8") as fh:
                fh.write(line + "\n")


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("scenario", type=Path, nargs="?")
    ap.add_argument("--example", nargs=3, metavar=("SCHEDULE", "SCALE", "RANK_BY"),
                    help="the docs/privacy.md example instead of a scenario, e.g. constant 1 epsilon")
    ap.add_argument("--examples", action="store_true",
                    help="every schedule of the docs/privacy.md example, ranked by delta at epsilon = 5; "
                    "writes docs/numbers/privacy-example-strong.json")
    ap.add_argument("--point", type=int, default=0)
    ap.add_argument("--all", action="store_true",
                    help="every point, the checking search only; --json is a JSON-lines file, appended")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--workers", type=int, default=1, help="processes for the targets (default 1)")
    ap.add_argument("--points", type=lambda t: [int(v) for v in t.split(",")], default=None,
                    help="with --all: only these points (comma-separated indices)")
    ap.add_argument("--worst-target", action="store_true",
                    help="with --all: the scenario's own audit, then the checking search on the target "
                    "of its worst pair only")
    ap.add_argument("--noise-scale", type=float, default=None,
                    help="audit calibrated points at this noise scale instead of calibrating them "
                    "(paper-fig2: 4, the floor every point's calibration ended at)")
    ap.add_argument("--published", type=float, default=None,
                    help="compare with this published worst value instead of running the default search")
    args = ap.parse_args(argv)
    if args.examples:
        rows = []
        for schedule, scale in EXAMPLE_SCHEDULES:
            rows.append(example(schedule, scale, "delta"))
            print(json.dumps(rows[-1]), flush=True)
        EXAMPLES_OUT.write_text(json.dumps({
            "command": "python scripts/stronger_search.py --examples", "search": STRONG.name,
            "rank_by": "delta", "epsilon": 5.0, "delta": 1e-5, "observer": 0, "target": 1,
            "rows": rows}, indent=1) + "\n", encoding="utf-8")
        return
    if args.example:
        got = example(args.example[0], float(args.example[1]), args.example[2])
        print(json.dumps(got, indent=1))
        if args.json:
            args.json.write_text(json.dumps(got, indent=1))
        return
    if args.all:
        every_point(args.scenario, args.json, args.workers, args.noise_scale, args.points,
                    args.worst_target)
        return
    cfg, problem, axes = point_problem(args.scenario, args.point, scale=args.noise_scale)
    if args.published is not None:  # compare with the published worst value, no default search
        base, t_base = {"quantity": "published", "value": args.published, "observer": "?",
                        "target": "?", "row": "?", "label": "published"}, 0.0
    else:
        base, t_base = audit(cfg, problem, cfg["privacy"]["search"], args.workers)
    strong, t_strong = audit(cfg, problem, STRONG, args.workers,
                             epsilon_of_worst=args.noise_scale is not None)
    rel = (strong["value"] - base["value"]) / abs(base["value"]) if base["value"] else float("nan")
    print(f"{args.scenario.name} point {args.point} {axes}: {base['quantity']}")
    print(f"  {cfg['privacy']['search']:>12}: {base['value']:.6g} (pair {base['observer']},"
          f"{base['target']}, row {base['row']}, {base['label']}) in {t_base:.1f} s")
    print(f"  {'strong-check':>12}: {strong['value']:.6g} (pair {strong['observer']},"
          f"{strong['target']}, row {strong['row']}, {strong['label']}) in {t_strong:.1f} s")
    print(f"  relative difference {rel:+.4%}")
    if args.json:
        args.json.write_text(json.dumps({"point": args.point, "axes": axes, "default": base,
                                         "strong": strong, "relative": rel,
                                         "seconds": [t_base, t_strong]}, indent=1, default=str))


if __name__ == "__main__":
    main()
