"""rho_k over a hand-made dependency graph: distances through every node, filter on count."""

from __future__ import annotations

import networkx as nx

from formalbench.metrics.density import COQ_TRIVIAL, is_trivial, rho, summarize


def _graph() -> nx.DiGraph:
    g = nx.DiGraph()
    g.add_node("p", counted=False)
    g.add_node("Candidate.f", counted=False)  # the task's own definition: a waypoint
    g.add_edges_from(
        [
            ("p", "A"),
            ("p", "eq"),
            ("p", "Candidate.f"),
            ("Candidate.f", "B"),
            ("eq", "C"),  # reached through a trivial node: counted at distance 2
            ("A", "B"),  # B is at distance 2 both ways: counted once
            ("B", "D"),
            ("D", "E"),  # distance 4: beyond k = 3
            ("A", "A_rect"),
        ]
    )
    return g


def test_rho_counts_distinct_nontrivial_library_nodes_within_each_distance() -> None:
    assert rho(_graph(), "p", 3, trivial={"eq", "*_rect"}) == {1: 1, 2: 3, 3: 4}
    # without a trivial set, eq and A_rect count too
    assert rho(_graph(), "p", 3, trivial=()) == {1: 2, 2: 5, 3: 6}
    assert rho(_graph(), "p", 1, trivial={"eq"}) == {1: 1}
    assert rho(_graph(), "missing", 2, trivial=()) == {1: 0, 2: 0}


def test_the_coq_default_trivial_set_holds_the_logic_and_numeral_machinery() -> None:
    for name in ("Coq.Init.Logic.eq", "Coq.Numbers.BinNums.Zpos", "Coq.Init.Logic.and_ind"):
        assert is_trivial(name, COQ_TRIVIAL), name
    for name in ("Coq.Reals.Rdefinitions.RbaseSymbolsImpl.Rplus", "Coq.Reals.Rpower.ln"):
        assert not is_trivial(name, COQ_TRIVIAL), name


def test_the_trivial_set_reads_rocq_9_names_as_coq_8_names() -> None:
    """Rocq 9 prints the prelude as `Corelib.` and the standard library as `Stdlib.`: the
    same objects are trivial on both, and a user's set written in Rocq 9 names works too."""
    for name in (
        "Corelib.Init.Logic.eq",
        "Corelib.Numbers.BinNums.Zpos",
        "Stdlib.Reals.Rdefinitions.IZR",
    ):
        assert is_trivial(name, COQ_TRIVIAL), name
    assert not is_trivial("Stdlib.Reals.Rpower.ln", COQ_TRIVIAL)
    assert not is_trivial("Corelibx.Init.Logic.eq", COQ_TRIVIAL)
    graph = nx.DiGraph([("p", "Corelib.Init.Logic.eq"), ("p", "Stdlib.Reals.Rpower.ln")])
    assert rho(graph, "p", 1, trivial=COQ_TRIVIAL) == {1: 1}
    assert rho(graph, "p", 1, trivial={"Stdlib.Reals.Rpower.ln"}) == {1: 1}
    assert rho(graph, "p", 1, trivial={"Coq.Reals.Rpower.ln", "Coq.Init.Logic.eq"}) == {1: 0}


def test_summary_gives_mean_median_and_distribution_per_distance() -> None:
    summary = summarize([{1: 1, 2: 4}, {1: 3, 2: 4}, {1: 8, 2: 9}], 2)
    assert summary["1"] == {"mean": 4.0, "median": 3, "distribution": {"1": 1, "3": 1, "8": 1}}
    assert summary["2"]["median"] == 4 and summary["2"]["distribution"] == {"4": 2, "9": 1}
    assert summarize([], 1)["1"]["mean"] is None
