"""The result of one D-DP-PM run, shared by the matrix backend and the discrete-event engine."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dpgossip.protocols.ddppm.params import ProtocolParams
from dpgossip.protocols.status import ArithmeticStatus, arithmetic_status

__all__ = ["RunResult"]


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class RunResult:
    """Everything one run computed; arrays indexed by component ``l = 0..r-1`` first.

    With ``n`` rows, ``m`` agents, ``d`` columns, ``T`` iterations, ``c`` rounds. Check
    :attr:`status` before using the numbers: a run whose iterates overflowed, diverged or underflowed
    (``alpha`` or the noise far outside Corollary 1's range) returns them as computed, with
    ``status`` saying so (:mod:`dpgossip.protocols.status`).
    """

    Q: np.ndarray
    """``(n, r)`` final estimates, column ``l`` is ``q_l^(T) / ||q_l^(T)||`` (Algorithm 1, line 9)."""
    iterates: np.ndarray
    """``(r, T + 1, n)`` unnormalised ``q^(t)``, ``t = 0..T``."""
    z: np.ndarray | None
    """``(r, T, m, d)`` local projections ``z_i^(t) = X_i^T q_i^(t-1)``, ``t = 1..T`` (``None`` when not kept:
    ``run_matrix(..., keep_messages=False)``)."""
    z_half: np.ndarray | None
    """``(r, T, m, d)`` consensus results ``z_i^(t+1/2) = m (W^c z^(t))_i`` (``None`` when not kept)."""
    noise: np.ndarray
    """``(r, T + 1, n)`` realised latent noise: ``[q^(0); p^(1); ...; p^(T)]`` of each component."""
    data: tuple[np.ndarray, ...]
    """The (deflated) data matrix each component ran on; ``data[0]`` is ``X``."""
    deflation: np.ndarray
    """``(r, m, d)`` deflation vectors ``b_i`` computed after each component (see ``deflate``)."""
    params: ProtocolParams
    backend: str
    seed_entropy: int | None = None
    states: np.ndarray | None = None
    """``(r, T, c + 1, m, d)`` gossip states ``s^(t,k)`` when recorded (``s^(t,k-1)`` is sent in round k)."""

    @property
    def arithmetic(self) -> ArithmeticStatus:
        """Whether the iterates are usable numbers: ``ok``, ``non-finite``, ``diverged`` or
        ``underflow``, with the component and iteration of the first bad iterate
        (:func:`~dpgossip.protocols.status.arithmetic_status`; computed on each access, ``O(r T n)``)."""
        return arithmetic_status(self.iterates)

    @property
    def status(self) -> str:
        """``arithmetic.status``: one of ``ok``, ``non-finite``, ``diverged``, ``underflow``
        (an engine run's :attr:`~dpgossip.protocols.ddppm.engine_result.EngineResult.status` is the
        engine's own; its arithmetic status is :attr:`arithmetic` too)."""
        return self.arithmetic.status

    @property
    def status_reason(self) -> str:
        """Why :attr:`status` is not ``ok`` (empty when it is)."""
        return self.arithmetic.reason

    @property
    def q_final(self) -> np.ndarray:
        """``(r, n)`` unnormalised final vectors ``q_l^(T)``."""
        return self.iterates[:, -1, :]
