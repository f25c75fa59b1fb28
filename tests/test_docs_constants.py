"""docs/sweeps.md quotes the constants of the batching and chunking rules; they are the code's."""

from __future__ import annotations

from pathlib import Path

from dpgossip.scenario import batches, execute

ROOT = Path(__file__).resolve().parents[1]


def test_sweeps_page_quotes_the_code_constants():
    page = " ".join((ROOT / "docs" / "sweeps.md").read_text(encoding="utf-8").split())
    assert f"with `FLUSH_SECONDS = {batches.FLUSH_SECONDS:g}` and `MAX_BATCH = {batches.MAX_BATCH}`" in page
    assert (f"`CHUNKS_PER_LANE = {execute.CHUNKS_PER_LANE}` and `CHUNK_SECONDS = {execute.CHUNK_SECONDS:g}`"
            in page)
    assert f"(`OWN_LANE = {execute.OWN_LANE}`)" in page


def test_engine_page_quotes_the_per_block_flooding_counts():
    """docs/engine.md: per-block flooding sends ``m (2|E| - m + 1)`` messages per component, about
    10^8 on a 10,000-agent ring and 1.7 x 10^9 on a 10,000-agent random geometric graph (the package's
    builder at its default radius); the counts recomputed from the graphs the package builds."""
    import math

    from dpgossip.topology import make_network

    page = " ".join((ROOT / "docs" / "engine.md").read_text(encoding="utf-8").split())
    counts = {}
    for name in ("ring", "random_geometric"):
        m, edges = 10_000, make_network(name, agents=10_000, seed=0).graph.number_of_edges()
        counts[name] = m * (2 * edges - m + 1)
    assert round(math.log10(counts["ring"])) == 8
    mantissa = counts["random_geometric"] / 10 ** math.floor(math.log10(counts["random_geometric"]))
    printed = f"`{mantissa:.1f} x 10^{math.floor(math.log10(counts['random_geometric']))}`"
    assert f"about `10^8` on a 10,000-agent ring and {printed} on a 10,000-agent random geometric" in page
