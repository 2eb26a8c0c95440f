"""The expansion tree as text and by level: `problem_with_context` and what the steps read.

`problem_with_context` is assembled, not generated: the cleaned exercise followed by every
inserted item with its label, kind, hop depth and the reference that brought it in, so each
piece stays traceable to the textbook. References the book does not resolve are listed as
such; nothing is invented for them.
"""

from __future__ import annotations

from collections.abc import Iterator

from formalbench.core.construct import ExpansionNode

ROOT = "root"


def walk(node: ExpansionNode, path: str = ROOT) -> Iterator[tuple[str, ExpansionNode]]:
    """(path key, node) in pre-order; a child's key is its parent's key and its label."""
    yield path, node
    for i, child in enumerate(node.children):
        yield from walk(child, f"{path}/{i}:{child.label}")


def unresolved_keys(root: ExpansionNode) -> list[str]:
    return sorted({key for _, node in walk(root) for key in node.unresolved})


def truncated_keys(root: ExpansionNode) -> list[str]:
    return sorted({key for _, node in walk(root) for key in node.truncated})


def depth_of(root: ExpansionNode) -> int:
    return max(node.depth for _, node in walk(root))


def problem_with_context(root: ExpansionNode, clean: str) -> str:
    """The cleaned exercise with every inserted item of its expansion (see module doc)."""
    parts = [clean.strip()]
    items = [(path, node) for path, node in walk(root) if path != ROOT]
    if items:
        parts.append("Context from the textbook:")
    for _, node in items:
        via = f", via {node.via}" if node.via else ""
        parent = f" in {node.parent}" if node.parent else ""
        head = f"[{node.kind} {node.label} | hop {node.depth}{via}{parent}]"
        parts.append(f"{head}\n{node.text.strip()}")
    missing = unresolved_keys(root)
    if missing:
        parts.append("Unresolved references (not found in the textbook): " + ", ".join(missing))
    cut = truncated_keys(root)
    if cut:
        parts.append("References not expanded (depth budget or cycle): " + ", ".join(cut))
    return "\n\n".join(parts)
