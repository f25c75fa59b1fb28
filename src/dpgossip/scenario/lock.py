"""A lock on a results folder, so that two runs never write into one folder at the same time.

The lock is an advisory ``flock`` (:func:`fcntl.flock`, exclusive, non-blocking) on the file
``<parent>/.<folder>.lock`` next to the folder (not inside it: the folder itself is replaced when a
run succeeds, :mod:`~dpgossip.scenario.staging`). The holder writes who it is into the file (pid,
host, start time, command), so that a second run is refused with a message naming it.

A stale lock needs no cleaning: the kernel drops a ``flock`` when its process dies (Ctrl-C, ``kill``,
``kill -9``, a crash), so a lock file left behind by a dead run is simply locked again and
overwritten; the pid in it is only for the message. The holder unlinks the file while it still holds
the lock; a process that opened the file just before the unlink and then gets the lock checks that
the file it locked is still the one at the path (same device and inode), and starts again otherwise.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import os
import socket
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from dpgossip.errors import ConfigError

__all__ = ["FolderBusy", "LockHolder", "FolderLock", "lock_path", "folder_lock"]

_ATTEMPTS = 20
"""Times :meth:`FolderLock.acquire` retries when the lock file was replaced while it waited."""


class FolderBusy(ConfigError):
    """Another process holds the lock of the results folder."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LockHolder:
    """Who holds (or last held) a folder's lock, as written in its lock file."""

    pid: int | None
    host: str
    started: str
    command: str

    @classmethod
    def me(cls) -> LockHolder:
        """This process: its pid, host name, start time (UTC, ISO 8601) and command line."""
        now = _dt.datetime.now(_dt.UTC).replace(microsecond=0).isoformat()
        command = " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]) if sys.argv else "python"
        return cls(pid=os.getpid(), host=socket.gethostname(), started=now, command=command)

    @classmethod
    def parse(cls, text: str) -> LockHolder | None:
        """The holder written in a lock file, or ``None`` when it cannot be read."""
        try:
            record = json.loads(text)
        except ValueError:
            return None
        if not isinstance(record, dict):
            return None
        pid = record.get("pid")
        return cls(pid=pid if isinstance(pid, int) else None, host=str(record.get("host", "?")),
                   started=str(record.get("started", "?")), command=str(record.get("command", "?")))

    def to_json(self) -> str:
        return json.dumps({"pid": self.pid, "host": self.host, "started": self.started,
                           "command": self.command}) + "\n"

    def describe(self) -> str:
        """``"pid 1234 on host h, started 2026-01-01T10:00:00+00:00 (dpgossip run s.toml)"``."""
        return f"pid {self.pid} on host {self.host}, started {self.started} ({self.command})"


def lock_path(folder: Path) -> Path:
    """``<parent>/.<name>.lock``: the lock file of ``folder`` (its real path)."""
    real = Path(os.path.realpath(folder))
    return real.parent / f".{real.name}.lock"


class FolderLock:
    """An exclusive lock on a results folder (module docstring).

    Parameters
    ----------
    folder
        The results folder (it need not exist; its parent must).
    flag
        How messages name the folder (``--out``).
    """

    def __init__(self, folder: Path, flag: str = "--out") -> None:
        self.folder = Path(folder)
        self.flag = flag
        self.path = lock_path(self.folder)
        self._fd: int | None = None
        self.previous: LockHolder | None = None
        """The holder named in a lock file that was left behind by a process that no longer holds it
        (a stale lock, taken over), else ``None``."""

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> FolderLock:
        """Take the lock, or raise :class:`FolderBusy` naming its holder.

        Raises
        ------
        FolderBusy
            Another process holds the lock.
        ConfigError
            Locks are not available here (no ``fcntl``, or a file system without ``flock``).
        """
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not on POSIX
            raise ConfigError(f"{self.flag} {str(self.folder)!r}: this platform has no fcntl; "
                              "dpgossip cannot lock the results folder") from None
        for _ in range(_ATTEMPTS):
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            except OSError as exc:
                raise ConfigError(f"{self.flag} {str(self.folder)!r}: cannot open its lock file "
                                  f"{str(self.path)!r} ({exc.strerror or exc}); move it away") from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = LockHolder.parse(_read(fd))
                os.close(fd)
                raise FolderBusy(self._busy(holder)) from None
            except OSError as exc:
                os.close(fd)
                raise ConfigError(f"{self.flag} {str(self.folder)!r}: cannot lock "
                                  f"{str(self.path)!r} ({exc.strerror or exc})") from None
            if _same_file(fd, self.path):
                self.previous = LockHolder.parse(_read(fd))
                try:
                    os.ftruncate(fd, 0)
                    os.pwrite(fd, LockHolder.me().to_json().encode(), 0)
                    os.fsync(fd)
                except OSError:  # a full disk: leave no lock file behind (we hold the lock)
                    self.path.unlink(missing_ok=True)
                    os.close(fd)
                    raise
                self._fd = fd
                return self
            os.close(fd)  # unlinked by the holder that released it meanwhile: open the new one
        raise FolderBusy(f"{self.flag} {str(self.folder)!r}: the lock file {str(self.path)!r} keeps "
                         "changing; another dpgossip run is starting there")

    def _busy(self, holder: LockHolder | None) -> str:
        who = holder.describe() if holder is not None else "a process that has not written its name"
        return (f"{self.flag} {str(self.folder)!r} is in use by another dpgossip run ({who}); two "
                "runs into one folder would mix their results: wait for it to finish, stop it, or "
                f"choose another folder (the lock is {str(self.path)!r})")

    def release(self) -> None:
        """Remove the lock file and drop the lock (nothing when not held)."""
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            if _same_file(fd, self.path):
                self.path.unlink(missing_ok=True)
        finally:
            os.close(fd)  # drops the flock

    def __enter__(self) -> FolderLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


@contextlib.contextmanager
def folder_lock(folder: Path, flag: str = "--out") -> Iterator[FolderLock]:
    """``with folder_lock(path):`` hold the lock of ``path`` for the block (:class:`FolderLock`)."""
    lock = FolderLock(folder, flag)
    lock.acquire()
    try:
        yield lock
    finally:
        lock.release()


def _read(fd: int) -> str:
    try:
        return os.pread(fd, 4096, 0).decode("utf-8", "replace")
    except OSError:
        return ""


def _same_file(fd: int, path: Path) -> bool:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return False
    mine = os.fstat(fd)
    return (st.st_dev, st.st_ino) == (mine.st_dev, mine.st_ino)
