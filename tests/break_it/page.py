"""``docs/break-it.md`` generated from the break-it table (``tests/break_it/cases.py``):
``python -m tests.break_it.page > docs/break-it.md``; ``test_page.py`` fails when the two differ."""

from __future__ import annotations

import collections

from tests.break_it.cases import CASES, SURFACES, Case
from tests.break_it.toml_text import show

OUTCOMES = {"error": "clear error", "correct": "correct", "api": "clear error (ConfigError)"}

HEAD = """# Break-it cases

Bad and odd inputs on every surface of dpgossip, each with the outcome it has. The table is generated
from `tests/break_it/cases.py` (`python -m tests.break_it.page > docs/break-it.md`) and every case is
run by `tests/break_it/test_cases.py`; a test fails when this page and the cases differ.

- **clear error**: the command exits with the code shown (2: a mistake in the input), prints exactly one
  line on stderr (argparse's refusals print their usage line first), without a traceback, naming the
  key or value, and leaves every file as it was: nothing written, earlier results intact.
- **clear error (ConfigError)**: a Python API call raises `dpgossip.ConfigError` naming the argument.
- **correct**: the command runs and its result is checked (statuses, the tables of an uninterrupted
  run, nothing stale).

The base scenarios are tiny (4 agents on a ring, 16 synthetic rows, 2 iterations; `base` names which
kind's); the input column gives the edits made to it, or the command line. *Found* says what a case did
before this table was written, where that was a bad outcome (a traceback, a silent wrong or stale
result, a lost earlier result, a misleading message); each was fixed with the case as its regression
test.
"""


def _cell(text: str, width: int = 90) -> str:
    text = text.replace("|", "\\|").replace("\n", " ")
    return text if len(text) <= width else text[: width - 3] + "..."


def _input(case: Case) -> str:
    parts = []
    if case.api:
        return f"`{_cell(case.api)}`"
    if case.base and case.raw is None:
        parts.append(f"base {case.base}" + (f": `{_cell(show(case.edits))}`" if case.edits else ""))
    if case.raw is not None:
        parts.append("a scenario file of its own")
    if case.argv or case.surface == "cli":
        shown = " ".join(a.replace("\0", "\\0") for a in case.argv)
        parts.append(f"`dpgossip {_cell(shown)}`" if shown else "`dpgossip`")
    if case.files:
        parts.append("files " + ", ".join(f"`{n}`" for n, _ in case.files))
    if case.setup:
        parts.append(f"setup {case.setup}")
    return "; ".join(parts)


def _outcome(case: Case) -> str:
    text = OUTCOMES[case.expect]
    if case.expect == "error":
        text += f", exit {case.code}"
    if case.names:
        text += " naming " + ", ".join(f"`{n}`" for n in case.names)
    return text


def page() -> str:
    """The whole page."""
    counts = collections.Counter(c.surface for c in CASES)
    classes = collections.Counter(OUTCOMES[c.expect].split(" (")[0] for c in CASES)
    lines = [HEAD, "## Counts", "",
             f"{len(CASES)} cases: {classes['clear error']} clear errors, {classes['correct']} correct; "
             f"{sum(bool(c.found) for c in CASES)} bad outcomes found and fixed; "
             f"{sum(c.slow for c in CASES)} run under `-m slow` (subprocesses, signals, plug-ins).", "",
             "| surface | cases |", "|---|---|"]
    lines += [f"| {s} | {counts[s]} |" for s in SURFACES]
    lines += ["", "## The cases", "", "| case | surface | does | input | outcome | found |",
              "|---|---|---|---|---|---|"]
    for c in CASES:
        lines.append(f"| `{c.id}` | {c.surface} | {_cell(c.does)} | {_input(c)} | {_outcome(c)} | "
                     f"{_cell(c.found) or '-'} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(page(), end="")
