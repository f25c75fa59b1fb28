"""dpgossip: simulate and audit the Decentralized Differentially Private Power Method on gossip networks.

The names below are the public API for scripts and notebooks (``import dpgossip as dg``; a worked
example is README.md, "Python API", run as a doctest by ``tests/test_readme_doctest.py``).
``import dpgossip`` itself stays cheap: it loads only :mod:`dpgossip.errors`, and each name imports its
subpackage on first use (PEP 562 ``__getattr__``).

========================================  ========================================================
data                                      :func:`load_dataset`, :class:`PartitionedData`
network                                   :func:`make_network`, :class:`Network`,
                                          :func:`spectral_summary`
parameters (Campbell et al., Cor. 1)      :func:`resolve_params`, :class:`ProtocolParams`,
                                          :class:`NoiseSchedule`
runs                                      :func:`run_matrix` (matrix backend), :func:`run_engine`
                                          (discrete-event engine, :class:`NetworkConditions`,
                                          :class:`EngineResult`),
                                          :func:`run_ldp` (LDP baseline); :class:`RunResult`,
                                          :class:`LdpResult`
accuracy                                  :func:`top_singular`, :func:`sin_angle`,
                                          :func:`error_per_iteration`
privacy                                   :func:`audit_pairs` (:class:`AuditOptions`,
                                          :class:`PairAudit`, :class:`PairResult`,
                                          :class:`SearchSettings`), :func:`calibrate_noise`
                                          (:class:`AuditSettings`, :class:`FixedProtocol`,
                                          :class:`ScaleSearchOptions`, :class:`Calibration`),
                                          :class:`GaussianPair`
scenarios and plots                       :func:`load_scenario`, :func:`run_scenario`,
                                          :class:`Scenario`, :func:`make_report`
========================================  ========================================================

The subpackages (``dg.data``, ``dg.topology``, ``dg.protocols``, ``dg.engine``, ``dg.privacy``,
``dg.scenario``, ``dg.report``) are loaded on first use too.

Every public function checks its arguments as the command line does: a wrong value raises
:class:`ConfigError` naming the argument, the value and what is allowed (finite data, a
doubly-stochastic ``W`` unless ``Network(..., allow_nonstochastic=True)``, integer or ``SeedSequence``
seeds); every run result carries a ``status`` (``ok``, ``non-finite``, ``diverged`` or ``underflow``;
:mod:`dpgossip.protocols.status`) to check before its numbers are used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from dpgossip.errors import ConfigError

__all__ = [
    "ConfigError",
    "__version__",
    # data and network
    "load_dataset",
    "PartitionedData",
    "make_network",
    "Network",
    "spectral_summary",
    # parameters, runs, accuracy
    "resolve_params",
    "ProtocolParams",
    "NoiseSchedule",
    "run_matrix",
    "RunResult",
    "run_ldp",
    "LdpResult",
    "top_singular",
    "sin_angle",
    "error_per_iteration",
    "run_engine",
    "EngineResult",
    "NetworkConditions",
    # privacy
    "audit_pairs",
    "AuditOptions",
    "PairAudit",
    "PairResult",
    "GaussianPair",
    "SearchSettings",
    "calibrate_noise",
    "Calibration",
    "AuditSettings",
    "ScaleSearchOptions",
    "FixedProtocol",
    # scenarios and plots
    "load_scenario",
    "run_scenario",
    "Scenario",
    "make_report",
]

__version__ = "0.1.0"

# every public name but ConfigError and __version__ -> the module it is imported from on first use
# (tests/test_api.py checks that this, __all__ and the TYPE_CHECKING imports list the same names)
_LAZY: dict[str, str] = {
    "load_dataset": "dpgossip.data",
    "PartitionedData": "dpgossip.data",
    "make_network": "dpgossip.topology",
    "Network": "dpgossip.topology",
    "spectral_summary": "dpgossip.topology",
    "resolve_params": "dpgossip.protocols.ddppm.params",
    "ProtocolParams": "dpgossip.protocols.ddppm.params",
    "NoiseSchedule": "dpgossip.protocols.ddppm.params",
    "run_matrix": "dpgossip.protocols.ddppm.matrix",
    "RunResult": "dpgossip.protocols.ddppm.result",
    "run_ldp": "dpgossip.protocols.ldp.baseline",
    "LdpResult": "dpgossip.protocols.ldp.baseline",
    "top_singular": "dpgossip.protocols.power",
    "sin_angle": "dpgossip.protocols.metrics",
    "error_per_iteration": "dpgossip.protocols.metrics",
    "run_engine": "dpgossip.protocols.ddppm.nodes",
    "EngineResult": "dpgossip.protocols.ddppm.engine_result",
    "NetworkConditions": "dpgossip.engine",
    "audit_pairs": "dpgossip.protocols.ddppm.audit",
    "AuditOptions": "dpgossip.protocols.ddppm.audit",
    "PairAudit": "dpgossip.protocols.ddppm.audit",
    "PairResult": "dpgossip.protocols.ddppm.audit",
    "GaussianPair": "dpgossip.privacy",
    "SearchSettings": "dpgossip.protocols.ddppm.search",
    "calibrate_noise": "dpgossip.protocols.ddppm.calibrate",
    "Calibration": "dpgossip.protocols.ddppm.calibrate",
    "AuditSettings": "dpgossip.protocols.ddppm.calibrate",
    "FixedProtocol": "dpgossip.protocols.ddppm.calibrate",
    "ScaleSearchOptions": "dpgossip.privacy.scale_search",
    "load_scenario": "dpgossip.scenario",
    "run_scenario": "dpgossip.scenario",
    "Scenario": "dpgossip.scenario",
    "make_report": "dpgossip.report",
}

_SUBPACKAGES: tuple[str, ...] = ("data", "topology", "protocols", "engine", "privacy", "scenario",
                                 "report")

if TYPE_CHECKING:  # for type checkers and IDEs; at run time __getattr__ imports these on first use
    from dpgossip.data import PartitionedData, load_dataset
    from dpgossip.engine import NetworkConditions
    from dpgossip.privacy import GaussianPair
    from dpgossip.privacy.scale_search import ScaleSearchOptions
    from dpgossip.protocols.ddppm.audit import AuditOptions, PairAudit, PairResult, audit_pairs
    from dpgossip.protocols.ddppm.calibrate import (
        AuditSettings,
        Calibration,
        FixedProtocol,
        calibrate_noise,
    )
    from dpgossip.protocols.ddppm.engine_result import EngineResult
    from dpgossip.protocols.ddppm.matrix import run_matrix
    from dpgossip.protocols.ddppm.nodes import run_engine
    from dpgossip.protocols.ddppm.params import NoiseSchedule, ProtocolParams, resolve_params
    from dpgossip.protocols.ddppm.result import RunResult
    from dpgossip.protocols.ddppm.search import SearchSettings
    from dpgossip.protocols.ldp.baseline import LdpResult, run_ldp
    from dpgossip.protocols.metrics import error_per_iteration, sin_angle
    from dpgossip.protocols.power import top_singular
    from dpgossip.report import make_report
    from dpgossip.scenario import Scenario, load_scenario, run_scenario
    from dpgossip.topology import Network, make_network, spectral_summary


def __getattr__(name: str) -> Any:
    """Import a public name or a subpackage on first use (PEP 562) and cache it in this module."""
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
    elif name in _SUBPACKAGES:
        value = importlib.import_module(f"{__name__}.{name}")
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The public names and the subpackages, loaded or not (``dir(dpgossip)``)."""
    return sorted({*__all__, *_SUBPACKAGES})
