"""No process started by a command outlives it: ``dpgossip run``, ``audit`` and ``calibrate``,
with a process pool (``--workers``) and on a Dask cluster (``--scheduler``), signalled with SIGINT,
SIGTERM or SIGKILL (the command's own process only, not its group).

Every process the command starts is found by a marker in its environment (inherited by every
descendant, also one reparented to init after its parent died). After the signal: within a few seconds
none is left, the caller's pipe reaches its end (``dpgossip run ... | tail`` returns), the exit status
says the signal (130, 143), the results folder still holds the earlier results, and running the command
again resumes. On a Dask cluster the command starts no process, and its tasks are released from the
scheduler. ``calibrate`` has neither ``--workers`` nor ``--scheduler``: it runs in its own process, and
is checked to start none either.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import dpgossip
from dpgossip.scenario.batches import saved_keys
from dpgossip.scenario.staging import staging_path

pytestmark = pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs Linux /proc")

SRC = str(Path(dpgossip.__file__).resolve().parents[1])
QUICKSTART = Path(__file__).resolve().parents[2] / "scenarios" / "quickstart.toml"

SWEEP = """
name = "orphans"
seed = 1
repeats = 4
backend = "engine"
[data]
source = "wine"
[network]
topology = "ring"
agents = 8
[protocol]
iterations = 200
consensus_steps = [1, 2, 3, 4, 5, 6, 7, 8]
[output]
plots = false
"""
"""Eight points of about a second each: the sweep is still running when it is signalled."""

EARLIER = SWEEP.replace("consensus_steps = [1, 2, 3, 4, 5, 6, 7, 8]", "consensus_steps = 1").replace(
    "repeats = 4", "repeats = 1").replace("iterations = 200", "iterations = 2")
"""Another scenario's finished results in the same folder (replaced only by a finished ``--force``)."""

EXIT = {signal.SIGINT: 130, signal.SIGTERM: 143, signal.SIGKILL: -signal.SIGKILL}
WORKERS_GONE = 3.0
"""Seconds within which a pool's workers follow the command's end (about 0.6 s on a loaded machine;
before they died first thing, a worker killed while it started lived on for the 4 to 10 s it took to
import the package's heavy modules)."""

SIGNALS = [pytest.param(s, id=s.name) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL)]


def _marked(mark: str) -> dict[int, str]:
    """Live processes (not zombies) with ``mark`` in their environment: pid -> command line."""
    needle = f"DPGOSSIP_TEST_MARK={mark}".encode()
    found = {}
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if needle not in (proc / "environ").read_bytes().split(b"\0"):
                continue
            if (proc / "stat").read_text().rsplit(") ", 1)[1].startswith("Z"):
                continue
            found[int(proc.name)] = (proc / "cmdline").read_text(errors="replace").replace("\0", " ")
        except (OSError, IndexError):
            continue  # gone meanwhile, or not ours to read
    return found


def _running(pid: int) -> bool:
    """Whether ``pid`` is a live process (not a zombie)."""
    try:
        return not Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1].startswith("Z")
    except (OSError, IndexError):
        return False


def _workers(mark: str) -> list[int]:
    return [p for p, cmd in _marked(mark).items() if "spawn_main" in cmd]


class Command:
    """A ``dpgossip`` command started with a marked environment, its stdout and stderr one pipe."""

    def __init__(self, *args: str, session: bool = False) -> None:
        self.mark = uuid.uuid4().hex
        env = dict(os.environ, DPGOSSIP_TEST_MARK=self.mark,
                   PYTHONPATH=os.pathsep.join([SRC, *filter(None, [os.environ.get("PYTHONPATH")])]))
        self.proc = subprocess.Popen([sys.executable, "-m", "dpgossip.cli", *args], env=env,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     start_new_session=session)
        self.output = b""

    def wait_for(self, ready: Callable[[], bool], what: str, timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.proc.poll() is None and not ready():
            time.sleep(0.05)
        if self.proc.poll() is not None or not ready():
            self.kill_all()
            pytest.fail(f"{what} did not happen while the command ran: {self.read_pipe(5)!r}")

    def read_pipe(self, seconds: float) -> bytes | None:
        """What is left on the pipe up to its end, or None when it is still open after ``seconds``."""
        fd, deadline = self.proc.stdout.fileno(), time.monotonic() + seconds
        while time.monotonic() < deadline:
            if select.select([fd], [], [], 0.1)[0]:
                chunk = os.read(fd, 65536)
                if not chunk:
                    return self.output
                self.output += chunk
        return None

    def signal_and_check(self, sig: signal.Signals, group: bool = False) -> None:
        """Send ``sig`` to the command's process alone (``group``: to its process group, as Ctrl-C at
        a terminal does); check that it and everything it started are gone within seconds, that the
        pipe ends, and the exit status."""
        family = _marked(self.mark)
        assert self.proc.pid in family
        (os.killpg if group else os.kill)(self.proc.pid, sig)
        self.proc.wait(timeout=30)
        gone = time.monotonic()
        while time.monotonic() < gone + WORKERS_GONE and _workers(self.mark):
            time.sleep(0.05)
        assert not _workers(self.mark), f"workers alive {WORKERS_GONE} s after the command's end"
        deadline = time.monotonic() + 10  # generous: on a loaded machine the tracker exits late
        while time.monotonic() < deadline and _marked(self.mark):
            time.sleep(0.05)
        left = _marked(self.mark)
        assert not left, f"processes left behind by {sig.name}: {left} (the family was {family})"
        out = self.read_pipe(5)
        assert out is not None, "the caller's pipe is still open"
        assert self.proc.returncode == EXIT[sig], out
        if sig != signal.SIGKILL:
            assert b"interrupted" in out and b"Traceback" not in out, out

    def kill_all(self) -> None:
        for pid in [self.proc.pid, *_marked(self.mark)]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.wait(timeout=30)

    def close(self) -> None:
        self.kill_all()  # never leave them to the next test
        self.proc.stdout.close()


@pytest.fixture
def command() -> Iterator[Callable[..., Command]]:
    started: list[Command] = []

    def start(*args: str, session: bool = False) -> Command:
        started.append(Command(*args, session=session))
        return started[-1]

    yield start
    for cmd in started:
        cmd.close()


def _finish(*args: str) -> None:
    env = dict(os.environ, PYTHONPATH=SRC)
    done = subprocess.run([sys.executable, "-m", "dpgossip.cli", *args], env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr


def _earlier(tmp_path: Path) -> tuple[Path, dict[str, bytes]]:
    """A results folder holding another scenario's finished results, and their bytes."""
    sc = tmp_path / "earlier.toml"
    sc.write_text(EARLIER)
    out = tmp_path / "out"
    _finish("run", str(sc), "--out", str(out), "-q")
    return out, {f.name: f.read_bytes() for f in out.iterdir() if f.is_file()}


def _sweep(tmp_path: Path) -> Path:
    sc = tmp_path / "orphans.toml"
    sc.write_text(SWEEP)
    return sc


def test_run_workers_sigkill_leaves_no_process(tmp_path, command):
    """The representative of the default suite: ``kill -9`` of ``dpgossip run --workers 3`` as soon as
    its workers are spawned (still importing the package): they, and multiprocessing's resource
    tracker, go with it; the points it finished are kept in the staging folder."""
    out = tmp_path / "out"
    cmd = command("run", str(_sweep(tmp_path)), "--out", str(out), "--workers", "3", "-q")
    cmd.wait_for(lambda: len(_workers(cmd.mark)) >= 2, "the pool's start")
    cmd.signal_and_check(signal.SIGKILL)
    assert len(saved_keys(staging_path(out))) < 8 and not out.exists()


@pytest.mark.slow
@pytest.mark.parametrize("sig", SIGNALS)
def test_run_workers(tmp_path, command, sig):
    """``dpgossip run --workers 3 --force`` over another scenario's results, signalled while its workers
    compute: nothing left, the earlier results untouched, and the same command finishes the sweep."""
    out, before = _earlier(tmp_path)
    args = ("run", str(_sweep(tmp_path)), "--out", str(out), "--workers", "3", "--force", "-q")
    cmd = command(*args)
    cmd.wait_for(lambda: len(_workers(cmd.mark)) >= 2, "the pool's start")
    time.sleep(2.0)  # the workers have imported the package and compute points
    cmd.signal_and_check(sig)
    assert {f.name: f.read_bytes() for f in out.iterdir() if f.is_file()} == before
    _finish(*args)
    assert len((out / "points.csv").read_text().splitlines()) == 1 + 8


def _audited_run(tmp_path: Path) -> Path:
    sc = tmp_path / "audited.toml"
    sc.write_text(QUICKSTART.read_text() + '\n[privacy]\naudit = true\nsearch = "quick"\n')
    return sc


@pytest.mark.slow
@pytest.mark.parametrize("sig", SIGNALS)
@pytest.mark.parametrize("when", [0.0, 2.0], ids=["starting", "computing"])
def test_run_one_point_audit_pool(tmp_path, command, sig, when):
    """A sweep of one point gives ``--workers`` to its pair audit's targets: that pool's workers go with
    the command, whether they are still starting (importing, factorising) or searching."""
    out = tmp_path / "out"
    cmd = command("run", str(_audited_run(tmp_path)), "--out", str(out), "--workers", "3", "-q")
    cmd.wait_for(lambda: len(_workers(cmd.mark)) >= 2, "the audit pool's start")
    time.sleep(when)
    cmd.signal_and_check(sig)
    assert not out.exists()


@pytest.mark.slow
@pytest.mark.parametrize("sig", SIGNALS)
@pytest.mark.parametrize("when", [0.0, 2.0], ids=["starting", "computing"])
def test_audit_workers(tmp_path, command, sig, when):
    """``dpgossip audit --workers 3``: its workers go with it (before this was fixed, a SIGTERM while
    they started left the command waiting at its exit for them to finish their targets, and a SIGKILL
    left them alive for as long as they took to import the package)."""
    cmd = command("audit", str(QUICKSTART), "--out", str(tmp_path / "audit"), "--workers", "3", "-q")
    cmd.wait_for(lambda: len(_workers(cmd.mark)) >= 2, "the audit pool's start")
    time.sleep(when)
    cmd.signal_and_check(sig)


@pytest.mark.slow
@pytest.mark.parametrize("what", ["run", "audit"])
def test_ctrl_c_at_the_terminal(tmp_path, command, what):
    """Ctrl-C at a terminal signals the whole process group while the workers still start (spawned
    with SIGINT ignored, :func:`dpgossip._parent.spawning`): no traceback, nothing left, exit 130."""
    scenario = _sweep(tmp_path) if what == "run" else QUICKSTART
    cmd = command(what, str(scenario), "--out", str(tmp_path / "out"), "--workers", "3", "-q",
                  session=True)
    cmd.wait_for(lambda: len(_workers(cmd.mark)) >= 2, "the pool's start")
    cmd.signal_and_check(signal.SIGINT, group=True)


@pytest.fixture(scope="module")
def cluster() -> Iterator[object]:
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0") as cluster:
        with distributed.Client(cluster.scheduler_address) as client:
            yield client


def _address(client: object) -> str:
    return client.scheduler_info()["address"]


def _scheduler_tasks(client: object) -> int:
    return client.run_on_scheduler(lambda dask_scheduler: len(dask_scheduler.tasks))


def _dask_check(client: object, cmd: Command, sig: signal.Signals) -> None:
    cmd.wait_for(lambda: _scheduler_tasks(client) > 0, "a task on the cluster")
    time.sleep(1.0)
    cmd.signal_and_check(sig)
    deadline = time.monotonic() + 30  # the scheduler sees the client go (or its futures cancelled)
    while time.monotonic() < deadline and _scheduler_tasks(client):
        time.sleep(0.1)
    assert _scheduler_tasks(client) == 0, "the command's tasks stay on the cluster"


@pytest.mark.slow
@pytest.mark.parametrize("sig", SIGNALS)
def test_run_dask(tmp_path, command, cluster, sig):
    """``dpgossip run --scheduler``: no process left, the cluster's tasks released, earlier results
    untouched, and the same command finishes the sweep."""
    out, before = _earlier(tmp_path)
    args = ("run", str(_sweep(tmp_path)), "--out", str(out), "--force", "-q",
            "--scheduler", _address(cluster))
    _dask_check(cluster, command(*args), sig)
    assert {f.name: f.read_bytes() for f in out.iterdir() if f.is_file()} == before
    _finish(*args)
    assert len((out / "points.csv").read_text().splitlines()) == 1 + 8


@pytest.mark.slow
@pytest.mark.parametrize("sig", SIGNALS)
def test_audit_dask(tmp_path, command, cluster, sig):
    cmd = command("audit", str(QUICKSTART), "--out", str(tmp_path / "audit"), "-q",
                  "--scheduler", _address(cluster))
    _dask_check(cluster, cmd, sig)


@pytest.mark.slow
@pytest.mark.parametrize("sig", SIGNALS)
def test_calibrate(tmp_path, command, sig):
    """``dpgossip calibrate`` runs in its own process: signalled mid-search it leaves nothing, and the
    ``--out`` file of an earlier calibration is untouched (written only at the end)."""
    earlier = tmp_path / "calibration.json"
    earlier.write_text('{"earlier": true}\n')
    cmd = command("calibrate", str(QUICKSTART), "--epsilon", "1", "--delta", "1e-5",
                  "--out", str(earlier))
    cmd.wait_for(lambda: cmd.read_pipe(0.05) is None and b"# view" in cmd.output, "the search's start")
    time.sleep(1.0)
    cmd.signal_and_check(sig)
    assert earlier.read_text() == '{"earlier": true}\n'


def test_stop_pool_terminates_workers_still_in_their_initializer():
    """:func:`dpgossip._parent.stop_pool` terminates the workers before ``shutdown`` forgets them: a
    pool stopped while its workers are still starting (here: an initializer that sleeps) leaves none
    behind, and nothing waits for them (before, an interrupted audit waited at its exit for its
    workers to finish their targets)."""
    from dpgossip._parent import spawning, stop_pool, watched_pool

    pool = watched_pool(2, "time:sleep", 60)
    with spawning():
        futures = [pool.submit(int, "1") for _ in range(4)]  # never run: the workers sleep
    workers = [proc.pid for proc in pool._processes.values()]
    start = time.monotonic()
    stop_pool(pool)
    # by /proc, not Process.is_alive(): the pool's thread may reap a worker first, and a Process whose
    # pid another thread reaped says it is alive for ever
    while time.monotonic() < start + 10 and [p for p in workers if _running(p)]:
        time.sleep(0.05)
    assert not [p for p in workers if _running(p)]
    assert time.monotonic() - start < 5
    assert all(f.cancelled() or f.done() for f in futures[2:])


def test_a_sigint_while_workers_are_spawned_is_held_not_lost():
    """:func:`dpgossip._parent.spawning` blocks SIGINT (the workers inherit the mask, so a Ctrl-C at the
    terminal does not reach them while they start); a SIGINT sent to the command meanwhile arrives when
    the block ends. Before, SIGINT was ignored there, and a Ctrl-C in that moment was lost: the command
    ran to its end (seen as exit 0 after SIGINT in test_run_one_point_audit_pool)."""
    from dpgossip._parent import spawning

    reached = []
    with pytest.raises(KeyboardInterrupt):
        with spawning():
            # to this thread: sent to the process, another thread (not blocking it) could take it,
            # and the handler would interrupt the block at once (not lost either)
            signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
            time.sleep(0.1)
            reached.append("the block ran on")
        time.sleep(5)  # interrupted at once
    assert reached == ["the block ran on"]
    assert signal.SIGINT not in signal.pthread_sigmask(signal.SIG_BLOCK, [])
