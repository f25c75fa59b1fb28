"""The example protocol package of tests/fixtures/noisy_average, as a test uses it.

* :func:`example_kind`: its :class:`~dpgossip.protocols.registry.ProtocolKind`, imported into this
  process without registering it (the package's entry point is a callable that only the registry
  calls), so the contract test can run it while the registry of this process stays as installed.
* :func:`install`: a copy of the package and its ``.dist-info`` in a folder that, on a subprocess's
  ``PYTHONPATH``, makes it an installed distribution whose entry point ``importlib.metadata`` finds.
"""

from __future__ import annotations

import importlib
import os
import shutil
import sys
from pathlib import Path

import dpgossip
from dpgossip.protocols.registry import ProtocolKind, load_kinds

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "noisy_average"
"""The package folder and its ``noisy_average-0.1.dist-info``."""


def example_kind() -> ProtocolKind:
    """The kind ``noisy-average`` of the fixture package, not registered in this process."""
    load_kinds()  # the installed entry points first: the fixture folder must not be on the path then
    sys.path.insert(0, str(FIXTURE))
    try:
        return importlib.import_module("noisy_average.kinds").KIND
    finally:
        sys.path.remove(str(FIXTURE))


def install(folder: Path) -> Path:
    """Copy the package and its metadata into ``folder/site``; return that folder."""
    site = folder / "site"
    shutil.copytree(FIXTURE, site, ignore=shutil.ignore_patterns("__pycache__"))
    return site


def subprocess_env(site: Path) -> dict[str, str]:
    """The environment of a subprocess that sees ``site`` and the dpgossip this process imported."""
    env = dict(os.environ)
    here = str(Path(dpgossip.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join([str(site), here, *filter(None, [env.get("PYTHONPATH")])])
    return env
