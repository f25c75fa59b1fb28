"""The two routes of the inversion integral (dpgossip.privacy.plrv) agree where both apply.

A law with a weight ``alpha`` near 0 (a generalised eigenvalue within ``1e-4`` of 1, common in audited
views) decays only far out, so the direct route (one-period Gauss-Legendre pieces up to the truncation
point) spans tens of thousands of periods and took about a second per hockey-stick value. Such laws
now take the Fourier route after 2000 periods; here both routes are run on the same laws (the direct
one forced by raising the piece limit) and must agree to the integrals' accuracy.
"""

from __future__ import annotations

import numpy as np
import pytest

from dpgossip.privacy import plrv
from dpgossip.privacy.gaussian_pair import GaussianPair

# pencil eigenvalues of an observer view of paper-fig3 (Wine, T = 2, target 1) at a searched neighbour
WINE_VIEW = np.array([0.53620446, 0.5375687, 0.95509177, 0.99998122, 1.00001621, 1.04715866,
                      22.36215185, 22.58010278])


LAWS = [
    (WINE_VIEW, 5.0),
    (np.array([0.999968, 0.547156, 4.737381, 0.352692, 7.503735, 0.756268]), 5.0),
]
"""Zero-mean laws with one or two eigenvalues within ``5e-5`` of 1 (direct route: 1 to 3 s each)."""


@pytest.mark.parametrize("lam, eps", LAWS)
def test_fourier_route_matches_the_direct_route(monkeypatch, lam, eps):
    k = lam.size
    used = []
    real_tail = plrv._oscillatory_tail

    def spy(*args, **kwargs):
        used.append(True)
        return real_tail(*args, **kwargs)

    monkeypatch.setattr(plrv, "_oscillatory_tail", spy)
    pair = GaussianPair(np.zeros(k), np.eye(k), np.zeros(k), np.diag(lam))
    fourier = pair.delta(eps)
    assert used, "the law was meant to need the Fourier route"
    monkeypatch.setattr(plrv, "_QAWF_PIECES", 10**7)  # the direct route over the whole range
    used.clear()
    direct = GaussianPair(np.zeros(k), np.eye(k), np.zeros(k), np.diag(lam)).delta(eps)
    assert not used
    assert 0.0 < direct < 1.0
    assert abs(fourier - direct) <= 1e-13
