"""Where a `dpgossip` command spends its time and memory: the CLI in this process, with a thread that
samples the resident memory and the main thread's `dpgossip` frames ten times a second.

Usage::

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=src python benchmarks/trace_run.py run SCENARIO.toml --out DIR -q \
        --no-plots --force

Prints to stderr, when the command ends, one line per stretch spent in the same innermost
`dpgossip` frame (``--depth`` frames shown): the time it started, the largest resident memory seen
during it and the frames; then a summary of seconds and peak memory per phase (the first ``--group``
frames below the run's plumbing, :data:`PLUMBING`), and the peak. Stretches shorter than
``--min-seconds`` are left out of the lines, not of the summary. Sampling costs a few percent of the
time.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections import defaultdict

PERIOD = 0.1
PLUMBING = frozenset({"main", "_cmd_run", "run_scenario", "_run", "_save_all", "run_inline", "run_task",
                      "preflight", "build_structure", "make_structure", "run_point", "save",
                      "make_problem", "<module>"})
"""Functions that only dispatch: a phase is named by the frames below them."""


def _rss() -> int:
    with open("/proc/self/statm", encoding="ascii") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _frames(thread_id: int) -> tuple[str, ...]:
    frame = sys._current_frames().get(thread_id)
    out = []
    while frame is not None:
        code = frame.f_code
        if "dpgossip" in code.co_filename:
            out.append(f"{os.path.basename(code.co_filename)}:{code.co_name}")
        frame = frame.f_back
    return tuple(reversed(out))


def _report(samples: list[tuple[float, int, tuple[str, ...]]], depth: int, group: int,
            min_seconds: float) -> None:
    spans: list[list] = []
    for t, rss, frames in samples:
        key = frames[-depth:]
        if spans and spans[-1][2] == key:
            spans[-1][1] = max(spans[-1][1], rss)
            spans[-1][3] = t
        else:
            spans.append([t, rss, key, t, frames])
    total: dict[str, float] = defaultdict(float)
    peak: dict[str, int] = defaultdict(int)
    for i, (t0, rss, key, _, frames) in enumerate(spans):
        t1 = spans[i + 1][0] if i + 1 < len(spans) else samples[-1][0]
        rest = frames
        while rest and rest[0].split(":")[1] in PLUMBING:
            rest = rest[1:]
        name = " > ".join(rest[:group]) or "(plumbing and imports)"
        total[name] += t1 - t0
        peak[name] = max(peak[name], rss)
        if t1 - t0 >= min_seconds:
            print(f"{t0:8.1f} s {rss / 2**30:6.2f} GiB  {' > '.join(key)}", file=sys.stderr)
    print("\nseconds and peak per phase:", file=sys.stderr)
    for name, secs in sorted(total.items(), key=lambda kv: -kv[1]):
        print(f"{secs:8.1f} s {peak[name] / 2**30:6.2f} GiB  {name}", file=sys.stderr)
    print(f"peak {max(s[1] for s in samples) / 2**30:.2f} GiB", file=sys.stderr)


def main() -> int:
    args = sys.argv[1:]
    opts = {"--depth": 3, "--group": 1, "--min-seconds": 1.0}
    for name in list(opts):
        if name in args:
            i = args.index(name)
            opts[name] = type(opts[name])(args[i + 1])
            del args[i:i + 2]
    from dpgossip.cli import main as cli

    main_id = threading.get_ident()
    samples: list[tuple[float, int, tuple[str, ...]]] = []
    done = threading.Event()
    t0 = time.perf_counter()

    def sample() -> None:
        while not done.is_set():
            samples.append((time.perf_counter() - t0, _rss(), _frames(main_id)))
            time.sleep(PERIOD)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        return cli(args)
    finally:
        done.set()
        thread.join()
        _report(samples, int(opts["--depth"]), int(opts["--group"]), float(opts["--min-seconds"]))


if __name__ == "__main__":
    sys.exit(main())
