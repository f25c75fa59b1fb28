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
