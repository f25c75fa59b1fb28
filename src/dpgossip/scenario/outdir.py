"""Where results may be written: checks of an output folder (or file) made before anything is computed.

A results folder must be a folder (or creatable: no file on its path), writable (tried with a temporary
file, which also catches read-only file systems and immutable folders that permission bits do not show),
and must not hold another scenario's results: a folder is recognised by its ``config.resolved.json``
(``name``), ``summary.json`` (``scenario``) or ``worst.json`` (``scenario``, an audit folder). Writing over
another scenario's results needs ``force`` (``--force``). The same scenario's earlier results are
expected: a rerun resumes, and an edited scenario replaces its own files
(:func:`~dpgossip.scenario.assemble.stale_outputs`). A run writes into a staging folder next to the
results folder and swaps it in when it succeeds (:mod:`~dpgossip.scenario.staging`), so the parent
folder must be writable too, and the results folder must not be (or hold) the working directory.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from dpgossip.errors import ConfigError

__all__ = ["check_out_dir", "check_out_file", "owner_of", "check_path_text"]

_MARKERS: tuple[tuple[str, str], ...] = (
    ("config.resolved.json", "name"),
    ("summary.json", "scenario"),
    ("worst.json", "scenario"),
)


def owner_of(folder: Path) -> str | None:
    """The scenario whose results ``folder`` holds, or ``None`` (not a results folder, or unreadable)."""
    for name, key in _MARKERS:
        try:
            record = json.loads((Path(folder) / name).read_text(encoding="utf-8"))
        except (OSError, ValueError, UnicodeDecodeError):
            continue
        if isinstance(record, dict) and isinstance(record.get(key), str):
            return record[key]
    return None


def check_path_text(text: str, flag: str) -> str:
    """``text`` if it can name a file or folder: not empty, no NUL byte, no name longer than the file
    system allows (these used to run into results/<name>, a ``ValueError`` traceback, or a bare
    'File name too long')."""
    if not str(text).strip():
        raise ConfigError(f"{flag} {str(text)!r} is empty; give a folder for the results (or leave it "
                          "out for the default, results/<name>)")
    if "\0" in str(text):
        raise ConfigError(f"{flag} {str(text)!r} contains a NUL byte; give a folder name without it")
    longest = max((len(os.fsencode(part)) for part in Path(text).parts), default=0)
    limit = os.pathconf(_existing_ancestor(Path(text).parent), "PC_NAME_MAX")
    if longest > limit:
        raise ConfigError(f"{flag} {str(text)[:60]!r}...: a name of {longest} bytes, longer than the "
                          f"file system allows ({limit}); choose a shorter name")
    return text


def _existing_ancestor(path: Path) -> Path:
    """``path`` or its nearest ancestor that exists (a name the system refuses counts as missing)."""
    for candidate in (path, *path.parents):
        try:
            if candidate.exists() or candidate.is_symlink():
                return candidate
        except OSError:  # e.g. a name too long
            continue
    return Path(".")


def _probe(folder: Path, flag: str, path: Path) -> None:
    """Create and remove a temporary file in ``folder``."""
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".dpgossip-write-test-")
    except OSError as exc:
        where = "in it" if folder == path else f"in {str(folder)!r}, where it would be created"
        raise ConfigError(f"{flag} {str(path)!r}: cannot write {where} ({exc.strerror or exc}); "
                          "choose a writable folder") from None
    os.close(fd)
    Path(tmp).unlink(missing_ok=True)


def _check_path(folder: Path, flag: str, given: Path) -> Path:
    """The nearest existing folder on ``folder`` (``folder`` itself when it is one), after checking
    that no file is in the way (``given`` is the path as the user gave it, for the message)."""
    anchor = _existing_ancestor(folder)
    if not anchor.is_dir():
        raise ConfigError(f"{flag} {str(given)!r}: {str(anchor)!r} is a file, so no folder can be "
                          "created under it; choose another path")
    return anchor


def check_out_dir(path: str | Path, scenario: str, *, flag: str = "--out", force: bool = False) -> Path:
    """Check that ``path`` can receive the results of ``scenario`` (it is not created here).

    Parameters
    ----------
    path
        The results folder.
    scenario
        Name of the scenario about to write there.
    flag
        How to name the folder in messages (``--out``, ``[output] dir``).
    force
        Allow a folder that holds another scenario's results (they are replaced).

    Raises
    ------
    ConfigError
        The path is a file, lies under a file, is not writable, or holds another scenario's results
        (without ``force``).
    """
    path = Path(check_path_text(str(path), flag))
    if path.exists() and not path.is_dir():
        raise ConfigError(f"{flag} {str(path)!r} is a file, not a folder; give a folder for the "
                          "results (it is created when missing)")
    anchor = _check_path(path, flag, path)
    _probe(anchor, flag, path)
    _check_beside(path, flag)
    if path.is_dir() and not force:
        other = owner_of(path)
        if other is not None and other != scenario:
            raise ConfigError(f"{flag} {str(path)!r} holds the results of scenario {other!r}, not "
                              f"{scenario!r}; writing there would replace them; choose another "
                              "folder, or add --force to replace them")
    return path


def _check_beside(path: Path, flag: str) -> None:
    """A run writes into a staging folder next to ``path`` and swaps it in when it succeeds
    (:mod:`~dpgossip.scenario.staging`): the folder's parent must be writable, and the folder must
    not hold the working directory (the swap would pull it from under this process)."""
    real = Path(os.path.realpath(path))
    if real.parent == real:
        raise ConfigError(f"{flag} {str(path)!r} is the root of the file system; choose a folder "
                          "for the results")
    cwd = Path(os.path.realpath(Path.cwd()))
    if cwd == real or real in cwd.parents:
        raise ConfigError(f"{flag} {str(path)!r} is the working directory or holds it; a run "
                          "replaces its results folder when it succeeds, so choose a folder below "
                          f"it, e.g. {str(path / 'results')!r}")
    parent = _check_path(real.parent, flag, path)
    try:
        fd, tmp = tempfile.mkstemp(dir=parent, prefix=".dpgossip-write-test-")
    except OSError as exc:
        raise ConfigError(f"{flag} {str(path)!r}: cannot write in {str(parent)!r} "
                          f"({exc.strerror or exc}); a run writes its results next to the folder "
                          "first and swaps them in when it succeeds, so its parent folder must be "
                          "writable") from None
    os.close(fd)
    Path(tmp).unlink(missing_ok=True)


def check_out_file(path: str | Path, flag: str = "--out") -> Path:
    """Check that the file ``path`` can be written (not a folder, its folder creatable and writable)."""
    path = Path(check_path_text(str(path), flag))
    if path.is_dir():
        raise ConfigError(f"{flag} {str(path)!r} is a folder; give a file name, e.g. "
                          f"{str(path / 'calibration.json')!r}")
    if path.exists() and not path.is_file():  # the file is written beside and renamed over it
        raise ConfigError(f"{flag} {str(path)!r} is not a regular file (a device, pipe or socket), "
                          "which writing the results would replace with one; give a file name")
    anchor = _check_path(path.parent, flag, path)
    _probe(anchor, flag, path.parent)
    return path
