"""Operator trees: the shape both GTED front ends (Lean text, Coq's printed terms) produce.

A node is an operator with placeholders (`" _ + _ "`, `"∀ _ , _ "`, `"f _ "`) or a leaf
(a name, a numeral). Names bound by the statement (variables, hypotheses, quantified and
`fun`-bound names) carry a free-cost flag: renaming one to another with the same flag costs
nothing, so alpha-renaming a statement does not change its score. The JSON form is the one of
the GTED authors' stored trees (`content`, `children`, `variable_freecost` /
`hypothesis_freecost`), so their trees and ours are read the same way.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

VARIABLE = "variable"
HYPOTHESIS = "hypothesis"
_FLAGS = (VARIABLE, HYPOTHESIS)


@dataclass(slots=True)
class OpTree:
    """One node of an operator tree; `free` is None or the kind of bound name it is."""

    label: str
    children: list[OpTree] = field(default_factory=list)
    free: str | None = None

    def nodes(self) -> Iterator[OpTree]:
        """The nodes in pre-order (the order the distance engines expect)."""
        stack = [self]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(node.children))

    def size(self) -> int:
        return sum(1 for _ in self.nodes())

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "content": self.label,
            "children": [c.to_json() for c in self.children],
        }
        if self.free:
            out[f"{self.free}_freecost"] = True
        return out

    def show(self) -> str:
        """A one-line S-expression, for debugging and messages."""
        mark = "*" if self.free else ""
        if not self.children:
            return f"{self.label.strip()}{mark}"
        inner = " ".join(c.show() for c in self.children)
        return f"({self.label.strip()}{mark} {inner})"


def mark_bound(tree: OpTree, binders: tuple[str, ...]) -> OpTree:
    """Flag every leaf that names a variable bound by a binder node of `tree` (a node whose
    label is one of `binders`, whose children are the bound names then the body) with that
    binder's kind, so a renamed bound variable costs nothing; returns `tree`."""
    bound: dict[str, str] = {}
    for node in tree.nodes():
        if node.label in binders:
            for b in node.children[:-1]:
                name = b.children[0]
                bound.setdefault(name.label, name.free or VARIABLE)
    for node in tree.nodes():
        if not node.children and node.label in bound:
            node.free = bound[node.label]
    return tree


def tree_from_json(data: Mapping[str, Any]) -> OpTree:
    """Read a tree in the GTED authors' JSON form; raises ValueError on another shape."""
    if not isinstance(data, Mapping) or not isinstance(data.get("content"), str):
        raise ValueError("a tree node needs a string 'content'")
    children = data.get("children", [])
    if not isinstance(children, list):
        raise ValueError("a tree node's 'children' must be a list")
    free = next((f for f in _FLAGS if data.get(f"{f}_freecost")), None)
    return OpTree(data["content"], [tree_from_json(c) for c in children], free)
