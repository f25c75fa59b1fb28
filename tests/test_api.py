"""The public API of ``import dpgossip as dg``: every name resolves, lazily, to its subpackage's object."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import dpgossip as dg

INIT = Path(dg.__file__)


def _type_checking_names() -> set[str]:
    tree = ast.parse(INIT.read_text(encoding="utf-8"))
    block = next(n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING")
    return {a.asname or a.name for n in block.body if isinstance(n, ast.ImportFrom) for a in n.names}


def test_all_the_lazy_map_and_the_type_checking_imports_agree():
    assert len(dg.__all__) == len(set(dg.__all__))
    assert set(dg.__all__) == {"ConfigError", "__version__", *dg._LAZY}
    assert _type_checking_names() == set(dg._LAZY)


@pytest.mark.parametrize("name", sorted(dg._LAZY))
def test_every_name_is_its_modules_object(name):
    assert getattr(dg, name) is getattr(importlib.import_module(dg._LAZY[name]), name)


def test_dir_lists_the_public_names_and_the_subpackages():
    listed = dir(dg)
    assert set(dg.__all__) <= set(listed)
    for sub in ("data", "topology", "protocols", "engine", "privacy", "scenario", "report"):
        assert sub in listed
        assert getattr(dg, sub) is importlib.import_module(f"dpgossip.{sub}")


def test_an_unknown_name_raises_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'run_everything'"):
        dg.run_everything  # noqa: B018
    assert not hasattr(dg, "run_everything")
