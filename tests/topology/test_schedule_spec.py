"""ScheduleSpec: validation of a schedule table, and sampling through the existing samplers."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from dpgossip.errors import ConfigError
from dpgossip.topology import make_network
from dpgossip.topology.schedule_samplers import (
    neighbour_probabilities,
    one_peer_exponential,
    pairwise_gossip,
    push_sum_weights,
    random_matchings,
    random_regular_rounds,
)
from dpgossip.topology.schedule_spec import (
    SCHEDULE_SAMPLERS,
    ScheduleSpec,
    schedule_spec_from_mapping,
)

WHERE = "network.schedule"


@pytest.fixture(scope="module")
def net():
    return make_network("grid", agents=12, params={"rows": 3})


def _dense(schedule):
    return [W.toarray() for W in schedule.matrices]


def test_fixed_repeats_w(net) -> None:
    s = ScheduleSpec(sampler="fixed").sample(net, 5)
    assert s.kind == "rounds" and s.stochastic == "doubly" and s.steps == 5
    for W in _dense(s):
        np.testing.assert_array_equal(W, net.W.toarray())


def test_samplers_match_the_sampler_functions(net) -> None:
    # each spec calls the sampler of schedule_samplers with the network and the spec's own seed
    pairs = [
        (ScheduleSpec(sampler="random-matchings", seed=3), random_matchings(7, 3, graph=net.graph)),
        (ScheduleSpec(sampler="one-peer-exponential"), one_peer_exponential(12, 7)),
        (ScheduleSpec(sampler="random-regular", seed=4, degree=3), random_regular_rounds(12, 3, 7, 4)),
    ]
    for spec, want in pairs:
        got = spec.sample(net, 7, seed=999)          # the spec's seed wins over the point's
        assert got.label == want.label == spec.sampler
        for a, b in zip(_dense(got), _dense(want), strict=True):
            np.testing.assert_array_equal(a, b)
    pw = ScheduleSpec(sampler="pairwise", seed=5).sample(net, 50)
    ref = pairwise_gossip(neighbour_probabilities(net.graph), 5, ticks=50)
    np.testing.assert_array_equal(pw.pairs, ref.pairs)
    np.testing.assert_array_equal(pw.times, ref.times)
    ps = ScheduleSpec(sampler="push-sum").sample(net, 3)
    assert ps.stochastic == "column"
    np.testing.assert_array_equal(ps.matrices[0].toarray(),
                                  push_sum_weights(nx.DiGraph(net.graph)).toarray())


def test_seed_of_the_point_is_used_without_a_spec_seed(net) -> None:
    spec = ScheduleSpec(sampler="random-matchings")
    a, b, c = (spec.sample(net, 6, seed=s) for s in (1, 1, 2))
    assert all(np.array_equal(x, y) for x, y in zip(_dense(a), _dense(b), strict=True))
    assert not all(np.array_equal(x, y) for x, y in zip(_dense(a), _dense(c), strict=True))
    with pytest.raises(ConfigError, match=r"^seed: sampler 'random-matchings' is random"):
        spec.sample(net, 6)


def test_files_are_cycled_and_checked_against_the_network(tmp_path, net) -> None:
    W0 = one_peer_exponential(12, 2).matrices
    names = []
    for k, W in enumerate(W0):
        np.save(tmp_path / f"w{k}.npy", W.toarray())
        names.append(f"w{k}.npy")
    spec = schedule_spec_from_mapping({"sampler": "files", "files": names}, WHERE, base_dir=tmp_path)
    s = spec.sample(net, 5)
    for t, W in enumerate(_dense(s)):
        np.testing.assert_array_equal(W, W0[t % 2].toarray())
    small = make_network("ring", agents=5)
    with pytest.raises(ConfigError, match=r"^files: the matrices are 12 x 12, the network has 5"):
        spec.sample(small, 2)


def test_zero_steps_and_horizon(net) -> None:
    assert ScheduleSpec(sampler="random-matchings", seed=1).sample(net, 0).steps == 0
    s = ScheduleSpec(sampler="pairwise", seed=2, horizon=3.0).sample(net, 0)
    assert s.kind == "pairwise" and s.steps > 0 and s.times.max() < 3.0


@pytest.mark.parametrize(("table", "message"), [
    ({"seed": 3}, r"^network\.schedule\.sampler is missing; allowed: 'fixed', "),
    ({"sampler": "random-matching"}, r"^network\.schedule\.sampler must be one of .*, got "
                                     r"'random-matching' \(did you mean 'random-matchings'\?\)$"),
    ({"sampler": "random-matchings", "sead": 3},
     r"^network\.schedule\.sead: unknown key \(did you mean 'seed'\?\); keys of 'random-matchings': "
     r"sampler, seed$"),
    ({"sampler": "fixed", "seed": 3},
     r"^network\.schedule\.seed: sampler 'fixed' does not read 'seed' \(read by 'random-matchings', "
     r"'random-regular', 'pairwise'\); keys of 'fixed': sampler$"),
    ({"sampler": "random-matchings", "seed": -1}, r"^network\.schedule\.seed must be an integer >= 0, "
                                                  r"got -1$"),
    ({"sampler": "random-regular", "seed": 1}, r"^network\.schedule\.degree: sampler 'random-regular' "
                                               r"needs the degree"),
    ({"sampler": "pairwise", "rate": 0}, r"^network\.schedule\.rate must be a number > 0, got 0$"),
    ({"sampler": "files", "files": "a.npy"}, r"^network\.schedule\.files must be a nonempty list"),
    ({"sampler": "files", "files": ["a.npy"], "stochastic": "column"},
     r"^network\.schedule\.stochastic must be one of 'doubly', 'row', got 'column'$"),
])
def test_bad_tables_name_the_key_the_value_and_what_is_allowed(table, message) -> None:
    with pytest.raises(ConfigError, match=message) as caught:
        schedule_spec_from_mapping(table, WHERE)
    assert caught.value.field.startswith(WHERE)


def test_not_a_table_and_every_sampler_reads_from_a_table(net) -> None:
    with pytest.raises(ConfigError, match=r"^network\.schedule must be a table"):
        schedule_spec_from_mapping("random-matchings", WHERE)
    for name in SCHEDULE_SAMPLERS:
        table = {"sampler": name, **({"degree": 3} if name == "random-regular" else {}),
                 **({"files": ["x.npy"]} if name == "files" else {})}
        spec = schedule_spec_from_mapping(table, WHERE)
        assert spec.sampler == name and spec.to_row()["schedule_sampler"] == name


def test_push_sum_arcs_give_the_directed_graph_of_the_weights() -> None:
    ring = make_network("ring", agents=5)
    cycle = ScheduleSpec(sampler="push-sum", arcs="cycle")
    assert sorted(cycle.digraph(ring).edges()) == [(0, 1), (1, 2), (2, 3), (3, 4), (4, 0)]
    A = cycle.sample(ring, 2).matrices[0].toarray()
    np.testing.assert_array_equal(A, 0.5 * (np.eye(5) + np.roll(np.eye(5), 1, axis=0)))  # A[i+1, i]
    listed = ScheduleSpec(sampler="push-sum", arcs=[[0, 1], [1, 0], [1, 2], [2, 3], [3, 4], [4, 0]])
    assert listed.arcs == ((0, 1), (1, 0), (1, 2), (2, 3), (3, 4), (4, 0))
    B = listed.sample(ring, 1).matrices[0].toarray()
    assert B[0, 1] == B[2, 1] == B[1, 1] == 1 / 3 and B[1, 0] == B[0, 0] == 1 / 2 and B[4, 0] == 0
    assert listed.to_row() == {"schedule_sampler": "push-sum",
                               "schedule_arcs": "0->1, 1->0, 1->2, 2->3, 3->4, 4->0"}
    assert ScheduleSpec(sampler="push-sum").to_row()["schedule_arcs"] == "both"
    with pytest.raises(ConfigError, match=r"^arcs: sampler 'fixed' does not read it") as caught:
        ScheduleSpec(sampler="fixed", arcs="cycle")
    assert caught.value.field == "arcs"
    with pytest.raises(ConfigError, match=r"^network\.schedule\.arcs\[1\] = \[1, 1\] is a self-loop"):
        schedule_spec_from_mapping({"sampler": "push-sum", "arcs": [[0, 1], [1, 1]]}, WHERE)
