"""Errors raised for bad user input.

Every user mistake raises :class:`ConfigError` (a ``ValueError``) with a message that names the field, the
value that was given and what is allowed. The command line prints the message and exits with status 2,
without a traceback.

Names in messages belong to the layer the user called. The library (``dpgossip.data``, ``topology``,
``protocol``, ``engine``, ``privacy``) names the Python parameter that was given (``agents``,
``params.rows``, ``noise.scale``) and records it as :attr:`ConfigError.field`; the scenario layer, which
reads TOML, calls down inside :func:`renamed_fields` so that its users read the TOML field path instead
(``network.agents``, ``network.params.rows``, ``protocol.noise.scale``).

This module is the lowest layer: it imports nothing from ``dpgossip``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from numbers import Integral, Real

__all__ = ["ConfigError", "did_you_mean", "reject_unknown_keys", "renamed_fields", "renamed_error",
           "check_number", "check_int", "check_choice", "show"]


class ConfigError(ValueError):
    """Bad input: names the field, the value and what is allowed.

    Parameters
    ----------
    message : str
        The message; when ``field`` is given it starts with ``field``
        (``"agents: must be an integer >= 2, got 0"``), except a message about the data that names
        the settings it involves in its body (``"data: ... scale = 'max_norm' cannot ..."``).
    field : str, optional
        The parameter name or dotted parameter path the message is about (``"agents"``,
        ``"params.rows"``, ``"noise.scale"``, ``"sizes[2]"``); :func:`renamed_fields` renames it.
    """

    def __init__(self, message: str = "", *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


def _renamed(name: str, mapping: Mapping[str, str]) -> str | None:
    """``name`` with its leading mapped key replaced (the longest key that matches), or ``None``."""
    for key in sorted(mapping, key=len, reverse=True):
        if name == key or name.startswith((f"{key}.", f"{key}[")):
            return mapping[key] + name[len(key):]
    return None


def _reference(keys: list[str]) -> re.Pattern[str]:
    """A mapped name used in the body of a message as a field reference: not inside another word, path,
    quoted string or dotted name, and either a dotted or indexed path (``params.rows``, ``sizes[2]``) or
    followed by `` =``, `` <`` or `` >`` (``agents = 6``)."""
    alternatives = "|".join(re.escape(k) for k in sorted(keys, key=len, reverse=True))
    return re.compile(rf"(?<![\w.'\"/\\-])(?:{alternatives})"
                      rf"(?:(?:\.[A-Za-z_]\w*|\[[^\]]*\])+|(?= [=<>]))")


def renamed_error(err: ConfigError, mapping: Mapping[str, str]) -> ConfigError:
    """``err`` with its field renamed by ``mapping``, or ``err`` itself when its field is not mapped.

    The field is renamed when it equals a key of ``mapping`` or starts with the key followed by ``.`` or
    ``[`` (``{"params": "network.params"}`` renames ``params.rows`` to ``network.params.rows``). The
    message's leading field name is replaced the same way, and so are the other mapped names that the
    rest of the message uses as field references (``params.rows: ... does not equal agents = 6``; the
    field itself, already named in front, is left as written after it).

    Parameters
    ----------
    err : ConfigError
        The error raised by a lower layer.
    mapping : mapping of str to str
        Parameter name -> the name the caller's user knows (e.g. a TOML field path).

    Returns
    -------
    ConfigError
        A new error (same message style, renamed ``field``), or ``err`` unchanged.
    """
    field = err.field
    new = None if field is None else _renamed(field, mapping)
    if field is None or new is None:
        return err
    message = str(err)
    starts = message.startswith(field) and not re.match(r"\w", message[len(field):])
    head, body = (new, message[len(field):]) if starts else ("", message)

    def rename(match: re.Match[str]) -> str:
        name = match.group(0)
        return name if head and name == field else _renamed(name, mapping) or name

    body = _reference(list(mapping)).sub(rename, body)
    return ConfigError(head + body, field=new)


@contextmanager
def renamed_fields(mapping: Mapping[str, str]) -> Iterator[None]:
    """Re-raise a :class:`ConfigError` raised inside the block with its field renamed.

    A caller that takes its input under other names than the function it calls (the scenario layer reads
    ``[network] agents`` and calls ``make_network(agents=...)``) wraps the call so that the message names
    what its own user wrote. Errors whose field is ``None`` or not mapped pass unchanged.

    Parameters
    ----------
    mapping : mapping of str to str
        Parameter name (or leading part of a dotted parameter path) -> the name to show instead.

    Examples
    --------
    >>> with renamed_fields({"agents": "network.agents"}):
    ...     raise ConfigError("agents: must be an integer >= 2, got 0", field="agents")
    Traceback (most recent call last):
    ...
    dpgossip.errors.ConfigError: network.agents: must be an integer >= 2, got 0
    """
    try:
        yield
    except ConfigError as err:
        renamed = renamed_error(err, mapping)
        if renamed is err:
            raise
        raise renamed from None


def show(value: object) -> str:
    """``repr`` of a value, with numpy scalars shown as plain Python numbers."""
    item = getattr(value, "item", None)
    if callable(item) and type(value).__module__ == "numpy" and getattr(value, "ndim", 1) == 0:
        value = item()
    return repr(value)


def _bound(x: float, low: float | None, high: float | None, low_open: bool, high_open: bool) -> bool:
    if low is not None and (x <= low if low_open else x < low):
        return False
    return high is None or (x < high if high_open else x <= high)


def _expected(low: float | None, high: float | None, low_open: bool, high_open: bool) -> str:
    if low is not None and high is not None:
        return f"in {'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
    if low is not None:
        return f"a number {'>' if low_open else '>='} {low:g}"
    if high is not None:
        return f"a number {'<' if high_open else '<='} {high:g}"
    return "a number"


def check_number(value: object, field: str, *, low: float | None = None, high: float | None = None,
                 low_open: bool = False, high_open: bool = False, allow_inf: bool = False,
                 expected: str | None = None) -> float:
    """``value`` as a ``float`` after checking that it is a real number within the given bounds.

    Parameters
    ----------
    value : object
        What the user gave. Booleans are not numbers; numpy scalars are.
    field : str
        Name shown first in the message and stored as :attr:`ConfigError.field`.
    low, high : float, optional
        Bounds; ``low_open`` / ``high_open`` make them strict.
    allow_inf : bool
        Accept ``inf`` (still checked against the bounds); ``nan`` is never accepted.
    expected : str, optional
        What the range message says is allowed (default from the bounds, e.g. ``"a number > 0"``,
        ``"in (0, 1)"``).

    Returns
    -------
    float
        The value.

    Raises
    ------
    ConfigError
        ``"<field> must be a number, got 'x' (str)"`` (``<expected>`` in place of ``a number`` when
        given), ``"<field> must be a finite number, got nan"`` or ``"<field> must be <expected>, got
        <value>"``.

    Examples
    --------
    >>> check_number(0.5, "loss", low=0, high=1, high_open=True)
    0.5
    """
    if isinstance(value, bool) or not isinstance(value, Real):
        raise ConfigError(f"{field} must be {expected or 'a number'}, got {show(value)} "
                          f"({type(value).__name__})", field=field)
    x = float(value)
    if math.isnan(x) or (math.isinf(x) and not allow_inf):
        raise ConfigError(f"{field} must be a finite number, got {show(value)}", field=field)
    if not _bound(x, low, high, low_open, high_open):
        what = expected or _expected(low, high, low_open, high_open)
        raise ConfigError(f"{field} must be {what}, got {show(value)}", field=field)
    return x


def check_int(value: object, field: str, low: int) -> int:
    """``value`` as an ``int`` after checking that it is an integer ``>= low`` (booleans are not).

    Raises
    ------
    ConfigError
        ``"<field> must be an integer >= <low>, got <value>"``.

    Examples
    --------
    >>> check_int(3, "iterations", 1)
    3
    """
    if isinstance(value, bool) or not isinstance(value, Integral) or value < low:
        raise ConfigError(f"{field} must be an integer >= {low}, got {value!r}", field=field)
    return int(value)


def check_choice(value: object, field: str, choices: tuple[str, ...]) -> str:
    """``value`` when it is one of ``choices``, else :class:`ConfigError` naming ``field`` (with a
    did-you-mean)."""
    if not isinstance(value, str) or value not in choices:
        hint = did_you_mean(value, choices) if isinstance(value, str) else ""
        raise ConfigError(f"{field} must be one of {', '.join(map(repr, choices))}, got {value!r}{hint}",
                          field=field)
    return value


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
    ``reject_unknown_keys("sweep.", raw, ("zip",), "in [sweep]")``; its field is ``<prefix><key>``.
    """
    names = list(allowed)
    for key in keys:  # type: ignore[attr-defined]
        if key not in names:
            lead = f"allowed {where}" if where else "allowed"
            raise ConfigError(f"{prefix}{key}: unknown key{did_you_mean(str(key), names)}; "
                              f"{lead}: {', '.join(names)}", field=f"{prefix}{key}")
