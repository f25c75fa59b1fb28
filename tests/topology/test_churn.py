"""Churn: sampled sessions (renewal-theorem oracle), traces and their validation."""

from __future__ import annotations

import numpy as np
import pytest

from dpgossip.errors import ConfigError
from dpgossip.topology.churn import (
    SessionLength,
    always_online,
    presence_from_file,
    presence_from_trace,
    sample_presence,
)


def _online_fraction(pres, horizon: float) -> float:
    off = sum(min(e, horizon) - s for _, s, e in pres.absences(horizon))
    return 1.0 - off / (pres.m * horizon)


def test_long_run_online_fraction_is_the_renewal_ratio() -> None:
    # alternating renewal process: fraction online -> E[on] / (E[on] + E[off])
    on = SessionLength("lognormal", 1.0, 0.5)            # E = exp(1 + 0.125)
    off = SessionLength("exponential", 2.0)
    pres = sample_presence(200, 400.0, on, off, 7)
    e_on = np.exp(1.0 + 0.5 ** 2 / 2)
    assert _online_fraction(pres, 400.0) == pytest.approx(e_on / (e_on + 2.0), abs=0.01)


def test_presence_answers_by_interval_and_is_reproducible() -> None:
    pres = presence_from_trace(3, [(1, 2.0, 5.0), (1, 7.0, 8.0)])
    assert [pres.online(1, t) for t in (0.0, 2.0, 4.99, 5.0, 7.5, 9.0)] == \
        [True, False, False, True, False, True]
    assert pres.online(0, 3.0) and not always_online(4).absences()
    a = sample_presence(5, 50.0, SessionLength("exponential", 3.0), SessionLength("exponential", 1.0), 1)
    b = sample_presence(5, 50.0, SessionLength("exponential", 3.0), SessionLength("exponential", 1.0), 1)
    assert a.starts == b.starts and a.ends == b.ends


@pytest.mark.parametrize(("call", "field"), [
    (lambda: SessionLength("weibull", 1.0), "kind"),
    (lambda: SessionLength("exponential", 0.0), "mean"),
    (lambda: SessionLength("lognormal", 5.0, -1.0), "sigma"),
    (lambda: presence_from_trace(3, [(3, 0.0, 1.0)]), "absences[0]"),
    (lambda: presence_from_trace(3, [(0, 2.0, 1.0)]), "absences[0]"),
    (lambda: presence_from_trace(3, [(0, 0.0, 2.0), (0, 1.0, 3.0)]), "absences"),
])
def test_bad_churn_inputs_name_the_field(call, field: str) -> None:
    with pytest.raises(ConfigError) as err:
        call()
    assert err.value.field == field


def test_trace_file_round_trip(tmp_path) -> None:
    f = tmp_path / "trace.csv"
    f.write_text("# agent, from, to\n1, 2.0, 5.0\n\n0 1 1.5  # whitespace works too\n", "utf-8")
    pres = presence_from_file(3, f)
    assert pres.absences() == ((0, 1.0, 1.5), (1, 2.0, 5.0))
    f.write_text("1, 2.0\n", "utf-8")
    with pytest.raises(ConfigError, match="line 1") as err:
        presence_from_file(3, f)
    assert err.value.field == "trace"
