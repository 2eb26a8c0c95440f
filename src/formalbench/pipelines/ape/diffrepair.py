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

Bounded work (issue 23): the search for a hunk's place (`locate`) anchors on exact blocks
and unique lines first and runs the fuzzy search only in small windows; every answer has
a deadline and a work budget, past which it is refused with a reason starting "gave up:".

The parser is our own and lenient on purpose: strict parsers (unidiff, `patch`) reject the
very diffs this module exists to repair (wrong hunk counts, no headers, unprefixed lines).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from formalbench.pipelines.ape.locate import (
    Budget,
    FileIndex,
    GaveUp,
    HunkFailure,
    indent_of,
    locate,
    norm_line,
)
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
@dataclass
class _Placed:
    start: int  # first file index of the region
    end: int  # last file index of the region (inclusive)
    deletes: set[int]
    inserts: dict[int, list[str]]  # file index -> lines inserted before it
    repairs: list[str]
    exact: bool


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
    base = [norm_line(s) for s in base_raw]
    if not base:
        if not file_lines:  # a new file: the only place there is
            added = [t for tag, t in hunk.lines if tag == "+"]
            return _Placed(0, -1, set(), {0: added}, [], True)
        raise HunkFailure("hunk has only added lines and no context to anchor it")
    nonblank = [i for i, b in enumerate(base) if b]
    if not nonblank:
        raise HunkFailure("hunk's context and removed lines are all blank")
    mapping, used_hint = locate(base, index, hunk.old_start, budget)
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
        seen.add(0 if raw == real else indent_of(real) - indent_of(raw))
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
    fnorm = [norm_line(s) for s in file_lines]
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
