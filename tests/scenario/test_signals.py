"""`kill` (SIGTERM) on a pooled sweep: the workers are stopped with the parent (no orphans left burning
CPU), the finished points are kept, and running the command again finishes the sweep."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

# Slow points (many iterations on a big ring, many repeats) so that SIGTERM lands mid-sweep.
SCENARIO = """
name = "slow"
seed = 1
repeats = 10
backend = "engine"
[data]
source = "wine"
[network]
topology = "ring"
agents = 8
[protocol]
iterations = 200
consensus_steps = [1, 2, 3, 4]
[output]
plots = false
"""


def _children(pid: int) -> list[int]:
    """Processes whose parent is ``pid`` (from /proc/*/stat)."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(") ", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == pid:
            out.append(int(stat.parent.name))
    return out


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split(") ")[1].startswith("Z"))


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux /proc")
def test_sigterm_stops_the_workers_and_the_sweep_resumes(tmp_path):
    sc = tmp_path / "slow.toml"
    sc.write_text(SCENARIO)
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "dpgossip.cli", "run", str(sc), "--out", str(out), "--workers", "2",
           "-q"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    workers: list[int] = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(workers) < 2:  # wait for the pool
        workers = [c for c in _children(proc.pid) if "spawn_main" in
                   Path(f"/proc/{c}/cmdline").read_text(errors="replace")]
        time.sleep(0.2)
    assert len(workers) == 2, "the pool did not start"
    time.sleep(1.0)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "interrupted; finished results are kept" in err
    time.sleep(0.5)
    assert not [w for w in workers if _alive(w)], "orphaned workers after SIGTERM"
    done = len(list((out / "points").glob("*.json"))) if (out / "points").exists() else 0
    assert done < 4
    # the same command finishes the sweep
    rerun = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stderr
    assert len(list((out / "points").glob("*.json"))) == 4
