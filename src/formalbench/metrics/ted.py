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
    levels (1 + the deepest keyroot strictly inside); `rows` and `inner` feed the cost
    estimate of a layout (`_steps`)."""

    keys: list[tuple[str, str | None]]  # what renaming compares
    lml: list[int]
    keyroots: list[int]
    levels: dict[int, int]
    rows: int  # table rows over the keyroots that are not leaves
    inner: int  # nodes that are not leaves: the rows on some table's leftmost path

    @property
    def size(self) -> int:
        return len(self.keys)

    @property
    def depth(self) -> int:
        return max(self.levels.values())


def _post(keys: list[tuple[str, str | None]], sizes: list[int]) -> _Post:
    """A post-order from its keys and subtree sizes (a subtree is the range ending at its
    root, so its leftmost leaf is where the range starts)."""
    lml = [i - size + 1 for i, size in enumerate(sizes)]
    last = {leaf: i for i, leaf in enumerate(lml)}  # the highest node with that leaf
    keyroots = sorted(last.values())
    at = [0] * len(keys)
    rows = 0
    for k in keyroots:  # ascending post-order: inner keyroots come first
        at[k] = 1 + max(at[lml[k] : k], default=0)
        if k != lml[k]:
            rows += k - lml[k] + 1
    inner = len(keys) - len(last)
    return _Post(keys, lml, keyroots, {k: at[k] for k in keyroots}, rows, inner)


def _orders(tree: OpTree) -> tuple[_Post, _Post]:
    """The post-order of `tree` and of its mirror image (children reversed), which is the
    reversed pre-order; mirroring both trees keeps their distance and may need fewer steps."""
    pre: list[tuple[str, str | None]] = []
    pre_sizes: list[int] = []
    post: list[tuple[str, str | None]] = []
    post_sizes: list[int] = []

    def walk(node: OpTree) -> int:
        key = (node.label, node.free)
        at = len(pre)
        pre.append(key)
        pre_sizes.append(0)
        size = 1
        for child in node.children:
            size += walk(child)
        pre_sizes[at] = size
        post.append(key)
        post_sizes.append(size)
        return size

    walk(tree)
    return _post(post, post_sizes), _post(pre[::-1], pre_sizes[::-1])


def _steps(a: _Post, b: _Post) -> int:
    """Vector steps the algorithm takes with `a` first: a row each, and a row on a table's
    leftmost path once per level of `b`'s tables (to pick the cheapest layout)."""
    return a.rows + a.inner * (b.depth - 1)


def _rename_costs(a: _Post, b: _Post, big: int) -> Ints:
    """cost[x, y] = 0 for equal labels or two free-cost nodes of the same kind, else 1;
    a last column of `big` stands for the empty forest."""
    ids: dict[str, int] = {}
    la = np.array([ids.setdefault(lbl, len(ids)) for lbl, _ in a.keys])
    lb = np.array([ids.setdefault(lbl, len(ids)) for lbl, _ in b.keys])
    kinds: dict[str | None, int] = {None: 0}
    fa = np.array([kinds.setdefault(f, len(kinds)) for _, f in a.keys])
    fb = np.array([kinds.setdefault(f, len(kinds)) for _, f in b.keys])
    same = (la[:, None] == lb[None, :]) | ((fa[:, None] == fb[None, :]) & (fa[:, None] > 0))
    cost = np.full((a.size, b.size + 1), big, dtype=np.int64)
    cost[:, : b.size] = ~same
    return cost


@dataclass
class _Columns:
    """The forest tables of every keyroot of the second tree, side by side in one row.

    Column c holds node `node[c]` (`n2` for a table's empty forest) of a table whose
    leftmost leaf is `start[c]`; `pos[c]` is its place in the table (the forest's size),
    `lcol[c]` the column of the forest left of its subtree, `on_left[c]` whether it is on
    the table's leftmost path. Tables are laid out by nesting level (`spans[level]` is the
    slice of that level's columns) and, after a pad column 0, values are stored shifted by
    `shift` (each table far below the one before), so a plain cumulative minimum never
    crosses from one table into the next.
    """

    node: Ints
    pos: Ints
    lcol: Ints
    on_left: npt.NDArray[np.bool_]
    shift: Ints
    start: Ints
    spans: list[tuple[int, int]]


def _columns(b: _Post, big: int) -> _Columns:
    order = sorted(b.keyroots, key=lambda k: (b.levels[k], k))
    lml = np.array(b.lml)
    firsts = np.array([b.lml[k] for k in order])
    widths = np.array(order) - firsts + 2  # the empty forest, then the subtree's nodes
    ends = np.cumsum(widths) + 1  # after the pad column 0
    begins = ends - widths
    table = np.repeat(np.arange(1, len(order) + 1), widths)
    pos = np.arange(int(ends[-1]) - 1) - np.repeat(begins - 1, widths)
    start = np.repeat(firsts, widths)
    node = np.where(pos == 0, b.size, start + pos - 1)
    node_lml = lml[np.minimum(node, b.size - 1)]
    empty = pos == 0
    lcol = np.where(empty, 0, node_lml - start) + np.repeat(begins, widths)
    levels = [b.levels[k] for k in order]
    cuts = [int(begins[i]) for i in range(len(order)) if i == 0 or levels[i] != levels[i - 1]]
    cuts.append(int(ends[-1]))
    return _Columns(
        np.concatenate([[b.size], node]),
        np.concatenate([[0], pos]),
        np.concatenate([[0], lcol]),
        np.concatenate([[False], ~empty & (node_lml == start)]),
        np.concatenate([[0], -(pos + table * big)]),
        np.concatenate([[0], start]),
        list(zip(cuts, cuts[1:], strict=False)),
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
    row0[0] = huge  # the pad column never wins a minimum
    lshift = col.shift - col.shift[col.lcol]
    # rows on a table's leftmost path, one level of tables at a time: on that path the
    # diagonal is a rename (shifted: shift[c] - shift[c - 1] = -1), elsewhere a subtree
    # distance found earlier in the same row
    # where, in the same row, the tree distance of a column's node is found: the column of
    # that node on the leftmost path of its own table (the pad column where none is needed)
    home = np.zeros(n2 + 1, dtype=np.int64)
    home[left_nodes] = left
    steps = []
    for lo, hi in col.spans:
        mask = col.on_left[lo:hi]
        nodes = col.node[lo:hi]
        renames = np.where(mask, rename[:, nodes] - 1, huge)
        source = np.where(mask, 0, home[nodes])
        diag0 = row0[col.lcol[lo:hi]] + lshift[lo:hi] - col.shift[source]
        steps.append((lo, hi, renames, source, np.where(mask, huge, diag0)))
    for k in a.keyroots:
        lk = a.lml[k]
        if lk == k:
            continue
        fd = np.empty((k - lk + 2, len(col.node)), dtype=np.int64)
        fd[:, 0] = huge  # the pad column (rows on the leftmost path never write it)
        fd[0] = row0
        found = matches[lk][range_end] > matches[lk][col.start]
        fd[1, 1:] = (np.where(col.pos == 0, 1, col.pos - found) + col.shift)[1:]
        tree[lk, left_nodes] = fd[1, left] - col.shift[left]
        done = tree[lk : k + 1][:, col.node] + lshift  # rows off the leftmost path: final
        for r in range(2, k - lk + 2):
            x = lk + r - 1
            up = fd[r - 1] + 1
            if a.lml[x] != lk:
                np.minimum(up, fd[a.lml[x] - lk].take(col.lcol) + done[r - 1], out=up)
                np.minimum.accumulate(up, out=fd[r])
                continue
            prev, out = fd[r - 1], fd[r]
            for level, (lo, hi, renames, source, diag0) in enumerate(steps):
                cand = prev[lo - 1 : hi - 1] + renames[x]
                np.minimum(cand, up[lo:hi], out=cand)
                if level:  # level 1 tables are paths: no subtree off their leftmost path
                    np.minimum(cand, diag0 + out.take(source), out=cand)
                np.minimum.accumulate(cand, out=out[lo:hi])
            tree[x, left_nodes] = out[left] - col.shift[left]
    return int(tree[n1 - 1, n2 - 1])


def zhang_shasha(a: OpTree, b: OpTree) -> int:
    """The edit distance of `a` and `b` under GTED's costs (unit insert/delete; renaming free
    between equal labels or two free-cost nodes of the same kind)."""
    if a == b:
        return 0
    (pa, ma), (pb, mb) = _orders(a), _orders(b)
    layouts = [(pa, pb), (pb, pa), (ma, mb), (mb, ma)]
    return _distance(*min(layouts, key=lambda ab: _steps(*ab)))
