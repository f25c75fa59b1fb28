"""Errors raised for bad user input.

Every user mistake raises :class:`ConfigError` (a ``ValueError``) with a message that names the field, the
value that was given and what is allowed. The command line prints the message and exits with status 2,
without a traceback.
"""

from __future__ import annotations

__all__ = ["ConfigError", "did_you_mean"]


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
