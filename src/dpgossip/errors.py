"""Errors raised for bad user input.

Every user mistake raises :class:`ConfigError` (a ``ValueError``) with a message that names the field, the
value that was given and what is allowed. The command line prints the message and exits with status 2,
without a traceback.
"""

from __future__ import annotations

__all__ = ["ConfigError", "did_you_mean", "reject_unknown_keys"]


class ConfigError(ValueError):
    """Bad input: names the field, the value and what is allowed."""


def did_you_mean(word: str, choices: list[str] | tuple[str, ...]) -> str:
    """Return ``" (did you mean 'x'?)"`` for the closest choice, or ``""`` when nothing is close.

    Examples
    --------
    >>> did_you_mean("rign", ["ring", "grid"])
    " (did you mean 'ring'?)"
    """
    import difflib

    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def reject_unknown_keys(prefix: str, keys: object, allowed: list[str] | tuple[str, ...] | dict,
                        where: str = "") -> None:
    """Raise :class:`ConfigError` for the first key not in ``allowed``.

    The message is ``"<prefix><key>: unknown key (did you mean ...?); allowed <where>: a, b, c"``, e.g.
    ``reject_unknown_keys("sweep.", raw, ("zip",), "in [sweep]")``.
    """
    names = list(allowed)
    for key in keys:  # type: ignore[attr-defined]
        if key not in names:
            lead = f"allowed {where}" if where else "allowed"
            raise ConfigError(f"{prefix}{key}: unknown key{did_you_mean(str(key), names)}; "
                              f"{lead}: {', '.join(names)}")
