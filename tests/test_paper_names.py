"""User-facing text names the papers by their authors or titles, never by an internal numeric code.

README.md, docs/**/*.md, benchmarks/README.md and the shipped scenarios once cited the papers as "000"
(Nicolas et al.), "001" (Campbell et al.), "002" (Chien et al.), "003" (an earlier version of 000) and
"004" (Imtiaz and Sarwate): "001 Fig. 2", "000's comparison", "capePCA of 004", "(\"004\")", "seed 002".
A reader who clones the repository cannot resolve those; docs/index.md maps each paper to its pages.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

CODE = re.compile(
    r"(?<![\w.,+\-])"  # not the tail of a number or a name: 1,000  0.004  +0.002  100,004  1e-003
    r"(?<!= )(?<!=)"  # not a value: T = 002, delta=001
    r"00[0-4]"
    r"(?![\w]|[.,]\d)"  # not the head of a number: 001.5  004,2  0042
)
"""A paper code: a standalone ``000`` .. ``004`` that is not part of a number or a value."""


def user_facing_files() -> list[Path]:
    files = [ROOT / "README.md", ROOT / "benchmarks" / "README.md"]
    files += sorted((ROOT / "docs").rglob("*.md"))
    files += sorted((ROOT / "scenarios").glob("*.toml"))
    return [f for f in files if f.is_file()]


def code_mentions(text: str) -> list[tuple[int, str]]:
    """``(line number, line)`` of every line of ``text`` that cites a paper by its code."""
    return [(n, line.strip()) for n, line in enumerate(text.splitlines(), 1) if CODE.search(line)]


@pytest.mark.parametrize("line", [
    "the private power method of 000 with its",
    "| `paper-fig2-wine.toml` | 001 Fig. 2, Wine: D-DP-PM calibrated",
    "000's comparison at small scale",
    "capePCA of 004 ([docs/cape.md](docs/cape.md)",
    "Squares* (ICML 2021; seed 002, whose appendix holds Theorem 1",
    "Matrix and Tensor Factorization* (\"004\"), with two baselines",
    "(`d x d`). 000 writes `n` for the side of `A`",
    "(000, Algorithm 1, line 3)",
    "**Pooled utility (004, Lemma 1).**",
    "as in 001 (more",
    "## 4. 004's guarantee: one release at a time",
    "the LDP baseline of 001 Section IV-A",
    "improved (max row norm of the iterate, 000 Thm 3.1)",
    "# Paper 001, Fig. 3: at epsilon = 5",
    "D-DP-PM; '001' in this project's docs",
    "# Datasets used by the D-DP-PM paper (../seeds/001, Section IV)",
    "an earlier version (003) of the power method",
])
def test_the_pattern_catches_every_form_the_docs_used(line):
    assert code_mentions(line), line


@pytest.mark.parametrize("line", [
    "on a 1,000-agent random geometric graph",
    "| 1 | 7.95 / 8.85 | 1,001,420 | 2,002,840 |",
    "that pair is now +0.002 % and the largest fall",
    "reported as meeting (100, 0.002)): for target 0",
    "delta = [0.44, 0.2, 0.04, 0.007, 0.007, 0.006, 0.002]",
    "| Wine | D-DP-PM | (0.001 / 0.003 / 0.01 / 0.03) |",
    "noise = [{ schedule = \"constant\", scale = 0.0003 }]",
    "100,004 agents; T = 002; delta=001",
    "the improved bound of arXiv 2004.00010 (Proposition 12)",
    "orders 1.001, 1e-003 and 2001",
    "commit 0a004b1 of run_004",
])
def test_the_pattern_spares_numbers(line):
    assert not code_mentions(line), line


def test_user_facing_text_names_papers_by_authors():
    hits = []
    for path in user_facing_files():
        for n, line in code_mentions(path.read_text(encoding="utf-8")):
            hits.append(f"{path.relative_to(ROOT)}:{n}: {line[:160]}")
    assert not hits, ("a paper is cited by its internal code; name it by its authors or title "
                      "(docs/index.md, 'The papers'):\n" + "\n".join(hits))
