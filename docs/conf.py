"""Sphinx configuration of the API reference (docs/api/*.rst), generated from the docstrings.

Build it with ``python -m sphinx -W -b html docs docs/_build/html`` (``pip install ".[docs]"``);
``tests/test_api_reference.py`` builds it with warnings as errors. Only the reStructuredText pages under
``docs/api/`` belong to it: the Markdown pages of ``docs/`` are read as they are (on the forge or in an
editor) and are not part of the build.
"""

from __future__ import annotations

import sys
from pathlib import Path

# document the source tree next to this file, not whatever copy of dpgossip is installed
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

project = "dpgossip"
author = "the dpgossip authors"
root_doc = "api/index"
extensions = ["sphinx.ext.autodoc", "numpydoc"]
source_suffix = {".rst": "restructuredtext"}
exclude_patterns = ["_build", "img", "numbers"]

autodoc_member_order = "bysource"
autodoc_default_options = {"members": True}
numpydoc_show_class_members = False  # the members are documented by autodoc itself
numpydoc_class_members_toctree = False

html_theme = "alabaster"
html_title = "dpgossip API reference"
