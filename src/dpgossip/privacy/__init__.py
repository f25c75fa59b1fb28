"""The privacy layer: Gaussian laws, divergences, conversions and accountants, protocol-agnostic.

See ``docs/privacy.md`` (reading the results) and ``docs/model.md`` (the formulas). Main entry points:

* :class:`GaussianPair` -- divergences and conversions of two Gaussians (exact, rdp, chernoff);
* :func:`composition_guarantee` -- the zCDP, RDP and PLD guarantee of a composition of Gaussian steps;
* :class:`Neighbour` -- a neighbouring dataset (one row replaced) and its adjacency checks;
* the Gaussian mechanism's calibrations (:func:`analytic_gaussian_sigma`, :func:`classical_gaussian_sigma`).

Each protocol's release model, guarantee and audit live in its home under :mod:`dpgossip.protocols`.
"""

from dpgossip.privacy.accountant import Guarantee, composition_guarantee
from dpgossip.privacy.gaussian_pair import GaussianPair, SupportMismatch
from dpgossip.privacy.mechanism import (
    analytic_gaussian_sigma,
    classical_gaussian_sigma,
    gaussian_mechanism_delta,
)
from dpgossip.privacy.neighbours import NEIGHBOUR_KINDS, Neighbour

__all__ = [
    "GaussianPair", "SupportMismatch", "Guarantee", "composition_guarantee", "Neighbour",
    "NEIGHBOUR_KINDS", "analytic_gaussian_sigma", "classical_gaussian_sigma",
    "gaussian_mechanism_delta",
]
