"""The linear release of noisy gossip averaging under a recorded mixing schedule.

Gossip averaging with noise once (``gossip-average``): agent ``u`` starts from
``y_u^0 = x_u + sigma_u z_u`` and then follows a :class:`~dpgossip.topology.schedules.MixingSchedule`
(time-varying rounds, pairwise exchanges, push-sum), so every message is a linear map of ``y^0``:
``c r^T y^0`` with the row ``r`` and factor ``c`` of
:func:`~dpgossip.topology.schedule_backend.schedule_messages`. An observer set ``S`` that knows the
schedule receives the messages whose receiver is in ``S`` and sender outside it; conditioning on its
own data and noise, its view is ``O = J x + B z`` with ``J = C[:, V \\ S]`` and
``B = C[:, V \\ S] diag(sigma)`` (``C`` the coefficients of its messages): a
:class:`~dpgossip.protocols.gossip.linear.GossipView`, audited like any other
(:func:`dpgossip.privacy.linear_audit.audit_view`). This is the exact view of an observer who knows
the realised schedule (docs/dynamic-gossip.md).

The push-sum weights ``w`` carried by push-sum messages do not depend on the data and are left out.
"""

from __future__ import annotations

from collections.abc import Iterable
from numbers import Integral

import numpy as np

from dpgossip.errors import ConfigError
from dpgossip.protocols.gossip.linear import GossipView
from dpgossip.topology.schedule_backend import ScheduleMessages, schedule_messages
from dpgossip.topology.schedules import MixingSchedule

__all__ = ["observe_schedule", "scheduled_view_values"]


def _observers(m: int, observers: int | Iterable[int]) -> tuple[int, ...]:
    items = [observers] if isinstance(observers, Integral) else list(observers)
    if not items or any(isinstance(v, bool) or not isinstance(v, Integral) or not 0 <= v < m
                        for v in items):
        raise ConfigError(f"observers must name agents in 0..{m - 1}, got {observers!r}",
                          field="observers")
    return tuple(sorted({int(v) for v in items}))


def _scales(m: int, sigma: float | Iterable[float]) -> np.ndarray:
    s = np.broadcast_to(np.asarray(sigma, dtype=float), (m,)).copy() \
        if np.ndim(sigma) == 0 else np.asarray(list(sigma), dtype=float)
    if s.shape != (m,) or not np.all(np.isfinite(s)) or np.any(s < 0):
        raise ConfigError(f"sigma must be one number >= 0 or {m} of them, got {sigma!r}",
                          field="sigma")
    return s


def _received(msgs: ScheduleMessages, obs: tuple[int, ...]) -> np.ndarray:
    return np.flatnonzero(np.isin(msgs.receivers, obs) & ~np.isin(msgs.senders, obs))


def observe_schedule(schedule: MixingSchedule, sigma: float | Iterable[float],
                     observers: int | Iterable[int], *,
                     messages: ScheduleMessages | None = None) -> GossipView:
    """The Gaussian view ``O = J x + B z`` of ``observers`` under ``schedule`` (module docstring).

    Rows are the received messages in schedule order; :attr:`GossipView.messages` holds
    ``(sender, step)`` of each. ``messages``: the schedule's
    :func:`~dpgossip.topology.schedule_backend.schedule_messages`, when already computed (one list
    serves every observer).
    """
    m = schedule.m
    obs = _observers(m, observers)
    scales = _scales(m, sigma)
    msgs = schedule_messages(schedule) if messages is None else messages
    rows = _received(msgs, obs)
    others = np.array([u for u in range(m) if u not in obs], dtype=np.int64)
    C = msgs.coefficients[rows][:, others]
    noisy = scales[others] > 0
    data_index = np.column_stack([others, np.full(others.size, -1)])
    noise_index = np.column_stack([others[noisy], np.zeros(int(noisy.sum()), dtype=np.int64)])
    return GossipView(observers=obs, J=C, B=C[:, noisy] * scales[others][noisy],
                      data_index=data_index, noise_index=noise_index,
                      messages=np.column_stack([msgs.senders[rows], msgs.steps[rows]]),
                      columns_of={int(u): np.array([k]) for k, u in enumerate(others)})


def scheduled_view_values(schedule: MixingSchedule, y0: np.ndarray,
                          observers: int | Iterable[int]) -> np.ndarray:
    """The values of the view's rows for initial states ``y^0`` (``(m,)``), including the
    observers' own part: what the observers' received messages carried."""
    obs = _observers(schedule.m, observers)
    msgs = schedule_messages(schedule)
    return msgs.coefficients[_received(msgs, obs)] @ np.asarray(y0, dtype=float)
