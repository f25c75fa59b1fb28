"""Tables and plots of a results folder (extra ``plot``: matplotlib, imported lazily, Agg only).

:func:`make_report` draws every plot of a finished results folder (``dpgossip report DIR``); the
plotting functions can be called on their own. :func:`plot_pair_heatmap` and
:func:`plot_leakage_vs_hops` take a tidy table of ``{observer, target, hops, value}`` rows (see
:mod:`dpgossip.report.leakage`). :func:`plot_audit` draws the plots of ``dpgossip audit``
(:func:`make_audit_report` from an audit folder's files).
"""

from dpgossip.report.audit import make_audit_report, plot_audit
from dpgossip.report.build import make_report
from dpgossip.report.curves import plot_error_vs_c, plot_error_vs_epsilon, plot_error_vs_iteration
from dpgossip.report.figures import PlotsUnavailable
from dpgossip.report.leakage import plot_leakage_vs_hops, plot_pair_heatmap
from dpgossip.report.network import plot_network_file, plot_topology
from dpgossip.report.tables import ResultsFolder

__all__ = [
    "make_report",
    "PlotsUnavailable",
    "ResultsFolder",
    "plot_error_vs_iteration",
    "plot_error_vs_c",
    "plot_error_vs_epsilon",
    "plot_topology",
    "plot_network_file",
    "plot_pair_heatmap",
    "plot_leakage_vs_hops",
    "plot_audit",
    "make_audit_report",
]
