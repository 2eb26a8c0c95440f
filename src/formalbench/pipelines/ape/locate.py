"""Locating one hunk's old side in a file, within a budget (DiffRepair's search).

Order: the whole old side as one exact block (whitespace-free lines, one character each,
found by string search; the header's line wins when it fits there); else anchors on the
lines that occur once in the hunk and once in the file (the patience-diff idea), with the
fuzzy similarity search (rapidfuzz) and the anchor-chain dynamic programme run only in the
windows between and around them, tied to those anchors by the drift cost; else, when no
line is unique, the fuzzy search over the whole file while its matrix stays under
MAX_CELLS. A `Budget` caps the time and work one answer may spend; past it the answer
fails with a reason starting "gave up:".
"""

from __future__ import annotations

import bisect
import time
from collections import Counter
from dataclasses import dataclass

import numpy as np
from rapidfuzz import fuzz, process

FUZZY_CUTOFF = 90.0  # rapidfuzz ratio (0-100) for two normalised lines to count as the same
MAX_GAP = 40  # the most file lines an anchor chain may skip between two anchors
GAP_COST = 0.05  # score lost per line of offset drift between consecutive anchors
TIE_MARGIN = 0.25  # two places within this score of each other make a hunk ambiguous
MAX_CELLS = 4_000_000  # the largest (hunk lines x file lines) fuzzy matrix computed at once
MAX_POINTS = 50_000  # the most fuzzy anchor candidates one search may chain
TOTAL_CELLS = 60_000_000  # fuzzy matrix cells one answer may use in all
TOTAL_STEPS = 30_000_000  # chaining steps one answer may use in all
DEADLINE_S = 5.0  # wall time one answer may spend being placed


class HunkFailure(Exception):
    """A hunk cannot be placed; the message is the reason reported for it."""


class GaveUp(HunkFailure):
    """The answer used up its time or work budget; no further hunk is tried."""


@dataclass
class Budget:
    """What one answer may still spend: wall time, fuzzy matrix cells, chaining steps."""

    deadline: float
    cells: int = TOTAL_CELLS
    steps: int = TOTAL_STEPS

    @classmethod
    def start(cls, seconds: float | None = None) -> Budget:
        return cls(time.monotonic() + (DEADLINE_S if seconds is None else seconds))

    def check(self) -> None:
        if time.monotonic() > self.deadline:
            raise GaveUp(f"gave up: placing the answer took more than {DEADLINE_S:g} s")

    def spend_cells(self, n: int) -> None:
        self.check()
        self.cells -= n
        if self.cells < 0:
            raise GaveUp(f"gave up: the fuzzy search needed more than {TOTAL_CELLS:,} cells")

    def spend_steps(self, n: int) -> None:
        self.steps -= n
        if self.steps < 0:
            raise GaveUp(f"gave up: chaining anchors took more than {TOTAL_STEPS:,} steps")
        self.check()


def norm_line(line: str) -> str:
    return "".join(line.split())


def indent_of(line: str) -> int:
    return len(line.expandtabs(2)) - len(line.expandtabs(2).lstrip())


def _similarity(base: list[str], file_norm: list[str]) -> np.ndarray:
    """Scores 0..1 of every (base line, file line) pair; blank lines never anchor."""
    scores = process.cdist(base, file_norm, scorer=fuzz.ratio, score_cutoff=FUZZY_CUTOFF)
    scores = np.asarray(scores, dtype=float) / 100.0
    for i, b in enumerate(base):
        if not b:
            scores[i, :] = 0.0
    return scores


@dataclass
class _Chain:
    score: float
    anchors: list[tuple[int, int]]  # (base index, file index), both increasing


def _drift(a: tuple[int, int], b: tuple[int, int]) -> float:
    return GAP_COST * abs((b[1] - a[1]) - (b[0] - a[0]))


def _chains(
    scores: np.ndarray, budget: Budget, left: tuple[int, int] | None = None
) -> list[_Chain]:
    """Best anchor chain ending at each anchor: DP over anchors sorted by file line, where
    a step from (i, j) to (i', j') costs GAP_COST per line of offset drift |(j'-j)-(i'-i)|.
    `left`: a fixed anchor before the matrix (in its coordinates) that every chain starts
    from, so the drift from it counts too."""
    rows, cols = np.nonzero(scores)
    if len(rows) > MAX_POINTS:
        raise HunkFailure(
            f"gave up: {len(rows):,} candidate line matches (more than {MAX_POINTS:,}); "
            "the hunk's lines repeat too often in the file to place it"
        )
    pts = [(int(i), int(j)) for i, j in zip(rows, cols, strict=True)]
    pts.sort(key=lambda p: (p[1], p[0]))
    js = [j for _, j in pts]
    best: list[float] = []
    back: list[int] = []
    reach = MAX_GAP + scores.shape[0]
    for k, (i, j) in enumerate(pts):
        s = float(scores[i, j])
        b_score, b_prev = (s if left is None else s - _drift(left, (i, j))), -1
        budget.spend_steps(k - bisect.bisect_left(js, j - reach, 0, k) + 1)
        for p in range(k - 1, -1, -1):
            pi, pj = pts[p]
            if j - pj > reach:
                break
            if pi < i and pj < j and (j - pj) - (i - pi) <= MAX_GAP:
                cand = best[p] + s - GAP_COST * abs((j - pj) - (i - pi))
                if cand > b_score:
                    b_score, b_prev = cand, p
        best.append(b_score)
        back.append(b_prev)
    chains = []
    for k in range(len(pts)):
        anchors = []
        p = k
        while p != -1:
            anchors.append(pts[p])
            p = back[p]
        chains.append(_Chain(best[k], anchors[::-1]))
    return chains


def _pick_chain(chains: list[_Chain], hint: int | None) -> tuple[_Chain, bool]:
    """The best chain, and whether the header's line number was needed to choose it. Raises
    HunkFailure when another place scores as well and the hint does not name one exactly."""
    if not chains:
        raise HunkFailure("no line of the hunk's context or removed lines occurs in the file")
    chains.sort(key=lambda c: -c.score)
    top = chains[0]
    lo, hi = top.anchors[0][1], top.anchors[-1][1]
    rivals = [
        c
        for c in chains[1:]
        if c.score >= top.score - TIE_MARGIN and (c.anchors[0][1] > hi or c.anchors[-1][1] < lo)
    ]
    if not rivals:
        return top, False
    if hint is not None:
        for c in [top, *rivals]:
            start = c.anchors[0][1] - c.anchors[0][0]
            if start == hint - 1:
                return c, True
    places = sorted({c.anchors[0][1] + 1 for c in [top, *rivals]})[:5]
    raise HunkFailure(f"ambiguous: the hunk fits equally well at lines {places}")


def _align_gaps(base: list[str], fnorm: list[str], anchors: list[tuple[int, int]]) -> dict:
    """Map base lines between anchors (and just outside the chain) to file lines whose
    normalised text is equal, in order; unmatched base lines stay unmapped."""
    mapping = dict(anchors)
    bounds = [(-1, -1), *anchors, (len(base), len(fnorm))]
    for (i0, j0), (i1, j1) in zip(bounds, bounds[1:], strict=False):
        if i0 == -1:  # before the first anchor: walk backwards while lines agree
            i, j = i1 - 1, j1 - 1
            while i >= 0 and j >= 0 and base[i] == fnorm[j]:
                mapping[i] = j
                i, j = i - 1, j - 1
            continue
        if i1 == len(base):  # after the last anchor: walk forwards while lines agree
            i, j = i0 + 1, j0 + 1
            while i < len(base) and j < len(fnorm) and base[i] == fnorm[j]:
                mapping[i] = j
                i, j = i + 1, j + 1
            continue
        j = j0 + 1
        for i in range(i0 + 1, i1):  # greedy in-order match inside the gap
            for jj in range(j, j1):
                if base[i] == fnorm[jj]:
                    mapping[i] = jj
                    j = jj + 1
                    break
    return mapping


@dataclass
class FileIndex:
    """The file's normalised lines, where each occurs, and one character per line (equal
    characters = equal normalised lines) so that a block of lines is found by `str.find`."""

    norm: list[str]
    where: dict[str, list[int]]
    codes: str
    code_of: dict[str, str]

    @classmethod
    def of(cls, fnorm: list[str]) -> FileIndex:
        where: dict[str, list[int]] = {}
        for j, line in enumerate(fnorm):
            where.setdefault(line, []).append(j)
        code_of = {line: _code(n) for n, line in enumerate(where)}
        return cls(fnorm, where, "".join(code_of[line] for line in fnorm), code_of)


def _code(n: int) -> str:
    """The n-th character that is neither NUL (a line absent from the file) nor a surrogate."""
    n += 1
    return chr(n if n < 0xD800 else n + 0x800)


def _exact_block(base: list[str], index: FileIndex, hint: int | None) -> tuple[int, bool] | None:
    """Where the whole old side occurs as written (whitespace aside): the header's line when
    it occurs there, else its only occurrence; None when it occurs nowhere. Raises
    HunkFailure when it occurs several times and the header names none of them."""
    pattern = "".join(index.code_of.get(b, "\0") for b in base)
    if "\0" in pattern:
        return None
    codes = index.codes
    if hint is not None and hint >= 1 and codes.startswith(pattern, hint - 1):
        return hint - 1, True
    rarest = min((i for i, b in enumerate(base) if b), key=lambda i: len(index.where[base[i]]))
    spots = index.where[base[rarest]]
    if len(spots) <= 64:  # check the few places the rarest line allows
        places = [
            p - rarest for p in spots if p >= rarest and codes.startswith(pattern, p - rarest)
        ]
    else:  # every line is common: search the whole file
        places = []
        at = codes.find(pattern)
        while at >= 0 and len(places) < 5:
            places.append(at)
            at = codes.find(pattern, at + 1)
    if not places:
        return None
    if len(places) == 1:
        return places[0], False
    raise HunkFailure(
        f"ambiguous: the hunk fits equally well at lines {[p + 1 for p in places[:5]]}"
    )


def _unique_anchors(base: list[str], index: FileIndex) -> list[tuple[int, int]]:
    """(base line, file line) pairs of lines that occur exactly once in the hunk and once in
    the file, kept in a longest chain increasing on both sides (patience diff), then cut
    where consecutive anchors drift apart by more than MAX_GAP; the largest piece wins.
    Empty when there is none, or when two pieces are equally large (no clear place)."""
    counts = Counter(b for b in base if b)
    pairs = [
        (i, index.where[b][0])
        for i, b in enumerate(base)
        if b and counts[b] == 1 and len(index.where.get(b, ())) == 1
    ]
    if not pairs:
        return []
    # longest increasing subsequence of file lines (base lines already increase)
    tails: list[int] = []  # file line ending the best chain of each length
    tail_at: list[int] = []  # index into pairs of that chain's end
    prev = [-1] * len(pairs)
    for k, (_, j) in enumerate(pairs):
        pos = bisect.bisect_left(tails, j)
        if pos == len(tails):
            tails.append(j)
            tail_at.append(k)
        else:
            tails[pos] = j
            tail_at[pos] = k
        prev[k] = tail_at[pos - 1] if pos else -1
    chain = []
    k = tail_at[-1]
    while k != -1:
        chain.append(pairs[k])
        k = prev[k]
    chain.reverse()
    pieces = [[chain[0]]]
    for a, b in zip(chain, chain[1:], strict=False):
        if abs((b[1] - a[1]) - (b[0] - a[0])) > MAX_GAP:
            pieces.append([])
        pieces[-1].append(b)
    pieces.sort(key=len, reverse=True)
    if len(pieces) > 1 and len(pieces[0]) == len(pieces[1]):
        return []
    return pieces[0]


def _window_anchors(
    base: list[str], fnorm: list[str], anchors: list[tuple[int, int]], budget: Budget
) -> list[tuple[int, int]]:
    """The unique anchors plus the best fuzzy chain inside each window between and around
    them (a window too large for MAX_CELLS keeps only the exact in-order alignment)."""
    out: list[tuple[int, int]] = []
    first_i, first_j = anchors[0]
    last_i, last_j = anchors[-1]
    windows = [(0, first_i, max(0, first_j - first_i - MAX_GAP), first_j)]
    windows += [
        (a[0] + 1, b[0], a[1] + 1, b[1]) for a, b in zip(anchors, anchors[1:], strict=False)
    ]
    tail = len(base) - last_i - 1
    windows.append(
        (last_i + 1, len(base), last_j + 1, min(len(fnorm), last_j + 1 + tail + MAX_GAP))
    )
    for n, (i0, i1, j0, j1) in enumerate(windows):
        if 0 < n <= len(anchors):
            out.append(anchors[n - 1])
        rows, cols = i1 - i0, j1 - j0
        if rows <= 0 or cols <= 0 or rows * cols > MAX_CELLS:
            continue
        if rows == cols and base[i0:i1] == fnorm[j0:j1]:  # the window agrees as written
            out.extend((i0 + k, j0 + k) for k in range(rows))
            continue
        budget.spend_cells(rows * cols)
        scores = _similarity(base[i0:i1], fnorm[j0:j1])
        # the fixed anchors around the window, in its coordinates: chains must join them
        left = (-1, -1) if n > 0 else None
        right = (rows, cols) if n <= len(anchors) - 1 else None
        try:
            chains = _chains(scores, budget, left)
        except GaveUp:
            raise
        except HunkFailure:
            continue
        if chains:
            best = max(
                chains, key=lambda c: c.score - (_drift(c.anchors[-1], right) if right else 0.0)
            )
            out.extend((i0 + i, j0 + j) for i, j in best.anchors)
    return sorted(out)


def locate(
    base: list[str], index: FileIndex, hint: int | None, budget: Budget
) -> tuple[dict[int, int], bool]:
    """Map base lines to file lines: as one exact block, else from unique anchors with fuzzy
    windows, else by the fuzzy search over the whole file (bounded). Returns the mapping
    and whether the header's line number was needed to choose the place."""
    budget.check()
    found = _exact_block(base, index, hint)
    if found is not None:
        start, used_hint = found
        return {i: start + i for i in range(len(base))}, used_hint
    anchors = _unique_anchors(base, index)
    if anchors:
        return _align_gaps(
            base, index.norm, _window_anchors(base, index.norm, anchors, budget)
        ), False
    cells = len(base) * len(index.norm)
    if cells > MAX_CELLS:
        raise HunkFailure(
            f"gave up: no line of the hunk occurs exactly once in the file, and a fuzzy search "
            f"of its {len(base):,} lines over {len(index.norm):,} would exceed {MAX_CELLS:,} cells"
        )
    budget.spend_cells(cells)
    chain, used_hint = _pick_chain(_chains(_similarity(base, index.norm), budget), hint)
    return _align_gaps(base, index.norm, chain.anchors), used_hint
