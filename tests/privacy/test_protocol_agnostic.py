"""privacy/ is protocol-agnostic maths: no module of it names a protocol, as a module, an import or a string.

The names come from the code, not from a list kept here: every registered kind and its family
(:func:`dpgossip.protocols.registry.kinds`), and every subpackage of :mod:`dpgossip.protocols` (each a
protocol family's home) but ``nodes`` (the engine adapters every home shares, not a family). To them are
added the protocol names that are parts of kind names or older spellings (``capepca``, ``floorfree``,
``decor``, ``muffliato``, ``ddppm``, ``ppm``). A name is found as a whole word, case-insensitively, in
the source text of each module (docstrings, comments, strings and identifiers included: ``_``, ``-``
and ``.`` separate words, so ``calibrate_ppm_noise`` names ``ppm``, while ``dpgossip`` is one word and
holds no ``gossip``), also after dropping hyphens between letters (``D-DP-PM`` reads ``ddppm``).
"""

from __future__ import annotations

import pkgutil
import re
from pathlib import Path

import dpgossip.protocols
from dpgossip.protocols.registry import kinds

PRIVACY = Path(__file__).resolve().parents[2] / "src" / "dpgossip" / "privacy"
SHARED = {"nodes"}
"""Subpackages of dpgossip.protocols that are no protocol's home."""
SPELLINGS = ("capepca", "floorfree", "decor", "muffliato", "ddppm", "ppm")


def protocol_names() -> set[str]:
    """Kind names, families, home subpackages and :data:`SPELLINGS`, lowercase."""
    homes = {m.name for m in pkgutil.iter_modules(dpgossip.protocols.__path__) if m.ispkg} - SHARED
    registered = {k.name for k in kinds()} | {k.family for k in kinds()}
    return {n.lower() for n in homes | registered | set(SPELLINGS)}


def names_in(text: str, names: set[str]) -> set[str]:
    """The ``names`` that occur in ``text`` as whole words (module docstring)."""
    low = text.lower()
    found = set()
    for variant in (low, re.sub(r"(?<=[a-z])-(?=[a-z])", "", low)):
        found |= {n for n in names if re.search(rf"(?<![a-z0-9]){re.escape(n)}(?![a-z0-9])", variant)}
    return found


def test_the_names_come_from_the_protocol_homes():
    names = protocol_names()
    assert {"gossip", "ppm", "cape", "ddppm", "ldp"} <= names  # today's homes, found on disk
    assert "nodes" not in names


def test_the_search_finds_a_protocol_name_and_ignores_the_package_name(tmp_path):
    names = protocol_names()
    assert names_in('KINDS = ("gossip-decor",)', names) >= {"gossip", "decor"}
    assert names_in("from dpgossip.protocols.cape.star import x", names) == {"cape"}
    assert names_in("Eqs. (33)-(34) of the D-DP-PM paper", names) == {"ddppm"}
    assert names_in("def calibrate_ppm_noise(): ...", names) == {"ppm"}
    assert names_in("import dpgossip.errors  # escape, decorated, upper", names) == set()


def test_no_privacy_module_names_a_protocol():
    names = protocol_names()
    found = {}
    for path in sorted(PRIVACY.rglob("*.py")):
        hits = names_in(path.stem, names) | names_in(path.read_text(encoding="utf-8"), names)
        if hits:
            found[path.name] = sorted(hits)
    assert not found, f"privacy/ names protocols (move the code to its home under protocols/): {found}"
