"""DiffRepair: apply a model's edit to the real file, repairing what models get wrong.

Models write unified diffs with wrong line numbers, re-indented or hallucinated context,
missing context lines, missing headers and hunks out of order. Each hunk is located on its
own by fuzzy anchor matching: the hunk's old-side lines ("base": context and removed lines)
are compared with every file line after normalising whitespace (rapidfuzz similarity), the
best chain of anchors is found by dynamic programming over line offsets, the remaining lines
are aligned inside the gaps, and the hunk is rebuilt with the file's exact text around it.

Unlike the APE-Bench reference, a hunk that cannot be placed (no anchor, an ambiguous place,
a removed line that is not in the file, overlapping hunks) fails the whole patch with the
reason, a hunk with only added lines is never taken for the whole new file, and each hunk
reports what was repaired. Whole-file answers and search/replace blocks are accepted too.

Bounded work (issue 23): a hunk is first looked up as one block of exact (whitespace-free)
lines, by string search over one character per file line; failing that, it is anchored on
the lines it shares with the file that occur once in each (the patience-diff idea), and
the fuzzy similarity search runs only in the windows between and around those anchors. A
hunk with no such line falls back to the fuzzy search over the whole file only while its
matrix stays under `MAX_CELLS`. Every answer has a deadline and a work budget; past either
the answer is refused with a reason starting "gave up:", never left to run for minutes or
to exhaust memory.

The parser is our own and lenient on purpose: strict parsers (unidiff, `patch`) reject the
very diffs this module exists to repair (wrong hunk counts, no headers, unprefixed lines).
"""

from __future__ import annotations

import bisect
import math
import time
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
from rapidfuzz import fuzz, process

from formalbench.pipelines.ape.patchtext import (
    FENCE,
    HUNK_HEADER,
    MAX_ANSWER_CHARS,
    SEARCH_BLOCK,
    extract_answer,
    has_diff_markers,
    language_of,
    looks_like_diff,
    reads_as,
    select_sections,
)

__all__ = ["FENCE", "apply_answer", "apply_reply", "extract_answer", "looks_like_diff"]

HEADER = HUNK_HEADER
FUZZY_CUTOFF = 90.0  # rapidfuzz ratio (0-100) for two normalised lines to count as the same
MAX_GAP = 40  # the most file lines an anchor chain may skip between two anchors
GAP_COST = 0.05  # score lost per line of offset drift between consecutive anchors
TIE_MARGIN = 0.25  # two places within this score of each other make a hunk ambiguous
MAX_CELLS = 4_000_000  # the largest (hunk lines x file lines) fuzzy matrix computed at once
MAX_POINTS = 50_000  # the most fuzzy anchor candidates one search may chain
TOTAL_CELLS = 60_000_000  # fuzzy matrix cells one answer may use in all
TOTAL_STEPS = 30_000_000  # chaining steps one answer may use in all
DEADLINE_S = 5.0  # wall time one answer may spend being placed


@dataclass
class Hunk:
    """One hunk as the model wrote it: (tag, text) lines with tag in ' ', '-', '+'."""

    lines: list[tuple[str, str]]
    old_start: int | None = None  # 1-based line number of the header, a hint only


@dataclass
class HunkReport:
    index: int
    status: str  # "exact", "repaired" or "failed"
    line: int | None = None  # 1-based first file line of the placed region
    repairs: list[str] = field(default_factory=list)
    reason: str | None = None


@dataclass
class ApplyResult:
    applied: bool
    content: str | None
    mode: str  # "diff", "search-replace", "whole-file" or "none"
    hunks: list[HunkReport] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)  # diff sections for other files

    def summary(self) -> dict[str, object]:
        """The JSON object `formalbench ape apply --json` prints."""
        return {
            "applied": self.applied,
            "mode": self.mode,
            "ignored_sections": self.ignored,
            "hunks": len(self.hunks),
            "repaired_hunks": sum(h.status == "repaired" for h in self.hunks),
            "failed_hunks": sum(h.status == "failed" for h in self.hunks),
            "reasons": self.reasons,
            "per_hunk": [
                {"index": h.index, "status": h.status, "line": h.line, "repairs": h.repairs}
                | ({"reason": h.reason} if h.reason else {})
                for h in self.hunks
            ],
        }


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


# ---------------------------------------------------------------- parsing


def parse_diff(text: str) -> list[Hunk]:
    """Hunks of a unified diff, leniently: headers optional, counts ignored, a line without a
    prefix is context, the text after a header's second `@@` (git's section heading, a line
    from elsewhere in the file) is ignored."""
    hunks: list[Hunk] = []
    current: Hunk | None = None
    seen_header = False
    for raw in (ln.removesuffix("\r") for ln in text.split("\n")):
        if raw.startswith("@@"):
            m = HEADER.match(raw)
            current = Hunk([], int(m.group(1)) if m and m.group(1) else None)
            hunks.append(current)
            seen_header = True
            continue
        if current is None and (
            raw.startswith(("--- ", "+++ ", "diff ", "index ", "new file", "deleted file"))
            or raw.startswith(("similarity ", "rename ", "old mode", "new mode"))
        ):
            continue
        if raw.startswith("\\"):  # "\ No newline at end of file"
            continue
        if current is None:
            if seen_header:
                continue
            current = Hunk([])
            hunks.append(current)
        tag = raw[:1]
        if tag in ("+", "-", " "):
            current.lines.append((tag, raw[1:]))
        else:
            current.lines.append((" ", raw))
    for hunk in hunks:  # trailing blank context lines are artefacts of fences and joins
        while hunk.lines and hunk.lines[-1] == (" ", ""):
            hunk.lines.pop()
    return [h for h in hunks if h.lines]


def parse_search_replace(text: str) -> list[Hunk]:
    """Search/replace blocks as hunks: the searched lines removed, the replacement added."""
    hunks = []
    for m in SEARCH_BLOCK.finditer(text):
        search = [ln.removesuffix("\r") for ln in m.group(1).split("\n")[:-1]]
        replace = [ln.removesuffix("\r") for ln in m.group(2).split("\n")[:-1]]
        hunks.append(Hunk([("-", s) for s in search] + [("+", r) for r in replace]))
    return hunks


# ---------------------------------------------------------------- locating


def _norm(line: str) -> str:
    return "".join(line.split())


def _indent(line: str) -> int:
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
class _Placed:
    start: int  # first file index of the region
    end: int  # last file index of the region (inclusive)
    deletes: set[int]
    inserts: dict[int, list[str]]  # file index -> lines inserted before it
    repairs: list[str]
    exact: bool


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


def _locate(
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


def place_hunk(
    hunk: Hunk,
    file_lines: list[str],
    fnorm: list[str],
    index: FileIndex | None = None,
    budget: Budget | None = None,
) -> _Placed:
    """Locate one hunk in the file and say what it deletes and inserts where."""
    index = index or FileIndex.of(fnorm)
    budget = budget or Budget.start()
    base_idx = [k for k, (t, _) in enumerate(hunk.lines) if t != "+"]
    base_raw = [hunk.lines[k][1] for k in base_idx]
    base = [_norm(s) for s in base_raw]
    if not base:
        if not file_lines:  # a new file: the only place there is
            added = [t for tag, t in hunk.lines if tag == "+"]
            return _Placed(0, -1, set(), {0: added}, [], True)
        raise HunkFailure("hunk has only added lines and no context to anchor it")
    nonblank = [i for i, b in enumerate(base) if b]
    if not nonblank:
        raise HunkFailure("hunk's context and removed lines are all blank")
    mapping, used_hint = _locate(base, index, hunk.old_start, budget)
    needed = max(1, math.ceil(0.5 * len(nonblank)))
    matched = sum(1 for i in nonblank if i in mapping)
    if matched < needed:
        raise HunkFailure(
            f"only {matched} of {len(nonblank)} non-blank context/removed lines found together"
        )
    repairs: list[str] = []
    for i, (tag, _) in enumerate(hunk.lines[k] for k in base_idx):
        if tag == "-" and i not in mapping:
            raise HunkFailure(
                f"line to remove not found near line {min(mapping.values(), default=0) + 1}: "
                f"{base_raw[i].strip()[:60]!r}"
            )
    # indentation shift, consistent over all mapped non-blank lines
    shift = _indent_shift(mapping, base, base_raw, file_lines)
    # where each run of added lines goes: after the mapped line before it, else before the
    # mapped line after it
    inserts: dict[int, list[str]] = {}
    b = -1  # base index of the last base line seen
    k = 0
    lines = hunk.lines
    while k < len(lines):
        if lines[k][0] != "+":
            b += 1
            k += 1
            continue
        run = []
        while k < len(lines) and lines[k][0] == "+":
            run.append(_reindent(lines[k][1], shift))
            k += 1
        if b >= 0 and b in mapping:
            pos = mapping[b] + 1
        elif b == -1 and 0 in mapping:  # added lines before the first context line
            pos = mapping[0]
        else:
            after = [mapping[i] for i in range(b + 1, len(base)) if i in mapping]
            before = [mapping[i] for i in range(0, b + 1) if i in mapping]
            if after:
                pos = after[0]
            elif before:
                pos = before[-1] + 1
            else:  # pragma: no cover - matched >= 1 guarantees a mapped line
                raise HunkFailure("no place for the added lines")
            repairs.append("added lines placed next to the nearest located line")
        inserts.setdefault(pos, []).extend(run)
    deletes = {mapping[i] for i, (t, _) in enumerate(lines[k] for k in base_idx) if t == "-"}
    mapped = sorted(mapping.values())
    start, end = mapped[0], mapped[-1]
    # what was repaired
    exact = True
    dropped = len(base) - len(mapping)
    if dropped:
        repairs.append(f"ignored {dropped} context line(s) not in the file")
    restored = (end - start + 1) - len(mapping)
    if restored:
        repairs.append(f"restored {restored} file line(s) missing from the hunk")
    if any(base_raw[i] != file_lines[j] for i, j in mapping.items()):
        fuzzy = sum(1 for i, j in mapping.items() if base[i] != fnorm[j])
        repairs.append(
            f"{fuzzy} line(s) matched approximately" if fuzzy else "whitespace in context fixed"
        )
    if shift:
        repairs.append(f"re-indented added lines by {shift:+d}")
    first_base = min(mapping)
    region_start = start - first_base
    if hunk.old_start is not None and hunk.old_start - 1 != region_start and not used_hint:
        repairs.append(f"header said line {hunk.old_start}, found at line {region_start + 1}")
    if hunk.old_start is None:
        repairs.append("no line number in the header")
    if repairs:
        exact = False
    return _Placed(start, end, deletes, inserts, repairs, exact)


def _indent_shift(
    mapping: dict[int, int], base: list[str], base_raw: list[str], file_lines: list[str]
) -> int:
    """The indentation shift shared by every mapped non-blank line, else 0 (stops at the
    second distinct shift: a long hunk costs one pass at most)."""
    seen: set[int] = set()
    for i, j in mapping.items():
        if not base[i]:
            continue
        raw, real = base_raw[i], file_lines[j]
        seen.add(0 if raw == real else _indent(real) - _indent(raw))
        if len(seen) > 1:
            return 0
    return seen.pop() if seen else 0


def _reindent(line: str, shift: int) -> str:
    if shift > 0 and line.strip():
        return " " * shift + line
    if shift < 0:
        strip = min(-shift, len(line) - len(line.lstrip(" ")))
        return line[strip:]
    return line


# ---------------------------------------------------------------- applying


def _split(content: str) -> tuple[list[str], list[str], bool, str]:
    """(raw lines as in the file, lines without their CR, whether the file ends with a
    newline, the CR to give added lines). Only LF ends a line: a form feed or U+2028 in a
    line stays in it, and a CRLF file keeps its CRs (added lines get one too)."""
    if content == "":
        return [], [], True, ""
    raw = content.split("\n")
    final_nl = content.endswith("\n")
    if final_nl:
        raw.pop()
    crs = sum(1 for r in raw if r.endswith("\r"))
    lines = [r.removesuffix("\r") for r in raw] if crs else raw
    return raw, lines, final_nl, "\r" if 2 * crs > len(raw) else ""


def apply_hunks(hunks: list[Hunk], content: str, mode: str = "diff") -> ApplyResult:
    """Place every hunk, refuse overlaps, and apply them all or none."""
    raw_lines, file_lines, final_nl, cr = _split(content)
    fnorm = [_norm(s) for s in file_lines]
    index = FileIndex.of(fnorm)
    budget = Budget.start()
    placed: list[tuple[int, _Placed]] = []
    reports: list[HunkReport] = []
    reasons: list[str] = []
    for n, hunk in enumerate(hunks, start=1):
        try:
            p = place_hunk(hunk, file_lines, fnorm, index, budget)
        except GaveUp as exc:
            reasons.append(f"hunk {n} of {len(hunks)}: {exc}")
            reports.append(HunkReport(n, "failed", reason=str(exc)))
            return ApplyResult(False, None, mode, reports, reasons)
        except HunkFailure as exc:
            reports.append(HunkReport(n, "failed", reason=str(exc)))
            reasons.append(f"hunk {n}: {exc}")
            continue
        status = "exact" if p.exact else "repaired"
        reports.append(HunkReport(n, status, p.start + 1, p.repairs))
        placed.append((n, p))
    if not hunks:
        reasons.append("no hunk found in the answer")
    ordered = sorted(placed, key=lambda t: (t[1].start, t[1].end))
    for (n1, a), (n2, b) in zip(ordered, ordered[1:], strict=False):
        if b.start <= a.end:
            reasons.append(f"hunks {n1} and {n2} overlap (lines {b.start + 1}-{a.end + 1})")
            for r in reports:
                if r.index in (n1, n2):
                    r.status, r.reason = "failed", "overlaps another hunk"
    if reasons:
        return ApplyResult(False, None, mode, reports, reasons)
    out: list[str] = []
    j = 0
    for _, p in ordered:
        out.extend(raw_lines[j : p.start])
        for f in range(p.start, p.end + 2):
            out.extend(line + cr for line in p.inserts.get(f, []))
            if f <= p.end and f not in p.deletes:
                out.append(raw_lines[f])
        j = p.end + 1
    out.extend(raw_lines[j:])
    text = "\n".join(out) + ("\n" if final_nl and out else "")
    return ApplyResult(True, text, mode, reports, [])


def apply_answer(
    answer: str,
    content: str,
    repair: bool = True,
    path: str | None = None,
    language: str | None = None,
) -> ApplyResult:
    """Apply a model's answer (unified diff, search/replace blocks or the whole new file)
    to `content`, the file at `path` (its path in the repository, matched against the
    diff's file headers; None: a diff may name one file, any). `language` (default: from
    `path`'s suffix) is what a whole-file answer must read as.

    With `repair=False` a diff applies only if every hunk is found exactly as written, at
    its header's line (the strict behaviour of `patch` without fuzz)."""
    if len(answer) > MAX_ANSWER_CHARS:
        why = f"gave up: the answer has {len(answer):,} characters (at most {MAX_ANSWER_CHARS:,})"
        return ApplyResult(False, None, "none", reasons=[why])
    blocks = parse_search_replace(answer)
    if blocks:
        return _strict_gate(apply_hunks(blocks, content, "search-replace"), repair)
    if looks_like_diff(answer):
        chosen = select_sections(answer, path)
        if chosen.problem:
            reasons = [chosen.problem, *chosen.refused]
            return ApplyResult(False, None, "diff", reasons=reasons, ignored=chosen.refused)
        result = _strict_gate(apply_hunks(parse_diff(chosen.text), content, "diff"), repair)
        result.ignored = chosen.refused
        return result
    if not answer.strip():
        return ApplyResult(False, None, "none", reasons=["the answer is empty"])
    if has_diff_markers(answer):
        why = "the answer is diff text with nothing to apply (headers, a binary patch or a mode change), not a file"
        return ApplyResult(False, None, "none", reasons=[why])
    language = language or language_of(path)
    if not reads_as(answer, language):
        why = f"the answer is neither a diff nor a {language} file (no {language} command in it)"
        return ApplyResult(False, None, "none", reasons=[why])
    text = answer if answer.endswith("\n") else answer + "\n"
    return ApplyResult(True, text, "whole-file")


def apply_reply(
    reply: str,
    content: str,
    repair: bool = True,
    path: str | None = None,
    language: str | None = None,
) -> ApplyResult:
    """A model's reply applied: the edit extracted (`patchtext.extract_answer`: a fenced
    diff with prose around it, search/replace blocks, an unfenced diff, a file), then
    `apply_answer`. The one entry point of `ape apply` and `ape eval`."""
    return apply_answer(extract_answer(reply), content, repair, path, language)


def _strict_gate(result: ApplyResult, repair: bool) -> ApplyResult:
    if repair or not result.applied:
        return result
    bad = [h for h in result.hunks if h.status != "exact"]
    if not bad:
        return result
    reasons = [f"hunk {h.index} needs repair: {'; '.join(h.repairs)}" for h in bad]
    return ApplyResult(False, None, result.mode, result.hunks, reasons)
