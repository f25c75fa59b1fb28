"""Checks of how a scenario is run (``--scheduler``, ``--scheduler-timeout``), made before connecting or
computing anything, so that a malformed value fails at once with a clear message instead of a timeout."""

from __future__ import annotations

import math
import re

from dpgossip.errors import ConfigError

__all__ = ["check_scheduler", "SCHEDULER_SCHEMES"]

SCHEDULER_SCHEMES: tuple[str, ...] = ("tcp", "tls", "ws", "wss", "ucx")
"""Protocols of a Dask scheduler address (``tcp://host:8786``)."""

_ADDRESS = re.compile(
    r"(?:(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://)?"
    r"(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+)"
    r":(?P<port>[0-9]{1,5})/?"
)


def check_scheduler(address: object, timeout: object) -> tuple[str | None, float]:
    """Validate a Dask scheduler address (``None``: no cluster) and the connection timeout.

    The address must be ``[scheme://]host:port`` with a scheme of :data:`SCHEDULER_SCHEMES` (default
    ``tcp``) and a port in 1..65535; the timeout a finite number of seconds > 0.

    Raises
    ------
    ConfigError
        Naming ``--scheduler`` or ``--scheduler-timeout``, the value and what is allowed.
    """
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) \
            or not math.isfinite(timeout) or timeout <= 0:
        raise ConfigError(f"--scheduler-timeout must be a number of seconds > 0, got {timeout!r}")
    if address is None:
        return None, float(timeout)
    text = str(address).strip() if isinstance(address, str) else ""
    match = _ADDRESS.fullmatch(text)
    scheme = (match.group("scheme") or "tcp").lower() if match else None
    if match is None or scheme not in SCHEDULER_SCHEMES or not 1 <= int(match.group("port")) <= 65535:
        why = (f"unknown protocol {scheme!r} (allowed: {', '.join(SCHEDULER_SCHEMES)})"
               if match is not None and scheme not in SCHEDULER_SCHEMES else
               "the port must be 1..65535" if match is not None else "expected [protocol://]host:port")
        raise ConfigError(f"--scheduler {address!r} is not a Dask scheduler address: {why}; e.g. "
                          "tcp://127.0.0.1:8786 (the address the scheduler prints when it starts)")
    return text, float(timeout)
