"""Churn: when agents are online, from session-length distributions or a trace.

Every agent alternates online and offline sessions, starting online at time 0. Session lengths are
i.i.d.: lognormal (``log L ~ N(mu, sigma^2)``, GoLF's online sessions with ``mu = 5``,
``sigma = 0.5``) or exponential (``mean``), one distribution for the online sessions and one for the
offline ones. :func:`sample_presence` draws them per agent from the agent's own child seed up to a
horizon; :func:`presence_from_trace` takes explicit absences ``(agent, from, to)``, and
:func:`presence_from_file` reads them from a text file (one ``agent, from, to`` per line, commas or
whitespace, ``#`` starts a comment). A
:class:`Presence` answers ``online(i, t)`` by bisection (an agent is offline on ``[from, to)``).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dpgossip.errors import ConfigError, check_choice, check_int, check_number

__all__ = ["SESSION_KINDS", "SessionLength", "Presence", "sample_presence", "presence_from_trace",
           "presence_from_file", "always_online"]

SESSION_KINDS: tuple[str, ...] = ("lognormal", "exponential")


@dataclass(frozen=True, slots=True)
class SessionLength:
    """A session-length distribution: ``lognormal`` (``a = mu``, ``b = sigma`` of ``log L``) or
    ``exponential`` (``a = mean``)."""

    kind: str
    a: float
    b: float = 0.0

    def __post_init__(self) -> None:
        check_choice(self.kind, "kind", SESSION_KINDS)
        if self.kind == "lognormal":
            object.__setattr__(self, "a", check_number(self.a, "mu"))
            object.__setattr__(self, "b", check_number(self.b, "sigma", low=0.0))
        else:
            object.__setattr__(self, "a", check_number(self.a, "mean", low=0.0, low_open=True))

    def draw(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """``n`` session lengths."""
        if self.kind == "lognormal":
            return np.exp(self.a + self.b * rng.standard_normal(n))
        return rng.exponential(self.a, n)


@dataclass(frozen=True, slots=True, eq=False)
class Presence:
    """Offline intervals per agent: ``starts[i]``, ``ends[i]`` sorted, disjoint."""

    starts: tuple[tuple[float, ...], ...]
    ends: tuple[tuple[float, ...], ...]

    @property
    def m(self) -> int:
        """Number of agents."""
        return len(self.starts)

    def online(self, i: int, t: float) -> bool:
        """Whether agent ``i`` is online at time ``t`` (offline on ``[from, to)``)."""
        k = bisect.bisect_right(self.starts[i], t) - 1
        return k < 0 or t >= self.ends[i][k]

    def offline(self, i: int, t: float) -> bool:
        """Whether agent ``i`` is offline at time ``t``."""
        return not self.online(i, t)

    def absences(self, horizon: float = np.inf) -> tuple[tuple[int, float, float], ...]:
        """``(agent, from, min(to, horizon))`` of every absence starting before ``horizon``."""
        return tuple((i, s, min(e, horizon)) for i in range(self.m)
                     for s, e in zip(self.starts[i], self.ends[i], strict=True) if s < horizon)


def always_online(m: int) -> Presence:
    """Nobody is ever offline."""
    return Presence(starts=((),) * m, ends=((),) * m)


def sample_presence(m: int, horizon: float, online: SessionLength, offline: SessionLength,
                    seed: int | np.random.SeedSequence) -> Presence:
    """Alternating sessions per agent up to ``horizon`` (module docstring); agent ``i`` draws from
    child ``i`` of ``seed``."""
    m = check_int(m, "m", 1)
    H = check_number(horizon, "horizon", low=0.0)
    root = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    starts, ends = [], []
    for child in root.spawn(m):
        rng = np.random.default_rng(child)
        t, s_i, e_i = 0.0, [], []
        while t < H:
            t += float(online.draw(rng, 1)[0])
            if t >= H:
                break
            gap = float(offline.draw(rng, 1)[0])
            s_i.append(t)
            e_i.append(t + gap)
            t += gap
        starts.append(tuple(s_i))
        ends.append(tuple(e_i))
    return Presence(starts=tuple(starts), ends=tuple(ends))


def presence_from_trace(m: int, absences: Iterable[tuple[int, float, float]]) -> Presence:
    """A :class:`Presence` from explicit absences ``(agent, from, to)`` (disjoint per agent)."""
    m = check_int(m, "m", 1)
    per: list[list[tuple[float, float]]] = [[] for _ in range(m)]
    for k, item in enumerate(absences):
        try:
            i, a, b = int(item[0]), float(item[1]), float(item[2])
        except (TypeError, ValueError, IndexError):
            raise ConfigError(f"absences[{k}] must be (agent, from, to), got {item!r}",
                              field=f"absences[{k}]") from None
        if not 0 <= i < m or not 0 <= a <= b:
            raise ConfigError(f"absences[{k}] must have an agent in 0..{m - 1} and 0 <= from <= to,"
                              f" got {item!r}", field=f"absences[{k}]")
        per[i].append((a, b))
    for i, iv in enumerate(per):
        iv.sort()
        if any(iv[k + 1][0] < iv[k][1] for k in range(len(iv) - 1)):
            raise ConfigError(f"absences: agent {i} has overlapping absences; allowed: disjoint "
                              "intervals", field="absences")
    return Presence(starts=tuple(tuple(a for a, _ in iv) for iv in per),
                    ends=tuple(tuple(b for _, b in iv) for iv in per))


def presence_from_file(m: int, path: str | Path) -> Presence:
    """Absences read from a trace file (module docstring)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"trace: cannot read {str(p)!r} ({exc.strerror})", field="trace") from None
    items = []
    for n, line in enumerate(text.splitlines(), 1):
        fields = line.split("#", 1)[0].replace(",", " ").split()
        if not fields:
            continue
        try:
            items.append((int(fields[0]), float(fields[1]), float(fields[2])))
        except (ValueError, IndexError):
            raise ConfigError(f"trace: line {n} of {str(p)!r} must be 'agent, from, to', got "
                              f"{line.strip()!r}", field="trace") from None
    return presence_from_trace(m, items)
