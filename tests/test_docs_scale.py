"""docs/scale.md prints the table that benchmarks/bench_scale.py stored in docs/numbers/scale.csv."""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _bench():
    spec = importlib.util.spec_from_file_location("bench_scale", ROOT / "benchmarks" / "bench_scale.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_docs_scale_prints_the_stored_table():
    bench = _bench()
    rows = bench.read_csv(ROOT / "docs" / "numbers" / "scale.csv")
    cases = {(int(r["agents"]), r["topology"], r["stage"]) for r in rows}
    for m in (1000, 10000, 100000):
        for topo in ("ring", "random_geometric", "erdos_renyi"):
            assert {(m, topo, "topology"), (m, topo, "run")} <= cases
    assert (1_000_000, "ring", "run") in cases
    doc = (ROOT / "docs" / "scale.md").read_text(encoding="utf-8")
    assert bench.markdown_table(rows) in doc
    assert bench.target_table(rows) in doc
    assert (ROOT / "docs" / "img" / "scale.png").is_file()


def test_readme_prints_the_stored_targets():
    bench = _bench()
    rows = bench.read_csv(ROOT / "docs" / "numbers" / "scale.csv")
    readme = (ROOT / "docs" / "benchmarks.md").read_text(encoding="utf-8")
    assert bench.target_table(rows) in readme
