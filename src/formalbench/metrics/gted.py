"""GTED: similarity of two statements as the tree edit distance of their operator trees.

Cost model (Liu et al., arXiv 2507.07399, as their stored scores require): inserting or
deleting a node costs 1; renaming costs 0 between equal labels or between two free-cost
nodes of the same kind (variable to variable, hypothesis to hypothesis), else 1. Similarity
is 1 - TED / max(|T1|, |T2|). The renaming rule is not a consistent bijection (any bound
variable matches any other), which is what the published scores assume.

The distance is APTED's (`apted`, the algorithm the paper names). When the optional `edist`
package (Cython) is installed it computes the same optimum much faster and is used instead;
both give the same distance (the tests check it on the 205 reference pairs).
"""

from __future__ import annotations

from typing import Any

from apted import APTED, Config

from formalbench.metrics.optree import OpTree

try:  # optional accelerator: `pip install formalbench[gted-fast]`
    from edist.ted import ted as _edist_ted
except ImportError:  # pragma: no cover - depends on the environment
    _edist_ted = None


def rename_cost(a: OpTree, b: OpTree) -> int:
    """0 for equal labels or two free-cost nodes of the same kind, else 1."""
    if a.label == b.label or (a.free is not None and a.free == b.free):
        return 0
    return 1


class _Costs(Config):
    def rename(self, node1: OpTree, node2: OpTree) -> int:
        return rename_cost(node1, node2)

    def children(self, node: OpTree) -> list[OpTree]:
        return node.children


def _flat(tree: OpTree) -> tuple[list[OpTree], list[list[int]]]:
    nodes: list[OpTree] = []
    adj: list[list[int]] = []
    index: dict[int, int] = {}
    for node in tree.nodes():  # pre-order, as edist requires
        index[id(node)] = len(nodes)
        nodes.append(node)
        adj.append([])
    for node in nodes:
        adj[index[id(node)]] = [index[id(c)] for c in node.children]
    return nodes, adj


def _delta(a: OpTree | None, b: OpTree | None) -> float:
    if a is None or b is None:
        return 1.0
    return float(rename_cost(a, b))


def tree_edit_distance(a: OpTree, b: OpTree, engine: str = "auto") -> int:
    """The edit distance under GTED's costs; `engine` is "apted", "edist" or "auto"."""
    if engine == "edist" or (engine == "auto" and _edist_ted is not None):
        if _edist_ted is None:
            raise RuntimeError("the edist engine needs `pip install edist`")
        xs, xa = _flat(a)
        ys, ya = _flat(b)
        return round(_edist_ted(xs, xa, ys, ya, _delta))
    return int(APTED(a, b, _Costs()).compute_edit_distance())


def gted(a: OpTree, b: OpTree, engine: str = "auto") -> float:
    """Similarity in [0, 1]: 1 - TED / max(|a|, |b|)."""
    return 1.0 - tree_edit_distance(a, b, engine) / max(a.size(), b.size())


def engines() -> list[str]:
    """The distance engines available here (APTED always)."""
    return ["apted"] + (["edist"] if _edist_ted is not None else [])


def describe(tree: OpTree) -> dict[str, Any]:
    """Size and depth of a tree (for reports)."""

    def depth(node: OpTree) -> int:
        return 1 + max((depth(c) for c in node.children), default=0)

    return {"size": tree.size(), "depth": depth(tree)}
