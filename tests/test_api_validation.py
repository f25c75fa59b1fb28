"""The public API checks its arguments at the boundary, as the command line does.

One test per case found by trying bad inputs: each names the argument, the value and what is
allowed, in the package's own :class:`ConfigError`, never an ``AttributeError``, ``TypeError`` or
``LinAlgError`` from deep inside, and never a silently wrong number. The last test throws random bad
arguments at the main public functions (hypothesis, a fixed number of examples).
"""

from __future__ import annotations

import codecs

import networkx as nx
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dpgossip as dg
from dpgossip.errors import ConfigError
from dpgossip.protocols.metrics import captured_energy, subspace_distance
from tests.conftest import PAPER_W, metropolis

WINE4 = dg.load_dataset("wine", agents=4)
RING4 = dg.make_network("ring", agents=4)
PARAMS = dg.resolve_params(WINE4, RING4, iterations=3, consensus_steps=2)
ROW_SUMS_12 = np.full((4, 4), 0.3)  # every row and column sums to 1.2


def _raises(field: str, *needles: str):
    """``pytest.raises(ConfigError)`` whose error names ``field`` and contains every needle."""
    class Check:
        def __enter__(self):
            self.ctx = pytest.raises(ConfigError)
            self.info = self.ctx.__enter__()
            return self.info

        def __exit__(self, *exc):
            out = self.ctx.__exit__(*exc)
            err = self.info.value
            assert err.field == field, (err.field, str(err))
            for needle in needles:
                assert needle in str(err), (needle, str(err))
            return out
    return Check()


# ------------------------------------------------------------------------------------- data
def test_nan_data_is_refused_naming_the_entry():
    X = WINE4.X.copy()
    X[3, 2] = np.nan
    with _raises("X", "X[3, 2] = nan", "NaN and infinite entries are not allowed"):
        dg.PartitionedData(X=X, sizes=WINE4.sizes)


@pytest.mark.parametrize("X, needle", [
    ("abc", "must be an array of real numbers"),
    ([[1.0, "a"]], "must be an array of real numbers"),
    (np.ones((2, 2)) * (0.5 + 0.5j), "must be an array of real numbers"),  # was cast, dropping 0.5j
    (np.zeros((3, 0)), "must be a non-empty 2-D array, got shape (3, 0)"),
    (np.zeros(5), "must be a non-empty 2-D array, got shape (5,)"),
])
def test_data_that_is_not_a_real_matrix_is_refused(X, needle):
    with _raises("X", needle):
        dg.PartitionedData(X=X, sizes=(1,))


@pytest.mark.parametrize("sizes, needle", [
    ((88.5, 89.5), "sequence of integers"),  # was truncated to (88, 89) silently
    (None, "sequence of integers"),
    ("ab", "sequence of integers"),
    ((), "sizes is empty"),
])
def test_bad_sizes_are_refused(sizes, needle):
    with _raises("sizes", needle):
        dg.PartitionedData(X=WINE4.X, sizes=sizes)


# ---------------------------------------------------------------------------------- network
def test_a_w_that_is_not_doubly_stochastic_is_refused_unless_allowed():
    graph = nx.complete_graph(4)
    with _raises("W", "not doubly stochastic", "row 0 sums to 1.2", "allow_nonstochastic=True"):
        dg.Network(graph=graph, W=ROW_SUMS_12)
    net = dg.Network(graph=graph, W=ROW_SUMS_12, allow_nonstochastic=True)
    assert not net.doubly_stochastic
    # ... and D-DP-PM refuses to run on it (it used to run and return numbers)
    with _raises("network", "not a symmetric doubly-stochastic", "allow_nonstochastic=True"):
        dg.run_matrix(WINE4, net, PARAMS, 0)
    with _raises("network", "not a symmetric doubly-stochastic"):
        dg.run_engine(WINE4, net, PARAMS, 0)
    with _raises("network", "not a symmetric doubly-stochastic"):
        dg.resolve_params(WINE4, net, iterations=2, consensus_steps=1)


def test_a_valid_w_is_accepted_and_marked_doubly_stochastic():
    net = dg.Network(graph=nx.cycle_graph(4), W=PAPER_W)
    assert net.doubly_stochastic and dg.make_network("ring", agents=4).doubly_stochastic
    # one agent: W = [1], the centralized power method
    assert dg.Network(graph=nx.empty_graph(1), W=np.ones((1, 1))).doubly_stochastic


@pytest.mark.parametrize("graph, W, field, needle", [
    (nx.cycle_graph(4), np.vstack(([0.5, 0.5, 0, 0], PAPER_W[1:])), "W",
     "not symmetric: W[0, 1] = 0.5 but W[1, 0] = 0.25"),
    (nx.cycle_graph(4), np.eye(3), "W", "W is 3 x 3 but the graph has 4 nodes"),
    (nx.cycle_graph(4), np.full((4, 4), np.nan), "W", "is not finite"),
    (nx.cycle_graph(4), "x", "W", "not a numeric matrix"),
    (nx.path_graph(4), PAPER_W, "W", "(0, 3) is not an edge of the graph"),
    (nx.empty_graph(4), np.eye(4), "graph", "disconnected"),
    (nx.Graph(), np.zeros((0, 0)), "graph", "has 0 node(s)"),
    (None, np.eye(4), "graph", "expected a networkx.Graph, got NoneType"),
])
def test_a_bad_network_is_refused_naming_graph_or_w(graph, W, field, needle):
    with _raises(field, needle):
        dg.Network(graph=graph, W=W)


def test_allowed_weights_are_still_classified():
    # the engines' star of clients with W = I (no averaging: eigenvalue 1 is repeated) and a valid W
    star = dg.Network(graph=nx.star_graph(4), W=np.eye(5), allow_nonstochastic=True)
    ring = dg.Network(graph=nx.cycle_graph(4), W=PAPER_W, allow_nonstochastic=True)
    assert (star.doubly_stochastic, ring.doubly_stochastic) == (False, True)
    with _raises("W", "eigenvalue 1 more than once"):
        dg.Network(graph=nx.star_graph(4), W=np.eye(5))


def test_even_with_allow_nonstochastic_w_must_fit_the_graph():
    with _raises("W", "is not an edge of the graph"):
        dg.Network(graph=nx.path_graph(4), W=np.full((4, 4), 0.25), allow_nonstochastic=True)


@pytest.mark.parametrize("kwargs, field, needle", [
    ({"topology": "ring", "agents": 4, "params": [1]}, "params", "must be a mapping"),
    ({"topology": "ring", "agents": 4, "seed": -1}, "seed", "non-negative integer"),
    ({"topology": "erdos_renyi", "agents": 8, "seed": 1.5}, "seed", "got 1.5"),
])
def test_make_network_checks_params_and_seed(kwargs, field, needle):
    with _raises(field, needle):
        dg.make_network(**kwargs)


def test_spectral_summary_accepts_a_network():
    s = dg.spectral_summary(RING4)
    W = metropolis(nx.cycle_graph(4))  # written out independently of the package's rules
    lam = np.linalg.eigvalsh(W)
    assert s.lambda_2 == pytest.approx(lam[-2], abs=1e-12)
    assert s.slem == pytest.approx(max(abs(lam[0]), abs(lam[-2])), abs=1e-12)


def test_spectral_summary_refuses_what_has_no_consensus_rate():
    with _raises("W", "row 0 does not sum to 1"):
        dg.spectral_summary(ROW_SUMS_12)
    assert dg.spectral_summary(ROW_SUMS_12, allow_nonstochastic=True).lambda_1 == pytest.approx(1.2)
    with _raises("W", "must be an array of real numbers"):
        dg.spectral_summary("x")
    with _raises("tol", "in (0, 1)"):
        dg.spectral_summary(RING4, tol=2.0)


# --------------------------------------------------------------------------------- protocol
def test_run_ldp_takes_an_integer_seed():
    a = dg.run_ldp(WINE4.X, 2, 1.0, 1e-5, rng=1)
    b = dg.run_ldp(WINE4.X, 2, 1.0, 1e-5, rng=np.random.default_rng(1))
    np.testing.assert_array_equal(a.U_hat, b.U_hat)  # the seed is default_rng's


@pytest.mark.parametrize("kwargs, field, needle", [
    ({"rng": "a"}, "rng", "numpy.random.Generator, a non-negative integer seed"),
    ({"rng": None}, "rng", "got None"),
    ({"rank": 0}, "rank", "in [1, min(n, d) = 13], got 0"),
    ({"rank": 14}, "rank", "got 14"),
    ({"X": np.full((5, 3), np.nan)}, "X", "X[0, 0] = nan"),  # was a LinAlgError from the SVD
    ({"calibration": "x"}, "calibration", "one of paper, analytic"),
])
def test_run_ldp_checks_its_arguments(kwargs, field, needle):
    args = {"X": WINE4.X, "rank": 1, "epsilon": 1.0, "delta": 1e-5, "rng": 0, **kwargs}
    with _raises(field, needle):
        dg.run_ldp(**args)


@pytest.mark.parametrize("seed, needle", [
    (np.random.default_rng(0), "got a numpy.random.Generator"),
    ("x", "got 'x' (str)"),
    (1.5, "got 1.5 (float)"),
    (-2, "got -2 (int)"),
])
def test_run_seeds_are_integers_or_seed_sequences(seed, needle):
    with _raises("seed", "non-negative integer or a numpy.random.SeedSequence", needle):
        dg.run_matrix(WINE4, RING4, PARAMS, seed)


@pytest.mark.parametrize("args, field", [
    ((WINE4.X, RING4, PARAMS, 0), "data"),
    ((WINE4, None, PARAMS, 0), "network"),
    ((WINE4, RING4, None, 0), "params"),
    ((WINE4, dg.make_network("ring", agents=5), PARAMS, 0), "network"),
])
def test_run_matrix_names_a_wrong_argument(args, field):
    with _raises(field):
        dg.run_matrix(*args)


def _runs_with_alpha(alpha: float) -> dg.RunResult:
    params = dg.resolve_params(WINE4, RING4, iterations=4, consensus_steps=2, alpha=alpha,
                               noise=dg.NoiseSchedule(kind="none"))
    return dg.run_matrix(WINE4, RING4, params, 0)


def test_an_underflowed_run_says_so():
    res = _runs_with_alpha(1e-300)  # q^(t) shrinks by ~alpha mu_1 per iteration: 0 after two
    assert not np.any(res.Q)  # the estimate is zero: not a number to use ...
    assert res.status == "underflow"  # ... and the result says so
    assert res.arithmetic.component == 0 and res.arithmetic.iteration == 2
    assert "fell to" in res.status_reason and "too small" in res.status_reason
    with _raises("U_hat", "column 0 is zero"):  # was the distance of an invented direction
        subspace_distance(dg.top_singular(WINE4.X, 1).U, res.Q)
    with _raises("U_hat", "column 0 is zero"):
        captured_energy(WINE4.X, res.Q)


def test_diverged_and_clean_runs_have_a_status():
    with np.errstate(all="ignore"):
        diverged = _runs_with_alpha(1e200)
    assert diverged.status == "diverged" and np.max(np.abs(diverged.iterates[0, 1])) > 1e150
    clean = dg.run_matrix(WINE4, RING4, PARAMS, 0)
    assert (clean.status, clean.status_reason) == ("ok", "")
    engine = dg.run_engine(WINE4, RING4, PARAMS, 0, record_transcript=False)
    assert engine.arithmetic.status == "ok" and engine.status == "completed"


@pytest.mark.parametrize("kwargs, field, needle", [
    ({"noise": "geometric"}, "noise", "must be a dpgossip.NoiseSchedule"),
    ({"alpha": {"pos": 0.3}}, "alpha", "{'position': t}"),  # was ignored: the default position
    ({"alpha": {"position": "x"}}, "alpha.position", "must be a number in (0, 1)"),
    ({"sigma_q": "x"}, "sigma_q", "a positive number"),
    ({"sigma_p": "ab"}, "sigma_p", "array of numbers"),
    ({"network": None}, "network", "dpgossip.topology.Network"),
    ({"data": None}, "data", "PartitionedData"),
])
def test_resolve_params_checks_its_arguments(kwargs, field, needle):
    args = {"data": WINE4, "network": RING4, "iterations": 2, "consensus_steps": 1, **kwargs}
    with _raises(field, needle):
        dg.resolve_params(**args)


@pytest.mark.parametrize("kwargs, field", [
    ({"sigma_q": "x"}, "sigma_q"), ({"alpha": 1.0}, "alpha"), ({"sigma_p": np.zeros((1, 3))}, "sigma_p"),
])
def test_protocol_params_checks_its_fields(kwargs, field):
    args = {"iterations": 2, "consensus_steps": 1, "rank": 1, "alpha": (1.0,), "sigma_q": 0.1,
            "sigma_p": np.zeros((1, 2)), **kwargs}
    with _raises(field):
        dg.ProtocolParams(**args)


@pytest.mark.parametrize("call, field, needle", [
    (lambda: dg.top_singular(np.full((4, 3), np.nan), 1), "X", "X[0, 0] = nan"),  # was LinAlgError
    (lambda: dg.top_singular(WINE4.X, "a"), "r", "integer in [1, min(n, d) = 13]"),
    (lambda: dg.top_singular(WINE4.X, 0), "r", "got 0"),  # was an empty result
    (lambda: dg.sin_angle(np.ones(3), np.ones(4)), "q", "3 entries per vector"),
    (lambda: dg.sin_angle(np.array([2.0, 0.0]), np.array([1.0, 0.0])), "v", "unit vector"),
    (lambda: dg.error_per_iteration(np.ones((3, 4)), np.eye(4)), "iterates", "3-D"),
    (lambda: dg.error_per_iteration(np.ones((1, 3, 4)), np.eye(5)), "U", "n = 4 rows"),
])
def test_metrics_check_their_arguments(call, field, needle):
    with _raises(field, needle):
        call()


def test_sin_angle_still_agrees_with_the_cosine_after_its_checks():
    # the check exists because (I - v v^T) q is the projection only for ||v|| = 1 (with v = (2, 0)
    # and q = (3, 0) the formula gave 1, the true sine being 0); a unit v: sin = sqrt(1 - cos^2)
    rng = np.random.default_rng(4)
    v, q = rng.standard_normal(7), rng.standard_normal(7)
    v /= np.linalg.norm(v)
    cos = v @ q / np.linalg.norm(q)
    assert dg.sin_angle(v, q) == pytest.approx(np.sqrt(1 - cos**2), rel=1e-12)


# -------------------------------------------------------------------------- files with a BOM
BOM = codecs.BOM_UTF8


def test_a_scenario_with_a_byte_order_mark_loads(tmp_path):
    text = ('name = "bom"\n[data]\nsource = "wine"\n[network]\ntopology = "ring"\nagents = 4\n'
            "[protocol]\niterations = 2\nconsensus_steps = 1\n")
    plain, marked = tmp_path / "plain.toml", tmp_path / "bom.toml"
    plain.write_bytes(text.encode())
    marked.write_bytes(BOM + text.encode())
    assert dg.load_scenario(marked).config == dg.load_scenario(plain).config


def test_topology_and_data_files_with_a_byte_order_mark_load(tmp_path):
    edges = tmp_path / "g.edgelist"
    edges.write_bytes(BOM + b"0 1\n1 2\n2 3\n3 0\n")
    assert sorted(dg.make_network(edges).graph.edges) == sorted(nx.cycle_graph(4).edges)
    js = tmp_path / "g.json"
    js.write_bytes(BOM + b'{"nodes": [{"id": 0}, {"id": 1}, {"id": 2}], '
                         b'"edges": [{"source": 0, "target": 1}, {"source": 1, "target": 2}]}')
    assert dg.make_network(js).m == 3
    csv = tmp_path / "x.csv"
    csv.write_bytes(BOM + b"a,b\n0.1,0.2\n0.3,0.4\n")
    np.testing.assert_array_equal(dg.load_dataset(csv, agents=1, standardize=False,
                                                  scale="none").X, [[0.1, 0.2], [0.3, 0.4]])


def test_load_scenario_names_a_path_that_is_not_one():
    with _raises("path", "path of a .toml scenario file"):
        dg.load_scenario(5)


# ------------------------------------------------------------- random bad inputs: own errors
BAD = st.sampled_from([
    float("nan"), float("inf"), -1, 0, 1.5, True, "x", None, [], {}, (), b"\xff",
    np.zeros((0, 3)), np.full((4, 2), np.nan), np.ones((2, 2), dtype=complex), np.eye(3),
    np.random.default_rng(0), -1e308, 10**30, [[1, "a"]], nx.empty_graph(3),
    WINE4, RING4, PARAMS,  # right objects in the wrong place
])

CALLS = {
    "PartitionedData.X": lambda v: dg.PartitionedData(X=v, sizes=WINE4.sizes),
    "PartitionedData.sizes": lambda v: dg.PartitionedData(X=WINE4.X, sizes=v),
    "Network.W": lambda v: dg.Network(graph=nx.cycle_graph(4), W=v),
    "Network.graph": lambda v: dg.Network(graph=v, W=PAPER_W),
    "make_network.topology": lambda v: dg.make_network(v, agents=4),
    "make_network.agents": lambda v: dg.make_network("ring", agents=v),
    "make_network.mixing": lambda v: dg.make_network("ring", agents=4, mixing=v),
    "make_network.seed": lambda v: dg.make_network("erdos_renyi", agents=6, seed=v),
    "make_network.params": lambda v: dg.make_network("erdos_renyi", agents=6, params=v),
    "spectral_summary": lambda v: dg.spectral_summary(v),
    "load_dataset.source": lambda v: dg.load_dataset(v, agents=4),
    "load_dataset.agents": lambda v: dg.load_dataset("wine", agents=v),
    "resolve_params.iterations": lambda v: dg.resolve_params(WINE4, RING4, iterations=v,
                                                             consensus_steps=1),
    "resolve_params.alpha": lambda v: dg.resolve_params(WINE4, RING4, iterations=2,
                                                        consensus_steps=1, alpha=v),
    "resolve_params.sigma_q": lambda v: dg.resolve_params(WINE4, RING4, iterations=2,
                                                          consensus_steps=1, sigma_q=v),
    "resolve_params.sigma_p": lambda v: dg.resolve_params(WINE4, RING4, iterations=2,
                                                          consensus_steps=1, sigma_p=v),
    "NoiseSchedule.scale": lambda v: dg.NoiseSchedule(kind="constant", scale=v),
    "run_matrix.data": lambda v: dg.run_matrix(v, RING4, PARAMS, 0),
    "run_matrix.network": lambda v: dg.run_matrix(WINE4, v, PARAMS, 0),
    "run_matrix.seed": lambda v: dg.run_matrix(WINE4, RING4, PARAMS, v),
    "run_ldp.X": lambda v: dg.run_ldp(v, 1, 1.0, 1e-5, rng=0),
    "run_ldp.rng": lambda v: dg.run_ldp(WINE4.X, 1, 1.0, 1e-5, rng=v),
    "run_ldp.epsilon": lambda v: dg.run_ldp(WINE4.X, 1, v, 1e-5, rng=0),
    "top_singular.X": lambda v: dg.top_singular(v, 1),
    "top_singular.r": lambda v: dg.top_singular(WINE4.X, v),
    "sin_angle.q": lambda v: dg.sin_angle(np.array([1.0, 0.0]), v),
    "load_scenario": lambda v: dg.load_scenario(v),
}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(call=st.sampled_from(sorted(CALLS)), value=BAD)
def test_bad_arguments_raise_only_the_packages_own_error(call, value):
    try:
        with np.errstate(all="ignore"):
            CALLS[call](value)
    except ConfigError as err:
        assert str(err)  # a message, never empty
