"""Change statistics, the noise-free ("filtered") diff, chunking and the task filters.

The filters run in the reference's order and each names itself, so the funnel counts how
many candidate tasks survive each one. Diffs are computed with `difflib` (in-process, the
same output as `diff -u`); edit distances with rapidfuzz's Levenshtein edit operations.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from functools import lru_cache

from rapidfuzz.distance import Levenshtein

from formalbench.pipelines.ape.task import ApeTask, ChangeCounts, Thresholds

NOISE = {
    "lean": re.compile(r"^\s*(#align|set_option|import|open)\b"),
    "coq": re.compile(
        r"^\s*((Local\s+|Global\s+)?(Set|Unset|Open\s+Scope)|From\s+\S+\s+Require|Require|Import|Export)\b"
    ),
}
# Coq only: a line that is nothing but `Proof.` / `Proof using X.` (annotation churn), and the
# locality of hints and similar commands (`Local`/`Global`/`#[export]` changed for warnings):
# both are blanked out of the filtered view, like Lean's `set_option`.
COQ_PROOF_LINE = re.compile(r"^\s*Proof(\s+using\b[^.]*)?\.\s*$")
COQ_LOCALITY = re.compile(
    r"^(\s*)(#\[\s*(?:local|global|export)\s*\]\s*|(?:Local|Global|Export)\s+)"
    r"(?=(?:Hint|Existing|Instance|Arguments|Notation|Infix|Coercion|Ltac|Remove)\b)"
)
CONVENTIONAL = re.compile(r"^\s*(\w+)(\([^)]*\))?!?\s*:")
TYPE_ALIASES = {"feature": "feat", "faet": "feat", "featl": "feat", "feeat": "feat"}
INFERRED = [
    ("fix", re.compile(r"^(fix|fixed|fixing|correct|repair|bug)", re.I)),
    (
        "refactor",
        re.compile(
            r"^(refactor|rename|move|simplify|clean|generali[sz]e|split|merge|reorgani[sz]e|use|qualify|replace)",
            re.I,
        ),
    ),
    (
        "chore",
        re.compile(
            r"^(update|updating|bump|remove|delete|ci|build|regenerat|reformat|enable|disable|chore|doc)",
            re.I,
        ),
    ),
    (
        "feat",
        re.compile(
            r"^(add|prove|introduce|define|declare|formali[sz]e|characteri[sz]e|show|implement|new)",
            re.I,
        ),
    ),
]


def conventional_type(message: str) -> str | None:
    """The conventional-commit prefix of the subject (`feat(scope)!:` -> feat), typos mapped."""
    m = CONVENTIONAL.match(message.splitlines()[0] if message else "")
    if not m:
        return None
    kind = m.group(1).lower()
    return TYPE_ALIASES.get(kind, kind)


def inferred_type(message: str) -> str:
    """For histories without prefixes: the kind told by the subject's first verb."""
    subject = re.sub(r"^\[\w+\]\s*", "", message.strip())
    for kind, pattern in INFERRED:
        if pattern.match(subject):
            return kind
    return "other"


def diff_lines(before: str, after: str, path: str = "file") -> list[str]:
    return list(
        difflib.unified_diff(
            before.splitlines(), after.splitlines(), f"a/{path}", f"b/{path}", n=3, lineterm=""
        )
    )


def body_lines(diff: list[str]) -> list[str]:
    """The +/-/context lines of a difflib diff (a removed `-- comment` line is `--- comment`,
    so the file headers are dropped by position, not by prefix)."""
    if len(diff) >= 2 and diff[0].startswith("--- ") and diff[1].startswith("+++ "):
        diff = diff[2:]
    return [ln for ln in diff if not ln.startswith("@@")]


def counts(diff: list[str]) -> ChangeCounts:
    body = body_lines(diff)
    added = sum(ln.startswith("+") for ln in body)
    removed = sum(ln.startswith("-") for ln in body)
    pure, k = 0, 0
    while k < len(body):
        if body[k].startswith("-") and k + 1 < len(body) and body[k + 1].startswith("+"):
            pure += 1
            k += 2
            continue
        pure += body[k][:1] in "+-" and body[k] != ""
        k += 1
    return ChangeCounts(
        added_lines=added,
        total_changes=added + removed,
        pure_changes=pure,
        absolute_added_lines=added - removed,
    )


_MARKS = {
    "coq": re.compile(r'\(\*|\*\)|"'),
    "lean": re.compile(r'/-|-/|--|"'),
}


def blank_comments(text: str, language: str) -> str:
    """`text` with comments (nested) blanked, newlines kept; strings are skipped over.

    A scanner over comment and string marks only (char literals are not special): on the
    shipped histories it agrees with the full lexer of `core.lexer` on 119 of 120 files,
    which is plenty for a noise filter, and the lexer, tokenising everything, made a walk
    50x slower."""
    opener, closer = ("(*", "*)") if language == "coq" else ("/-", "-/")
    out: list[str] = []
    depth, last, pos, start = 0, 0, 0, 0
    marks = _MARKS[language]
    while True:
        m = marks.search(text, pos)
        if m is None:
            break
        tok = m.group(0)
        if depth == 0 and tok == '"':
            end = text.find('"', m.end())
            while end != -1 and language == "lean" and text[end - 1] == "\\":
                end = text.find('"', end + 1)
            pos = len(text) if end == -1 else end + 1
            continue
        if depth == 0 and tok == "--":
            end = text.find("\n", m.end())
            end = len(text) if end == -1 else end
            out.append(text[last : m.start()])
            out.append(" " * (end - m.start()))
            last = pos = end
            continue
        if tok == opener:
            if depth == 0:
                start = m.start()
            depth += 1
        elif tok == closer and depth > 0:
            depth -= 1
            if depth == 0:
                out.append(text[last:start])
                out.append(re.sub(r"[^\n]", " ", text[start : m.end()]))
                last = m.end()
        pos = m.end()
    if depth > 0:
        out.append(text[last:start])
        out.append(re.sub(r"[^\n]", " ", text[start:]))
    else:
        out.append(text[last:])
    return "".join(out)


@lru_cache(maxsize=256)
def denoise(text: str, language: str) -> str:
    """Comments, blank lines and import/option/open lines removed (the filtered view); in
    Coq also bare `Proof.`/`Proof using` lines, and hint locality prefixes."""
    stripped = blank_comments(text, language)
    noise = NOISE[language]
    lines = (ln.rstrip() for ln in stripped.splitlines() if ln.strip() and not noise.match(ln))
    if language == "coq":
        lines = (COQ_LOCALITY.sub(r"\1", ln) for ln in lines if not COQ_PROOF_LINE.match(ln))
    return "\n".join(lines)


def _distinct_ok(diff: list[str], tag: str, ratio: float) -> bool:
    lines = [ln[1:].strip() for ln in body_lines(diff) if ln.startswith(tag)]
    lines = [ln for ln in lines if ln]
    return not lines or len(set(lines)) / len(lines) >= ratio


def scatter_ok(task: ApeTask, cfg: Thresholds) -> bool:
    """Keep edits that are substantial: few isolated single-character edit runs."""
    a = "".join(denoise(task.content_before, task.language).split())
    b = "".join(denoise(task.content_after, task.language).split())
    if a == b:
        return False
    if not a or not b:
        return True
    ops = Levenshtein.editops(a, b)
    total = len(ops)
    runs: list[int] = []
    prev = None
    for op in ops:
        if prev is not None and op.tag == prev[0] and _adjacent(prev, op):
            runs[-1] += 1
        else:
            runs.append(1)
        prev = (op.tag, op.src_pos, op.dest_pos)
    scattered = sum(1 for r in runs if r == 1)
    return (
        scattered <= cfg.max_scattered_edits
        and scattered / total < cfg.max_scattered_share
        and total >= cfg.min_total_edits
    )


def _adjacent(prev: tuple[str, int, int], op) -> bool:
    tag, s, d = prev
    if op.tag == "insert":
        return op.dest_pos == d + 1 and op.src_pos == s
    if op.tag == "delete":
        return op.src_pos == s + 1 and op.dest_pos == d
    return op.src_pos == s + 1 and op.dest_pos == d + 1


def positive(task: ApeTask) -> bool:
    f = task.filtered
    return f.pure_changes > 0 and (
        f.absolute_added_lines > 0
        or (f.added_lines > 5 and 0.5 * f.absolute_added_lines + f.added_lines > 0)
    )


def filter_chain(cfg: Thresholds) -> list[tuple[str, Callable[[ApeTask], bool]]]:
    """(name, keep) in the reference's order; type and library-path filters come first, at
    the commit and file level, before a task record exists (see mining). `cfg`: the
    thresholds of the history's language (`MineConfig.thresholds`)."""
    fdiff = lambda t: t.filtered_gold_diff.splitlines()  # noqa: E731
    return [
        ("not_deleted", lambda t: t.change_type != "deleted"),
        ("positive_change", positive),
        (
            "filtered_changes",
            lambda t: (
                cfg.min_filtered_changes <= t.filtered.pure_changes <= cfg.max_filtered_changes
            ),
        ),
        (
            "distinct_lines",
            lambda t: (
                _distinct_ok(fdiff(t), "+", cfg.min_distinct_ratio)
                and _distinct_ok(fdiff(t), "-", cfg.min_distinct_ratio)
            ),
        ),
        ("edit_scatter", lambda t: scatter_ok(t, cfg)),
        ("input_tokens", lambda t: t.input_tokens <= cfg.max_input_tokens),
    ]


def _inside_command(text: str, language: str) -> Callable[[int], bool]:
    """Whether an offset of `text` lies strictly inside one of its top-level commands (a
    declaration with its proof), as the verifier's declaration splitter reads them."""
    from bisect import bisect_right

    from formalbench.checking.decls import split_decls
    from formalbench.core.records import Language

    spans = [(d.start, d.end) for d in split_decls(text, Language(language))]
    starts = [a for a, _ in spans]

    def inside(offset: int) -> bool:
        at = bisect_right(starts, offset) - 1
        return at >= 0 and spans[at][0] < offset < spans[at][1]

    return inside


def chunks(
    before: str, after: str, change_type: str, language: str, limit: int
) -> list[tuple[str, str]]:
    """(before, after) pairs: the whole change, or chunks of at most `limit` changed lines.

    A created file is split at blank lines outside comments and outside every top-level
    command (a lemma with a blank line between its statement and its proof stays whole, so
    no chunk's start ends mid-lemma: issue 30 item 2), and packed greedily; a modified
    file is split hunk by hunk, each chunk's "before" carrying the earlier hunks applied.
    Anything that does not split cleanly stays one unsplit pair."""
    if counts(diff_lines(before, after)).pure_changes <= limit:
        return [(before, after)]
    if change_type == "created" or not before:
        blanked = blank_comments(after, language)
        inside = _inside_command(after, language)
        blocks, start = [], 0
        for m in re.finditer(r"\n\s*\n", blanked):
            if inside(m.end()):
                continue
            blocks.append(after[start : m.end()])
            start = m.end()
        blocks.append(after[start:])
        packed: list[str] = []
        for block in blocks:
            if packed and packed[-1].count("\n") + block.count("\n") <= limit:
                packed[-1] += block
            else:
                packed.append(block)
        return [("".join(packed[:i]), "".join(packed[: i + 1])) for i in range(len(packed))]
    a, b = before.splitlines(keepends=True), after.splitlines(keepends=True)
    groups = difflib.SequenceMatcher(None, a, b, autojunk=False).get_grouped_opcodes(3)
    out: list[tuple[str, str]] = []
    current = list(a)
    shift = 0
    for group in groups:
        i1, i2 = group[0][1], group[-1][2]
        j1, j2 = group[0][3], group[-1][4]
        nxt = current[: i1 + shift] + b[j1:j2] + current[i2 + shift :]
        out.append(("".join(current), "".join(nxt)))
        shift += (j2 - j1) - (i2 - i1)
        current = nxt
    if not out or "".join(current) != after:
        return [(before, after)]
    return out
