"""The sections of the registered protocol kinds (``[ppm]``, ``[cape]``, ``[floorfree]``, ...), validated
from the kinds' own :class:`~dpgossip.settings.Field` tables.

Every kind of the registry (:mod:`dpgossip.protocols.registry`) that declares ``section`` and ``fields``
gets its section registered here (:func:`register_kind_sections`, run when
:mod:`dpgossip.scenario.schema` imports this module, after the installed kinds are loaded, and again
whenever a kind is registered later, e.g. by hand: :func:`~dpgossip.protocols.registry.on_register`):
unknown keys are refused with a did-you-mean, each key is checked
against its field (a list of a sweepable key is a sweep axis) and defaults are filled. Kinds that share
a section (the three ``ppm*`` kinds read ``[ppm]``) must declare the same fields. Cross-field rules of a
kind (exactly one of ``noise_multiplier`` and ``epsilon``, ``protocol.rank`` must be 1, ...) are its
``check``, run by :mod:`dpgossip.scenario.compat`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dpgossip.errors import ConfigError, reject_unknown_keys
from dpgossip.protocols.registry import kinds_by_section, on_register, plugin_of, skip_plugin
from dpgossip.scenario.schema import SCHEMA, check_field
from dpgossip.scenario.sections import register_section, section_for
from dpgossip.settings import Field

__all__ = ["register_kind_sections"]


def _validator(name: str, fields: Mapping[str, Field]) -> Any:
    def validate(path: str, value: Any) -> dict[str, Any]:
        if not isinstance(value, Mapping):
            raise ConfigError(f"{path} must be a table ([{path}]), got {value!r}", field=path)
        reject_unknown_keys(f"{path}.", value, fields, f"in [{path}]")
        return {key: check_field(f"{path}.{key}", f, value[key]) if key in value else f.default
                for key, f in fields.items()}
    validate.__doc__ = f"Validate the raw ``[{name}]`` table and fill defaults."
    return validate


def register_kind_sections() -> None:
    """Register the section of every registered kind that declares fields (module docstring). A
    plug-in's kind whose section clashes is not registered: its plug-in is skipped with a warning
    (:func:`~dpgossip.protocols.registry.skip_plugin`), and the built-in kinds keep working.

    Raises
    ------
    ConfigError
        Two kinds that are not a plug-in's declare different fields for one section, or such a kind's
        section is a section of the scenario layer that its kind does not own.
    """
    while not _register_all():
        pass


def _register_all() -> bool:
    """One pass of :func:`register_kind_sections`; ``False`` when it skipped a plug-in (start again)."""
    for name, readers in kinds_by_section().items():
        owners = [k for k in readers if k.fields is not None]
        if not owners:
            continue
        first = owners[0]
        other = [k for k in owners if dict(k.fields) != dict(first.fields)]
        entry = section_for(name)
        if other:
            clash, blamed = (f"kinds {first.name!r} and {other[0].name!r} declare different fields for "
                             f"[{name}]"), [other[0], first]
        elif name in SCHEMA or name == "sweep" or (
                entry is not None and entry.fields is not first.fields and entry.fields != first.fields):
            clash, blamed = (f"kind {first.name!r}: section [{name}] is a section of the scenario "
                             "layer; choose another section name"), owners
        else:
            register_section(name, _validator(name, first.fields),
                             sweepable=tuple(k for k, f in first.fields.items() if f.sweep),
                             fields=first.fields, doc=first.section_doc)
            continue
        plugin = next((plugin_of(k.name) for k in blamed if plugin_of(k.name)), None)
        if plugin is None:
            raise ConfigError(clash, field="fields" if other else "section")
        skip_plugin(plugin, clash)
        return False
    return True


register_kind_sections()
on_register(lambda _spec: register_kind_sections())
