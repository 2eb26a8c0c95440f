"""Dependency density rho_k (AMBER §4.2): how many distinct non-trivial library declarations a
statement reaches within k hops of the dependency graph.

    rho_k(p) = |{ v : 1 <= dist_G(p, v) <= k, v not in S_trivial }|

Distances are taken in the whole graph (a trivial or local node still carries a path
through it) and the filter applies only when counting. What is counted: library
declarations (a node with `counted=False`, such as one of the task's own definitions or a
notation alias, is a waypoint, not a concept). S_trivial defaults to the logical glue, the
equality, the numeral machinery and the basic data types of each assistant; it is
configurable; an entry `*_rect` means every name ending in `_rect`. Pure: the graph comes from `deps`, nothing here runs an assistant.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Collection, Sequence
from typing import Any

import networkx as nx

from formalbench.core.coq_names import coq8_name

COQ_TRIVIAL: tuple[str, ...] = (
    tuple(
        f"Coq.Init.{name}"
        for name in (
            *("Logic.and", "Logic.or", "Logic.not", "Logic.iff", "Logic.ex", "Logic.ex2"),
            *("Logic.all", "Logic.True", "Logic.False", "Logic.I", "Logic.conj", "Logic.eq"),
            *("Logic.eq_refl", "Logic.inhabited", "Logic.or_introl", "Logic.or_intror"),
            *("Logic.ex_intro", "Logic.iff_refl", "Datatypes.nat", "Datatypes.O", "Datatypes.S"),
            *("Datatypes.bool", "Datatypes.true", "Datatypes.false", "Datatypes.unit"),
            *("Datatypes.tt", "Datatypes.prod", "Datatypes.pair", "Datatypes.list"),
            *("Datatypes.nil", "Datatypes.cons", "Datatypes.option", "Datatypes.Some"),
            *("Datatypes.None", "Datatypes.sum", "Datatypes.inl", "Datatypes.inr"),
            *("Specif.sig", "Specif.exist", "Specif.sigT", "Specif.existT", "Specif.sumbool"),
            *("Specif.left", "Specif.right"),
        )
    )
    + tuple(
        f"Coq.Numbers.BinNums.{name}"
        for name in ("positive", "xH", "xO", "xI", "Z", "Z0", "Zpos", "Zneg", "N", "N0", "Npos")
    )
    + (
        *("Coq.Reals.Rdefinitions.IZR", "Coq.Strings.String.string", "Coq.Strings.Ascii.ascii"),
        *("*_ind", "*_rec", "*_rect", "*_sind"),  # recursors the elaborator inserts
    )
)
LEAN_TRIVIAL: tuple[str, ...] = (
    *("And", "Or", "Not", "Iff", "Exists", "True", "False", "Eq", "HEq", "Ne"),
    *("Nat", "Int", "String", "Bool", "Char", "Unit", "PUnit", "Prod", "List", "Option"),
    *("OfNat", "OfNat.ofNat", "instOfNatNat", "instOfNat", "Nat.cast", "Int.cast"),
    *("outParam", "optParam", "autoParam", "id", "Function.comp", "Decidable"),
    *("*.rec", "*.recOn", "*.casesOn", "*.match_1", "*.proof_1"),  # compiler auxiliaries
)


def trivial_default(language: str) -> tuple[str, ...]:
    return LEAN_TRIVIAL if language == "lean" else COQ_TRIVIAL


def distances(graph: nx.DiGraph, root: str, k: int) -> dict[str, int]:
    """Shortest-path distance from `root` of every node within `k` hops."""
    if root not in graph:
        return {}
    return dict(nx.single_source_shortest_path_length(graph, root, cutoff=k))


def is_trivial(name: str, trivial: Collection[str]) -> bool:
    """Whether `name` (Coq 8's or Rocq 9's spelling) is in the trivial set: listed, or ending
    as a `*suffix` entry says."""
    if name in trivial or coq8_name(name) in trivial:
        return True
    return any(t.startswith("*") and name.endswith(t[1:]) for t in trivial)


def rho(graph: nx.DiGraph, root: str, k: int, trivial: Collection[str]) -> dict[int, int]:
    """rho_1 .. rho_k of `root`: counted, non-trivial nodes at distance 1..j, for each j."""
    trivial_set = frozenset(coq8_name(t) for t in trivial) | frozenset(trivial)
    at = Counter(
        d
        for node, d in distances(graph, root, k).items()
        if d >= 1 and graph.nodes[node].get("counted", True) and not is_trivial(node, trivial_set)
    )
    out: dict[int, int] = {}
    total = 0
    for j in range(1, k + 1):
        total += at.get(j, 0)
        out[j] = total
    return out


def summarize(values: Sequence[dict[int, int]], k: int) -> dict[str, dict[str, Any]]:
    """Per j: mean, median and the distribution (value -> number of tasks) over tasks."""
    out: dict[str, dict[str, Any]] = {}
    for j in range(1, k + 1):
        column = [v[j] for v in values]
        if not column:
            out[str(j)] = {"mean": None, "median": None, "distribution": {}}
            continue
        counts = Counter(column)
        out[str(j)] = {
            "mean": round(statistics.fmean(column), 3),
            "median": statistics.median(column),
            "distribution": {str(n): counts[n] for n in sorted(counts)},
        }
    return out
