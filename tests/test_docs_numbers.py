"""The numbers printed in README.md and docs/ are those the shipped scenarios' stored results hold.

``docs/numbers/`` holds what ``scripts/readme_tables.py`` wrote from the shipped scenarios' results
(paper-fig2); ``docs/results/`` holds results folders the commands wrote (the quickstart's
audit, paper-fig2's runs). These tests fail when the printed tables differ from them; docs/privacy.md's
example is checked by tests/test_docs_privacy_example.py, the pairwise-leakage numbers by
tests/test_docs_pairwise_leakage.py.
"""

import json
from pathlib import Path

import pytest

from tests.repo_scripts import load_script

ROOT = Path(__file__).resolve().parents[1]


def test_readme_prints_the_stored_paper_fig2_tables():
    tables = load_script("readme_tables")
    stored = tables.stored()
    assert set(stored) == {"paper-fig2-wine", "paper-fig2-diabetes", "paper-fig2-breast_cancer"}
    readme = (ROOT / "docs" / "paper.md").read_text(encoding="utf-8")
    for name, rows in stored.items():
        assert len(rows) == 7, name
        text = tables.table(rows)
        assert text in readme, f"README's {name} table differs from docs/numbers"
        (search,) = {r["search"] for r in rows}
        heading = readme[:readme.index(text)].rstrip().rsplit("\n\n", 1)[-1]
        label = {"candidates": "candidate"}.get(search, search)
        assert f"{label} search" in " ".join(heading.split()), (name, heading)  # says which search
        # README, "What reproduces": no budget is met on any dataset
        assert {r["met"] for r in rows} == {"no"}, name
    assert "**No noise level meets any of the paper's budgets** on the three datasets" in readme


@pytest.mark.parametrize("name", ["paper-fig2-wine", "paper-fig2-diabetes", "paper-fig2-breast_cancer"])
def test_the_stored_paper_fig2_table_is_the_stored_run_of_its_scenario(name):
    """docs/results/<name> holds the tables of ``dpgossip run scenarios/<name>.toml`` (the one
    search); the published table's lower estimates, noise and errors are read from them."""
    tables = load_script("readme_tables")
    folder = ROOT / "docs" / "results" / name
    assert json.loads((folder / "config.resolved.json").read_text(encoding="utf-8"))["name"] == name
    stored = tables.stored()[name]
    lower = [k for k in tables.COLUMNS if k in tables.from_results(folder)[0]]
    assert [{k: r[k] for k in lower} for r in stored] == tables.from_results(folder)


@pytest.mark.parametrize("name", ["paper-fig2-wine", "paper-fig2-diabetes"])
def test_the_run_s_own_certified_columns_are_the_published_ones(name):
    """The paper-fig2 runs stored with ``[privacy] delta_upper = true`` write the certified side of every
    calibration (``calibrated_epsilon_upper`` at the paper's delta, ``calibrated_delta_upper`` at the
    budget's epsilon, at the calibrated scale): the same numbers, as printed, that
    scripts/upper_numbers.py computed for the published table (Breast Cancer's run predates them)."""
    import csv

    from dpgossip.rounding import format_upper

    with open(ROOT / "docs" / "results" / name / "calibration.csv", newline="", encoding="utf-8") as fh:
        calibration = sorted(csv.DictReader(fh), key=lambda r: float(r["target_epsilon"]))
    published = load_script("readme_tables").stored()[name]
    assert len(calibration) == len(published) == 7
    for c, r in zip(calibration, published, strict=True):
        assert f"{float(c['target_epsilon']):g}" == r["epsilon"]
        assert format_upper(float(c["calibrated_epsilon_upper"]), 3) == r["epsilon_upper_at_paper_delta"]
        proven = float(c["calibrated_delta_upper"])
        assert ("1" if proven >= 1.0 else format_upper(proven, 3)) == r["delta_upper_at_epsilon"]
        assert float(c["calibrated_epsilon"]) <= float(c["calibrated_epsilon_upper"])


QUICKSTART_RESULTS = ROOT / "docs" / "results" / "quickstart-audit"
"""The stored output of `dpgossip audit scenarios/quickstart.toml --out DIR --no-plots`; a rerun writes
the same bytes (tests/test_cli.py::test_the_quickstart_audit_stops_at_the_epsilon_cap_and_says_so)."""

QUICKSTART_AUDIT = ("`dpgossip audit scenarios/quickstart.toml` stops {capped} of its {pairs} pairs at the "
                    "epsilon cap: for each, a neighbour was found whose exact epsilon at delta = 1e-5 "
                    "exceeds {cap}, and the certified upper bounds are {low} to {high}")

QUICKSTART_DELTA = ("its worst pair, by `dpgossip audit scenarios/quickstart.toml`: exact delta {delta} at "
                    "epsilon = 1, and every pair has a neighbour whose exact epsilon at delta = 1e-5 "
                    "exceeds the epsilon cap of {cap}, so the audit stops there in about 10 s; these are "
                    "lower estimates, beside certified upper bounds ([upper-bound.md](upper-bound.md)) "
                    "of {low} to {high} at delta = 1e-5")


def _quickstart_sentences(folder: Path) -> tuple[str, str]:
    """The two pages' sentences, formatted from an audit's output folder (bounds rounded up)."""
    import csv

    from dpgossip.rounding import format_upper

    with open(folder / "pairs.csv", encoding="utf-8") as fh:
        exact = [r for r in csv.DictReader(fh) if r["method"] == "exact"]
    capped = [r for r in exact if r["stopped_at_cap"] == "True"]
    caps = {float(r["epsilon"]) for r in capped}
    assert len(caps) == 1
    cap = f"{caps.pop():g}"
    uppers = [float(r["epsilon_upper"]) for r in exact]
    low, high = format_upper(min(uppers), 2), format_upper(max(uppers), 2)
    audit = QUICKSTART_AUDIT.format(capped=len(capped), pairs=len(exact), cap=cap, low=low, high=high)
    worst_delta = max(float(r["delta_at_eps_1"]) for r in exact)  # epsilon = 1, the default grid
    return audit, QUICKSTART_DELTA.format(delta=f"{worst_delta:.7f}", cap=cap, low=low, high=high)


def test_the_pages_print_the_stored_quickstart_audit():
    audit, delta = _quickstart_sentences(QUICKSTART_RESULTS)
    paper = " ".join((ROOT / "docs" / "paper.md").read_text(encoding="utf-8").split())
    results = " ".join((ROOT / "docs" / "results.md").read_text(encoding="utf-8").split())
    assert audit in paper and delta in results
    assert "stops 12 of its 12 pairs at the epsilon cap" in audit


def test_the_pages_sentences_on_breast_cancer_epsilons_match_the_table():
    """docs/paper.md: the lower estimates at the paper's deltas (one search, neighbours shared across
    the budgets) grow as delta shrinks, and the range the reading quotes is the table's."""
    stored = load_script("readme_tables").stored()["paper-fig2-breast_cancer"]
    rows = {r["epsilon"]: r for r in stored}
    at_2e4, also_2e4, at_1e4 = rows["10"], rows["20"], rows["40"]
    assert (at_2e4["paper_delta"], also_2e4["paper_delta"], at_1e4["paper_delta"]) == (
        "0.0002", "0.0002", "0.0001")
    a, b = at_2e4["epsilon_at_paper_delta"], at_1e4["epsilon_at_paper_delta"]
    assert also_2e4["epsilon_at_paper_delta"] == a and float(a) < float(b)  # one value per delta, monotone
    page = " ".join((ROOT / "docs" / "paper.md").read_text(encoding="utf-8").split())
    assert f"{a} at delta = 0.0002 (epsilon = 10 and 20) and {b} at 0.0001" in page
    ranked = sorted(stored, key=lambda r: float(r["epsilon_at_paper_delta"]))
    low, high = ranked[0]["epsilon_at_paper_delta"], ranked[-1]["epsilon_at_paper_delta"]
    assert f"(epsilon {low} to {high} at the paper's deltas)" in page


def test_privacy_page_quotes_the_example_parameters():
    """docs/privacy.md's example: alpha = 1/sqrt(mu_1 mu_2) and sigma_q = 1/sqrt(n) as resolve_params
    computes them on Wine over the paper's ring (T = 5, c = 5), to the printed digits."""
    import dpgossip as dg

    data = dg.load_dataset("wine", agents=4)
    params = dg.resolve_params(data, dg.make_network("paper-ring4"), iterations=5, consensus_steps=5)
    doc = " ".join((ROOT / "docs" / "privacy.md").read_text(encoding="utf-8").split())
    assert (f"`alpha = 1/sqrt(mu_1 mu_2) = {params.alpha[0]:.4f}`, "
            f"`sigma_q = 1/sqrt(n) = {params.sigma_q:.4f}`") in doc
    assert data.X.shape == (178, 13)
    assert f"Observer 0 attacks agent 1 ({data.sizes[1]} rows)" in doc

