"""Every stored results folder of docs/results/ has the command that writes it, once: in
docs/results/regenerate.sh (which reruns them) and in docs/results/README.md (which lists them), the
same command in both, on a shipped scenario."""

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "docs" / "results"


def _script_commands() -> dict[str, list[str]]:
    text = (RESULTS / "regenerate.sh").read_text(encoding="utf-8")
    return {k: v.split() for k, v in re.findall(r'^  \[([\w-]+)\]="([^"]+)"', text, re.M)}


def _readme_commands() -> dict[str, list[str]]:
    text = (RESULTS / "README.md").read_text(encoding="utf-8")
    return {k: v.split() for k, v in re.findall(r"^- `([\w-]+)/`: `dpgossip ([^`]+)`", text, re.M)}


def test_every_stored_folder_has_one_command_in_the_script_and_the_readme():
    folders = {p.name for p in RESULTS.iterdir() if p.is_dir()}
    script, readme = _script_commands(), _readme_commands()
    assert folders == set(script) == set(readme)
    for name, words in script.items():
        assert words[0] in ("run", "audit") and (ROOT / words[1]).is_file(), name
        listed = readme[name]
        at = listed.index("--out")
        assert listed[at + 1] == f"docs/results/{name}", name
        assert listed[:at] + listed[at + 2:] == words, name


def test_the_script_refuses_an_unknown_folder_and_writes_nothing(tmp_path):
    before = sorted(p.relative_to(RESULTS) for p in RESULTS.rglob("*"))
    done = subprocess.run(["bash", str(RESULTS / "regenerate.sh"), "no-such-folder"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "no folder 'no-such-folder'" in done.stderr
    assert "quickstart" in done.stderr.splitlines()[-1]  # it names the allowed folders
    assert sorted(p.relative_to(RESULTS) for p in RESULTS.rglob("*")) == before
