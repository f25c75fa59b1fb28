r"""A release that is linear in Gaussian noise: what an adversary sees, as one description.

Every view audited exactly by :mod:`dpgossip.privacy.linear_audit` and
:mod:`dpgossip.privacy.linear_allpairs` is

.. math::

    Y = J x + B w, \qquad w \sim N(0, I),

with ``x`` the private coordinates of the targets (each target owns a few columns of ``J``), ``B`` the
noise factor over independent standard Gaussian latent variables, and ``J`` and ``B`` known to the
adversary. What the adversary knows is already folded in:

* **noise it knows** (its own draws, a mask it shares): conditioning on independent latent variables
  removes their columns of ``B``: the view given them is the same form with the other columns;
* **data it knows** (its own inputs): the same in both neighbouring worlds, so their columns of ``J``
  are removed (or zeroed; a zero column moves nothing);
* **which observations it holds** (an observer, a coalition, an eavesdropper on some edges, only the
  sum, everyone but the target): a choice of rows, or any fixed linear map ``R`` of the rows, since
  ``R Y = (R J) x + (R B) w`` (:meth:`LinearGaussianRelease.combine`). A map that loses no information
  (an invertible ``R``, an orthonormal basis of the rows' span) leaves the leakage unchanged.

**Mean shift.** Changing target ``u``'s coordinates by ``s`` moves the mean by ``J_u s`` (``J_u``:
its columns) and leaves the covariance ``Sigma = B B^T`` alone: the two views are Gaussians with one
covariance, a Gaussian mechanism. Its Mahalanobis norm is

.. math::

    \mu^2 = s^\top J_u^\top \Sigma^{+} J_u s \quad \text{if } J_u s \in \operatorname{range}(\Sigma),
    \qquad \mu = \infty \text{ otherwise (the two laws are mutually singular).}

**Whitening.** With the thin SVD ``B = U S V^T`` cut to its numerical rank ``r``,
``Sigma^+ = U_r S_r^{-2} U_r^T`` and ``C = S_r^{-1} U_r^T J`` whitens every column at once:
``mu^2 = ||C_u s||^2``. With a positive definite ``Sigma = L L^T`` (Cholesky), ``C = L^{-1} J`` gives
the same norms (``||L^{-1} j||^2 = j^T Sigma^{-1} j``), without ``B``.

**Neighbours.** The auditors take the box ``|s_i| <= Delta`` for each of a target's ``k`` columns
(one input per round, each clipped); for ``k = 1`` that is ``mu = Delta ||c_u||``; for ``k > 1`` the
maximum of the convex ``s^T C_u^T C_u s`` over the box is at a vertex
(:func:`~dpgossip.privacy.linear_audit.box_maximum`).

**Exact (eps, delta).** A Gaussian mechanism of norm ``mu`` has RDP ``alpha mu^2 / 2`` at every order
``alpha`` and the exact privacy curve (Balle and Wang 2018, Theorem 8)

.. math::

    \delta(\varepsilon) = \Phi\!\left(\frac{\mu}{2} - \frac{\varepsilon}{\mu}\right)
        - e^{\varepsilon}\, \Phi\!\left(-\frac{\mu}{2} - \frac{\varepsilon}{\mu}\right),

solved for ``eps`` by :func:`~dpgossip.privacy.mechanism.gaussian_mechanism_epsilon`. Independent
releases (fresh noise) compose by adding their ``mu^2``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from dpgossip.errors import ConfigError

__all__ = ["LinearGaussianRelease"]


@dataclass(frozen=True, slots=True, kw_only=True, eq=False)
class LinearGaussianRelease:
    """``Y = J x + B w``, ``w ~ N(0, I)``: one adversary's view of a release (module docstring).

    Parameters
    ----------
    J : numpy.ndarray
        ``(rows, data columns)``: the mean as a linear map of the targets' coordinates.
    B : numpy.ndarray or callable
        ``(rows, latent columns)``: the noise factor over the latent standard normals the adversary does
        not know; or a function of no argument that builds it (when :attr:`covariance` is given and the
        factor may not be needed).
    targets : numpy.ndarray
        ``(n,)`` int: the targets (agents, sites) whose coordinates are columns of ``J``.
    columns : numpy.ndarray
        ``(n, k)`` int: ``columns[i]`` are the columns of ``J`` owned by ``targets[i]`` (``k`` inputs
        each, e.g. one per round).
    covariance : numpy.ndarray, optional
        ``Sigma = B B^T`` when the producer has it without forming ``B`` (then it must equal ``B B^T``).
    label : str
        Who observes, for the tidy rows (``"3"``, ``"1+5"``, ``"eavesdropper"``, ``"sum"``).
    """

    J: np.ndarray
    B: np.ndarray | Callable[[], np.ndarray]
    targets: np.ndarray
    columns: np.ndarray
    covariance: np.ndarray | None = None
    label: str = ""

    def __post_init__(self) -> None:
        J = np.asarray(self.J, dtype=float)
        if J.ndim != 2:
            raise ConfigError(f"J must be a matrix, got shape {J.shape}", field="J")
        if not callable(self.B):
            B = np.asarray(self.B, dtype=float)
            if B.ndim != 2 or B.shape[0] != J.shape[0]:
                raise ConfigError(f"B must be a matrix with J's {J.shape[0]} rows, got shape {B.shape}",
                                  field="B")
            object.__setattr__(self, "B", B)
        targets = np.asarray(self.targets, dtype=np.int64).reshape(-1)
        columns = np.asarray(self.columns, dtype=np.int64)
        if columns.ndim == 1:
            columns = columns[:, None]
        if columns.shape[0] != targets.size or (columns.size and (columns.min() < 0
                                                                  or columns.max() >= J.shape[1])):
            raise ConfigError(f"columns must give each of the {targets.size} targets its columns of J "
                              f"(0..{J.shape[1] - 1}), got shape {columns.shape}", field="columns")
        if self.covariance is not None and np.shape(self.covariance) != (J.shape[0], J.shape[0]):
            raise ConfigError(f"covariance must be {J.shape[0]} x {J.shape[0]}, got shape "
                              f"{np.shape(self.covariance)}", field="covariance")
        object.__setattr__(self, "J", J)
        object.__setattr__(self, "targets", targets)
        object.__setattr__(self, "columns", columns)

    @staticmethod
    def from_columns(J: np.ndarray, B: np.ndarray | Callable[[], np.ndarray],
                     columns_of: Mapping[int, np.ndarray], *, label: str = "",
                     covariance: np.ndarray | None = None) -> LinearGaussianRelease:
        """The release whose target ``u`` owns ``columns_of[u]`` (the same count for every target),
        targets in increasing order."""
        targets = sorted(columns_of)
        width = len(columns_of[targets[0]]) if targets else 0
        columns = np.array([np.asarray(columns_of[u], dtype=np.int64) for u in targets],
                           dtype=np.int64).reshape(len(targets), width)
        return LinearGaussianRelease(J=J, B=B, targets=np.array(targets, dtype=np.int64),
                                     columns=columns, covariance=covariance, label=label)

    def noise_factor(self) -> np.ndarray:
        """``B`` (built when it was given as a function)."""
        return np.asarray(self.B(), dtype=float) if callable(self.B) else self.B

    def noise_covariance(self) -> np.ndarray:
        """``Sigma = B B^T``."""
        if self.covariance is not None:
            return np.asarray(self.covariance, dtype=float)
        B = self.noise_factor()
        return B @ B.T

    def columns_of(self, target: int) -> np.ndarray:
        """The columns of ``J`` owned by ``target``."""
        hit = np.flatnonzero(self.targets == target)
        if hit.size == 0:
            raise ConfigError(f"target {target!r} is not a target of the view {self.label!r}",
                              field="target")
        return self.columns[int(hit[0])]

    def mean_shift(self, target: int, shift: np.ndarray) -> np.ndarray:
        """``J_u s``: how far the mean moves when ``target``'s coordinates change by ``shift``."""
        return self.J[:, self.columns_of(target)] @ np.asarray(shift, dtype=float).reshape(-1)

    def combine(self, R: np.ndarray, *, label: str | None = None) -> LinearGaussianRelease:
        """The view ``R Y = (R J) x + (R B) w`` of fixed combinations ``R`` of the rows (a choice of rows
        when ``R`` is a 0/1 selection)."""
        R = np.asarray(R, dtype=float)
        if R.ndim != 2 or R.shape[1] != self.J.shape[0]:
            raise ConfigError(f"R must have {self.J.shape[0]} columns (one per row of the view), got "
                              f"shape {R.shape}", field="R")
        cov = None if self.covariance is None else R @ self.noise_covariance() @ R.T
        return LinearGaussianRelease(J=R @ self.J, B=R @ self.noise_factor(), targets=self.targets,
                                     columns=self.columns, covariance=cov,
                                     label=self.label if label is None else label)
