"""Tree edit distance under GTED's costs, fast enough without a compiled extension.

Zhang–Shasha's algorithm (SIAM J. Comput. 1989) with the work laid out for numpy: for one
keyroot of the first tree, the forest-distance tables against *every* keyroot of the second
tree sit side by side in one row of columns, so one row of work is a handful of vector
operations instead of a Python loop over cells. A row's dependence on its own left neighbour
(`fd[x][y-1] + 1`, unit insertion) is a cumulative minimum: `r[y] = min_k (a[k] + y - k)`,
taken per table by offsetting each table's values far below the previous one's.

One row of a keyroot's leftmost path needs tree distances that the same row produces in the
tables of keyroots nested inside; those rows are done table level by table level (inner
tables first). Other rows need only results of earlier keyroots.

Exact short cuts: identical trees (labels and free-cost flags) are at distance 0, and the
tree with fewer row steps is taken as the first one (the distance is symmetric: insertion
and deletion both cost 1 and renaming is symmetric). `apted` stays the reference: the tests
check both give the same distance on the 205 published pairs and on random trees.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from formalbench.metrics.optree import OpTree

Ints = npt.NDArray[np.int64]


@dataclass(frozen=True)
class _Post:
    """A tree in post-order: node keys, leftmost-leaf indexes, keyroots and their nesting
    levels (1 + the deepest keyroot strictly inside)."""

    keys: list[tuple[str, str | None]]  # what renaming compares
    lml: list[int]
    keyroots: list[int]
    levels: dict[int, int]

    @property
    def size(self) -> int:
        return len(self.keys)


def _postorder(tree: OpTree) -> _Post:
    keys: list[tuple[str, str | None]] = []
    lml: list[int] = []
    stack: list[tuple[OpTree, int]] = [(tree, 0)]
    firsts: list[int] = []  # leftmost leaf of the node on the stack, once known
    while stack:
        node, child = stack[-1]
        if child == 0:
            firsts.append(-1)
        if child < len(node.children):
            stack[-1] = (node, child + 1)
            stack.append((node.children[child], 0))
            continue
        stack.pop()
        first = firsts.pop()
        index = len(keys)
        keys.append((node.label, node.free))
        lml.append(index if first < 0 else first)
        if firsts and firsts[-1] < 0:
            firsts[-1] = lml[index]
    last: dict[int, int] = {}
    for i, leaf in enumerate(lml):
        last[leaf] = i  # the highest node with that leftmost leaf
    keyroots = sorted(last.values())
    at = [0] * len(keys)
    for k in keyroots:  # ascending post-order: inner keyroots come first
        at[k] = 1 + max(at[lml[k] : k], default=0)
    return _Post(keys, lml, keyroots, {k: at[k] for k in keyroots})


def _steps(a: _Post, b: _Post) -> int:
    """Vector steps the algorithm takes with `a` first (to pick the cheaper order)."""
    depth = max(b.levels.values())
    total = 0
    for k in a.keyroots:
        size = k - a.lml[k]  # row 1 (the leftmost leaf) is one step
        on_path = sum(1 for x in range(a.lml[k] + 1, k + 1) if a.lml[x] == a.lml[k])
        total += 1 + size - on_path + on_path * depth
    return total


def _rename_costs(a: _Post, b: _Post, big: int) -> Ints:
    """cost[x, y] = 0 for equal labels or two free-cost nodes of the same kind, else 1;
    a last column of `big` stands for the empty-forest columns."""
    ids: dict[str, int] = {}
    la = np.array([ids.setdefault(lbl, len(ids)) for lbl, _ in a.keys])
    lb = np.array([ids.setdefault(lbl, len(ids)) for lbl, _ in b.keys])
    kinds: dict[str | None, int] = {None: 0}
    fa = np.array([kinds.setdefault(f, len(kinds)) for _, f in a.keys])
    fb = np.array([kinds.setdefault(f, len(kinds)) for _, f in b.keys])
    same = (la[:, None] == lb[None, :]) | ((fa[:, None] == fb[None, :]) & (fa[:, None] > 0))
    cost = np.full((a.size, b.size + 1), big, dtype=np.int64)
    cost[:, : b.size] = (~same).astype(np.int64)
    return cost


@dataclass
class _Columns:
    """The side-by-side forest tables of every keyroot of the second tree.

    Column c holds node `node[c]` (or the empty forest, `node[c] == n2`) of the table of
    keyroot `table[c]`; `pos[c]` is its place in that table (the forest's size), `lcol[c]`
    the column of the forest left of its subtree, `on_left[c]` whether it is on the table's
    leftmost path. Values are stored shifted by `shift` (table s sits s * big lower), so a
    plain cumulative minimum never crosses from one table into the next.
    """

    node: Ints
    table: Ints
    pos: Ints
    lcol: Ints
    on_left: npt.NDArray[np.bool_]
    shift: Ints
    start: Ints  # first node of each column's table (its leftmost leaf)


def _columns(b: _Post, big: int) -> _Columns:
    node: list[int] = []
    table: list[int] = []
    pos: list[int] = []
    lcol: list[int] = []
    on_left: list[bool] = []
    start: list[int] = []
    for s, k in enumerate(b.keyroots):
        first, lk = len(node), b.lml[k]
        node.append(b.size)
        lcol.append(first)
        on_left.append(False)
        for y in range(lk, k + 1):
            node.append(y)
            lcol.append(first + b.lml[y] - lk)
            on_left.append(b.lml[y] == lk)
        width = len(node) - first
        table += [s] * width
        pos += range(width)
        start += [lk] * width
    tables = np.array(table, dtype=np.int64)
    places = np.array(pos, dtype=np.int64)
    return _Columns(
        np.array(node),
        tables,
        places,
        np.array(lcol),
        np.array(on_left),
        -(places + tables * big),
        np.array(start),
    )


def _distance(a: _Post, b: _Post) -> int:
    n1, n2 = a.size, b.size
    big = 4 * (n1 + n2 + 2)  # above any distance
    huge = (len(b.keyroots) + 2) * big  # above any shifted value
    col = _columns(b, big)
    rename = _rename_costs(a, b, big)
    tree = np.zeros((n1, n2 + 1), dtype=np.int64)  # tree distances, filled as found
    tree[:, n2] = big
    # a leaf against a forest that is a post-order range: the forest's size, less one if
    # some node of the range renames to the leaf for free
    matches = np.zeros((n1, n2 + 1), dtype=np.int64)
    np.cumsum(rename[:, :n2] == 0, axis=1, out=matches[:, 1:])
    range_end = np.where(col.node == n2, col.start, col.node + 1)
    left = np.nonzero(col.on_left)[0]
    left_nodes = col.node[left]
    leaves = np.array([k for k in a.keyroots if a.lml[k] == k])
    if len(leaves):  # leaf keyroots need no table: their row is that closed form
        sub = np.array(b.lml)[left_nodes]
        found = matches[leaves][:, left_nodes + 1] > matches[leaves][:, sub]
        tree[leaves[:, None], left_nodes[None, :]] = left_nodes - sub + 1 - found
    row0 = col.pos + col.shift
    # per level of the second tree's keyroots, for rows on a table's leftmost path
    levels = np.array([b.levels[k] for k in b.keyroots])[col.table]
    steps = []
    for level in range(1, max(b.levels.values()) + 1):
        cols = np.nonzero(levels == level)[0]
        mask = col.on_left[cols]
        lefts = cols[mask]
        ren_add = np.where(mask, -1, huge)  # shifted diagonal: shift[c] - shift[c - 1] = -1
        diag0 = np.where(mask, huge, row0[col.lcol[cols]] + col.shift[cols])
        diag0 = diag0 - col.shift[col.lcol[cols]]
        steps.append((cols, lefts, col.node[lefts], col.node[cols], ren_add, diag0))
    lshift = col.shift - col.shift[col.lcol]
    for k in a.keyroots:
        lk = a.lml[k]
        if lk == k:
            continue
        rows = k - lk + 2
        fd = np.empty((rows, len(col.node)), dtype=np.int64)
        fd[0] = row0
        found = matches[lk][range_end] > matches[lk][col.start]
        fd[1] = np.where(col.pos == 0, 1, col.pos - found) + col.shift
        tree[lk, left_nodes] = fd[1, left] - col.shift[left]
        done = tree[lk : k + 1][:, col.node] + lshift  # rows off the leftmost path: final
        for r in range(2, rows):
            x = lk + r - 1
            up = fd[r - 1] + 1
            if a.lml[x] != lk:
                np.minimum(up, fd[a.lml[x] - lk].take(col.lcol) + done[r - 1], out=up)
                np.minimum.accumulate(up, out=fd[r])
                continue
            prev = fd[r - 1]
            costs = rename[x]
            for cols, lefts, lnodes, nodes, ren_add, diag0 in steps:
                cand = np.minimum(up[cols], prev.take(cols - 1) + costs.take(nodes) + ren_add)
                np.minimum(cand, diag0 + tree[x].take(nodes), out=cand)
                fd[r, cols] = np.minimum.accumulate(cand)
                tree[x, lnodes] = fd[r, lefts] - col.shift[lefts]
    return int(tree[n1 - 1, n2 - 1])


def _shape(tree: OpTree) -> list[tuple[str, str | None, int]]:
    """Pre-order labels, flags and child counts: equal lists mean identical trees."""
    return [(n.label, n.free, len(n.children)) for n in tree.nodes()]


def zhang_shasha(a: OpTree, b: OpTree) -> int:
    """The edit distance of `a` and `b` under GTED's costs (unit insert/delete; renaming free
    between equal labels or two free-cost nodes of the same kind)."""
    if _shape(a) == _shape(b):
        return 0
    pa, pb = _postorder(a), _postorder(b)
    if _steps(pb, pa) < _steps(pa, pb):
        pa, pb = pb, pa
    return _distance(pa, pb)
