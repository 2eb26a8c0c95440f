"""Recursive dependency expansion (CAM-Bench Algorithm 1), deterministic.

`expand_item(root, index, depth)` follows the references of an exercise to the labelled
items they name, and theirs, up to `depth` hops. A reference is not followed again along
the path it came by (cycle guard); a key the book does not define is recorded in
`unresolved`, never guessed; a key left out because the depth budget is spent, or because
following it would close a cycle, is recorded in `truncated`. Each inserted node keeps its
label, hop depth and provenance (parent label and the raw reference that brought it in).
References to items that are not statements (sections, proof techniques) resolve but are
not inserted: they carry no mathematics the exercise depends on.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from formalbench.core.construct import ExpansionNode, TextbookItem

DEFAULT_DEPTH = 3


def expand_item(
    root: TextbookItem,
    index: Mapping[str, TextbookItem],
    depth: int = DEFAULT_DEPTH,
    expandable: Collection[str] | None = None,
) -> ExpansionNode:
    """The expansion tree of `root` (depth 0) over the labelled items in `index`."""
    return _expand(root, index, depth, expandable, path=(root.label,), hop=0, via=None, parent=None)


def _expand(
    item: TextbookItem,
    index: Mapping[str, TextbookItem],
    budget: int,
    expandable: Collection[str] | None,
    path: tuple[str, ...],
    hop: int,
    via: str | None,
    parent: str | None,
) -> ExpansionNode:
    node = ExpansionNode(
        label=item.label, kind=item.kind, text=item.text, depth=hop, via=via, parent=parent
    )
    seen: set[str] = set()
    for ref in item.refs:
        if ref.key in seen:
            continue
        seen.add(ref.key)
        target = index.get(ref.key)
        if target is None:
            node.unresolved.append(ref.key)
            continue
        if expandable is not None and ref.key not in expandable:
            continue
        if budget <= 0 or ref.key in path:
            node.truncated.append(ref.key)
            continue
        node.children.append(
            _expand(
                target,
                index,
                budget - 1,
                expandable,
                path + (ref.key,),
                hop + 1,
                ref.raw,
                item.label,
            )
        )
    return node


def count_nodes(node: ExpansionNode) -> int:
    return 1 + sum(count_nodes(c) for c in node.children)
