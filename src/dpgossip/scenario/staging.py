"""A run writes into a staging folder next to its results folder and swaps it in when it succeeds.

A failed or interrupted run therefore never deletes, replaces or mixes the results already in the
folder: they stay as they were, byte for byte, until a new run has written every one of its files.

Layout, for a results folder ``results/quickstart``:

``results/.quickstart.lock``
    The folder's lock (:mod:`~dpgossip.scenario.lock`), held for the whole run.
``results/.quickstart.partial/``
    The staging folder: the new run writes everything here, and it holds the run's resume store
    (``points/`` of ``run`` and ``audit``, ``graphs/`` of a network-DP scenario: the :attr:`keep`
    folders). On opening, the stored points of the results folder are hard-linked into it (point files
    are content-addressed and never rewritten in place, so a link is a safe copy), so a rerun resumes
    from both. When the run is interrupted or fails after finishing some points, the staging folder
    stays, and the next run of the same command resumes from it; when it finished none, it is removed.
``results/.quickstart.replaced/``
    Only on systems without an atomic exchange of two folders, briefly: the old results folder while
    the new one is renamed into place.

Commit (:meth:`StagedFolder.commit`): the files of the old folder that the new run did not write and
that are not stale (``stale(relative_path)``; e.g. the tables of another configuration) are
hard-linked into the staging folder (so a user's own files, and plots of the same configuration, are
kept), then the two folders are exchanged atomically (Linux ``renameat2(RENAME_EXCHANGE)``; elsewhere
two renames) and the old folder is deleted. A kill at any moment leaves either the old folder or the
new one in place, never a mixture: marker files say which leftover folder is a staging folder
(``.dpgossip-staging``) and which an old folder to delete (``.dpgossip-replaced``), and the next run
cleans up (:meth:`StagedFolder.open`).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import shutil
import stat
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from dpgossip.errors import ConfigError
from dpgossip.scenario.lock import FolderLock

__all__ = ["StagedFolder", "staged_folder", "staging_path", "replaced_path", "foreign",
           "stale_audit_files", "STAGING_MARK", "REPLACED_MARK"]

STAGING_MARK = ".dpgossip-staging"
"""File that marks a staging folder (removed from the results folder after the swap)."""
REPLACED_MARK = ".dpgossip-replaced"
"""File written into an old results folder just before it is swapped out (to be deleted)."""
_MARKS = (STAGING_MARK, REPLACED_MARK)


def _real(folder: Path) -> Path:
    """The real path of ``folder`` (symbolic links resolved: the folder they point to is replaced)."""
    return Path(os.path.realpath(folder))


def staging_path(folder: Path) -> Path:
    """``<parent>/.<name>.partial``: where a run into ``folder`` writes until it succeeds."""
    real = _real(folder)
    return real.parent / f".{real.name}.partial"


def replaced_path(folder: Path) -> Path:
    """``<parent>/.<name>.replaced``: the old folder during a swap by two renames."""
    real = _real(folder)
    return real.parent / f".{real.name}.replaced"


class StagedFolder:
    """Writes of one run into ``target`` (module docstring): :meth:`open`, write into :attr:`work`,
    :meth:`commit`, :meth:`close`.

    Parameters
    ----------
    target
        The results folder (created or replaced by :meth:`commit`).
    flag
        How messages name the folder (``--out``).
    keep
        Sub-folders that hold the resume store: linked from the results folder into the staging
        folder on :meth:`open`, and kept in a staging folder left by an interrupted run.
    """

    def __init__(self, target: Path, *, flag: str = "--out", keep: Sequence[str] = ("points",)) -> None:
        self.target = Path(target)
        self.real = _real(self.target)
        self.work = staging_path(self.target)
        self.keep = tuple(keep)
        self.lock = FolderLock(self.target, flag)
        self.flag = flag
        self.committed = False

    def open(self) -> Path:
        """Take the folder's lock, clean up after an earlier run that was stopped, and prepare the
        staging folder (resuming one left by an interrupted run); returns it.

        Raises
        ------
        ConfigError
            The folder is in use by another run (:class:`~dpgossip.scenario.lock.FolderBusy`), or
            ``<parent>/.<name>.partial`` exists and is not a staging folder of dpgossip.
        """
        self.real.parent.mkdir(parents=True, exist_ok=True)
        self.lock.acquire()
        try:
            self._recover()
            self._prepare()
        except BaseException:
            self.lock.release()
            raise
        return self.work

    def _recover(self) -> None:
        """Finish what a run killed during its swap left behind."""
        replaced = replaced_path(self.target)
        if replaced.is_dir() and not replaced.is_symlink():
            if not self.real.exists():
                os.replace(replaced, self.real)  # stopped between the two renames: put it back
            elif (replaced / REPLACED_MARK).exists():
                _remove_old(replaced)
        work = self.work
        if work.is_symlink() or (work.exists() and not work.is_dir()):
            raise ConfigError(f"{self.flag} {str(self.target)!r}: {str(work)!r} is in the way (a run "
                              "stages its results there); move it away")
        if work.is_dir():
            if (work / REPLACED_MARK).exists():  # an old folder the last swap did not delete
                if not _remove_old(work):
                    raise ConfigError(f"{self.flag} {str(self.target)!r}: cannot delete {str(work)!r}, "
                                      "the results an earlier run replaced (a file in it cannot be "
                                      "removed); delete it")
            elif not (work / STAGING_MARK).exists():
                raise ConfigError(f"{self.flag} {str(self.target)!r}: {str(work)!r} exists and was not "
                                  "made by dpgossip (a run stages its results there); move it away")

    def _prepare(self) -> None:
        work = self.work
        if work.is_dir():  # left by an interrupted run: keep its resume store, drop the rest
            for entry in work.iterdir():
                if entry.name in self.keep or entry.name == STAGING_MARK:
                    continue
                if entry.is_dir() and not entry.is_symlink():
                    shutil.rmtree(entry)
                else:
                    entry.unlink()
        else:
            work.mkdir()
        (work / STAGING_MARK).write_text(f"staging folder of {self.real}\n", encoding="utf-8")
        for name in self.keep:
            old = self.real / name
            if old.is_dir() and not old.is_symlink():
                _carry(old, work / name, lambda rel: False)

    def commit(self, stale: Callable[[str], bool] | None = None) -> Path:
        """Swap the staging folder in as the results folder; returns the results folder.

        Parameters
        ----------
        stale
            ``stale(relative_path)`` is true for a file of the old folder that the new run makes
            obsolete (it is not carried over); the files the new run wrote always win.
        """
        skip = stale if stale is not None else (lambda rel: False)
        real, work = self.real, self.work
        mode = stat.S_IMODE(real.stat().st_mode) if real.is_dir() else None
        if real.is_dir():
            _carry(real, work, skip)
            (real / REPLACED_MARK).write_text("old results, replaced by a new run\n", encoding="utf-8")
            if _exchange(work, real):
                old = work
            else:
                old = replaced_path(self.target)
                os.replace(real, old)
                os.replace(work, real)
        else:
            os.replace(work, real)
            old = None
        (real / STAGING_MARK).unlink(missing_ok=True)
        (real / REPLACED_MARK).unlink(missing_ok=True)
        if mode is not None:  # the new folder keeps the old one's permissions (e.g. 700)
            os.chmod(real, mode)
        _sync_dir(real.parent)
        if old is not None:
            _remove_old(old)  # what cannot be deleted stays marked, and the next run names it
        self.committed = True
        return self.target

    def close(self) -> None:
        """Release the lock; a staging folder of a run that did not commit is kept when it holds
        results the folder does not (finished points, to resume from), else removed."""
        try:
            if not self.committed and self.work.is_dir() and not self._holds_new_results():
                shutil.rmtree(self.work, ignore_errors=True)
        finally:
            self.lock.release()

    def _holds_new_results(self) -> bool:
        for name in self.keep:
            for path in (self.work / name).rglob("*"):
                if path.is_file() and not path.name.startswith("."):
                    rel = path.relative_to(self.work)
                    if not (self.real / rel).exists():
                        return True
        return False


def foreign(folder: Path, scenario: str) -> bool:
    """Whether ``folder`` holds another scenario's results (replaced whole by ``--force``)."""
    from dpgossip.scenario.outdir import owner_of

    owner = owner_of(Path(folder))
    return owner is not None and owner != scenario


def stale_audit_files(folder: Path, scenario: str) -> Callable[[str], bool]:
    """The files of an earlier audit in ``folder`` that a new audit makes obsolete: its observer x
    target matrices (``epsilon_matrix*.csv``, ``delta_matrix*.csv``), its per-target tables of a view
    without an observer (``epsilon_by_target*.csv``) and its guarantee table of another kind
    (``guarantees.csv``), since the new audit writes those it needs; or everything when ``folder``
    holds another scenario's results."""
    if foreign(folder, scenario):
        return lambda rel: True
    return lambda rel: "/" not in rel and rel.endswith(".csv") and rel.startswith(
        ("epsilon_matrix", "delta_matrix", "epsilon_by_target", "guarantees"))


@contextlib.contextmanager
def staged_folder(target: Path, *, flag: str = "--out",
                  keep: Sequence[str] = ("points",)) -> Iterator[StagedFolder]:
    """``with staged_folder(out) as stage:`` write into ``stage.work``, then ``stage.commit()``
    (:class:`StagedFolder`); leaving the block without a commit keeps the old results as they were."""
    stage = StagedFolder(target, flag=flag, keep=keep)
    stage.open()
    try:
        yield stage
    finally:
        stage.close()


def _carry(src: Path, dst: Path, skip: Callable[[str], bool], top: Path | None = None) -> None:
    """Hard-link (or copy) every file under ``src`` into ``dst`` that is not there yet and not
    ``skip(path relative to top)``; marker files stay behind."""
    top = src if top is None else top
    dst.mkdir(exist_ok=True)
    for entry in src.iterdir():
        if entry.name in _MARKS and src == top:
            continue
        rel = entry.relative_to(top).as_posix()
        target = dst / entry.name
        if skip(rel) or target.is_symlink():
            continue
        if entry.is_dir() and not entry.is_symlink():
            if not target.exists() or target.is_dir():
                _carry(entry, target, skip, top)
        elif not target.exists():
            _link(entry, target)
    if src != top:  # a carried subfolder keeps its permissions (the top one: StagedFolder.commit)
        shutil.copymode(src, dst)


def _remove_old(folder: Path) -> bool:
    """Delete an old results folder marked :data:`REPLACED_MARK`, its mark last (so that a folder
    with a file that cannot be removed stays recognisable); returns whether it is gone."""
    for entry in folder.iterdir():
        if entry.name == REPLACED_MARK:
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                entry.unlink()
    if any(e.name != REPLACED_MARK for e in folder.iterdir()):
        return False
    shutil.rmtree(folder, ignore_errors=True)
    return not folder.exists()


def _link(src: Path, dst: Path) -> None:
    if src.is_symlink():
        os.symlink(os.readlink(src), dst)
        return
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


def _exchange(a: Path, b: Path) -> bool:
    """Exchange two folders atomically (Linux ``renameat2``); ``False`` where that is not available
    (the caller renames twice instead)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    renameat2.restype = ctypes.c_int
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP):
        return False
    raise OSError(err, os.strerror(err), str(a), None, str(b))


def _sync_dir(folder: Path) -> None:
    """``fsync`` a folder, so that a rename in it is on disk (best effort)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
